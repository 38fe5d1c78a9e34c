"""The opt-in response cache: answers of valid verdicts, kept on disk, replayed for free.

This is the documented path; the implementation lives in :mod:`cross_judge.critic.cache`.
"""

from .critic.cache import (
    APPLICATION_ID as APPLICATION_ID,
)
from .critic.cache import (
    CACHE_DIR_ENV as CACHE_DIR_ENV,
)
from .critic.cache import (
    CACHE_FILE_NAME as CACHE_FILE_NAME,
)
from .critic.cache import (
    DEFAULT_BUSY_TIMEOUT as DEFAULT_BUSY_TIMEOUT,
)
from .critic.cache import (
    SCHEMA_VERSION as SCHEMA_VERSION,
)
from .critic.cache import (
    CacheStats,
    ResponseCache,
    default_cache_path,
    resolve_cache,
)
from .critic.cache import (
    Completion as Completion,
)
from .critic.cache import (
    ConfigError as ConfigError,
)
from .critic.cache import (
    T as T,
)
from .critic.cache import (
    Usage as Usage,
)
from .critic.cache import (
    logger as logger,
)

__all__ = [
    "CacheStats",
    "ResponseCache",
    "default_cache_path",
    "resolve_cache",
]
