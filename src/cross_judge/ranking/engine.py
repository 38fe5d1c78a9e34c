"""Ranking many candidates: which pairs to judge, judging them through a panel's batch
path, and fitting the :class:`~cross_judge.ranking.model.Ranking`.

Every pair is an ordinary item (``context={"response_a": ..., "response_b": ...}``)
judged by :func:`cross_judge.batch.judge_many`, so the panel's limits, response cache,
budget and provider batch mode apply as to any batch. Item ids are derived from the query
and both candidates (ids and texts), so a rerun asks the same items: answered from the
cache, or skipped when the earlier results are passed as ``resume``.

Which candidate of a pair is ``a`` (shown first under ``order="fixed"``) is a coin from
sha256 of the pair, so a position bias falls on candidates evenly instead of favouring
whichever was listed first. ``order="both"`` (the default of ``Ensemble.rank``) removes
it per pair.

This module does not vote or fit: the panel votes, :mod:`cross_judge.stats.bradley_terry`
fits, :mod:`cross_judge.ranking.model` turns the fit into a ranking.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..batch.panel_protocol import Panel, PanelView
from ..batch.runner import judge_many
from ..critic.template import Template
from ..errors import ConfigError
from ..pairwise import PAIR_FIELDS
from ..verdict import EnsembleVerdict
from .model import DEFAULT_PRIOR, META_KEY, CIMethod, Ranking, fit_ranking

if TYPE_CHECKING:
    from ..budget import Budget

__all__ = ["CandidatePool", "PairDesign", "next_pairs", "rank"]

PairDesign = Literal["all", "adaptive"]
"""Which pairs a ranking judges: every pair, or adaptively where the order is unsure."""


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
                where = {q: k for k, q in enumerate(self.queries)}
                unknown = sorted(set(value) - set(where))
                if unknown:
                    raise ConfigError(
                        f"candidate {cid!r} answers queries not in queries=: {unknown[:3]}"
                    )
                self.answers[str(cid)] = {where[q]: str(t) for q, t in value.items()}
        self.index = {cid: k for k, cid in enumerate(self.ids)}

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
        query: str,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
    ) -> EnsembleVerdict:
        names = self.sit_out.get(query_id or "")
        if not names:
            return await self.panel.judge(
                query, query_id=query_id, context=context, meta=meta, budget_usd=budget_usd
            )
        judge: Any = self.panel.judge  # Ensemble and Cascade take sit_out
        result: EnsembleVerdict = await judge(
            query,
            query_id=query_id,
            context=context,
            meta=meta,
            budget_usd=budget_usd,
            sit_out=sorted(names),
        )
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


def _initial_design(n: int, seed: int) -> list[tuple[int, int]]:
    """A sparse connected design: a random cycle through every candidate plus ``n // 2``
    random chords, seeded. Pairs as ``(i, j)`` with ``i < j``, in a fixed order."""
    rng = random.Random(seed)
    tour = list(range(n))
    rng.shuffle(tour)
    edges: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()

    def add(i: int, j: int) -> None:
        edge = (min(i, j), max(i, j))
        if i != j and edge not in seen:
            seen.add(edge)
            edges.append(edge)

    for k in range(n if n > 2 else 1):
        add(tour[k], tour[(k + 1) % n])
    others = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in seen]
    rng.shuffle(others)
    for edge in others[: n // 2]:
        add(*edge)
    return edges


def next_pairs(
    ranking: Ranking,
    pool: CandidatePool,
    used: Mapping[tuple[int, int], int],
    available: Mapping[tuple[int, int], int],
    size: int,
) -> list[tuple[int, int]]:
    """Up to ``size`` pairs to judge next: for neighbours in the current order whose
    intervals overlap (most overlap first), the pair itself if it has items left, else the
    pair of either with the nearest-rated candidate that has. Empty when no neighbouring
    intervals overlap (the order is settled at the ranking's level) or nothing is left."""
    order = [pool.index[c] for c in ranking.order]
    rating = {pool.index[c]: r for c, r in ranking.ratings.items()}
    bounds = {pool.index[c]: b for c, b in ranking.ci.items()}
    overlaps = []
    for k in range(len(order) - 1):
        u, v = order[k], order[k + 1]
        overlap = min(bounds[u][1], bounds[v][1]) - max(bounds[u][0], bounds[v][0])
        if overlap > 0:
            overlaps.append((-overlap, k, u, v))
    overlaps.sort()
    chosen: list[tuple[int, int]] = []

    def left(i: int, j: int) -> bool:
        edge = (min(i, j), max(i, j))
        return used.get(edge, 0) < available.get(edge, 0) and edge not in chosen

    for _, _, u, v in overlaps:
        if len(chosen) >= size:
            break
        if left(u, v):
            chosen.append((min(u, v), max(u, v)))
            continue
        near = sorted(
            (abs(rating[w] - (rating[u] + rating[v]) / 2), w, x)
            for w in order
            if w not in (u, v)
            for x in (u, v)
            if left(x, w)
        )
        if near:
            _, w, x = near[0]
            chosen.append((min(x, w), max(x, w)))
    return chosen


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
    **batch_options: Any,
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
            rounds: fit, and judge next the pairs whose neighbours in the current order
            have overlapping intervals (most overlap first; a pair already judged on
            every query passes to the nearest-rated candidate), until ``budget`` is spent,
            no neighbouring intervals overlap at ``level``, or nothing is left to judge.
        budget: with ``"adaptive"``, the most pair items judged (resumed ones included):
            each costs ``critics x orders`` calls. Counted in items, not calls, so the
            schedule does not depend on retries or cache hits. ``"all"`` refuses a
            budget below its number of items.
        seed: the adaptive design's and the bootstrap's seed; same seed and same
            verdicts give the same pairs.
        level: the intervals' confidence level.
        ci: ``"fisher"`` (from the fit's information matrix) or ``"bootstrap"`` (over
            comparisons).
        families: candidate id -> model family. A critic declaring a family
            (``Critic(family=...)``) sits out every pair involving a candidate of its
            family (``SKIPPED``, ``error_kind="self_preference"``, no call) unless
            ``self_preference=False``. A pair every critic sits out has no decision.
        resume: an earlier :class:`Ranking` (or its ``results``): items already judged
            there are not asked again.
        round_size: adaptive pairs per round (default ``max(2, n // 4)``).
        prior: the fit's prior weight when the maximum-likelihood fit does not exist
            (:data:`~cross_judge.ranking.model.DEFAULT_PRIOR`).
        batch_options: passed to :func:`cross_judge.batch.judge_many` (``concurrency``,
            ``progress``, ``budget_usd``, ``mode="batch"``, ``batch``, ``item_text``).

    Returns:
        The :class:`Ranking`; its ``results`` hold every pair judged (resumed ones too).

    Raises:
        ConfigError: fewer than 2 candidates, not exactly one of ``query``/``queries``, a
            critic whose prompt does not judge pairs, an unknown ``pairs`` or ``ci``, a
            bad ``budget``, ``level`` or ``round_size``, or no pair with a decision.
    """
    pool = CandidatePool(candidates, query, queries)
    check_pairwise(panel)
    if pairs not in ("all", "adaptive"):
        raise ConfigError(f"pairs must be 'all' or 'adaptive', got {pairs!r}")
    if ci not in ("fisher", "bootstrap"):
        raise ConfigError(f"ci must be 'fisher' or 'bootstrap', got {ci!r}")
    if not (isinstance(level, float | int) and 0.0 < level < 1.0):
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise ConfigError(f"budget must be a number of pair items >= 1, got {budget!r}")
    n = len(pool.ids)
    size = max(2, n // 4) if round_size is None else round_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"round_size must be an integer >= 1, got {round_size!r}")
    items_of = {(i, j): pool.pair_items(i, j) for i in range(n) for j in range(i + 1, n)}
    if not any(items_of.values()):
        raise ConfigError("no two candidates answer a common query, so no pair can be judged")
    done: dict[str, EnsembleVerdict] = {}
    if resume is not None:
        for result in resume.results if isinstance(resume, Ranking) else resume:
            done.setdefault(result.query_id, result)
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
            pool.ids, judged, level=level, ci=ci, seed=seed, calls=calls, prior=prior
        )

    if pairs == "all":
        everything = [item for edge in sorted(items_of) for item in items_of[edge]]
        if budget is not None and budget < len(everything):
            raise ConfigError(
                f"pairs='all' judges {len(everything)} pair items, more than budget={budget}; "
                "use pairs='adaptive' to spend a budget where the order is unsure"
            )
        await judge(everything)
        return fitted()

    available = {edge: len(items) for edge, items in items_of.items()}
    used: dict[tuple[int, int], int] = {}
    limit = budget if budget is not None else sum(available.values())

    def take(edges: Iterable[tuple[int, int]]) -> list[_PairItem]:
        out: list[_PairItem] = []
        for edge in edges:
            k = used.get(edge, 0)
            if k < available.get(edge, 0) and len(judged) + len(out) < limit:
                # Each pair's queries in a seeded order, one more per visit.
                queue = items_of[edge]
                step = random.Random(f"{seed}|{edge}").sample(range(len(queue)), len(queue))
                out.append(queue[step[k]])
                used[edge] = k + 1
        return out

    await judge(take(e for e in _initial_design(n, seed) if available.get(e, 0)))
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
    return ranking
