"""Which of two answers is better, without position bias: offline, on simulated critics.

Three simulated critics of accuracy 0.7 judge 300 pairs with the packaged ``pairwise``
prompt. When unsure they pick the answer shown first with probability 0.0, 0.3 and 0.6
(``Persona(position_bias=...)``). The pairs are judged twice, in a fixed order (``a``
always first) and in both orders (a flip is a tie). For each run the example prints the
position-bias table of the batch summary and how many of each critic's decisive verdicts
are wrong.

    python examples/pairwise.py
"""

from __future__ import annotations

import random

import anyio

from cross_judge import BatchResult, Critic, Ensemble
from cross_judge.report.summary import plain_text
from cross_judge.testing import Persona, VendorServer

BIASES = (0.0, 0.3, 0.6)


def pairs(n: int) -> tuple[list[dict[str, str]], dict[str, str], dict[str, str]]:
    """Items, the better answer per task, and the right label per item id."""
    rng = random.Random(16)
    items, better, truth = [], {}, {}
    for i in range(n):
        task = f"Task {i}: explain why the sky is blue."
        good = f"Sunlight scatters off air; blue scatters most (Rayleigh). Take {i}."
        poor = f"Because the sea reflects onto it. Take {i}."
        if rng.random() < 0.5:  # the worse answer is the longer one in half the pairs
            poor += " The ocean is large and blue, and the sky mirrors it all day long."
        a_first = rng.random() < 0.5
        items.append({"id": f"p{i}", "query": task, "a": good if a_first else poor,
                      "b": poor if a_first else good})  # fmt: skip
        better[task] = good
        truth[f"p{i}"] = "A" if a_first else "B"
    return items, better, truth


def wrong_share(batch: BatchResult, truth: dict[str, str]) -> dict[str, float]:
    """Per critic, the share of its decisive verdicts (A or B) that name the worse answer."""
    shares = {}
    for name in batch.critics:
        decisive = [
            (v.kind, truth[r.query_id])
            for r in batch.verdicts
            for v in r.verdicts
            if v.critic_id == name and v.error is None and v.kind in ("A", "B")
        ]
        shares[name] = sum(k != t for k, t in decisive) / len(decisive)
    return shares


async def main(n_pairs: int = 300) -> None:
    items, better, truth = pairs(n_pairs)
    personas = [
        Persona(f"sim-bias-{b}", accuracy=0.7, position_bias=b, seed=i)
        for i, b in enumerate(BIASES)
    ]
    async with VendorServer(personas, better=better) as server:
        critics = [
            Critic(
                name=p.model, model=p.model, prompt="pairwise", vendor="custom", base_url=server.url
            )
            for p in personas
        ]
        for order in ("fixed", "both"):
            async with Ensemble(critics, order=order) as panel:
                batch = await panel.judge_many(items, concurrency=16)
            summary = plain_text(batch.summary())
            tables = summary[summary.index("position bias") : summary.index("effective votes")]
            calls = sum(v.attempts for r in batch.verdicts for v in r.verdicts)
            print(f"order={order!r}: {calls} calls")
            print(tables.rstrip())
            shares = wrong_share(batch, truth)
            print(
                "wrong decisive verdicts: "
                + ", ".join(f"{name} {share:.3f}" for name, share in shares.items())
            )
            print()


if __name__ == "__main__":
    anyio.run(main)
