"""``cross-judge stats`` on a rubric results file: a table per criterion (alpha, Fleiss'
kappa, items, disputed share) and, with gold labels per criterion, each critic's and the
consensus's accuracy per criterion. A file without criteria prints as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult
from cross_judge.stats._criteria import criteria_agreement
from cross_judge.verdict import EnsembleVerdict, Verdict

from ..unit.stats.criteria_batches import FIVE_POINT, batch
from .conftest import run

ITEMS = [
    {"a": {"correct": "PASS", "cites": "PASS"}, "b": {"correct": "PASS", "cites": "FAIL"}},
    {"a": {"correct": "FAIL", "cites": "FAIL"}, "b": {"correct": "FAIL", "cites": "FAIL"}},
    {"a": {"correct": "PASS", "cites": "PASS"}, "b": {"correct": "FAIL", "cites": "PASS"}},
    {"a": {"correct": "FAIL", "cites": None}, "b": {"correct": "FAIL", "cites": "PASS"}},
]


def rubric_results(folder: Path) -> Path:
    path = folder / "out.jsonl"
    batch(ITEMS).to_jsonl(path)
    return path


def table_row(stdout: str, first: str) -> list[str]:
    """The cells of the first line of ``stdout`` whose first cell is ``first``."""
    for line in stdout.splitlines():
        cells = line.split()
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in:\n{stdout}")


def test_stats_prints_a_row_of_agreement_per_criterion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rubric_results(tmp_path)
    code, stdout, _ = run(capsys, "stats", path)
    assert code == 0 and "agreement per criterion" in stdout
    expected = criteria_agreement(path)
    for cid in ("correct", "cites"):
        row = expected[cid]
        cells = table_row(stdout.split("agreement per criterion")[1], cid)
        assert cells[1] == "nominal"
        assert cells[2] == ("-" if row.alpha is None else f"{row.alpha:.3f}")
        assert cells[4] == str(row.n_items)
        assert cells[5] == str(row.n_disputed)


def test_stats_shows_the_disputed_share_of_each_criterion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, stdout, _ = run(capsys, "stats", rubric_results(tmp_path))
    table = stdout.split("agreement per criterion")[1]
    # "correct": item 2 split, of 4 answered; "cites": item 0 split, of 4 answered (item 3
    # has one valid answer: answered, not disputed).
    assert table_row(table, "correct")[5:] == ["1", "(25%)"]
    assert table_row(table, "cites")[5:] == ["1", "(25%)"]


def test_stats_on_an_ordinal_rubric_says_ordinal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {"a": {"clarity": "1", "depth": "4"}, "b": {"clarity": "2", "depth": "5"}},
        {"a": {"clarity": "5", "depth": "2"}, "b": {"clarity": "4", "depth": "2"}},
    ]
    path = tmp_path / "out.jsonl"
    batch(items, FIVE_POINT).to_jsonl(path)
    _, stdout, _ = run(capsys, "stats", path)
    assert table_row(stdout.split("agreement per criterion")[1], "clarity")[1] == "ordinal"


def test_stats_with_criterion_gold_prints_accuracy_per_criterion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    labels = ["PASS", "FAIL", "PASS", "FAIL"]
    gold.write_text(
        "".join(
            json.dumps({"id": str(i), "criteria": {"correct": label}}) + "\n"
            for i, label in enumerate(labels)
        ),
        encoding="utf-8",
    )
    code, stdout, _ = run(capsys, "stats", rubric_results(tmp_path), "--gold", gold)
    assert code == 0
    table = stdout.split("accuracy per criterion against gold")[1]
    # a always right, b wrong on item 2; the consensus right wherever it decided.
    cells = [c for c in table_row(table, "correct")[1:] if "[" not in c and "]" not in c]
    assert cells == ["4", "1.000", "0.750", "1.000"]  # each accuracy then its [interval]


def test_stats_with_gold_holding_item_and_criterion_labels_prints_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rubric_results(tmp_path)
    consensus = [r.consensus for r in BatchResult.from_jsonl(path).verdicts]
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"id": str(i), "label": label, "criteria": {"cites": "PASS"}}) + "\n"
            for i, label in enumerate(consensus)
        ),
        encoding="utf-8",
    )
    code, stdout, _ = run(capsys, "stats", path, "--gold", gold)
    assert code == 0
    assert "against gold (4 of 4 items labelled)" in stdout
    assert table_row(stdout.split("accuracy per criterion")[1], "cites")[1] == "4"


def test_stats_with_an_unknown_gold_criterion_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "0", "criteria": {"tone": "PASS"}}\n', encoding="utf-8")
    code, _, err = run(capsys, "stats", rubric_results(tmp_path), "--gold", gold)
    assert code == 2 and "'tone'" in err


def test_fit_confidence_with_criterion_labels_only_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "0", "criteria": {"correct": "PASS"}}\n', encoding="utf-8")
    code, _, err = run(
        capsys, "stats", rubric_results(tmp_path), "--gold", gold, "--fit-confidence", "isotonic"
    )
    assert code == 2 and "criterion labels only" in err


def test_stats_without_criteria_prints_no_criterion_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.jsonl"
    results = [
        EnsembleVerdict(
            query_id=str(i),
            verdicts=[Verdict(kind=k, critic_id="a"), Verdict(kind="KEEP", critic_id="b")],
            consensus="KEEP",
            voting="majority",
        )
        for i, k in enumerate(("KEEP", "REJECT", "KEEP"))
    ]
    BatchResult.from_results(results).to_jsonl(path)
    code, stdout, _ = run(capsys, "stats", path)
    assert code == 0 and "Krippendorff's alpha" in stdout
    assert "per criterion" not in stdout
