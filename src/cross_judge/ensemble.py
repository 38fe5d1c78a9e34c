"""The :class:`Ensemble`: several critics judge one item concurrently; one vote decides.

``await ensemble.judge(query)`` starts every critic at once in one anyio task group, so a
judgement takes as long as the slowest critic, not the sum (cross-judge 0.1 called them
one after another). Verdicts come back in critic order whatever order they finish in.
The strategy and its arguments are checked at construction, before anything is billed.

Early stop (``majority`` and ``unanimous``) saves the calls whose answers could no longer
change the consensus. ``early_stop=True`` (or ``"staged"``) asks only as many critics, in
critic order, as could decide the outcome (3 of 5 for a majority), and more only while it
is undecided: fewer calls, at the price of a second round of latency when the first ones
disagree. ``early_stop="cancel"`` asks every critic at once and cancels those still
running once the outcome is decided: no extra latency, but every call was sent (a vendor
may bill a cancelled request's prompt). Either way the critics not heard from are
``kind="SKIPPED"`` with ``error_kind="early_stop"`` and count in no statistic. With a
``deadline``, critics still running when it expires give ``ERROR`` verdicts with
``error_kind="timeout"``. Cancelling the caller cancels every call in flight.

Batches (``judge_many``, ``stream``) are run by :mod:`cross_judge.batch`; the methods
here delegate to it. This module does not retry, parse or rate-limit (the critics do).

An ensemble without critics (``Ensemble(critics=[], voting=..., voting_kwargs=...)``, as
0.1 code builds to re-vote stored verdicts) is valid: it aggregates and re-votes
(:meth:`Ensemble.aggregate_verdicts`, :meth:`Ensemble.revote`) exactly as one with critics
does, and raises :class:`~cross_judge.errors.ConfigError` when asked to judge.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import os
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import TaskGroup

from . import _otel, _sync
from ._extensions import provide
from ._item import Item
from .batch import PanelMethods, stop_streams
from .budget import Budget
from .critic import Critic, active_job, warm_up
from .errors import ConfigError, ErrorKind
from .pairwise import (
    OnFlip,
    Order,
    Shown,
    check_order,
    combine_orders,
    in_own_names,
    is_pair,
    map_back,
    shown_order,
    swapped,
)
from .rubric.models import Rubric
from .rubric.tally import RubricTally, criterion_verdicts, has_criteria, infer_rubric, tally
from .transport import ChatRequest, aclose_sessions
from .verdict import ABSTAIN, EnsembleVerdict, Usage, Verdict, as_verdict, default_query_id
from .voting import (
    LABEL_STRATEGIES,
    SCORE_STRATEGIES,
    Vote,
    VotingStrategy,
    accepts_kwarg,
    agreement_pct,
    any_vote,  # noqa: F401 (importable from here, as before)
    average_score,  # noqa: F401 (importable from here, as before)
    calls_to_decide,
    first_disagreement,  # noqa: F401 (importable from here, as before)
    highest_score,  # noqa: F401 (importable from here, as before)
    krippendorff_alpha,
    lowest_score,  # noqa: F401 (importable from here, as before)
    majority_vote,  # noqa: F401 (importable from here, as before)
    median_score,  # noqa: F401 (importable from here, as before)
    outcome_is_decided,
    reconcile_labels,
    strategy_name,
    supports_early_stop,
    trimmed_mean_score,  # noqa: F401 (importable from here, as before)
    unanimous,  # noqa: F401 (importable from here, as before)
    validate_voting,
    weighted_average_score,  # noqa: F401 (importable from here, as before)
    weighted_vote,  # noqa: F401 (importable from here, as before)
)

if TYPE_CHECKING:
    from .critic import ResponseCache
    from .ranking import Ranking
    from .schema import Verdict as LegacyVerdict

__all__ = ["EarlyStop", "Ensemble", "VotingName", "default_query_id", "revote"]

EarlyStop = Literal[False, True, "staged", "cancel"]
"""``early_stop`` values: ``True`` is ``"staged"``."""

VotingName = Literal[
    "majority",
    "unanimous",
    "consensus",
    "weighted",
    "any",
    "first_disagreement",
    "average",
    "weighted_average",
    "median",
    "trimmed_mean",
    "highest",
    "lowest",
]
"""The built-in strategy names (cross-judge 0.1 had ``majority`` and ``unanimous``)."""


@dataclass(eq=False)
class Ensemble(PanelMethods):
    """A panel of critics and a voting strategy.

    The first three parameters are cross-judge 0.1's.

    Args:
        critics: the panel; names must be unique. Every critic judges every item. An empty
            panel only aggregates stored verdicts (:meth:`aggregate_verdicts`,
            :meth:`revote`); judging with it raises :class:`ConfigError`.
        voting: a registered strategy name (``majority``, ``unanimous``/``consensus``,
            ``weighted``, ``average``, ``weighted_average``, ``median``, ``any``,
            ``highest``, ``lowest``, ``first_disagreement``) or a callable
            ``(verdicts, **kwargs) -> (label, disagreement)``.
        voting_kwargs: passed to the strategy (``priority``, ``fallback``, ``errors``,
            ``ties``, ...). Checked now: an unknown or invalid argument raises.
        weights: vote weight per critic name; default each critic's ``weight``. Passed to
            strategies that accept ``weights``. With an empty panel they may name any
            critic (the stored verdicts' ``critic_id``), and default to none (1.0 each).
        min_valid: quorum: with fewer valid verdicts the consensus is the fallback; at most
            the number of critics (any integer >= 1 for an empty panel).
        early_stop: save the calls whose answers can no longer change the consensus
            (``majority`` and ``unanimous`` only): ``True``/``"staged"`` asks critics
            only as needed, ``"cancel"`` asks all at once and cancels the rest when
            decided; ``False`` asks and waits for all.
        deadline: seconds allowed for one ``judge()``; critics still running then give
            ``ERROR`` verdicts with ``error_kind="timeout"``.
        cache: a response cache for every critic (``True`` for the default file, a path,
            or a :class:`~cross_judge.cache.ResponseCache`); critics without one of their
            own use it. See :class:`~cross_judge.core.Critic`.
        order: how a pair (an item whose context holds ``response_a`` and ``response_b``)
            is shown: ``"fixed"`` (``a`` first), ``"random"`` (per item and critic,
            reproducible), ``"cyclic"`` (alternating over pairs and critics: bias cancels
            over a batch at one call per critic) or ``"both"`` (every critic judges both
            orders, two calls; a flip gives ``on_flip``). See :mod:`cross_judge.pairwise`.
            Labels are always in the item's own names. Any order but ``"fixed"`` refuses
            an item that is not a pair.
        on_flip: with ``order="both"``, a critic's verdict when its two orders disagree:
            ``"tie"`` (``TIE``) or ``"abstain"`` (``ABSTAIN``).
        pass_threshold: for a rubric panel (critics whose prompt has ``criteria``), the
            total at which an item passes, instead of the prompt's ``pass_threshold``.

    A rubric panel votes each criterion with the strategy and its policies, and decides
    the item by the weighted total (:mod:`cross_judge.rubric`). Its critics must share
    one rubric (the same criteria ids, weights, gates and scale; the wording and the
    mode may differ). ``early_stop=True`` then stops per criterion: a critic is asked only
    about the criteria still undecided (``"cancel"``, which stops whole items, is refused).
    Pairs (``order`` other than ``"fixed"``) are not judged with a rubric.

    Raises:
        ConfigError: duplicate names, an unknown strategy or argument, weights for unknown
            critics, ``early_stop`` with another strategy, an unknown ``order`` or
            ``on_flip``.
    """

    critics: list[Critic]
    voting: str | VotingStrategy = "majority"
    voting_kwargs: dict[str, Any] = field(default_factory=dict)
    weights: Mapping[str, float] | None = None
    min_valid: int | None = None
    early_stop: EarlyStop = False
    deadline: float | None = None
    cache: ResponseCache | bool | str | os.PathLike[str] | None = field(default=None, repr=False)
    order: Order = "fixed"
    on_flip: OnFlip = "tie"
    pass_threshold: float | None = None

    _rubric: Rubric | None = field(init=False, repr=False, default=None)
    _pairs_seen: int = field(init=False, repr=False, default=0)
    _strategy: VotingStrategy = field(init=False, repr=False)
    _cache: ResponseCache | None = field(init=False, repr=False, default=None)
    _kwargs: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.critics = list(self.critics)
        names = [c.name for c in self.critics]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"critic names must be unique in an Ensemble; repeated: {duplicates}")
        given: dict[str, Any] = dict(self.weights or {})
        if self.critics:
            unknown = sorted(set(given) - set(names))
            if unknown:
                raise ConfigError(f"weights name unknown critics {unknown}; critics are {names}")
            given = {c.name: given.get(c.name, c.weight) for c in self.critics}
        # else: an empty panel re-votes stored verdicts, whose critic ids the weights name.
        self.weights = _checked_weights(given)
        if self.min_valid is not None and (
            isinstance(self.min_valid, bool)
            or not isinstance(self.min_valid, int)
            or self.min_valid < 1
            or (self.critics and self.min_valid > len(self.critics))
        ):
            most = f"the number of critics ({len(self.critics)})" if self.critics else "any"
            raise ConfigError(
                f"min_valid must be an integer from 1 to {most}, got {self.min_valid!r}"
            )
        if self.deadline is not None and not (
            isinstance(self.deadline, (int, float)) and self.deadline > 0
        ):
            raise ConfigError(f"deadline must be a number of seconds > 0, got {self.deadline!r}")
        self._strategy, self._kwargs = _resolve(
            self.voting, self.voting_kwargs, self.weights, self.min_valid
        )
        if self.cache is not None and self.cache is not False:
            from .critic import resolve_cache

            self._cache = resolve_cache(self.cache)
        if self.early_stop not in (False, True, "staged", "cancel"):
            raise ConfigError(
                f"early_stop must be False, True, 'staged' or 'cancel', got {self.early_stop!r}"
            )
        check_order(self.order, self.on_flip)
        self._rubric = _panel_rubric(self.critics, self.pass_threshold)
        for keyword, problem in voting_label_problems(
            self.critics, self._strategy, self._kwargs, order=self.order, on_flip=self.on_flip
        ):
            raise ConfigError(f"voting_kwargs[{keyword!r}]: {problem}")
        if self._rubric is not None and self.order != "fixed":
            raise ConfigError(
                f"order={self.order!r} judges pairs, and a rubric judges one item on its "
                "criteria; use order='fixed' with a rubric prompt"
            )
        if self._rubric is not None and self.early_stop == "cancel":
            raise ConfigError(
                "early_stop='cancel' stops whole items; a rubric panel stops per criterion: "
                "use early_stop=True (staged: critics are asked only about undecided criteria)"
            )
        if self.early_stop and not supports_early_stop(self._strategy):
            raise ConfigError(
                f"early_stop supports the majority and unanimous strategies, not "
                f"{strategy_name(self.voting)!r}; set early_stop=False"
            )

    @property
    def rubric(self) -> Rubric | None:
        """The rubric this panel's critics share (with ``pass_threshold`` as its pass mark
        when given), or ``None`` for a panel that judges without one."""
        return self._rubric

    # -- judging --------------------------------------------------------------------------

    async def judge(
        self,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
        criteria: Sequence[str] | None = None,
        sit_out: Collection[str] | None = None,
    ) -> EnsembleVerdict:
        """Judge an item with every critic concurrently and aggregate.

        Every prompt is rendered before the first request, so a template mistake raises
        :class:`~cross_judge.errors.PromptError` before any critic is billed. Vendor
        failures never raise: they are verdicts.

        Args:
            query: the item to judge: an :class:`~cross_judge.batch.Item`, or its text
                (with ``query_id``, ``context`` and ``meta`` as keywords, which an item
                carries itself).
            query_id: the item's id; default :func:`default_query_id`.
            context: values for the critics' template fields.
            meta: copied to ``EnsembleVerdict.meta``.
            budget_usd: a spending cap in USD for this judgement, or a
                :class:`~cross_judge.budget.Budget` shared with other calls. Each critic's
                worst case is reserved before its call; critics that do not fit are not
                called and give ``SKIPPED`` verdicts with ``error_kind="budget"``.
            criteria: a rubric panel judges only these criterion ids (default all); the
                result's ``criteria`` and total then cover them only (a cascade asks its
                later tiers about the disputed criteria this way).
            sit_out: names of critics that must not judge this item (a ranking's
                self-preference rule: a critic does not judge a pair involving its own
                model family). Each gives a ``SKIPPED`` verdict with
                ``error_kind="self_preference"``, costs nothing and counts in no statistic
                (not a vote, not an error). Every critic sitting out leaves the consensus
                to the strategy's fallback. Not for a rubric panel.

        Raises:
            PromptError: a template field is missing from ``context`` (before any critic
                is called).
            ConfigError: the ensemble has no critics, a budget is given but a critic's
                model has no known price, a response cache file cannot be used, or
                ``sit_out`` names a critic not in the panel or is given to a rubric panel
                (before any critic is called).
            TypeError: an :class:`~cross_judge.batch.Item` given with ``query_id``,
                ``context`` or ``meta``.

        With OpenTelemetry installed, the judgement is a ``cross_judge.judge`` span, parent
        of its critics' ``chat`` spans (:mod:`cross_judge._otel`).

        The first call of a process does its one-off set-up (the price table, the
        OpenTelemetry API, the HTTP client) in worker threads, so that it does not stall
        the event loop (:mod:`cross_judge.critic._warmup`).
        """
        item = Item.of(query, query_id=query_id, context=context, meta=meta)
        await warm_up()  # before the span and the price checks, which would do it on the loop
        if _otel.available:  # without OpenTelemetry, this branch is the whole cost
            with _otel.judge_span(self, item.query) as span:
                return span.ended(await self._judge(item, budget_usd, criteria, sit_out))
        return await self._judge(item, budget_usd, criteria, sit_out)

    async def _judge(
        self,
        item: Item,
        budget_usd: Budget | float | None,
        criteria: Sequence[str] | None = None,
        sit_out: Collection[str] | None = None,
    ) -> EnsembleVerdict:
        """:meth:`judge`, untraced."""
        self.check_can_judge()
        query, query_id, meta = item.query, item.id, item.meta
        context = item.context or None
        self.check_item(query, context)
        sitting = self._sitting_out(sit_out)
        budget = Budget.of(budget_usd)
        if budget is not None:
            self.check_prices()
        if self._rubric is not None and sitting:
            raise ConfigError(
                "sit_out leaves critics out of a pair; a rubric panel judges one item on its "
                "criteria, so give it no sit_out"
            )
        if self._rubric is not None:
            return await self._judge_rubric(item, budget, self.item_rubric(item), criteria)
        if criteria is not None:
            raise ConfigError(
                "criteria= names criteria of a rubric, and this panel's critics judge with no "
                "rubric; give them a prompt with criteria, or leave criteria out"
            )
        pair = is_pair(context)
        if pair:
            assert context is not None
            plans = self._pair_requests(query, query_id, context)
        else:
            plans = [[(None, critic.build_request(item))] for critic in self.critics]
        await self.check_caches()
        started = time.perf_counter()
        n = len(self.critics)
        results: list[Verdict | None] = [None] * n
        staged = self.early_stop in (True, "staged")
        launched = 0
        stopped_early = False

        def launch(count: int, group: TaskGroup) -> None:
            nonlocal launched
            for index in range(launched, min(n, launched + count)):
                group.start_soon(run, index, group)
            launched = min(n, launched + count)

        async def run(index: int, group: TaskGroup) -> None:
            nonlocal stopped_early
            if index in sitting:
                results[index] = _sat_out(self.critics[index])
            else:
                results[index] = await self._ask(self.critics[index], plans[index], budget)
            if not self.early_stop or stopped_early:
                return
            done = [v for v in results if v is not None]
            if outcome_is_decided(self._strategy, done, n - len(done), self._kwargs):
                stopped_early = True
                group.cancel_scope.cancel()
            elif staged and launched == len(done):  # nothing in flight: ask more
                launch(calls_to_decide(self._strategy, done, n - len(done), self._kwargs), group)

        # No cancel scope without a deadline: one fewer per item on the batch hot path.
        # In batch mode a call may wait hours for its batch: the job has its own deadline.
        deadline = (
            anyio.move_on_after(self.deadline)
            if self.deadline is not None and active_job() is None
            else nullcontext()
        )
        with deadline:
            async with anyio.create_task_group() as group:
                first = calls_to_decide(self._strategy, [], n, self._kwargs) if staged else n
                launch(first - 1, group)
                # This task makes the last of the first calls itself: one task fewer to
                # spawn per judgement (~30 us of an anyio task, measured).
                own = launched
                launched += 1
                await run(own, group)

        elapsed = time.perf_counter() - started
        finished = sum(v is not None for v in results)
        verdicts = [
            _sat_out(critic)
            if index in sitting
            else v
            if v is not None
            else self._unfinished(critic, stopped_early, finished, elapsed, index < launched)
            for index, (critic, v) in enumerate(zip(self.critics, results, strict=True))
        ]
        result = self.aggregate_verdicts(verdicts, query_id=query_id, meta=meta, elapsed_s=elapsed)
        if pair:
            assert context is not None
            result.pair_lengths = [len(str(context[name])) for name in ("response_a", "response_b")]
        return result

    async def _judge_rubric(
        self,
        item: Item,
        budget: Budget | None,
        rubric: Rubric,
        criteria: Sequence[str] | None,
    ) -> EnsembleVerdict:
        """:meth:`judge` for a rubric panel: every critic on every criterion asked, or,
        with early stop, each critic only on the criteria still undecided (critics in
        order, as few at a time as could decide each criterion)."""
        wanted = rubric.select(criteria, whose="the panel's rubric")
        # Every prompt rendered before the first call: a template mistake costs nothing.
        plans = [critic.rubric_requests(item, None, wanted) for critic in self.critics]
        await self.check_caches()
        started = time.perf_counter()
        n = len(self.critics)
        results: list[Verdict | None] = [None] * n
        launched = 0
        decided = False

        async def ask(index: int, ids: tuple[str, ...]) -> None:
            critic = self.critics[index]
            plan = plans[index] if ids == wanted else critic.rubric_requests(item, None, ids)
            results[index] = await critic.judge_rubric_requests(
                plan, budget=budget, cache=self._cache
            )

        deadline = (
            anyio.move_on_after(self.deadline)
            if self.deadline is not None and active_job() is None
            else nullcontext()
        )
        with deadline:
            if not self.early_stop:
                launched = n
                async with anyio.create_task_group() as group:
                    for index in range(1, n):
                        group.start_soon(ask, index, wanted)
                    await ask(0, wanted)
            while self.early_stop and launched < n:
                needed = self._still_needed(wanted, results[:launched], n - launched)
                if not needed:
                    decided = True
                    break
                size = max(needed.values())
                async with anyio.create_task_group() as group:
                    for offset in range(size):
                        ids = tuple(cid for cid in wanted if needed.get(cid, 0) > offset)
                        group.start_soon(ask, launched + offset, ids)
                launched += size
        elapsed = time.perf_counter() - started
        finished = sum(v is not None for v in results)
        verdicts = [
            v
            if v is not None
            else self._unfinished(critic, decided, finished, elapsed, index < launched)
            for index, (critic, v) in enumerate(zip(self.critics, results, strict=True))
        ]
        return _aggregate(
            verdicts,
            self._strategy,
            strategy_name(self.voting),
            self._kwargs,
            query_id=item.id,
            meta=item.meta,
            elapsed_s=elapsed,
            rubric=rubric,
            criteria=None if criteria is None else wanted,
        )

    def _still_needed(
        self, ids: Sequence[str], asked: Sequence[Verdict | None], remaining: int
    ) -> dict[str, int]:
        """For staged early stop on a rubric: per criterion not yet decided by the critics
        ``asked``, how many more critics could decide it."""
        done = [v for v in asked if v is not None]
        needed: dict[str, int] = {}
        for cid in ids:
            views = criterion_verdicts(done, cid)
            if done and outcome_is_decided(self._strategy, views, remaining, self._kwargs):
                continue
            count = calls_to_decide(self._strategy, views, remaining, self._kwargs)
            if count > 0:
                needed[cid] = count
        return needed

    def _pair_requests(
        self, query: str, query_id: str, context: Mapping[str, Any]
    ) -> list[list[tuple[Shown | None, ChatRequest]]]:
        """Per critic, the orders it is shown the pair in and their requests."""
        number = self._pairs_seen
        self._pairs_seen += 1
        flipped = swapped(context)
        plans: list[list[tuple[Shown | None, ChatRequest]]] = []
        for index, critic in enumerate(self.critics):
            if self.order == "both":
                shown: list[Shown] = ["ab", "ba"]
            else:
                seed = f"{query_id}|{critic.name}"
                shown = [shown_order(self.order, pair_number=number, critic_index=index, seed=seed)]
            plans.append(
                [
                    (way, critic.build_request(query, context if way == "ab" else flipped))
                    for way in shown
                ]
            )
        return plans

    async def _ask(
        self,
        critic: Critic,
        plan: Sequence[tuple[Shown | None, ChatRequest]],
        budget: Budget | None,
    ) -> Verdict:
        """One critic's verdict: one call, or, for a pair in both orders, two at once."""
        if len(plan) == 1:
            shown, request = plan[0]
            verdict = await critic.judge_request(request, budget=budget, cache=self._cache)
            return verdict if shown is None else _own_names(critic, verdict, shown)
        answers: list[Verdict | None] = [None, None]

        async def one(slot: int) -> None:
            shown, request = plan[slot]
            verdict = await critic.judge_request(request, budget=budget, cache=self._cache)
            assert shown is not None
            answers[slot] = _own_names(critic, verdict, shown)

        async with anyio.create_task_group() as group:
            group.start_soon(one, 1)
            await one(0)
        first, second = answers
        assert first is not None
        assert second is not None
        return combine_orders(first, second, on_flip=self.on_flip, score_of=_score_map(critic))

    def _sitting_out(self, sit_out: Collection[str] | None) -> frozenset[int]:
        """The indices of the critics named in ``sit_out``.

        Raises:
            ConfigError: a name that is not one of this panel's critics.
        """
        if not sit_out:
            return frozenset()
        if isinstance(sit_out, str):
            sit_out = [sit_out]
        names = [c.name for c in self.critics]
        unknown = sorted(set(sit_out) - set(names))
        if unknown:
            raise ConfigError(f"sit_out names unknown critics {unknown}; critics are {names}")
        return frozenset(i for i, name in enumerate(names) if name in sit_out)

    def item_rubric(self, item: Item) -> Rubric:
        """The rubric this panel judges ``item`` on: its :attr:`rubric`, or for unit prompts
        (``unit: turn``/``step``) one criterion per turn or step of the item, with the
        panel's pass mark.

        Raises:
            ConfigError: the panel has no rubric.
            ItemError: as :meth:`Critic.item_rubric <cross_judge.core.Critic.item_rubric>`.
        """
        rubric = self._rubric
        if rubric is None:
            raise ConfigError("this panel's critics judge with no rubric")
        if rubric.unit is None:
            return rubric
        return rubric.for_units(self.critics[0].item_rubric(item).units)

    def check_item(self, query: str | Item, context: Mapping[str, Any] | None = None) -> None:
        """Raise unless the item (an :class:`~cross_judge.batch.Item`, or its query and
        ``context``) can be judged under :attr:`order`: any order but ``"fixed"`` needs a
        pair.

        Raises:
            ConfigError: saying what the item lacks.
        """
        if isinstance(query, Item):
            context = query.context
        if self.order != "fixed" and not is_pair(context):
            raise ConfigError(
                f"order={self.order!r} judges pairs, and this item is not one: give it "
                "context={'response_a': ..., 'response_b': ...} (in JSONL, \"a\" and \"b\"), "
                "or use order='fixed'"
            )

    async def check_caches(self) -> None:
        """Open every response cache in use now, so that an unusable cache file raises its
        ``ConfigError`` here, not wrapped in an exception group from the critics' tasks.
        Costs nothing once the caches are open.

        Raises:
            ConfigError: a cache file cannot be used.
        """
        caches = {
            id(c): c
            for c in (self._cache, *(x.response_cache for x in self.critics))
            if c is not None
        }
        for cache in caches.values():
            await cache.acheck()

    def check_can_judge(self) -> None:
        """Raise unless this ensemble can judge items, i.e. has at least one critic.

        Raises:
            ConfigError: an empty panel, which only aggregates stored verdicts.
        """
        if not self.critics:
            raise ConfigError(
                "this Ensemble has no critics, so it cannot judge: an empty Ensemble only "
                "aggregates stored verdicts (aggregate_verdicts, revote); pass "
                "critics=[Critic(...), ...] to judge items"
            )

    def check_prices(self) -> None:
        """Raise unless every critic's model has a known price (needed by a budget).

        Raises:
            ConfigError: naming the first critic without one and how to add it.
        """
        for critic in self.critics:
            if critic.price() is None:
                raise ConfigError(critic.no_price_message(critic.endpoint()))

    def _unfinished(
        self, critic: Critic, stopped_early: bool, finished: int, elapsed: float, sent: bool
    ) -> Verdict:
        if stopped_early:
            what = "cancelled" if sent else "not asked"
            return critic.unfinished_verdict(
                "SKIPPED",
                f"early_stop: {what}; the outcome was decided after {finished} of "
                f"{len(self.critics)} critics",
                ErrorKind.EARLY_STOP,
                elapsed_s=elapsed,
                sent=sent,
            )
        return critic.unfinished_verdict(
            "ERROR",
            f"timeout: ensemble deadline of {self.deadline:g}s exceeded"
            + ("" if sent else " before this critic was asked"),
            ErrorKind.TIMEOUT,
            elapsed_s=elapsed,
            sent=sent,
        )

    def aggregate_verdicts(
        self,
        verdicts: Sequence[Verdict | LegacyVerdict],
        *,
        query_id: str,
        meta: Mapping[str, Any] | None = None,
        elapsed_s: float = 0.0,
    ) -> EnsembleVerdict:
        """Aggregate verdicts produced elsewhere (0.1 API); calls no model.

        Legacy verdicts (``LegacyVerdict``) are accepted and converted, so the result
        always holds new :class:`~cross_judge.verdict.Verdict` objects.
        """
        return _aggregate(
            verdicts,
            self._strategy,
            strategy_name(self.voting),
            self._kwargs,
            query_id=query_id,
            meta=meta,
            elapsed_s=elapsed_s,
            rubric=self._rubric,
        )

    def revote(
        self, result: EnsembleVerdict, voting: str | VotingStrategy | None = None, **kwargs: Any
    ) -> EnsembleVerdict:
        """:func:`revote` with this ensemble's weights (and, with ``voting=None``, its
        strategy and arguments updated by ``kwargs``)."""
        if voting is None:
            voting, kwargs = self.voting, {**self.voting_kwargs, **kwargs}
        return revote(result, voting, weights=self.weights, min_valid=self.min_valid, **kwargs)

    # -- ranking --------------------------------------------------------------------------

    async def rank(
        self, candidates: Mapping[str, Any], *, order: Order | None = None, **options: Any
    ) -> Ranking:
        """Rank ``candidates`` from pairs judged by this panel: see
        :func:`cross_judge.ranking.rank` for the options (``query``/``queries``, ``pairs``,
        ``budget``, ``seed``, ``level``, ``ci``, ``families``, batch options).

        ``order``: how pairs are shown for this ranking. Default: ``"both"`` when this
        panel's order is ``"fixed"`` (every critic judges both orders, two calls per
        pair, so no candidate gains from being shown first), else the panel's own. Any
        other order ranks with a copy of this panel with that order.
        """
        chosen = order if order is not None else "both" if self.order == "fixed" else self.order
        panel = self if chosen == self.order else dataclasses.replace(self, order=chosen)
        from .ranking import rank  # the ranking's modules load on the first ranking

        return await rank(panel, candidates, **options)

    def rank_sync(
        self, candidates: Mapping[str, Any], *, order: Order | None = None, **options: Any
    ) -> Ranking:
        """:meth:`rank` for synchronous code; also works inside a running event loop."""
        self.check_can_judge()
        return _sync.run_sync(functools.partial(self.rank, candidates, order=order, **options))

    # -- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop this ensemble's streams still running on this event loop (their calls in
        flight are cancelled), then close the pooled connections of every critic on it.

        A critic whose endpoint cannot be resolved (its base URL was refused) has no pool
        and is skipped.
        """
        await stop_streams(self)
        urls: set[str] = set()
        for critic in self.critics:
            if critic.http_client is not None:
                continue
            try:
                urls.add(critic.endpoint().base_url)
            except ConfigError:
                continue
        await aclose_sessions(sorted(urls))

    async def __aenter__(self) -> Ensemble:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@provide("revote")
def revote(
    result: EnsembleVerdict,
    voting: str | VotingStrategy = "majority",
    *,
    weights: Mapping[str, float] | None = None,
    min_valid: int | None = None,
    **voting_kwargs: Any,
) -> EnsembleVerdict:
    """Re-aggregate a stored result with another strategy. Calls no model.

    The verdicts, ``query_id``, ``meta`` and ``elapsed_s`` are kept; every aggregate field
    is recomputed. Weights default to 1.0 per critic (verdicts do not store weights).

    Raises:
        UnknownStrategyError: (a :class:`~cross_judge.errors.ConfigError`) an unknown
            strategy name; ``"dawid_skene"``, which learns from a whole batch, says to use
            ``batch.revote("dawid_skene")`` (:meth:`BatchResult.revote
            <cross_judge.batch.BatchResult.revote>`) instead.
        ConfigError: invalid arguments.
    """
    strategy, kwargs = _resolve(voting, voting_kwargs, weights, min_valid)
    return _revoted(result, strategy, strategy_name(voting), kwargs)


@provide("revote_many")
def revote_many(
    results: Iterable[EnsembleVerdict],
    voting: str | VotingStrategy = "majority",
    *,
    weights: Mapping[str, float] | None = None,
    min_valid: int | None = None,
    **voting_kwargs: Any,
) -> list[EnsembleVerdict]:
    """:func:`revote` of each of ``results``, in order, with the strategy resolved and
    checked once (not once an item): what :meth:`BatchResult.revote
    <cross_judge.batch.BatchResult.revote>` calls. Raises as :func:`revote`, before any
    result is touched."""
    strategy, kwargs = _resolve(voting, voting_kwargs, weights, min_valid)
    name = strategy_name(voting)
    return [_revoted(result, strategy, name, kwargs) for result in results]


def _revoted(
    result: EnsembleVerdict, strategy: VotingStrategy, name: str, kwargs: Mapping[str, Any]
) -> EnsembleVerdict:
    """``result`` re-aggregated by the resolved ``strategy``."""
    return _aggregate(
        result.verdicts,
        strategy,
        name,
        kwargs,
        query_id=result.query_id,
        meta=result.meta,
        elapsed_s=result.elapsed_s,
        rubric=result.rubric,
        criteria=None if result.criteria is None else list(result.criteria),
    )


def _panel_rubric(critics: Sequence[Critic], threshold: float | None) -> Rubric | None:
    """The rubric the critics share (with ``threshold`` as its pass mark when given), or
    ``None`` when none has one.

    Raises:
        ConfigError: some critics have a rubric and others not, their rubrics differ in
            criteria ids, weights, gates or scale, or in pass mark with no ``threshold``
            to choose one, or ``threshold`` is not in [0, 1].
    """
    rubrics = [(c.name, c.rubric) for c in critics]
    having = [(name, r) for name, r in rubrics if r is not None]
    if not having:
        if threshold is not None:
            raise ConfigError(
                "pass_threshold is the pass mark of a rubric's total, and no critic judges "
                "with a rubric; give the critics a prompt with criteria or leave it out"
            )
        return None
    without = [name for name, r in rubrics if r is None]
    if without:
        raise ConfigError(
            f"critics {without} judge with no rubric while {[n for n, _ in having]} do; a "
            "rubric panel votes per criterion, so give every critic a prompt with criteria"
        )
    first_name, first = having[0]

    def shape(r: Rubric) -> tuple[Any, ...]:
        criteria = tuple((c.id, c.weight, c.gate) for c in r.criteria)
        return criteria, tuple(r.scale.items()), r.unit

    for name, other in having[1:]:
        if shape(other) != shape(first):
            raise ConfigError(
                f"critic {name!r} judges with another rubric than {first_name!r} (criteria "
                "ids, weights, gates or scale differ); a panel votes each criterion, so its "
                "critics must share one rubric"
            )
    if threshold is None:
        marks = sorted({r.threshold for _, r in having})
        if len(marks) > 1:
            raise ConfigError(
                f"the critics' rubric prompts pass items at different totals {marks}; choose "
                "one with Ensemble(pass_threshold=...) (a panel file's pass_threshold:)"
            )
        return first
    if isinstance(threshold, bool) or not (
        isinstance(threshold, (int, float)) and 0.0 <= threshold <= 1.0
    ):
        raise ConfigError(f"pass_threshold must be a number in [0, 1], got {threshold!r}")
    return first.model_copy(update={"threshold": float(threshold)})


_ABSTENTIONS = frozenset({ErrorKind.SELF_PREFERENCE, ErrorKind.NO_VISION, ErrorKind.TOO_LARGE})
"""Why a critic gives no vote without anything having failed: a ``SKIPPED`` verdict of
one of these kinds counts in ``n_errors`` no more than in the vote."""


def _sat_out(critic: Critic) -> Verdict:
    """The verdict of ``critic`` sitting out an item (self-preference): no call made."""
    return critic.unfinished_verdict(
        "SKIPPED",
        f"self_preference: critic {critic.name!r} (family {critic.family!r}) sat out a pair "
        "involving a candidate of its own family",
        ErrorKind.SELF_PREFERENCE,
        sent=False,
    )


def _score_map(critic: Critic) -> Mapping[str, float] | None:
    """The label -> score map of the critic's prompt, if it has one."""
    spec = critic.prompt
    if spec is None or isinstance(spec, str):
        return None
    return spec.score or None


