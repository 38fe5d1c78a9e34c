"""Versioned judge prompts: load, validate and render the YAML prompts critics are built from.

This is the documented path; the implementation lives in :mod:`cross_judge.critic.prompts`.
"""

from .critic.prompts import (
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_USER_PROMPT_TEMPLATE,
    PromptSpec,
    list_prompts,
    load_prompt,
    parse_prompt,
    render_user_prompt,
)
from .critic.prompts import (
    LABEL_KEYS as LABEL_KEYS,
)
from .critic.prompts import (
    RESERVED_KINDS as RESERVED_KINDS,
)
from .critic.prompts import (
    ExampleAnswer as ExampleAnswer,
)
from .critic.prompts import (
    PromptError as PromptError,
)
from .critic.prompts import (
    Template as Template,
)
from .critic.prompts import (
    YAMLSyntaxError as YAMLSyntaxError,
)
from .critic.prompts import (
    is_file as is_file,
)
from .critic.prompts import (
    load_yaml as load_yaml,
)
from .critic.prompts import (
    normalize_label as normalize_label,
)
from .critic.prompts import (
    parse_answer as parse_answer,
)
from .critic.prompts import (
    prompt_files as prompt_files,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_USER_PROMPT_TEMPLATE",
    "PromptSpec",
    "list_prompts",
    "load_prompt",
    "parse_prompt",
    "render_user_prompt",
]
