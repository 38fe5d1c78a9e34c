"""`read_otlp_json`: OpenTelemetry GenAI spans (chat and execute_tool) exported as OTLP JSON
read into one run per trace, steps in order of start time, tool errors from the span's
status, and bad input named by its path."""

from __future__ import annotations

import json

import pytest

from cross_judge.content import FinalAnswer, ModelMessage, ToolCall, read_otlp_json
from cross_judge.errors import ItemError

from .otlp_helpers import TRACE, export, messages, span, text

USER = text("user", "Book a table for two in Lyon tonight.")
CALL = {
    "role": "assistant",
    "parts": [
        {"type": "text", "content": "Searching."},
        {"type": "tool_call", "id": "call_1", "name": "search", "arguments": {"city": "Lyon"}},
    ],
}
RESPONSE = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_1", "response": "3 places"}],
}
BOOK = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_2", "name": "book", "arguments": {"n": 2}}],
}


def agent_trace() -> list[dict[str, object]]:
    """An agent run: chat, a tool, chat, a failing tool, the last chat's answer."""
    return [
        span("invoke_agent planner", 0, {"gen_ai.operation.name": "invoke_agent"}),
        span(
            "chat gpt-x",
            10,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system_instructions": json.dumps(
                    [{"type": "text", "content": "You book tables."}]
                ),
                "gen_ai.input.messages": messages(USER),
                "gen_ai.output.messages": messages(CALL),
            },
        ),
        span(
            "execute_tool search",
            20,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"city": "Lyon"}',
                "gen_ai.tool.call.result": '["Chez A", "Chez B", "Chez C"]',
            },
        ),
        span(
            "chat gpt-x",
            30,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": messages(USER, CALL, RESPONSE),
                "gen_ai.output.messages": messages(BOOK),
            },
        ),
        span(
            "execute_tool book",
            40,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "book",
                "gen_ai.tool.call.id": "call_2",
            },
            error="restaurant is full",
        ),
        span(
            "chat gpt-x",
            50,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": messages(
                    USER,
                    CALL,
                    RESPONSE,
                    BOOK,
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": "call_2", "response": "full"}
                        ],
                    },
                ),
                "gen_ai.output.messages": messages(text("assistant", "Sorry, it is full tonight.")),
            },
        ),
    ]


def test_an_agent_trace_reads_as_its_steps_in_order() -> None:
    (run,) = read_otlp_json(export(agent_trace()))
    assert run.trace_id == TRACE
    assert run.trajectory == (
        ModelMessage(text="Searching."),
        ToolCall(
            name="search",
            arguments={"city": "Lyon"},
            result=["Chez A", "Chez B", "Chez C"],
            id="call_1",
        ),
        ToolCall(name="book", arguments={"n": 2}, error="restaurant is full", id="call_2"),
        FinalAnswer(text="Sorry, it is full tonight."),
    )


def test_repeated_history_in_each_chat_span_is_read_once() -> None:
    (run,) = read_otlp_json(export(agent_trace()))
    assert [t.role for t in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert run.messages[0].content == "You book tables."


def test_spans_are_ordered_by_start_time_not_file_order() -> None:
    shuffled = list(reversed(agent_trace()))
    assert read_otlp_json(export(shuffled, scopes=2)) == read_otlp_json(export(agent_trace()))


def test_an_error_type_attribute_makes_the_call_an_error() -> None:
    spans = [
        span(
            "execute_tool rm",
            5,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "rm",
                "error.type": "PermissionError",
            },
        )
    ]
    (run,) = read_otlp_json(export(spans))
    (step,) = run.trajectory
    assert isinstance(step, ToolCall) and step.error == "PermissionError"


def test_a_tool_span_without_its_chat_span_is_a_step_with_its_arguments() -> None:
    spans = [
        span(
            "execute_tool lookup",
            5,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.call.arguments": '{"k": 1}',
                "gen_ai.tool.call.result": "v",
            },
        )
    ]
    (run,) = read_otlp_json(export(spans))
    assert run.trajectory == (ToolCall(name="lookup", arguments={"k": 1}, result="v"),)


