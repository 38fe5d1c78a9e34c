"""HTML views of results for Jupyter: what ``_repr_html_`` of a
:class:`~cross_judge.verdict.Verdict`, an :class:`~cross_judge.verdict.EnsembleVerdict` and
a :class:`~cross_judge.batch.BatchResult` returns.

Presentation only: every number comes from the results' own fields and statistics
methods. Every string taken from a result (ids, labels, critic names, reasoning, error
messages) is HTML-escaped: items are untrusted input. The markup is self-contained (no
scripts, no external resources, no ``<style>`` block): inline styles whose colours are
translucent tints over the notebook's own text colour, so they read in light and dark
themes. A batch shows at most ``max_rows`` items, the disputed ones first, so a 100k-item
batch renders in about the time its statistics take. An item with structure shows its
turns and its steps compactly (:mod:`._structure` with inline styles: steps collapsed,
failed tool calls marked ``✗ ERROR``, each turn's or step's result beside it); a batch's
row says it in one line (``trajectory: 12 steps, 2 failed; critics split on step 7``). It
deliberately draws no charts: ``cross-judge report`` does that.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING

from .._extensions import provide
from ..results import is_incomplete
from ..stats import fleiss_kappa, reliability_alpha
from ..verdict import ABSTAIN
from ._criteria import CriteriaDigest, CriterionRow, criteria_grid
from ._structure import INLINE, beside_reference, structure_html, structure_summary
from ._summary import (
    format_cost,
    format_number,
    format_rate,
    judged_text,
    printable,
    simulated_note,
)

if TYPE_CHECKING:
    from ..results import BatchResult, CriticStats, TierStats
    from ..verdict import Answer, EnsembleVerdict, Verdict

__all__ = ["MAX_ROWS", "batch_html", "ensemble_html", "expandable", "verdict_html"]

MAX_ROWS = 50
"""Items a batch's view lists, the disputed ones first."""

_CLIP = 160  # characters of reasoning shown before "show all"
_TITLE_CLIP = 300  # characters of reasoning or error in a batch cell's tooltip
_FULL_CLIP = 20_000  # characters of one text kept even when expanded (raw answers can be huge)

# Translucent tints: readable over a white or a black page, text keeps the theme's colour.
_TINTS = {
    "ERROR": "rgba(239,68,68,.25)",
    "PARSE_FAIL": "rgba(249,115,22,.25)",
    "SKIPPED": "rgba(148,163,184,.25)",
    "dissent": "rgba(234,179,8,.25)",
    "undecided": "rgba(168,85,247,.25)",
}
_TABLE = "border-collapse:collapse;margin:.2em 0 .8em 0;font-size:.9em;color:inherit"
_CELL = "padding:.15em .6em;border-bottom:1px solid rgba(128,128,128,.3);vertical-align:top"
_HEAD = _CELL + ";font-weight:600;border-bottom:1px solid rgba(128,128,128,.6)"
_CAPTION = "caption-side:top;text-align:left;font-weight:600;padding:.2em 0"
_NOTE = "opacity:.75;font-size:.85em;margin:.1em 0 .6em 0"


# -- formatting -----------------------------------------------------------------------------


def _text(value: object) -> str:
    """``value`` as HTML text; a lone surrogate as its escape (:func:`printable`)."""
    return escape(printable(str(value)), quote=True)


def _judged(result: EnsembleVerdict, limit: int, *, answer: bool = True) -> str:
    """The text ``result`` judged (query, then context values), each part shortened to
    ``limit`` characters with the stored whole behind ``<details>``; empty when the
    result stores none. Without ``answer``, the query is left out (shown beside the
    reference by :func:`~cross_judge.report._structure.structure_html`)."""
    return "".join(
        f'<div style="{_NOTE};margin:0"><code>{_text(name)}</code> {expandable(text, limit)}</div>'
        for name, text in judged_text(result, answer=answer)
    )


