"""Worker threads for blocking clients: at most THREADS_PER_CLIENT per client, given up or not.

:func:`cross_judge.transport._blocking.run_blocking` on asyncio and trio, with clients that
block on events the tests set: every outcome is decided by an event, never by a timer. The
end-to-end behaviour (Critic and Reviewer with a client that never returns) is in
``tests/faults/test_blocking_clients.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import anyio
import anyio.to_thread
import pytest

from cross_judge.transport._blocking import (
    THREADS_PER_CLIENT,
    calls_waiting,
    run_blocking,
    threads_in_use,
)

from ...waits import SAFETY_NET_S

pytestmark = pytest.mark.anyio

GENEROUS_S = SAFETY_NET_S


class Client:
    """A blocking client; each call waits for :attr:`release` (set at teardown at the
    latest), and counts itself while inside."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.inside = 0
        self.entered = 0
        self._lock = threading.Lock()

    def call(self) -> str:
        with self._lock:
            self.inside += 1
            self.entered += 1
        try:
            assert self.release.wait(GENEROUS_S)
            return "answer"
        finally:
            with self._lock:
                self.inside -= 1


@pytest.fixture
def client() -> Iterator[Client]:
    made = Client()
    yield made
    made.release.set()
    assert _eventually(lambda: threads_in_use(made) == 0)


def _eventually(predicate: Callable[[], bool]) -> bool:
    end = time.monotonic() + GENEROUS_S
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


async def _until(predicate: Callable[[], bool]) -> None:
    with anyio.fail_after(GENEROUS_S):
        while not predicate():  # noqa: ASYNC110 - worker threads change what it reads
            await anyio.sleep(0.01)


async def test_a_call_returns_what_the_client_returned_and_gives_its_thread_back(
    client: Client,
) -> None:
    client.release.set()
    assert await run_blocking(client, client.call) == "answer"
    assert threads_in_use(client) == 0


async def test_an_exception_from_the_client_propagates_and_gives_its_thread_back() -> None:
    def broken() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await run_blocking(broken, broken)
    assert threads_in_use(broken) == 0


async def test_a_call_given_up_on_keeps_its_thread_counted_until_the_client_returns(
    client: Client,
) -> None:
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(run_blocking, client, client.call)
            await _until(lambda: client.inside == 1)
            scope.cancel()  # the caller gives up (a timeout would do the same)
    assert threads_in_use(client) == 1  # the thread is still blocked in the client
    client.release.set()
    await _until(lambda: threads_in_use(client) == 0)


async def test_calls_beyond_the_cap_wait_in_line_and_run_as_threads_come_back(
    client: Client,
) -> None:
    results: list[str] = []

    async def ask() -> None:
        results.append(await run_blocking(client, client.call))

    async with anyio.create_task_group() as group:
        for _ in range(THREADS_PER_CLIENT + 3):
            group.start_soon(ask)
        await _until(lambda: client.inside == THREADS_PER_CLIENT and calls_waiting(client) == 3)
        assert threads_in_use(client) == THREADS_PER_CLIENT
        client.release.set()
    assert results == ["answer"] * (THREADS_PER_CLIENT + 3)
    assert client.entered == THREADS_PER_CLIENT + 3
    assert (threads_in_use(client), calls_waiting(client)) == (0, 0)


async def test_a_call_cancelled_while_waiting_leaves_the_line_without_taking_a_thread(
    client: Client,
) -> None:
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            for _ in range(THREADS_PER_CLIENT + 1):
                group.start_soon(run_blocking, client, client.call)
            await _until(lambda: client.inside == THREADS_PER_CLIENT and calls_waiting(client) == 1)
            scope.cancel()
    assert calls_waiting(client) == 0
    assert client.entered == THREADS_PER_CLIENT  # the waiting call never ran
    client.release.set()
    await _until(lambda: threads_in_use(client) == 0)


async def test_a_call_cancelled_before_its_thread_started_gives_the_thread_back(
    client: Client,
) -> None:
    # anyio's own thread limiter, down to one token held by an unrelated blocked thread:
    # the call gets a thread of the client's but waits at anyio's limiter, then is cancelled.
    limiter = anyio.to_thread.current_default_thread_limiter()
    tokens, limiter.total_tokens = limiter.total_tokens, 1
    other = threading.Event()
    try:
        async with anyio.create_task_group() as outer:
            outer.start_soon(anyio.to_thread.run_sync, other.wait)
            await _until(lambda: limiter.borrowed_tokens == 1)
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(run_blocking, client, client.call)
                    await _until(lambda: threads_in_use(client) == 1)
                    scope.cancel()
            assert threads_in_use(client) == 0  # never started: given back at once
            assert client.entered == 0
            other.set()
    finally:
        other.set()
        limiter.total_tokens = tokens


async def test_different_clients_have_threads_of_their_own(client: Client) -> None:
    other = Client()
    other.release.set()
    async with anyio.create_task_group() as group:
        for _ in range(THREADS_PER_CLIENT):
            group.start_soon(run_blocking, client, client.call)
        await _until(lambda: client.inside == THREADS_PER_CLIENT)
        assert await run_blocking(other, other.call) == "answer"  # not in client's line
        client.release.set()
