"""Per-vendor admission control: concurrency cap, request pacing and adaptive 429 backoff.

Every attempt a :class:`~cross_judge.core.Critic` makes passes a :class:`VendorGate` on the
way to the vendor (see :func:`cross_judge._retry.call_with_retries`). Behind the gates of
one vendor sits one :class:`VendorLimiter` per event loop, vendor name and endpoint origin,
shared by every critic on that vendor, that enforces:

* ``max_concurrency`` (:class:`~cross_judge.vendors.VendorConfig`): at most ``limit``
  attempts in flight at once; the others queue, first come first served.
* ``rpm``: smooth pacing. Each attempt reserves a send time ``60 / rpm`` seconds after the
  previous reservation, or now if that is already past. No burst: after an idle spell
  one attempt goes at once and the next waits a full interval, so no 60-second span
  holds more than ``rpm`` sends (rounded up). A burst allowance would need knowledge of
  the vendor's window that we do not have, and a burst is what trips a limit.
* a vendor-wide pause: while it lasts no new attempt starts.

The adaptive rule (AIMD, as in TCP congestion control). ``n`` counts the congestion
signals since the last success; ``limit`` starts at ``max_concurrency`` (``None``: no cap).

* On a 429 (``ErrorKind.RATE_LIMIT``), with or without ``Retry-After``:

  1. **Multiplicative decrease, once per overload.** A 429 on an attempt admitted since
     the latest decrease is a new signal: ``n += 1``, ``L = min(limit, in_flight)``
     (the limiter's attempts in flight, this one included) and
     ``limit = max(1, L // 2)``.
  2. **Echoes do not halve again.** A 429 on an attempt admitted just before that
     decrease is part of the same burst of ``L``; it only keeps ``limit`` at or below
     what the vendor did not refuse of that burst: ``limit = max(1, min(limit,
     L - refused))``. A DeepSeek-style vendor that takes 4 of a burst of 36 thus gets
     4 at once, rather than 18, 9, 4 over three more rounds of refusals. Older echoes
     only pause.
  3. **Unknown level.** A 429 on an attempt sent before the limiter existed (the fast
     path below) was never counted, so ``L`` is unknown: an uncapped ``limit``
     restarts at 1 and grows by one per success (doubling per window, TCP's slow start)
     until the next new signal.
  4. **Pause.** No new attempt starts before ``now + wait``: ``wait`` is the vendor's
     ``Retry-After`` capped at :data:`~cross_judge._retry.MAX_RETRY_AFTER_S`, else
     ``min(8, 0.25 * 2 ** (n - 1))`` seconds with ``n`` at least 1 (0.25, 0.5, 1, ...
     8). DeepSeek sends no rate-limit headers, so the 429 itself is the signal. A pause
     is only ever extended.

* On a completed response (a success): ``n = 0``; while ``limit`` is below its ceiling
  it grows by one per ``limit`` successes (+1 per full window; +1 per success in slow
  start). The ceiling is ``max_concurrency`` when configured; when not, it is the highest
  level refused since the cap appeared (``L``, or the number of unknown-level 429s), and
  reaching it lifts the cap entirely.
* Other failures (5xx, timeouts, dropped connections) and cancellations only free the slot.

The attempt's own retry wait (:mod:`cross_judge._retry`) runs from the same 429, so the two
waits overlap rather than add up.

Fast path: with no ``max_concurrency``, no ``rpm`` and no 429 seen, a gate finds no
limiter and creates none: no lock, no queue, no state. The first 429 creates the limiter.

Limiters are loop-bound (their queue uses anyio events), so they are kept per running
event loop (asyncio) or per run (trio, keyed by its root task), like the connection pools
of :mod:`cross_judge.transport._pool`, and within it per vendor name and endpoint origin.
A limiter is only touched from its own loop's thread, so it needs no lock; the registry
of limiters has one. Nothing is created at import time. Limits changed with
:func:`~cross_judge.vendors.set_vendor_limits` apply from the next attempt on.

What it does not do: retry (that is :mod:`cross_judge._retry`'s job), share limits across
processes or event loops, or read ``x-ratelimit-*`` headers.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

import anyio

from ._retry import MAX_RETRY_AFTER_S
from .errors import ErrorKind
from .transport import CallFailure
from .transport._pool import _loop_token, endpoint_key

if TYPE_CHECKING:
    from .vendors import VendorConfig

__all__ = ["Pacer", "VendorGate", "VendorLimiter", "limiter_for", "pause_after_rate_limit"]

PAUSE_BASE_S = 0.25
"""Pause after the first 429 that carries no ``Retry-After``; doubles per consecutive one."""

PAUSE_MAX_S = 8.0
"""Longest pause computed without ``Retry-After`` (the retry policy's backoff cap too)."""


def pause_after_rate_limit(consecutive: int, retry_after: float | None) -> float:
    """Seconds to pause a vendor after a 429.

    ``retry_after`` (the vendor's ``Retry-After``) wins when given, capped at
    :data:`~cross_judge._retry.MAX_RETRY_AFTER_S` and floored at 0. Otherwise
    ``min(PAUSE_MAX_S, PAUSE_BASE_S * 2 ** (consecutive - 1))``; ``consecutive`` below 1
    counts as 1.
    """
    if retry_after is not None:
        return min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
    return min(PAUSE_MAX_S, PAUSE_BASE_S * 2.0 ** (max(consecutive, 1) - 1))


class Pacer:
    """The ``rpm`` schedule: each send is reserved ``60 / rpm`` s after the previous one.

    Pure bookkeeping on a caller-supplied clock, so the schedule is testable without
    sleeping.
    """

    __slots__ = ("_next", "interval")

    def __init__(self, rpm: float, *, next_send: float = -math.inf) -> None:
        self.interval = 60.0 / rpm
        self._next = next_send

    @property
    def next_send(self) -> float:
        """The earliest time the next reservation can get."""
        return self._next

    def reserve(self, now: float, *, latest: float = math.inf) -> float | None:
        """Reserve the next send time (``now`` if the schedule is idle) and return it.

        Returns ``None`` and reserves nothing when that time would be after ``latest``.
        """
        at = max(now, self._next)
        if at > latest:
            return None
        self._next = at + self.interval
        return at

    def cancel(self, at: float) -> None:
        """Give back the reservation ``at`` if no later one was made since."""
        if self._next == at + self.interval:
            self._next = at


class VendorLimiter:
    """Admission state of one vendor endpoint on one event loop (the module docstring has
    the rules). Use it through :class:`VendorGate`; the properties are for inspection."""

    def __init__(self, name: str, max_concurrency: float | None, rpm: float | None) -> None:
        self.name = name
        self._configured: float | None = None  # as configured, to notice a change
        self._ceiling: int | None = None  # max_concurrency as a whole number
        self._limit: int | None = None
        self._lift_at = 0  # no max configured: reaching this level lifts the cap
        self._slow_start = False  # grow by one per success (level was unknown)
        self._credit = 0  # successes since the limit last grew
        self._burst_level = 0  # attempts in flight at the latest decrease
        self._burst_refused = 0  # of those, refused so far
        self._in_flight = 0
        self._waiters: deque[anyio.Event] = deque()
        self._rpm: float | None = None
        self._pacer: Pacer | None = None
        self._paused_until = -math.inf
        self._consecutive = 0
        self._epoch = 0  # bumped by every decrease; tells new signals from echoes
        self.configure(max_concurrency, rpm)

    # -- inspection ------------------------------------------------------------------------

    @property
    def limit(self) -> int | None:
        """Attempts allowed in flight now (``None``: no cap)."""
        return self._limit

    @property
    def in_flight(self) -> int:
        """Attempts admitted and not yet finished."""
        return self._in_flight

    @property
    def waiting(self) -> int:
        """Attempts queued for a slot."""
        return len(self._waiters)

    @property
    def paused_until(self) -> float:
        """Loop time (``anyio.current_time()``) before which no new attempt starts."""
        return self._paused_until

    @property
    def consecutive_rate_limits(self) -> int:
        """Congestion signals since the last success (``n`` in the module docstring)."""
        return self._consecutive

    @property
    def pacer(self) -> Pacer | None:
        """The ``rpm`` schedule, when ``rpm`` is set."""
        return self._pacer

    # -- configuration ---------------------------------------------------------------------

    def configure(self, max_concurrency: float | None, rpm: float | None) -> None:
        """Apply the vendor's configured limits; a no-op when they are unchanged.

        A new ``max_concurrency`` replaces any adapted limit; a new ``rpm`` keeps the
        next reserved send time.
        """
        if max_concurrency != self._configured:
            self._configured = max_concurrency
            self._ceiling = None if max_concurrency is None else max(1, int(max_concurrency))
            self._limit = self._ceiling
            self._lift_at = 0
            self._slow_start = False
            self._credit = 0
            self._burst_level = 0  # refusals of earlier bursts no longer lower the limit
            self._wake()
        if rpm != self._rpm:
            self._rpm = rpm
            following = self._pacer.next_send if self._pacer is not None else -math.inf
            self._pacer = None if rpm is None else Pacer(rpm, next_send=following)

    # -- admission -------------------------------------------------------------------------

    async def admit(self, within: float) -> int:
        """Wait for a slot, the pacing schedule and any pause; return the admission epoch.

        Raises:
            TimeoutError: not admitted within ``within`` seconds, or a known wait (pause,
                pacing) would end after that: then it fails at once. Nothing is held.
        """
        now = anyio.current_time()
        if self._paused_until <= now and self._pacer is None and self._has_room():
            self._in_flight += 1
            return self._epoch
        end = now + within
        with anyio.fail_after(None if math.isinf(within) else within):
            await self._sleep_out_pause(end)
            await self._take_slot()
            try:
                if self._pacer is not None:
                    await self._pace(self._pacer, end)
                await self._sleep_out_pause(end)  # a 429 may have come in meanwhile
            except BaseException:
                self._release_slot()
                raise
        return self._epoch

    def release(self, epoch: int, outcome: BaseException | None) -> None:
        """Free the slot of an attempt admitted at ``epoch`` and learn from its outcome.

        ``outcome`` is ``None`` for a completed response, else what the attempt raised.
        """
        if outcome is None:
            self.record_success()
        elif isinstance(outcome, CallFailure) and outcome.kind is ErrorKind.RATE_LIMIT:
            self.record_rate_limit(anyio.current_time(), outcome.retry_after, epoch=epoch)
        self._release_slot()

    def record_rate_limit(
        self, now: float, retry_after: float | None, *, epoch: int | None
    ) -> None:
        """Apply a 429 seen at loop time ``now`` (decrease and pause, module docstring).

        ``epoch`` is the attempt's admission epoch, ``None`` for an attempt never counted.
        """
        if epoch is None:
            if self._ceiling is None:
                self._lift_at += 1
            if self._limit is None:
                self._limit, self._slow_start, self._credit = 1, True, 0
        elif epoch == self._epoch:
            self._epoch += 1
            self._consecutive += 1
            level = self._in_flight if self._limit is None else min(self._limit, self._in_flight)
            level = max(level, 1)
            self._burst_level, self._burst_refused = level, 1
            if self._ceiling is None:
                self._lift_at = max(self._lift_at, level)
            self._limit, self._slow_start, self._credit = max(1, level // 2), False, 0
        elif epoch == self._epoch - 1 and self._burst_level and self._limit is not None:
            self._burst_refused += 1
            accepted = self._burst_level - self._burst_refused
            self._limit = max(1, min(self._limit, accepted))
        self._consecutive = max(self._consecutive, 1)
        wait = pause_after_rate_limit(self._consecutive, retry_after)
        self._paused_until = max(self._paused_until, now + wait)

    def record_success(self) -> None:
        """Apply a completed response: reset ``n``, raise the limit towards its ceiling."""
        self._consecutive = 0
        limit = self._limit
        if limit is None or (self._ceiling is not None and limit >= self._ceiling):
            return
        if not self._slow_start:
            self._credit += 1
            if self._credit < limit:
                return
            self._credit = 0
        limit += 1
        if self._ceiling is None and limit >= self._lift_at:
            self._limit, self._lift_at, self._slow_start = None, 0, False
        else:
            self._limit = limit
        self._wake()

    # -- internals -------------------------------------------------------------------------

    def _has_room(self) -> bool:
        return not self._waiters and (self._limit is None or self._in_flight < self._limit)

    async def _sleep_out_pause(self, end: float) -> None:
        while (until := self._paused_until) > anyio.current_time():
            if until > end:
                raise TimeoutError
            await anyio.sleep_until(until)

    async def _take_slot(self) -> None:
        if self._has_room():
            self._in_flight += 1
            return
        admitted = anyio.Event()
        self._waiters.append(admitted)
        try:
            await admitted.wait()
        except BaseException:
            if admitted.is_set():  # handed a slot just as we were cancelled: pass it on
                self._release_slot()
            else:
                self._waiters.remove(admitted)
            raise

    async def _pace(self, pacer: Pacer, end: float) -> None:
        now = anyio.current_time()
        at = pacer.reserve(now, latest=end)
        if at is None:
            raise TimeoutError
        if at > now:
            try:
                await anyio.sleep_until(at)
            except BaseException:
                pacer.cancel(at)
                raise

    def _release_slot(self) -> None:
        self._in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        # The slot is handed over here (counted at once), so a later arrival cannot take it.
        while self._waiters and (self._limit is None or self._in_flight < self._limit):
            self._in_flight += 1
            self._waiters.popleft().set()


_lock = threading.Lock()
_by_loop: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], VendorLimiter]] = (
    weakref.WeakKeyDictionary()
)


