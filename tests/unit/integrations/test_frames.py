"""``BatchResult.to_pandas()`` / ``to_polars()``: the long frame, one row per critic verdict
of each item (no network). Tests of a frame library skip when it is not installed (the
default test session has neither; ``nox -s frames`` has both)."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

from cross_judge import ConfigError, Critic, Ensemble
from cross_judge.batch import BatchResult
from cross_judge.errors import ErrorKind
from cross_judge.integrations._frames import COLUMNS, columns_of
from cross_judge.verdict import EnsembleVerdict, Usage, Verdict

CRITICS = ["a", "b", "c"]
PANEL = Ensemble([Critic(name=n, model="m", api_key="k") for n in CRITICS])


def vote(critic: str, kind: str | None) -> Verdict:
    """A valid, priced verdict, or a failed call for ``None``."""
    if kind is None:
        return Verdict(
            kind="ERROR", critic_id=critic, error="server: HTTP 503", error_kind=ErrorKind.SERVER
        )
    return Verdict(
        kind=kind,
        critic_id=critic,
        confidence=0.75,
        reasoning=f"{critic} says {kind}",
        cost_usd=0.002,
        elapsed_s=1.25,
        attempts=1,
        model="m",
        usage=Usage(prompt_tokens=10, completion_tokens=3),
    )


ROWS: list[list[str | None]] = [
    ["KEEP", "KEEP", "KEEP"],
    ["KEEP", "REJECT", "KEEP"],
    ["REJECT", "REJECT", None],
    [None, None, None],
]


def batch() -> BatchResult:
    results = [
        PANEL.aggregate_verdicts(
            [vote(c, k) for c, k in zip(CRITICS, row, strict=True)],
            query_id=f"item-{i}",
            meta={"source": "wiki"} if i % 2 else {"source": "web", "rank": i},
        )
        for i, row in enumerate(ROWS)
    ]
    return BatchResult(verdicts=results, critics=CRITICS, voting="majority")


def cascade_batch() -> BatchResult:
    cheap = PANEL.aggregate_verdicts([vote("a", "KEEP"), vote("b", "REJECT")], query_id="q")
    strong = PANEL.aggregate_verdicts([vote("c", "REJECT")], query_id="q")
    escalated = strong.model_copy(
        update={
            "verdicts": [*cheap.verdicts, *strong.verdicts],
            "tier": 1,
            "tiers": [cheap, strong],
        }
    )
    sure = PANEL.aggregate_verdicts([vote("a", "KEEP"), vote("b", "KEEP")], query_id="r")
    decided = sure.model_copy(update={"tier": 0, "tiers": [sure]})
    return BatchResult.from_results([escalated, decided])


def expected_rows(b: BatchResult) -> list[tuple[str, str, Verdict, EnsembleVerdict]]:
    return [(r.query_id, v.critic_id, v, r) for r in b.verdicts for v in r.verdicts]


# -- the columns (no frame library needed) -------------------------------------------------


def test_a_panels_batch_has_one_row_per_item_and_critic() -> None:
    columns = columns_of(batch())
    assert list(columns)[: len(COLUMNS)] == list(COLUMNS)
    assert len(columns["query_id"]) == len(ROWS) * len(CRITICS)
    assert columns["query_id"][:4] == ["item-0", "item-0", "item-0", "item-1"]
    assert columns["critic"][:4] == ["a", "b", "c", "a"]
    assert columns["position"][:4] == [0, 0, 0, 1]


def test_each_row_holds_its_verdict_and_its_items_consensus() -> None:
    b = batch()
    columns = columns_of(b)
    for i, (query_id, critic, v, r) in enumerate(expected_rows(b)):
        assert (columns["query_id"][i], columns["critic"][i]) == (query_id, critic)
        assert columns["kind"][i] == v.kind
        assert columns["valid"][i] is (v.error is None)
        assert columns["confidence"][i] == (v.confidence if v.error is None else None)
        assert columns["error_kind"][i] == (v.error_kind.value if v.error_kind else None)
        assert columns["cost_usd"][i] == v.cost_usd
        assert columns["consensus"][i] == r.consensus
        assert columns["agreement_pct"][i] == r.agreement_pct
        assert columns["fallback"][i] is r.fallback


def test_agrees_says_whether_a_valid_verdict_matches_the_consensus() -> None:
    columns = columns_of(batch())
    assert columns["agrees"][3:6] == [True, False, True]  # item-1: KEEP, REJECT, KEEP
    assert columns["agrees"][8] is None  # item-2's failed call


def test_meta_keys_become_columns_missing_where_an_item_lacks_them() -> None:
    columns = columns_of(batch())
    assert list(columns)[len(COLUMNS) :] == ["meta.source", "meta.rank"]
    assert columns["meta.source"][::3] == ["web", "wiki", "web", "wiki"]
    assert columns["meta.rank"][::3] == [0, None, 2, None]


def test_a_cascades_rows_are_the_critics_of_each_tier_asked_with_their_tier() -> None:
    columns = columns_of(cascade_batch())
    assert list(zip(columns["query_id"], columns["critic"], columns["tier"], strict=True)) == [
        ("q", "a", 0),
        ("q", "b", 0),
        ("q", "c", 1),
        ("r", "a", 0),
        ("r", "b", 0),
    ]
    assert columns["decided_tier"] == [1, 1, 1, 0, 0]


def test_a_cascade_critic_agrees_with_its_own_tiers_consensus() -> None:
    b = cascade_batch()
    tiers = b.verdicts[0].tiers
    assert tiers is not None
    tier0 = tiers[0].consensus
    columns = columns_of(b)
    assert columns["agrees"][:2] == [tier0 == "KEEP", tier0 == "REJECT"]


def test_an_empty_batch_has_the_columns_and_no_rows() -> None:
    columns = columns_of(BatchResult(verdicts=[], critics=[], voting="majority"))
    assert list(columns) == list(COLUMNS)
    assert all(values == [] for values in columns.values())


# -- missing extras ------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "module"), [("to_pandas", "pandas"), ("to_polars", "polars")])
def test_without_the_extra_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, method: str, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ConfigError, match=rf"pip install 'cross-judge\[{module}\]'"):
        getattr(batch(), method)()


# -- pandas ---------------------------------------------------------------------------------


def test_to_pandas_has_items_x_critics_rows_in_column_order() -> None:
    pytest.importorskip("pandas")
    frame = batch().to_pandas()
    assert frame.shape == (len(ROWS) * len(CRITICS), len(COLUMNS) + 2)
    assert list(frame.columns) == [*COLUMNS, "meta.source", "meta.rank"]


def test_to_pandas_dtypes_follow_the_column_types() -> None:
    pd = pytest.importorskip("pandas")
    frame = batch().to_pandas()
    dtypes = frame.dtypes.astype(str).to_dict()
    text = str(pd.Series(["x"]).dtype)
    assert dtypes["position"] == "int64" and dtypes["attempts"] == "int64"
    assert dtypes["tier"] == "Int64" and dtypes["prompt_tokens"] == "Int64"
    assert dtypes["confidence"] == "float64" and dtypes["cost_usd"] == "float64"
    assert dtypes["valid"] == "bool" and dtypes["fallback"] == "bool"
    assert dtypes["agrees"] == "boolean" and dtypes["flipped"] == "boolean"
    assert dtypes["kind"] == text and dtypes["order"] == text  # order: no value at all


def test_to_pandas_values_equal_the_batch() -> None:
    pd = pytest.importorskip("pandas")
    b = batch()
    frame = b.to_pandas()
    for i, (query_id, critic, v, r) in enumerate(expected_rows(b)):
        row = frame.iloc[i]
        assert (row["query_id"], row["critic"], row["kind"]) == (query_id, critic, v.kind)
        if v.error is None:
            assert row["confidence"] == v.confidence and row["cost_usd"] == v.cost_usd
            assert row["prompt_tokens"] == 10
        else:
            assert math.isnan(row["confidence"]) and row["error_kind"] == "server"
            assert pd.isna(row["agrees"]) and pd.isna(row["prompt_tokens"])
        assert row["consensus"] == r.consensus and row["agreement_pct"] == r.agreement_pct
    assert frame["cost_usd"].sum() == pytest.approx(0.002 * int(frame["valid"].sum()))


def test_to_pandas_answers_the_usual_questions() -> None:
    pytest.importorskip("pandas")
    b = batch()
    frame = b.to_pandas()
    agreement = frame[frame["valid"]].groupby("critic")["agrees"].mean().to_dict()
    stats = b.critic_stats()
    assert agreement == pytest.approx({name: s.agreement for name, s in stats.items()})


def test_to_pandas_of_an_empty_batch_has_the_columns_and_no_rows() -> None:
    pytest.importorskip("pandas")
    frame = BatchResult(verdicts=[], critics=[], voting="majority").to_pandas()
    assert frame.shape == (0, len(COLUMNS))


# -- polars ---------------------------------------------------------------------------------


def test_to_polars_has_the_same_rows_and_columns_as_the_plain_columns() -> None:
    pl = pytest.importorskip("polars")
    b = batch()
    frame = b.to_polars()
    assert isinstance(frame, pl.DataFrame)
    assert frame.shape == (len(ROWS) * len(CRITICS), len(COLUMNS) + 2)
    assert frame.to_dict(as_series=False) == columns_of(b)


def test_to_polars_dtypes_follow_the_column_types() -> None:
    pl = pytest.importorskip("polars")
    schema = dict(cascade_batch().to_polars().schema)
    kinds = {"int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean, "str": pl.String}
    assert schema == {name: kinds[kind.rstrip("?")] for name, kind in COLUMNS.items()}


def test_to_polars_turns_a_meta_key_of_mixed_types_into_text() -> None:
    pl = pytest.importorskip("polars")
    results: list[Any] = [
        PANEL.aggregate_verdicts([vote("a", "KEEP")], query_id=str(i), meta={"tag": tag})
        for i, tag in enumerate([1, "two", None])
    ]
    frame = BatchResult.from_results(results).to_polars()
    assert frame.schema["meta.tag"] == pl.String
    assert frame["meta.tag"].to_list() == ["1", "two", None]
