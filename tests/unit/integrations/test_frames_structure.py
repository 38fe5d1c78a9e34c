"""Frames of structured results: the long and the per-item frames carry an item's stored
structure as text/JSON columns (only when some result stores it); ``level="unit"`` gives
one row per turn or step judged, with its text, consensus, agreement and each critic's
label."""

from __future__ import annotations

import json

import pytest

from cross_judge.batch import BatchResult, Item
from cross_judge.batch._items import item_text
from cross_judge.errors import ConfigError
from cross_judge.integrations._frames import (
    COLUMNS,
    ITEM_COLUMNS,
    UNIT_COLUMNS,
    columns_of,
    item_columns_of,
    unit_columns_of,
)

from ..report.structured import agent_result, structured_batch, unit_result


def test_the_long_frame_adds_the_stored_structure_as_text_columns() -> None:
    columns = columns_of(structured_batch())
    assert [n for n in columns if n in ("reference", "messages", "trajectory")] == [
        "reference",
        "messages",
        "trajectory",
    ]
    assert columns["reference"][:3] == ["21 degrees"] * 3
    steps = json.loads(columns["trajectory"][0])
    assert steps[1] == {
        "kind": "tool_call",
        "name": "rm",
        "arguments": {"path": "/"},
        "error": "permission denied",
    }


def test_a_plain_batch_has_no_structure_column() -> None:
    plain = unit_result("p", {}, Item(id="p", query="Felines"))
    plain.criteria = None
    columns = columns_of(BatchResult.from_results([plain]))
    assert list(columns)[: len(COLUMNS)] == list(COLUMNS)
    assert not {"reference", "messages", "trajectory", "images"} & set(columns)


def test_the_item_frame_has_one_row_per_item_with_its_structure() -> None:
    columns = item_columns_of(structured_batch())
    assert list(columns)[: len(ITEM_COLUMNS)] == list(ITEM_COLUMNS)
    assert columns["query_id"] == ["run-1", "chat-1"]
    assert columns["reference"] == ["21 degrees", None]
    turns = json.loads(columns["messages"][1])
    assert turns[2]["images"][0]["media_type"] == "image/png"
    assert columns["a.kind"] == ["PASS", "PASS"]


def test_the_unit_frame_has_one_row_per_step_with_its_text_and_votes() -> None:
    columns = unit_columns_of(BatchResult.from_results([agent_result()]))
    assert list(columns) == [*UNIT_COLUMNS, "a.kind", "b.kind", "c.kind"]
    assert columns["number"] == [1, 2, 3, 4]
    assert columns["text"][1] == 'call rm({"path":"/"}) -> ERROR: permission denied'
    assert columns["failed"] == [False, True, False, False]
    assert columns["tool"] == ["search", "rm", None, None]
    assert columns["disputed"] == [False, True, False, False]
    assert (columns["a.kind"][1], columns["c.kind"][1]) == ("FAIL", "PASS")


def test_the_unit_frame_names_a_turns_criterion_and_role() -> None:
    columns = unit_columns_of(structured_batch())
    turns = [i for i, unit in enumerate(columns["unit"]) if unit == "turn"]
    assert [columns["criterion"][i] for i in turns] == ["answers", "answers", "consistent"]
    assert [columns["role"][i] for i in turns] == ["assistant"] * 3
    assert columns["criterion_id"][turns[-1]] == "turn-4.consistent"


def test_a_unit_whose_step_is_not_stored_has_no_text() -> None:
    columns = unit_columns_of(BatchResult.from_results([agent_result(stored=False)]))
    assert columns["text"] == [None] * 4
    assert columns["failed"] == [None] * 4
    assert columns["consensus"] == ["PASS", "FAIL", "PASS", "PASS"]


def test_a_batch_without_unit_results_gives_an_empty_unit_frame() -> None:
    plain = unit_result("p", {"correct": ("PASS", "PASS", "FAIL")}, None)
    columns = unit_columns_of(BatchResult.from_results([plain]))
    assert all(values == [] for values in columns.values())


def test_the_unit_frame_in_pandas_has_declared_dtypes() -> None:
    pytest.importorskip("pandas")
    frame = structured_batch().to_pandas(level="unit")
    assert len(frame) == 7
    assert str(frame["number"].dtype) == "int64"
    assert str(frame["failed"].dtype) == "boolean"
    assert frame.loc[frame.disputed, "number"].tolist() == [2, 4]


def test_the_item_frame_in_pandas_has_one_row_per_item() -> None:
    pytest.importorskip("pandas")
    frame = structured_batch().to_pandas(level="item")
    assert frame["query_id"].tolist() == ["run-1", "chat-1"]
    assert str(frame["n_valid"].dtype) == "int64"


def test_the_unit_frame_in_polars_matches_pandas() -> None:
    pytest.importorskip("polars")
    frame = structured_batch().to_polars(level="unit")
    assert frame["number"].to_list() == [1, 2, 3, 4, 2, 4, 4]


def test_an_unknown_level_says_the_levels() -> None:
    with pytest.raises(ConfigError, match="'verdict', 'item', 'unit'"):
        structured_batch().to_pandas(level="step")


def test_stored_steps_left_out_show_in_the_item_frame() -> None:
    from cross_judge.content import ToolCall

    steps = [ToolCall(name="read", result="x" * 3000) for _ in range(30)]
    result = unit_result("long", {}, None)
    result.criteria = None
    result.item = item_text(Item(id="long", query="done", trajectory=steps))
    columns = item_columns_of(BatchResult.from_results([result]))
    assert json.loads(columns["left_out"][0])["trajectory"] > 0