def _structure_line(result: EnsembleVerdict) -> str:
    """A batch row's one line on the item's structure (turns, steps, failures, split
    units); empty for a plain item."""
    line = structure_summary(result)
    return f'<div style="{_NOTE};margin:0">{_text(line)}</div>' if line else ""


def _clip(text: str, limit: int) -> str:
    """``text`` with whitespace folded, cut to ``limit`` characters with an ellipsis."""
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "\u2026"


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} s"


def _badge(label: str, tint: str | None, title: str | None = None) -> str:
    """``label`` (already escaped) in a rounded box tinted ``tint``."""
    style = "padding:0 .35em;border-radius:.3em;white-space:nowrap"
    if tint:
        style += f";background:{tint}"
    hover = f' title="{_text(title)}"' if title else ""
    return f'<span style="{style}"{hover}>{label}</span>'


def _kind_badge(kind: str, *, dissent: bool = False, title: str | None = None) -> str:
    tint = _TINTS.get(kind) or (_TINTS["dissent"] if dissent else None)
    return _badge(_text(kind), tint, title)


def expandable(text: str, limit: int = _CLIP) -> str:
    """``text`` escaped; past ``limit`` characters a ``<details>`` shows the start and opens
    on the whole (up to 20,000 characters). Also the leaderboard's candidate texts."""
    if not text:
        return ""
    short = _clip(text, limit)
    if short == " ".join(text.split()):
        return _text(short)
    full = text if len(text) <= _FULL_CLIP else text[:_FULL_CLIP] + "\u2026"
    return (
        f"<details><summary>{_text(short)}</summary>"
        f'<div style="white-space:pre-wrap;max-width:60em">{_text(full)}</div></details>'
    )


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    caption: str | None = None,
    right: Iterable[int] = (),
) -> str:
    """A table; ``headers`` are plain text, cells already HTML; columns in ``right`` are
    right-aligned (numbers)."""
    aligned = set(right)

    def align(i: int) -> str:
        return "right" if i in aligned else "left"

    out = [f'<table style="{_TABLE}">']
    if caption:
        out.append(f'<caption style="{_CAPTION}">{_text(caption)}</caption>')
    out.append("<thead><tr>")
    out.extend(
        f'<th style="{_HEAD};text-align:{align(i)}">{_text(h)}</th>' for i, h in enumerate(headers)
    )
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        out.extend(
            f'<td style="{_CELL};text-align:{align(i)}">{cell}</td>' for i, cell in enumerate(row)
        )
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _wrap(parts: Iterable[str]) -> str:
    return '<div style="color:inherit">' + "".join(parts) + "</div>"


def _note(text: str) -> str:
    """A small line of ``text`` (already HTML)."""
    return f'<div style="{_NOTE}">{text}</div>'


# -- one verdict ----------------------------------------------------------------------------


def _confidence(verdict: Verdict) -> str:
    if verdict.error is not None:
        return ""
    text = f"{verdict.confidence:.2f}"
    if verdict.stated_confidence is not None:
        text += f" (stated {verdict.stated_confidence:.2f})"
    elif not verdict.confidence_stated:
        text = "none stated"
    return text


def _critic(verdict: Verdict) -> str:
    name = _text(verdict.critic_id or "?")
    model = "/".join(p for p in (verdict.vendor, verdict.model) if p)
    if model:
        name += f'<div style="{_NOTE};margin:0">{_text(model)}</div>'
    return name


def _without_kind(kind: str, message: str) -> str:
    """``message`` without the leading ``"<kind>: "`` its kind, shown beside it, repeats."""
    return message[len(kind) + 2 :] if kind and message.startswith(f"{kind}: ") else message


def _error(verdict: Verdict) -> str:
    if verdict.error is None and verdict.error_kind is None:
        return ""
    kind = verdict.error_kind.value if verdict.error_kind else ""
    message = expandable(_without_kind(kind, verdict.error or ""), 120)
    return f"<b>{_text(kind)}</b> {message}".strip() if kind else message


