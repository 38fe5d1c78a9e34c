"""Side by side with cross-judge 0.1.0: the same queries, critics and simulated vendor.

cross-judge 0.1.0 is installed from the package index into its own virtualenv (never
into the running environment): a venv cached under ``bench/.cache/`` is reused when it
is healthy (its python runs and imports cross_judge 0.1.0); otherwise one is built in a
temporary folder (``tempfile.mkdtemp``) under ``bench/.cache/`` and moved into place
when it works (``--no-cache``: built in a temporary folder, used once, deleted). If pip
cannot install 0.1.0, that is reported, the speedup checks are MISS, and the exit
status is still 0.

A simulated vendor in its own process answers every call after ``--latency`` seconds
(default 50 ms, as in 0.1's own benchmark). Both sides judge the same ``--queries`` (20)
queries with 3 critics, after one warm-up query each (clients built, connections open),
``--repeats`` times; medians are reported:

* 0.1, in its venv: a script written to the temporary folder runs 0.1's sync API,
  ``Critic(name, model, vendor="openai", base_url=url, api_key="x")`` and
  ``Ensemble(critics).judge(query)`` once per query. 0.1 calls the critics one after
  another (httpx, ``base_url + "/chat/completions"``), so a query costs ~3 latencies.
  It prints its wall times, consensus labels and verdict counts as JSON.
* ours, in this process: (a) per query: ``await ensemble.judge(query)`` once per query,
  queries one after another, the 3 critics of a query concurrent: ~1 latency a query;
  (b) batch: ``await ensemble.judge_many(queries, concurrency=20)``: all 60 calls in
  flight at once, ~1 latency for the whole batch.

Targets, as speedup = 0.1 wall / ours wall:

* per query >= 2.5x: the ideal is 3x (3 sequential latencies against 1); 2.5x leaves a
  sixth of it for client overhead and the slowest of three answers.
* batch >= 10x: the ideal is ~60x (60 sequential latencies against ~1); this 2-core
  machine spends roughly 1-2 ms of client CPU per call, so 60 calls add ~0.1 s to the
  50 ms. 10x still allows the batch 0.3 s, six times the latency, for that.

Both sides must return a valid verdict for every call (counted; check).

    python bench/bench_vs_01.py [--queries 20] [--latency 0.05] [--repeats 3] [--no-cache]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

from cross_judge import Critic, Ensemble

OLD_VERSION = "0.1.0"
CACHE = Path(__file__).parent / ".cache" / f"venv-cross-judge-{OLD_VERSION}"
CRITICS = 3
TARGET_PER_QUERY = 2.5
TARGET_BATCH = 10.0
PIP_TIMEOUT_S = 300
CHILD_TIMEOUT_S = 300

# Runs inside the 0.1 venv: argv = url, queries, repeats. Prints one JSON object.
OLD_SCRIPT = """
import json, sys, time
from collections import Counter

import cross_judge
from cross_judge import Critic, Ensemble

url, n_queries, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
critics = [
    Critic(name=f"c{i}", model=f"sim-{i}", vendor="openai", base_url=url, api_key="x")
    for i in range(CRITICS)
]
ensemble = Ensemble(critics)
ensemble.judge("warm-up query")  # builds the lazy httpx clients, opens connections
queries = [f"candidate category {i}" for i in range(n_queries)]
walls, consensus, valid, invalid = [], Counter(), 0, Counter()
for _ in range(repeats):
    t0 = time.perf_counter()
    results = [ensemble.judge(q) for q in queries]
    walls.append(time.perf_counter() - t0)
    for result in results:
        consensus[result.consensus] += 1
        for v in result.verdicts:
            if v.error is None and v.kind not in ("ERROR", "PARSE_FAIL"):
                valid += 1
            else:
                invalid[v.error or v.kind] += 1
print(json.dumps({
    "version": cross_judge.__version__,
    "walls": walls,
    "consensus": dict(consensus),
    "valid": valid,
    "calls": CRITICS * n_queries * repeats,
    "invalid": dict(invalid),
}))
""".replace("CRITICS", str(CRITICS))


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def healthy(venv: Path) -> bool:
    """The venv's python runs and imports cross_judge OLD_VERSION."""
    python = venv_python(venv)
    if not python.exists():
        return False
    try:
        done = subprocess.run(
            [str(python), "-c", "import cross_judge, httpx; print(cross_judge.__version__)"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == OLD_VERSION


def build_venv(where: Path) -> str:
    """Create a venv at ``where`` and pip-install 0.1.0 into it; '' or the failure."""
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(where)],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        done = subprocess.run(
            [
                str(venv_python(where)),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--timeout",
                "30",
                "--retries",
                "2",
                f"cross-judge=={OLD_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=PIP_TIMEOUT_S,
        )
    except subprocess.CalledProcessError as exc:
        return f"python -m venv failed: {(exc.stderr or '').strip()[-300:]}"
    except subprocess.TimeoutExpired as exc:
        return f"{exc.cmd[0]} timed out after {exc.timeout:.0f} s"
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        return f"pip install cross-judge=={OLD_VERSION} failed: {tail}"
    if not healthy(where):
        return f"the new venv does not import cross_judge {OLD_VERSION}"
    return ""


def old_venv(use_cache: bool, temp: Path, report: Report) -> Path | None:
    """A healthy venv with 0.1.0, or None (with a note) when it cannot be had."""
    if use_cache and healthy(CACHE):
        report.note(f"reused cached venv {CACHE}")
        return CACHE
    t0 = time.perf_counter()
    if not use_cache:
        venv = temp / "venv"
        error = build_venv(venv)
    else:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="venv-building-", dir=CACHE.parent))
        venv = staging / "venv"
        error = build_venv(venv)
        if not error:
            shutil.rmtree(CACHE, ignore_errors=True)  # present but unhealthy
            venv.rename(CACHE)  # the venv only ever runs as CACHE/bin/python -m / script
            venv = CACHE
            error = "" if healthy(CACHE) else f"moved venv at {CACHE} does not work"
        shutil.rmtree(staging, ignore_errors=True)
    if error:
        report.note(error)
        return None
    report.note(f"built venv with cross-judge {OLD_VERSION} in {time.perf_counter() - t0:.0f} s")
    return venv


