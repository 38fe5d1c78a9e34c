"""Vendor limits over real HTTP: a shared concurrency cap, and adaptation to DeepSeek-style 429s."""

from __future__ import annotations

import anyio
import pytest
from tenacity import wait_random_exponential

import cross_judge.critic._calls
from cross_judge import Critic, Verdict
from cross_judge.testing import Persona, VendorServer
from cross_judge.vendors import register_vendor

from .conftest import KEY

pytestmark = pytest.mark.anyio


async def judge_all(critics: list[Critic], items: int) -> list[Verdict]:
    verdicts: list[Verdict] = []

    async def one(critic: Critic, i: int) -> None:
        verdicts.append(await critic.judge(f"item {i}"))

    async with anyio.create_task_group() as tg:
        for i in range(items):
            tg.start_soon(one, critics[i % len(critics)], i)
    return verdicts


async def test_two_critics_share_the_vendor_concurrency_cap(
    server: VendorServer, model: str, vendor_registry: None
) -> None:
    register_vendor("capped", server.url, "CAPPED_TEST_KEY", max_concurrency=3)
    server.add_persona(Persona(f"{model}-a", latency=0.02))
    server.add_persona(Persona(f"{model}-b", latency=0.02))
    critics = [
        Critic(name=f"c-{x}", model=f"{model}-{x}", vendor="capped", api_key=KEY, json_mode=False)
        for x in "ab"
    ]
    server.reset_stats()

    verdicts = await judge_all(critics, 24)
    await critics[0].aclose()

    assert all(v.is_valid for v in verdicts), [v.error for v in verdicts if not v.is_valid]
    stats = server.stats()
    assert stats["requests"] == 24
    assert stats["max_in_flight"] <= 3


async def test_adaptive_limit_keeps_deepseek_style_429s_down(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same load twice against a vendor that refuses (429, no headers) any request
    # beyond 4 being answered: first with the vendor gate switched off, so only the retry
    # policy acts, then with it. Retry backoff and pause are scaled down for both runs so
    # the test stays short; only counts are compared, never durations.
    monkeypatch.setattr(
        "cross_judge.transport._retry._backoff", wait_random_exponential(multiplier=0.005, max=0.02)
    )
    monkeypatch.setattr("cross_judge.limits._gate.PAUSE_BASE_S", 0.05)

    async def run(*, adaptive: bool) -> tuple[list[Verdict], int]:
        with VendorServer([Persona(model, latency=0.2)], capacity=4) as srv:
            critic = Critic(
                name="ds",
                model=model,
                vendor="custom",
                base_url=srv.url,
                max_retries=1000,
                json_mode=False,
            )
            with monkeypatch.context() as patch:
                if not adaptive:
                    patch.setattr(
                        cross_judge.critic._calls, "VendorGate", lambda config, model=None: None
                    )
                verdicts = await judge_all([critic], 16)
            await critic.aclose()
            return verdicts, srv.stats()["rate_limited"]

    plain, plain_429s = await run(adaptive=False)
    adapted, adapted_429s = await run(adaptive=True)

    for verdicts in (plain, adapted):
        assert len(verdicts) == 16
        assert all(v.is_valid for v in verdicts), [v.error for v in verdicts if not v.is_valid]
    # The first wave (12 refused before any answer came back) is the same for both.
    assert adapted_429s * 2 < plain_429s, (adapted_429s, plain_429s)
