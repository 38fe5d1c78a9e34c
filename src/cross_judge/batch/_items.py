"""Items of a batch: :class:`Item` (one thing to judge, defined in :mod:`cross_judge._item`
and re-exported here), reading them lazily from a sync or
async source (:class:`ItemFeed`) with each checked against the panel's prompts before it is
judged, :func:`shard_of` for splitting a dataset across machines, and :func:`item_text`, the
bounded copy of an item's text a result stores (:data:`ITEM_TEXT_CAP`).

Nothing here calls a vendor or judges anything (:mod:`cross_judge.batch._runner` does).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from .._item import Item
from ..errors import ConfigError, ItemError, PromptError
from ..verdict import ItemText
from ._stored_item import TextBudget

if TYPE_CHECKING:
    from ..verdict import EnsembleVerdict
    from ._panel_protocol import Panel

__all__ = [
    "ITEM_TEXT_CAP",
    "ITEM_TEXT_TOTAL_CAP",
    "Item",
    "ItemError",
    "ItemFeed",
    "checked_item",
    "cut_marker",
    "item_text",
    "shard_of",
    "with_item_text",
]

ITEM_TEXT_CAP = 4_000
"""Characters of each text of an item (its query, each context value) that its result
stores (:class:`~cross_judge.verdict.ItemText`); a longer text keeps its first
``ITEM_TEXT_CAP`` characters followed by :func:`cut_marker`."""

ITEM_TEXT_TOTAL_CAP = 16_000
"""Characters of an item's text its result stores in all, the query first, then the context
values in order: a value past it keeps only :func:`cut_marker`."""


def shard_of(item_id: str, n: int) -> int:
    """The shard (1 to ``n``) that the item with id ``item_id`` belongs to when a dataset is
    split ``n`` ways: ``sha256(id as UTF-8) mod n``, plus 1.

    The split depends on the id alone, so it is the same on every machine, Python version
    and input order, and ``n`` machines that each judge one shard judge every item exactly
    once (``cross-judge review --shard i/N`` uses it). Pass the id :meth:`Item.from_value`
    gives (an item without one gets its default id, from its query). Shards are about
    equal in size, not exactly: each id falls in one at random. ``n == 1`` puts every item
    in shard 1. Changing ``n`` reassigns most items.

    Raises:
        ValueError: ``n`` is not a whole number >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of shards must be a whole number >= 1, got {n!r}")
    # surrogatepass: any str has a digest, so no id makes the split raise
    digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest, "big") % n + 1


def cut_marker(more: int) -> str:
    """What ends a stored text that was cut: ``" … [cut: 1,234 more characters]"``."""
    return f" \u2026 [cut: {more:,} more characters]"


def item_text(item: Item) -> ItemText:
    """The text of ``item`` as its result stores it: ``query`` and ``context``, bounded,
    and an item's structure (reference, counter reference, turns, steps, images) when it
    has one (:class:`~cross_judge.batch._stored_item.TextBudget`).

    Each text keeps at most :data:`ITEM_TEXT_CAP` characters and the whole item at most
    :data:`ITEM_TEXT_TOTAL_CAP` (the query first, then the context values in order, then
    the reference, the counter reference, the turns and the steps); a cut text ends with
    :func:`cut_marker` and is named in ``cut`` (``"query"``, ``"context.<key>"``,
    ``"trajectory[7].result"``); turns or steps past the total are left out whole and
    counted (``left_out``). Context values are kept as the critics' prompts render them:
    text, booleans, integers, finite floats and ``None`` as they are, anything else as its
    ``str()`` (an object whose ``str()`` raises as ``<TypeName>``). An item with no
    context stores an empty one. Never raises.
    """
    budget = ITEM_TEXT_TOTAL_CAP
    cut: list[str] = []

    def bounded(name: str, text: str) -> str:
        nonlocal budget
        keep = min(ITEM_TEXT_CAP, budget)
        if len(text) <= keep:
            budget -= len(text)
            return text
        budget -= keep
        cut.append(name)
        return text[:keep] + cut_marker(len(text) - keep)

    query = bounded("query", item.query)
    context: dict[str, Any] = {}
    for key, value in item.context.items():
        if _kept_as_is(value):
            context[key] = value
        else:
            context[key] = bounded(f"context.{key}", _as_text(value))
    if not item.structured:
        return ItemText(query=query, context=context, cut=cut)
    # The structure spends what the query and the context left.
    rest = TextBudget(ITEM_TEXT_CAP, budget, cut_marker, cut=cut)
    return ItemText(query=query, context=context, cut=rest.cut, **rest.structure(item))


def with_item_text(result: EnsembleVerdict, item: Item) -> EnsembleVerdict:
    """``result`` with the text of ``item`` it judged (:func:`item_text`) as its ``item``;
    the result is updated in place and returned."""
    result.item = item_text(item)
    return result


def _kept_as_is(value: object) -> bool:
    """A context value stored as it is: ``None``, a boolean, an integer a JSON reader takes
    (below 2**63 in size), a finite float."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except Exception:  # any object may be context; its text is for show only
        return f"<{type(value).__name__}>"


class ItemFeed:
    """Items from a sync or async iterable, one at a time, each checked as it is taken.

    A plain class rather than an async generator, so that stopping early never leaves a
    half-run generator for the garbage collector to finalise on the wrong task.
    :meth:`aclose` closes the caller's generator when the batch stops before its end.
    """

    def __init__(
        self,
        panel: Panel,
        source: Iterable[object] | AsyncIterable[object],
        *,
        checked: bool = False,
    ) -> None:
        self._panel = panel
        self._checked = checked
        self._sync: Iterator[object] | None = None
        self._async: AsyncIterator[object] | None = None
        if isinstance(source, AsyncIterable):
            self._async = source.__aiter__()
        else:
            self._sync = iter(source)
        self.position = 0

    async def next(self) -> Item | None:
        """The next item, or ``None`` at the end.

        Raises:
            ItemError: the next value cannot be judged.
        """
        try:
            if self._sync is not None:
                value = next(self._sync)
            else:
                assert self._async is not None
                value = await self._async.__anext__()
        except (StopIteration, StopAsyncIteration):
            return None
        item = (
            value
            if self._checked and isinstance(value, Item)
            else checked_item(self._panel, value, self.position)
        )
        self.position += 1
        return item

    async def aclose(self) -> None:
        """Close the source if it is a generator (its ``finally`` blocks run now)."""
        if self._async is not None:
            close = getattr(self._async, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()
        elif self._sync is not None:
            sync_close = getattr(self._sync, "close", None)
            if sync_close is not None:
                sync_close()


def checked_item(panel: Panel, value: object, position: int) -> Item:
    """``value`` as an Item whose prompts render for every critic (nothing is billed yet)."""
    item = Item.from_value(value, position=position)
    try:
        panel.check_item(item)
        for critic in panel.critics:
            critic.check_renders(item)
    except (PromptError, ConfigError) as exc:
        raise ItemError(f"id {item.id!r}: {exc}", position=position) from None
    return item
