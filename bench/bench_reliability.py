"""Trust learned from data: Dawid-Skene, log-odds weights and calibrated confidence
against plain majority, on the simulated vendor with correlated errors.

Five critics of accuracy 0.9, 0.75, 0.7, 0.65 and 0.6 judge ``--items`` items (4 labels)
once over HTTP; each call fails with probability 0.1 and is not retried, so about 10% of
the votes are missing. Errors are correlated (``error_correlation`` 0.3). The weakest
critic states an inflated confidence (0.85-1.0). Then, with no further call:

* majority vote (the baseline);
* ``batch.revote("dawid_skene")``, learned without labels: the classic model, which assumes
  critics err independently, and ``errors="correlated"``, which learns a difficulty level
  and a tempting wrong answer per item;
* ``learn_weights`` on ``--gold-items`` labelled items, then a weighted vote (evaluated on
  the other items);
* each critic's accuracy as both Dawid-Skene models estimate it, against its measured
  accuracy;
* the weakest critic's expected calibration error before and after isotonic scaling fit
  on the labelled items (evaluated on the other items); temperature scaling beside it (one
  number that sharpens or flattens confidence cannot move a cluster stated at ~0.9 down to
  the ~0.6 it earns: that needs a shift, which the isotonic map can make);
* both Dawid-Skene models on ``--ds-items`` x 5 generated votes, timed (numpy when
  installed).

Majority is scored with ties broken at random (its expected accuracy): the panel's own
tie-break follows critic order and flatters the best critic when it comes first (shown
beside). Targets, for the correlated-errors Dawid-Skene (the classic one is shown beside; it
is the model built for independent errors, and these are not): Dawid-Skene >= majority + 3
points; every critic's estimated accuracy within 0.03 of its measured one; learned weights
>= majority + 2 points; ECE after (isotonic) <= half of ECE before; Dawid-Skene on
100,000 x 5 in <= 5 s (both models).

    python bench/bench_reliability.py [--items 20000] [--gold-items 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections import Counter
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import BatchResult, Critic, Ensemble
from cross_judge.reliability import (
    apply_calibration,
    calibrate_confidence,
    dawid_skene,
    effective_votes,
    learn_weights,
)
from cross_judge.stats import _dawid_skene as _dawid_skene
from cross_judge.stats._confidence_calibration import expected_calibration_error
from cross_judge.testing import Persona, VendorServer

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
ACCURACIES = (0.9, 0.75, 0.7, 0.65, 0.6)
PROMPT = (
    "Judge whether this taxonomy category should be kept.\n<item>{query}</item>\n"
    "Answer in JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1), reasoning."
)


async def judge(url: str, items: list[str]) -> BatchResult:
    critics = [
        Critic(
            name=f"c{i}",
            model=f"sim-{i}",
            vendor="custom",
            base_url=url,
            api_key="unused",
            prompt_template=PROMPT,
            labels=LABELS,
            json_mode=False,
            max_retries=0,
        )
        for i in range(len(ACCURACIES))
    ]
    async with Ensemble(critics, voting="majority") as panel:
        return await panel.judge_many(items, concurrency=64)


def accuracy(labels: dict[str, str], gold: dict[str, str], ids: list[str]) -> float:
    return sum(labels[i] == gold[i] for i in ids) / len(ids)


def fair_majority(batch: BatchResult, gold: dict[str, str], ids: set[str]) -> float:
    """Majority vote's expected accuracy when a tie is broken at random (the panel's own
    tie-break follows critic order, which flatters whichever critic comes first)."""
    total = 0.0
    for result in batch.verdicts:
        if result.query_id not in ids:
            continue
        counts = Counter(v.kind for v in result.verdicts if v.error is None)
        if not counts:
            total += 1 / len(LABELS)
            continue
        top = max(counts.values())
        tied = [label for label, n in counts.items() if n == top]
        total += 1 / len(tied) if gold[result.query_id] in tied else 0.0
    return total / len(ids)


def ece_of(batch: BatchResult, critic: str, gold: dict[str, str], ids: set[str]) -> float:
    confidences, correct = [], []
    for result in batch.verdicts:
        if result.query_id not in ids:
            continue
        for v in result.verdicts:
            if v.critic_id == critic and v.error is None:
                confidences.append(v.confidence)
                correct.append(v.kind == gold[result.query_id])
    return expected_calibration_error(confidences, correct)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--gold-items", type=int, default=200)
    parser.add_argument("--ds-items", type=int, default=100000)
    parser.add_argument("--error-correlation", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    report = Report(
        "reliability",
        "Trust learned from verdicts vs majority vote",
        items=args.items,
        gold_items=args.gold_items,
        error_correlation=args.error_correlation,
    )
    rng = random.Random(args.seed)
    items = [f"candidate category {i:06d}" for i in range(args.items)]
    gold = {item: rng.choice(LABELS) for item in items}
    personas = [
        Persona(
            f"sim-{i}",
            accuracy=acc,
            labels=LABELS,
            seed=i,
            fault_rate=0.1,
            confidence=(0.85, 1.0) if i == len(ACCURACIES) - 1 else (0.5, 0.95),
        )
        for i, acc in enumerate(ACCURACIES)
    ]
    with VendorServer(
        personas, gold=gold, error_correlation=args.error_correlation, difficulty_seed=args.seed
    ) as server:
        started = time.perf_counter()
        batch = asyncio.run(judge(server.url, items))
        judged_s = time.perf_counter() - started
    missing = sum(v.error is not None for r in batch.verdicts for v in r.verdicts)
    votes = len(items) * len(ACCURACIES)

    labelled = items[: args.gold_items]
    others = items[args.gold_items :]
    majority = {r.query_id: r.consensus for r in batch.verdicts}
    started = time.perf_counter()
    classic = dawid_skene(batch)
    classic_s = time.perf_counter() - started
    started = time.perf_counter()
    learned = dawid_skene(batch, errors="correlated")
    ds_s = time.perf_counter() - started
    weights = learn_weights(batch, {i: gold[i] for i in labelled})
    weighted = batch.revote("weighted", weights=weights.weights, use_confidence=False)
    by_weight = {r.query_id: r.consensus for r in weighted.verdicts}

    fair = fair_majority(batch, gold, set(others))
    rows = {
        "majority vote, ties at random (expected)": fair,
        "majority vote, ties to the first critic (the best)": accuracy(majority, gold, others),
        "Dawid-Skene, classic (no labels)": accuracy(classic.labels, gold, others),
        "Dawid-Skene, correlated errors (no labels)": accuracy(learned.labels, gold, others),
        f"log-odds weights ({args.gold_items} labels)": accuracy(by_weight, gold, others),
    }
    for rule, value in rows.items():
        report.row(rule=rule, accuracy=round(value, 4), vs_majority=round(value - fair, 4))
    measured = {}
    worst = worst_classic = 0.0
    for i, name in enumerate(batch.critics):
        answers = [
            (v.kind, gold[r.query_id])
            for r in batch.verdicts
            for v in r.verdicts
            if v.critic_id == name and v.error is None
        ]
        measured[name] = sum(a == g for a, g in answers) / len(answers)
        estimated, estimated_classic = learned.accuracy[name], classic.accuracy[name]
        assert estimated is not None
        assert estimated_classic is not None
        worst = max(worst, abs(estimated - measured[name]))
        worst_classic = max(worst_classic, abs(estimated_classic - measured[name]))
        report.note(
            f"{name}: set {ACCURACIES[i]:.2f}, measured {measured[name]:.3f}, Dawid-Skene "
            f"correlated {estimated:.3f} (classic {estimated_classic:.3f}), log-odds weight "
            f"{weights.weights[name]:.2f}"
        )

    inflated = batch.critics[-1]
    labels_given = {i: gold[i] for i in labelled}
    held_out = set(others)
    before = ece_of(batch, inflated, gold, held_out)
    after = ece_of(
        apply_calibration(batch, calibrate_confidence(batch, labels_given, method="isotonic")),
        inflated,
        gold,
        held_out,
    )
    after_temperature = ece_of(
        apply_calibration(batch, calibrate_confidence(batch, labels_given)),
        inflated,
        gold,
        held_out,
    )

    gen = random.Random(args.seed + 1)
    synthetic = [
        [
            None
            if gen.random() < 0.1
            else (truth if gen.random() < acc else gen.choice([x for x in LABELS if x != truth]))
            for acc in ACCURACIES
        ]
        for truth in (gen.choice(LABELS) for _ in range(args.ds_items))
    ]
    from cross_judge.stats._dawid_skene import dawid_skene as fit

    started = time.perf_counter()
    fit(synthetic, classes=list(LABELS))
    big_classic_s = time.perf_counter() - started
    started = time.perf_counter()
    fit(synthetic, classes=list(LABELS), errors="correlated")
    big_s = time.perf_counter() - started

    report.note(
        f"{args.items} items x {len(ACCURACIES)} critics = {votes} calls in {judged_s:.1f}s; "
        f"{missing / votes:.1%} of votes missing (failed calls, not retried); Dawid-Skene on "
        f"the batch {classic_s:.2f}s classic, {ds_s:.2f}s correlated"
    )
    report.note(
        f"Dawid-Skene, correlated: share of errors on the item's tempting answer "
        f"{learned.tempting_share:.2f} (the simulator: {args.error_correlation}); difficulty "
        f"levels {', '.join(f'{w:.2f}' for w in learned.difficulty)} of items"
    )
    on_gold, modelled = effective_votes(batch, gold), effective_votes(batch)
    with mock.patch.object(_dawid_skene, "numpy_available", return_value=False):
        on_consensus = effective_votes(batch)  # the fallback without numpy
    assert on_gold.effective is not None
    assert modelled.effective is not None
    assert on_consensus.effective is not None
    report.note(
        f"effective votes: {on_gold.effective:.2f} against gold, {modelled.effective:.2f} "
        f"estimated without gold by the correlated model, {on_consensus.effective:.2f} "
        "against the consensus (the fallback without numpy)"
    )
    report.note(
        f"Dawid-Skene, classic: worst |estimated - measured| critic accuracy "
        f"{worst_classic:.4f}; on {args.ds_items} x 5 votes {big_classic_s:.2f}s"
    )
    report.note(
        f"{inflated} ECE on held-out items: {before:.3f} before, {after:.3f} after isotonic "
        f"scaling, {after_temperature:.3f} after temperature scaling "
        f"({after_temperature / before:.2f}x)"
    )
    report.check(
        "Dawid-Skene (correlated errors) accuracy minus majority",
        100 * (rows["Dawid-Skene, correlated errors (no labels)"] - fair),
        at_least=3.0,
        unit=" points",
    )
    report.check(
        f"log-odds weights ({args.gold_items} labels) accuracy minus majority",
        100 * (rows[f"log-odds weights ({args.gold_items} labels)"] - fair),
        at_least=2.0,
        unit=" points",
    )
    report.check(
        "worst |estimated - measured| critic accuracy (correlated errors)", worst, at_most=0.03
    )
    report.check(
        "ECE after / ECE before (inflated critic, isotonic)", after / before, at_most=0.5, unit="x"
    )
    report.check(
        f"Dawid-Skene (correlated errors) on {args.ds_items} x 5 votes",
        big_s,
        at_most=5.0,
        unit=" s",
    )
    return report.finish(
        [("rule", "rule"), ("accuracy", "accuracy"), ("vs_majority", "vs majority")]
    )


if __name__ == "__main__":
    sys.exit(main())
