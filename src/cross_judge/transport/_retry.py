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
* Vendor limits: with a ``gate`` (:class:`cross_judge.limits._gate.VendorGate`), every attempt,
  retries included, first waits its turn at the vendor (concurrency slot, ``rpm`` pacing,
  pause after a 429) and then reports how it ended. Queueing is not the vendor being slow:
  it counts against ``deadline`` but not against the attempt's ``timeout``. A deadline
  that runs out in the queue fails the call with ``ErrorKind.TIMEOUT`` at once, without
  sending the request and without another attempt (it would only queue again).

Built on tenacity, with anyio's sleep and clock so it works under asyncio and trio and
obeys cancellation (a cancelled caller is never turned into a failure).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio

from ..errors import ErrorKind
from . import CallFailure

if TYPE_CHECKING:
    from tenacity import RetryCallState
    from tenacity.wait import wait_base

__all__ = ["MAX_RETRY_AFTER_S", "Gate", "call_with_retries"]

T = TypeVar("T")

MAX_RETRY_AFTER_S = 60.0
"""Longest vendor-requested wait honoured; beyond it the wait is capped to this."""


@functools.cache
def _exponential_jitter() -> wait_base:
    # tenacity is imported on the first retry, not at import: most calls never retry.
    from tenacity import wait_random_exponential

    return wait_random_exponential(multiplier=0.5, max=8.0)


def _backoff(state: RetryCallState) -> float:
    """A random wait up to 0.5 s, 1 s, 2 s, ... capped at 8 s (full jitter)."""
    return float(_exponential_jitter()(state))


class Gate(Protocol):
    """Admission of each attempt to a vendor (implemented by ``_limits.VendorGate``)."""

    @property
    def vendor(self) -> str:
        """The vendor's name, for messages."""
        ...

    async def enter(self, within: float) -> None:
        """Wait until an attempt may start; ``TimeoutError`` if not within ``within`` s."""
        ...

    def leave(self, outcome: BaseException | None) -> None:
        """The attempt ended: ``None`` for a result, else what it raised. Never raises."""
        ...


class _QueuedPastDeadline(CallFailure):
    """The deadline ran out before the gate let an attempt start; never retried."""


def _wait(state: RetryCallState) -> float:
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    if isinstance(exc, CallFailure) and exc.retry_after is not None:
        return min(exc.retry_after, MAX_RETRY_AFTER_S)
    return float(_backoff(state))


def _is_retryable(exc: BaseException) -> bool:
    return (
        isinstance(exc, CallFailure) and exc.retryable and not isinstance(exc, _QueuedPastDeadline)
    )


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    timeout: float,
    deadline: float | None = None,
    gate: Gate | None = None,
    self_timed: bool = False,
) -> tuple[T, int]:
    """Run ``attempt`` until it succeeds or the policy gives up; return (result, attempts).

    Args:
        attempt: makes one call; raises :class:`CallFailure` on failure.
        max_retries: retries after the first attempt (0 = one attempt only).
        timeout: seconds allowed for each attempt.
        deadline: seconds allowed for everything, waits included (``None`` = no cap
            beyond ``timeout`` per attempt).
        gate: the vendor's admission gate, entered before and left after each attempt;
            the time spent entering counts against ``deadline`` only.
        self_timed: ``attempt`` itself gives up after ``timeout`` seconds (its HTTP
            client enforces a total timeout) and raises a ``TIMEOUT`` failure. No cancel
            scope is then set up for an attempt that the deadline does not cut shorter:
            it would be a second timer doing the same job (~20 us per call, measured).

    Returns:
        The result and the number of attempts sent (an attempt still queued at the
        gate when the deadline ran out is not counted).

    Raises:
        CallFailure: the last failure, with ``attempts`` set. A deadline that runs out
            gives ``ErrorKind.TIMEOUT``; while queued at the gate, with a message saying
            so.
    """
    started = time.monotonic()
    budget = math.inf if deadline is None else deadline
    attempts = 0

    def remaining() -> float:
        return budget - (time.monotonic() - started)

    async def timed(left: float) -> T:
        limit = min(timeout, left)
        if self_timed and limit >= timeout:
            try:
                return await attempt()
            except CallFailure as failure:
                # A timeout with a status is the server's (HTTP 408): kept as it said.
                if failure.kind is not ErrorKind.TIMEOUT or failure.status is not None:
                    raise
                message = f"no response within {timeout:g}s (timeout)"
                raise CallFailure(ErrorKind.TIMEOUT, message) from failure
        try:
            with anyio.fail_after(limit):
                return await attempt()
        except TimeoutError as exc:
            what = "deadline" if limit < timeout else "timeout"
            raise CallFailure(ErrorKind.TIMEOUT, f"no response within {limit:g}s ({what})") from exc

    async def gated(gate: Gate, left: float) -> T:
        nonlocal attempts
        try:
            await gate.enter(left)
        except TimeoutError:
            raise _queued_past_deadline(gate, deadline) from None
        left = remaining()
        if left <= 0:  # admitted just as the deadline ran out: do not send
            failure = _queued_past_deadline(gate, deadline)
            gate.leave(failure)
            raise failure
        attempts += 1
        try:
            result = await timed(left)
        except BaseException as exc:  # cancellation too: the slot must be freed
            gate.leave(exc)
            raise
        gate.leave(None)
        return result

    async def one() -> T:
        """One attempt, counted; bounded by the timeout and what is left of the deadline."""
        nonlocal attempts
        left = remaining()
        if left > 0 and gate is not None:
            return await gated(gate, left)
        attempts += 1
        if left <= 0:
            raise CallFailure(ErrorKind.TIMEOUT, f"deadline of {deadline:g}s exceeded")
        return await timed(left)

    # The first attempt runs outside tenacity: most calls succeed at once, and setting up
    # tenacity's loop costs more CPU per call (~65 us, measured) than everything else here.
    # A retryable failure is replayed into tenacity as its attempt 1, so waits, stops and
    # retries follow the one policy exactly as if tenacity had made it.
    try:
        return await one(), attempts
    except CallFailure as failure:
        if max_retries == 0 or not _is_retryable(failure):
            failure.attempts = attempts
            raise
        replay: CallFailure | None = failure

    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

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
                if replay is not None:
                    first, replay = replay, None
                    raise first
                result = await one()
        return result, attempts
    except CallFailure as failure:
        failure.attempts = attempts
        raise


def _queued_past_deadline(gate: Gate, deadline: float | None) -> _QueuedPastDeadline:
    what = "the deadline" if deadline is None else f"the deadline of {deadline:g}s"
    return _QueuedPastDeadline(
        ErrorKind.TIMEOUT,
        f"{what} ran out, or would have, while waiting for the rate limit of vendor "
        f"{gate.vendor!r} (its pause after a 429, max_concurrency or rpm); the request "
        "was not sent",
    )
