"""``cross-judge review`` with a cascade panel (``tiers:``), ``--all-tiers``, resuming, the
manifest and summary of a cascade, and ``cross-judge calibrate``.

Critics are ``vendor: custom`` against a simulated vendor started here (cheap personas at
0.75 accuracy, a strong one at 0.93, errors correlated), so that each item's truth is
known (``set_gold``) and each request can be counted.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import cross_judge
from cross_judge import Cascade, Escalation
from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.cascade_calibration import calibrate_cascade
from cross_judge.cli import main
from cross_judge.panel_file import load_panel
from cross_judge.testing import Persona, Reply, VendorServer

from ..waits import SAFETY_NET_S

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
CHEAP = ("cheap-a", "cheap-b", "cheap-c")
STRONG = "strong"
WAIT_S = SAFETY_NET_S  # an upper bound for waits that normally take well under a second

ONE_WORKER = pytest.mark.xdist_group("cli-cascade-calibration")
"""For the tests of ``full_run``: on one xdist worker, so the module builds it once."""


def simulated_vendor() -> VendorServer:
    """Three cheap critics and a strong one, their errors correlated."""
    personas = [Persona(m, accuracy=0.75, seed=n, labels=LABELS) for n, m in enumerate(CHEAP)]
    personas.append(Persona(STRONG, accuracy=0.93, seed=9, labels=LABELS))
    default = Persona("default", labels=LABELS)
    return VendorServer(personas, default_persona=default, error_correlation=0.5, count_items=True)


@pytest.fixture(scope="module")
def vendor() -> Iterator[VendorServer]:
    with simulated_vendor() as server:
        yield server


@pytest.fixture(scope="module")
def calibration_vendor() -> Iterator[VendorServer]:
    """A vendor of its own for :func:`full_run`: what the shared one answers depends on the
    tests that ran on it before (which pytest-xdist shares out differently on each run)."""
    with simulated_vendor() as server:
        yield server


@pytest.fixture
def tag(request: pytest.FixtureRequest) -> str:
    """Makes item texts unique to the test, so the shared server's counts stay apart."""
    return request.node.name


def critic(name: str, model: str, server: VendorServer, retries: int = 0) -> str:
    return (
        f"      - {{name: {name}, model: {model}, vendor: custom, base_url: '{server.url}', "
        "prompt: taxonomy-review@1, labels: [KEEP, REJECT, SPLIT, MERGE], "
        f"max_retries: {retries}}}\n"
    )


def write_cascade(
    folder: Path,
    server: VendorServer,
    *,
    escalate: str = "{agreement_below: 1.0}",
    final: str = "decide",
    cheap: tuple[str, ...] = CHEAP,
    strong: str = STRONG,
    tier0: str = "",
    retries: int = 0,
) -> Path:
    """A cheap tier (three critics) and a strong one (one critic)."""
    text = "tiers:\n  - " + (f"{tier0}\n    " if tier0 else "") + "critics:\n"
    text += "".join(critic(f"c{n}", model, server, retries) for n, model in enumerate(cheap))
    text += "  - critics:\n" + critic("s", strong, server, retries)
    text += f"escalate: {escalate}\nfinal: {final}\n"
    path = folder / "cascade.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def write_items(
    folder: Path, server: VendorServer, tag: str, count: int, *, name: str = "items.jsonl"
) -> tuple[Path, Path]:
    """``count`` items with known truths, and their gold file."""
    rng = random.Random(tag)
    items, gold = [], []
    for n in range(count):
        text, label = f"{tag} candidate {n}", rng.choice(LABELS)
        server.set_gold(text, label)
        items.append({"id": f"i{n}", "query": text})
        gold.append({"id": f"i{n}", "label": label})
    path = folder / name
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    gold_path = folder / "gold.jsonl"
    gold_path.write_text("".join(json.dumps(g) + "\n" for g in gold), encoding="utf-8")
    return path, gold_path


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def results(path: Path) -> list[cross_judge.EnsembleVerdict]:
    return list(ResultsFile.read(path))


def asked(server: VendorServer, model: str) -> int:
    return int(server.stats()["by_model"].get(model, 0))


