"""Votes from elsewhere as a batch: ``BatchResult.from_votes`` on dicts, tuples and data
frames, people marked as such, and ``batch.add_votes`` (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from cross_judge import ConfigError
from cross_judge.batch import BatchResult
from cross_judge.verdict import EnsembleVerdict, Verdict

ROWS: list[dict[str, Any]] = [
    {"item": "q1", "critic": "ann", "label": "PASS"},
    {"item": "q1", "critic": "bob", "label": "PASS"},
    {"item": "q1", "critic": "cat", "label": "FAIL"},
    {"item": "q2", "critic": "bob", "label": "FAIL"},
    {"item": "q2", "critic": "ann", "label": "FAIL"},
    {"item": "q3", "critic": "cat", "label": "PASS"},
]


def jury() -> BatchResult:
    """Two items judged PASS/FAIL by two LLM critics (majority)."""
    rows = [("q1", "gpt", "PASS"), ("q1", "claude", "PASS"), ("q2", "gpt", "FAIL"),
            ("q2", "claude", "PASS")]  # fmt: skip
    return BatchResult.from_votes(rows, people=False)


# -- from_votes: shapes of input ------------------------------------------------------------


def test_from_votes_on_dicts_votes_each_item_with_majority() -> None:
    batch = BatchResult.from_votes(ROWS)
    assert [r.query_id for r in batch.verdicts] == ["q1", "q2", "q3"]
    assert [r.consensus for r in batch.verdicts] == ["PASS", "FAIL", "PASS"]
    assert batch.voting == "majority"


def test_from_votes_orders_critics_by_first_appearance() -> None:
    assert BatchResult.from_votes(ROWS).critics == ["ann", "bob", "cat"]


def test_from_votes_orders_each_items_verdicts_by_critic_order() -> None:
    batch = BatchResult.from_votes(ROWS)
    assert [v.critic_id for v in batch.verdicts[1].verdicts] == ["ann", "bob"]


def test_from_votes_on_tuples_reads_item_critic_label_and_confidence() -> None:
    batch = BatchResult.from_votes([("q1", "ann", "PASS", 0.9), ("q1", "bob", "FAIL")])
    first, second = batch.verdicts[0].verdicts
    assert (first.kind, first.confidence, first.confidence_stated) == ("PASS", 0.9, True)
    assert (second.confidence, second.confidence_stated) == (0.0, False)


def test_from_votes_reads_renamed_columns_confidence_and_reasoning() -> None:
    rows = [{"id": 7, "who": "ann", "answer": " pass ", "p": "0.75", "why": "fine"}]
    batch = BatchResult.from_votes(
        rows, item="id", critic="who", label="answer", confidence="p", reasoning="why"
    )
    verdict = batch.verdicts[0].verdicts[0]
    assert batch.verdicts[0].query_id == "7"
    assert (verdict.kind, verdict.confidence, verdict.reasoning) == ("pass", 0.75, "fine")


def test_from_votes_turns_a_number_label_into_text() -> None:
    batch = BatchResult.from_votes([("q1", "ann", 4), ("q1", "bob", 4)])
    assert batch.verdicts[0].consensus == "4"


def test_from_votes_on_a_pandas_frame_equals_from_votes_on_its_rows() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(ROWS)
    assert BatchResult.from_votes(frame).verdicts == BatchResult.from_votes(ROWS).verdicts


def test_from_votes_on_a_pandas_frame_reads_a_missing_confidence_as_none() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(
        [
            {"item": "q", "critic": "a", "label": "X", "p": 0.5},
            {"item": "q", "critic": "b", "label": "X", "p": None},
        ]
    )
    a, b = BatchResult.from_votes(frame, confidence="p").verdicts[0].verdicts
    assert (a.confidence, a.confidence_stated, b.confidence_stated) == (0.5, True, False)


def test_from_votes_on_a_duck_typed_polars_frame_reads_its_dicts() -> None:
    class Frame:
        def to_dicts(self) -> list[dict[str, Any]]:
            return ROWS

    assert BatchResult.from_votes(Frame()).verdicts == BatchResult.from_votes(ROWS).verdicts


def test_from_votes_of_nothing_is_an_empty_batch() -> None:
    batch = BatchResult.from_votes([])
    assert (len(batch), batch.critics) == (0, [])


# -- from_votes: voting and statistics ------------------------------------------------------


def test_from_votes_uses_the_voting_strategy_and_its_arguments() -> None:
    rows = [("q", "a", "PASS"), ("q", "b", "FAIL")]
    batch = BatchResult.from_votes(rows, voting="majority", voting_kwargs={"priority": ["FAIL"]})
    assert batch.verdicts[0].consensus == "FAIL"
    assert BatchResult.from_votes(rows, voting="unanimous").verdicts[0].fallback


def test_from_votes_batch_gives_agreement_statistics() -> None:
    batch = BatchResult.from_votes(ROWS)
    assert batch.reliability_alpha() is not None
    assert batch.critic_stats()["cat"].agreement == 0.5


def test_from_votes_with_dawid_skene_voting_equals_revote_dawid_skene() -> None:
    batch = BatchResult.from_votes(ROWS)
    learned = BatchResult.from_votes(ROWS, voting="dawid_skene")
    assert learned.voting == "dawid_skene"
    revoted = batch.revote("dawid_skene")
    assert [r.consensus for r in learned.verdicts] == [r.consensus for r in revoted.verdicts]
    assert all(r.score is not None for r in revoted.verdicts)


def test_from_votes_batch_measures_critics_against_gold() -> None:
    report = BatchResult.from_votes(ROWS).against({"q1": "PASS", "q2": "FAIL", "q3": "FAIL"})
    assert report["cat"].accuracy == 0.0
    assert report["ann"].accuracy == 1.0


# -- people ---------------------------------------------------------------------------------


def test_from_votes_marks_every_voter_a_person_by_default() -> None:
    batch = BatchResult.from_votes(ROWS)
    assert batch.human_critics == ["ann", "bob", "cat"]
    verdict = batch.verdicts[0].verdicts[0]
    assert (verdict.vendor, verdict.model) == ("human", None)


def test_from_votes_marks_only_the_named_people() -> None:
    batch = BatchResult.from_votes(ROWS, people=["bob"])
    assert batch.human_critics == ["bob"]
    assert batch.verdicts[0].verdicts[0].vendor is None


def test_from_votes_without_people_marks_no_one() -> None:
    assert BatchResult.from_votes(ROWS, people=False).human_critics == []


def test_from_votes_refuses_people_who_cast_no_vote() -> None:
    with pytest.raises(ConfigError, match="'dan'"):
        BatchResult.from_votes(ROWS, people=["bob", "dan"])


def test_human_critics_of_an_llm_batch_is_empty() -> None:
    result = EnsembleVerdict(
        query_id="q", verdicts=[Verdict(kind="X", critic_id="a", vendor="openai")],
        consensus="X", voting="majority",
    )  # fmt: skip
    assert BatchResult.from_results([result]).human_critics == []


# -- bad rows -------------------------------------------------------------------------------


def test_from_votes_refuses_an_empty_label_naming_the_row() -> None:
    with pytest.raises(ConfigError, match=r"rows\[1\].*label"):
        BatchResult.from_votes([("q", "a", "X"), ("q", "b", "  ")])


def test_from_votes_refuses_a_missing_label_naming_the_row() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\].*label"):
        BatchResult.from_votes([{"item": "q", "critic": "a", "label": None}])


def test_from_votes_refuses_a_row_without_a_column_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\].*'critic'"):
        BatchResult.from_votes([{"item": "q", "label": "X"}])


def test_from_votes_refuses_a_tuple_of_the_wrong_length() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\]"):
        BatchResult.from_votes([("q", "a")])


def test_from_votes_refuses_a_confidence_outside_0_1() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\].*confidence"):
        BatchResult.from_votes([("q", "a", "X", 85)])


def test_from_votes_refuses_a_reserved_label() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\].*'ERROR'"):
        BatchResult.from_votes([("q", "a", "ERROR")])


def test_from_votes_refuses_a_boolean_label_naming_the_row() -> None:
    with pytest.raises(ConfigError, match=r"rows\[1\]: the label is a boolean \(True\), not text"):
        BatchResult.from_votes([("q", "a", "X"), ("q", "b", True)])


def test_from_votes_refuses_a_mapping_as_the_item_naming_the_row() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\]: the item is an object"):
        BatchResult.from_votes([{"item": {"a": 1}, "critic": "ann", "label": "X"}])


def test_from_votes_refuses_a_nan_confidence_given_as_text() -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\]: confidence 'NaN' is not a number"):
        BatchResult.from_votes([("q", "a", "X", "NaN")])


def test_from_votes_reads_a_float_nan_confidence_as_missing() -> None:
    verdict = BatchResult.from_votes([("q", "a", "X", float("nan"))]).verdicts[0].verdicts[0]
    assert (verdict.confidence, verdict.confidence_stated) == (0.0, False)


@pytest.mark.parametrize("label", ["error", "Skipped", " parse-fail ", "abstain"])
def test_from_votes_refuses_a_reserved_label_in_any_case_or_spacing(label: str) -> None:
    with pytest.raises(ConfigError, match=r"rows\[0\]: the label .* reads as '[A-Z_]+', which is"):
        BatchResult.from_votes([("q", "a", label)])


def test_from_votes_refuses_two_labels_from_one_voter_on_one_item_naming_both_rows() -> None:
    with pytest.raises(ConfigError, match=r"rows\[2\].*rows\[0\]"):
        BatchResult.from_votes([("q", "a", "X"), ("q", "b", "X"), ("q", "a", "Y")])


def test_from_votes_keeps_one_vote_when_a_voter_repeats_the_same_label() -> None:
    batch = BatchResult.from_votes([("q", "a", "X"), ("q", "a", "X"), ("q", "b", "Y")])
    assert [v.critic_id for v in batch.verdicts[0].verdicts] == ["a", "b"]


# -- add_votes ------------------------------------------------------------------------------


def test_add_votes_appends_people_as_critics_and_revotes() -> None:
    both = jury().add_votes([("q2", "ann", "FAIL"), ("q2", "bob", "FAIL")])
    assert both.critics == ["gpt", "claude", "ann", "bob"]
    assert both.human_critics == ["ann", "bob"]
    assert [v.critic_id for v in both.verdicts[1].verdicts] == ["gpt", "claude", "ann", "bob"]
    assert both.verdicts[1].consensus == "FAIL"


def test_add_votes_leaves_the_jury_batch_unchanged() -> None:
    batch = jury()
    batch.add_votes([("q1", "ann", "FAIL")])
    assert batch.critics == ["gpt", "claude"]
    assert len(batch.verdicts[0].verdicts) == 2


def test_add_votes_without_revote_keeps_the_jurys_consensus() -> None:
    batch = jury()
    people = [("q1", "ann", "FAIL"), ("q1", "bob", "FAIL"), ("q1", "cy", "FAIL")]
    kept = batch.add_votes(people, revote=False)
    assert kept.verdicts[0].consensus == "PASS"
    assert kept.critic_stats()["ann"].agreement == 0.0
    assert batch.add_votes(people).verdicts[0].consensus == "FAIL"


def test_add_votes_folds_a_label_to_the_jurys_case() -> None:
    both = jury().add_votes([("q1", "ann", "pass")])
    assert both.verdicts[0].verdicts[-1].kind == "PASS"


def test_add_votes_refuses_votes_on_items_not_in_the_batch() -> None:
    with pytest.raises(ConfigError, match="'q9'"):
        jury().add_votes([("q1", "ann", "PASS"), ("q9", "ann", "PASS")])


def test_add_votes_refuses_a_voter_who_is_already_a_critic() -> None:
    with pytest.raises(ConfigError, match="'gpt'"):
        jury().add_votes([("q1", "gpt", "PASS")])
