"""Worker threads for blocking clients, a bounded number per client.

cross-judge 0.1's injected clients are synchronous objects: ``Critic(http_client=X)`` calls
``X.post(...)`` (:class:`~cross_judge.transport._http.SyncDuckSession`) and
``Reviewer(client=X)`` calls ``X.chat.completions.create(...)``. Each call runs in a worker
thread so that the event loop keeps running. A call that times out, or whose caller is
cancelled, is given up on, but its thread cannot be stopped: it stays blocked until the
client returns, if it ever does. Unbounded, every timed-out attempt left one more thread
behind (30 after 10 ``judge_sync`` calls with 2 retries each).

:func:`run_blocking` bounds them: a client holds at most :data:`THREADS_PER_CLIENT` threads
at once, *counting the threads of calls given up on until they return*. A call beyond that
waits for a thread instead of starting one, in line, and its caller's timeout bounds the
wait as it bounds any slow call. Clients are told apart by identity (``is``), so critics
and reviewers sharing one client object share its threads.

What this does not do: stop a blocked call (no thread can be), nor put a timeout on the
call itself (the caller's cancel scope does: the retry layer's per-attempt timeout for a
critic, ``Reviewer.timeout`` for a reviewer).
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import anyio.to_thread

from .._sync import loop_caller

__all__ = ["THREADS_PER_CLIENT", "calls_waiting", "run_blocking", "threads_in_use"]

T = TypeVar("T")

THREADS_PER_CLIENT = 16
"""The most worker threads one blocking client holds at once, blocked ones included."""

logger = logging.getLogger("cross_judge")


@dataclass(eq=False)
class _Waiter:
    """A call waiting for a thread: woken on its own event loop, from any thread."""

    event: anyio.Event
    wake: Callable[[Callable[[], object]], object]  # schedules a callback on its loop
    granted: bool = False  # a thread was handed to it


@dataclass(eq=False)
class _Threads:
    """One client's threads in use and the calls waiting for one."""

    client: object  # kept alive while it has threads in use, so its id stays its own
    busy: int = 0
    waiting: collections.deque[_Waiter] = field(default_factory=collections.deque)
    warned: bool = False


_lock = threading.Lock()
# id(client) -> its threads; an entry lives while the client has a thread in use or a call
# waiting for one, so no client is kept alive (nor its id reused) beyond that.
_by_client: dict[int, _Threads] = {}


async def run_blocking(client: object, func: Callable[..., T], *args: object) -> T:
    """``func(*args)``, a blocking call into ``client``, run in a worker thread: one of
    the at most :data:`THREADS_PER_CLIENT` that ``client`` holds at once.

    Waits in line for a thread when all of them are in use. If the caller is cancelled (a
    timeout), waiting or running, the cancellation propagates at once; a running call's
    thread is left to finish and is counted against ``client`` until it does. Whatever
    ``func`` raises is raised here.
    """
    await _acquire(client)
    job: _Job[T] = _Job(client, functools.partial(func, *args))
    try:
        return await anyio.to_thread.run_sync(job.run, abandon_on_cancel=True)
    except BaseException:
        job.abandon()
        raise


def threads_in_use(client: object) -> int:
    """The worker threads ``client`` holds now: its calls running, blocked or given up on."""
    with _lock:
        entry = _by_client.get(id(client))
        return entry.busy if entry is not None else 0


def calls_waiting(client: object) -> int:
    """The calls waiting for one of ``client``'s threads."""
    with _lock:
        entry = _by_client.get(id(client))
        return len(entry.waiting) if entry is not None else 0


class _Job(Generic[T]):
    """One call and its claim on a thread, released exactly once: by the thread when the
    call ends, or by the caller when it gives up before a thread has started the call
    (anyio may then never start it)."""

    __slots__ = ("_call", "_client", "_lock", "_state")

    def __init__(self, client: object, call: Callable[[], T]) -> None:
        self._client = client
        self._call = call
        self._lock = threading.Lock()
        self._state = "pending"  # -> "running" (by the thread) or "abandoned" (by the caller)

    def run(self) -> T:
        """In the worker thread: make the call, unless the caller has given up already."""
        with self._lock:
            if self._state == "abandoned":
                raise RuntimeError("the call was given up on before it started")  # unseen
            self._state = "running"
        try:
            return self._call()
        finally:
            _release(self._client)

    def abandon(self) -> None:
        with self._lock:
            started = self._state == "running"
            self._state = "abandoned"
        if not started:
            _release(self._client)


async def _acquire(client: object) -> None:
    with _lock:
        entry = _by_client.get(id(client))
        if entry is None:
            entry = _by_client[id(client)] = _Threads(client)
        if entry.busy < THREADS_PER_CLIENT and not entry.waiting:
            entry.busy += 1
            return
        waiter = _Waiter(anyio.Event(), loop_caller()[1])
        entry.waiting.append(waiter)
        warn, entry.warned = not entry.warned, True
    if warn:
        logger.warning(
            "%s: %d calls are running in this blocking client (or blocked in it, given up "
            "on); further calls wait for one of them to return (at most %d threads per "
            "client)",
            type(client).__name__,
            THREADS_PER_CLIENT,
            THREADS_PER_CLIENT,
        )
    try:
        await waiter.event.wait()
    except BaseException:
        with _lock:
            granted = waiter.granted
            if not granted:
                entry.waiting.remove(waiter)
                _forget_if_idle(client, entry)
        if granted:  # handed a thread as it was cancelled: pass it on
            _release(client)
        raise


def _release(client: object) -> None:
    """Give back one of ``client``'s threads: to the first call waiting whose event loop
    still runs, else to the pool. Called from any thread."""
    with _lock:
        entry = _by_client[id(client)]
        while entry.waiting:
            waiter = entry.waiting.popleft()
            try:
                waiter.wake(waiter.event.set)
            except RuntimeError:  # its event loop has ended (trio's RunFinishedError too)
                continue
            waiter.granted = True
            return
        entry.busy -= 1
        _forget_if_idle(client, entry)


def _forget_if_idle(client: object, entry: _Threads) -> None:
    """Drop ``client``'s entry once it has no thread in use and no call waiting (with
    ``_lock`` held): a new one starts from zero, which is what this one holds."""
    if entry.busy == 0 and not entry.waiting:
        del _by_client[id(client)]
