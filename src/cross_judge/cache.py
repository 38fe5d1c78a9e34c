"""The opt-in response cache: answers of valid verdicts, kept on disk, replayed for free.

This is the documented path; the implementation lives in :mod:`cross_judge.critic.cache`.
"""

from .critic.cache import (
    CacheStats,
    ResponseCache,
    default_cache_path,
    resolve_cache,
)

__all__ = [
    "CacheStats",
    "ResponseCache",
    "default_cache_path",
    "resolve_cache",
]
