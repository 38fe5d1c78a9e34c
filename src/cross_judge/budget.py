"""A spending cap in US dollars, shared by every call it is given to.

Before a call is made, its worst case (:func:`cross_judge.pricing.worst_case_cost`) is
reserved from the budget; if it does not fit in what is left after the money spent and
the reservations of calls in flight, the call is not made and its verdict is ``SKIPPED``
with ``error_kind="budget"``. When the call ends, the reservation is replaced by the
call's actual cost. So spending stays under the cap as long as the worst-case estimate
holds; it errs high on purpose (a rough token count that overcounts, all input uncached,
the full ``max_tokens``, peak rates), so calls are refused somewhat before the cap rather
than after it. A call cancelled in flight (early stop, a deadline, Ctrl-C) is charged its
estimated prompt cost, as a vendor may bill the prompt of a request it had started.

Set ``max_tokens`` close to what answers need: the worst case reserves all of it.
"""

from __future__ import annotations

import math
import threading

from .errors import ConfigError

__all__ = ["Budget"]


class Budget:
    """A cap of ``limit_usd`` dollars. Thread-safe; share one across calls and batches.

    ``spent_usd`` is what finished calls cost (their reported usage at known prices), plus
    the ``spent_usd`` given at construction: money already spent against this cap
    elsewhere, such as the earlier runs of a resumed results file (``cross-judge review
    --resume --budget-usd``); ``reserved_usd`` the worst cases of calls in flight;
    ``skipped`` how many calls were refused.

    Raises:
        ConfigError: ``limit_usd`` or ``spent_usd`` is not a finite number >= 0.
    """

    def __init__(self, limit_usd: float, *, spent_usd: float = 0.0) -> None:
        for name, value in (("budget_usd", limit_usd), ("spent_usd", spent_usd)):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigError(f"{name} must be a finite number of dollars >= 0, got {value!r}")
        self._limit = float(limit_usd)
        self._spent = float(spent_usd)
        self._reserved = 0.0
        self._skipped = 0
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
    def skipped(self) -> int:
        with self._lock:
            return self._skipped

    def reserve(self, amount: float) -> bool:
        """Reserve ``amount`` for a call if it fits; count a refusal otherwise."""
        with self._lock:
            if amount <= self._limit - self._spent - self._reserved + 1e-12:
                self._reserved += amount
                return True
            self._skipped += 1
            return False

    def settle(self, reserved: float, actual: float) -> None:
        """Replace a reservation of ``reserved`` by the call's ``actual`` cost."""
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved)
            self._spent += actual

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"Budget(limit_usd={self._limit:g}, spent_usd={self._spent:.6f}, "
                f"reserved_usd={self._reserved:.6f}, skipped={self._skipped})"
            )
