"""Ranking many candidates on the simulated vendor: order recovered, calls saved, intervals
that cover.

Twelve candidates with latent strengths evenly spaced over ``[-1.5, 1.5]`` (log-worths;
ratings 1000 +- 261) answer ``--queries`` queries each (the arena case: each answer is its
own text, given its candidate's strength). The simulator judges a pair by a Bradley-Terry
draw from the two strengths (``VendorServer(strengths=...)``), then each persona answers
that draw with its accuracy and position bias.

* ``pairs="all"``: three critics (accuracy 0.9, 0.8, 0.7; position bias 0.0, 0.3, 0.6)
  judge every pair on every query in both orders (``Ensemble.rank``'s default). Target:
  Spearman correlation of the ranking with the latent order >= 0.95.
* ``pairs="adaptive"``, budget 40% of the all-pairs items: target Spearman >= 0.90 with
  at most 40% of the all-pairs calls (calls counted from the verdicts' attempts).
* Coverage: the share of candidates whose latent rating (centred like the fit's) lies in
  its interval, over ``--repeats`` seeds, for the Fisher and the bootstrap intervals at
  95%. Measured where the intervals' model holds: one critic of accuracy 1.0 and no
  position bias, one order, so each comparison is one Bradley-Terry draw (a panel's
  majority over three critics and both orders is sharper than one draw, so its ratings
  are on a stretched scale and their intervals are not intervals of the latent ones).
  Target: within 0.05 of the stated level.
* The fit's speed: 1,000 candidates x 50,000 comparisons (``bench/bench_bt_fit.py``
  measures the solvers in detail); target under 1 s.

    python bench/bench_ranking.py [--queries 6] [--repeats 20]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import Critic, Ensemble
from cross_judge.ranking import Ranking, spearman
from cross_judge.stats.bradley_terry import elo, fit_bradley_terry
from cross_judge.testing import Persona, VendorServer

N = 12
STRENGTHS = [-1.5 + 3.0 * k / (N - 1) for k in range(N)]
IDS = [f"model-{k:02d}" for k in range(N)]


def arena(queries: int) -> tuple[list[str], dict[str, dict[str, str]], dict[str, float]]:
    """The queries, each candidate's answer per query, and each answer text's strength."""
    asked = [f"Question {q}: explain topic {q}." for q in range(queries)]
    answers = {cid: {q: f"{cid}'s answer to {q!r}" for q in asked} for cid in IDS}
    strengths = {text: STRENGTHS[k] for k, cid in enumerate(IDS) for text in answers[cid].values()}
    return asked, answers, strengths


def latent_ratings() -> dict[str, float]:
    mean = sum(STRENGTHS) / N
    return {cid: elo(s - mean) for cid, s in zip(IDS, STRENGTHS, strict=True)}


def rho(ranking: Ranking) -> float:
    value = spearman([ranking.ratings[c] for c in IDS], STRENGTHS)
    return float("nan") if value is None else value


async def panel_runs(queries: int, seed: int) -> tuple[Ranking, Ranking]:
    asked, answers, strengths = arena(queries)
    personas = [
        Persona("sim-a", accuracy=0.9, position_bias=0.0, seed=seed),
        Persona("sim-b", accuracy=0.8, position_bias=0.3, seed=seed + 1),
        Persona("sim-c", accuracy=0.7, position_bias=0.6, seed=seed + 2),
    ]
    with VendorServer(personas, strengths=strengths) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                vendor="custom",
                base_url=server.url,
                prompt="pairwise@2",
                cache=False,
            )
            for p in personas
        ]
        async with Ensemble(critics) as panel:
            everything = await panel.rank(answers, queries=asked, pairs="all", concurrency=32)
            items = N * (N - 1) // 2 * queries
            adaptive = await panel.rank(
                answers,
                queries=asked,
                pairs="adaptive",
                budget=int(0.4 * items),
                seed=seed,
                concurrency=32,
            )
    return everything, adaptive


async def coverage_run(queries: int, seed: int) -> tuple[Ranking, Ranking]:
    asked, answers, strengths = arena(queries)
    persona = Persona("sim-exact", accuracy=1.0, position_bias=0.0, seed=seed)
    with VendorServer([persona], strengths=strengths) as server:
        critic = Critic(
            name="exact",
            model="sim-exact",
            vendor="custom",
            base_url=server.url,
            prompt="pairwise@2",
            cache=False,
        )
        async with Ensemble([critic]) as panel:
            fisher = await panel.rank(
                answers, queries=asked, order="fixed", concurrency=32, seed=seed
            )
    return fisher, fisher.refit(ci="bootstrap", seed=seed)


def covered(ranking: Ranking, truth: dict[str, float]) -> tuple[int, int]:
    hits = sum(ranking.ci[c][0] <= truth[c] <= ranking.ci[c][1] for c in IDS)
    return hits, N


def fit_time(seed: int) -> float:
    rng = random.Random(seed)
    n, m = 1000, 50_000
    worth = [rng.gauss(0.0, 1.0) for _ in range(n)]
    wins = []
    for _ in range(m):
        i, j = rng.sample(range(n), 2)
        p = 1.0 / (1.0 + math.exp(worth[j] - worth[i]))
        wins.append((i, j) if rng.random() < p else (j, i))
    start = time.perf_counter()
    fit_bradley_terry(n, wins)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    report = Report(
        "ranking",
        "Ranking 12 candidates on the simulator (Bradley-Terry ratings, intervals, adaptive)",
        candidates=N,
        queries=args.queries,
        repeats=args.repeats,
        seed=args.seed,
    )
    everything, adaptive = asyncio.run(panel_runs(args.queries, args.seed))
    for name, ranking in (("all", everything), ("adaptive", adaptive)):
        report.row(
            design=name,
            comparisons=ranking.comparisons,
            ties=ranking.ties,
            calls=ranking.calls,
            spearman=round(rho(ranking), 4),
            critics=", ".join(
                f"{c} {r:.2f}" for c, r in ranking.per_critic_spearman.items() if r is not None
            ),
        )
    truth = latent_ratings()
    hits = {"fisher": 0, "bootstrap": 0}
    total = 0
    for k in range(args.repeats):
        fisher, boot = asyncio.run(coverage_run(args.queries, args.seed + 1000 + k))
        hits["fisher"] += covered(fisher, truth)[0]
        hits["bootstrap"] += covered(boot, truth)[0]
        total += N
    seconds = fit_time(args.seed)
    report.note(
        f"coverage of latent ratings at 95% over {args.repeats} seeds x {N} candidates: "
        f"fisher {hits['fisher'] / total:.3f}, bootstrap {hits['bootstrap'] / total:.3f}"
    )
    report.check("Spearman with the latent order, pairs='all'", rho(everything), at_least=0.95)
    report.check("Spearman with the latent order, pairs='adaptive'", rho(adaptive), at_least=0.90)
    report.check(
        "calls of pairs='adaptive' / pairs='all'",
        adaptive.calls / everything.calls,
        at_most=0.40,
        unit="x",
    )
    for method in ("fisher", "bootstrap"):
        report.check(
            f"|coverage - 0.95| of the {method} intervals",
            abs(hits[method] / total - 0.95),
            at_most=0.05,
            note=f"coverage {hits[method] / total:.3f} of {total}",
        )
    report.check("fit of 1,000 candidates x 50,000 comparisons", seconds, at_most=1.0, unit=" s")
    return report.finish(
        [
            ("design", "pairs"),
            ("comparisons", "comparisons"),
            ("ties", "ties"),
            ("calls", "calls"),
            ("spearman", "Spearman"),
            ("critics", "per-critic Spearman"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
