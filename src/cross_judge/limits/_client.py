"""The client of a shared limit: :class:`SharedLimit`, one per process (or actor) and event loop.

It admits calls under permits leased from a :class:`~cross_judge.shared_limit.PermitBroker`:
its own (:meth:`SharedLimit.local`), a :class:`~cross_judge.shared_limit.LimitServer`'s
(:meth:`SharedLimit.connect`) or a Ray actor's (:mod:`cross_judge.ray`). It leases permits
in chunks and reuses a held permit for its next waiting call without a round trip while its
term lasts; it gives back permits nobody waits for (after :data:`LINGER_S`), so the others
can use them; it batches its outcome reports into its next exchange, but reports a 429 at
once: it pauses itself, and the broker's pause reaches every other client at its next
exchange (within one term). A background task on the client's event loop does every
exchange, one at a time.

What it does not do: decide who gets a permit (the broker does,
:mod:`cross_judge.limits._broker`), speak the TCP protocol (:mod:`cross_judge.limits._wire`),
or pace requests per minute (``rpm`` stays per event loop, :mod:`cross_judge.limits._gate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..errors import SharedLimitError
from ..transport import loop_token
from ._broker import LeaseReply, LeaseRequest, PermitBroker
from ._gate import is_rate_limit, pause_after_rate_limit
from ._wire import TcpExchange, parse_address

__all__ = [
    "GIVE_BACK_TIMEOUT_S",
    "LINGER_S",
    "POLL_MAX_S",
    "POLL_MIN_S",
    "RENEW_FRACTION",
    "RETRY_AFTER_FAILURE_S",
    "Exchange",
    "SharedLimit",
]

logger = logging.getLogger("cross_judge.shared_limit")

LINGER_S = 0.02
"""A permit nobody waits for goes back to the broker after this long unused, so a call that
follows at once reuses it without a round trip."""

POLL_MIN_S = 0.01
"""A client the broker had no permit for asks again after this long, doubling per empty
answer up to :data:`POLL_MAX_S` (reset by any grant)."""

POLL_MAX_S = 0.1
"""The longest wait between two asks of a client that waits for permits (also at most a
quarter of the term): a permit another client gives back sits unused at most this long."""

RENEW_FRACTION = 0.25
"""A client holding permits exchanges when this fraction of its term is left, at the latest."""

RETRY_AFTER_FAILURE_S = 1.0
"""After a failed exchange, calls fail at once with its error for this long; then the next
call tries again (a new connection, a new lease)."""

GIVE_BACK_TIMEOUT_S = 5.0
"""Longest wait, as its event loop ends, for a client to give its permits back."""


Exchange = Callable[[LeaseRequest], Awaitable[LeaseReply]]
"""How a :class:`SharedLimit` reaches its broker: one request in, its reply out."""


class _Waiter:
    __slots__ = ("error", "event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False  # handed a permit (counted in busy) before waking
        self.error: BaseException | None = None


class SharedLimit:
    """One client of a shared limit: admits calls under permits leased from a broker.

    Leases permits in chunks through ``exchange`` (an async callable taking a
    :class:`LeaseRequest` and returning the broker's :class:`LeaseReply`); most users
    make it with :meth:`local` or :meth:`connect`, and :mod:`cross_judge.ray` with a Ray
    actor. Attach it to a vendor with
    ``set_vendor_limits(name, shared=...)``: every attempt to that vendor then holds a
    permit (after its loop-local limits, :mod:`cross_judge.limits._gate`).

    Behaviour (the broker's rules are in :mod:`cross_judge.shared_limit`):

    * a call takes a held permit nobody uses at once, without a round trip, while the
      client's term lasts; else it queues (first come, first served) and the client asks
      the broker for what its queue lacks, at most ``chunk`` per exchange, asking again
      after :data:`POLL_MIN_S` (doubling up to :data:`POLL_MAX_S`) while the broker has
      none;
    * a permit freed with no call waiting goes back after :data:`LINGER_S`; permits over
      what the broker lets it keep go back at once, or as their calls finish;
    * outcomes ride on the next exchange; a 429 triggers one at once (and pauses this
      client until the broker answers); other clients hear of the pause at their next
      exchange, within one term (sooner when they lease or give back permits);
    * while holding permits it exchanges at least once per term (a renewal), so that the
      broker does not presume it dead.

    Exchanges are done one at a time by a background task on the event loop that first
    uses it (asyncio or trio); using it from another loop raises ``RuntimeError`` until
    that loop ends (make one per loop: ``SharedLimit.connect(address)`` in each thread).
    When its loop ends, it tries for :data:`GIVE_BACK_TIMEOUT_S` to give its permits back;
    :meth:`aclose` does so explicitly.

    Raises:
        ValueError: ``chunk`` is not a whole number >= 1.
    """

    def __init__(self, exchange: Exchange, *, name: str = "shared", chunk: int = 4) -> None:
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ValueError(
                f"chunk must be a whole number >= 1 (permits per lease), got {chunk!r}"
            )
        self._exchange = exchange
        self._name = str(name)
        self._chunk = chunk
        self._broker: PermitBroker | None = None  # set by local()
        self._closer: Callable[[], Awaitable[None]] | None = None  # set by connect()
        self._token: Any = None  # the event loop (or trio run) it is bound to
        self._worker_running = False
        self._task: asyncio.Task[None] | None = None  # a strong reference (asyncio)
        self._wakeup: anyio.Event | None = None
        self._closed: anyio.Event | None = None  # set when aclose() is done
        self._busy = 0  # calls admitted and not yet released
        self._waiters: deque[_Waiter] = deque()
        self._fresh_state()

    def _fresh_state(self) -> None:
        """Forget every lease: a new client id, nothing held (calls in flight stay counted)."""
        self._client = uuid.uuid4().hex
        self._held = 0  # permits this client holds, as far as it knows
        self._keep = 0  # the most the broker lets it keep (its last reply's ``held``)
        self._limit: int | None = None
        self._term_s = 2.0
        self._term_end = -math.inf  # loop time until which held permits may be reused
        self._paused_until = -math.inf
        self._successes = 0
        self._rate_limits: list[float | None] = []
        self._idle_since: float | None = None
        self._poll_delay = POLL_MIN_S
        self._next_poll = -math.inf
        self._failure: SharedLimitError | None = None
        self._failed_until = -math.inf
        self._closing = False

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def local(cls, limit: int, *, term_s: float = 2.0, **kwargs: Any) -> SharedLimit:
        """A client of its own broker, in this process: one event loop shares ``limit``.

        For tests, and for sharing one limit among the critics and vendors of one loop;
        the broker is :attr:`broker`. ``kwargs`` go to :class:`SharedLimit` (``name``,
        ``chunk``).

        Raises:
            ValueError: ``limit`` or ``term_s`` is invalid (see :class:`PermitBroker`).
        """
        broker = PermitBroker(limit, term_s=term_s)

        async def exchange(request: LeaseRequest) -> LeaseReply:
            return broker.exchange(request)

        shared = cls(exchange, **kwargs)
        shared._broker = broker
        return shared

    @classmethod
    def connect(cls, address: str, **kwargs: Any) -> SharedLimit:
        """A client of the :class:`LimitServer` at ``address`` (``"host:port"``,
        ``"[::1]:7007"`` for IPv6).

        Nothing is connected until the first call needs a permit; a server that cannot be
        reached then makes that call fail with :class:`SharedLimitError` saying what to
        check. ``kwargs`` go to :class:`SharedLimit` (``name`` defaults to the address).

        Raises:
            ConfigError: ``address`` is not ``host:port`` with a port from 1 to 65535.
        """
        host, port = parse_address(address)
        exchange = TcpExchange(host, port)
        kwargs.setdefault("name", exchange.address)
        shared = cls(exchange, **kwargs)
        shared._closer = exchange.aclose
        return shared

    # -- inspection ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """A name for messages and reprs."""
        return self._name

    @property
    def chunk(self) -> int:
        """The most permits asked for in one exchange."""
        return self._chunk

    @property
    def client(self) -> str:
        """The id the broker knows this client by (a new one after a failed exchange)."""
        return self._client

    @property
    def held(self) -> int:
        """Permits held, in use or not."""
        return self._held

    @property
    def in_use(self) -> int:
        """Calls admitted and not yet released."""
        return self._busy

    @property
    def waiting(self) -> int:
        """Calls queued for a permit."""
        return len(self._waiters)

    @property
    def limit(self) -> int | None:
        """The shared limit as of the last exchange (``None`` before the first)."""
        return self._limit

    @property
    def broker(self) -> PermitBroker | None:
        """The broker of a :meth:`local` client, else ``None``."""
        return self._broker

    def __repr__(self) -> str:
        return (
            f"SharedLimit(name={self._name!r}, chunk={self._chunk}, held={self._held}, "
            f"in_use={self._busy}, limit={self._limit})"
        )

    # -- admission -------------------------------------------------------------------------

    async def acquire(self, within: float) -> None:
        """Wait for a permit; the caller must :meth:`release` it after its call.

        Raises:
            TimeoutError: not admitted within ``within`` seconds, or the broker's pause
                ends after that (then at once). Nothing is held then, nor after a
                cancellation.
            SharedLimitError: the broker could not be reached or refused the exchange
                (again at once for :data:`RETRY_AFTER_FAILURE_S` after a failure).
            RuntimeError: the client is bound to another event loop that still runs.
        """
        self._bind()
        now = anyio.current_time()
        if (
            not self._waiters
            and self._paused_until <= now < self._term_end
            and self._busy < min(self._held, self._keep)
        ):
            self._busy += 1
            return
        if self._failure is not None and now < self._failed_until:
            raise SharedLimitError(str(self._failure))
        if self._paused_until > now + within:
            raise TimeoutError
        waiter = _Waiter()
        self._waiters.append(waiter)
        self._closing = False
        self._wake()
        try:
            with anyio.fail_after(None if math.isinf(within) else max(within, 0.0)):
                await waiter.event.wait()
        except BaseException:
            if waiter.granted:  # handed a permit just as it was cancelled: pass it on
                self._give_back_unused()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        if waiter.error is not None:
            raise waiter.error

    def release(self, outcome: BaseException | None) -> None:
        """Free the permit of a call that ended: ``outcome`` is ``None`` for a completed
        response, else what it raised (a 429 :class:`~cross_judge.transport.CallFailure`
        is reported at once). Never raises."""
        try:
            if self._busy <= 0:
                return
            self._busy -= 1
            now = anyio.current_time()
            urgent = False
            if outcome is None:
                self._successes += 1
            elif is_rate_limit(outcome):
                self._rate_limits.append(outcome.retry_after)
                # Until the broker answers: no call of ours starts into the same overload.
                wait = pause_after_rate_limit(1, outcome.retry_after)
                self._paused_until = max(self._paused_until, now + wait)
                urgent = True
            self._dispatch(now)
            if urgent or self._held > max(self._busy, self._keep) or self._idle() > 0:
                self._wake()
        except Exception:  # pragma: no cover - bookkeeping only; a gate's leave must not raise
            logger.exception("shared limit %s: release failed", self._name)

    async def aclose(self) -> None:
        """Give back every permit not in use now (those in use go back as their calls
        finish) and close the connection to the broker once none is held.

        Calls still queued fail with ``RuntimeError``. A later :meth:`acquire` leases
        again. A no-op on a client never used.
        """
        if self._token is None or not self._worker_running:
            if self._closer is not None:
                await self._closer()
            return
        self._closing = True
        closed = anyio.Event()
        self._closed = closed
        error = RuntimeError(f"shared limit {self._name!r} was closed while a call waited")
        self._fail_waiters(error)
        self._wake()
        await closed.wait()

    # -- internals: local bookkeeping ------------------------------------------------------

    def _bind(self) -> None:
        token, library = loop_token()
        if token is not self._token:
            if self._token is not None and self._worker_running and not _loop_closed(self._token):
                raise RuntimeError(
                    f"shared limit {self._name!r} is in use by another event loop; make one "
                    "per event loop (thread), e.g. SharedLimit.connect(address) in each"
                )
            self._token = token
            self._busy = 0
            self._waiters.clear()
            self._fresh_state()
        if not self._worker_running:
            self._start_worker(library)

    def _start_worker(self, library: str) -> None:
        self._wakeup = anyio.Event()
        self._worker_running = True
        name = f"cross-judge: shared limit {self._name}"
        if library == "trio":
            import trio

            trio.lowlevel.spawn_system_task(self._work, name=name)
        else:
            self._task = asyncio.get_running_loop().create_task(self._work(), name=name)

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def _usable(self) -> int:
        """Permits calls may hold now: those held, up to what the broker lets it keep."""
        return min(self._held, self._keep)

    def _idle(self) -> int:
        """Held permits that no call uses nor waits for."""
        return self._usable() - self._busy - len(self._waiters)

    def _dispatch(self, now: float) -> None:
        """Hand usable permits to queued calls (counted at once: a later call cannot take
        them), unless paused or the term ran out (the next exchange renews it)."""
        if not self._waiters or self._paused_until > now:
            return
        if self._held > 0 and now >= self._term_end:
            return
        while self._waiters and self._busy < self._usable():
            waiter = self._waiters.popleft()
            waiter.granted = True
            self._busy += 1
            waiter.event.set()

    def _give_back_unused(self) -> None:
        self._busy -= 1
        self._dispatch(anyio.current_time())
        self._wake()

    def _fail_waiters(self, error: BaseException) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            waiter.error = error
            waiter.event.set()

    # -- internals: the background task ---------------------------------------------------

    async def _work(self) -> None:
        try:
            while True:
                self._wakeup = wakeup = anyio.Event()
                now = anyio.current_time()
                self._dispatch(now)
                if self._closing and self._held <= self._busy and not self._pending_reports():
                    if self._closed is not None:
                        self._closed.set()
                    if self._held == 0:
                        break
                at = self._next_exchange(now)
                if at <= now:
                    await self._exchange_once(now)
                    continue
                with anyio.move_on_after(None if math.isinf(at) else at - now):
                    await wakeup.wait()
        except Exception:  # a bug of ours: fail the queued calls rather than hang them
            logger.exception("shared limit %s: background task failed", self._name)
            error = RuntimeError(f"shared limit {self._name!r} stopped working (see the log)")
            self._fail_waiters(error)
        except BaseException:  # the loop is ending: give the permits back if we can
            with anyio.move_on_after(GIVE_BACK_TIMEOUT_S, shield=True):
                await self._give_everything_back()
            raise
        finally:
            self._worker_running = False
            self._task = None
            if self._closed is not None:
                self._closed.set()
        if self._closer is not None:
            with contextlib.suppress(Exception):
                await self._closer()

    def _pending_reports(self) -> bool:
        return bool(self._successes or self._rate_limits)

    def _next_exchange(self, now: float) -> float:
        """The loop time of the next exchange (``now``: at once; ``inf``: nothing due)."""
        if now < self._failed_until:
            return self._failed_until
        if self._rate_limits or self._held > max(self._busy, self._keep):
            return now  # a 429 to report, or permits over what it may keep to give back
        if self._closing:
            return now if self._held > self._busy or self._successes else math.inf
        waiting = len(self._waiters)
        if waiting and self._held > 0 and now >= self._term_end:
            return now  # queued calls, and the term ran out: renew
        at = math.inf
        free = max(0, self._usable() - self._busy)
        if waiting > free:
            at = max(self._next_poll, self._paused_until)
        elif waiting:
            at = self._paused_until  # wake when the pause ends, to admit them
        idle = self._idle()
        if idle > 0:
            if self._idle_since is None:
                self._idle_since = now
            at = min(at, self._idle_since + LINGER_S)
        else:
            self._idle_since = None
        if self._held > 0:
            at = min(at, self._term_end - RENEW_FRACTION * self._term_s)
        return at

    async def _exchange_once(self, now: float) -> None:
        keepable = min(self._held, max(self._busy, self._keep))
        returning = self._held - keepable
        idle = min(keepable, self._keep) - self._busy - len(self._waiters)
        lingered = self._idle_since is not None and now >= self._idle_since + LINGER_S
        if idle > 0 and (self._closing or lingered):
            returning += idle
            self._idle_since = None
        shortage = len(self._waiters) - max(0, min(self._held - returning, self._keep) - self._busy)
        asking = shortage > 0 and not self._closing and self._paused_until <= now
        want = min(self._chunk, shortage) if asking else 0
        request = LeaseRequest(
            self._client,
            want,
            returning=returning,
            successes=self._successes,
            rate_limits=tuple(self._rate_limits),
        )
        self._held -= returning
        self._successes = 0
        self._rate_limits = []
        client = self._client
        try:
            reply = await self._exchange(request)
        except Exception as exc:
            self._lose_lease(exc, request)
            return
        if client != self._client:  # pragma: no cover - only this task changes the lease
            return
        after = anyio.current_time()
        self._held += reply.granted
        self._keep = reply.held
        self._limit = reply.limit
        self._term_s = reply.term_s
        self._term_end = now + reply.term_s  # counted from the send: never later than the broker's
        if reply.pause_s > 0:
            self._paused_until = max(self._paused_until, after + reply.pause_s)
        self._failure = None
        if want:
            if reply.granted >= want:
                self._poll_delay, self._next_poll = POLL_MIN_S, -math.inf
            elif reply.granted:
                self._poll_delay, self._next_poll = POLL_MIN_S, after + POLL_MIN_S
            else:
                self._next_poll = after + self._poll_delay
                longest = max(POLL_MIN_S, min(POLL_MAX_S, RENEW_FRACTION * reply.term_s))
                self._poll_delay = min(2 * self._poll_delay, longest)
        self._dispatch(after)

    def _lose_lease(self, exc: Exception, request: LeaseRequest) -> None:
        """An exchange failed: whether the broker applied it is unknown, so start afresh
        under a new id (the broker reclaims the old one's permits as a dead client's);
        calls in flight finish uncounted, queued ones fail with the error."""
        if isinstance(exc, SharedLimitError):
            error = exc
        else:
            error = SharedLimitError(
                f"shared limit {self._name!r}: the exchange with its broker failed "
                f"({type(exc).__name__}: {exc})"
            )
        # Queued calls raise it; a failure nobody waited for (a renewal) is only logged.
        logger.log(logging.DEBUG if self._waiters else logging.WARNING, "%s", error)
        rate_limits = list(request.rate_limits) + self._rate_limits
        closing = self._closing
        self._fresh_state()
        self._closing = closing
        self._rate_limits = rate_limits  # reported on the next lease: they still count
        self._failure = error
        self._failed_until = anyio.current_time() + RETRY_AFTER_FAILURE_S
        self._fail_waiters(error)
        if closing:
            self._rate_limits = []

    async def _give_everything_back(self) -> None:
        if self._held == 0 and not self._pending_reports():
            return
        request = LeaseRequest(
            self._client,
            0,
            returning=self._held,
            successes=self._successes,
            rate_limits=tuple(self._rate_limits),
        )
        self._held = 0
        self._successes = 0
        self._rate_limits = []
        with contextlib.suppress(Exception):
            await self._exchange(request)
        if self._closer is not None:
            with contextlib.suppress(Exception):
                await self._closer()


def _loop_closed(token: Any) -> bool:
    return isinstance(token, asyncio.AbstractEventLoop) and token.is_closed()
