"""A :class:`~cross_judge.batch.BatchResult` as a pandas or polars DataFrame
(``BatchResult.to_pandas(level)`` / ``to_polars(level)``) at one of three levels
(:data:`LEVELS`): ``"verdict"`` (the default), long format, one row per critic verdict of
each item (:data:`COLUMNS`); ``"item"``, one row per item (:data:`ITEM_COLUMNS`);
``"unit"``, one row per turn or step judged, for prompts that judge each turn or step
(:data:`UNIT_COLUMNS`). An item's structure as its result stores it (reference, turns,
steps, images) is in text columns: the references as text, the rest as JSON
(:data:`STRUCTURE_COLUMNS`), present only when some result stores it, so the frames of
plain items are as they were.

pandas and polars are extras (``cross-judge[pandas]``, ``cross-judge[polars]``), imported
only when a frame is asked for; without them the method raises a
:class:`~cross_judge.errors.ConfigError` that says what to install. This module only
reshapes results: no statistics (see :mod:`cross_judge.batch`), no wide one-row-per-item
table of every critic's criteria (that is :meth:`~cross_judge.batch.BatchResult.to_records`).
"""

from __future__ import annotations

import importlib
import json
from typing import TYPE_CHECKING, Any

from .._extensions import provide
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..results import BatchResult
    from ..verdict import EnsembleVerdict, ItemText, Verdict

__all__ = [
    "COLUMNS",
    "CRITERION_COLUMNS",
    "ITEM_COLUMNS",
    "LEVELS",
    "STRUCTURE_COLUMNS",
    "UNIT_COLUMNS",
    "columns_of",
    "item_columns_of",
    "to_pandas",
    "to_polars",
    "unit_columns_of",
]

LEVELS = ("verdict", "item", "unit")
"""The levels of a results frame: a row per critic verdict, per item, per turn or step."""

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


STRUCTURE_COLUMNS: dict[str, str] = {
    "reference": "str?",
    "counter_reference": "str?",
    "messages": "str?",
    "trajectory": "str?",
    "images": "str?",
    "left_out": "str?",
}
"""The columns of an item's stored structure (:class:`~cross_judge.verdict.ItemText`), in
order, each present only when some result of the batch stores it: ``reference`` and
``counter_reference`` as text, ``messages`` (the turns), ``trajectory`` (the steps),
``images`` (their descriptions) and ``left_out`` (turns or steps left out past the cap)
as JSON text, bounded as the results file stores them; ``json.loads`` gives the stored
lists back. After the criterion columns, before ``context.<key>``."""

ITEM_COLUMNS: dict[str, str] = {
    "position": "int",
    "query_id": "str",
    "consensus": "str",
    "agreement_pct": "float",
    "fallback": "bool",
    "disagreement": "bool",
    "decided_tier": "int?",
    "n_valid": "int",
    "n_errors": "int",
    "score": "float?",
    "cost_usd": "float?",
    "elapsed_s": "float",
    "query": "str?",
}
"""The fixed columns of the one-row-per-item frame (``level="item"``), in order; then
:data:`STRUCTURE_COLUMNS`, one ``<critic>.kind`` column per critic (str?, its label or
``ERROR`` / ``PARSE_FAIL`` / ``SKIPPED``; missing when it gave no verdict on the item),
``context.<key>`` and ``meta.<key>``. ``cost_usd`` is the item's total here (one row an
item: it sums right)."""

UNIT_COLUMNS: dict[str, str] = {
    "position": "int",
    "query_id": "str",
    "unit": "str",
    "number": "int",
    "criterion": "str?",
    "criterion_id": "str",
    "text": "str?",
    "role": "str?",
    "tool": "str?",
    "failed": "bool?",
    "consensus": "str",
    "agreement_pct": "float",
    "disputed": "bool",
    "fallback": "bool",
    "score": "float?",
    "n_valid": "int",
}
"""The fixed columns of the one-row-per-unit frame (``level="unit"``), in order, then one
``<critic>.kind`` column per critic (str?: its label on the unit, ``ERROR`` /
``PARSE_FAIL`` when it failed, ``SKIPPED`` when not asked; missing when it gave no verdict
on the item). A row per unit criterion of each result (``turn-<n>``, ``step-<n>``, or
``step-<n>.<criterion>``, whose ``criterion`` is then named), items in batch order, turns
then steps by ``number`` (from 1, as the critics read them). ``text`` is the stored turn
or step as the critics read it (``call search({"q":"x"}) -> ERROR: timeout``), ``role``
a turn's role, ``tool`` a tool call's name, ``failed`` whether the tool call (or a call
the turn made) failed: all missing for a turn or step the result does not store. A batch
without unit results gives the columns and no rows."""


