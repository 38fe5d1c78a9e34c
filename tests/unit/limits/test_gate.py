"""Vendor limits: concurrency cap, rpm pacing, adaptive 429 backoff, and how calls queue."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest
import respx

from cross_judge import ConfigError, Critic, ErrorKind, UnknownVendorError, Verdict
from cross_judge.limits._gate import (
    PAUSE_BASE_S,
    PAUSE_MAX_S,
    Pacer,
    VendorGate,
    VendorLimiter,
    limiter_for,
    pause_after_rate_limit,
)
from cross_judge.transport import CallFailure
from cross_judge.transport._retry import MAX_RETRY_AFTER_S, call_with_retries
from cross_judge.vendors import VendorConfig, get_vendor, set_vendor_limits

pytestmark = pytest.mark.anyio

KEY = "sk-unit-test-key-0123456789"
URL = "https://api.deepseek.com/v1/chat/completions"


def completion(content: str = '{"kind": "KEEP", "confidence": 0.9}') -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "deepseek-chat",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }


def rate_limited(retry_after: float | None = None) -> CallFailure:
    return CallFailure(ErrorKind.RATE_LIMIT, "HTTP 429", status=429, retry_after=retry_after)


def vendor(name: str, **limits: Any) -> VendorConfig:
    """A vendor whose one limiter holds the caps and the 429 state (``limit_scope``
    ``"endpoint"``), unless ``limits`` says otherwise."""
    limits.setdefault("limit_scope", "endpoint")
    return VendorConfig(name, "https://vendor.test/v1", None, requires_api_key=False, **limits)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def critic(client: httpx.AsyncClient, name: str = "c1", **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("model", f"model-{name}")
    return Critic(name=name, http_client=client, json_mode=False, **kwargs)


def deepseek_limiter() -> VendorLimiter:
    limiter = limiter_for(get_vendor("deepseek"))
    assert limiter is not None
    return limiter


async def wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(5000):
        if condition():
            return
        await anyio.sleep(0.001)
    raise AssertionError("the condition never came true")


async def admitted(config: VendorConfig, count: int) -> list[VendorGate]:
    gates = [VendorGate(config) for _ in range(count)]
    for gate in gates:
        await gate.enter(math.inf)
    return gates


# -- fast path -----------------------------------------------------------------------------


@respx.mock
async def test_fast_path_leaves_no_limiter_state(client: httpx.AsyncClient) -> None:
    respx.post(URL).respond(json=completion())
    verdict = await critic(client).judge("item")
    assert verdict.is_valid
    assert limiter_for(get_vendor("deepseek")) is None


# -- concurrency -----------------------------------------------------------------------------


@respx.mock
async def test_max_concurrency_holds_across_two_critics_sharing_a_vendor(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    set_vendor_limits("deepseek", max_concurrency=2)
    in_flight = peak = 0

    async def answer(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.005)
        in_flight -= 1
        return httpx.Response(200, json=completion())

    route = respx.post(URL).mock(side_effect=answer)
    critics = [critic(client, "a"), critic(client, "b")]
    verdicts: list[Verdict] = []

    async def judge(c: Critic, i: int) -> None:
        verdicts.append(await c.judge(f"item {i}"))

    async with anyio.create_task_group() as tg:
        for i in range(12):
            tg.start_soon(judge, critics[i % 2], i)

    assert all(v.is_valid for v in verdicts) and route.call_count == 12
    assert peak <= 2
    assert deepseek_limiter().in_flight == 0


async def test_a_429_halves_the_allowed_concurrency_and_pauses_new_attempts() -> None:
    config = vendor("halving", max_concurrency=8)
    gates = await admitted(config, 8)
    limiter = limiter_for(config)
    assert limiter is not None and limiter.limit == 8

    gates[0].leave(rate_limited())

    assert limiter.limit == 4 and limiter.in_flight == 7
    assert limiter.paused_until > anyio.current_time()
    with pytest.raises(TimeoutError):  # the pause outlasts this budget: refused at once
        await VendorGate(config).enter(0.01)
    assert limiter.in_flight == 7


async def test_more_refusals_from_the_same_burst_do_not_halve_again() -> None:
    config = vendor("echoes", max_concurrency=8)
    gates = await admitted(config, 8)
    gates[0].leave(rate_limited())
    gates[1].leave(rate_limited())
    limiter = limiter_for(config)
    assert limiter is not None and limiter.limit == 4


async def test_the_limit_falls_to_what_the_vendor_accepted_of_the_burst() -> None:
    # DeepSeek-style: 8 sent, 6 refused at once, so the vendor took 2.
    config = vendor("accepted", max_concurrency=8)
    gates = await admitted(config, 8)
    for gate in gates[:6]:
        gate.leave(rate_limited())
    limiter = limiter_for(config)
    assert limiter is not None and limiter.limit == 2


async def test_a_429_on_an_attempt_admitted_after_the_decrease_halves_again() -> None:
    config = vendor("second-signal", max_concurrency=8)
    gates = await admitted(config, 8)
    gates[0].leave(rate_limited(retry_after=0))  # no pause, to admit again at once
    for gate in gates[1:]:
        gate.leave(CallFailure(ErrorKind.SERVER, "HTTP 503", status=503))
    (later,) = await admitted(config, 1)
    later.leave(rate_limited(retry_after=0))
    limiter = limiter_for(config)
    assert limiter is not None and limiter.limit == 1  # 1 in flight, halved, min 1


async def test_a_server_error_frees_the_slot_and_leaves_the_limit_alone() -> None:
    config = vendor("neutral", max_concurrency=2)
    (gate,) = await admitted(config, 1)
    gate.leave(CallFailure(ErrorKind.SERVER, "HTTP 503", status=503))
    limiter = limiter_for(config)
    assert limiter is not None
    assert (limiter.limit, limiter.in_flight) == (2, 0)
    assert limiter.paused_until < anyio.current_time()


# -- pause -----------------------------------------------------------------------------------


def test_retry_after_sets_the_pause() -> None:
    limiter = VendorLimiter("x", None, None)
    limiter.record_rate_limit(100.0, 3.0, epoch=None)
    assert limiter.paused_until == 103.0


def test_retry_after_is_capped() -> None:
    limiter = VendorLimiter("x", None, None)
    limiter.record_rate_limit(100.0, 3600.0, epoch=None)
    assert limiter.paused_until == 100.0 + MAX_RETRY_AFTER_S


def test_pause_without_retry_after_doubles_from_small_up_to_a_cap() -> None:
    pauses = [pause_after_rate_limit(n, None) for n in range(1, 8)]
    assert pauses == [PAUSE_BASE_S * 2**k for k in range(5)] + [PAUSE_MAX_S] * 2
    assert PAUSE_BASE_S <= 0.25 and PAUSE_MAX_S == 8.0


def test_consecutive_429s_lengthen_the_pause_and_a_success_resets_it() -> None:
    limiter = VendorLimiter("x", 4, None)
    limiter.record_rate_limit(0.0, None, epoch=0)
    limiter.record_rate_limit(0.0, None, epoch=1)
    assert limiter.consecutive_rate_limits == 2
    assert limiter.paused_until == pause_after_rate_limit(2, None)
    limiter.record_success()
    assert limiter.consecutive_rate_limits == 0
    limiter.record_rate_limit(10.0, None, epoch=2)
    assert limiter.paused_until == 10.0 + pause_after_rate_limit(1, None)


def test_a_pause_is_only_ever_extended() -> None:
    limiter = VendorLimiter("x", None, None)
    limiter.record_rate_limit(0.0, 30.0, epoch=None)
    limiter.record_rate_limit(1.0, 1.0, epoch=None)
    assert limiter.paused_until == 30.0


# -- increase --------------------------------------------------------------------------------


async def test_successes_restore_the_limit_additively_up_to_max_concurrency() -> None:
    config = vendor("additive", max_concurrency=8)
    gates = await admitted(config, 8)
    gates[0].leave(rate_limited())
    limiter = limiter_for(config)
    assert limiter is not None and limiter.limit == 4
    grown = []
    for _ in range(4 + 5 + 6 + 7 + 20):
        limiter.record_success()
        grown.append(limiter.limit)
    # One step per full window of successes: 4 successes at 4, then 5 at 5, ...
    assert grown[:4] == [4, 4, 4, 5]
    assert grown.index(6) == 4 + 5 - 1
    assert grown.index(8) == 4 + 5 + 6 + 7 - 1
    assert set(grown[-20:]) == {8}


async def test_without_a_configured_cap_recovery_lifts_the_cap() -> None:
    config = vendor("lifting")
    (untracked,) = await admitted(config, 1)
    untracked.leave(rate_limited(retry_after=0))  # creates the limiter, capped at 1
    limiter = limiter_for(config)
    assert limiter is not None
    limiter.record_success()
    assert limiter.limit is None
    gates = await admitted(config, 6)
    gates[0].leave(rate_limited(retry_after=0))
    assert limiter.limit == 3
    for _ in range(3 + 4 + 5 - 1):
        limiter.record_success()
    assert limiter.limit == 5
    limiter.record_success()
    assert limiter.limit is None  # back at the level that was refused: cap lifted


async def test_a_first_429_before_any_limiter_restarts_from_one_and_doubles_back() -> None:
    config = vendor("slow-start")
    gates = await admitted(config, 6)  # fast path: nothing counted them
    assert limiter_for(config) is None
    for gate in gates:
        gate.leave(rate_limited())
    limiter = limiter_for(config)
    assert limiter is not None and limiter.limit == 1 and limiter.in_flight == 0
    assert limiter.paused_until > anyio.current_time()
    levels = []
    for _ in range(5):
        limiter.record_success()
        levels.append(limiter.limit)
    assert levels == [2, 3, 4, 5, None]  # +1 per success; the cap goes at 6 (= refused)


# -- scope: per model (gateways) or per endpoint (per-account vendors) ---------------------------


async def test_in_model_scope_a_429_pauses_only_the_model_it_came_from() -> None:
    config = vendor("gateway", limit_scope="model")
    gate = VendorGate(config, "model-a")
    await gate.enter(math.inf)
    gate.leave(rate_limited(retry_after=3600))

    await VendorGate(config, "model-b").enter(0.01)  # admitted at once: not paused
    with pytest.raises(TimeoutError):  # the pause outlasts this budget: refused at once
        await VendorGate(config, "model-a").enter(0.01)
    paused = limiter_for(config, "model-a")
    assert paused is not None and paused.paused_until > anyio.current_time()
    assert limiter_for(config, "model-b") is None and limiter_for(config) is None


async def test_in_endpoint_scope_a_429_pauses_every_model_of_the_endpoint() -> None:
    config = vendor("account", limit_scope="endpoint")
    gate = VendorGate(config, "model-a")
    await gate.enter(math.inf)
    gate.leave(rate_limited(retry_after=3600))

    with pytest.raises(TimeoutError):
        await VendorGate(config, "model-b").enter(0.01)
    assert limiter_for(config, "model-b") is limiter_for(config) is not None


async def test_in_model_scope_the_configured_cap_is_shared_and_a_429_does_not_lower_it() -> None:
    config = vendor("gateway-cap", limit_scope="model", max_concurrency=4)
    gates = [VendorGate(config, m) for m in ("model-a", "model-a", "model-b", "model-b")]
    for gate in gates:
        await gate.enter(math.inf)
    cap = limiter_for(config)
    assert cap is not None and (cap.limit, cap.in_flight) == (4, 4)

    gates[0].leave(rate_limited())

    assert (cap.limit, cap.in_flight) == (4, 3)  # the cap is the caller's: not halved
    assert cap.paused_until == -math.inf and not cap.adaptive
    model_a = limiter_for(config, "model-a")
    assert model_a is not None and model_a.paused_until > anyio.current_time()
    for gate in gates[1:]:
        gate.leave(None)
    assert cap.in_flight == 0


async def test_in_model_scope_a_models_429s_adapt_that_models_limit() -> None:
    config = vendor("gateway-aimd", limit_scope="model")
    first = VendorGate(config, "model-a")
    await first.enter(math.inf)
    first.leave(rate_limited(retry_after=0))  # creates model-a's state, capped at 1
    model_a = limiter_for(config, "model-a")
    assert model_a is not None and model_a.limit == 1
    model_a.record_success()
    model_a.record_success()
    gates = [VendorGate(config, "model-a") for _ in range(4)]
    for gate in gates:
        await gate.enter(math.inf)
    assert model_a.limit is None and model_a.in_flight == 4

    gates[0].leave(rate_limited(retry_after=0))

    assert model_a.limit == 2  # 4 in flight, halved
    assert limiter_for(config, "model-b") is None


async def test_a_call_refused_by_the_shared_cap_gives_its_models_slot_back() -> None:
    config = vendor("gateway-handback", limit_scope="model", max_concurrency=1)
    first = VendorGate(config, "model-a")
    await first.enter(math.inf)
    first.leave(rate_limited(retry_after=0))  # model-a now has its own state
    holder = VendorGate(config, "model-b")
    await holder.enter(math.inf)  # holds the only slot of the cap, never released here

    with pytest.raises(TimeoutError):
        await VendorGate(config, "model-a").enter(0.05)

    model_a, cap = limiter_for(config, "model-a"), limiter_for(config)
    assert model_a is not None and (model_a.in_flight, model_a.waiting) == (0, 0)
    assert cap is not None and (cap.in_flight, cap.waiting) == (1, 0)
    holder.leave(None)


async def test_a_gate_told_no_model_counts_as_one_model_of_its_own() -> None:
    config = vendor("no-model", limit_scope="model")
    gate = VendorGate(config)
    await gate.enter(math.inf)
    gate.leave(rate_limited(retry_after=3600))

    await VendorGate(config, "model-b").enter(0.01)
    with pytest.raises(TimeoutError):
        await VendorGate(config).enter(0.01)


async def test_switching_a_vendor_to_model_scope_ends_the_shared_pause() -> None:
    shared = vendor("switching", limit_scope="endpoint", max_concurrency=4)
    gate = VendorGate(shared, "model-a")
    await gate.enter(math.inf)
    gate.leave(rate_limited(retry_after=3600))
    cap = limiter_for(shared)
    assert cap is not None and cap.limit == 1 and cap.paused_until > anyio.current_time()

    per_model = dataclasses.replace(shared, limit_scope="model")
    await VendorGate(per_model, "model-b").enter(0.01)

    assert (cap.limit, cap.paused_until, cap.adaptive) == (4, -math.inf, False)


def test_set_vendor_limits_changes_the_scope_a_new_gate_uses(vendor_registry: None) -> None:
    set_vendor_limits("deepseek", limit_scope="model")
    assert get_vendor("deepseek").limit_scope == "model"
    with pytest.raises(ConfigError, match="limit_scope must be 'model'"):
        set_vendor_limits("deepseek", limit_scope="account")  # type: ignore[arg-type]


# -- rpm ---------------------------------------------------------------------------------------


def test_rpm_pacing_reserves_one_slot_every_60_over_rpm_seconds() -> None:
    pacer = Pacer(120)  # one every 0.5 s
    assert [pacer.reserve(10.0) for _ in range(4)] == [10.0, 10.5, 11.0, 11.5]
    assert pacer.reserve(11.7) == 12.0
    assert pacer.reserve(20.0) == 20.0  # idle: no catch-up burst, just the next send


def test_rpm_pacing_refuses_a_slot_past_the_latest_time_without_reserving() -> None:
    pacer = Pacer(6)  # one every 10 s
    assert pacer.reserve(0.0) == 0.0
    assert pacer.reserve(0.0, latest=5.0) is None
    assert pacer.reserve(0.0) == 10.0


def test_a_cancelled_pacing_reservation_is_given_back() -> None:
    pacer = Pacer(6)
    pacer.reserve(0.0)
    at = pacer.reserve(0.0)
    assert at == 10.0
    pacer.cancel(at)
    assert pacer.reserve(0.0) == 10.0


@respx.mock
async def test_a_pacing_wait_past_the_deadline_fails_at_once_without_sending(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    set_vendor_limits("deepseek", rpm=1)
    route = respx.post(URL).respond(json=completion())
    first = await critic(client).judge("item 1")
    second = await critic(client, deadline=5).judge("item 2")
    assert first.is_valid
    assert second.error_kind is ErrorKind.TIMEOUT and second.attempts == 0
    assert "waiting for the rate limit of vendor 'deepseek'" in (second.error or "")
    assert route.call_count == 1


# -- event loops -----------------------------------------------------------------------------


def test_limiter_state_is_per_event_loop() -> None:
    config = vendor("per-loop", max_concurrency=2)

    async def limiter_of_this_loop() -> VendorLimiter | None:
        (gate,) = await admitted(config, 1)
        gate.leave(None)
        first = limiter_for(config)
        (gate,) = await admitted(config, 1)
        gate.leave(None)
        assert limiter_for(config) is first  # shared within the loop
        return first

    one = anyio.run(limiter_of_this_loop)
    two = anyio.run(limiter_of_this_loop, backend="trio")
    three = anyio.run(limiter_of_this_loop)
    assert one is not None and two is not None and three is not None
    assert one is not two and one is not three and two is not three


# -- queueing, deadlines and cancellation ------------------------------------------------------


class Holder:
    """A respx handler whose "holder" model answers only when released."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == "holder":
            self.entered.set()
            await self.release.wait()
        return httpx.Response(200, json=completion())


