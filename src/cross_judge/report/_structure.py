"""An item's structure as HTML: its conversation as turns, its trajectory as collapsible
steps, its reference beside the answer, its images as placeholders, and each turn's or
step's result (:mod:`._units`) next to it.

The report (:mod:`._items_table`) and the labelling page (:mod:`._label_page`) style the
markup with classes (``cj-turn``, ``cj-step``, ``cj-failed``, ``cj-unit``, ...: see
``report.css`` and ``label_page.css``); the notebook views (:mod:`._notebook`), which may
hold no ``<style>``, get the same markup with inline styles (:data:`INLINE`). A failed tool
call is marked by a class and by the text ``✗ ERROR`` (never by colour alone); a unit the
critics split on gets ``split`` and the line ``critics split on step 7: ...`` at the top.
Images are never embedded: a results file stores their type, size, digest and source,
not their bytes, so each shows as a placeholder with those.

Every text is escaped (:func:`~cross_judge.report._summary.printable` first), and nothing
links outside the page. What the results do not store (``item_text=False``, turns or steps
left out past the cap) is said, and the units about them are listed apart.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..content import compact_json
from ._summary import format_rate, printable
from ._units import Unit, UnitLine, entry_failed, entry_text, split_lines, unit_lines

if TYPE_CHECKING:
    from ..verdict import EnsembleVerdict, ItemText

__all__ = [
    "CLASSES",
    "INLINE",
    "Look",
    "beside_reference",
    "shows_structure",
    "structure_html",
    "structure_summary",
]

_SUMMARY_CHARS = 140  # a step's one-line summary before it is expanded
_FAILED_MARK = "\u2717 ERROR"


@dataclass(frozen=True)
class Look:
    """How the markup is styled: by class (``cj-<role>``, ``cj-<flag>``) or, with
    ``inline``, by the style of each role and flag. ``jury``: the unit results are the
    jury's (the labelling page hides them until asked: they get the class ``jury-unit``).
    ``open_outer``: the conversation and the trajectory start open (each step starts
    closed)."""

    inline: Mapping[str, str] | None = None
    jury: bool = False
    open_outer: bool = True

    def __call__(self, role: str, *flags: str, jury: bool = False) -> str:
        if self.inline is None:
            names = [f"cj-{role}", *(f"cj-{flag}" for flag in flags)]
            if jury and self.jury:
                names.append("jury-unit")
            return f' class="{" ".join(names)}"'
        style = ";".join(
            s for s in (self.inline.get(role, ""), *(self.inline.get(f) or "" for f in flags)) if s
        )
        return f' style="{style}"' if style else ""


CLASSES = Look()
"""The report's look: classes, outer blocks open."""

_TINT_ERROR = "rgba(239,68,68,.25)"
_TINT_SPLIT = "rgba(234,179,8,.25)"
_MONO = "font-family:ui-monospace,monospace;font-size:.9em"

INLINE = Look(
    inline={
        "structure": "margin:.2em 0",
        "splits": "margin:.1em 0",
        "split": f"background:{_TINT_SPLIT};padding:0 .3em;border-radius:.3em;margin:.1em 0",
        "versus": "display:flex;gap:1em;flex-wrap:wrap",
        "side": "flex:1;min-width:12em",
        "field": f"{_MONO};opacity:.75",
        "text": "white-space:pre-wrap;word-break:break-word",
        "turns": "margin:.1em 0;padding-left:1.2em",
        "steps": "margin:.1em 0;padding-left:1.2em",
        "turn": "margin:.1em 0",
        "step": "margin:.05em 0",
        "num": f"{_MONO};opacity:.7",
        "role": "font-weight:600",
        "call": f"{_MONO};white-space:pre-wrap;word-break:break-word;margin-left:1em",
        "failed": f"background:{_TINT_ERROR}",
        "mark": "font-weight:700",
        "body": f"{_MONO};white-space:pre-wrap;word-break:break-word;margin-left:1em",
        "unit": "padding:0 .3em;border-radius:.3em;border:1px solid rgba(128,128,128,.4)",
        "split-unit": f"background:{_TINT_SPLIT}",
        "image": f"{_MONO};opacity:.85",
        "left-out": "opacity:.75;font-size:.85em",
    },
    open_outer=False,
)
"""The notebook views' look: inline styles (tints over the theme's colours), outer blocks
closed."""


def _e(value: object) -> str:
    return html.escape(printable(str(value)), quote=True)


def _clip(text: str, limit: int = _SUMMARY_CHARS) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "\u2026"


def beside_reference(result: EnsembleVerdict) -> bool:
    """``result`` stores a reference (or a counter reference): :func:`structure_html`
    then shows its answer, the query, beside it, and a view leaves the query out of the
    rest of the judged text."""
    stored = result.item
    return stored is not None and (
        stored.reference is not None or stored.counter_reference is not None
    )


def shows_structure(result: EnsembleVerdict) -> bool:
    """``result`` stores an item with structure, or holds per-turn or per-step results."""
    stored = result.item
    return bool((stored is not None and stored.structured) or unit_lines(result))


