"""Jupyter views of rubric results: a rubric item shows a criteria x critics table and its
total; a rubric critic's verdict shows its criteria; a rubric batch shows each critic's
agreement per criterion (no network; HTML parsed back with the standard library)."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from cross_judge import Ensemble
from cross_judge.batch import BatchResult
from cross_judge.ensemble import revote
from cross_judge.errors import ErrorKind
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.verdict import EnsembleVerdict, Verdict

RUBRIC = Rubric(
    criteria=(
        Criterion(id="correct", requirement="The answer is correct.", weight=3, gate=True),
        Criterion(id="cites", requirement="The answer cites a source."),
    )
)
HOSTILE = '<script>alert("x")</script>'


class _Tables(HTMLParser):
    """Every table as its caption and rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append({"caption": "", "rows": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "caption":
            self._caption = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["rows"][-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None
        elif tag == "caption" and self._caption is not None:
            self.tables[-1]["caption"] = "".join(self._caption)
            self._caption = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._caption is not None:
            self._caption.append(data)


def table(html: str, caption: str) -> list[dict[str, str]]:
    parser = _Tables()
    parser.feed(html)
    for found in parser.tables:
        if found["caption"].startswith(caption):
            header, *rows = found["rows"]
            return [dict(zip(header, row, strict=True)) for row in rows]
    raise AssertionError(f"no table {caption!r}")


def answer(kind: str, reasoning: str = "r") -> CriterionVerdict:
    if kind == "PARSE_FAIL":
        return CriterionVerdict(kind=kind, error="parse_fail: no label", error_kind=ErrorKind.PARSE)
    return CriterionVerdict(
        kind=kind, confidence=0.7, reasoning=reasoning, score=1.0 if kind == "PASS" else 0.0
    )


def critic(name: str, correct: str, cites: str, reasoning: str = "r") -> Verdict:
    criteria = {"correct": answer(correct), "cites": answer(cites, reasoning)}
    return Verdict(kind="PASS", confidence=0.8, critic_id=name, criteria=criteria, score=1.0)


def judged(query_id: str, *verdicts: Verdict) -> EnsembleVerdict:
    inferred = Ensemble(critics=[]).aggregate_verdicts(list(verdicts), query_id=query_id)
    return revote(inferred.model_copy(update={"rubric": RUBRIC}), "majority")


def split_item() -> EnsembleVerdict:
    return judged(
        "q1",
        critic("a", "PASS", "PASS"),
        critic("b", "PASS", "FAIL", HOSTILE),
        critic("c", "PASS", "PARSE_FAIL"),
    )


def test_a_rubric_item_shows_each_critics_label_per_criterion() -> None:
    rows = table(split_item()._repr_html_(), "criteria")
    by_id = {row["criterion"]: row for row in rows}
    assert [by_id["cites"][c] for c in ("a", "b", "c")] == ["PASS", "FAIL", "PARSE_FAIL"]
    assert [by_id["correct"][c] for c in ("a", "b", "c")] == ["PASS", "PASS", "PASS"]


def test_a_rubric_item_shows_consensus_agreement_and_dispute_per_criterion() -> None:
    by_id = {row["criterion"]: row for row in table(split_item()._repr_html_(), "criteria")}
    assert by_id["cites"]["consensus"] == "PASS disputed"
    assert by_id["cites"]["agreement"] == "50.0%"
    assert by_id["correct"]["consensus"] == "PASS"
    assert by_id["correct"]["agreement"] == "100.0%"


def test_a_rubric_item_shows_weights_gates_and_the_total() -> None:
    html = split_item()._repr_html_()
    by_id = {row["criterion"]: row for row in table(html, "criteria")}
    assert by_id["correct"]["weight"] == "3 gate"
    assert by_id["cites"]["weight"] == "1"
    assert "total 1.000 (pass at 0.50)" in html


def test_a_rubric_item_escapes_critic_texts() -> None:
    html = split_item()._repr_html_()
    assert HOSTILE not in html
    assert "&lt;script&gt;" in html


def test_a_rubric_critics_verdict_shows_its_criteria() -> None:
    verdict = critic("b", "PASS", "FAIL", "no source given")
    rows = table(verdict._repr_html_(), "criteria")
    assert [(r["criterion"], r["kind"], r["reasoning"]) for r in rows] == [
        ("correct", "PASS", "r"),
        ("cites", "FAIL", "no source given"),
    ]


def test_a_rubric_batch_shows_each_critics_agreement_per_criterion() -> None:
    batch = BatchResult.from_results(
        [
            split_item(),
            judged(
                "q2",
                critic("a", "PASS", "PASS"),
                critic("b", "PASS", "PASS"),
                critic("c", "FAIL", "PASS"),
            ),
        ]
    )
    by_id = {row["criterion"]: row for row in table(batch._repr_html_(), "criteria")}
    assert [by_id["correct"][c] for c in ("a", "b", "c")] == ["100.0%", "100.0%", "50.0%"]
    assert [by_id["cites"][c] for c in ("a", "b", "c")] == ["100.0%", "50.0%", "100.0%"]
    assert by_id["cites"]["disputed"] == "1 (50.0%)"


def test_an_item_without_rubric_has_no_criteria_table() -> None:
    plain = Ensemble(critics=[]).aggregate_verdicts(
        [Verdict(kind="KEEP", critic_id="a")], query_id="q"
    )
    parser = _Tables()
    parser.feed(plain._repr_html_())
    assert all(t["caption"] != "criteria" for t in parser.tables)
