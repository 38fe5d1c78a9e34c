"""A critic judging with a rubric: its requests, how it reads a one_call answer, and its
verdict over the criteria. HTTP is an ``httpx.MockTransport`` vendor."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cross_judge import ConfigError, ErrorKind, PromptError, Usage, Verdict
from cross_judge.pricing import register_price

from ..rubric.vendor import (
    IDS,
    ONE_CALL,
    PER_CRITERION,
    REQUIREMENTS,
    Vendor,
    asked_criterion,
    labels_reply,
    listed_criteria,
)

ALL_PASS = {"correct": "PASS", "cites": "PASS", "insults": "FAIL"}


def vendor(labels: dict[str, str] = ALL_PASS) -> Vendor:
    return Vendor(labels_reply(labels))


def call(kind: str, **kwargs: Any) -> Verdict:
    score = {"PASS": 1.0, "FAIL": 0.0}.get(kind)
    return Verdict(kind=kind, critic_id="a", confidence=0.6, score=score, **kwargs)


# -- requests --------------------------------------------------------------------------------


def test_a_per_criterion_critic_sends_one_request_per_criterion_with_its_requirement() -> None:
    plan = vendor().critic("a").rubric_requests("The item.")
    assert [ids for ids, _ in plan] == [("correct",), ("cites",), ("insults",)]
    for (_, request), cid in zip(plan, IDS, strict=True):
        user = request.user
        assert REQUIREMENTS[cid] in user
        assert all(REQUIREMENTS[o] not in user for o in IDS if o != cid)


def test_a_per_criterion_critic_asked_some_criteria_sends_only_theirs() -> None:
    plan = vendor().critic("a").rubric_requests("q", criteria=["insults", "cites"])
    assert [ids for ids, _ in plan] == [("cites",), ("insults",)]  # rubric order


def test_a_one_call_critic_sends_one_request_listing_only_the_asked_criteria() -> None:
    plan = vendor().critic("a", ONE_CALL).rubric_requests("q", criteria=["cites", "insults"])
    assert len(plan) == 1
    ids, request = plan[0]
    assert ids == ("cites", "insults")
    assert listed_criteria(request.user) == ["cites", "insults"]


def test_a_one_call_schema_requires_exactly_the_asked_criteria() -> None:
    critic = vendor().critic("a", ONE_CALL, structured="schema")
    ((_, request),) = critic.rubric_requests("q", criteria=["cites", "insults"])
    assert request.schema is not None
    criteria = json.loads(request.schema.text)["properties"]["criteria"]
    assert sorted(criteria["properties"]) == ["cites", "insults"]
    assert criteria["required"] == ["cites", "insults"]
    assert criteria["additionalProperties"] is False
    kind = criteria["properties"]["cites"]["properties"]["kind"]
    assert kind["enum"] == ["PASS", "FAIL"]


@pytest.mark.parametrize("key", ["criterion", "criterion_id", "criteria"])
def test_a_context_key_a_rubric_fills_is_refused(key: str) -> None:
    with pytest.raises(PromptError, match=f"context sets \\['{key}'\\]"):
        vendor().critic("a").rubric_requests("q", {key: "x"})


@pytest.mark.parametrize("criteria", [["nope"], ["cites", "nope"], []])
def test_criteria_that_are_not_the_rubrics_are_refused(criteria: list[str]) -> None:
    with pytest.raises(ConfigError, match="criteria must name criteria of its rubric"):
        vendor().critic("a").rubric_requests("q", criteria=criteria)


def test_a_critic_without_criteria_has_no_rubric_requests() -> None:
    critic = vendor().critic("a", prompt="pass-fail")
    assert critic.rubric is None
    with pytest.raises(ConfigError, match="has no rubric"):
        critic.rubric_requests("q")


# -- reading a one_call answer ---------------------------------------------------------------


def read(text: str) -> Any:
    return vendor().critic("a", ONE_CALL).read_criteria(text)


def kinds(answers: Any) -> dict[str, str]:
    assert not isinstance(answers, str), answers
    return {cid: a.kind for cid, a in answers.items()}


def test_criteria_nested_under_criteria_are_read_with_scores() -> None:
    text = json.dumps(
        {
            "criteria": {
                "correct": {"kind": "PASS", "confidence": 0.9, "reasoning": "right"},
                "cites": {"kind": "FAIL", "confidence": 0.7, "reasoning": "none"},
                "insults": {"kind": "FAIL", "confidence": 0.8, "reasoning": "polite"},
            }
        }
    )
    answers = read(text)
    assert kinds(answers) == {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"}
    assert answers["correct"].score == 1.0 and answers["cites"].score == 0.0
    assert answers["correct"].confidence == 0.9
    assert answers["cites"].reasoning == "none"


def test_criteria_at_the_top_level_are_read() -> None:
    text = '{"correct": {"kind": "PASS"}, "cites": {"kind": "FAIL"}, "insults": {"kind": "FAIL"}}'
    assert kinds(read(text)) == {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"}


def test_criteria_as_a_list_of_objects_with_ids_are_read() -> None:
    text = json.dumps(
        {"criteria": [{"id": cid, "kind": "PASS"} for cid in ("correct", "cites", "insults")]}
    )
    assert kinds(read(text)) == dict.fromkeys(IDS, "PASS")


def test_bare_labels_are_read() -> None:
    text = '{"criteria": {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"}}'
    assert kinds(read(text)) == {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"}


def test_labels_are_read_whatever_their_case() -> None:
    text = '{"criteria": {"correct": "pass", "cites": "Fail", "insults": "FAIL"}}'
    assert kinds(read(text)) == {"correct": "PASS", "cites": "FAIL", "insults": "FAIL"}


def test_other_label_keys_are_read_as_for_a_whole_answer() -> None:
    text = json.dumps({"criteria": {cid: {"verdict": "PASS", "rationale": "ok"} for cid in IDS}})
    answers = read(text)
    assert kinds(answers) == dict.fromkeys(IDS, "PASS")
    assert answers["cites"].reasoning == "ok"


def test_the_answer_may_be_wrapped_in_prose_and_a_code_fence() -> None:
    body = json.dumps({"criteria": dict.fromkeys(IDS, "PASS")})
    assert kinds(read(f"Here you go:\n```json\n{body}\n```\n")) == dict.fromkeys(IDS, "PASS")


@pytest.mark.parametrize(("written", "read_as"), [(0.85, 0.85), (85, 0.85), ("70%", 0.7)])
def test_confidence_in_its_usual_forms_is_read(written: Any, read_as: float) -> None:
    text = json.dumps({"criteria": {cid: {"kind": "PASS", "confidence": written} for cid in IDS}})
    assert read(text)["cites"].confidence == pytest.approx(read_as)


def test_a_missing_criterion_is_a_parse_failure_for_it_only() -> None:
    answers = read('{"criteria": {"correct": "PASS", "insults": "FAIL"}}')
    assert kinds(answers) == {"correct": "PASS", "cites": "PARSE_FAIL", "insults": "FAIL"}
    assert answers["cites"].error_kind is ErrorKind.PARSE
    assert answers["correct"].is_valid


def test_a_label_outside_the_scale_is_a_parse_failure_for_it_only() -> None:
    answers = read('{"criteria": {"correct": "MAYBE", "cites": "PASS", "insults": "FAIL"}}')
    assert kinds(answers) == {"correct": "PARSE_FAIL", "cites": "PASS", "insults": "FAIL"}
    assert "MAYBE" in (answers["correct"].error or "")


@pytest.mark.parametrize(
    "text", ["no JSON here", '{"kind": "PASS"}', '{"criteria": {"other": "PASS"}}', "[1, 2]"]
)
def test_an_answer_with_no_criteria_at_all_fails_as_a_whole(text: str) -> None:
    answer = read(text)
    assert isinstance(answer, str)
    assert answer.startswith("parse_fail:")


# -- the critic's verdict over its calls -----------------------------------------------------


def test_the_critics_kind_is_pass_or_fail_by_its_own_total() -> None:
    critic = vendor().critic("a")
    passing = critic.rubric_verdict(
        [(("correct",), call("PASS")), (("cites",), call("FAIL")), (("insults",), call("FAIL"))]
    )
    assert passing.score == pytest.approx(0.75)
    assert passing.kind == "PASS"
    gated = critic.rubric_verdict(
        [(("correct",), call("FAIL")), (("cites",), call("PASS")), (("insults",), call("FAIL"))]
    )
    assert (gated.kind, gated.score) == ("FAIL", 0.0)


def test_the_critics_verdict_keeps_each_criterions_answer_in_rubric_order() -> None:
    critic = vendor().critic("a")
    verdict = critic.rubric_verdict(
        [(("insults",), call("FAIL")), (("correct",), call("PASS")), (("cites",), call("PASS"))]
    )
    assert verdict.criteria is not None
    assert list(verdict.criteria) == ["correct", "cites", "insults"]
    assert verdict.criteria["insults"].kind == "FAIL"


def test_usage_cost_and_attempts_are_summed_over_the_calls() -> None:
    critic = vendor().critic("a")
    parts = [
        (
            (cid,),
            call(
                "PASS",
                usage=Usage(prompt_tokens=10, completion_tokens=2),
                cost_usd=0.5,
                attempts=i + 1,
            ),
        )
        for i, cid in enumerate(IDS)
    ]
    verdict = critic.rubric_verdict(parts)
    assert verdict.usage is not None
    assert (verdict.usage.prompt_tokens, verdict.usage.completion_tokens) == (30, 6)
    assert verdict.cost_usd == pytest.approx(1.5)
    assert verdict.attempts == 6


def test_a_failed_call_fails_its_criterion_and_the_rest_still_count() -> None:
    critic = vendor().critic("a")
    failed = Verdict(kind="ERROR", critic_id="a", error="timeout: t", error_kind=ErrorKind.TIMEOUT)
    verdict = critic.rubric_verdict(
        [(("correct",), call("PASS")), (("cites",), failed), (("insults",), call("FAIL"))]
    )
    assert verdict.is_valid
    assert verdict.criteria is not None
    assert verdict.criteria["cites"].error_kind is ErrorKind.TIMEOUT
    assert verdict.score == 1.0  # over the criteria answered


def test_when_every_call_failed_the_verdict_is_the_failure() -> None:
    critic = vendor().critic("a")
    failed = Verdict(kind="ERROR", critic_id="a", error="server: 500", error_kind=ErrorKind.SERVER)
    verdict = critic.rubric_verdict([((cid,), failed) for cid in IDS])
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.SERVER)
    assert verdict.criteria is not None
    assert all(a.error_kind is ErrorKind.SERVER for a in verdict.criteria.values())


def test_calls_skipped_for_the_budget_are_budget_skips_of_their_criteria() -> None:
    critic = vendor().critic("a")
    skipped = Verdict(
        kind="SKIPPED", critic_id="a", error="budget: no room", error_kind=ErrorKind.BUDGET
    )
    verdict = critic.rubric_verdict(
        [(("correct",), call("PASS")), (("cites",), skipped), (("insults",), skipped)]
    )
    assert verdict.criteria is not None
    assert verdict.criteria["cites"].kind == "SKIPPED"
    assert verdict.criteria["cites"].error_kind is ErrorKind.BUDGET
    every = critic.rubric_verdict([((cid,), skipped) for cid in IDS])
    assert (every.kind, every.error_kind) == ("SKIPPED", ErrorKind.BUDGET)


# -- judge() over HTTP ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_judging_with_a_per_criterion_rubric_makes_one_call_per_criterion() -> None:
    v = vendor({"correct": "PASS", "cites": "FAIL", "insults": "FAIL"})
    verdict = await v.critic("a").judge("The item.")
    assert sorted(asked_criterion(u) for u in v.users()) == sorted(IDS)
    assert verdict.criteria is not None
    assert {cid: a.kind for cid, a in verdict.criteria.items()} == {
        "correct": "PASS",
        "cites": "FAIL",
        "insults": "FAIL",
    }
    assert verdict.score == pytest.approx(0.75)
    assert verdict.usage is not None and verdict.usage.total_tokens == 45


@pytest.mark.anyio
async def test_judging_with_a_one_call_rubric_makes_one_call() -> None:
    v = vendor()
    verdict = await v.critic("a", ONE_CALL).judge("The item.")
    assert len(v.requests) == 1
    assert verdict.criteria is not None and len(verdict.criteria) == 3
    assert verdict.raw_response is not None and '"criteria"' in verdict.raw_response


@pytest.mark.anyio
async def test_a_truncated_one_call_answer_is_a_truncation_error_on_every_criterion() -> None:
    full = json.dumps({"criteria": {cid: {"kind": "PASS", "confidence": 0.8} for cid in IDS}})
    v = Vendor(lambda model, user: (full[:40], "length"))
    verdict = await v.critic("a", ONE_CALL, retry_truncated=False).judge("q")
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.TRUNCATED)
    assert verdict.criteria is not None
    assert all(a.error_kind is ErrorKind.TRUNCATED for a in verdict.criteria.values())


@pytest.mark.anyio
async def test_a_truncated_one_call_answer_is_asked_again_with_more_room() -> None:
    full = json.dumps({"criteria": {cid: {"kind": "PASS", "confidence": 0.8} for cid in IDS}})
    replies: list[Any] = [(full[:40], "length"), full]
    v = Vendor(lambda model, user: replies.pop(0))
    verdict = await v.critic("a", ONE_CALL).judge("q")
    assert len(v.requests) == 2
    assert v.requests[1]["max_tokens"] > v.requests[0]["max_tokens"]
    assert verdict.is_valid and verdict.criteria is not None


@pytest.mark.anyio
async def test_a_float_budget_is_one_cap_for_all_of_a_critics_per_criterion_calls() -> None:
    register_price("rubric-budget-model", vendor="custom", input=0.0, output=1_000_000.0)
    v = vendor()
    v.completion_tokens = 10
    critic = v.critic("a", model="rubric-budget-model", max_tokens=10)
    verdict = await critic.judge("q", budget=12.0)  # room for one call of $10, not three
    assert len(v.requests) == 1
    assert verdict.criteria is not None
    skipped = [a for a in verdict.criteria.values() if a.error_kind is ErrorKind.BUDGET]
    assert len(skipped) == 2
    assert verdict.cost_usd == pytest.approx(10.0)


# -- options a rubric critic cannot take -----------------------------------------------------


def test_a_rubric_critic_with_several_samples_is_refused() -> None:
    with pytest.raises(ConfigError, match="samples=3 with a rubric prompt"):
        vendor().critic("a", samples=3, temperature=0.7)


def test_a_one_call_rubric_critic_reading_logprobs_is_refused() -> None:
    with pytest.raises(ConfigError, match="one_call rubric answer holds one label per"):
        vendor().critic("a", ONE_CALL, confidence="logprob")


def test_a_per_criterion_rubric_critic_may_read_logprobs() -> None:
    assert vendor().critic("a", PER_CRITERION, confidence="logprob").rubric is not None


def test_criteria_given_as_one_string_are_refused_rather_than_read_letter_by_letter() -> None:
    with pytest.raises(ConfigError, match="a list of criterion ids, not the string 'cites'"):
        vendor().critic("a").rubric_requests("q", criteria="cites")


def test_a_criterion_asked_twice_is_refused_rather_than_paid_for_twice() -> None:
    with pytest.raises(ConfigError, match=r"repeats \['cites'\]"):
        vendor().critic("a").rubric_requests("q", criteria=["cites", "cites"])


# -- confidence --------------------------------------------------------------------------------


def test_a_criterion_that_states_no_confidence_is_marked_so() -> None:
    answers = read(
        '{"criteria": {"correct": "PASS", "cites": {"kind": "FAIL", "confidence": 0.7}}}'
    )
    assert not isinstance(answers, str)
    assert answers["correct"].confidence_stated is False
    assert answers["cites"].confidence_stated is True
    assert "confidence_stated" not in answers["cites"].model_dump()


@pytest.mark.anyio
async def test_a_critics_confidence_is_the_mean_of_the_confidences_its_answers_stated() -> None:
    text = json.dumps(
        {"criteria": {"correct": "PASS", "cites": {"kind": "PASS", "confidence": 0.6},
                      "insults": {"kind": "FAIL", "confidence": 0.8}}}
    )  # fmt: skip
    verdict = await Vendor(lambda model, user: text).critic("a", ONE_CALL).judge("q")
    assert verdict.confidence == pytest.approx(0.7)
    assert verdict.confidence_stated is True


@pytest.mark.anyio
async def test_a_critic_whose_answers_state_no_confidence_states_none() -> None:
    text = json.dumps({"criteria": dict.fromkeys(IDS, "PASS")})
    verdict = await Vendor(lambda model, user: text).critic("a", ONE_CALL).judge("q")
    assert (verdict.confidence, verdict.confidence_stated) == (0.0, False)
    assert verdict.confidence_source == "none"


@pytest.mark.anyio
async def test_a_one_call_critics_calibration_maps_each_stated_confidence() -> None:
    from cross_judge.stats._confidence_calibration import ConfidenceCalibration

    steps = ConfidenceCalibration(
        method="isotonic", breakpoints=(0.0, 0.95), values=(0.4, 0.7), n=100, ece_before=0.3,
        ece_after=0.0,
    )  # fmt: skip
    text = json.dumps(
        {"criteria": {cid: {"kind": "PASS", "confidence": 0.99} for cid in IDS} | {"cites": "FAIL"}}
    )
    critic = Vendor(lambda model, user: text).critic("a", ONE_CALL, calibration=steps)
    verdict = await critic.judge("q")
    assert verdict.criteria is not None
    assert verdict.criteria["correct"].confidence == pytest.approx(0.7)
    assert verdict.criteria["cites"].confidence == 0.0  # stated none: nothing to map
    assert verdict.confidence == pytest.approx(0.7)
