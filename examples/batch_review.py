"""Batch review: 200 items through ``Ensemble.judge_many``, then the batch statistics, offline.

``judge_many`` keeps at most ``concurrency`` items in flight (each fans out to every
critic) and returns a ``BatchResult`` in input order. Its Krippendorff's alpha over the
whole batch says how far the panel can be trusted (the per-item ``krippendorff_alpha`` is
only an "all agree?" flag). For files of items, resumable, see ``cross-judge review``.

    python examples/batch_review.py
"""

from __future__ import annotations

import random

import anyio

from cross_judge import Critic, Ensemble
from cross_judge.testing import Persona, VendorServer

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]


def make_items(n: int, seed: int = 7) -> dict[str, str]:
    rng = random.Random(seed)
    return {f"candidate category #{i}": rng.choice(LABELS) for i in range(n)}


async def main(n_items: int = 200, in_flight: int = 32) -> None:
    gold = make_items(n_items)
    personas = [
        Persona("sim-a", accuracy=0.9, latency=0.05, seed=1),
        Persona("sim-b", accuracy=0.8, latency=0.05, seed=2, bias={"KEEP": 3.0}),
        Persona("sim-c", accuracy=0.85, latency=0.05, seed=3),
    ]
    async with VendorServer(personas, gold=gold) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                vendor="custom",
                base_url=server.url,
                prompt="taxonomy-review@1",
            )
            for p in personas
        ]
        items = [{"id": f"c{i}", "query": text} for i, text in enumerate(gold)]
        async with Ensemble(critics) as panel:
            batch = await panel.judge_many(items, concurrency=in_flight)

    correct = sum(
        r.consensus == gold[item["query"]] for r, item in zip(batch.verdicts, items, strict=True)
    )
    alpha = batch.reliability_alpha()
    print(f"{len(batch)} items x {len(critics)} critics, {in_flight} items in flight")
    print(f"consensus matched gold on {correct}/{len(batch)} items")
    print(f"batch Krippendorff's alpha (nominal): {alpha:.3f}" if alpha is not None else "n/a")
    print(f"errors: {len(batch.failed_items)}")
    print(batch)


if __name__ == "__main__":
    anyio.run(main)
