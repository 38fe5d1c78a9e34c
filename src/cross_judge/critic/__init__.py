"""One critic: request building, the call path, parsing, prompts and the response cache."""
