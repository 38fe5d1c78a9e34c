"""What every view of results shows besides the numbers: the text each item was judged on
(``EnsembleVerdict.item``, escaped: it is untrusted), which critics were simulated (from the
run manifest), and the run totals in words (issue 25, points 1 and 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cross_judge.batch import BatchResult
from cross_judge.report import render_report
from cross_judge.report._notebook import batch_html, ensemble_html
from cross_judge.report._summary import plain_text, render_disputed, render_summary
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SIMULATED_SENTENCE = "are simulated: their answers come from the simulated vendor"


def vote(critic: str, kind: str, confidence: float = 0.8) -> Verdict:
    return Verdict(kind=kind, confidence=confidence, critic_id=critic)


def split(query_id: str, item: ItemText | None = None) -> EnsembleVerdict:
    """A 1-1 split between critics a and b: a disputed item."""
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=[vote("a", "KEEP"), vote("b", "REJECT")],
        consensus="KEEP",
        agreement_pct=0.5,
        disagreement=True,
        voting="majority",
        n_valid=2,
        item=item,
    )


JUDGED = ItemText(
    query=f"def add(a, b): return a - b  {HOSTILE}",
    context={"language": "python", "diff": "<b>-return a + b</b>", "lines": 2},
)


def batch_with_text(**fields: Any) -> BatchResult:
    return BatchResult.from_results([split("x1", JUDGED)]).model_copy(update=fields)


def disputed_row(page: str) -> str:
    table = page.split('<table id="disputed-table">', 1)[1].split("</table>", 1)[0]
    rows: list[str] = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S)
    return rows[0]


def write_manifest(results: Path, runs: list[dict[str, Any]]) -> None:
    results.with_name(results.name + ".manifest.json").write_text(
        json.dumps({"manifest_version": 1, "results": results.name, "runs": runs}),
        encoding="utf-8",
    )


# -- the text judged: the HTML report ------------------------------------------------------------


def test_report_shows_the_query_and_context_of_each_disputed_item_escaped() -> None:
    row = disputed_row(render_report(batch_with_text()))
    assert "def add(a, b): return a - b" in row
    assert ESCAPED in row and HOSTILE not in row
    assert "&lt;b&gt;-return a + b&lt;/b&gt;" in row
    assert '<span class="field">context.language</span> python' in row
    assert '<span class="field">context.lines</span> 2' in row


def test_report_of_results_without_item_text_still_lists_ids() -> None:
    row = disputed_row(render_report(BatchResult.from_results([split("old-item")])))
    assert '<span class="id">old-item</span>' in row
    assert 'class="judged"' not in row


def test_report_shows_the_cut_marker_of_a_text_cut_at_the_cap() -> None:
    cut = ItemText(query="start of it \u2026 [cut: 9,000 more characters]", cut=["query"])
    row = disputed_row(render_report(BatchResult.from_results([split("long", cut)])))
    assert "[cut: 9,000 more characters]" in row


# -- the text judged: notebooks and the terminal -------------------------------------------------


def test_notebook_view_of_one_result_shows_the_text_it_judged_escaped() -> None:
    html = ensemble_html(split("x1", JUDGED))
    assert "def add(a, b)" in html
    assert ESCAPED in html and HOSTILE not in html
    assert "context.diff" in html


def test_notebook_view_of_a_batch_shows_each_items_query() -> None:
    html = batch_html(batch_with_text())
    assert "def add(a, b)" in html
    assert HOSTILE not in html


def test_disputed_listing_prints_each_items_text_and_every_critics_label() -> None:
    text = plain_text(render_disputed(batch_with_text(), 20))
    assert "disputed items: 1 of 1 (split vote 1)" in text
    assert "x1  consensus KEEP, agreement 50.0%: split vote" in text
    assert "a KEEP 0.80  b REJECT 0.80" in text
    assert f"query: def add(a, b): return a - b {HOSTILE}" in text  # a terminal shows it as is
    assert "context.language: python" in text


def test_disputed_listing_of_results_without_text_says_so() -> None:
    text = plain_text(render_disputed(BatchResult.from_results([split("old")]), 20))
    assert "old" in text
    assert "store no item text" in text


def test_disputed_listing_shows_at_most_the_number_asked() -> None:
    batch = BatchResult.from_results([split(f"i{n}", JUDGED) for n in range(5)])
    text = plain_text(render_disputed(batch, 2))
    assert "disputed items: 5 of 5 (split vote 5); the first 2 shown" in text
    assert "i1  consensus" in text and "i2" not in text


# -- simulated critics -----------------------------------------------------------------------


def simulated_results(tmp_path: Path) -> Path:
    path = tmp_path / "out.jsonl"
    BatchResult.from_results([split("x1", JUDGED)]).to_jsonl(path)
    write_manifest(
        path,
        [
            {
                "status": "done",
                "started_at": "2025-01-01T00:00:00+00:00",
                "command": ["cross-judge", "review"],
                "options": {"simulated_critics": ["a", "b"]},
                "panel": {"critics": [{"name": "a", "vendor": "custom", "model": "sim-a"}]},
                "totals": {"items_judged": 1, "calls": 2, "cost_usd": None},
            }
        ],
    )
    return path


def test_from_jsonl_reads_the_simulated_critics_from_the_manifest(tmp_path: Path) -> None:
    assert BatchResult.from_jsonl(simulated_results(tmp_path)).simulated_critics == ["a", "b"]


def test_from_jsonl_without_a_manifest_knows_no_simulated_critic(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    BatchResult.from_results([split("x1")]).to_jsonl(path)
    assert BatchResult.from_jsonl(path).simulated_critics == []


def test_report_says_which_critics_were_simulated(tmp_path: Path) -> None:
    page = render_report(simulated_results(tmp_path))
    note = re.search(r'<p class="note" id="simulated">(.*?)</p>', page)
    assert note is not None and "a, b " + SIMULATED_SENTENCE in note.group(1)
    stats = page.split('<table id="critic-stats">', 1)[1].split("</table>", 1)[0]
    assert stats.count('<span class="sim">simulated</span>') == 2
    panel = page.split('<table id="panel">', 1)[1].split("</table>", 1)[0]
    assert '<span class="sim">simulated</span>' in panel


def test_report_of_a_batch_marks_its_simulated_critics_without_a_manifest() -> None:
    page = render_report(batch_with_text(simulated_critics=["b"]))
    assert "b is simulated: their answers come from the simulated vendor" in page


def test_report_of_real_critics_says_nothing_of_simulation() -> None:
    assert "simulated" not in render_report(batch_with_text()).split("<footer>")[0]


def test_report_formats_the_run_totals_cost_included(tmp_path: Path) -> None:
    page = render_report(simulated_results(tmp_path))
    runs = page.split('<table id="runs">', 1)[1].split("</table>", 1)[0]
    assert "cost_usd" not in runs and "None" not in runs
    assert "items judged 1, calls 2, cost n/a" in runs


def test_summary_says_which_critics_were_simulated() -> None:
    text = plain_text(render_summary(batch_with_text(simulated_critics=["a", "b"])))
    assert "a, b " + SIMULATED_SENTENCE in " ".join(text.split())
    assert re.search(r"^\s+a\*\s", text, re.M)
    assert "*: a simulated critic, not a language model" in text


def test_summary_of_real_critics_says_nothing_of_simulation() -> None:
    assert "simulated" not in plain_text(render_summary(batch_with_text()))


def test_notebook_view_of_a_batch_says_which_critics_were_simulated() -> None:
    html = batch_html(batch_with_text(simulated_critics=["a"]))
    assert "a is simulated: their answers come from the simulated vendor" in html
