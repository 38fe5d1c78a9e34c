"""Cold start: the cost of ``import cross_judge`` and of the first ``judge()`` in a process.

(a) Import. ``python -c "import cross_judge"`` in fresh subprocesses, wall time, median of
``--runs``; minus a bare ``python -c pass`` measured the same way, interleaved, in the same
run: what is left is what importing the package adds to a process start. Target <= 0.5 s:
a CLI command or a serverless handler pays it on every start, and half a second is about
where a one-shot command starts to feel slow. One ``python -X importtime`` run names the
three slowest modules (self time) and the packages that cost most, in a note. Two more
targets (issue 38): the same difference for ``python -c "import pydantic, httpx, anyio"``
(the libraries every use of the package needs), measured interleaved with the others,
and ``import cross_judge`` costing at most 1.5x that; and at most 30 ``cross_judge``
modules in ``sys.modules`` after it (counted in a fresh subprocess), so the report pages,
statistics, ranking and integrations wait until used.

(b) First call. In fresh subprocesses (``--processes``), against a simulated vendor in its
own process at zero latency: the first ``await Ensemble.judge()`` (3 critics) is timed,
then the median of the next ``--later`` calls. The median over processes of each is
reported, with the ratio first/later. Target: the first call costs at most 0.5 s more
than a warm one. The first call pays once for what the package defers so that ``import``
stays cheap: importing the HTTP stack (aiohttp and its helpers), building the connection
pool and opening connections to the vendor, and first-use work in the library (caches,
compiled patterns). At zero latency a warm call is ~ms, so the difference is all one-off
cost; 0.5 s keeps it below the import itself and well below one real LLM call (seconds),
so a first call never costs the user more than its own network latency. cross-judge 0.1
paid ~0.16 s extra on first use (building three httpx clients); the same order is
expected here. The same subprocesses are run a second time with the modules the first
call imported already imported, which splits the one-off cost into imports and the rest.

    python bench/bench_coldstart.py [--runs 7] [--processes 5] [--later 20]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

TARGET_IMPORT_S = 0.5
TARGET_IMPORT_RATIO = 1.5
TARGET_MODULES = 30
BASELINE_IMPORT = "import pydantic, httpx, anyio"
COUNT_MODULES = (
    "import sys, cross_judge\n"
    "print(sum(1 for m in sys.modules if m.split('.')[0] == 'cross_judge'))"
)
TARGET_FIRST_EXTRA_S = 0.5
CRITICS = 3
TIMEOUT_S = 60

# Run in a fresh interpreter: argv = url, later calls, comma-separated modules to import
# first (may be empty). Prints one JSON object.
CHILD = """
import asyncio, importlib, json, statistics, sys, time

url, later_n, preload = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.perf_counter()
from cross_judge import Critic, Ensemble
import_s = time.perf_counter() - t0
preloaded = 0
for name in filter(None, preload.split(",")):
    try:
        importlib.import_module(name)
        preloaded += 1
    except Exception:
        pass


async def main():
    critics = [
        Critic(name=f"c{i}", model=f"sim-{i}", vendor="custom", base_url=url, json_mode=False)
        for i in range(CRITICS)
    ]
    before = set(sys.modules)
    async with Ensemble(critics) as panel:
        t = time.perf_counter()
        verdict = await panel.judge("first query of this process")
        first = time.perf_counter() - t
        loaded = sorted(set(sys.modules) - before)
        valid = verdict.n_valid
        later = []
        for i in range(later_n):
            t = time.perf_counter()
            verdict = await panel.judge(f"later query {i}")
            later.append(time.perf_counter() - t)
            valid += verdict.n_valid
    return {
        "import_s": import_s,
        "first_s": first,
        "later_s": statistics.median(later),
        "valid": valid,
        "calls": CRITICS * (later_n + 1),
        "loaded": loaded,
        "preloaded": preloaded,
    }


print(json.dumps(asyncio.run(main())))
""".replace("CRITICS", str(CRITICS))


def ms(seconds: float) -> float:
    return round(1000 * seconds, 2)


def row(report: Report, measure: str, values: list[float]) -> None:
    """A row of median, min and max (given in seconds, shown in ms)."""
    report.row(
        measure=measure,
        median_ms=ms(statistics.median(values)),
        min_ms=ms(min(values)),
        max_ms=ms(max(values)),
    )


def wall(argv: list[str]) -> float:
    """Wall seconds of one subprocess that must succeed."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, timeout=TIMEOUT_S, capture_output=True)
    return time.perf_counter() - t0


def import_times(runs: int) -> tuple[list[float], list[float], list[float]]:
    """(import cross_judge walls, bare python walls, pydantic+httpx+anyio walls),
    interleaved, after one warm-up each."""
    imp = [sys.executable, "-c", "import cross_judge"]
    bare = [sys.executable, "-c", "pass"]
    base = [sys.executable, "-c", BASELINE_IMPORT]
    for argv in (imp, bare, base):
        wall(argv)  # .pyc files written, OS file cache warm
    imports, bares, bases = [], [], []
    for _ in range(runs):
        imports.append(wall(imp))
        bares.append(wall(bare))
        bases.append(wall(base))
    return imports, bares, bases


def modules_loaded() -> int:
    """How many ``cross_judge`` modules a fresh ``import cross_judge`` loads."""
    done = subprocess.run(
        [sys.executable, "-c", COUNT_MODULES],
        check=True,
        timeout=TIMEOUT_S,
        capture_output=True,
        text=True,
    )
    return int(done.stdout.strip())


