"""A :class:`~cross_judge.ranking.Ranking` as HTML: the leaderboard with interval bars, each
critic's agreement with it, and the win matrix.

Two forms of the same markup:

* :func:`leaderboard_html`: a fragment, what ``Ranking._repr_html_`` shows in a notebook
  (inline styles only, translucent tints that read in light and dark themes);
* :func:`render_leaderboard` / :func:`write_leaderboard`: one self-contained page
  (``Ranking.to_html(path)``, ``cross-judge rank --html``): no script at all, and a
  Content-Security-Policy that forbids every fetch, so it opens from disk offline.

Above the leaderboard: when the judges were simulated, a note saying so (the ranking's
``simulated_critics``, recorded by ``cross-judge rank``); the question, or the questions;
the counts, with the calls of every run of the ranking (``calls_total``) and of the last.
The leaderboard lists every candidate, best first: rank, id, its answer (or answers, one
per question; the first :data:`TEXT_CLIP` characters, the whole behind a ``<details>``),
rating, the interval as numbers and as a bar on one shared axis (the dot is the rating),
and the decided pairs it won, lost and tied. A ranking that did not record the candidates'
texts (written before they were) shows those its judged pairs hold. The win matrix (row's
wins over column; a tie counts half to each; blank where a pair was never compared) is
drawn for up to :data:`MATRIX_LIMIT` candidates, the first ones of the order beyond that.
Every id, text and critic name is escaped: candidates are untrusted. Nothing is computed
here but layout: every number is the ranking's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .._extensions import provide
from .._version import __version__
from ..errors import ConfigError
from ..ranking import META_KEY
from ._html import html_text, page_open
from ._notebook import expandable
from ._summary import printable, simulated_note

if TYPE_CHECKING:
    from ..ranking import Ranking

__all__ = [
    "MATRIX_LIMIT",
    "TEXT_CLIP",
    "leaderboard_html",
    "render_leaderboard",
    "write_leaderboard",
]

MATRIX_LIMIT = 30
"""Candidates the win matrix shows at most (the first of the order); a larger matrix is
unreadable and its size grows with the square."""

TEXT_CLIP = 160
"""Characters of a candidate's answer (or a question) shown before its ``<details>``."""

_TABLE = "border-collapse:collapse;margin:.2em 0 .8em 0;font-size:.9em;color:inherit"
_CELL = "padding:.15em .6em;border-bottom:1px solid rgba(128,128,128,.3);vertical-align:middle"
_NUM = _CELL + ";text-align:right;font-variant-numeric:tabular-nums"
_HEAD = _CELL + ";font-weight:600;border-bottom:1px solid rgba(128,128,128,.6)"
_CAPTION = "caption-side:top;text-align:left;font-weight:600;padding:.2em 0"
_NOTE = "opacity:.75;font-size:.85em;margin:.1em 0 .6em 0"
_BAR_WIDTH = 220  # px of the interval axis
_QUESTIONS_OPEN = 10  # up to this many questions are listed open; more, behind a click


def _number(value: float, digits: int = 0) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "n/a"


def _axis(ranking: Ranking) -> tuple[float, float]:
    """The interval bars' shared axis: the finite bounds and ratings, padded a little."""
    values = [
        v
        for cid in ranking.order
        for v in (*ranking.ci[cid], ranking.ratings[cid])
        if math.isfinite(v)
    ]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    pad = (high - low) * 0.03 or 1.0
    return low - pad, high + pad


def _bar(low: float, rating: float, high: float, axis: tuple[float, float]) -> str:
    """An interval as a bar with a dot at the rating, on ``axis``; unbounded ends run to
    the axis' edge."""
    start, end = axis

    def at(value: float, default: float) -> float:
        if not math.isfinite(value):
            return default
        return max(0.0, min(100.0, (value - start) / (end - start) * 100.0))

    left, right, dot = at(low, 0.0), at(high, 100.0), at(rating, 50.0)
    return (
        f'<div style="position:relative;width:{_BAR_WIDTH}px;height:.9em">'
        '<div style="position:absolute;top:.4em;left:0;right:0;height:1px;'
        'background:rgba(128,128,128,.35)"></div>'
        f'<div style="position:absolute;top:.25em;height:.4em;left:{left:.2f}%;'
        f"width:{max(right - left, 0.5):.2f}%;background:rgba(59,130,246,.45);"
        'border-radius:2px"></div>'
        f'<div style="position:absolute;top:.15em;left:calc({dot:.2f}% - .3em);width:.6em;'
        'height:.6em;border-radius:50%;background:rgba(37,99,235,.95)"></div></div>'
    )


