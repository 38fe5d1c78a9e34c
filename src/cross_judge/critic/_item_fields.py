"""The template fields an item fills itself: ``{conversation}``, ``{trajectory}``,
``{reference}``, ``{counter_reference}``, and a unit prompt's ``{turn}``/``{step}``.

A critic's template may use any of them without declaring them. Each is filled from the
item (:class:`~cross_judge.batch.Item`): the conversation and the trajectory rendered within
the prompt's limits (:func:`cross_judge.content.render_conversation`), the references as
given. A field the template uses and the item lacks is an
:class:`~cross_judge.errors.ItemError` before any call (never a silent downgrade to
judging without it); the same value given both on the item and in its ``context`` is one
too. An item without structure never reaches this module's work: its fields come from its
context, exactly as before.

Units (a prompt's ``unit: turn`` or ``unit: step``): each assistant turn, or each step, of
an item is judged on its own; :func:`unit_numbers` lists them (1-based, the rendered
numbers) and :class:`UnitRef` names the one a request is about. A turn's request shows the
conversation up to and including that turn; a step's request the whole trajectory, that
step kept whatever the limits leave out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._item import Item
from ..content import (
    DEFAULT_LIMITS,
    Image,
    Rendered,
    RenderLimits,
    render_conversation,
    render_entry,
    render_trajectory,
)
from ..errors import ItemError

__all__ = [
    "ITEM_FIELDS",
    "JUDGED_FIELDS",
    "UNIT_FIELDS",
    "ItemValues",
    "Unit",
    "UnitRef",
    "item_values",
    "unit_numbers",
]

Unit = Literal["turn", "step"]

ITEM_FIELDS = ("conversation", "trajectory", "reference", "counter_reference")
"""Template fields the item fills; a template uses them without declaring them."""

UNIT_FIELDS: Mapping[str, tuple[str, str]] = {
    "turn": ("turn", "turn_number"),
    "step": ("step", "step_number"),
}
"""The fields a unit prompt's template gets for the unit judged: its text and number."""

JUDGED_FIELDS = ("query", "conversation", "trajectory")
"""A template must use one of these: where the judged content goes."""

_WHAT = {
    "conversation": ("messages", "messages=[{'role': 'user', 'content': ...}, ...]"),
    "trajectory": ("trajectory", "trajectory=[{'name': ..., 'arguments': ...}, ...]"),
    "reference": ("reference", "reference='...'"),
    "counter_reference": ("counter_reference", "counter_reference='...'"),
}


@dataclass(frozen=True)
class UnitRef:
    """The unit a request judges: ``kind`` (``"turn"``/``"step"``) and its 1-based
    ``number``, as the rendering numbers it."""

    kind: Unit
    number: int

    @property
    def id(self) -> str:
        """The unit's id in results: ``step-7``, ``turn-4``."""
        return f"{self.kind}-{self.number}"


@dataclass(frozen=True)
class ItemValues:
    """What an item fills in a template: ``values`` by field name, the renderings' cuts
    (``cuts``, as plain mappings, for the verdict) and the images to send after the text."""

    values: dict[str, object]
    cuts: tuple[dict[str, Any], ...] = ()
    images: tuple[Image, ...] = field(default=())


def unit_numbers(item: Item, unit: Unit, *, where: str = "the prompt") -> tuple[int, ...]:
    """The units of ``item`` a ``unit`` prompt judges: every step (``1..n``) or the
    assistant turns (their turn numbers).

    Raises:
        ItemError: the item has no trajectory (steps) or no assistant turn (turns).
    """
    if unit == "step":
        if not item.trajectory:
            raise ItemError(
                f"{where} judges each step (unit: step), and item {item.id[:80]!r} has no "
                "trajectory: give it trajectory=[...], or use a prompt without unit: step"
            )
        return tuple(range(1, len(item.trajectory) + 1))
    numbers = tuple(i + 1 for i, turn in enumerate(item.messages) if turn.role == "assistant")
    if not numbers:
        raise ItemError(
            f"{where} judges each assistant turn (unit: turn), and item {item.id[:80]!r} has "
            "no assistant turn in messages: give it messages with the assistant's turns, or "
            "use a prompt without unit: turn"
        )
    return numbers


def _conversation(item: Item, limits: RenderLimits, unit: UnitRef | None) -> Rendered:
    if unit is not None and unit.kind == "turn":
        upto = unit.number
        return item.rendering(
            ("conversation", limits, upto),
            lambda: render_conversation(item.messages[:upto], limits, always=(upto - 1,)),
        )
    return item.rendering(
        ("conversation", limits, None), lambda: render_conversation(item.messages, limits)
    )


def _trajectory(item: Item, limits: RenderLimits, unit: UnitRef | None) -> Rendered:
    keep = (unit.number - 1,) if unit is not None and unit.kind == "step" else ()
    return item.rendering(
        ("trajectory", limits, keep),
        lambda: render_trajectory(item.trajectory, limits, always=keep),
    )


def item_values(
    item: Item,
    fields: frozenset[str],
    *,
    limits: RenderLimits = DEFAULT_LIMITS,
    where: str = "the prompt",
    unit: UnitRef | None = None,
) -> ItemValues:
    """The values ``item`` gives the template ``fields`` (with the unit's when ``unit`` is
    set), the renderings' cuts and the images to attach (the item's own, then those of the
    conversation's turns shown).

    Raises:
        ItemError: the template uses a field the item lacks (and its context does not
            give), or the item gives one both as a field and in its context; a unit field
            for a unit the item does not have.
    """
    values: dict[str, object] = {}
    cuts: list[dict[str, Any]] = []
    images: list[Image] = list(item.images)
    context = item.context
    for name in ITEM_FIELDS:
        if name not in fields:
            continue
        attribute, example = _WHAT[name]
        given = getattr(item, attribute)
        present = bool(given) if name in _STRUCTURED else given is not None
        if present and name in context:
            raise ItemError(
                f"item {item.id[:80]!r} gives {{{name}}} twice: as its {attribute} and in its "
                f"context; keep one (the {attribute} field is rendered for the judge)"
            )
        if not present:
            if name in context:  # a caller's own value, as before items had structure
                continue
            raise ItemError(
                f"{where} uses {{{name}}}, and item {item.id[:80]!r} has no {attribute}: "
                f"give the item {example}, or judge it with a prompt without {{{name}}}"
            )
        if name == "conversation":
            rendered = _conversation(item, limits, unit)
            values[name] = rendered.text
            images.extend(rendered.images)
        elif name == "trajectory":
            rendered = _trajectory(item, limits, unit)
            values[name] = rendered.text
        else:
            values[name] = getattr(item, attribute)
            continue
        if rendered.cut is not None:
            cuts.append(rendered.cut.as_dict())
    if unit is not None:
        text_field, number_field = UNIT_FIELDS[unit.kind]
        values[number_field] = unit.number
        if text_field in fields:
            values[text_field] = _unit_text(item, unit, limits)
    return ItemValues(values, tuple(cuts), tuple(images))


_STRUCTURED = frozenset({"conversation", "trajectory"})


def _unit_text(item: Item, unit: UnitRef, limits: RenderLimits) -> str:
    """The text of the unit judged, as the rendering shows it (its values capped)."""
    entries: tuple[Any, ...] = item.trajectory if unit.kind == "step" else item.messages
    if not 1 <= unit.number <= len(entries):
        raise ItemError(
            f"item {item.id[:80]!r} has no {unit.kind} {unit.number} (it has {len(entries)})"
        )
    return render_entry(entries[unit.number - 1], unit.number, limits)
