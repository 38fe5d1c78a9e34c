"""Submitting, polling and fetching provider batches through the official SDKs
(``cross_judge.transport._batches``) against the simulated vendor's batch endpoints: the
answers that come back are the ones a live call gets for the same request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cross_judge import Critic
from cross_judge.errors import ErrorKind
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport import CallFailure, Completion
from cross_judge.transport._batch_codecs import (
    anthropic_request,
    openai_request,
    request_id,
)
from cross_judge.transport._batches import fetch_results, poll, submit

pytestmark = pytest.mark.anyio

KEY = "sk-batch-test"
ITEMS = ("a first item", "a second item", "a third item")


@pytest.fixture
def server() -> Iterator[VendorServer]:
    with VendorServer([Persona("sim-a", accuracy=0.8)], api_key=KEY) as running:
        yield running


def critic(server: VendorServer, protocol: str) -> Critic:
    base = server.url if protocol == "openai" else server.anthropic_url
    return Critic(
        name="judge",
        model="sim-a",
        vendor="custom" if protocol == "openai" else "anthropic",
        base_url=base,
        api_key=KEY,
        prompt="taxonomy-review@1",
    )


def requests_for(judge: Critic, protocol: str) -> tuple[list[Any], dict[str, str]]:
    config = judge.endpoint()
    built, items = [], {}
    for item in ITEMS:
        custom_id = request_id(item, judge.name)
        request = judge.build_request(item)
        built.append(
            openai_request(config, request, custom_id)
            if protocol == "openai"
            else anthropic_request(request, custom_id)
        )
        items[custom_id] = item
    return built, items


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_batch_round_trip_gives_the_live_answers(
    server: VendorServer, protocol: str
) -> None:
    judge = critic(server, protocol)
    config = judge.endpoint()
    built, items = requests_for(judge, protocol)

    batch_id = await submit(config, KEY, built)
    state = await poll(config, KEY, batch_id)
    assert state.ended
    outcomes = await fetch_results(config, KEY, batch_id, list(items))

    async with judge:
        for custom_id, item in items.items():
            live = await judge.judge(item)
            outcome = outcomes[custom_id]
            assert isinstance(outcome, Completion)
            assert live.raw_response == outcome.text
    assert sum(server.stats()["batches"].values()) == 1


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_batch_not_yet_ended_says_so(protocol: str) -> None:
    with VendorServer([Persona("sim-a")], api_key=KEY, batch_polls=2) as server:
        judge = critic(server, protocol)
        config = judge.endpoint()
        built, _ = requests_for(judge, protocol)
        batch_id = await submit(config, KEY, built)
        first = await poll(config, KEY, batch_id)
        second = await poll(config, KEY, batch_id)
    assert not first.ended
    assert second.ended


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_failed_and_expired_requests_come_back_as_failures_never_lost(
    server: VendorServer, protocol: str
) -> None:
    judge = critic(server, protocol)
    config = judge.endpoint()
    built, items = requests_for(judge, protocol)
    ids = list(items)
    server.fail_batch_request(ids[0], status=500, message="boom")
    server.expire_batch_request(ids[1])

    batch_id = await submit(config, KEY, built)
    await poll(config, KEY, batch_id)
    outcomes = await fetch_results(config, KEY, batch_id, ids)

    assert set(outcomes) == set(ids)
    failed, expired = outcomes[ids[0]], outcomes[ids[1]]
    assert isinstance(failed, CallFailure)
    assert failed.kind is ErrorKind.SERVER
    assert isinstance(expired, CallFailure)
    assert expired.kind is ErrorKind.BATCH


async def test_a_wrong_key_is_an_auth_failure_without_the_key(server: VendorServer) -> None:
    judge = critic(server, "openai")
    built, _ = requests_for(judge, "openai")
    with pytest.raises(CallFailure) as caught:
        await submit(judge.endpoint(), "sk-wrong-key-123", built)
    assert caught.value.kind is ErrorKind.AUTH
    assert "sk-wrong-key-123" not in str(caught.value)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_batch_verdicts_equal_live_ones_at_half_the_price(
    server: VendorServer, protocol: str
) -> None:
    from cross_judge.pricing import _clear_registered, register_price

    vendor = "custom" if protocol == "openai" else "anthropic"
    register_price("sim-a", vendor=vendor, input=2.0, output=8.0, batch=0.5)
    try:
        judge = critic(server, protocol)
        config = judge.endpoint()
        built, items = requests_for(judge, protocol)
        batch_id = await submit(config, KEY, built)
        await poll(config, KEY, batch_id)
        outcomes = await fetch_results(config, KEY, batch_id, list(items))
        async with judge:
            for custom_id, item in items.items():
                live = await judge.judge(item)
                batched = judge.verdict_from_batch(outcomes[custom_id])
                fields = ("kind", "confidence", "reasoning", "raw_response", "usage", "attempts")
                assert [getattr(batched, f) for f in fields] == [getattr(live, f) for f in fields]
                assert live.cost_usd is not None and batched.cost_usd is not None
                assert batched.cost_usd == pytest.approx(live.cost_usd / 2)
    finally:
        _clear_registered()


def test_a_failed_batch_request_is_an_error_verdict_of_its_kind(server: VendorServer) -> None:
    judge = critic(server, "openai")
    verdict = judge.verdict_from_batch(CallFailure(ErrorKind.BATCH, f"expired: {KEY} echoed"))
    assert (verdict.kind, verdict.error_kind, verdict.attempts) == ("ERROR", ErrorKind.BATCH, 1)
    assert verdict.error is not None and "expired" in verdict.error
    assert KEY not in verdict.model_dump_json()
