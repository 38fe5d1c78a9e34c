"""The report's tables of items (:mod:`cross_judge.report._page`): the disputed items and,
with gold labels, the items the panel got wrong against them.

Both tables have the same columns: the item (its id, the text it judged when the results
store it, its conversation, trajectory, reference and images and each turn's or step's
result, :mod:`._structure`, and its meta), the consensus, its gold label (with gold), the
agreement, a cascade's deciding tier, why it is listed, a rubric's disputed criteria, then
each critic's label, confidence and reasoning (a failed or skipped call marked). Each sits
under a search box and sorts by a click on a header (``report.js`` wires the table of
every ``div.items`` to the search box its ``data-search`` names). Every text from the
results is HTML-escaped; the page makes the whole of it
:func:`~cross_judge.report._summary.printable`.

It computes nothing: the rows are the results a
:class:`~cross_judge.report._digest.BatchDigest` kept.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..results import call_failed, is_fallback
from ..verdict import EnsembleVerdict, Verdict
from ._criteria import disputed_criteria, format_rate
from ._digest import dispute_reasons
from ._structure import beside_reference, structure_html
from ._summary import judged_text

__all__ = [
    "ItemColumns",
    "items_table",
    "listed_reasons",
    "sort_key",
    "verdict_cell",
    "wrong_reasons",
]

_META_CHARS = 300


@dataclass(frozen=True)
class ItemColumns:
    """What the columns of an items table are: the panel's ``critics`` (a column each,
    headed by ``name(critic)``, HTML), a ``tier`` column for a cascade, a ``disputed
    criteria`` column for rubric results, and a ``gold`` column beside the consensus when
    ``gold`` is given (the label of an item id, ``None`` for an unlabelled item)."""

    critics: Sequence[str]
    name: Callable[[str], str]
    cascade: bool = False
    rubric: bool = False
    gold: Callable[[str], str | None] | None = None


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def sort_key(value: float | None) -> str:
    """A ``data-sort`` value: the number, or empty (sorted last) when undefined."""
    return "" if value is None or not math.isfinite(value) else repr(round(value, 6))


def listed_reasons(results: Sequence[tuple[EnsembleVerdict, Sequence[str]]]) -> str:
    """``"split vote 3, unanimous 2"``: the rows of a table counted by reason, most common
    first (HTML)."""
    counts = Counter(reason for _, why in results for reason in why)
    return ", ".join(f"{_e(reason)} {n}" for reason, n in counts.most_common())


def items_table(
    rows: Sequence[tuple[EnsembleVerdict, Sequence[str]]],
    columns: ItemColumns,
    *,
    table_id: str,
    search_id: str,
    count_id: str,
    what: str,
) -> str:
    """The search box (``search_id``; its count of rows shown is ``count_id``) and the
    sortable table ``table_id`` of ``rows`` (a result and why it is listed), in order.
    ``what`` names the rows in the search box's label (``"the disputed items"``)."""
    headers = [
        '<th scope="col" data-sort="text">item</th>',
        '<th scope="col" data-sort="text">consensus</th>',
    ]
    if columns.gold is not None:
        headers.append('<th scope="col" data-sort="text">gold</th>')
    headers.append('<th scope="col" data-sort="num" class=num>agreement</th>')
    if columns.cascade:
        headers.append('<th scope="col" data-sort="num" class=num>tier</th>')
    headers.append('<th scope="col" data-sort="text">why</th>')
    if columns.rubric:
        headers.append('<th scope="col" data-sort="text">disputed criteria</th>')
    headers += [
        f'<th scope="col" data-sort="text">{columns.name(name)}</th>' for name in columns.critics
    ]
    body = "".join(_row(result, why, columns) for result, why in rows)
    return (
        f'<div class="tools"><input id="{_e(search_id)}" type="search" '
        'placeholder="filter items, text, labels, reasoning…" '
        f'aria-label="filter {_e(what)}"> <span id="{_e(count_id)}">{len(rows)}</span> of '
        f'{len(rows)} rows shown</div><div class="scroll items" data-search="{_e(search_id)}" '
        f'data-count="{_e(count_id)}"><table id="{_e(table_id)}"><thead><tr>'
        f"{''.join(headers)}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _row(result: EnsembleVerdict, why: Sequence[str], columns: ItemColumns) -> str:
    by_critic = {v.critic_id: v for v in result.verdicts}
    meta = ""
    if result.meta:
        text = json.dumps(result.meta, ensure_ascii=False, default=str)
        clipped = text[:_META_CHARS] + ("…" if len(text) > _META_CHARS else "")
        meta = f'<div class="meta">{_e(clipped)}</div>'
    consensus_class = "label" + (" fallback" if is_fallback(result) else "")
    agreement = result.agreement_pct if result.n_valid else None
    structure = structure_html(result)
    judged = "".join(
        f'<div class="judged"><span class="field">{_e(name)}</span> {_e(text)}</div>'
        for name, text in judged_text(result, answer=not beside_reference(result))
    )
    structured = ' class="structured"' if structure else ""
    cells = [
        f'<td data-sort="{_e(result.query_id)}"{structured}>'
        f'<span class="id">{_e(result.query_id)}</span>{judged}{structure}{meta}</td>',
        f'<td data-sort="{_e(result.consensus)}"><span class="{consensus_class}">'
        f"{_e(result.consensus)}</span></td>",
    ]
    if columns.gold is not None:
        cells.append(_gold_cell(result, columns.gold(result.query_id)))
    cells.append(f'<td class=num data-sort="{sort_key(agreement)}">{format_rate(agreement)}</td>')
    if columns.cascade:
        tier = result.tier
        shown = "" if tier is None else str(tier)
        cells.append(f'<td class=num data-sort="{sort_key(tier)}">{shown}</td>')
    cells.append(f'<td data-sort="{_e(", ".join(why))}">{_e(", ".join(why))}</td>')
    if columns.rubric:
        lines = disputed_criteria(result)
        listed = "".join(f"<div>{_e(line)}</div>" for line in lines)
        cells.append(f'<td data-sort="{_e("; ".join(lines))}">{listed}</td>')
    cells += [verdict_cell(by_critic.get(name)) for name in columns.critics]
    return "<tr>" + "".join(cells) + "</tr>"


def _gold_cell(result: EnsembleVerdict, gold: str | None) -> str:
    """The item's gold label, marked ``wrong`` when the consensus is another; empty for an
    unlabelled item (sorted last)."""
    if gold is None:
        return '<td data-sort="" class="absent">—</td>'
    wrong = ' <span class="wrong">wrong</span>' if gold != result.consensus else ""
    return f'<td data-sort="{_e(gold)}"><span class="label gold">{_e(gold)}</span>{wrong}</td>'


def verdict_cell(verdict: Verdict | None) -> str:
    """One critic's answer on one item as a table cell: its label, confidence (a pair's
    order or flip) and reasoning; a failed call's kind, error kind and message; a skipped
    call's reason; ``—`` when the critic gave no verdict."""
    if verdict is None:
        return '<td data-sort="" class="absent">—</td>'
    if verdict.kind == "SKIPPED":
        reason = verdict.error_kind.value if verdict.error_kind else "skipped"
        return (
            '<td data-sort="~SKIPPED"><span class="label skipped">SKIPPED</span> '
            f'<span class="muted">{_e(reason)}</span></td>'
        )
    if verdict.error is not None:
        kind = verdict.error_kind.value if verdict.error_kind else ""
        failed = "failed" if call_failed(verdict) else "parse"
        return (
            f'<td data-sort="~{_e(verdict.kind)}">'
            f'<span class="label {failed}">{_e(verdict.kind)}</span> '
            f'<span class="muted">{_e(kind)}</span>'
            f'<div class="reason">{_e(verdict.error)}</div></td>'
        )
    flip = ""
    if verdict.flipped:
        orders = "; ".join(
            f"{a.order or '?'}: {a.kind} ({a.confidence:.2f})" for a in verdict.answers or ()
        )
        flip = f' <span class="flip" title="{_e(orders)}">flip</span>'
    elif verdict.order is not None:
        flip = f' <span class="muted">{_e(verdict.order)}</span>'
    sort = f"{verdict.kind} {verdict.confidence:.4f}"
    return (
        f'<td data-sort="{_e(sort)}"><span class="label">{_e(verdict.kind)}</span> '
        f'<span class="conf">{verdict.confidence:.2f}</span>{flip}'
        f'<div class="reason">{_e(verdict.reasoning)}</div></td>'
    )


def wrong_reasons(result: EnsembleVerdict) -> list[str]:
    """Why an item wrong against gold went wrong: its :func:`dispute_reasons`, or
    ``unanimous`` when there is none (every valid vote agreed, on the wrong label)."""
    return dispute_reasons(result) or ["unanimous"]
