"""Labels from people, offline: a jury judges 600 items, chooses 80 for people to label,
and the share of bad items is estimated from both, without the jury's bias.

Three simulated critics (right 75% of the time, wrong together on hard items) judge items
of which 15% are truly FAIL; the jury's own FAIL share is too high. The label queue picks
the items the jury was least sure of, each with the probability it had of being picked;
here the "people" are the simulator's truth. Printed: the jury-only share, the share from
the 80 labels alone, and the prediction-powered estimate that combines both (PPI++, with
the queue's probabilities undone), each beside the true share; then people's votes added
to the jury's results as a critic of their own, and how often each critic agrees with them.

    python examples/labels_from_people.py
"""

from __future__ import annotations

import random

import anyio

from cross_judge import Critic, Ensemble
from cross_judge.testing import Persona, VendorServer

PROMPT = (
    "Is this answer acceptable?\n<item>{query}</item>\n"
    'Reply in JSON: {{"kind": "PASS or FAIL", "confidence": 0.8, "reasoning": "..."}}'
)


async def main() -> None:
    rng = random.Random(29)
    items = [f"answer number {i:04d}" for i in range(600)]
    truth = {item: "FAIL" if rng.random() < 0.15 else "PASS" for item in items}
    personas = [
        Persona(f"sim-{i}", accuracy=0.75, labels=("PASS", "FAIL"), seed=i) for i in range(3)
    ]
    with VendorServer(personas, gold=truth, error_correlation=0.3) as server:
        critics = [
            Critic(
                name=f"sim-{i}",
                model=f"sim-{i}",
                vendor="custom",
                base_url=server.url,
                api_key="unused",
                prompt_template=PROMPT,
                labels=["PASS", "FAIL"],
            )
            for i in range(3)
        ]
        async with Ensemble(critics) as jury:
            batch = await jury.judge_many(items, concurrency=32)

    queue = batch.label_queue(80, strategy="uncertain", seed=1)
    people = {item: truth[item] for item in queue.items}  # what the labelling page exports
    true_share = sum(label == "FAIL" for label in truth.values()) / len(truth)
    estimate = batch.estimate("FAIL", gold=people, queue=queue)
    print(f"true FAIL share:       {true_share:.3f}")
    print(f"jury only:             {estimate.jury_only:.3f}")
    print(
        f"80 labels only:        {estimate.labels_only:.3f} "
        f"[{estimate.labels_only_low:.3f}, {estimate.labels_only_high:.3f}]"
    )
    print(f"jury + labels (PPI++): {estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]")

    rows = [{"item": item, "critic": "people", "label": label} for item, label in people.items()]
    with_people = batch.add_votes(rows, revote=False)
    print(f"critics: {', '.join(with_people.critics)} (people: {with_people.human_critics})")
    for name in batch.critics:
        agree = sum(
            1
            for result in with_people.verdicts
            if result.query_id in people
            for verdict in result.verdicts
            if verdict.critic_id == name and verdict.kind == people[result.query_id]
        )
        print(f"{name} agrees with people on {agree} of {len(people)} labelled items")


if __name__ == "__main__":
    anyio.run(main)
