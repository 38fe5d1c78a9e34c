"""A :class:`~cross_judge.report.RunDiff` as plain text (``print(diff)``, ``cross-judge
compare``) and as GitHub-flavoured Markdown for a pull-request comment
(``--format markdown``).

Both start with one headline (REGRESSION, IMPROVEMENT, CHANGE or NO SIGNIFICANT CHANGE and
the main figure), then what was paired, whether the judge was the same, the A/A noise, and
one table per family (labels, critics, criteria, ratings), then the flipped items each way.
Every text a results file brings (ids, labels, critic and criterion names, item texts) is
shown through :func:`~cross_judge.report._summary.printable` (lone surrogates and
bidirectional controls escaped) and, in Markdown, escaped so that it can neither break a
table nor inject HTML.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from .._extensions import provide
from ..stats import Difference, Flip, RunDiff
from ._summary import printable

__all__ = [
    "COLUMNS",
    "FLIPS_SHOWN",
    "cells",
    "context_lines",
    "diff_markdown",
    "diff_text",
    "families",
    "headline",
    "status",
]

FLIPS_SHOWN = 10
"""The flipped items each way the text and Markdown forms list (the HTML page shows all
those whose texts were kept)."""

_MARKDOWN_TEXT = 300
"""The characters of an item's text a Markdown flip shows from each run."""


def status(diff: RunDiff) -> str:
    """``REGRESSION``, ``IMPROVEMENT``, ``CHANGE`` (a significant change with no
    direction: a ranking's ratings, or criteria moving both ways) or
    ``NO SIGNIFICANT CHANGE``."""
    if diff.regressed:
        return "REGRESSION"
    if diff.changes:
        rows = [diff.main, *diff.criteria]
        better = [row for row in diff.changes if row in rows]
        return "IMPROVEMENT" if better and len(better) == len(diff.changes) else "CHANGE"
    return "NO SIGNIFICANT CHANGE"


def _number(value: float | None, *, share: bool) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if share else f"{value:.4g}"


def _signed(value: float | None, *, share: bool) -> str:
    if value is None:
        return "n/a"
    if share:
        return f"{value * 100:+.1f} points"
    return f"{value:+.4g}"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _interval(row: Difference, *, share: bool) -> str:
    if row.interval is None:
        return "n/a"
    low, high = row.interval
    if share:
        return f"{low * 100:+.1f} to {high * 100:+.1f}"
    return f"{low:+.4g} to {high:+.4g}"


def _is_share(diff: RunDiff) -> bool:
    return diff.metric in ("label_share", "accuracy")


def headline(diff: RunDiff) -> str:
    """The first line: the status and the main figure with its interval and test."""
    main = diff.main
    share = _is_share(diff) or diff.metric == "rating"
    name = printable(main.name)
    figure = (
        f"{name} {_number(main.baseline, share=share)} -> {_number(main.candidate, share=share)}"
        f" ({_signed(main.difference, share=share)}, {diff.confidence:.0%} CI "
        f"{_interval(main, share=share)}, {main.test} p = {_p(main.p_value)}, n = {main.n})"
    )
    return f"{status(diff)}: {figure}"


def context_lines(diff: RunDiff) -> list[str]:
    """The lines after the headline: pairing, the judge, noise, the gate, notes."""
    lines = [
        f"baseline {printable(diff.baseline_name)}, candidate {printable(diff.candidate_name)}: "
        f"{diff.n_paired} items paired"
        + (
            f" ({len(diff.baseline_only)} only in the baseline, "
            f"{len(diff.candidate_only)} only in the candidate, not compared)"
            if diff.baseline_only or diff.candidate_only
            else ""
        )
    ]
    if diff.panel_changes:
        lines.append(
            "the judge CHANGED between the runs (compared anyway, as asked): "
            + "; ".join(printable(change) for change in diff.panel_changes)
        )
    elif diff.manifests_compared:
        lines.append("the same judge: manifests and verdicts compared")
    else:
        lines.append("the same judge by what the results record (no manifest compared)")
    if diff.noise is not None:
        noise = diff.noise
        moved = noise.better + noise.worse
        lines.append(
            f"judge noise (A/A): {moved} of {noise.n} items changed when judged again, "
            f"difference {_signed(noise.difference, share=_is_share(diff))}, "
            f"p = {_p(noise.p_value)}"
        )
    if diff.main.mde is not None:
        lines.append(
            f"minimum detectable effect (power 0.8, alpha {diff.alpha:g}): "
            f"{_signed(diff.main.mde, share=_is_share(diff)).lstrip('+')}"
        )
    gate = f"gate: alpha {diff.alpha:g}, minimum effect {diff.min_effect:g}"
    if not diff.higher_is_better:
        gate += ", lower is better"
    lines.append(gate)
    lines += [f"note: {printable(note)}" for note in diff.notes]
    return lines


