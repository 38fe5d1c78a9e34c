"""The report's "Which panel" section: the panels the results could have been, ranked by
:func:`cross_judge.panel_choice.select_panel` (no budget, the top :data:`PLANS_SHOWN`).

:func:`panel_section` replays the stored verdicts once per page (zero calls): against the
report's gold labels when given, else against a Dawid-Skene estimate from the votes, which
the section says plainly. It shows the plans' table and notes, the cheapest plan within
:data:`WITHIN_POINTS` point of the best's held-out accuracy when that is another plan, and
how to choose within a budget (``cross-judge plan-panel``). Results that cannot support a
choice give one short line saying why (costs unknown, too few items judged by every
critic, a cascade's results, more critics or items than a page replays); results of one
critic give no section at all. Every text is escaped.

A results file is read a second time for it (the page's digest keeps no item's id), into
:func:`lean_pilot`'s stand-ins: each item's id and its critics' answers, no text. The
checks that need no second reading (critics, cascade, items, costs as the digest counts
them) come first.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError, StatisticsWarning
from ..results import BatchResult, read_results
from ..verdict import EnsembleVerdict, Verdict
from ._html import html_text

if TYPE_CHECKING:
    from ..panel_choice import PanelPlan, PanelPlans
    from ._digest import BatchDigest

__all__ = [
    "MAX_CRITICS",
    "MAX_ITEMS",
    "PLANS_SHOWN",
    "WITHIN_POINTS",
    "cheaper_alike",
    "lean_pilot",
    "panel_section",
]

PLANS_SHOWN = 5
"""How many plans the section lists."""

WITHIN_POINTS = 1.0
"""A plan this many points of held-out accuracy below the best, or less, is "as good"."""

MAX_CRITICS = 8
"""Above this many critics the section only points to ``cross-judge plan-panel``: every
subset of them under every strategy takes too long to replay for a page (12 critics: a
minute and more)."""

MAX_ITEMS = 20_000
"""Above this many items the section only points to ``cross-judge plan-panel``: choosing
holds each item's id and its critics' answers (about 2 KB an item), which the page's
one-pass digest does not."""

_NUMERIC = frozenset({0, 2, 3, 4, 5})  # rank, accuracies, cost, effective votes
_BUDGET_COMMAND = "cross-judge plan-panel {results} --budget-per-item USD --out panel.yaml"
_FAILED = "failed"  # a stand-in verdict's error: a failed call, whatever it said


def panel_section(
    results: BatchResult | str | os.PathLike[str],
    digest: BatchDigest,
    gold: Mapping[str, str] | None,
) -> str:
    """The ``<section id="which-panel">`` of the report of ``results`` (a batch, or the results
    file ``digest`` was read from, read a second time here, one result at a time), with
    ``gold`` item labels (``None``: a Dawid-Skene estimate, said so).

    Empty text for results of fewer than two critics. One line saying why, without
    reading anything again, for a cascade's results, more than :data:`MAX_CRITICS` critics
    or :data:`MAX_ITEMS` items, or a critic some verdict of which carries no cost; one line
    with :func:`~cross_judge.panel_choice.select_panel`'s reason when it refuses (too few
    items judged by every critic, gold labels no critic answers). The
    :class:`~cross_judge.errors.StatisticsWarning` it may emit is not raised: its note is
    in the section.
    """
    from ..panel_choice import select_panel

    critics = len(digest.critics)
    if critics < 2:
        return ""
    shown = "RESULTS" if isinstance(results, BatchResult) else os.path.basename(results)
    command = _BUDGET_COMMAND.format(results=shown)
    if digest.cascade:
        return _line(
            "these are a cascade's results, whose tiers judged different items; choose a "
            "panel from a pilot in which every candidate critic judged every item"
        )
    if critics > MAX_CRITICS or len(digest) > MAX_ITEMS:
        many = (
            f"{critics} critics are too many to replay every panel of them here"
            if critics > MAX_CRITICS
            else f"{len(digest)} items are more than this page replays (at most {MAX_ITEMS})"
        )
        return _line(f"{many}; run <code>{html_text(command)}</code>", escaped=True)
    stats = digest.critic_stats()
    unpriced = [name for name in digest.critics if stats[name].cost_usd is None]
    if not unpriced:
        stored = results.verdicts if isinstance(results, BatchResult) else read_results(results)
        batch, prices, unpriced = lean_pilot(stored, digest.critics)
    if unpriced:
        return _line(
            f"costs unknown (the verdicts of {', '.join(unpriced)} carry none): pass prices "
            "to select_panel / --price to plan-panel"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatisticsWarning)
            plans = select_panel(batch, gold, top=PLANS_SHOWN, prices=prices)
    except ConfigError as exc:
        return _line(str(exc))
    return _section(plans, command)


def lean_pilot(
    results: Iterable[EnsembleVerdict], critics: Sequence[str]
) -> tuple[BatchResult, dict[str, float], list[str]]:
    """``results`` as what a panel is chosen on, taken one at a time: a batch whose results
    keep only their id and their verdicts, each a stand-in shared by every verdict of the
    same critic, label and success (no text, cost or confidence); each critic's cost per
    item; the ``critics`` whose cost the verdicts do not give.

    Costs are read as :func:`~cross_judge.stats.pilot_table` reads them
    (:class:`~cross_judge.stats.CostTally`)."""
    from ..stats import CostTally

    tally = CostTally(critics)
    stand_ins: dict[tuple[str, str, bool], Verdict] = {}
    lean: list[EnsembleVerdict] = []
    for result in results:
        verdicts = []
        for verdict in result.verdicts:
            failed = verdict.error is not None
            key = (verdict.critic_id, verdict.kind, failed)
            stand_in = stand_ins.get(key)
            if stand_in is None:
                stand_in = stand_ins[key] = Verdict(
                    kind=verdict.kind,
                    critic_id=verdict.critic_id,
                    error=_FAILED if failed else None,
                )
            verdicts.append(stand_in)
            tally.add(verdict)
        lean.append(
            EnsembleVerdict(
                query_id=result.query_id,
                verdicts=verdicts,
                consensus=result.consensus,
                voting=result.voting,
            )
        )
    prices = tally.known()
    return BatchResult.from_results(lean), prices, [n for n in critics if n not in prices]


def cheaper_alike(plans: Sequence[PanelPlan]) -> PanelPlan | None:
    """The cheapest of ``plans`` whose held-out accuracy is at most :data:`WITHIN_POINTS`
    below the first's (the best), when it costs less than the best; else ``None`` (also
    when the best's accuracy is undefined)."""
    if not plans or math.isnan(plans[0].accuracy):
        return None
    best = plans[0]
    floor = best.accuracy - WITHIN_POINTS / 100 - 1e-12
    alike = [p for p in plans if not math.isnan(p.accuracy) and p.accuracy >= floor]
    cheapest = min(alike, key=lambda p: (p.cost_per_item, p.rank))
    return cheapest if cheapest.cost_per_item < best.cost_per_item - 1e-12 else None


