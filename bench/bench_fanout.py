"""Fan-out: one ``Ensemble.judge()`` against one critic's call, in the same run.

K critics each answer after L seconds from a simulated vendor in a separate process.
cross-judge 0.1 called critics one after another (wall = K x L); concurrent fan-out should
cost about one call. The table prints judge() wall / one call's wall for each K, both
measured here, so machine speed cancels out.

    python bench/bench_fanout.py [--latency 0.2] [--critics 1 3 5 9] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

from cross_judge import Critic, Ensemble

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

TARGET = 1.10  # judge() of K concurrent critics within 10% of one call (0.1: K times)


async def measure(url: str, k: int, repeats: int) -> tuple[float, float]:
    critics = [
        Critic(name=f"c{i}", model=f"sim-{i}", vendor="custom", base_url=url, json_mode=False)
        for i in range(k)
    ]
    async with Ensemble(critics) as ensemble:
        await ensemble.judge("warm-up")  # open the pool's connections first
        await critics[0].judge("warm-up")
        single, fanned = [], []
        for r in range(repeats):
            t0 = time.perf_counter()
            verdict = await critics[0].judge(f"single {r}")
            single.append(time.perf_counter() - t0)
            assert verdict.is_valid, verdict.error
            t0 = time.perf_counter()
            result = await ensemble.judge(f"panel {r}")
            fanned.append(time.perf_counter() - t0)
            assert result.n_valid == k, [v.error for v in result.verdicts]
    return statistics.median(single), statistics.median(fanned)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--critics", type=int, nargs="+", default=[1, 3, 5, 9])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    report = Report(
        "fanout",
        "Fan-out: one judge() of K critics against one call",
        latency_s=args.latency,
        repeats=args.repeats,
    )
    with start_server(args.latency) as url:
        for k in args.critics:
            single, fanned = anyio.run(measure, url, k, args.repeats)
            report.row(
                critics=k,
                one_call_s=round(single, 4),
                judge_s=round(fanned, 4),
                ratio=round(fanned / single, 3),
                cross_judge_0_1_ratio=k,
            )
            report.check(
                f"{k} critics: judge() / one call", fanned / single, at_most=TARGET, unit="x"
            )
    return report.finish(
        [
            ("critics", "critics"),
            ("one_call_s", "one call s"),
            ("judge_s", "judge() s"),
            ("ratio", "ratio"),
            ("cross_judge_0_1_ratio", "0.1 (sequential)"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
