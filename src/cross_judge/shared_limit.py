"""A concurrency limit shared by many processes: N of them under a limit L behave like one.

This is the documented path; the implementation lives in :mod:`cross_judge.limits.shared_limit`.
"""

from .limits.shared_limit import (
    CONNECT_TIMEOUT_S as CONNECT_TIMEOUT_S,
)
from .limits.shared_limit import (
    DEAD_AFTER_TERMS,
    LINGER_S,
    LeaseReply,
    LeaseRequest,
    LimitServer,
    PermitBroker,
    SharedLimit,
    SharedLimitError,
    main,
)
from .limits.shared_limit import (
    DEFAULT_PORT as DEFAULT_PORT,
)
from .limits.shared_limit import (
    EXCHANGE_TIMEOUT_S as EXCHANGE_TIMEOUT_S,
)
from .limits.shared_limit import (
    GIVE_BACK_TIMEOUT_S as GIVE_BACK_TIMEOUT_S,
)
from .limits.shared_limit import (
    MAX_LINE_BYTES as MAX_LINE_BYTES,
)
from .limits.shared_limit import (
    POLL_MAX_S as POLL_MAX_S,
)
from .limits.shared_limit import (
    POLL_MIN_S as POLL_MIN_S,
)
from .limits.shared_limit import (
    RENEW_FRACTION as RENEW_FRACTION,
)
from .limits.shared_limit import (
    RETRY_AFTER_FAILURE_S as RETRY_AFTER_FAILURE_S,
)
from .limits.shared_limit import (
    ConfigError as ConfigError,
)
from .limits.shared_limit import (
    Exchange as Exchange,
)
from .limits.shared_limit import (
    logger as logger,
)
from .limits.shared_limit import (
    pause_after_rate_limit as pause_after_rate_limit,
)

__all__ = [
    "DEAD_AFTER_TERMS",
    "LINGER_S",
    "LeaseReply",
    "LeaseRequest",
    "LimitServer",
    "PermitBroker",
    "SharedLimit",
    "SharedLimitError",
    "main",
]

if __name__ == "__main__":  # ``python -m cross_judge.shared_limit``, as documented
    import sys

    from .limits.shared_limit import main

    sys.exit(main())
