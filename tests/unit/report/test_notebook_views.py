"""Jupyter views: ``_repr_html_`` of Verdict, EnsembleVerdict and BatchResult (no network).

The HTML is parsed back with the standard library's parser, so the tests read the numbers
a notebook shows rather than match markup.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest

from cross_judge import Critic, Ensemble
from cross_judge.batch import BatchResult
from cross_judge.errors import ErrorKind
from cross_judge.report._notebook import MAX_ROWS, batch_html
from cross_judge.verdict import ABSTAIN, Answer, EnsembleVerdict, Usage, Verdict

CRITICS = ["a", "b", "c"]
HOSTILE = '<script>alert("x")</script>'


class _Tables(HTMLParser):
    """Every table of a page as rows of cell texts, with the caption; ``titles`` collects
    each ``title`` attribute, ``tags`` each start tag."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self.titles: list[str] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.titles.extend(v or "" for k, v in attrs if k == "title")
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


def parse(html: str) -> _Tables:
    parser = _Tables()
    parser.feed(html)
    parser.close()
    return parser


def table(html: str, caption: str) -> list[dict[str, str]]:
    """The rows of the table captioned ``caption`` (or starting so) as header -> cell."""
    for found in parse(html).tables:
        if found["caption"].startswith(caption):
            header, *rows = found["rows"]
            return [dict(zip(header, row, strict=True)) for row in rows]
    raise AssertionError(f"no table {caption!r} in the HTML")


def overview(html: str) -> dict[str, str]:
    first = parse(html).tables[0]["rows"]
    return {row[0]: row[1] for row in first[1:]}


def vote(critic: str, kind: str | None, **extra: Any) -> Verdict:
    """A valid verdict, or a failed call for ``None``."""
    if kind is None:
        return Verdict(
            kind="ERROR",
            critic_id=critic,
            error="server: HTTP 503 upstream busy",
            error_kind=ErrorKind.SERVER,
        )
    return Verdict(kind=kind, critic_id=critic, confidence=0.8, **extra)


PANEL = Ensemble([Critic(name=n, model="m", api_key="k") for n in CRITICS])


def item(row: list[str | None], query_id: str, **extra: Any) -> EnsembleVerdict:
    verdicts = [vote(c, k, **extra) for c, k in zip(CRITICS, row, strict=True)]
    return PANEL.aggregate_verdicts(verdicts, query_id=query_id)


def batch_of(rows: list[list[str | None]]) -> BatchResult:
    results = [item(row, f"item-{i}", cost_usd=0.001) for i, row in enumerate(rows)]
    return BatchResult(verdicts=results, critics=CRITICS, voting="majority", elapsed_s=2.0)


ROWS: list[list[str | None]] = [
    ["KEEP", "KEEP", "KEEP"],  # calm
    ["KEEP", "REJECT", "KEEP"],  # disagreement, 2/3
    ["REJECT", "REJECT", None],  # a failed call
    ["SPLIT", "KEEP", "MERGE"],  # disagreement, 1/3
    ["KEEP", "KEEP", "KEEP"],  # calm
]


# -- Verdict -------------------------------------------------------------------------------


def test_a_verdict_shows_critic_kind_confidence_cost_and_latency() -> None:
    v = Verdict(
        kind="KEEP",
        critic_id="gpt",
        confidence=0.83,
        reasoning="fine",
        cost_usd=0.0012,
        elapsed_s=1.5,
        model="gpt-4o",
        vendor="openai",
    )
    [row] = table(v._repr_html_(), "")
    assert row["critic"] == "gpt openai/gpt-4o"
    assert (row["kind"], row["confidence"], row["reasoning"]) == ("KEEP", "0.83", "fine")
    assert (row["cost"], row["latency"]) == ("$0.0012", "1.50 s")


def test_a_failed_verdict_shows_its_error_kind_and_message_and_no_confidence() -> None:
    html = vote("a", None)._repr_html_()
    [row] = table(html, "")
    assert row["error"] == "server HTTP 503 upstream busy"  # the kind, then the message
    assert row["confidence"] == ""
    assert "rgba(239,68,68" in html  # the ERROR tint


@pytest.mark.parametrize(
    ("kind", "tint"), [("PARSE_FAIL", "rgba(249,115,22"), ("SKIPPED", "rgba(148,163,184")]
)
def test_parse_failures_and_skipped_calls_have_their_own_tint(kind: str, tint: str) -> None:
    v = Verdict(kind=kind, critic_id="a", error=f"{kind.lower()}: x", error_kind=ErrorKind.PARSE)
    assert tint in v._repr_html_()


def test_a_long_reasoning_is_shortened_with_the_whole_text_behind_details() -> None:
    reasoning = "word " * 100 + "THE-END"
    html = Verdict(kind="KEEP", critic_id="a", reasoning=reasoning)._repr_html_()
    summary = re.search(r"<summary>(.*?)</summary>", html, re.S)
    assert summary is not None
    assert len(summary.group(1)) <= 160 and summary.group(1).endswith("\u2026")
    assert "THE-END" in html.split("</summary>", 1)[1]


