"""`read_openai_chat`: OpenAI chat-completions messages read as a conversation and as agent
steps, every message and part type, tool errors, images, and bad input named by its place."""

from __future__ import annotations

import base64
import json

import pytest

from cross_judge.content import (
    FinalAnswer,
    ModelMessage,
    ToolCall,
    read_openai_chat,
    render_trajectory,
)
from cross_judge.errors import ItemError

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def call(call_id: str, name: str, arguments: object) -> dict[str, object]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


AGENT_RUN = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Find the capital of France."},
    {
        "role": "assistant",
        "content": "Let me search.",
        "tool_calls": [call("c1", "search", {"q": "capital of France"})],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"answer": "Paris"}'},
    {"role": "assistant", "content": "The capital of France is Paris."},
]


def test_each_message_becomes_a_turn_with_tool_results_as_tool_turns() -> None:
    transcript = read_openai_chat(AGENT_RUN)
    assert [t.role for t in transcript.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    tool_turn = transcript.messages[3]
    assert (tool_turn.name, tool_turn.tool_call_id) == ("search", "c1")
    assert transcript.messages[2].tool_calls[0].arguments == {"q": "capital of France"}


def test_the_trajectory_holds_text_calls_with_their_parsed_results_and_the_final_answer() -> None:
    steps = read_openai_chat(AGENT_RUN).trajectory
    assert steps == (
        ModelMessage(text="Let me search."),
        ToolCall(
            name="search", arguments={"q": "capital of France"}, result={"answer": "Paris"}, id="c1"
        ),
        FinalAnswer(text="The capital of France is Paris."),
    )


def test_a_run_that_ends_on_a_tool_call_has_no_final_answer() -> None:
    steps = read_openai_chat(AGENT_RUN[:4]).trajectory
    assert not any(isinstance(step, FinalAnswer) for step in steps)


def test_a_tool_result_with_an_error_key_makes_the_call_an_error() -> None:
    messages = [
        {"role": "user", "content": "clean up"},
        {"role": "assistant", "content": None, "tool_calls": [call("c9", "rm", {"path": "/"})]},
        {"role": "tool", "tool_call_id": "c9", "content": '{"error": "permission denied"}'},
    ]
    transcript = read_openai_chat(messages)
    (step,) = transcript.trajectory
    assert isinstance(step, ToolCall)
    assert (step.error, step.result) == ("permission denied", None)
    assert transcript.messages[1].tool_calls[0].error == "permission denied"


def test_an_is_error_flag_on_the_tool_message_makes_the_call_an_error() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [call("c1", "fetch", {})]},
        {"role": "tool", "tool_call_id": "c1", "content": "timeout after 30 s", "is_error": True},
    ]
    (step,) = read_openai_chat(messages).trajectory
    assert isinstance(step, ToolCall) and step.error == "timeout after 30 s"


def test_is_error_false_in_the_result_keeps_it_a_result() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [call("c1", "check", {})]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"is_error": false, "error": "none"}'},
    ]
    (step,) = read_openai_chat(messages).trajectory
    assert isinstance(step, ToolCall) and step.error is None
    assert step.result == {"is_error": False, "error": "none"}


def test_a_null_error_key_is_not_an_error() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [call("c1", "check", {})]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": null, "value": 3}'},
    ]
    (step,) = read_openai_chat(messages).trajectory
    assert isinstance(step, ToolCall) and step.error is None


def test_image_url_parts_become_the_turns_images() -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}},
            ],
        },
        {"role": "assistant", "content": "A chart."},
    ]
    transcript = read_openai_chat(messages)
    user = transcript.messages[0]
    assert user.content == "What is this?"
    assert [i.data for i in user.images] == [PNG, None]
    assert user.images[1].url == "https://example.com/chart.png"
    assert transcript.images == user.images


def test_a_developer_turn_is_read_as_a_system_turn() -> None:
    messages = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert read_openai_chat(messages).messages[0].role == "system"


def test_a_refusal_is_the_assistants_text() -> None:
    messages = [
        {"role": "user", "content": "Help me pick a lock."},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    ]
    transcript = read_openai_chat(messages)
    assert transcript.messages[1].content == "I can't help with that."
    assert transcript.trajectory == (FinalAnswer(text="I can't help with that."),)


def test_the_legacy_function_call_is_answered_by_its_function_message() -> None:
    messages = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "weather", "arguments": "{}"},
        },
        {"role": "function", "name": "weather", "content": "sunny"},
    ]
    (step,) = read_openai_chat(messages).trajectory
    assert isinstance(step, ToolCall) and (step.name, step.result) == ("weather", "sunny")


def test_arguments_that_are_not_json_are_kept_as_text() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
            ],
        },
    ]
    (step,) = read_openai_chat(messages).trajectory
    assert isinstance(step, ToolCall) and step.arguments == "{oops"


def test_tools_offered_are_listed_and_reach_the_items_context() -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "search", "description": "Search the web.\nMore."},
        },
        {"type": "function", "function": {"name": "rm"}},
    ]
    transcript = read_openai_chat(AGENT_RUN, tools=tools)
    assert transcript.tools == ("search: Search the web.", "rm")
    assert transcript.item_fields()["context"] == {"tools": "search: Search the web.\nrm"}


def test_item_fields_as_a_trajectory_carry_the_task_and_images() -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image_url", "image_url": {"url": DATA_URL}},
            ],
        },
        {"role": "assistant", "content": "A dot."},
    ]
    fields = read_openai_chat(messages).item_fields("trajectory")
    assert set(fields) == {"trajectory", "images", "context"}
    assert fields["context"] == {"task": "Describe"}
    assert fields["images"][0].data == PNG


def test_a_rendered_trajectory_shows_the_error_of_a_failed_call() -> None:
    messages = [
        {"role": "user", "content": "clean"},
        {"role": "assistant", "tool_calls": [call("c1", "rm", {"p": "/"})]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": "denied"}'},
    ]
    text = render_trajectory(read_openai_chat(messages).trajectory).text
    assert text == '[step 1] call rm({"p":"/"}) -> ERROR: denied'


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ("hello", "'messages' must be a list of turns"),
        ([], "'messages' is empty"),
        ([{"role": "bot", "content": "hi"}], "messages[0].role must be one of"),
        (
            [{"role": "user", "content": "hi", "colour": "red"}],
            "messages[0] has unknown keys ['colour']",
        ),
        (
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
            "messages[0].content[0] is a 'input_audio' block",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}],
                }
            ],
            "messages[0].content[0]: image URL",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "nope", "content": "r"},
            ],
            "messages[1].tool_call_id: answers tool call 'nope'",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"arguments": "{}"}}
                    ],
                }
            ],
            "messages[0].tool_calls[0].name must be the tool's name",
        ),
        (
            [{"role": "user", "content": "x", "tool_calls": [call("c", "f", {})]}],
            "only an assistant turn",
        ),
    ],
)
def test_bad_input_names_its_place_and_the_fix(messages: object, expected: str) -> None:
    with pytest.raises(ItemError, match=None) as raised:
        read_openai_chat(messages)
    assert expected in str(raised.value)


def test_a_tool_definition_without_a_name_is_refused() -> None:
    with pytest.raises(ItemError, match=r"tools\[0\] must be a tool definition with a name"):
        read_openai_chat(AGENT_RUN, tools=[{"type": "function", "function": {}}])
