"""``cross-judge review --resume`` after a kill makes only the calls whose answer never
arrived: every answer that came back before the kill is in the answers journal beside OUT
(``OUT.journal.jsonl``) and is not asked, nor billed, again.

An item is written to OUT only when its whole panel has answered, so before the journal a
kill lost the answers of the critics that had answered the items still in flight, and a
resume made (and billed) those calls again. The subprocess test scripts the vendor so that
the kill lands at a known state, never by timing: one critic's calls hang (held until the
client goes away) once it has answered a few, so that some items are in OUT, the others
in flight have their other critics' answers in the journal, and nothing else can happen
until the kill.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

import cross_judge
from cross_judge import pricing
from cross_judge.batch import ResultsFile
from cross_judge.cli import main
from cross_judge.panel_file import load_panel
from cross_judge.pricing import register_price
from cross_judge.testing import Persona, Reply, VendorServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])
WAIT_S = 300.0  # a bound for waits that take well under a second: a hang, never a slow machine
ITEMS = 20
CONCURRENCY = 4
ANSWERED = 6  # the held critic answers this many requests, then holds every further one
ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fits"}'


@pytest.fixture
def server() -> Iterator[VendorServer]:
    persona = Persona("default", labels=("KEEP", "REJECT", "SPLIT", "MERGE"))
    with VendorServer(default_persona=persona) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _forget_prices() -> Iterator[None]:
    yield
    pricing._clear_registered()


def write_inputs(folder: Path, server: VendorServer, models: tuple[str, ...]) -> list[str]:
    """The items, a panel of ``models`` on ``server`` (calls that only a kill ends: a
    timeout of ``WAIT_S``, no retry) and a price file; the review's arguments."""
    (folder / "items.jsonl").write_text(
        "".join(
            json.dumps({"id": f"id-{n:02d}", "query": f"journal candidate {n:02d}"}) + "\n"
            for n in range(ITEMS)
        ),
        encoding="utf-8",
    )
    critics = "".join(
        f"\n  - name: {m}\n    model: {m}\n    vendor: custom\n    base_url: {server.url}"
        f"\n    prompt: taxonomy-review@1\n    timeout: {WAIT_S:g}\n    max_retries: 0"
        for m in models
    )
    (folder / "panel.yaml").write_text(f"critics:{critics}\n", encoding="utf-8")
    prices = "".join(f"\n      {m}: {{input: 1.0, output: 4.0, batch: 0.5}}" for m in models)
    (folder / "prices.yaml").write_text(f"vendors:\n  custom:\n    models:{prices}\n")
    return [
        "review",
        str(folder / "items.jsonl"),
        "--panel",
        str(folder / "panel.yaml"),
        "--out",
        str(folder / "out.jsonl"),
        "--concurrency",
        str(CONCURRENCY),
        "--prices",
        str(folder / "prices.yaml"),
        "--no-progress",
    ]


