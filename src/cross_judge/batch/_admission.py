"""Admission: which item starts next, and when. One loop for live and provider-batch runs.

:func:`admit` takes items from a feed while a slot is free and hands each to a starter;
:func:`judge_item` is what a started item runs. The callers own the task group, the slots'
release and what happens to results (:mod:`cross_judge.batch._runner` for live runs,
:mod:`cross_judge.batch._provider_jobs` for batch mode).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..critic import judging_item
from ._items import ItemError, with_item_text

if TYPE_CHECKING:
    import anyio

    from ..budget import Budget
    from ..verdict import EnsembleVerdict
    from ._items import Item, ItemFeed
    from ._panel_protocol import Panel

__all__ = ["admit", "judge_item"]


async def judge_item(
    panel: Panel, item: Item, budget: Budget | None, *, item_text: bool = True
) -> EnsembleVerdict:
    """``panel``'s verdict on ``item`` (the item itself is what the panel judges); with
    ``item_text``, the result stores the item's text (:func:`~cross_judge.batch._items.
    with_item_text`). Its calls are made for ``item.id`` (an answers journal records
    their answers with it: :func:`~cross_judge.critic._journal.judging_item`)."""
    with judging_item(item.id):
        result = await panel.judge(item, budget_usd=budget)
    return with_item_text(result, item) if item_text else result


async def admit(
    feed: ItemFeed,
    slots: anyio.Semaphore,
    start: Callable[[int, Item], None],
    *,
    feeding: Callable[[bool], None] | None = None,
) -> ItemError | None:
    """Take the feed's items one at a time, each only once a slot is free, and
    ``start(index, item)`` it; return when the feed ends.

    An item is taken only when a slot is free, so a lazy source is read as the batch goes.
    ``start`` must arrange for the slot to be released when the item is done. ``feeding``
    is told ``False`` before waiting on a full set of slots and ``True`` once a slot is had
    (provider-batch mode submits a round only while nothing more can start).

    Returns:
        The :class:`ItemError` of the first item that cannot be judged (no item starts
        after it), or ``None`` when the feed was read to its end.
    """
    index = 0
    while True:
        if feeding is not None and slots.value == 0:
            feeding(False)
        await slots.acquire()
        if feeding is not None:
            feeding(True)
        try:
            item = await feed.next()
        except ItemError as exc:
            slots.release()
            return exc
        if item is None:
            slots.release()
            return None
        start(index, item)
        index += 1
