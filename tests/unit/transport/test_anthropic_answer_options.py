"""The Anthropic adapter sends a forced tool, the JSON output format, extended thinking and
an effort exactly as ChatRequest.sent_settings says, and reads a tool's input as the answer.

Requests go through the real SDK into an ``httpx2.MockTransport`` (the ``vendor`` fixture of
test_anthropic.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cross_judge.transport import AnswerSchema, ChatRequest

from .test_anthropic import MockVendor, call, message, parse, request, text, vendor  # noqa: F401

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
