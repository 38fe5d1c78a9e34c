"""Ranking many candidates: which pairs to judge, judging them through a panel's batch
path, and fitting the :class:`~cross_judge.ranking._model.Ranking`.

Every pair is an ordinary item (``context={"response_a": ..., "response_b": ...}``)
judged by :func:`cross_judge.batch.judge_many`, so the panel's limits, response cache,
budget and provider batch mode apply as to any batch. Item ids are derived from the query
and both candidates (ids and texts), so a rerun asks the same items: answered from the
cache, or skipped when the earlier results are passed as ``resume``.

Which candidate of a pair is ``a`` (shown first under ``order="fixed"``) is a coin from
sha256 of the pair, so a position bias falls on candidates evenly instead of favouring
whichever was listed first. ``order="both"`` (the default of ``Ensemble.rank``) removes
it per pair.

Above 100 candidates nothing here lists every pair: the adaptive rounds look only at the
pairs they judge and their neighbours in the order (:mod:`cross_judge.ranking._design`),
random pairs are drawn by rejection, and ``pairs="all"`` is counted (and refused above
``max_calls``) before its items are made, so 10,000 candidates cost what their budget does,
not 50 million pairs.

This module does not vote or fit: the panel votes, :mod:`cross_judge.stats.bradley_terry`
fits, :mod:`cross_judge.ranking._model` turns the fit into a ranking.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import Unpack

from .._item import Item
from ..batch import Panel, PanelView, RunOptions, judge_many
from ..critic import Template
from ..errors import ConfigError
from ..pairwise import PAIR_FIELDS
from ..stats import fisher_group_limit
from ..verdict import EnsembleVerdict
from ._design import initial_design, next_pairs, random_pairs
from ._model import (
    DEFAULT_PRIOR,
    META_KEY,
    CIMethod,
    FitMethod,
    Ranking,
    check_vote_weights,
    fit_ranking,
    recorded_calls,
    resolve_fit,
)

if TYPE_CHECKING:
    from ..budget import Budget

__all__ = [
    "DEFAULT_MAX_CALLS",
    "CandidatePool",
    "PairDesign",
    "RankPlan",
    "calls_per_pair",
    "next_pairs",
    "rank",
]

PairDesign = Literal["all", "adaptive", "random"]
"""Which pairs a ranking judges: every pair, adaptively where the order is unsure, or
uniformly random pair items within a budget (the baseline an adaptive design is measured
against)."""

DEFAULT_MAX_CALLS = 100_000
"""The most calls ``pairs="all"`` makes unless told more (``rank(max_calls=...)``,
``cross-judge rank --max-calls``): every pair of 10,000 candidates is 50 million items,
so a ranking that large has to be asked for, not stumbled into."""


@dataclass(frozen=True)
class _PairItem:
    """One pair judged on one query: ``a`` and ``b`` as shown (``a`` first)."""

    id: str
    a: str
    b: str
    query: int | None  # index into queries; None with one query
    query_text: str
    text_a: str
    text_b: str

    def as_item(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "query": self.query_text,
            "context": {"response_a": self.text_a, "response_b": self.text_b},
            "meta": {META_KEY: {"a": self.a, "b": self.b, "query": self.query}},
        }


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class CandidatePool:
    """The candidates and queries of a ranking, and every pair item they allow."""

    def __init__(
        self,
        candidates: Mapping[str, Any],
        query: str | None,
        queries: Sequence[str] | None,
    ) -> None:
        if not isinstance(candidates, Mapping):
            raise ConfigError(
                "candidates must map an id to its text (with query=) or to its answer per "
                "query (with queries=)"
            )
        self.ids = [str(c) for c in candidates]
        if len(self.ids) < 2:
            raise ConfigError(f"a ranking needs at least 2 candidates, got {len(self.ids)}")
        if (query is None) == (queries is None):
            raise ConfigError(
                "give exactly one of query= (one question; candidates map id -> text) or "
                "queries= (many; candidates map id -> {query: answer})"
            )
        self.queries: list[str] = [query] if query is not None else list(queries or [])
        self.one_query = query is not None
        if len(set(self.queries)) != len(self.queries):
            raise ConfigError("queries must be distinct")
        self.answers: dict[str, dict[int, str]] = {}
        where = {q: k for k, q in enumerate(self.queries)}
        for cid, value in candidates.items():
            if self.one_query:
                if not isinstance(value, str):
                    raise ConfigError(
                        f"candidate {cid!r}: with query= each candidate is its text, got "
                        f"{type(value).__name__}"
                    )
                self.answers[str(cid)] = {0: value}
            else:
                if not isinstance(value, Mapping):
                    raise ConfigError(
                        f"candidate {cid!r}: with queries= each candidate maps a query to its "
                        f"answer, got {type(value).__name__}"
                    )
                unknown = sorted(set(value) - set(where))
                if unknown:
                    raise ConfigError(
                        f"candidate {cid!r} answers queries not in queries=: {unknown[:3]}"
                    )
                self.answers[str(cid)] = {where[q]: str(t) for q, t in value.items()}
        self.index = {cid: k for k, cid in enumerate(self.ids)}

    def shared(self, i: int, j: int) -> int:
        """How many queries candidates ``i`` and ``j`` both answered: the pair's items."""
        if self.one_query:
            return 1
        x, y = self.answers[self.ids[i]], self.answers[self.ids[j]]
        return len(x.keys() & y.keys())

    def item_count(self) -> int:
        """Every pair item there is (``pairs="all"``): per query, the pairs of the
        candidates that answered it. Counted, not listed."""
        answering = [0] * len(self.queries)
        for answers in self.answers.values():
            for k in answers:
                answering[k] += 1
        return sum(c * (c - 1) // 2 for c in answering)

    def pair_items(self, i: int, j: int) -> list[_PairItem]:
        """The items of the pair of candidates ``i`` and ``j`` (``i < j``), one per query
        both answered, in query order."""
        x, y = self.ids[i], self.ids[j]
        items = []
        for k, text in enumerate(self.queries):
            if k not in self.answers[x] or k not in self.answers[y]:
                continue
            tx, ty = self.answers[x][k], self.answers[y][k]
            key = _digest(text, x, tx, y, ty)
            a, b, ta, tb = (x, y, tx, ty) if int(key[0], 16) % 2 == 0 else (y, x, ty, tx)
            items.append(
                _PairItem(
                    id=f"rank-{key[:20]}",
                    a=a,
                    b=b,
                    query=None if self.one_query else k,
                    query_text=text,
                    text_a=ta,
                    text_b=tb,
                )
            )
        return items


class _SittingOut(PanelView):
    """A panel seen by the batch machinery with some critics sitting out some items
    (self-preference): its ``judge`` passes each item's ``sit_out`` names on."""

    def __init__(self, panel: Panel, sit_out: Mapping[str, Collection[str]]) -> None:
        super().__init__(panel)
        self.sit_out = sit_out

    async def judge(
        self,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
    ) -> EnsembleVerdict:
        item = Item.of(query, query_id=query_id, context=context, meta=meta)
        names = self.sit_out.get(item.id)
        if not names:
            return await self.panel.judge(item, budget_usd=budget_usd)
        judge: Any = self.panel.judge  # Ensemble and Cascade take sit_out
        result: EnsembleVerdict = await judge(item, budget_usd=budget_usd, sit_out=sorted(names))
        return result


def check_pairwise(panel: Panel) -> None:
    """Raise unless every critic of ``panel`` judges pairs (its template uses
    ``{response_a}`` and ``{response_b}``, as the packaged ``pairwise`` prompt does).

    Raises:
        ConfigError: naming the first critic that does not.
    """
    critics = panel.critics
    if not critics:
        raise ConfigError("the panel has no critics, so it cannot rank; give it critics")
    for critic in critics:
        fields = Template.compile(critic.prompt_template).fields
        if not set(PAIR_FIELDS) <= fields:
            raise ConfigError(
                f"critic {critic.name!r} does not judge pairs: its prompt has no "
                "{response_a} and {response_b}; rank with a pairwise prompt "
                "(Critic(prompt='pairwise@2'))"
            )


def _sit_outs(
    panel: Panel,
    items: Iterable[_PairItem],
    families: Mapping[str, str] | None,
) -> dict[str, frozenset[str]]:
    """Per item id, the critics whose declared family is that of either candidate."""
    if not families:
        return {}
    own = {
        c.name: c.family.strip().lower()
        for c in panel.critics
        if getattr(c, "family", None) is not None and c.family is not None
    }
    if not own:
        return {}
    fam = {str(k): str(v).strip().lower() for k, v in families.items()}
    out: dict[str, frozenset[str]] = {}
    for item in items:
        pair = {fam.get(item.a), fam.get(item.b)} - {None}
        names = frozenset(name for name, f in own.items() if f in pair)
        if names:
            out[item.id] = names
    return out


def calls_per_pair(panel: Panel) -> int:
    """The most calls ``panel`` makes for one pair item: each critic's ``samples``, twice
    with ``order="both"``; a cascade's every tier (escalation may ask them all). Early
    stop, sit-outs and cache hits make fewer."""
    tiers = getattr(panel, "tiers", None)
    if tiers:
        return sum(calls_per_pair(tier) for tier in tiers)
    orders = 2 if getattr(panel, "order", "fixed") == "both" else 1
    return sum(max(1, int(getattr(c, "samples", 1) or 1)) * orders for c in panel.critics)


def _calls_in_words(panel: Panel) -> str:
    """Where :func:`calls_per_pair` comes from: ``"3 critics x 2 orders"``."""
    tiers = getattr(panel, "tiers", None)
    if tiers:
        return f"{len(panel.critics)} critics over {len(tiers)} tiers, every tier asked"
    critics = len(panel.critics)
    samples = sum(max(1, int(getattr(c, "samples", 1) or 1)) for c in panel.critics)
    orders = 2 if getattr(panel, "order", "fixed") == "both" else 1
    words = f"{critics} critic{'s' if critics != 1 else ''}"
    if samples != critics:
        words += f" ({samples} samples)"
    return words + (" x 2 orders" if orders == 2 else ", one order")


@dataclass(frozen=True)
class RankPlan:
    """What a ranking is about to ask, known before its first call
    (``rank(on_plan=...)``).

    ``items``: the pair items the design judges at most (``"all"``: every one;
    ``"adaptive"``: its budget, else every one; ``"random"``: its budget), ``resumed`` of
    them already answered;
    ``calls_per_item``: :func:`calls_per_pair`, ``per_item`` where it comes from
    (``"3 critics x 2 orders"``); :attr:`calls`: the most calls this run makes."""

    pairs: PairDesign
    candidates: int
    queries: int
    items: int
    resumed: int
    calls_per_item: int
    per_item: str = ""

    @property
    def calls(self) -> int:
        """``(items - resumed) x calls_per_item``: the most calls this run makes."""
        return (self.items - self.resumed) * self.calls_per_item


class _Available(Mapping[tuple[int, int], int]):
    """Pair ``(i, j)`` (``i < j``) -> its number of items, computed when asked: the
    schedule never lists all ``n (n - 1) / 2`` pairs."""

    def __init__(self, pool: CandidatePool) -> None:
        self.pool = pool
        self.n = len(pool.ids)

    def __getitem__(self, edge: tuple[int, int]) -> int:
        i, j = edge
        if not (0 <= i < j < self.n):
            raise KeyError(edge)
        return self.pool.shared(i, j)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return ((i, j) for i in range(self.n) for j in range(i + 1, self.n))

    def __len__(self) -> int:
        return self.n * (self.n - 1) // 2


def _resumed(pool: CandidatePool, done: Mapping[str, EnsembleVerdict]) -> int:
    """How many of ``done`` are items of ``pool`` (the same query and texts), found from
    each result's own pair: no list of every item is made."""
    count = 0
    for item_id, result in done.items():
        tag = result.meta.get(META_KEY)
        if not isinstance(tag, Mapping):
            continue
        i, j = pool.index.get(str(tag.get("a"))), pool.index.get(str(tag.get("b")))
        if i is None or j is None or i == j:
            continue
        count += any(item.id == item_id for item in pool.pair_items(min(i, j), max(i, j)))
    return count


def _too_many_calls(plan: RankPlan, limit: int) -> ConfigError:
    asked = (
        f"pairs='all' over {plan.candidates:,} candidates"
        + (f" on {plan.queries:,} queries" if plan.queries > 1 else "")
        + f" judges {plan.items:,} pair items"
        + (f" ({plan.resumed:,} resumed)" if plan.resumed else "")
    )
    return ConfigError(
        f"{asked}: up to {plan.calls:,} calls ({plan.calls_per_item} a pair item: "
        f"{plan.per_item}), more than "
        f"max_calls={limit:,}. Rank adaptively within a budget (pairs='adaptive', "
        f"budget=N pair items), or pass max_calls={plan.calls} (or None) to make them"
    )


def _check_fisher_fits(ci: CIMethod, n: int, pairs: PairDesign, limit: int) -> None:
    """Refuse, before the first call, a ranking whose Fisher intervals could meet a
    connected group larger than the fit solves (a group of ``g`` needs ``g - 1`` pairs)."""
    if ci != "fisher":
        return
    cap = fisher_group_limit()
    most = n if pairs == "all" else min(n, limit + 1)
    if most <= cap:
        return
    fix = "" if pairs == "all" else f", or a budget below {cap:,} pair items"
    raise ConfigError(
        f"ci='fisher' over {n:,} candidates could meet one connected group of {most:,} "
        f"judged candidates, and Fisher intervals solve groups of up to {cap:,} (a dense "
        f"matrix a group): use ci='bootstrap' (memory grows with the comparisons){fix}"
    )


async def rank(
    panel: Panel,
    candidates: Mapping[str, Any],
    *,
    query: str | None = None,
    queries: Sequence[str] | None = None,
    pairs: PairDesign = "all",
    budget: int | None = None,
    seed: int = 0,
    level: float = 0.95,
    ci: CIMethod = "fisher",
    families: Mapping[str, str] | None = None,
    self_preference: bool = True,
    resume: Ranking | Iterable[EnsembleVerdict] | None = None,
    round_size: int | None = None,
    prior: float = DEFAULT_PRIOR,
    max_calls: int | None = DEFAULT_MAX_CALLS,
    on_plan: Callable[[RankPlan], None] | None = None,
    fit: FitMethod = "auto",
    weights: Mapping[str, float] | None = None,
    **batch_options: Unpack[RunOptions],
) -> Ranking:
    """Rank ``candidates`` by judging pairs of them with ``panel`` and fitting
    Bradley-Terry ratings (Davidson's extension: ties are kept) with intervals.

    Args:
        panel: an :class:`~cross_judge.ensemble.Ensemble` or a
            :class:`~cross_judge.cascade.Cascade` whose critics judge pairs (a prompt
            with ``{response_a}`` and ``{response_b}``, e.g. ``pairwise@2``). Pairs are
            shown in the panel's ``order``; ``order="both"`` is recommended (and the
            default of ``Ensemble.rank``).
        candidates: id -> text (with ``query``), or id -> {query: answer} (with
            ``queries``: each pair is judged on every query both answered).
        query, queries: exactly one of them.
        pairs: ``"all"``: every pair (on every shared query); ``"adaptive"``: a sparse
            connected design (a random cycle plus ``n // 2`` chords, one item each), then
            rounds: fit, and judge a Swiss round steered by the fit (the least-judged
            candidates first, each with the partner whose comparison tells most at the
            current ratings times how unsure the two are;
            :func:`~cross_judge.ranking._design.posterior_pairs`, up to 100 candidates;
            above, neighbours in the order whose intervals overlap, looking only at the
            pairs it judges and their neighbours, so its cost grows with ``n`` and the
            budget, never ``n^2``), until ``budget`` is spent, no neighbouring intervals
            overlap at ``level``, or nothing is left to judge. ``"random"``: ``budget``
            pair items drawn uniformly at random, judged in one batch (the baseline the
            adaptive design is measured against; ``bench/bench_rank_design.py``).
        budget: with ``"adaptive"`` or ``"random"`` (which needs one), the most pair
            items judged (resumed ones included):
            each costs ``critics x orders`` calls. Counted in items, not calls, so the
            schedule does not depend on retries or cache hits. ``"all"`` refuses a
            budget below its number of items.
        seed: the adaptive design's and the bootstrap's seed; same seed and same
            verdicts give the same pairs.
        level: the intervals' confidence level.
        ci: ``"fisher"`` (from the fit's information matrix) or ``"bootstrap"`` (over
            comparisons). Fisher intervals solve each connected group of judged
            candidates densely, up to
            :func:`~cross_judge.stats.bradley_terry.fisher_group_limit` (2,000 with
            numpy): a ranking that could join more is refused before its first call.
        families: candidate id -> model family. A critic declaring a family
            (``Critic(family=...)``) sits out every pair involving a candidate of its
            family (``SKIPPED``, ``error_kind="self_preference"``, no call) unless
            ``self_preference=False``. A pair every critic sits out has no decision.
        resume: an earlier :class:`Ranking` (or its ``results``): items already judged
            there are not asked again; its calls count in ``calls_total``.
        round_size: adaptive pairs per round (default ``max(2, n // 4)``).
        prior: the fit's prior weight when the maximum-likelihood fit does not exist
            (:data:`~cross_judge.ranking._model.DEFAULT_PRIOR`).
        max_calls: ``pairs="all"`` refuses to start when its items not yet judged mean
            more calls than this (:func:`calls_per_pair` each; default
            :data:`DEFAULT_MAX_CALLS`); ``None``: no limit.
        on_plan: called once with the :class:`RankPlan` before the first call (after
            the checks of the options and of ``max_calls``); an exception it raises stops
            the ranking there.
        fit: ``"votes"``: Bradley-Terry over every critic's vote in each order shown, with
            each critic's advantage for the first-shown candidate as a parameter
            (``Ranking.first_shown``); ``"consensus"``: over one consensus per pair;
            ``"auto"`` (the default): votes up to
            :data:`~cross_judge.ranking._model.VOTE_FIT_LIMIT` candidates. Checked before
            the first call.
        weights: critic -> the weight of its votes in the vote fit (e.g. a reliability
            learned against gold); every vote counts 1 without.
        batch_options: how each round's batch runs, passed to
            :func:`cross_judge.batch.judge_many`: see :class:`~cross_judge.batch.RunOptions`.

    Returns:
        The :class:`Ranking`; its ``results`` hold every pair judged (resumed ones too),
        ``queries`` and ``answers`` the candidates as given.

    Raises:
        ConfigError: fewer than 2 candidates, not exactly one of ``query``/``queries``, a
            critic whose prompt does not judge pairs, an unknown ``pairs`` or ``ci``, a
            bad ``budget``, ``level``, ``round_size`` or ``max_calls``, ``pairs="all"``
            above ``max_calls``, Fisher intervals over too large a group, or no pair with
            a decision.
    """
    pool = CandidatePool(candidates, query, queries)
    check_pairwise(panel)
    if pairs not in ("all", "adaptive", "random"):
        raise ConfigError(f"pairs must be 'all', 'adaptive' or 'random', got {pairs!r}")
    if pairs == "random" and budget is None:
        raise ConfigError(
            "pairs='random' judges budget=N uniformly random pair items: give a budget "
            "(or pairs='all' for every one)"
        )
    if ci not in ("fisher", "bootstrap"):
        raise ConfigError(f"ci must be 'fisher' or 'bootstrap', got {ci!r}")
    if not (isinstance(level, float | int) and 0.0 < level < 1.0):
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise ConfigError(f"budget must be a number of pair items >= 1, got {budget!r}")
    if max_calls is not None and (
        isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0
    ):
        raise ConfigError(f"max_calls must be a number of calls >= 0 or None, got {max_calls!r}")
    n = len(pool.ids)
    method = resolve_fit(fit, n)
    check_vote_weights(weights, method)
    size = max(2, n // 4) if round_size is None else round_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"round_size must be an integer >= 1, got {round_size!r}")
    total = pool.item_count()
    if not total:
        raise ConfigError("no two candidates answer a common query, so no pair can be judged")
    done: dict[str, EnsembleVerdict] = {}
    earlier_calls = 0
    simulated: list[str] = []
    if resume is not None:
        for result in resume.results if isinstance(resume, Ranking) else resume:
            done.setdefault(result.query_id, result)
        if isinstance(resume, Ranking):
            earlier_calls, simulated = resume.calls_total, list(resume.simulated_critics)
        else:
            earlier_calls = recorded_calls(done.values())
    judged: list[EnsembleVerdict] = []
    calls = 0

    async def judge(items: list[_PairItem]) -> None:
        nonlocal calls
        fresh = [item for item in items if item.id not in done]
        if fresh:
            sitting = _sit_outs(panel, fresh, families) if self_preference else {}
            runner: Panel = _SittingOut(panel, sitting) if sitting else panel
            batch = await judge_many(runner, [item.as_item() for item in fresh], **batch_options)
            for result in batch.verdicts:
                done[result.query_id] = result
                calls += sum(v.attempts for v in result.verdicts)
        judged.extend(done[item.id] for item in items)

    def fitted() -> Ranking:
        return fit_ranking(
            pool.ids,
            judged,
            level=level,
            ci=ci,
            seed=seed,
            calls=calls,
            prior=prior,
            fit=method,
            weights=weights,
        )

    def finished(ranking: Ranking) -> Ranking:
        return ranking.model_copy(
            update={
                "calls_total": earlier_calls + calls,
                "queries": list(pool.queries),
                "answers": {
                    cid: [pool.answers[cid].get(k) for k in range(len(pool.queries))]
                    for cid in pool.ids
                },
                "simulated_critics": simulated,
            }
        )

    per_item, words = calls_per_pair(panel), _calls_in_words(panel)
    if pairs == "all":
        if budget is not None and budget < total:
            raise ConfigError(
                f"pairs='all' judges {total} pair items, more than budget={budget}; "
                "use pairs='adaptive' to spend a budget where the order is unsure"
            )
        resumed = _resumed(pool, done)
        plan = RankPlan("all", n, len(pool.queries), total, resumed, per_item, words)
        if max_calls is not None and plan.calls > max_calls:
            raise _too_many_calls(plan, max_calls)
        if on_plan is not None:
            on_plan(plan)
        _check_fisher_fits(ci, n, pairs, total)
        everything = [
            item for i in range(n) for j in range(i + 1, n) for item in pool.pair_items(i, j)
        ]
        await judge(everything)
        return finished(fitted())

    available = _Available(pool)
    used: dict[tuple[int, int], int] = {}
    limit = budget if budget is not None else total
    items_of: dict[tuple[int, int], list[_PairItem]] = {}

    def take(edges: Iterable[tuple[int, int]]) -> list[_PairItem]:
        out: list[_PairItem] = []
        for edge in edges:
            if len(judged) + len(out) >= limit:
                break
            k = used.get(edge, 0)
            if k < available.get(edge, 0):
                # Each pair's queries in a seeded order, one more per visit.
                queue = items_of.get(edge)
                if queue is None:
                    queue = items_of[edge] = pool.pair_items(*edge)
                step = random.Random(f"{seed}|{edge}").sample(range(len(queue)), len(queue))
                out.append(queue[step[k]])
                used[edge] = k + 1
        return out

    if on_plan is not None:
        on_plan(RankPlan(pairs, n, len(pool.queries), min(limit, total), 0, per_item, words))
    _check_fisher_fits(ci, n, pairs, limit)
    if pairs == "random":
        drawn = random_pairs(n, pool.shared, len(pool.queries), min(limit, total), seed)
        await judge(take(drawn))
        return finished(fitted())
    await judge(take(e for e in initial_design(n, seed) if available.get(e, 0)))
    ranking = fitted() if judged else None
    while ranking is not None and len(judged) < limit:
        edges = next_pairs(ranking, pool, used, available, size)
        batch = take(edges)
        if not batch:
            break
        await judge(batch)
        ranking = fitted()
    if ranking is None:
        raise ConfigError("no pair could be judged in the adaptive design")
    return finished(ranking)
