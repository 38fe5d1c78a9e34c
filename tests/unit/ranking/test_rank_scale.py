"""``rank`` over many candidates: scheduling that costs what it judges, not ``n^2``; the
guard on ``pairs="all"``; what a ranking records of its runs (calls of every run, the
questions and answers, the simulated critics) and the plan it announces before its first
call. Memory is measured with tracemalloc as growth per candidate between two sizes, and
work as the pairs the scheduler asks about: counts a busy machine cannot change."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import httpx
import pytest

from cross_judge import ConfigError, Critic, Ensemble, Ranking
from cross_judge.ranking import rank
from cross_judge.ranking._engine import CandidatePool, RankPlan, next_pairs
from cross_judge.stats import bradley_terry

from .strength_judge import StrengthJudge


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only, as in test_rank.py: nothing here depends on the event loop."""
    return "asyncio"


pytestmark = pytest.mark.anyio

TASK = "Explain why the sky is blue."
TEXTS = {f"c{k:02d}": f"answer of c{k:02d}" for k in range(12)}
STRENGTHS = {text: 0.7 * k for k, text in enumerate(TEXTS.values())}


def panel(judge: StrengthJudge) -> Ensemble:
    return Ensemble([judge.critic(n) for n in ("j0", "j1", "j2")], order="both")


class CallMade(BaseException):
    """Raised by :func:`refusing_panel`'s vendor: a BaseException, so no retry or verdict
    swallows it and a refusal that comes too late stops at the first call instead of
    judging thousands of pairs."""


def refusing_panel() -> Ensemble:
    """Two critics whose vendor raises :class:`CallMade` at the first request."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise CallMade

    return Ensemble(
        [
            Critic(
                name=name,
                model=name,
                vendor="custom",
                base_url="http://vendor.test/v1",
                api_key="k",
                prompt="pairwise",
                http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
            )
            for name in ("j0", "j1")
        ],
        order="both",
    )


def _made_a_call(exc: BaseException) -> bool:
    return isinstance(exc, CallMade) or any(
        _made_a_call(inner) for inner in getattr(exc, "exceptions", ())
    )


async def refusal(candidates: Mapping[str, str], **options: Any) -> str:
    """The ConfigError message ``rank`` refuses ``candidates`` with, before any call."""
    try:
        await rank(refusing_panel(), candidates, query=TASK, **options)
    except ConfigError as exc:
        return str(exc)
    except BaseException as exc:
        if not _made_a_call(exc):
            raise
        called = True
    else:
        called = False
    pytest.fail("a call was made" if called else "the ranking was not refused")


# -- scheduling cost -------------------------------------------------------------------------


def adaptive_peak(n: int) -> int:
    """tracemalloc's peak of an adaptive ranking of ``n`` candidates, budget 6."""
    texts = {f"m{k:05d}": f"candidate {k}" for k in range(n)}
    judge = StrengthJudge({t: (k % 7) / 3 for k, t in enumerate(texts.values())})
    ensemble = panel(judge)  # made before tracing: its clients are not the ranking's cost

    async def ranked() -> Ranking:
        return await rank(ensemble, texts, query=TASK, pairs="adaptive", budget=6)

    tracemalloc.start()
    try:
        ranking = anyio.run(ranked)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(ranking.results) == 6 and len(ranking.ratings) == n
    return peak


def test_adaptive_ranking_memory_grows_with_the_candidates_not_their_pairs() -> None:
    adaptive_peak(20)  # imports and first-use caches, outside the two measured sizes
    # Listing every pair (and an n x n Fisher matrix) costs over 100 KB per added
    # candidate between these sizes; a ranking of the candidates themselves, about 1 KB.
    small, large = adaptive_peak(200), adaptive_peak(800)
    assert (large - small) / 600 < 20_000


class CountingAvailable(Mapping[tuple[int, int], int]):
    """Every pair has one item; counts the pairs asked about."""

    def __init__(self) -> None:
        self.asked = 0

    def __getitem__(self, edge: tuple[int, int]) -> int:
        self.asked += 1
        return 1

    def __iter__(self) -> Iterator[tuple[int, int]]:
        raise AssertionError("the scheduler must not list every pair")

    def __len__(self) -> int:
        raise AssertionError("the scheduler must not count every pair")


def test_the_scheduler_asks_only_about_pairs_near_the_ones_it_picks() -> None:
    n = 4000
    ids = [f"m{k:04d}" for k in range(n)]
    pool = CandidatePool({c: c for c in ids}, TASK, None)
    # Overlapping neighbours, each neighbouring pair judged already: each pick passes to
    # the nearest-rated candidate, found next to the pair in the order.
    ranking = Ranking(
        order=ids,
        ratings={c: 2000.0 - k / 4 for k, c in enumerate(ids)},
        ci={c: (1990.0 - k / 4, 2010.0 - k / 4) for k, c in enumerate(ids)},
    )
    used = {(k, k + 1): 1 for k in range(n - 1)}
    available = CountingAvailable()
    picked = next_pairs(ranking, pool, used, available, 10)
    assert len(picked) == 10
    assert available.asked < 100  # listing the nearest among all would ask 10 x 8,000


# -- the guard on pairs="all" ----------------------------------------------------------------


