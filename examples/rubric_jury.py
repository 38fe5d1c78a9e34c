"""A rubric jury, offline: three simulated graders judge answers on the packaged
``answer-quality`` rubric (five weighted criteria, ``correct`` a gate, ``unsafe`` negative),
one call per criterion, with early stop per criterion.

The simulated vendor knows each answer's truth per criterion; the graders are right 80% of
the time on each criterion, less on ``complete``. The example prints one result in full,
then per criterion how often the jury's consensus was right and how often it was disputed,
and the share of calls early stop saved.

    python examples/rubric_jury.py
"""

from __future__ import annotations

import random

import anyio

from cross_judge import Critic, Ensemble
from cross_judge.critic.prompts import load_prompt
from cross_judge.testing import Persona, VendorServer

RUBRIC = load_prompt("answer-quality")
assert RUBRIC.rubric is not None
CRITERIA = {c.id: c.requirement for c in RUBRIC.rubric.criteria}
GRADERS = ("grader-a", "grader-b", "grader-c")


def answers(n: int) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Items (a question and an answer) and their truth per criterion."""
    rng = random.Random(28)
    items, truth = [], {}
    for i in range(n):
        item = f"Q{i}: How long should an egg boil to be hard-boiled?\nA{i}: About ten minutes."
        items.append(item)
        truth[item] = {
            cid: ("PASS" if rng.random() < (0.1 if cid == "unsafe" else 0.7) else "FAIL")
            for cid in CRITERIA
        }
    return items, truth


async def main() -> None:
    items, truth = answers(60)
    personas = [
        Persona(
            name,
            accuracy=0.8,
            criteria_accuracy={"complete": 0.65},
            labels=("PASS", "FAIL"),
            seed=i,
        )
        for i, name in enumerate(GRADERS)
    ]
    with VendorServer(personas, criteria=CRITERIA, criteria_gold=truth) as server:
        jury = Ensemble(
            [
                Critic(
                    name=name,
                    model=name,
                    vendor="custom",
                    base_url=server.url,
                    api_key="unused",
                    prompt=RUBRIC,
                )
                for name in GRADERS
            ],
            voting="majority",
            early_stop=True,
        )
        async with jury:
            batch = await jury.judge_many(items, concurrency=16)
        calls = server.stats()["requests"]
    first = batch.verdicts[0]
    print(first)
    print(f"total {first.score:.2f} -> {first.consensus}")
    print("criterion  right  disputed")
    for cid in CRITERIA:
        right = sum(r.criteria[cid].consensus == truth[r.query_id][cid] for r in batch.verdicts)
        disputed = sum(r.criteria[cid].disputed for r in batch.verdicts)
        print(f"{cid:<9} {right / len(items):6.0%} {disputed / len(items):9.0%}")
    asked = len(items) * len(CRITERIA) * len(GRADERS)
    print(f"calls: {calls} of {asked} ({1 - calls / asked:.0%} saved by early stop per criterion)")


if __name__ == "__main__":
    anyio.run(main)
