"""The ``cross-judge`` command, run in-process: ``review`` runs that build on earlier ones
or are capped: the response cache, ``--budget-usd`` over the results file as a whole, the
run manifest, one review per results file, ``--resume`` with another panel."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from cross_judge._version import __version__
from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.testing import VendorServer

from .conftest import ids_in, run, write_items, write_panel

pytestmark = pytest.mark.integration


# -- cache, budget and the run manifest on review ------------------------------------------------


def test_a_review_rerun_with_the_cache_makes_no_call_and_gives_the_same_statistics(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server)
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(200)])
    cache = tmp_path / "responses.sqlite3"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    code, _, _ = run(capsys, "review", items, "--panel", panel, "--out", first, "--cache", cache)
    assert code == 0
    server.reset_stats()
    code, stdout, _ = run(
        capsys, "review", items, "--panel", panel, "--out", second, "--cache", cache
    )
    assert code == 0
    assert sum(server.item_requests().values()) == 0  # the server's own count
    assert "0 calls, 600 answers from the cache" in stdout
    a, b = BatchResult.from_jsonl(first), BatchResult.from_jsonl(second)
    # Files are in completion order, which differs between runs: compare by id.
    assert {r.query_id: r.consensus for r in a.verdicts} == {
        r.query_id: r.consensus for r in b.verdicts
    }
    assert a.reliability_alpha() == pytest.approx(b.reliability_alpha(), abs=1e-12)
    assert all(v.cached and v.cost_usd == 0 for r in b.verdicts for v in r.verdicts)


def test_review_with_a_budget_needs_prices_and_skips_calls_that_do_not_fit(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(5)])
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--budget-usd", "1")
    assert code == 2 and "--prices FILE" in err and "m-a" in err and not out.exists()
    assert "register_price" not in err  # a command-line user cannot call it

    prices = tmp_path / "prices.yaml"
    prices.write_text("vendors: {custom: {models: {m-a: {input: 1, output: 1}}}}\n")
    # At $1/M a call costs about $0.0004 but reserves its worst case, about $0.0025
    # (max_tokens=2000): $0.003 lets two calls through one after the other, then refuses.
    code, stdout, err = run(
        capsys, "review", items, "--panel", panel, "--out", out,
        "--budget-usd", "0.003", "--prices", prices, "--concurrency", "1",
    )  # fmt: skip
    assert code == 1
    assert "3 calls not made (over budget)" in stdout and "--retry-failed" in err
    kinds = [r.verdicts[0].error_kind for r in ResultsFile.read(out)]
    assert kinds.count("budget") == 3


def test_the_budget_error_shows_a_price_file_that_works_once_filled_in(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a", "m-b"))
    items = write_items(tmp_path, [{"id": "i0", "query": f"{tag} 0"}])
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--budget-usd", "1")
    assert code == 2
    shown = err[err.index("    vendors:") :].split("(USD", 1)[0]
    prices = tmp_path / "prices.yaml"
    prices.write_text(textwrap.dedent(shown).replace("...", "1"))
    code, _, err = run(
        capsys, "review", items, "--panel", panel, "--out", out,
        "--budget-usd", "1", "--prices", prices,
    )  # fmt: skip
    assert code == 0, err


def test_review_writes_a_run_manifest_without_secrets(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tag: str,
) -> None:
    key = "sk-manifest-secret-0123456789abcdef"
    monkeypatch.setenv("PANEL_KEY", key)
    panel = write_panel(tmp_path, server)
    panel.write_text(
        panel.read_text().replace(
            "    max_retries: 0", "    max_retries: 0\n    api_key_env: PANEL_KEY"
        )
    )
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    out = tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out)[0] == 0
    assert run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")[0] == 0
    text = (tmp_path / "out.jsonl.manifest.json").read_text()
    manifest = json.loads(text)
    first, second = manifest["runs"]
    assert (first["status"], second["status"]) == ("done", "done")
    assert first["totals"]["items_judged"] == 3 and first["totals"]["calls"] == 9
    assert second["totals"]["items_already_done"] == 3 and second["totals"]["calls"] == 0
    assert first["cross_judge"] == __version__ and first["command"][:2] == ["cross-judge", "review"]
    assert first["prompts"]["a"]["id"] == "taxonomy-review"
    assert len(first["prompts"]["a"]["sha256"]) == 64
    assert [c["name"] for c in first["panel"]["critics"]] == ["a", "b", "c"]
    assert key not in text and key not in out.read_text()


# -- one review per results file ----------------------------------------------------------------


def test_review_refuses_an_out_another_review_holds_naming_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    from cross_judge.batch._lock import ResultsLock

    items = write_items(tmp_path, [{"id": "a", "query": f"{tag} a"}])
    out = tmp_path / "out.jsonl"
    server.reset_stats()
    with ResultsLock.acquire(out, command=["cross-judge", "review", "other.jsonl"]) as held:
        code, _, err = run(
            capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
        )
        assert held.path.exists()  # the refused run leaves the holder's lock alone
    assert code == 2
    assert f"{out} is being written by another cross-judge review (pid {os.getpid()} " in err
    assert "cross-judge review other.jsonl" in err and "--resume" in err
    assert not out.exists() and server.stats()["requests"] == 0


def test_review_removes_its_lock_file_when_done(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, [{"id": "a", "query": f"{tag} a"}])
    out = tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out)[0] == 0
    )
    assert not (tmp_path / "out.jsonl.lock").exists()


# -- resuming with another panel ----------------------------------------------------------------


def test_review_resume_with_a_changed_panel_is_refused_saying_what_changed(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out)[0] == 0
    before = out.read_bytes()
    text = panel.read_text().replace("voting: majority", "voting: unanimous")
    text = text.replace("model: m-a", "model: m-z")
    text = text.replace(
        "    prompt: taxonomy-review@1\n    max_retries: 0\n  - name: c",
        "    max_retries: 0\n  - name: c",
        1,
    )
    text += f"  - name: d\n    model: m-d\n    vendor: custom\n    base_url: {server.url}\n"
    panel.write_text(text)
    server.reset_stats()

    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")

    assert code == 2
    assert "--resume with a changed panel" in err
    assert "voting: strategy majority -> unanimous" in err
    assert "critics: added 'd'; 'a' model m-a -> m-z" in err
    assert "prompts: 'b' taxonomy-review@1 (sha256 " in err and "-> unnamed prompt" in err
    assert "--allow-panel-change" in err
    assert out.read_bytes() == before and server.stats()["requests"] == 0


def test_review_resume_with_allow_panel_change_continues_and_records_it(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)]
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:2]), "--panel", panel, "--out", out)[0]
        == 0
    )
    panel.write_text(panel.read_text().replace("voting: majority", "voting: unanimous"))
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), "--panel", panel, "--out", out,
        "--resume", "--allow-panel-change",
    )  # fmt: skip
    assert code == 0, err
    assert "warning: resuming with a changed panel (--allow-panel-change)" in err
    assert sorted(ids_in(out)) == [f"i{n}" for n in range(4)]
    runs = json.loads((tmp_path / "out.jsonl.manifest.json").read_text())["runs"]
    assert [r["panel"]["voting"] for r in runs] == ["majority", "unanimous"]
    assert runs[1]["options"]["allow_panel_change"] is True


def test_review_resume_after_changing_only_how_critics_are_asked_is_not_a_panel_change(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(4)]
    panel, out = write_panel(tmp_path, server), tmp_path / "out.jsonl"
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:2]), "--panel", panel, "--out", out)[0]
        == 0
    )
    panel.write_text(
        "# retries and timeouts do not change an answer\n"
        + panel.read_text().replace("max_retries: 0", "max_retries: 3\n    timeout: 30")
    )
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), "--panel", panel, "--out", out, "--resume"
    )
    assert code == 0, err
    assert "changed panel" not in err


# -- --budget-usd caps the results file as a whole ------------------------------------------------


def test_review_budget_counts_what_the_results_file_already_spent(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    prices = tmp_path / "prices.yaml"
    prices.write_text("vendors: {custom: {models: {m-a: {input: 1, output: 1}}}}\n")
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(6)]
    out = tmp_path / "out.jsonl"
    common = ["--panel", panel, "--out", out, "--prices", prices, "--concurrency", "1"]
    code, _, _ = run(
        capsys, "review", write_items(tmp_path, rows[:3]), *common, "--budget-usd", "1"
    )
    assert code == 0
    spent = BatchResult.from_jsonl(out).cost_usd
    assert spent is not None and spent > 0

    # $0.003 more than the file has spent: room for two calls (each reserves about
    # $0.0025 and costs about $0.0004), not three. A budget per run would allow all three.
    limit = f"{spent + 0.003:.6f}"
    code, stdout, _ = run(
        capsys, "review", write_items(tmp_path, rows), *common, "--resume", "--budget-usd", limit
    )
    assert code == 1
    assert re.search(
        rf"budget \(all of .*\): \${spent:.4f} before this run \+ \$0\.000\d in this run", stdout
    )
    assert "1 call not made (over budget)" in stdout
    kinds = [r.verdicts[0].error_kind for r in ResultsFile.read(out)]
    assert kinds.count("budget") == 1


def test_review_resume_on_a_file_that_spent_its_budget_exits_2_before_any_call(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    panel = write_panel(tmp_path, server, models=("m-a",))
    prices = tmp_path / "prices.yaml"
    prices.write_text("vendors: {custom: {models: {m-a: {input: 1, output: 1}}}}\n")
    rows = [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)]
    out = tmp_path / "out.jsonl"
    common = ["--panel", panel, "--out", out, "--prices", prices]
    assert (
        run(capsys, "review", write_items(tmp_path, rows[:2]), *common, "--budget-usd", "1")[0] == 0
    )
    spent = BatchResult.from_jsonl(out).cost_usd
    assert spent is not None
    server.reset_stats()
    code, _, err = run(
        capsys, "review", write_items(tmp_path, rows), *common, "--resume",
        "--budget-usd", f"{spent / 2:.9f}",
    )  # fmt: skip
    assert code == 2
    assert "caps" in err and "have already cost" in err and "Raise --budget-usd" in err
    assert server.stats()["requests"] == 0


def test_review_help_says_the_budget_is_for_the_results_file_as_a_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, stdout, _ = run(capsys, "review", "--help")
    help_text = " ".join(stdout.split())
    assert code == 0
    assert "spend at most X dollars on OUT as a whole" in help_text
    assert "already cost" in help_text
