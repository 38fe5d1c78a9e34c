"""How far to trust each critic, learned from the verdicts: offline, on simulated critics.

Five simulated critics (accuracy 0.9, 0.75, 0.7, 0.65 and 0.6; the weakest states an
inflated confidence; errors correlated as real judges' are) judge 1,000 items once. Then,
with no further call: the batch summary against 300 labelled items, Dawid-Skene without
labels (the classic model and the one for correlated errors), log-odds weights learned on
the labels, effective votes estimated without labels, and calibrated confidence.

Needs the ``stats`` extra (numpy, for the correlated-errors model):

    pip install 'cross-judge[stats]'
    python examples/reliability.py
"""

from __future__ import annotations

import random
import sys

import anyio
import rich

from cross_judge import BatchResult, Critic, Ensemble
from cross_judge.reliability import (
    apply_calibration,
    calibrate_confidence,
    effective_votes,
    learn_weights,
)
from cross_judge.testing import Persona, VendorServer

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]
ACCURACIES = [0.9, 0.75, 0.7, 0.65, 0.6]
TEMPLATE = (
    "Judge this category.\n<item>{query}</item>\nAnswer in JSON: kind, confidence, reasoning."
)


def mean_confidence(batch: BatchResult) -> float:
    values = [
        v.confidence
        for r in batch.verdicts
        for v in r.verdicts
        if v.critic_id == "sim-4" and v.error is None
    ]
    return sum(values) / len(values)


async def main(n_items: int = 1000, n_labelled: int = 300) -> None:
    rng = random.Random(7)
    truth = {f"candidate category #{i}": rng.choice(LABELS) for i in range(n_items)}
    personas = [
        Persona(
            f"sim-{i}",
            accuracy=accuracy,
            seed=i,
            confidence=(0.9, 1.0) if i == len(ACCURACIES) - 1 else (0.5, 0.95),
        )
        for i, accuracy in enumerate(ACCURACIES)
    ]
    async with VendorServer(personas, gold=truth, error_correlation=0.3) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                vendor="custom",
                base_url=server.url,
                prompt_template=TEMPLATE,
                labels=LABELS,
            )
            for p in personas
        ]
        async with Ensemble(critics) as panel:
            batch = await panel.judge_many(list(truth), concurrency=32)

    labelled = dict(list(truth.items())[:n_labelled])
    rich.print(batch.summary(gold=labelled))  # print(batch) gives it without gold

    def accuracy(result_labels: dict[str, str]) -> float:
        held_out = list(truth)[n_labelled:]
        return sum(result_labels[i] == truth[i] for i in held_out) / len(held_out)

    weights = learn_weights(batch, labelled).weights
    rules = {
        "majority vote": batch,
        "Dawid-Skene (no labels)": batch.revote("dawid_skene"),
        "  for correlated errors": batch.revote("dawid_skene", errors="correlated"),
        "log-odds weights": batch.revote("weighted", weights=weights, use_confidence=False),
    }
    print(f"accuracy on the {n_items - n_labelled} unlabelled items:")
    for name, revoted in rules.items():
        print(f"  {name:<24} {accuracy({r.query_id: r.consensus for r in revoted.verdicts}):.3f}")
    unlabelled = effective_votes(batch)  # no gold: estimated by the correlated-errors model
    print(f"effective votes estimated without labels: {unlabelled.effective:.1f}")
    fits = calibrate_confidence(batch, labelled)
    inflated = fits["sim-4"]
    print(
        f"sim-4 calibration error: {inflated.ece_before:.3f} stated, "
        f"{inflated.ece_after:.3f} calibrated (temperature {inflated.temperature:.2f})"
    )
    calibrated = apply_calibration(batch, fits)  # the same batch, honest confidences
    print(
        f"sim-4 mean confidence: {mean_confidence(batch):.2f} stated, "
        f"{mean_confidence(calibrated):.2f} calibrated"
    )


if __name__ == "__main__":
    try:
        import numpy  # noqa: F401  (the correlated-errors Dawid-Skene model needs it)
    except ImportError:
        sys.exit("examples/reliability.py needs the stats extra: pip install 'cross-judge[stats]'")
    anyio.run(main)
