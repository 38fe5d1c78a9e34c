"""The ranking's fit: every vote in each order shown (the default up to 300 candidates) or
one consensus per pair, on the same judged pairs, and what the ranking records of it."""

from __future__ import annotations

import json

import pytest

from cross_judge import ConfigError, Ranking
from cross_judge.ranking import VOTE_FIT_LIMIT, fit_ranking, rank

from .strength_judge import StrengthJudge
from .test_rank import STRENGTHS, TASK, TEXTS, panel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


pytestmark = pytest.mark.anyio

SIX = {cid: TEXTS[cid] for cid in list(TEXTS)[:6]}


async def ranked(**options: object) -> Ranking:
    return await rank(panel(StrengthJudge(STRENGTHS)), SIX, query=TASK, **options)  # type: ignore[arg-type]


async def test_the_default_fit_counts_every_critics_vote_in_both_orders() -> None:
    ranking = await ranked()
    assert ranking.fit == "votes"
    assert ranking.votes == 15 * 3 * 2  # pairs x critics x orders
    assert set(ranking.first_shown) == {"j0", "j1", "j2"}


async def test_the_consensus_fit_of_the_same_results_is_one_outcome_per_pair() -> None:
    ranking = await ranked()
    consensus = ranking.refit(fit="consensus")
    assert consensus.fit == "consensus" and consensus.votes == 0 and not consensus.first_shown
    assert consensus.calls == ranking.calls and consensus.results == ranking.results
    assert consensus.ratings != ranking.ratings


async def test_a_critic_of_weight_zero_counts_as_if_it_had_not_voted() -> None:
    ranking = await ranked()
    weighted = ranking.refit(weights={"j2": 0.0})
    dropped = [
        r.model_copy(update={"verdicts": [v for v in r.verdicts if v.critic_id != "j2"]})
        for r in ranking.results
    ]
    alone = fit_ranking(list(SIX), dropped)
    assert weighted.weights == {"j2": 0.0}
    for cid in SIX:
        assert weighted.ratings[cid] == pytest.approx(alone.ratings[cid], abs=1e-6)


async def test_a_refit_keeps_the_fit_it_was_made_with() -> None:
    ranking = await ranked(fit="consensus")
    assert ranking.fit == "consensus"
    assert ranking.refit(level=0.9).fit == "consensus"


async def test_weights_need_the_vote_fit() -> None:
    with pytest.raises(ConfigError, match="weights apply"):
        await ranked(fit="consensus", weights={"j0": 2.0})


async def test_an_unknown_fit_is_refused_before_any_call() -> None:
    judge = StrengthJudge(STRENGTHS)
    with pytest.raises(ConfigError, match="fit must be"):
        await rank(panel(judge), SIX, query=TASK, fit="mean")  # type: ignore[arg-type]
    assert judge.calls == 0


def test_auto_fits_the_consensus_above_the_vote_fits_limit() -> None:
    from cross_judge.ranking._model import resolve_fit

    assert resolve_fit("auto", VOTE_FIT_LIMIT) == "votes"
    assert resolve_fit("auto", VOTE_FIT_LIMIT + 1) == "consensus"
    with pytest.raises(ConfigError, match="fit='consensus'"):
        resolve_fit("votes", 10**6)


async def test_a_ranking_file_from_before_the_vote_fit_reads_as_the_consensus_fit() -> None:
    ranking = await ranked(fit="consensus")
    data = json.loads(ranking.model_dump_json())
    for key in ("fit", "votes", "first_shown", "weights"):
        data.pop(key)
    old = Ranking.model_validate(data)
    assert old.fit == "consensus"
    assert old.refit().ratings == pytest.approx(ranking.ratings)


async def test_a_flip_is_two_votes_not_a_tie() -> None:
    ranking = await ranked()
    flipped = [v for r in ranking.results for v in r.verdicts if v.flipped]
    assert flipped, "the scripted judge flips some pairs"
    assert ranking.votes == 90  # each flip still gives its two answers as votes


async def test_fit_votes_over_more_candidates_than_it_solves_is_refused_before_any_call() -> None:
    from cross_judge.stats import fisher_group_limit

    judge = StrengthJudge(STRENGTHS)
    many = {f"c{k}": f"answer {k}" for k in range(fisher_group_limit() + 1)}
    with pytest.raises(ConfigError, match="fit='consensus'"):
        await rank(panel(judge), many, query=TASK, fit="votes", pairs="adaptive", budget=5)
    assert judge.calls == 0


async def test_a_negative_weight_is_refused_before_any_call() -> None:
    judge = StrengthJudge(STRENGTHS)
    with pytest.raises(ConfigError, match="weights must be numbers >= 0"):
        await rank(panel(judge), SIX, query=TASK, weights={"j0": -1.0})
    assert judge.calls == 0
