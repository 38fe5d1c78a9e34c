"""Items, BatchResult statistics and export, and the resumable results file (no network)."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any, Literal

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import ConfigError, Critic, Ensemble
from cross_judge.batch import (
    BatchResult,
    Item,
    ItemError,
    ResultsFile,
    dump_result,
    is_fallback,
    load_result,
)
from cross_judge.errors import ErrorKind
from cross_judge.verdict import EnsembleVerdict, Usage, Verdict

CRITICS = ["a", "b", "c"]


def vote(critic: str, kind: str | None, **extra: Any) -> Verdict:
    """A valid verdict, or an ERROR verdict for ``None``."""
    if kind is None:
        return Verdict(
            kind="ERROR", critic_id=critic, error="server: HTTP 503", error_kind=ErrorKind.SERVER
        )
    return Verdict(kind=kind, critic_id=critic, confidence=0.8, **extra)


def batch_of(rows: list[list[str | None]], **kwargs: Any) -> BatchResult:
    """One item per row, one label per critic (None = a failed call)."""
    panel = Ensemble([Critic(name=n, model="m", api_key="k") for n in CRITICS], **kwargs)
    results = [
        panel.aggregate_verdicts(
            [vote(c, k) for c, k in zip(CRITICS, row, strict=True)], query_id=f"item-{i}"
        )
        for i, row in enumerate(rows)
    ]
    return BatchResult(verdicts=results, critics=CRITICS, voting="majority", elapsed_s=2.0)


ROWS: list[list[str | None]] = [
    ["KEEP", "KEEP", "KEEP"],
    ["KEEP", "REJECT", "KEEP"],
    ["REJECT", "REJECT", None],
    ["SPLIT", "KEEP", "MERGE"],
]

# -- Item ----------------------------------------------------------------------------------


def test_a_string_item_is_its_own_query_and_id() -> None:
    item = Item.from_value("Felines")
    assert (item.id, item.query, item.context, item.meta) == ("Felines", "Felines", {}, {})


def test_a_long_string_item_gets_a_hashed_id() -> None:
    text = "x" * 100
    assert Item.from_value(text).id.startswith("x" * 64 + "#")


def test_a_mapping_item_keeps_id_context_meta_and_extra_keys() -> None:
    item = Item.from_value(
        {"id": 12, "query": "q", "context": {"rubric": "r"}, "meta": {"src": 1}, "gold": "KEEP"}
    )
    assert (item.id, item.context, item.meta) == ("12", {"rubric": "r"}, {"src": 1, "gold": "KEEP"})


def test_explicit_meta_wins_over_an_extra_key_of_the_same_name() -> None:
    assert Item.from_value({"query": "q", "meta": {"gold": "A"}, "gold": "B"}).meta == {"gold": "A"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"id": "x"}, "'query' must be the text to judge, got nothing"),
        ({"query": 3}, "'query' must be the text to judge, got int"),
        ({"query": "  "}, "'query' is empty"),
        ({"query": "q", "id": True}, "'id' must be a non-empty string or an integer"),
        ({"query": "q", "id": ""}, "'id' must be a non-empty string or an integer"),
        ({"query": "q", "context": ["x"]}, "'context' must be a mapping, got list"),
        ({"query": "q", "meta": "m"}, "'meta' must be a mapping, got str"),
        (42, "expected a string, a mapping with 'query' or an Item, got int"),
    ],
)
def test_a_bad_item_is_an_item_error_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(ItemError, match=rf"^item 5: {message}"):
        Item.from_value(value, position=5)


def test_an_item_error_is_a_config_error() -> None:
    assert issubclass(ItemError, ConfigError)


# -- statistics -----------------------------------------------------------------------------


def test_the_labels_matrix_has_one_row_per_critic_and_none_for_failed_calls() -> None:
    assert batch_of(ROWS).labels_matrix() == [
        ["KEEP", "KEEP", "REJECT", "SPLIT"],
        ["KEEP", "REJECT", "REJECT", "KEEP"],
        ["KEEP", "KEEP", None, "MERGE"],
    ]


def krippendorff_oracle(rows: list[list[str | None]], level: str = "nominal") -> float:
    codes = {label: i for i, label in enumerate(sorted({x for r in rows for x in r if x}))}
    matrix = np.array(
        [[np.nan if r[c] is None else codes[r[c]] for r in rows] for c in range(len(CRITICS))],
        dtype=float,
    )
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def test_reliability_alpha_matches_the_krippendorff_package() -> None:
    assert batch_of(ROWS).reliability_alpha() == pytest.approx(krippendorff_oracle(ROWS))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["KEEP", "REJECT", "SPLIT", None]), min_size=3, max_size=3),
        min_size=2,
        max_size=30,
    )
)
def test_reliability_alpha_matches_the_krippendorff_package_on_random_batches(
    rows: list[list[str | None]],
) -> None:
    batch = batch_of(rows)
    ours = batch.reliability_alpha()
    pairable = [r for r in rows if sum(x is not None for x in r) >= 2]
    values = {x for r in pairable for x in r if x is not None}
    if ours is None:
        assert not pairable or len(values) < 2
    else:
        assert ours == pytest.approx(krippendorff_oracle(rows), abs=1e-9)


def test_numeric_levels_use_scores_or_numeric_labels() -> None:
    rows: list[list[str | None]] = [["1", "2", "1"], ["4", "5", "5"], ["3", "3", "2"]]
    batch = batch_of(rows)
    assert batch.reliability_alpha("interval") == pytest.approx(
        krippendorff_oracle(rows, "interval")
    )


def test_a_numeric_level_over_text_labels_is_a_config_error_with_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"needs numbers.*values=\[\.\.\.\]"):
        batch_of(ROWS).reliability_alpha("interval")


def test_ordinal_text_labels_take_their_order_from_values() -> None:
    rows: list[list[str | None]] = [["LOW", "MID", "LOW"], ["HIGH", "HIGH", "MID"]]
    alpha = batch_of(rows).reliability_alpha("ordinal", values=["LOW", "MID", "HIGH"])
    assert alpha is not None and -1 <= alpha <= 1


def test_alpha_is_none_when_there_is_no_variation() -> None:
    assert batch_of([["KEEP"] * 3, ["KEEP"] * 3]).reliability_alpha() is None


def test_fleiss_kappa_uses_items_every_critic_judged() -> None:
    complete = batch_of(ROWS[:2] + ROWS[3:])
    assert batch_of(ROWS).fleiss_kappa() == pytest.approx(complete.fleiss_kappa())


def test_pairwise_agreement_is_over_items_both_critics_judged() -> None:
    pairs = batch_of(ROWS).pairwise_agreement()
    assert pairs["a", "b"] == pytest.approx(2 / 4)
    assert pairs["a", "c"] == pairs["c", "a"] == pytest.approx(2 / 3)


def test_critic_stats_count_errors_parse_failures_and_agreement() -> None:
    batch = batch_of(ROWS)
    parse_fail = Verdict(
        kind="PARSE_FAIL", critic_id="a", error="parse_fail: x", error_kind="parse"
    )
    batch.verdicts[3].verdicts[0] = parse_fail
    stats = batch.critic_stats()
    assert (stats["c"].errors, stats["c"].error_rate) == (1, 0.25)
    assert (stats["a"].parse_failures, stats["a"].parse_fail_rate) == (1, 0.25)
    # b: KEEP/KEEP agrees, REJECT/KEEP not, REJECT/REJECT agrees, KEEP/SPLIT (a tie won by
    # the first label seen) not.
    assert stats["b"].agreement == pytest.approx(2 / 4)


def test_failed_items_are_those_with_an_error_verdict() -> None:
    assert batch_of(ROWS).failed_items == ["item-2"]


def test_consensus_counts_most_common_first() -> None:
    assert batch_of(ROWS).consensus_counts() == {"KEEP": 2, "REJECT": 1, "SPLIT": 1}


def flagged_fallback(item_id: str) -> EnsembleVerdict:
    """A result whose consensus UNCLEAR is the strategy's fallback, not a vote."""
    return EnsembleVerdict(
        query_id=item_id,
        verdicts=[vote("a", "KEEP"), vote("b", "REJECT")],
        consensus="UNCLEAR",
        voting="unanimous",
        fallback=True,
    )


