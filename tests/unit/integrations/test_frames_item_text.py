"""The long results frame carries the text each item was judged on: ``query`` and one
``context.<key>`` column per stored context key, missing where a result stores none."""

from __future__ import annotations

from cross_judge.batch import BatchResult
from cross_judge.integrations._frames import COLUMNS, columns_of
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict


def result(query_id: str, item: ItemText | None, **meta: object) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=[
            Verdict(kind="KEEP", confidence=0.9, critic_id="a"),
            Verdict(kind="REJECT", confidence=0.6, critic_id="b"),
        ],
        consensus="KEEP",
        voting="majority",
        meta=dict(meta),
        item=item,
    )


def test_query_and_context_columns_repeat_the_stored_text_on_each_row() -> None:
    batch = BatchResult.from_results(
        [
            result("one", ItemText(query="first", context={"lang": "en", "n": 2}), source="web"),
            result("old", None, source="wiki"),
            result("two", ItemText(query="second", context={"lang": "fr"})),
        ]
    )
    columns = columns_of(batch)
    assert list(columns)[len(COLUMNS) :] == ["context.lang", "context.n", "meta.source"]
    assert columns["query"] == ["first", "first", None, None, "second", "second"]
    assert columns["context.lang"] == ["en", "en", None, None, "fr", "fr"]
    assert columns["context.n"] == [2, 2, None, None, None, None]


def test_results_without_stored_text_add_no_context_column() -> None:
    columns = columns_of(BatchResult.from_results([result("old", None)]))
    assert list(columns) == list(COLUMNS)
    assert columns["query"] == [None, None]
