"""People among the critics are told apart in every view: the summary marks them with a
dagger, the HTML report says "person", the digest of a results file knows them."""

from __future__ import annotations

from pathlib import Path

from cross_judge.batch import BatchResult
from cross_judge.report._digest import BatchDigest
from cross_judge.report._page import render_report

JURY = [("q1", "gpt", "PASS"), ("q1", "claude", "FAIL"), ("q2", "gpt", "FAIL"),
        ("q2", "claude", "FAIL")]  # fmt: skip
PEOPLE = [("q1", "ann", "PASS"), ("q2", "ann", "PASS")]


def mixed() -> BatchResult:
    return BatchResult.from_votes(JURY, people=False).add_votes(PEOPLE)


def test_summary_marks_people_with_a_dagger_and_says_so() -> None:
    text = str(mixed())
    assert "ann†" in text
    assert "gpt†" not in text and "claude†" not in text
    assert "†: a person" in text


def test_summary_of_a_batch_without_people_has_no_dagger() -> None:
    assert "†" not in str(BatchResult.from_votes(JURY, people=False))


def test_digest_of_a_results_file_knows_the_people(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    mixed().to_jsonl(path)
    assert BatchDigest.read(path).human_critics == ["ann"]


def test_report_marks_people(tmp_path: Path) -> None:
    page = render_report(mixed())
    assert 'ann <span class="sim human">person</span>' in page
    assert 'gpt <span class="sim human">' not in page


def test_report_of_a_results_file_marks_people(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    mixed().to_jsonl(path)
    assert 'ann <span class="sim human">person</span>' in render_report(path)
