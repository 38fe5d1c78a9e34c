"""Rendering a conversation or a trajectory as the text a judge reads, within limits.

The text is deterministic (the same item renders to the same characters on every run):
one entry per turn or step, numbered from 1 (``[turn 3] user: ...``, ``[step 7] call
search({"q":"x"}) -> error: timeout``); JSON arguments and results compactly; every line
after an entry's first indented, so text inside a turn or a tool result can never pose as
a turn or step of its own. Nothing is interpolated: the text is a value the prompt's
template inserts literally.

:class:`RenderLimits` (a prompt file's ``render:`` block) bounds it: each value to
``max_value_chars``, the whole to ``max_chars``. When the entries do not fit, the first
``keep_first`` and the last ``keep_last`` are kept, and every failed tool call, and a
visible marker stands where entries were left out; an entry longer than its share is cut
with a marker. What was cut is :class:`RenderCut`, recorded on the verdict.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._model import FinalAnswer, Image, ModelMessage, Step, ToolCall, Turn

__all__ = [
    "DEFAULT_LIMITS",
    "RenderCut",
    "RenderLimits",
    "Rendered",
    "compact_json",
    "entry_text",
    "render_conversation",
    "render_entry",
    "render_trajectory",
]

_INDENT = "    "


@dataclass(frozen=True)
class RenderLimits:
    """How much of a conversation or trajectory a judge is shown.

    Attributes:
        max_chars: the whole rendering's cap, markers included.
        max_value_chars: the cap of one text, argument, result or error.
        keep_first: entries always kept from the start when not all fit.
        keep_last: entries always kept from the end when not all fit.
        keep_errors: keep every failed tool call when not all fit.
    """

    max_chars: int = 40_000
    max_value_chars: int = 4_000
    keep_first: int = 5
    keep_last: int = 5
    keep_errors: bool = True

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_value_chars", "keep_first", "keep_last"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"render limit {name} must be a whole number >= 0, got {value!r}")
        if self.max_chars < 200:
            raise ValueError(f"render limit max_chars must be at least 200, got {self.max_chars}")
        if self.max_value_chars < 20:
            raise ValueError(
                f"render limit max_value_chars must be at least 20, got {self.max_value_chars}"
            )

    def as_dict(self) -> dict[str, Any]:
        """The limits as plain values (a manifest's record)."""
        return {
            "max_chars": self.max_chars,
            "max_value_chars": self.max_value_chars,
            "keep_first": self.keep_first,
            "keep_last": self.keep_last,
            "keep_errors": self.keep_errors,
        }


DEFAULT_LIMITS = RenderLimits()
"""The limits of a prompt whose file sets none."""


@dataclass(frozen=True)
class RenderCut:
    """What a rendering left out: ``entries`` in all, ``shown`` of them, the 1-based
    numbers of those left out (``omitted``, as ``(first, last)`` ranges), how many values
    of the entries shown were shortened (``values_cut``) and how many of their characters
    were cut (``chars_cut``; the entries left out are counted in ``omitted``)."""

    field: str
    entries: int
    shown: int
    omitted: tuple[tuple[int, int], ...] = ()
    values_cut: int = 0
    chars_cut: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The cut as plain values (what a verdict records)."""
        return {
            "field": self.field,
            "entries": self.entries,
            "shown": self.shown,
            "omitted": [list(span) for span in self.omitted],
            "values_cut": self.values_cut,
            "chars_cut": self.chars_cut,
        }


@dataclass(frozen=True)
class Rendered:
    """A rendering: its ``text`` and what was cut (``None``: nothing)."""

    text: str
    cut: RenderCut | None = None
    images: tuple[Image, ...] = field(default=())


def compact_json(value: object) -> str:
    """``value`` as compact JSON (no spaces, keys in their order, non-ASCII kept); text
    that is not JSON-shaped stays as it is."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


class _Capper:
    """Cuts values to a cap, counting what it cut."""

    __slots__ = ("cap", "chars", "values")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.values = 0
        self.chars = 0

    def __call__(self, text: str) -> str:
        if len(text) <= self.cap:
            return text
        more = len(text) - self.cap
        self.values += 1
        self.chars += more
        return text[: self.cap] + f" \u2026 [cut: {more:,} more characters]"

    def value(self, value: object) -> str:
        # A value far over the cap is cut before it is serialised whole.
        if isinstance(value, str):
            return self(value)
        return self(compact_json(value))


def _indent(text: str) -> str:
    """Every line after the first indented (an entry's own lines never start a line)."""
    if "\n" not in text and "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join([lines[0], *(_INDENT + line for line in lines[1:])])


def _call_text(call: ToolCall, cap: _Capper) -> str:
    arguments = "" if call.arguments is None else cap.value(call.arguments)
    text = f"call {call.name}({arguments})"
    if call.error is not None:
        return text + f" -> ERROR: {cap(call.error)}"
    if call.result is not None:
        return text + f" -> {cap.value(call.result)}"
    return text


def entry_text(step: Step | Turn, number: int, cap: _Capper | None = None) -> str:
    """One numbered entry: ``[step n] ...`` for a step, ``[turn n] role: ...`` for a turn."""
    cap = cap or _Capper(10**12)
    if isinstance(step, Turn):
        body = cap(step.content)
        label: str = step.role
        if step.role == "tool" and step.name:
            label = f"tool ({step.name})"
        text = f"[turn {number}] {label}: {body}" if body else f"[turn {number}] {label}:"
        for call in step.tool_calls:
            text += f"\n{_call_text(call, cap)}"
        if step.images:
            count = len(step.images)
            text += f"\n[{count} image{'s' if count != 1 else ''} attached]"
        return _indent(text)
    if isinstance(step, ToolCall):
        return _indent(f"[step {number}] {_call_text(step, cap)}")
    if isinstance(step, FinalAnswer):
        return _indent(f"[step {number}] final answer: {cap(step.text)}")
    assert isinstance(step, ModelMessage)
    return _indent(f"[step {number}] message: {cap(step.text)}")


def _is_error(entry: Step | Turn) -> bool:
    if isinstance(entry, ToolCall):
        return entry.error is not None
    if isinstance(entry, Turn):
        return any(call.error is not None for call in entry.tool_calls)
    return False


def _omitted_marker(first: int, last: int, noun: str) -> str:
    count = last - first + 1
    which = f"{noun} {first}" if count == 1 else f"{noun}s {first}-{last}"
    return f"[\u2026 {which} left out: {count:,} {noun}{'s' if count != 1 else ''} \u2026]"


def _render(
    entries: Sequence[Step | Turn],
    limits: RenderLimits,
    field_name: str,
    noun: str,
    always: Collection[int] = (),
) -> Rendered:
    cap = _Capper(limits.max_value_chars)
    count = len(entries)
    budget = limits.max_chars
    # Fast path: everything fits.
    texts: dict[int, str] = {}
    total = 0
    fits = True
    for index, entry in enumerate(entries):
        text = entry_text(entry, index + 1, cap)
        texts[index] = text
        total += len(text) + 1
        if total > budget:
            fits = False
            break
    if fits:
        text = "\n".join(texts[i] for i in range(count))
        return Rendered(text, _cut(field_name, count, count, (), cap))
    # Keep the first k, the last k and every error; leave out the rest.
    keep = set(range(min(limits.keep_first, count)))
    keep.update(range(max(0, count - limits.keep_last), count))
    if limits.keep_errors:
        keep.update(i for i, entry in enumerate(entries) if _is_error(entry))
    keep.update(i for i in always if 0 <= i < count)
    kept = sorted(keep)
    cap = _Capper(limits.max_value_chars)  # count the cuts of the kept entries only
    texts = {index: entry_text(entries[index], index + 1, cap) for index in kept}
    pieces: list[str] = []
    omitted: list[tuple[int, int]] = []
    previous = -1
    for index in kept:
        if index > previous + 1:
            omitted.append((previous + 2, index))
            pieces.append(_omitted_marker(previous + 2, index, noun))
        pieces.append(texts[index])
        previous = index
    if previous < count - 1:
        omitted.append((previous + 2, count))
        pieces.append(_omitted_marker(previous + 2, count, noun))
    text = "\n".join(pieces)
    if len(text) > budget:
        text = _shrink(pieces, budget, cap)
    return Rendered(text, _cut(field_name, count, len(kept), tuple(omitted), cap, force=True))


def _shrink(pieces: list[str], budget: int, cap: _Capper) -> str:
    """The pieces cut to fit ``budget``: markers whole, each entry to an even share."""
    markers = [p for p in pieces if p.startswith("[\u2026 ")]
    entries = len(pieces) - len(markers)
    room = budget - sum(len(m) + 1 for m in markers)
    share = max(40, room // max(1, entries) - 1)
    out: list[str] = []
    for piece in pieces:
        if piece.startswith("[\u2026 ") or len(piece) <= share:
            out.append(piece)
            continue
        marker = f" \u2026 [cut: {len(piece) - share:,} more characters]"
        keep = max(0, share - len(marker))
        if "\u2026 [cut: " not in piece:  # a value already cut is counted once
            cap.values += 1
        cap.chars += len(piece) - keep
        out.append(piece[:keep] + marker)
    text = "\n".join(out)
    if len(text) > budget:  # very many kept entries: the end goes, visibly
        tail = " \u2026 [cut: the rest did not fit]"
        cap.chars += len(text) - (budget - len(tail))
        text = text[: budget - len(tail)] + tail
    return text


def _cut(
    field_name: str,
    entries: int,
    shown: int,
    omitted: tuple[tuple[int, int], ...],
    cap: _Capper,
    *,
    force: bool = False,
) -> RenderCut | None:
    if not force and not cap.values:
        return None
    return RenderCut(
        field=field_name,
        entries=entries,
        shown=shown,
        omitted=omitted,
        values_cut=cap.values,
        chars_cut=cap.chars,
    )


def render_conversation(
    turns: Sequence[Turn],
    limits: RenderLimits = DEFAULT_LIMITS,
    *,
    field_name: str = "conversation",
    always: Collection[int] = (),
) -> Rendered:
    """A conversation as numbered turns within ``limits`` (its images listed in
    ``images``, in order, for the request's image parts); the turns at the 0-based
    indices ``always`` are kept whatever the limits leave out."""
    rendered = _render(turns, limits, field_name, "turn", always)
    images = tuple(image for turn in turns for image in turn.images)
    if images:
        return Rendered(rendered.text, rendered.cut, images)
    return rendered


def render_trajectory(
    steps: Sequence[Step],
    limits: RenderLimits = DEFAULT_LIMITS,
    *,
    field_name: str = "trajectory",
    always: Collection[int] = (),
) -> Rendered:
    """A trajectory as numbered steps within ``limits``; the steps at the 0-based indices
    ``always`` are kept whatever the limits leave out."""
    return _render(steps, limits, field_name, "step", always)


def render_entry(entry: Step | Turn, number: int, limits: RenderLimits = DEFAULT_LIMITS) -> str:
    """One step or turn as the rendering shows it, numbered ``number``, each of its values
    within ``limits.max_value_chars`` and the whole within ``limits.max_chars``."""
    text = entry_text(entry, number, _Capper(limits.max_value_chars))
    if len(text) <= limits.max_chars:
        return text
    tail = f" \u2026 [cut: {len(text) - limits.max_chars:,} more characters]"
    return text[: max(0, limits.max_chars - len(tail))] + tail


for _type in (RenderLimits, RenderCut, Rendered):
    _type.__module__ = "cross_judge.content"  # the public path (and the one pickles record)
