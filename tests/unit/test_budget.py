"""Budget: reservations, settlement, refusals (no network)."""

from __future__ import annotations

import threading

import pytest

from cross_judge import ConfigError
from cross_judge.budget import Budget


def test_a_call_that_fits_is_reserved() -> None:
    budget = Budget(1.0)
    assert budget.reserve(0.4)
    assert (budget.reserved_usd, budget.remaining_usd) == (0.4, pytest.approx(0.6))


def test_a_call_that_does_not_fit_is_refused_and_counted() -> None:
    budget = Budget(1.0)
    assert budget.reserve(0.7)
    assert not budget.reserve(0.4)
    assert budget.skipped == 1 and budget.reserved_usd == 0.7


def test_settling_replaces_the_reservation_by_the_actual_cost() -> None:
    budget = Budget(1.0)
    budget.reserve(0.7)
    budget.settle(0.7, 0.1)
    assert (budget.spent_usd, budget.reserved_usd) == (0.1, 0.0)
    assert budget.reserve(0.85)


def test_exactly_the_remaining_amount_fits() -> None:
    budget = Budget(0.3)
    assert budget.reserve(0.1) and budget.reserve(0.2)
    assert not budget.reserve(1e-9)


def test_a_zero_budget_refuses_every_priced_call() -> None:
    assert not Budget(0).reserve(1e-9)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "5"])
def test_an_invalid_limit_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="budget_usd must be a finite number of dollars >= 0"):
        Budget(bad)  # type: ignore[arg-type]


def test_of_wraps_numbers_and_passes_budgets_through() -> None:
    shared = Budget(2.0)
    assert Budget.of(shared) is shared
    assert Budget.of(None) is None
    made = Budget.of(3)
    assert made is not None and made.limit_usd == 3.0


def test_reservations_from_many_threads_never_exceed_the_limit() -> None:
    budget = Budget(1.0)
    granted: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(100):
            ok = budget.reserve(0.003)
            with lock:
                granted.append(ok)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(granted) == 333  # floor(1.0 / 0.003)
    assert budget.reserved_usd <= 1.0 + 1e-9
    assert budget.skipped == 800 - 333


def test_repr_shows_the_money_and_nothing_else() -> None:
    budget = Budget(1.5)
    budget.reserve(0.5)
    assert repr(budget) == (
        "Budget(limit_usd=1.5, spent_usd=0.000000, reserved_usd=0.500000, skipped=0)"
    )
