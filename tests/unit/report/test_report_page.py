"""The HTML report (cross_judge.report, ``cross-judge report``), read as text: no browser
(tests/browser opens it in Chromium)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from cross_judge.batch import BatchResult
from cross_judge.cli import main
from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.report import render_report, write_report
from cross_judge.verdict import Answer, EnsembleVerdict, Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
HOSTILE = "<script>alert(1)</script>"


def vote(critic: str, kind: str, confidence: float = 0.8, reasoning: str = "") -> Verdict:
    return Verdict(kind=kind, confidence=confidence, critic_id=critic, reasoning=reasoning)


def failed(critic: str) -> Verdict:
    return Verdict(
        kind="ERROR",
        critic_id=critic,
        error="timeout: no answer in 60 s",
        error_kind=ErrorKind.TIMEOUT,
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


def small_batch() -> BatchResult:
    """Four items, three critics: one unanimous, one split, one with a failed call, one
    with no consensus."""
    return BatchResult.from_results(
        [
            result("calm", [vote("a", "KEEP"), vote("b", "KEEP"), vote("c", "KEEP")], "KEEP"),
            result(
                "split",
                [vote("a", "KEEP"), vote("b", "REJECT", 0.55), vote("c", "KEEP")],
                "KEEP",
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


def specs(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="cj-specs">(.*?)</script>', page, re.S)
    assert found is not None
    loaded: dict[str, Any] = json.loads(found.group(1))
    return loaded


def disputed_rows(page: str) -> list[str]:
    table = page.split('<table id="disputed-table">', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    return re.findall(r"<tr>(.*?)</tr>", body, re.S)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "data", "poster", "srcset") and value:
                self.urls.append(value)


# -- content ---------------------------------------------------------------------------------


def test_heatmap_holds_the_kappa_of_every_pair_of_critics() -> None:
    batch = small_batch()
    page = render_report(batch)
    cells = specs(page)["chart-agreement"]["data"]["values"]
    assert len(cells) == 9
    kappa = batch.pairwise_agreement("cohen")
    for cell in cells:
        if cell["a"] == cell["b"]:
            assert cell["kappa"] is None
            continue
        expected = kappa[(cell["a"], cell["b"])]
        assert cell["kappa"] == (None if expected is None else round(expected, 4))
        assert cell["text"] == ("n/a" if expected is None else f"{expected:.2f}")


def test_critic_table_shows_error_rates_from_critic_stats() -> None:
    batch = small_batch()
    page = render_report(batch)
    table = page.split('<table id="critic-stats">', 1)[1].split("</table>", 1)[0]
    stats = batch.critic_stats()
    assert stats["b"].error_rate == 0.25
    row_b = re.search(r"<tr><td>b</td>(.*?)</tr>", table, re.S)
    assert row_b is not None
    assert "25.0%" in row_b.group(1)
    assert "timeout: no answer in 60 s" in row_b.group(1)


def test_disputed_table_lists_split_failed_and_undecided_items_only() -> None:
    page = render_report(small_batch())
    rows = disputed_rows(page)
    ids = [re.findall(r'<span class="id">(.*?)</span>', row)[0] for row in rows]
    assert ids == ["split", "broken", "undecided"]
    assert "split vote" in rows[0]
    assert "failed call" in rows[1]
    assert "no consensus" in rows[2]
    assert "3 of 4 items need a look" in page


def test_disputed_row_shows_each_critics_label_confidence_and_reasoning() -> None:
    batch = BatchResult.from_results(
        [
            result(
                "x",
                [vote("a", "KEEP", 0.91, "fits the parent"), vote("b", "SPLIT", 0.42, "two ideas")],
                "KEEP",
            )
        ]
    )
    row = disputed_rows(render_report(batch))[0]
    assert re.search(r'>KEEP</span> <span class="conf">0.91</span>', row)
    assert re.search(r'>SPLIT</span> <span class="conf">0.42</span>', row)
    assert "fits the parent" in row
    assert "two ideas" in row


def test_consensus_distribution_counts_no_consensus_apart() -> None:
    values = specs(render_report(small_batch()))["chart-consensus"]["data"]["values"]
    assert {v["label"]: v["items"] for v in values} == {
        "KEEP": 2,
        "REJECT": 1,
        "(no consensus)": 1,
    }


def test_max_items_caps_the_table_and_says_how_many_were_left_out() -> None:
    page = render_report(small_batch(), max_items=1)
    assert len(disputed_rows(page)) == 1
    assert "Showing the first 1 of 3 disputed items (2 left out" in page


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(ConfigError, match="no results"):
        render_report(BatchResult(verdicts=[], critics=[], voting="majority"))


# -- safety ----------------------------------------------------------------------------------


def hostile_batch() -> BatchResult:
    return BatchResult.from_results(
        [
            result(
                HOSTILE,
                [
                    vote("a", "KEEP", reasoning='<img src=x onerror="alert(2)">'),
                    vote('"><b>critic</b>', "REJECT", reasoning="</script><script>alert(3)"),
                ],
                "KEEP",
                meta={"note": "<iframe src='https://evil.example/'></iframe>"},
            )
        ]
    )


def test_hostile_item_text_is_escaped_everywhere() -> None:
    page = render_report(hostile_batch())
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page
    assert "<b>critic</b>" not in page
    assert "<iframe" not in page
    assert "alert(3)" in page and "</script><script>alert(3)" not in page


def test_data_for_the_charts_cannot_close_its_script_element() -> None:
    page = render_report(hostile_batch())
    block = page.split('id="cj-specs">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block
    names = {cell["a"] for cell in specs(page)["chart-agreement"]["data"]["values"]}
    assert names == {"a", '"><b>critic</b>'}


def test_page_loads_nothing_from_the_network() -> None:
    page = render_report(hostile_batch())
    links = _Links()
    links.feed(page)
    assert links.urls, "the page has in-page links"
    for url in links.urls:
        assert url.startswith("#"), url
    assert "url(" not in page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "default-src 'none'" in page


def test_scripts_run_only_with_the_pages_nonce() -> None:
    page = render_report(small_batch())
    nonce = re.search(r"script-src 'nonce-([^']+)'", page)
    assert nonce is not None
    tags = re.findall(r"<script([^>]*)>", page)
    assert len(tags) == 5  # the specs (data, not run), three runtimes, the page's own script
    for attributes in tags:
        assert f'nonce="{nonce.group(1)}"' in attributes or 'type="application/json"' in attributes
    again = re.findall(r"script-src 'nonce-([^']+)'", render_report(small_batch()))
    assert again and again[0] != nonce.group(1)


# -- provenance, gold, cascades, pairs -------------------------------------------------------


def test_without_a_manifest_the_page_shows_what_the_verdicts_record() -> None:
    batch = BatchResult.from_results(
        [
            result(
                "x",
                [
                    Verdict(
                        kind="KEEP",
                        critic_id="a",
                        model="sim-1",
                        vendor="custom",
                        prompt_id="taxonomy-review",
                        prompt_version="1",
                        prompt_sha256="8e43b4fd4ce70bb8" + "0" * 48,
                    )
                ],
                "KEEP",
            )
        ]
    )
    page = render_report(batch)
    assert "No run manifest" in page
    table = page.split('<table id="critics-recorded">', 1)[1].split("</table>", 1)[0]
    assert "sim-1" in table and "taxonomy-review" in table and "8e43b4fd4ce7" in table


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results file and its manifest, from ``cross-judge review`` of the shipped example
    (three simulated critics, offline)."""
    out = tmp_path_factory.mktemp("review") / "out.jsonl"
    code = main(
        [
            "review",
            str(EXAMPLES / "items.jsonl"),
            "--panel",
            str(EXAMPLES / "panel.yaml"),
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    return out


def test_manifest_beside_the_results_gives_the_provenance(reviewed: Path) -> None:
    page = render_report(reviewed)
    manifest = json.loads(reviewed.with_name("out.jsonl.manifest.json").read_text())
    run = manifest["runs"][-1]
    prompts = page.split('<table id="prompts">', 1)[1].split("</table>", 1)[0]
    for name, record in run["prompts"].items():
        assert name in prompts
        assert record["sha256"][:12] in prompts
    assert "taxonomy-review" in prompts
    runs = page.split('<table id="runs">', 1)[1].split("</table>", 1)[0]
    assert run["started_at"] in runs
    assert "review" in runs and "panel.yaml" in runs
    panel = page.split('<table id="panel">', 1)[1].split("</table>", 1)[0]
    assert "sim-careful" in panel


def test_gold_gives_confusion_and_accuracy_against_the_labels(
    reviewed: Path, tmp_path: Path
) -> None:
    batch = BatchResult.from_jsonl(reviewed)
    gold = {r.query_id: r.consensus for r in batch.verdicts[:10]}
    gold[batch.verdicts[0].query_id] = (
        "REJECT" if batch.verdicts[0].consensus != "REJECT" else "KEEP"
    )
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in gold.items()))
    page = render_report(reviewed, gold=path)
    assert "Confusion against gold" in page
    report = batch.against(gold)
    table = page.split('<table id="confusion-table">', 1)[1].split("</table>", 1)[0]
    for row in report.rows:
        assert row.accuracy is not None
        assert f"{row.accuracy:.1%}" in table
    cells = specs(page)["chart-confusion"]["data"]["values"]
    careful = {
        (c["reference"], c["answered"]): c["count"] for c in cells if c["critic"] == "careful"
    }
    expected = report["careful"].confusion
    assert careful == {(g, a): n for g, row in expected.items() for a, n in row.items() if n}


