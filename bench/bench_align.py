"""Aligning judges with people on the simulator (issue 42): held-out jury kappa with gold
before and after, effective votes with examples kept apart and with the same examples for
every critic, against random examples, and the measuring calls' spend against the budget.

Data (simulated, not a measurement of any model): per seed, 600 items over six topics
(the first word of each item); people's labels for all of them, 80% PASS on the topics
``refund`` and ``billing``, half PASS elsewhere. Three critics of the simulated vendor
(``cross_judge.testing``), accuracy 0.85, each with a hidden policy
(:class:`~cross_judge.testing.HiddenPolicy`) it applies unless the prompt shows otherwise:
``a`` and ``b`` answer FAIL on every ``refund`` item, ``c`` on every ``billing`` item; and
anchoring 0.5 (shown an example of the item's topic, a critic answers its label half the
time: the simulator's assumption, after arXiv 2605.29800, that jurors shown the same
examples err together). They judge with the packaged ``pass-fail@3`` (a place for
examples). The panel judges every item once (the batch); then, on the same batch and
split (holdout 0.3, stratified, so 180 items are held out), one alignment per variant:

- ``disjoint``: the default, 4 examples per critic, those it and the jury got wrong first,
  no example shared;
- ``shared``: the same 4 examples for every critic;
- ``random``: 4 random labelled items per critic, disjoint: the naive choice;
- ``instructions``: no examples; an instruction drafted by a simulated editor
  (``cross_judge.testing``: it names the topic most of a critic's mistakes share and the
  label people gave there) from up to 8 of each critic's mistakes, added to its system
  prompt.

Side by side, with each critic its own blind spot (``a`` refund, ``b`` billing, ``c``
shipping; people pass 80% of those topics): the majority is right anyway, the critics'
errors are apart, and examples pull them together; the effective votes before and after
with per-critic and with shared examples (10 seeds, paired).

Per variant: the consensus kappa with gold on the held-out items before and after (mean
over seeds, its standard error, and the share of seeds whose bootstrap interval of the gain
is above 0), the effective votes before and after, and the spend of the measuring calls
(and the editor's) against ``budget_usd`` $0.08 (every simulated model priced at $0.15 /
$0.60 per million tokens). Checked: the default's mean gain >= 0.15 and the lower end of
its 95% interval over seeds (mean - 1.96 SE) above 0; its effective votes not below the
unaligned panel's (mean of the paired difference), and above the shared examples'. Paired
across seeds: disjoint minus random on the kappa gain, disjoint minus shared on the
effective votes after, each with its standard error.

    python bench/bench_align.py [--seeds 10] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import BatchResult, Critic, Ensemble, StatisticsWarning, register_price
from cross_judge.alignment import AlignmentPlan
from cross_judge.testing import HiddenPolicy, Persona, VendorServer

KEY = "sk-bench-align-0123456789abcdef"
TOPICS = ("refund", "billing", "shipping", "login", "privacy", "pricing")


@dataclass(frozen=True)
class Setting:
    """The critics' blind spots (critic -> trigger) and people's PASS rate per topic."""

    policies: dict[str, str]
    pass_rate: dict[str, float]


SHARED_BLIND_SPOT = Setting({"a": "refund", "b": "refund", "c": "billing"},
                            {"refund": 0.8, "billing": 0.8})  # fmt: skip
"""The main setting: two critics share a blind spot, so the jury errs there."""
DISTINCT_BLIND_SPOTS = Setting({"a": "refund", "b": "billing", "c": "shipping"},
                               {"refund": 0.8, "billing": 0.8, "shipping": 0.8})  # fmt: skip
"""Each critic its own blind spot: the majority is right anyway, and the critics' errors
are apart until examples pull them together."""
POLICIES = SHARED_BLIND_SPOT.policies
N_ITEMS = 600
K = 4
BUDGET_USD = 0.08
VARIANTS = ("disjoint", "shared", "random", "instructions")
TARGET_GAIN = 0.15


def world(seed: int, setting: Setting) -> tuple[dict[str, str], dict[str, str]]:
    """The items (id -> text) and people's labels (id -> label) of one seed."""
    rng = random.Random(f"bench-align|{seed}")
    items, gold = {}, {}
    for n in range(N_ITEMS):
        topic = TOPICS[n % len(TOPICS)]
        item_id = f"s{seed}-{n}"
        items[item_id] = f"{topic}: case {n} of seed {seed}, ticket {rng.randrange(10**6)}"
        gold[item_id] = "PASS" if rng.random() < setting.pass_rate.get(topic, 0.5) else "FAIL"
    return items, gold


