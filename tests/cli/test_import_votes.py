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


# -- hostile input (issue 37) -----------------------------------------------------------------


def write_jsonl(tmp_path: Path, *lines: str) -> Path:
    return write(tmp_path, "votes.jsonl", "".join(line + "\n" for line in lines))


FIRST = '{"item": "q1", "critic": "ann", "label": "PASS"}'


def test_import_refuses_a_nan_confidence_in_a_csv_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + "q1,ann,PASS,0.9\nq1,bob,PASS,nan\n")
    code, _, err = run(
        capsys, "import", votes, "--out", tmp_path / "r.jsonl", "--confidence", "confidence"
    )
    assert code == 2
    assert f"{votes} line 3: confidence 'nan' is not a number in [0, 1]" in err
    assert not (tmp_path / "r.jsonl").exists()


def test_import_refuses_a_json_nan_confidence_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = '{"item": "q1", "critic": "ann", "label": "PASS", "confidence": 0.5}'
    second = '{"item": "q1", "critic": "bob", "label": "PASS", "confidence": NaN}'
    votes = write_jsonl(tmp_path, first, second)
    code, _, err = run(
        capsys, "import", votes, "--out", tmp_path / "r.jsonl", "--confidence", "confidence"
    )
    assert code == 2
    assert f"{votes} line 2: not JSON (NaN is no JSON value" in err


@pytest.mark.parametrize(
    ("cell", "what"),
    [('{"a": 1}', "an object"), ("true", "a boolean"), ('["PASS"]', "a list")],
)
def test_import_refuses_a_label_that_is_not_text_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cell: str, what: str
) -> None:
    votes = write_jsonl(tmp_path, FIRST, f'{{"item": "q1", "critic": "bob", "label": {cell}}}')
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2
    assert f"{votes} line 2: the label is {what}" in err and "not text" in err


def test_import_refuses_an_item_that_is_a_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write_jsonl(tmp_path, '{"item": {"id": 1}, "critic": "ann", "label": "PASS"}')
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and f"{votes} line 1: the item is an object" in err


def test_import_refuses_a_voter_that_is_a_json_boolean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write_jsonl(tmp_path, '{"item": "q1", "critic": false, "label": "PASS"}')
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and f"{votes} line 1: the critic is a boolean" in err


def test_import_refuses_reasoning_that_is_a_json_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write_jsonl(tmp_path, '{"item": "q1", "critic": "ann", "label": "PASS", "note": [1]}')
    code, _, err = run(
        capsys, "import", votes, "--out", tmp_path / "r.jsonl", "--reasoning", "note"
    )
    assert code == 2 and f"{votes} line 1: the reasoning is a list" in err


def test_import_reads_a_number_as_an_item_id_in_its_decimal_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write_jsonl(tmp_path, '{"item": 7, "critic": "ann", "label": "PASS"}')
    out = tmp_path / "r.jsonl"
    assert run(capsys, "import", votes, "--out", out)[0] == 0
    assert BatchResult.from_jsonl(out).verdicts[0].query_id == "7"


@pytest.mark.parametrize("label", ["error", " Skipped ", "parse fail", "Abstain", "ERROR."])
def test_import_refuses_a_reserved_label_in_any_case_or_spacing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + f"q1,ann,PASS,\nq1,bob,{label},\n")
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2
    assert f"{votes} line 3: the label {label.strip()!r} reads as" in err
    assert "reserved for failed or unmade calls" in err


def test_import_reads_a_utf16_file_with_a_byte_order_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_bytes((HEADER + "q1,ann,PASSÉ,\nq1,bob,PASSÉ,\n").encode("utf-16"))
    out = tmp_path / "r.jsonl"
    code, _, err = run(capsys, "import", votes, "--out", out)
    assert code == 0, err
    assert BatchResult.from_jsonl(out).verdicts[0].consensus == "PASSÉ"


def test_import_reads_a_latin1_file_with_the_encoding_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_bytes((HEADER + "café,ann,PASS,\n").encode("latin-1"))
    out = tmp_path / "r.jsonl"
    code, _, err = run(capsys, "import", votes, "--out", out, "--encoding", "latin-1")
    assert code == 0, err
    assert BatchResult.from_jsonl(out).verdicts[0].query_id == "café"


def test_import_names_the_encoding_line_and_byte_of_a_file_that_does_not_decode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_bytes((HEADER + "q1,ann,PASS,\ncafé,bob,PASS,\n").encode("latin-1"))
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2
    byte = len((HEADER + "q1,ann,PASS,\ncaf").encode())
    assert f"{votes} is not utf-8 text: line 3 (byte {byte}) has bytes e9" in err
    assert "--encoding" in err and "Traceback" not in err


def test_import_refuses_an_unknown_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + CSV_ROWS)
    code, _, err = run(
        capsys, "import", votes, "--out", tmp_path / "r.jsonl", "--encoding", "klingon"
    )
    assert code == 2 and "unknown encoding 'klingon'" in err


def test_import_says_a_csv_with_nul_characters_may_be_utf16_without_a_byte_order_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_bytes((HEADER + CSV_ROWS).encode("utf-16-le"))
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and "--encoding utf-16-le" in err


def test_import_names_the_line_of_a_json_value_nested_too_deeply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    votes = write_jsonl(tmp_path, FIRST, f'{{"item": "q1", "critic": "bob", "label": {deep}}}')
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl")
    assert code == 2 and f"{votes} line 2: a JSON value nested too deeply to read" in err


def test_import_refuses_an_unknown_strategy_before_reading_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    votes = write(tmp_path, "votes.csv", HEADER + "q1,ann,,\n")
    code, _, err = run(capsys, "import", votes, "--out", tmp_path / "r.jsonl", "--voting", "nope")
    assert code == 2 and "nope" in err and "empty label" not in err


def test_import_keeps_one_result_per_item_with_every_vote_when_the_rows_interleave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = "q1,ann,PASS,\nq2,ann,FAIL,\nq1,bob,FAIL,\nq2,bob,FAIL,\nq1,cat,PASS,\nq1,ann,PASS,\n"
    votes = write(tmp_path, "votes.csv", HEADER + rows)
    out = tmp_path / "r.jsonl"
    code, stdout, _ = run(capsys, "import", votes, "--out", out)
    assert code == 0
    batch = BatchResult.from_jsonl(out)
    assert [
        (r.query_id, [v.critic_id for v in r.verdicts], r.consensus) for r in batch.verdicts
    ] == [
        ("q1", ["ann", "bob", "cat"], "PASS"),
        ("q2", ["ann", "bob"], "FAIL"),
    ]
    assert "imported 5 votes by 3 voters on 2 items" in stdout