def _line(why: str, *, escaped: bool = False) -> str:
    text = why if escaped else html_text(why.rstrip("."))
    return (
        '<section id="which-panel"><h2>Which panel</h2>'
        f'<p class="muted" id="which-panel-not-computed">Not computed: {text}.</p></section>'
    )


def _section(plans: PanelPlans, command: str) -> str:
    if plans.reference == "gold":
        against = (
            "Held-out accuracy is measured against the gold labels on labelled items the "
            "plans were not ranked on."
        )
    else:
        against = (
            "No gold labels were given: held-out accuracy is <strong>estimated</strong> by a "
            "Dawid-Skene model fitted to the critics' own votes, not measured against gold "
            "(pass <code>--gold GOLD.jsonl</code> to measure it)."
        )
    intro = (
        "<p>The panels these results could have been, replayed on the stored verdicts (no "
        "call): subsets of the critics voting by majority, learned weights or Dawid-Skene"
        f"{', and two-tier cascades' if plans.reference == 'gold' else ''}, ranked on one "
        f"part of the items. {against}</p>"
        f'<p class="muted">{html_text(plans.heading())}.</p>'
    )
    head = "".join(
        f'<th scope="col"{" class=num" if i in _NUMERIC else ""}>{html_text(h)}</th>'
        for i, h in enumerate(plans.HEADERS)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=num' if i in _NUMERIC else ''}>{html_text(cell)}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in plans.rows()
    )
    table = (
        f'<table id="which-panel-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )
    parts = ['<section id="which-panel"><h2>Which panel</h2>', intro, table]
    cheaper = cheaper_alike(plans.plans)
    if cheaper is not None:
        best = plans.best
        parts.append(
            f'<p id="which-panel-cheaper">Plan #{cheaper.rank} '
            f"({html_text(cheaper.describe())}) costs ${cheaper.cost_per_item:.3g} per item "
            "against the best's "
            f"${best.cost_per_item:.3g}, and its held-out accuracy "
            f"({100 * cheaper.accuracy:.1f}%) is within {WITHIN_POINTS:g} point of the best's "
            f"({100 * best.accuracy:.1f}%).</p>"
        )
    parts.extend(f'<p class="note">{html_text(note)}</p>' for note in plans.notes)
    parts.append(
        f"<p>To choose within a budget and write the panel file: <code>{html_text(command)}"
        "</code>.</p></section>"
    )
    return "".join(parts)
