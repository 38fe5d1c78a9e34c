"""A :class:`~cross_judge.batch.BatchResult` as a pandas or polars DataFrame, long format:
one row per critic verdict of each item (``BatchResult.to_pandas()`` / ``to_polars()``).

pandas and polars are extras (``cross-judge[pandas]``, ``cross-judge[polars]``), imported
only when a frame is asked for; without them the method raises a
:class:`~cross_judge.errors.ConfigError` that says what to install. This module only
reshapes results: no statistics (see :mod:`cross_judge.batch`), no wide one-row-per-item
table (that is :meth:`~cross_judge.batch.BatchResult.to_records`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._extensions import provide
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..results import BatchResult

__all__ = ["COLUMNS", "columns_of", "to_pandas", "to_polars"]

COLUMNS: dict[str, str] = {
    "position": "int",
    "query_id": "str",
    "critic": "str",
    "tier": "int?",
    "kind": "str",
    "valid": "bool",
    "confidence": "float?",
    "score": "float?",
    "reasoning": "str",
    "error_kind": "str?",
    "error": "str?",
    "agrees": "bool?",
    "model": "str?",
    "vendor": "str?",
    "cost_usd": "float?",
    "elapsed_s": "float",
    "attempts": "int",
    "cached": "bool",
    "prompt_tokens": "int?",
    "completion_tokens": "int?",
    "order": "str?",
    "flipped": "bool?",
    "consensus": "str",
    "agreement_pct": "float",
    "fallback": "bool",
    "disagreement": "bool",
    "decided_tier": "int?",
    "query": "str?",
}
"""The fixed columns of a long results frame, in order, and their types (``?``: may be
missing). ``context.<key>`` columns follow (the context of the text judged, where results
store it), then ``meta.<key>`` columns. What each holds is documented on
:meth:`cross_judge.batch.BatchResult.to_pandas`."""


def _require(module: str, method: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{method}() needs {module}: pip install 'cross-judge[{module}]'"
        ) from exc


def columns_of(batch: BatchResult) -> dict[str, list[Any]]:
    """The long frame of ``batch`` as plain columns: :data:`COLUMNS` in order, then one
    ``context.<key>`` column per key of the stored items' context (``EnsembleVerdict.item``)
    and one ``meta.<key>`` column per meta key, each in first-seen order. ``query`` and the
    context columns hold the text judged as results store it (bounded, see
    :data:`cross_judge.batch.items.ITEM_TEXT_CAP`), missing where a result stores none.
    Rows: each item in batch order, and within it each verdict in order (a cascade's tier
    by tier, from ``tiers``), so a panel's batch has items x critics rows and a cascade's
    one row per critic asked. An empty batch gives empty columns."""
    meta_keys = list(dict.fromkeys(key for r in batch.verdicts for key in r.meta))
    context_keys = list(
        dict.fromkeys(key for r in batch.verdicts if r.item is not None for key in r.item.context)
    )
    rows: list[tuple[Any, ...]] = []
    for position, result in enumerate(batch.verdicts):
        stored = result.item
        context = stored.context if stored is not None else {}
        item = (
            result.consensus,
            result.agreement_pct,
            result.fallback,
            result.disagreement,
            result.tier,
            stored.query if stored is not None else None,
            *(context.get(key) for key in context_keys),
            *(result.meta.get(key) for key in meta_keys),
        )
        parts = list(enumerate(result.tiers)) if result.tiers else [(None, result)]
        for tier, part in parts:
            for v in part.verdicts:
                valid = v.error is None
                rows.append(
                    (
                        position,
                        result.query_id,
                        v.critic_id,
                        tier,
                        v.kind,
                        valid,
                        v.confidence if valid else None,
                        v.score,
                        v.reasoning,
                        v.error_kind.value if v.error_kind else None,
                        v.error,
                        v.kind == part.consensus if valid else None,
                        v.model,
                        v.vendor,
                        v.cost_usd,
                        v.elapsed_s,
                        v.attempts,
                        v.cached,
                        v.usage.prompt_tokens if v.usage else None,
                        v.usage.completion_tokens if v.usage else None,
                        v.order,
                        v.flipped,
                        *item,
                    )
                )
    names = [
        *COLUMNS,
        *(f"context.{key}" for key in context_keys),
        *(f"meta.{key}" for key in meta_keys),
    ]
    if not rows:
        return {name: [] for name in names}
    return {name: list(values) for name, values in zip(names, zip(*rows, strict=True), strict=True)}


_PANDAS_DTYPES = {
    "int": "int64",
    "int?": "Int64",
    "float": "float64",
    "float?": "float64",
    "bool": "bool",
    "bool?": "boolean",
    "str": "text",
    "str?": "text",
}


@provide("to_pandas")
def to_pandas(batch: BatchResult) -> Any:
    """``batch`` as a long ``pandas.DataFrame`` (:data:`COLUMNS`, then ``context.<key>``
    and ``meta.<key>``).

    Integers that may be missing are ``Int64`` and booleans that may be missing
    ``boolean`` (pandas' nullable types); floats are ``float64`` with ``NaN`` for
    missing; text columns have pandas' default string dtype; context and meta columns
    are inferred.

    Raises:
        ConfigError: pandas is not installed.
    """
    pd = _require("pandas", "to_pandas")
    data = columns_of(batch)
    # pandas' own dtype for text (object before pandas 3, str since), also for a text
    # column with no value at all, which inference would make object.
    text = pd.Series(["text"]).dtype
    series = {}
    for name, values in data.items():
        dtype = _PANDAS_DTYPES[COLUMNS[name]] if name in COLUMNS else None
        series[name] = pd.Series(values, dtype=text if dtype == "text" else dtype, name=name)
    return pd.DataFrame(series, columns=list(data))


_POLARS_DTYPES = {
    "int": "Int64",
    "int?": "Int64",
    "float": "Float64",
    "float?": "Float64",
    "bool": "Boolean",
    "bool?": "Boolean",
    "str": "String",
    "str?": "String",
}


@provide("to_polars")
def to_polars(batch: BatchResult) -> Any:
    """``batch`` as a long ``polars.DataFrame`` (:data:`COLUMNS`, then ``context.<key>``
    and ``meta.<key>``), missing values as nulls; context and meta columns are inferred,
    and a key whose values mix types is a ``String`` column of their text.

    Raises:
        ConfigError: polars is not installed.
    """
    pl = _require("polars", "to_polars")
    data = columns_of(batch)
    series = []
    for name, values in data.items():
        if name in COLUMNS:
            dtype = getattr(pl, _POLARS_DTYPES[COLUMNS[name]])
            series.append(pl.Series(name, values, dtype=dtype))
            continue
        try:
            series.append(pl.Series(name, values))
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            text = [None if v is None else str(v) for v in values]
            series.append(pl.Series(name, text, dtype=pl.String))
    return pl.DataFrame(series)
