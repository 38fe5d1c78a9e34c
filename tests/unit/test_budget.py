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


@pytest.mark.parametrize("zero", [0, 0.0, -0.0])
def test_a_zero_budget_is_refused_saying_it_would_skip_every_call(zero: float) -> None:
    with pytest.raises(ConfigError, match=r"> 0, got .*0.*skips every one.*None for no cap"):
        Budget(zero)


def test_a_tiny_positive_budget_is_a_budget() -> None:
    budget = Budget(1e-9)
    assert budget.limit_usd == 1e-9 and not budget.reserve(1.0)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "5"])
def test_an_invalid_limit_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="budget_usd must be a finite number of dollars > 0"):
        Budget(bad)  # type: ignore[arg-type]


def test_refused_calls_add_up_the_worst_cases_they_would_have_reserved() -> None:
    budget = Budget(0.3)
    assert budget.reserve(0.25)
    assert not budget.reserve(0.1) and not budget.reserve(0.2)
    assert budget.skipped == 2 and budget.refused_usd == pytest.approx(0.3)


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


@pytest.mark.anyio
@pytest.mark.parametrize("entry", ["critic.judge", "ensemble.judge", "ensemble.judge_many"])
async def test_a_zero_budget_given_to_a_call_is_refused_before_anything_is_sent(
    entry: str,
) -> None:
    from cross_judge import Critic, Ensemble

    # Port 9 (discard) on loopback: a call made would end as an ERROR verdict, not raise.
    critic = Critic(name="a", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1")
    ensemble = Ensemble([critic])
    calls = {
        "critic.judge": lambda: critic.judge("an item", budget=0),
        "ensemble.judge": lambda: ensemble.judge("an item", budget_usd=0),
        "ensemble.judge_many": lambda: ensemble.judge_many(["an item"], budget_usd=0),
    }
    with pytest.raises(ConfigError, match="budget_usd must be a finite number of dollars > 0"):
        await calls[entry]()
    await ensemble.aclose()
