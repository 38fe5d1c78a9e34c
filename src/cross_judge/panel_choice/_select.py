"""``select_panel``: rank the panels a pilot run could have been, by replaying its stored
verdicts (zero calls), and offer two-tier cascades whose escalation threshold the cascade
calibration chooses.

The plain panels come from :func:`cross_judge.stats.search_panels` (every subset of up to
12 critics under each strategy, a greedy search beyond). A cascade pairs a cheap tier (two
or three critics voting by majority, among the best :data:`CASCADE_FIRST_TIERS` costing at
most half the budget) with a strong tier (one of the best :data:`CASCADE_SECOND_TIERS`
plain panels with none of its critics); each pair is screened at every agreement level its
first tier can reach, and the best :data:`CASCADES_CALIBRATED` are calibrated by
:func:`~cross_judge.cascade_calibration.calibrate_cascade` on the selection items (so the
cascade needs gold). A cascade whose calibration finds no guaranteed level is dropped.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._extensions import provide
from ..errors import ConfigError, StatisticsWarning
from ..stats import (
    PANEL_STRATEGIES,
    PanelFigures,
    PanelTier,
    PilotTable,
    compare_panels,
    measure_panel,
    pilot_table,
    search_panels,
)
from ._plan import PanelPlan, PanelPlans

if TYPE_CHECKING:
    from ..cascade import Cascade, Escalation
    from ..ensemble import Ensemble
    from ..results import BatchResult
    from ..verdict import EnsembleVerdict

__all__ = ["CASCADES_CALIBRATED", "DEFAULT_TOP", "MIN_EFFECTIVE_VOTES", "select_panel"]

DEFAULT_TOP = 10
"""How many plans :func:`select_panel` returns by default."""

MIN_EFFECTIVE_VOTES = 2.0
"""Below this many effective votes the best plan is warned about."""

CASCADE_FIRST_TIERS = 4
CASCADE_SECOND_TIERS = 4
CASCADES_CALIBRATED = 3

_SIMPLER = {name: i for i, name in enumerate(PANEL_STRATEGIES)}

Option = tuple[PanelFigures, "Escalation | None", "str | None"]
"""A plan before ranking: its figures, a cascade's escalation and guarantee."""


