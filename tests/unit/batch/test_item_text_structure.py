"""An item's structure stored with its result (``EnsembleVerdict.item``): turns, steps,
references and image descriptions, bounded by the same caps as the query and context (cut
visibly, named in ``cut``, whole entries past the total counted in ``left_out``), read
back from a results line to the same values; a plain item's line is unchanged."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from cross_judge.batch import Item, dump_result, load_result
from cross_judge.batch._items import ITEM_TEXT_CAP, ITEM_TEXT_TOTAL_CAP, cut_marker, item_text
from cross_judge.content import FinalAnswer, Image, ModelMessage, ToolCall, Turn
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40


def result_with(text: ItemText) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id="q",
        verdicts=[Verdict(kind="PASS", confidence=0.9, critic_id="a")],
        consensus="PASS",
        voting="majority",
        item=text,
    )


def agent_item(**fields: Any) -> Item:
    return Item(
        id="run-1",
        trajectory=[
            ToolCall(name="search", arguments={"q": "weather"}, result={"temp": 21}),
            ToolCall(name="rm", arguments={"path": "/"}, error="permission denied"),
            ModelMessage(text="Let me answer."),
            FinalAnswer(text="It is 21 degrees."),
        ],
        **fields,
    )


def test_a_trajectory_is_stored_as_step_mappings_with_their_kind() -> None:
    stored = item_text(agent_item())
    assert stored.trajectory == [
        {
            "kind": "tool_call",
            "name": "search",
            "arguments": {"q": "weather"},
            "result": {"temp": 21},
        },
        {
            "kind": "tool_call",
            "name": "rm",
            "arguments": {"path": "/"},
            "error": "permission denied",
        },
        {"kind": "message", "text": "Let me answer."},
        {"kind": "final_answer", "text": "It is 21 degrees."},
    ]
    assert stored.cut == []
    assert stored.left_out is None


def test_a_conversation_is_stored_with_roles_tool_calls_and_tool_turns() -> None:
    item = Item(
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "weather", "arguments": '{"city":"Oslo"}'}],
            },
            {"role": "tool", "name": "weather", "tool_call_id": "c1", "content": "4C"},
            {"role": "assistant", "content": "It is 4C."},
        ]
    )
    stored = item_text(item)
    assert stored.messages == [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}, "id": "c1"}],
        },
        {"role": "tool", "content": "4C", "name": "weather", "tool_call_id": "c1"},
        {"role": "assistant", "content": "It is 4C."},
    ]
    assert stored.query == "It is 4C."


def test_references_are_stored_as_text() -> None:
    stored = item_text(Item(query="Paris", reference="Paris", counter_reference="Lyon"))
    assert (stored.reference, stored.counter_reference) == ("Paris", "Lyon")


def test_images_are_described_never_stored_as_bytes() -> None:
    image = Image.from_bytes(PNG)
    stored = item_text(Item(query="What is shown?", images=[image]))
    assert stored.images == [{"media_type": "image/png", "sha256": image.sha256, "size": len(PNG)}]
    assert "base64" not in dump_result(result_with(stored))


def test_a_turns_images_are_described_in_its_turn() -> None:
    image = Image.from_url("https://example.org/chart.png")
    item = Item(messages=[Turn(role="user", content="Read this", images=(image,))], query="x")
    (turn,) = item_text(item).messages or []
    assert turn["images"] == [
        {"media_type": "image/png", "sha256": image.sha256, "url": "https://example.org/chart.png"}
    ]


def test_a_long_tool_result_is_cut_with_the_marker_and_named_by_its_path() -> None:
    long = "r" * (ITEM_TEXT_CAP + 500)
    item = Item(
        query="done",
        trajectory=[ToolCall(name="a", result="ok"), ToolCall(name="read", result=long)],
    )
    stored = item_text(item)
    assert stored.trajectory is not None
    assert stored.trajectory[1]["result"] == "r" * ITEM_TEXT_CAP + cut_marker(500)
    assert stored.cut == ["trajectory[1].result"]


def test_a_json_result_over_the_cap_is_kept_as_the_start_of_its_compact_json() -> None:
    big = {"rows": list(range(3000))}
    stored = item_text(Item(query="done", trajectory=[ToolCall(name="q", result=big)]))
    assert stored.trajectory is not None
    kept = stored.trajectory[0]["result"]
    written = json.dumps(big, separators=(",", ":"))
    assert kept == written[:ITEM_TEXT_CAP] + cut_marker(len(written) - ITEM_TEXT_CAP)


def test_steps_past_the_total_cap_are_left_out_whole_and_counted() -> None:
    steps = [ToolCall(name="fetch", result="x" * 1000) for _ in range(100)]
    stored = item_text(Item(query="done", trajectory=steps))
    kept = stored.trajectory or []
    assert 0 < len(kept) < 100
    assert stored.left_out == {"trajectory": 100 - len(kept)}
    assert f"trajectory[{len(kept)}:]" in stored.cut


def unmarked(text: str) -> str:
    """A stored text without its cut marker."""
    return text.split(" \u2026 [cut:")[0]


def test_a_twenty_megabyte_trajectory_is_stored_within_the_total_cap() -> None:
    steps = [
        ToolCall(name="read", arguments={"page": i}, result="y" * 2000)
        for i in range(10_000)  # 20 MB of results
    ]
    stored = item_text(Item(query="summary", trajectory=steps))
    kept = stored.trajectory or []
    texts = len(stored.query) + sum(
        len(s["name"])
        + len(json.dumps(s["arguments"], separators=(",", ":")))
        + len(unmarked(s.get("result", "")))
        for s in kept
    )
    assert texts <= ITEM_TEXT_TOTAL_CAP
    assert stored.left_out is not None
    assert stored.left_out["trajectory"] + len(kept) == 10_000


class CountedResult:
    """A tool result that counts how often it is written out."""

    written = 0

    def __str__(self) -> str:
        CountedResult.written += 1
        return "y" * 2000


def test_steps_past_the_total_cap_are_never_read() -> None:
    CountedResult.written = 0
    steps = [ToolCall(name="read", result=[CountedResult()]) for _ in range(10_000)]
    stored = item_text(Item(id="run", query="summary", trajectory=steps))
    assert CountedResult.written == len(stored.trajectory or [])
    assert CountedResult.written < 20


def test_a_structured_result_reads_back_from_its_line_to_the_same_values() -> None:
    image = Image.from_bytes(PNG)
    item = agent_item(reference="21 degrees", counter_reference="30 degrees", images=[image])
    stored = item_text(item)
    back = load_result(dump_result(result_with(stored)))
    assert back.item == stored


def test_a_plain_items_line_holds_no_structure_field() -> None:
    line = dump_result(result_with(item_text(Item(id="1", query="Felines"))))
    assert line.endswith('"item":{"query":"Felines","context":{},"cut":[]}}')


def test_a_line_written_without_structure_reads_with_none_for_each_field() -> None:
    line = dump_result(result_with(ItemText(query="Felines")))
    back = load_result(line)
    assert back.item is not None and not back.item.structured
    assert back.item.trajectory is None and back.item.messages is None


def test_arguments_that_are_not_json_shaped_are_stored_as_the_json_they_are_written_as() -> None:
    item = Item(query="x", trajectory=[ToolCall(name="f", arguments={"ids": (1, 2)})])
    stored = item_text(item)
    assert (stored.trajectory or [])[0]["arguments"] == {"ids": [1, 2]}
    back = load_result(dump_result(result_with(stored)))
    assert back.item == stored


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=20), json_values, json_values, st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_any_trajectory_round_trips_through_a_results_line(calls: list[Any]) -> None:
    steps = [
        ToolCall(
            name=name,
            arguments=arguments,
            **({"error": "failed"} if failed else {"result": result}),
        )
        for name, arguments, result, failed in calls
    ]
    stored = item_text(Item(query="done", trajectory=steps))
    assert load_result(dump_result(result_with(stored))).item == stored


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6000), min_size=1, max_size=40))
def test_stored_texts_never_exceed_the_caps(sizes: list[int]) -> None:
    steps = [ToolCall(name="t", result="z" * n) for n in sizes]
    stored = item_text(Item(query="q", trajectory=steps))
    kept = stored.trajectory or []
    results = [s.get("result", "") for s in kept]
    longest = max((len(unmarked(r)) for r in results), default=0)
    assert longest <= ITEM_TEXT_CAP
    total = len("q") + sum(len(unmarked(r)) + len("t") for r in results)
    assert total <= ITEM_TEXT_TOTAL_CAP
    assert len(kept) + (stored.left_out or {}).get("trajectory", 0) == len(sizes)
