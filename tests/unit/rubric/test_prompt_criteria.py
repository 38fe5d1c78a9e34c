"""Criteria in a prompt file: what is read, what is refused, and where the error points."""

from __future__ import annotations

import pytest

from cross_judge import PromptError
from cross_judge.critic._prompts import parse_prompt

PER = """\
id: rq
version: 1
system_prompt: You judge.
user_prompt_template: |
  <item>{query}</item>
  Requirement: {criterion}
"""
ONE = PER.replace("{criterion}", "{criteria}")
CRITERIA = """\
criteria:
  - {id: correct, requirement: The answer is correct., weight: 3, gate: true}
  - {id: cites, requirement: The answer cites a source.}
  - {id: insults, requirement: The answer insults the reader., weight: -2}
"""


def test_criteria_are_read_with_their_weights_and_gates() -> None:
    rubric = parse_prompt(PER + CRITERIA).rubric
    assert rubric is not None
    assert rubric.ids == ("correct", "cites", "insults")
    assert [(c.weight, c.gate) for c in rubric.criteria] == [(3, True), (1, False), (-2, False)]
    assert rubric.criterion("cites").requirement == "The answer cites a source."


def test_a_rubric_without_labels_is_judged_pass_fail_scored_1_0() -> None:
    spec = parse_prompt(PER + CRITERIA)
    assert spec.labels == ("PASS", "FAIL")
    assert spec.rubric is not None and spec.rubric.scale == {"PASS": 1.0, "FAIL": 0.0}


def test_the_default_mode_is_per_criterion_and_the_default_threshold_one_half() -> None:
    rubric = parse_prompt(PER + CRITERIA).rubric
    assert rubric is not None
    assert (rubric.mode, rubric.threshold) == ("per_criterion", 0.5)


def test_criteria_mode_and_pass_threshold_are_read() -> None:
    rubric = parse_prompt(ONE + CRITERIA + "criteria_mode: one_call\npass_threshold: 0.8\n").rubric
    assert rubric is not None
    assert (rubric.mode, rubric.threshold) == ("one_call", 0.8)


def test_a_prompt_without_criteria_has_no_rubric() -> None:
    assert parse_prompt(PER.replace("{criterion}", "x")).rubric is None


def test_an_ordinal_scale_with_a_score_for_every_label_is_read_in_order() -> None:
    text = PER + CRITERIA + 'labels: ["1", "2", "3"]\nscore: {"1": 0, "2": 0.5, "3": 1}\n'
    rubric = parse_prompt(text).rubric
    assert rubric is not None
    assert rubric.scale == {"1": 0.0, "2": 0.5, "3": 1.0}
    assert rubric.ordinal


def test_an_ordinal_scale_missing_a_score_is_refused_naming_the_label_and_line() -> None:
    text = PER + CRITERIA + "labels: [A, B, C]\nscore: {A: 1, B: 0.5}\n"
    with pytest.raises(PromptError, match=r"field 'score' \(line 12\): .*missing \['C'\]"):
        parse_prompt(text)


def test_an_ordinal_scale_without_any_score_is_refused_at_the_labels_line() -> None:
    text = PER + CRITERIA + "labels: [A, B, C]\n"
    with pytest.raises(PromptError, match=r"field 'labels' \(line 11\): .*score"):
        parse_prompt(text)


def test_a_per_criterion_template_without_criterion_is_refused() -> None:
    with pytest.raises(
        PromptError, match=r"field 'user_prompt_template' \(line 4\): has no \{criterion\}"
    ):
        parse_prompt(ONE + CRITERIA)


def test_a_one_call_template_without_criteria_is_refused() -> None:
    with pytest.raises(
        PromptError, match=r"field 'user_prompt_template' \(line 4\): has no \{criteria\}"
    ):
        parse_prompt(PER + CRITERIA + "criteria_mode: one_call\n")


@pytest.mark.parametrize("field", ["criteria_mode: one_call", "pass_threshold: 0.4"])
def test_a_rubric_setting_without_criteria_is_refused(field: str) -> None:
    name = field.split(":")[0]
    with pytest.raises(PromptError, match=rf"field '{name}' \(line 7\): is set without criteria"):
        parse_prompt(PER + field + "\n")


def test_answer_format_with_a_one_call_rubric_is_refused() -> None:
    text = ONE + CRITERIA + 'criteria_mode: one_call\nanswer_format: {regex: "(?P<label>PASS)"}\n'
    with pytest.raises(PromptError, match=r"field 'answer_format' \(line 12\): cannot read a one"):
        parse_prompt(text)


def test_answer_format_with_a_per_criterion_rubric_is_accepted() -> None:
    text = PER + CRITERIA + 'answer_format: {regex: "(?P<label>PASS|FAIL)"}\n'
    assert parse_prompt(text).rubric is not None


@pytest.mark.parametrize("value", ["1.5", "-0.1", "true"])
def test_a_pass_threshold_that_is_not_a_share_is_refused_at_its_line(value: str) -> None:
    with pytest.raises(PromptError, match=r"field 'pass_threshold' \(line 11\): must be in"):
        parse_prompt(PER + CRITERIA + f"pass_threshold: {value}\n")


def test_an_invalid_criterion_is_refused_at_the_criteria_line() -> None:
    text = PER + "criteria:\n  - {id: a, requirement: r, weight: 0}\n"
    with pytest.raises(PromptError, match=r"field 'criteria' \(line 7\): .*weight must be"):
        parse_prompt(text)


def test_repeated_criterion_ids_are_refused_without_pydantic_wording() -> None:
    text = PER + "criteria:\n  - {id: a, requirement: r}\n  - {id: a, requirement: s}\n"
    with pytest.raises(PromptError) as caught:
        parse_prompt(text)
    message = str(caught.value)
    assert "field 'criteria' (line 7): criterion ids must be unique" in message
    assert "Value error" not in message


def test_an_empty_criteria_list_is_refused_without_pydantic_wording() -> None:
    with pytest.raises(PromptError) as caught:
        parse_prompt(PER + "criteria: []\n")
    assert "field 'criteria' (line 7): a rubric needs at least one criterion" in str(caught.value)


def test_an_unknown_key_in_a_criterion_is_named_as_such_not_as_a_top_level_field() -> None:
    text = PER + "criteria:\n  - {id: a, requirement: r, wieght: 2}\n"
    with pytest.raises(PromptError) as caught:
        parse_prompt(text)
    message = str(caught.value)
    assert "field 'criteria' (line 7)" in message
    assert "wieght" in message
    assert "did you mean 'criteria'" not in message


def test_an_unknown_criteria_mode_is_refused_with_the_choices() -> None:
    with pytest.raises(PromptError, match=r"field 'criteria_mode' \(line 11\).*'one_call'"):
        parse_prompt(PER + CRITERIA + "criteria_mode: sometimes\n")
