"""Memory: stream 100,000 items through an Ensemble and watch the client's resident memory.

A simulated vendor answers at once from its own process. Items come from a generator
(never a list), results are consumed and dropped, as a long batch review does. Resident
memory is sampled as the run goes; it must stay flat (the target: peak under 300 MB, and
the last sample within 25% of the one taken after the first tenth of the items, the
in-run baseline). Items/s is printed too.

    python bench/bench_memory.py [--items 100000] [--critics 1] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

from cross_judge import Critic, Ensemble

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

PEAK_TARGET_MB = 300.0
GROWTH_TARGET = 1.25
_PAGE = resource.getpagesize()


def rss_mb() -> float:
    """Current resident set size of this process, in MB (Linux /proc)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB on Linux


def items(n: int) -> Iterator[dict[str, object]]:
    for i in range(n):
        yield {"id": f"item-{i}", "query": f"Candidate category number {i}", "meta": {"n": i}}


async def run(url: str, n: int, critics: int, concurrency: int) -> dict[str, object]:
    panel = [
        Critic(name=f"c{i}", model=f"sim-{i}", vendor="custom", base_url=url, json_mode=False)
        for i in range(critics)
    ]
    samples: list[tuple[int, float]] = []
    every = max(1, n // 10)
    done = failed = 0
    started = time.perf_counter()
    async with Ensemble(panel) as ensemble, ensemble.stream(items(n), concurrency=concurrency) as s:
        async for result in s:
            done += 1
            failed += result.n_errors > 0
            if done % every == 0:
                samples.append((done, rss_mb()))
    elapsed = time.perf_counter() - started
    return {
        "items": done,
        "failed": failed,
        "elapsed_s": round(elapsed, 2),
        "items_per_s": round(done / elapsed, 1),
        "samples": [{"items": k, "rss_mb": round(v, 1)} for k, v in samples],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--critics", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()

    report = Report(
        "memory",
        f"Memory: {args.items} items streamed",
        critics=args.critics,
        concurrency=args.concurrency,
    )
    start_mb = rss_mb()
    with start_server(0.0) as url:
        result = anyio.run(run, url, args.items, args.critics, args.concurrency)
    samples = result["samples"]
    assert isinstance(samples, list)
    assert samples, "no samples: too few items"
    for sample in samples:
        report.row(items=sample["items"], rss_mb=sample["rss_mb"])
    baseline, last = samples[0]["rss_mb"], samples[-1]["rss_mb"]
    # getrusage and /proc count pages slightly differently; report the larger.
    peak = max(peak_rss_mb(), max(float(x["rss_mb"]) for x in samples))
    report.note(
        f"RSS before the run {start_mb:.1f} MB; {result['items']} items in "
        f"{result['elapsed_s']} s = {result['items_per_s']} items/s; failed {result['failed']}"
    )
    report.check("peak RSS", peak, at_most=PEAK_TARGET_MB, unit=" MB")
    report.check(
        "last sample / first-tenth sample (flat)", last / baseline, at_most=GROWTH_TARGET, unit="x"
    )
    return report.finish([("items", "items"), ("rss_mb", "RSS MB")])


if __name__ == "__main__":
    sys.exit(main())
