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

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_USER_PROMPT_TEMPLATE",
    "PromptSpec",
    "list_prompts",
    "load_prompt",
    "parse_prompt",
    "render_user_prompt",
]
