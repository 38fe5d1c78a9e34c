"""Versioned judge prompts: load, validate and render the YAML prompts critics are built from.

This is the documented path; the implementation lives in :mod:`cross_judge.critic._prompts`.
"""

from ._resources import (
    prompt_files as prompt_files,
)
from ._yaml import (
    YAMLSyntaxError as YAMLSyntaxError,
    load as load_yaml,  # noqa: F401 - importable from here before, kept
)
from .critic import (
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_USER_PROMPT_TEMPLATE,
    LABEL_KEYS as LABEL_KEYS,
    ExampleAnswer as ExampleAnswer,
    PromptExample,
    PromptSpec,
    Template as Template,
    is_file as is_file,
    list_prompts,
    load_prompt,
    normalize_label as normalize_label,
    parse_answer as parse_answer,
    parse_prompt,
    prompt_yaml,
    render_user_prompt,
    write_prompt,
)
from .errors import (
    PromptError as PromptError,
)
from .verdict import (
    RESERVED_KINDS as RESERVED_KINDS,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_USER_PROMPT_TEMPLATE",
    "PromptExample",
    "PromptSpec",
    "list_prompts",
    "load_prompt",
    "parse_prompt",
    "prompt_yaml",
    "render_user_prompt",
    "write_prompt",
]
