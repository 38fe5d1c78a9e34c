"""An alignment's record (``alignment.json``, :meth:`~cross_judge.alignment.AlignmentPlan.record`)
as HTML: what ``cross-judge report aligned/alignment.json`` writes.

* :func:`alignment_page`: one self-contained page (the report's own ``report.css``
  inlined; no script at all, and a Content-Security-Policy that forbids every fetch, so
  it opens from disk offline).
* :func:`alignment_fragment`: the same sections without the page shell, for a notebook
  view (its numbers right-aligned and its marks coloured by inline styles, so it reads
  without the stylesheet).
* :func:`is_alignment_record`: whether parsed JSON is such a record (its ``kind``).

The sections: a summary line (method, k, disjoint or shared examples, held-out items,
seed, the gold file's sha256 prefix, the measuring calls' spend against the budget) and
the record's notes; the before/after table (the jury's consensus kappa, consensus
accuracy, Dawid-Skene accuracy and effective votes, then each critic's kappa and accuracy:
before, after, the gain and its interval, the gains whose interval lies wholly above 0
marked); the verdict (the refusals, or that nothing refuses it) with each new prompt
version and the version it derives from; each critic's examples (id, label, reason) and
the instruction drafted for it (``method="instructions"`` or ``"both"``; a record written
before alignment drafted instructions has no ``instructions`` or ``notes`` key, and is
shown all the same).

Every value of the record is escaped (ids, labels, reasons, instructions and critic names
come from the user's files) and shown through
:func:`~cross_judge.report._summary.printable`. Nothing is computed here but the gains
(after - before, of the record's rounded values): every other number is the record's. A
record missing a key or holding a value of the wrong type is a
:class:`~cross_judge.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._extensions import provide
from .._version import __version__
from ..alignment import RECORD_FILE_NAME, RECORD_KIND
from ..errors import ConfigError
from ._html import asset, html_text, page_open
from ._summary import printable

__all__ = ["alignment_fragment", "alignment_page", "is_alignment_record"]

_JURY = (
    ("consensus_kappa", "jury: consensus kappa"),
    ("consensus_accuracy", "jury: consensus accuracy"),
    ("dawid_skene_accuracy", "jury: Dawid-Skene accuracy"),
    ("effective_votes", "jury: effective votes"),
)
_CRITIC = ("kappa", "accuracy")

_NUM = ' class="num" style="text-align:right;font-variant-numeric:tabular-nums"'
_ABOVE = '<strong class="above" style="color:#1d7a3a">above 0</strong>'
_CAPTION = "caption-side:top;text-align:left;font-weight:600"
_FIX = f"pass the {RECORD_FILE_NAME} that cross-judge align wrote"


def is_alignment_record(data: object) -> bool:
    """Whether ``data`` (parsed JSON) is an alignment record: a mapping whose ``kind`` is
    :data:`~cross_judge.alignment.RECORD_KIND`. Its other keys are checked when it is
    shown, not here."""
    return isinstance(data, Mapping) and data.get("kind") == RECORD_KIND


@provide("alignment_html")
def alignment_fragment(record: Mapping[str, Any], *, source: str | None = None) -> str:
    """The record's sections as an HTML fragment (no page shell): summary, before/after,
    verdict and examples (see the module's docstring). ``source`` names the record's file
    in errors.

    Raises:
        ConfigError: a key is missing or holds the wrong type (the message names it).
    """
    return printable(_fragment(_read(record, source)))


def alignment_page(
    record: Mapping[str, Any], *, title: str | None = None, source: str | None = None
) -> str:
    """The record as one self-contained HTML page (no script, no external resource; its
    Content-Security-Policy forbids every fetch). ``title`` defaults to the method, k and
    held-out count; ``source`` names the record's file in errors.

    Raises:
        ConfigError: a key is missing or holds the wrong type (the message names it).
    """
    found = _read(record, source)
    how = "" if found.method == "instructions" else f", k={found.k}"
    heading = title or (
        f"cross-judge alignment: {found.method}{how}, {found.n_items} held-out items"
    )
    nav = " ".join(
        f'<a href="#{anchor}">{text}</a>'
        for anchor, text in (
            ("alignment-summary", "Summary"),
            ("alignment-figures", "Before and after"),
            ("alignment-verdict", "Verdict"),
            ("alignment-examples", "Examples"),
        )
    )
    return printable(
        page_open(heading, asset("report.css"))
        + f"<header><h1>{html_text(heading)}</h1><nav>{nav}</nav></header><main>"
        + _fragment(found)
        + '</main><footer class="muted">Every figure is the record\'s (rounded to 4 places); '
        "the gains are after - before. Made by cross-judge "
        f"{html_text(__version__)}.</footer></body></html>\n"
    )


# -- reading the record ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    title: str
    before: float | None
    after: float | None
    gain_ci: tuple[float, float] | None


@dataclass(frozen=True)
class _Example:
    id: str
    label: str
    reason: str


@dataclass(frozen=True)
class _Alignment:
    method: str
    k: int
    holdout: float
    seed: int
    shared: bool
    gold_sha256: str
    held_out: list[str]
    prompts: dict[str, str]
    derived_from: dict[str, str]
    examples: dict[str, list[_Example]]
    spend_usd: float | None
    budget_usd: float | None
    refusals: list[str]
    instructions: dict[str, str]
    notes: list[str]
    n_items: int
    ci: float
    resamples: int
    rows: list[_Row]


class _Reader:
    """Reads the record's values, each checked: a missing key or a wrong type raises a
    :class:`ConfigError` naming its dotted path."""

    def __init__(self, source: str | None) -> None:
        self.where = f"{source}: " if source else "the alignment record: "

    def error(self, path: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}`{path}` {problem}; {_FIX}")

    def get(self, data: Mapping[str, Any], key: str, path: str) -> Any:
        if key not in data:
            raise self.error(path, "is missing")
        return data[key]

    def wrong(self, path: str, value: object, expected: str) -> ConfigError:
        return self.error(path, f"is {_kind(value)}, not {expected}")

    def mapping(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = self.get(data, key, path)
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise self.wrong(path, value, "an object")
        return value

    def string(self, data: Mapping[str, Any], key: str, path: str) -> str:
        value = self.get(data, key, path)
        if not isinstance(value, str):
            raise self.wrong(path, value, "a string")
        return value

    def integer(self, data: Mapping[str, Any], key: str, path: str) -> int:
        value = self.get(data, key, path)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.wrong(path, value, "an integer")
        return value

    def boolean(self, data: Mapping[str, Any], key: str, path: str) -> bool:
        value = self.get(data, key, path)
        if not isinstance(value, bool):
            raise self.wrong(path, value, "true or false")
        return value

    def number(self, data: Mapping[str, Any], key: str, path: str) -> float:
        value = self.optional_number(data, key, path)
        if value is None:
            raise self.wrong(path, None, "a number")
        return value

    def optional_number(self, data: Mapping[str, Any], key: str, path: str) -> float | None:
        value = self.get(data, key, path)
        if value is None:
            return None
        if not _is_number(value):
            raise self.wrong(path, value, "a number or null")
        return float(value)

    def strings(self, data: Mapping[str, Any], key: str, path: str) -> list[str]:
        value = self.get(data, key, path)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.wrong(path, value, "a list of strings")
        return list(value)

    def names(self, data: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        value = self.mapping(data, key, path)
        for name, ref in value.items():
            if not isinstance(ref, str):
                raise self.wrong(f"{path}.{name}", ref, "a string")
        return dict(value)

    def interval(self, data: Mapping[str, Any], key: str, path: str) -> tuple[float, float] | None:
        value = self.get(data, key, path)
        if value is None:
            return None
        if not isinstance(value, list) or len(value) != 2 or not all(map(_is_number, value)):
            raise self.wrong(path, value, "a [low, high] pair of numbers or null")
        return float(value[0]), float(value[1])

    def row(self, data: Mapping[str, Any], key: str, path: str, title: str) -> _Row:
        figure = self.mapping(data, key, path)
        return _Row(
            title=title,
            before=self.optional_number(figure, "before", f"{path}.before"),
            after=self.optional_number(figure, "after", f"{path}.after"),
            gain_ci=self.interval(figure, "gain_ci", f"{path}.gain_ci"),
        )

    def examples(self, data: Mapping[str, Any]) -> dict[str, list[_Example]]:
        found: dict[str, list[_Example]] = {}
        for critic, listed in self.mapping(data, "examples", "examples").items():
            path = f"examples.{critic}"
            if not isinstance(listed, list):
                raise self.wrong(path, listed, "a list")
            chosen = []
            for n, example in enumerate(listed):
                where = f"{path}[{n}]"
                if not isinstance(example, Mapping):
                    raise self.wrong(where, example, "an object")
                chosen.append(
                    _Example(
                        id=self.string(example, "id", f"{where}.id"),
                        label=self.string(example, "label", f"{where}.label"),
                        reason=self.string(example, "reason", f"{where}.reason"),
                    )
                )
            found[critic] = chosen
        return found


def _read(record: Mapping[str, Any], source: str | None) -> _Alignment:
    read = _Reader(source)
    if not isinstance(record, Mapping):
        raise read.wrong("(the record)", record, "an object")
    kind = read.get(record, "kind", "kind")
    if kind != RECORD_KIND:
        raise read.error("kind", f"is {_kind(kind)}, not {RECORD_KIND!r}")
    figures = read.mapping(record, "figures", "figures")
    jury = read.mapping(figures, "jury", "figures.jury")
    rows = [read.row(jury, key, f"figures.jury.{key}", title) for key, title in _JURY]
    for critic, values in read.mapping(figures, "critics", "figures.critics").items():
        path = f"figures.critics.{critic}"
        if not isinstance(values, Mapping):
            raise read.wrong(path, values, "an object")
        rows += [read.row(values, key, f"{path}.{key}", f"{critic}: {key}") for key in _CRITIC]
    return _Alignment(
        method=read.string(record, "method", "method"),
        k=read.integer(record, "k", "k"),
        holdout=read.number(record, "holdout", "holdout"),
        seed=read.integer(record, "seed", "seed"),
        shared=read.boolean(record, "shared", "shared"),
        gold_sha256=read.string(record, "gold_sha256", "gold_sha256"),
        held_out=read.strings(record, "held_out", "held_out"),
        prompts=read.names(record, "prompts", "prompts"),
        derived_from=read.names(record, "derived_from", "derived_from"),
        examples=read.examples(record),
        spend_usd=read.optional_number(record, "spend_usd", "spend_usd"),
        budget_usd=read.optional_number(record, "budget_usd", "budget_usd"),
        refusals=read.strings(record, "refusals", "refusals"),
        # Records written before alignment drafted instructions have neither key.
        instructions=read.names(record, "instructions", "instructions")
        if "instructions" in record
        else {},
        notes=read.strings(record, "notes", "notes") if "notes" in record else [],
        n_items=read.integer(figures, "held_out_items", "figures.held_out_items"),
        ci=read.number(figures, "ci", "figures.ci"),
        resamples=read.integer(figures, "resamples", "figures.resamples"),
        rows=rows,
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str:
    """What a JSON value is, in words, for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "..."
        return f"the string {shown!r}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# -- the sections ---------------------------------------------------------------------------


def _number(value: float | None, *, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    value = round(value, 3) + 0.0  # no "-0.000"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _usd(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _gain(row: _Row) -> float | None:
    if row.before is None or row.after is None:
        return None
    return row.after - row.before


def _above(row: _Row) -> bool:
    """Whether the gain's interval lies wholly above 0 (as ``Figure.significant``)."""
    return row.gain_ci is not None and math.isfinite(row.gain_ci[0]) and row.gain_ci[0] > 0.0


def _fragment(found: _Alignment) -> str:
    return (
        '<div class="cj-alignment">'
        + _summary(found)
        + _figures(found)
        + _verdict(found)
        + _examples(found)
        + "</div>"
    )


def _spend(found: _Alignment) -> str:
    spend = "unknown (a price is unknown)" if found.spend_usd is None else _usd(found.spend_usd)
    if found.budget_usd is None:
        return f"the measuring calls cost {spend}, with no budget"
    return f"the measuring calls cost {spend} of a {_usd(found.budget_usd)} budget"


def _summary(found: _Alignment) -> str:
    examples = (
        "shared examples (every critic shown the same items)"
        if found.shared
        else "disjoint examples (no item shown to two critics)"
    )
    parts = [
        f"method <code>{html_text(found.method)}</code>",
        *([] if found.method == "instructions" else [f"k={found.k} examples per critic", examples]),
        f"{found.n_items} held-out items (holdout {found.holdout:g} of each label's items)",
        f"seed {found.seed}",
        f"gold sha256 <code>{html_text(found.gold_sha256[:12])}</code>",
        f"{found.ci:.0%} paired bootstrap intervals ({found.resamples} resamples)",
        _spend(found),
        "refused" if found.refusals else "nothing refuses it",
    ]
    held_out = ", ".join(f"<code>{html_text(i)}</code>" for i in found.held_out)
    notes = "".join(f"<li>{html_text(note)}</li>" for note in found.notes)
    return (
        '<section id="alignment-summary"><h2>Summary</h2>'
        f"<p>{'; '.join(parts)}.</p>"
        + (f'<ul class="muted">{notes}</ul>' if notes else "")
        + f"<details><summary>The {len(found.held_out)} held-out items it measured on</summary>"
        f"<p>{held_out or '(none listed)'}</p></details></section>"
    )


def _figures(found: _Alignment) -> str:
    head = "".join(
        f'<th{_NUM if 0 < n < 5 else ""} scope="col">{h}</th>'
        for n, h in enumerate(("figure", "before", "after", "gain", "gain interval", ""))
    )
    body = []
    for row in found.rows:
        interval = (
            "n/a"
            if row.gain_ci is None
            else f"[{_number(row.gain_ci[0], signed=True)}, {_number(row.gain_ci[1], signed=True)}]"
        )
        above = _above(row)
        marked = ' class="gain-above"' if above else ""
        body.append(
            f"<tr{marked}>"
            f'<th scope="row">{html_text(row.title)}</th>'
            f"<td{_NUM}>{_number(row.before)}</td>"
            f"<td{_NUM}>{_number(row.after)}</td>"
            f"<td{_NUM}>{_number(_gain(row), signed=True)}</td>"
            f"<td{_NUM}>{interval}</td>"
            f"<td>{_ABOVE if above else ''}</td></tr>"
        )
    return (
        '<section id="alignment-figures"><h2>Before and after</h2>'
        f"<p>On the {found.n_items} held-out items (none of them an example): each figure "
        "before and after, the gain (after - before) and its "
        f"{found.ci:.0%} interval; <em>above 0</em> marks a gain whose interval lies wholly "
        "above 0. Kappa is Cohen's, with the gold labels; n/a: undefined.</p>"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div></section>"
    )


def _verdict(found: _Alignment) -> str:
    if found.refusals:
        reasons = "".join(f"<li>{html_text(reason)}</li>" for reason in found.refusals)
        verdict = (
            '<div class="note" role="note"><strong>Refused.</strong> cross-judge align '
            f"writes these versions only with --force:<ul>{reasons}</ul></div>"
        )
        caption = "The prompt versions it would write when forced"
    else:
        verdict = (
            "<p><strong>Accepted.</strong> The jury's consensus kappa gained with an interval "
            "above 0 and its effective votes did not fall: it writes these versions.</p>"
        )
        caption = "The prompt versions it writes"
    rows = "".join(
        "<tr>"
        f"<td>{html_text(critic)}</td>"
        f"<td><code>{html_text(ref)}</code></td>"
        f"<td><code>{html_text(found.derived_from.get(critic, 'n/a'))}</code></td>"
        f"<td{_NUM}>{len(found.examples.get(critic, []))}</td></tr>"
        for critic, ref in found.prompts.items()
    )
    head = "".join(
        f'<th{_NUM if n == 3 else ""} scope="col">{h}</th>'
        for n, h in enumerate(("critic", "new version", "derived from", "examples"))
    )
    table = (
        f'<table><caption style="{_CAPTION}">{caption}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        if found.prompts
        else '<p class="muted">No prompt version (no critic was aligned).</p>'
    )
    return f'<section id="alignment-verdict"><h2>Verdict</h2>{verdict}{table}</section>'


def _examples(found: _Alignment) -> str:
    parts = []
    for critic in dict.fromkeys([*found.examples, *found.instructions]):
        chosen = found.examples.get(critic, [])
        ref = found.prompts.get(critic)
        named = (
            f"<h3>{html_text(critic)}"
            + (f": <code>{html_text(ref)}</code>" if ref else "")
            + "</h3>"
        )
        instruction = found.instructions.get(critic)
        if instruction is not None:
            named += (
                "<p>The instruction added to its system prompt:</p>"
                f'<blockquote class="reason">{html_text(instruction)}</blockquote>'
            )
        if not chosen:
            parts.append(
                named + ("" if instruction is not None else '<p class="muted">No examples.</p>')
            )
            continue
        rows = "".join(
            f"<tr><td{_NUM}>{n}</td><td><code>{html_text(e.id)}</code></td>"
            f'<td><span class="label">{html_text(e.label)}</span></td>'
            f"<td>{html_text(e.reason)}</td></tr>"
            for n, e in enumerate(chosen, 1)
        )
        parts.append(
            f'{named}<table><thead><tr><th{_NUM} scope="col">#</th>'
            '<th scope="col">id</th><th scope="col">label</th><th scope="col">why chosen</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    return (
        '<section id="alignment-examples"><h2>Examples and instructions</h2>'
        "<p>What each critic's new version adds: the labelled items it shows, with the gold "
        "label and why each was chosen, and the instruction drafted for it (when the "
        "method drafts one).</p>"
        + ("".join(parts) or '<p class="muted">No examples.</p>')
        + "</section>"
    )
