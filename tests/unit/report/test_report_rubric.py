"""The HTML report of rubric results: a criteria x critics agreement table and, per
disputed item, its disputed criteria (read as text, no browser). Reports of other results
are unchanged (``test_report_page.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from cross_judge import Ensemble
from cross_judge.batch import BatchResult
from cross_judge.ensemble import revote
from cross_judge.report import render_report
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.stats._criteria import criteria_agreement
from cross_judge.verdict import EnsembleVerdict, Verdict

RUBRIC = Rubric(
    criteria=(
        Criterion(id="correct", requirement="The answer is correct.", weight=3, gate=True),
        Criterion(id="cites", requirement="The answer cites a source."),
    )
)
HOSTILE = "<script>alert(1)</script>"


def answer(kind: str, reasoning: str = "") -> CriterionVerdict:
    return CriterionVerdict(
        kind=kind, confidence=0.8, reasoning=reasoning, score=1.0 if kind == "PASS" else 0.0
    )


def critic(name: str, correct: str, cites: str, reasoning: str = "") -> Verdict:
    criteria = {"correct": answer(correct), "cites": answer(cites, reasoning)}
    return Verdict(kind="PASS", confidence=0.8, critic_id=name, criteria=criteria)


def judged(query_id: str, *verdicts: Verdict) -> EnsembleVerdict:
    inferred = Ensemble(critics=[]).aggregate_verdicts(list(verdicts), query_id=query_id)
    return revote(inferred.model_copy(update={"rubric": RUBRIC}), "majority")


def rubric_batch() -> BatchResult:
    """Four items: b dissents on 'cites' twice, c once on 'correct'."""
    return BatchResult.from_results(
        [
            judged(
                "q1",
                critic("a", "PASS", "PASS"),
                critic("b", "PASS", "FAIL", HOSTILE),
                critic("c", "PASS", "PASS"),
            ),
            judged(
                "q2",
                critic("a", "PASS", "FAIL"),
                critic("b", "PASS", "PASS"),
                critic("c", "PASS", "FAIL"),
            ),
            judged(
                "q3",
                critic("a", "PASS", "PASS"),
                critic("b", "PASS", "PASS"),
                critic("c", "FAIL", "PASS"),
            ),
            judged(
                "q4",
                critic("a", "FAIL", "FAIL"),
                critic("b", "FAIL", "FAIL"),
                critic("c", "FAIL", "FAIL"),
            ),
        ]
    )


def section(page: str, ident: str) -> str:
    match = re.search(rf'<section id="{ident}">(.*?)</section>', page, re.S)
    assert match is not None, f"no section {ident}"
    return match.group(1)


def cells(row_html: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", c).strip()
        for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row_html, re.S)
    ]


def table_rows(html_text: str) -> list[list[str]]:
    return [cells(row) for row in re.findall(r"<tr>(.*?)</tr>", html_text, re.S)]


def test_a_rubric_report_has_a_criteria_section_linked_from_the_nav() -> None:
    page = render_report(rubric_batch())
    assert '<a href="#criteria">' in page
    section(page, "criteria")


def test_criteria_table_has_each_critics_agreement_with_the_consensus_per_criterion() -> None:
    rows = table_rows(section(render_report(rubric_batch()), "criteria"))
    header, correct, cites = rows
    assert header[-3:] == ["a", "b", "c"]
    assert correct[0] == "correct" and cites[0] == "cites"
    assert correct[-3:] == ["100.0%", "100.0%", "75.0%"]
    assert cites[-3:] == ["100.0%", "50.0%", "100.0%"]


def test_criteria_table_counts_disputed_items_and_names_the_gate() -> None:
    rows = table_rows(section(render_report(rubric_batch()), "criteria"))
    _, correct, cites = rows
    assert correct[1] == "3 gate"
    assert correct[2:4] == ["4", "1 (25.0%)"]
    assert cites[2:4] == ["4", "2 (50.0%)"]


def test_criteria_table_shows_the_alpha_of_the_stats_per_criterion() -> None:
    batch = rubric_batch()
    expected = criteria_agreement(batch)
    rows = table_rows(section(render_report(batch), "criteria"))
    assert rows[0][4] == "alpha (nominal)"
    for row in rows[1:]:
        alpha = expected[row[0]].alpha
        assert row[4] == ("n/a" if alpha is None else f"{alpha:.3f}")


def test_each_disputed_item_lists_its_disputed_criteria() -> None:
    table = section(render_report(rubric_batch()), "disputed")
    rows = table_rows(table)
    header = rows[0]
    column = header.index("disputed criteria")
    by_id = {row[0][:2]: row[column] for row in rows[1:]}
    assert by_id["q1"] == "cites: PASS 2 of 3 (against: b FAIL)"
    assert by_id["q3"] == "correct: PASS 2 of 3 (against: c FAIL)"
    assert "q4" not in by_id


def test_texts_from_rubric_answers_are_escaped() -> None:
    page = render_report(rubric_batch())
    assert HOSTILE not in page


def test_a_results_file_of_rubric_results_reports_the_same_table(tmp_path: Path) -> None:
    batch = rubric_batch()
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    from_file = section(render_report(path), "criteria")
    assert from_file == section(render_report(batch), "criteria")


def test_a_report_without_rubric_results_has_no_criteria_section() -> None:
    plain = Ensemble(critics=[]).aggregate_verdicts(
        [Verdict(kind="KEEP", critic_id="a"), Verdict(kind="REJECT", critic_id="b")],
        query_id="q",
    )
    page = render_report(BatchResult.from_results([plain]))
    assert 'id="criteria"' not in page
    assert "disputed criteria" not in page
