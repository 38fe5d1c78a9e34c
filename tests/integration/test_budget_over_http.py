"""Budget caps and costs over real HTTP: the acceptance test of the budget, and the
verdict costs it relies on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cross_judge import ConfigError, Critic, Ensemble, ErrorKind, pricing
from cross_judge.pricing import price_for, register_price
from cross_judge.testing import Persona, Reply, VendorServer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MODEL = "priced-judge"
# Output-heavy prices, as real models have; the worst case then sits close to the real cost
# when max_tokens is close to the answer's length.
INPUT_PER_M, OUTPUT_PER_M = 0.5, 20.0
MAX_TOKENS = 24  # the simulated answers are about 20 tokens


@pytest.fixture(scope="module")
def priced_server() -> Iterator[VendorServer]:
    with VendorServer([Persona(MODEL, latency=0.01), Persona("unpriced")], count_items=True) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _prices() -> Iterator[None]:
    register_price(MODEL, vendor="custom", input=INPUT_PER_M, output=OUTPUT_PER_M)
    yield
    pricing._clear_registered()


def critic(server: VendorServer, model: str = MODEL, **kwargs: object) -> Critic:
    return Critic(
        name=model,
        model=model,
        vendor="custom",
        base_url=server.url,
        max_tokens=MAX_TOKENS,
        prompt="taxonomy-review@1",
        **kwargs,  # type: ignore[arg-type]
    )


def item(i: int) -> str:
    return f"Candidate category number {i:04d}"  # same length for every item


async def test_a_verdict_costs_its_usage_at_the_models_price(priced_server: VendorServer) -> None:
    async with critic(priced_server) as c:
        verdict = await c.judge(item(0))
    assert verdict.usage is not None and verdict.cost_usd is not None
    expected = (
        verdict.usage.prompt_tokens * INPUT_PER_M + verdict.usage.completion_tokens * OUTPUT_PER_M
    ) / 1e6
    assert verdict.cost_usd == pytest.approx(expected)


async def test_an_unpriced_model_costs_none_not_zero(priced_server: VendorServer) -> None:
    async with critic(priced_server, model="unpriced") as c:
        verdict = await c.judge(item(0))
    assert verdict.is_valid and verdict.cost_usd is None


async def test_a_failed_call_of_a_priced_model_costs_zero(priced_server: VendorServer) -> None:
    priced_server.script(MODEL, Reply.status(400))
    async with critic(priced_server) as c:
        verdict = await c.judge(item(0))
    assert verdict.error_kind is ErrorKind.BAD_REQUEST and verdict.cost_usd == 0.0


@pytest.mark.parametrize("concurrency", [1, 8])
async def test_a_budget_of_ten_calls_makes_at_most_eleven_and_skips_the_rest(
    priced_server: VendorServer, concurrency: int
) -> None:
    async with Ensemble([critic(priced_server)]) as panel:
        one_call = await panel.judge(item(0))
        assert one_call.cost_usd is not None
        priced_server.reset_stats()
        batch = await panel.judge_many(
            [item(i) for i in range(1, 41)],
            concurrency=concurrency,
            budget_usd=10 * one_call.cost_usd,
        )
    calls = priced_server.stats()["requests"]
    verdicts = [r.verdicts[0] for r in batch.verdicts]
    made = [v for v in verdicts if v.attempts > 0]
    skipped = [v for v in verdicts if v.kind == "SKIPPED"]
    assert calls <= 11
    assert len(made) == calls >= 8  # the budget is used, not refused wholesale
    assert len(made) + len(skipped) == 40
    assert all(v.error_kind is ErrorKind.BUDGET and v.attempts == 0 for v in skipped)
    assert "budget: this call could cost up to $" in (skipped[0].error or "")
    assert batch.cost_usd is not None and batch.cost_usd <= 10 * one_call.cost_usd
    assert len(batch.failed_items) == len(skipped)  # budget skips are worth judging again


async def test_a_budget_needs_a_price_for_every_critic_before_any_call(
    priced_server: VendorServer,
) -> None:
    priced_server.reset_stats()
    panel = Ensemble([critic(priced_server), critic(priced_server, model="unpriced")])
    with pytest.raises(ConfigError, match=r"'unpriced'.*register_price"):
        await panel.judge(item(0), budget_usd=1.0)
    with pytest.raises(ConfigError, match="register_price"):
        await panel.judge_many([item(1)], budget_usd=1.0)
    assert priced_server.stats()["requests"] == 0


async def test_a_shared_budget_spans_several_judgements(priced_server: VendorServer) -> None:
    from cross_judge.budget import Budget

    price = price_for("custom", MODEL)
    assert price is not None
    budget = Budget(1.0)
    async with Ensemble([critic(priced_server)]) as panel:
        first = await panel.judge(item(1), budget_usd=budget)
        second = await panel.judge(item(2), budget_usd=budget)
    assert first.cost_usd is not None and second.cost_usd is not None
    assert budget.spent_usd == pytest.approx(first.cost_usd + second.cost_usd)
    assert budget.reserved_usd == pytest.approx(0.0, abs=1e-12)
