"""``rank``: many candidates ranked from pairs judged by a panel, against a scripted judge
that decides by latent Bradley-Terry strengths (``strength_judge.py``)."""

from __future__ import annotations

import pytest

from cross_judge import ConfigError, Critic, Ensemble, ErrorKind, Ranking
from cross_judge.cascade import Cascade
from cross_judge.ranking import rank, spearman
from cross_judge.ranking._design import overlap_pairs
from cross_judge.ranking._engine import CandidatePool, next_pairs

from .strength_judge import StrengthJudge


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: what these tests measure (the simulator's draws, the ranking's fit
    and schedule) does not depend on the event loop, and the client path is run on both
    loops elsewhere (tests/integration/test_rank_over_http.py, the Ensemble tests); once
    is enough for the suite's time budget."""
    return "asyncio"


pytestmark = pytest.mark.anyio

TASK = "Explain why the sky is blue."
# Twelve candidates, latent strengths 0.0, 0.7, ..., 7.7: "c11" is best.
LATENT = {f"c{k:02d}": 0.7 * k for k in range(12)}
TEXTS = {cid: f"answer of {cid}" for cid in LATENT}
STRENGTHS = {TEXTS[cid]: s for cid, s in LATENT.items()}


def panel(
    judge: StrengthJudge, *, order: str = "both", families: tuple[str | None, ...] = ()
) -> Ensemble:
    names = ("j0", "j1", "j2")
    fams = families or (None,) * len(names)
    return Ensemble(
        [judge.critic(n, family=f) for n, f in zip(names, fams, strict=True)],
        order=order,  # type: ignore[arg-type]  # a test parameter
    )


def latent_rho(ranking: Ranking) -> float:
    ids = list(LATENT)
    rho = spearman([ranking.ratings[c] for c in ids], [LATENT[c] for c in ids])
    assert rho is not None
    return rho


async def test_all_pairs_of_twelve_candidates_recover_the_latent_order() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    assert latent_rho(ranking) >= 0.95
    assert ranking.order[0] in ("c11", "c10")


async def test_all_pairs_judges_each_pair_once_in_both_orders_by_every_critic() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK)
    assert len(ranking.results) == 66
    assert ranking.calls == judge.calls == 66 * 3 * 2
    assert ranking.comparisons + ranking.undecided == 66


async def test_ratings_are_centred_on_1000_and_inside_their_intervals() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    assert sum(ranking.ratings.values()) / 12 == pytest.approx(1000.0)
    for cid, rating in ranking.ratings.items():
        low, high = ranking.ci[cid]
        assert low < rating < high
    assert ranking.ci_method == "fisher"
    assert ranking.level == 0.95


async def test_the_order_is_the_ratings_best_first() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    ratings = [ranking.ratings[c] for c in ranking.order]
    assert ratings == sorted(ratings, reverse=True)


async def test_ties_are_kept_as_half_wins_and_fit_a_tie_parameter() -> None:
    # Four candidates in two equal pairs: equal strengths always tie.
    texts = {"p": "p", "q": "q", "r": "r", "s": "s"}
    judge = StrengthJudge({"p": 0.0, "q": 0.0, "r": 2.0, "s": 2.0}, tie_gap=0.1)
    ranking = await rank(panel(judge), texts, query=TASK)
    assert ranking.ties >= 2
    assert ranking.tie > 0
    assert ranking.win_matrix["p"]["q"] == 0.5
    assert ranking.win_matrix["q"]["p"] == 0.5


async def test_win_matrix_counts_wins_of_the_row_over_the_column() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    for row, cols in ranking.win_matrix.items():
        for col, wins in cols.items():
            assert wins + ranking.win_matrix[col][row] == 1.0  # one comparison per pair


async def test_per_critic_ratings_come_from_each_critics_own_verdicts() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    assert set(ranking.per_critic) == {"j0", "j1", "j2"}
    for name, ratings in ranking.per_critic.items():
        assert set(ratings) == set(LATENT)
        rho = ranking.per_critic_spearman[name]
        assert rho is not None and rho > 0.8


async def test_records_give_one_row_per_candidate_best_first() -> None:
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    rows = ranking.to_records()
    assert [r["id"] for r in rows] == ranking.order
    assert [r["rank"] for r in rows] == list(range(1, 13))
    first = rows[0]
    assert set(first) == {"id", "rank", "rating", "low", "high", "wins", "losses", "ties"}
    assert first["low"] <= first["rating"] <= first["high"]
    assert all(r["wins"] + r["losses"] + r["ties"] == 11 for r in rows)


async def test_a_fixed_order_panel_ranks_in_both_orders_by_default() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await panel(judge, order="fixed").rank(TEXTS, query=TASK)
    assert ranking.calls == 66 * 3 * 2
    assert {v.order for r in ranking.results for v in r.verdicts} <= {"both", "ab", "ba"}