def test_without_gold_confusion_is_against_the_consensus() -> None:
    page = render_report(small_batch())
    assert "Confusion against consensus" in page
    cells = specs(page)["chart-confusion"]["data"]["values"]
    b = {(c["reference"], c["answered"]): c["count"] for c in cells if c["critic"] == "b"}
    # b: KEEP on calm (KEEP), REJECT on split (KEEP); failed on broken; undecided left out
    assert b == {("KEEP", "KEEP"): 1, ("KEEP", "REJECT"): 1}


def cascade_batch() -> BatchResult:
    cheap_split = result("hard", [vote("m1", "KEEP"), vote("m2", "REJECT")], "REJECT")
    strong = result("hard", [vote("big", "REJECT", 0.9)], "REJECT")
    cheap_agree = result("easy", [vote("m1", "KEEP"), vote("m2", "KEEP")], "KEEP")
    return BatchResult.from_results(
        [
            result(
                "hard",
                [*cheap_split.verdicts, *strong.verdicts],
                "REJECT",
                tier=1,
                tiers=[cheap_split, strong],
            ).model_copy(update={"agreement_pct": 1.0, "n_valid": 1, "disagreement": False}),
            result("easy", cheap_agree.verdicts, "KEEP", tier=0, tiers=[cheap_agree]),
        ]
    )