def _call_details(verdict: Verdict) -> str:
    """Pair order, flip, self-agreement, cache and attempts, as short notes."""
    notes: list[str] = []
    if verdict.order is not None:
        notes.append(f"order {_text(verdict.order)}")
    if verdict.flipped:
        notes.append(_badge("flipped", _TINTS["dissent"], "the two orders disagreed"))
    if verdict.self_agreement is not None:
        notes.append(f"self-agreement {verdict.self_agreement:.0%}")
    if verdict.cached:
        notes.append("cached")
    if verdict.attempts > 1:
        notes.append(f"{verdict.attempts} attempts")
    return ", ".join(notes)


def _written(verdict: Verdict) -> str | None:
    """The hover text of a label read from a look-alike spelling, else ``None``."""
    if verdict.written_label is None:
        return None
    return f"written {verdict.written_label!r}, counted as {verdict.kind}"


def _verdict_cells(verdict: Verdict, *, dissent: bool = False) -> list[str]:
    return [
        _critic(verdict),
        _kind_badge(verdict.kind, dissent=dissent, title=_written(verdict)),
        _confidence(verdict),
        expandable(verdict.reasoning),
        _error(verdict),
        format_cost(verdict.cost_usd) if verdict.cost_usd is not None else "",
        _seconds(verdict.elapsed_s),
        _call_details(verdict),
    ]


_VERDICT_HEADERS = (
    "critic",
    "kind",
    "confidence",
    "reasoning",
    "error",
    "cost",
    "latency",
    "details",
)
_VERDICT_RIGHT = (2, 5, 6)


def _answers_table(answers: Sequence[Answer], caption: str = "answers") -> str:
    rows = [
        [
            str(i),
            _text(a.order or ""),
            _text(a.answered),
            _kind_badge(a.kind),
            "" if a.error else f"{a.confidence:.2f}",
            expandable(a.error or a.reasoning, 120),
        ]
        for i, a in enumerate(answers, 1)
    ]
    return _table(
        ("#", "order", "answered", "kind", "confidence", "reasoning / error"),
        rows,
        caption=caption,
        right=(0, 4),
    )


@provide("verdict_html")
def verdict_html(verdict: Verdict) -> str:
    """One critic's verdict: a one-row table (critic and model, kind tinted for ``ERROR``,
    ``PARSE_FAIL`` and ``SKIPPED``, confidence, reasoning shortened with the whole behind
    ``<details>``, error kind and message, cost, latency, pair order / flip / cache /
    attempts), then its ``answers`` (a pair judged in both orders, or samples) if any."""
    parts = [_table(_VERDICT_HEADERS, [_verdict_cells(verdict)], right=_VERDICT_RIGHT)]
    if verdict.criteria:
        parts.append(_own_criteria_table(verdict))
    if verdict.answers:
        parts.append(_answers_table(verdict.answers))
    return _wrap(parts)


def _own_criteria_table(verdict: Verdict) -> str:
    """A rubric critic's answer on each criterion: label, confidence, score, reasoning,
    error."""
    rows = [
        [
            _text(cid),
            _kind_badge(a.kind),
            "" if a.error is not None else f"{a.confidence:.2f}",
            "" if a.score is None else f"{a.score:.2f}",
            expandable(a.reasoning),
            expandable(_without_kind(a.error_kind.value if a.error_kind else "", a.error), 120)
            if a.error
            else "",
        ]
        for cid, a in (verdict.criteria or {}).items()
    ]
    headers = ("criterion", "kind", "confidence", "score", "reasoning", "error")
    return _table(headers, rows, caption="criteria", right=(2, 3))


