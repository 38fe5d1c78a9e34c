"""Ranking from every vote against ranking from one consensus per pair, on the same verdicts.

The judge is :mod:`_pair_judge` (written for these benchmarks, not the package's simulator):
12 candidates with hidden log-strengths drawn per seed from N(0, 1), three critics with a
lean to the first-shown answer of 0.0, 0.7 and 1.4 log-odds, Bradley-Terry noise on every
call, every pair judged in both orders (``Ensemble.rank``'s default), one query. Each seed
ranks once (``fit="votes"``, the default up to 300 candidates) and refits the same results
with ``fit="consensus"`` (one outcome per pair: the majority over critics and orders, a
flip a tie), so the two fits see exactly the same verdicts.

Reported per fit: the mean Spearman correlation with the hidden order; the paired
difference (votes minus consensus, per seed) with its standard error; each critic's
estimated lean (``Ranking.first_shown``) against the one it has; and the time of each fit
on the same results (median over seeds) with their ratio. Target: the paired gain's
lower 2-SE bound above 0 (the vote fit is better, not by chance).

    python bench/bench_rank_votes.py [--seeds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _pair_judge import PairJudge
from _report import Report

from cross_judge import Ensemble
from cross_judge.ranking import Ranking, fit_ranking, spearman

N = 12
LEANS = {"judge-0": 0.0, "judge-1": 0.7, "judge-2": 1.4}


async def ranked(seed: int) -> tuple[list[float], list[str], Ranking]:
    rng = random.Random(seed)
    strengths = [rng.gauss(0.0, 1.0) for _ in range(N)]
    ids = [f"model-{k:02d}" for k in range(N)]
    texts = {cid: f"the answer of {cid}" for cid in ids}
    judge = PairJudge({texts[c]: s for c, s in zip(ids, strengths, strict=True)}, LEANS, seed)
    async with Ensemble(judge.critics()) as panel:
        ranking = await panel.rank(texts, query="Which answer is better?", concurrency=64)
    return strengths, ids, ranking


def rho(ranking: Ranking, ids: list[str], strengths: list[float]) -> float:
    value = spearman([ranking.ratings[c] for c in ids], strengths)
    return float("nan") if value is None else value


def timed_fit(ids: list[str], ranking: Ranking, fit: str) -> tuple[float, Ranking]:
    start = time.perf_counter()
    again = fit_ranking(ids, ranking.results, fit=fit)  # type: ignore[arg-type]
    return time.perf_counter() - start, again


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args()
    report = Report(
        "rank_votes",
        "Bradley-Terry from every vote vs from one consensus per pair (same verdicts)",
        candidates=N,
        critics=len(LEANS),
        seeds=args.seeds,
        judge="bench/_pair_judge.py",
    )
    by_fit: dict[str, list[float]] = {"votes": [], "consensus": []}
    seconds: dict[str, list[float]] = {"votes": [], "consensus": []}
    leans: dict[str, list[float]] = {name: [] for name in LEANS}
    for seed in range(args.seeds):
        strengths, ids, ranking = asyncio.run(ranked(seed))
        assert ranking.fit == "votes"
        for fit in ("votes", "consensus"):
            took, again = timed_fit(ids, ranking, fit)
            seconds[fit].append(took)
            by_fit[fit].append(rho(again, ids, strengths))
        for name, value in ranking.first_shown.items():
            leans[name].append(value)
    gains = [v - c for v, c in zip(by_fit["votes"], by_fit["consensus"], strict=True)]
    gain = statistics.mean(gains)
    se = statistics.stdev(gains) / len(gains) ** 0.5
    for fit in ("consensus", "votes"):
        report.row(
            fit=fit,
            spearman=round(statistics.mean(by_fit[fit]), 4),
            worst=round(min(by_fit[fit]), 4),
            fit_ms=round(1000 * statistics.median(seconds[fit]), 2),
        )
    report.note(
        f"paired gain of the vote fit over {args.seeds} seeds: {gain:+.4f} Spearman "
        f"(SE {se:.4f}); the vote fit better on {sum(g > 0 for g in gains)} seeds, worse "
        f"on {sum(g < 0 for g in gains)}"
    )
    report.note(
        "estimated lean to the first shown (log-odds, mean over seeds) vs the judge's: "
        + ", ".join(
            f"{name} {statistics.mean(values):+.2f} vs {LEANS[name]:+.2f}"
            for name, values in leans.items()
        )
    )
    report.note("figures from the benchmark's scripted judge, not a language model")
    report.check(
        "vote fit's paired Spearman gain over the consensus fit, minus 2 SE",
        gain - 2 * se,
        at_least=0.0,
        note=f"gain {gain:+.4f}, SE {se:.4f}",
    )
    report.check(
        "vote fit time / consensus fit time (same results)",
        statistics.median(seconds["votes"]) / statistics.median(seconds["consensus"]),
        at_most=20.0,
        unit="x",
    )
    return report.finish(
        [
            ("fit", "fit"),
            ("spearman", "mean Spearman"),
            ("worst", "worst seed"),
            ("fit_ms", "fit (ms, median)"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