def review(
    capsys: pytest.CaptureFixture[str], items: Path, panel: Path, out: Path, *more: object
) -> tuple[int, str, str]:
    return run(capsys, "review", items, "--panel", panel, "--out", out, "--no-progress", *more)


# -- review -------------------------------------------------------------------------------------


def test_review_with_a_cascade_panel_stores_each_results_tier_and_tiers(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 40)
    out = tmp_path / "out.jsonl"
    code, _, err = review(capsys, items, write_cascade(tmp_path, vendor), out)
    assert code == 0, err
    stored = results(out)
    assert sorted(r.query_id for r in stored) == sorted(f"i{n}" for n in range(40))
    for result in stored:
        assert result.tier is not None and result.tiers is not None
        assert len(result.tiers) == result.tier + 1  # asked up to the deciding tier only
        assert result.consensus == result.tiers[result.tier].consensus
    assert {r.tier for r in stored} == {0, 1}  # some agreed at once, some escalated


def test_only_items_the_cheap_tier_disagrees_on_reach_the_strong_tier(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 40)
    out = tmp_path / "out.jsonl"
    before = asked(vendor, STRONG)
    assert review(capsys, items, write_cascade(tmp_path, vendor), out)[0] == 0
    escalated = [r for r in results(out) if r.tier == 1]
    assert all(r.tiers and r.tiers[0].agreement_pct < 1.0 for r in escalated)
    assert all(r.tiers and r.tiers[0].agreement_pct == 1.0 for r in results(out) if r.tier == 0)
    assert asked(vendor, STRONG) - before == len(escalated)


def test_all_tiers_asks_every_tier_on_every_item_and_decides_as_without(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 30)
    panel = write_cascade(tmp_path, vendor)
    full, plain = tmp_path / "full.jsonl", tmp_path / "plain.jsonl"
    before = asked(vendor, STRONG)
    code, _, err = review(capsys, items, panel, full, "--all-tiers")
    assert code == 0, err
    assert asked(vendor, STRONG) - before == 30
    assert all(r.tiers is not None and len(r.tiers) == 2 for r in results(full))
    assert review(capsys, items, panel, plain)[0] == 0
    decided = {r.query_id: (r.tier, r.consensus) for r in results(plain)}
    assert {r.query_id: (r.tier, r.consensus) for r in results(full)} == decided


