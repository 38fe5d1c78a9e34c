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
  accuracy and Cohen's kappa (:func:`cross_judge.stats._criteria.criteria_gold_metrics`);
* :func:`accuracy_html` and :func:`paired_table`: an accuracy with its Wilson interval, and
  the report's paired comparisons (exact McNemar on the items one side alone got right,
  :meth:`~cross_judge.stats.GoldReport.comparisons`), which the confusion section shows;
* :func:`criteria_gold_table`: the terminal twin of the criteria section, each accuracy with
  its interval (``cross-judge stats --gold`` on a rubric's results).

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
    from rich.console import RenderableType

    from ..stats import GoldFile, GoldReport

__all__ = [
    "Gold",
    "accuracy_html",
    "criteria_gold_section",
    "criteria_gold_table",
    "paired_table",
    "read_gold",
    "wrong_section",
]

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
                f"{accuracy_html(row.accuracy, row.accuracy_interval)} "
                f'<span class="muted">κ {kappa}</span></td>'
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<section id="criteria-gold"><h2>Criteria against gold</h2><p>Per criterion with '
        "gold labels: each critic's and the consensus's accuracy on the labelled items it "
        "answered [its 95% Wilson interval] (hover for its coverage) and Cohen's kappa (κ). "
        "Failed answers are left out: read accuracy beside coverage.</p>"
        f'<table id="criteria-gold-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )


def accuracy_html(accuracy: float | None, interval: tuple[float, float] | None) -> str:
    """An accuracy as a percentage with its interval after it, muted:
    ``81.0% <span class="muted">[75.3%, 85.6%]</span>``; only the rate without an
    interval, ``n/a`` when undefined."""
    if accuracy is None or interval is None:
        return format_rate(accuracy)
    low, high = interval
    return (
        f'{format_rate(accuracy)} <span class="muted">'
        f"[{format_rate(low)}, {format_rate(high)}]</span>"
    )


def paired_table(report: GoldReport) -> str:
    """The report's paired comparisons (:meth:`~cross_judge.stats.GoldReport.comparisons`)
    as a paragraph and a table (``#gold-paired-table``): per pair the items both answered,
    the difference in accuracy with its interval, the items each alone got right, the
    exact McNemar p and Holm's over the pairs. Empty text when there is none to show."""
    comparisons = report.comparisons()
    if not comparisons:
        return ""
    level = comparisons[0].confidence
    head = "".join(
        f'<th scope="col"{" class=num" if i else ""}>{h}</th>'
        for i, h in enumerate(
            ["A vs B", "items", "difference", "only A right", "only B right", "McNemar p", "Holm p"]
        )
    )
    body = []
    for c in comparisons:
        difference = (
            "n/a"
            if c.difference is None or c.interval is None
            else f"{c.difference:+.1%} "
            f'<span class="muted">[{c.interval[0]:+.1%}, {c.interval[1]:+.1%}]</span>'
        )
        cells = [
            f"{_e(c.candidate)} vs {_e(c.baseline)}",
            str(c.n),
            difference,
            str(c.better),
            str(c.worse),
            _p(c.p_value),
            "n/a" if c.p_adjusted is None else _p(c.p_adjusted),
        ]
        body.append(
            "<tr>"
            + "".join(f"<td{' class=num' if i else ''}>{cell}</td>" for i, cell in enumerate(cells))
            + "</tr>"
        )
    return (
        '<p id="gold-paired">Paired on the same gold items (those both sides answered): two '
        "accuracies side by side, or their intervals, do not say whether one is better; the "
        "items only one side got right do. Difference: A's accuracy minus B's with its "
        f"{level:.0%} Agresti-Min interval; p: exact McNemar test on those items; Holm p: "
        f"adjusted over the {len(comparisons)} pairs.</p>"
        f'<table id="gold-paired-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _p(value: float) -> str:
    return "&lt;0.001" if value < 0.001 else f"{value:.3g}"


def criteria_gold_table(reports: Mapping[str, GoldReport]) -> RenderableType:
    """A ``rich`` table, one row per criterion with gold: the labelled items, then each
    critic's and the consensus's accuracy on it with its Wilson interval (``-``: nothing
    answered, or no such row for that criterion)."""
    from rich import box
    from rich.table import Table

    from ..stats import accuracy_cell

    names = list(dict.fromkeys(row.name for report in reports.values() for row in report.rows))
    levels = {f"{report.confidence:.0%}" for report in reports.values()}
    table = Table(
        box=box.SIMPLE_HEAD,
        title="accuracy per criterion against gold",
        title_justify="left",
        caption=f"accuracy [{', '.join(sorted(levels))} Wilson score interval]",
    )
    table.add_column("criterion")
    table.add_column("gold", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    for cid, report in reports.items():
        rows = {row.name: row for row in report.rows}
        table.add_row(
            cid,
            str(report.n_gold),
            *(
                "-"
                if (row := rows.get(n)) is None or row.accuracy is None
                else accuracy_cell(row.accuracy, row.accuracy_interval)
                for n in names
            ),
        )
    return table