def families(diff: RunDiff) -> list[tuple[str, list[Difference], bool]]:
    share = _is_share(diff)
    binary_criteria = all(row.test == "exact McNemar" for row in diff.criteria)
    return [
        (title, rows, family_share)
        for title, rows, family_share in (
            ("labels", diff.labels, True),
            ("critics", diff.critics, share),
            ("criteria", diff.criteria, binary_criteria),
            ("ratings", diff.ratings, False),
        )
        if rows
    ]


COLUMNS = ("", "n", "baseline", "candidate", "difference", "CI", "p", "Holm p")


def cells(row: Difference, share: bool) -> list[str]:
    return [
        printable(row.name),
        str(row.n),
        _number(row.baseline, share=share),
        _number(row.candidate, share=share),
        _signed(row.difference, share=share),
        _interval(row, share=share),
        _p(row.p_value),
        _p(row.p_adjusted),
    ]


def _flips_each_way(flips: Sequence[Flip]) -> Iterable[tuple[str, list[Flip]]]:
    for direction in ("worse", "better"):
        chosen = [flip for flip in flips if flip.direction == direction]
        if chosen:
            yield direction, chosen


@provide("diff_text")
def diff_text(diff: RunDiff) -> str:
    """The comparison as plain text: the headline, the context lines, a table per family,
    the first :data:`FLIPS_SHOWN` flips each way."""
    lines = [headline(diff), *context_lines(diff)]
    for title, rows, share in families(diff):
        table = [list(COLUMNS)] + [cells(row, share) for row in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
        lines += ["", f"{title}:"]
        for row in table:
            lines.append(
                "  "
                + "  ".join(
                    cell.ljust(width) if i == 0 else cell.rjust(width)
                    for i, (cell, width) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
            )
    for direction, flips in _flips_each_way(diff.flips):
        lines += ["", f"{len(flips)} items {direction}:"]
        for flip in flips[:FLIPS_SHOWN]:
            lines.append(
                f"  {printable(flip.id)}: {printable(flip.baseline)} -> {printable(flip.candidate)}"
            )
        if len(flips) > FLIPS_SHOWN:
            lines.append(f"  ... {len(flips) - FLIPS_SHOWN} more")
    return "\n".join(lines)


def _md(text: str) -> str:
    """``text`` safe in a Markdown table cell or line: Markdown's punctuation (``\\``,
    backticks, ``*``, ``_``, ``[``, ``]``, ``|``, ``#``, ``~``) backslash-escaped, then
    ``&``, ``<`` and ``>`` as HTML entities (no tag, no comment, no entity of the text's
    own survives), newlines and runs of spaces as one space."""
    escaped = printable(text)
    for char in "\\`*_[]|#~":
        escaped = escaped.replace(char, "\\" + char)
    return " ".join(html.escape(escaped, quote=False).split())


def _md_text(text: str | None) -> str:
    if text is None:
        return "_(no text recorded)_"
    cut = text if len(text) <= _MARKDOWN_TEXT else text[:_MARKDOWN_TEXT] + "…"
    return _md(cut)


@provide("diff_markdown")
def diff_markdown(diff: RunDiff) -> str:
    """The comparison as GitHub-flavoured Markdown for a pull-request comment: a heading
    with the status, the context as a list, a table per family, the flipped items in
    ``<details>`` blocks with both runs' texts (cut to 300 characters). Every text a
    results file brings is escaped."""
    head = headline(diff)
    word, _, rest = head.partition(": ")
    lines = [f"### cross-judge compare: {word}", "", _md(rest), ""]
    lines += [f"- {_md(line)}" for line in context_lines(diff)]
    for title, rows, share in families(diff):
        lines += ["", f"**{title}**", ""]
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("|" + "---|" + "---:|" * (len(COLUMNS) - 1))
        for row in rows:
            lines.append("| " + " | ".join(_md(cell) for cell in cells(row, share)) + " |")
    for direction, flips in _flips_each_way(diff.flips):
        lines += ["", f"<details><summary>{len(flips)} items {direction}</summary>", ""]
        lines.append("| item | baseline | candidate | baseline text | candidate text |")
        lines.append("|---|---|---|---|---|")
        for flip in flips[:FLIPS_SHOWN]:
            lines.append(
                f"| {_md(flip.id)} | {_md(flip.baseline)} | {_md(flip.candidate)} | "
                f"{_md_text(flip.baseline_text)} | {_md_text(flip.candidate_text)} |"
            )
        if len(flips) > FLIPS_SHOWN:
            lines += ["", f"... {len(flips) - FLIPS_SHOWN} more"]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
