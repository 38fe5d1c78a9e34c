"""Fault-injection fixtures: a misbehaving vendor on 127.0.0.1 and leak accounting.

Every test here drives the real stack (Critic -> pooled HTTP client or vendor SDK ->
socket -> the local :class:`~cross_judge.testing.VendorServer`) into one fault and then
checks the process is as it was: no task, socket, file descriptor or thread left behind.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
import sniffio

from cross_judge.testing import VendorServer
from cross_judge.transport import aclose_sessions

from ..waits import SAFETY_NET_S

KEY = "sk-faults-test-key-0a1b2c3d4e5f"


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(api_key=KEY) as srv:
        yield srv


def open_fds() -> dict[int, str]:
    """This process's open file descriptors and what each points at (Linux /proc)."""
    fds: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed between listdir and readlink (or the listing's own fd)
            continue
    return fds


def socket_count() -> int:
    return sum(target.startswith("socket:") for target in open_fds().values())


def wait_until(predicate: Callable[[], bool], seconds: float = SAFETY_NET_S) -> bool:
    """Poll ``predicate`` (bounded): True as soon as it holds, False after ``seconds``.

    The default is the suite's safety net: what is awaited normally takes milliseconds,
    and no load on the machine comes near it.
    """
    end = time.monotonic() + seconds
    while True:
        if predicate():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


_POOL_WORKERS = ("Trio thread ", "AnyIO worker thread", "asyncio_")


@dataclass
class Snapshot:
    """What the process held before a test: fds, threads and (asyncio) tasks."""

    fds: dict[int, str]
    threads: set[int]
    notes: list[str] = field(default_factory=list)

    @classmethod
    def take(cls) -> Snapshot:
        return cls(open_fds(), {t.ident or 0 for t in threading.enumerate()})

    def new_fds(self) -> dict[int, str]:
        now = open_fds()
        return {fd: t for fd, t in now.items() if self.fds.get(fd) != t}

    def new_threads(self) -> list[str]:
        """Threads started since the snapshot, except idle workers of the async
        libraries' own thread pools (trio's thread cache, anyio's and asyncio's executors
        keep a finished worker alive for a while to reuse it; they hold no socket)."""
        return [
            t.name
            for t in threading.enumerate()
            if (t.ident or 0) not in self.threads
            and t.is_alive()
            and not t.name.startswith(_POOL_WORKERS)
        ]


async def close_pools_and_check_tasks() -> list[str]:
    """Close the loop's pooled clients; return the tasks still running besides this one.

    Under trio every task belongs to a nursery that has already exited, so none can be
    left; asyncio tasks are listed after the pools are closed.
    """
    await aclose_sessions()
    if sniffio.current_async_library() != "asyncio":
        return []
    for _ in range(3):  # let cancelled callbacks finish
        await asyncio.sleep(0)
    me = asyncio.current_task()
    return [
        repr(t)
        for t in asyncio.all_tasks()
        if t is not me and not t.done() and not _is_test_runner(t)
    ]


def _is_test_runner(task: asyncio.Task[object]) -> bool:
    """anyio's pytest plugin runs each test from a task of its own (TestRunner)."""
    return "TestRunner" in getattr(task.get_coro(), "__qualname__", "")


@pytest.fixture
def leaks() -> Iterator[Snapshot]:
    """Fail the test if it leaves an fd (socket or file) or a thread behind.

    Tests call :func:`close_pools_and_check_tasks` at the end of their async body (pools
    are per event loop, so closing them is the caller's job, as it is a user's); this
    fixture then checks, with a bounded wait for sockets the OS is still tearing down.
    """
    before = Snapshot.take()
    yield before
    if not wait_until(lambda: not before.new_fds(), 1.0):
        # Only an object nobody can reach any more, and that the collector would close,
        # may still hold one (gc.collect costs ~0.3 s here, so it is the last resort).
        gc.collect()
    assert wait_until(lambda: not before.new_fds()), f"leaked fds: {before.new_fds()}"
    assert wait_until(lambda: not before.new_threads()), f"leaked threads: {before.new_threads()}"
