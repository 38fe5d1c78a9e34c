"""The ``cross-judge`` command, run in-process: ``stats``: the agreement tables, the
measurement levels, and results files it cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run

pytestmark = pytest.mark.integration


# -- stats --------------------------------------------------------------------------------------


def test_stats_prints_agreement_tables(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "stats", results)
    assert code == 0
    for heading in (
        "Krippendorff's alpha (nominal)",
        "Fleiss' kappa",
        "pairwise agreement",
        "Cohen's kappa",
        "critics",
        "consensus",
    ):
        assert heading in stdout
    assert "items with disagreement" in stdout


def test_stats_numeric_level_on_text_labels_exits_2_with_a_hint(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "stats", results, "--level", "interval")
    assert code == 2 and "needs numbers" in err and "--order" in err


def test_stats_ordinal_level_takes_the_label_order(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "stats", results, "--level", "ordinal", "--order", "REJECT,KEEP")
    assert code == 0 and "Krippendorff's alpha (ordinal)" in stdout


def test_stats_empty_results_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "out.jsonl"
    empty.write_text("", encoding="utf-8")
    code, _, err = run(capsys, "stats", empty)
    assert code == 2 and "holds no results" in err


def test_stats_on_a_torn_results_file_says_to_resume(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = results.read_bytes()
    results.write_bytes(data[: len(data) - 10])
    code, _, err = run(capsys, "stats", results)
    assert code == 2 and "the last line is torn" in err and "--resume" in err


def test_stats_file_that_is_not_results_exits_2_with_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "out.jsonl"
    bad.write_text('{"query": "q"}\n', encoding="utf-8")
    code, _, err = run(capsys, "stats", bad)
    assert code == 2 and "line 1: not a result record" in err


def _mixed_scores_results(path: Path) -> Path:
    """Three items, labels "1".."3" all alike; critic a gives a score, critic b none."""
    from cross_judge.results import dump_result
    from cross_judge.verdict import EnsembleVerdict, Verdict

    lines = []
    for i, label in enumerate(("1", "2", "3")):
        verdicts = [
            Verdict(kind=label, critic_id="a", score=0.5),
            Verdict(kind=label, critic_id="b"),
        ]
        result = EnsembleVerdict(
            query_id=f"q{i}", verdicts=verdicts, consensus=label, voting="majority"
        )
        lines.append(dump_result(result) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_stats_interval_on_scores_and_labels_mixed_points_to_the_numbers_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _mixed_scores_results(tmp_path / "out.jsonl")
    code, _, err = run(capsys, "stats", results, "--level", "interval")
    assert code == 2 and "--numbers labels" in err


def test_stats_numbers_labels_reads_every_label_as_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _mixed_scores_results(tmp_path / "out.jsonl")
    code, stdout, _ = run(capsys, "stats", results, "--level", "interval", "--numbers", "labels")
    assert code == 0
    alpha_line = next(line for line in stdout.splitlines() if "alpha (interval)" in line)
    assert alpha_line.split()[-1] == "1.000"