async def test_all_pairs_above_max_calls_are_refused_before_any_call_naming_the_count() -> None:
    message = await refusal(TEXTS, max_calls=100)
    assert "66 pair items" in message and "264 calls" in message  # 66 x 2 critics x 2
    assert "max_calls=100" in message and "pairs='adaptive'" in message


async def test_all_pairs_of_200_candidates_are_refused_by_default() -> None:
    texts = {f"m{k:03d}": f"candidate {k}" for k in range(200)}  # 19,900 pairs: 79,600 calls
    texts.update({f"x{k:02d}": f"extra {k}" for k in range(30)})  # 26,335 pairs: 105,340
    assert "up to 105,340 calls" in await refusal(texts)


async def test_max_calls_none_lifts_the_guard() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK, max_calls=None)
    assert ranking.calls == 66 * 3 * 2


async def test_resumed_pairs_do_not_count_towards_max_calls() -> None:
    judge = StrengthJudge(STRENGTHS)
    first = await rank(panel(judge), TEXTS, query=TASK)
    again = await rank(panel(judge), TEXTS, query=TASK, resume=first, max_calls=0)
    assert again.calls == 0


async def test_fisher_intervals_the_design_could_outgrow_are_refused_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bradley_terry, "FISHER_MAX_GROUP", 5)
    monkeypatch.setattr(bradley_terry, "FISHER_MAX_GROUP_PYTHON", 5)
    assert "ci='bootstrap'" in await refusal(TEXTS)
    assert "a budget below 5 pair items" in await refusal(TEXTS, pairs="adaptive", budget=20)


# -- the plan, announced before the first call -----------------------------------------------


async def test_on_plan_hears_the_pair_items_and_calls_before_the_first_call() -> None:
    judge = StrengthJudge(STRENGTHS)
    heard: list[tuple[RankPlan, int]] = []
    await rank(panel(judge), TEXTS, query=TASK, on_plan=lambda p: heard.append((p, judge.calls)))
    [(plan, calls_then)] = heard
    assert calls_then == 0
    assert (plan.pairs, plan.candidates, plan.items, plan.resumed) == ("all", 12, 66, 0)
    assert plan.calls == 66 * 3 * 2 and plan.per_item == "3 critics x 2 orders"


async def test_an_adaptive_plan_is_its_budget() -> None:
    heard: list[RankPlan] = []
    judge = StrengthJudge(STRENGTHS)
    await rank(panel(judge), TEXTS, query=TASK, pairs="adaptive", budget=20, on_plan=heard.append)
    assert heard[0].items == 20 and heard[0].calls == 20 * 3 * 2


async def test_an_exception_from_on_plan_stops_the_ranking_before_any_call() -> None:
    def stop(plan: RankPlan) -> None:
        raise ConfigError(f"not {plan.calls} calls today")

    assert await refusal(TEXTS, on_plan=stop) == "not 264 calls today"


# -- what a ranking records ------------------------------------------------------------------


async def test_a_resumed_ranking_counts_the_calls_of_every_run() -> None:
    judge = StrengthJudge(STRENGTHS)
    first = await rank(panel(judge), TEXTS, query=TASK)
    again = await rank(panel(judge), TEXTS, query=TASK, resume=first)
    assert first.calls == first.calls_total == 66 * 3 * 2
    assert again.calls == 0 and again.calls_total == 66 * 3 * 2


async def test_a_ranking_file_without_calls_total_reads_it_from_its_results() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    older: dict[str, Any] = ranking.model_dump(mode="json")
    del older["calls_total"]
    older["calls"] = 0  # as a resume that asked nothing wrote it
    assert Ranking.model_validate(older).calls_total == 66 * 3 * 2


async def test_a_ranking_records_its_question_and_every_candidates_answer() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    assert ranking.queries == [TASK]
    assert ranking.answers == {cid: [text] for cid, text in TEXTS.items()}


async def test_an_arena_ranking_records_each_answer_per_question_and_none_where_missing() -> None:
    queries = ["q1", "q2"]
    candidates = {"a": {"q1": "a1", "q2": "a2"}, "b": {"q1": "b1"}}
    strengths = {"a1": 1.0, "a2": 1.0, "b1": 0.0}
    ranking = await rank(panel(StrengthJudge(strengths)), candidates, queries=queries)
    assert ranking.queries == queries
    assert ranking.answers == {"a": ["a1", "a2"], "b": ["b1", None]}


async def test_a_resume_keeps_the_simulated_critics_of_the_ranking_it_continues() -> None:
    judge = StrengthJudge(STRENGTHS)
    first = await rank(panel(judge), TEXTS, query=TASK)
    marked = first.model_copy(update={"simulated_critics": ["j0"]})
    again = await rank(panel(judge), TEXTS, query=TASK, resume=marked)
    assert again.simulated_critics == ["j0"]


async def test_refit_keeps_the_calls_texts_and_simulated_critics() -> None:
    judge = StrengthJudge(STRENGTHS)
    first = await rank(panel(judge), TEXTS, query=TASK)
    again = await rank(panel(judge), TEXTS, query=TASK, resume=first)
    refit = again.model_copy(update={"simulated_critics": ["j1"]}).refit(level=0.9)
    assert (refit.calls, refit.calls_total) == (0, 66 * 3 * 2)
    assert refit.queries == [TASK] and refit.answers == again.answers
    assert refit.simulated_critics == ["j1"]
