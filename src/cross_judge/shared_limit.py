"""A concurrency limit shared by many processes: N of them under a limit L behave like one.

This is the documented path; the implementation lives in :mod:`cross_judge.limits.shared_limit`.
"""

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