@provide("select_panel")
def select_panel(
    results: BatchResult | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
    *,
    budget_per_item: float | None = None,
    size: int | None = None,
    strategies: Sequence[str] = PANEL_STRATEGIES,
    cascade: bool = True,
    seed: int = 0,
    holdout: float = 0.5,
    prices: Mapping[str, float] | None = None,
    panel: Ensemble | Cascade | None = None,
    top: int = DEFAULT_TOP,
    cascade_target: float | None = None,
    delta: float = 0.1,
) -> PanelPlans:
    """Rank the panels that the pilot ``results`` could have been (see the module
    docstring): every subset of its critics, voting by ``strategies``, within
    ``budget_per_item`` (USD, ``None`` for no limit), of ``size`` critics if given, and
    with ``cascade`` two-tier cascades. Zero calls.

    The items are split by ``seed``: ``holdout`` of them are held out, the rest rank the
    plans. With ``gold`` (``{id: label}`` or a gold file) accuracy is measured against it on
    the labelled items; without, it is estimated by a Dawid-Skene model of every critic's
    votes (said so in the result), and no cascade is offered (its calibration needs gold).
    ``prices`` gives a critic's cost per item where the stored verdicts carry none.
    ``panel`` is the pilot's panel, which :meth:`PanelPlans.panel` builds the plans from.
    ``cascade_target`` is the agreement the cascade's calibration guarantees with
    probability ``1 - delta`` (default: the strong tier's selection accuracy less 3
    points). Returns the ``top`` plans, best first; plans that decide every item alike are
    shown once (the cheapest, simplest). Warns :class:`~cross_judge.errors.
    StatisticsWarning` when the best plan has fewer than 2 effective votes.

    Raises:
        ConfigError: results without enough overlapping critics (fewer than two, or too few
            items that every critic judged), a budget no panel meets (with the cheapest
            panel's cost), gold labels no critic answers, an unknown strategy, costs
            unknown and not in ``prices``, a cascade's results, a bad ``size``, ``top`` or
            ``holdout``.
    """
    from ..results import as_batch

    strategies = _checked_strategies(strategies)
    batch = as_batch(results)
    _check_options(budget_per_item, size, top, len(batch.critics))
    table = pilot_table(
        batch,
        None if gold is None else _gold_mapping(gold),
        holdout=holdout,
        seed=seed,
        prices=prices,
    )
    found, how = search_panels(
        table, budget_per_item=budget_per_item, size=size, strategies=strategies
    )
    candidates = len(found)
    notes: list[str] = []
    cascades: list[tuple[PanelFigures, Escalation, str]] = []
    if cascade and table.reference != "gold":
        notes.append("no cascade offered: its escalation is calibrated on gold labels; pass gold")
    options: list[Option] = [(f, None, None) for f in found]
    if cascade and table.reference == "gold":
        plain = _ranked(options)
        # A cascade is never more accurate than its best screened level: one below the
        # last plan shown would not be shown, so it is not calibrated.
        floor = plain[top - 1][0].selection_accuracy if len(plain) >= top else -1.0
        cascades, tried = _cascades(
            table, found, budget_per_item, size, cascade_target, delta, seed, floor
        )
        candidates += tried
    ranked = _ranked([*options, *cascades])[:top]
    plans = _plans(table, ranked)
    best = plans[0]
    if best.effective_votes is not None and best.effective_votes < MIN_EFFECTIVE_VOTES:
        said = (
            f"the best affordable panel ({best.describe()}) is worth {best.effective_votes:.2f} "
            f"effective votes, fewer than {MIN_EFFECTIVE_VOTES:g}: its critics err together (or "
            "it has one), so its verdicts are as good as one judge's; add a critic of another "
            "family or raise the budget"
        )
        notes.append(said)
        warnings.warn(said, StatisticsWarning, stacklevel=2)
    if table.left_out:
        notes.append(f"{table.left_out} items some critic did not judge were left out")
    return PanelPlans(
        plans=tuple(plans),
        reference=table.reference,
        budget_per_item=budget_per_item,
        size=size,
        search=how,
        candidates=candidates,
        n_selection=table.n_selection,
        n_held_out=table.n_held_out,
        left_out=table.left_out,
        holdout=table.holdout,
        seed=seed,
        notes=tuple(notes),
        source=panel,
    )


def _gold_mapping(gold: Mapping[str, str] | str | os.PathLike[str]) -> Mapping[str, str] | str:
    return gold if isinstance(gold, Mapping) else os.fspath(gold)


def _checked_strategies(strategies: Sequence[str]) -> tuple[str, ...]:
    if isinstance(strategies, str):
        strategies = [strategies]
    chosen = tuple(dict.fromkeys(strategies))
    unknown = [s for s in chosen if s not in PANEL_STRATEGIES]
    if unknown or not chosen:
        raise ConfigError(
            f"strategies must be some of {list(PANEL_STRATEGIES)}, got {list(strategies)!r}"
        )
    return chosen


def _check_options(budget: float | None, size: int | None, top: int, n_critics: int) -> None:
    if budget is not None and (
        isinstance(budget, bool)
        or not isinstance(budget, (int, float))
        or not (math.isfinite(budget) and budget > 0)
    ):
        raise ConfigError(f"budget_per_item must be USD per item above 0, got {budget!r}")
    if size is not None and (
        isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= max(n_critics, 1)
    ):
        raise ConfigError(
            f"size must be a number of critics from 1 to {n_critics} (the pilot's), got {size!r}"
        )
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigError(f"top must be an integer >= 1, got {top!r}")


