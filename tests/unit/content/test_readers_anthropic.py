"""`read_anthropic_messages`: Anthropic Messages content blocks (text, image, tool_use,
tool_result with is_error, server tools), thinking skipped, bad blocks named."""

from __future__ import annotations

import base64

import pytest

from cross_judge.content import FinalAnswer, ModelMessage, ToolCall, read_anthropic_messages
from cross_judge.errors import ItemError

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)
PNG = base64.b64decode(PNG_B64)
IMAGE_BLOCK = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
}

RUN = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should call the tool.", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"temp_c": 21}'}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "It is 21 C."}]},
]


def test_tool_use_and_tool_result_blocks_become_a_call_and_its_result() -> None:
    transcript = read_anthropic_messages(RUN)
    assert transcript.trajectory == (
        ModelMessage(text="Checking."),
        ToolCall(name="weather", arguments={"city": "Paris"}, result={"temp_c": 21}, id="toolu_1"),
        FinalAnswer(text="It is 21 C."),
    )


def test_a_tool_result_is_a_tool_turn_named_for_its_tool() -> None:
    turns = read_anthropic_messages(RUN).messages
    assert [t.role for t in turns] == ["user", "assistant", "tool", "assistant"]
    assert (turns[2].name, turns[2].tool_call_id, turns[2].content) == (
        "weather",
        "toolu_1",
        '{"temp_c": 21}',
    )


def test_thinking_blocks_are_skipped() -> None:
    transcript = read_anthropic_messages(RUN)
    assert "I should call the tool" not in transcript.messages[1].content
    assert transcript.messages[1].content == "Checking."


def test_the_system_text_is_a_first_system_turn() -> None:
    transcript = read_anthropic_messages(RUN, system=[{"type": "text", "text": "Be terse."}])
    assert (transcript.messages[0].role, transcript.messages[0].content) == ("system", "Be terse.")


def test_is_error_makes_the_call_an_error_with_the_results_text() -> None:
    messages = [
        RUN[0],
        RUN[1],
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "city not found"}],
                    "is_error": True,
                }
            ],
        },
    ]
    transcript = read_anthropic_messages(messages)
    call = transcript.trajectory[1]
    assert isinstance(call, ToolCall) and (call.error, call.result) == ("city not found", None)
    assert transcript.messages[1].tool_calls[0].error == "city not found"


def test_image_blocks_from_base64_and_url_become_images() -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare"},
                IMAGE_BLOCK,
                {"type": "image", "source": {"type": "url", "url": "https://example.com/b.jpg"}},
            ],
        },
        {"role": "assistant", "content": "The first is smaller."},
    ]
    user = read_anthropic_messages(messages).messages[0]
    assert user.images[0].data == PNG and user.images[0].media_type == "image/png"
    assert (user.images[1].url, user.images[1].media_type) == (
        "https://example.com/b.jpg",
        "image/jpeg",
    )


def test_an_image_in_a_tool_result_rides_on_the_tool_turn() -> None:
    messages = [
        {"role": "user", "content": "screenshot please"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [IMAGE_BLOCK]}],
        },
    ]
    transcript = read_anthropic_messages(messages)
    assert transcript.messages[2].images[0].data == PNG
    assert transcript.images == transcript.messages[2].images
    call = transcript.trajectory[0]
    assert isinstance(call, ToolCall) and call.result == "[1 image]"


def test_text_after_tool_results_is_a_user_turn_of_its_own() -> None:
    messages = [
        *RUN[:2],
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21"},
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ]
    turns = read_anthropic_messages(messages).messages
    assert [(t.role, t.content) for t in turns[2:]] == [("tool", "21"), ("user", "And tomorrow?")]


def test_a_server_tools_use_and_result_are_a_call_and_its_result() -> None:
    messages = [
        {"role": "user", "content": "news?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srv_1",
                    "name": "web_search",
                    "input": {"query": "news"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srv_1",
                    "content": {
                        "type": "web_search_tool_result_error",
                        "error_code": "max_uses_exceeded",
                    },
                },
                {"type": "text", "text": "I could not search."},
            ],
        },
    ]
    steps = read_anthropic_messages(messages).trajectory
    assert isinstance(steps[0], ToolCall) and steps[0].error == "max_uses_exceeded"
    assert steps[1] == FinalAnswer(text="I could not search.")


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            [{"role": "user", "content": [{"type": "document", "source": {}}]}],
            "messages[0].content[0] is a 'document' block, which cannot be judged here",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}],
                }
            ],
            "messages[0].content[0]: its source type 'file' cannot be read here",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "!!"},
                        }
                    ],
                }
            ],
            "messages[0].content[0]: 'base64' is not valid base64",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}],
                }
            ],
            "messages[0].content[0]: answers tool call 'gone'",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],
            "messages[0].content[0].tool_use_id must be the id of the tool_use it answers",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
                }
            ],
            "only an assistant turn makes tool calls",
        ),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]}],
            "messages[0].content[0].name must be the tool's name",
        ),
    ],
)
def test_bad_blocks_name_their_place_and_the_fix(messages: object, expected: str) -> None:
    with pytest.raises(ItemError) as raised:
        read_anthropic_messages(messages)
    assert expected in str(raised.value)