def test_all_tiers_is_refused_for_a_panel_of_critics_before_any_call(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 2)
    panel = tmp_path / "panel.yaml"
    panel.write_text("critics:\n" + critic("a", CHEAP[0], vendor), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    requests = vendor.stats()["requests"]
    code, stdout, err = review(capsys, items, panel, out, "--all-tiers")
    assert code == 2 and stdout == ""
    assert (
        f"cross-judge: error: --all-tiers asks every tier of a cascade on every item, and {panel}"
        in err
    )
    assert "is one ensemble (critics:, no tiers:)" in err and "Traceback" not in err
    assert not out.exists() and vendor.stats()["requests"] == requests


def test_a_cascade_panel_mistake_exits_2_naming_field_and_line(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 2)
    panel = write_cascade(tmp_path, vendor, escalate="{agreement_below: 90}")
    code, _, err = review(capsys, items, panel, tmp_path / "out.jsonl")
    assert code == 2
    assert (
        f"{panel}:8: escalate.agreement_below: must be in [0, 1] (a fraction, not a percent)" in err
    )


# -- resume, retry, budget ----------------------------------------------------------------------


def test_resume_after_a_partial_run_judges_only_the_rest(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 30)
    first_half = tmp_path / "half.jsonl"
    first_half.write_text("".join(items.read_text().splitlines(keepends=True)[:15]))
    panel, out = write_cascade(tmp_path, vendor), tmp_path / "out.jsonl"
    assert review(capsys, first_half, panel, out)[0] == 0
    before = vendor.item_requests()

    code, stdout, err = review(capsys, items, panel, out, "--resume")
    assert code == 0, err
    assert "15 items already in" in stdout
    after = vendor.item_requests()
    texts = [json.loads(line)["query"] for line in items.read_text().splitlines()]
    assert all(after[t] == before[t] for t in texts[:15])  # nothing judged (billed) twice
    assert all(after.get(t, 0) in (3, 4) for t in texts[15:])  # a tier or both, once
    assert Counter(r.query_id for r in results(out)) == Counter(f"i{n}" for n in range(30))


@contextlib.contextmanager
def running_review(folder: Path, args: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m cross_judge.cli *args`` as a child process, killed on the way out."""
    with (
        open(folder / "stdout.txt", "wb") as stdout,
        open(folder / "stderr.txt", "wb") as stderr,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-m", "cross_judge.cli", *args],
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=WAIT_S)


def wait_until_idle(server: VendorServer) -> None:
    """Wait until the server has answered or dropped everything a killed client sent (a
    request can still sit in a socket buffer after its sender died): nothing in flight and
    the per-item counts unchanged over a short settle period."""
    deadline = time.monotonic() + WAIT_S
    last = None
    while time.monotonic() < deadline:
        counts = server.item_requests()
        if not server.stats()["in_flight"] and counts == last:
            return
        last = counts
        time.sleep(0.05)


@pytest.fixture(scope="module")
def slow_vendor() -> Iterator[VendorServer]:
    """The cascade's personas answering in 50 ms, so that a run can be stopped half-way."""
    personas = [
        Persona(m, accuracy=0.75, seed=n, latency=0.05, labels=LABELS) for n, m in enumerate(CHEAP)
    ]
    personas.append(Persona(STRONG, accuracy=0.93, latency=0.05, labels=LABELS))
    with VendorServer(personas, count_items=True) as server:
        yield server


def wait_for_lines(out: Path, proc: subprocess.Popen[bytes], lines: int, folder: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not (out.exists() and out.read_bytes().count(b"\n") >= lines):
        assert proc.poll() is None, (folder / "stderr.txt").read_text()
        assert time.monotonic() < deadline, f"the review did not write {lines} results"
        time.sleep(0.01)


@pytest.mark.slow  # reviews in fresh interpreters, one killed mid-run
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_killed_cascade_review_resumes_without_judging_a_finished_item_again(
    tmp_path: Path, slow_vendor: VendorServer, tag: str
) -> None:
    items, _ = write_items(tmp_path, slow_vendor, tag, 200)
    out = tmp_path / "out.jsonl"
    args = ["review", str(items), "--panel", str(write_cascade(tmp_path, slow_vendor))]
    args += ["--out", str(out), "--concurrency", "8", "--no-progress"]
    with running_review(tmp_path, args) as first:
        wait_for_lines(out, first, 40, tmp_path)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=WAIT_S)
    wait_until_idle(slow_vendor)
    data = out.read_bytes()
    complete = data[: data.rfind(b"\n") + 1].splitlines()
    done = [json.loads(line)["query_id"] for line in complete]
    done_texts = {f"{tag} candidate {i.removeprefix('i')}" for i in done}
    assert 0 < len(done_texts) < 200
    before = slow_vendor.item_requests()

    with running_review(tmp_path, [*args, "--resume"]) as second:
        assert second.wait(timeout=WAIT_S) == 0, (tmp_path / "stderr.txt").read_text()
    after = slow_vendor.item_requests()
    assert all(after[t] == before[t] for t in done_texts)
    assert Counter(r.query_id for r in results(out)) == Counter(f"i{n}" for n in range(200))


@pytest.mark.slow  # reviews in fresh interpreters, one killed mid-run
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupted_all_tiers_review_says_how_to_resume_it_with_all_tiers(
    tmp_path: Path, slow_vendor: VendorServer, tag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    items, _ = write_items(tmp_path, slow_vendor, tag, 200)
    out = tmp_path / "out.jsonl"
    args = ["review", str(items), "--panel", str(write_cascade(tmp_path, slow_vendor))]
    args += ["--out", str(out), "--concurrency", "8", "--no-progress", "--all-tiers"]
    with running_review(tmp_path, args) as proc:
        wait_for_lines(out, proc, 10, tmp_path)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=WAIT_S)
    err = (tmp_path / "stderr.txt").read_text()
    assert code == 130, err
    command = err[err.index("Resume with:") :].splitlines()[1].split()
    assert command[:2] == ["cross-judge", "review"] and command[-2:] == ["--all-tiers", "--resume"]

    assert main(command[1:]) == 0
    capsys.readouterr()
    stored = results(out)
    assert Counter(r.query_id for r in stored) == Counter(f"i{n}" for n in range(200))
    assert all(r.tiers is not None and len(r.tiers) == 2 for r in stored)


def test_retry_failed_judges_again_an_item_whose_deciding_tier_failed(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 1)
    strong = f"{tag}-strong"  # answered by the default persona, scripted to fail once
    panel = write_cascade(tmp_path, vendor, escalate="{agreement_below: .inf}", strong=strong)
    vendor.script(strong, Reply.status(500))
    out = tmp_path / "out.jsonl"
    code, _, err = review(capsys, items, panel, out)
    assert code == 1 and "--retry-failed" in err
    assert [r.tier for r in results(out)] == [1] and results(out)[0].n_errors == 1

    code, _, err = review(capsys, items, panel, out, "--retry-failed")
    assert code == 0, err
    (result,) = results(out)
    assert result.tier == 1 and result.n_errors == 0 and result.n_valid == 1


def test_budget_needs_the_price_of_every_tiers_critics(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 3)
    panel, out = write_cascade(tmp_path, vendor), tmp_path / "out.jsonl"
    prices = tmp_path / "prices.yaml"
    cheap = ", ".join(f"{m}: {{input: 0.1, output: 0.1}}" for m in CHEAP)
    prices.write_text(f"vendors: {{custom: {{models: {{{cheap}}}}}}}\n")
    code, _, err = review(capsys, items, panel, out, "--budget-usd", "1", "--prices", prices)
    assert code == 2 and "'s' (strong on custom)" in err and not out.exists()

    prices.write_text(
        f"vendors: {{custom: {{models: {{{cheap}, {STRONG}: {{input: 2, output: 2}}}}}}}}\n"
    )
    code, stdout, err = review(capsys, items, panel, out, "--budget-usd", "1", "--prices", prices)
    assert code == 0, err
    assert re.search(r"^\s*0\s+c0, c1, c2\s+3\s+\d\s+\S+%\s+\$0\.\d{4}\s*$", stdout, re.MULTILINE)


@pytest.fixture(autouse=True)
def _no_registered_prices() -> Iterator[None]:
    from cross_judge import pricing

    yield
    pricing._clear_registered()  # --prices registers for the whole process


# -- the manifest -------------------------------------------------------------------------------


def test_the_manifest_records_the_tiers_escalation_and_final(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 2)
    panel = write_cascade(
        tmp_path, vendor, escalate="{agreement_below: [1.0, .inf]}", final="abstain"
    )
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, panel, out, "--all-tiers")[0] == 0
    (run_entry,) = json.loads((tmp_path / "out.jsonl.manifest.json").read_text())["runs"]
    recorded = run_entry["panel"]
    assert recorded["voting"] == "cascade(majority > majority)"
    assert [c["name"] for c in recorded["critics"]] == ["c0", "c1", "c2", "s"]
    assert [t["critics"] for t in recorded["tiers"]] == [["c0", "c1", "c2"], ["s"]]
    assert [t["voting"] for t in recorded["tiers"]] == ["majority", "majority"]
    assert recorded["escalate"] == {
        "agreement_below": [1.0, "inf"],
        "confidence_below": None,
        "support_below": None,
        "on_error": True,
        "on_fallback": True,
    }
    assert (recorded["final"], recorded["all_tiers"]) == ("abstain", True)
    assert run_entry["totals"]["calls"] == 8


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"escalate": "{agreement_below: 0.5}"},
            "escalate: agreement_below 1.0 -> 0.5",
        ),
        ({"tier0": "voting: unanimous"}, "tiers: tiers[0] strategy majority -> unanimous"),
        ({"final": "abstain"}, "final: decide -> abstain"),
    ],
)
def test_resume_with_a_changed_tier_or_rule_is_refused_saying_what_changed(
    tmp_path: Path,
    vendor: VendorServer,
    capsys: pytest.CaptureFixture[str],
    tag: str,
    change: dict[str, str],
    says: str,
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 4)
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, write_cascade(tmp_path, vendor), out)[0] == 0
    before = out.read_bytes()
    panel = write_cascade(tmp_path, vendor, **change)
    requests = vendor.stats()["requests"]
    code, _, err = review(capsys, items, panel, out, "--resume")
    assert code == 2
    assert "--resume with a changed panel" in err and says in err
    assert out.read_bytes() == before and vendor.stats()["requests"] == requests