@respx.mock
async def test_queue_time_does_not_count_against_the_per_attempt_timeout(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    set_vendor_limits("deepseek", max_concurrency=1)
    holder = Holder()
    respx.post(URL).mock(side_effect=holder)
    quick = critic(client, "quick", timeout=0.2)
    results: dict[str, Verdict] = {}

    async def judge(c: Critic) -> None:
        results[c.name] = await c.judge("item")

    async with anyio.create_task_group() as tg:
        tg.start_soon(judge, critic(client, "hold", model="holder", timeout=30))
        await holder.entered.wait()
        tg.start_soon(judge, quick)
        await wait_until(lambda: deepseek_limiter().waiting == 1)
        await anyio.sleep(0.3)  # queued for longer than quick's timeout
        holder.release.set()

    assert results["quick"].is_valid, results["quick"].error
    assert results["quick"].attempts == 1


@respx.mock
async def test_queue_time_counts_against_the_deadline(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    set_vendor_limits("deepseek", max_concurrency=1)
    holder = Holder()
    route = respx.post(URL).mock(side_effect=holder)
    results: dict[str, Verdict] = {}

    async def judge(c: Critic) -> None:
        results[c.name] = await c.judge("item")

    async with anyio.create_task_group() as tg:
        tg.start_soon(judge, critic(client, "hold", model="holder"))
        await holder.entered.wait()
        await judge(critic(client, "hurried", deadline=0.05, timeout=30))
        holder.release.set()

    hurried = results["hurried"]
    assert hurried.kind == "ERROR" and hurried.error_kind is ErrorKind.TIMEOUT
    error = hurried.error or ""
    assert "deadline of 0.05s ran out, or would have, while waiting for the rate limit" in error
    assert "not sent" in (hurried.error or "") and hurried.attempts == 0
    assert route.call_count == 1
    assert deepseek_limiter().in_flight == 0


@respx.mock
async def test_cancellation_while_queued_releases_the_slot(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    set_vendor_limits("deepseek", max_concurrency=1)
    holder = Holder()
    route = respx.post(URL).mock(side_effect=holder)

    async with anyio.create_task_group() as tg:
        tg.start_soon(critic(client, "hold", model="holder").judge, "item")
        await holder.entered.wait()
        async with anyio.create_task_group() as queued:
            queued.start_soon(critic(client, "queued").judge, "item")
            await wait_until(lambda: deepseek_limiter().waiting == 1)
            queued.cancel_scope.cancel()
        assert (deepseek_limiter().waiting, deepseek_limiter().in_flight) == (0, 1)
        holder.release.set()

    assert deepseek_limiter().in_flight == 0
    assert (await critic(client, "after").judge("item")).is_valid
    assert route.call_count == 2


async def test_a_call_cancelled_as_it_is_handed_a_slot_gives_the_slot_back() -> None:
    config = vendor("handover", max_concurrency=1)
    (holding,) = await admitted(config, 1)
    limiter = limiter_for(config)
    assert limiter is not None

    async def attempt() -> None:
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: call_with_retries(attempt, max_retries=0, timeout=30, gate=VendorGate(config))
        )
        await wait_until(lambda: limiter.waiting == 1)
        holding.leave(None)  # hands the slot to the queued call...
        tg.cancel_scope.cancel()  # ...which is cancelled before it can use it
    assert (limiter.in_flight, limiter.waiting) == (0, 0)


@respx.mock
async def test_cancelling_a_call_in_flight_releases_its_slot(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    set_vendor_limits("deepseek", max_concurrency=1)
    holder = Holder()
    respx.post(URL).mock(side_effect=holder)
    async with anyio.create_task_group() as tg:
        tg.start_soon(critic(client, "hold", model="holder").judge, "item")
        await holder.entered.wait()
        assert deepseek_limiter().in_flight == 1
        tg.cancel_scope.cancel()
    assert deepseek_limiter().in_flight == 0


# -- the retry policy and the gate --------------------------------------------------------------


class RecordingGate:
    def __init__(self) -> None:
        self.entered = 0
        self.outcomes: list[BaseException | None] = []

    @property
    def vendor(self) -> str:
        return "recording"

    async def enter(self, within: float) -> None:
        self.entered += 1

    def leave(self, outcome: BaseException | None) -> None:
        self.outcomes.append(outcome)


async def test_every_attempt_passes_the_gate_and_reports_how_it_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("cross_judge.transport._retry._backoff", lambda state: 0.0)
    failures: list[CallFailure] = [
        rate_limited(0),
        CallFailure(ErrorKind.SERVER, "HTTP 503", status=503),
    ]

    async def attempt() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    gate = RecordingGate()
    assert await call_with_retries(attempt, max_retries=3, timeout=1, gate=gate) == ("ok", 3)
    assert gate.entered == 3
    kinds = [o.kind if isinstance(o, CallFailure) else o for o in gate.outcomes]
    assert kinds == [ErrorKind.RATE_LIMIT, ErrorKind.SERVER, None]


# -- set_vendor_limits ---------------------------------------------------------------------------


def test_set_vendor_limits_keeps_a_limit_left_out(vendor_registry: None) -> None:
    set_vendor_limits("DeepSeek", max_concurrency=3)
    config = set_vendor_limits("deepseek", rpm=30)
    assert (config.max_concurrency, config.rpm) == (3, 30.0)
    assert get_vendor("deepseek") is config


def test_set_vendor_limits_none_removes_a_limit(vendor_registry: None) -> None:
    set_vendor_limits("deepseek", max_concurrency=3, rpm=30)
    config = set_vendor_limits("deepseek", max_concurrency=None)
    assert (config.max_concurrency, config.rpm) == (None, 30.0)


@pytest.mark.parametrize(
    ("limits", "says"),
    [
        ({"max_concurrency": 0}, "max_concurrency must be a whole number >= 1"),
        ({"max_concurrency": 2.5}, "max_concurrency must be a whole number >= 1"),
        ({"max_concurrency": True}, "max_concurrency must be a whole number >= 1"),
        ({"max_concurrency": "4"}, "max_concurrency must be a whole number >= 1"),
        ({"rpm": 0}, "rpm must be a finite number > 0"),
        ({"rpm": -5}, "rpm must be a finite number > 0"),
        ({"rpm": math.inf}, "rpm must be a finite number > 0"),
        ({"rpm": math.nan}, "rpm must be a finite number > 0"),
        ({"rpm": "60"}, "rpm must be a finite number > 0"),
    ],
)
def test_set_vendor_limits_rejects_invalid_values_and_says_the_fix(
    vendor_registry: None, limits: dict[str, Any], says: str
) -> None:
    before = get_vendor("deepseek")
    with pytest.raises(ConfigError, match=says) as info:
        set_vendor_limits("deepseek", **limits)
    assert "or None to remove" in str(info.value)
    assert get_vendor("deepseek") is before


def test_set_vendor_limits_on_an_unknown_vendor_raises(vendor_registry: None) -> None:
    with pytest.raises(UnknownVendorError, match="Known"):
        set_vendor_limits("nope", max_concurrency=2)


@respx.mock
async def test_new_limits_apply_to_the_next_call_of_an_existing_critic(
    client: httpx.AsyncClient, vendor_registry: None
) -> None:
    respx.post(URL).respond(json=completion())
    judge = critic(client)
    await judge.judge("before")
    assert limiter_for(get_vendor("deepseek")) is None

    set_vendor_limits("deepseek", max_concurrency=1)
    await judge.judge("limited")
    assert deepseek_limiter().limit == 1

    set_vendor_limits("deepseek", max_concurrency=None)
    await judge.judge("unlimited")
    assert deepseek_limiter().limit is None