@functools.lru_cache(maxsize=256)
def _limiter_key(name: str, base_url: str) -> tuple[str, str]:
    return name, endpoint_key(base_url)


def limiter_for(config: VendorConfig) -> VendorLimiter | None:
    """The running loop's limiter for ``config``'s vendor and endpoint origin, if any.

    ``None`` means the fast path: no limits configured and no 429 seen on this loop. Must
    be called from inside the event loop (asyncio or trio).
    """
    if not _by_loop:  # no limiter anywhere: skip finding the loop
        return None
    limiters = _by_loop.get(_loop_token()[0])
    return None if limiters is None else limiters.get(_limiter_key(config.name, config.base_url))


def _obtain(config: VendorConfig) -> VendorLimiter:
    limiter = limiter_for(config)
    if limiter is not None:
        return limiter
    key = _limiter_key(config.name, config.base_url)
    with _lock:
        limiters = _by_loop.setdefault(_loop_token()[0], {})
        limiter = limiters.get(key)
        if limiter is None:
            limiter = limiters[key] = VendorLimiter(config.name, config.max_concurrency, config.rpm)
        return limiter


class VendorGate:
    """One call's way through its vendor's limiter; one attempt at a time.

    ``await gate.enter(within)`` before each attempt, ``gate.leave(outcome)`` after it
    (``None`` for a completed response, else the exception, cancellation included). It
    implements :class:`cross_judge._retry.Gate`.
    """

    __slots__ = ("_config", "_epoch", "_limiter")

    def __init__(self, config: VendorConfig) -> None:
        self._config = config
        self._limiter: VendorLimiter | None = None
        self._epoch = 0

    @property
    def vendor(self) -> str:
        """The vendor's name, for messages."""
        return self._config.name

    async def enter(self, within: float) -> None:
        """Wait until the vendor's limits let an attempt start.

        Raises:
            TimeoutError: not within ``within`` seconds; nothing is held then.
        """
        config = self._config
        limited = config.max_concurrency is not None or config.rpm is not None
        limiter = _obtain(config) if limited else limiter_for(config)
        if limiter is None:
            return  # the fast path: no limits, no 429 seen
        limiter.configure(config.max_concurrency, config.rpm)
        self._epoch = await limiter.admit(within)
        self._limiter = limiter

    def leave(self, outcome: BaseException | None) -> None:
        """Free the attempt's slot and report how it ended."""
        limiter, self._limiter = self._limiter, None
        if limiter is not None:
            limiter.release(self._epoch, outcome)
        elif isinstance(outcome, CallFailure) and outcome.kind is ErrorKind.RATE_LIMIT:
            now = anyio.current_time()
            _obtain(self._config).record_rate_limit(now, outcome.retry_after, epoch=None)
