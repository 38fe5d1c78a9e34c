"""Position bias of pairwise judges, measured and removed, on the simulated vendor.

Three critics of accuracy 0.7 whose unsure answers pick the first-shown candidate with
probability ``position_bias`` 0.0, 0.3 and 0.6 judge ``--pairs`` pairs (the better
candidate is ``a`` in a seeded half of them, ``b`` in the other; no ties) with the packaged
``pairwise`` prompt, in three runs:

* ``order="both"``: every critic judges both orders (2 calls per critic and pair); a flip
  is a tie. Measured per critic: the first-position rate among its decisive answers (in
  the order shown) and its flip rate, against the exact rates the simulator is set to
  (``cross_judge.testing.pairwise_rates``);
* ``order="fixed"``: ``a`` always first (1 call);
* ``order="cyclic"``: alternating orders over pairs and critics (1 call).

Then self-consistency, reported without a target: three resampling personas (accuracy 0.9,
0.7, 0.5; every repeated request at temperature > 0 is a new draw) label ``--items`` items
(4 labels) once and with ``samples=5``: the accuracy of one call and of the vote of five,
and each critic's mean self-agreement. The simulator's draws are independent, which
flatters the vote; a real model repeats some of its mistakes.

Targets: measured first-position and flip rates within 0.03 of the truth for each critic;
with ``order="both"`` the share of the 0.6-biased critic's decisive verdicts that are wrong
at most half of ``order="fixed"``'s (calls reported beside); with ``order="cyclic"`` the
share of the panel's decisive verdicts that pick ``a`` (the candidate listed first in the
input) within 0.05 of 50%, at one call per critic.

    python bench/bench_bias.py [--pairs 1000] [--items 250]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import BatchResult, Critic, Ensemble
from cross_judge.pairwise import map_back
from cross_judge.testing import Persona, VendorServer, pairwise_rates

BIASES = (0.0, 0.3, 0.6)
ACCURACY = 0.7


def make_pairs(n: int, seed: int) -> tuple[list[dict[str, str]], dict[str, str]]:
    """``n`` pair items and, per item id, the right label in the item's names."""
    rng = random.Random(seed)
    items, truth = [], {}
    for i in range(n):
        good = f"A careful, correct answer to task {i} (variant {rng.random():.6f})."
        poor = f"A sloppy answer to task {i}."
        a_better = rng.random() < 0.5
        items.append(
            {
                "id": f"pair-{i:05d}",
                "query": f"Task {i}: which answer is better?",
                "a": good if a_better else poor,
                "b": poor if a_better else good,
                "better": good,
            }
        )
        truth[f"pair-{i:05d}"] = "A" if a_better else "B"
    return items, truth


async def run(url: str, items: list[dict[str, str]], order: str) -> BatchResult:
    critics = [
        Critic(
            name=f"bias-{bias}",
            model=f"sim-bias-{bias}",
            prompt="pairwise",
            vendor="custom",
            base_url=url,
            api_key="unused",
            max_retries=0,
        )
        for bias in BIASES
    ]
    judged = [{k: v for k, v in item.items() if k != "better"} for item in items]
    async with Ensemble(critics, order=order) as panel:  # type: ignore[arg-type]
        return await panel.judge_many(judged, concurrency=32)


def shown_rates(batch: BatchResult, critic: str) -> tuple[float, float]:
    """A critic's first-position rate among its decisive answers (in the order shown) and
    its flip rate, from the answers of an ``order="both"`` batch."""
    first = decisive = flips = pairs = 0
    for result in batch.verdicts:
        for verdict in result.verdicts:
            if verdict.critic_id != critic or verdict.answers is None:
                continue
            valid = [a for a in verdict.answers if a.error is None]
            for answer in valid:
                if answer.answered in ("A", "B"):
                    decisive += 1
                    first += answer.answered == "A"
            if verdict.flipped is not None:
                pairs += 1
                flips += verdict.flipped
    return first / decisive, flips / pairs


def wrong_share(batch: BatchResult, critic: str, truth: dict[str, str]) -> tuple[float, int]:
    """Share of a critic's decisive verdicts (A or B, in the item's names) that are wrong,
    and how many calls it made."""
    wrong = decisive = calls = 0
    for result in batch.verdicts:
        for verdict in result.verdicts:
            if verdict.critic_id != critic:
                continue
            calls += verdict.attempts
            if verdict.error is None and verdict.kind in ("A", "B"):
                decisive += 1
                wrong += verdict.kind != truth[result.query_id]
    return wrong / decisive, calls


def a_share(batch: BatchResult) -> float:
    """Share of all critics' decisive verdicts that pick ``a``, the candidate listed first."""
    picks = [
        v.kind
        for r in batch.verdicts
        for v in r.verdicts
        if v.error is None and v.kind in ("A", "B")
    ]
    return picks.count("A") / len(picks)


def first_shown_share(batch: BatchResult) -> float:
    """Share of all decisive single-order answers that pick the candidate shown first."""
    picks = [
        map_back(v.kind, v.order)
        for r in batch.verdicts
        for v in r.verdicts
        if v.error is None and v.kind in ("A", "B") and v.order in ("ab", "ba")
    ]
    return picks.count("A") / len(picks)