def _ranked(
    options: Sequence[Option],
) -> list[Option]:
    """Best first (selection accuracy, then cost, then the simpler strategy, a plain panel
    before a cascade); options deciding every item as an earlier one are dropped."""
    ordered = sorted(
        options,
        key=lambda o: (
            -o[0].selection_accuracy,
            o[0].cost_per_item,
            len(o[0].tiers),
            _SIMPLER[o[0].tiers[-1].voting],
            o[0].size,
        ),
    )
    seen: set[tuple[float, ...]] = set()
    kept = []
    for option in ordered:
        if option[0].outcomes in seen:
            continue
        seen.add(option[0].outcomes)
        kept.append(option)
    return kept


def _plans(table: PilotTable, ranked: Sequence[Option]) -> list[PanelPlan]:
    plans = []
    for index, (figures, escalation, guarantee) in enumerate(ranked):
        following = ranked[index + 1][0] if index + 1 < len(ranked) else None
        versus = None if following is None else compare_panels(table, figures, following)
        plans.append(
            PanelPlan(
                rank=index + 1,
                figures=figures,
                reference=table.reference,
                reason=_reason(index, figures, following, versus),
                versus_next=versus,
                escalation=escalation,
                guarantee=guarantee,
            )
        )
    return plans


def _reason(index: int, figures: PanelFigures, following: PanelFigures | None, versus: Any) -> str:
    if following is None:
        return "last shown"
    gain = 100 * (figures.selection_accuracy - following.selection_accuracy)
    saved = following.cost_per_item - figures.cost_per_item
    if gain > 0.05:
        said = f"+{gain:.1f} pts over #{index + 2} where ranked"
    elif saved > 1e-9:
        said = f"ties #{index + 2} where ranked, ${saved:.2g} cheaper"
    else:
        said = f"ties #{index + 2} where ranked, simpler or fewer critics"
    held = 100 * versus.difference
    low, high = (100 * versus.interval[0], 100 * versus.interval[1])
    said += f"; held out {held:+.1f} [{low:+.1f}, {high:+.1f}]"
    if versus.p_value is not None:
        said += f", p = {versus.p_value:.2g}"
    return said


# -- cascades -----------------------------------------------------------------------------------


def _cascades(
    table: PilotTable,
    found: Sequence[PanelFigures],
    budget: float | None,
    size: int | None,
    target: float | None,
    delta: float,
    seed: int,
    floor: float = -1.0,
) -> tuple[list[tuple[PanelFigures, Escalation, str]], int]:
    """The calibrated cascades worth offering, and how many were replayed to find them."""
    plain = [f for f in found if f.tiers[0].voting != "dawid_skene"]
    if not plain:
        return [], 0
    limit = budget if budget is not None else plain[0].cost_per_item  # the best plain plan's
    firsts = [
        f
        for f in plain
        if f.tiers[0].voting == "majority" and f.size in (2, 3) and f.cost_per_item <= limit / 2
    ][:CASCADE_FIRST_TIERS]
    screened: list[PanelFigures] = []
    tried = 0
    for first in firsts:
        seconds = [
            f
            for f in plain
            if not set(f.critics) & set(first.critics)
            and f.cost_per_item > first.cost_per_item
            and (size is None or f.size + first.size == size)
        ][:CASCADE_SECOND_TIERS]
        for second in seconds:
            for level in _levels(table, first.tiers[0]):
                tried += 1
                figures = measure_panel(table, [first.tiers[0], second.tiers[0]], level)
                affordable = budget is None or figures.cost_per_item <= budget + 1e-12
                if affordable and figures.selection_accuracy >= floor:
                    screened.append(figures)
    screened.sort(key=lambda f: (-f.selection_accuracy, f.cost_per_item))
    pairs: list[tuple[PanelTier, PanelTier]] = []
    for figures in screened:
        pair = (figures.tiers[0], figures.tiers[1])
        if pair not in pairs:
            pairs.append(pair)
        if len(pairs) == CASCADES_CALIBRATED:
            break
    kept = []
    for first_tier, second_tier in pairs:
        calibrated = _calibrated(table, first_tier, second_tier, target, delta, seed)
        if calibrated is None:
            continue
        figures, escalation, guarantee = calibrated
        if budget is None or figures.cost_per_item <= budget + 1e-12:
            kept.append((figures, escalation, guarantee))
    return kept, tried


