"""Ray: a shared limit across actors, and memory over a streamed million-item dataset.

Needs the ``ray`` extra (``pip install 'cross-judge[ray]'``). Ray runs on this machine
(``ray.init(num_cpus=2)``); the simulated vendor runs in its own process.

1. **Shared limit.** A vendor that answers after ``--latency`` seconds and refuses (429, no
   ``Retry-After``, as DeepSeek does) any call beyond 4 at once. The same ``--items`` items
   (one critic) are judged

   * by one process: ``judge_many`` with the vendor capped at 4 calls in flight
     (``set_vendor_limits("custom", max_concurrency=4)``): the baseline;
   * by Ray, 2 actors, ``judge_dataset(..., shared_limits={"custom": 4})``: one broker
     actor leases the 4 permits to both;
   * by Ray, 2 actors each capped at 4 on its own (no shared limit), for comparison: what
     the shared limit prevents.

   Targets: the vendor's 429 count is 0 for the baseline and for the shared limit, and the
   shared limit's throughput is >= 0.9x the baseline's. Throughput is measured at the
   vendor (its request counter, polled every 0.1 s) between 10% and 90% of the calls, so
   that Ray's start (actors, workers: seconds) is left out of both; end-to-end rates are
   printed too.

2. **Memory.** ``ray.data.range(--stream-items)`` mapped to items, judged by 2 actors (one
   critic, a vendor that answers at once: every item is a real HTTP call) and consumed with
   ``iter_batches`` (never materialised). The resident memory of the driver, of the
   largest judging actor and of every process of the Ray instance (summed) is sampled
   every ``--stream-items / 20`` items. Target: flat, the last sample of each within 20%
   of the one taken after the first tenth of the items (warm-up).

About 6 to 9 minutes on a 2-core machine, most of it the million items.

    python bench/bench_ray.py [--items 2000] [--latency 0.05] [--stream-items 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import resource
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

from cross_judge import Critic, Ensemble
from cross_judge.batch import judge_many
from cross_judge.vendors import set_vendor_limits

CAPACITY = 4
TARGET_RATIO = 0.9
GROWTH_TARGET = 1.2
_PAGE = resource.getpagesize()


# -- the panels (built in each actor) ----------------------------------------------------------


def one_critic(url: str, max_concurrency: int | None = None) -> Ensemble:
    if max_concurrency is not None:
        set_vendor_limits("custom", max_concurrency=max_concurrency)
    return Ensemble(
        [Critic(name="c0", model="sim-0", vendor="custom", base_url=url, json_mode=False)]
    )


def to_items(batch: dict[str, Any]) -> dict[str, Any]:
    return {"item": [f"Candidate category number {i}" for i in batch["id"]]}


# -- the vendor's counters ---------------------------------------------------------------------


def vendor_stats(url: str) -> dict[str, Any]:
    root = url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/stats", timeout=10) as response:
        stats: dict[str, Any] = json.load(response)
    return stats


def reset_stats(url: str) -> None:
    root = url.removesuffix("/v1")
    request = urllib.request.Request(f"{root}/stats/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


class RequestClock:
    """Polls the vendor's request counter every 0.1 s in a thread; :meth:`rate` is the
    calls per second between 10% and 90% of ``total`` calls."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> RequestClock:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _poll(self) -> None:
        while not self._stop.is_set():
            stats = vendor_stats(self._url)
            self._samples.append((time.perf_counter(), stats["requests"] - stats["rate_limited"]))
            self._stop.wait(0.1)

    def rate(self, total: int) -> float | None:
        low = next((t for t, n in self._samples if n >= 0.1 * total), None)
        high = next((t for t, n in self._samples if n >= 0.9 * total), None)
        if low is None or high is None or high <= low:
            return None
        return 0.8 * total / (high - low)


# -- part 1: the shared limit --------------------------------------------------------------


Run = tuple[float, float | None, int, int]
"""End-to-end items/s, calls/s at the vendor (10%..90%), 429s at the vendor, ERROR labels."""


def single_process(url: str, items: int) -> Run:
    """One process capped at 4."""
    queries = [f"limit item {i}" for i in range(items)]

    async def run() -> int:
        async with one_critic(url, max_concurrency=CAPACITY) as panel:
            batch = await judge_many(panel, queries, concurrency=64)
        return sum(r.n_errors for r in batch.verdicts)

    reset_stats(url)
    with RequestClock(url) as clock:
        started = time.perf_counter()
        errors = asyncio.run(run())
        wall = time.perf_counter() - started
    set_vendor_limits("custom", max_concurrency=None)
    return items / wall, clock.rate(items), vendor_stats(url)["rate_limited"], errors


def on_ray(ray: Any, url: str, items: int, *, shared: bool) -> Run:
    """2 actors, sharing a limit of 4 or each capped at 4."""
    from cross_judge.ray import judge_dataset

    ds = ray.data.from_items([{"item": f"limit item {i}"} for i in range(items)])
    factory = functools.partial(one_critic, url, None if shared else CAPACITY)
    out = judge_dataset(
        ds,
        factory,
        batch_size=64,
        concurrency=2,
        num_cpus=0.5,
        shared_limits={"custom": CAPACITY} if shared else None,
    )
    reset_stats(url)
    done = errors = 0
    with RequestClock(url) as clock:
        started = time.perf_counter()
        for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
            labels = batch.column("label_c0").to_pylist()
            errors += sum(1 for label in labels if label in ("ERROR", "PARSE_FAIL"))
            done += batch.num_rows
        wall = time.perf_counter() - started
    assert done == items, (done, items)
    return items / wall, clock.rate(items), vendor_stats(url)["rate_limited"], errors


