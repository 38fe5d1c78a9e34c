"""The opt-in response cache: answers of valid verdicts, kept on disk, replayed for free.

This is the documented path; the implementation lives in :mod:`cross_judge.critic._cache`.
"""

from .critic import (
    APPLICATION_ID as APPLICATION_ID,
    CACHE_DIR_ENV as CACHE_DIR_ENV,
    CACHE_FILE_NAME as CACHE_FILE_NAME,
    DEFAULT_BUSY_TIMEOUT as DEFAULT_BUSY_TIMEOUT,
    SCHEMA_VERSION as SCHEMA_VERSION,
    CacheStats,
    ResponseCache,
    default_cache_path,
    resolve_cache,
)
from .errors import (
    ConfigError as ConfigError,
)
from .transport import (
    Completion as Completion,
)
from .verdict import (
    Usage as Usage,
)

__all__ = [
    "CacheStats",
    "ResponseCache",
    "default_cache_path",
    "resolve_cache",
]
