"""Which of two answers is better, without position bias: offline, on simulated critics.

Three simulated critics judge 300 pairs with the packaged ``pairwise`` prompt. When unsure
they pick the answer shown first with probability 0.0, 0.3 and 0.6
(``Persona(position_bias=...)``), and each is right on 70% of the pairs. A guess of the
answer shown first is right whenever that is the better one, so for the same share of right
answers a more biased critic is unsure more often: each persona's ``accuracy`` (how often it
is sure) is set so that ``pairwise_rates`` gives 0.7. Equally accurate, the critics differ in
their mistakes: half the unbiased critic's are ties, while the biased critic's are mostly
wrong winners, on the pairs whose better answer is shown second.

The pairs are judged twice, in a fixed order (``a`` always first) and in both orders (a
flip is a tie). For each run the example prints the position-bias table of the batch
summary and, per critic, the share of its decisive verdicts (``A`` or ``B``) that name the
worse answer: over all pairs, and over the pairs whose better answer is ``b`` (the one
shown second in the fixed order).

    python examples/pairwise.py
"""

from __future__ import annotations

import random

import anyio

from cross_judge import BatchResult, Critic, Ensemble
from cross_judge.results import plain_text
from cross_judge.testing import Persona, VendorServer, pairwise_rates

BIASES = (0.0, 0.3, 0.6)
ACCURACY = 0.7


def persona(bias: float, seed: int) -> Persona:
    """A critic with position bias ``bias`` that is right on ``ACCURACY`` of the pairs.

    Unsure (probability ``1 - accuracy``), it answers ``A`` with probability ``bias``, which
    is right on the half of the pairs whose better answer is shown first; so its share of
    right answers is ``accuracy + (1 - accuracy) * bias / 2``, solved here for
    ``accuracy``.
    """
    unsure = 2 * (1 - ACCURACY) / (2 - bias)
    made = Persona(f"sim-bias-{bias}", accuracy=1 - unsure, position_bias=bias, seed=seed)
    assert abs(pairwise_rates(made).accuracy - ACCURACY) < 1e-9
    return made


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


def wrong_share(batch: BatchResult, truth: dict[str, str], *, where: str | None = None) -> str:
    """Per critic, the share of its decisive verdicts (A or B) that name the worse answer,
    over the pairs whose right label is ``where`` (all pairs when ``None``)."""
    shares = []
    for name in batch.critics:
        decisive = [
            (v.kind, truth[r.query_id])
            for r in batch.verdicts
            if where is None or truth[r.query_id] == where
            for v in r.verdicts
            if v.critic_id == name and v.error is None and v.kind in ("A", "B")
        ]
        shares.append(f"{name} {sum(k != t for k, t in decisive) / len(decisive):.3f}")
    return ", ".join(shares)


async def main(n_pairs: int = 300) -> None:
    items, better, truth = pairs(n_pairs)
    personas = [persona(b, seed=i) for i, b in enumerate(BIASES)]
    print(
        f"sure of a pair (all right on {ACCURACY:.0%}): "
        + ", ".join(f"{p.model} {p.accuracy:.3f}" for p in personas)
    )
    print()
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
            print(f"wrong decisive verdicts: {wrong_share(batch, truth)}")
            print(f"  where b is better: {wrong_share(batch, truth, where='B')}")
            print()


if __name__ == "__main__":
    anyio.run(main)
