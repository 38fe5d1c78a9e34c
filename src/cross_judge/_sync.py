"""The one bridge from synchronous code to the async core.

Every ``*_sync`` method calls :func:`run_sync`. It runs the coroutine on a private event
loop in a background thread (an anyio blocking portal), started on first use, never at
import. That makes the same call work

* in a plain script, where no event loop runs;
* in a notebook cell or any code already inside a running event loop, where
  ``asyncio.run`` would fail and ``nest_asyncio`` would patch the loop (never done here):
  the calling thread simply waits for the portal thread;
* from many threads at once: they all share the portal, and so one warm connection pool;
* in a child process made by ``os.fork()`` (a ``multiprocessing`` pool on Linux): the
  parent's portal thread does not exist there, so the child starts its own bridge on its
  first call, with its own connections (the parent's are left to the parent);
* at interpreter exit, from an ``atexit`` handler: a bridge started then would never be
  stopped, no thread pool can start any more (and Python 3.12 refuses any new thread), so
  each call runs on a fresh event loop in the calling thread, closed with its connections
  when the call returns.

Calling it from the portal's own thread (that is, from a coroutine the bridge is running)
would deadlock; it raises ``RuntimeError`` instead. Interrupting the wait (Ctrl-C) cancels
the coroutine in the portal. At interpreter exit the bridge stops; its loop's connection
pools close as that loop ends (:mod:`cross_judge.transport._pool`).

It also names the event loop a thread runs (:func:`running_loop`, :func:`loop_caller`), for
the code that wakes a task of one loop from another thread (a budget shared by loops, the
threads of a blocking client, a stream stopped by the garbage collector).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

__all__ = ["loop_caller", "run_sync", "running_loop", "shutdown"]

T = TypeVar("T")
P = ParamSpec("P")

_STOP_TIMEOUT_S = 30.0
"""Longest wait for the bridge's thread to end once its calls are done (it is a daemon)."""


@dataclass(frozen=True)
class _Bridge:
    portal: BlockingPortal
    thread: threading.Thread
    thread_id: int


_lock = threading.Lock()
_bridge: _Bridge | None = None
_hooks_registered = False
# A forked child's copy of the parent's bridge, whose thread does not exist in the child:
# never used, and kept referenced so that nothing in it runs a finalizer in the child.
_left_by_parent: list[_Bridge] = []


def _start_bridge() -> _Bridge:
    started: Future[tuple[BlockingPortal, int]] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            started.set_result((portal, threading.get_ident()))
            await portal.sleep_until_stopped()

    def main() -> None:
        try:
            anyio.run(serve, backend="asyncio")
        except BaseException as exc:  # reported to the starting thread; a thread must not raise
            if not started.done():
                started.set_exception(exc)

    # A daemon thread run by hand, not anyio's start_blocking_portal(): that context manager
    # would, when garbage collected without being exited (in a forked child, or at the end
    # of an interpreter whose exit handlers had already run), block forever on a portal
    # whose thread no longer runs.
    thread = threading.Thread(target=main, name="cross-judge-sync-bridge", daemon=True)
    thread.start()
    portal, thread_id = started.result()
    return _Bridge(portal, thread, thread_id)


def _get_bridge() -> _Bridge:
    global _bridge, _hooks_registered
    with _lock:
        if _bridge is None:
            _bridge = _start_bridge()
            if not _hooks_registered:
                atexit.register(_shutdown_at_exit)
                if hasattr(os, "register_at_fork"):  # not on Windows
                    os.register_at_fork(after_in_child=_forget_after_fork)
                _hooks_registered = True
        return _bridge