def test_resume_moving_a_critic_to_another_tier_is_a_panel_change(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 2)
    out = tmp_path / "out.jsonl"
    panel = write_cascade(tmp_path, vendor)
    assert review(capsys, items, panel, out)[0] == 0
    text = panel.read_text()
    moved = critic("c2", CHEAP[2], vendor)
    panel.write_text(
        text.replace(moved, "").replace(
            "  - critics:\n      - {name: s", "  - critics:\n" + moved + "      - {name: s"
        )
    )
    code, _, err = review(capsys, items, panel, out, "--resume")
    assert code == 2
    assert 'tiers[0] critics ["c0", "c1", "c2"] -> ["c0", "c1"]' in err
    assert 'tiers[1] critics ["s"] -> ["c2", "s"]' in err


def test_resume_with_all_tiers_after_a_run_without_is_refused(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 2)
    panel, out = write_cascade(tmp_path, vendor), tmp_path / "out.jsonl"
    assert review(capsys, items, panel, out)[0] == 0
    code, _, err = review(capsys, items, panel, out, "--resume", "--all-tiers")
    assert code == 2 and "all_tiers: false -> true" in err


def test_resume_switching_from_a_panel_of_critics_to_a_cascade_is_refused(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 2)
    plain = tmp_path / "plain.yaml"
    plain.write_text("critics:\n" + critic("c0", CHEAP[0], vendor), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, plain, out)[0] == 0
    code, _, err = review(capsys, items, write_cascade(tmp_path, vendor), out, "--resume")
    assert code == 2 and "panel: one ensemble -> a cascade of 2 tiers" in err