async def test_a_fixed_order_is_kept_when_asked_and_each_pair_is_a_coin_which_is_shown_first() -> (
    None
):
    judge = StrengthJudge(STRENGTHS)
    ranking = await panel(judge, order="fixed").rank(TEXTS, query=TASK, order="fixed")
    assert ranking.calls == 66 * 3
    ids = list(TEXTS)
    firsts = [
        ids.index(r.meta["rank"]["a"]) < ids.index(r.meta["rank"]["b"]) for r in ranking.results
    ]
    assert 20 < sum(firsts) < 46  # not always the candidate listed first


async def test_resume_asks_nothing_already_judged() -> None:
    judge = StrengthJudge(STRENGTHS)
    first = await rank(panel(judge), TEXTS, query=TASK)
    calls = judge.calls
    again = await rank(panel(judge), TEXTS, query=TASK, resume=first)
    assert judge.calls == calls
    assert again.ratings == first.ratings
    assert again.calls == 0


async def test_refit_with_a_bootstrap_makes_no_call() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK)
    calls = judge.calls
    boot = ranking.refit(ci="bootstrap", level=0.9)
    assert judge.calls == calls
    assert boot.ci_method == "bootstrap" and boot.level == 0.9
    assert boot.ratings == pytest.approx(ranking.ratings)


async def test_item_ids_are_the_same_on_every_run() -> None:
    one = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    two = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    assert [r.query_id for r in one.results] == [r.query_id for r in two.results]


# -- many queries (the arena case) ---------------------------------------------------------


async def test_many_queries_judge_a_pair_on_every_query_both_answered() -> None:
    queries = ["q1", "q2", "q3"]
    strengths = {f"{cid} on {q}": LATENT[cid] for cid in ("c00", "c05", "c11") for q in queries}
    candidates = {
        "c00": {q: f"c00 on {q}" for q in queries},
        "c05": {q: f"c05 on {q}" for q in queries},
        "c11": {q: f"c11 on {q}" for q in queries[:2]},  # did not answer q3
    }
    ranking = await rank(panel(StrengthJudge(strengths)), candidates, queries=queries)
    assert len(ranking.results) == 3 + 2 + 2
    assert ranking.order == ["c11", "c05", "c00"]
    assert {r.meta["rank"]["query"] for r in ranking.results} == {0, 1, 2}


# -- adaptive ------------------------------------------------------------------------------


async def test_adaptive_pairs_reach_the_latent_order_with_40_percent_of_the_calls() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK, pairs="adaptive", budget=26)
    assert ranking.calls <= 0.4 * 66 * 3 * 2
    assert latent_rho(ranking) >= 0.85


def test_the_neighbour_rule_picks_overlapping_neighbours_most_overlap_first() -> None:
    pool = CandidatePool({"w": "w", "x": "x", "y": "y", "z": "z"}, TASK, None)
    ranking = Ranking(
        order=["z", "y", "x", "w"],
        ratings={"z": 1300.0, "y": 1100.0, "x": 900.0, "w": 700.0},
        ci={"z": (1150.0, 1450.0), "y": (1000.0, 1200.0), "x": (850.0, 950.0), "w": (600.0, 800.0)},
    )
    available = dict.fromkeys([(i, j) for i in range(4) for j in range(i + 1, 4)], 1)
    # z-y overlap by 50, y-x and x-w not at all: only (y, z) = (2, 3) is worth judging.
    assert overlap_pairs(ranking, pool, {}, available, 3) == [(2, 3)]
    # Judged already: its place goes to the pair of either with the nearest-rated other.
    assert overlap_pairs(ranking, pool, {(2, 3): 1}, available, 3) == [(1, 2)]


def test_the_scheduler_stops_when_no_neighbouring_intervals_overlap() -> None:
    pool = CandidatePool({"x": "x", "y": "y"}, TASK, None)
    ranking = Ranking(
        order=["y", "x"],
        ratings={"y": 1100.0, "x": 900.0},
        ci={"y": (1001.0, 1200.0), "x": (800.0, 999.0)},
    )
    assert next_pairs(ranking, pool, {}, {(0, 1): 1}, 3) == []


async def test_adaptive_pairs_are_the_same_for_a_seed() -> None:
    one = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK, pairs="adaptive", seed=3)
    two = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK, pairs="adaptive", seed=3)
    assert [r.query_id for r in one.results] == [r.query_id for r in two.results]


async def test_adaptive_stops_at_its_budget_of_pair_items() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(panel(judge), TEXTS, query=TASK, pairs="adaptive", budget=20)
    assert len(ranking.results) == 20
    assert judge.calls == 20 * 3 * 2


async def test_adaptive_starts_from_a_connected_design_covering_every_candidate() -> None:
    ranking = await rank(
        panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK, pairs="adaptive", budget=12
    )
    named = {c for r in ranking.results for c in (r.meta["rank"]["a"], r.meta["rank"]["b"])}
    assert named == set(TEXTS)


async def test_adaptive_resumes_without_new_calls() -> None:
    judge = StrengthJudge(STRENGTHS)
    first = await rank(panel(judge), TEXTS, query=TASK, pairs="adaptive", budget=30)
    calls = judge.calls
    again = await rank(panel(judge), TEXTS, query=TASK, pairs="adaptive", budget=30, resume=first)
    assert judge.calls == calls
    assert [r.query_id for r in again.results] == [r.query_id for r in first.results]


