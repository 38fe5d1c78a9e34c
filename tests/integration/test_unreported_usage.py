"""A vendor that reports no usage, or zero or negative usage, cannot lift a budget: such a
call is priced at its worst case (what the budget reserved for it), counted as an estimate
in its verdict and in the batch's critic stats, over real HTTP against the simulated
vendor."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Critic, Ensemble, ErrorKind, pricing
from cross_judge.batch import BatchResult
from cross_judge.budget import Budget
from cross_judge.pricing import price_for, register_price, worst_case_cost
from cross_judge.testing import Persona, Reply, VendorServer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MODEL = "gateway-judge"
MAX_TOKENS = 24
ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'


@pytest.fixture
def server() -> Iterator[VendorServer]:
    with VendorServer([Persona(MODEL), Persona("unpriced")]) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _prices() -> Iterator[None]:
    register_price(MODEL, vendor="custom", input=0.5, output=20.0)
    yield
    pricing._clear_registered()


def critic(server: VendorServer, model: str = MODEL) -> Critic:
    return Critic(
        name=model,
        model=model,
        vendor="custom",
        base_url=server.url,
        max_tokens=MAX_TOKENS,
        prompt="taxonomy-review@1",
        max_retries=0,
    )


def item(i: int) -> str:
    return f"Candidate category number {i:04d}"  # the same length, so the same worst case


def answer(usage: dict[str, Any] | None) -> Reply:
    """A chat completion holding a valid verdict, with ``usage`` (left out when ``None``)."""
    body: dict[str, Any] = {
        "id": "x",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return Reply.raw(json.dumps(body).encode())


def worst_case(server: VendorServer) -> float:
    price = price_for("custom", MODEL)
    assert price is not None
    return worst_case_cost(price, critic(server).build_request(item(0)))


UNREPORTED = {
    "no usage": None,
    "zero usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    "negative usage": {"prompt_tokens": -500, "completion_tokens": -20},
    "no completion tokens for an answer": {"prompt_tokens": 300, "completion_tokens": 0},
    "null counts": {"prompt_tokens": None, "completion_tokens": None},
}


@pytest.mark.parametrize("usage", UNREPORTED.values(), ids=UNREPORTED.keys())
async def test_an_answer_without_usable_usage_is_priced_at_its_worst_case(
    server: VendorServer, usage: dict[str, Any] | None
) -> None:
    server.always(MODEL, answer(usage))
    async with critic(server) as c:
        verdict = await c.judge(item(0))
    assert verdict.is_valid and verdict.kind == "KEEP"
    assert verdict.cost_usd == pytest.approx(worst_case(server)) and verdict.cost_estimates == 1


async def test_an_answer_with_usage_is_priced_from_it_not_estimated(server: VendorServer) -> None:
    server.always(MODEL, answer({"prompt_tokens": 300, "completion_tokens": 20}))
    async with critic(server) as c:
        verdict = await c.judge(item(0))
    assert verdict.cost_usd == pytest.approx((300 * 0.5 + 20 * 20.0) / 1e6)
    assert verdict.cost_estimates == 0


async def test_an_unpriced_model_without_usage_still_costs_none(server: VendorServer) -> None:
    server.always("unpriced", answer(None))
    async with critic(server, "unpriced") as c:
        verdict = await c.judge(item(0))
    assert verdict.is_valid and verdict.cost_usd is None and verdict.cost_estimates == 0


async def test_a_failed_call_is_not_charged_an_estimate(server: VendorServer) -> None:
    server.always(MODEL, Reply.status(400))
    async with critic(server) as c:
        verdict = await c.judge(item(0))
    assert verdict.error_kind is ErrorKind.BAD_REQUEST
    assert verdict.cost_usd == 0.0 and verdict.cost_estimates == 0


@pytest.mark.parametrize("usage", [None, {"prompt_tokens": 0, "completion_tokens": 0}])
async def test_a_vendor_reporting_no_usage_cannot_lift_a_budget(
    server: VendorServer, usage: dict[str, Any] | None
) -> None:
    server.always(MODEL, answer(usage))
    worst = worst_case(server)
    budget = Budget(10.5 * worst)
    async with Ensemble([critic(server)]) as panel:
        batch = await panel.judge_many(
            [item(i) for i in range(40)], concurrency=4, budget_usd=budget
        )
    verdicts = [r.verdicts[0] for r in batch.verdicts]
    made = [v for v in verdicts if v.attempts > 0]
    assert len(made) == 10 == server.stats()["requests"]  # before: all 40, and "$0 spent"
    assert budget.spent_usd == pytest.approx(10 * worst) and budget.spent_usd <= budget.limit_usd
    assert batch.cost_usd == pytest.approx(10 * worst)
    stats = batch.critic_stats()[MODEL]
    assert stats.cost_estimates == 10 and stats.skipped == 30


async def test_the_summary_says_how_many_calls_were_priced_by_estimate(
    server: VendorServer,
) -> None:
    server.script(MODEL, answer(None), answer({"prompt_tokens": 0, "completion_tokens": 0}))
    async with Ensemble([critic(server)]) as panel:
        batch = await panel.judge_many([item(i) for i in range(5)], concurrency=1)
    assert batch.critic_stats()[MODEL].cost_estimates == 2
    assert re.search(r"calls priced at worst case \(usage not reported\) +2 *\n", str(batch))


async def test_estimated_costs_survive_the_results_file(
    server: VendorServer, tmp_path: Path
) -> None:
    server.script(MODEL, answer(None))
    async with Ensemble([critic(server)]) as panel:
        batch = await panel.judge_many([item(i) for i in range(3)], concurrency=1)
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    again = BatchResult.from_jsonl(path)
    assert again.critic_stats()[MODEL].cost_estimates == 1
    lines = path.read_text().splitlines()
    assert sum('"cost_estimates":1' in line for line in lines) == 1  # left out when 0
