"""``from_votes`` on the votes of a batch judged live (three simulated critics with
correlated errors, 200 items, over a real socket on 127.0.0.1) gives the same consensus
on every item."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from cross_judge import Critic, Ensemble
from cross_judge.batch import BatchResult
from cross_judge.testing import Persona, VendorServer

KEY = "sk-from-votes-live-0c1d"
MODELS = ("fv-a", "fv-b", "fv-c")
ITEMS = [f"taxonomy node {i}: is it well placed?" for i in range(200)]


@pytest.fixture(scope="module")
def live_batch() -> Iterator[BatchResult]:
    personas = [
        Persona(m, accuracy=0.7, labels=("KEEP", "REJECT", "SPLIT"), seed=i)
        for i, m in enumerate(MODELS)
    ]
    with VendorServer(personas, api_key=KEY, error_correlation=0.4) as server:
        critics = [
            Critic(name=m, model=m, vendor="custom", base_url=server.url, api_key=KEY)
            for m in MODELS
        ]

        async def judge() -> BatchResult:
            async with Ensemble(critics, voting="majority") as jury:
                return await jury.judge_many(ITEMS, concurrency=16)

        yield anyio.run(judge)


def rows_of(batch: BatchResult) -> list[dict[str, Any]]:
    return [
        {"item": r.query_id, "critic": v.critic_id, "label": v.kind, "p": v.confidence}
        for r in batch.verdicts
        for v in r.verdicts
        if v.error is None
    ]


def test_the_live_batch_has_split_votes_and_ties(live_batch: BatchResult) -> None:
    # The check below means something only if the majority had work to do.
    split = [r for r in live_batch.verdicts if r.disagreement]
    three_way = [r for r in split if len({v.kind for v in r.verdicts}) == 3]
    assert len(live_batch) == 200 and len(split) >= 20 and three_way


def test_from_votes_of_a_live_batch_gives_the_same_consensus_on_every_item(
    live_batch: BatchResult,
) -> None:
    rebuilt = BatchResult.from_votes(rows_of(live_batch), confidence="p", people=False)
    assert [r.query_id for r in rebuilt.verdicts] == [r.query_id for r in live_batch.verdicts]
    assert [r.consensus for r in rebuilt.verdicts] == [r.consensus for r in live_batch.verdicts]
    assert rebuilt.critics == live_batch.critics


def test_from_votes_of_a_live_batch_gives_the_same_dawid_skene_consensus(
    live_batch: BatchResult,
) -> None:
    rebuilt = BatchResult.from_votes(rows_of(live_batch), people=False, voting="dawid_skene")
    expected = live_batch.revote("dawid_skene")
    assert [r.consensus for r in rebuilt.verdicts] == [r.consensus for r in expected.verdicts]


def test_from_votes_of_a_live_batch_gives_the_same_alpha(live_batch: BatchResult) -> None:
    rebuilt = BatchResult.from_votes(rows_of(live_batch), people=False)
    assert rebuilt.reliability_alpha() == live_batch.reliability_alpha()
