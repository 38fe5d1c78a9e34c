"""Verdict and Usage: the 0.1 contract, the new fields, and lossless JSON."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cross_judge import ErrorKind, Usage, Verdict


def full_verdict() -> Verdict:
    return Verdict(
        kind="KEEP",
        confidence=0.8,
        reasoning="fits",
        critic_id="c1",
        raw_response='{"kind": "KEEP"}',
        elapsed_s=0.25,
        score=0.7,
        usage=Usage(prompt_tokens=10, completion_tokens=5),
        cost_usd=0.0012,
        model="m",
        vendor="openai",
        prompt_id="taxonomy-review",
        prompt_version="1",
        prompt_sha256="ab" * 32,
        attempts=2,
        cached=True,
        custom_extra="kept",
    )


def test_legacy_keywords_map_to_new_fields() -> None:
    v = Verdict(verdict="REJECT", rationale="no", reviewer_id="r1")
    assert (v.kind, v.reasoning, v.critic_id) == ("REJECT", "no", "r1")


def test_legacy_names_are_read_only_aliases() -> None:
    v = Verdict(kind="KEEP", reasoning="why", critic_id="c")
    assert (v.verdict, v.rationale, v.reviewer_id) == ("KEEP", "why", "c")
    with pytest.raises(AttributeError):
        v.verdict = "REJECT"  # type: ignore[misc]


def test_model_validate_does_not_mutate_the_callers_dict() -> None:
    data = {"verdict": "KEEP", "rationale": "r", "reviewer_id": "x"}
    Verdict.model_validate(data)
    assert data == {"verdict": "KEEP", "rationale": "r", "reviewer_id": "x"}


def test_new_name_wins_when_both_names_are_given() -> None:
    v = Verdict(kind="KEEP", verdict="REJECT")
    assert v.kind == "KEEP"
    assert "verdict" not in v.model_dump()


def test_unknown_fields_are_kept() -> None:
    assert full_verdict().model_dump()["custom_extra"] == "kept"


def test_json_round_trip_is_lossless() -> None:
    v = full_verdict()
    back = Verdict.model_validate_json(v.model_dump_json())
    assert back == v
    assert back.model_dump() == v.model_dump()


def test_error_kind_round_trips_as_its_string_value() -> None:
    v = Verdict(kind="ERROR", error="timeout: no response", error_kind=ErrorKind.TIMEOUT)
    assert '"error_kind":"timeout"' in v.model_dump_json()
    assert Verdict.model_validate_json(v.model_dump_json()).error_kind is ErrorKind.TIMEOUT


def test_confidence_outside_unit_interval_is_rejected_on_construction() -> None:
    with pytest.raises(ValidationError):
        Verdict(kind="KEEP", confidence=1.5)


def test_kind_is_required_and_not_coerced_from_int() -> None:
    with pytest.raises(ValidationError):
        Verdict(kind=123)  # type: ignore[arg-type]


def test_defaults_match_cross_judge_0_1() -> None:
    v = Verdict(kind="KEEP")
    assert (v.confidence, v.reasoning, v.critic_id, v.raw_response, v.error, v.elapsed_s) == (
        0.0,
        "",
        "",
        None,
        None,
        0.0,
    )
    assert v.is_valid


def test_a_verdict_with_an_error_is_not_valid() -> None:
    assert not Verdict(kind="ERROR", error="empty_response").is_valid


def test_usage_fills_total_when_vendor_omits_it() -> None:
    assert Usage(prompt_tokens=7, completion_tokens=3).total_tokens == 10


def test_usage_adds_up() -> None:
    total = Usage(prompt_tokens=1, completion_tokens=2) + Usage(
        prompt_tokens=3, completion_tokens=4
    )
    assert total == Usage(prompt_tokens=4, completion_tokens=6, total_tokens=10)
