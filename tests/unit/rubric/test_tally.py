"""The vote per criterion (:mod:`cross_judge.rubric.tally`) on scales other than PASS/FAIL and
with score strategies, and the ``trimmed_mean`` strategy."""

from __future__ import annotations

import math
from typing import Any

import pytest

from cross_judge import ConfigError, Verdict
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.rubric.tally import tally
from cross_judge.voting import get_voting_strategy, trimmed_mean_score

GOOD_BAD = Rubric(
    criteria=(Criterion(id="cites", requirement="Cites."), Criterion(id="clear", requirement="C.")),
    scale={"GOOD": 1.0, "BAD": 0.0},
)
FIVE = GOOD_BAD.model_copy(update={"scale": {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}})


def answered(rubric: Rubric, *rows: dict[str, str]) -> list[Verdict]:
    return [
        Verdict(
            kind="PASS",
            critic_id=f"c{i}",
            criteria={
                cid: CriterionVerdict(kind=label, confidence=0.8, score=rubric.score_of(label))
                for cid, label in row.items()
            },
        )
        for i, row in enumerate(rows)
    ]


def vote(rubric: Rubric, strategy: str, rows: list[dict[str, str]], **kwargs: Any) -> Any:
    return tally(answered(rubric, *rows), rubric, get_voting_strategy(strategy), kwargs)


ROWS = [
    {"cites": "GOOD", "clear": "BAD"},
    {"cites": "GOOD", "clear": "BAD"},
    {"cites": "BAD", "clear": "BAD"},
]


@pytest.mark.parametrize("strategy", ["average", "median", "trimmed_mean", "highest"])
def test_a_score_strategy_on_a_two_label_scale_gives_labels_of_that_scale(strategy: str) -> None:
    result = vote(GOOD_BAD, strategy, ROWS)
    assert result.criteria["clear"].consensus == "BAD"
    assert result.criteria["cites"].consensus == "GOOD"


def test_a_score_strategy_on_a_two_label_scale_counts_agreement_with_its_label() -> None:
    cites = vote(GOOD_BAD, "average", ROWS).criteria["cites"]
    assert cites.agreement_pct == pytest.approx(2 / 3)
    assert cites.dissenters == ["c2"]
    assert cites.score == pytest.approx(2 / 3)


def test_a_score_at_the_strategys_threshold_follows_its_tie_rule_on_the_scale() -> None:
    rows = [{"cites": "GOOD", "clear": "GOOD"}, {"cites": "BAD", "clear": "GOOD"}]
    assert vote(GOOD_BAD, "average", rows).criteria["cites"].consensus == "GOOD"
    assert vote(GOOD_BAD, "average", rows, ties="fail").criteria["cites"].consensus == "BAD"


def test_a_score_strategy_on_an_ordinal_scale_gives_the_nearest_label() -> None:
    rows = [
        {"cites": "5", "clear": "1"},
        {"cites": "4", "clear": "2"},
        {"cites": "4", "clear": "5"},
    ]
    result = vote(FIVE, "average", rows)
    assert result.criteria["cites"].consensus == "4"  # mean 0.833
    assert result.criteria["clear"].consensus == "3"  # mean 0.417
    assert result.criteria["clear"].score == pytest.approx(5 / 12)


def test_majority_on_an_ordinal_scale_scores_the_winning_label() -> None:
    rows = [
        {"cites": "4", "clear": "1"},
        {"cites": "4", "clear": "1"},
        {"cites": "2", "clear": "5"},
    ]
    result = vote(FIVE, "majority", rows)
    assert (result.criteria["cites"].consensus, result.criteria["cites"].score) == ("4", 0.75)
    assert result.total == pytest.approx((0.75 + 0.0) / 2)


# -- trimmed_mean ----------------------------------------------------------------------------


def scored(*scores: float) -> list[Verdict]:
    return [Verdict(kind="PASS", critic_id=f"c{i}", score=s) for i, s in enumerate(scores)]


def test_trimmed_mean_drops_the_share_of_ballots_at_each_end() -> None:
    got = trimmed_mean_score(scored(0.0, 0.6, 0.7, 0.8, 1.0), trim=0.2)
    assert got.score == pytest.approx(0.7)


def test_trimmed_mean_drops_at_least_one_at_each_end_of_three_ballots() -> None:
    got = trimmed_mean_score(scored(0.0, 0.9, 1.0))
    assert got.score == pytest.approx(0.9)


def test_trimmed_mean_of_one_or_two_ballots_is_their_mean() -> None:
    assert trimmed_mean_score(scored(0.2, 0.6)).score == pytest.approx(0.4)
    assert trimmed_mean_score(scored(0.3)).score == pytest.approx(0.3)


def test_trimmed_mean_with_trim_zero_is_the_mean() -> None:
    got = trimmed_mean_score(scored(0.0, 0.6, 0.7, 0.8, 1.0), trim=0)
    assert got.score == pytest.approx(0.62)


@pytest.mark.parametrize("trim", [0.5, -0.1, 1, True, math.nan, "0.1"])
def test_trimmed_mean_refuses_a_trim_outside_0_to_one_half(trim: Any) -> None:
    with pytest.raises(ConfigError, match="trim must be a share in"):
        trimmed_mean_score(scored(0.1, 0.2, 0.3), trim=trim)


def test_trimmed_mean_is_the_strategy_named_trimmed_mean() -> None:
    assert get_voting_strategy("trimmed_mean") is trimmed_mean_score