def run_sync(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``await func(*args)`` to completion from synchronous code and return its result.

    Raises whatever the coroutine raises. ``KeyboardInterrupt`` while waiting cancels the
    coroutine before it propagates. In a forked child the first call starts the child's
    own bridge; at interpreter exit (from an ``atexit`` handler) the call runs on a fresh
    loop in the calling thread instead of the bridge (see the module docstring).

    Raises:
        RuntimeError: called from the bridge's own thread, i.e. from a coroutine this
            bridge is running, where waiting would deadlock; ``await`` instead.
    """
    if not threading.main_thread().is_alive():
        # The interpreter is exiting (this is an atexit handler, or a daemon thread after
        # the main thread ended). A fresh loop here, closed when the call returns.
        return _run_in_this_thread(func, *args)
    bridge = _get_bridge()
    if threading.get_ident() == bridge.thread_id:
        raise RuntimeError(
            "a cross-judge *_sync method was called from a coroutine that the sync bridge "
            "is running, which would deadlock; await the async method instead"
        )
    future = bridge.portal.start_task_soon(func, *args)
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise
    except CancelledError as exc:  # the portal was shut down under us
        raise RuntimeError("cross-judge's sync bridge was shut down during the call") from exc


def _run_in_this_thread(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run the call on a fresh event loop in this thread; close the loop and its
    connection pools (``shutdown_asyncgens``, see :mod:`~cross_judge.transport._pool`)
    before returning."""

    async def call() -> T:
        return await func(*args)

    # Not asyncio.run(): at exit its shutdown_default_executor() needs a new thread.
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_CallerThreadExecutor())
    try:
        return loop.run_until_complete(call())
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class _CallerThreadExecutor(ThreadPoolExecutor):
    """Runs each job at once in the submitting thread; it never starts a thread.

    At interpreter exit no thread pool can start ("can't register atexit after
    shutdown"), yet asyncio hands blocking work to its loop's default executor: aiohttp's
    DNS lookups, the anthropic SDK's platform probe. The loop waits for them instead.
    """

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def shutdown() -> None:
    """Stop the bridge once the calls in flight have finished, closing its connection
    pools (idempotent).

    Called automatically at interpreter exit; call it yourself to release sockets early.
    The next ``*_sync`` call starts a fresh bridge.
    """
    _stop(cancel_calls=False)


def _shutdown_at_exit() -> None:
    # Nobody is left to wait for a call still in flight (from a daemon thread): cancel it.
    _stop(cancel_calls=True)


def _stop(*, cancel_calls: bool) -> None:
    global _bridge
    with _lock:
        bridge = _bridge
        if bridge is None:
            return
        if threading.get_ident() == bridge.thread_id:
            raise RuntimeError(
                "cross-judge's sync bridge cannot be shut down from a coroutine it is running"
            )
        _bridge = None
    with contextlib.suppress(RuntimeError):  # the portal had already stopped
        bridge.portal.call(bridge.portal.stop, cancel_calls)
    # The loop ends after the portal: its connection pools close then (see _pool).
    bridge.thread.join(_STOP_TIMEOUT_S)


def _forget_after_fork() -> None:
    """In a forked child, where the bridge's thread does not exist: start afresh on the
    next call."""
    global _bridge, _lock
    if _bridge is not None:
        _left_by_parent.append(_bridge)
    _bridge = None
    _lock = threading.Lock()  # another thread may have held it while the parent forked


def running_loop() -> object | None:
    """The event loop running in this thread: asyncio's loop, or the trio run's
    ``TrioToken`` (one object per run); ``None`` when none runs here. Never raises."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")  # a trio run has imported it; no run without it
    if trio is None:
        return None
    try:
        token: object = trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
    return token


def loop_caller() -> tuple[object, Callable[[Callable[[], object]], object]]:
    """The event loop running in this thread (as :func:`running_loop` names it) and a
    function that schedules a callback on it from any thread (asyncio's
    ``call_soon_threadsafe``, trio's ``run_sync_soon``). Once the loop has ended, that
    function raises ``RuntimeError`` (trio's ``RunFinishedError`` is one).

    Raises:
        RuntimeError: no event loop runs in this thread.
    """
    loop = running_loop()
    if loop is None:
        raise RuntimeError("no event loop runs in this thread")
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop, loop.call_soon_threadsafe
    return loop, loop.run_sync_soon  # type: ignore[attr-defined]
