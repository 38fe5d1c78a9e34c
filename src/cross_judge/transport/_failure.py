"""The one exception type the transport layer raises: a classified call failure.

It never escapes :meth:`cross_judge.core.Critic.judge`; the critic turns it into an
``ERROR`` verdict. It is an exception only so that the retry policy can see it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from ..errors import ErrorKind

__all__ = [
    "RETRYABLE_KINDS",
    "RETRYABLE_STATUSES",
    "CallFailure",
    "failure_for_status",
    "retry_after_seconds",
]

RETRYABLE_KINDS = frozenset(
    {ErrorKind.TIMEOUT, ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.CONNECTION}
)
"""Failures worth another attempt: the same request may well succeed next time."""

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""4xx statuses that are retried (plus every 5xx): timeout, conflict, rate limit."""


class CallFailure(Exception):
    """A vendor call that produced no completion.

    Attributes:
        kind: the classification stored in ``Verdict.error_kind``.
        message: human-readable detail, including the vendor's own error message when it
            sent one. Never contains the API key.
        status: the HTTP status, when there was a response.
        retry_after: seconds the vendor asked us to wait (``Retry-After`` /
            ``retry-after-ms``), when it said.
        attempts: filled in by the retry policy when it gives up.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.attempts = 0

    @property
    def retryable(self) -> bool:
        """True when another attempt may succeed."""
        return self.kind in RETRYABLE_KINDS or self.status in RETRYABLE_STATUSES

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date).

    ``headers`` must look names up case-insensitively or have lower-case keys.
    """
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def failure_for_status(status: int, headers: Mapping[str, str], detail: str) -> CallFailure:
    """The failure for an HTTP error status, the same for every wire protocol: 401/403
    ``AUTH``, 429 ``RATE_LIMIT``, 5xx (529 "overloaded" included) ``SERVER``, 408
    ``TIMEOUT``, any other ``BAD_REQUEST`` (409 is still retried, see
    :data:`RETRYABLE_STATUSES`). ``detail`` is the vendor's own message, kept; the wait it
    asks for is read from ``headers`` into ``retry_after``."""
    if status in (401, 403):
        kind = ErrorKind.AUTH
    elif status == 429:
        kind = ErrorKind.RATE_LIMIT
    elif status >= 500:
        kind = ErrorKind.SERVER
    elif status == 408:
        kind = ErrorKind.TIMEOUT
    else:
        kind = ErrorKind.BAD_REQUEST
    message = f"HTTP {status}" + (f": {detail}" if detail else "")
    return CallFailure(kind, message, status=status, retry_after=retry_after_seconds(headers))