def _require(module: str, method: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{method}() needs {module}: pip install 'cross-judge[{module}]'"
        ) from exc


def columns_of(batch: BatchResult) -> dict[str, list[Any]]:
    """The long frame of ``batch`` as plain columns: :data:`COLUMNS` in order, for rubric
    results the :data:`CRITERION_COLUMNS` of each criterion (rubric order), the
    :data:`STRUCTURE_COLUMNS` some result stores, then one ``context.<key>`` column per key
    of the stored items' context (``EnsembleVerdict.item``)
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
    structure = _structure_names(batch)
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
            *_structure_values(stored, structure),
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
        *structure,
        *(f"context.{key}" for key in context_keys),
        *(f"meta.{key}" for key in meta_keys),
    ]
    return _as_columns(names, rows)


def _structure_names(batch: BatchResult) -> list[str]:
    """The :data:`STRUCTURE_COLUMNS` some result of ``batch`` stores, in order."""
    found = {
        name
        for r in batch.verdicts
        if r.item is not None and r.item.structured
        for name in STRUCTURE_COLUMNS
        if getattr(r.item, name) is not None
    }
    return [name for name in STRUCTURE_COLUMNS if name in found]


def _structure_values(stored: ItemText | None, names: list[str]) -> list[str | None]:
    """The values of the structure columns ``names`` for one stored item: references as
    text, the rest as JSON text; ``None`` where it stores nothing."""
    values: list[str | None] = []
    for name in names:
        value = None if stored is None else getattr(stored, name)
        if value is None or isinstance(value, str):
            values.append(value)
        else:
            values.append(json.dumps(value, ensure_ascii=False, default=str))
    return values


def _by_critic(result: EnsembleVerdict) -> dict[str, Verdict]:
    """Each critic's verdict on ``result`` (a cascade's every tier; its last when it
    answered twice)."""
    return {v.critic_id: v for v in result.verdicts}


def item_columns_of(batch: BatchResult) -> dict[str, list[Any]]:
    """The one-row-per-item frame of ``batch`` as plain columns (:data:`ITEM_COLUMNS`,
    then :data:`STRUCTURE_COLUMNS` some result stores, ``<critic>.kind`` per critic,
    ``context.<key>`` and ``meta.<key>``); items in batch order."""
    structure = _structure_names(batch)
    context_keys = list(
        dict.fromkeys(key for r in batch.verdicts if r.item is not None for key in r.item.context)
    )
    meta_keys = list(dict.fromkeys(key for r in batch.verdicts for key in r.meta))
    critics = list(batch.critics)
    names = [
        *ITEM_COLUMNS,
        *structure,
        *(f"{name}.kind" for name in critics),
        *(f"context.{key}" for key in context_keys),
        *(f"meta.{key}" for key in meta_keys),
    ]
    rows: list[tuple[Any, ...]] = []
    for position, result in enumerate(batch.verdicts):
        stored = result.item
        context = stored.context if stored is not None else {}
        by_critic = _by_critic(result)
        rows.append(
            (
                position,
                result.query_id,
                result.consensus,
                result.agreement_pct,
                result.fallback,
                result.disagreement,
                result.tier,
                result.n_valid,
                result.n_errors,
                result.score,
                result.cost_usd,
                result.elapsed_s,
                stored.query if stored is not None else None,
                *_structure_values(stored, structure),
                *(by_critic[name].kind if name in by_critic else None for name in critics),
                *(context.get(key) for key in context_keys),
                *(result.meta.get(key) for key in meta_keys),
            )
        )
    return _as_columns(names, rows)


def unit_columns_of(batch: BatchResult) -> dict[str, list[Any]]:
    """The one-row-per-unit frame of ``batch`` as plain columns (:data:`UNIT_COLUMNS`, then
    ``<critic>.kind`` per critic): a row per turn or step criterion of each result."""
    from ..report import entry_failed, entry_text, stored_entry, unit_lines

    critics = list(batch.critics)
    names = [*UNIT_COLUMNS, *(f"{name}.kind" for name in critics)]
    rows: list[tuple[Any, ...]] = []
    for position, result in enumerate(batch.verdicts):
        for line in unit_lines(result):
            entry = stored_entry(result.item, line.unit, line.number)
            answers = {name: answer for name, answer in line.answers if answer is not None}
            voted = line.result
            tool = None
            if entry is not None and entry.get("kind") == "tool_call":
                tool = entry.get("name")
            rows.append(
                (
                    position,
                    result.query_id,
                    line.unit,
                    line.number,
                    line.criterion,
                    line.criterion_id,
                    None if entry is None else entry_text(line.unit, entry),
                    entry.get("role") if entry is not None and line.unit == "turn" else None,
                    tool,
                    None if entry is None else entry_failed(line.unit, entry),
                    voted.consensus,
                    voted.agreement_pct,
                    voted.disputed,
                    voted.fallback,
                    voted.score,
                    voted.n_valid,
                    *(answers[name].kind if name in answers else None for name in critics),
                )
            )
    return _as_columns(names, rows)


def _as_columns(names: list[str], rows: list[tuple[Any, ...]]) -> dict[str, list[Any]]:
    if not rows:
        return {name: [] for name in names}
    return {name: list(values) for name, values in zip(names, zip(*rows, strict=True), strict=True)}


def _frame(batch: BatchResult, level: str) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """The columns of ``batch`` at ``level`` and the declared type of each column that has
    one (the others, context and meta, are inferred).

    Raises:
        ConfigError: ``level`` is not one of :data:`LEVELS`.
    """
    if level == "verdict":
        data = columns_of(batch)
        declared = {n: t for n in data if (t := _column_type(n)) is not None}
        return data, declared
    if level == "item":
        data, fixed = item_columns_of(batch), ITEM_COLUMNS
    elif level == "unit":
        data, fixed = unit_columns_of(batch), UNIT_COLUMNS
    else:
        raise ConfigError(
            f"unknown frame level {level!r}; use one of {', '.join(map(repr, LEVELS))}"
        )
    declared = dict(fixed)
    declared.update((f"{name}.kind", "str?") for name in batch.critics)
    declared.update((name, "str?") for name in data if name in STRUCTURE_COLUMNS)
    return data, declared


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
    if name in STRUCTURE_COLUMNS:
        return STRUCTURE_COLUMNS[name]
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
def to_pandas(batch: BatchResult, level: str = "verdict") -> Any:
    """``batch`` as a ``pandas.DataFrame`` at ``level`` (:data:`LEVELS`): by default the
    long frame (:data:`COLUMNS`, then ``context.<key>`` and ``meta.<key>``).

    Integers that may be missing are ``Int64`` and booleans that may be missing
    ``boolean`` (pandas' nullable types); floats are ``float64`` with ``NaN`` for
    missing; text columns have pandas' default string dtype; context and meta columns
    are inferred.

    Raises:
        ConfigError: pandas is not installed, or an unknown ``level``.
    """
    data, types = _frame(batch, level)
    pd = _require("pandas", "to_pandas")
    # pandas' own dtype for text (object before pandas 3, str since), also for a text
    # column with no value at all, which inference would make object.
    text = pd.Series(["text"]).dtype
    series = {}
    for name, values in data.items():
        declared = types.get(name)
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
def to_polars(batch: BatchResult, level: str = "verdict") -> Any:
    """``batch`` as a ``polars.DataFrame`` at ``level`` (the columns and rows of
    :func:`to_pandas`), missing values as nulls; context and meta columns are inferred,
    and a key whose values mix types is a ``String`` column of their text.

    Raises:
        ConfigError: polars is not installed, or an unknown ``level``.
    """
    data, types = _frame(batch, level)
    pl = _require("polars", "to_polars")
    series = []
    for name, values in data.items():
        declared = types.get(name)
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
