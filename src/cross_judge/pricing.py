"""What a call costs: token prices per vendor and model, and cost from usage.

Prices ship as data (``prices.yaml`` in the package: DeepSeek, OpenAI, Anthropic and
popular OpenRouter models, with the date they were checked). Add or override them with
:func:`register_price` or a YAML file of the same shape and :func:`load_prices`; those win
over the shipped table. :func:`price_for` finds a model's :class:`Price`, or ``None`` when
no price is known, which makes the verdict's ``cost_usd`` ``None``: an unknown price is
never reported as $0.

Costs follow each vendor's billing: uncached input, cache reads and cache writes, output,
and the reasoning tokens a thinking model spent (``usage.reasoning_tokens``, part of the
completion) at their own rates (reasoning at the output rate unless the entry gives a
``reasoning`` rate); DeepSeek's peak hours at its peak multiplier. A call made through a
vendor's batch API (OpenAI's Batch API, Anthropic's Message Batches) is priced with
``batch=True``: all of it at the entry's ``batch`` multiplier (0.5: half price), never at
a peak rate; a price without one (a vendor with no batch API, or a model the table has no
batch rate for) refuses with a :class:`~cross_judge.errors.ConfigError` rather than
guess. :func:`worst_case_cost` bounds a call before it is made, for budget caps: the
prompt counted roughly but never low (one token per three UTF-8 bytes), all of it
uncached, plus ``max_tokens`` and the ``thinking_budget`` of output at the dearer of the
output and reasoning rates, at peak rates (at the batch rate for a batch call).

Usage is the vendor's word, and some vendors do not give it: many gateways leave ``usage``
out, and a broken or hostile one may report zero (or negative) tokens. A call whose usage
fails :func:`usage_is_plausible` is priced at its worst case, not at $0, both in its
verdict's ``cost_usd`` (with ``cost_estimates`` counting it) and against a budget, so a
vendor that reports nothing cannot lift a cap.

This module makes no network calls; the shipped table is read on first use.
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .verdict import Usage

if TYPE_CHECKING:
    from .transport import ChatRequest

__all__ = [
    "PeakHours",
    "Price",
    "estimate_prompt_tokens",
    "load_prices",
    "price_for",
    "prices_as_of",
    "register_price",
    "registry_generation",
    "usage_is_plausible",
    "worst_case_cost",
]

_PER_TOKEN = 1e-6  # prices are per million tokens
_MESSAGE_OVERHEAD_TOKENS = 16  # roles, separators and the chat template around the text
_FIELDS = ("input", "output", "reasoning", "cache_read", "cache_write", "batch")  # an entry's
_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})\Z")


@dataclass(frozen=True)
class PeakHours:
    """Hours (UTC) at which a vendor charges ``multiplier`` times its listed prices."""

    windows: tuple[tuple[int, int], ...]  # minutes after midnight, [start, end)
    weekdays_only: bool = True
    multiplier: float = 2.0

    def applies(self, at: datetime) -> bool:
        """True when ``at`` (any timezone) falls in a peak window."""
        utc = at.astimezone(timezone.utc)
        if self.weekdays_only and utc.weekday() >= 5:
            return False
        minute = utc.hour * 60 + utc.minute
        return any(start <= minute < end for start, end in self.windows)


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cache_read`` / ``cache_write`` default to ``input``,
    ``reasoning`` (the tokens a thinking model spends before its answer) to ``output``.

    ``batch_multiplier`` is the fraction of these prices a call through the vendor's batch
    API costs (0.5: half price, on every kind of token), ``None`` when the vendor has no
    batch API or the table knows no batch rate for the model. ``vendor`` and ``model``
    name the entry (for messages; not compared: equal rates are equal prices).
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    peak: PeakHours | None = None
    batch_multiplier: float | None = None
    vendor: str | None = field(default=None, compare=False)
    model: str | None = field(default=None, compare=False)
    reasoning: float | None = None

    def cost(self, usage: Usage, *, at: datetime | None = None, batch: bool = False) -> float:
        """The cost of ``usage`` in USD; ``at`` (default now) decides peak pricing.

        ``usage.prompt_tokens`` includes the cache reads and writes, which are billed at
        their own rates; the rest of the prompt at ``input``. ``usage.reasoning_tokens`` are
        part of ``completion_tokens`` (at most all of it: a larger count is read as all of
        it): they are billed at ``reasoning``, the rest of the completion at ``output``.
        With ``batch`` (a call made through the vendor's batch API) all of it is
        multiplied by ``batch_multiplier`` and peak hours do not apply (a batch runs when
        the vendor schedules it).

        Raises:
            ConfigError: ``batch`` for a price without a ``batch_multiplier``.
        """
        factor = self.batch_rate() if batch else None
        cached = min(usage.cache_read_tokens, usage.prompt_tokens)
        written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
        uncached = usage.prompt_tokens - cached - written
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        thought = min(usage.reasoning_tokens, usage.completion_tokens)
        dollars = (
            uncached * self.input
            + cached * read_rate
            + written * write_rate
            + (usage.completion_tokens - thought) * self.output
            + thought * self.reasoning_rate
        ) * _PER_TOKEN
        if factor is not None:
            return dollars * factor
        if self.peak is not None and self.peak.applies(at or datetime.now(timezone.utc)):
            dollars *= self.peak.multiplier
        return dollars

    @property
    def reasoning_rate(self) -> float:
        """USD per million reasoning tokens: ``reasoning``, or ``output`` without one."""
        return self.output if self.reasoning is None else self.reasoning

    def batch_rate(self) -> float:
        """``batch_multiplier``, for pricing a batch call.

        Raises:
            ConfigError: there is none; the message names the vendor and model and how to
                give the model a batch rate.
        """
        if self.batch_multiplier is not None:
            return self.batch_multiplier
        vendor = self.vendor or "this vendor"
        model = f" for {self.model!r}" if self.model is not None else ""
        raise ConfigError(
            f"no batch price{model}: {vendor} has no batch API (or none the price table "
            "knows a rate for), so a batch call cannot be priced; run its critics live, or "
            "set the rate with register_price(..., batch=0.5) or 'batch: 0.5' in a price "
            "file (a fraction of the listed prices)"
        )

    @property
    def highest_multiplier(self) -> float:
        """The largest factor time of day can apply (1.0 without peak hours)."""
        return max(1.0, self.peak.multiplier) if self.peak is not None else 1.0


# -- the registry -------------------------------------------------------------------------------

_lock = threading.Lock()
_registered: dict[tuple[str, str], Price] = {}
_generation = 0  # bumped by every registration, so callers may memoise lookups


def registry_generation() -> int:
    """A number that changes whenever registered prices change (for memoised lookups)."""
    return _generation


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple[str, dict[tuple[str, str], Price]]:
    text = (resources.files("cross_judge") / "prices.yaml").read_text(encoding="utf-8")
    as_of, table = _parse_table(text, source="cross_judge/prices.yaml")
    return as_of, table


def prices_as_of() -> str:
    """The date the shipped price table was last checked against the vendors' pages."""
    return _shipped()[0]


def price_for(vendor: str, model: str) -> Price | None:
    """The price of ``model`` on ``vendor``, or ``None`` when none is known.

    Registered prices (:func:`register_price`, :func:`load_prices`) win over the shipped
    table. Within each: the exact model id, then the id without a date suffix
    (``-20251001`` or ``-2025-10-01``), then the vendor's ``"*"`` entry.
    """
    key_vendor = vendor.strip().lower()
    candidates = [model]
    stripped = _DATE_SUFFIX.sub("", model)
    if stripped != model:
        candidates.append(stripped)
    candidates.append("*")
    with _lock:
        registered = dict(_registered)
    shipped = _shipped()[1]
    for table in (registered, shipped):
        for candidate in candidates:
            price = table.get((key_vendor, candidate))
            if price is not None:
                return price
    return None


def register_price(
    model: str,
    *,
    vendor: str,
    input: float,
    output: float,
    cache_read: float | None = None,
    cache_write: float | None = None,
    batch: float | None = None,
    reasoning: float | None = None,
) -> Price:
    """Set the price of ``model`` on ``vendor`` (USD per million tokens); ``"*"`` for every
    model of the vendor. Overrides the shipped table for the rest of the process.
    ``batch`` is the fraction of these prices a call through the vendor's batch API costs
    (0.5: half price); ``None``: batch calls cannot be priced. ``reasoning`` is the rate of
    a thinking model's reasoning tokens; ``None``: the ``output`` rate.

    Raises:
        ConfigError: a price is negative or not a finite number; ``batch`` is not in
            (0, 1].
    """
    where = f"register_price({model!r}, vendor={vendor!r})"
    key_vendor = vendor.strip().lower()
    price = Price(
        input=_rate(where, "input", input),
        output=_rate(where, "output", output),
        cache_read=None if cache_read is None else _rate(where, "cache_read", cache_read),
        cache_write=None if cache_write is None else _rate(where, "cache_write", cache_write),
        batch_multiplier=None if batch is None else _batch_multiplier(where, batch),
        vendor=key_vendor,
        model=model,
        reasoning=None if reasoning is None else _rate(where, "reasoning", reasoning),
    )
    global _generation
    with _lock:
        _registered[key_vendor, model] = price
        _generation += 1
    return price


def load_prices(path: str | os.PathLike[str]) -> int:
    """Register every price in a YAML file shaped like the shipped ``prices.yaml``
    (``vendors: {name: {peak: ..., models: {id: {input, output, reasoning, ..., batch}}}}``;
    ``reasoning`` optional, as in :func:`register_price`); returns
    how many model prices were loaded.

    Raises:
        ConfigError: the file is missing or malformed; the message names the file and the
            entry.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the price file ({exc.strerror or exc})") from None
    global _generation
    _, table = _parse_table(text, source=source)
    with _lock:
        _registered.update(table)
        _generation += 1
    return len(table)


def _clear_registered() -> None:
    """Forget registered prices (tests)."""
    global _generation
    with _lock:
        _registered.clear()
        _generation += 1


# -- estimates ---------------------------------------------------------------------------------


def estimate_prompt_tokens(request: ChatRequest) -> int:
    """A rough count of the prompt's tokens that errs high: one token per three UTF-8 bytes
    (English runs near four characters per token, CJK near one character per token at
    three bytes each), plus a fixed overhead for roles and formatting."""
    return math.ceil(request.utf8_bytes() / 3) + _MESSAGE_OVERHEAD_TOKENS


def worst_case_cost(price: Price, request: ChatRequest, *, batch: bool = False) -> float:
    """The most ``request`` can cost: the estimated prompt, all uncached, plus an output
    cap of ``max_tokens + thinking_budget`` tokens priced at the dearer of the output and
    reasoning rates (any of them may be reasoning), at the highest time-of-day rate; with
    ``batch`` (sent through the vendor's batch API), at the batch rate instead.

    The budget is added because Anthropic sends it on top of the answer's room
    (``max_tokens`` becomes budget + ``max_tokens``). A vendor that counts thinking within
    ``max_tokens`` (OpenAI-compatible ones may) can cost less than this: the reserve errs
    high, so a budget admits fewer calls at once, never overspends.

    Raises:
        ConfigError: ``batch`` for a price without a ``batch_multiplier``.
    """
    factor = price.batch_rate() if batch else price.highest_multiplier
    usage = Usage(
        prompt_tokens=estimate_prompt_tokens(request),
        completion_tokens=request.max_tokens + (request.thinking_budget or 0),
    )
    base = Price(input=price.input, output=max(price.output, price.reasoning_rate))
    return base.cost(usage) * factor


def usage_is_plausible(usage: Usage | None, *, answered: bool) -> bool:
    """Whether a vendor's reported ``usage`` for a call it answered can be billed as it is.

    Not plausible: no usage at all (many gateways leave it out); no prompt tokens (every
    request sends a prompt, the system prompt at least); no completion tokens while the
    answer holds something (``answered``: text, a refusal or reasoning). Negative counts
    are read as 0 by the transports, so they fail too. An empty answer with zero
    completion tokens is plausible. Counts that are merely low are taken as reported:
    tokenizers differ too much to second-guess them.
    """
    if usage is None or usage.prompt_tokens <= 0:
        return False
    return usage.completion_tokens > 0 or not answered


# -- parsing ----------------------------------------------------------------------------------


def _rate(where: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(
            f"{where}: {name} must be a number of USD per million tokens, got {value!r}"
        )
    if value < 0:
        raise ConfigError(f"{where}: {name} must be >= 0, got {value!r}")
    return float(value)


def _batch_multiplier(where: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= 1
    ):
        raise ConfigError(
            f"{where}: batch must be the fraction of the listed prices a batch call costs, "
            f"greater than 0 and at most 1 (0.5: half price), got {value!r}"
        )
    return float(value)


def _parse_table(text: str, *, source: str) -> tuple[str, dict[tuple[str, str], Price]]:
    from ._yaml import YAMLSyntaxError, load as load_yaml

    try:
        _, data = load_yaml(text)
    except YAMLSyntaxError as exc:
        where = f" at line {exc.line}, column {exc.column}" if exc.line is not None else ""
        raise ConfigError(f"{source}: invalid YAML{where} ({exc.problem})") from None
    if not isinstance(data, dict) or not isinstance(data.get("vendors"), dict):
        raise ConfigError(f"{source}: expected a mapping with 'vendors: {{name: {{models: ...}}}}'")
    table: dict[tuple[str, str], Price] = {}
    for vendor, section in data["vendors"].items():
        where = f"{source}: vendors.{vendor}"
        if not isinstance(section, dict) or not isinstance(section.get("models"), dict):
            raise ConfigError(
                f"{where}: expected a mapping with 'models: {{id: {{input, output}}}}'"
            )
        peak = _parse_peak(where, section.get("peak"))
        for model, entry in section["models"].items():
            at = f"{where}.models.{model}"
            if not isinstance(entry, dict):
                raise ConfigError(f"{at}: expected {{input: ..., output: ...}}")
            unknown = sorted(set(entry) - {*_FIELDS})
            if unknown:
                raise ConfigError(f"{at}: unknown field(s) {unknown}; use {', '.join(_FIELDS)}")
            for needed in ("input", "output"):
                if needed not in entry:
                    raise ConfigError(f"{at}: '{needed}' is required (USD per million tokens)")
            table[str(vendor).lower(), str(model)] = Price(
                input=_rate(at, "input", entry["input"]),
                output=_rate(at, "output", entry["output"]),
                cache_read=_optional_rate(at, "cache_read", entry),
                cache_write=_optional_rate(at, "cache_write", entry),
                peak=peak,
                batch_multiplier=(
                    None if entry.get("batch") is None else _batch_multiplier(at, entry["batch"])
                ),
                vendor=str(vendor).lower(),
                model=str(model),
                reasoning=_optional_rate(at, "reasoning", entry),
            )
    return str(data.get("as_of", "")), table


def _optional_rate(where: str, name: str, entry: dict[str, Any]) -> float | None:
    return None if entry.get(name) is None else _rate(where, name, entry[name])


def _parse_peak(where: str, peak: object) -> PeakHours | None:
    if peak is None:
        return None
    if not isinstance(peak, dict) or not isinstance(peak.get("hours_utc"), list):
        raise ConfigError(f"{where}.peak: expected {{hours_utc: ['HH:MM-HH:MM', ...], multiplier}}")
    windows: list[tuple[int, int]] = []
    for span in peak["hours_utc"]:
        match = re.fullmatch(r"(\d\d):(\d\d)-(\d\d):(\d\d)", str(span))
        if match is None:
            raise ConfigError(f"{where}.peak.hours_utc: {span!r} is not 'HH:MM-HH:MM'")
        h1, m1, h2, m2 = (int(g) for g in match.groups())
        start, end = h1 * 60 + m1, h2 * 60 + m2
        if not (0 <= start < end <= 24 * 60):
            raise ConfigError(f"{where}.peak.hours_utc: {span!r} is not a window within one day")
        windows.append((start, end))
    return PeakHours(
        windows=tuple(windows),
        weekdays_only=bool(peak.get("weekdays_only", True)),
        multiplier=_rate(f"{where}.peak", "multiplier", peak.get("multiplier", 2.0)),
    )
