"""The :class:`Critic`: one LLM, on one vendor, with one prompt, judging one item at a time.

This is the documented path; the implementation lives in :mod:`cross_judge.critic.critic`.
"""

from .critic.critic import (
    DEFAULT_MAX_ITEM_CHARS,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_SYSTEM_PROMPT,
    Critic,
    _extract_json,
    combine_samples,
    sample_request,
)

__all__ = [
    "DEFAULT_MAX_ITEM_CHARS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_SYSTEM_PROMPT",
    "Critic",
    "_extract_json",
    "combine_samples",
    "sample_request",
]
