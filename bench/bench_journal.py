"""What the answers journal of ``cross-judge review`` costs: client CPU per call, bytes per
answer, and the time a resume takes to read a long journal.

Every valid answer of a review is appended (one flushed JSON line, with its request's
sha256 key) to ``OUT.journal.jsonl`` as it arrives, so that a resume after a kill asks only
the calls whose answer never came (:mod:`cross_judge.critic._journal`). This measures the
client's CPU time (``time.process_time``, the simulated vendor runs in its own process) of
streaming ``--items`` items through a 3-critic panel into a results file, with the journal
and without it, alternately ``--repeats`` times (the median of each); the journal's size
per answer; and how fast :meth:`AnswerJournal.open` reads a journal of ``--lines`` answers
for a resume (all of items already done, the case of a long run killed near its end).

Then the case of the issue: ``cross-judge review`` of 200 items by 3 critics at
concurrency 8 (two answering in 50 ms, one in 500 ms, as a reasoning model would), killed
with SIGKILL once a third and again once two thirds of the items are in OUT, and resumed:
the requests the vendor received beyond the panel's 600 calls. The calls made again are
those in flight at a kill: the slow critic's, 8 per kill, and the fast ones of items
started in the last 50 ms. Before the journal, every call of the unfinished items was made
again, the fast critics' answers that had arrived included: about 2 x 8 x 3 = 48.

Targets: the journal adds at most 15% of client CPU per call; a resume reads at least
50,000 journal lines per second; the two kills cost at most 32 extra requests.

    python bench/bench_journal.py [--items 1000] [--repeats 3] [--lines 100000]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

from cross_judge import Critic, Ensemble, Usage, Verdict
from cross_judge.batch import ResultsFile
from cross_judge.critic._journal import AnswerJournal, journal_path, journaling, judging_item
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport import Completion

TARGET_CPU_RATIO = 1.15
TARGET_LINES_PER_S = 50_000.0
MODELS = ("bj-a", "bj-b", "bj-c")


def stream_cpu_s(url: str, items: int, folder: Path, journal: bool) -> float:
    """Client CPU seconds to judge ``items`` items into a new results file."""
    critics = [Critic(name=m, model=m, vendor="custom", base_url=url, api_key="k") for m in MODELS]
    rows = [
        {"id": f"i{n}", "query": f"candidate category {n} of the benchmark"} for n in range(items)
    ]
    out = Path(tempfile.mkdtemp(dir=folder)) / "out.jsonl"

    async def run() -> float:
        with ResultsFile.open(out, journal=journal) as results:
            async with Ensemble(critics) as panel:
                with journaling(results.journal):
                    stream = panel.stream(rows, concurrency=32)
                started = time.process_time()
                async with stream:
                    async for result in stream:
                        results.append(result)
                return time.process_time() - started

    return anyio.run(run)


def resume_read_s(folder: Path, lines: int) -> tuple[float, int]:
    """Seconds for a resume to open a journal of ``lines`` answers of items already done,
    and the journal's size in bytes."""
    path = journal_path(folder / "long.jsonl")
    journal = AnswerJournal.open(path)
    answer = Completion(
        text='{"kind": "KEEP", "confidence": 0.87, "reasoning": "a clear subcategory of it"}',
        usage=Usage(prompt_tokens=310, completion_tokens=42),
        model="bj-a",
    )
    verdict = Verdict(kind="KEEP", cost_usd=0.000478)
    for n in range(lines):
        with judging_item(f"i{n}"):
            journal.record(f"{n:064x}", answer, verdict)
    journal.close()
    size = path.stat().st_size
    started = time.perf_counter()
    AnswerJournal.open(path, done={f"i{n}" for n in range(lines)}, resume=True).close()
    return time.perf_counter() - started, size


def requests_over_two_kills(folder: Path) -> tuple[int, int]:
    """Requests the vendor received for a 200-item review killed twice and resumed, and the
    panel's calls (items x critics)."""
    items, concurrency = 200, 8
    (folder / "items.jsonl").write_text(
        "".join(json.dumps({"id": f"k{n}", "query": f"two kills {n}"}) + "\n" for n in range(items))
    )
    labels = ("KEEP", "REJECT", "SPLIT", "MERGE")
    personas = [Persona(m, latency=0.5 if m == MODELS[-1] else 0.05, labels=labels) for m in MODELS]
    out = folder / "kills.jsonl"
    with VendorServer(personas) as server:
        critics = "".join(
            f"\n  - name: {m}\n    model: {m}\n    vendor: custom\n    base_url: {server.url}"
            "\n    prompt: taxonomy-review@1"
            for m in MODELS
        )
        (folder / "panel.yaml").write_text(f"critics:{critics}\n")
        command = [
            sys.executable,
            "-m",
            "cross_judge.cli",
            "review",
            str(folder / "items.jsonl"),
            "--panel",
            str(folder / "panel.yaml"),
            "--out",
            str(out),
            "--no-progress",
            "--concurrency",
            str(concurrency),
        ]
        for kill_at in (items // 3, 2 * items // 3):
            run = command + (["--resume"] if out.exists() else [])
            with subprocess.Popen(
                run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            ) as proc:
                while not out.exists() or out.read_bytes().count(b"\n") < kill_at:
                    if proc.poll() is not None:
                        raise RuntimeError(f"the review ended ({proc.returncode}) before the kill")
                    time.sleep(0.005)
                proc.send_signal(signal.SIGKILL)
        subprocess.run([*command, "--resume"], stdout=subprocess.DEVNULL, check=True)
        deadline = time.monotonic() + 60
        while server.stats()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.01)
        return server.stats()["requests"], items * len(MODELS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()

    report = Report("journal", "The answers journal of a review", **vars(args))
    calls = args.items * len(MODELS)
    with tempfile.TemporaryDirectory() as tmp, start_server(0.0) as url:
        folder = Path(tmp)
        stream_cpu_s(url, 50, folder, journal=False)  # warm up: imports, pools
        without, with_journal = [], []
        for _ in range(args.repeats):
            without.append(stream_cpu_s(url, args.items, folder, journal=False))
            with_journal.append(stream_cpu_s(url, args.items, folder, journal=True))
        off, on = statistics.median(without), statistics.median(with_journal)
        written = sorted(folder.rglob("*.journal.jsonl"))
        per_answer = written[-1].stat().st_size / calls if written else 0.0
        read_s, size = resume_read_s(folder, args.lines)
        requests, panel_calls = requests_over_two_kills(folder)
    report.row(measure="client CPU per call, no journal", value=f"{off / calls * 1e6:.0f} us")
    report.row(measure="client CPU per call, journal", value=f"{on / calls * 1e6:.0f} us")
    report.row(measure="journal bytes per answer", value=f"{per_answer:.0f}")
    report.row(measure=f"resume read of {args.lines:,} lines", value=f"{read_s:.2f} s")
    report.row(measure="long journal bytes per line", value=f"{size / args.lines:.0f}")
    report.check(
        "client CPU with / without the journal", on / off, at_most=TARGET_CPU_RATIO, unit="x"
    )
    report.row(
        measure="two kills: requests / the panel's calls", value=f"{requests} / {panel_calls}"
    )
    report.check(
        "two kills of a 200-item review: requests beyond the panel's calls",
        requests - panel_calls,
        at_most=32,
    )
    report.check(
        "journal lines a resume reads per second",
        args.lines / read_s,
        at_least=TARGET_LINES_PER_S,
        unit=" lines/s",
    )
    return report.finish([("measure", "measure"), ("value", "value")])


if __name__ == "__main__":
    raise SystemExit(main())
