"""cross-judge 0.1's legacy :class:`JudgePanel`: several reviewers, one aggregated result.

A thin 0.1-compatible shim over :class:`~cross_judge.reviewer.Reviewer` and
:mod:`cross_judge.aggregation`. Differences from 0.1, all fixes:

* reviewers are asked concurrently (one anyio task group), so an item takes as long as
  the slowest reviewer, not the sum (bug B1); results stay in reviewer order;
* the strategy name is checked at construction, and a built-in strategy's keywords too,
  before anything is billed (B7);
* with the ``weighted`` strategy each reviewer's ``weight`` counts unless
  ``strategy_kwargs`` give ``weights`` (B22);
* :meth:`JudgePanel.aggregate_verdicts` accepts new verdicts as well as legacy ones (B12).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from . import _sync
from .aggregation import STRATEGIES, AggregationStrategy, avg_confidence, get_strategy, weighted
from .reviewer import Reviewer
from .schema import EnsembleResult, Verdict as LegacyVerdict
from .verdict import Verdict as NewVerdict
from .voting import strategy_name

__all__ = ["JudgePanel"]


@dataclass
class JudgePanel:
    """A panel of reviewers and an aggregation strategy (cross-judge 0.1's fields).

    Args:
        reviewers: every reviewer judges every item.
        strategy: ``majority``, ``unanimous``, ``weighted``, ``first_disagreement``
            (case-insensitive; stored as given) or a callable
            ``(verdicts, **kwargs) -> (label, disagreement)``.
        strategy_kwargs: passed to the strategy (``priority``, ``fallback``, ``weights``,
            ``use_confidence``, ``disagree_label``).

    Raises:
        KeyError: (also a ``ConfigError``) unknown strategy name, at construction.
        TypeError: a keyword the built-in strategy does not take, at construction.
    """

    reviewers: list[Reviewer]
    strategy: str | AggregationStrategy = "majority"
    strategy_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        fn = get_strategy(self.strategy)
        if any(fn is builtin for builtin in STRATEGIES.values()):
            fn([], **self._kwargs_for(fn))  # no verdicts: only the keywords are checked

    def ask(
        self, item_id: str, user_prompt: str, *, meta: dict[str, Any] | None = None
    ) -> EnsembleResult:
        """Ask every reviewer, concurrently, then aggregate (works inside a running loop).

        Raises:
            MissingAPIKeyError, UnknownVendorError, ConfigError: a reviewer is
                misconfigured (see :meth:`Reviewer.ask`); raised before any reviewer is
                called.
        """
        return _sync.run_sync(functools.partial(self.ask_async, meta=meta), item_id, user_prompt)

    async def ask_async(
        self, item_id: str, user_prompt: str, *, meta: dict[str, Any] | None = None
    ) -> EnsembleResult:
        """:meth:`ask` for async code."""
        for reviewer in self.reviewers:  # configuration errors surface before any call
            reviewer._check_timeout()
            if reviewer.client is None:
                reviewer._checked_critic()
        verdicts: list[LegacyVerdict | None] = [None] * len(self.reviewers)
        failures: list[Exception | None] = [None] * len(self.reviewers)

        async def run(index: int, reviewer: Reviewer) -> None:
            try:
                verdicts[index] = await reviewer.ask_async(user_prompt)
            except Exception as exc:  # re-raised below unwrapped, as 0.1's loop raised it
                failures[index] = exc

        async with anyio.create_task_group() as group:
            for index, reviewer in enumerate(self.reviewers):
                group.start_soon(run, index, reviewer)
        for failure in failures:
            if failure is not None:
                raise failure
        done = [v for v in verdicts if v is not None]
        return self._aggregate(item_id, done, meta or {})

    def aggregate_verdicts(
        self,
        item_id: str,
        verdicts: Sequence[LegacyVerdict | NewVerdict],
        *,
        meta: dict[str, Any] | None = None,
    ) -> EnsembleResult:
        """Aggregate verdicts obtained elsewhere; legacy and new verdicts are both accepted
        (new ones are converted with :meth:`LegacyVerdict.from_verdict`)."""
        return self._aggregate(item_id, verdicts, meta or {})

    def _aggregate(
        self,
        item_id: str,
        verdicts: Sequence[LegacyVerdict | NewVerdict],
        meta: dict[str, Any],
    ) -> EnsembleResult:
        fn = get_strategy(self.strategy)
        items: list[Any] = list(verdicts)  # new verdicts are converted by validation
        consensus, disagreement = fn(items, **self._kwargs_for(fn))
        return EnsembleResult(
            item_id=item_id,
            verdicts=items,
            consensus=consensus,
            avg_confidence=avg_confidence(items),
            disagreement=disagreement,
            strategy=strategy_name(self.strategy),
            meta=meta,
        )

    def _kwargs_for(self, fn: AggregationStrategy) -> dict[str, Any]:
        kwargs = dict(self.strategy_kwargs)
        if fn is weighted and "weights" not in kwargs:
            kwargs["weights"] = {r.reviewer_id: r.weight for r in self.reviewers}
        return kwargs
