"""Prices as data, cost from usage, worst-case estimates (no network)."""

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
MONDAY_PEAK = datetime(2026, 11, 16, 7, 30, tzinfo=timezone.utc)
SATURDAY_PEAK_HOUR = datetime(2026, 11, 21, 7, 30, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    pricing._clear_registered()
    yield
    pricing._clear_registered()


def request(user: str = "x" * 300, max_tokens: int = 100) -> ChatRequest:
    return ChatRequest(model="m", system="", user=user, temperature=0.0, max_tokens=max_tokens)


# -- the shipped table ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vendor", "model"),
    [
        ("deepseek", "deepseek-flash"),
        ("deepseek", "deepseek-v4-pro"),
        ("openai", "gpt-4o-mini"),
        ("openai", "gpt-6-sol"),
        ("anthropic", "claude-sonnet-4-5"),
        ("anthropic", "claude-opus-5"),
        ("openrouter", "anthropic/claude-sonnet-4.5"),
    ],
)
def test_current_models_of_each_vendor_are_priced(vendor: str, model: str) -> None:
    price = price_for(vendor, model)
    assert price is not None and price.input > 0 and price.output > 0


def test_the_shipped_table_says_when_it_was_checked() -> None:
    assert pricing.prices_as_of()[:4].isdigit()


def test_an_unknown_model_has_no_price_never_zero() -> None:
    assert price_for("openai", "gpt-nonexistent") is None
    assert price_for("custom", "anything") is None


def test_a_dated_model_id_finds_its_family_price() -> None:
    assert price_for("anthropic", "claude-haiku-4-5-20251001") == price_for(
        "anthropic", "claude-haiku-4-5"
    )
    assert price_for("openai", "gpt-4o-mini-2024-07-18") == price_for("openai", "gpt-4o-mini")


def test_local_servers_cost_nothing() -> None:
    price = price_for("ollama", "llama3.1")
    assert price is not None and price.cost(Usage(prompt_tokens=1000, completion_tokens=1000)) == 0


def test_vendor_names_match_case_insensitively() -> None:
    assert price_for("OpenAI", "gpt-4o-mini") == price_for("openai", "gpt-4o-mini")


# -- cost -------------------------------------------------------------------------------------


def test_cost_is_tokens_times_price_per_million() -> None:
    price = Price(input=2.0, output=10.0)
    usage = Usage(prompt_tokens=1_000, completion_tokens=200)
    assert price.cost(usage) == pytest.approx((1_000 * 2.0 + 200 * 10.0) / 1e6)


def test_cache_reads_and_writes_are_billed_at_their_own_rates() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        prompt_tokens=1_000, cache_read_tokens=600, cache_write_tokens=100, completion_tokens=10
    )
    expected = (300 * 3.0 + 600 * 0.3 + 100 * 3.75 + 10 * 15.0) / 1e6
    assert price.cost(usage) == pytest.approx(expected)


def test_cache_rates_default_to_the_input_rate() -> None:
    price = Price(input=1.0, output=1.0)
    assert price.cost(Usage(prompt_tokens=100, cache_read_tokens=100)) == pytest.approx(100 / 1e6)


def test_deepseek_charges_double_in_its_peak_hours_on_weekdays_only() -> None:
    price = price_for("deepseek", "deepseek-flash")
    assert price is not None
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=0)
    off_peak = price.cost(usage, at=MONDAY_NOON)
    assert off_peak == pytest.approx(0.15)
    assert price.cost(usage, at=MONDAY_PEAK) == pytest.approx(0.30)
    assert price.cost(usage, at=SATURDAY_PEAK_HOUR) == pytest.approx(0.15)


def test_peak_windows_are_half_open() -> None:
    peak = PeakHours(windows=((60, 240),))
    assert peak.applies(datetime(2026, 11, 16, 1, 0, tzinfo=timezone.utc))
    assert not peak.applies(datetime(2026, 11, 16, 4, 0, tzinfo=timezone.utc))


# -- registering prices --------------------------------------------------------------------------


def test_register_price_overrides_the_shipped_table() -> None:
    register_price("gpt-4o-mini", vendor="openai", input=9.0, output=9.0)
    assert price_for("openai", "gpt-4o-mini") == Price(input=9.0, output=9.0)


def test_a_star_prices_every_model_of_a_vendor() -> None:
    register_price("*", vendor="custom", input=1.0, output=2.0)
    assert price_for("custom", "my-model") == Price(input=1.0, output=2.0)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "1"])
def test_register_price_rejects_invalid_rates(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"register_price\('m', vendor='custom'\): input"):
        register_price("m", vendor="custom", input=bad, output=1.0)  # type: ignore[arg-type]


def test_load_prices_reads_a_file_of_the_shipped_shape(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "vendors:\n"
        "  custom:\n"
        "    peak: {hours_utc: ['07:00-08:00'], multiplier: 3}\n"
        "    models:\n"
        "      local-judge: {input: 0.5, output: 1.5, cache_read: 0.05}\n",
        encoding="utf-8",
    )
    assert load_prices(path) == 1
    price = price_for("custom", "local-judge")
    assert price is not None and price.cache_read == 0.05
    assert price.cost(Usage(prompt_tokens=10**6), at=MONDAY_PEAK) == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("vendors: [1]\n", "expected a mapping with 'vendors"),
        (
            "vendors: {x: {models: {m: {input: 1}}}}\n",
            r"vendors\.x\.models\.m: 'output' is required",
        ),
        ("vendors: {x: {models: {m: {input: 1, output: 1, cached: 1}}}}\n", "unknown field"),
        ("vendors: {x: {models: {m: {input: -1, output: 1}}}}\n", "input must be >= 0"),
        (
            "vendors: {x: {peak: {hours_utc: ['7-8']}, models: {m: {input: 1, output: 1}}}}\n",
            "is not 'HH:MM-HH:MM'",
        ),
        ("vendors: {x: [oops\n", "invalid YAML"),
        # The bounded loader of panels and prompts: aliases may not expand without limit.
        (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                for p, c in zip("abcde", "bcdef", strict=True)
            )
            + "vendors: *f\n",
            "invalid YAML at line .*expands to 111,111 values through its aliases",
        ),
    ],
)
def test_a_malformed_price_file_names_the_file_and_entry(
    tmp_path: Path, body: str, fragment: str
) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"prices\.yaml.*{fragment}"):
        load_prices(path)


def test_a_missing_price_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the price file"):
        load_prices(tmp_path / "nope.yaml")


# -- estimates -----------------------------------------------------------------------------------


def test_the_prompt_estimate_never_undercounts_english_or_cjk() -> None:
    english = "The quick brown fox jumps over the lazy dog. " * 20  # ~200 tokens
    cjk = "猫はかわいい動物です。" * 20  # about one token per character
    assert estimate_prompt_tokens(request(english)) >= len(english) / 4
    assert estimate_prompt_tokens(request(cjk)) >= len(cjk)


def test_worst_case_is_the_prompt_uncached_plus_max_tokens_at_peak_rates() -> None:
    price = Price(
        input=1.0,
        output=2.0,
        cache_read=0.1,
        peak=PeakHours(windows=((0, 1440),), weekdays_only=False, multiplier=2.0),
    )
    req = request(max_tokens=500)
    expected = (estimate_prompt_tokens(req) * 1.0 + 500 * 2.0) / 1e6 * 2.0
    assert worst_case_cost(price, req) == pytest.approx(expected)
