"""``cross-judge import``: a votes file (CSV, TSV, JSONL) becomes a results file that
``stats``, ``report`` and ``revote`` read; bad rows are named by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult

from .conftest import run

HEADER = "item,critic,label,confidence\n"
CSV_ROWS = "q1,ann,PASS,0.9\nq1,bob,PASS,\nq1,cat,FAIL,0.6\nq2,ann,FAIL,\nq2,bob,FAIL,0.8\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_import_csv_writes_results_with_each_items_consensus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    out = tmp_path / "results.jsonl"
    code, stdout, _ = run(capsys, "import", votes, "--out", out, "--confidence", "confidence")
    assert code == 0, stdout
    batch = BatchResult.from_jsonl(out)
    assert [(r.query_id, r.consensus) for r in batch.verdicts] == [("q1", "PASS"), ("q2", "FAIL")]
    assert batch.verdicts[0].verdicts[0].confidence == 0.9
    assert batch.human_critics == ["ann", "bob", "cat"]
    assert f"wrote {out}" in stdout


def test_import_tsv_with_renamed_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "id\twho\tanswer\nq1\tann\tKEEP\nq1\tbob\tREJECT\nq1\tcat\tREJECT\n"
    votes = write(tmp_path, "votes.tsv", text)
    out = tmp_path / "results.jsonl"
    code, _, err = run(
        capsys, "import", votes, "--out", out, "--item", "id", "--critic", "who",
        "--label", "answer",
    )  # fmt: skip
    assert code == 0, err
    assert BatchResult.from_jsonl(out).verdicts[0].consensus == "REJECT"


def test_import_jsonl_with_reasoning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        {"item": "q1", "critic": "ann", "label": "PASS", "note": "clear"},
        {"item": "q1", "critic": "bob", "label": "PASS", "note": "ok"},
    ]
    votes = write(tmp_path, "votes.jsonl", "\n".join(map(json.dumps, lines)) + "\n\n")
    out = tmp_path / "results.jsonl"
    code, _, err = run(capsys, "import", votes, "--out", out, "--reasoning", "note")
    assert code == 0, err
    assert BatchResult.from_jsonl(out).verdicts[0].verdicts[0].reasoning == "clear"


def test_import_models_marks_no_voter_a_person(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    out = tmp_path / "results.jsonl"
    assert run(capsys, "import", votes, "--out", out, "--models")[0] == 0
    assert BatchResult.from_jsonl(out).human_critics == []


def test_import_people_names_the_people(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    out = tmp_path / "results.jsonl"
    assert run(capsys, "import", votes, "--out", out, "--people", "ann,cat")[0] == 0
    assert BatchResult.from_jsonl(out).human_critics == ["ann", "cat"]


def test_import_with_dawid_skene_voting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    out = tmp_path / "results.jsonl"
    code, _, err = run(capsys, "import", votes, "--out", out, "--voting", "dawid_skene")
    assert code == 0, err
    assert BatchResult.from_jsonl(out).voting == "dawid_skene"


def test_stats_report_and_revote_read_the_imported_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    out = tmp_path / "results.jsonl"
    assert run(capsys, "import", votes, "--out", out)[0] == 0
    code, stdout, err = run(capsys, "stats", out)
    assert code == 0, err
    assert "ann†" in stdout and "†: a person" in stdout
    page = tmp_path / "page.html"
    assert run(capsys, "report", out, "--out", page)[0] == 0
    assert 'ann <span class="sim human">person</span>' in page.read_text(encoding="utf-8")
    code, _, err = run(capsys, "revote", out, "--voting", "unanimous")
    assert code == 0, err


# -- refusals ---------------------------------------------------------------------------------


def test_import_names_the_line_of_a_row_without_a_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + "q1,ann,PASS,\nq1,bob,,0.5\n")
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2
    assert f"{votes} line 3: empty label" in err
    assert not (tmp_path / "r.jsonl").exists()


def test_import_names_the_line_of_a_bad_json_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.jsonl", '{"item": "q", "critic": "a", "label": "X"}\n[1]\n')
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and f"{votes} line 2: not a JSON object" in err


def test_import_names_both_lines_of_a_voter_labelling_an_item_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + "q1,ann,PASS,\nq1,bob,PASS,\nq1,ann,FAIL,\n")
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and "line 4" in err and "line 2" in err


def test_import_names_a_missing_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    votes = write(tmp_path, "votes.csv", "id,critic,label\nq1,ann,PASS\n")
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and "no 'item' column" in err and "--item" in err


def test_import_refuses_an_existing_out_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    out = write(tmp_path, "results.jsonl", "keep me\n")
    code, _, err = run(capsys, "import", votes, "--out", out)
    assert code == 2 and "--force" in err
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert run(capsys, "import", votes, "--out", out, "--force")[0] == 0
    assert len(BatchResult.from_jsonl(out)) == 2


def test_import_refuses_to_write_over_the_votes_file_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.jsonl", '{"item": "q", "critic": "a", "label": "X"}\n')
    code, _, err = run(capsys, "import", votes, "--out", votes, "--force")
    assert code == 2 and "votes file" in err


def test_import_refuses_an_unknown_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.txt", HEADER + CSV_ROWS)
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and ".csv, .tsv or .jsonl" in err
    assert run(capsys, "import", votes, "--out", tmp_path / "r.jsonl", "--format", "csv")[0] == 0


def test_import_refuses_models_and_people_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    code, _, err = run(
        capsys, "import", votes, "--out", tmp_path / "r", "--models", "--people", "a"
    )
    assert code == 2 and "not allowed with argument --models" in err


def test_import_refuses_a_missing_votes_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "import", tmp_path / "none.csv", "--out", tmp_path / "r.jsonl")
    assert code == 2 and "none.csv" in err
