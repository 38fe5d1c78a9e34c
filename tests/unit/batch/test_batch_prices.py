"""Batch prices: a call through a vendor's batch API costs the entry's ``batch`` multiplier
times the live price; a price without one refuses to price a batch call (no network)."""

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

MONDAY_PEAK = datetime(2026, 11, 16, 7, 30, tzinfo=timezone.utc)
ALWAYS_PEAK = PeakHours(windows=((0, 1440),), weekdays_only=False, multiplier=2.0)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    pricing._clear_registered()
    yield
    pricing._clear_registered()


def request(user: str = "x" * 300, max_tokens: int = 100) -> ChatRequest:
    return ChatRequest(model="m", system="", user=user, temperature=0.0, max_tokens=max_tokens)


# -- Price.cost(batch=True) ----------------------------------------------------------------------


def test_a_batch_call_costs_the_multiplier_times_every_rate() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75, batch_multiplier=0.5)
    usage = Usage(
        prompt_tokens=10_000,
        cache_read_tokens=4_000,
        cache_write_tokens=2_000,
        completion_tokens=1_000,
    )
    # live: 4000 uncached x 3 + 4000 read x 0.3 + 2000 written x 3.75 + 1000 out x 15
    live = (4_000 * 3.0 + 4_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15.0) / 1e6
    assert live == pytest.approx(0.0357)
    assert price.cost(usage) == pytest.approx(0.0357)
    assert price.cost(usage, batch=True) == pytest.approx(0.01785)


def test_batch_false_is_the_live_price_as_before() -> None:
    price = Price(input=2.5, output=10.0, batch_multiplier=0.5)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=100_000)
    assert price.cost(usage) == price.cost(usage, batch=False) == pytest.approx(3.5)


def test_peak_hours_do_not_apply_to_a_batch_call() -> None:
    price = Price(input=1.0, output=1.0, peak=ALWAYS_PEAK, batch_multiplier=0.5)
    usage = Usage(prompt_tokens=1_000_000)
    assert price.cost(usage, at=MONDAY_PEAK) == pytest.approx(2.0)
    assert price.cost(usage, at=MONDAY_PEAK, batch=True) == pytest.approx(0.5)


def test_a_batch_call_without_a_batch_rate_is_a_config_error_naming_the_vendor() -> None:
    price = price_for("deepseek", "deepseek-flash")
    assert price is not None and price.batch_multiplier is None
    with pytest.raises(ConfigError, match="deepseek has no batch API") as error:
        price.cost(Usage(prompt_tokens=10), batch=True)
    assert "'deepseek-flash'" in str(error.value) and "batch=0.5" in str(error.value)


def test_a_bare_price_without_a_batch_rate_says_so_without_a_name() -> None:
    with pytest.raises(ConfigError, match="no batch price: this vendor has no batch API"):
        Price(input=1.0, output=1.0).cost(Usage(prompt_tokens=10), batch=True)


def test_the_name_of_a_price_does_not_change_its_equality() -> None:
    assert Price(1.0, 2.0, vendor="a", model="x") == Price(1.0, 2.0, vendor="b", model="y")
    assert Price(1.0, 2.0, batch_multiplier=0.5) != Price(1.0, 2.0)


# -- worst_case_cost(batch=True) -----------------------------------------------------------------


def test_the_worst_case_of_a_batch_call_is_at_the_batch_rate_not_the_peak() -> None:
    price = Price(input=1.0, output=2.0, cache_read=0.1, peak=ALWAYS_PEAK, batch_multiplier=0.5)
    req = request(max_tokens=500)
    live = (estimate_prompt_tokens(req) * 1.0 + 500 * 2.0) / 1e6
    assert worst_case_cost(price, req) == pytest.approx(live * 2.0)
    assert worst_case_cost(price, req, batch=True) == pytest.approx(live * 0.5)


def test_the_worst_case_of_a_batch_call_needs_a_batch_rate() -> None:
    with pytest.raises(ConfigError, match="no batch API"):
        worst_case_cost(Price(input=1.0, output=1.0), request(), batch=True)


# -- the shipped table ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vendor", "model"),
    [
        ("openai", "gpt-4o-mini"),
        ("openai", "gpt-6-sol"),
        ("openai", "gpt-4o-mini-2024-07-18"),
        ("anthropic", "claude-sonnet-4-5"),
        ("anthropic", "claude-haiku-4-5-20251001"),
        ("anthropic", "claude-opus-5-5"),
    ],
)
def test_openai_and_anthropic_models_bill_batches_at_half_price(vendor: str, model: str) -> None:
    price = price_for(vendor, model)
    assert price is not None and price.batch_multiplier == 0.5


