"""The Anthropic adapter sends a forced tool, the JSON output format, extended thinking and
an effort exactly as ChatRequest.sent_settings says, and reads a tool's input as the answer.

Requests go through the real SDK into an ``httpx2.MockTransport`` (the ``vendor`` fixture of
test_anthropic.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from cross_judge import Critic, ErrorKind
from cross_judge.transport import AnswerSchema, ChatRequest
from cross_judge.transport._batch_codecs import parse_anthropic_results

from .test_anthropic import (  # noqa: F401
    KEY,
    MockVendor,
    call,
    message,
    parse,
    request,
    text,
    vendor,
)

SCHEMA = AnswerSchema(
    name="pass-fail_v2",
    text=json.dumps(
        {
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": ["PASS", "FAIL"]}},
            "required": ["kind"],
            "additionalProperties": False,
        }
    ),
)


def settings_sent(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("model", "system", "messages")}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "options",
    [
        {"structured": "tool", "schema": SCHEMA},
        {"structured": "schema", "schema": SCHEMA},
        {"thinking_budget": 2048},
        {"thinking_budget": 2048, "structured": "schema", "schema": SCHEMA, "effort": "low"},
        {"effort": "high"},
    ],
    ids=repr,
)
async def test_the_body_carries_exactly_the_sent_settings(
    vendor: MockVendor,  # noqa: F811
    options: dict[str, Any],
) -> None:
    sent: ChatRequest = request(**options)
    await call(sent)
    assert settings_sent(vendor.body()) == sent.sent_settings("anthropic")


@pytest.mark.anyio
async def test_a_forced_tool_names_the_schema(vendor: MockVendor) -> None:  # noqa: F811
    await call(request(structured="tool", schema=SCHEMA))
    body = vendor.body()
    assert body["tool_choice"] == {"type": "tool", "name": "pass-fail_v2"}
    assert body["tools"][0]["input_schema"] == SCHEMA.as_dict()


def test_a_tool_use_block_is_the_answer_and_text_beside_it_is_not() -> None:
    completion = parse(
        message(
            text('I will record {"kind": "FAIL"} now.'),
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "pass-fail_v2",
                "input": {"kind": "PASS"},
            },
            stop_reason="tool_use",
        )
    )
    assert json.loads(completion.text) == {"kind": "PASS"}
    assert completion.finish_reason == "tool_use" and not completion.truncated


def test_thinking_that_ate_the_cap_is_a_truncated_completion_with_no_text() -> None:
    completion = parse(
        message(
            {"type": "thinking", "thinking": "hmm " * 50, "signature": "s"},
            stop_reason="max_tokens",
        )
    )
    assert completion.truncated and completion.text == "" and completion.reasoning


# -- a tool the critic did not force -----------------------------------------------------------


def tool_use(name: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": answer}


def claude(**kwargs: Any) -> Critic:
    kwargs.setdefault("structured", "tool")
    kwargs.setdefault("prompt", "pass-fail@2")
    return Critic(
        name="claude", model="claude-haiku-4-5", vendor="anthropic", api_key=KEY, **kwargs
    )


def test_the_names_of_the_tools_called_are_kept() -> None:
    completion = parse(
        message(tool_use("delete_everything", {"kind": "PASS"}), stop_reason="tool_use")
    )
    assert completion.tools == ("delete_everything",)


@pytest.mark.anyio
async def test_a_tool_use_naming_another_tool_than_the_forced_one_is_an_invalid_response(
    vendor: MockVendor,  # noqa: F811
) -> None:
    reply = message(tool_use("delete_everything", {"kind": "PASS"}), stop_reason="tool_use")
    vendor.reply = lambda _: httpx2.Response(200, content=reply)
    verdict = await claude().judge("Task: add two ints.")
    assert vendor.body()["tool_choice"] == {"type": "tool", "name": "pass-fail_v2"}
    assert verdict.kind == "ERROR" and verdict.error_kind is ErrorKind.INVALID_RESPONSE
    assert "'delete_everything'" in (verdict.error or "")
    assert "forced tool 'pass-fail_v2'" in (verdict.error or "")


@pytest.mark.anyio
async def test_the_forced_tool_among_other_tool_calls_is_still_an_invalid_response(
    vendor: MockVendor,  # noqa: F811
) -> None:
    reply = message(
        tool_use("delete_everything", {"path": "/"}),
        tool_use("pass-fail_v2", {"kind": "PASS"}),
        stop_reason="tool_use",
    )
    vendor.reply = lambda _: httpx2.Response(200, content=reply)
    verdict = await claude().judge("Task: add two ints.")
    assert verdict.error_kind is ErrorKind.INVALID_RESPONSE
    assert "'delete_everything'" in (verdict.error or "")


@pytest.mark.anyio
async def test_the_forced_tool_alone_is_the_verdict(vendor: MockVendor) -> None:  # noqa: F811
    reply = message(tool_use("pass-fail_v2", {"kind": "PASS"}), stop_reason="tool_use")
    vendor.reply = lambda _: httpx2.Response(200, content=reply)
    verdict = await claude().judge("Task: add two ints.")
    assert verdict.kind == "PASS" and verdict.error is None


@pytest.mark.anyio
async def test_a_tool_call_when_no_tool_was_offered_is_an_invalid_response(
    vendor: MockVendor,  # noqa: F811
) -> None:
    reply = message(tool_use("delete_everything", {"kind": "PASS"}), stop_reason="tool_use")
    vendor.reply = lambda _: httpx2.Response(200, content=reply)
    verdict = await claude(structured="schema").judge("Task: add two ints.")
    assert verdict.error_kind is ErrorKind.INVALID_RESPONSE
    assert "no tool was offered" in (verdict.error or "")


def test_a_batch_result_naming_another_tool_is_an_invalid_response() -> None:
    answer = json.loads(message(tool_use("delete_everything", {"kind": "PASS"})))
    line = {"custom_id": "cj-1", "result": {"type": "succeeded", "message": answer}}
    outcome = parse_anthropic_results(json.dumps(line).encode())["cj-1"]
    verdict = claude().verdict_from_batch(outcome, structured="tool")
    assert verdict.kind == "ERROR" and verdict.error_kind is ErrorKind.INVALID_RESPONSE
    assert "not the forced tool 'pass-fail_v2'" in (verdict.error or "")
