"""Leaving ``stream()`` early stops every call it has in flight, under asyncio and trio alike.

A panel of three critics at the default concurrency (32 items, so 96 calls in flight)
against a vendor whose every request after the first per model hangs: only stopping the
stream can end them. Whichever way the consumer leaves (``break`` out of a bare ``async
for``; ``break`` while still holding the stream, then closing the ensemble; leaving ``async
with`` on the ensemble or on the stream; the stream finalised by the garbage collector in
another thread), the vendor must see every request dropped (its in-flight counter back to
0, waited for by polling up to 10 s, never a timing assertion), no new request afterwards,
and nothing left open: no socket, fd, task or thread (the ``leaks`` fixture).
"""

from __future__ import annotations

import gc
import itertools
import sys
from collections.abc import Callable, Iterator

import anyio
import pytest

from cross_judge import Critic, Ensemble
from cross_judge.batch._runner import DEFAULT_CONCURRENCY, ResultStream
from cross_judge.testing import Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY, Snapshot, close_pools_and_check_tasks, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="/proc"),
]

WAIT_S = SAFETY_NET_S
"""Upper bound for waits that normally take milliseconds (a failure, not a hang)."""

ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fits"}'
IN_FLIGHT = DEFAULT_CONCURRENCY * 3  # items in flight x critics


def items() -> Iterator[str]:
    """Endless: only stopping the stream ends the work."""
    return (f"stream-stop item {n}" for n in itertools.count())


@pytest.fixture
def models(server: VendorServer, model: str) -> Iterator[list[str]]:
    """Three models whose first request answers and every later one hangs."""
    names = [f"{model}-{n}" for n in range(3)]
    assert wait_until(lambda: server.stats()["in_flight"] == 0), "calls left in flight"
    server.reset_stats()
    for name in names:
        server.script(name, Reply.content(ANSWER))
        server.always(name, Reply.hang())
    yield names
    for name in names:
        server.always(name, None)


def panel(server: VendorServer, models: list[str]) -> Ensemble:
    return Ensemble(
        [
            Critic(name=m, model=m, vendor="custom", base_url=server.url, api_key=KEY, timeout=60)
            for m in models
        ]
    )


async def eventually(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate`` until it holds; fail after ``WAIT_S`` (the server's counters have
    no event to wait on)."""
    with anyio.fail_after(WAIT_S):
        while not predicate():  # noqa: ASYNC110 - nothing to wait on but the predicate
            await anyio.sleep(0.005)


async def take_first_then_fill(server: VendorServer, stream: ResultStream) -> None:
    """Receive the first result, then wait until the stream has refilled every slot."""
    async for result in stream:
        assert result.consensus == "KEEP"
        await eventually(lambda: server.stats()["in_flight"] == IN_FLIGHT)
        return
    raise AssertionError("the stream ended before its first result")


async def assert_every_call_dropped_and_none_sent_after(server: VendorServer) -> None:
    sent = server.stats()["requests"]
    await eventually(lambda: server.stats()["in_flight"] == 0)
    assert server.stats()["requests"] == sent  # nothing new was started after the stop


async def test_breaking_out_of_a_bare_async_for_drops_every_call_in_flight(
    server: VendorServer, models: list[str], leaks: Snapshot
) -> None:
    ensemble = panel(server, models)
    async for result in ensemble.stream(items()):
        assert result.consensus == "KEEP"
        await eventually(lambda: server.stats()["in_flight"] == IN_FLIGHT)
        break
    await assert_every_call_dropped_and_none_sent_after(server)
    assert await close_pools_and_check_tasks() == []


async def test_closing_the_ensemble_stops_a_stream_still_held_after_a_break(
    server: VendorServer, models: list[str], leaks: Snapshot
) -> None:
    ensemble = panel(server, models)
    results = ensemble.stream(items())
    await take_first_then_fill(server, results)
    # `results` is still referenced, so nothing has stopped it yet: closing the ensemble
    # must, before it closes the connections under the calls.
    await ensemble.aclose()
    await assert_every_call_dropped_and_none_sent_after(server)
    assert [r async for r in results] == []  # a stopped stream just ends
    assert await close_pools_and_check_tasks() == []


async def test_leaving_async_with_on_the_ensemble_stops_its_streams(
    server: VendorServer, models: list[str], leaks: Snapshot
) -> None:
    async with panel(server, models) as ensemble:
        results = ensemble.stream(items())
        await take_first_then_fill(server, results)
    await assert_every_call_dropped_and_none_sent_after(server)
    del results
    assert await close_pools_and_check_tasks() == []


async def test_leaving_async_with_on_the_stream_drops_every_call_in_flight(
    server: VendorServer, models: list[str], leaks: Snapshot
) -> None:
    ensemble = panel(server, models)
    async with ensemble.stream(items()) as results:
        await take_first_then_fill(server, results)
    await assert_every_call_dropped_and_none_sent_after(server)
    assert await close_pools_and_check_tasks() == []


async def test_a_stream_finalised_in_another_thread_still_stops_its_calls(
    server: VendorServer, models: list[str], leaks: Snapshot
) -> None:
    ensemble = panel(server, models)
    results = ensemble.stream(items())
    await take_first_then_fill(server, results)
    # In a reference cycle, the stream is freed only by the collector, which may run in
    # any thread: here a worker thread, while this loop waits.
    cycle: list[object] = [results]
    cycle.append(cycle)
    del results, cycle
    await anyio.to_thread.run_sync(gc.collect)
    await assert_every_call_dropped_and_none_sent_after(server)
    assert await close_pools_and_check_tasks() == []
