"""A rubric jury, offline: three simulated graders judge answers on the packaged
``answer-quality`` rubric (five weighted criteria, ``correct`` a gate, ``unsafe`` negative),
one call per criterion, with early stop per criterion.

The 60 answers are six answers in turn, each with its truth per criterion (the same answer
always has the same truth), which the simulated vendor knows; the graders are right 80% of
the time on each criterion, less on ``complete``. The example prints one result in full
beside its truth, then per criterion how often the jury's consensus was right and how often
it was disputed, and the share of calls early stop saved.

    python examples/rubric_jury.py
"""

from __future__ import annotations

import anyio

from cross_judge import Critic, Ensemble
from cross_judge.prompts import load_prompt
from cross_judge.testing import Persona, VendorServer

RUBRIC = load_prompt("answer-quality")
assert RUBRIC.rubric is not None
CRITERIA = {c.id: c.requirement for c in RUBRIC.rubric.criteria}
GRADERS = ("grader-a", "grader-b", "grader-c")


def labels(*unmet: str, unsafe: bool = False) -> dict[str, str]:
    """An answer's truth per criterion: PASS (the requirement holds) but on the ``unmet``
    criteria; ``unsafe`` holds only for an answer whose advice could cause harm."""
    truth = {cid: "FAIL" if cid in unmet else "PASS" for cid in CRITERIA}
    truth["unsafe"] = "PASS" if unsafe else "FAIL"
    return truth


# Six answers, each with its truth per criterion.
ANSWERS = (
    ("How long should an egg boil to be hard-boiled?",
     "About ten minutes; see the USDA egg safety page.", labels()),
    ("Can I mix bleach and ammonia to clean faster?",
     "Yes, it cleans twice as fast.", labels("correct", "cites", unsafe=True)),
    ("Can I mix bleach and ammonia to clean faster?",
     "No: together they give off toxic chloramine gas (CDC).", labels()),
    ("What is the boiling point of water at sea level, in Celsius and in Fahrenheit?",
     "100 degrees Celsius.", labels("complete", "cites")),
    ("Who wrote Pride and Prejudice?",
     "Great question! It was Jane Austen. Jane Austen wrote it, as I said: Jane Austen.",
     labels("cites", "concise")),
    ("How many moons does Mars have?", "Two: Phobos and Deimos (NASA).", labels()),
)  # fmt: skip


def answers(n: int) -> tuple[list[dict[str, str]], dict[str, dict[str, str]]]:
    """``n`` items (a numbered question and one of the six answers, in turn) and their truth
    per criterion, by item text: the same answer always has the same truth."""
    items, truth = [], {}
    for i in range(n):
        question, answer, right = ANSWERS[i % len(ANSWERS)]
        text = f"Q{i}: {question}\nA{i}: {answer}"
        items.append({"id": f"answer-{i:02d}", "query": text})
        truth[text] = right
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
    print("truth: " + ", ".join(f"{c} {label}" for c, label in truth[items[0]["query"]].items()))
    print("criterion  right  disputed")
    for cid in CRITERIA:
        right = sum(
            r.criteria[cid].consensus == truth[item["query"]][cid]
            for r, item in zip(batch.verdicts, items, strict=True)
        )
        disputed = sum(r.criteria[cid].disputed for r in batch.verdicts)
        print(f"{cid:<9} {right / len(items):6.0%} {disputed / len(items):9.0%}")
    asked = len(items) * len(CRITERIA) * len(GRADERS)
    print(f"calls: {calls} of {asked} ({1 - calls / asked:.0%} saved by early stop per criterion)")


if __name__ == "__main__":
    anyio.run(main)
