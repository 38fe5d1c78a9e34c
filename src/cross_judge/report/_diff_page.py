"""A :class:`~cross_judge.report.RunDiff` as HTML.

* :func:`diff_page`: one self-contained page (``diff.write_html(path)``,
  ``cross-judge compare --html``): the headline, what was compared, a table per family
  and the flipped items side by side (the baseline's text, label and votes beside the
  candidate's), worse first, with a filter (worse, better, all) made of radio buttons and
  CSS alone. No script at all, and a Content-Security-Policy that forbids every fetch, so
  it opens from disk offline.
* :func:`diff_fragment`: what ``RunDiff._repr_html_`` shows in a notebook: the same
  figures and the first :data:`FRAGMENT_FLIPS` flips each way, inline styles only.

Every text a results file brings (ids, labels, votes, item texts, critic and criterion
names, notes) is escaped: the items are untrusted. Nothing is computed here but layout.
"""

from __future__ import annotations

from .._extensions import provide
from .._version import __version__
from ..stats import Flip, RunDiff
from ._diff_text import COLUMNS, cells, context_lines, families, headline, status
from ._html import html_text, page_open
from ._summary import printable

__all__ = ["FRAGMENT_FLIPS", "diff_fragment", "diff_page"]

FRAGMENT_FLIPS = 20
"""The flipped items each way the notebook view shows."""


_STATUS_COLOUR = {
    "REGRESSION": "#b91c1c",
    "IMPROVEMENT": "#047857",
    "CHANGE": "#b45309",
    "NO SIGNIFICANT CHANGE": "#374151",
}

_RULES = (
    "table{border-collapse:collapse;margin:.3em 0 1em 0;font-size:.9em}",
    "td,th{padding:.15em .6em;border-bottom:1px solid rgba(128,128,128,.3);text-align:right}",
    "td:first-child,th:first-child{text-align:left}",
    "th{font-weight:600;border-bottom:1px solid rgba(128,128,128,.6)}",
    ".note{opacity:.8;font-size:.9em;margin:.15em 0}",
    ".flip{display:grid;grid-template-columns:1fr 1fr;gap:.8em;margin:.6em 0;padding:.5em;"
    "border:1px solid rgba(128,128,128,.35);border-radius:4px}",
    ".flip h3{grid-column:1/3;margin:0;font-size:1em}",
    ".side{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.9em}",
    ".label{font-weight:600}",
    ".worse h3{color:#b91c1c}",
    ".better h3{color:#047857}",
    ".votes{opacity:.75;font-size:.85em}",
)
"""The rules both forms share; the notebook view scopes each to its own ``div``."""

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#1f2937}"
    + "".join(_RULES)
    + "#show-worse:checked~.flips .better{display:none}"
    + "#show-better:checked~.flips .worse{display:none}"
)

_FRAGMENT_CSS = "".join(
    ",".join(f".cross-judge-diff {selector}" for selector in rule.split("{", 1)[0].split(","))
    + "{"
    + rule.split("{", 1)[1]
    for rule in _RULES
)


def _tables(diff: RunDiff) -> str:
    parts = []
    for title, rows, share in families(diff):
        head = "".join(f"<th>{html_text(column)}</th>" for column in COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html_text(cell)}</td>" for cell in cells(row, share)) + "</tr>"
            for row in rows
        )
        parts.append(f"<h2>{html_text(title)}</h2><table><tr>{head}</tr>{body}</table>")
    return "".join(parts)


def _votes(votes: dict[str, str]) -> str:
    shown = ", ".join(f"{html_text(name)}: {html_text(kind)}" for name, kind in votes.items())
    return f'<div class="votes">{shown or "no votes"}</div>'


def _side(label: str, text: str | None, votes: dict[str, str], run: str) -> str:
    body = "<em>no text recorded</em>" if text is None else html_text(text)
    return (
        f'<div class="side"><div class="label">{html_text(run)}: {html_text(label)}</div>'
        f"{_votes(votes)}<div>{body}</div></div>"
    )


def _flip(flip: Flip) -> str:
    return (
        f'<div class="flip {flip.direction}"><h3>{html_text(flip.id)} ({flip.direction})</h3>'
        + _side(flip.baseline, flip.baseline_text, flip.baseline_votes, "baseline")
        + _side(flip.candidate, flip.candidate_text, flip.candidate_votes, "candidate")
        + "</div>"
    )


def _head(diff: RunDiff) -> str:
    word = status(diff)
    colour = _STATUS_COLOUR.get(word, "#374151")
    lines = "".join(f'<p class="note">{html_text(line)}</p>' for line in context_lines(diff))
    style = f"font-size:1.1em;color:{colour};font-weight:600"
    return f'<p style="{style}">{html_text(headline(diff))}</p>{lines}'


@provide("diff_page")
def diff_page(diff: RunDiff) -> str:
    """The comparison as one self-contained HTML page (no script, no external resource)."""
    worse = sum(1 for flip in diff.flips if flip.direction == "worse")
    better = len(diff.flips) - worse
    title = f"cross-judge compare: {status(diff)}"
    filters = (
        '<input type="radio" name="show" id="show-all" checked>'
        f'<label for="show-all"> all ({len(diff.flips)})</label> '
        '<input type="radio" name="show" id="show-worse">'
        f'<label for="show-worse"> worse ({worse})</label> '
        '<input type="radio" name="show" id="show-better">'
        f'<label for="show-better"> better ({better})</label>'
    )
    flips = "".join(_flip(flip) for flip in diff.flips)
    return printable(
        page_open(title, _CSS)
        + f"<h1>{html_text(title)}</h1>"
        + _head(diff)
        + _tables(diff)
        + f"<h2>flipped items ({len(diff.flips)})</h2>"
        + filters
        + f'<div class="flips">{flips or "<p>No item changed.</p>"}</div>'
        + f'<p class="note">Made by cross-judge {html_text(__version__)}.</p></body></html>\n'
    )


@provide("diff_fragment")
def diff_fragment(diff: RunDiff) -> str:
    """The comparison as a notebook fragment: the figures and the first
    :data:`FRAGMENT_FLIPS` flips each way (inline styles, no script)."""
    shown = [
        flip
        for direction in ("worse", "better")
        for flip in [f for f in diff.flips if f.direction == direction][:FRAGMENT_FLIPS]
    ]
    flips = "".join(_flip(flip) for flip in shown)
    more = len(diff.flips) - len(shown)
    tail = f'<p class="note">... {more} more flipped items</p>' if more else ""
    return printable(
        f'<div class="cross-judge-diff"><style>{_FRAGMENT_CSS}</style>'
        + _head(diff)
        + _tables(diff)
        + flips
        + tail
        + "</div>"
    )