def _summary(ranking: Ranking) -> str:
    n = len(ranking.order)
    calls = f"{ranking.calls_total} calls"
    if ranking.calls != ranking.calls_total:
        calls += f" ({ranking.calls} by its last run; the rest by the runs it resumed)"
    parts = [
        f"{n} candidates",
        f"{ranking.comparisons} decided pairs ({ranking.ties} ties)",
        f"{ranking.undecided} undecided",
        calls,
        f"{ranking.level:.0%} intervals ({html_text(ranking.ci_method)})",
        _fit_words(ranking),
    ]
    if ranking.tie > 0:
        parts.append(f"Davidson tie parameter {ranking.tie:.3f}")
    if ranking.prior > 0:
        parts.append(
            f"fitted with prior weight {ranking.prior:g} (the maximum-likelihood fit does "
            "not exist: a candidate only won or only lost, or the pairs are not connected)"
        )
    if not ranking.converged:
        parts.append(f"the fit did not converge in {ranking.iterations} iterations")
    return f'<p style="{_NOTE}">' + "; ".join(parts) + "</p>"


def _simulated(ranking: Ranking) -> str:
    """The note that the judges were simulated, first and plain to see."""
    if not ranking.simulated_critics:
        return ""
    return (
        '<p role="note" style="margin:.2em 0 .8em 0;padding:.4em .6em;border-radius:.3em;'
        'background:rgba(234,179,8,.18);border-left:3px solid rgba(202,138,4,.9)">'
        f"<strong>Simulated judges.</strong> {html_text(simulated_note(ranking.simulated_critics))}"
        ".</p>"
    )


def texts_of(ranking: Ranking) -> tuple[list[str], dict[str, list[str | None]]]:
    """The ranking's questions and each candidate's answer per question (aligned; ``None``
    where it gave none): as the ranking recorded them, else read from its judged pairs'
    stored items (a candidate never judged then has none)."""
    if ranking.queries:
        return list(ranking.queries), dict(ranking.answers)
    questions: dict[int, str] = {}
    found: dict[str, dict[int, str]] = {}
    for result in ranking.results:
        tag, item = result.meta.get(META_KEY), result.item
        if not isinstance(tag, Mapping) or item is None:
            continue
        where = tag.get("query")
        k = where if isinstance(where, int) and not isinstance(where, bool) else 0
        questions.setdefault(k, item.query)
        context = item.context or {}
        for side, field in (("a", "response_a"), ("b", "response_b")):
            text = context.get(field)
            if isinstance(text, str) and side in tag:
                found.setdefault(str(tag[side]), {}).setdefault(k, text)
    keys = sorted(questions)
    return [questions[k] for k in keys], {
        cid: [answers.get(k) for k in keys] for cid, answers in found.items()
    }


def _questions(questions: list[str]) -> str:
    if not questions:
        return ""
    if len(questions) == 1:
        return (
            f'<div style="margin:.2em 0 .6em 0"><strong>Question.</strong> '
            f"{expandable(questions[0], 4 * TEXT_CLIP)}</div>"
        )
    listed = "".join(
        f'<li style="margin:.1em 0">{expandable(q, TEXT_CLIP)}</li>' for q in questions
    )
    shown = " open" if len(questions) <= _QUESTIONS_OPEN else ""
    return (
        f'<details{shown} style="margin:.2em 0 .6em 0"><summary><strong>{len(questions)} '
        "questions</strong> (each pair was judged on every question both answered; "
        "Q1, Q2, ... below)</summary>"
        f'<ol style="margin:.2em 0">{listed}</ol></details>'
    )


