"""Per-vendor admission control: concurrency cap, request pacing and adaptive 429 backoff.

Every attempt a :class:`~cross_judge.core.Critic` makes passes a :class:`VendorGate` on the
way to the vendor (see :func:`cross_judge.transport._retry.call_with_retries`). Behind the gates sit
:class:`VendorLimiter` objects, kept per event loop, vendor name and endpoint origin, and
shared by every critic there. What each one keys depends on the vendor's ``limit_scope``
(:class:`~cross_judge.vendors.VendorConfig`):

================  ==========================================  ==========================
``limit_scope``   endpoint limiter (vendor, origin)           model limiter (+ model)
================  ==========================================  ==========================
``"model"``       ``max_concurrency``, ``rpm``                the adaptive 429 state:
(default)                                                     pause and lowered limit
``"endpoint"``    ``max_concurrency``, ``rpm`` and the        none
(DeepSeek)        adaptive 429 state
================  ==========================================  ==========================

So behind a gateway (LiteLLM, OpenRouter, a company proxy), where many models share a base
URL and each has its own limit, a 429 on one model pauses and slows that model only; with
``"endpoint"`` (vendors that limit per account) it pauses every model of the endpoint.
``max_concurrency`` and ``rpm`` are the caller's caps on the whole vendor account and are
per endpoint in both scopes. A gate that is not told its model (``VendorGate(config)``)
counts as one more model, ``None``. An attempt passes its model limiter (when there is
one) first, then the endpoint limiter, so calls held by one model's pause never hold
endpoint slots that other models could use.

A limiter enforces:

* ``max_concurrency``: at most ``limit`` attempts in flight at once; the others queue,
  first come first served.
* ``rpm``: smooth pacing. Each attempt reserves a send time ``60 / rpm`` seconds after the
  previous reservation, or now if that is already past. No burst: after an idle spell
  one attempt goes at once and the next waits a full interval, so no 60-second span
  holds more than ``rpm`` sends (rounded up). A burst allowance would need knowledge of
  the vendor's window that we do not have, and a burst is what trips a limit.
* a pause: while it lasts no new attempt it admits starts.

The adaptive rule (AIMD, as in TCP congestion control), applied by the limiter that holds
the adaptive state. ``n`` counts the congestion signals since the last success; ``limit``
starts at ``max_concurrency`` on an endpoint limiter and uncapped on a model limiter
(``None``: no cap).

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
     until the next new signal. A model limiter is made by its model's first 429, so
     that 429 always has an unknown level.
  4. **Pause.** No new attempt starts before ``now + wait``: ``wait`` is the vendor's
     ``Retry-After`` capped at :data:`~cross_judge.transport._retry.MAX_RETRY_AFTER_S`, else
     ``min(8, 0.25 * 2 ** (n - 1))`` seconds with ``n`` at least 1 (0.25, 0.5, 1, ...
     8). DeepSeek sends no rate-limit headers, so the 429 itself is the signal. A pause
     is only ever extended.

* On a completed response (a success): ``n = 0``; while ``limit`` is below its ceiling
  it grows by one per ``limit`` successes (+1 per full window; +1 per success in slow
  start). The ceiling is ``max_concurrency`` when configured (endpoint limiter); when
  not, it is the highest level refused since the cap appeared (``L``, or the number of
  unknown-level 429s), and reaching it lifts the cap entirely.
* Other failures (5xx, timeouts, dropped connections) and cancellations only free the slot.

A model limiter counts its model's attempts from admission to the end, time spent queued
at the endpoint limiter included, so ``L`` can overstate what was sent when
``max_concurrency`` is what holds that model back; the decrease is then deeper than needed
and recovers by the additive rule.

The attempt's own retry wait (:mod:`cross_judge.transport._retry`) runs from the same 429,
so the two waits overlap rather than add up.

Fast path: with no ``max_concurrency``, no ``rpm`` and no 429 seen, a gate finds no
limiter and creates none: no lock, no queue, no state. The first 429 creates the limiter
that holds the adaptive state (the model's, or the endpoint's).

Across processes: a vendor's ``shared`` limit (a
:class:`~cross_judge.shared_limit.SharedLimit`, set with
:func:`~cross_judge.vendors.set_vendor_limits`) is one more gate, passed last: an attempt
admitted by its loop-local limiters then waits for a permit leased from a broker that
other processes or Ray actors share, within what is left of the same ``within``, and gives
it back in ``leave`` with its outcome (which the broker's own AIMD learns from: successes,
429s with their ``Retry-After``). Its rules are in :mod:`cross_judge.shared_limit`. The
fast path only checks that no shared limit is set.

Limiters are loop-bound (their queue uses anyio events), so they are kept per running
event loop (asyncio) or per run (trio, keyed by its root task), like the connection pools
of :mod:`cross_judge.transport._pool`, and within it per vendor name, endpoint origin and
(model limiters) model. A limiter is only touched from its own loop's thread, so it needs
no lock; the registry of limiters has one. Nothing is created at import time. Limits and
scopes changed with :func:`~cross_judge.vendors.set_vendor_limits` apply from the next
attempt on (a scope change leaves the state kept under the old scope behind).

What it does not do: retry (that is :mod:`cross_judge.transport._retry`'s job), share the limits
above across processes or event loops (a ``shared`` limit does that for concurrency; ``rpm``
pacing stays per loop), tell two API keys on one endpoint apart, or read
``x-ratelimit-*`` headers.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, TypeGuard

import anyio

from ..errors import ErrorKind
from ..transport import MAX_RETRY_AFTER_S, CallFailure, endpoint_key, loop_token

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from ._client import SharedLimit

__all__ = ["Pacer", "VendorGate", "VendorLimiter", "limiter_for", "pause_after_rate_limit"]

PAUSE_BASE_S = 0.25
"""Pause after the first 429 that carries no ``Retry-After``; doubles per consecutive one."""

PAUSE_MAX_S = 8.0
"""Longest pause computed without ``Retry-After`` (the retry policy's backoff cap too)."""


def pause_after_rate_limit(consecutive: int, retry_after: float | None) -> float:
    """Seconds to pause a vendor after a 429.

    ``retry_after`` (the vendor's ``Retry-After``) wins when given, capped at
    :data:`~cross_judge.transport._retry.MAX_RETRY_AFTER_S` and floored at 0. Otherwise
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
    """Admission state of one vendor endpoint (or one model on it) on one event loop (the
    module docstring has the rules). Use it through :class:`VendorGate`; the properties
    are for inspection.

    ``adaptive=False`` makes it enforce ``max_concurrency`` and ``rpm`` only: outcomes do
    not change its limit and no 429 pauses it (an endpoint limiter whose vendor keeps the
    adaptive state per model).
    """

    def __init__(
        self,
        name: str,
        max_concurrency: float | None,
        rpm: float | None,
        *,
        adaptive: bool = True,
    ) -> None:
        self.name = name
        self._adaptive = adaptive
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

    @property
    def adaptive(self) -> bool:
        """True when 429s and successes adapt its limit and 429s pause it."""
        return self._adaptive

    # -- configuration ---------------------------------------------------------------------

    def configure(
        self, max_concurrency: float | None, rpm: float | None, *, adaptive: bool = True
    ) -> None:
        """Apply the vendor's configured limits; a no-op when they are unchanged.

        A new ``max_concurrency`` replaces any adapted limit; a new ``rpm`` keeps the
        next reserved send time. Turning ``adaptive`` off (the vendor's scope became
        ``"model"``) drops what was adapted: the limit goes back to ``max_concurrency``
        and any pause ends.
        """
        if adaptive != self._adaptive:
            self._adaptive = adaptive
            if not adaptive:
                self._configured = math.nan  # never equal: resets the adapted limit below
                self._paused_until = -math.inf
                self._consecutive = 0
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
        """Free the slot of an attempt admitted at ``epoch`` and, when adaptive, learn from
        its outcome.

        ``outcome`` is ``None`` for a completed response, else what the attempt raised.
        """
        if not self._adaptive:
            pass
        elif outcome is None:
            self.record_success()
        elif is_rate_limit(outcome):
            self.record_rate_limit(anyio.current_time(), outcome.retry_after, epoch=epoch)
        self._release_slot()

    def withdraw(self) -> None:
        """Free the slot of an admitted attempt that was never sent; nothing is learned."""
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


def is_rate_limit(outcome: BaseException | None) -> TypeGuard[CallFailure]:
    """``outcome`` (what a call raised, ``None`` for a response) is a 429."""
    return isinstance(outcome, CallFailure) and outcome.kind is ErrorKind.RATE_LIMIT


_Key = tuple[str, str, str | None, bool]
"""(vendor name, endpoint origin, model, is a model limiter): one limiter per key and loop."""

_lock = threading.Lock()
_by_loop: weakref.WeakKeyDictionary[Any, dict[_Key, VendorLimiter]] = weakref.WeakKeyDictionary()


@functools.lru_cache(maxsize=1024)
def _limiter_key(name: str, base_url: str, model: str | None, per_model: bool) -> _Key:
    return name, endpoint_key(base_url), model if per_model else None, per_model


def _endpoint_key_of(config: VendorConfig) -> _Key:
    return _limiter_key(config.name, config.base_url, None, False)


def _model_key_of(config: VendorConfig, model: str | None) -> _Key | None:
    """The key of the limiter holding ``model``'s adaptive state, ``None`` when that is the
    endpoint limiter (``limit_scope="endpoint"``)."""
    if config.limit_scope == "endpoint":
        return None
    return _limiter_key(config.name, config.base_url, model, True)


def _find(key: _Key) -> VendorLimiter | None:
    if not _by_loop:  # no limiter anywhere: skip finding the loop
        return None
    limiters = _by_loop.get(loop_token()[0])
    return None if limiters is None else limiters.get(key)


def _obtain(key: _Key, config: VendorConfig) -> VendorLimiter:
    limiter = _find(key)
    if limiter is not None:
        return limiter
    with _lock:
        limiters = _by_loop.setdefault(loop_token()[0], {})
        limiter = limiters.get(key)
        if limiter is None:
            if key[3]:  # a model limiter: the adaptive state only
                limiter = VendorLimiter(config.name, None, None)
            else:
                limiter = VendorLimiter(
                    config.name,
                    config.max_concurrency,
                    config.rpm,
                    adaptive=config.limit_scope == "endpoint",
                )
            limiters[key] = limiter
        return limiter


def limiter_for(config: VendorConfig, model: str | None = None) -> VendorLimiter | None:
    """The running loop's limiter for ``config``'s vendor and endpoint origin, if any.

    Without ``model``: the endpoint limiter (``max_concurrency``, ``rpm``, and with
    ``limit_scope="endpoint"`` the 429 state). With ``model``: the limiter holding that
    model's 429 state (pause, adapted limit), the endpoint limiter under
    ``limit_scope="endpoint"``. ``None`` means the fast path: no such limiter on this
    loop (no limits configured, no 429 seen). Must be called from inside the event loop
    (asyncio or trio).
    """
    key = _model_key_of(config, model) if model is not None else None
    return _find(key if key is not None else _endpoint_key_of(config))


class VendorGate:
    """One call's way through its vendor's limiters; one attempt at a time.

    ``model`` is the model the call asks for: with the vendor's ``limit_scope="model"``
    its 429s pause and slow that model only (``None``: the gate's calls count as one
    model of their own). ``await gate.enter(within)`` before each attempt,
    ``gate.leave(outcome)`` after it (``None`` for a completed response, else the
    exception, cancellation included). It implements :class:`cross_judge.transport._retry.Gate`.
    """

    __slots__ = (
        "_config",
        "_endpoint",
        "_endpoint_epoch",
        "_model",
        "_own",
        "_own_epoch",
        "_shared",
    )

    def __init__(self, config: VendorConfig, model: str | None = None) -> None:
        self._config = config
        self._model = model
        self._endpoint: VendorLimiter | None = None
        self._endpoint_epoch = 0
        self._own: VendorLimiter | None = None
        self._own_epoch = 0
        self._shared: SharedLimit | None = None

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
        if not limited and not _by_loop:
            if config.shared is not None:
                await self._enter_shared(config.shared, within)
            return  # the fast path: no limits, no 429 seen anywhere
        endpoint_key = _endpoint_key_of(config)
        endpoint = _obtain(endpoint_key, config) if limited else _find(endpoint_key)
        model_key = _model_key_of(config, self._model)
        own = _find(model_key) if model_key is not None else None
        if endpoint is None and own is None:
            if config.shared is not None:
                await self._enter_shared(config.shared, within)
            return  # no loop-local limits: no limits, no 429 seen for this model or endpoint
        end = anyio.current_time() + within
        if own is not None:
            self._own_epoch = await own.admit(within)
            self._own = own
        if endpoint is not None:
            endpoint.configure(
                config.max_concurrency, config.rpm, adaptive=config.limit_scope == "endpoint"
            )
            try:
                self._endpoint_epoch = await endpoint.admit(end - anyio.current_time())
            except BaseException:
                self._own = None
                if own is not None:
                    own.withdraw()
                raise
            self._endpoint = endpoint
        if config.shared is not None:
            try:
                await self._enter_shared(config.shared, end - anyio.current_time())
            except BaseException:
                self._endpoint = self._own = None
                if endpoint is not None:
                    endpoint.withdraw()
                if own is not None:
                    own.withdraw()
                raise

    async def _enter_shared(self, shared: SharedLimit, within: float) -> None:
        await shared.acquire(within)
        self._shared = shared  # released by leave() even if the vendor's config changes

    def leave(self, outcome: BaseException | None) -> None:
        """Free the attempt's slots and permit, and report how it ended."""
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.release(outcome)
        endpoint, self._endpoint = self._endpoint, None
        own, self._own = self._own, None
        if endpoint is not None:
            endpoint.release(self._endpoint_epoch, outcome)
        if own is not None:
            own.release(self._own_epoch, outcome)
        if not is_rate_limit(outcome):
            return
        config = self._config
        model_key = _model_key_of(config, self._model)
        learned = own is not None if model_key is not None else endpoint is not None
        if not learned:  # sent on the fast path: this 429 creates the adaptive state
            limiter = _obtain(model_key or _endpoint_key_of(config), config)
            limiter.record_rate_limit(anyio.current_time(), outcome.retry_after, epoch=None)
