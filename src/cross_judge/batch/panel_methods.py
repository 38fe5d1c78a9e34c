"""The batch entry points every panel offers, written once: ``judge_sync``, ``judge_many``,
``judge_many_sync`` and ``stream``, on top of the panel's own ``judge``.

:class:`PanelMethods` is a mixin of :class:`~cross_judge.ensemble.Ensemble` and
:class:`~cross_judge.cascade.Cascade`. A panel with options of its own for a batch (a
Cascade's ``all_tiers``) takes them as keywords and says what to run through
:meth:`PanelMethods.panel_for_batch`. It does not judge, vote or schedule anything itself:
:mod:`cross_judge.batch.runner` does.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .. import _sync
from .panel_protocol import Panel
from .runner import DEFAULT_CONCURRENCY, Mode, ResultStream, judge_many, stream

if TYPE_CHECKING:
    from .._item import Item
    from ..budget import Budget
    from ..results import BatchResult
    from ..verdict import EnsembleVerdict
    from .provider_jobs import BatchOptions

__all__ = ["PanelMethods"]


class _Judging(Panel, Protocol):
    """What the mixin's methods need of the panel they are mixed into."""

    def panel_for_batch(self, **panel_options: Any) -> Panel: ...

    async def judge_many(
        self,
        items: Iterable[object] | AsyncIterable[object],
        *,
        concurrency: int = ...,
        progress: bool = ...,
        budget_usd: Budget | float | None = ...,
        mode: Mode = ...,
        batch: BatchOptions | None = ...,
        item_text: bool = ...,
        **panel_options: Any,
    ) -> BatchResult: ...


class PanelMethods:
    """``judge_sync``, ``judge_many``, ``judge_many_sync`` and ``stream`` for a panel that
    defines ``judge`` and ``check_can_judge``.

    ``panel_options`` are the panel's own keywords beyond the common ones (a Cascade's
    ``all_tiers``): passed on to its ``judge`` and to :meth:`panel_for_batch`. A panel
    that has none refuses any.
    """

    def panel_for_batch(self: _Judging, **panel_options: Any) -> Panel:
        """What a batch of this panel runs: the panel itself, unless its options say
        otherwise (a Cascade's ``all_tiers=True`` asks every tier).

        Raises:
            TypeError: an option this panel does not take.
        """
        if panel_options:
            raise TypeError(
                f"{type(self).__name__} takes no batch option {', '.join(sorted(panel_options))}"
            )
        return self

    def judge_sync(
        self: _Judging,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
        **panel_options: Any,
    ) -> EnsembleVerdict:
        """``judge`` for synchronous code; also works inside a running event loop."""
        self.check_can_judge()  # here too: no bridge thread for a call that cannot run
        call = functools.partial(
            self.judge,
            query,
            query_id=query_id,
            context=context,
            meta=meta,
            budget_usd=budget_usd,
            **panel_options,
        )
        return _sync.run_sync(call)

    async def judge_many(
        self: _Judging,
        items: Iterable[object] | AsyncIterable[object],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        progress: bool = False,
        budget_usd: Budget | float | None = None,
        mode: Mode = "live",
        batch: BatchOptions | None = None,
        item_text: bool = True,
        **panel_options: Any,
    ) -> BatchResult:
        """Judge every item, at most ``concurrency`` at once; results in input order.

        ``items``: strings, mappings (``id``, ``query``, ``context``, ``meta``) or
        :class:`~cross_judge.batch.Item` objects, sync or async. Every item is checked
        before the first call. ``budget_usd`` caps the whole batch: a call whose worst
        case does not fit waits for the calls in flight to settle, and once what is left
        cannot pay for one, the remaining calls are ``SKIPPED`` with
        ``error_kind="budget"``. ``mode="batch"``
        goes through the vendors' batch APIs at about half the price (``batch``:
        :class:`~cross_judge.BatchOptions`). Each result stores its item's query and
        context (``item``, bounded) unless ``item_text=False`` (private data). A Cascade
        also takes ``all_tiers=True``: ask every tier on every item, the stored results
        calibration (:func:`~cross_judge.cascade_calibration.calibrate_cascade`) and
        :meth:`~cross_judge.cascade.Cascade.replay` need. See
        :func:`cross_judge.batch.judge_many`.

        Raises:
            ItemError: an item cannot be judged (nothing was sent).
            ConfigError: the panel has no critics, or a budget is given but a critic's
                model has no known price.
        """
        return await judge_many(
            self.panel_for_batch(**panel_options),
            items,
            concurrency=concurrency,
            progress=progress,
            budget_usd=budget_usd,
            mode=mode,
            batch=batch,
            item_text=item_text,
        )

    def judge_many_sync(
        self: _Judging,
        items: Iterable[object],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        progress: bool = False,
        budget_usd: Budget | float | None = None,
        mode: Mode = "live",
        batch: BatchOptions | None = None,
        item_text: bool = True,
        **panel_options: Any,
    ) -> BatchResult:
        """``judge_many`` for synchronous code; also works inside a running event loop."""
        self.check_can_judge()  # here too: no bridge thread for a call that cannot run
        call = functools.partial(
            self.judge_many,
            items,
            concurrency=concurrency,
            progress=progress,
            budget_usd=budget_usd,
            mode=mode,
            batch=batch,
            item_text=item_text,
            **panel_options,
        )
        return _sync.run_sync(call)

    def stream(
        self: _Judging,
        items: Iterable[object] | AsyncIterable[object],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        progress: bool = False,
        budget_usd: Budget | float | None = None,
        mode: Mode = "live",
        batch: BatchOptions | None = None,
        item_text: bool = True,
        **panel_options: Any,
    ) -> ResultStream:
        """Judge items and hand out results as they finish: ``async for r in
        panel.stream(items)``. Items are read lazily, so memory stays flat.
        ``budget_usd`` caps the whole stream; ``mode="batch"`` goes through the vendors'
        batch APIs; ``item_text=False`` leaves the items' text out of the results; a
        Cascade takes ``all_tiers`` as in :meth:`judge_many`. The panel's ``aclose()``
        stops it. See :func:`cross_judge.batch.stream`.

        Raises:
            ConfigError: the panel has no critics (at once, before any item is read).
        """
        return stream(
            self.panel_for_batch(**panel_options),
            items,
            concurrency=concurrency,
            progress=progress,
            budget_usd=budget_usd,
            owner=self,
            mode=mode,
            batch=batch,
            item_text=item_text,
        )
