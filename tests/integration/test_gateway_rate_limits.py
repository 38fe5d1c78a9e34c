"""Rate-limit scope over real HTTP: behind a gateway a 429 on one model leaves the other
models of the base URL alone; a vendor that limits per account (DeepSeek) pauses them all.

Every outcome is a verdict or a server counter, never a duration: a broken scope shows up
as the healthy critic failing at once with "waiting for the rate limit" (its deadline is
shorter than the pause), not as a slow test.
"""

from __future__ import annotations

import anyio
import pytest

from cross_judge import Critic, ErrorKind, Verdict
from cross_judge.limits._gate import limiter_for
from cross_judge.testing import Reply, VendorServer
from cross_judge.vendors import register_vendor

from ..waits import SAFETY_NET_S
from .conftest import KEY

pytestmark = pytest.mark.anyio

ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'
HOUR = 3600.0
STORM = 6  # concurrent calls to the rate-limited model
# Far above anything a healthy call needs, far below the pause: a healthy critic held by
# the pause fails at once ("would have" run out), never after waiting it out.
DEADLINE_S = SAFETY_NET_S / 10
WAIT_S = SAFETY_NET_S


@pytest.fixture(autouse=True)
def hour_long_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vendor's ``Retry-After: 3600`` pauses it for the hour: the limiter's 60 s cap would
    put the pause within ``DEADLINE_S``, and a held call would wait it out."""
    monkeypatch.setattr("cross_judge.limits._gate.MAX_RETRY_AFTER_S", HOUR)


def critic(name: str, model: str, vendor: str, base_url: str, **kwargs: object) -> Critic:
    kwargs.setdefault("deadline", DEADLINE_S)
    return Critic(
        name=name,
        model=model,
        vendor=vendor,
        base_url=base_url,
        api_key=KEY,
        json_mode=False,
        **kwargs,  # type: ignore[arg-type]
    )


async def storm(c: Critic, calls: int = STORM) -> list[Verdict]:
    """``calls`` concurrent judgements by ``c`` (each tries once)."""
    verdicts: list[Verdict] = []

    async def one(i: int) -> None:
        verdicts.append(await c.judge(f"storm item {i}"))

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            for i in range(calls):
                tg.start_soon(one, i)
    return verdicts


def held_by_the_pause(v: Verdict) -> bool:
    return v.error_kind is ErrorKind.TIMEOUT and "waiting for the rate limit" in (v.error or "")


async def test_an_hour_long_429_on_one_model_leaves_another_model_of_the_url_unaffected(
    server: VendorServer, model: str
) -> None:
    limited, healthy = f"{model}-limited", f"{model}-healthy"
    server.always(limited, Reply.status(429, retry_after=HOUR))
    server.script(healthy, Reply.content(ANSWER))
    a = critic("a", limited, "custom", server.url, max_retries=0)
    b = critic("b", healthy, "custom", server.url)

    refused = await storm(a)
    with anyio.fail_after(WAIT_S):
        verdict = await b.judge("item")
        again = await a.judge("item")  # the pause is real, for the model it came from
    await b.aclose()
    server.always(limited, None)

    assert [v.error_kind for v in refused] == [ErrorKind.RATE_LIMIT] * STORM
    assert verdict.is_valid, verdict.error
    assert (verdict.kind, verdict.attempts) == ("KEEP", 1)
    assert held_by_the_pause(again) and again.attempts == 0


async def test_a_run_of_429s_on_one_model_leaves_no_pause_on_another_model(
    server: VendorServer, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No Retry-After: each consecutive 429 doubles the pause (8 s at most), for that model
    # only. Pauses are scaled down so that the four calls in a row stay quick.
    monkeypatch.setattr("cross_judge.limits._gate.PAUSE_BASE_S", 0.01)
    limited, healthy = f"{model}-limited", f"{model}-healthy"
    server.always(limited, Reply.status(429))
    server.script(healthy, Reply.content(ANSWER))
    a = critic("a", limited, "custom", server.url, max_retries=0)
    b = critic("b", healthy, "custom", server.url)

    refused = [v for _ in range(4) for v in await storm(a, calls=1)]  # one after another
    config = b.endpoint()
    a_state = limiter_for(config, limited)
    others = limiter_for(config, healthy), limiter_for(config)
    with anyio.fail_after(WAIT_S):
        verdict = await b.judge("item")
    await b.aclose()
    server.always(limited, None)

    assert [v.error_kind for v in refused] == [ErrorKind.RATE_LIMIT] * 4
    assert a_state is not None and a_state.consecutive_rate_limits == 4
    assert others == (None, None)  # no 429 state for the healthy model, none shared
    assert verdict.is_valid and verdict.attempts == 1, verdict.error


async def test_a_paused_model_holds_no_slot_of_the_vendors_shared_concurrency_cap(
    server: VendorServer, model: str, vendor_registry: None
) -> None:
    register_vendor("gateway-capped", server.url, max_concurrency=1)
    limited, healthy = f"{model}-limited", f"{model}-healthy"
    server.always(limited, Reply.status(429, retry_after=HOUR))
    server.script(healthy, Reply.content(ANSWER))
    a = critic("a", limited, "gateway-capped", server.url, max_retries=0)
    patient = critic("a-patient", limited, "gateway-capped", server.url, deadline=None)
    b = critic("b", healthy, "gateway-capped", server.url)
    refused = await storm(a, calls=2)

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            for i in range(3):  # sleeping out A's pause, cancelled below
                tg.start_soon(patient.judge, f"held {i}")
            await anyio.wait_all_tasks_blocked()
            verdict = await b.judge("item")  # the one slot is free for B
            tg.cancel_scope.cancel()
    await b.aclose()
    server.always(limited, None)

    assert [v.error_kind for v in refused] == [ErrorKind.RATE_LIMIT] * 2
    assert verdict.is_valid and verdict.attempts == 1, verdict.error
    cap = limiter_for(b.endpoint())
    assert cap is not None and (cap.limit, cap.in_flight, cap.waiting) == (1, 0, 0)
    assert server.stats()["by_model"][limited] == 2  # the held calls were never sent


async def test_with_endpoint_scope_a_429_on_one_model_pauses_every_model_of_the_endpoint(
    server: VendorServer, model: str, vendor_registry: None
) -> None:
    register_vendor("per-account", server.url, limit_scope="endpoint")
    limited, other = f"{model}-limited", f"{model}-other"
    server.always(limited, Reply.status(429, retry_after=HOUR))
    server.script(other, Reply.content(ANSWER))
    a = critic("a", limited, "per-account", server.url, max_retries=0)
    b = critic("b", other, "per-account", server.url)

    await storm(a)
    with anyio.fail_after(WAIT_S):
        verdict = await b.judge("item")
    await b.aclose()
    server.always(limited, None)

    assert held_by_the_pause(verdict) and verdict.attempts == 0
    assert server.stats()["by_model"].get(other, 0) == 0  # never sent


async def test_the_deepseek_preset_pauses_every_model_after_a_429(
    server: VendorServer, model: str
) -> None:
    # DeepSeek limits per account: its preset shares the pause across models.
    chat, reasoner = f"{model}-chat", f"{model}-reasoner"
    server.always(chat, Reply.status(429, retry_after=HOUR))
    a = critic("a", chat, "deepseek", server.url, max_retries=0)
    b = critic("b", reasoner, "deepseek", server.url)

    await storm(a, calls=1)
    with anyio.fail_after(WAIT_S):
        verdict = await b.judge("item")
    await b.aclose()
    server.always(chat, None)

    assert held_by_the_pause(verdict)
    assert server.stats()["by_model"].get(reasoner, 0) == 0