def _criteria_table(result: EnsembleVerdict) -> str:
    """A rubric item's criteria x critics: weight (and gate), the panel's consensus
    (marked when disputed or undecided), agreement, then each critic's label, tinted when
    it failed or went against the consensus, its reasoning or error on hover."""
    critics, lines = criteria_grid(result)
    rows: list[list[str]] = []
    for line in lines:
        voted = line.result
        weight = "" if line.weight is None else f"{line.weight:g}"
        if line.gate:
            weight += " " + _badge("gate", _TINTS["SKIPPED"], "failing it makes the total 0")
        if voted is None:
            consensus, agreement = "", ""
        elif voted.fallback:
            consensus = _badge(
                f"undecided (fallback {_text(voted.consensus)})", _TINTS["undecided"]
            )
            agreement = format_rate(voted.agreement_pct)
        else:
            consensus = f"<b>{_text(voted.consensus)}</b>"
            if voted.disputed:
                consensus += " " + _badge("disputed", _TINTS["dissent"])
            agreement = format_rate(voted.agreement_pct)
        cells = [_text(line.criterion), weight, consensus, agreement]
        for answer in line.answers:
            if answer is None:
                cells.append("")
            elif answer.error is not None:
                cells.append(_kind_badge(answer.kind, title=_clip(answer.error, _TITLE_CLIP)))
            else:
                dissent = (
                    voted is not None and not voted.fallback and answer.kind != voted.consensus
                )
                title = _clip(answer.reasoning, _TITLE_CLIP) if answer.reasoning else None
                cells.append(_kind_badge(answer.kind, dissent=dissent, title=title))
        rows.append(cells)
    headers = ("criterion", "weight", "consensus", "agreement", *critics)
    return _table(headers, rows, caption="criteria", right=(3,))


# -- one item -------------------------------------------------------------------------------


def _consensus_badge(result: EnsembleVerdict) -> str:
    if result.fallback:
        return _badge(
            f"no consensus (fallback {_text(result.consensus)})",
            _TINTS["undecided"],
            "no vote decided: no valid verdict, quorum not met or no unanimity",
        )
    if result.consensus == ABSTAIN and result.tier is not None:
        return _badge("abstained (for a human)", _TINTS["undecided"])
    return _badge(f"<b>{_text(result.consensus)}</b>", None)


def _item_facts(result: EnsembleVerdict) -> list[str]:
    facts = [
        f"agreement {format_rate(result.agreement_pct)}",
        f"{result.n_valid} valid",
    ]
    if result.n_errors:
        facts.append(f"{result.n_errors} failed")
    if result.calls_saved:
        facts.append(f"{result.calls_saved} saved by early stop")
    if result.score is not None and result.criteria is not None:
        mark = f" (pass at {result.rubric.threshold:.2f})" if result.rubric else ""
        facts.append(f"total {result.score:.3f}{mark}")
    elif result.score is not None:
        facts.append(f"score {result.score:.3f}")
    if result.pair_lengths is not None:
        facts.append("lengths a/b " + "/".join(str(n) for n in result.pair_lengths))
    facts.append(f"voting {_text(result.voting)}")
    facts.append(f"cost {format_cost(result.cost_usd)}")
    facts.append(f"{_seconds(result.elapsed_s)}")
    if result.usage.total_tokens:
        facts.append(f"{result.usage.prompt_tokens} / {result.usage.completion_tokens} tokens")
    return facts


