"""Structured answers, reasoning controls and confidence from token probabilities, over real
HTTP to vendors nobody in the project wrote: the servers of :mod:`.wire_servers`, written
from OpenAI's, llama-cpp-python's and Anthropic's wire formats (not the simulated vendor).

Each test drives ``Critic`` -> the pooled HTTP client or the Anthropic SDK -> socket -> a
wire server that refuses what the real one refuses -> parsing -> Verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cross_judge import Critic, ErrorKind, register_price
from cross_judge.critic._cache import ResponseCache
from cross_judge.critic._stepdown import forget_steps, steps_taken
from cross_judge.pricing import price_for
from cross_judge.vendors import get_vendor, register_vendor

from .wire_servers import (
    Answer,
    AnthropicMessagesServer,
    LlamaCppServer,
    OpenAIChatServer,
    always,
    count_tokens,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

KEY = "sk-wire-test-key-5a4b3c2d1e0f"
PROMPT = "pass-fail@2"
ITEM = "Task: add two ints.\ndef add(a, b):\n    return a + b"


@pytest.fixture(autouse=True)
def fresh_steps() -> Iterator[None]:
    forget_steps()
    yield
    forget_steps()


@pytest.fixture
def openai_server() -> Iterator[OpenAIChatServer]:
    with OpenAIChatServer(always("PASS"), api_key=KEY) as server:
        yield server


@pytest.fixture
def llamacpp_server() -> Iterator[LlamaCppServer]:
    with LlamaCppServer(always("PASS")) as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicMessagesServer]:
    with AnthropicMessagesServer(always("FAIL"), api_key=KEY) as server:
        yield server


def on_openai(server: OpenAIChatServer, **kwargs: Any) -> Critic:
    kwargs.setdefault("prompt", PROMPT)
    return Critic(
        name="gpt", model="o-wire", vendor="openai", base_url=server.url, api_key=KEY, **kwargs
    )


def on_llamacpp(server: LlamaCppServer, vendor: str = "llamacpp", **kwargs: Any) -> Critic:
    kwargs.setdefault("prompt", PROMPT)
    return Critic(name="smol", model="local", vendor=vendor, base_url=server.url, **kwargs)


def on_anthropic(server: AnthropicMessagesServer, **kwargs: Any) -> Critic:
    kwargs.setdefault("prompt", PROMPT)
    return Critic(
        name="claude",
        model="claude-wire",
        vendor="anthropic",
        base_url=server.url,
        api_key=KEY,
        **kwargs,
    )


# -- the servers refuse what the real ones refuse (so a pass below means something) -------


def test_the_openai_server_refuses_a_schema_strict_mode_would_refuse(
    openai_server: OpenAIChatServer,
) -> None:
    loose = {"type": "object", "properties": {"kind": {"type": "string"}}}
    reply = httpx.post(
        f"{openai_server.url}/chat/completions",
        headers={"authorization": f"Bearer {KEY}"},
        json={
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": loose},
            },
        },
    )
    assert reply.status_code == 400
    assert "'additionalProperties' is required" in reply.json()["error"]["message"]


def test_the_openai_server_refuses_temperature_with_reasoning_effort(
    openai_server: OpenAIChatServer,
) -> None:
    reply = httpx.post(
        f"{openai_server.url}/chat/completions",
        headers={"authorization": f"Bearer {KEY}"},
        json={
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "reasoning_effort": "low",
            "temperature": 0,
        },
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["message"] == (
        "Unsupported parameter: 'temperature' is not supported with this model."
    )


def test_the_anthropic_server_refuses_a_forced_tool_while_thinking(
    anthropic_server: AnthropicMessagesServer,
) -> None:
    tool = {"name": "verdict", "input_schema": {"type": "object", "properties": {}}}
    reply = httpx.post(
        f"{anthropic_server.url}/v1/messages",
        headers={"x-api-key": KEY},
        json={
            "model": "m",
            "max_tokens": 3000,
            "messages": [{"role": "user", "content": "x"}],
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "tools": [tool],
            "tool_choice": {"type": "tool", "name": "verdict"},
        },
    )
    assert reply.status_code == 400
    message = reply.json()["error"]["message"]
    assert message == "Thinking may not be enabled when tool_choice forces tool use."


# -- OpenAI: a strict schema, token probabilities, reasoning effort, truncation ------------


async def test_a_strict_schema_passes_openais_checks_and_gives_the_label(
    openai_server: OpenAIChatServer,
) -> None:
    verdict = await on_openai(openai_server, structured="schema").judge(ITEM)
    sent = openai_server.last["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["name"] == "pass-fail_v2"
    assert verdict.kind == "PASS" and verdict.is_valid and verdict.structured == "schema"


async def test_logprob_confidence_is_the_label_renormalised_over_the_vocabulary() -> None:
    # At the label's token: PASS 0.72, FAIL 0.18 and a token that is no label 0.10.
    answer = Answer("PASS", confidence=0.99, label_probs={"PASS": 0.72, "FAIL": 0.18, "UN": 0.1})
    with OpenAIChatServer(lambda body: answer, api_key=KEY) as server:
        verdict = await on_openai(server, structured="schema", confidence="logprob").judge(ITEM)
    assert server.last["logprobs"] is True and server.last["top_logprobs"] >= 3
    assert verdict.confidence_source == "logprob"
    assert verdict.confidence == pytest.approx(0.72 / 0.90)
    assert verdict.stated_confidence == pytest.approx(0.99)


async def test_confidence_auto_on_openai_says_the_source_is_logprob(
    openai_server: OpenAIChatServer,
) -> None:
    verdict = await on_openai(openai_server, structured="schema", confidence="auto").judge(ITEM)
    assert verdict.confidence_source == "logprob"
    assert verdict.confidence == pytest.approx(0.9)  # the server's default: 0.9 vs 0.1


async def test_effort_sends_reasoning_effort_without_temperature_and_prices_the_thinking(
    openai_server: OpenAIChatServer,
) -> None:
    register_price("o-wire", vendor="openai", input=1.0, output=4.0, reasoning=10.0)
    verdict = await on_openai(openai_server, structured="schema", effort="low").judge(ITEM)
    body = openai_server.last
    assert body["reasoning_effort"] == "low" and "temperature" not in body
    assert "max_completion_tokens" in body and "max_tokens" not in body
    assert verdict.kind == "PASS"
    usage = verdict.usage
    assert usage is not None and usage.reasoning_tokens == 64
    answer_tokens = usage.completion_tokens - 64
    by_hand = (usage.prompt_tokens * 1.0 + answer_tokens * 4.0 + 64 * 10.0) / 1e6
    assert verdict.cost_usd == pytest.approx(by_hand)
    price = price_for("openai", "o-wire")
    assert price is not None and price.reasoning_rate == 10.0


async def test_a_reply_cut_off_while_reasoning_is_asked_again_with_twice_the_cap() -> None:
    with OpenAIChatServer(always("PASS"), api_key=KEY, truncate_below=300) as server:
        verdict = await on_openai(server, effort="high", max_tokens=200).judge(ITEM)
    assert [b["max_completion_tokens"] for b in server.bodies] == [200, 400]
    assert verdict.kind == "PASS" and verdict.attempts == 2
    assert verdict.usage is not None and verdict.usage.reasoning_tokens == 200 + 768


async def test_a_reply_cut_off_twice_is_truncated_not_a_parse_failure() -> None:
    with OpenAIChatServer(always("PASS"), api_key=KEY, truncate_below=10_000) as server:
        verdict = await on_openai(server, effort="low", max_tokens=200).judge(ITEM)
    assert len(server.bodies) == 2
    assert verdict.kind == "ERROR" and verdict.error_kind is ErrorKind.TRUNCATED


async def test_a_cached_answer_keeps_its_logprob_confidence(
    openai_server: OpenAIChatServer, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    judge = on_openai(openai_server, structured="schema", confidence="logprob", cache=cache)
    first = await judge.judge(ITEM)
    again = await judge.judge(ITEM)
    cache.close()
    assert len(openai_server.bodies) == 1 and again.cached and not first.cached
    assert first.confidence_source == again.confidence_source == "logprob"
    assert again.confidence == first.confidence and again.kind == first.kind


# -- llama-cpp-python's server: its own dialect, and the step down when it is not spoken ---


async def test_the_llamacpp_preset_sends_json_object_with_a_schema_and_needs_no_step(
    llamacpp_server: LlamaCppServer,
) -> None:
    verdict = await on_llamacpp(llamacpp_server, structured="auto").judge(ITEM)
    sent = llamacpp_server.last["response_format"]
    assert sent["type"] == "json_object"
    assert sent["schema"]["properties"]["kind"]["enum"] == ["PASS", "FAIL"]
    assert verdict.kind == "PASS" and verdict.structured == "schema"
    assert len(llamacpp_server.bodies) == 1 and steps_taken() == []


async def test_json_schema_on_llamacpp_steps_down_to_json_once_and_keeps_every_item(
    llamacpp_server: LlamaCppServer,
) -> None:
    judge = on_llamacpp(llamacpp_server, vendor="custom", structured="auto", max_retries=0)
    first = await judge.judge(ITEM)
    second = await judge.judge(ITEM + "\n# again")
    kinds = [b["response_format"]["type"] for b in llamacpp_server.bodies]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert "schema" not in llamacpp_server.bodies[1]["response_format"]
    assert first.kind == second.kind == "PASS"
    assert first.structured == second.structured == "json"
    assert first.attempts == 1
    [step] = steps_taken()
    assert (step.vendor, step.asked, step.now) == ("custom", "schema", "json")
    assert "Input should be 'text' or 'json_object'" in step.reason


async def test_a_vendor_registered_with_llamacpps_dialect_needs_no_step(
    llamacpp_server: LlamaCppServer, vendor_registry: None
) -> None:
    register_vendor(
        "custom",
        llamacpp_server.url,
        replace_existing=True,
        json_object=True,
        json_schema=True,
        schema_dialect="json_object",
        logprobs=True,
    )
    assert get_vendor("custom").schema_dialect == "json_object"
    verdict = await on_llamacpp(llamacpp_server, vendor="custom", structured="auto").judge(ITEM)
    assert llamacpp_server.last["response_format"]["type"] == "json_object"
    assert verdict.structured == "schema" and steps_taken() == []


async def test_the_small_model_writing_the_prompts_placeholders_is_saved_by_the_schema() -> None:
    # Unconstrained, a 135M model copies the prompt's example answer (a PARSE_FAIL); the
    # grammar of json_object + schema can only write a label of the enum.
    copied = '{"kind": "<PASS or FAIL>", "confidence": "<0.0-1.0>", "reasoning": "<...>"}'
    with LlamaCppServer(always("FAIL", free_text=copied)) as server:
        loose = await on_llamacpp(server, structured="off").judge(ITEM)
        enforced = await on_llamacpp(server, structured="schema").judge(ITEM)
    assert loose.kind == "PARSE_FAIL"
    assert enforced.kind == "FAIL" and enforced.is_valid


async def test_llamacpps_logprobs_give_the_label_probability_over_the_labels() -> None:
    # llama.cpp lists the raw distribution at the label's first token ("P" of PASS, "F"
    # of FAIL), and tokens the grammar would have forbidden ("JSON").
    answer = Answer("PASS", label_probs={"PASS": 0.6, "FAIL": 0.3, "JSON": 0.1})
    with LlamaCppServer(lambda body: answer) as server:
        verdict = await on_llamacpp(server, structured="schema", confidence="logprob").judge(ITEM)
    assert server.last["logprobs"] is True
    assert verdict.confidence_source == "logprob"
    assert verdict.confidence == pytest.approx(0.6 / 0.9)


# -- Anthropic: a forced tool, the JSON output format, thinking ---------------------------


async def test_a_forced_tool_is_answered_by_its_tool_use_input(
    anthropic_server: AnthropicMessagesServer,
) -> None:
    verdict = await on_anthropic(anthropic_server, structured="tool").judge(ITEM)
    body = anthropic_server.last
    assert body["tool_choice"] == {"type": "tool", "name": "pass-fail_v2"}
    assert body["tools"][0]["input_schema"]["properties"]["kind"]["enum"] == ["PASS", "FAIL"]
    assert verdict.kind == "FAIL" and verdict.structured == "tool"


async def test_the_output_format_is_answered_as_json_text(
    anthropic_server: AnthropicMessagesServer,
) -> None:
    verdict = await on_anthropic(anthropic_server, structured="schema").judge(ITEM)
    fmt = anthropic_server.last["output_config"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"]["additionalProperties"] is False
    assert "tools" not in anthropic_server.last
    assert verdict.kind == "FAIL" and verdict.structured == "schema"


async def test_thinking_raises_max_tokens_by_the_budget_and_leaves_the_verdict_alone(
    anthropic_server: AnthropicMessagesServer,
) -> None:
    judge = on_anthropic(anthropic_server, structured="auto", thinking_budget=2048, max_tokens=300)
    verdict = await judge.judge(ITEM)
    body = anthropic_server.last
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2048 + 300 and "temperature" not in body
    assert "tool_choice" not in body and "format" in body["output_config"]
    assert verdict.kind == "FAIL" and verdict.structured == "schema"
    assert verdict.usage is not None and verdict.usage.completion_tokens > 2048


async def test_confidence_auto_on_anthropic_falls_back_to_stated_and_says_so(
    anthropic_server: AnthropicMessagesServer,
) -> None:
    verdict = await on_anthropic(anthropic_server, structured="tool", confidence="auto").judge(ITEM)
    assert "logprobs" not in anthropic_server.last
    assert verdict.confidence_source == "stated" and verdict.confidence == pytest.approx(0.9)


async def test_an_answer_with_no_room_after_thinking_is_retried_with_twice_the_cap() -> None:
    needed = count_tokens(
        '{"kind":"FAIL","confidence":0.9,"reasoning":"It does what the task asks."}'
    )
    with AnthropicMessagesServer(always("FAIL"), api_key=KEY) as server:
        judge = on_anthropic(
            server, structured="schema", thinking_budget=1024, max_tokens=needed - 1
        )
        verdict = await judge.judge(ITEM)
    assert [b["max_tokens"] for b in server.bodies] == [1024 + needed - 1, 1024 + 2 * (needed - 1)]
    assert verdict.kind == "FAIL" and verdict.attempts == 2
    assert verdict.usage is not None
    assert verdict.usage.completion_tokens == (1024 + needed - 1) + (1024 + needed)
    assert math.isfinite(verdict.elapsed_s)
