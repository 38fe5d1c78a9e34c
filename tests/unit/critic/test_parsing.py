"""Specification of :mod:`cross_judge.critic._parsing`: raw model text -> verdict fields."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cross_judge.critic import _parsing as parsing
from cross_judge.critic._parsing import (
    LABEL_KEYS,
    REASONING_KEYS,
    ExampleAnswer,
    ParsedAnswer,
    coerce_confidence,
    extract_json,
    normalize_label,
    parse_answer,
    strip_reasoning_blocks,
)
from cross_judge.verdict import RESERVED_KINDS, label_skeleton

VOCABULARY = ("KEEP", "REJECT", "SPLIT", "MERGE")


def verdict_json(**fields: Any) -> str:
    return json.dumps(fields)


# --------------------------------------------------------------------------- public API


def test_all_lists_exactly_the_public_api() -> None:
    assert sorted(parsing.__all__) == sorted(
        [
            "LABEL_KEYS",
            "REASONING_KEYS",
            "ExampleAnswer",
            "ParsedAnswer",
            "coerce_confidence",
            "extract_json",
            "normalize_label",
            "parse_answer",
            "strip_reasoning_blocks",
        ]
    )


def test_key_constants_are_in_precedence_order() -> None:
    assert LABEL_KEYS == ("kind", "verdict", "label", "decision")
    assert REASONING_KEYS == ("reasoning", "rationale", "explanation")


def test_parsed_answer_is_frozen() -> None:
    answer = parse_answer('{"kind": "KEEP"}')
    with pytest.raises(AttributeError):
        answer.kind = "REJECT"  # type: ignore[misc]


def test_ok_is_true_exactly_when_error_is_none() -> None:
    assert parse_answer('{"kind": "KEEP"}').ok
    assert not parse_answer("no json here").ok


# --------------------------------------------------------------------------- 0.1 compatible


def test_strict_json_object_gives_all_fields() -> None:
    answer = parse_answer(
        '{"kind": "KEEP", "confidence": 0.8, "reasoning": "clear match", "score": 0.5}'
    )
    assert answer == ParsedAnswer(
        kind="KEEP",
        confidence=0.8,
        confidence_given=True,
        reasoning="clear match",
        score=0.5,
        error=None,
        data={"kind": "KEEP", "confidence": 0.8, "reasoning": "clear match", "score": 0.5},
    )


def test_json_fenced_object_is_parsed() -> None:
    answer = parse_answer('```json\n{"kind": "REJECT", "confidence": 0.6}\n```')
    assert (answer.kind, answer.confidence) == ("REJECT", 0.6)


def test_fence_without_language_tag_is_parsed() -> None:
    assert parse_answer('```\n{"kind": "KEEP"}\n```').kind == "KEEP"


def test_label_is_stripped_and_upper_cased() -> None:
    assert parse_answer('{"kind": "  keep "}').kind == "KEEP"


def test_kind_takes_precedence_over_verdict() -> None:
    assert parse_answer('{"verdict": "REJECT", "kind": "KEEP"}').kind == "KEEP"


def test_reasoning_takes_precedence_over_rationale() -> None:
    answer = parse_answer('{"kind": "KEEP", "rationale": "second", "reasoning": "first"}')
    assert answer.reasoning == "first"


def test_missing_label_key_gives_unclear() -> None:
    answer = parse_answer('{"confidence": 0.9}')
    assert (answer.kind, answer.error) == ("UNCLEAR", None)


def test_empty_object_gives_unclear() -> None:
    assert parse_answer("{}").kind == "UNCLEAR"


# --------------------------------------------------------------------------- label keys


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"kind": "A", "verdict": "B", "label": "C", "decision": "D"}, "A"),
        ({"verdict": "B", "label": "C", "decision": "D"}, "B"),
        ({"label": "C", "decision": "D"}, "C"),
        ({"decision": "D"}, "D"),
    ],
)
def test_label_key_precedence_is_kind_verdict_label_decision(
    data: dict[str, str], expected: str
) -> None:
    assert parse_answer(json.dumps(data)).kind == expected


def test_label_keys_match_case_insensitively() -> None:
    assert parse_answer('{"Verdict": "keep"}').kind == "KEEP"


def test_precedence_holds_across_key_case() -> None:
    assert parse_answer('{"verdict": "REJECT", "KIND": "KEEP"}').kind == "KEEP"


def test_first_present_label_key_wins_even_when_null() -> None:
    answer = parse_answer('{"kind": null, "verdict": "KEEP"}')
    assert answer.error == "parse_fail: label is null"


# --------------------------------------------------------------------------- label values


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("keep", "KEEP"),
        ("Keep.", "KEEP"),
        ("KEEP!", "KEEP"),
        ("keep;", "KEEP"),
        ('"keep"', "KEEP"),
        ("'keep'", "KEEP"),
        ("`keep`", "KEEP"),
        (" `Keep.` ", "KEEP"),
        ("not sure", "NOT_SURE"),
        ("not-sure", "NOT_SURE"),
        ("not  -  sure", "NOT_SURE"),
        ("parse fail", "PARSE_FAIL"),
        ("Not\tSure\n", "NOT_SURE"),
        ("already_snake", "ALREADY_SNAKE"),
        ("-1", "-1"),
    ],
)
def test_normalize_label(raw: str, expected: str) -> None:
    assert normalize_label(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", '""', "`.`", "...", "\u3000"])
def test_normalize_label_of_blank_text_is_none(raw: str) -> None:
    assert normalize_label(raw) is None


@pytest.mark.parametrize("value", [None, True, 1, 1.5, ["KEEP"], {"kind": "KEEP"}])
def test_normalize_label_of_non_string_is_none(value: object) -> None:
    assert normalize_label(value) is None


def test_label_punctuation_and_case_are_normalised_in_answers() -> None:
    assert parse_answer('{"kind": "Keep."}').kind == "KEEP"


def test_label_words_are_joined_with_underscores_in_answers() -> None:
    assert parse_answer('{"kind": "not sure"}').kind == "NOT_SURE"


def test_null_label_is_parse_fail() -> None:
    assert parse_answer('{"kind": null}').error == "parse_fail: label is null"


@pytest.mark.parametrize("label", ['""', '"   "', '"."'])
def test_empty_label_is_parse_fail(label: str) -> None:
    assert parse_answer(f'{{"kind": {label}}}').error == "parse_fail: label is empty"


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ('["KEEP"]', "label is a list, not a string"),
        ('{"value": "KEEP"}', "label is an object, not a string"),
        ("1", "label is a number, not a string"),
        ("0.5", "label is a number, not a string"),
        ("true", "label is a boolean, not a string"),
    ],
)
def test_non_string_label_is_parse_fail(label: str, reason: str) -> None:
    answer = parse_answer(f'{{"kind": {label}}}')
    assert (answer.kind, answer.error) == ("PARSE_FAIL", f"parse_fail: {reason}")


@pytest.mark.parametrize("label", ["ERROR", "error", "PARSE_FAIL", "parse fail", "Skipped."])
def test_reserved_label_is_parse_fail(label: str) -> None:
    answer = parse_answer(json.dumps({"kind": label}))
    assert answer.kind == "PARSE_FAIL"
    assert answer.error is not None
    assert "reserved label" in answer.error


def test_over_long_label_is_parse_fail() -> None:
    answer = parse_answer(json.dumps({"kind": "keep " * 30}))
    assert answer.error == "parse_fail: label is too long (149 characters; at most 100)"


# --------------------------------------------------------------------------- vocabulary


def test_label_outside_vocabulary_is_parse_fail_listing_the_allowed_labels() -> None:
    answer = parse_answer('{"kind": "maybe"}', labels=["KEEP", "REJECT"])
    assert answer.error == "parse_fail: label 'MAYBE' is not one of KEEP, REJECT"


def test_vocabulary_is_normalised_like_labels() -> None:
    answer = parse_answer('{"kind": "Not Sure."}', labels=["keep", "not-sure"])
    assert (answer.kind, answer.error) == ("NOT_SURE", None)


def test_missing_label_key_is_parse_fail_when_vocabulary_lacks_unclear() -> None:
    answer = parse_answer('{"confidence": 0.9}', labels=["KEEP", "REJECT"])
    assert answer.error == (
        "parse_fail: no label key (kind, verdict, label, decision) in the JSON object"
    )


def test_missing_label_key_is_unclear_when_vocabulary_has_unclear() -> None:
    answer = parse_answer('{"confidence": 0.9}', labels=["KEEP", "unclear"])
    assert (answer.kind, answer.error) == ("UNCLEAR", None)


def test_reserved_label_is_rejected_even_when_listed_in_vocabulary() -> None:
    answer = parse_answer('{"kind": "ERROR"}', labels=["KEEP", "ERROR"])
    assert answer.error is not None
    assert "reserved label 'ERROR'" in answer.error


def test_reserved_labels_are_left_out_of_the_allowed_list() -> None:
    answer = parse_answer('{"kind": "MAYBE"}', labels=["KEEP", "ERROR"])
    assert answer.error == "parse_fail: label 'MAYBE' is not one of KEEP"


def test_empty_vocabulary_means_any_label() -> None:
    assert parse_answer('{"kind": "MAYBE"}', labels=[]).kind == "MAYBE"


def test_a_single_string_vocabulary_is_one_label() -> None:
    assert parse_answer('{"kind": "KEEP"}', labels="keep").kind == "KEEP"
    assert not parse_answer('{"kind": "K"}', labels="keep").ok


# --------------------------------------------------------------------------- confidence


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0.0),
        (0.0, 0.0),
        (0.85, 0.85),
        ("0.85", 0.85),
        (" 0.85 ", 0.85),
        (".5", 0.5),
        (1, 1.0),
        ("1", 1.0),
        (1.5, 1.0),
        (5, 1.0),
        (5.0, 1.0),
        ("7", 1.0),
        (10, 1.0),
        ("10", 1.0),
        (10.5, 0.105),
        (42.5, 0.425),
        (85, 0.85),
        ("85", 0.85),
        (85.0, 0.85),
        (100, 1.0),
        ("85%", 0.85),
        ("85 %", 0.85),
        ("5%", 0.05),
        ("0.5%", 0.005),
        ("150%", 1.0),
        (101, 1.0),
        (1e300, 1.0),
        (10**400, 1.0),
        (-0.3, 0.0),
        ("-5", 0.0),
        ("-5%", 0.0),
        (-(10**400), 0.0),
    ],
)
def test_coerce_confidence(value: object, expected: float) -> None:
    assert coerce_confidence(value) == pytest.approx(expected)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        math.nan,
        math.inf,
        -math.inf,
        "nan",
        "NaN",
        "inf",
        "high",
        "",
        "%",
        "0,8",
        "1e999",
        [0.5],
        {"value": 0.5},
    ],
)
def test_coerce_confidence_of_unusable_value_is_none(value: object) -> None:
    assert coerce_confidence(value) is None


def test_missing_confidence_is_zero_and_not_given() -> None:
    answer = parse_answer('{"kind": "KEEP"}')
    assert (answer.confidence, answer.confidence_given) == (0.0, False)


@pytest.mark.parametrize("value", ['"high"', "NaN", "Infinity", "true", "null"])
def test_unusable_confidence_is_zero_and_not_given(value: str) -> None:
    answer = parse_answer(f'{{"kind": "KEEP", "confidence": {value}}}')
    assert (answer.confidence, answer.confidence_given, answer.error) == (0.0, False, None)


def test_given_confidence_is_marked_as_given() -> None:
    answer = parse_answer('{"kind": "KEEP", "confidence": 0}')
    assert (answer.confidence, answer.confidence_given) == (0.0, True)


def test_percent_confidence_in_answer_is_scaled() -> None:
    assert parse_answer('{"kind": "KEEP", "confidence": "85%"}').confidence == 0.85


@pytest.mark.parametrize(
    ("written", "expected"),
    [('"85%"', 0.85), ("85", 0.85), ('"85"', 0.85), ("0.85", 0.85), ("1.5", 1.0), ("5", 1.0)],
)
def test_the_issues_confidence_examples_mean_what_the_model_meant(
    written: str, expected: float
) -> None:
    answer = parse_answer(f'{{"kind": "KEEP", "confidence": {written}}}')
    assert (answer.confidence, answer.confidence_given) == (expected, True)


@pytest.mark.parametrize("written", ["1.5", "5", '"7"', "10"])
def test_a_score_habit_confidence_is_a_confident_vote_not_a_percentage(written: str) -> None:
    assert parse_answer(f'{{"kind": "KEEP", "confidence": {written}}}').confidence == 1.0


def test_confidence_key_matches_case_insensitively() -> None:
    assert parse_answer('{"kind": "KEEP", "Confidence": 0.7}').confidence == 0.7


def test_certainty_is_an_alias_of_confidence() -> None:
    assert parse_answer('{"kind": "KEEP", "certainty": 0.7}').confidence == 0.7


def test_confidence_takes_precedence_over_certainty() -> None:
    answer = parse_answer('{"kind": "KEEP", "certainty": 0.2, "confidence": 0.7}')
    assert answer.confidence == 0.7


# --------------------------------------------------------------------------- copied examples

PLACEHOLDER_EXAMPLE = ExampleAnswer(label="<PASS_OR_FAIL>", reasoning="<one or two sentences>")
REAL_LABEL_EXAMPLE = ExampleAnswer(reasoning="One to three sentences on why.")


def test_a_reply_whose_label_is_the_examples_placeholder_is_a_copy() -> None:
    reply = '{"kind": "<PASS or FAIL>", "confidence": "<0.0-1.0>", "reasoning": "looks fine"}'
    answer = parse_answer(reply, labels=["PASS", "FAIL"], examples=[PLACEHOLDER_EXAMPLE])
    assert answer.kind == "PARSE_FAIL"
    assert answer.error == (
        "parse_fail: copied the prompt's example answer "
        "(its label '<PASS or FAIL>' is the example's placeholder)"
    )


def test_a_placeholder_label_is_a_copy_even_without_a_vocabulary() -> None:
    answer = parse_answer('{"kind": "<pass or fail>"}', examples=[PLACEHOLDER_EXAMPLE])
    assert (answer.error or "").startswith("parse_fail: copied the prompt's example answer")


def test_a_reply_whose_reasoning_is_the_examples_text_is_a_copy() -> None:
    reply = '{"kind": "KEEP", "confidence": 0.85, "reasoning": "One to three sentences on why."}'
    answer = parse_answer(reply, labels=VOCABULARY, examples=[REAL_LABEL_EXAMPLE])
    assert answer.kind == "PARSE_FAIL"
    assert answer.error == (
        "parse_fail: copied the prompt's example answer (its reasoning is the example's text)"
    )
    assert answer.data == json.loads(reply)


@pytest.mark.parametrize(
    "reasoning", ["one to three sentences on why", "  One  to three\nsentences on WHY. "]
)
def test_a_copied_reasoning_is_recognised_despite_case_spacing_and_final_period(
    reasoning: str,
) -> None:
    reply = json.dumps({"kind": "KEEP", "reasoning": reasoning})
    assert not parse_answer(reply, examples=[REAL_LABEL_EXAMPLE]).ok


def test_the_examples_real_label_with_a_reasoning_of_its_own_is_a_vote() -> None:
    reply = '{"kind": "KEEP", "confidence": 0.85, "reasoning": "A coherent, common category."}'
    answer = parse_answer(reply, labels=VOCABULARY, examples=[REAL_LABEL_EXAMPLE])
    assert (answer.kind, answer.confidence, answer.error) == ("KEEP", 0.85, None)


def test_a_reasoning_that_only_contains_the_example_text_is_a_vote() -> None:
    reply = json.dumps({"kind": "KEEP", "reasoning": "One to three sentences on why. It fits."})
    assert parse_answer(reply, examples=[REAL_LABEL_EXAMPLE]).ok


def test_an_empty_reasoning_is_never_a_copy() -> None:
    empty = ExampleAnswer(label=None, reasoning="")
    assert parse_answer('{"kind": "KEEP", "reasoning": ""}', examples=[empty]).ok


def test_without_examples_a_placeholder_label_fails_only_the_vocabulary() -> None:
    answer = parse_answer('{"kind": "<PASS or FAIL>"}', labels=["PASS", "FAIL"])
    assert answer.error == "parse_fail: label '<PASS_OR_FAIL>' is not one of PASS, FAIL"


# --------------------------------------------------------------------------- score


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0.0), ("1", 1.0), ("0.4", 0.4), ('"0.4"', 0.4), ('"40%"', 0.4), ("1.0", 1.0)],
)
def test_score_in_unit_interval_is_kept(value: str, expected: float) -> None:
    answer = parse_answer(f'{{"kind": "KEEP", "score": {value}}}')
    assert answer.score == pytest.approx(expected)


@pytest.mark.parametrize(
    "value", ["4", "-0.1", "1.5", "NaN", "true", '"high"', '"150%"', "null", "[0.5]"]
)
def test_score_outside_unit_interval_or_not_numeric_is_none(value: str) -> None:
    answer = parse_answer(f'{{"kind": "KEEP", "score": {value}}}')
    assert (answer.score, answer.error) == (None, None)


def test_missing_score_is_none() -> None:
    assert parse_answer('{"kind": "KEEP"}').score is None


# --------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("key", ["reasoning", "rationale", "explanation", "Rationale"])
def test_reasoning_aliases_are_read(key: str) -> None:
    assert parse_answer(json.dumps({"kind": "KEEP", key: "because"})).reasoning == "because"


def test_rationale_takes_precedence_over_explanation() -> None:
    answer = parse_answer('{"kind": "KEEP", "explanation": "second", "rationale": "first"}')
    assert answer.reasoning == "first"


def test_reasoning_is_capped_at_1000_characters() -> None:
    answer = parse_answer(json.dumps({"kind": "KEEP", "reasoning": "x" * 5000}))
    assert answer.reasoning == "x" * 1000


def test_missing_reasoning_is_empty() -> None:
    assert parse_answer('{"kind": "KEEP"}').reasoning == ""


def test_null_reasoning_is_empty_not_none_text() -> None:
    assert parse_answer('{"kind": "KEEP", "reasoning": null}').reasoning == ""


def test_non_string_reasoning_is_stringified() -> None:
    assert parse_answer('{"kind": "KEEP", "reasoning": ["a", 1]}').reasoning == "['a', 1]"


# --------------------------------------------------------------------------- tolerated noise


def test_prose_before_and_after_the_object_is_ignored() -> None:
    answer = parse_answer('Here is my verdict:\n{"kind": "KEEP"}\nHope this helps!')
    assert answer.kind == "KEEP"


def test_brace_in_trailing_prose_is_ignored() -> None:
    assert parse_answer('{"kind": "KEEP"} (see {note} below)}').kind == "KEEP"


def test_unbalanced_prose_brace_before_the_answer_is_ignored() -> None:
    assert parse_answer('Format: {kind, reasoning...\n{"kind": "KEEP"}').kind == "KEEP"


def test_think_block_with_braces_before_answer_is_ignored() -> None:
    raw = '<think>maybe {"kind": "REJECT"} or { unbalanced</think>\n{"kind": "KEEP"}'
    assert parse_answer(raw).kind == "KEEP"


def test_think_block_after_the_answer_is_ignored() -> None:
    raw = '{"kind": "KEEP"}\n<think>{"kind": "REJECT"}</think>'
    assert parse_answer(raw).kind == "KEEP"


@pytest.mark.parametrize("tag", ["think", "THINK", "thinking", "reasoning", "Reasoning"])
def test_reasoning_tags_are_stripped_case_insensitively(tag: str) -> None:
    raw = f'<{tag}>{{"kind": "REJECT"}}</{tag}>{{"kind": "KEEP"}}'
    assert parse_answer(raw).kind == "KEEP"


def test_unclosed_leading_think_is_dropped_up_to_the_first_brace_line() -> None:
    raw = '<think>I think {x} is fine\nso\n{"kind": "KEEP"}'
    assert parse_answer(raw).kind == "KEEP"


def test_unclosed_leading_think_without_a_brace_line_is_parse_fail() -> None:
    answer = parse_answer('<think>still thinking about {"kind": "KEEP"} when tokens ran')
    assert answer.error == (
        "parse_fail: no JSON object found (the reply holds only a reasoning block)"
    )


def test_orphan_closing_think_tag_drops_the_text_before_it() -> None:
    # Some chat templates put the opening <think> in the prompt.
    assert parse_answer('draft {"kind": "REJECT"}\n</think>\n{"kind": "KEEP"}').kind == "KEEP"


def test_strip_reasoning_blocks_keeps_text_outside_blocks() -> None:
    assert strip_reasoning_blocks("a<think>x</think>b<Thinking>y</Thinking>c") == "abc"


def test_strip_reasoning_blocks_accepts_attributes_on_the_tag() -> None:
    assert strip_reasoning_blocks('<think mode="deep">x</think>{}') == "{}"


def test_strip_reasoning_blocks_leaves_a_later_unclosed_tag_alone() -> None:
    assert strip_reasoning_blocks("answer <think> more") == "answer <think> more"


def test_strip_reasoning_blocks_without_tags_is_identity() -> None:
    assert strip_reasoning_blocks('{"kind": "KEEP"}') == '{"kind": "KEEP"}'


def test_think_markup_inside_a_strict_json_reply_is_kept() -> None:
    raw = '{"kind": "KEEP", "reasoning": "no <think>x</think> here"}'
    assert parse_answer(raw).reasoning == "no <think>x</think> here"


@pytest.mark.parametrize(
    "raw",
    [
        '{"kind": "KEEP", }',
        '{"kind": "KEEP",\n}',
        '{"kind": "KEEP",\r\n}',
        '{"kind": "KEEP", "tags": ["a", ]}',
        'Sure:\n{"kind": "KEEP", "tags": ["a",\n],\n}',
    ],
)
def test_trailing_commas_are_repaired(raw: str) -> None:
    assert parse_answer(raw).kind == "KEEP"


def test_trailing_comma_repair_leaves_string_contents_alone() -> None:
    answer = parse_answer('{"kind": "KEEP", "reasoning": "a, } and b, ]",}')
    assert answer.reasoning == "a, } and b, ]"


def test_braces_inside_json_strings_do_not_end_the_object() -> None:
    answer = parse_answer('Answer: {"kind": "KEEP", "reasoning": "use {x} or }"} done')
    assert (answer.kind, answer.reasoning) == ("KEEP", "use {x} or }")


def test_escaped_quotes_inside_strings_do_not_end_the_string() -> None:
    answer = parse_answer('Answer: {"kind": "KEEP", "reasoning": "say \\"}\\" twice"}')
    assert answer.reasoning == 'say "}" twice'


def test_raw_newlines_inside_strings_are_tolerated() -> None:
    answer = parse_answer('{"kind": "KEEP", "reasoning": "line one\nline two"}')
    assert answer.reasoning == "line one\nline two"


# --------------------------------------------------------------------------- several objects


def test_last_verdict_object_wins_when_several_are_present() -> None:
    assert parse_answer('{"kind": "KEEP"}\nActually:\n{"kind": "REJECT"}').kind == "REJECT"


def test_verdict_object_wins_over_a_later_object_without_a_label() -> None:
    assert parse_answer('{"kind": "KEEP"}\nMeta: {"tokens": 12}').kind == "KEEP"


def test_last_object_is_used_when_none_has_a_label_key() -> None:
    answer = parse_answer('{"confidence": 0.1} then {"confidence": 0.9}')
    assert (answer.kind, answer.confidence) == ("UNCLEAR", 0.9)


def test_top_level_object_wins_over_a_nested_verdict_object() -> None:
    answer = parse_answer('Result: {"result": {"kind": "REJECT"}, "confidence": 0.4}')
    assert (answer.kind, answer.confidence) == ("UNCLEAR", 0.4)


def test_nested_objects_inside_a_verdict_are_kept_in_data() -> None:
    answer = parse_answer('{"kind": "KEEP", "evidence": [{"kind": "REJECT"}]}')
    assert answer.kind == "KEEP"
    assert answer.data == {"kind": "KEEP", "evidence": [{"kind": "REJECT"}]}


def test_complete_nested_verdict_inside_a_truncated_object_is_not_used() -> None:
    answer = parse_answer('{"kind": "KEEP", "alternatives": [{"kind": "REJECT"}], "reas')
    assert answer.error == "parse_fail: JSON object is truncated (unbalanced braces)"


def test_truncated_object_after_an_unlabelled_object_is_parse_fail() -> None:
    answer = parse_answer('{"step": 1}\n{"kind": "KEEP", "reasoning": "cut')
    assert answer.error == "parse_fail: JSON object is truncated (unbalanced braces)"


def test_complete_verdict_before_a_truncated_one_is_used() -> None:
    assert parse_answer('{"kind": "KEEP"}\n{"kind": "REJECT", "reas').kind == "KEEP"


def test_only_the_last_64_candidate_objects_are_considered() -> None:
    answer = parse_answer('{"kind": "REJECT"}' + ' {"n": 1}' * 64)
    assert answer.kind == "UNCLEAR"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("raw", [None, "", "  \n\t"])
def test_empty_reply_is_parse_fail(raw: str | None) -> None:
    answer = parse_answer(raw)
    assert (answer.kind, answer.error, answer.reasoning) == (
        "PARSE_FAIL",
        "parse_fail: empty response",
        raw or "",
    )


def test_prose_only_is_parse_fail_with_no_json_object_found() -> None:
    assert parse_answer("I would keep it.").error == "parse_fail: no JSON object found"


def test_truncated_json_is_parse_fail_with_unbalanced_braces() -> None:
    answer = parse_answer('{"kind": "KEEP", "reasoning": "because')
    assert answer.error == "parse_fail: JSON object is truncated (unbalanced braces)"


@pytest.mark.parametrize(
    ("raw", "shape"),
    [
        ('[{"kind": "KEEP"}]', "a JSON array"),
        ('```json\n[{"kind": "KEEP"}]\n```', "a JSON array"),
        ('"KEEP"', "a JSON string"),
        ("0.9", "a JSON number"),
        ("true", "a JSON boolean"),
        ("null", "JSON null"),
    ],
)
def test_json_that_is_not_an_object_is_parse_fail(raw: str, shape: str) -> None:
    assert parse_answer(raw).error == f"parse_fail: expected a JSON object, got {shape}"


def test_invalid_json_object_is_parse_fail_with_the_decoder_message() -> None:
    answer = parse_answer('{"kind": "KEEP" "confidence": 0.9}')
    assert answer.error == "parse_fail: invalid JSON object (Expecting ',' delimiter)"


def test_single_quoted_pseudo_json_is_parse_fail() -> None:
    assert parse_answer("{'kind': 'KEEP'}").kind == "PARSE_FAIL"


def test_parse_fail_reasoning_is_the_first_300_characters_of_the_raw_reply() -> None:
    raw = "no verdict " * 100
    assert parse_answer(raw).reasoning == raw[:300]


def test_parse_fail_carries_no_confidence_or_score() -> None:
    answer = parse_answer('{"kind": null, "confidence": 0.9, "score": 0.5}')
    assert (answer.confidence, answer.confidence_given, answer.score) == (0.0, False, None)


def test_parse_fail_keeps_the_object_when_only_the_label_was_unusable() -> None:
    assert parse_answer('{"kind": null, "confidence": 0.9}').data == {
        "kind": None,
        "confidence": 0.9,
    }


def test_parse_fail_without_an_object_has_no_data() -> None:
    assert parse_answer("nothing").data is None


# --------------------------------------------------------------------------- extract_json


def test_extract_json_returns_the_chosen_object() -> None:
    raw = '<think>{"kind": "X"}</think>```json\n{"kind": "KEEP", "n": [1, 2,],}\n```'
    assert extract_json(raw) == {"kind": "KEEP", "n": [1, 2]}


@pytest.mark.parametrize(
    "raw", [None, "", "prose", '{"kind": "KEEP"', '[{"kind": "KEEP"}]', "{'kind': 1}"]
)
def test_extract_json_returns_none_when_there_is_no_object(raw: str | None) -> None:
    assert extract_json(raw) is None


def test_extract_json_returns_an_object_without_label_keys() -> None:
    assert extract_json('text {"a": 1} text') == {"a": 1}


# --------------------------------------------------------------------------- hostile input


def test_ten_megabyte_hostile_inputs_return_parse_fail() -> None:
    for raw in ("{" * 10_000_000, '{"kind": "' + "a" * 10_000_000):
        assert parse_answer(raw).kind == "PARSE_FAIL"


def test_text_before_the_last_200000_characters_is_not_scanned() -> None:
    answer = parse_answer('Answer: {"kind": "KEEP"}' + "." * 200_000)
    assert answer.error == "parse_fail: no JSON object found in the last 200000 characters"


def test_deeply_nested_json_is_parse_fail_not_recursion_error() -> None:
    answer = parse_answer("x " + '{"a": ' * 50_000 + "1" + "}" * 50_000)
    assert answer.error == "parse_fail: JSON object is nested too deeply"


def test_deeply_nested_array_is_parse_fail() -> None:
    assert parse_answer("[" * 100_000 + "]" * 100_000).kind == "PARSE_FAIL"


def test_huge_integer_confidence_does_not_break_parsing() -> None:
    answer = parse_answer('{"kind": "KEEP", "confidence": ' + "9" * 5000 + "}")
    assert (answer.kind, answer.confidence_given) == ("KEEP", False)


def test_huge_label_is_rejected_as_too_long() -> None:
    answer = parse_answer(json.dumps({"kind": "a b-" * 250_000}))
    assert answer.error is not None
    assert answer.error.startswith("parse_fail: label is too long")


# --------------------------------------------------------------------------- invariants

JSONISH = st.text(alphabet='{}[]",:0123456789abcdefghijklmnopqrstuvwxyz \n`<>/\\.-', max_size=300)
# Prose may hold stray braces. Only the prose before the answer avoids '"': a quote right
# before a brace ('"{"') derails the scan, which then fails rather than guess.
PROSE_BEFORE = st.text(alphabet="abcdefghij XYZ.,:;!?'()-*#{}\n0123456789", max_size=80)
PROSE_AFTER = st.text(alphabet="abcdefghij XYZ.,:;!?'\"()-*#{}\n0123456789", max_size=80)
REASONING = st.text(max_size=200)
THINK_BODY = st.one_of(
    JSONISH.filter(lambda body: "</" not in body),
    st.builds(lambda label: json.dumps({"kind": label}), st.sampled_from(VOCABULARY)),
)


def check_invariants(answer: ParsedAnswer) -> None:
    assert 0.0 <= answer.confidence <= 1.0
    assert answer.ok == (answer.error is None)
    if answer.ok:
        assert answer.kind not in RESERVED_KINDS
        assert answer.confidence_given or answer.confidence == 0.0
    else:
        assert answer.kind == "PARSE_FAIL"
        assert answer.error is not None
        assert answer.error.startswith("parse_fail: ")
        assert (answer.confidence, answer.confidence_given, answer.score) == (0.0, False, None)
    assert answer.score is None or 0.0 <= answer.score <= 1.0
    assert len(answer.reasoning) <= 1000


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_parse_answer_never_raises_on_arbitrary_text(raw: str) -> None:
    check_invariants(parse_answer(raw))
    extract_json(raw)


@settings(max_examples=400, deadline=None)
@given(JSONISH, st.none() | st.lists(st.sampled_from(VOCABULARY), max_size=3))
def test_parse_answer_never_raises_on_json_like_text(raw: str, labels: list[str] | None) -> None:
    check_invariants(parse_answer(raw, labels=labels))
    extract_json(raw)
    strip_reasoning_blocks(raw)


@st.composite
def wrapped_verdicts(draw: st.DrawFn) -> tuple[str, str, float, str]:
    label = draw(st.sampled_from(VOCABULARY))
    confidence = draw(st.floats(min_value=0.0, max_value=1.0))
    reasoning = draw(REASONING)
    payload = json.dumps(
        {
            "kind": draw(st.sampled_from([label, label.lower(), label.title()])),
            "confidence": confidence,
            "reasoning": reasoning,
        },
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 2])),
    )
    if draw(st.booleans()):
        payload = draw(st.sampled_from(["```json\n", "```\n"])) + payload + "\n```"
    before = draw(PROSE_BEFORE)
    after = draw(PROSE_AFTER)
    if draw(st.booleans()):
        before = f"<think>{draw(THINK_BODY)}</think>\n{before}"
    return before + payload + after, label, confidence, reasoning


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wrapped_verdicts())
def test_wrapped_verdict_parses_back_to_its_fields(case: tuple[str, str, float, str]) -> None:
    raw, label, confidence, reasoning = case
    answer = parse_answer(raw, labels=VOCABULARY)
    assert answer.error is None, raw
    assert answer.kind == label
    assert answer.confidence == pytest.approx(confidence)
    assert answer.reasoning == reasoning


CONFIDENCE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.from_regex(r"-?[0-9]{1,4}(\.[0-9]{1,3})? ?%?", fullmatch=True),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0))
def test_a_confidence_from_0_to_1_is_kept_as_is(value: float) -> None:
    assert coerce_confidence(value) == value
    assert coerce_confidence(repr(value)) == value


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1.0, max_value=10.0, exclude_min=True))
def test_a_confidence_above_1_up_to_10_is_clamped_to_1(value: float) -> None:
    assert coerce_confidence(value) == 1.0
    assert coerce_confidence(repr(value)) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=2, max_value=10))
def test_an_integer_confidence_from_2_to_10_is_clamped_to_1(value: int) -> None:
    assert coerce_confidence(value) == 1.0
    assert coerce_confidence(str(value)) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=10.0, max_value=100.0, exclude_min=True))
def test_a_confidence_above_10_up_to_100_is_a_percentage(value: float) -> None:
    assert coerce_confidence(value) == value / 100
    assert coerce_confidence(repr(value)) == value / 100


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=100.0, exclude_min=True, allow_infinity=False))
def test_a_confidence_above_100_is_1(value: float) -> None:
    assert coerce_confidence(value) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(max_value=0.0, exclude_max=True, allow_infinity=False))
def test_a_negative_confidence_is_0(value: float) -> None:
    assert coerce_confidence(value) == 0.0


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=-1000.0, max_value=1000.0),
    st.sampled_from(["{}%", "{} %", " {}% "]),
)
def test_a_percent_sign_divides_by_100_and_clamps(value: float, shape: str) -> None:
    expected = min(max(value / 100, 0.0), 1.0)
    assert coerce_confidence(shape.format(repr(value))) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.booleans(),
        st.just(math.nan),
        st.sampled_from([math.inf, -math.inf]),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,", max_size=12),
    )
)
def test_nan_infinity_booleans_and_words_are_no_confidence(value: object) -> None:
    assert coerce_confidence(value) is None
    answer = parse_answer(json.dumps({"kind": "KEEP", "confidence": value}))
    assert (answer.confidence, answer.confidence_given) == (0.0, False)


@settings(max_examples=400, deadline=None)
@given(CONFIDENCE_VALUES)
def test_confidence_is_always_within_the_unit_interval(value: object) -> None:
    coerced = coerce_confidence(value)
    assert coerced is None or 0.0 <= coerced <= 1.0
    answer = parse_answer(json.dumps({"kind": "KEEP", "confidence": value}))
    assert 0.0 <= answer.confidence <= 1.0
    assert answer.confidence_given == (coerced is not None)


LABEL_VALUES = st.one_of(
    st.sampled_from([*VOCABULARY, *RESERVED_KINDS, "parse fail", "Error.", "maybe", "", " "]),
    st.text(max_size=20),
    st.none(),
    st.integers(),
    st.booleans(),
    st.lists(st.sampled_from(VOCABULARY), max_size=2),
)


@settings(max_examples=400, deadline=None)
@given(LABEL_VALUES, st.none() | st.just(list(VOCABULARY)))
def test_answer_is_valid_iff_no_error_and_kind_not_reserved(
    label: object, labels: list[str] | None
) -> None:
    answer = parse_answer(json.dumps({"kind": label}), labels=labels)
    check_invariants(answer)
    normalised = normalize_label(label)
    # A label read through look-alike letters keeps its skeleton (VOCABULARY is ASCII, so
    # each entry is its own skeleton).
    skeleton = None if normalised is None else label_skeleton(normalised)
    expected_valid = normalised is not None and not {normalised, skeleton} & RESERVED_KINDS
    if labels is not None:
        expected_valid = expected_valid and (normalised in labels or skeleton in labels)
    assert answer.ok == expected_valid
    if answer.ok:
        assert answer.kind == normalised or label_skeleton(answer.kind) == skeleton
