"""The bounded copy of an item's structure that its result stores: the budget of
characters (:class:`TextBudget`) that :func:`cross_judge.batch._items.item_text` has left
after the query and the context, spent on the item's reference and counter reference, its
conversation's turns and its trajectory's steps (and its images' descriptions).

Every text keeps at most the per-text cap and the item at most the total cap, in the order
query, context, reference, counter reference, turns, steps; a cut text ends with the marker
and is named in ``cut`` by its path (``"trajectory[7].result"``, 0-based as in the stored
list). Turns and steps that come after the total cap ran out are left out whole, from the
end, and counted (``left_out``), never dropped silently; the ones kept keep their
positions, so the stored entry ``i`` is turn or step ``i + 1`` of the rendering the critics
read. Images are described (type, size, sha256, source or URL), never stored as bytes.

A tool call's arguments and result are kept as JSON values when they fit (a value that is
not JSON-shaped, such as a tuple or an object, as the JSON it is written as), as the start
of their compact JSON text when they do not. Nothing here raises for any item.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..content import ToolCall

if TYPE_CHECKING:
    from .._item import Item
    from ..content import Image, Step, Turn

__all__ = ["TextBudget"]


class TextBudget:
    """Characters left for an item's stored text: ``cap`` per text, ``total`` left in all.

    :meth:`text` and :meth:`value` spend it, adding to :attr:`cut` (``cut``, the names
    cut so far, when given) the name of every text they cut with ``marker(more)``;
    :meth:`structure` stores what an item has beyond its query and context.
    """

    __slots__ = ("cap", "cut", "left", "left_out", "marker")

    def __init__(
        self,
        cap: int,
        total: int,
        marker: Callable[[int], str],
        *,
        cut: list[str] | None = None,
    ) -> None:
        self.cap = cap
        self.left = total
        self.marker = marker
        self.cut: list[str] = [] if cut is None else cut
        self.left_out: dict[str, int] = {}

    def text(self, name: str, text: str) -> str:
        """``text`` whole when it fits the cap and what is left, else its start and the
        marker (only the marker once nothing is left); a cut one is named in ``cut``."""
        keep = min(self.cap, self.left)
        if len(text) <= keep:
            self.left -= len(text)
            return text
        self.left -= keep
        self.cut.append(name)
        return text[:keep] + self.marker(len(text) - keep)

    def value(self, name: str, value: object) -> Any:
        """A JSON value (a tool call's arguments or result) as :meth:`text` bounds it,
        measured as its compact JSON: kept as a JSON value when it fits, else the cut
        start of that text. Text stays text."""
        if isinstance(value, str):
            return self.text(name, value)
        written = _json_text(value)
        if written is None:  # nothing JSON can write: its text, as for a context value
            return self.text(name, _as_text(value))
        keep = min(self.cap, self.left)
        if len(written) > keep:
            return self.text(name, written)
        self.left -= len(written)
        return value if _plain_json(value) else json.loads(written)

    def structure(self, item: Item) -> dict[str, Any]:
        """The fields of :class:`~cross_judge.verdict.ItemText` beyond the query and the
        context that ``item`` has (none for a plain item), bounded."""
        stored: dict[str, Any] = {}
        for name in ("reference", "counter_reference"):
            given = getattr(item, name)
            if given is not None:
                stored[name] = self.text(name, given)
        if item.messages:
            stored["messages"] = self._entries("messages", item.messages, self._turn)
        if item.trajectory:
            stored["trajectory"] = self._entries("trajectory", item.trajectory, self._step)
        if item.images:
            stored["images"] = [self._image(image) for image in item.images]
        if self.left_out:
            stored["left_out"] = dict(self.left_out)
        return stored

    def _entries(
        self, field: str, entries: Sequence[Any], store: Callable[[str, Any], dict[str, Any]]
    ) -> list[dict[str, Any]]:
        kept: list[dict[str, Any]] = []
        for index, entry in enumerate(entries):
            if self.left <= 0:
                self.cut.append(f"{field}[{index}:]")
                self.left_out[field] = len(entries) - index
                break
            kept.append(store(f"{field}[{index}]", entry))
        return kept

    def _turn(self, at: str, turn: Turn) -> dict[str, Any]:
        content = self.text(f"{at}.content", turn.content)
        stored: dict[str, Any] = {"role": turn.role, "content": content}
        if turn.tool_calls:
            stored["tool_calls"] = [
                self._call(f"{at}.tool_calls[{i}]", call, kind=False)
                for i, call in enumerate(turn.tool_calls)
            ]
        if turn.name is not None:
            stored["name"] = self.text(f"{at}.name", turn.name)
        if turn.tool_call_id is not None:
            stored["tool_call_id"] = self.text(f"{at}.tool_call_id", turn.tool_call_id)
        if turn.images:
            stored["images"] = [self._image(image) for image in turn.images]
        return stored

    def _step(self, at: str, step: Step) -> dict[str, Any]:
        if isinstance(step, ToolCall):
            return self._call(at, step, kind=True)
        return {"kind": step.kind, "text": self.text(f"{at}.text", step.text)}

    def _call(self, at: str, call: ToolCall, *, kind: bool) -> dict[str, Any]:
        stored: dict[str, Any] = {"kind": "tool_call"} if kind else {}
        stored["name"] = self.text(f"{at}.name", call.name)
        if call.arguments is not None:
            stored["arguments"] = self.value(f"{at}.arguments", call.arguments)
        if call.result is not None:
            stored["result"] = self.value(f"{at}.result", call.result)
        if call.error is not None:
            stored["error"] = self.text(f"{at}.error", call.error)
        if call.id is not None:
            stored["id"] = call.id[: self.cap]
        return stored

    def _image(self, image: Image) -> dict[str, Any]:
        # A description is a few short fields: not counted against the item's text, but a
        # URL or a path is still bounded.
        described = image.describe()
        for key in ("url", "source"):
            text = described.get(key)
            if isinstance(text, str) and len(text) > self.cap:
                described[key] = text[: self.cap] + self.marker(len(text) - self.cap)
        return described


def _json_text(value: object) -> str | None:
    """``value`` as compact JSON (non-ASCII kept; anything JSON has no form for as its
    ``str()``), or ``None`` when it cannot be written (a cycle, a non-finite float)."""
    try:
        return json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_as_text
        )
    except (TypeError, ValueError, RecursionError):
        return None


def _as_text(value: object) -> str:
    try:
        return str(value)
    except Exception:  # any object may be an argument; its text is for show only
        return f"<{type(value).__name__}>"


def _plain_json(value: object) -> bool:
    """``value`` reads back from JSON as itself: text, finite numbers, booleans, ``None``,
    lists and text-keyed mappings of them."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_json(v) for k, v in value.items())
    return False