def _own_names(critic: Critic, verdict: Verdict, shown: Shown) -> Verdict:
    """``verdict`` with its label in the item's names; its score re-read from the prompt's
    map for the mapped label (a score the model wrote itself is kept only for ``"ab"``)."""
    scores = _score_map(critic)
    if scores is not None and verdict.error is None:
        score = scores.get(map_back(verdict.kind, shown))
    else:
        score = verdict.score if shown == "ab" else None
    return in_own_names(verdict, shown, score)


_UNHEEDED = {
    "priority": "ties are broken only between the labels voted",
    "target": "only a vote for the target decides",
    "pass_label": "this strategy decides between the labels voted",
    "fail_label": "this strategy decides between the labels voted",
    "scores": "a score is looked up by the label voted",
}


def voting_label_problems(
    critics: Sequence[Critic],
    strategy: VotingStrategy,
    kwargs: Mapping[str, Any],
    *,
    order: str = "fixed",
    on_flip: str = "tie",
) -> list[tuple[str, str]]:
    """``(keyword, problem)`` for each voting keyword of a built-in ``strategy`` that names
    a label the ``critics`` never give, so it would silently do nothing: ``priority``,
    ``target`` and the keys of ``scores`` for every built-in, and ``pass_label`` /
    ``fail_label`` for the label strategies (``majority``, ``unanimous``, ``weighted``,
    ``any``, ``first_disagreement``; the score strategies *produce* those two, so any
    label goes there). The labels a vote may hold are the critics' ``labels`` as written,
    ``TIE``/``ABSTAIN`` of a flip with ``order="both"``, and ``fail_label`` with
    ``errors="fail"``. Each problem names the label, the critics' labels and a close match.

    Nothing is checked (``[]``) for a custom strategy (its keywords may mean anything),
    without critics, when a critic has no ``labels`` (any label may come: cross-judge
    0.1's critics), or for a rubric panel (its votes are per criterion, on the rubric's
    scale). ``fallback``, ``abstain_label`` and ``disagree_label`` name what a vote gives
    when it decides nothing, and may be any label.
    """
    label_strategy = strategy in LABEL_STRATEGIES
    if not critics or not (label_strategy or strategy in SCORE_STRATEGIES):
        return []
    if any(c.labels is None or c.rubric is not None for c in critics):
        return []
    allowed = list(dict.fromkeys(label for c in critics for label in c.labels or ()))
    if order == "both":
        allowed.append("TIE" if on_flip == "tie" else ABSTAIN)
    if kwargs.get("errors") == "fail":
        allowed.append(str(kwargs.get("fail_label", "FAIL")))
    named: dict[str, list[str]] = {
        "priority": list(kwargs.get("priority") or ()) if label_strategy else [],
        "target": [kwargs["target"]] if isinstance(kwargs.get("target"), str) else [],
        "pass_label": [kwargs["pass_label"]] if label_strategy and "pass_label" in kwargs else [],
        "fail_label": [kwargs["fail_label"]] if label_strategy and "fail_label" in kwargs else [],
        "scores": list(kwargs.get("scores") or ()),
    }
    problems: list[tuple[str, str]] = []
    for keyword, labels in named.items():
        unknown = [label for label in labels if label not in allowed]
        if not unknown:
            continue
        shown = ", ".join(repr(label) for label in unknown)
        close = _close_label(unknown[0], allowed)
        hint = f" (did you mean {close!r}?)" if close else ""
        verb, it = ("is not a label", "it") if len(unknown) == 1 else ("are not labels", "they")
        problems.append(
            (
                keyword,
                f"{shown} {verb} the critics give{hint}, so {it} would do nothing "
                f"({_UNHEEDED[keyword]}); the critics' labels are {', '.join(allowed)}",
            )
        )
    return problems


