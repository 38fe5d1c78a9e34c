"""A panel of rubric critics: the vote per criterion, the item's total and consensus, early
stop per criterion, revote and budgets. HTTP is an ``httpx.MockTransport`` vendor."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx
import pytest

from cross_judge import ConfigError, Ensemble, ErrorKind, Verdict
from cross_judge.critic._prompts import parse_prompt
from cross_judge.ensemble import revote
from cross_judge.pricing import register_price
from cross_judge.rubric import CriterionVerdict, Rubric
from cross_judge.verdict import EnsembleVerdict

from .vendor import (
    CRITERIA,
    IDS,
    ONE_CALL,
    PER_CRITERION,
    Reply,
    Vendor,
    asked_criterion,
    listed_criteria,
)

Labels = dict[str, dict[str, str]]
"""critic -> criterion -> label"""

AGREE_BUT_CITES = {
    "a": {"correct": "PASS", "cites": "PASS", "insults": "FAIL"},
    "b": {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"},
    "c": {"correct": "PASS", "cites": "PASS", "insults": "FAIL"},
}


def scripted(labels: Labels, *, confidence: float = 0.8) -> Vendor:
    """Each critic (by model name) answers its labels, in whichever mode asks."""

    def script(model: str, user: str) -> Reply:
        mine = labels[model]
        if "Judge each criterion" in user:
            body = {
                cid: {"kind": mine[cid], "confidence": confidence, "reasoning": "r"}
                for cid in listed_criteria(user)
                if cid in mine
            }
            return json.dumps({"criteria": body})
        cid = asked_criterion(user)
        return json.dumps({"kind": mine[cid], "confidence": confidence, "reasoning": "r"})

    return Vendor(script)


def panel(v: Vendor, names: str = "abc", prompt: Any = PER_CRITERION, **kwargs: Any) -> Ensemble:
    return Ensemble([v.critic(n, prompt) for n in names], **kwargs)


def asked_per_criterion(v: Vendor, model: str | None = None) -> Counter[str]:
    """How many times each criterion was asked (of ``model``)."""
    counts: Counter[str] = Counter()
    for user in v.users(model):
        if "Judge each criterion" in user:
            counts.update(listed_criteria(user))
        else:
            counts[asked_criterion(user)] += 1
    return counts


# -- the vote per criterion ------------------------------------------------------------------


@pytest.mark.anyio
async def test_each_criterion_gets_its_consensus_agreement_dispute_and_score() -> None:
    result = await panel(scripted(AGREE_BUT_CITES)).judge("q")
    assert result.criteria is not None
    cites = result.criteria["cites"]
    assert (cites.consensus, cites.disputed, cites.score, cites.n_valid) == ("PASS", True, 1.0, 3)
    assert cites.agreement_pct == pytest.approx(2 / 3)
    assert cites.dissenters == ["b"]
    correct = result.criteria["correct"]
    assert (correct.consensus, correct.disputed, correct.agreement_pct) == ("PASS", False, 1.0)
    assert result.criteria["insults"].score == 0.0
    assert result.disputed_criteria == ["cites"]
    assert result.disagreement


@pytest.mark.anyio
async def test_the_items_score_is_the_weighted_total_of_the_criteria_consensus() -> None:
    labels = {n: {"correct": "PASS", "cites": "FAIL", "insults": "PASS"} for n in "abc"}
    result = await panel(scripted(labels)).judge("q")
    assert result.score == pytest.approx((3 - 2) / 4)
    assert result.consensus == "FAIL"


@pytest.mark.anyio
async def test_a_failed_gate_consensus_makes_the_item_fail_with_total_zero() -> None:
    labels = {n: {"correct": "FAIL", "cites": "PASS", "insults": "FAIL"} for n in "abc"}
    result = await panel(scripted(labels)).judge("q")
    assert (result.consensus, result.score) == ("FAIL", 0.0)


@pytest.mark.anyio
async def test_the_item_passes_when_its_total_reaches_the_prompts_threshold() -> None:
    labels = {n: {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"} for n in "abc"}
    result = await panel(scripted(labels)).judge("q")
    assert (result.score, result.consensus) == (0.75, "PASS")


@pytest.mark.anyio
async def test_the_ensembles_pass_threshold_overrides_the_prompts() -> None:
    labels = {n: {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"} for n in "abc"}
    result = await panel(scripted(labels), pass_threshold=0.8).judge("q")
    assert (result.score, result.consensus) == (0.75, "FAIL")
    assert result.rubric is not None and result.rubric.threshold == 0.8


@pytest.mark.parametrize("threshold", [1.5, -0.1, True, "high"])
def test_a_pass_threshold_that_is_not_a_share_is_refused(threshold: Any) -> None:
    with pytest.raises(ConfigError, match="pass_threshold must be a number in"):
        panel(scripted(AGREE_BUT_CITES), pass_threshold=threshold)


def test_a_pass_threshold_without_a_rubric_is_refused() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match="no critic judges with a rubric"):
        Ensemble([v.critic("a", "pass-fail")], pass_threshold=0.5)


@pytest.mark.anyio
async def test_a_critic_whose_calls_failed_counts_as_an_error_on_every_criterion() -> None:
    good = scripted(AGREE_BUT_CITES).script

    def script(model: str, user: str) -> Reply:
        if model == "b":
            return httpx.Response(500, json={"error": {"message": "down"}})
        return good(model, user)

    result = await panel(Vendor(script)).judge("q")
    assert result.criteria is not None
    for cid in IDS:
        assert result.criteria[cid].n_valid == 2
    assert result.criteria["cites"].disputed is False
    b = next(x for x in result.verdicts if x.critic_id == "b")
    assert b.error_kind is ErrorKind.SERVER
    assert result.n_errors == 1


@pytest.mark.anyio
async def test_a_one_call_answer_missing_a_criterion_loses_only_that_vote() -> None:
    labels = {n: dict(AGREE_BUT_CITES["a"]) for n in "abc"}
    del labels["b"]["cites"]  # b's answer leaves cites out
    result = await panel(scripted(labels), prompt=ONE_CALL).judge("q")
    assert result.criteria is not None
    assert result.criteria["cites"].n_valid == 2
    assert result.criteria["correct"].n_valid == 3
    assert result.criteria["insults"].n_valid == 3
    b = next(x for x in result.verdicts if x.critic_id == "b")
    assert b.criteria is not None and b.criteria["cites"].kind == "PARSE_FAIL"


@pytest.mark.anyio
async def test_a_criterion_no_critic_answered_leaves_the_item_undecided() -> None:
    labels = {n: {"correct": "PASS", "insults": "FAIL"} for n in "abc"}  # none answers cites
    result = await panel(scripted(labels), prompt=ONE_CALL).judge("q")
    assert result.criteria is not None
    assert result.criteria["cites"].fallback
    assert result.score is None
    assert result.consensus == "UNCLEAR"


# -- what a rubric panel refuses -------------------------------------------------------------


def test_a_panel_mixing_rubric_and_plain_critics_is_refused() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match=r"critics \['b'\] judge with no rubric"):
        Ensemble([v.critic("a"), v.critic("b", "pass-fail")])


def test_a_panel_of_different_rubrics_is_refused() -> None:
    text = (
        "id: rq2\nversion: 1\nsystem_prompt: s\nuser_prompt_template: '{query} {criterion}'\n"
        + CRITERIA.replace("weight: 3", "weight: 2")
    )
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match="judges with another rubric"):
        Ensemble([v.critic("a"), v.critic("b", parse_prompt(text))])


def _rubric_passing_at(threshold: float) -> Any:
    text = (
        "id: rq3\nversion: 1\nsystem_prompt: s\nuser_prompt_template: '{query} {criterion}'\n"
        f"pass_threshold: {threshold}\n" + CRITERIA
    )
    return parse_prompt(text)


def test_critics_whose_rubrics_pass_at_different_totals_are_refused() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match=r"different totals \[0.5, 0.7\].*pass_threshold"):
        Ensemble([v.critic("a"), v.critic("b", _rubric_passing_at(0.7))])


def test_the_ensembles_pass_threshold_settles_critics_with_different_pass_marks() -> None:
    v = scripted(AGREE_BUT_CITES)
    jury = Ensemble([v.critic("a"), v.critic("b", _rubric_passing_at(0.7))], pass_threshold=0.6)
    assert jury.rubric is not None
    assert jury.rubric.threshold == 0.6


def test_a_panel_may_mix_per_criterion_and_one_call_critics_of_one_rubric() -> None:
    v = scripted(AGREE_BUT_CITES)
    e = Ensemble([v.critic("a"), v.critic("b", ONE_CALL)])
    assert e.critics[1].rubric is not None


def test_early_stop_cancel_is_refused_for_a_rubric_panel() -> None:
    with pytest.raises(ConfigError, match="early_stop='cancel' stops whole items"):
        panel(scripted(AGREE_BUT_CITES), early_stop="cancel")


def test_judging_pairs_is_refused_for_a_rubric_panel() -> None:
    with pytest.raises(ConfigError, match="judges pairs"):
        panel(scripted(AGREE_BUT_CITES), order="both")


@pytest.mark.anyio
async def test_criteria_for_a_plain_panel_are_refused() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match="criteria= names criteria of a rubric"):
        await Ensemble([v.critic("a", "pass-fail")]).judge("q", criteria=["cites"])


@pytest.mark.anyio
async def test_unknown_criteria_are_refused_before_any_call() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match="criteria must name criteria of the panel's rubric"):
        await panel(v).judge("q", criteria=["nope"])
    assert v.requests == []


# -- early stop per criterion ----------------------------------------------------------------


@pytest.mark.anyio
async def test_early_stop_asks_the_third_critic_only_the_criteria_still_undecided() -> None:
    v = scripted(AGREE_BUT_CITES)
    result = await panel(v, early_stop=True).judge("q")
    assert asked_per_criterion(v) == Counter({"correct": 2, "insults": 2, "cites": 3})
    assert asked_per_criterion(v, "c") == Counter({"cites": 1})
    assert result.criteria is not None
    assert result.criteria["cites"].n_valid == 3
    assert result.criteria["correct"].n_valid == 2
    assert (result.score, result.consensus) == (1.0, "PASS")


@pytest.mark.anyio
async def test_early_stop_with_one_call_critics_lists_only_undecided_criteria() -> None:
    v = scripted(AGREE_BUT_CITES)
    await panel(v, prompt=ONE_CALL, early_stop=True).judge("q")
    assert v.users("c") and listed_criteria(v.users("c")[0]) == ["cites"]


@pytest.mark.anyio
async def test_early_stop_asks_no_third_critic_when_two_agree_on_every_criterion() -> None:
    labels = {n: dict(AGREE_BUT_CITES["a"]) for n in "abc"}
    v = scripted(labels)
    result = await panel(v, early_stop=True).judge("q")
    assert v.users("c") == []
    c = next(x for x in result.verdicts if x.critic_id == "c")
    assert c.error_kind is ErrorKind.EARLY_STOP


@pytest.mark.anyio
async def test_early_stop_counts_a_failed_call_as_no_vote_and_asks_on() -> None:
    good = scripted({n: dict(AGREE_BUT_CITES["a"]) for n in "abc"}).script

    def script(model: str, user: str) -> Reply:
        if model == "a" and asked_criterion(user) == "correct":
            return httpx.Response(500, json={"error": {"message": "down"}})
        return good(model, user)

    v = Vendor(script)
    result = await panel(v, early_stop=True).judge("q")
    assert asked_per_criterion(v, "c") == Counter({"correct": 1})
    assert result.criteria is not None and result.criteria["correct"].n_valid == 2


# -- some criteria only ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_judging_some_criteria_asks_and_reports_only_those() -> None:
    v = scripted(AGREE_BUT_CITES)
    result = await panel(v).judge("q", criteria=["cites", "insults"])
    assert set(asked_per_criterion(v)) == {"cites", "insults"}
    assert result.criteria is not None and list(result.criteria) == ["cites", "insults"]
    assert result.score == 1.0  # cites met, insults not: the partial total


# -- revote ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_stored_result_revotes_per_criterion_after_a_json_round_trip() -> None:
    result = await panel(scripted(AGREE_BUT_CITES)).judge("q")
    stored = EnsembleVerdict.model_validate_json(result.model_dump_json())
    averaged = revote(stored, "average")
    assert averaged.criteria is not None
    assert averaged.criteria["cites"].score == pytest.approx(2 / 3)
    assert averaged.score == pytest.approx((3 + 2 / 3) / 4)
    assert averaged.voting == "average"
    majority = revote(stored, "majority")
    assert majority.criteria == result.criteria
    assert (majority.score, majority.consensus) == (result.score, result.consensus)


@pytest.mark.anyio
async def test_a_revote_keeps_the_stored_rubric_and_threshold() -> None:
    labels = {n: {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"} for n in "abc"}
    result = await panel(scripted(labels), pass_threshold=0.8).judge("q")
    stored = EnsembleVerdict.model_validate_json(result.model_dump_json())
    again = revote(stored, "trimmed_mean")
    assert again.rubric is not None and again.rubric.threshold == 0.8
    assert (again.score, again.consensus) == (0.75, "FAIL")


@pytest.mark.anyio
async def test_a_revote_of_a_partial_result_covers_the_same_criteria() -> None:
    result = await panel(scripted(AGREE_BUT_CITES)).judge("q", criteria=["cites"])
    again = revote(EnsembleVerdict.model_validate_json(result.model_dump_json()), "majority")
    assert again.criteria is not None and list(again.criteria) == ["cites"]
    assert again.score == result.score == 1.0


def rubric_verdict(critic: str, labels: dict[str, str]) -> Verdict:
    score = {"PASS": 1.0, "FAIL": 0.0}
    return Verdict(
        kind="PASS",
        critic_id=critic,
        criteria={
            cid: CriterionVerdict(kind=k, confidence=0.8, score=score[k])
            for cid, k in labels.items()
        },
    )


def test_aggregating_rubric_verdicts_on_an_empty_ensemble_infers_the_rubric() -> None:
    verdicts = [rubric_verdict(n, AGREE_BUT_CITES[n]) for n in "abc"]
    result = Ensemble([]).aggregate_verdicts(verdicts, query_id="q1")
    assert isinstance(result.rubric, Rubric)
    assert result.rubric.ids == IDS
    assert result.criteria is not None and result.criteria["cites"].disputed
    assert result.score == pytest.approx(2 / 3)  # weights 1, no gate: 2 of 3 met


# -- budgets ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_float_budget_caps_every_per_criterion_call_of_the_panel_together() -> None:
    register_price("rubric-panel-model", vendor="custom", input=0.0, output=1_000_000.0)
    v = scripted({"rubric-panel-model": AGREE_BUT_CITES["a"]})
    v.completion_tokens = 10
    e = Ensemble([v.critic(n, model="rubric-panel-model", max_tokens=10) for n in "ab"])
    result = await e.judge("q", budget_usd=25.0)  # two calls of $10 fit, not six
    assert len(v.requests) == 2
    assert result.cost_usd == pytest.approx(20.0)
    skipped = [
        a
        for x in result.verdicts
        for a in (x.criteria or {}).values()
        if a.error_kind is ErrorKind.BUDGET
    ]
    assert len(skipped) == 4


@pytest.mark.anyio
async def test_criteria_given_as_one_string_are_refused_before_any_call() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match="a list of criterion ids, not the string 'cites'"):
        await panel(v).judge("q", criteria="cites")
    assert v.requests == []


@pytest.mark.anyio
async def test_a_criterion_named_twice_is_refused_before_any_call() -> None:
    v = scripted(AGREE_BUT_CITES)
    with pytest.raises(ConfigError, match=r"repeats \['cites'\]"):
        await panel(v).judge("q", criteria=["cites", "cites"])
    assert v.requests == []


@pytest.mark.anyio
async def test_the_criteria_of_a_partial_result_are_in_rubric_order() -> None:
    result = await panel(scripted(AGREE_BUT_CITES)).judge("q", criteria=["insults", "correct"])
    assert result.criteria is not None and list(result.criteria) == ["correct", "insults"]


def test_tallying_a_criterion_twice_is_still_a_partial_total() -> None:
    from cross_judge.rubric.tally import tally
    from cross_judge.voting import majority_vote

    verdicts = [rubric_verdict(n, AGREE_BUT_CITES[n]) for n in "abc"]
    rubric = Ensemble([]).aggregate_verdicts(verdicts, query_id="q").rubric
    assert rubric is not None
    two = rubric.model_copy(update={"criteria": rubric.criteria[:2]})
    result = tally(verdicts, two, majority_vote, {}, ids=["cites", "cites"])
    assert result.total == 1.0
    assert list(result.criteria) == ["cites"]
