"""Reasoning tokens priced apart (issue 27, point 2): a ``reasoning`` rate per model, the
thinking budget in the worst case a budget reserves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from cross_judge import ConfigError, pricing
from cross_judge.pricing import (
    PeakHours,
    Price,
    estimate_prompt_tokens,
    load_prices,
    price_for,
    register_price,
    worst_case_cost,
)
from cross_judge.transport import ChatRequest
from cross_judge.verdict import Usage

MONDAY_NOON = datetime(2026, 11, 16, 12, 0, tzinfo=timezone.utc)
ALWAYS_PEAK = PeakHours(windows=((0, 1440),), weekdays_only=False, multiplier=2.0)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    pricing._clear_registered()
    yield
    pricing._clear_registered()


def request(max_tokens: int = 100, thinking_budget: int | None = None) -> ChatRequest:
    return ChatRequest(
        model="m",
        system="",
        user="x" * 300,
        temperature=0.0,
        max_tokens=max_tokens,
        thinking_budget=thinking_budget,
    )


def test_reasoning_tokens_are_billed_at_the_reasoning_rate_and_the_rest_at_output() -> None:
    price = Price(input=1.0, output=2.0, reasoning=10.0)
    usage = Usage(prompt_tokens=1_000, completion_tokens=400, reasoning_tokens=300)
    # 1000 input at 1, 100 answer tokens at 2, 300 reasoning tokens at 10.
    assert price.cost(usage) == pytest.approx((1_000 * 1.0 + 100 * 2.0 + 300 * 10.0) / 1e6)


def test_without_a_reasoning_rate_reasoning_tokens_cost_the_output_rate() -> None:
    price = Price(input=1.0, output=2.0)
    usage = Usage(prompt_tokens=1_000, completion_tokens=400, reasoning_tokens=300)
    assert price.reasoning is None
    assert price.cost(usage) == pytest.approx((1_000 * 1.0 + 400 * 2.0) / 1e6)


def test_reasoning_tokens_beyond_the_completion_are_counted_as_the_completion() -> None:
    price = Price(input=0.0, output=2.0, reasoning=10.0)
    usage = Usage(prompt_tokens=0, completion_tokens=100, reasoning_tokens=5_000)
    assert price.cost(usage) == pytest.approx(100 * 10.0 / 1e6)


def test_reasoning_tokens_take_the_batch_multiplier_like_output() -> None:
    price = Price(input=1.0, output=2.0, reasoning=8.0, batch_multiplier=0.5, peak=ALWAYS_PEAK)
    usage = Usage(prompt_tokens=0, completion_tokens=50, reasoning_tokens=50)
    assert price.cost(usage, batch=True) == pytest.approx(50 * 8.0 / 1e6 * 0.5)


def test_reasoning_tokens_take_the_peak_multiplier_like_output() -> None:
    price = Price(input=1.0, output=2.0, reasoning=8.0, peak=ALWAYS_PEAK)
    usage = Usage(prompt_tokens=0, completion_tokens=60, reasoning_tokens=50)
    assert price.cost(usage, at=MONDAY_NOON) == pytest.approx((10 * 2.0 + 50 * 8.0) / 1e6 * 2)


def test_register_price_takes_a_reasoning_rate() -> None:
    register_price("thinker", vendor="custom", input=1.0, output=2.0, reasoning=6.0)
    price = price_for("custom", "thinker")
    assert price is not None and price.reasoning == 6.0


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "6", True])
def test_register_price_rejects_an_invalid_reasoning_rate(bad: object) -> None:
    with pytest.raises(ConfigError, match="reasoning must be"):
        register_price("m", vendor="custom", input=1.0, output=1.0, reasoning=bad)  # type: ignore[arg-type]


def test_a_price_file_takes_a_reasoning_rate(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "vendors:\n  custom:\n    models:\n"
        "      thinker: {input: 0.5, output: 1.5, reasoning: 4.5}\n"
        "      plain: {input: 0.5, output: 1.5}\n",
        encoding="utf-8",
    )
    assert load_prices(path) == 2
    thinker, plain = price_for("custom", "thinker"), price_for("custom", "plain")
    assert thinker is not None and thinker.reasoning == 4.5
    assert plain is not None and plain.reasoning is None


def test_a_price_file_with_an_invalid_reasoning_rate_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        "vendors: {x: {models: {m: {input: 1, output: 1, reasoning: -2}}}}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"vendors\.x\.models\.m: reasoning must be >= 0"):
        load_prices(path)


def test_the_worst_case_reserves_the_thinking_budget_on_top_of_max_tokens() -> None:
    price = Price(input=1.0, output=2.0)
    req = request(max_tokens=500, thinking_budget=2_000)
    expected = (estimate_prompt_tokens(req) * 1.0 + 2_500 * 2.0) / 1e6
    assert worst_case_cost(price, req) == pytest.approx(expected)


def test_the_worst_case_prices_the_output_cap_at_the_dearer_of_output_and_reasoning() -> None:
    price = Price(input=1.0, output=2.0, reasoning=5.0, peak=ALWAYS_PEAK)
    req = request(max_tokens=500, thinking_budget=1_500)
    expected = (estimate_prompt_tokens(req) * 1.0 + 2_000 * 5.0) / 1e6 * 2.0
    assert worst_case_cost(price, req) == pytest.approx(expected)


def test_the_worst_case_without_thinking_is_unchanged() -> None:
    price = Price(input=1.0, output=2.0, reasoning=0.5)
    req = request(max_tokens=500)
    expected = (estimate_prompt_tokens(req) * 1.0 + 500 * 2.0) / 1e6
    assert worst_case_cost(price, req) == pytest.approx(expected)