# -- the summary --------------------------------------------------------------------------------


def tier_row(stdout: str, tier: int) -> list[str]:
    """The cells of a tier's row in the tiers table (critic names joined by ", ")."""
    section = stdout[stdout.index("\ntiers") :]
    row = next(line for line in section.splitlines() if re.match(rf"^\s*{tier}\s", line))
    return re.split(r"\s{2,}", row.strip())


def test_the_summary_has_a_tiers_table_of_asked_decided_share_and_cost(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 40)
    out = tmp_path / "out.jsonl"
    code, stdout, _ = review(capsys, items, write_cascade(tmp_path, vendor), out)
    assert code == 0
    stats = BatchResult.from_jsonl(out).tier_stats()
    header = next(line for line in stdout.splitlines() if "share decided" in line)
    assert header.split() == ["tier", "critics", "asked", "decided", "share", "decided", "cost"]
    for tier in stats:
        assert tier_row(stdout, tier.tier) == [
            str(tier.tier),
            ", ".join(tier.critics),
            str(tier.asked),
            str(tier.decided),
            f"{tier.share_decided:.1%}",
            "n/a",  # no prices for these models
        ]
    assert re.search(r"^\s*voting\s+cascade\(majority > majority\)\s*$", stdout, re.MULTILINE)
    assert "abstained" not in stdout  # nothing abstained: no column, no row


