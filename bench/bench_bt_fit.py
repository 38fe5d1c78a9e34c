"""The Bradley-Terry fit at arena size: 1,000 candidates x 50,000 comparisons.

Data: 1,000 latent strengths drawn from N(0, 1) (seeded), 50,000 uniformly random pairs, each
decided by Bradley-Terry noise; a second set adds Davidson ties (``nu = 0.5``). Timed:
``fit_bradley_terry`` alone (the comparisons built before timing), the median of
``--repeats`` runs, with numpy (imported before timing) and with ``backend="python"`` (one
run). Target: under 1 s with numpy, tie-free. Also printed: MM rounds, and the Spearman
correlation of the fit with the latent strengths (a sanity check, no target).

    python bench/bench_bt_fit.py [--repeats 3] [--no-python]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge.stats.bradley_terry import fit_bradley_terry, numpy_available

N_ITEMS = 1000
N_COMPARISONS = 50_000
TARGET_S = 1.0


def comparisons(
    nu: float, seed: int = 7
) -> tuple[list[float], list[tuple[int, int]], list[tuple[int, int]]]:
    rng = random.Random(seed)
    strengths = [rng.gauss(0.0, 1.0) for _ in range(N_ITEMS)]
    wins: list[tuple[int, int]] = []
    ties: list[tuple[int, int]] = []
    for _ in range(N_COMPARISONS):
        a, b = rng.sample(range(N_ITEMS), 2)
        pa, pb = math.exp(strengths[a]), math.exp(strengths[b])
        u = rng.random() * (pa + pb + nu * math.sqrt(pa * pb))
        if u < pa:
            wins.append((a, b))
        elif u < pa + pb:
            wins.append((b, a))
        else:
            ties.append((a, b))
    return strengths, wins, ties


def spearman(x: list[float], y: list[float]) -> float:
    def ranks(v: list[float]) -> list[int]:
        order = sorted(range(len(v)), key=v.__getitem__)
        out = [0] * len(v)
        for r, i in enumerate(order):
            out[i] = r
        return out

    rx, ry = ranks(x), ranks(y)
    n = len(x)
    return 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry, strict=True)) / (n * (n * n - 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-python", action="store_true", help="skip the pure-Python timing")
    args = parser.parse_args()
    report = Report(
        "bt_fit",
        "Bradley-Terry fit: 1,000 candidates x 50,000 comparisons",
        items=N_ITEMS,
        comparisons=N_COMPARISONS,
        repeats=args.repeats,
    )
    if numpy_available():
        import numpy  # noqa: F401  (imported before timing: its import is not the fit's)
    numpy_time: float | None = None
    for label, nu in (("no ties", 0.0), ("ties (nu=0.5)", 0.5)):
        strengths, wins, ties = comparisons(nu)
        backends = (["numpy"] if numpy_available() else []) + ([] if args.no_python else ["python"])
        for backend in backends:
            times = []
            repeats = args.repeats if backend == "numpy" else 1
            for _ in range(repeats):
                start = time.perf_counter()
                fit = fit_bradley_terry(N_ITEMS, wins, ties, backend=backend)  # type: ignore[arg-type]
                times.append(time.perf_counter() - start)
            elapsed = statistics.median(times)
            if backend == "numpy" and nu == 0.0:
                numpy_time = elapsed
            report.row(
                data=label,
                backend=backend,
                seconds=elapsed,
                rounds=fit.iterations,
                converged=fit.converged,
                alpha=fit.alpha,
                tie=fit.tie,
                spearman=spearman(list(fit.log_strengths), strengths),
            )
    if not numpy_available():
        report.note("numpy is not installed: pip install 'cross-judge[stats]'")
    report.check("numpy fit, 1,000 x 50,000, no ties", numpy_time, at_most=TARGET_S, unit=" s")
    return report.finish()


if __name__ == "__main__":
    raise SystemExit(main())