def _answer_cell(answers: list[str | None] | None, many: bool) -> str:
    """A candidate's answer, or its answers (one per question) behind a ``<details>``."""
    if not answers or all(a is None for a in answers):
        return '<span style="opacity:.6">(no text recorded)</span>'
    if not many:
        return expandable(answers[0] or "", TEXT_CLIP)
    given = [(k, a) for k, a in enumerate(answers) if a is not None]
    items = "".join(
        f'<div style="margin:.15em 0"><strong>Q{k + 1}.</strong> {expandable(a, TEXT_CLIP)}</div>'
        for k, a in given
    )
    return (
        f"<details><summary>{len(given)} of {len(answers)} questions answered</summary>"
        f"{items}</details>"
    )


def _records(ranking: Ranking, answers: dict[str, list[str | None]], many: bool) -> str:
    axis = _axis(ranking)
    head = "".join(
        f'<th style="{_HEAD}" scope="col">{h}</th>'
        for h in (
            "rank",
            "id",
            "answers" if many else "answer",
            "rating",
            "interval",
            "",
            "won",
            "lost",
            "tied",
        )
    )
    rows = []
    for row in ranking.to_records():
        rows.append(
            "<tr>"
            f'<td style="{_NUM}">{row["rank"]}</td>'
            f'<td style="{_CELL}"><code>{html_text(row["id"])}</code></td>'
            f'<td style="{_CELL};max-width:32em">{_answer_cell(answers.get(row["id"]), many)}</td>'
            f'<td style="{_NUM}">{_number(row["rating"])}</td>'
            f'<td style="{_NUM}">{_number(row["low"])} to {_number(row["high"])}</td>'
            f'<td style="{_CELL}">{_bar(row["low"], row["rating"], row["high"], axis)}</td>'
            f'<td style="{_NUM}">{row["wins"]}</td>'
            f'<td style="{_NUM}">{row["losses"]}</td>'
            f'<td style="{_NUM}">{row["ties"]}</td>'
            "</tr>"
        )
    return (
        f'<table style="{_TABLE}"><caption style="{_CAPTION}">Leaderboard</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _fit_words(ranking: Ranking) -> str:
    """How the ratings were fitted, in words."""
    if ranking.fit == "votes":
        weighted = ", weighted by critic" if ranking.weights else ""
        return (
            f"fitted vote by vote ({ranking.votes} votes{weighted}, each critic's lean to "
            "the candidate shown first a parameter)"
        )
    return "fitted on one consensus per pair"


def _lean(ranking: Ranking, critic: str) -> str:
    value = ranking.first_shown.get(critic)
    return "n/a" if value is None else f"{value:+.2f}"


def _critics(ranking: Ranking) -> str:
    if not ranking.per_critic:
        return ""
    simulated = set(ranking.simulated_critics)
    votes = ranking.fit == "votes"

    def mark(critic: str) -> str:
        return ' <span style="opacity:.7">(simulated)</span>' if critic in simulated else ""

    rows = []
    for critic, ratings in ranking.per_critic.items():
        rho = ranking.per_critic_spearman.get(critic)
        top = max(ratings, key=lambda c: ratings[c])
        rows.append(
            "<tr>"
            f'<td style="{_CELL}">{html_text(critic)}{mark(critic)}</td>'
            f'<td style="{_NUM}">{len(ratings)}</td>'
            f'<td style="{_NUM}">{"n/a" if rho is None else f"{rho:.3f}"}</td>'
            f'<td style="{_CELL}"><code>{html_text(top)}</code></td>'
            + (f'<td style="{_NUM}">{_lean(ranking, critic)}</td>' if votes else "")
            + "</tr>"
        )
    headings = ["critic", "candidates rated", "Spearman with the panel", "its best"]
    if votes:
        headings.append("lean to the first shown (log-odds)")
    head = "".join(f'<th style="{_HEAD}" scope="col">{h}</th>' for h in headings)
    return (
        f'<table style="{_TABLE}"><caption style="{_CAPTION}">Each critic alone</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _matrix(ranking: Ranking) -> str:
    shown = ranking.order[:MATRIX_LIMIT]
    note = (
        f'<p style="{_NOTE}">The first {MATRIX_LIMIT} of {len(ranking.order)} candidates.</p>'
        if len(ranking.order) > MATRIX_LIMIT
        else ""
    )
    head = f'<th style="{_HEAD}" scope="col">wins of \\ over</th>' + "".join(
        f'<th style="{_HEAD}" scope="col" title="{html_text(c)}"><code>{html_text(c)}</code></th>'
        for c in shown
    )
    rows = []
    for row in shown:
        cells = [
            f'<th style="{_CELL};text-align:left" scope="row"><code>{html_text(row)}</code></th>'
        ]
        for col in shown:
            if row == col:
                cells.append(f'<td style="{_NUM};opacity:.4">&middot;</td>')
                continue
            won = ranking.win_matrix.get(row, {}).get(col)
            if won is None:
                cells.append(f'<td style="{_NUM}"></td>')
                continue
            lost = ranking.win_matrix.get(col, {}).get(row, 0.0)
            share = won / (won + lost) if won + lost > 0 else 0.5
            # Green when the row wins more, red when it loses more; the tint's strength is
            # how lopsided the pair is.
            tint = (
                f"rgba(34,197,94,{abs(share - 0.5) * 0.9:.2f})"
                if share >= 0.5
                else f"rgba(239,68,68,{abs(share - 0.5) * 0.9:.2f})"
            )
            cells.append(
                f'<td style="{_NUM};background:{tint}" title="{won:g} of {won + lost:g}">'
                f"{won:g}</td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table style="{_TABLE}"><caption style="{_CAPTION}">Win matrix (row\'s wins over '
        "column; a tie counts half to each; blank: never compared)</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"
    )


@provide("ranking_html")
def leaderboard_html(ranking: Ranking) -> str:
    """The ranking as an HTML fragment (``Ranking._repr_html_``): the simulated-judges
    note (when they were), the question(s), a summary line, the leaderboard with each
    candidate's answer and interval bars, each critic's Spearman correlation with the
    panel's ratings (when critics' verdicts are recorded), and the win matrix."""
    questions, answers = texts_of(ranking)
    return printable(
        '<div style="color:inherit">'
        + _simulated(ranking)
        + _questions(questions)
        + _summary(ranking)
        + _records(ranking, answers, len(questions) > 1)
        + _critics(ranking)
        + _matrix(ranking)
        + "</div>"
    )


def render_leaderboard(ranking: Ranking, *, title: str | None = None) -> str:
    """The ranking as one self-contained HTML page (no script, no external resource; its
    Content-Security-Policy forbids every fetch)."""
    heading = title or f"cross-judge ranking of {len(ranking.order)} candidates"
    return printable(
        page_open(
            heading,
            "body{font-family:system-ui,sans-serif;margin:1.5em;color:#1f2937}"
            "code{font-size:.95em}",
        )
        + f"<h1>{html_text(heading)}</h1>"
        + leaderboard_html(ranking)
        + f'<p style="{_NOTE}">Ratings: 1000 + 400 / ln 10 x the Bradley-Terry log-strength, '
        "mean 1000; a gap of 400 is odds of 10 to 1. Made by cross-judge "
        f"{html_text(__version__)}.</p></body></html>\n"
    )


@provide("ranking_page")
def write_leaderboard(
    ranking: Ranking, path: str | os.PathLike[str] | None = None, *, title: str | None = None
) -> str:
    """:func:`render_leaderboard`, written to ``path`` (replacing it) when given; the
    page's text either way (``Ranking.to_html``).

    Raises:
        ConfigError: the folder of ``path`` does not exist.
    """
    page = render_leaderboard(ranking, title=title)
    if path is not None:
        target = Path(path)
        if not target.parent.exists():
            raise ConfigError(f"{target.parent} does not exist; create it or choose another path")
        target.write_text(page, encoding="utf-8")
    return page
