"""Batch review over real HTTP: judge_many, stream, bounded concurrency, lazy input, stopping."""

from __future__ import annotations

import gc
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from cross_judge import ConfigError, Critic, Ensemble
from cross_judge.batch import BatchResult, Item, ItemError
from cross_judge.testing import Persona, Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CRITICS = ("sim-a", "sim-b", "sim-c")


@pytest.fixture(scope="module")
def sims() -> Iterator[VendorServer]:
    personas = [
        Persona(name, accuracy=0.85, latency=0.02, seed=i) for i, name in enumerate(CRITICS)
    ]
    with VendorServer(personas, api_key=KEY, count_items=True) as server:
        yield server


@pytest.fixture
async def panel(sims: VendorServer) -> AsyncIterator[Ensemble]:
    sims.reset_stats()
    critics = [
        Critic(name=name, model=name, vendor="custom", base_url=sims.url, api_key=KEY)
        for name in CRITICS
    ]
    async with Ensemble(critics) as ensemble:
        yield ensemble


async def settle(server: VendorServer) -> None:
    """Wait (at most 5 s) until the server has no request in flight.

    Collects garbage first, so that a stream left unclosed warns in the test that left it.
    """
    gc.collect()
    await anyio.sleep(0.05)  # let a cancellation reach the tasks and the server
    for _ in range(250):
        if not server.stats()["in_flight"]:
            return
        await anyio.sleep(0.02)
    raise AssertionError(f"still in flight: {server.stats()}")


class Source:
    """An endless item source that counts how many items were taken from it."""

    def __init__(self) -> None:
        self.taken = 0

    def __iter__(self) -> Iterator[str]:
        for i in itertools.count():
            self.taken += 1
            yield f"candidate {i}"


# -- judge_many -----------------------------------------------------------------------------


async def test_judge_many_returns_one_result_per_item_in_input_order(panel: Ensemble) -> None:
    items = [f"category {i}" for i in range(40)]
    batch = await panel.judge_many(items, concurrency=7)
    assert [r.query_id for r in batch.verdicts] == items
    assert all(r.n_valid == 3 for r in batch.verdicts)
    assert batch.critics == list(CRITICS) and batch.voting == "majority"
    assert len(batch) == 40 and batch.elapsed_s > 0


async def test_judge_many_takes_strings_mappings_items_and_async_iterables(
    panel: Ensemble,
) -> None:
    async def source() -> AsyncIterator[Any]:
        yield "plain text"
        yield {"id": 7, "query": "with an id", "meta": {"batch": 1}, "gold": "KEEP"}
        yield Item(id="x", query="an Item")

    batch = await panel.judge_many(source())
    assert [r.query_id for r in batch.verdicts] == ["plain text", "7", "x"]
    assert batch.verdicts[1].meta == {"batch": 1, "gold": "KEEP"}


async def test_items_in_flight_never_exceed_concurrency(
    panel: Ensemble, sims: VendorServer
) -> None:
    await panel.judge_many([f"item {i}" for i in range(30)], concurrency=4)
    assert sims.stats()["max_in_flight"] <= 4 * len(CRITICS)
    assert sims.stats()["requests"] == 30 * len(CRITICS)


async def test_an_invalid_item_raises_before_anything_is_sent(
    panel: Ensemble, sims: VendorServer
) -> None:
    with pytest.raises(ItemError, match=r"item 2: 'query' must be the text to judge"):
        await panel.judge_many(["a", "b", {"id": "c"}, "d"])
    assert sims.stats()["requests"] == 0


async def test_an_item_missing_a_template_field_raises_before_anything_is_sent(
    sims: VendorServer,
) -> None:
    sims.reset_stats()
    critic = Critic(
        name="r",
        model="sim-a",
        vendor="custom",
        base_url=sims.url,
        api_key=KEY,
        prompt="score-1-5@1",
    )
    items = [
        {"query": "ok", "context": {"rubric": "correct?"}},
        {"id": "bad", "query": "no rubric"},
    ]
    with pytest.raises(ItemError, match=r"item 1: id 'bad': .*\{rubric\}"):
        await Ensemble([critic]).judge_many(items)
    assert sims.stats()["requests"] == 0


