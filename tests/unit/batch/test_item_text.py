"""The text an item was judged on, stored with its result (``EnsembleVerdict.item``): bounded
by a documented cap with a visible marker, on by default in ``judge_many`` and ``stream``,
left out with ``item_text=False``, kept through the results file and re-voting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble
from cross_judge.batch import BatchResult, Item, ResultsFile, dump_result, load_result
from cross_judge.batch._items import (
    ITEM_TEXT_CAP,
    ITEM_TEXT_TOTAL_CAP,
    cut_marker,
    item_text,
)
from cross_judge.testing import Persona, VendorServer
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

LABELS = ("KEEP", "REJECT")


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(default_persona=Persona("default", labels=LABELS)) as srv:
        yield srv


def panel(server: VendorServer) -> Ensemble:
    return Ensemble(
        [
            Critic(name=name, model=f"m-{name}", vendor="custom", base_url=server.url)
            for name in ("a", "b")
        ]
    )


def stored(**fields: object) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id="q",
        verdicts=[Verdict(kind="KEEP", confidence=0.8, critic_id="a")],
        consensus="KEEP",
        voting="majority",
        n_valid=1,
        agreement_pct=1.0,
        **fields,  # type: ignore[arg-type]
    )


# -- what is stored ------------------------------------------------------------------------------


def test_a_short_query_and_context_are_stored_whole() -> None:
    text = item_text(Item(id="1", query="Felines", context={"topic": "animals", "rank": 3}))
    assert text == ItemText(query="Felines", context={"topic": "animals", "rank": 3}, cut=[])


def test_a_query_over_the_cap_keeps_its_start_then_a_visible_marker() -> None:
    query = "x" * (ITEM_TEXT_CAP + 1234)
    text = item_text(Item(id="1", query=query))
    assert text.query == "x" * ITEM_TEXT_CAP + cut_marker(1234)
    assert "[cut: 1,234 more characters]" in text.query
    assert text.cut == ["query"]


def test_a_context_value_over_the_cap_is_cut_and_named() -> None:
    context = {"short": "fine", "diff": "d" * (ITEM_TEXT_CAP + 1)}
    text = item_text(Item(id="1", query="q", context=context))
    assert text.context["short"] == "fine"
    assert text.context["diff"] == "d" * ITEM_TEXT_CAP + cut_marker(1)
    assert text.cut == ["context.diff"]


def test_an_item_keeps_at_most_the_total_cap_the_query_first() -> None:
    fields = {f"f{i}": str(i) * ITEM_TEXT_CAP for i in range(6)}
    text = item_text(Item(id="1", query="q" * ITEM_TEXT_CAP, context=fields))
    kept = len(text.query) + sum(
        len(str(v).split(" \u2026 [cut:")[0]) for v in text.context.values()
    )
    assert kept == ITEM_TEXT_TOTAL_CAP
    assert text.query == "q" * ITEM_TEXT_CAP  # the query comes first and is whole
    assert text.context["f2"] == "2" * ITEM_TEXT_CAP
    assert text.context["f3"] == cut_marker(ITEM_TEXT_CAP)  # past the total: the marker only
    assert text.cut == ["context.f3", "context.f4", "context.f5"]


def test_context_values_are_stored_as_the_prompt_renders_them() -> None:
    class Odd:
        def __str__(self) -> str:
            return "an odd value"

    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    context = {
        "n": 3,
        "x": 0.5,
        "flag": True,
        "none": None,
        "tags": ["a", "b"],
        "nan": float("nan"),
        "odd": Odd(),
        "broken": Broken(),
        "huge": 10**30,
    }
    text = item_text(Item(id="1", query="q", context=context))
    assert text.context == {
        "n": 3,
        "x": 0.5,
        "flag": True,
        "none": None,
        "tags": "['a', 'b']",
        "nan": "nan",
        "odd": "an odd value",
        "broken": "<Broken>",
        "huge": str(10**30),
    }
    assert load_result(dump_result(stored(item=text))).item == text


# -- the results file ----------------------------------------------------------------------------


def test_item_text_round_trips_through_the_results_file(tmp_path: Path) -> None:
    text = ItemText(query="<b>q</b>", context={"code": "def f(): ..."}, cut=["query"])
    path = tmp_path / "out.jsonl"
    with ResultsFile.open(path) as out:
        out.append(stored(item=text))
    line = json.loads(path.read_text(encoding="utf-8"))
    assert line["item"] == {
        "query": "<b>q</b>",
        "context": {"code": "def f(): ..."},
        "cut": ["query"],
    }
    (back,) = ResultsFile.read(path)
    assert back.item == text


def test_a_result_without_item_text_writes_no_item_key() -> None:
    assert "item" not in json.loads(dump_result(stored()))


def test_an_old_results_line_without_item_text_reads_back_with_none() -> None:
    old = stored().model_dump(mode="json")
    old.pop("item", None)
    assert load_result(json.dumps(old)).item is None


def test_revote_keeps_each_items_text() -> None:
    text = ItemText(query="judged text")
    batch = BatchResult.from_results([stored(item=text, pair_lengths=[3, 4])])
    revoted = batch.revote("unanimous")
    assert revoted.verdicts[0].item == text
    assert revoted.verdicts[0].pair_lengths == [3, 4]


# -- the entry points ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_judge_many_stores_each_items_text_by_default(server: VendorServer) -> None:
    items = [{"id": "one", "query": "Felines", "context": {"topic": "cats"}}, "Noble gases"]
    async with panel(server) as ensemble:
        batch = await ensemble.judge_many(items)
    first, second = batch.verdicts
    assert first.item == ItemText(query="Felines", context={"topic": "cats"})
    assert second.item == ItemText(query="Noble gases")


@pytest.mark.anyio
async def test_judge_many_with_item_text_false_stores_none(server: VendorServer) -> None:
    async with panel(server) as ensemble:
        batch = await ensemble.judge_many([{"id": "p1", "query": "private text"}], item_text=False)
    assert batch.verdicts[0].item is None
    assert "private text" not in dump_result(batch.verdicts[0])


@pytest.mark.anyio
async def test_stream_stores_each_items_text_and_item_text_false_leaves_it_out(
    server: VendorServer,
) -> None:
    async with panel(server) as ensemble:
        kept = [r async for r in ensemble.stream(["streamed"])]
        left_out = [r async for r in ensemble.stream(["streamed"], item_text=False)]
    assert kept[0].item == ItemText(query="streamed")
    assert left_out[0].item is None


def test_judge_many_sync_takes_item_text_false(server: VendorServer) -> None:
    batch = panel(server).judge_many_sync(["sync text"], item_text=False)
    assert batch.verdicts[0].item is None
