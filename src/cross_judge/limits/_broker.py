"""The permit broker of a shared limit: one pure, synchronous state machine per limit.

:class:`PermitBroker` holds what every client of one shared limit holds, and answers each
client's :class:`LeaseRequest` (permits wanted and given back, outcomes seen) with a
:class:`LeaseReply` (permits granted, how many it may keep, the limit, a pause, the term).
Its rules (the limit holds, fair shares under contention, how a client learns to shrink,
dead clients lose their permits, AIMD on 429s) are written out for users in
:mod:`cross_judge.shared_limit`, the documented page.

What it does not do: talk to anyone (its hosts do: ``SharedLimit.local`` in this process,
:class:`~cross_judge.shared_limit.LimitServer` over TCP, a Ray actor in
:mod:`cross_judge.ray`), sleep (time comes from the ``clock`` it is given), or lock (its
host serialises the calls).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._gate import pause_after_rate_limit

__all__ = ["DEAD_AFTER_TERMS", "LeaseReply", "LeaseRequest", "PermitBroker"]

DEAD_AFTER_TERMS = 3
"""Terms without an exchange after which a client is presumed dead and its permits reclaimed."""


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
    """The state of one shared limit (:mod:`cross_judge.shared_limit` has the rules).

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
        """Apply one client's request and answer it (:mod:`cross_judge.shared_limit`: the rules).

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