def _close_label(label: str, allowed: Sequence[str]) -> str | None:
    """The allowed label ``label`` most likely meant: the same in another case, else the
    closest spelling (``difflib``), else ``None``."""
    folded = [a for a in allowed if a.casefold() == label.casefold()]
    if folded:
        return folded[0]
    close = difflib.get_close_matches(label, allowed, n=1)
    return close[0] if close else None


def _checked_weights(weights: Mapping[str, Any]) -> dict[str, float]:
    """``weights`` as floats.

    Raises:
        ConfigError: a weight is not a finite number >= 0.
    """
    checked: dict[str, float] = {}
    bad: dict[str, Any] = {}
    for name, weight in weights.items():
        try:
            number = float(weight)
        except (TypeError, ValueError):
            number = math.nan
        if math.isfinite(number) and number >= 0:
            checked[name] = number
        else:
            bad[name] = weight
    if bad:
        raise ConfigError(f"weights must be finite and >= 0, got {bad}")
    return checked


def _resolve(
    voting: str | VotingStrategy,
    voting_kwargs: Mapping[str, Any],
    weights: Mapping[str, float] | None,
    min_valid: int | None,
) -> tuple[VotingStrategy, dict[str, Any]]:
    kwargs = dict(voting_kwargs)
    candidate = validate_voting(voting, {})
    if weights is not None and "weights" not in kwargs and accepts_kwarg(candidate, "weights"):
        kwargs["weights"] = dict(weights)
    if min_valid is not None:
        if not accepts_kwarg(candidate, "min_valid"):
            raise ConfigError(
                f"min_valid needs a strategy that accepts it; {strategy_name(voting)!r} does not"
            )
        kwargs.setdefault("min_valid", min_valid)
    return validate_voting(voting, kwargs), kwargs