def test_a_fallback_consensus_is_not_counted_as_its_label() -> None:
    voted = EnsembleVerdict(
        query_id="voted",
        verdicts=[vote("a", "UNCLEAR"), vote("b", "UNCLEAR")],
        consensus="UNCLEAR",
        voting="unanimous",
    )
    batch = BatchResult(
        verdicts=[voted, flagged_fallback("f1"), flagged_fallback("f2")],
        critics=["a", "b"],
        voting="unanimous",
    )
    assert batch.consensus_counts() == {"UNCLEAR": 1}
    assert batch.no_consensus_items == ["f1", "f2"]
    assert [is_fallback(r) for r in batch.verdicts] == [False, True, True]


def test_a_fallback_consensus_has_its_own_row_in_the_summary() -> None:
    batch = BatchResult(
        verdicts=[flagged_fallback("f1"), result("k")], critics=["a", "b"], voting="unanimous"
    )
    text = str(batch)
    assert "no consensus (fallback UNCLEAR)" in text
    assert not re.search(r"^\s*UNCLEAR\s", text, re.MULTILINE)


def test_critic_stats_name_each_error_kind_with_its_most_common_message() -> None:
    not_found = "bad_request: HTTP 404: The model `m` does not exist"
    verdicts = [
        Verdict(kind="ERROR", critic_id="a", error=not_found, error_kind="bad_request"),
        Verdict(kind="ERROR", critic_id="a", error=not_found, error_kind="bad_request"),
        Verdict(kind="ERROR", critic_id="a", error="timeout: no answer", error_kind="timeout"),
    ]
    batch = BatchResult(
        verdicts=[
            EnsembleVerdict(query_id=str(i), verdicts=[v], consensus="UNCLEAR", voting="majority")
            for i, v in enumerate(verdicts)
        ],
        critics=["a"],
        voting="majority",
    )
    stats = batch.critic_stats()["a"]
    assert stats.error_kinds == {"bad_request": 2, "timeout": 1}
    assert stats.error_messages == {"bad_request": not_found, "timeout": "timeout: no answer"}


