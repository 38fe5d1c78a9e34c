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