def _aggregate(
    given: Sequence[Verdict | LegacyVerdict],
    strategy: VotingStrategy,
    name: str,
    kwargs: Mapping[str, Any],
    *,
    query_id: str,
    meta: Mapping[str, Any] | None,
    elapsed_s: float,
    rubric: Rubric | None = None,
    criteria: Sequence[str] | None = None,
    tier: int | None = None,
) -> EnsembleVerdict:
    """The :class:`EnsembleVerdict` of ``given``: the strategy's vote, or, with a rubric
    (given, or inferred from verdicts holding ``criteria``), the vote per criterion in
    ``criteria`` (default all) and the item's weighted total (:mod:`cross_judge.rubric`)."""
    # Look-alike labels are one label for the vote and for every statistic below.
    verdicts = reconcile_labels([as_verdict(v) for v in given], kwargs)
    if rubric is None and has_criteria(verdicts):
        rubric = infer_rubric(verdicts)
    judged: RubricTally | None = None
    if rubric is not None:
        judged = tally(verdicts, rubric, strategy, kwargs, ids=criteria, tier=tier)
        vote: Any = Vote(
            judged.consensus, judged.disagreement, judged.total, fallback=judged.fallback
        )
    else:
        vote = strategy(verdicts, **kwargs)
    consensus, disagreement = vote
    valid = [v for v in verdicts if v.error is None]
    saved = sum(1 for v in verdicts if v.error_kind is ErrorKind.EARLY_STOP)
    # A critic sitting out (self-preference) or abstaining on an item it cannot take (its
    # images unseen, its request over the vendor's size limit) was never meant to vote:
    # not an error either.
    sat_out = sum(1 for v in verdicts if v.error_kind in _ABSTENTIONS)
    usage = Usage()
    for v in verdicts:
        if v.usage is not None:
            usage = usage + v.usage
    # A verdict counts when a call was made (or answered from the cache), or when it states
    # a cost (a call refused by the budget: $0). A made call of unknown cost makes the
    # total unknown.
    costs = [v.cost_usd for v in verdicts if v.attempts > 0 or v.cached or v.cost_usd is not None]
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=verdicts,
        consensus=str(consensus),
        avg_confidence=sum(v.confidence for v in valid) / len(valid) if valid else 0.0,
        disagreement=bool(disagreement),
        agreement_pct=agreement_pct(verdicts, str(consensus))
        if judged is None
        else judged.agreement_pct,
        krippendorff_alpha=krippendorff_alpha(verdicts) if judged is None else judged.alpha,
        voting=name,
        meta=dict(meta or {}),
        score=getattr(vote, "score", None),
        fallback=bool(getattr(vote, "fallback", False)),
        n_valid=len(valid),
        n_errors=len(verdicts) - len(valid) - saved - sat_out,
        calls_saved=saved,
        dissenters=[v.critic_id for v in valid if v.kind != consensus],
        usage=usage,
        cost_usd=sum(c for c in costs if c is not None)
        if costs and all(c is not None for c in costs)
        else None,
        elapsed_s=round(elapsed_s, 3),
        criteria=None if judged is None else judged.criteria,
        rubric=rubric,
    )
