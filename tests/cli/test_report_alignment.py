"""``cross-judge report alignment.json``: the record ``cross-judge align`` writes becomes the
alignment's before-and-after page, beside it by default; a broken record, or an option
of a results file's page, is refused (exit 2) with the fix. One test aligns the offline
example panel first, so the page is checked against a record align really wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.report.test_alignment_page import record

from .conftest import EXAMPLES, run


def write_record(folder: Path, data: object) -> Path:
    path = folder / "alignment.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def test_report_of_an_alignment_record_writes_its_page_beside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write_record(tmp_path, record())
    code, printed, err = run(capsys, "report", source)
    assert code == 0, err
    page = tmp_path / "alignment.html"
    assert f"report: {page} (the alignment's before and after, opens offline)" in printed
    text = page.read_text(encoding="utf-8")
    assert "jury: consensus kappa" in text and "pass-fail-a@4" in text
    assert "<script" not in text


def test_out_and_title_choose_the_page_and_its_heading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write_record(tmp_path, record())
    page = tmp_path / "before-after.html"
    code, _, err = run(capsys, "report", source, "--out", page, "--title", "Support <judges>")
    assert code == 0, err
    assert "<h1>Support &lt;judges&gt;</h1>" in page.read_text(encoding="utf-8")


def test_a_broken_record_is_refused_naming_the_file_and_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = record()
    del broken["figures"]["held_out_items"]
    source = write_record(tmp_path, broken)
    code, _, err = run(capsys, "report", source)
    assert code == 2
    assert f"{source}: `figures.held_out_items` is missing" in err
    assert "pass the alignment.json that cross-judge align wrote" in err
    assert not (tmp_path / "alignment.html").exists()


def test_gold_is_refused_for_an_alignment_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write_record(tmp_path, record())
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "t-003", "label": "PASS"}\n', encoding="utf-8")
    code, _, err = run(capsys, "report", source, "--gold", gold)
    assert code == 2
    assert "is an alignment record" in err and "--gold" in err


@pytest.mark.integration
def test_the_record_align_writes_makes_its_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    aligned = tmp_path / "aligned"
    code, _, err = run(
        capsys,
        "align",
        EXAMPLES / "align.yaml",
        "--gold",
        EXAMPLES / "support.gold.jsonl",
        "--items",
        EXAMPLES / "support.jsonl",
        "--out",
        aligned,
    )
    assert code == 0, err
    source = aligned / "alignment.json"
    written = json.loads(source.read_text(encoding="utf-8"))
    code, _, err = run(capsys, "report", source)
    assert code == 0, err
    text = (aligned / "alignment.html").read_text(encoding="utf-8")
    kappa = written["figures"]["jury"]["consensus_kappa"]
    assert f"{kappa['before']:.3f}" in text and f"{kappa['after']:.3f}" in text
    for critic, ref in written["prompts"].items():
        assert f"<td>{critic}</td><td><code>{ref}</code></td>" in text