@provide("ensemble_html")
def ensemble_html(result: EnsembleVerdict) -> str:
    """A panel's result on one item: its id, the consensus (marked when it is a fallback,
    no vote decided it, or a cascade abstained), agreement, valid and failed verdicts,
    score, cost, time, then one row per critic verdict, dissenters tinted. A cascade's
    result lists the critics tier by tier, with each tier's consensus and whether it
    decided or escalated; a per-item alpha is not shown (it only says whether all agreed,
    which agreement already does)."""
    head = (
        f'<div style="padding:.2em 0"><b>{_text(result.query_id)}</b> &rarr; '
        f"{_consensus_badge(result)}"
        f'<span style="{_NOTE};margin-left:.8em">{" &middot; ".join(_item_facts(result))}</span>'
        "</div>"
    )
    parts = [
        head,
        _judged(result, _CLIP, answer=not beside_reference(result)),
        structure_html(result, INLINE),
    ]
    if not any(v.error is None for v in result.verdicts) or any(
        v.written_label is not None for v in result.verdicts
    ):
        parts.append(_note(_text(result.outcome)))  # no critic answered, or a look-alike
    if result.tiers:
        headers = ("tier", *_VERDICT_HEADERS)
        rows: list[list[str]] = []
        for index, tier in enumerate(result.tiers):
            status = "escalated"
            if index == result.tier:
                status = "abstained" if result.consensus == ABSTAIN else "decided"
            label = (
                f"{index}: {_text(tier.consensus)} ({status}, {format_rate(tier.agreement_pct)})"
            )
            dissenters = set(tier.dissenters)
            rows.extend(
                [label if i == 0 else "", *_verdict_cells(v, dissent=v.critic_id in dissenters)]
                for i, v in enumerate(tier.verdicts)
            )
        parts.append(_table(headers, rows, right=[i + 1 for i in _VERDICT_RIGHT]))
    else:
        dissenters = set(result.dissenters)
        rows = [_verdict_cells(v, dissent=v.critic_id in dissenters) for v in result.verdicts]
        parts.append(_table(_VERDICT_HEADERS, rows, right=_VERDICT_RIGHT))
    if result.criteria is not None:
        parts.append(_criteria_table(result))
    for verdict in result.verdicts:
        if verdict.answers:
            parts.append(_answers_table(verdict.answers, f"answers of {verdict.critic_id}"))
    return _wrap(parts)


# -- a batch --------------------------------------------------------------------------------


def _dispute(result: EnsembleVerdict, incomplete: bool) -> str | None:
    """Why ``result`` needs a look (``None``: it does not): no consensus, a cascade's
    abstention, failed calls (``incomplete``: one worth retrying), or critics that
    disagree."""
    if result.fallback:
        return "no consensus"
    if result.consensus == ABSTAIN and result.tier is not None:
        return "abstained"
    if result.n_errors or incomplete:
        return "call failed"
    if result.agreement_pct < 1.0:
        return "disagreement"
    return None


_DISPUTE_RANK = {"no consensus": 0, "abstained": 0, "call failed": 1, "disagreement": 1}


def _overview(batch: BatchResult, disputed: int, retry: int) -> str:
    n = len(batch.verdicts)
    matrix = batch.labels_matrix()  # once, for both statistics
    alpha = reliability_alpha(matrix, "nominal")
    kappa = fleiss_kappa(matrix)
    usage = batch.usage
    rows = [
        ("items", str(n)),
        ("critics", _text(", ".join(batch.critics))),
        *(
            [("simulated critics", _text(simulated_note(batch.simulated_critics)))]
            if batch.simulated_critics
            else []
        ),
        ("voting", _text(batch.voting)),
        ("Krippendorff's alpha (nominal)", format_number(alpha)),
        ("Fleiss' kappa", format_number(kappa)),
        ("disputed items", f"{disputed} ({format_rate(disputed / n if n else None)})"),
        ("items to retry", str(retry)),
        ("tokens (prompt / completion)", f"{usage.prompt_tokens} / {usage.completion_tokens}"),
        ("cost", format_cost(batch.cost_usd)),
    ]
    if batch.elapsed_s:
        rate = n / batch.elapsed_s
        rows.append(("wall time", f"{batch.elapsed_s:.2f} s ({rate:.1f} items/s)"))
    return _table(("batch", ""), rows, right=(1,))


def _critics_table(
    stats: dict[str, CriticStats], simulated: Sequence[str] = (), people: Sequence[str] = ()
) -> str:
    rows = []
    for s in stats.values():
        mark = f" {_badge('simulated', _TINTS['SKIPPED'])}" if s.critic in simulated else ""
        if s.critic in people:
            mark += f" {_badge('person', _TINTS['SKIPPED'])}"
        failures = ", ".join(f"{_text(k)} {n}" for k, n in s.error_kinds.items())
        message = ""
        if s.error_messages:
            kind, text = next(iter(s.error_messages.items()))
            message = f"<b>{_text(kind)}</b> {expandable(_without_kind(kind, text), 80)}"
        rows.append(
            [
                _text(s.critic) + mark,
                str(s.valid),
                str(s.errors),
                str(s.parse_failures),
                str(s.skipped),
                format_rate(s.error_rate),
                format_rate(s.agreement),
                _seconds(s.mean_elapsed_s),
                format_cost(s.cost_usd),
                failures,
                message,
            ]
        )
    headers = (
        "critic",
        "valid",
        "errors",
        "parse fails",
        "skipped",
        "error rate",
        "agrees",
        "mean latency",
        "cost",
        "failures",
        "most common message",
    )
    return _table(headers, rows, caption="critics", right=range(1, 9))


