"""Structured answers, reasoning controls and truncation, over a mocked HTTP layer (respx):
what a critic sends for structured=/effort=/thinking_budget=, how structured="auto" steps
down on a refusal, and how an answer cut off by the token limit is classified and retried."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

from cross_judge import ConfigError, Critic, ErrorKind, Verdict
from cross_judge.critic import _assembly as assembly
from cross_judge.critic._stepdown import forget_steps, steps_taken
from cross_judge.transport import CallFailure, Completion
from cross_judge.transport._batch_codecs import openai_request

pytestmark = pytest.mark.anyio

KEY = "sk-unit-test-key-answer-options-0123"
BASE = "https://llm.example/v1"
URL = f"{BASE}/chat/completions"
LLAMACPP_500 = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
    "\"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]"
)


def completion(
    content: str | None,
    *,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage or {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


@pytest.fixture(autouse=True)
def fresh_steps() -> Iterator[None]:
    forget_steps()
    yield
    forget_steps()


def critic(client: httpx.AsyncClient, **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("vendor", "custom")
    kwargs.setdefault("base_url", BASE)
    kwargs.setdefault("labels", ["KEEP", "REJECT"])
    return Critic(name="c1", model="m", http_client=client, **kwargs)


def body_of(route: respx.Route, call: int = -1) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(route.calls[call].request.content)
    return value


# -- what each form sends ---------------------------------------------------------------


@respx.mock
async def test_schema_sends_a_strict_json_schema_with_the_labels_as_an_enum(
    client: httpx.AsyncClient,
) -> None:
    route = respx.post(URL).respond(
        json=completion('{"kind": "KEEP", "confidence": 0.8, "reasoning": "ok"}')
    )
    verdict = await critic(client, structured="schema").judge("q")
    sent = body_of(route)["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    schema = sent["json_schema"]["schema"]
    assert schema["properties"]["kind"]["enum"] == ["KEEP", "REJECT"]
    assert schema["required"] == ["kind", "confidence", "reasoning"]
    assert schema["additionalProperties"] is False
    assert verdict.kind == "KEEP" and verdict.structured == "schema"


@respx.mock
async def test_the_schema_is_named_and_versioned_with_the_prompt(
    client: httpx.AsyncClient,
) -> None:
    route = respx.post(URL).respond(
        json=completion('{"kind": "PASS", "confidence": 1, "reasoning": "x"}')
    )
    await critic(client, structured="schema", prompt="pass-fail@2", labels=None).judge("q")
    sent = body_of(route)["response_format"]["json_schema"]
    assert sent["name"] == "pass-fail_v2"
    assert sent["schema"]["properties"]["kind"]["enum"] == ["PASS", "FAIL"]


@respx.mock
async def test_llamacpp_gets_its_json_object_with_a_schema(client: httpx.AsyncClient) -> None:
    url = "http://localhost:8080/v1/chat/completions"
    route = respx.post(url).respond(
        json=completion('{"kind": "KEEP", "confidence": 1, "reasoning": "x"}')
    )
    await critic(client, vendor="llamacpp", base_url=None, structured="auto").judge("q")
    sent = body_of(route)["response_format"]
    assert sent["type"] == "json_object"
    assert sent["schema"]["properties"]["kind"]["enum"] == ["KEEP", "REJECT"]


@respx.mock
async def test_structured_none_keeps_what_json_mode_sent(client: httpx.AsyncClient) -> None:
    url = "https://api.openai.com/v1/chat/completions"
    route = respx.post(url).respond(json=completion('{"kind": "KEEP"}'))
    verdict = await critic(client, vendor="openai", base_url=None).judge("q")
    assert body_of(route)["response_format"] == {"type": "json_object"}
    assert verdict.structured is None
    assert "structured" not in verdict.model_dump()


# -- structured="auto" steps down ------------------------------------------------------


@respx.mock
async def test_auto_steps_down_to_json_on_llamacpps_500_and_keeps_the_item(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    answer = completion('{"kind": "REJECT", "confidence": 0.7}')
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(500, json={"error": {"message": LLAMACPP_500}}),
            httpx.Response(200, json=answer),
            httpx.Response(200, json=answer),
        ]
    )
    judge = critic(client, structured="auto", max_retries=0)
    with caplog.at_level(logging.WARNING, logger="cross_judge"):
        first = await judge.judge("q")
        second = await judge.judge("q2")
    assert first.kind == "REJECT" and first.structured == "json" and first.attempts == 1
    assert body_of(route, 0)["response_format"]["type"] == "json_schema"
    assert body_of(route, 1)["response_format"] == {"type": "json_object"}
    assert body_of(route, 2)["response_format"] == {"type": "json_object"}  # learned
    assert second.structured == "json" and route.call_count == 3
    [step] = steps_taken()
    assert (step.asked, step.now, step.model) == ("schema", "json", "m")
    assert sum("refused structured='schema'" in r.getMessage() for r in caplog.records) == 1


@respx.mock
async def test_auto_steps_down_to_off_when_the_prompt_does_not_mention_json(
    client: httpx.AsyncClient,
) -> None:
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(400, json={"error": {"message": "response_format is not supported"}}),
            httpx.Response(200, json=completion('{"kind": "KEEP"}')),
        ]
    )
    verdict = await critic(
        client,
        structured="auto",
        system_prompt="",
        prompt_template="Judge {query}. Say kind KEEP or REJECT.",
    ).judge("q")
    assert verdict.structured == "off" and "response_format" not in body_of(route, 1)


@respx.mock
async def test_a_refusal_that_names_no_form_is_the_items_error_not_a_step(
    client: httpx.AsyncClient,
) -> None:
    respx.post(URL).respond(400, json={"error": {"message": "The model `m` does not exist"}})
    verdict = await critic(client, structured="auto").judge("q")
    assert verdict.error_kind is ErrorKind.BAD_REQUEST and steps_taken() == []


@respx.mock
async def test_an_explicit_schema_is_never_stepped_down(client: httpx.AsyncClient) -> None:
    respx.post(URL).respond(500, json={"error": {"message": LLAMACPP_500}})
    verdict = await critic(client, structured="schema", max_retries=0).judge("q")
    assert verdict.error_kind is ErrorKind.SERVER and verdict.structured == "schema"
    assert steps_taken() == []


@respx.mock
async def test_confidence_auto_drops_refused_logprobs_and_keeps_the_form(
    client: httpx.AsyncClient,
) -> None:
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(400, json={"error": {"message": "logprobs are not supported"}}),
            httpx.Response(200, json=completion('{"kind": "KEEP", "confidence": 0.6}')),
        ]
    )
    verdict = await critic(client, structured="schema", confidence="auto").judge("q")
    assert body_of(route, 0)["logprobs"] is True and "logprobs" not in body_of(route, 1)
    assert body_of(route, 1)["response_format"]["type"] == "json_schema"
    assert verdict.confidence == 0.6 and verdict.confidence_source == "stated"


# -- reasoning models ------------------------------------------------------------------


@respx.mock
async def test_openai_effort_is_reasoning_effort_without_temperature(
    client: httpx.AsyncClient,
) -> None:
    url = "https://api.openai.com/v1/chat/completions"
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 300,
        "total_tokens": 310,
        "completion_tokens_details": {"reasoning_tokens": 280},
    }
    route = respx.post(url).respond(json=completion('{"kind": "KEEP"}', usage=usage))
    verdict = await critic(client, vendor="openai", base_url=None, effort="low").judge("q")
    body = body_of(route)
    assert body["reasoning_effort"] == "low" and "temperature" not in body
    assert verdict.usage is not None and verdict.usage.reasoning_tokens == 280


@pytest.mark.parametrize(
    ("vendor", "options", "fields"),
    [
        ("deepseek", {"effort": "high"}, {"thinking": {"type": "enabled"}}),
        ("openrouter", {"effort": "medium"}, {"reasoning": {"effort": "medium"}}),
        ("openrouter", {"thinking_budget": 800}, {"reasoning": {"max_tokens": 800}}),
        ("vllm", {"effort": "high"}, {"reasoning_effort": "high"}),
    ],
)
def test_each_reasoning_dialect_sends_its_documented_fields(
    vendor: str, options: dict[str, Any], fields: dict[str, Any]
) -> None:
    judge = Critic(name="c", model="m", vendor=vendor, **options)
    sent = judge.build_request("q").sent_settings(judge.endpoint())
    assert {k: sent[k] for k in fields} == fields


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"vendor": "custom", "base_url": BASE, "effort": "low"}, "register_vendor"),
        ({"vendor": "openai", "thinking_budget": 2000}, "use effort="),
        ({"vendor": "deepseek", "effort": "low"}, "effort='high' turns thinking on"),
        ({"vendor": "anthropic", "thinking_budget": 100}, "at least 1024"),
        ({"vendor": "anthropic", "thinking_budget": 2048, "structured": "tool"}, "'schema'"),
        ({"vendor": "anthropic", "structured": "json"}, "no JSON mode"),
        ({"vendor": "openai", "structured": "tool"}, "structured='schema'"),
        ({"vendor": "deepseek", "structured": "schema"}, "structured='json'"),
        ({"vendor": "anthropic", "confidence": "logprob", "labels": ["A"]}, "'auto'"),
        ({"vendor": "openai", "confidence": "logprob"}, "labels=[...]"),
        ({"vendor": "openai", "structured": "auto", "json_mode": True}, "not both"),
        ({"vendor": "openai", "effort": "extreme"}, "'low', 'medium', 'high'"),
    ],
    ids=lambda value: repr(value)[:60],
)
def test_a_setting_the_vendor_cannot_take_is_a_config_error_saying_the_fix(
    kwargs: dict[str, Any], fix: str
) -> None:
    with pytest.raises(ConfigError, match="Critic 'c'") as raised:
        Critic(name="c", model="m", **kwargs)
    assert fix in str(raised.value)


def test_anthropic_thinking_raises_max_tokens_by_the_budget() -> None:
    judge = Critic(name="c", model="m", vendor="anthropic", thinking_budget=4096, max_tokens=500)
    sent = judge.build_request("q").sent_settings("anthropic")
    assert sent["max_tokens"] == 4596
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "temperature" not in sent


def test_anthropic_auto_forces_a_tool_and_switches_to_the_output_format_while_thinking() -> None:
    tool = Critic(name="c", model="m", vendor="anthropic", structured="auto")
    sent = tool.build_request("q").sent_settings("anthropic")
    assert sent["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert sent["tools"][0]["input_schema"]["required"] == ["kind", "confidence", "reasoning"]
    thinking = Critic(
        name="c", model="m", vendor="anthropic", structured="auto", thinking_budget=2048
    )
    sent = thinking.build_request("q").sent_settings("anthropic")
    assert "tools" not in sent and sent["output_config"]["format"]["type"] == "json_schema"


# -- truncation ------------------------------------------------------------------------


@respx.mock
async def test_an_answer_cut_off_while_thinking_is_truncated_not_empty(
    client: httpx.AsyncClient,
) -> None:
    respx.post(URL).respond(json=completion("", finish_reason="length"))
    verdict = await critic(client, retry_truncated=False).judge("q")
    assert verdict.kind == "ERROR" and verdict.error_kind is ErrorKind.TRUNCATED
    assert verdict.error is not None and verdict.error.startswith("truncated:")
    assert verdict.confidence_source == "none"


@respx.mock
async def test_a_truncated_answer_is_asked_once_more_with_twice_the_cap(
    client: httpx.AsyncClient,
) -> None:
    cut = completion(
        "", finish_reason="length", usage={"prompt_tokens": 10, "completion_tokens": 100}
    )
    whole = completion(
        '{"kind": "KEEP", "confidence": 0.9}', usage={"prompt_tokens": 10, "completion_tokens": 150}
    )
    route = respx.post(URL).mock(
        side_effect=[httpx.Response(200, json=cut), httpx.Response(200, json=whole)]
    )
    verdict = await critic(client, max_tokens=100).judge("q")
    assert [body_of(route, i)["max_tokens"] for i in (0, 1)] == [100, 200]
    assert verdict.kind == "KEEP" and verdict.attempts == 2
    assert verdict.usage is not None and verdict.usage.completion_tokens == 250


@respx.mock
async def test_a_truncated_answer_is_retried_only_once(client: httpx.AsyncClient) -> None:
    route = respx.post(URL).respond(json=completion('{"kind": "KE', finish_reason="length"))
    verdict = await critic(client, max_tokens=50).judge("q")
    assert route.call_count == 2 and verdict.error_kind is ErrorKind.TRUNCATED


@respx.mock
async def test_an_answer_cut_off_again_on_the_retry_names_the_doubled_cap(
    client: httpx.AsyncClient,
) -> None:
    respx.post(URL).respond(json=completion('{"kind": "KE', finish_reason="length"))
    verdict = await critic(client, max_tokens=100).judge("q")
    error = verdict.error or ""
    assert "(max_tokens=200)" in error and "max_tokens=100)" not in error
    assert "on the retry at twice the first call's max_tokens=100" in error
    assert verdict.reasoning == error


@respx.mock
async def test_an_answer_that_parses_although_cut_off_stands(client: httpx.AsyncClient) -> None:
    respx.post(URL).respond(json=completion('{"kind": "KEEP"} and then', finish_reason="length"))
    verdict = await critic(client).judge("q")
    assert verdict.kind == "KEEP" and verdict.attempts == 1


# -- token probabilities ---------------------------------------------------------------


def with_logprobs(
    content: str, label: str, alternatives: list[tuple[str, float]]
) -> dict[str, Any]:
    start = content.index(label)
    pieces = [content[:start], label, content[start + len(label) :]]
    tokens = [{"token": piece, "logprob": 0.0, "top_logprobs": []} for piece in pieces if piece]
    tokens[1 if pieces[0] else 0] = {
        "token": label,
        "logprob": alternatives[0][1],
        "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alternatives],
    }
    answer = completion(content)
    answer["choices"][0]["logprobs"] = {"content": tokens}
    return answer


@respx.mock
async def test_logprob_confidence_is_the_labels_probability_over_the_vocabulary(
    client: httpx.AsyncClient,
) -> None:
    content = '{"kind": "KEEP", "confidence": 0.99, "reasoning": "fine"}'
    alternatives = [("KEEP", -0.2), ("REJECT", -1.9), ("Maybe", -3.0)]
    route = respx.post(URL).respond(json=with_logprobs(content, "KEEP", alternatives))
    verdict = await critic(client, confidence="logprob").judge("q")
    keep, reject = 2.718281828**-0.2, 2.718281828**-1.9
    assert verdict.confidence == pytest.approx(keep / (keep + reject), rel=1e-6)
    assert verdict.confidence_source == "logprob" and verdict.stated_confidence == 0.99
    assert body_of(route)["logprobs"] is True and body_of(route)["top_logprobs"] == 10


@respx.mock
async def test_a_measured_logprob_confidence_is_not_marked_bounded(
    client: httpx.AsyncClient,
) -> None:
    content = '{"kind": "KEEP", "confidence": 0.99, "reasoning": "fine"}'
    alternatives = [("KEEP", -0.2), ("REJECT", -1.9)]
    respx.post(URL).respond(json=with_logprobs(content, "KEEP", alternatives))
    verdict = await critic(client, confidence="logprob").judge("q")
    assert not verdict.confidence_bounded
    assert "confidence_bounded" not in verdict.model_dump_json()


@respx.mock
async def test_a_label_the_top_list_left_out_bounds_the_confidence_and_the_verdict_says_so(
    client: httpx.AsyncClient,
) -> None:
    # REJECT is not among the alternatives: it weighs the least listed one ("Maybe").
    content = '{"kind": "KEEP", "confidence": 0.99, "reasoning": "fine"}'
    alternatives = [("KEEP", -0.0001), ("Keep", -8.0), ("Maybe", -11.0)]
    respx.post(URL).respond(json=with_logprobs(content, "KEEP", alternatives))
    verdict = await critic(client, confidence="logprob").judge("q")
    keep = math.exp(-0.0001) + math.exp(-8.0)
    assert verdict.confidence == pytest.approx(keep / (keep + math.exp(-11.0)), rel=1e-9)
    assert verdict.confidence < 1.0 and verdict.confidence_bounded
    again = Verdict.model_validate_json(verdict.model_dump_json())
    assert again.confidence_bounded


@respx.mock
async def test_logprob_without_token_probabilities_is_a_vote_with_no_confidence_said_once(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assembly, "_WARNED_NO_LOGPROBS", set())  # once per process
    respx.post(URL).respond(json=completion('{"kind": "KEEP", "confidence": 0.9}'))
    judge = critic(client, confidence="logprob")
    with caplog.at_level(logging.WARNING, logger="cross_judge"):
        first = await judge.judge("q")
        await judge.judge("q2")
    assert first.kind == "KEEP" and first.confidence_source == "none"
    assert first.confidence == 0.0 and first.confidence_stated is False
    assert sum("no token probabilities" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize(
    ("tokens", "why"),
    [
        ([{"token": "KEEP", "logprob": float("nan")}], "logprobs.content[0].logprob is NaN"),
        ([{"token": "KEEP", "logprob": 0.5}], "logprobs.content[0].logprob is 0.5, above 0"),
        ([{"logprob": -0.1}], "logprobs.content[0].token is missing"),
        ([{"token": "KEEP"}], "logprobs.content[0].logprob is missing"),
    ],
    ids=["nan", "above-zero", "no-token", "no-logprob"],
)
@respx.mock
async def test_logprob_with_unusable_token_probabilities_says_which_field_and_why(
    client: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tokens: list[dict[str, Any]],
    why: str,
) -> None:
    monkeypatch.setattr(assembly, "_WARNED_NO_LOGPROBS", set())
    answer = completion('{"kind": "KEEP", "confidence": 0.9}')
    answer["choices"][0]["logprobs"] = {"content": tokens}
    respx.post(URL).respond(content=json.dumps(answer).encode())  # NaN as JSON's NaN
    with caplog.at_level(logging.WARNING, logger="cross_judge"):
        verdict = await critic(client, confidence="logprob").judge("q")
    assert verdict.confidence_source == "none"
    (message,) = [
        r.getMessage() for r in caplog.records if "confidence='logprob'" in r.getMessage()
    ]
    assert "token probabilities could not be used" in message and why in message
    assert "no token probabilities" not in message


@respx.mock
async def test_confidence_auto_without_token_probabilities_uses_the_stated_one(
    client: httpx.AsyncClient,
) -> None:
    respx.post(URL).respond(json=completion('{"kind": "KEEP", "confidence": 0.9}'))
    verdict = await critic(client, confidence="auto").judge("q")
    assert (verdict.confidence, verdict.confidence_source) == (0.9, "stated")


@respx.mock
async def test_token_probabilities_of_an_answer_that_echoed_the_key_are_not_kept(
    client: httpx.AsyncClient,
) -> None:
    content = '{"kind": "KEEP", "reasoning": "' + KEY + '"}'
    respx.post(URL).respond(json=with_logprobs(content, "KEEP", [("KEEP", -0.1), ("REJECT", -2.0)]))
    verdict = await critic(client, confidence="logprob").judge("q")
    assert KEY not in (verdict.raw_response or "") and verdict.confidence_source == "logprob"
    assert verdict.kept_logprobs() is None


@respx.mock
async def test_a_refusal_echoing_the_key_is_logged_and_kept_without_it(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    refusal = {"error": {"message": f"response_format json_schema refused for key {KEY}"}}
    respx.post(URL).mock(
        side_effect=[
            httpx.Response(400, json=refusal),
            httpx.Response(200, json=completion('{"kind": "KEEP"}')),
        ]
    )
    with caplog.at_level(logging.DEBUG, logger="cross_judge"):
        verdict = await critic(client, structured="auto").judge("q")
    assert verdict.structured == "json"
    assert KEY not in caplog.text
    assert all(KEY not in step.reason for step in steps_taken())


def test_a_batch_answer_records_the_shape_its_request_asked_for() -> None:
    judge = Critic(name="c", model="m", vendor="openai", structured="schema", labels=["KEEP"])
    answer = judge.verdict_from_batch(Completion(text='{"kind": "KEEP"}'), structured="schema")
    failed = judge.verdict_from_batch(CallFailure(ErrorKind.BATCH, "expired"), structured="schema")
    assert (answer.kind, answer.structured) == ("KEEP", "schema")
    assert (failed.error_kind, failed.structured) == (ErrorKind.BATCH, "schema")


def test_a_batch_line_carries_the_schema_a_live_call_sends() -> None:
    judge = Critic(name="c", model="m", vendor="openai", structured="schema", labels=["KEEP"])
    request = judge.build_request("q")
    line = openai_request(judge.endpoint(), request, "id-1").line
    assert line["body"]["response_format"]["type"] == "json_schema"


@respx.mock
async def test_an_explicit_logprob_critic_keeps_its_refusal_and_teaches_no_step(
    client: httpx.AsyncClient,
) -> None:
    respx.post(URL).respond(400, json={"error": {"message": "logprobs are not supported"}})
    verdict = await critic(client, structured="auto", confidence="logprob").judge("q")
    assert verdict.error_kind is ErrorKind.BAD_REQUEST and steps_taken() == []