async def test_item_context_fills_the_template(sims: VendorServer) -> None:
    critic = Critic(
        name="r",
        model="sim-a",
        vendor="custom",
        base_url=sims.url,
        api_key=KEY,
        prompt="score-1-5@1",
    )
    sims.reset_stats()
    async with Ensemble([critic]) as ensemble:
        batch = await ensemble.judge_many(
            [{"id": "1", "query": "essay", "context": {"rubric": "RUBRIC-TEXT"}}]
        )
    body = sims.recent_requests[-1]["body"]
    assert "RUBRIC-TEXT" in body["messages"][-1]["content"]
    assert batch.verdicts[0].query_id == "1"


async def test_concurrency_must_be_a_positive_integer(panel: Ensemble) -> None:
    with pytest.raises(ValueError, match="concurrency must be an integer >= 1"):
        await panel.judge_many(["a"], concurrency=0)
    with pytest.raises(ValueError, match="concurrency must be an integer >= 1"):
        panel.stream(["a"], concurrency=2.5)  # type: ignore[arg-type]


async def test_judge_many_sync_works_inside_a_running_loop(panel: Ensemble) -> None:
    batch = panel.judge_many_sync(["a", "b", "c"], concurrency=2)
    assert [r.query_id for r in batch.verdicts] == ["a", "b", "c"]