def _tiers_table(tiers: list[TierStats]) -> str:
    rows = [
        [
            str(t.tier),
            _text(", ".join(t.critics)),
            str(t.asked),
            str(t.decided),
            str(t.abstained),
            format_rate(t.share_decided),
            format_rate(t.agreement),
            format_cost(t.cost_usd),
        ]
        for t in tiers
    ]
    headers = ("tier", "critics", "asked", "decided", "abstained", "share decided", "agreement")
    return _table((*headers, "cost"), rows, caption="tiers", right=range(2, 8))


def _batch_criteria_table(rows: list[CriterionRow], critics: Sequence[str]) -> str:
    """Per criterion of a rubric batch: weight, items decided, disputed, alpha, then each
    critic's agreement with the consensus on it."""
    body = [
        [
            _text(row.criterion),
            ("" if row.weight is None else f"{row.weight:g}") + (" gate" if row.gate else ""),
            str(row.n_items),
            f"{row.n_disputed} ({format_rate(row.disputed_share)})",
            format_number(row.alpha),
            *(format_rate(row.agreement.get(name)) for name in critics),
        ]
        for row in rows
    ]
    level = rows[0].level if rows else "nominal"
    headers = ("criterion", "weight", "items", "disputed", f"alpha ({level})", *critics)
    return _table(headers, body, caption="criteria", right=range(2, 5 + len(critics)))


def _consensus_table(batch: BatchResult, abstained: int) -> str:
    n = len(batch.verdicts)
    rows: list[list[str]] = []
    for label, count in batch.consensus_counts().items():
        if label == ABSTAIN and abstained:
            count -= abstained
            if not count:
                continue
        rows.append([_text(label), str(count), format_rate(count / n)])
    fallbacks = Counter(r.consensus for r in batch.verdicts if r.fallback)
    for label, count in fallbacks.most_common():
        name = _badge(f"no consensus (fallback {_text(label)})", _TINTS["undecided"])
        rows.append([name, str(count), format_rate(count / n)])
    if abstained:
        name = _badge("abstained (for a human)", _TINTS["undecided"])
        rows.append([name, str(abstained), format_rate(abstained / n)])
    return _table(("label", "items", "share"), rows, caption="consensus", right=(1, 2))


def _critic_cell(verdict: Verdict | None, consensus: str) -> str:
    if verdict is None:
        return ""
    if verdict.error is not None:
        return _kind_badge(verdict.kind, title=_clip(verdict.error, _TITLE_CLIP))
    title = _clip(verdict.reasoning, _TITLE_CLIP) if verdict.reasoning else None
    badge = _kind_badge(verdict.kind, dissent=verdict.kind != consensus, title=title)
    return f'{badge} <span style="opacity:.75">{verdict.confidence:.2f}</span>'