def personas(seed: int, setting: Setting) -> list[Persona]:
    return [
        Persona(
            name,
            accuracy=0.85,
            labels=("PASS", "FAIL"),
            seed=seed * 10 + k,
            policy=HiddenPolicy(trigger=trigger, answer="FAIL"),
            anchoring=0.5,
        )
        for k, (name, trigger) in enumerate(setting.policies.items())
    ] + [Persona("editor", labels=("EDIT",), seed=seed)]


async def one_seed(
    seed: int,
    resamples: int,
    setting: Setting = SHARED_BLIND_SPOT,
    variants: tuple[str, ...] = VARIANTS,
) -> dict[str, AlignmentPlan]:
    items, gold = world(seed, setting)
    truth = {items[i]: label for i, label in gold.items()}
    with VendorServer(personas(seed, setting), api_key=KEY, gold=truth) as server:
        critics = [
            Critic(name=n, model=n, vendor="custom", base_url=server.url, api_key=KEY,
                   prompt="pass-fail@3")
            for n in setting.policies
        ]  # fmt: skip
        panel = Ensemble(critics)
        editor = Critic(name="editor", model="editor", vendor="custom", base_url=server.url,
                        api_key=KEY)  # fmt: skip
        try:
            batch: BatchResult = await panel.judge_many(
                [{"id": i, "query": q} for i, q in items.items()]
            )
            plans = {}
            for variant in variants:
                plans[variant] = await batch.align(
                    gold,
                    panel,
                    k=K,
                    seed=seed,
                    method="instructions" if variant == "instructions" else "examples",
                    editor=editor if variant == "instructions" else None,
                    shared=variant == "shared",
                    prefer="random" if variant == "random" else "errors",
                    resamples=resamples,
                    budget_usd=BUDGET_USD,
                )
        finally:
            await panel.aclose()
    return plans


