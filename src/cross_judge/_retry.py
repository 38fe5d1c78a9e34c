"""The one retry policy: every vendor call in cross-judge goes through :func:`call_with_retries`.

* Retried: rate limits (429), server errors (5xx, 529), 408/409, timeouts and dropped
  connections. Everything else (401/403, other 4xx, an HTML page with status 200) fails at
  once: asking again would only bill again.
* Waits: the vendor's ``Retry-After`` / ``retry-after-ms`` when it sends one (capped at
  :data:`MAX_RETRY_AFTER_S`), else exponential backoff with full jitter (a random wait
  up to 0.5 s, 1 s, 2 s, ... capped at 8 s). DeepSeek sends 429s without headers; the
  jitter then keeps many waiting callers from retrying in lockstep.
* Bounds: each attempt is cut off after ``timeout`` seconds; the whole call, waits
  included, after ``deadline`` seconds when one is set. A wait that would cross the
  deadline is not started: the last failure is returned at once.

Built on tenacity, with anyio's sleep and clock so it works under asyncio and trio and
obeys cancellation (a cancelled caller is never turned into a failure).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from .errors import ErrorKind
from .transport import CallFailure

__all__ = ["MAX_RETRY_AFTER_S", "call_with_retries"]

T = TypeVar("T")

MAX_RETRY_AFTER_S = 60.0
"""Longest vendor-requested wait honoured; beyond it the wait is capped to this."""

_backoff = wait_random_exponential(multiplier=0.5, max=8.0)


def _wait(state: RetryCallState) -> float:
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    if isinstance(exc, CallFailure) and exc.retry_after is not None:
        return min(exc.retry_after, MAX_RETRY_AFTER_S)
    return float(_backoff(state))


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, CallFailure) and exc.retryable


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    timeout: float,
    deadline: float | None = None,
) -> tuple[T, int]:
    """Run ``attempt`` until it succeeds or the policy gives up; return (result, attempts).

    Args:
        attempt: makes one call; raises :class:`CallFailure` on failure.
        max_retries: retries after the first attempt (0 = one attempt only).
        timeout: seconds allowed for each attempt.
        deadline: seconds allowed for everything, waits included (``None`` = no cap
            beyond ``timeout`` per attempt).

    Raises:
        CallFailure: the last failure, with ``attempts`` set. A deadline that runs out
            gives ``ErrorKind.TIMEOUT``.
    """
    started = time.monotonic()
    budget = math.inf if deadline is None else deadline
    attempts = 0

    def remaining() -> float:
        return budget - (time.monotonic() - started)

    def stop(state: RetryCallState) -> bool:
        if stop_after_attempt(max_retries + 1)(state):
            return True
        # Do not start a wait (and a new attempt) that the deadline would cut short.
        return state.upcoming_sleep >= remaining()

    retrying = AsyncRetrying(
        stop=stop,
        wait=_wait,
        retry=retry_if_exception(_is_retryable),
        sleep=anyio.sleep,
        reraise=True,
    )
    try:
        async for attempt_state in retrying:
            with attempt_state:
                attempts += 1
                left = remaining()
                if left <= 0:
                    raise CallFailure(ErrorKind.TIMEOUT, f"deadline of {deadline:g}s exceeded")
                limit = min(timeout, left)
                try:
                    with anyio.fail_after(limit):
                        result = await attempt()
                except TimeoutError as exc:
                    what = "deadline" if limit < timeout else "timeout"
                    raise CallFailure(
                        ErrorKind.TIMEOUT, f"no response within {limit:g}s ({what})"
                    ) from exc
        return result, attempts
    except CallFailure as failure:
        failure.attempts = attempts
        raise
