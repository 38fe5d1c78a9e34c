"""One reader and one set of checks for every gold or labels file (cross_judge.stats._gold_file):
``stats --gold``, ``batch.against``, ``batch.estimate``, ``estimate_accuracy`` and the
criteria's gold all refuse the same labels, and read the labelling page's ``jury_shown``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cross_judge import BatchResult, ConfigError, Ensemble, EnsembleVerdict, Verdict
from cross_judge.stats._criteria import criteria_gold_metrics, read_gold_file
from cross_judge.stats._gold import load_gold
from cross_judge.stats._gold_file import gold_labels, read_gold, vocabulary_of
from cross_judge.stats.estimates import estimate_accuracy, estimate_share

from .criteria_batches import batch as rubric_batch

PANEL = Ensemble(critics=[])


def item(query_id: str, *kinds: str) -> EnsembleVerdict:
    votes = [Verdict(kind=k, critic_id=f"c{i}", confidence=0.8) for i, k in enumerate(kinds)]
    return PANEL.aggregate_verdicts(votes, query_id=query_id)


def pass_fail(n: int = 40) -> BatchResult:
    """``n`` items the jury calls FAIL (2 to 1)."""
    results = [item(f"q{i}", "FAIL", "FAIL", "PASS") for i in range(n)]
    return BatchResult(verdicts=results, critics=["c0", "c1", "c2"], voting="majority")


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def labels_file(tmp_path: Path, label: str, n: int = 40) -> Path:
    return write(tmp_path / "labels.jsonl", [{"id": f"q{i}", "label": label} for i in range(n)])


READERS: dict[str, Callable[[Path], object]] = {
    "estimate": lambda path: pass_fail().estimate("FAIL", gold=path),
    "estimate_accuracy": lambda path: estimate_accuracy(pass_fail(), "c0", gold=path),
    "against": lambda path: pass_fail().against(path),
}

BAD = {
    "fail": r"'fail' \(did you mean 'FAIL'\?\) not in the vocabulary",
    "MAYBE": r"'MAYBE' not in the vocabulary \['FAIL', 'PASS'\]",
    " FAIL ": r"line 1: the label ' FAIL ' has spaces around it; write 'FAIL'",
    "ERROR": r"line 1: 'ERROR' marks a call that failed or was not made",
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("label", list(BAD))
def test_every_reader_refuses_the_labels_stats_gold_refuses(
    tmp_path: Path, reader: str, label: str
) -> None:
    with pytest.raises(ConfigError, match=BAD[label]):
        READERS[reader](labels_file(tmp_path, label))


def test_forty_lowercase_fail_labels_no_longer_estimate_a_share_of_zero(tmp_path: Path) -> None:
    batch = pass_fail()
    assert batch.estimate("FAIL", gold=labels_file(tmp_path, "FAIL")).value == 1.0
    with pytest.raises(ConfigError, match="did you mean 'FAIL'"):
        batch.estimate("FAIL", gold=labels_file(tmp_path, "fail"))


def test_a_mapping_of_labels_is_checked_as_a_file_is() -> None:
    with pytest.raises(ConfigError, match="did you mean 'FAIL'"):
        pass_fail().estimate("FAIL", gold={"q0": "fail"})
    with pytest.raises(ConfigError, match="'SKIPPED' marks a call"):
        pass_fail().estimate("FAIL", gold={"q0": "SKIPPED"})


def test_the_label_estimated_must_be_one_of_the_batchs_labels() -> None:
    with pytest.raises(ConfigError, match=r"'fail' \(did you mean 'FAIL'\?\)"):
        pass_fail().estimate("fail", gold={"q0": "FAIL"})


@pytest.mark.parametrize("label", ["error", " PASS", "", "Abstain"])
def test_load_gold_refuses_reserved_padded_and_empty_labels_naming_the_line(
    tmp_path: Path, label: str
) -> None:
    path = write(tmp_path / "g.jsonl", [{"id": "a", "label": "PASS"}, {"id": "b", "label": label}])
    with pytest.raises(ConfigError, match=r"g\.jsonl line 2"):
        load_gold(path)


def test_criterion_gold_is_read_with_the_same_checks(tmp_path: Path) -> None:
    path = write(tmp_path / "g.jsonl", [{"id": "0", "criteria": {"correct": "PASS "}}])
    with pytest.raises(ConfigError, match=r"line 1 criterion 'correct'.*spaces around it"):
        read_gold_file(path)
    results = rubric_batch([{"a": {"correct": "PASS"}, "b": {"correct": "PASS"}}])
    with pytest.raises(ConfigError, match="'ERROR' marks a call"):
        criteria_gold_metrics(results, {"0": {"correct": "ERROR"}})


def test_the_labelling_pages_export_is_valid_gold_and_says_what_was_seen(tmp_path: Path) -> None:
    path = write(
        tmp_path / "labels.jsonl",
        [
            {"id": "q0", "label": "PASS", "probability": 0.5, "jury_shown": False},
            {"id": "q1", "label": "FAIL", "probability": 0.5, "jury_shown": True},
            {"id": "q2", "label": "FAIL"},
        ],
    )
    read = read_gold(path)
    assert read.items == {"q0": "PASS", "q1": "FAIL", "q2": "FAIL"}
    assert read.jury_shown == {"q1"} and read.jury_hidden == {"q0"}
    assert read.jury_unrecorded(read.items) == ["q2"]
    assert load_gold(path) == read.items


def test_a_jury_shown_that_is_not_true_or_false_is_refused_naming_its_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "g.jsonl", [{"id": "q0", "label": "PASS", "jury_shown": "yes"}])
    with pytest.raises(ConfigError, match=r'line 1: "jury_shown" is true or false'):
        load_gold(path)


def test_gold_labels_gives_item_and_criterion_labels_as_stats_reads_them(tmp_path: Path) -> None:
    items_only = write(tmp_path / "a.jsonl", [{"id": "0", "label": "PASS"}])
    assert gold_labels(items_only) == ({"0": "PASS"}, None)
    rubric = write(tmp_path / "b.jsonl", [{"id": "0", "criteria": {"correct": "PASS"}}])
    assert gold_labels(rubric) == (None, {"0": {"correct": "PASS"}})
    missing_label = write(tmp_path / "c.jsonl", [{"id": "0"}])
    with pytest.raises(ConfigError, match=r'a gold line is \{"id": "...", "label": "..."\}'):
        gold_labels(missing_label)


def test_the_vocabulary_is_the_answers_then_the_consensus_labels() -> None:
    results = [item("q0", "FAIL", "PASS"), item("q1", "PASS", "PASS")]
    assert vocabulary_of(results) == ["FAIL", "PASS"]


def test_against_a_labels_file_notes_the_labels_made_with_the_jury_shown(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "label": "FAIL", "jury_shown": i < 3} for i in range(10)]
    report = pass_fail().against(write(tmp_path / "labels.jsonl", rows))
    assert report.n_jury_shown == 3
    assert "3 of the 10 gold labels were made with the jury's answers shown" in str(report)


def test_estimate_share_reads_the_page_export_whole(tmp_path: Path) -> None:
    rows = [
        {"id": f"q{i}", "label": "FAIL", "probability": 0.25, "jury_shown": False}
        for i in range(10)
    ]
    est = estimate_share(pass_fail(), "FAIL", gold=write(tmp_path / "labels.jsonl", rows))
    assert est.n_labels == 10


def test_a_gold_file_that_is_not_utf8_is_refused_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_bytes('{"id": "q0", "label": "Café"}\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match="cannot read the gold labels"):
        load_gold(path)
