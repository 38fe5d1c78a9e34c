"""Ranking many candidates from the command line: what scheduling costs before the first
call, and the whole run's peak memory (issue 37).

``cross-judge rank CANDIDATES.jsonl --pairs adaptive --budget 50`` over ``--sizes``
candidates (default 2,000 and 10,000) answering one question, judged by two critics in
both orders (each pair item 4 calls) on the simulated vendor: a
:class:`~cross_judge.testing.VendorServer` in this process, told every candidate's latent
strength, so the command's own process holds only the ranking. The command runs in a
child process; its peak RSS comes from ``getrusage(RUSAGE_CHILDREN)`` of a wrapper, the
time to its first call from polling the server's request count every 20 ms from the
moment the child starts (interpreter start-up and imports included). The children write
and reuse compiled bytecode (in a temporary ``PYTHONPYCACHEPREFIX``, warmed by a run over
20 candidates first), as an installed package does, even where the environment sets
``PYTHONDONTWRITEBYTECODE``: compiling the package's sources on every start is not what
a user waits for.

Targets: at 10,000 candidates the first call within 10 s, peak RSS under 300 MB. Also
printed: the whole run's time, and ``--pairs all`` over the largest size, which must be
refused (exit 2) before any call, saying the count and the calls it means.

Before (issue 37, on the same kind of machine): 2,000 candidates took 61.5 s and 1.40 GB;
10,000 reached 3.44 GB with no call made after 120 s (every pair listed and an n x n
Fisher matrix built).

    python bench/bench_rank_scale.py [--sizes 2000,10000] [--budget 50]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge.testing import Persona, VendorServer

FIRST_CALL_TARGET_S = 10.0
PEAK_TARGET_MB = 300.0
BEFORE = {2000: "61.5 s, 1,400 MB", 10000: "no call after 120 s, 3,440 MB"}

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stderr.write(done.stderr.decode(errors="replace"))
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

CRITICS = ("sim-a", "sim-b")


def text(k: int) -> str:
    return f"Candidate answer number {k}: the sky is blue because of Rayleigh scattering."


def write_inputs(folder: Path, n: int, url: str) -> tuple[Path, Path]:
    """The candidates file (one question) and a panel file of two critics on ``url``."""
    candidates = folder / f"candidates-{n}.jsonl"
    with candidates.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"query": "Why is the sky blue?"}) + "\n")
        for k in range(n):
            out.write(json.dumps({"id": f"m{k:05d}", "text": text(k)}) + "\n")
    panel = folder / "panel.yaml"
    critics = "".join(
        textwrap.dedent(
            f"""\
              - name: {name}
                model: {name}
                vendor: custom
                base_url: {url}
                prompt: pairwise@2
            """
        )
        for name in CRITICS
    )
    panel.write_text("order: both\ncritics:\n" + critics, encoding="utf-8")
    return candidates, panel


def run(
    server: VendorServer, cache: Path, *command: str
) -> tuple[int, float, float | None, float, str]:
    """Exit code, peak RSS (MB), seconds to the first request the server saw (``None``:
    none) and the wall time of ``cross-judge COMMAND``, and its stderr. ``cache``: the
    children's bytecode cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    server.reset_stats()
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "cross_judge.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    first: float | None = None
    while child.poll() is None:
        if first is None and server.stats()["requests"]:
            first = time.perf_counter() - started
        time.sleep(0.02)
    wall = time.perf_counter() - started
    out, err = child.communicate()
    if first is None and server.stats()["requests"]:
        first = wall
    code, kb = out.split()
    return int(code), int(kb) / 1024, first, wall, err


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,10000", help="candidate counts, comma-separated")
    parser.add_argument("--budget", type=int, default=50, help="pair items (default 50)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    report = Report(
        "rank_scale",
        "cross-judge rank --pairs adaptive over many candidates: first call and peak memory",
        sizes=sizes,
        budget=args.budget,
        critics=len(CRITICS),
        orders=2,
    )
    personas = [Persona(name, accuracy=0.9, seed=k) for k, name in enumerate(CRITICS)]
    strengths = {text(k): (k % 97) / 24 - 2.0 for k in range(max(sizes))}
    largest: dict[str, float | None] = {}
    with (
        VendorServer(personas, strengths=strengths) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        folder = Path(tmp)
        cache = folder / "pycache"
        for n in [20, *sizes]:
            candidates, panel = write_inputs(folder, n, server.url)
            out = folder / f"ranking-{n}.json"
            code, peak, first, wall, err = run(
                server,
                cache,
                "rank",
                str(candidates),
                "--panel",
                str(panel),
                "--out",
                str(out),
                "--pairs",
                "adaptive",
                "--budget",
                str(args.budget),
                "--no-progress",
            )
            if code:
                raise SystemExit(f"cross-judge rank over {n} candidates failed: {err}")
            if n == 20:  # the warm-up: compiles the bytecode the measured runs reuse
                continue
            calls = json.loads(out.read_text(encoding="utf-8"))["calls"]
            report.row(
                candidates=n,
                first_call_s=None if first is None else round(first, 2),
                wall_s=round(wall, 2),
                peak_mb=round(peak, 1),
                calls=calls,
                before=BEFORE.get(n, ""),
            )
            largest = {"n": n, "first": first, "peak": peak}
        n = max(sizes)
        candidates, panel = write_inputs(folder, n, server.url)
        code, peak, first, wall, err = run(
            server,
            cache,
            "rank",
            str(candidates),
            "--panel",
            str(panel),
            "--out",
            str(folder / "all.json"),
            "--no-progress",
        )
        refused = code == 2 and first is None and "--max-calls" in err
        report.note(
            f"--pairs all over {n:,} candidates: exit {code} in {wall:.1f} s, "
            f"{'no call' if first is None else 'calls made'}; it said: "
            + " ".join(err.strip().splitlines()[-1:])
        )
    report.check(
        f"time to the first call, {largest['n']:,} candidates, budget {args.budget}",
        largest["first"],
        at_most=FIRST_CALL_TARGET_S,
        unit=" s",
    )
    report.check(
        f"peak RSS of the command, {largest['n']:,} candidates, budget {args.budget}",
        largest["peak"],
        at_most=PEAK_TARGET_MB,
        unit=" MB",
    )
    report.check(
        f"--pairs all over {n:,} candidates refused before any call (1 = yes)",
        1.0 if refused else 0.0,
        at_least=1.0,
    )
    return report.finish(
        [
            ("candidates", "candidates"),
            ("first_call_s", "first call (s)"),
            ("wall_s", "whole run (s)"),
            ("peak_mb", "peak RSS (MB)"),
            ("calls", "calls"),
            ("before", "before (issue 37)"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
