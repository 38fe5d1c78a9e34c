"""A spending cap in US dollars, shared by every call it is given to.

Before a call is made, its worst case (:func:`cross_judge.pricing.worst_case_cost`) is
reserved from the budget. When the call ends, the reservation is replaced by the call's
actual cost. So spending stays under the cap as long as the worst-case estimate holds; it
errs high on purpose (a rough token count that overcounts, all input uncached, the full
``max_tokens``, peak rates), so calls are refused somewhat before the cap rather than after
it. A call cancelled in flight (early stop, a deadline, Ctrl-C) is charged its estimated
prompt cost, as a vendor may bill the prompt of a request it had started. A call whose
vendor reports no usable usage (none, or zero tokens: many gateways leave it out) is charged
its reservation, the worst case, since what it cost is not known
(:func:`cross_judge.pricing.usage_is_plausible`).

A call whose worst case does not fit in what is left after the money spent and the
reservations of calls in flight waits for those calls to settle
(:meth:`Budget.reserve_or_wait`, what a critic does): reservations are worst cases, and
most of what they hold comes back. It is refused (not made: its verdict is ``SKIPPED``
with ``error_kind="budget"``) only when it cannot fit even if every call in flight cost
nothing, or when nothing is in flight and it still does not fit. So a tight budget at a
high concurrency is spent, not skipped while most of it sits in worst-case reservations,
and the reservations still bound the spending.

Set ``max_tokens`` close to what answers need: the worst case reserves all of it.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

import anyio

from ._sync import loop_caller, running_loop
from .errors import ConfigError

__all__ = ["Budget"]

_EPSILON = 1e-12  # dollars: float sums of reservations must not refuse an exact fit


class _Waiter:
    """A call waiting for room: an event on its own loop, and a way to set it from any
    thread (a budget is shared across threads and event loops)."""

    __slots__ = ("_call_soon", "_home", "event")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self._home, self._call_soon = loop_caller()

    def wake(self) -> None:
        if running_loop() is self._home:
            self.event.set()
            return
        with contextlib.suppress(Exception):  # its loop has ended: no one waits any more
            self._call_soon(self.event.set)


def _is_dollars(value: object) -> bool:
    """A finite int or float (not a bool): what an amount of dollars may be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Budget:
    """A cap of ``limit_usd`` dollars. Thread-safe; share one across calls and batches.

    ``spent_usd`` is what finished calls cost (their reported usage at known prices, or
    their worst case when the vendor reported no usable usage), plus the ``spent_usd``
    given at construction: money already spent against this cap elsewhere, such as the
    earlier runs of a resumed results file (``cross-judge review --resume --budget-usd``);
    ``reserved_usd`` the worst cases of calls in flight (``in_flight`` of them);
    ``skipped`` how many calls were refused, and ``refused_usd`` the worst cases they
    would have reserved.

    A limit of 0 (or less) is refused: it would make no call and mark every verdict
    ``SKIPPED``; pass ``budget_usd=None`` for no cap.

    Raises:
        ConfigError: ``limit_usd`` is not a finite number > 0, or ``spent_usd`` not a
            finite number >= 0.
    """

    def __init__(self, limit_usd: float, *, spent_usd: float = 0.0) -> None:
        if not _is_dollars(limit_usd) or limit_usd <= 0:
            hint = (
                ": a budget of 0 makes no call and skips every one; give a positive cap, or "
                "None for no cap"
                if _is_dollars(limit_usd)
                else ""
            )
            raise ConfigError(
                f"budget_usd must be a finite number of dollars > 0, got {limit_usd!r}{hint}"
            )
        if not _is_dollars(spent_usd) or spent_usd < 0:
            raise ConfigError(
                f"spent_usd must be a finite number of dollars >= 0, got {spent_usd!r}"
            )
        self._limit = float(limit_usd)
        self._spent = float(spent_usd)
        self._reserved = 0.0
        self._in_flight = 0  # counted apart: float sums of reservations leave residues
        self._skipped = 0
        self._refused = 0.0
        self._waiters: list[_Waiter] = []
        self._lock = threading.Lock()

    @classmethod
    def of(cls, value: Budget | float | None) -> Budget | None:
        """``value`` as a budget: itself, a new one for a number, ``None`` for ``None``."""
        if value is None or isinstance(value, Budget):
            return value
        return cls(value)

    @property
    def limit_usd(self) -> float:
        return self._limit

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    @property
    def reserved_usd(self) -> float:
        with self._lock:
            return self._reserved

    @property
    def remaining_usd(self) -> float:
        """What a new call may still reserve: the limit minus spending and reservations."""
        with self._lock:
            return self._limit - self._spent - self._reserved

    @property
    def in_flight(self) -> int:
        """How many reservations are held: calls reserved and not settled yet."""
        with self._lock:
            return self._in_flight

    @property
    def skipped(self) -> int:
        with self._lock:
            return self._skipped

    @property
    def refused_usd(self) -> float:
        """The worst cases of the calls refused (:attr:`skipped`), summed: the room they
        would have reserved. ``refused_usd / skipped`` is what one of them reserves."""
        with self._lock:
            return self._refused

    def reserve(self, amount: float) -> bool:
        """Reserve ``amount`` for a call if it fits now; count a refusal otherwise. Never
        waits (:meth:`reserve_or_wait` does)."""
        with self._lock:
            if self._fits(amount):
                self._take(amount)
                return True
            self._refuse(amount)
            return False

    async def reserve_or_wait(
        self,
        amount: float,
        *,
        while_waiting: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> bool:
        """Reserve ``amount`` for a call, waiting while the reservations of calls in
        flight hold the room it needs; ``True`` once reserved.

        Returns ``False`` (a refusal, counted in :attr:`skipped`) only when the call
        cannot fit: ``amount`` is more than the limit minus the money spent, so it would
        not fit even if every call in flight cost nothing, or no call is in flight and it
        still does not fit. Each :meth:`settle` wakes the waiting calls, which take the
        freed room in turn; a reservation is only ever taken when it fits beside the others,
        so spending stays bounded by the limit as with :meth:`reserve`. A call that fits at
        once does not wait nor yield to the event loop.

        ``while_waiting`` is entered only if the call must wait, and left when it stops
        waiting (batch mode counts such a call as waiting, so a round of batched requests
        holding the reservations is submitted). A waiting call may be cancelled; it then
        reserves nothing. Works across threads and event loops: a settle in one wakes the
        calls waiting in the others.
        """
        waiter: _Waiter | None = None
        with contextlib.ExitStack() as stack:
            try:
                while True:
                    with self._lock:
                        if self._fits(amount):
                            self._take(amount)
                            return True
                        if self._in_flight == 0 or amount > self._limit - self._spent + _EPSILON:
                            self._refuse(amount)
                            return False
                        waiter = _Waiter()  # each settle empties the list: wait anew
                        self._waiters.append(waiter)
                    if while_waiting is not None:  # entered once, left when this returns
                        stack.enter_context(while_waiting())
                        while_waiting = None
                    await waiter.event.wait()
            finally:
                if waiter is not None:
                    with self._lock:
                        if waiter in self._waiters:  # cancelled while waiting
                            self._waiters.remove(waiter)

    def settle(self, reserved: float, actual: float) -> None:
        """Replace a reservation of ``reserved`` by the call's ``actual`` cost, and wake
        the calls waiting for room."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._reserved = max(0.0, self._reserved - reserved) if self._in_flight else 0.0
            self._spent += actual
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.wake()

    def _fits(self, amount: float) -> bool:
        return amount <= self._limit - self._spent - self._reserved + _EPSILON

    def _take(self, amount: float) -> None:
        self._reserved += amount
        self._in_flight += 1

    def _refuse(self, amount: float) -> None:
        self._skipped += 1
        self._refused += amount

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"Budget(limit_usd={self._limit:g}, spent_usd={self._spent:.6f}, "
                f"reserved_usd={self._reserved:.6f}, skipped={self._skipped})"
            )
