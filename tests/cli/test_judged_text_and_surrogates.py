"""The command line and issue 25: results store the text judged (``review --no-item-text``
leaves it out), ``stats --disputed`` shows it, ``stats`` and ``revote`` name simulated
critics, and a lone surrogate in an item id or a critic's name never makes a results file
unreadable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.batch._items import ITEM_TEXT_CAP, ITEM_TEXT_TOTAL_CAP
from cross_judge.testing import VendorServer
from cross_judge.verdict import ItemText

from .conftest import EXAMPLES, run, write_items, write_panel

SIMULATED = "are simulated: their answers come from the simulated vendor"


def manifest_of(out: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        out.with_name(out.name + ".manifest.json").read_text(encoding="utf-8")
    )
    return loaded


# -- the text judged -----------------------------------------------------------------------------


def test_review_stores_each_items_query_and_context_with_its_result(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(
        tmp_path, [{"id": "one", "query": f"Felines {tag}", "context": {"topic": "cats"}}]
    )
    out = tmp_path / "out.jsonl"
    panel = write_panel(tmp_path, server)
    code, _, _ = run(capsys, "review", items, "--panel", panel, "--out", out)
    assert code == 0
    (result,) = ResultsFile.read(out)
    assert result.item == ItemText(query=f"Felines {tag}", context={"topic": "cats"})
    options = manifest_of(out)["runs"][-1]["options"]  # type: ignore[index]
    assert options["item_text"] is True


def test_review_no_item_text_leaves_the_text_out_and_says_so_in_the_manifest(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    secret = f"private text {tag}"
    items = write_items(tmp_path, [{"id": "p1", "query": secret, "context": {"note": secret}}])
    out = tmp_path / "out.jsonl"
    panel = write_panel(tmp_path, server)
    code, _, _ = run(capsys, "review", items, "--panel", panel, "--out", out, "--no-item-text")
    assert code == 0
    assert secret not in out.read_text(encoding="utf-8")
    (result,) = ResultsFile.read(out)
    assert result.item is None
    options = manifest_of(out)["runs"][-1]["options"]  # type: ignore[index]
    assert options["item_text"] is False


def test_review_help_states_the_cap_on_stored_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "review", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--no-item-text" in text
    assert f"{ITEM_TEXT_CAP:,} characters per text and {ITEM_TEXT_TOTAL_CAP:,} per item" in text


def test_stats_disputed_lists_the_disputed_items_with_the_text_they_judged(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = BatchResult.from_jsonl(results)
    for result in batch.verdicts:
        result.item = ItemText(query=f"text of {result.query_id}", context={"lang": "en"})
    results.unlink()
    batch.to_jsonl(results)
    code, out, _ = run(capsys, "stats", results, "--disputed")
    assert code == 0
    listing = out.split("disputed items:", 1)[1]
    assert listing.startswith(" 2 of 4 (split vote 2)")
    assert "s1  consensus REJECT, agreement 66.7%: split vote" in listing
    assert "query: text of s1" in listing and "context.lang: en" in listing
    assert "text of u1" not in listing  # unanimous: not disputed


def test_stats_disputed_on_results_without_text_lists_ids_and_says_why(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "stats", results, "--disputed", "1")
    assert code == 0
    assert "disputed items: 2 of 4 (split vote 2); the first 1 shown" in out
    assert "store no item text" in out


# -- simulated critics -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``review`` of the shipped example: three simulated critics, offline."""
    out = tmp_path_factory.mktemp("sim") / "out.jsonl"
    panel = EXAMPLES / "panel.yaml"
    code = run_main("review", EXAMPLES / "items.jsonl", "--panel", panel, "--out", out)
    assert code == 0
    return out


def run_main(*argv: object) -> int:
    from cross_judge.cli import main

    return main([str(a) for a in argv])


def test_stats_names_the_simulated_critics(
    simulated_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "stats", simulated_run)
    assert code == 0
    assert "careful, lenient, reasoner " + SIMULATED in " ".join(out.split())
    assert "careful*" in out


def test_revote_names_the_simulated_critics(
    simulated_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "revote", simulated_run, "--voting", "unanimous")
    assert code == 0
    assert SIMULATED in " ".join(out.split())


def test_report_names_the_simulated_critics(
    simulated_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "report.html"
    code, _, _ = run(capsys, "report", simulated_run, "-o", page)
    assert code == 0
    html = page.read_text(encoding="utf-8")
    assert "careful, lenient, reasoner " + SIMULATED in html
    assert "cost_usd None" not in html


# -- lone surrogates -------------------------------------------------------------------------


def test_a_lone_high_surrogate_in_an_item_id_leaves_the_results_readable(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    # {"id": "x\ud800y", ...}: valid JSON, judged and billed, then unreadable for good.
    items = tmp_path / "items.jsonl"
    lines = [
        '{"id": "x\\ud800y", "query": "Felines ' + tag + '"}',
        '{"id": "plain", "query": "Noble gases ' + tag + '"}',
    ]
    items.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    panel = write_panel(tmp_path, server)
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out)
    assert code == 0, err
    assert {r.query_id for r in ResultsFile.read(out)} == {"x\ud800y", "plain"}
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")
    assert code == 0, err
    assert "resuming: " in err
    code, _, err = run(capsys, "stats", out, "--disputed")
    assert code == 0, err
    code, _, err = run(capsys, "report", out, "-o", tmp_path / "r.html")
    assert code == 0, err
    (tmp_path / "r.html").read_text(encoding="utf-8")  # UTF-8 through and through
    revoted = tmp_path / "n.jsonl"
    code, _, err = run(capsys, "revote", out, "--voting", "unanimous", "--out", revoted)
    assert code == 0, err
    assert {r.query_id for r in ResultsFile.read(revoted)} == {"x\ud800y", "plain"}


def test_an_undecodable_file_name_survives_the_manifest_a_resume_and_the_report(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    # A file name that is not UTF-8 reaches Python as a lone surrogate ("\udcff", the
    # surrogateescape of byte 0xff), and the run manifest records it in the command line.
    items = write_items(tmp_path, [{"id": "one", "query": f"Felines {tag}"}])
    odd = items.with_name(os.fsdecode(b"items-\xff.jsonl"))
    items.rename(odd)
    assert "\udcff" in str(odd)
    out = tmp_path / "out.jsonl"
    panel = write_panel(tmp_path, server)
    code, _, err = run(capsys, "review", odd, "--panel", panel, "--out", out)
    assert code == 0, err
    run_entry = manifest_of(out)["runs"][-1]  # type: ignore[index]
    assert run_entry["items"]["file"] == str(odd)
    assert str(odd) in run_entry["command"]
    code, _, err = run(capsys, "review", odd, "--panel", panel, "--out", out, "--resume")
    assert code == 0, err
    code, _, err = run(capsys, "report", out, "-o", tmp_path / "r.html")
    assert code == 0, err
    assert "items-\\udcff.jsonl" in (tmp_path / "r.html").read_text(encoding="utf-8")