async def test_judge_many_with_progress_still_returns_every_result(
    panel: Ensemble, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = await panel.judge_many([f"i{i}" for i in range(10)], progress=True)
    assert len(batch) == 10
    assert "10/10" in capsys.readouterr().err


# -- stream ------------------------------------------------------------------------------------


async def test_stream_yields_every_result_as_it_finishes(panel: Ensemble) -> None:
    items = [f"s{i}" for i in range(25)]
    seen = [r.query_id async for r in panel.stream(items, concurrency=5)]
    assert sorted(seen) == sorted(items)


async def test_stream_reads_items_lazily(panel: Ensemble) -> None:
    source = Source()
    async with panel.stream(source, concurrency=3) as results:
        received = 0
        async for _ in results:
            received += 1
            if received == 10:
                break
    # At most: the ones received, the ones in flight and the ones waiting in the buffer.
    assert source.taken <= received + 3 + 3 + 1


async def test_breaking_out_of_a_bare_stream_cancels_the_calls_in_flight(
    sims: VendorServer,
) -> None:
    critic = Critic(name="h", model="hangs", vendor="custom", base_url=sims.url, api_key=KEY)
    sims.script("hangs", Reply.content('{"kind": "KEEP"}'))  # the first call answers ...
    sims.always("hangs", Reply.hang())  # ... every other one hangs
    try:
        with anyio.fail_after(SAFETY_NET_S):
            async for result in Ensemble([critic]).stream(Source(), concurrency=4):
                assert result.consensus == "KEEP"
                break
            gc.collect()
            await settle(sims)
    finally:
        sims.always("hangs", None)
        await critic.aclose()


async def test_break_after_some_results_stops_the_rest(panel: Ensemble, sims: VendorServer) -> None:
    taken = 0
    async for _ in panel.stream(Source(), concurrency=4):
        taken += 1
        if taken == 5:
            break
    gc.collect()
    await settle(sims)
    await anyio.sleep(0.3)
    # Nothing kept running after the break: at most the items received, in flight (4)
    # and buffered (4) were ever started, each asking 3 critics.
    assert sims.stats()["requests"] <= (5 + 4 + 4) * len(CRITICS)


async def test_cancelling_the_consumer_cancels_the_calls_in_flight(sims: VendorServer) -> None:
    critic = Critic(name="h", model="hangs2", vendor="custom", base_url=sims.url, api_key=KEY)
    sims.always("hangs2", Reply.hang())
    try:
        with anyio.move_on_after(0.5):
            async for _ in Ensemble([critic]).stream(["a", "b", "c"]):
                pass
        await settle(sims)
    finally:
        sims.always("hangs2", None)
        await critic.aclose()


async def test_an_invalid_item_ends_the_stream_after_the_earlier_results(panel: Ensemble) -> None:
    seen: list[str] = []

    async def consume() -> None:
        async for result in panel.stream(["a", "b", "c", 42, "e"], concurrency=2):
            seen.append(result.query_id)

    with pytest.raises(ItemError, match="item 3"):
        await consume()
    assert sorted(seen) == ["a", "b", "c"]


async def test_aclose_stops_the_stream_and_ends_iteration(panel: Ensemble) -> None:
    results = panel.stream(Source(), concurrency=2)
    first = await results.__anext__()
    await results.aclose()
    assert first.query_id.startswith("candidate")
    assert [r async for r in results] == []


async def test_stream_results_make_a_batch_result(panel: Ensemble) -> None:
    async with panel.stream([f"i{i}" for i in range(12)]) as results:
        collected = [r async for r in results]
    batch = BatchResult(verdicts=collected, critics=list(CRITICS), voting="majority")
    assert len(batch) == 12 and batch.reliability_alpha() is not None


# -- a critic that cannot make its call ---------------------------------------------------------


async def start_batch(ensemble: Ensemble, how: str) -> None:
    if how == "judge_many":
        await ensemble.judge_many(["a", "b"])
    else:
        ensemble.stream(["a", "b"])  # checked at once, not at the first iteration


@pytest.mark.parametrize("how", ["judge_many", "stream"])
async def test_a_critic_whose_endpoint_became_invalid_raises_before_anything_is_sent(
    sims: VendorServer, how: str
) -> None:
    critics = [
        Critic(name=name, model=name, vendor="custom", base_url=sims.url, api_key=KEY)
        for name in (*CRITICS[:2], "moved")
    ]
    critics[2].base_url = "http://127.0.0.1:99999"  # reassigned after construction's checks
    ensemble = Ensemble(critics)
    sims.reset_stats()
    with pytest.raises(ConfigError, match=r"critic 'moved': .*99999"):
        await start_batch(ensemble, how)
    assert sims.stats()["requests"] == 0


@pytest.mark.parametrize("how", ["judge_many", "stream"])
async def test_a_critic_whose_call_fails_to_start_gives_an_error_verdict_for_it_alone(
    sims: VendorServer, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    from cross_judge.transport import _openai_compat as core  # the chat adapter's session

    broken_url = sims.url.rstrip("/") + "/broken/v1"
    real = core.ready_session

    async def ready_session(base_url: str) -> Any:
        # A client library failing for one endpoint at call time, in a way no check
        # before the call could foresee.
        if base_url.rstrip("/") == broken_url:
            raise ValueError("this endpoint cannot be reached by the client library")
        return await real(base_url)

    monkeypatch.setattr(core, "ready_session", ready_session)
    critics = [
        Critic(name=name, model=name, vendor="custom", base_url=url, api_key=KEY)
        for name, url in ((CRITICS[0], sims.url), (CRITICS[1], sims.url), ("broken", broken_url))
    ]
    items = [f"isolation item {n}" for n in range(6)]
    async with Ensemble(critics) as ensemble:
        if how == "judge_many":
            results = (await ensemble.judge_many(items, concurrency=3)).verdicts
        else:
            results = [r async for r in ensemble.stream(items, concurrency=3)]
    assert sorted(r.query_id for r in results) == sorted(items)
    for result in results:
        healthy, broken = result.verdicts[:2], result.verdicts[2]
        assert all(v.is_valid for v in healthy)
        assert (broken.critic_id, broken.kind) == ("broken", "ERROR")
        assert broken.error_kind is not None and "cannot be reached" in (broken.error or "")