def test_the_summary_says_why_calls_failed() -> None:
    text = str(batch_of(ROWS))
    assert "failed calls" in text
    assert re.search(r"c\s+1 of 4\s+server\s+1\s+HTTP 503", text)


def test_usage_adds_up_and_cost_is_none_unless_every_cost_is_known() -> None:
    batch = batch_of(ROWS[:2])
    for result in batch.verdicts:
        result.usage = Usage(prompt_tokens=10, completion_tokens=5)
    assert batch.usage == Usage(prompt_tokens=20, completion_tokens=10, total_tokens=30)
    assert batch.cost_usd is None
    for result in batch.verdicts:
        result.cost_usd = 0.5
    assert batch.cost_usd == 1.0


def test_revote_changes_the_consensus_and_keeps_the_verdicts() -> None:
    batch = batch_of(ROWS)
    again = batch.revote("unanimous")
    assert [r.consensus for r in again.verdicts] == ["KEEP", "UNCLEAR", "REJECT", "UNCLEAR"]
    assert again.voting == "unanimous"
    assert [r.verdicts for r in again.verdicts] == [r.verdicts for r in batch.verdicts]
    assert [r.consensus for r in batch.verdicts] == ["KEEP", "KEEP", "REJECT", "SPLIT"]


def test_revote_with_an_unknown_strategy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="Unknown voting strategy"):
        batch_of(ROWS).revote("plurality")


# -- export -------------------------------------------------------------------------------------


def test_to_jsonl_and_from_jsonl_round_trip(tmp_path: Path) -> None:
    batch = batch_of(ROWS)
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    again = BatchResult.from_jsonl(path)
    assert again.verdicts == batch.verdicts and again.critics == CRITICS
    assert len(path.read_text().splitlines()) == 4


def test_slim_reading_drops_raw_text_and_reasoning(tmp_path: Path) -> None:
    batch = batch_of(ROWS)
    batch.verdicts[0].verdicts[0] = vote("a", "KEEP", raw_response="{...}", reasoning="long")
    batch.to_jsonl(tmp_path / "out.jsonl")
    slim = BatchResult.from_jsonl(tmp_path / "out.jsonl", slim=True)
    first = slim.verdicts[0].verdicts[0]
    assert (first.raw_response, first.reasoning, first.kind) == (None, "", "KEEP")


def test_to_records_is_flat_with_a_column_per_critic() -> None:
    batch = batch_of(ROWS)
    batch.verdicts[0].meta = {"gold": "KEEP"}
    record = batch.to_records()[2]
    assert record["id"] == "item-2" and record["consensus"] == "REJECT"
    assert (record["c.kind"], record["c.confidence"], record["c.error_kind"]) == (
        "ERROR",
        None,
        "server",
    )
    assert batch.to_records()[0]["meta.gold"] == "KEEP"


