"""Batch mode under a tight budget: calls waiting for the reservations of parked requests
count as waiting, so the round holding those requests is submitted, and when it comes back
the waiting calls take the freed room and form the next round. The budget is spent over
several rounds, never overspent, and never deadlocks. Batches end after a counted number of
polls, so no outcome depends on the machine's speed."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from cross_judge import BatchOptions, Critic, Ensemble, ErrorKind, pricing, register_price
from cross_judge.budget import Budget
from cross_judge.pricing import price_for, worst_case_cost
from cross_judge.testing import Persona, VendorServer

from ..waits import SAFETY_NET_S

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MODEL = "bb-judge"
ITEMS = 24
WAIT_S = SAFETY_NET_S  # an upper bound: the run takes a second


@pytest.fixture
def server() -> Iterator[VendorServer]:
    with VendorServer([Persona(MODEL)], batch_polls=1) as running:
        yield running


@pytest.fixture(autouse=True)
def _price() -> Iterator[None]:
    register_price(MODEL, vendor="custom", input=2.0, output=8.0, batch=0.5)
    yield
    pricing._clear_registered()


def item(i: int) -> str:
    return f"Candidate category number {i:04d}"  # the same length, so the same worst case


async def test_a_tight_budget_in_batch_mode_is_spent_over_several_rounds(
    server: VendorServer,
) -> None:
    judge = Critic(
        name=MODEL,
        model=MODEL,
        vendor="custom",
        base_url=server.url,
        prompt="taxonomy-review@1",
        max_tokens=64,
    )
    price = price_for("custom", MODEL)
    assert price is not None
    worst = worst_case_cost(price, judge.build_request(item(0)), batch=True)
    budget = Budget(5 * worst)  # five requests' worst case at a time
    with anyio.fail_after(WAIT_S):
        async with Ensemble([judge]) as panel:
            batch = await panel.judge_many(
                [item(i) for i in range(ITEMS)],
                budget_usd=budget,
                mode="batch",
                batch=BatchOptions(vendors={"custom"}, poll_s=0.01, max_poll_s=0.05),
            )
    stats = server.stats()
    made = sum(stats["batch_requests"].values())
    skipped = [r for r in batch.verdicts if r.verdicts[0].error_kind is ErrorKind.BUDGET]
    assert sum(stats["batches"].values()) >= 2 and stats["requests"] == 0  # rounds, no live
    assert made > 5 and made + len(skipped) == ITEMS  # before: one round of 5, 19 skipped
    assert budget.spent_usd <= budget.limit_usd and budget.in_flight == 0
    assert budget.limit_usd - budget.spent_usd < worst or not skipped
