"""Batch review: many items, bounded concurrency, batch-level agreement, offline.

Each ``Ensemble.judge`` fans out to its critics; a capacity limiter bounds how many items
are in flight. At the end, Krippendorff's alpha over the whole batch says how far the
panel can be trusted (the per-item ``krippendorff_alpha`` is only an "all agree?" flag).

    python examples/batch_review.py
"""

from __future__ import annotations

import random

import anyio

from cross_judge import Critic, Ensemble, EnsembleVerdict, reliability_alpha
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
    results: list[EnsembleVerdict] = []
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
        limiter = anyio.CapacityLimiter(in_flight)

        async def review(item: str) -> None:
            async with limiter:
                results.append(await panel.judge(item))

        async with Ensemble(critics) as panel, anyio.create_task_group() as tg:
            for item in gold:
                tg.start_soon(review, item)

    by_id = {r.query_id: r for r in results}
    ordered = [by_id[item] for item in gold]
    matrix = [
        [v.kind if v.is_valid else None for v in (r.verdicts[i] for r in ordered)]
        for i in range(len(critics))
    ]
    correct = sum(r.consensus == gold[r.query_id] for r in ordered)
    alpha = reliability_alpha(matrix)
    print(f"{len(ordered)} items x {len(critics)} critics, {in_flight} items in flight")
    print(f"consensus matched gold on {correct}/{len(ordered)} items")
    print(f"batch Krippendorff's alpha (nominal): {alpha:.3f}" if alpha is not None else "n/a")
    print(f"errors: {sum(r.n_errors for r in ordered)}")


if __name__ == "__main__":
    anyio.run(main)