SAMPLE_ACCURACIES = (0.9, 0.7, 0.5)
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")


async def sampled(url: str, items: list[str], samples: int) -> BatchResult:
    critics = [
        Critic(
            name=f"acc-{accuracy}",
            model=f"sim-acc-{accuracy}",
            vendor="custom",
            base_url=url,
            api_key="unused",
            prompt_template="Judge this category.\n<item>{query}</item>\nAnswer in JSON.",
            labels=LABELS,
            temperature=0.7,
            samples=samples,
        )
        for accuracy in SAMPLE_ACCURACIES
    ]
    async with Ensemble(critics) as panel:
        return await panel.judge_many(items, concurrency=32)


def self_consistency(report: Report, n_items: int, seed: int) -> None:
    rng = random.Random(seed)
    gold = {f"candidate category {i:04d}": rng.choice(LABELS) for i in range(n_items)}
    personas = [
        Persona(f"sim-acc-{a}", accuracy=a, labels=LABELS, seed=i, resample=True)
        for i, a in enumerate(SAMPLE_ACCURACIES)
    ]
    with VendorServer(personas, gold=gold) as server:
        once = asyncio.run(sampled(server.url, list(gold), 1))
        five = asyncio.run(sampled(server.url, list(gold), 5))
    for accuracy in SAMPLE_ACCURACIES:
        name = f"acc-{accuracy}"

        def right(batch: BatchResult, name: str = name) -> float:
            votes = [
                (v.kind, gold[r.query_id])
                for r in batch.verdicts
                for v in r.verdicts
                if v.critic_id == name and v.error is None
            ]
            return sum(k == g for k, g in votes) / len(votes)

        agreements = [
            v.self_agreement
            for r in five.verdicts
            for v in r.verdicts
            if v.critic_id == name and v.self_agreement is not None
        ]
        report.note(
            f"samples: {name}: accuracy {right(once):.3f} with one call, {right(five):.3f} "
            f"voting 5 samples; mean self-agreement "
            f"{sum(agreements) / len(agreements):.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--items", type=int, default=250)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    report = Report(
        "bias",
        "Position bias of pairwise judges: measured, and removed by judging both orders",
        pairs=args.pairs,
        accuracy=ACCURACY,
    )
    items, truth = make_pairs(args.pairs, args.seed)
    personas = [
        Persona(f"sim-bias-{bias}", accuracy=ACCURACY, position_bias=bias, seed=i)
        for i, bias in enumerate(BIASES)
    ]
    better = {item["query"]: item["better"] for item in items}
    with VendorServer(personas, better=better) as server:
        both = asyncio.run(run(server.url, items, "both"))
        fixed = asyncio.run(run(server.url, items, "fixed"))
        cyclic = asyncio.run(run(server.url, items, "cyclic"))

    worst_first = worst_flip = 0.0
    for persona, bias in zip(personas, BIASES, strict=True):
        name = f"bias-{bias}"
        expected = pairwise_rates(persona)
        assert expected.first_position is not None
        first, flip = shown_rates(both, name)
        wrong_both, calls_both = wrong_share(both, name, truth)
        wrong_fixed, calls_fixed = wrong_share(fixed, name, truth)
        worst_first = max(worst_first, abs(first - expected.first_position))
        worst_flip = max(worst_flip, abs(flip - expected.flip))
        report.row(
            critic=name,
            first=round(first, 3),
            first_true=round(expected.first_position, 3),
            flip=round(flip, 3),
            flip_true=round(expected.flip, 3),
            wrong_fixed=round(wrong_fixed, 3),
            wrong_both=round(wrong_both, 3),
            calls=f"{calls_fixed} / {calls_both}",
        )
        if bias == max(BIASES):
            ratio = wrong_both / wrong_fixed
            report.note(
                f"{name}: wrong decisive verdicts {wrong_fixed:.3f} with order='fixed' "
                f"({calls_fixed} calls), {wrong_both:.3f} with order='both' ({calls_both} "
                "calls)"
            )
    report.note(
        f"share of decisive verdicts picking a (listed first): fixed {a_share(fixed):.3f}, "
        f"cyclic {a_share(cyclic):.3f}, both {a_share(both):.3f}; cyclic's decisive answers "
        f"picking the candidate shown first: {first_shown_share(cyclic):.3f}"
    )
    self_consistency(report, args.items, args.seed)
    report.check("worst |first-position rate - truth| (order='both')", worst_first, at_most=0.03)
    report.check("worst |flip rate - truth| (order='both')", worst_flip, at_most=0.03)
    report.check(
        "wrong decisive verdicts of the 0.6-biased critic, both / fixed",
        ratio,
        at_most=0.5,
        unit="x",
    )
    report.check(
        "|share of decisive verdicts picking a - 50%| with order='cyclic'",
        abs(a_share(cyclic) - 0.5),
        at_most=0.05,
    )
    return report.finish(
        [
            ("critic", "critic"),
            ("first", "first-position"),
            ("first_true", "truth"),
            ("flip", "flip rate"),
            ("flip_true", "truth"),
            ("wrong_fixed", "wrong, fixed"),
            ("wrong_both", "wrong, both"),
            ("calls", "calls fixed / both"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
