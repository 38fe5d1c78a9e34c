"""Issue 37: the HTML report with gold labels. ``report --gold`` reads a rubric's gold
(``{"id", "criteria": {...}}`` lines) as ``stats --gold`` does and shows accuracy per
criterion; the disputed items show each one's gold label beside the consensus; a view lists
every item the panel got wrong against gold, unanimous ones included (read as text, no
browser; tests/browser opens it in Chromium)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Ensemble
from cross_judge.batch import BatchResult
from cross_judge.cli import main
from cross_judge.ensemble import revote
from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.report import render_report
from cross_judge.report._digest import BatchDigest
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.stats._criteria import criteria_gold_metrics
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

GOLD = {"calm": "REJECT", "split": "REJECT", "right": "REJECT", "undecided": "KEEP"}


def vote(critic: str, kind: str, reasoning: str = "") -> Verdict:
    return Verdict(kind=kind, confidence=0.8, critic_id=critic, reasoning=reasoning)


def failed(critic: str) -> Verdict:
    return Verdict(
        kind="ERROR", critic_id=critic, error="timeout: no answer", error_kind=ErrorKind.TIMEOUT
    )


def result(query_id: str, verdicts: list[Verdict], consensus: str, **extra: Any) -> EnsembleVerdict:
    valid = [v for v in verdicts if v.error is None]
    agreeing = sum(v.kind == consensus for v in valid)
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=verdicts,
        consensus=consensus,
        agreement_pct=agreeing / len(valid) if valid else 0.0,
        disagreement=agreeing < len(valid),
        voting="majority",
        n_valid=len(valid),
        n_errors=len(verdicts) - len(valid),
        **extra,
    )


def batch() -> BatchResult:
    """Five items, three critics. Against :data:`GOLD`: ``calm`` wrong unanimously,
    ``split`` wrong on a split vote, ``right`` right, ``undecided`` wrong with no consensus;
    ``broken`` (a failed call) has no gold label."""
    return BatchResult.from_results(
        [
            result(
                "calm",
                [vote("a", "KEEP", "fits"), vote("b", "KEEP"), vote("c", "KEEP")],
                "KEEP",
                item=ItemText(query="Felines (see also: Cats)"),
            ),
            result("split", [vote("a", "KEEP"), vote("b", "REJECT"), vote("c", "KEEP")], "KEEP"),
            result(
                "right", [vote("a", "REJECT"), vote("b", "REJECT"), vote("c", "REJECT")], "REJECT"
            ),
            result("broken", [vote("a", "REJECT"), failed("b"), vote("c", "REJECT")], "REJECT"),
            result(
                "undecided",
                [vote("a", "KEEP"), vote("b", "REJECT"), failed("c")],
                "UNCLEAR",
                fallback=True,
            ),
        ]
    )


def section(page: str, ident: str) -> str:
    match = re.search(rf'<section id="{ident}">(.*?)</section>', page, re.S)
    assert match is not None, f"no section {ident}"
    return match.group(1)


def table(page: str, ident: str) -> str:
    return page.split(f'<table id="{ident}">', 1)[1].split("</table>", 1)[0]


def cells(row_html: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", c).strip()
        for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row_html, re.S)
    ]


def table_rows(html_text: str) -> list[list[str]]:
    return [cells(row) for row in re.findall(r"<tr>(.*?)</tr>", html_text, re.S)]


def by_id(rows: list[list[str]]) -> dict[str, list[str]]:
    """Body rows keyed by the item id that starts their first cell."""
    ids = ("calm", "split", "right", "broken", "undecided")
    return {next(i for i in ids if row[0].startswith(i)): row for row in rows[1:]}


def write_gold(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# -- the gold column of the disputed items ------------------------------------------------------


def test_the_disputed_table_has_a_gold_column_beside_the_consensus() -> None:
    header = table_rows(table(render_report(batch(), gold=GOLD), "disputed-table"))[0]
    assert header[:4] == ["item", "consensus", "gold", "agreement"]


def test_the_gold_column_shows_each_label_and_marks_a_wrong_consensus() -> None:
    rows = by_id(table_rows(table(render_report(batch(), gold=GOLD), "disputed-table")))
    assert rows["split"][1:3] == ["KEEP", "REJECT wrong"]
    assert rows["undecided"][1:3] == ["UNCLEAR", "KEEP wrong"]


def test_a_disputed_item_without_a_gold_label_has_an_empty_gold_cell() -> None:
    rows = by_id(table_rows(table(render_report(batch(), gold=GOLD), "disputed-table")))
    assert rows["broken"][2] == "—"


def test_without_gold_there_is_no_gold_column_and_no_wrong_view() -> None:
    page = render_report(batch())
    assert table_rows(table(page, "disputed-table"))[0][:3] == ["item", "consensus", "agreement"]
    assert '<section id="wrong">' not in page and 'href="#wrong"' not in page


# -- the items wrong against gold ----------------------------------------------------------------


def test_the_wrong_view_lists_every_item_wrong_against_gold_unanimous_ones_included() -> None:
    page = render_report(batch(), gold=GOLD)
    rows = by_id(table_rows(table(page, "wrong-table")))
    assert list(rows) == ["calm", "split", "undecided"]
    assert rows["calm"][4] == "unanimous"
    assert rows["split"][4] == "split vote"
    assert rows["undecided"][4].startswith("no consensus")
    assert 'href="#wrong"' in page


def test_a_wrong_item_shows_its_text_consensus_gold_and_every_critics_vote() -> None:
    row = by_id(table_rows(table(render_report(batch(), gold=GOLD), "wrong-table")))["calm"]
    assert "Felines (see also: Cats)" in row[0]
    assert row[1:3] == ["KEEP", "REJECT wrong"]
    assert row[-3:] == ["KEEP 0.80fits", "KEEP 0.80", "KEEP 0.80"]  # label, confidence, reasoning


def test_the_wrong_view_counts_its_items_by_why() -> None:
    text = section(render_report(batch(), gold=GOLD), "wrong")
    assert "3 of 4 labelled items have a consensus other than their gold label" in text
    assert "unanimous 1" in text and "split vote 1" in text and "no consensus 1" in text


def test_the_overview_counts_the_items_wrong_against_gold_and_the_unanimous_ones() -> None:
    page = render_report(batch(), gold=GOLD)
    wrong = re.search(r'data-stat="wrong"><div class="value">(.*?)</div>', page)
    unanimous = re.search(r'data-stat="wrong-unanimous"><div class="value">(.*?)</div>', page)
    assert wrong is not None and wrong.group(1) == "3 of 4"
    assert unanimous is not None and unanimous.group(1) == "1"


def test_the_items_wrong_are_the_errors_of_the_consensus_row_against_gold() -> None:
    digest = BatchDigest.of(batch(), gold=GOLD)
    consensus = digest.gold_report()["consensus"]
    assert consensus.accuracy is not None
    wrong = digest.wrong_against_gold()
    assert len(wrong) == round(consensus.n_answered * (1 - consensus.accuracy))
    assert [r.query_id for r in wrong] == ["calm", "split", "undecided"]


def test_max_items_caps_the_wrong_view_and_says_how_many_were_left_out() -> None:
    page = render_report(batch(), gold=GOLD, max_items=1)
    assert len(table_rows(table(page, "wrong-table"))) == 2  # the header and one row
    assert "Showing the first 1 of 3 items wrong against gold (2 left out" in page


def test_no_item_wrong_against_gold_is_said_without_a_table() -> None:
    page = render_report(batch(), gold={"right": "REJECT"})
    assert "None of the 1 labelled items: the consensus equals every gold label" in page
    assert 'id="wrong-table"' not in page


def test_the_wrong_view_is_searchable_like_the_disputed_table() -> None:
    page = render_report(batch(), gold=GOLD)
    assert '<input id="wrong-search" type="search"' in page
    assert 'class="scroll items" data-search="wrong-search" data-count="wrong-shown-count"' in page
    assert 'data-search="search" data-count="shown-count"><table id="disputed-table">' in page


# -- a rubric's gold -------------------------------------------------------------------------------

RUBRIC = Rubric(
    criteria=(
        Criterion(id="correct", requirement="The answer is correct."),
        Criterion(id="cites", requirement="The answer cites a source."),
    )
)


def critic(name: str, correct: str, cites: str) -> Verdict:
    def answer(kind: str) -> CriterionVerdict:
        return CriterionVerdict(kind=kind, confidence=0.8, score=1.0 if kind == "PASS" else 0.0)

    criteria = {"correct": answer(correct), "cites": answer(cites)}
    return Verdict(kind="PASS", confidence=0.8, critic_id=name, criteria=criteria)


def judged(query_id: str, *verdicts: Verdict) -> EnsembleVerdict:
    inferred = Ensemble(critics=[]).aggregate_verdicts(list(verdicts), query_id=query_id)
    return revote(inferred.model_copy(update={"rubric": RUBRIC}), "majority")


def rubric_results(tmp_path: Path) -> Path:
    path = tmp_path / "rubric.jsonl"
    BatchResult.from_results(
        [
            judged("q1", critic("a", "PASS", "PASS"), critic("b", "PASS", "FAIL")),
            judged("q2", critic("a", "FAIL", "FAIL"), critic("b", "PASS", "FAIL")),
            judged("q3", critic("a", "PASS", "PASS"), critic("b", "PASS", "PASS")),
        ]
    ).to_jsonl(path)
    return path


RUBRIC_GOLD = [
    {"id": "q1", "criteria": {"correct": "PASS", "cites": "FAIL"}},
    {"id": "q2", "criteria": {"correct": "FAIL", "cites": "FAIL"}},
    {"id": "q3", "criteria": {"correct": "PASS", "cites": None}},
]


def test_the_report_reads_a_rubrics_criteria_gold_and_shows_accuracy_per_criterion(
    tmp_path: Path,
) -> None:
    results = rubric_results(tmp_path)
    gold = write_gold(tmp_path / "gold.jsonl", RUBRIC_GOLD)
    page = render_report(results, gold=gold)
    expected = criteria_gold_metrics(results, gold)
    rows = table_rows(section(page, "criteria-gold"))
    assert rows[0][2:] == ["a", "b", "consensus"]
    for row in rows[1:]:
        report = expected[row[0]]
        assert row[1] == str(report.n_gold)
        shown = [cell.split(" ")[0] for cell in row[2:]]
        assert shown == [f"{r.accuracy:.1%}" for r in report.rows]
    assert '<a href="#criteria-gold">' in page


def test_criteria_only_gold_gives_no_item_view_and_says_the_confusion_is_against_the_consensus(
    tmp_path: Path,
) -> None:
    page = render_report(
        rubric_results(tmp_path), gold=write_gold(tmp_path / "g.jsonl", RUBRIC_GOLD)
    )
    assert "Confusion against consensus" in page
    assert "The gold labels criteria only" in page
    assert '<section id="wrong">' not in page


def test_a_gold_file_with_item_and_criterion_labels_gives_both_views(tmp_path: Path) -> None:
    lines = [dict(line, label="PASS") for line in RUBRIC_GOLD]
    page = render_report(rubric_results(tmp_path), gold=write_gold(tmp_path / "g.jsonl", lines))
    assert "Confusion against gold" in page
    section(page, "criteria-gold")
    section(page, "wrong")


def test_criterion_gold_as_a_mapping_is_read_as_from_a_file(tmp_path: Path) -> None:
    results = rubric_results(tmp_path)
    mapping = {line["id"]: line["criteria"] for line in RUBRIC_GOLD}
    from_file = render_report(results, gold=write_gold(tmp_path / "g.jsonl", RUBRIC_GOLD))
    assert section(render_report(results, gold=mapping), "criteria-gold") == section(
        from_file, "criteria-gold"
    )


def test_criterion_gold_naming_no_criterion_of_the_results_is_refused(tmp_path: Path) -> None:
    gold = write_gold(tmp_path / "g.jsonl", [{"id": "q1", "criteria": {"tone": "PASS"}}])
    with pytest.raises(ConfigError, match="gold names criteria \\['tone'\\]"):
        render_report(rubric_results(tmp_path), gold=gold)


def test_cli_report_accepts_the_rubric_gold_that_stats_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = rubric_results(tmp_path)
    gold = write_gold(tmp_path / "gold.jsonl", RUBRIC_GOLD)
    assert main(["stats", str(results), "--gold", str(gold)]) == 0
    out = tmp_path / "report.html"
    assert main(["report", str(results), "--gold", str(gold), "-o", str(out)]) == 0
    assert "opens offline" in capsys.readouterr().out
    assert '<section id="criteria-gold">' in out.read_text(encoding="utf-8")


def test_cli_report_refuses_a_malformed_gold_line_naming_both_forms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = rubric_results(tmp_path)
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q1", "criteria": {"correct": 1}}\n', encoding="utf-8")
    code = main(["report", str(results), "--gold", str(gold), "-o", str(tmp_path / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert "line 1" in err and '"criteria"' in err and "Traceback" not in err


def test_gold_labels_made_with_the_jury_shown_are_counted_beside_the_confusion(
    tmp_path: Path,
) -> None:
    lines = [
        {"id": "calm", "label": "REJECT", "jury_shown": True},
        {"id": "split", "label": "REJECT", "jury_shown": False},
    ]
    page = render_report(batch(), gold=write_gold(tmp_path / "labels.jsonl", lines))
    note = html.unescape(section(page, "confusion"))
    assert "1 of the 2 gold labels were made with the jury's answers shown" in note
    assert "jury&#x27;s answers shown" not in render_report(batch(), gold=GOLD)