def _units_by_entry(lines: Sequence[UnitLine]) -> dict[tuple[Unit, int], list[UnitLine]]:
    found: dict[tuple[Unit, int], list[UnitLine]] = {}
    for line in lines:
        found.setdefault((line.unit, line.number), []).append(line)
    return found


def _unit_badges(lines: Sequence[UnitLine], look: Look) -> str:
    """One badge per unit result: its consensus and agreement, ``split`` with the votes."""
    badges = []
    for line in lines:
        label = "" if line.criterion is None else f"{line.criterion}: "
        result = line.result
        if line.split:
            text = f"{label}split: {line.votes()}"
            flags: tuple[str, ...] = ("split-unit",)
        else:
            text = f"{label}{result.consensus} {format_rate(result.agreement_pct)}"
            flags = ()
        title = f"{line.name}: {line.votes()}, agreement {format_rate(result.agreement_pct)}"
        badges.append(
            f'<span{look("unit", *flags, jury=True)} title="{_e(title)}">{_e(text)}</span>'
        )
    return " ".join(badges)


def _image(described: Mapping[str, Any], number: int, look: Look) -> str:
    parts = [str(described.get("media_type", "image"))]
    size = described.get("size")
    if isinstance(size, int):
        parts.append(f"{size:,} bytes")
    digest = described.get("sha256")
    if isinstance(digest, str):
        parts.append(f"sha256 {digest[:12]}\u2026")
    where = described.get("url") or described.get("source")
    if where:
        parts.append(str(where))
    return f"<div{look('image')}>[image {number}: {_e(', '.join(parts))}]</div>"


def _call(call: Mapping[str, Any], look: Look) -> str:
    arguments = call.get("arguments")
    text = f"call {call.get('name', '?')}({'' if arguments is None else compact_json(arguments)})"
    if call.get("error") is not None:
        return (
            f"<div{look('call', 'failed')}><span{look('mark')}>{_FAILED_MARK}</span> "
            f"{_e(text)} -&gt; {_e(call['error'])}</div>"
        )
    result = call.get("result")
    shown = text if result is None else f"{text} -> {compact_json(result)}"
    return f"<div{look('call')}>{_e(shown)}</div>"


def _turns(
    turns: Sequence[Mapping[str, Any]], units: Mapping[tuple[Unit, int], list[UnitLine]], look: Look
) -> str:
    items = []
    for index, turn in enumerate(turns):
        number = index + 1
        role = str(turn.get("role", "?"))
        if role == "tool" and turn.get("name"):
            role = f"tool ({turn['name']})"
        failed = entry_failed("turn", turn)
        flags = ("failed",) if failed else ()
        badges = _unit_badges(units.get(("turn", number), ()), look)
        calls = "".join(_call(call, look) for call in turn.get("tool_calls") or ())
        images = "".join(
            _image(image, i + 1, look) for i, image in enumerate(turn.get("images") or ())
        )
        items.append(
            f'<li{look("turn", *flags)} data-turn="{number}"><span{look("num")}>'
            f"[turn {number}]</span> <span{look('role')}>{_e(role)}</span> {badges}"
            f"<div{look('text')}>{_e(turn.get('content', ''))}</div>{calls}{images}</li>"
        )
    return f"<ol{look('turns')}>{''.join(items)}</ol>"


def _step_body(step: Mapping[str, Any]) -> str:
    if step.get("kind") != "tool_call":
        return str(step.get("text", ""))
    lines = [f"tool: {step.get('name', '?')}"]
    if step.get("arguments") is not None:
        lines.append(f"arguments: {compact_json(step['arguments'])}")
    if step.get("error") is not None:
        lines.append(f"error: {step['error']}")
    elif step.get("result") is not None:
        lines.append(f"result: {compact_json(step['result'])}")
    if step.get("id"):
        lines.append(f"id: {step['id']}")
    return "\n".join(lines)


def _steps(
    steps: Sequence[Mapping[str, Any]], units: Mapping[tuple[Unit, int], list[UnitLine]], look: Look
) -> str:
    items = []
    for index, step in enumerate(steps):
        number = index + 1
        failed = entry_failed("step", step)
        flags = ("failed",) if failed else ()
        mark = f"<span{look('mark')}>{_FAILED_MARK}</span> " if failed else ""
        lines = units.get(("step", number), ())
        badges = _unit_badges(lines, look)
        detail = "".join(
            f"<div{look('split' if line.split else 'unit-line', jury=True)}>"
            f"{_e(line.name)}: {_e(line.votes())}, agreement "
            f"{format_rate(line.result.agreement_pct)}</div>"
            for line in lines
        )
        items.append(
            f'<li data-step="{number}"><details{look("step", *flags)}><summary>'
            f"<span{look('num')}>[step {number}]</span> {mark}"
            f"{_e(_clip(entry_text('step', step)))} {badges}</summary>"
            f"<div{look('body')}>{_e(_step_body(step))}</div>{detail}</details></li>"
        )
    return f"<ol{look('steps')}>{''.join(items)}</ol>"


