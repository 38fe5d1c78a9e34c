"""The one exception type the transport layer raises: a classified call failure.

It never escapes :meth:`cross_judge.core.Critic.judge`; the critic turns it into an
``ERROR`` verdict. It is an exception only so that the retry policy can see it.
"""

from __future__ import annotations

from ..errors import ErrorKind

__all__ = ["RETRYABLE_KINDS", "RETRYABLE_STATUSES", "CallFailure"]

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