def test_printing_a_batch_shows_the_summary_and_repr_stays_short() -> None:
    batch = batch_of(ROWS)
    text = str(batch)
    assert "Krippendorff's alpha (nominal)" in text and "items to retry" in text
    assert "REJECT" in text and "25.0%" in text
    assert repr(batch) == (
        "BatchResult(4 items, critics=['a', 'b', 'c'], voting='majority', elapsed_s=2.0)"
    )


# -- ResultsFile --------------------------------------------------------------------------------


def result(item_id: str) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id=item_id, verdicts=[vote("a", "KEEP")], consensus="KEEP", voting="majority"
    )


def test_results_are_appended_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with ResultsFile.open(path) as out:
        out.append(result("1"))
        out.append(result("2"))
        # Flushed at once: readable before the file is closed.
        assert [json.loads(x)["query_id"] for x in path.read_text().splitlines()] == ["1", "2"]


def test_a_file_with_results_is_not_touched_without_resume(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(result("1").model_dump_json() + "\n")
    with pytest.raises(ConfigError, match="already holds results; pass --resume"):
        ResultsFile.open(path)
    assert path.read_text().count("\n") == 1


def test_resume_reads_the_ids_already_done(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("".join(result(i).model_dump_json() + "\n" for i in "123"))
    with ResultsFile.open(path, resume=True) as out:
        assert out.done_ids == {"1", "2", "3"} and not out.repaired


def test_resume_cuts_off_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    whole = result("1").model_dump_json() + "\n"
    path.write_text(whole + result("2").model_dump_json()[:40])
    with ResultsFile.open(path, resume=True) as out:
        assert out.repaired and out.done_ids == {"1"}
        out.append(result("2"))
    assert [json.loads(x)["query_id"] for x in path.read_text().splitlines()] == ["1", "2"]


def test_a_torn_file_of_one_partial_line_is_emptied(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text('{"query_id": "1", "verd')
    with ResultsFile.open(path, resume=True) as out:
        assert out.repaired and out.done_ids == set()
    assert path.read_text() == ""


def test_a_line_that_is_not_a_result_is_reported_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(result("1").model_dump_json() + "\n" + '{"hello": 1}\n')
    with pytest.raises(ConfigError, match=r"out\.jsonl line 2: not a result record"):
        list(ResultsFile.read(path))


def test_reading_a_missing_results_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such results file"):
        BatchResult.from_jsonl(tmp_path / "nope.jsonl")


def test_a_random_torn_tail_always_leaves_whole_lines(tmp_path: Path) -> None:
    rng = random.Random(3)
    lines = [result(str(i)).model_dump_json() + "\n" for i in range(20)]
    blob = "".join(lines)
    for _ in range(30):
        cut = rng.randrange(1, len(blob))
        path = tmp_path / "out.jsonl"
        path.write_text(blob[:cut])
        with ResultsFile.open(path, resume=True) as out:
            kept = path.read_text()
            assert kept == blob[: len(kept)] and (kept == "" or kept.endswith("\n"))
            assert len(out.done_ids) == kept.count("\n")


def test_retry_failed_removes_results_with_a_failed_call_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    failed = EnsembleVerdict(
        query_id="2", verdicts=[vote("a", None)], consensus="UNCLEAR", voting="majority"
    )
    path.write_text("".join(r.model_dump_json() + "\n" for r in (result("1"), failed, result("3"))))
    with ResultsFile.open(path, retry_failed=True) as out:
        assert out.dropped_ids == ["2"] and out.done_ids == {"1", "3"}
    assert [json.loads(x)["query_id"] for x in path.read_text().splitlines()] == ["1", "3"]
    assert not (tmp_path / "out.jsonl.tmp").exists()


def test_a_lone_surrogate_id_is_written_and_read_back_losslessly(tmp_path: Path) -> None:
    odd = EnsembleVerdict(
        query_id="\udc80",
        verdicts=[vote("a", "KEEP")],
        consensus="KEEP",
        voting="majority",
        meta={"note": "x\ud800y"},
    )
    line = dump_result(odd)
    assert "\\udc80" in line and line.isascii()
    back = load_result(line)
    assert back == odd
    path = tmp_path / "out.jsonl"
    with ResultsFile.open(path) as out:
        out.append(odd)
        out.append(result("plain"))
    with ResultsFile.open(path, resume=True) as out:
        assert out.done_ids == {"\udc80", "plain"}
    assert [r.query_id for r in BatchResult.from_jsonl(path).verdicts] == ["\udc80", "plain"]


def test_an_ordinary_result_is_written_as_pydantic_writes_it() -> None:
    plain = result("1")
    assert dump_result(plain) == plain.model_dump_json()


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"query": "bad \ud800 text"}, "'query'"),
        ({"query": "ok", "context": {"rubric": ["fine", "\udfff"]}}, "'context'['rubric'][1]"),
    ],
)
def test_text_to_send_with_a_lone_surrogate_is_an_item_error(value: object, where: str) -> None:
    with pytest.raises(ItemError, match=re.escape(where) + " holds a lone surrogate"):
        Item.from_value(value)