def _left_out(stored: ItemText, name: str, noun: str, look: Look) -> str:
    count = (stored.left_out or {}).get(name)
    if not count:
        return ""
    kept = len(getattr(stored, name) or ())
    return (
        f"<p{look('left-out')}>\u2026 {count:,} more {noun}s not stored (the results keep the "
        f"first {kept:,}: the item's text is capped)</p>"
    )


def _outer(summary: str, body: str, role: str, look: Look, *, failed: bool = False) -> str:
    opened = " open" if look.open_outer else ""
    flags = ("failed",) if failed else ()
    return f"<details{look(role, *flags)}{opened}><summary>{summary}</summary>{body}</details>"


def _versus(stored: ItemText, look: Look) -> str:
    sides = [("answer", stored.query)]
    if stored.reference is not None:
        sides.append(("reference", stored.reference))
    if stored.counter_reference is not None:
        sides.append(("counter reference", stored.counter_reference))
    return (
        f"<div{look('versus')}>"
        + "".join(
            f"<div{look('side')}><div{look('field')}>{_e(name)}</div>"
            f"<div{look('text')}>{_e(text)}</div></div>"
            for name, text in sides
        )
        + "</div>"
    )


def structure_html(result: EnsembleVerdict, look: Look = CLASSES) -> str:
    """The structure ``result`` stores (see the module docstring) and its unit results;
    empty for a result with neither. The answer (the query) is shown here beside the
    reference when there is one, so a view shows the rest of the judged text without
    it."""
    stored = result.item
    lines = unit_lines(result)
    if (stored is None or not stored.structured) and not lines:
        return ""
    units = _units_by_entry(lines)
    parts: list[str] = []
    splits = split_lines(lines)
    if splits:
        parts.append(
            f"<div{look('splits', jury=True)}>"
            + "".join(f"<div{look('split')}>{_e(text)}</div>" for text in splits)
            + "</div>"
        )
    shown: set[tuple[Unit, int]] = set()
    if stored is not None:
        if stored.reference is not None or stored.counter_reference is not None:
            parts.append(_versus(stored, look))
        if stored.messages is not None:
            turns = stored.messages
            shown.update(("turn", i + 1) for i in range(len(turns)))
            failed = any(entry_failed("turn", t) for t in turns)
            total = len(turns) + (stored.left_out or {}).get("messages", 0)
            summary = f"conversation: {total:,} turn{'s' if total != 1 else ''}"
            parts.append(
                _outer(
                    _e(summary),
                    _turns(turns, units, look) + _left_out(stored, "messages", "turn", look),
                    "conversation",
                    look,
                    failed=failed,
                )
            )
        if stored.trajectory is not None:
            steps = stored.trajectory
            shown.update(("step", i + 1) for i in range(len(steps)))
            failures = sum(1 for s in steps if entry_failed("step", s))
            total = len(steps) + (stored.left_out or {}).get("trajectory", 0)
            summary = f"trajectory: {total:,} step{'s' if total != 1 else ''}"
            if failures:
                summary += f", {failures} failed tool call{'s' if failures != 1 else ''}"
            mark = f" <span{look('mark')}>{_FAILED_MARK}</span>" if failures else ""
            parts.append(
                _outer(
                    _e(summary) + mark,
                    _steps(steps, units, look) + _left_out(stored, "trajectory", "step", look),
                    "trajectory",
                    look,
                    failed=bool(failures),
                )
            )
        for i, image in enumerate(stored.images or ()):
            parts.append(_image(image, i + 1, look))
    unstored = [line for line in lines if (line.unit, line.number) not in shown]
    if unstored:
        parts.append(
            f"<div{look('unstored', jury=True)}><div{look('field')}>results on "
            "turns or steps the results file does not store</div>"
            + "".join(
                f"<div>{_e(line.name)}: {_e(line.votes())}, agreement "
                f"{format_rate(line.result.agreement_pct)}</div>"
                for line in unstored
            )
            + "</div>"
        )
    return f"<div{look('structure')}>{''.join(parts)}</div>"


def structure_summary(result: EnsembleVerdict) -> str:
    """One line of plain text: ``"trajectory: 12 steps, 2 failed; critics split on step
    7"`` (turns, steps, references, images, split units); empty for a result with no
    structure and no unit results."""
    stored = result.item
    parts: list[str] = []
    if stored is not None:
        extra = stored.left_out or {}
        if stored.messages is not None:
            parts.append(f"conversation: {len(stored.messages) + extra.get('messages', 0)} turns")
        if stored.trajectory is not None:
            total = len(stored.trajectory) + extra.get("trajectory", 0)
            failures = sum(1 for s in stored.trajectory if entry_failed("step", s))
            parts.append(
                f"trajectory: {total} steps" + (f", {failures} failed" if failures else "")
            )
        if stored.reference is not None:
            parts.append("with a reference")
        if stored.images:
            parts.append(f"{len(stored.images)} image{'s' if len(stored.images) != 1 else ''}")
    split = [line for line in unit_lines(result) if line.split]
    if split:
        names = ", ".join(line.name for line in split[:5])
        more = f" and {len(split) - 5} more" if len(split) > 5 else ""
        parts.append(f"critics split on {names}{more}")
    return "; ".join(parts)