def test_the_summarys_critics_table_counts_as_skipped_the_items_a_tier_was_not_asked(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 20)
    out = tmp_path / "out.jsonl"
    code, stdout, _ = review(capsys, items, write_cascade(tmp_path, vendor), out)
    assert code == 0
    batch = BatchResult.from_jsonl(out)
    strong = batch.critic_stats()["s"]
    escalated = batch.tier_stats()[1].asked
    assert 0 < escalated < 20 and strong.items == escalated
    header = next(
        line.split() for line in stdout.splitlines() if line.split()[:2] == ["critic", "valid"]
    )
    assert "skipped" in header  # (a narrow terminal wraps "parse fails" over two lines)
    row = next(line.split() for line in stdout.splitlines() if line.split()[:1] == ["s"])
    # valid + errors + parse fails + skipped = the 20 items; agrees over those it was asked
    assert row[1:5] == [str(strong.valid), "0", "0", str(20 - escalated)]
    assert row[6] == f"{strong.agreement:.1%}"
    caption = " ".join(stdout[stdout.index("skipped: ") :].split())
    assert caption.startswith("skipped: items a critic was not asked (early stop")
    assert "a cascade tier the item did not reach" in caption
    assert "count only the items it was asked" in caption


def test_stats_of_cascade_results_shows_the_tiers_table(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 20)
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, write_cascade(tmp_path, vendor), out)[0] == 0
    code, stdout, _ = run(capsys, "stats", out)
    assert code == 0
    stats = BatchResult.from_jsonl(out).tier_stats()
    assert tier_row(stdout, 1)[:4] == ["1", "s", str(stats[1].asked), str(stats[1].decided)]


def test_abstained_items_are_counted_for_a_human(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 5)
    panel = write_cascade(tmp_path, vendor, escalate="{agreement_below: .inf}", final="abstain")
    code, stdout, _ = review(capsys, items, panel, tmp_path / "out.jsonl")
    assert code == 0
    assert re.search(r"^\s*abstained \(for a human\)\s+5\s*$", stdout, re.MULTILINE)  # overview
    assert re.search(r"^\s*abstained \(for a human\)\s+5\s+100\.0%\s*$", stdout, re.MULTILINE)
    assert not re.search(r"^\s*ABSTAIN\s", stdout, re.MULTILINE)
    header = next(line for line in stdout.splitlines() if "share decided" in line)
    assert "abstained" in header.split()
    assert tier_row(stdout, 1)[:5] == ["1", "s", "5", "0", "5"]


# -- the shipped example ------------------------------------------------------------------------


def test_the_shipped_cascade_example_runs_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cascade.jsonl"
    code, stdout, err = run(
        capsys,
        "review",
        EXAMPLES / "items.jsonl",
        "--panel",
        EXAMPLES / "cascade.yaml",
        "--out",
        out,
    )
    assert code == 0, err
    stored = results(out)
    assert len(stored) == 30 and all(r.tiers for r in stored)
    assert "critics mini-a, mini-b, mini-c, large are SIMULATED" in err
    assert "\ntiers" in stdout and "were simulated" in stdout


# -- revote -------------------------------------------------------------------------------------


def test_revote_refuses_a_cascades_results(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, _ = write_items(tmp_path, vendor, tag, 3)
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, write_cascade(tmp_path, vendor), out)[0] == 0
    code, _, err = run(capsys, "revote", out, "--voting", "unanimous")
    assert code == 2 and "holds a cascade's results" in err and "Traceback" not in err


# -- calibrate ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full_run(
    tmp_path_factory: pytest.TempPathFactory, calibration_vendor: VendorServer
) -> tuple[Path, Path, Path]:
    """300 labelled items judged by every tier, once for the module, on a fresh vendor (so
    the same answers on every run): (results, gold, panel). Tests must not change these
    files."""
    folder = tmp_path_factory.mktemp("calibration")
    items, gold = write_items(folder, calibration_vendor, "calibration", 300)
    # Retries: a connection a loaded machine drops would change an answer, and with it the
    # fit; the simulator answers an item the same on every attempt.
    panel = write_cascade(folder, calibration_vendor, retries=3)
    out = folder / "full.jsonl"
    argv = ["review", items, "--panel", panel, "--out", out, "--all-tiers", "--no-progress"]
    assert main([str(a) for a in argv]) == 0
    failed = [v.error for r in results(out) for t in r.tiers or [] for v in t.verdicts if v.error]
    assert not failed, f"the calibration run must have every answer: {failed[:3]}"
    return out, gold, panel


