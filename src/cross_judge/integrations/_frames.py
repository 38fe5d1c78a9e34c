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
    from ..verdict import Verdict

__all__ = ["COLUMNS", "CRITERION_COLUMNS", "columns_of", "to_pandas", "to_polars"]

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
missing). For rubric results the per-criterion columns follow (:data:`CRITERION_COLUMNS`),
then ``context.<key>`` columns (the context of the text judged, where results store it),
then ``meta.<key>`` columns. What each holds is documented on
:meth:`cross_judge.batch.BatchResult.to_pandas`."""

CRITERION_COLUMNS: dict[str, str] = {
    "criterion.{id}": "str?",
    "criterion.{id}.score": "float?",
    "criterion.{id}.disputed": "bool?",
    "criterion.{id}.kind": "str?",
}
"""The columns of each criterion of rubric results (``{id}`` its id), in order, and their
types: the panel's label on it, its score and whether the valid answers were split (the
item's, on each of its rows), then the row's critic's label on it (``ERROR`` or
``PARSE_FAIL`` when that answer or the whole call failed, ``SKIPPED`` when the critic was
not asked about it). Missing on the rows of an item not judged on that criterion."""


def _require(module: str, method: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{method}() needs {module}: pip install 'cross-judge[{module}]'"
        ) from exc


def columns_of(batch: BatchResult) -> dict[str, list[Any]]:
    """The long frame of ``batch`` as plain columns: :data:`COLUMNS` in order, for rubric
    results the :data:`CRITERION_COLUMNS` of each criterion (rubric order), then one
    ``context.<key>`` column per key of the stored items' context (``EnsembleVerdict.item``)
    and one ``meta.<key>`` column per meta key, each in first-seen order. ``query`` and the
    context columns hold the text judged as results store it (bounded, see
    :data:`cross_judge.batch._items.ITEM_TEXT_CAP`), missing where a result stores none.
    Rows: each item in batch order, and within it each verdict in order (a cascade's tier
    by tier, from ``tiers``), so a panel's batch has items x critics rows and a cascade's
    one row per critic asked. An empty batch gives empty columns."""
    meta_keys = list(dict.fromkeys(key for r in batch.verdicts for key in r.meta))
    context_keys = list(
        dict.fromkeys(key for r in batch.verdicts if r.item is not None for key in r.item.context)
    )
    criterion_ids = _criterion_ids(batch)
    rows: list[tuple[Any, ...]] = []
    for position, result in enumerate(batch.verdicts):
        criteria = result.criteria or {}
        voted = [criteria.get(cid) for cid in criterion_ids]
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
                        *item[:6],
                        *(
                            value
                            for cid, c in zip(criterion_ids, voted, strict=True)
                            for value in (
                                (None, None, None, None)
                                if c is None
                                else (c.consensus, c.score, c.disputed, _criterion_kind(v, cid))
                            )
                        ),
                        *item[6:],
                    )
                )
    names = [
        *COLUMNS,
        *(name.format(id=cid) for cid in criterion_ids for name in CRITERION_COLUMNS),
        *(f"context.{key}" for key in context_keys),
        *(f"meta.{key}" for key in meta_keys),
    ]
    if not rows:
        return {name: [] for name in names}
    return {name: list(values) for name, values in zip(names, zip(*rows, strict=True), strict=True)}


def _criterion_ids(batch: BatchResult) -> list[str]:
    """The criterion ids of the batch's rubric results, rubric order, first seen first."""
    ids: dict[str, None] = {}
    for result in batch.verdicts:
        if result.criteria is not None:
            order = result.rubric.ids if result.rubric is not None else ()
            ids.update(dict.fromkeys(cid for cid in order if cid in result.criteria))
            ids.update(dict.fromkeys(result.criteria))
    return list(ids)


def _criterion_kind(verdict: Verdict, criterion_id: str) -> str:
    """A critic's label on a criterion, as :func:`cross_judge.rubric.tally.criterion_verdicts`
    reads it: its answer's, else its own failure (a failed call failed on every criterion),
    else ``SKIPPED`` (not asked)."""
    answer = (verdict.criteria or {}).get(criterion_id)
    if answer is not None:
        return answer.kind
    return verdict.kind if verdict.error is not None else "SKIPPED"


def _column_type(name: str) -> str | None:
    """The declared type of a column (:data:`COLUMNS`, :data:`CRITERION_COLUMNS`); ``None``
    for a context or meta column, whose type is inferred."""
    if name in COLUMNS:
        return COLUMNS[name]
    if name.startswith("criterion."):
        for suffix in (".score", ".disputed", ".kind"):
            if name.endswith(suffix):
                return CRITERION_COLUMNS["criterion.{id}" + suffix]
        return CRITERION_COLUMNS["criterion.{id}"]
    return None


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
        declared = _column_type(name)
        dtype = _PANDAS_DTYPES[declared] if declared is not None else None
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
        declared = _column_type(name)
        if declared is not None:
            dtype = getattr(pl, _POLARS_DTYPES[declared])
            series.append(pl.Series(name, values, dtype=dtype))
            continue
        try:
            series.append(pl.Series(name, values))
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            text = [None if v is None else str(v) for v in values]
            series.append(pl.Series(name, text, dtype=pl.String))
    return pl.DataFrame(series)
