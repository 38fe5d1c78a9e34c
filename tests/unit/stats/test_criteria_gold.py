"""Gold metrics per criterion: each critic and the panel's per-criterion consensus against
gold ``{item id: {criterion id: label}}``, on small batches whose answers are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from cross_judge.errors import ConfigError
from cross_judge.stats._criteria import criteria_gold_metrics, load_criteria_gold, read_gold_file

from .criteria_batches import batch

# Three critics, four items. On "correct" a is always right, b wrong on item 1, c wrong on
# items 2 and 3; on "cites" all are right except a on item 0.
GOLD = {
    "0": {"correct": "PASS", "cites": "PASS"},
    "1": {"correct": "FAIL", "cites": "FAIL"},
    "2": {"correct": "PASS", "cites": "FAIL"},
    "3": {"correct": "FAIL", "cites": "PASS"},
}
ITEMS = [
    {
        "a": {"correct": "PASS", "cites": "FAIL"},
        "b": {"correct": "PASS", "cites": "PASS"},
        "c": {"correct": "PASS", "cites": "PASS"},
    },
    {
        "a": {"correct": "FAIL", "cites": "FAIL"},
        "b": {"correct": "PASS", "cites": "FAIL"},
        "c": {"correct": "FAIL", "cites": "FAIL"},
    },
    {
        "a": {"correct": "PASS", "cites": "FAIL"},
        "b": {"correct": "PASS", "cites": "FAIL"},
        "c": {"correct": "FAIL", "cites": "FAIL"},
    },
    {
        "a": {"correct": "FAIL", "cites": "PASS"},
        "b": {"correct": "FAIL", "cites": "PASS"},
        "c": {"correct": "PASS", "cites": None},
    },
]


def test_accuracy_of_each_critic_per_criterion() -> None:
    reports = batch(ITEMS).criteria_gold_metrics(GOLD)
    correct, cites = reports["correct"], reports["cites"]
    assert [correct[n].accuracy for n in "abc"] == [1.0, 0.75, 0.5]
    assert [cites[n].accuracy for n in "abc"] == [0.75, 1.0, 1.0]


def test_the_consensus_row_is_the_panels_vote_on_that_criterion() -> None:
    reports = batch(ITEMS).criteria_gold_metrics(GOLD)
    # Majorities on "correct": PASS, FAIL, PASS, FAIL (all right); on "cites": PASS, FAIL,
    # FAIL, PASS (a and b; c failed on item 3): all right.
    assert reports["correct"]["consensus"].accuracy == 1.0
    assert reports["cites"]["consensus"].accuracy == 1.0


def test_a_failed_answer_lowers_coverage_not_accuracy() -> None:
    row = batch(ITEMS).criteria_gold_metrics(GOLD)["cites"]["c"]
    assert (row.n_gold, row.n_answered, row.coverage, row.accuracy) == (4, 3, 0.75, 1.0)


def test_confusion_is_gold_by_answer_per_criterion() -> None:
    row = batch(ITEMS).criteria_gold_metrics(GOLD)["correct"]["c"]
    assert row.confusion == {"PASS": {"PASS": 1, "FAIL": 1}, "FAIL": {"PASS": 1, "FAIL": 1}}


def test_calibration_reads_the_answers_stated_confidence() -> None:
    row = batch(ITEMS).criteria_gold_metrics(GOLD)["correct"]["b"]
    # Every answer stated 0.8; three of four are right: Brier = (3 * 0.04 + 0.64) / 4.
    assert row.brier == pytest.approx((3 * 0.2**2 + 0.8**2) / 4)


def test_a_criterion_nobody_labelled_is_left_out() -> None:
    gold = {item: {"correct": labels["correct"]} for item, labels in GOLD.items()}
    assert list(batch(ITEMS).criteria_gold_metrics(gold)) == ["correct"]


def test_partial_gold_counts_only_labelled_items() -> None:
    reports = batch(ITEMS).criteria_gold_metrics({"1": {"correct": "FAIL"}})
    assert reports["correct"].n_gold == 1 and reports["correct"]["b"].accuracy == 0.0


def test_bootstrap_intervals_with_ci() -> None:
    row = batch(ITEMS).criteria_gold_metrics(GOLD, ci=0.9)["correct"]["b"]
    assert row.accuracy_ci is not None and row.accuracy_ci[0] <= 0.75 <= row.accuracy_ci[1]


def test_a_gold_id_that_is_no_item_is_refused() -> None:
    with pytest.raises(ConfigError, match="not among"):
        batch(ITEMS).criteria_gold_metrics({"nope": {"correct": "PASS"}})


def test_a_gold_criterion_no_result_holds_is_refused() -> None:
    with pytest.raises(ConfigError, match="'tone'"):
        batch(ITEMS).criteria_gold_metrics({"0": {"tone": "PASS"}})


def test_a_gold_label_off_the_scale_is_refused() -> None:
    with pytest.raises(ConfigError, match="'MAYBE'"):
        batch(ITEMS).criteria_gold_metrics({"0": {"correct": "MAYBE"}})


def test_gold_with_no_label_at_all_is_refused() -> None:
    with pytest.raises(ConfigError, match="no item has a gold label"):
        criteria_gold_metrics(batch(ITEMS), {"0": {"correct": None}})


def test_a_gold_file_holds_item_labels_and_criterion_labels(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(
        '{"id": "0", "label": "PASS", "criteria": {"correct": "PASS"}}\n'
        "\n"
        '{"id": "1", "criteria": {"correct": "FAIL", "cites": null}}\n'
        '{"id": "2", "label": "FAIL"}\n',
        encoding="utf-8",
    )
    items, criteria = read_gold_file(path)
    assert items == {"0": "PASS", "2": "FAIL"}
    assert criteria == {"0": {"correct": "PASS"}, "1": {"correct": "FAIL"}}
    assert load_criteria_gold(path) == criteria
    assert batch(ITEMS).criteria_gold_metrics(path)["correct"].n_gold == 2


def test_a_gold_line_with_neither_key_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "0", "criteria": {"correct": "PASS"}}\n{"id": "1"}\n', "utf-8")
    with pytest.raises(ConfigError, match="line 2"):
        read_gold_file(path)


def test_a_criterion_labelled_two_ways_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(
        '{"id": "0", "criteria": {"correct": "PASS"}}\n'
        '{"id": "0", "criteria": {"correct": "FAIL"}}\n',
        "utf-8",
    )
    with pytest.raises(ConfigError, match=r"line 2.*both"):
        read_gold_file(path)