@ONE_WORKER
def test_calibrate_prints_the_fit_and_an_escalate_block_and_exits_0(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    code, stdout, err = run(capsys, "calibrate", out, "--gold", gold, "--target", "0.85")
    assert code == 0, err
    assert "cascade calibration" in stdout and "300 labelled items" in stdout
    assert "With probability at least 90%" in stdout
    assert "\nfinal: decide\nescalate:\n  agreement_below: " in stdout
    assert "  on_error: true\n  on_fallback: true" in stdout


@ONE_WORKER
def test_calibrate_keep_last_tier_agreement_gives_the_fit_of_the_library(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    fit = calibrate_cascade(out, gold, target=0.85, keep_last_tier_agreement=True)
    argv = ["calibrate", out, "--gold", gold, "--target", "0.85", "--keep-last-tier-agreement"]
    code, stdout, err = run(capsys, *argv)
    assert fit.guaranteed and fit.threshold is not None
    assert code == 0, err
    shown = ".inf" if math.isinf(fit.threshold) else f"{fit.threshold:g}"
    assert f"agreement_below: [{shown}]" in stdout


@ONE_WORKER
def test_the_calibrated_block_pasted_into_the_panel_gives_the_fits_escalation(
    full_run: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge import calibrate_cascade

    out, gold, original = full_run
    code, stdout, _ = run(capsys, "calibrate", out, "--gold", gold, "--target", "0.85")
    assert code == 0
    block = stdout[stdout.index("\nfinal: ") + 1 :]
    text = original.read_text()
    panel = tmp_path / "calibrated.yaml"
    panel.write_text(text[: text.index("escalate:")] + block, encoding="utf-8")
    cascade = load_panel(panel).build()
    assert isinstance(cascade, Cascade)
    fit = calibrate_cascade(out, gold, target=0.85)
    pasted = cascade.escalate
    assert isinstance(pasted, Escalation)
    for score in ("agreement", "confidence", "support"):
        assert pasted.threshold(score, 0) == fit.escalation.threshold(score, 0)
    assert fit.escalation.threshold("agreement", 0) is not None
    assert (pasted.on_error, pasted.on_fallback) == (True, True)
    assert cascade.final == fit.final
    del cascade  # its simulator stops with it (a cascade is freed by the collector)
    gc.collect()


@ONE_WORKER
def test_calibrate_with_a_per_tier_score_and_final_abstain(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    code, stdout, err = run(
        capsys, "calibrate", out, "--gold", gold, "--target", "0.85",
        "--final", "abstain", "--score", "agreement,confidence",
    )  # fmt: skip
    assert code == 0, err
    assert "\nfinal: abstain\n" in stdout
    assert re.search(
        r"  agreement_below: \[[\d.]+, null\]\n  confidence_below: \[null, [\d.]+\]", stdout
    )


@ONE_WORKER
def test_calibrate_without_a_guarantee_exits_1_saying_so(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    code, stdout, err = run(capsys, "calibrate", out, "--gold", gold, "--target", "0.999")
    assert code == 1
    assert "cross-judge: No threshold reaches the target 99.9% agreement" in err
    assert "so there is no guarantee" in err and "Label more items" in err
    assert "# NO GUARANTEE" in stdout and "agreement_below: [.inf]" in stdout


def _unwrapped(text: str) -> str:
    """``text`` with its line breaks (and the ``#`` of comment lines) and runs of spaces
    folded into single spaces."""
    return " ".join(" ".join(line.removeprefix("# ") for line in text.splitlines()).split())


@ONE_WORKER
def test_calibrate_says_the_guarantee_and_the_bound_in_the_same_words_everywhere(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    fit = calibrate_cascade(out, gold, target=0.8)
    bound = fit.agreement_lower_bound
    # The case the issue saw: a guarantee at the target beside a lower bound below it.
    assert fit.guaranteed and bound is not None and bound < 0.8 and fit.agreement is not None
    code, stdout, _ = run(capsys, "calibrate", out, "--gold", gold, "--target", "0.8")
    assert code == 0
    summary, block = stdout.split("\n\n# ", 1)
    summary, block = _unwrapped(summary), _unwrapped(block)
    guarantee = (
        "With probability at least 90% over the draw of these 300 labelled items, the cascade "
        "agrees with the gold labels on at least 80% (the target) of new items drawn like them"
    )
    assert f"agrees with the gold labels on {fit.agreement:.1%} of those it decides" in summary
    assert guarantee in summary and guarantee in block  # the same sentence, on screen and pasted
    assert f"Lower bound, at the same 90%: the agreement is at least {bound:.1%}" in summary
    assert "so it sits below the guaranteed 80%" in summary
    assert ">= 0.8" not in stdout and "(>= " not in stdout  # no second notation of either


@ONE_WORKER
def test_calibrate_shows_a_target_as_given_not_rounded_up(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    _, stdout, err = run(capsys, "calibrate", out, "--gold", gold, "--target", "0.999")
    assert "99.9%" in _unwrapped(stdout) and "99.9%" in err
    assert "100% agreement" not in _unwrapped(stdout) + err


def test_calibrate_of_results_judged_without_all_tiers_exits_2(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, gold = write_items(tmp_path, vendor, tag, 20)
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, write_cascade(tmp_path, vendor), out)[0] == 0
    code, stdout, err = run(capsys, "calibrate", out, "--gold", gold)
    assert code == 2 and stdout == ""
    assert "do not hold every tier's result" in err and "--all-tiers" in err


def test_calibrate_of_an_ensembles_results_exits_2(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, gold = write_items(tmp_path, vendor, tag, 3)
    panel = tmp_path / "plain.yaml"
    panel.write_text("critics:\n" + critic("a", CHEAP[0], vendor), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert review(capsys, items, panel, out)[0] == 0
    code, _, err = run(capsys, "calibrate", out, "--gold", gold)
    assert code == 2
    assert "holds results of one ensemble, not of a cascade" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["calibrate", "{tmp}/nope.jsonl", "--gold", "{gold}"], "nope.jsonl: no such results file"),
        (["calibrate", "{out}", "--gold", "{tmp}/nope.jsonl"], "no such gold file"),
        (
            ["calibrate", "{out}", "--gold", "{gold}", "--target", "90"],
            "(a fraction, not a percent)",
        ),
        (
            ["calibrate", "{out}", "--gold", "{gold}", "--score", "vibes"],
            "expected one of agreement, confidence, support",
        ),
        (["calibrate", "{out}", "--gold", "{gold}", "--final", "maybe"], "invalid choice: 'maybe'"),
        (["calibrate", "{out}", "--gold", "{other}"], "none of the 300 results has a gold label"),
    ],
)
@ONE_WORKER
def test_calibrate_mistakes_exit_2_without_a_traceback(
    full_run: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    says: str,
) -> None:
    out, gold, _ = full_run
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "elsewhere", "label": "KEEP"}\n')
    names = {"tmp": tmp_path, "out": out, "gold": gold, "other": other}
    code, stdout, err = run(capsys, *[a.format(**names) for a in argv])
    assert code == 2 and stdout == ""
    assert says in err and "Traceback" not in err


@ONE_WORKER
def test_calibrate_warns_that_a_one_critic_tiers_agreement_never_escalates(
    full_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = full_run
    _, _, err = run(capsys, "calibrate", out, "--gold", gold, "--final", "abstain")
    assert "tier 1 has one critic, whose agreement with itself is always 1.0" in err
    _, _, err = run(
        capsys, "calibrate", out, "--gold", gold, "--final", "abstain",
        "--score", "agreement,support",
    )  # fmt: skip
    assert "one critic" not in err


def test_calibrate_names_labelled_results_with_a_failed_call(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    items, gold = write_items(tmp_path, vendor, tag, 20)
    strong = f"{tag}-strong"  # answered by the default persona, scripted to fail once
    vendor.script(strong, Reply.status(500))
    out = tmp_path / "full.jsonl"
    panel = write_cascade(tmp_path, vendor, strong=strong)
    assert review(capsys, items, panel, out, "--all-tiers", "--concurrency", "1")[0] in (0, 1)
    (failed,) = [r.query_id for r in results(out) if r.n_errors]
    _, _, err = run(capsys, "calibrate", out, "--gold", gold)
    assert f"1 labelled result with a failed call in some tier ('{failed}')" in err
