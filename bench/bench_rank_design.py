"""The adaptive design against uniformly random pair items at the same budget, paired by seed.

Setting (the one issue 41 measured the old design on): 12 candidates whose hidden
log-strengths are evenly spaced over [-1.5, 1.5] (shuffled per seed), each answering 3
questions; one exact critic (no lean; Bradley-Terry noise on every call, from
:mod:`_pair_judge`, written for these benchmarks); budgets of 20% and 40% of the 198 pair
items. For each seed both designs rank with the same judge and seed: ``pairs="adaptive"``
and ``pairs="random"`` (the baseline), both fitted vote by vote. Reported per order and
budget: mean Spearman with the hidden order for each design, and the paired difference
with its standard error.

Two orders: ``"both"`` (``Ensemble.rank``'s default: each item judged in both orders, two
votes) and ``"fixed"`` (one vote an item). Targets, in the default order: adaptive at least
0.03 Spearman above random at each budget (issue 41); the ``fixed`` rows are reported, not
targeted.

A third design, in the default order, bounds what steering by the fit could gain: an
*oracle* that knows the hidden strengths and, each round, pairs every candidate (the least
judged first) with its nearest free neighbour in the true order. It replaces the adaptive
rounds' choice for that row only (the package's ``next_pairs``, patched in this process).

    python bench/bench_rank_design.py [--seeds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _pair_judge import PairJudge
from _report import Report

import cross_judge.ranking._engine as engine
from cross_judge import Ensemble
from cross_judge.pairwise import Order
from cross_judge.ranking import PairDesign, Ranking, spearman

N, QUERIES = 12, 3
ITEMS = N * (N - 1) // 2 * QUERIES
SHARES = (0.2, 0.4)
TARGET = 0.03


def hidden_strengths(seed: int) -> list[float]:
    rng = random.Random(seed)
    strengths = [-1.5 + 3.0 * k / (N - 1) for k in range(N)]
    rng.shuffle(strengths)
    return strengths


class Oracle:
    """A round that knows the hidden strengths: the least-judged candidates first, each
    with its nearest free neighbour in the true order (pairs with items left)."""

    def __init__(self) -> None:
        self.truth: list[float] = []

    def __call__(
        self,
        ranking: Ranking,
        pool: engine.CandidatePool,
        used: Mapping[tuple[int, int], int],
        available: Mapping[tuple[int, int], int],
        size: int,
    ) -> list[tuple[int, int]]:
        n = len(pool.ids)
        judged = [0] * n
        for (i, j), count in used.items():
            judged[i] += count
            judged[j] += count
        busy: set[int] = set()
        chosen: list[tuple[int, int]] = []
        for i in sorted(range(n), key=lambda k: (judged[k], k)):
            if len(chosen) >= size:
                break
            free = [
                j
                for j in range(n)
                if j != i
                and j not in busy
                and used.get((min(i, j), max(i, j)), 0) < available.get((min(i, j), max(i, j)), 0)
            ]
            if i in busy or not free:
                continue
            j = min(free, key=lambda k: abs(self.truth[k] - self.truth[i]))
            chosen.append((min(i, j), max(i, j)))
            busy.update((i, j))
        return chosen


ORACLE = Oracle()


async def spearman_of(
    seed: int, share: float, design: PairDesign, order: Order, oracle: bool = False
) -> float:
    strengths = hidden_strengths(seed)
    ids = [f"model-{k:02d}" for k in range(N)]
    asked = [f"Question {q}: explain topic {q}." for q in range(QUERIES)]
    answers = {cid: {q: f"{cid}'s answer to {q!r}" for q in asked} for cid in ids}
    hidden = {answers[c][q]: s for c, s in zip(ids, strengths, strict=True) for q in asked}
    judge = PairJudge(hidden, {"exact": 0.0}, seed=seed)
    steering = engine.next_pairs
    if oracle:
        ORACLE.truth = strengths
        engine.next_pairs = ORACLE
    try:
        async with Ensemble(judge.critics()) as panel:
            ranking = await panel.rank(
                answers,
                queries=asked,
                pairs=design,
                budget=round(share * ITEMS),
                seed=seed,
                order=order,
                concurrency=64,
            )
    finally:
        engine.next_pairs = steering
    value = spearman([ranking.ratings[c] for c in ids], strengths)
    return float("nan") if value is None else value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    report = Report(
        "rank_design",
        "Adaptive pairs vs uniformly random pairs at equal budget (paired by seed)",
        candidates=N,
        queries=QUERIES,
        seeds=args.seeds,
        judge="bench/_pair_judge.py, one exact critic",
    )
    for order in ("both", "fixed"):
        for share in SHARES:
            adaptive = [
                asyncio.run(spearman_of(s, share, "adaptive", order)) for s in range(args.seeds)
            ]
            uniform = [
                asyncio.run(spearman_of(s, share, "random", order)) for s in range(args.seeds)
            ]
            gains = [a - r for a, r in zip(adaptive, uniform, strict=True)]
            gain = statistics.mean(gains)
            se = statistics.stdev(gains) / len(gains) ** 0.5
            report.row(
                order=order,
                budget=f"{share:.0%} ({round(share * ITEMS)} items)",
                adaptive=round(statistics.mean(adaptive), 4),
                random=round(statistics.mean(uniform), 4),
                gain=round(gain, 4),
                se=round(se, 4),
            )
            if order == "both":
                known = [
                    asyncio.run(spearman_of(s, share, "adaptive", order, oracle=True))
                    for s in range(args.seeds)
                ]
                bound = [k - r for k, r in zip(known, uniform, strict=True)]
                report.row(
                    order=order,
                    budget=f"{share:.0%} oracle",
                    adaptive=round(statistics.mean(known), 4),
                    random=round(statistics.mean(uniform), 4),
                    gain=round(statistics.mean(bound), 4),
                    se=round(statistics.stdev(bound) / len(bound) ** 0.5, 4),
                )
                report.check(
                    f"adaptive - random Spearman at {share:.0%} budget, both orders",
                    gain,
                    at_least=TARGET,
                    note=f"SE {se:.4f} over {args.seeds} seeds",
                )
    report.note("figures from the benchmark's scripted judge, not a language model")
    return report.finish(
        [
            ("order", "order"),
            ("budget", "budget"),
            ("adaptive", "adaptive"),
            ("random", "random"),
            ("gain", "paired gain"),
            ("se", "SE"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