def _levels(table: PilotTable, tier: PanelTier) -> list[float]:
    """The agreement levels at which the tier's results could escalate, strictest first:
    every agreement it reaches above its lowest (a threshold at the lowest escalates none
    but failures)."""
    reached = sorted(table.agreements(tier), reverse=True)
    return reached[:-1] if len(reached) > 1 else []


def _calibrated(
    table: PilotTable,
    first: PanelTier,
    second: PanelTier,
    target: float | None,
    delta: float,
    seed: int,
) -> tuple[PanelFigures, Escalation, str] | None:
    """``first -> second`` at the most accurate level (on the selection items) of those
    :func:`calibrate_cascade` passed there, every one of which carries its guarantee;
    ``None`` when no level but "escalate everything" passed."""
    from ..cascade import Escalation
    from ..cascade_calibration import calibrate_cascade, percent

    results, gold = _calibration_results(table, first, second)
    alone = measure_panel(table, [second]).selection_accuracy
    goal = target if target is not None else min(0.99, max(0.5, math.floor(100 * alone - 3) / 100))
    fit = calibrate_cascade(results, gold, target=goal, delta=delta, seed=seed)
    reached = sorted(table.agreements(first))
    by_effect: dict[tuple[bool, ...], float] = {}
    for level in fit.levels:
        if level.passed and math.isfinite(level.threshold):
            by_effect.setdefault(tuple(a < level.threshold for a in reached), level.threshold)
    if not by_effect:
        return None
    options = [measure_panel(table, [first, second], t) for t in by_effect.values()]
    figures = min(options, key=lambda f: (-f.selection_accuracy, f.cost_per_item))
    assert figures.agreement_below is not None
    escalation = Escalation(agreement_below=figures.agreement_below)
    guarantee = (
        f"Calibrated on {fit.n_items} selection items: with probability at least "
        f"{percent(1 - delta)}, its agreement with gold is at least {percent(goal)} "
        "(cascade calibration, Learn-then-Test)"
    )
    return figures, escalation, guarantee


def _calibration_results(
    table: PilotTable, first: PanelTier, second: PanelTier
) -> tuple[list[EnsembleVerdict], dict[str, str]]:
    """The selection items as a cascade's all-tiers results (each tier's result the
    real vote of its critics' answers, its cost the tier's mean) and their gold."""
    from ..ensemble import revote
    from ..verdict import EnsembleVerdict

    results: list[EnsembleVerdict] = []
    gold: dict[str, str] = {}
    tiers: dict[tuple[int, tuple[str, ...]], EnsembleVerdict] = {}

    def tier_result(index: int, tier: PanelTier, answers: tuple[str, ...]) -> EnsembleVerdict:
        key = (index, answers)
        made = tiers.get(key)
        if made is None:
            verdicts = table.stand_ins(tier.critics, answers)
            options: dict[str, Any] = {}
            if tier.voting == "weighted":
                options = {"weights": dict(tier.weights or {}), "use_confidence": False}
            voted = revote(
                EnsembleVerdict(
                    query_id=f"tier{index}", verdicts=verdicts, consensus="", voting="majority"
                ),
                tier.voting,
                **options,
            )
            made = voted.model_copy(update={"cost_usd": table.cost(tier.critics)})
            tiers[key] = made
        return made

    columns = [table.index(first.critics), table.index(second.critics)]
    for number, group in enumerate(table.selection_groups()):
        label = group.truth[0][0]
        a = tier_result(0, first, tuple(group.pattern[j] for j in columns[0]))
        b = tier_result(1, second, tuple(group.pattern[j] for j in columns[1]))
        # One validated wrapper per group, copied per item (a copy changes only the id).
        wrapper = EnsembleVerdict(
            query_id="0", verdicts=[], consensus=b.consensus, voting="majority", tiers=[a, b]
        )
        for copy in range(group.count):
            item_id = f"{number:07d}.{copy:07d}"  # sorted as the groups are
            results.append(wrapper.model_copy(update={"query_id": item_id}))
            gold[item_id] = label
    return results, gold
