"""Which pairs the designs judge: the adaptive rule's round, random pairs, and their
options."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import ConfigError, Ranking
from cross_judge.ranking import rank
from cross_judge.ranking._design import posterior_pairs, random_pairs
from cross_judge.ranking._engine import CandidatePool

from .strength_judge import StrengthJudge
from .test_rank import STRENGTHS, TASK, TEXTS, panel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def four(ci: dict[str, tuple[float, float]], ratings: dict[str, float]) -> Ranking:
    """A ranking with these intervals and ratings (any number of candidates)."""
    order = sorted(ratings, key=lambda c: -ratings[c])
    return Ranking(order=order, ratings=ratings, ci=ci)


POOL = CandidatePool({"w": "w", "x": "x", "y": "y", "z": "z"}, TASK, None)
EVERY = dict.fromkeys([(i, j) for i in range(4) for j in range(i + 1, 4)], 1)


def test_a_round_takes_each_candidate_at_most_once() -> None:
    ranking = four(
        dict.fromkeys("wxyz", (900.0, 1100.0)), {"w": 1010.0, "x": 1000.0, "y": 995.0, "z": 995.0}
    )
    chosen = posterior_pairs(ranking, POOL, {}, EVERY, 4)
    assert len(chosen) == 2
    assert len({c for pair in chosen for c in pair}) == 4


def test_the_least_judged_candidate_meets_its_closest_unsure_partner() -> None:
    ranking = four(
        {"w": (600.0, 1400.0), "x": (950.0, 1050.0), "y": (950.0, 1050.0), "z": (950.0, 1050.0)},
        {"w": 1000.0, "x": 1300.0, "y": 1010.0, "z": 700.0},
    )
    used = {(1, 2): 1, (1, 3): 1, (2, 3): 1}  # x, y, z judged; w (index 0) never
    assert posterior_pairs(ranking, POOL, used, EVERY, 1) == [(0, 2)]  # w meets y


def test_a_pair_with_no_item_left_is_not_chosen() -> None:
    ranking = four(dict.fromkeys("wxyz", (900.0, 1100.0)), dict.fromkeys("wxyz", 1000.0))
    chosen = posterior_pairs(ranking, POOL, dict(EVERY), EVERY, 4)
    assert chosen == []


def test_random_pairs_are_seeded_distinct_items() -> None:
    drawn = random_pairs(6, lambda i, j: 2, 2, 20, seed=1)
    assert drawn == random_pairs(6, lambda i, j: 2, 2, 20, seed=1)
    assert drawn != random_pairs(6, lambda i, j: 2, 2, 20, seed=2)
    assert len(drawn) == 20 and max(Counter(drawn).values()) <= 2


def test_random_pairs_never_draw_more_items_than_there_are() -> None:
    assert len(random_pairs(3, lambda i, j: 1, 1, 10, seed=0)) == 3


def test_random_pairs_above_the_enumerated_size_draw_by_rejection() -> None:
    drawn = random_pairs(1_000, lambda i, j: 1, 1, 500, seed=0)
    assert len(drawn) == 500 == len(set(drawn))


@pytest.mark.anyio
async def test_random_design_judges_exactly_its_budget() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK, pairs="random", budget=20, seed=3)
    assert len(ranking.results) == 20
    assert judge.calls == 20 * 3 * 2


@pytest.mark.anyio
async def test_random_design_without_a_budget_is_refused_before_any_call() -> None:
    judge = StrengthJudge(STRENGTHS)
    with pytest.raises(ConfigError, match="give a budget"):
        await rank(panel(judge), TEXTS, query=TASK, pairs="random")
    assert judge.calls == 0


@pytest.mark.anyio
async def test_adaptive_design_spends_its_budget_on_distinct_items() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK, pairs="adaptive", budget=30, seed=1)
    assert len(ranking.results) == 30 == len({r.query_id for r in ranking.results})


@settings(max_examples=50, deadline=None)
@given(
    st.integers(2, 9),
    st.integers(0, 10_000),
    st.dictionaries(st.tuples(st.integers(0, 8), st.integers(0, 8)), st.integers(0, 3)),
)
def test_a_round_never_repeats_a_candidate_nor_takes_a_used_up_pair(
    n: int, seed: int, used_raw: dict[tuple[int, int], int]
) -> None:
    import random as rnd

    rng = rnd.Random(seed)
    ids = [f"c{k}" for k in range(n)]
    pool = CandidatePool({c: c for c in ids}, TASK, None)
    ratings = {c: 1000.0 + rng.gauss(0, 150) for c in ids}
    ci = {c: (r - rng.uniform(1, 300), r + rng.uniform(1, 300)) for c, r in ratings.items()}
    ranking = four(ci, ratings)
    available = {(i, j): 2 for i in range(n) for j in range(i + 1, n)}
    used = {(min(i, j), max(i, j)): k for (i, j), k in used_raw.items() if i != j and max(i, j) < n}
    chosen = posterior_pairs(ranking, pool, used, available, n)
    members = [c for pair in chosen for c in pair]
    assert len(members) == len(set(members))
    assert all(used.get(pair, 0) < available[pair] for pair in chosen)


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 12), st.integers(0, 3), st.integers(1, 80), st.integers(0, 10_000))
def test_random_pairs_never_take_more_of_a_pair_than_it_has(
    n: int, queries: int, budget: int, seed: int
) -> None:
    def shared(i: int, j: int) -> int:
        return (i + j) % (queries + 1)

    drawn = random_pairs(n, shared, queries, budget, seed)
    total = sum(shared(i, j) for i in range(n) for j in range(i + 1, n))
    assert len(drawn) == min(budget, total)
    assert all(count <= shared(*pair) for pair, count in Counter(drawn).items())
