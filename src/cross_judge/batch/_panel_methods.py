"""The batch entry points every panel offers, written once: ``judge_sync``, ``judge_many``,
``judge_many_sync`` and ``stream``, on top of the panel's own ``judge``.

:class:`PanelMethods` is a mixin of :class:`~cross_judge.ensemble.Ensemble` and
:class:`~cross_judge.cascade.Cascade`. A panel with options of its own for a batch (a
Cascade's ``all_tiers``) takes them as keywords and says what to run through
:meth:`PanelMethods.panel_for_batch`. It does not judge, vote or schedule anything itself:
:mod:`cross_judge.batch._runner` does.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from typing_extensions import Unpack

from .. import _sync
from ._panel_protocol import Panel
from ._run_options import PanelRunOptions, split_options
from ._runner import ResultStream, judge_many, stream

if TYPE_CHECKING:
    from .._item import Item
    from ..budget import Budget
    from ..results import BatchResult
    from ..verdict import EnsembleVerdict

__all__ = ["PanelMethods"]


class _Judging(Panel, Protocol):
    """What the mixin's methods need of the panel they are mixed into."""

    def panel_for_batch(self, **panel_options: Any) -> Panel: ...

    async def judge_many(
        self,
        items: Iterable[object] | AsyncIterable[object],
        **options: Unpack[PanelRunOptions],
    ) -> BatchResult: ...


class PanelMethods:
    """``judge_sync``, ``judge_many``, ``judge_many_sync`` and ``stream`` for a panel that
    defines ``judge`` and ``check_can_judge``.

    The batch methods take :class:`~cross_judge.batch.RunOptions` as keywords, plus the
    panel's own (a Cascade's ``all_tiers``, :class:`~cross_judge.batch.PanelRunOptions`):
    those go to its ``judge`` and to :meth:`panel_for_batch`. A panel that has none
    refuses any.
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
        **options: Unpack[PanelRunOptions],
    ) -> BatchResult:
        """Judge every item, at most ``concurrency`` at once; results in input order.

        ``items``: strings, mappings (``id``, ``query``, ``context``, ``meta``) or
        :class:`~cross_judge.batch.Item` objects, sync or async. Every item is checked
        before the first call. ``options``: how the batch runs (``concurrency``,
        ``progress``, ``budget_usd``, ``mode``, ``batch``, ``item_text``; see
        :class:`~cross_judge.batch.RunOptions`), and for a Cascade ``all_tiers``
        (:class:`~cross_judge.batch.PanelRunOptions`). See
        :func:`cross_judge.batch.judge_many`.

        Raises:
            TypeError: a keyword that is neither a run option nor this panel's own.
            ItemError: an item cannot be judged (nothing was sent).
            ConfigError: the panel has no critics, an option's value is invalid, or a
                budget is given but a critic's model has no known price.
        """
        run, panel_options = split_options(options)
        return await judge_many(self.panel_for_batch(**panel_options), items, **run)

    def judge_many_sync(
        self: _Judging,
        items: Iterable[object],
        **options: Unpack[PanelRunOptions],
    ) -> BatchResult:
        """``judge_many`` for synchronous code; also works inside a running event loop."""
        self.check_can_judge()  # here too: no bridge thread for a call that cannot run
        return _sync.run_sync(functools.partial(self.judge_many, items, **options))

    def stream(
        self: _Judging,
        items: Iterable[object] | AsyncIterable[object],
        **options: Unpack[PanelRunOptions],
    ) -> ResultStream:
        """Judge items and hand out results as they finish: ``async for r in
        panel.stream(items)``. Items are read lazily, so memory stays flat. ``options``
        are as in :meth:`judge_many`. The panel's ``aclose()`` stops it. See
        :func:`cross_judge.batch.stream`.

        Raises:
            TypeError: a keyword that is neither a run option nor this panel's own.
            ConfigError: the panel has no critics (at once, before any item is read).
        """
        run, panel_options = split_options(options)
        return stream(self.panel_for_batch(**panel_options), items, owner=self, **run)