# -- self-preference -----------------------------------------------------------------------


async def test_a_critic_sits_out_pairs_involving_a_candidate_of_its_family() -> None:
    judge = StrengthJudge(STRENGTHS)
    families = {"c00": "openai", "c05": "anthropic"}
    ranking = await rank(
        panel(judge, families=("openai", None, None)), TEXTS, query=TASK, families=families
    )
    involving = [r for r in ranking.results if "c00" in (r.meta["rank"]["a"], r.meta["rank"]["b"])]
    assert len(involving) == 11
    for result in involving:
        sat = result.verdicts[0]
        assert sat.kind == "SKIPPED" and sat.error_kind is ErrorKind.SELF_PREFERENCE
        assert sat.attempts == 0
        assert result.n_errors == 0 and result.n_valid == 2
    asked = {(a, b) for model, a, b in judge.seen if model == "j0"}
    assert not any(TEXTS["c00"] in pair for pair in asked)
    assert ranking.calls == 66 * 3 * 2 - 11 * 2


async def test_self_preference_can_be_turned_off() -> None:
    judge = StrengthJudge(STRENGTHS)
    ranking = await rank(
        panel(judge, families=("openai", None, None)),
        TEXTS,
        query=TASK,
        families={"c00": "openai"},
        self_preference=False,
    )
    assert ranking.calls == 66 * 3 * 2


async def test_a_cascade_ranks_and_its_critics_sit_out_too() -> None:
    judge = StrengthJudge(STRENGTHS)
    cascade = Cascade(
        tiers=[
            Ensemble([judge.critic("t0", family="openai"), judge.critic("t1")], order="both"),
            Ensemble([judge.critic("t2")], order="both"),
        ]
    )
    texts = {k: TEXTS[k] for k in ("c00", "c04", "c08", "c11")}
    ranking = await cascade.rank(texts, query=TASK, families={"c00": "openai"})
    assert ranking.order[0] == "c11"
    with_c00 = [r for r in ranking.results if "c00" in (r.meta["rank"]["a"], r.meta["rank"]["b"])]
    assert all(r.verdicts[0].error_kind is ErrorKind.SELF_PREFERENCE for r in with_c00)


# -- refusals ------------------------------------------------------------------------------


async def test_fewer_than_two_candidates_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least 2 candidates"):
        await rank(panel(StrengthJudge(STRENGTHS)), {"c00": "x"}, query=TASK)


async def test_a_panel_that_does_not_judge_pairs_is_refused_before_any_call() -> None:
    judge = StrengthJudge(STRENGTHS)
    ensemble = Ensemble([judge.critic("j0", prompt="pass-fail")])
    with pytest.raises(ConfigError, match="does not judge pairs"):
        await rank(ensemble, TEXTS, query=TASK)
    assert judge.calls == 0


async def test_exactly_one_of_query_and_queries_is_needed() -> None:
    with pytest.raises(ConfigError, match="exactly one of query"):
        await rank(panel(StrengthJudge(STRENGTHS)), TEXTS)
    with pytest.raises(ConfigError, match="exactly one of query"):
        await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK, queries=[TASK])


async def test_a_budget_below_all_pairs_is_refused() -> None:
    with pytest.raises(ConfigError, match="pairs='adaptive'"):
        await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK, budget=10)


@pytest.mark.parametrize(
    ("option", "value"),
    [("pairs", "some"), ("ci", "wald"), ("level", 1.5), ("budget", 0)],
)
async def test_bad_options_are_refused(option: str, value: object) -> None:
    with pytest.raises(ConfigError):
        await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK, **{option: value})  # type: ignore[arg-type]


# -- sit-out and family on their own -------------------------------------------------------


async def test_judge_sit_out_skips_the_named_critics_and_counts_no_error() -> None:
    judge = StrengthJudge(STRENGTHS)
    result = await panel(judge).judge(
        TASK,
        context={"response_a": TEXTS["c00"], "response_b": TEXTS["c11"]},
        sit_out=["j1"],
    )
    assert [v.kind for v in result.verdicts][1] == "SKIPPED"
    assert result.verdicts[1].error_kind is ErrorKind.SELF_PREFERENCE
    assert result.n_errors == 0 and result.n_valid == 2
    assert judge.calls == 4


async def test_judge_sit_out_naming_an_unknown_critic_is_refused() -> None:
    with pytest.raises(ConfigError, match="sit_out names unknown critics"):
        await panel(StrengthJudge(STRENGTHS)).judge(
            TASK, context={"response_a": "x", "response_b": "y"}, sit_out=["nobody"]
        )


def test_a_critic_family_must_be_a_non_empty_string() -> None:
    with pytest.raises(ConfigError, match="family"):
        Critic(name="x", model="m", vendor="custom", base_url="http://h.test/v1", family="  ")


async def test_to_pandas_gives_the_records_indexed_by_id() -> None:
    pandas = pytest.importorskip("pandas")
    ranking = await rank(panel(StrengthJudge(STRENGTHS)), TEXTS, query=TASK)
    frame = ranking.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.index) == ranking.order