def import_profile() -> tuple[list[tuple[str, int]], list[tuple[str, int]], int]:
    """From ``-X importtime``: the slowest modules by self time (us), self time summed by
    top-level package (us), and the cumulative time of cross_judge (us)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import cross_judge"],
        check=True,
        timeout=TIMEOUT_S,
        capture_output=True,
        text=True,
    )
    line_re = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")
    modules: list[tuple[str, int]] = []
    packages: Counter[str] = Counter()
    total = 0
    for line in done.stderr.splitlines():
        match = line_re.match(line)
        if not match:
            continue
        own, cumulative, name = int(match[1]), int(match[2]), match[4]
        modules.append((name, own))
        packages[name.split(".")[0]] += own
        if name == "cross_judge":
            total = cumulative
    modules.sort(key=lambda m: m[1], reverse=True)
    return modules[:3], packages.most_common(3), total


def first_calls(url: str, processes: int, later: int, preload: str) -> list[dict]:
    """One JSON result per fresh subprocess."""
    results = []
    for _ in range(processes):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, url, str(later), preload],
            check=True,
            timeout=TIMEOUT_S,
            capture_output=True,
            text=True,
        )
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="import subprocesses (each kind)")
    parser.add_argument("--processes", type=int, default=5, help="first-call subprocesses")
    parser.add_argument("--later", type=int, default=20, help="warm calls after the first")
    args = parser.parse_args()

    report = Report(
        "coldstart",
        "Cold start: import time and the first judge() of a process",
        runs=args.runs,
        processes=args.processes,
        later=args.later,
        critics=CRITICS,
    )

    # (a) import
    imports, bares, bases = import_times(args.runs)
    imp, bare = statistics.median(imports), statistics.median(bares)
    base = statistics.median(bases)
    extra, base_extra = imp - bare, base - bare
    row(report, "python -c 'import cross_judge'", imports)
    row(report, "python -c pass", bares)
    row(report, f"python -c '{BASELINE_IMPORT}'", bases)
    report.row(measure="import cost (difference)", median_ms=ms(extra))
    report.row(measure="pydantic, httpx, anyio cost (difference)", median_ms=ms(base_extra))
    ratio = extra / base_extra if base_extra > 0 else None
    loaded = modules_loaded()
    slowest, packages, total = import_profile()
    report.note(
        "-X importtime, three slowest modules (self time): "
        + ", ".join(f"{name} {us / 1000:.0f} ms" for name, us in slowest)
        + "; self time by package: "
        + ", ".join(f"{name} {us / 1000:.0f} ms" for name, us in packages)
        + f"; cross_judge cumulative {total / 1000:.0f} ms (importtime adds its own overhead)"
    )
    report.check("import cross_judge (over bare python)", extra, at_most=TARGET_IMPORT_S, unit=" s")
    report.check(
        f"import cross_judge / {BASELINE_IMPORT} (each over bare python)",
        ratio,
        at_most=TARGET_IMPORT_RATIO,
        unit="x",
        note=f"{1000 * extra:.0f} ms / {1000 * base_extra:.0f} ms; walls {1000 * imp:.0f} ms / "
        f"{1000 * base:.0f} ms ({imp / base:.2f}x)",
    )
    report.check("cross_judge modules loaded by import cross_judge", loaded, at_most=TARGET_MODULES)

    # (b) first call
    with start_server(0.0) as url:
        cold = first_calls(url, args.processes, args.later, "")
        lazy = sorted({m for r in cold for m in r["loaded"]})
        warm_imports = first_calls(url, args.processes, args.later, ",".join(lazy))
    for runs in (cold, warm_imports):
        for r in runs:
            assert r["valid"] == r["calls"], f"{r['calls'] - r['valid']} calls had no valid verdict"
    first = statistics.median(r["first_s"] for r in cold)
    later = statistics.median(r["later_s"] for r in cold)
    first_pre = statistics.median(r["first_s"] for r in warm_imports)
    later_pre = statistics.median(r["later_s"] for r in warm_imports)
    child_import = statistics.median(r["import_s"] for r in cold)
    row(report, "first judge()", [r["first_s"] for r in cold])
    row(report, "first judge(), lazy modules preloaded", [r["first_s"] for r in warm_imports])
    row(report, f"later judge() (median of {args.later})", [r["later_s"] for r in cold])
    report.row(measure="first - later", median_ms=ms(first - later))
    report.note(f"first / later judge(): {first / later:.0f}x (reported, no target)")

    by_package = Counter(m.split(".")[0] for m in lazy)
    report.note(
        f"the first judge() imported {len(lazy)} modules the package had deferred, by package: "
        + ", ".join(f"{p} ({n})" for p, n in by_package.most_common(8))
        + (", ..." if len(by_package) > 8 else "")
    )
    report.note(
        f"of the first call's extra {1000 * (first - later):.0f} ms, about "
        f"{1000 * (first - first_pre):.0f} ms is those imports (first call with them "
        f"preloaded: {1000 * first_pre:.1f} ms, later {1000 * later_pre:.2f} ms); the rest, "
        f"{1000 * (first_pre - later_pre):.0f} ms, is creating the pooled HTTP session, opening "
        "the TCP connections to the vendor and first-use work in the library"
    )
    report.note(
        f"in the same child processes 'from cross_judge import Critic, Ensemble' took "
        f"{1000 * child_import:.0f} ms (in-process timing, not counted above)"
    )
    report.check(
        "first judge() - later judge()",
        first - later,
        at_most=TARGET_FIRST_EXTRA_S,
        unit=" s",
        note=f"first {1000 * first:.0f} ms, later {1000 * later:.2f} ms, {first / later:.0f}x",
    )
    return report.finish(
        [
            ("measure", "measure"),
            ("median_ms", "median ms"),
            ("min_ms", "min ms"),
            ("max_ms", "max ms"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