# -- part 2: memory ----------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE / 1e6
    except OSError:  # the process ended
        return 0.0


def descendants(pid: int) -> Iterator[int]:
    """Every process below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            yield child
            stack.append(child)


def command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def memory_sample(server_pids: set[int]) -> dict[str, float]:
    """RSS in MB: this driver, the largest judging actor, every Ray process (summed).

    The largest actor rather than their sum: near the end one actor may have finished."""
    ray_pids = [p for p in descendants(os.getpid()) if p not in server_pids]
    actors = [p for p in ray_pids if "_JudgeBatches" in command(p)]
    return {
        "driver_mb": rss_mb(os.getpid()),
        "actor_mb": max((rss_mb(p) for p in actors), default=0.0),
        "actors": len(actors),
        "ray_total_mb": sum(rss_mb(p) for p in ray_pids),
    }


def stream(ray: Any, url: str, n: int, report: Report, server_pids: set[int]) -> None:
    from cross_judge.ray import judge_dataset

    # Blocks of 5,000 rows, so that results reach the driver (and memory is sampled) often.
    ds = ray.data.range(n, override_num_blocks=max(1, n // 5000))
    ds = ds.map_batches(to_items, batch_format="numpy")
    out = judge_dataset(
        ds,
        functools.partial(one_critic, url),
        batch_size=1024,
        concurrency=2,
        num_cpus=0.5,
        item_concurrency=64,
    )
    every = max(1, n // 20)
    next_sample = every
    done = errors = 0
    samples: list[dict[str, float]] = []
    started = time.perf_counter()
    for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
        done += batch.num_rows
        errors += sum(1 for label in batch.column("label_c0").to_pylist() if label == "ERROR")
        if done >= next_sample:
            next_sample += every
            samples.append({"items": done} | memory_sample(server_pids))
            report.row(part="memory", **samples[-1])
    wall = time.perf_counter() - started
    report.note(
        f"memory: {done} items in {wall:.0f} s = {done / wall:.0f} items/s "
        f"({errors} ERROR labels); RSS sampled every {every} items"
    )
    warm = next(s for s in samples if s["items"] >= n // 10)
    last = samples[-1]
    for key, name in (
        ("driver_mb", "driver"),
        ("actor_mb", "largest judging actor"),
        ("ray_total_mb", "all Ray processes"),
    ):
        report.check(
            f"memory, {name}: last sample / sample after the first tenth",
            last[key] / warm[key] if warm[key] else None,
            at_most=GROWTH_TARGET,
            unit="x",
            note=f"{warm[key]:.0f} MB -> {last[key]:.0f} MB",
        )
    assert done == n, (done, n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--stream-items", type=int, default=1_000_000)
    args = parser.parse_args()

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    report = Report(
        "ray",
        f"Ray: 2 actors under a shared limit of {CAPACITY}; {args.stream_items} items streamed",
        items=args.items,
        latency_s=args.latency,
        vendor_capacity=CAPACITY,
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with start_server(args.latency, "--capacity", str(CAPACITY)) as url:
            runs = {
                "one process, limit 4": single_process(url, args.items),
                "Ray 2 actors, shared limit 4": on_ray(ray, url, args.items, shared=True),
                "Ray 2 actors, limit 4 each": on_ray(ray, url, args.items, shared=False),
            }
        for name, (items_per_s, calls_per_s, rate_limited, errors) in runs.items():
            report.row(
                part="limit",
                run=name,
                items_per_s=round(items_per_s, 1),
                vendor_calls_per_s=None if calls_per_s is None else round(calls_per_s, 1),
                physical_limit=round(CAPACITY / args.latency, 1),
                rate_limited=rate_limited,
                failed_items=errors,
            )
        base = runs["one process, limit 4"]
        shared = runs["Ray 2 actors, shared limit 4"]
        report.check("429s, one process", base[2], at_most=0)
        report.check("429s, Ray 2 actors with the shared limit", shared[2], at_most=0)
        report.check(
            "throughput, shared limit / one process (at the vendor, 10%..90% of calls)",
            None if shared[1] is None or base[1] is None else shared[1] / base[1],
            at_least=TARGET_RATIO,
            unit="x",
        )
        with start_server(0.0) as url:
            server_pids = {
                p for p in descendants(os.getpid()) if "cross_judge.testing" in command(p)
            }
            stream(ray, url, args.stream_items, report, server_pids)
    finally:
        ray.shutdown()
    return report.finish(
        [
            ("part", "part"),
            ("run", "run"),
            ("items_per_s", "items/s (end to end)"),
            ("vendor_calls_per_s", "calls/s at vendor"),
            ("physical_limit", "limit/latency"),
            ("rate_limited", "429s"),
            ("failed_items", "failed"),
            ("items", "items"),
            ("driver_mb", "driver MB"),
            ("actor_mb", "largest actor MB"),
            ("actors", "actors"),
            ("ray_total_mb", "all Ray MB"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
