"""Seeded pilot runs for the panel-choice tests: each critic right with its own accuracy,
critics of a family wrong together on the family's hard items, each verdict costing the
critic's price."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from cross_judge import BatchResult, EnsembleVerdict, Verdict, revote

LABELS = ("PASS", "FAIL")


def pilot(
    critics: Mapping[str, tuple[float, float]],
    *,
    n: int = 400,
    seed: int = 0,
    families: Mapping[str, str] | None = None,
    shared: float = 0.0,
    failed: Mapping[str, float] | None = None,
    missing: Sequence[str] = (),
) -> tuple[BatchResult, dict[str, str]]:
    """``critics``: name -> (accuracy, USD per item). A critic of a family copies the
    family's shared answer on a ``shared`` share of the items; ``failed[name]`` is its
    share of failed calls; ``missing`` critics judge only the first half of the items.
    Returns the batch and every item's gold label."""
    rng = random.Random(seed)
    families = families or {}
    failed = failed or {}
    results: list[EnsembleVerdict] = []
    gold: dict[str, str] = {}
    for i in range(n):
        item = f"q{i}"
        truth = LABELS[rng.random() < 0.4]
        gold[item] = truth
        family_answer: dict[str, str] = {}
        verdicts = []
        for name, (accuracy, price) in critics.items():
            if name in missing and i >= n // 2:
                continue
            if rng.random() < failed.get(name, 0.0):
                verdicts.append(Verdict(kind="ERROR", critic_id=name, error="boom", cost_usd=price))
                continue
            family = families.get(name)
            own = truth if rng.random() < accuracy else _other(truth)
            if family is not None and rng.random() < shared:
                own = family_answer.setdefault(family, own)
            verdicts.append(Verdict(kind=own, critic_id=name, confidence=0.8, cost_usd=price))
        stored = EnsembleVerdict(query_id=item, verdicts=verdicts, consensus="", voting="")
        results.append(revote(stored, "majority"))
    return BatchResult.from_results(results), gold


def _other(label: str) -> str:
    return LABELS[1] if label == LABELS[0] else LABELS[0]


FOUR = {
    "cheap-a": (0.70, 0.0001),
    "cheap-b": (0.70, 0.0001),
    "mid": (0.82, 0.0005),
    "strong": (0.93, 0.0020),
}
"""Two cheap critics, a middling one and a strong dear one."""