def test_an_id_or_meta_with_a_lone_surrogate_is_kept() -> None:
    item = Item.from_value({"id": "\udc80", "query": "ok", "meta": {"m": "\ud800"}})
    assert (item.id, item.meta) == ("\udc80", {"m": "\ud800"})


def test_resume_knows_what_the_results_already_cost(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    paid = [result(str(i)).model_copy(update={"cost_usd": 0.25}) for i in range(3)]
    failed = EnsembleVerdict(
        query_id="f",
        verdicts=[vote("a", None)],
        consensus="UNCLEAR",
        voting="majority",
        cost_usd=0.5,
    )
    path.write_text("".join(dump_result(r) + "\n" for r in (*paid, failed, result("free"))))
    with ResultsFile.open(path, resume=True) as out:
        assert out.spent_usd == pytest.approx(1.25) and out.unpriced == 1
    with ResultsFile.open(path, retry_failed=True) as out:  # dropped, but paid for
        assert out.dropped_ids == ["f"] and out.spent_usd == pytest.approx(1.25)


# -- the summary of a cascade's results ------------------------------------------------------------


def cascade_batch(final: Literal["decide", "abstain"] = "decide") -> BatchResult:
    """Four items through a cascade (tier 0: a, b, c; tier 1: d), replayed from stored
    every-tier results: escalate on any disagreement; with ``final="abstain"`` tier 1 never
    stands, so what reaches it is abstained."""
    from cross_judge import Cascade, Escalation

    cheap = Ensemble([Critic(name=n, model="m", api_key="k") for n in CRITICS])
    strong = Ensemble([Critic(name="d", model="m", api_key="k")])
    rows = [("KEEP", "KEEP", "KEEP", "KEEP"), ("KEEP", "REJECT", "KEEP", "REJECT")]
    rows += [("SPLIT", "KEEP", "MERGE", "MERGE"), ("REJECT",) * 4]
    stored = []
    for index, row in enumerate(rows):
        item = f"item-{index}"
        votes = [vote(c, k) for c, k in zip(CRITICS, row[:3], strict=True)]
        first = cheap.aggregate_verdicts(votes, query_id=item)
        second = strong.aggregate_verdicts([vote("d", row[3])], query_id=item)
        stored.append(first.model_copy(update={"tiers": [first, second], "tier": 0}))
    thresholds = (1.0, math.inf) if final == "abstain" else 1.0
    cascade = Cascade([cheap, strong], escalate=Escalation(agreement_below=thresholds), final=final)
    return cascade.replay(stored)


def test_the_summary_of_a_cascades_results_has_a_tiers_table() -> None:
    text = str(cascade_batch())
    assert re.search(r"^\s*tier\s+critics\s+asked\s+decided\s+share decided\s+cost\s*$", text, re.M)
    assert re.search(r"^\s*0\s+a, b, c\s+4\s+2\s+50\.0%\s+n/a\s*$", text, re.MULTILINE)
    assert re.search(r"^\s*1\s+d\s+2\s+2\s+50\.0%\s+n/a\s*$", text, re.MULTILINE)
    assert re.search(r"^\s*voting\s+cascade\(majority > majority\)\s*$", text, re.MULTILINE)
    assert "abstained" not in text


def test_abstained_items_are_counted_for_a_human_in_the_summary() -> None:
    text = str(cascade_batch(final="abstain"))
    assert re.search(r"^\s*abstained \(for a human\)\s+2\s*$", text, re.MULTILINE)
    assert re.search(r"^\s*abstained \(for a human\)\s+2\s+50\.0%\s*$", text, re.MULTILINE)
    assert not re.search(r"^\s*ABSTAIN\s", text, re.MULTILINE)
    assert re.search(r"^\s*1\s+d\s+2\s+0\s+2\s+0\.0%\s+n/a\s*$", text, re.MULTILINE)


def test_the_summary_of_an_ensembles_results_has_no_tiers_table() -> None:
    text = str(batch_of(ROWS))
    assert not re.search(r"^tiers", text, re.MULTILINE) and "abstained" not in text