def test_each_trace_is_a_run_of_its_own_in_order_of_its_first_span() -> None:
    later = span(
        "chat m",
        100,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": messages(text("assistant", "B")),
        },
        trace="b" * 32,
    )
    earlier = span(
        "chat m",
        1,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": messages(text("assistant", "A")),
        },
        trace="a" * 32,
    )
    runs = read_otlp_json([export([later]), export([earlier])])
    assert [(r.trace_id, r.trajectory) for r in runs] == [
        ("a" * 32, (FinalAnswer(text="A"),)),
        ("b" * 32, (FinalAnswer(text="B"),)),
    ]


def test_json_lines_of_exports_are_read_as_one_input() -> None:
    spans = agent_trace()
    lines = "\n".join(json.dumps(export([s])) for s in spans) + "\n"
    assert read_otlp_json(lines) == read_otlp_json(export(spans))


def test_snake_case_otlp_is_read_too() -> None:
    document = {
        "resource_spans": [
            {
                "scope_spans": [
                    {
                        "spans": [
                            {
                                "trace_id": "c" * 32,
                                "name": "chat m",
                                "start_time_unix_nano": 5,
                                "attributes": [
                                    {
                                        "key": "gen_ai.operation.name",
                                        "value": {"string_value": "chat"},
                                    },
                                    {
                                        "key": "gen_ai.output.messages",
                                        "value": {
                                            "string_value": messages(text("assistant", "hi"))
                                        },
                                    },
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    (run,) = read_otlp_json(document)
    assert run.trajectory == (FinalAnswer(text="hi"),)


def test_image_parts_become_images() -> None:
    png = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
        "awAAAABJRU5ErkJggg=="
    )
    user = {
        "role": "user",
        "parts": [
            {"type": "text", "content": "what is it"},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": png},
            {"type": "uri", "modality": "image", "uri": "https://example.com/x.webp"},
        ],
    }
    spans = [
        span(
            "chat m", 1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": messages(user)}
        )
    ]
    (run,) = read_otlp_json(export(spans))
    assert [i.media_type for i in run.images] == ["image/png", "image/webp"]


def test_reasoning_parts_are_skipped() -> None:
    output = {
        "role": "assistant",
        "parts": [{"type": "reasoning", "content": "secret"}, {"type": "text", "content": "done"}],
    }
    spans = [
        span(
            "chat m",
            1,
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": messages(output)},
        )
    ]
    (run,) = read_otlp_json(export(spans))
    assert run.messages[0].content == "done"


def test_traces_without_messages_say_how_to_record_them() -> None:
    spans = [span("chat m", 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})]
    with pytest.raises(ItemError, match="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"):
        read_otlp_json(export(spans))


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][1].pop("traceId"),
            r"resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[1\] has no traceId",
        ),
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"].__setitem__(
                0, {"key": "x", "value": {"weird": 1}}
            ),
            r"spans\[1\]\.attributes\[0\]\.value holds none of stringValue",
        ),
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"].__setitem__(
                2, {"key": "gen_ai.input.messages", "value": {"stringValue": "[{not json"}}
            ),
            r"spans\[1\]\.attributes\[gen_ai\.input\.messages\] is not JSON",
        ),
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0].__setitem__("spans", {"a": 1}),
            r"scopeSpans\[0\]\.spans must be a list",
        ),
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][1].__setitem__(
                "startTimeUnixNano", "soon"
            ),
            "startTimeUnixNano must be nanoseconds",
        ),
    ],
)
def test_bad_input_names_its_path_and_the_fix(mutate: object, expected: str) -> None:
    document = export(agent_trace())
    mutate(document)  # type: ignore[operator]
    with pytest.raises(ItemError, match=expected):
        read_otlp_json(document)


def test_text_that_is_not_json_is_refused_with_its_line() -> None:
    with pytest.raises(ItemError, match="line 2 is not JSON"):
        read_otlp_json(json.dumps(export(agent_trace())) + "\n{oops\n")


def test_a_document_without_resource_spans_is_refused() -> None:
    with pytest.raises(ItemError, match="has no 'resourceSpans'"):
        read_otlp_json({"spans": []})