def test_every_openai_and_anthropic_entry_has_a_batch_rate() -> None:
    _, table = pricing._shipped()
    for (vendor, model), price in table.items():
        if vendor in ("openai", "anthropic"):
            assert price.batch_multiplier == 0.5, f"{vendor}/{model}"


@pytest.mark.parametrize(
    ("vendor", "model"),
    [
        ("deepseek", "deepseek-flash"),  # no batch API
        ("deepseek", "deepseek-v4-pro"),
        ("openrouter", "anthropic/claude-sonnet-4.5"),  # per-model batch rates: not guessed
        ("ollama", "llama3.1"),  # a local server
    ],
)
def test_vendors_without_a_known_batch_rate_have_none(vendor: str, model: str) -> None:
    price = price_for(vendor, model)
    assert price is not None and price.batch_multiplier is None


def test_a_shipped_price_knows_its_vendor_and_entry() -> None:
    price = price_for("anthropic", "claude-haiku-4-5-20251001")
    assert price is not None
    assert (price.vendor, price.model) == ("anthropic", "claude-haiku-4-5")


def test_half_price_of_a_shipped_model_by_hand() -> None:
    price = price_for("openai", "gpt-4o-mini")  # input 0.15, cache_read 0.075, output 0.60
    assert price is not None
    usage = Usage(prompt_tokens=2_000_000, cache_read_tokens=1_000_000, completion_tokens=500_000)
    assert price.cost(usage) == pytest.approx(0.15 + 0.075 + 0.30)
    assert price.cost(usage, batch=True) == pytest.approx((0.15 + 0.075 + 0.30) / 2)


# -- register_price and price files --------------------------------------------------------------


def test_register_price_takes_a_batch_rate() -> None:
    price = register_price("judge-1", vendor="Custom", input=1.0, output=4.0, batch=0.4)
    assert price_for("custom", "judge-1") == price and price.batch_multiplier == 0.4
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert price.cost(usage, batch=True) == pytest.approx(2.0)


def test_register_price_without_a_batch_rate_cannot_price_a_batch_call() -> None:
    price = register_price("judge-2", vendor="custom", input=1.0, output=1.0)
    assert price.batch_multiplier is None
    with pytest.raises(ConfigError, match="no batch price for 'judge-2': custom has no batch"):
        price.cost(Usage(prompt_tokens=1), batch=True)


def test_a_registered_price_can_add_a_batch_rate_over_the_shipped_table() -> None:
    register_price("deepseek-flash", vendor="deepseek", input=0.15, output=0.60, batch=0.5)
    price = price_for("deepseek", "deepseek-flash")
    assert price is not None and price.batch_multiplier == 0.5


@pytest.mark.parametrize("rate", [0, -0.5, 1.5, float("nan"), float("inf"), True, "half"])
def test_register_price_refuses_a_batch_rate_outside_0_to_1(rate: object) -> None:
    with pytest.raises(ConfigError, match=r"register_price\('m', vendor='x'\): batch must be"):
        # type: ignore below: the wrong type is the point
        register_price("m", vendor="x", input=1.0, output=1.0, batch=rate)  # type: ignore[arg-type]


def test_a_batch_rate_of_one_is_allowed() -> None:
    assert register_price("m", vendor="x", input=1.0, output=1.0, batch=1).batch_multiplier == 1.0


def test_a_price_file_sets_batch_rates(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        "vendors:\n"
        "  custom:\n"
        "    models:\n"
        "      cheap: {input: 1.0, output: 3.0, batch: 0.25}\n"
        "      live-only: {input: 1.0, output: 3.0, batch: null}\n",
        encoding="utf-8",
    )
    assert load_prices(path) == 2
    cheap, live_only = price_for("custom", "cheap"), price_for("custom", "live-only")
    assert cheap is not None and live_only is not None
    assert cheap.cost(Usage(completion_tokens=1_000_000), batch=True) == pytest.approx(0.75)
    assert live_only.batch_multiplier is None


@pytest.mark.parametrize("value", ["0", "1.5", "-1", "half", "[0.5]", "true"])
def test_a_bad_batch_rate_in_a_price_file_names_the_file_and_entry(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(f"vendors: {{x: {{models: {{m: {{input: 1, output: 1, batch: {value}}}}}}}}}\n")
    with pytest.raises(ConfigError, match=r"prices\.yaml: vendors\.x\.models\.m: batch must be"):
        load_prices(path)


def test_an_unknown_field_message_lists_batch_among_the_fields(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("vendors: {x: {models: {m: {input: 1, output: 1, batch_rate: 0.5}}}}\n")
    with pytest.raises(
        ConfigError, match="use input, output, reasoning, cache_read, cache_write, batch"
    ):
        load_prices(path)
