"""Memory and time of ``cross-judge stats`` and ``cross-judge report`` on large results files.

Data: results files of ``--items`` items (default 20,000 and 200,000) of three critics, as
``cross-judge review`` writes them (raw text, reasoning and the item's text stored: about
4.6 KB a line), generated as JSON lines from a seeded RNG (each critic right 90%, 80%, 70%
of the time, a split vote on about 40% of the items). Each command runs in a child process;
its peak RSS comes from ``getrusage(RUSAGE_CHILDREN)`` of a wrapper process and its wall
time from the wrapper's clock. The report lists at most its default 5,000 disputed items.

Targets (issue 26): each command under 600 MB of peak RSS at 200,000 items, growing between
the two sizes by at most 100 bytes per item (the label codes are 8 bytes an item). ``stats``
without gold also fits the correlated-errors Dawid-Skene model for the effective votes, on
each distinct vote pattern once, weighted by its items; ``stats --gold`` (50 labelled
items: effective votes against gold, no model) shows the pass alone.

Before the one-pass digest, the same commands on a 200,000-item file of the simulated
vendor (554 MB, a line of 2.8 KB) took 66.8 s and 3.71 GB (``stats``) and 51.3 s and
3.69 GB (``report``): the figures printed beside the 200,000-item rows (another file, so
compare the memory; the times depend on the line's size).

    python bench/bench_stats_memory.py [--items 20000,200000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

TARGET_MB = 600.0
TARGET_BYTES_PER_ITEM = {"stats": 100.0, "stats --gold": 100.0, "report": 100.0}
BEFORE = {"stats": (66.8, 3710.0), "report": (51.3, 3690.0)}
"""Seconds and MB at 200,000 items before the digest (the simulated vendor's file)."""

CRITICS = ("careful", "lenient", "reasoner")
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR")
REASONING = "The item is consistent with {label}; " + "the rest of the reasoning runs on. " * 14

WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if done.returncode:
    sys.exit(done.stderr.decode(errors="replace"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - started)
"""


def write_results(path: Path, n: int, seed: int = 0) -> None:
    """``n`` results of three critics, one JSON line each."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            truth = rng.choice(LABELS)
            verdicts = []
            for j, critic in enumerate(CRITICS):
                label = truth if rng.random() < 0.9 - 0.1 * j else rng.choice(LABELS)
                reasoning = REASONING.format(label=label)
                verdicts.append(
                    {
                        "kind": label,
                        "confidence": round(rng.random(), 2),
                        "reasoning": reasoning,
                        "critic_id": critic,
                        "raw_response": json.dumps({"kind": label, "reasoning": reasoning}),
                        "elapsed_s": round(rng.random() / 10, 3),
                        "usage": {"prompt_tokens": 333, "completion_tokens": 25},
                        "model": f"sim-{critic}",
                        "vendor": "custom",
                        "prompt_id": "taxonomy-review",
                        "prompt_version": "1",
                    }
                )
            counts = {label: sum(v["kind"] == label for v in verdicts) for label in LABELS}
            consensus = max(LABELS, key=lambda label: counts[label])
            fallback = counts[consensus] < 2
            record = {
                "query_id": f"item-{i}",
                "verdicts": verdicts,
                "consensus": "UNCLEAR" if fallback else consensus,
                "fallback": fallback,
                "agreement_pct": counts[consensus] / 3,
                "disagreement": counts[consensus] < 3,
                "voting": "majority",
                "n_valid": 3,
                "item": {"query": f"Is item {i} in the right category? " + "x" * 300},
            }
            out.write(json.dumps(record) + "\n")


def measure(*command: str) -> tuple[float, float]:
    """Peak RSS (MB) and wall time (s) of ``cross-judge COMMAND`` in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "cross_judge.cli", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"cross-judge {' '.join(command)} failed: {done.stderr}")
    kb, seconds = done.stdout.split()
    return int(kb) / 1024, float(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", default="20000,200000", help="two sizes, small,large")
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = parser.parse_args()
    small, large = (int(n) for n in args.items.split(","))
    report = Report(
        "stats_memory",
        "stats and report: peak memory and time on large results files",
        items=[small, large],
    )
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        measured: dict[tuple[str, int], tuple[float, float]] = {}
        gold = folder / "gold.jsonl"
        gold.write_text("".join(f'{{"id": "item-{i}", "label": "KEEP"}}\n' for i in range(50)))
        for n in (small, large):
            path = folder / f"results-{n}.jsonl"
            write_results(path, n)
            size_mb = path.stat().st_size / 1e6
            for name, command in (
                ("stats", ("stats", str(path))),
                ("stats --gold", ("stats", str(path), "--gold", str(gold))),
                ("report", ("report", str(path), "--out", str(folder / f"report-{n}.html"))),
            ):
                rss, seconds = measure(*command)
                measured[name, n] = (rss, seconds)
                before = BEFORE.get(name, (None, None)) if n == 200_000 else (None, None)
                report.row(
                    command=name,
                    items=n,
                    file_mb=round(size_mb, 1),
                    peak_rss_mb=round(rss, 1),
                    seconds=round(seconds, 2),
                    before_rss_mb=before[1],
                    before_seconds=before[0],
                )
        for name, most in TARGET_BYTES_PER_ITEM.items():
            (rss_small, _), (rss_large, _) = measured[name, small], measured[name, large]
            per_item = (rss_large - rss_small) * 1024 * 1024 / (large - small)
            report.check(
                f"{name}: peak RSS at {large:,} items", rss_large, at_most=TARGET_MB, unit=" MB"
            )
            report.check(
                f"{name}: peak RSS growth per item ({small:,} to {large:,})",
                per_item,
                at_most=most,
                unit=" B",
            )
    return report.finish()


if __name__ == "__main__":
    raise SystemExit(main())