@contextlib.contextmanager
def running_review(folder: Path, args: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m cross_judge.cli *args`` as a child process, killed (if still running) on
    the way out; output to files, so a full pipe never blocks it."""
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


def wait_for(
    what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes], folder: Path
) -> None:
    """Poll ``ready`` until it holds; fail (with the review's stderr) if the review exits
    first or ``WAIT_S`` passes."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if proc.poll() is not None:
            err = (folder / "stderr.txt").read_text(errors="replace")
            pytest.fail(f"the review exited with {proc.returncode} before {what}:\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"the review did not reach {what} within {WAIT_S:g} s")
        time.sleep(0.01)


def journal_path(out: Path) -> Path:
    """Where a review keeps its answers journal: ``OUT.journal.jsonl`` beside OUT."""
    return out.with_name(out.name + ".journal.jsonl")


def lines_in(path: Path) -> int:
    """Whole lines of ``path`` (0 when it does not exist)."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_killed_review_resumes_making_only_the_calls_whose_answer_never_arrived(
    tmp_path: Path, server: VendorServer
) -> None:
    models = ("jr-a", "jr-b", "jr-held")
    args = write_inputs(tmp_path, server, models)
    out = tmp_path / "out.jsonl"
    journal = journal_path(out)
    server.script("jr-held", *[Reply.content(ANSWER)] * ANSWERED)
    server.always("jr-held", Reply.hang())  # held until the client goes away
    try:
        with running_review(tmp_path, args) as first:
            # ANSWERED items complete; CONCURRENCY more start, and their held calls keep
            # every slot: once the vendor has had every call of those items and only the
            # held ones are open, nothing more can happen until the kill.
            every_call = dict.fromkeys(models, ANSWERED + CONCURRENCY)

            def held() -> bool:
                stats = server.stats()
                return stats["by_model"] == every_call and stats["in_flight"] == CONCURRENCY

            wait_for(
                "its held calls", lambda: lines_in(out) == ANSWERED and held(), first, tmp_path
            )
            assert journal.exists(), "no answers journal beside OUT"
            arrived = len(models) * ANSWERED + 2 * CONCURRENCY  # the held calls' never did
            wait_for(
                "the answers in its journal", lambda: lines_in(journal) == arrived, first, tmp_path
            )
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while server.stats()["in_flight"]:  # they end as the server sees their client gone
            assert time.monotonic() < deadline, "the held calls outlived their client"
            time.sleep(0.01)
    finally:
        server.always("jr-held", None)
    assert server.stats()["requests"] == len(models) * (ANSWERED + CONCURRENCY)

    with running_review(tmp_path, [*args, "--resume"]) as second:
        code = second.wait(timeout=WAIT_S)
    assert code == 0, (tmp_path / "stderr.txt").read_text()

    ids = [r.query_id for r in ResultsFile.read(out)]
    assert Counter(ids) == Counter(f"id-{n:02d}" for n in range(ITEMS))
    # The panel's calls, plus the held ones, whose answers never arrived: nothing else.
    stats = server.stats()
    assert stats["requests"] == len(models) * ITEMS + CONCURRENCY
    assert stats["by_model"] == {"jr-a": ITEMS, "jr-b": ITEMS, "jr-held": ITEMS + CONCURRENCY}
    assert not journal.exists()  # the run is complete: nothing is left to resume


def test_a_resumed_review_bills_a_kept_answer_once_and_says_it_was_kept(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.critic._journal import journaling, judging_item

    models = ("jb-a", "jb-b")
    args = write_inputs(tmp_path, server, models)
    out = tmp_path / "out.jsonl"
    for model in models:
        register_price(model, vendor="custom", input=1.0, output=4.0)
    panel = load_panel(tmp_path / "panel.yaml").build()
    # An interrupted run in effect: id-00's answers arrived and are in the journal, and no
    # result was written.
    with ResultsFile.open(out, journal=True) as results:

        async def judge_first_item() -> float:
            with journaling(results.journal), judging_item("id-00"):
                result = await panel.judge("journal candidate 00", query_id="id-00")
            await panel.aclose()
            assert result.cost_usd is not None and result.cost_usd > 0
            return result.cost_usd

        paid = anyio.run(judge_first_item)
    server.reset_stats()

    assert main([*args, "--resume", "--budget-usd", "1"]) == 0
    stdout = capsys.readouterr().out

    assert server.stats()["requests"] == len(models) * (ITEMS - 1)  # none for id-00
    (kept,) = [r for r in ResultsFile.read(out) if r.query_id == "id-00"]
    assert all(v.cached and v.attempts == 0 for v in kept.verdicts)
    assert kept.cost_usd == pytest.approx(paid)  # what it cost once, in OUT once
    assert "2 answers kept from an interrupted run" in stdout
    (run,) = json.loads(out.with_name(out.name + ".manifest.json").read_text())["runs"]
    assert run["options"]["budget_spent_before_usd"] == pytest.approx(paid)  # spent before
    everything = sum(r.cost_usd or 0.0 for r in ResultsFile.read(out))
    assert run["totals"]["cost_usd"] == pytest.approx(everything - paid)  # not this run's
    assert run["totals"]["answers_kept"] == 2


def test_a_fresh_review_beside_a_journal_of_an_interrupted_run_exits_2_naming_resume(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.critic._journal import journaling, judging_item

    args = write_inputs(tmp_path, server, ("jf-a",))
    out = tmp_path / "out.jsonl"
    panel = load_panel(tmp_path / "panel.yaml").build()
    with ResultsFile.open(out, journal=True) as results:

        async def answer_one() -> None:
            with journaling(results.journal), judging_item("id-00"):
                await panel.judge("journal candidate 00", query_id="id-00")
            await panel.aclose()

        anyio.run(answer_one)
    server.reset_stats()

    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{journal_path(out)} holds the answers of an interrupted run" in err
    assert "--resume" in err and "Traceback" not in err
    assert server.stats()["requests"] == 0


def test_retry_failed_after_a_kill_asks_only_the_call_that_failed(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.critic._journal import journaling

    models = ("jt-a", "jt-b")
    args = write_inputs(tmp_path, server, models)
    out = tmp_path / "out.jsonl"
    server.script("jt-b", Reply.status(400))  # one item gets a failed call
    panel = load_panel(tmp_path / "panel.yaml").build()
    items = [{"id": f"id-{n:02d}", "query": f"journal candidate {n:02d}"} for n in range(ITEMS)]
    # A run killed once every result was written, before it could call itself complete.
    with ResultsFile.open(out, journal=True) as results:

        async def judge_all() -> None:
            with journaling(results.journal):
                stream = panel.stream(items)
            async with stream:
                async for result in stream:
                    results.append(result)
            await panel.aclose()

        anyio.run(judge_all)
    server.reset_stats()

    assert main([*args, "--retry-failed"]) == 0
    capsys.readouterr()

    assert server.stats()["by_model"] == {"jt-b": 1}  # the valid answer of jt-a was kept
    assert Counter(r.query_id for r in ResultsFile.read(out)) == Counter(i["id"] for i in items)
    assert all(r.n_errors == 0 for r in ResultsFile.read(out))


def test_a_resumed_cascade_asks_no_tier_whose_answers_were_kept(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.critic._journal import journaling, judging_item

    args = write_inputs(tmp_path, server, ("jc-a", "jc-b"))
    tiers = "".join(
        f"\n  - critics:\n      - {{name: {m}, model: {m}, vendor: custom, base_url: "
        f"'{server.url}', prompt: taxonomy-review@1, max_retries: 0}}"
        for m in ("jc-a", "jc-s")
    )
    (tmp_path / "panel.yaml").write_text(f"tiers:{tiers}\nescalate: {{agreement_below: .inf}}\n")
    out = tmp_path / "out.jsonl"
    cascade = load_panel(tmp_path / "panel.yaml").build()
    with ResultsFile.open(out, journal=True) as results:  # id-00 answered by both tiers

        async def judge_first_item() -> int:
            with journaling(results.journal), judging_item("id-00"):
                result = await cascade.judge("journal candidate 00", query_id="id-00")
            await cascade.aclose()
            return result.tier or 0

        assert anyio.run(judge_first_item) == 1  # escalated: every item is
    server.reset_stats()

    assert main([*args, "--resume"]) == 0
    capsys.readouterr()

    assert server.stats()["by_model"] == {"jc-a": ITEMS - 1, "jc-s": ITEMS - 1}
    (kept,) = [r for r in ResultsFile.read(out) if r.query_id == "id-00"]
    assert kept.tier == 1 and all(v.cached for v in kept.verdicts)


def test_a_resume_in_batch_mode_sends_no_batch_request_for_a_kept_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.critic._journal import journaling, judging_item

    models = ("jm-a", "jm-b")
    out = tmp_path / "out.jsonl"
    persona = Persona("default", labels=("KEEP", "REJECT", "SPLIT", "MERGE"))
    with VendorServer(default_persona=persona, batch_polls=0) as server:
        args = write_inputs(tmp_path, server, models)
        panel = load_panel(tmp_path / "panel.yaml").build()
        with ResultsFile.open(out, journal=True) as results:  # id-00 answered live

            async def judge_first_item() -> None:
                with journaling(results.journal), judging_item("id-00"):
                    await panel.judge("journal candidate 00", query_id="id-00")
                await panel.aclose()

            anyio.run(judge_first_item)
        server.reset_stats()

        batch = ["--mode", "batch", "--batch-vendors", "custom", "--poll", "0.01"]
        assert main([*args, *batch, "--resume"]) == 0
        capsys.readouterr()
        stats = server.stats()

    assert stats["requests"] == 0
    assert stats["batch_requests"]["openai"] == len(models) * (ITEMS - 1)
    assert len(list(ResultsFile.read(out))) == ITEMS


def test_a_resume_passes_over_a_journal_line_torn_by_a_kill_and_asks_that_call_again(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.critic._journal import journaling, judging_item

    models = ("jl-a", "jl-b")
    args = write_inputs(tmp_path, server, models)
    out = tmp_path / "out.jsonl"
    panel = load_panel(tmp_path / "panel.yaml").build()
    with ResultsFile.open(out, journal=True) as results:  # id-00 answered by both critics

        async def judge_first_item() -> None:
            with journaling(results.journal), judging_item("id-00"):
                await panel.judge("journal candidate 00", query_id="id-00")
            await panel.aclose()

        anyio.run(judge_first_item)
    journal = journal_path(out)
    whole = journal.read_bytes()
    journal.write_bytes(whole[: len(whole) - 20])  # the kill tore the last line
    server.reset_stats()

    assert main([*args, "--resume"]) == 0
    err = capsys.readouterr().err

    assert f"{journal}: passed over 1 line that is not a whole answer" in err
    assert f"{journal} keeps 1 answer that arrived" in err
    assert server.stats()["requests"] == len(models) * (ITEMS - 1) + 1
