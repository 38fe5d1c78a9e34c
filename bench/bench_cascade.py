"""Cascade with a guarantee: a cheap tier, a strong tier for what it is unsure about, and a
threshold calibrated on labelled items so that agreement with gold is guaranteed.

The simulated vendor gives every item a difficulty and correlated errors
(``error_correlation``, 0.3 by default: two critics' errors correlate at phi ~0.2):
personas tend to be wrong on the same hard items, as real judges are. Tier 0 is three
critics of accuracy 0.75 (majority vote); tier 1 one critic of accuracy 0.93 priced 20x
per token. Every tier judges every item once (``judge_many(all_tiers=True)``); then,
over ``--splits`` random splits, the threshold is calibrated on ``--calibrate`` labelled
items (``calibrate_cascade``, target 0.9, delta 0.1) for each score (support, agreement,
confidence) and the cascade is replayed on ``--test`` other items (``Cascade.replay``:
zero calls). Beside it: the strong critic alone, and the uncalibrated rule "escalate on
any disagreement". A second, smaller run at ``--also-correlation`` (0.5) is shown
without targets.

Targets, for the calibrated cascade on the support score: on the test items its
agreement with gold is >= 0.9 in at least 1 - delta of the splits; it asks the strong
tier about <= 60% of items and costs >= 40% less than the strong critic alone (the cheap
tier's cost included), at a mean agreement >= the strong critic's alone.

    python bench/bench_cascade.py [--calibrate 500] [--test 2000] [--splits 200]
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
from _report import Report

from cross_judge import (
    BatchResult,
    Cascade,
    Critic,
    Ensemble,
    EnsembleVerdict,
    Escalation,
    calibrate_cascade,
    register_price,
)
from cross_judge.testing import Persona, VendorServer

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
PROMPT = (
    "Judge whether this taxonomy category should be kept.\n<item>{query}</item>\n"
    "Answer in JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1), reasoning."
)
CHEAP_PRICE = (0.10, 0.40)  # USD per million tokens, input and output
STRONG_PRICE = (2.00, 8.00)  # 20x
TARGET, DELTA = 0.9, 0.1
MAX_STRONG_SHARE = 0.60


def build(url: str) -> Cascade:
    def critic(name: str) -> Critic:
        return Critic(
            name=name,
            model=name,
            vendor="custom",
            base_url=url,
            api_key="unused",
            prompt_template=PROMPT,
            labels=LABELS,
            json_mode=False,
        )

    cheap = Ensemble([critic(f"sim-cheap-{i}") for i in range(3)], voting="majority")
    strong = Ensemble([critic("sim-strong")])
    return Cascade(tiers=[cheap, strong], escalate=Escalation(agreement_below=1.0))


async def judge_all(cascade: Cascade, items: list[str]) -> BatchResult:
    async with cascade:
        return await cascade.judge_many(items, concurrency=64, all_tiers=True)


def agreement(results: list[EnsembleVerdict], gold: dict[str, str]) -> float:
    return sum(r.consensus == gold[r.query_id] for r in results) / len(results)


def cost(results: list[EnsembleVerdict]) -> float:
    return sum(r.cost_usd or 0.0 for r in results)


SCORES = ("support", "agreement", "confidence")
PRIMARY = "support, keeping agreement"


def scenario(
    report: Report, correlation: float, seed: int, args: argparse.Namespace, splits: int
) -> dict[str, list[tuple[float, float, float]]]:
    """Judge every item on every tier once, then calibrate and replay over ``splits``
    random splits; one table row per rule. Returns (agreement, strong asked, cost vs the
    strong critic) per split, per rule."""
    rng = random.Random(seed)
    count = args.calibrate + args.test
    items = [f"candidate category {i:05d}" for i in range(count)]
    gold = {item: rng.choice(LABELS) for item in items}
    personas = [Persona(f"sim-cheap-{i}", accuracy=0.75, seed=i) for i in range(3)]
    personas.append(Persona("sim-strong", accuracy=0.93, seed=7))
    with VendorServer(
        personas, gold=gold, error_correlation=correlation, difficulty_seed=seed
    ) as server:
        cascade = build(server.url)
        started = time.perf_counter()
        full = asyncio.run(judge_all(cascade, items))
        judged_s = time.perf_counter() - started
        calls = server.stats()["requests"]
    by_id = {r.query_id: r for r in full.verdicts}

    rules = [f"calibrated ({PRIMARY})", *(f"calibrated ({score})" for score in SCORES)]
    rules += ["escalate on any disagreement", "strong critic alone"]
    outcomes: dict[str, list[tuple[float, float, float]]] = {rule: [] for rule in rules}
    thresholds: dict[str, list[float | None]] = {score: [] for score in SCORES}
    replay_s = 0.0
    split_rng = random.Random(seed + 1)
    for _ in range(splits):
        order = items[:]
        split_rng.shuffle(order)
        calibration = [by_id[i] for i in order[: args.calibrate]]
        test = [by_id[i] for i in order[args.calibrate :]]
        labels = {i: gold[i] for i in order[: args.calibrate]}
        strong_alone = [r.tiers[1] for r in test]  # type: ignore[index]
        strong_cost = cost(strong_alone)

        def outcome(
            replayed: list[EnsembleVerdict], baseline: float = strong_cost
        ) -> tuple[float, float, float]:
            asked = sum(r.tier == 1 for r in replayed) / len(replayed)
            return agreement(replayed, gold), asked, cost(replayed) / baseline

        keeping = calibrate_cascade(
            calibration,
            labels,
            target=TARGET,
            delta=DELTA,
            score="support",
            keep_last_tier_agreement=True,
        )
        kept = cascade.replay(test, escalation=keeping.escalation).verdicts
        outcomes[f"calibrated ({PRIMARY})"].append(outcome(kept))
        for score in SCORES:
            fit = calibrate_cascade(calibration, labels, target=TARGET, delta=DELTA, score=score)
            thresholds[score].append(fit.threshold)
            started = time.perf_counter()
            replayed = cascade.replay(test, escalation=fit.escalation).verdicts
            replay_s += time.perf_counter() - started
            outcomes[f"calibrated ({score})"].append(outcome(replayed))
        outcomes["escalate on any disagreement"].append(outcome(cascade.replay(test).verdicts))
        outcomes["strong critic alone"].append((agreement(strong_alone, gold), 1.0, 1.0))

    for rule, rows in outcomes.items():
        agreements = sorted(a for a, _, _ in rows)
        report.row(
            correlation=correlation,
            rule=rule,
            agreement_mean=round(statistics.fmean(agreements), 4),
            agreement_p05=round(agreements[len(agreements) // 20], 4),
            splits_at_target=round(sum(a >= TARGET for a in agreements) / len(agreements), 3),
            strong_asked=round(statistics.fmean(s for _, s, _ in rows), 3),
            cost_vs_strong=round(statistics.fmean(c for _, _, c in rows), 3),
        )
    for score, values in thresholds.items():
        chosen = [v for v in values if v is not None]
        report.note(
            f"error_correlation={correlation}, score={score}: guaranteed in "
            f"{len(chosen)}/{len(values)} splits; threshold "
            + (
                f"median {statistics.median(chosen):g}, range {min(chosen):g}-{max(chosen):g}"
                if chosen
                else "none"
            )
        )
    report.note(
        f"error_correlation={correlation}: {count} items x 4 critics (all tiers) = {calls} "
        f"vendor calls in {judged_s:.1f}s; then {len(SCORES) * splits} calibrations and "
        f"{(len(SCORES) + 1) * splits} replays of {args.test} items with 0 calls "
        f"({replay_s:.1f}s of calibrated replay)"
    )
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", type=int, default=500)
    parser.add_argument("--test", type=int, default=2000)
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--error-correlation", type=float, default=0.3)
    parser.add_argument("--also-correlation", type=float, default=0.5)
    parser.add_argument("--also-splits", type=int, default=50)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()

    report = Report(
        "cascade",
        "Cascade calibrated on labelled items vs the strong critic alone",
        calibrate=args.calibrate,
        test=args.test,
        splits=args.splits,
        error_correlation=args.error_correlation,
        target=TARGET,
        delta=DELTA,
    )
    for i in range(3):
        register_price(
            f"sim-cheap-{i}", vendor="custom", input=CHEAP_PRICE[0], output=CHEAP_PRICE[1]
        )
    register_price("sim-strong", vendor="custom", input=STRONG_PRICE[0], output=STRONG_PRICE[1])

    outcomes = scenario(report, args.error_correlation, args.seed, args, args.splits)
    if args.also_splits:
        scenario(report, args.also_correlation, args.seed, args, args.also_splits)
        report.note(
            f"error_correlation={args.also_correlation} is shown for contrast, without "
            "targets: there the cheap critics share their wrong answers so often that "
            "what they agree on is no better than the strong critic alone"
        )
    primary = outcomes[f"calibrated ({PRIMARY})"]
    strong = outcomes["strong critic alone"]
    report.check(
        f"splits where the calibrated ({PRIMARY}) cascade's test agreement >= 0.9",
        100 * sum(a >= TARGET for a, _, _ in primary) / len(primary),
        at_least=100 * (1 - DELTA),
        unit="%",
    )
    report.check(
        "items the calibrated cascade asks the strong tier about",
        100 * statistics.fmean(s for _, s, _ in primary),
        at_most=100 * MAX_STRONG_SHARE,
        unit="%",
    )
    report.check(
        "cost saved against the strong critic alone (the cheap tier's cost included)",
        100 * (1 - statistics.fmean(c for _, _, c in primary)),
        at_least=100 * (1 - MAX_STRONG_SHARE),
        unit="%",
    )
    report.check(
        "calibrated agreement minus the strong critic's alone (mean over splits)",
        100
        * (statistics.fmean(a for a, _, _ in primary) - statistics.fmean(a for a, _, _ in strong)),
        at_least=0.0,
        unit=" points",
    )
    return report.finish(
        [
            ("correlation", "rho"),
            ("rule", "rule"),
            ("agreement_mean", "agreement"),
            ("agreement_p05", "5th pct"),
            ("splits_at_target", "splits >= 0.9"),
            ("strong_asked", "strong asked"),
            ("cost_vs_strong", "x strong cost"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