def test_a_short_reasoning_has_no_details() -> None:
    assert "<details>" not in Verdict(kind="KEEP", critic_id="a", reasoning="ok")._repr_html_()


def test_a_calibrated_confidence_shows_what_the_model_stated() -> None:
    v = Verdict(kind="KEEP", critic_id="a", confidence=0.7, stated_confidence=0.95)
    assert table(v._repr_html_(), "")[0]["confidence"] == "0.70 (stated 0.95)"


def test_a_pair_judged_both_ways_shows_order_flip_and_each_answer() -> None:
    v = Verdict(
        kind="A",
        critic_id="a",
        order="both",
        flipped=True,
        answers=[
            Answer(kind="A", answered="A", confidence=0.9, order="ab"),
            Answer(kind="B", answered="A", confidence=0.6, order="ba"),
        ],
    )
    html = v._repr_html_()
    assert "order both" in table(html, "")[0]["details"]
    assert "flipped" in table(html, "")[0]["details"]
    answers = table(html, "answers")
    assert [(r["order"], r["answered"], r["kind"]) for r in answers] == [
        ("ab", "A", "A"),
        ("ba", "A", "B"),
    ]


# -- EnsembleVerdict -----------------------------------------------------------------------


def test_an_item_shows_consensus_agreement_and_one_row_per_critic() -> None:
    result = item(["KEEP", "REJECT", "KEEP"], "q1")
    html = result._repr_html_()
    assert "<b>q1</b>" in html and "<b>KEEP</b>" in html
    assert "agreement 66.7%" in html
    rows = table(html, "")
    assert [(r["critic"], r["kind"]) for r in rows] == [
        ("a", "KEEP"),
        ("b", "REJECT"),
        ("c", "KEEP"),
    ]


def test_a_dissenting_critic_is_tinted() -> None:
    html = item(["KEEP", "REJECT", "KEEP"], "q1")._repr_html_()
    assert html.count("rgba(234,179,8") == 1  # b's REJECT only


def test_a_fallback_consensus_is_marked_as_no_consensus() -> None:
    result = item([None, None, None], "q1")
    assert result.fallback
    assert f"no consensus (fallback {result.consensus})" in result._repr_html_()


def cascade_result(decided: str, *, abstain: bool = False) -> EnsembleVerdict:
    cheap = PANEL.aggregate_verdicts(
        [vote("a", "KEEP"), vote("b", "REJECT")], query_id="q"
    )  # escalated
    strong = PANEL.aggregate_verdicts([vote("c", decided)], query_id="q")
    consensus = ABSTAIN if abstain else strong.consensus
    return strong.model_copy(
        update={
            "verdicts": [*cheap.verdicts, *strong.verdicts],
            "consensus": consensus,
            "tier": 1,
            "tiers": [cheap, strong],
        }
    )


def test_a_cascade_item_lists_critics_tier_by_tier_with_what_each_tier_did() -> None:
    rows = table(cascade_result("REJECT")._repr_html_(), "")
    assert [(r["tier"].split(":")[0], r["critic"]) for r in rows] == [
        ("0", "a"),
        ("", "b"),
        ("1", "c"),
    ]
    assert "escalated" in rows[0]["tier"] and "decided" in rows[2]["tier"]


def test_a_cascade_abstention_is_marked_for_a_human() -> None:
    html = cascade_result("REJECT", abstain=True)._repr_html_()
    assert "abstained (for a human)" in html
    assert "abstained" in table(html, "")[2]["tier"]


# -- BatchResult ---------------------------------------------------------------------------


def test_the_headline_has_the_batch_statistics() -> None:
    batch = batch_of(ROWS)
    head = overview(batch._repr_html_())
    assert head["items"] == "5"
    assert head["critics"] == "a, b, c"
    assert head["voting"] == "majority"
    assert head["Krippendorff's alpha (nominal)"] == f"{batch.reliability_alpha():.3f}"
    assert head["Fleiss' kappa"] == f"{batch.fleiss_kappa():.3f}"
    assert head["disputed items"] == "3 (60.0%)"
    assert head["items to retry"] == str(len(batch.failed_items))
    assert head["cost"] == f"${batch.cost_usd:.4f}"
    assert head["wall time"] == "2.00 s (2.5 items/s)"


def test_the_critics_table_has_each_critics_stats() -> None:
    batch = batch_of(ROWS)
    rows = {r["critic"]: r for r in table(batch._repr_html_(), "critics")}
    stats = batch.critic_stats()
    assert list(rows) == CRITICS
    assert rows["c"]["errors"] == "1" and rows["c"]["error rate"] == "20.0%"
    assert rows["c"]["failures"] == "server 1"
    assert rows["c"]["most common message"] == "server HTTP 503 upstream busy"
    assert rows["b"]["agrees"] == f"{stats['b'].agreement:.1%}"


