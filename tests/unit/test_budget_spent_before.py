"""A budget that starts from money already spent against it (a resumed results file)."""

from __future__ import annotations

import pytest

from cross_judge.budget import Budget
from cross_judge.errors import ConfigError


def test_money_spent_before_counts_against_the_limit() -> None:
    budget = Budget(1.0, spent_usd=0.75)
    assert budget.spent_usd == 0.75 and budget.remaining_usd == pytest.approx(0.25)
    assert not budget.reserve(0.30)
    assert budget.reserve(0.25)


def test_settled_calls_add_to_what_was_spent_before() -> None:
    budget = Budget(1.0, spent_usd=0.5)
    assert budget.reserve(0.2)
    budget.settle(0.2, 0.1)
    assert budget.spent_usd == pytest.approx(0.6)


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), True, "1"])
def test_an_invalid_amount_spent_before_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="spent_usd must be a finite number of dollars >= 0"):
        Budget(1.0, spent_usd=bad)  # type: ignore[arg-type]  # the wrong type is the point
