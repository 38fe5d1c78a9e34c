"""An item with structure: messages, a trajectory, references and images, read from the
plain values an items file holds, each mistake an ItemError that names the field and the fix."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import pytest

from cross_judge import Item, ItemError
from cross_judge.content import FinalAnswer, Image, ModelMessage, ToolCall, Turn


def png(width: int = 1, height: int = 1) -> bytes:
    """A valid PNG of ``width`` x ``height`` grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


BOOKING = [
    {"role": "user", "content": "Find me a table for two tonight."},
    {"role": "assistant", "content": "Chez Anna has 8pm free. Shall I book it?"},
    {"role": "user", "content": "Yes"},
    {"role": "assistant", "content": "Booked: Chez Anna, 8pm, two people."},
]


def test_a_conversation_without_a_query_is_judged_on_its_last_assistant_turn() -> None:
    item = Item(messages=BOOKING)
    assert item.query == "Booked: Chez Anna, 8pm, two people."
    assert [t.role for t in item.messages] == ["user", "assistant", "user", "assistant"]


def test_a_trajectory_without_a_query_is_judged_on_its_final_answer() -> None:
    item = Item(trajectory=[{"name": "search", "arguments": {"q": "x"}}, {"final_answer": "3"}])
    assert item.query == "3"


def test_two_conversations_ending_alike_get_different_ids() -> None:
    other = [*BOOKING[:2], {"role": "user", "content": "No"}, BOOKING[3]]
    assert Item(messages=BOOKING).id != Item(messages=other).id
    assert Item(messages=BOOKING).id == Item(messages=BOOKING).id


def test_a_plain_item_keeps_its_query_as_its_id() -> None:
    assert Item(query="short").id == "short"
    assert not Item(query="short").structured


def test_an_explicit_query_wins_over_the_final_answer() -> None:
    item = Item(query="Book a table", trajectory=[{"final_answer": "done"}])
    assert item.query == "Book a table"


def test_steps_are_read_by_their_shape() -> None:
    item = Item.from_value(
        {
            "trajectory": [
                {"tool": "search", "arguments": '{"q": "weather"}', "result": '{"t": 3}'},
                {"name": "rm", "arguments": {"path": "/"}, "error": "permission denied"},
                {"text": "Let me check."},
                {"answer": "It is 3 degrees."},
            ]
        }
    )
    call, failed, said, final = item.trajectory
    assert call == ToolCall(name="search", arguments={"q": "weather"}, result={"t": 3})
    assert isinstance(failed, ToolCall) and failed.failed and failed.error == "permission denied"
    assert said == ModelMessage(text="Let me check.")
    assert final == FinalAnswer(text="It is 3 degrees.")


def test_openai_style_tool_calls_in_an_assistant_turn_are_read() -> None:
    turns = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3C"},
        {"role": "assistant", "content": "3C"},
    ]
    item = Item.from_value({"messages": turns})
    assert item.messages[1].tool_calls == (ToolCall(name="w", arguments={}, id="c1"),)
    assert item.messages[2] == Turn(role="tool", content="3C", name="w", tool_call_id="c1")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"messages": "hello"}, "'messages' must be a list of turns"),
        ({"messages": [{"role": "bot", "content": "x"}]}, "use 'assistant'"),
        ({"messages": [{"role": "user", "text": "x"}]}, "unknown keys ['text']"),
        ({"messages": [{"role": "system", "content": "x"}]}, "only system turns"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content must be text"),
        ({"trajectory": {"name": "x"}}, "'trajectory' must be a list of steps"),
        ({"trajectory": [{"weird": 1}]}, "a step is a tool call"),
        ({"trajectory": [{"name": ""}]}, "trajectory[0].name must be the tool's name"),
        ({"query": "q", "reference": ""}, "'reference' must be the reference answer as text"),
        ({"query": "q", "counter_reference": 3}, "'counter_reference' must be"),
        ({"query": "q", "images": ["ftp://x/y.png"]}, "is not http(s) or data:"),
        ({"query": "q", "images": [{"path": "a", "url": "b"}]}, "exactly one of"),
        ({"context": {}}, "or give 'messages' or a 'trajectory'"),
    ],
)
def test_a_malformed_structure_is_an_item_error_naming_the_field(
    value: dict[str, object], words: str
) -> None:
    with pytest.raises(ItemError, match=r"^item 4: ") as caught:
        Item.from_value(value, position=4)
    assert words in str(caught.value)


def test_an_image_path_is_read_relative_to_the_items_folder(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png())
    item = Item.from_value({"query": "q", "images": ["shot.png"]}, base_dir=tmp_path)
    (image,) = item.images
    assert image.media_type == "image/png" and image.data == png()
    assert image.source == str(tmp_path / "shot.png")


def test_an_unreadable_image_file_says_which() -> None:
    with pytest.raises(ItemError, match=r"images\[0\]: cannot read image 'nowhere.png'"):
        Item.from_value({"query": "q", "images": ["nowhere.png"]})


def test_an_image_path_with_a_nul_character_is_refused_as_an_item_error() -> None:
    with pytest.raises(ItemError, match=r"images\[0\]: .* cannot hold a NUL character"):
        Item.from_value({"query": "q", "images": ["a\x00b.png"]})


def test_bytes_that_are_no_image_are_refused_with_the_fix() -> None:
    with pytest.raises(ItemError, match="convert it to one of"):
        Image.from_bytes(b"GIF-not-really")


def test_a_data_url_image_is_decoded_and_its_digest_is_of_its_bytes() -> None:
    data = png(2, 2)
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    image = Image.from_url(url)
    assert image.data == data and image.url is None
    assert image.sha256 == Image.from_bytes(data).sha256


def test_a_url_image_is_never_fetched_and_is_named_by_its_url() -> None:
    image = Image.from_url("https://example.test/chart.png")
    assert image.data is None and image.media_type == "image/png"
    assert image.describe() == {"media_type": "image/png", "sha256": image.sha256, "url": image.url}


def test_an_image_repr_never_holds_its_bytes() -> None:
    assert "PNG" not in repr(Image.from_bytes(png()))


def test_the_same_bytes_from_two_paths_are_the_same_image_for_the_cache(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png())
    (tmp_path / "b.png").write_bytes(png())
    assert Image.from_path(tmp_path / "a.png").sha256 == Image.from_path(tmp_path / "b.png").sha256


def test_all_images_lists_the_items_then_its_turns() -> None:
    one, two = Image.from_bytes(png(1, 1)), Image.from_bytes(png(2, 1))
    item = Item(query="q", images=[one], messages=[Turn(role="user", content="see", images=(two,))])
    assert item.all_images() == (one, two)


def test_a_lone_surrogate_in_a_turn_is_refused_before_any_call() -> None:
    with pytest.raises(ItemError, match="lone surrogate"):
        Item.from_value({"messages": [{"role": "user", "content": "a\udc80"}]})


def test_reference_and_counter_reference_are_fields_not_meta() -> None:
    item = Item.from_value(
        {"query": "q", "reference": "r", "counter_reference": "w", "gold": "PASS"}
    )
    assert (item.reference, item.counter_reference) == ("r", "w")
    assert item.meta == {"gold": "PASS"}


def test_an_items_own_dump_reads_back_as_the_same_item() -> None:
    for item in (Item(query="plain"), Item(messages=BOOKING, reference="r")):
        assert Item.from_value(item.model_dump()) == item


def test_an_empty_structured_field_is_left_out() -> None:
    assert Item.from_value({"query": "q", "messages": [], "trajectory": [], "images": []}) == Item(
        query="q"
    )