def run_old(python: Path, script: Path, url: str, queries: int, repeats: int) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(script), url, str(queries), str(repeats)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"0.1 script failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def tally(batch: list[Any], consensus: Counter[str], invalid: Counter[str]) -> int:
    """Count consensus labels and invalid verdicts; return the valid ones."""
    valid = 0
    for result in batch:
        consensus[result.consensus] += 1
        for v in result.verdicts:
            if v.is_valid:
                valid += 1
            else:
                invalid[str(v.error_kind or v.kind)] += 1
    return valid


async def run_ours(url: str, queries: int, repeats: int) -> dict[str, Any]:
    critics = [
        Critic(name=f"c{i}", model=f"sim-{i}", vendor="custom", base_url=url, json_mode=False)
        for i in range(CRITICS)
    ]
    items = [f"candidate category {i}" for i in range(queries)]
    loop_walls, batch_walls = [], []
    consensus: Counter[str] = Counter()
    invalid: Counter[str] = Counter()
    valid = 0
    async with Ensemble(critics) as ensemble:
        await ensemble.judge("warm-up query")
        await ensemble.judge_many(items, concurrency=queries)  # all connections open
        for _ in range(repeats):
            t0 = time.perf_counter()
            results = [await ensemble.judge(q) for q in items]
            loop_walls.append(time.perf_counter() - t0)
            valid += tally(results, consensus, invalid)
            t0 = time.perf_counter()
            batch = await ensemble.judge_many(items, concurrency=queries)
            batch_walls.append(time.perf_counter() - t0)
            valid += tally(batch.verdicts, consensus, invalid)
    return {
        "loop_walls": loop_walls,
        "batch_walls": batch_walls,
        "consensus": dict(consensus),
        "valid": valid,
        "calls": 2 * CRITICS * queries * repeats,
        "invalid": dict(invalid),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help=f"build a throwaway venv instead of using {CACHE.parent}",
    )
    args = parser.parse_args()

    report = Report(
        "vs_01",
        f"cross-judge {OLD_VERSION} vs this version, {args.queries} queries x {CRITICS} critics",
        latency_s=args.latency,
        repeats=args.repeats,
    )
    temp = Path(tempfile.mkdtemp(prefix="cross-judge-vs-01-"))
    try:
        venv = old_venv(not args.no_cache, temp, report)
        script = temp / "judge_01.py"
        script.write_text(OLD_SCRIPT, encoding="utf-8")
        with start_server(args.latency) as url:
            old = None
            if venv is not None:
                old = run_old(venv_python(venv), script, url, args.queries, args.repeats)
            ours = asyncio.run(run_ours(url, args.queries, args.repeats))
    finally:
        shutil.rmtree(temp, ignore_errors=True)

    ideal_old = CRITICS * args.queries * args.latency
    loop = statistics.median(ours["loop_walls"])
    batch = statistics.median(ours["batch_walls"])
    old_wall = statistics.median(old["walls"]) if old else None
    rows = [
        (f"{OLD_VERSION}: Ensemble.judge x {args.queries} (sync)", old_wall, ideal_old, old),
        (f"ours: await judge() x {args.queries}", loop, args.queries * args.latency, 0),
        (f"ours: judge_many(concurrency={args.queries})", batch, args.latency, 0),
    ]
    for mode, wall, ideal, _ in rows:
        report.row(
            mode=mode,
            wall_s=wall,
            ms_per_query=None if wall is None else round(1000 * wall / args.queries, 1),
            ideal_s=ideal,
            speedup=None if wall is None or old_wall is None else round(old_wall / wall, 2),
        )

    report.note(
        f"ours: {ours['valid']} of {ours['calls']} calls valid, consensus {ours['consensus']}"
        + (f", invalid {ours['invalid']}" if ours["invalid"] else "")
    )
    if old:
        report.note(
            f"{old['version']}: {old['valid']} of {old['calls']} calls valid, consensus "
            f"{old['consensus']}" + (f", invalid {old['invalid']}" if old["invalid"] else "")
        )
    else:
        report.note(
            f"cross-judge {OLD_VERSION} could not be installed, so nothing was compared; "
            "the speedup checks are MISS"
        )
    report.check(
        "per-query speedup (0.1 wall / ours judge() loop)",
        None if old_wall is None else old_wall / loop,
        at_least=TARGET_PER_QUERY,
        unit="x",
    )
    report.check(
        f"batch speedup (0.1 wall / ours judge_many concurrency={args.queries})",
        None if old_wall is None else old_wall / batch,
        at_least=TARGET_BATCH,
        unit="x",
    )
    report.check(
        "ours: valid verdicts / calls", ours["valid"] / ours["calls"], at_least=1.0, unit=""
    )
    report.check(
        f"{OLD_VERSION}: valid verdicts / calls",
        old["valid"] / old["calls"] if old else None,
        at_least=1.0,
    )
    return report.finish(
        [
            ("mode", "mode"),
            ("wall_s", "wall s"),
            ("ms_per_query", "ms/query"),
            ("ideal_s", "ideal s"),
            ("speedup", "speedup"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