def mean_se(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return mean, se


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    warnings.simplefilter("ignore", StatisticsWarning)
    for name in [*POLICIES, *DISTINCT_BLIND_SPOTS.policies, "editor"]:
        register_price(name, vendor="custom", input=0.15, output=0.60)
    report = Report(
        "align",
        "Aligning judges with people (simulated critics with hidden policies)",
        seeds=args.seeds,
        items=N_ITEMS,
        k=K,
        resamples=args.resamples,
    )
    start = time.perf_counter()
    runs = [asyncio.run(one_seed(seed, args.resamples)) for seed in range(args.seeds)]
    elapsed = time.perf_counter() - start
    figures: dict[str, dict[str, list[Any]]] = {v: {} for v in VARIANTS}
    for plans in runs:
        for variant, plan in plans.items():
            jury = plan.figures.jury
            kept = figures[variant]
            kept.setdefault("kappa_before", []).append(jury["consensus_kappa"].before)
            kept.setdefault("kappa_after", []).append(jury["consensus_kappa"].after)
            kept.setdefault("gain", []).append(jury["consensus_kappa"].gain)
            kept.setdefault("significant", []).append(jury["consensus_kappa"].significant)
            kept.setdefault("votes_before", []).append(jury["effective_votes"].before)
            kept.setdefault("votes_after", []).append(jury["effective_votes"].after)
            kept.setdefault("spend", []).append(plan.spend_usd)
    for variant in VARIANTS:
        kept = figures[variant]
        gain, gain_se = mean_se(kept["gain"])
        report.row(
            variant=variant,
            kappa_before=statistics.fmean(kept["kappa_before"]),
            kappa_after=statistics.fmean(kept["kappa_after"]),
            gain=gain,
            gain_se=gain_se,
            significant=f"{sum(kept['significant'])}/{len(kept['significant'])}",
            votes_before=statistics.fmean(kept["votes_before"]),
            votes_after=statistics.fmean(kept["votes_after"]),
            spend_usd=max(kept["spend"]),
        )
    pairs = {
        "kappa gain, instructions - random": [
            d - r
            for d, r in zip(figures["instructions"]["gain"], figures["random"]["gain"], strict=True)
        ],
        "kappa gain, disjoint - random": [
            d - r
            for d, r in zip(figures["disjoint"]["gain"], figures["random"]["gain"], strict=True)
        ],
        "effective votes after, disjoint - shared": [
            d - s
            for d, s in zip(
                figures["disjoint"]["votes_after"], figures["shared"]["votes_after"], strict=True
            )
        ],
    }
    for name, values in pairs.items():
        mean, se = mean_se(values)
        report.note(f"paired over seeds, {name}: {mean:+.3f} (SE {se:.3f})")
    report.note(
        f"simulated critics (cross_judge.testing), not a language model; {args.seeds} seeds in "
        f"{elapsed:.0f} s"
    )
    disjoint = figures["disjoint"]
    gain, gain_se = mean_se(disjoint["gain"])
    report.note(
        f"disjoint: mean kappa gain {gain:+.3f}, 95% interval over seeds "
        f"[{gain - 1.96 * gain_se:+.3f}, {gain + 1.96 * gain_se:+.3f}]; the gain's own "
        f"bootstrap interval was above 0 on {sum(disjoint['significant'])} of "
        f"{len(disjoint['significant'])} seeds"
    )
    report.check("held-out jury kappa gain (disjoint)", gain, at_least=TARGET_GAIN)
    report.check(
        "lower end of the gain's 95% interval over seeds (disjoint)",
        gain - 1.96 * gain_se,
        at_least=0.0,
    )
    lift = [a - b for a, b in zip(disjoint["votes_after"], disjoint["votes_before"], strict=True)]
    lift_mean, lift_se = mean_se(lift)
    report.note(f"paired over seeds, effective votes after - before (disjoint): "
                f"{lift_mean:+.3f} (SE {lift_se:.3f})")  # fmt: skip
    report.check("effective votes after - before (disjoint), mean", lift_mean, at_least=0.0)
    report.check(
        "effective votes after, disjoint - shared",
        statistics.fmean(pairs["effective votes after, disjoint - shared"]),
        at_least=0.0,
    )
    # Side by side, where each critic has its own blind spot: the unaligned panel's errors
    # are apart, and shared examples pull them together.
    apart = [
        asyncio.run(one_seed(seed, args.resamples, DISTINCT_BLIND_SPOTS, ("disjoint", "shared")))
        for seed in range(args.seeds)
    ]
    votes = {
        v: [
            (
                p[v].figures.jury["effective_votes"].before,
                p[v].figures.jury["effective_votes"].after,
            )
            for p in apart
        ]
        for v in ("disjoint", "shared")
    }
    fall = {v: [a - b for b, a in pairs_] for v, pairs_ in votes.items()}
    for variant in ("disjoint", "shared"):
        mean, se = mean_se(fall[variant])
        report.row(
            variant=f"{variant}, distinct blind spots",
            votes_before=statistics.fmean(b for b, _ in votes[variant]),
            votes_after=statistics.fmean(a for _, a in votes[variant]),
        )
        report.note(
            f"distinct blind spots, {variant} examples: effective votes after - before "
            f"{mean:+.3f} (SE {se:.3f}, paired over seeds)"
        )
    gap = [d - s for d, s in zip(fall["disjoint"], fall["shared"], strict=True)]
    gap_mean, gap_se = mean_se(gap)
    report.note(
        f"distinct blind spots: effective votes after, disjoint - shared {gap_mean:+.3f} "
        f"(SE {gap_se:.3f}, paired)"
    )
    report.check(
        "distinct blind spots: effective votes after - before, shared examples",
        statistics.fmean(fall["shared"]),
        at_most=0.0,
    )
    report.check(
        "distinct blind spots: effective votes after, disjoint - shared", gap_mean, at_least=0.0
    )
    spends = [s for v in VARIANTS for s in figures[v]["spend"] if s is not None]
    report.check("most spent by one alignment", max(spends), at_most=BUDGET_USD, unit=" USD")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
