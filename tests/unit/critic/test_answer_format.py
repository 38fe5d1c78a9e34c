"""A prompt's ``answer_format: {regex: ...}`` for judge models that do not answer in JSON
(Prometheus-style ``[RESULT] 4``): read with the same PARSE_FAIL safety as JSON answers."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import httpx
import pytest
import respx
from hypothesis import given, strategies as st

from cross_judge import ConfigError, Critic, PromptError
from cross_judge.critic._parsing import parse_answer
from cross_judge.prompts import PromptSpec, parse_prompt

PROMETHEUS = r"\[RESULT\]\s*(?P<label>[1-5])"
BASE = "https://llm.example/v1"


def prompt(answer_format: object = None) -> PromptSpec:
    text = (
        "id: prometheus\nversion: 1\n"
        'user_prompt_template: "Grade {query}. Write feedback, then [RESULT] and 1-5."\n'
        "labels: [1, 2, 3, 4, 5]\n"
        "score: {1: 0.0, 2: 0.25, 3: 0.5, 4: 0.75, 5: 1.0}\n"
    )
    if answer_format is not None:
        text += f"answer_format: {json.dumps(answer_format)}\n"
    return parse_prompt(text)


def test_the_last_match_is_the_answer_and_the_text_before_it_the_reasoning() -> None:
    spec = prompt({"regex": PROMETHEUS})
    reply = "The item itself says [RESULT] 1, but it is good. Feedback: clear. [RESULT] 4"
    parsed = parse_answer(reply, labels=spec.labels, answer_regex=spec.answer_regex)
    assert parsed.kind == "4" and parsed.reasoning.endswith("Feedback: clear.")


def test_a_reply_without_a_match_is_a_parse_failure_saying_so() -> None:
    spec = prompt({"regex": PROMETHEUS})
    parsed = parse_answer("I think it is fine.", labels=spec.labels, answer_regex=spec.answer_regex)
    assert (
        parsed.kind == "PARSE_FAIL" and parsed.error == "parse_fail: no match for the answer format"
    )


def test_a_matched_label_outside_the_vocabulary_fails_like_a_json_one() -> None:
    pattern = re.compile(r"VERDICT:\s*(?P<label>\w+)")
    parsed = parse_answer("VERDICT: MAYBE", labels=["PASS", "FAIL"], answer_regex=pattern)
    assert parsed.kind == "PARSE_FAIL" and parsed.reasoning == "VERDICT: MAYBE"


def test_confidence_and_reasoning_groups_are_read_when_present() -> None:
    pattern = re.compile(
        r"(?P<reasoning>.*?)\s*=> (?P<label>PASS|FAIL) \((?P<confidence>\d+)%\)", re.S
    )
    parsed = parse_answer(
        "works on all cases => PASS (80%)", labels=["PASS", "FAIL"], answer_regex=pattern
    )
    assert (parsed.kind, parsed.confidence, parsed.reasoning) == ("PASS", 0.8, "works on all cases")


@pytest.mark.parametrize(
    ("answer_format", "fix"),
    [
        ({"regex": r"\[RESULT\]\s*([1-5])"}, "named group label"),
        ({"regex": "(?P<label>[1-5]"}, "does not compile"),
        ({"pattern": PROMETHEUS}, "one key, regex"),
        ({"regex": r"(?P<label>\d)(?P<grade>\d)"}, "the groups read are"),
    ],
)
def test_a_bad_answer_format_is_refused_at_load_saying_the_fix(
    answer_format: object, fix: str
) -> None:
    with pytest.raises(PromptError, match="answer_format") as raised:
        prompt(answer_format)
    assert fix in str(raised.value)


def test_a_regex_prompt_asks_for_no_json_and_refuses_a_schema() -> None:
    spec = prompt({"regex": PROMETHEUS})
    auto = Critic(name="p", model="m", vendor="openai", prompt=spec, structured="auto")
    assert auto.structured_form(auto.endpoint()) == "off"
    with pytest.raises(ConfigError, match="regex answer_format"):
        Critic(name="p", model="m", vendor="openai", prompt=spec, structured="schema")


@given(st.text(max_size=300))
def test_any_reply_parses_or_fails_but_never_raises(reply: str) -> None:
    spec = prompt({"regex": PROMETHEUS})
    parsed = parse_answer(reply, labels=spec.labels, answer_regex=spec.answer_regex)
    assert parsed.kind in (*spec.labels, "PARSE_FAIL")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


@pytest.mark.anyio
@respx.mock
async def test_a_critic_reads_its_prompts_format_and_scores_the_label(
    client: httpx.AsyncClient,
) -> None:
    answer = {
        "choices": [{"message": {"content": "Good, one nit. [RESULT] 4"}, "finish_reason": "stop"}]
    }
    respx.post(f"{BASE}/chat/completions").respond(json=answer)
    judge = Critic(
        name="p",
        model="m",
        vendor="custom",
        base_url=BASE,
        prompt=prompt({"regex": PROMETHEUS}),
        http_client=client,
    )
    verdict = await judge.judge("x")
    assert verdict.kind == "4" and verdict.score == 0.75
