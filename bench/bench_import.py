"""Memory and speed of ``cross-judge import`` on large votes files.

Data: a CSV of ``--votes`` votes (default 210,000 and 2,100,000) in the shape of people's
labels: items ``item-000000`` on, each labelled PASS or FAIL by three people (``ann``,
``bob``, ``cat``; each right 80% of the time), one vote a line, an item's votes together, as
an annotation tool exports them: ``item-000123,ann,PASS``, 21 bytes a line, 44.1 MB at
2.1M votes (the issue's file: 45.9 MB). Generated from a seeded RNG. Each import runs in a
child process, voting majority and writing the results beside the file; its peak RSS and
CPU time come from ``getrusage(RUSAGE_CHILDREN)`` of a wrapper process and its wall time
from the wrapper's clock.

Targets (issue 37): at most 200 MB of peak RSS and at least 50,000 votes/s at 2.1M votes,
and between the two sizes a growth of at most 100 bytes per vote (what the table holds:
about 35). The wall-time rate depends on the machine's load (printed beside it, with the
rate per CPU second, which it moves much less).

Before the streaming import (the whole batch held as pydantic models, about 5 KB a vote):
90,000 votes took 457 MB and 24.6 s, and 2,100,000 votes (a 45.9 MB CSV) reached 9.49 GB
after 682 s without finishing (issue 37's figures, printed beside the rows).

    python bench/bench_import.py [--votes 210000,2100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

TARGET_MB = 200.0
TARGET_VOTES_PER_S = 50_000.0
TARGET_BYTES_PER_VOTE = 100.0
BEFORE = {90_000: (24.6, 457.0), 2_100_000: (None, 9490.0)}
"""Seconds and MB before the streaming import (at 2.1M votes: not finished after 682 s)."""

VOTERS = ("ann", "bob", "cat")

WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if done.returncode:
    sys.exit(done.stderr.decode(errors="replace"))
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_maxrss, time.perf_counter() - started, usage.ru_utime + usage.ru_stime)
"""


def write_votes(path: Path, n: int, seed: int = 0) -> None:
    """``n`` votes (rounded down to whole items of three votes), one CSV line each."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write("item,critic,label\n")
        for i in range(n // len(VOTERS)):
            truth = rng.random() < 0.6
            for voter in VOTERS:
                right = rng.random() < 0.8
                out.write(f"item-{i:06d},{voter},{'PASS' if truth == right else 'FAIL'}\n")


def measure(*command: str) -> tuple[float, float, float]:
    """Peak RSS (MB), wall time (s) and CPU time (s) of ``cross-judge COMMAND``."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "cross_judge.cli", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"cross-judge {' '.join(command)} failed: {done.stderr}")
    kb, seconds, cpu = done.stdout.split()
    return int(kb) / 1024, float(seconds), float(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", default="210000,2100000", help="two sizes, small,large")
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = parser.parse_args()
    small, large = (int(n) for n in args.votes.split(","))
    report = Report(
        "import",
        "cross-judge import: peak memory and speed on large votes files",
        votes=[small, large],
        voters=len(VOTERS),
    )
    measured: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for n in (small, large):
            votes = folder / f"votes-{n}.csv"
            write_votes(votes, n)
            out = folder / f"votes-{n}.results.jsonl"
            load = os.getloadavg()[0]
            rss, seconds, cpu = measure("import", str(votes), "--out", str(out), "--force")
            measured[n] = (rss, seconds, cpu)
            before_seconds, before_rss = BEFORE.get(n, (None, None))
            report.row(
                votes=n,
                file_mb=round(votes.stat().st_size / 1e6, 1),
                peak_rss_mb=round(rss, 1),
                seconds=round(seconds, 1),
                cpu_s=round(cpu, 1),
                votes_per_s=round(n / seconds),
                votes_per_cpu_s=round(n / cpu),
                load_before=round(load, 1),
                before_rss_mb=before_rss,
                before_seconds=before_seconds,
            )
    (rss_small, _, _), (rss_large, seconds, cpu) = measured[small], measured[large]
    load = os.getloadavg()[0]
    report.check(f"peak RSS at {large:,} votes", rss_large, at_most=TARGET_MB, unit=" MB")
    report.check(
        f"peak RSS growth per vote ({small:,} to {large:,})",
        (rss_large - rss_small) * 1024 * 1024 / (large - small),
        at_most=TARGET_BYTES_PER_VOTE,
        unit=" B",
    )
    report.check(
        f"votes/s at {large:,} votes (wall time)",
        large / seconds,
        at_least=TARGET_VOTES_PER_S,
        note=f"load average {load:.1f} on {os.cpu_count()} CPUs after the run",
    )
    report.note(
        f"per CPU second: {large / cpu:,.0f} votes/s (the import is one CPU-bound thread: "
        "on an idle machine its wall time is about its CPU time)"
    )
    report.note(
        "before: 90,000 votes took 457 MB and 24.6 s; 2,100,000 votes reached 9.49 GB "
        "after 682 s without finishing"
    )
    return report.finish()


if __name__ == "__main__":
    raise SystemExit(main())