def _items_table(
    batch: BatchResult, rows: list[tuple[int, str | None]], cascade: bool, total: int
) -> str:
    critics = batch.critics
    headers = ["#", "id", "consensus", "agreement", "why"]
    if cascade:
        headers.append("tier")
    headers.extend(critics)
    body: list[list[str]] = []
    for index, why in rows:
        result = batch.verdicts[index]
        # A cascade's critic is measured against its own tier's consensus.
        consensus_of: dict[str, str] = {}
        by_critic: dict[str, Verdict] = {}
        for part in result.tiers or (result,):
            for verdict in part.verdicts:
                by_critic.setdefault(verdict.critic_id, verdict)
                consensus_of.setdefault(verdict.critic_id, part.consensus)
        cells = [
            str(index),
            _text(result.query_id) + _judged(result, 80) + _structure_line(result),
            _consensus_badge(result),
            format_rate(result.agreement_pct),
            _text(why or ""),
        ]
        if cascade:
            cells.append("" if result.tier is None else str(result.tier))
        cells.extend(
            _critic_cell(by_critic.get(name), consensus_of.get(name, result.consensus))
            for name in critics
        )
        body.append(cells)
    caption = f"items: {total} disputed first" if total else "items"
    table = _table(headers, body, caption=caption, right=(0, 3))
    shown = len(rows)
    notes = [
        "Disputed: no consensus or abstained first, then failed calls and disagreement, "
        "lowest agreement first. Hover a label for the reasoning or the error. Tints: "
        + ", ".join(
            _badge(_text(name), _TINTS[key])
            for name, key in (
                ("error", "ERROR"),
                ("parse fail", "PARSE_FAIL"),
                ("skipped", "SKIPPED"),
                ("against the consensus", "dissent"),
                ("undecided", "undecided"),
            )
        )
        + "."
    ]
    n = len(batch.verdicts)
    if shown < n:
        notes.append(
            f"Showing {shown} of {n} items ({n - shown} more); "
            "<code>batch.to_pandas()</code> or <code>batch.to_polars()</code> has them all."
        )
    return table + "".join(_note(text) for text in notes)


@provide("batch_html")
def batch_html(batch: BatchResult, *, max_rows: int = MAX_ROWS) -> str:
    """A batch at a glance: the headline (items, critics, voting, Krippendorff's alpha and
    Fleiss' kappa over the labels, disputed items, items to retry, tokens, cost, wall time),
    one row per critic (:meth:`~cross_judge.batch.BatchResult.critic_stats`), the tiers of
    a cascade, the consensus counts (fallbacks and abstentions on rows of their own), then
    up to ``max_rows`` items: the disputed ones first (no consensus or abstained, then a
    failed call or disagreement, lowest agreement first; input order breaks ties), then
    the others in input order, with a note of how many are not shown.

    Each statistic is computed once: the labels matrix serves alpha and kappa; choosing the
    rows is one pass plus a heap of ``max_rows``. The per-critic table is the costliest
    part of a large batch (``critic_stats()``).
    """
    stats = batch.critic_stats()
    tiers = batch.tier_stats()
    cascade = bool(tiers)
    abstained = sum(
        1 for r in batch.verdicts if r.consensus == ABSTAIN and r.tier is not None and cascade
    )
    disputes: list[tuple[int, float, int, str]] = []
    calm: list[int] = []
    retry = 0
    for index, result in enumerate(batch.verdicts):
        incomplete = is_incomplete(result)  # what batch.failed_items counts
        retry += incomplete
        why = _dispute(result, incomplete)
        if why is None:
            if len(calm) < max_rows:
                calm.append(index)
        else:
            disputes.append((_DISPUTE_RANK[why], result.agreement_pct, index, why))
    chosen = heapq.nsmallest(max_rows, disputes)
    rows: list[tuple[int, str | None]] = [(index, why) for _, _, index, why in chosen]
    rows.extend((index, None) for index in calm[: max_rows - len(rows)])
    parts = [
        _overview(batch, len(disputes), retry),
        _critics_table(stats, batch.simulated_critics, batch.human_critics),
    ]
    if tiers:
        parts.append(_tiers_table(tiers))
    criteria = CriteriaDigest(batch.critics)
    for result in batch.verdicts:
        criteria.add(result)
    if len(criteria):
        parts.append(_batch_criteria_table(criteria.rows(), batch.critics))
    if batch.verdicts:
        parts.append(_consensus_table(batch, abstained))
        parts.append(_items_table(batch, rows, cascade, len(disputes)))
    return _wrap(parts)
