"""A concurrency limit shared by many processes: N of them under a limit L behave like one.

A vendor that allows L requests at once counts them across everything that calls it. The
loop-local limits of :mod:`cross_judge._limits` cannot see other processes: two processes
each capped at 4 against a vendor that allows 4 send up to 8 and draw 429s. A
:class:`SharedLimit` attached to a vendor
(``set_vendor_limits("openai", shared=SharedLimit.connect("host:7007"))``) makes every
attempt to it also hold one *permit* of a cluster-wide limit, leased from one
:class:`PermitBroker`:

* in this process: :meth:`SharedLimit.local` (one event loop; tests);
* in a small TCP server, :class:`LimitServer` (``python -m cross_judge.shared_limit
  --limit 4 --port 7007``), reached with :meth:`SharedLimit.connect`: many processes on
  one or several machines, no extra dependency;
* in a Ray actor (:mod:`cross_judge.ray`), which hosts the same broker.

The broker (:class:`PermitBroker`) is a pure, synchronous state machine. Clients talk to it
only through :meth:`PermitBroker.exchange`: a :class:`LeaseRequest` (permits wanted and
given back, outcomes seen) answered by a :class:`LeaseReply` (permits granted, how many the
client may keep, the limit, a pause, the term). Its rules:

* **The limit holds.** Grants never take the permits counted as held above ``limit``:
  ``granted = min(want, limit - held, ...)``. The total exceeds the limit only right after
  a decrease (below), and then nothing is granted until it is back under.
* **Fair shares under contention.** While another client waits for permits it did not get
  (its last exchange, within one term, wanted more than it was granted), or the total is
  over the limit, each *contending* client (one that holds permits or waits) may keep only
  its share: ``limit // n`` of the ``n`` contending clients, the remainder going one each
  to those holding the most (then to those waiting longest, then first come). Nobody
  waiting and not over: a client may keep all it holds and be granted any free permit.
* **How a client learns to shrink.** ``LeaseReply.held`` is the number of permits the
  client may keep: what the broker counts for it, capped by its share when it must
  shrink. A client holding more (after a decrease, or when others wait) is granted 0 and
  gives back the excess: at once for permits not in use, and as its calls finish for the
  others, instead of reusing them. The broker counts the excess as held until returned.
* **Dead clients lose their permits.** A client that has not exchanged for
  ``DEAD_AFTER_TERMS`` (3) terms is presumed dead: at the next exchange (of anyone) its
  permits are reclaimed. A live client exchanges at least once per term while it holds
  permits (:class:`SharedLimit` renews before its term runs out), so a process killed
  with ``kill -9`` costs the others its permits for three terms at most, and a call it
  left running at the vendor has three terms to finish before its permit is reused.
* **AIMD, as** :class:`~cross_judge._limits.VendorLimiter` **does.** A 429 reported
  (``rate_limits``, one entry per 429 with its ``Retry-After``) is a *new* congestion
  signal unless it comes within the echo window of the latest decrease; a new signal
  sets ``n += 1``, ``L = min(limit, held)`` (held stands for in flight) and
  ``limit = max(1, L // 2)``. The echo window lasts until the later of that decrease's
  pause end and one term after it: calls admitted before the decrease, or by clients that
  had not yet heard of it (they hear at their next exchange, within one term), are part
  of the same overload. An echo does not halve again; it keeps ``limit`` at or below what
  the vendor did not refuse of that burst (``limit = max(1, min(limit, L - refused))``).
  Every 429 pauses all clients: no call may start before ``now + wait``, ``wait`` from
  :func:`~cross_judge._limits.pause_after_rate_limit` (the vendor's ``Retry-After``
  capped at :data:`~cross_judge._retry.MAX_RETRY_AFTER_S`, else 0.25 s doubling per
  consecutive signal up to 8 s); a pause is only ever extended. Successes reset ``n`` and
  raise ``limit`` by one per ``limit`` successes, up to the configured limit. A request
  carrying both is applied successes first.

The client (:class:`SharedLimit`, one per process or actor and event loop) leases permits
in chunks and reuses a held permit for its next waiting call without a round trip while
its term lasts; it gives back permits nobody waits for (after :data:`LINGER_S`), so the
others can use them; it batches its outcome reports into its next exchange, but reports
a 429 at once: it pauses itself, and the broker's pause reaches every other client at its
next exchange (within one term). A background task on the client's event loop does every
exchange, one at a time.

What it does not do: pace requests per minute across processes (``rpm`` stays per event
loop), authenticate clients (bind a :class:`LimitServer` to a private interface), push
news to clients (they learn of a decrease or a pause at their next exchange, within one
term), or survive a broker restart without a term of doubt (clients then start afresh).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import signal
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.from_thread import start_blocking_portal
from anyio.streams.buffered import BufferedByteReceiveStream

from ..errors import ConfigError, SharedLimitError
from ..transport._pool import _loop_token
from .gate import _is_rate_limit, pause_after_rate_limit

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

logger = logging.getLogger("cross_judge.shared_limit")

DEAD_AFTER_TERMS = 3
"""Terms without an exchange after which a client is presumed dead and its permits reclaimed."""

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

CONNECT_TIMEOUT_S = 10.0
"""Longest wait to connect to a :class:`LimitServer`."""

EXCHANGE_TIMEOUT_S = 30.0
"""Longest wait for a :class:`LimitServer` to answer an exchange."""

GIVE_BACK_TIMEOUT_S = 5.0
"""Longest wait, as its event loop ends, for a client to give its permits back."""

MAX_LINE_BYTES = 1 << 20
"""Longest request or reply line of the :class:`LimitServer` protocol."""

DEFAULT_PORT = 7007
"""The port ``python -m cross_judge.shared_limit`` listens on unless told otherwise."""


@dataclass(frozen=True)
class LeaseRequest:
    """One client's exchange with the broker.

    Attributes:
        client: a stable id of the asking client (a uuid4 hex per :class:`SharedLimit`).
        want: permits wanted now, on top of those held (>= 0).
        returning: permits given back (>= 0): held ones it no longer needs.
        successes: completed responses since its last exchange (>= 0).
        rate_limits: one entry per 429 seen since its last exchange: its ``Retry-After``
            in seconds, ``None`` when the vendor sent none.

    Raises:
        ValueError: an empty client id, a negative count, or a ``Retry-After`` that is
            not a number.
    """

    client: str
    want: int
    returning: int = 0
    successes: int = 0
    rate_limits: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.client, str) or not self.client:
            raise ValueError(f"LeaseRequest.client must be a non-empty string, got {self.client!r}")
        for name in ("want", "returning", "successes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"LeaseRequest.{name} must be an int >= 0, got {value!r}")
        for retry_after in self.rate_limits:
            if retry_after is not None and (
                isinstance(retry_after, bool)
                or not isinstance(retry_after, (int, float))
                or math.isnan(retry_after)
            ):
                raise ValueError(
                    "LeaseRequest.rate_limits holds one Retry-After (seconds) or None per "
                    f"429, got {retry_after!r}"
                )


@dataclass(frozen=True)
class LeaseReply:
    """The broker's answer to a :class:`LeaseRequest`.

    Attributes:
        granted: new permits granted by this exchange (0 to ``want``).
        held: permits the client may keep, new ones included. When it holds more (after a
            decrease, or when others wait), it gives back the excess: at once for permits
            not in use, as its calls finish for the others.
        limit: the shared limit now (lowered by 429s, raised back by successes).
        pause_s: seconds from now during which no client may start a call (0: none).
        term_s: how long the client may keep reusing held permits before it must
            exchange again; it must exchange at least once per term while holding any.
    """

    granted: int
    held: int
    limit: int
    pause_s: float
    term_s: float


class _Client:
    __slots__ = ("held", "last_seen", "order", "waiting_since")

    def __init__(self, now: float, order: int) -> None:
        self.held = 0
        self.last_seen = now
        self.order = order  # arrival order: the last tie-break of shares
        self.waiting_since: float | None = None  # its demand unmet since then


class PermitBroker:
    """The state of one shared limit (the module docstring has the rules).

    Pure and synchronous: time comes from ``clock`` (seconds, monotonic), so the rules are
    testable without sleeping. Not thread-safe: its host (a :class:`LimitServer`, a Ray
    actor, a :class:`SharedLimit` made by :meth:`SharedLimit.local`) serialises calls.

    Raises:
        ValueError: ``limit`` is not a whole number >= 1, or ``term_s`` not a finite
            number > 0.
    """

    def __init__(
        self,
        limit: int,
        *,
        term_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a whole number >= 1 (calls at once), got {limit!r}")
        if (
            isinstance(term_s, bool)
            or not isinstance(term_s, (int, float))
            or not math.isfinite(term_s)
            or term_s <= 0
        ):
            raise ValueError(f"term_s must be a finite number of seconds > 0, got {term_s!r}")
        self._ceiling = limit
        self._limit = limit
        self._term_s = float(term_s)
        self._clock = clock
        self._clients: dict[str, _Client] = {}
        self._arrivals = 0
        self._held = 0
        self._paused_until = -math.inf
        self._consecutive = 0  # new congestion signals since the last success
        self._credit = 0  # successes since the limit last grew
        self._echo_until = -math.inf  # 429s before this are echoes of the latest decrease
        self._burst_level = 0  # permits held at the latest decrease
        self._burst_refused = 0  # 429s reported for that burst so far

    # -- inspection ------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Permits that may be held at once now (the configured limit, or lower after 429s)."""
        return self._limit

    @property
    def ceiling(self) -> int:
        """The configured limit: what successes raise ``limit`` back to."""
        return self._ceiling

    @property
    def held(self) -> int:
        """Permits counted as held by all clients (above ``limit`` only after a decrease)."""
        return self._held

    @property
    def clients(self) -> Mapping[str, int]:
        """A snapshot: the permits counted for each known client (dead ones are removed at
        the next exchange, not by reading this)."""
        return {name: c.held for name, c in self._clients.items()}

    @property
    def term_s(self) -> float:
        """Seconds a client may reuse its permits between exchanges."""
        return self._term_s

    @property
    def paused_until(self) -> float:
        """Clock time before which no client may start a call."""
        return self._paused_until

    # -- the exchange ----------------------------------------------------------------------

    def exchange(self, request: LeaseRequest) -> LeaseReply:
        """Apply one client's request and answer it (module docstring: the rules).

        In order: reclaim the permits of dead clients, take back ``returning`` (at most
        what the client holds: a client presumed dead and come back returns nothing),
        apply ``successes``, then each 429 of ``rate_limits``, then grant. An unknown
        client is registered.
        """
        now = self._clock()
        self._reclaim_dead(now, keep=request.client)
        client = self._clients.get(request.client)
        if client is None:
            client = self._clients[request.client] = _Client(now, self._arrivals)
            self._arrivals += 1
        client.last_seen = now
        returned = min(request.returning, client.held)
        client.held -= returned
        self._held -= returned
        if request.successes:
            self._record_successes(request.successes)
        for retry_after in request.rate_limits:
            self._record_rate_limit(now, retry_after)

        share = self._share(request.client, now, wants=request.want > 0)
        cap = client.held + request.want if share is None else share
        granted = max(0, min(request.want, self._limit - self._held, cap - client.held))
        client.held += granted
        self._held += granted
        if request.want > granted:
            if client.waiting_since is None:
                client.waiting_since = now
        else:
            client.waiting_since = None
        return LeaseReply(
            granted=granted,
            held=min(client.held, cap),
            limit=self._limit,
            pause_s=max(0.0, self._paused_until - now),
            term_s=self._term_s,
        )

    # -- internals -------------------------------------------------------------------------

    def _reclaim_dead(self, now: float, *, keep: str) -> None:
        horizon = now - DEAD_AFTER_TERMS * self._term_s
        dead = [name for name, c in self._clients.items() if c.last_seen < horizon and name != keep]
        for name in dead:
            self._held -= self._clients.pop(name).held

    def _waiting(self, client: _Client, now: float) -> bool:
        """Its last exchange, within one term, wanted more than it was granted."""
        return client.waiting_since is not None and now - client.last_seen <= self._term_s

    def _share(self, name: str, now: float, *, wants: bool) -> int | None:
        """The most ``client`` may hold: ``None`` (no cap) unless others wait or the total
        is over the limit; then its share of the limit among the contending clients."""
        others_wait = any(
            self._waiting(c, now) for other, c in self._clients.items() if other != name
        )
        if not others_wait and self._held <= self._limit:
            return None
        contending = [
            (other, c)
            for other, c in self._clients.items()
            if c.held > 0 or (other == name and wants) or (other != name and self._waiting(c, now))
        ]
        if all(other != name for other, _ in contending):
            return 0  # neither holding nor wanting: nothing to keep
        base, extra = divmod(self._limit, len(contending))

        def rank(entry: tuple[str, _Client]) -> tuple[int, float, int]:
            other, c = entry
            since = c.waiting_since
            if other == name and wants and since is None:
                since = now
            return -c.held, math.inf if since is None else since, c.order

        first = sorted(contending, key=rank)[:extra]
        return base + (1 if any(other == name for other, _ in first) else 0)

    def _record_successes(self, count: int) -> None:
        self._consecutive = 0
        if self._limit >= self._ceiling:
            return
        self._credit += count
        while self._credit >= self._limit and self._limit < self._ceiling:
            self._credit -= self._limit
            self._limit += 1
        if self._limit >= self._ceiling:
            self._credit = 0

    def _record_rate_limit(self, now: float, retry_after: float | None) -> None:
        new_signal = now >= self._echo_until
        if new_signal:
            self._consecutive += 1
            level = max(1, min(self._limit, self._held))
            self._burst_level, self._burst_refused = level, 1
            self._limit = max(1, level // 2)
            self._credit = 0
        else:
            self._burst_refused += 1
            accepted = self._burst_level - self._burst_refused
            self._limit = max(1, min(self._limit, accepted))
        self._consecutive = max(self._consecutive, 1)
        wait = pause_after_rate_limit(self._consecutive, retry_after)
        self._paused_until = max(self._paused_until, now + wait)
        if new_signal:
            self._echo_until = max(self._paused_until, now + self._term_s)


# -- the client ------------------------------------------------------------------------------------

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
    permit (after its loop-local limits, :mod:`cross_judge._limits`).

    Behaviour (the broker's rules are in the module docstring):

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
        host, port = _parse_address(address)
        exchange = _TcpExchange(host, port)
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
            elif _is_rate_limit(outcome):
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
        token, library = _loop_token()
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


# -- the wire: newline-delimited JSON over TCP -----------------------------------------------


def _parse_address(address: str) -> tuple[str, int]:
    text = str(address).strip()
    host, sep, port_text = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    problem = None
    if not sep or not host:
        problem = "it has no host"
    elif not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        problem = "its port is not a number from 1 to 65535"
    if problem is not None:
        raise ConfigError(
            f"shared limit address {address!r}: {problem}; pass 'host:port' as the server "
            f"printed it, e.g. '127.0.0.1:{DEFAULT_PORT}' (or '[::1]:{DEFAULT_PORT}')"
        )
    return host, int(port_text)


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _request_to_json(request: LeaseRequest) -> bytes:
    body = {
        "client": request.client,
        "want": request.want,
        "returning": request.returning,
        "successes": request.successes,
        "rate_limits": list(request.rate_limits),
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def _request_from_json(raw: bytes) -> LeaseRequest:
    """Raises ``ValueError`` (or ``TypeError``) for anything but a valid request."""
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("a request is a JSON object")
    rate_limits = body.get("rate_limits", [])
    if not isinstance(rate_limits, list):
        raise ValueError("rate_limits is a list")
    return LeaseRequest(
        client=body.get("client"),  # type: ignore[arg-type]  # LeaseRequest checks types
        want=body.get("want"),  # type: ignore[arg-type]
        returning=body.get("returning", 0),
        successes=body.get("successes", 0),
        rate_limits=tuple(rate_limits),
    )


def _reply_to_json(reply: LeaseReply) -> bytes:
    body = {
        "granted": reply.granted,
        "held": reply.held,
        "limit": reply.limit,
        "pause_s": reply.pause_s,
        "term_s": reply.term_s,
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def _reply_from_json(raw: bytes, address: str) -> LeaseReply:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        raise SharedLimitError(
            f"the shared limit server at {address} refused the exchange: {body['error']}"
        )
    fields = ("granted", "held", "limit", "pause_s", "term_s")
    values = [body.get(name) for name in fields] if isinstance(body, dict) else []
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if (
        len(numbers) != len(fields)
        or not all(isinstance(v, int) for v in numbers[:3])
        or min(numbers[:2]) < 0
        or numbers[2] < 1
        or not math.isfinite(numbers[4])
        or numbers[4] <= 0
    ):
        raise SharedLimitError(
            f"{address} answered something that is not a lease reply; check that the address "
            "is a cross_judge.shared_limit server (python -m cross_judge.shared_limit)"
        )
    granted, held, limit = (int(v) for v in numbers[:3])
    return LeaseReply(granted, held, limit, max(0.0, float(numbers[3])), float(numbers[4]))


_STREAM_ERRORS = (
    OSError,
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.DelimiterNotFound,
)


class _TcpExchange:
    """One connection to a :class:`LimitServer`, opened on first use (per event loop);
    exchanges on it must not overlap (:class:`SharedLimit` does one at a time)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.address = _format_address(host, port)
        self._stream: SocketStream | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._token: Any = None

    async def __call__(self, request: LeaseRequest) -> LeaseReply:
        token = _loop_token()[0]
        if self._stream is not None and token is not self._token:
            self._stream = self._reader = None  # opened on a loop that has ended
        if self._stream is None or self._reader is None:
            await self._connect(token)
        stream, reader = self._stream, self._reader
        if stream is None or reader is None:  # pragma: no cover - _connect sets both
            raise SharedLimitError(f"no connection to the shared limit server at {self.address}")
        try:
            with anyio.fail_after(EXCHANGE_TIMEOUT_S):
                await stream.send(_request_to_json(request))
                raw = await reader.receive_until(b"\n", MAX_LINE_BYTES)
        except (*_STREAM_ERRORS, TimeoutError) as exc:
            await self.aclose()
            what = "no answer" if isinstance(exc, TimeoutError) else "connection lost"
            raise SharedLimitError(
                f"the shared limit server at {self.address} did not answer ({what}); check "
                "that it is still running"
            ) from exc
        return _reply_from_json(raw, self.address)

    async def _connect(self, token: Any) -> None:
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                stream = await anyio.connect_tcp(self.host, self.port)
        except (OSError, TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise SharedLimitError(
                f"cannot reach the shared limit server at {self.address} ({reason}); check "
                "the address and that the server is running (python -m "
                f"cross_judge.shared_limit --limit N --port {self.port})"
            ) from exc
        self._stream, self._reader, self._token = stream, BufferedByteReceiveStream(stream), token

    async def aclose(self) -> None:
        stream, self._stream, self._reader = self._stream, None, None
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()


# -- the server ------------------------------------------------------------------------------------


class LimitServer:
    """A :class:`PermitBroker` served over TCP (newline-delimited JSON), from a thread.

    ``with LimitServer(limit=4) as server:`` then ``SharedLimit.connect(server.address)``
    in each process. Each line a client sends is a :class:`LeaseRequest` as a JSON object
    (``client``, ``want``, ``returning``, ``successes``, ``rate_limits``); each answer
    line is a :class:`LeaseReply` (``granted``, ``held``, ``limit``, ``pause_s``,
    ``term_s``), or ``{"error": "..."}`` for a malformed request (the connection stays
    open). There is no authentication: it listens on ``127.0.0.1`` unless told
    otherwise; bind it to a private interface only. ``python -m cross_judge.shared_limit``
    runs one from the command line.

    Raises:
        ValueError: ``limit``, ``term_s`` or ``port`` is invalid.
    """

    def __init__(
        self, limit: int, *, host: str = "127.0.0.1", port: int = 0, term_s: float = 2.0
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535 (0 picks a free port), got {port!r}")
        self._broker = PermitBroker(limit, term_s=term_s)
        self._lock = threading.Lock()  # the broker is read from other threads
        self._host = "127.0.0.1" if host == "localhost" else host
        self._requested_port = port
        self._port: int | None = None
        self._stack: contextlib.ExitStack | None = None
        self._lifecycle = threading.Lock()

    @property
    def port(self) -> int:
        """The port listened on (known once started).

        Raises:
            RuntimeError: not started.
        """
        if self._port is None:
            raise RuntimeError("LimitServer is not running: start() it or use it in a with block")
        return self._port

    @property
    def address(self) -> str:
        """``"host:port"``, as :meth:`SharedLimit.connect` takes it."""
        return _format_address(self._host, self.port)

    @property
    def broker(self) -> PermitBroker:
        """The broker served (read it for inspection; :meth:`snapshot` reads it safely)."""
        return self._broker

    def snapshot(self) -> dict[str, Any]:
        """The broker's state now: ``limit``, ``held`` and ``clients`` (permits per client)."""
        with self._lock:
            b = self._broker
            return {"limit": b.limit, "held": b.held, "clients": dict(b.clients)}

    def start(self) -> LimitServer:
        """Start listening (idempotent) and return ``self``.

        Raises:
            OSError: the address cannot be listened on (in use, not this machine's); the
                message says so.
        """
        with self._lifecycle:
            if self._stack is not None:
                return self
            stack = contextlib.ExitStack()
            portal = stack.enter_context(start_blocking_portal(name="cross-judge limit server"))
            try:
                future, port = portal.start_task(self._serve)
            except OSError as exc:
                stack.close()
                where = _format_address(self._host, self._requested_port)
                raise OSError(
                    exc.errno,
                    f"cannot listen on {where} ({exc.strerror or exc}); pick another port, or "
                    "stop what listens there",
                ) from exc
            stack.callback(_cancel_quietly, future)
            self._stack, self._port = stack, int(port)
            return self

    def stop(self) -> None:
        """Stop listening and drop every connection (idempotent)."""
        with self._lifecycle:
            stack, self._stack = self._stack, None
            if stack is not None:
                stack.close()

    def __enter__(self) -> LimitServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def _serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(
            local_host=self._host, local_port=self._requested_port
        )
        async with listener:
            task_status.started(listener.extra(SocketAttribute.local_port))
            await listener.serve(self._handle)

    async def _handle(self, stream: SocketStream) -> None:
        try:
            async with stream:
                reader = BufferedByteReceiveStream(stream)
                while True:
                    try:
                        raw = await reader.receive_until(b"\n", MAX_LINE_BYTES)
                    except anyio.DelimiterNotFound:
                        await stream.send(b'{"error":"request line too long"}\n')
                        return
                    await stream.send(self._answer(raw))
        except _STREAM_ERRORS:
            return  # the client went away
        except Exception:  # never let one connection stop the server
            logger.exception("limit server: a connection failed")

    def _answer(self, raw: bytes) -> bytes:
        try:
            request = _request_from_json(raw)
        except (ValueError, TypeError) as exc:
            message = f"malformed lease request: {exc}"
            return json.dumps({"error": message}).encode() + b"\n"
        with self._lock:
            reply = self._broker.exchange(request)
        return _reply_to_json(reply)


def _cancel_quietly(future: Any) -> None:
    future.cancel()
    with contextlib.suppress(BaseException):
        future.exception(timeout=10)


# -- the command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m cross_judge.shared_limit --limit 4 --port 7007``: serve a shared limit
    until interrupted (Ctrl-C, SIGTERM). Prints ``READY host:port`` once listening."""
    parser = argparse.ArgumentParser(
        prog="python -m cross_judge.shared_limit",
        description=(
            "Serve a concurrency limit shared by many processes. In each process attach it "
            "to a vendor: set_vendor_limits('openai', shared=SharedLimit.connect('HOST:PORT'))."
        ),
    )
    parser.add_argument(
        "--limit", type=int, required=True, help="calls allowed at once across all processes"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; there is no authentication)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    parser.add_argument(
        "--term",
        type=float,
        default=2.0,
        help="seconds a client may reuse its permits between exchanges (default 2)",
    )
    args = parser.parse_args(argv)
    try:
        server = LimitServer(args.limit, host=args.host, port=args.port, term_s=args.term)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        server.start()
    except OSError as exc:
        parser.exit(1, f"{parser.prog}: error: {exc.strerror or exc}\n")
    stop = threading.Event()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: stop.set())
    try:
        print(f"READY {server.address}", flush=True)
        if server.address.split(":")[0] not in ("127.0.0.1", "[", "[::1]"):
            print(
                f"warning: anyone who can reach {server.address} can take permits",
                file=sys.stderr,
                flush=True,
            )
        while not stop.is_set():  # short waits keep the main thread responsive to signals
            stop.wait(0.5)
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
