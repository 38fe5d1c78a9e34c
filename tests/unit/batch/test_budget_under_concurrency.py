"""A tight budget at a high concurrency is spent, not skipped: calls whose worst case does
not fit beside the reservations in flight wait for those calls to settle, and only the calls
the money left truly cannot pay for are skipped. The vendor is an ``httpx.MockTransport``
that holds every request until the test releases it, once nothing else can move: the
interleaving is decided by events, not by timing."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import httpx
import pytest

from cross_judge import Critic, Ensemble, ErrorKind, pricing
from cross_judge.batch import BatchResult
from cross_judge.budget import Budget
from cross_judge.pricing import price_for, register_price, worst_case_cost

pytestmark = pytest.mark.anyio

MODEL = "held-judge"
ITEMS = 300
CONCURRENCY = 16
PROMPT_TOKENS, COMPLETION_TOKENS = 100, 20  # what the vendor reports for every call
WAIT_S = 120.0  # an upper bound for the whole run, which takes seconds


@pytest.fixture(autouse=True)
def _price() -> Iterator[None]:
    register_price(MODEL, vendor="custom", input=1.0, output=10.0)
    yield
    pricing._clear_registered()


class HeldVendor:
    """Answers every request, but only when :meth:`release` is called."""

    def __init__(self) -> None:
        self.requests = 0
        self.held = 0
        self._gate = anyio.Event()

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        self.held += 1
        await self._gate.wait()
        self.held -= 1
        body = {
            "id": "x",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": '{"kind": "KEEP"}'},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS},
        }
        return httpx.Response(200, content=json.dumps(body).encode())

    def release(self) -> None:
        self._gate.set()
        self._gate = anyio.Event()


def item(i: int) -> str:
    return f"Candidate category number {i:04d}"  # the same length, so the same worst case


def critic(client: httpx.AsyncClient | None = None) -> Critic:
    return Critic(
        name="c",
        model=MODEL,
        vendor="custom",
        base_url="http://vendor.test/v1",
        api_key="k",
        http_client=client,
        max_tokens=200,
        max_retries=0,
    )


def worst_case() -> float:
    """What each call reserves: its worst case."""
    price = price_for("custom", MODEL)
    assert price is not None
    return worst_case_cost(price, critic().build_request(item(0)))


async def judge_with_held_vendor(budget: Budget) -> tuple[BatchResult, HeldVendor]:
    """Judge ITEMS items at CONCURRENCY; whenever every task is blocked, answer the
    requests held so far."""
    vendor = HeldVendor()
    result: list[BatchResult] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(vendor)) as client:
        panel = Ensemble([critic(client)])

        async def run() -> None:
            result.append(
                await panel.judge_many(
                    [item(i) for i in range(ITEMS)], concurrency=CONCURRENCY, budget_usd=budget
                )
            )

        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as group:
                group.start_soon(run)
                while not result:
                    await anyio.wait_all_tasks_blocked()
                    vendor.release()
    return result[0], vendor


async def test_a_tight_budget_at_concurrency_16_is_spent_before_items_are_skipped() -> None:
    worst = worst_case()
    actual = (PROMPT_TOKENS * 1.0 + COMPLETION_TOKENS * 10.0) / 1e6
    limit = 5 * worst  # five worst cases: about 30 calls' real cost
    assert worst > 6 * actual  # worst-case reservations hold far more than calls spend

    batch, vendor = await judge_with_held_vendor(Budget(limit))

    verdicts = [r.verdicts[0] for r in batch.verdicts]
    made = [v for v in verdicts if v.attempts > 0]
    skipped = [v for v in verdicts if v.kind == "SKIPPED"]
    assert len(made) == vendor.requests and len(made) + len(skipped) == ITEMS
    assert all(v.error_kind is ErrorKind.BUDGET for v in skipped)
    spent = batch.cost_usd
    assert spent is not None and spent <= limit  # the reservations still bound the spending
    # Items were skipped only once what was left could not pay for one more worst case:
    # the budget is spent, not left idle in reservations (before: 5 calls, 90% unspent).
    assert limit - spent < worst
    assert len(made) >= int((limit - worst) / actual)


async def test_with_a_budget_that_fits_everything_nothing_is_skipped() -> None:
    budget = Budget(ITEMS * worst_case())
    batch, vendor = await judge_with_held_vendor(budget)
    assert vendor.requests == ITEMS and budget.skipped == 0
    assert budget.in_flight == 0 and budget.reserved_usd == 0.0
    assert all(r.verdicts[0].is_valid for r in batch.verdicts)