def test_cascade_report_has_a_tier_column_and_the_tiers_table() -> None:
    page = render_report(cascade_batch())
    assert "Overview (a cascade)" in page
    assert '<th scope="col" data-sort="num" class=num>tier</th>' in page
    rows = disputed_rows(page)
    assert len(rows) == 1 and "hard" in rows[0] and "escalated" in rows[0]
    assert re.search(r'<td class=num data-sort="1">1</td>', rows[0])
    tiers = page.split('<table id="tiers-table">', 1)[1].split("</table>", 1)[0]
    assert "m1, m2" in tiers and "big" in tiers


def test_pairwise_report_marks_flips_with_both_orders() -> None:
    flipped = Verdict(
        kind="TIE",
        critic_id="p",
        order="both",
        flipped=True,
        answers=[
            Answer(kind="A", answered="A", confidence=0.9, order="ab"),
            Answer(kind="B", answered="A", confidence=0.8, order="ba"),
        ],
    )
    steady = Verdict(kind="A", confidence=0.7, critic_id="q", order="both", flipped=False)
    batch = BatchResult.from_results([result("pair-1", [flipped, steady], "A")])
    page = render_report(batch)
    row = disputed_rows(page)[0]
    assert '<span class="flip" title="ab: A (0.90); ba: B (0.80)">flip</span>' in row
    assert "order flip" in row
    pairs = page.split('<table id="pairs-table">', 1)[1].split("</table>", 1)[0]
    assert "Pairs: position bias" in page and "<td>p</td>" in pairs


# -- write_report and the CLI ----------------------------------------------------------------


def test_write_report_writes_the_page_and_returns_its_path(tmp_path: Path) -> None:
    path = write_report(small_batch(), tmp_path / "r.html")
    assert path == tmp_path / "r.html"
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_report_writes_beside_the_results_by_default(
    reviewed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(reviewed)]) == 0
    written = reviewed.with_suffix(".html")
    assert written.is_file()
    assert "opens offline" in capsys.readouterr().out


def test_cli_report_missing_results_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main(["report", str(missing), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such results file" in err
    assert not (tmp_path / "r.html").exists()


def test_cli_report_missing_gold_file_exits_2(
    reviewed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["report", str(reviewed), "--gold", str(tmp_path / "g.jsonl"), "-o", "x.html"])
    assert code == 2
    assert "--gold" in capsys.readouterr().err
