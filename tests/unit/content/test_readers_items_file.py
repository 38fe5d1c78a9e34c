"""An items file's `messages` may hold either vendor's format as it comes: `turns_of` (and so
`Item.from_value`) reads OpenAI tool calls and image_url parts and Anthropic blocks; the
plain form keeps working; `Item.from_openai_chat` and friends build items from readers."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from cross_judge import Item
from cross_judge.content import ToolCall, Turn, read_openai_chat, turns_of
from cross_judge.errors import ItemError

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)
PNG = base64.b64decode(PNG_B64)

ANTHROPIC = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Is it safe?"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
            },
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "scan", "input": {"deep": True}}],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "clean", "is_error": False}
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Yes, it is safe."}]},
]


def test_anthropic_blocks_in_an_items_file_become_turns_calls_and_images() -> None:
    item = Item.from_value({"messages": ANTHROPIC})
    assert [t.role for t in item.messages] == ["user", "assistant", "tool", "assistant"]
    assert item.messages[0].images[0].data == PNG
    assert item.messages[1].tool_calls[0] == ToolCall(
        name="scan", arguments={"deep": True}, id="t1"
    )
    assert item.query == "Yes, it is safe."


def test_openai_image_url_parts_in_an_items_file_become_images() -> None:
    turns = turns_of(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                ],
            },
            {"role": "assistant", "content": "a dot"},
        ]
    )
    assert turns[0].content == "see" and turns[0].images[0].data == PNG


def test_the_plain_form_reads_as_before() -> None:
    turns = turns_of(
        [
            {"role": "user", "content": "Delete the logs."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"name": "rm", "arguments": {"p": "/var/log"}, "error": "denied"}],
            },
            {"role": "assistant", "content": "I could not."},
        ]
    )
    assert turns[1] == Turn(
        role="assistant",
        tool_calls=(ToolCall(name="rm", arguments={"p": "/var/log"}, error="denied"),),
    )


def test_turn_objects_are_kept_as_they_are() -> None:
    given = (Turn(role="user", content="hi", name="ann"), Turn(role="assistant", content="hello"))
    assert turns_of(list(given)) == given


def test_a_tool_turn_answering_no_call_is_kept_in_an_items_file() -> None:
    turns = turns_of(
        [{"role": "user", "content": "x"}, {"role": "tool", "name": "lookup", "content": "42"}]
    )
    assert (turns[1].role, turns[1].name, turns[1].content) == ("tool", "lookup", "42")


def test_image_paths_of_a_turn_are_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "dot.png").write_bytes(PNG)
    turns = turns_of(
        [
            {"role": "user", "content": "look", "images": ["pics/dot.png"]},
            {"role": "assistant", "content": "ok"},
        ],
        base_dir=tmp_path,
    )
    assert turns[0].images[0].data == PNG


def test_only_system_turns_are_refused() -> None:
    with pytest.raises(ItemError, match="holds only system turns"):
        turns_of([{"role": "system", "content": "rules"}])


def test_a_bad_block_in_an_items_file_names_the_item_and_the_place() -> None:
    with pytest.raises(ItemError, match=r"item 4: messages\[0\]\.content\[0\] is a 'video' block"):
        Item.from_value(
            {"messages": [{"role": "user", "content": [{"type": "video"}]}]}, position=4
        )


def test_item_from_openai_chat_judges_the_trajectory_with_the_given_fields() -> None:
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ]
    item = Item.from_openai_chat(
        messages, form="trajectory", id="run-1", reference="4", context={"rule": "be exact"}
    )
    assert (item.id, item.query, item.reference) == ("run-1", "4", "4")
    assert item.context == {"task": "2+2?", "rule": "be exact"}
    assert len(item.trajectory) == 1 and not item.messages


def test_item_from_anthropic_messages_judges_the_conversation() -> None:
    item = Item.from_anthropic_messages(ANTHROPIC, system="Be careful.")
    assert item.messages[0].role == "system"
    assert item.id.startswith("item-")


def test_item_from_transcript_equals_the_item_of_its_fields() -> None:
    transcript = read_openai_chat(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    assert Item.from_transcript(transcript) == Item(**transcript.item_fields())


def test_an_unknown_form_is_refused() -> None:
    transcript = read_openai_chat([{"role": "user", "content": "hi"}])
    with pytest.raises(ItemError, match="form must be 'conversation' or 'trajectory'"):
        transcript.item_fields("steps")


def test_a_trajectory_of_a_run_without_steps_is_refused() -> None:
    transcript = read_openai_chat([{"role": "user", "content": "hi"}])
    with pytest.raises(ItemError, match="no agent steps"):
        transcript.item_fields("trajectory")
