"""The report's views against gold labels (:mod:`cross_judge.report._page` with ``gold``):
reading the labels, the items the panel got wrong, and a rubric's accuracy per criterion.

* :func:`read_gold`: item labels (``{"id", "label"}`` lines) and criterion labels
  (``{"id", "criteria": {...}}`` lines, a rubric's gold) from one file or mapping, read
  as ``cross-judge stats --gold`` reads it (:mod:`cross_judge.stats._gold_file`);
* :func:`wrong_section`: the "Wrong against gold" section, every labelled item whose
  consensus is not its gold label, those the panel got wrong unanimously included (no
  agreement statistic shows them), in the searchable table of
  :func:`~cross_judge.report._items_table.items_table`;
* :func:`criteria_gold_section`: per criterion with gold, each critic's and the consensus's
  accuracy and Cohen's kappa (:func:`cross_judge.stats._criteria.criteria_gold_metrics`).

Escaped HTML only; every number comes from the digest and the statistics functions.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..stats import CONSENSUS
from ._criteria import format_rate
from ._digest import BatchDigest
from ._items_table import ItemColumns, items_table, listed_reasons, wrong_reasons

if TYPE_CHECKING:
    from ..stats import GoldFile, GoldReport

__all__ = ["Gold", "criteria_gold_section", "read_gold", "wrong_section"]

Gold = Mapping[str, Any] | str | os.PathLike[str]
"""What ``gold=`` takes: ``{id: label}``, ``{id: {criterion id: label}}`` or a gold file."""


def read_gold(gold: Gold) -> GoldFile:
    """The labels of ``gold`` as ``cross-judge stats --gold`` reads them
    (:mod:`cross_judge.stats._gold_file`): a mapping of ids to labels or to ``{criterion
    id: label}``, or a JSONL file of ``{"id", "label"}`` and/or ``{"id", "criteria":
    {...}}`` lines (a file none of whose lines names ``"criteria"`` needs a label on
    every line). :meth:`~cross_judge.stats._gold_file.GoldFile.split` gives the item and
    the criterion labels.

    Raises:
        ConfigError: an unreadable file, a line that is neither form or a label the
            checks refuse (its number given), an id or criterion given two labels.
    """
    from ..stats import read_gold as read_mapping, read_gold_labels

    return read_mapping(gold) if isinstance(gold, Mapping) else read_gold_labels(gold)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def wrong_section(digest: BatchDigest, columns: ItemColumns, max_items: int) -> str:
    """The "Wrong against gold" section (``<section id="wrong">``): how many labelled items
    have a consensus other than their gold label, by why (``unanimous``, ``split vote``,
    ``no consensus``, ...), and the first ``max_items`` of them in a searchable, sortable
    table (``#wrong-table``) with their text, consensus, gold label and every critic's
    vote. A note says how many were left out; none wrong: a line says so.

    Raises:
        ConfigError: the digest was built without gold (as
            :meth:`~cross_judge.report._digest.BatchDigest.wrong_against_gold`).
    """
    wrong = [(result, wrong_reasons(result)) for result in digest.wrong_against_gold()]
    labelled = len(digest.gold_results)
    head = '<section id="wrong"><h2>Wrong against gold</h2>'
    if not wrong:
        return (
            f"{head}<p>None of the {labelled} labelled items: the consensus equals every "
            "gold label.</p></section>"
        )
    shown = wrong[:max_items]
    left_out = len(wrong) - len(shown)
    note = (
        f'<p class="note" id="wrong-left-out">Showing the first {len(shown)} of {len(wrong)} '
        f"items wrong against gold ({left_out} left out; raise max_items / --max-items).</p>"
        if left_out
        else ""
    )
    return (
        f"{head}<p>{len(wrong)} of {labelled} labelled items have a consensus other than "
        f"their gold label ({listed_reasons(wrong)}). Unanimous ones are errors the critics "
        "share: no agreement statistic shows them, and a bigger panel of the same critics "
        "does not fix them. Click a header to sort; type to filter.</p>"
        + note
        + items_table(
            shown,
            columns,
            table_id="wrong-table",
            search_id="wrong-search",
            count_id="wrong-shown-count",
            what="the items wrong against gold",
        )
        + "</section>"
    )


def criteria_gold_section(reports: Mapping[str, GoldReport], name: Callable[[str], str]) -> str:
    """The "Criteria against gold" section (``<section id="criteria-gold">``): one row per
    criterion with gold, its labelled items, then per critic and the consensus its
    accuracy (over the labelled items it answered; its coverage in the cell's title) and
    Cohen's kappa. ``name`` renders a critic's name as HTML. Empty text without reports."""
    if not reports:
        return ""
    names = list(dict.fromkeys(row.name for report in reports.values() for row in report.rows))
    columns = [*(n for n in names if n != CONSENSUS), *([CONSENSUS] if CONSENSUS in names else [])]
    head = '<th scope="col">criterion</th><th scope="col" class=num>labelled</th>' + "".join(
        f'<th scope="col" class=num>{CONSENSUS if n == CONSENSUS else name(n)}</th>'
        for n in columns
    )
    body = []
    for criterion, report in reports.items():
        rows = {row.name: row for row in report.rows}
        cells = [
            f'<td><span class="id">{_e(criterion)}</span></td>',
            f"<td class=num>{report.n_gold}</td>",
        ]
        for column in columns:
            row = rows.get(column)
            if row is None:
                cells.append('<td class="num absent">—</td>')
                continue
            kappa = "n/a" if row.kappa is None else f"{row.kappa:.3f}"
            cells.append(
                f'<td class=num title="answered {row.n_answered} of {row.n_gold} labelled">'
                f'{format_rate(row.accuracy)} <span class="muted">κ {kappa}</span></td>'
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<section id="criteria-gold"><h2>Criteria against gold</h2><p>Per criterion with '
        "gold labels: each critic's and the consensus's accuracy on the labelled items it "
        "answered (hover for its coverage) and Cohen's kappa (κ). Failed answers are left "
        "out: read accuracy beside coverage.</p>"
        f'<table id="criteria-gold-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )
