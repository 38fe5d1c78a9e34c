"""A jury judged once on the simulated vendor, with a known truth, for the estimates' tests
and ``bench/bench_estimates.py``: 3 critics of accuracy 0.75 whose errors correlate
(``error_correlation`` 0.3), two labels, the true share of ``FAIL`` 0.15, so the jury, which
errs both ways as often, reports too many ``FAIL``s."""

from __future__ import annotations

import asyncio
import hashlib
import random
from dataclasses import dataclass

from cross_judge import BatchResult, Critic, Ensemble, Verdict
from cross_judge.testing import Persona, VendorServer
from cross_judge.testing._decisions import decide, distractor_key, seeded_difficulty

LABELS = ("PASS", "FAIL")
TARGET = "FAIL"
PROMPT = (
    "Does this answer fail the task?\n<item>{query}</item>\n"
    "Answer in JSON with kind (PASS/FAIL), confidence (0-1), reasoning."
)


@dataclass(frozen=True)
class Judged:
    """A judged batch and the truth of every item (by query id)."""

    batch: BatchResult
    truth: dict[str, str]

    @property
    def true_share(self) -> float:
        return sum(label == TARGET for label in self.truth.values()) / len(self.truth)

    def true_accuracy(self, critic: str) -> float:
        """``critic``'s share of valid votes equal to the truth."""
        answers = [
            v.kind == self.truth[r.query_id]
            for r in self.batch.verdicts
            for v in r.verdicts
            if v.critic_id == critic and v.error is None
        ]
        return sum(answers) / len(answers)


async def _judge(url: str, items: list[dict[str, str]], critics: int) -> BatchResult:
    panel = [
        Critic(
            name=f"c{i}",
            model=f"sim-{i}",
            vendor="custom",
            base_url=url,
            api_key="unused",
            prompt_template=PROMPT,
            labels=LABELS,
            json_mode=False,
            max_retries=0,
        )
        for i in range(critics)
    ]
    async with Ensemble(panel, voting="majority") as ensemble:
        return await ensemble.judge_many(items, concurrency=64)


def _setup(
    n_items: int, share: float, accuracy: float, critics: int, seed: int
) -> tuple[list[dict[str, str]], dict[str, str], list[Persona]]:
    rng = random.Random(f"truth {seed}")  # not a plain int: queues are seeded with those
    texts = [f"answer {i:05d} to the task" for i in range(n_items)]
    failing = set(rng.sample(range(n_items), round(share * n_items)))
    truth_by_text = {t: ("FAIL" if i in failing else "PASS") for i, t in enumerate(texts)}
    personas = [
        Persona(f"sim-{i}", accuracy=accuracy, labels=LABELS, seed=seed + i) for i in range(critics)
    ]
    items = [{"id": f"item-{i:05d}", "query": t} for i, t in enumerate(texts)]
    return items, truth_by_text, personas


def offline(
    n_items: int = 2000,
    *,
    share: float = 0.15,
    accuracy: float = 0.75,
    critics: int = 3,
    error_correlation: float = 0.3,
    seed: int = 29,
) -> Judged:
    """What :func:`judged` gets from the simulator, without a server: the same personas'
    decisions (:func:`cross_judge.testing._decisions.decide`, as the server draws them),
    voted by majority. Fast enough for unit tests; a test checks it matches the server."""
    items, truth_by_text, personas = _setup(n_items, share, accuracy, critics, seed)
    panel = Ensemble(critics=[], voting="majority")
    results = []
    for item in items:
        text = item["query"]
        digest = hashlib.sha256(text.encode()).hexdigest()
        votes = []
        for i, persona in enumerate(personas):
            decision = decide(
                persona,
                persona.model,
                truth_by_text[text],
                digest,
                difficulty=seeded_difficulty(text, seed),
                error_correlation=error_correlation,
                distractor_key=distractor_key(text, seed),
            )
            votes.append(
                Verdict(kind=decision.kind, confidence=decision.confidence, critic_id=f"c{i}")
            )
        results.append(panel.aggregate_verdicts(votes, query_id=item["id"]))
    batch = BatchResult(
        verdicts=results, critics=[f"c{i}" for i in range(critics)], voting="majority"
    )
    return Judged(batch, {item["id"]: truth_by_text[item["query"]] for item in items})


def judged(
    n_items: int = 2000,
    *,
    share: float = 0.15,
    accuracy: float = 0.75,
    critics: int = 3,
    error_correlation: float = 0.3,
    seed: int = 29,
) -> Judged:
    """Judge ``n_items`` items once on the simulator (a real server on 127.0.0.1): exactly
    ``round(share * n_items)`` of them are truly ``FAIL``."""
    items, truth_by_text, personas = _setup(n_items, share, accuracy, critics, seed)
    with VendorServer(
        personas, gold=truth_by_text, error_correlation=error_correlation, difficulty_seed=seed
    ) as server:
        batch = asyncio.run(_judge(server.url, items, critics))
    truth = {item["id"]: truth_by_text[item["query"]] for item in items}
    return Judged(batch, truth)
