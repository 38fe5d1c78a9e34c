"""The ``cross-judge`` command, run in-process: ``revote``: the new file and the consensus
changes, and the refusals that keep every results file intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from cross_judge.batch import ResultsFile

from .conftest import run

pytestmark = pytest.mark.integration


# -- revote -------------------------------------------------------------------------------------


def test_revote_writes_the_new_file_and_counts_consensus_changes(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new.jsonl"
    code, stdout, _ = run(
        capsys,
        "revote",
        results,
        "--voting",
        "unanimous",
        "--voting-kwargs",
        '{"fallback": "UNCLEAR"}',
        "--out",
        new,
    )
    assert code == 0
    assert "consensus changed on 2 of 4 items (majority -> unanimous)" in stdout
    assert "REJECT" in stdout and "UNCLEAR" in stdout
    revoted = {r.query_id: r.consensus for r in ResultsFile.read(new)}
    assert revoted == {"u1": "KEEP", "u2": "KEEP", "s1": "UNCLEAR", "s2": "UNCLEAR"}


def test_revote_without_out_writes_nothing(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(tmp_path.iterdir())
    code, stdout, _ = run(capsys, "revote", results, "--voting", "unanimous")
    assert code == 0 and "nothing written" in stdout
    assert sorted(tmp_path.iterdir()) == before


def test_revote_refuses_an_existing_out_and_leaves_it_untouched(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new.jsonl"
    new.write_text("precious\n", encoding="utf-8")
    code, _, err = run(capsys, "revote", results, "--voting", "unanimous", "--out", new)
    assert code == 2 and "already exists; revote never overwrites results" in err
    assert new.read_text(encoding="utf-8") == "precious\n"


def test_revote_refuses_to_overwrite_the_results_it_reads(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = results.read_bytes()
    code, _, err = run(capsys, "revote", results, "--voting", "unanimous", "--out", results)
    assert code == 2 and "is the results file being re-voted" in err
    assert results.read_bytes() == before


def test_revote_invalid_voting_kwargs_json_exits_2(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "revote", results, "--voting", "majority", "--voting-kwargs", "{bad")
    assert code == 2 and "--voting-kwargs is not valid JSON" in err


def test_revote_unknown_strategy_exits_2(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "revote", results, "--voting", "plurality")
    assert code == 2 and "Unknown voting strategy 'plurality'" in err


def test_revote_missing_results_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "revote", tmp_path / "nope.jsonl", "--voting", "majority")
    assert code == 2 and "no such results file" in err
