"""One critic: request building, the call path, parsing, prompts and the response cache."""

__all__: list[str] = []  # public paths: cross_judge.core, .prompts, .cache