def test_the_consensus_table_counts_labels_and_fallbacks_apart() -> None:
    batch = batch_of([*ROWS, [None, None, None]])
    rows = {r["label"]: r["items"] for r in table(batch._repr_html_(), "consensus")}
    fallback = batch.verdicts[-1].consensus
    assert rows == {
        **{label: str(n) for label, n in batch.consensus_counts().items()},
        f"no consensus (fallback {fallback})": "1",
    }


def test_disputed_items_come_first_no_consensus_then_lowest_agreement() -> None:
    batch = batch_of([*ROWS, [None, None, None]])
    rows = table(batch._repr_html_(), "items")
    assert [r["id"] for r in rows] == ["item-5", "item-3", "item-1", "item-2", "item-0", "item-4"]
    assert [r["why"] for r in rows] == [
        "no consensus",
        "disagreement",
        "disagreement",
        "call failed",
        "",
        "",
    ]


def test_an_item_row_shows_each_critics_label_and_confidence() -> None:
    rows = table(batch_of(ROWS)._repr_html_(), "items")
    row = next(r for r in rows if r["id"] == "item-2")
    assert (row["a"], row["b"], row["c"]) == ("REJECT 0.80", "REJECT 0.80", "ERROR")
    assert (row["consensus"], row["agreement"]) == ("REJECT", "100.0%")


def test_a_failed_cell_carries_the_error_and_a_vote_its_reasoning_on_hover() -> None:
    results = [item(["KEEP", "KEEP", None], "q", reasoning="because")]
    titles = parse(BatchResult.from_results(results)._repr_html_()).titles
    assert "server: HTTP 503 upstream busy" in titles
    assert "because" in titles


def test_a_large_batch_shows_max_rows_items_and_says_how_many_more() -> None:
    batch = batch_of([["KEEP", "KEEP", "KEEP"]] * 100 + [["KEEP", "REJECT", "KEEP"]] * 20)
    html = batch._repr_html_()
    rows = table(html, "items")
    assert len(rows) == MAX_ROWS
    assert [r["id"] for r in rows[:20]] == [f"item-{i}" for i in range(100, 120)]
    assert rows[20]["id"] == "item-0"
    assert f"Showing {MAX_ROWS} of 120 items (70 more)" in html


def test_max_rows_caps_the_disputed_items_too() -> None:
    batch = batch_of([["KEEP", "REJECT", "KEEP"]] * 30)
    rows = table(batch_html(batch, max_rows=10), "items")
    assert [r["id"] for r in rows] == [f"item-{i}" for i in range(10)]


def test_a_cascade_batch_has_a_tiers_table_and_a_tier_column() -> None:
    batch = BatchResult.from_results([cascade_result("REJECT"), cascade_result("KEEP")])
    html = batch._repr_html_()
    tiers = table(html, "tiers")
    assert [(r["tier"], r["asked"], r["decided"]) for r in tiers] == [
        ("0", "2", "0"),
        ("1", "2", "2"),
    ]
    assert [r["tier"] for r in table(html, "items")] == ["1", "1"]


def test_an_empty_batch_renders_its_headline() -> None:
    html = BatchResult(verdicts=[], critics=[], voting="majority")._repr_html_()
    assert overview(html)["items"] == "0"


# -- safety --------------------------------------------------------------------------------


def hostile_batch() -> BatchResult:
    verdicts = [
        Verdict(kind=HOSTILE, critic_id=HOSTILE, reasoning=HOSTILE * 20, model=HOSTILE),
        Verdict(
            kind="ERROR",
            critic_id="b",
            error=f"bad_request: {HOSTILE}",
            error_kind=ErrorKind.BAD_REQUEST,
        ),
    ]
    result = EnsembleVerdict(
        query_id=HOSTILE, verdicts=verdicts, consensus=HOSTILE, voting=HOSTILE, agreement_pct=0.5
    )
    return BatchResult(verdicts=[result], critics=[HOSTILE, "b"], voting=HOSTILE)


@pytest.mark.parametrize(
    "render",
    [
        lambda b: b._repr_html_(),
        lambda b: b.verdicts[0]._repr_html_(),
        lambda b: b.verdicts[0].verdicts[0]._repr_html_(),
        lambda b: b.verdicts[0].verdicts[1]._repr_html_(),
    ],
    ids=["batch", "item", "verdict", "error"],
)
def test_text_from_results_is_escaped(render: Any) -> None:
    html = render(hostile_batch())
    parsed = parse(html)
    assert "script" not in parsed.tags
    assert "<script" not in html.lower()
    assert "&lt;script&gt;" in html


@pytest.mark.parametrize(
    "render",
    [
        lambda: batch_of(ROWS)._repr_html_(),
        lambda: cascade_result("KEEP")._repr_html_(),
        lambda: vote("a", "KEEP", usage=Usage(prompt_tokens=5))._repr_html_(),
    ],
    ids=["batch", "cascade-item", "verdict"],
)
def test_the_html_loads_nothing_from_outside_and_runs_no_script(render: Any) -> None:
    html = render()
    tags = set(parse(html).tags)
    assert not tags & {"script", "link", "img", "iframe", "style", "object", "embed"}
    assert not re.search(r"https?:|src=|url\(|on\w+=", html)
