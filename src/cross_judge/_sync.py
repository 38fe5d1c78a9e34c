"""The one bridge from synchronous code to the async core.

Every ``*_sync`` method calls :func:`run_sync`. It runs the coroutine on a private event
loop in a background thread (an anyio blocking portal), started on first use, never at
import. That makes the same call work

* in a plain script, where no event loop runs;
* in a notebook cell or any code already inside a running event loop, where
  ``asyncio.run`` would fail and ``nest_asyncio`` would patch the loop (never done here):
  the calling thread simply waits for the portal thread;
* from many threads at once: they all share the portal, and so one warm connection pool.

Calling it from the portal's own thread (that is, from a coroutine the bridge is running)
would deadlock; it raises ``RuntimeError`` instead. Interrupting the wait (Ctrl-C) cancels
the coroutine in the portal. At interpreter exit the portal closes its connection pools
and stops.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

__all__ = ["run_sync", "shutdown"]

T = TypeVar("T")

_lock = threading.Lock()
_portal: BlockingPortal | None = None
_portal_cm: AbstractContextManager[BlockingPortal] | None = None
_portal_thread: int | None = None
_atexit_registered = False


def _get_portal() -> BlockingPortal:
    global _portal, _portal_cm, _portal_thread, _atexit_registered
    with _lock:
        if _portal is None:
            cm = start_blocking_portal(backend="asyncio")
            _portal = cm.__enter__()
            _portal_cm = cm
            _portal_thread = _portal.call(threading.get_ident)
            if not _atexit_registered:
                atexit.register(shutdown)
                _atexit_registered = True
        return _portal


def run_sync(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``await func(*args)`` to completion from synchronous code and return its result.

    Raises whatever the coroutine raises. ``KeyboardInterrupt`` while waiting cancels the
    coroutine before it propagates.

    Raises:
        RuntimeError: called from the bridge's own thread, i.e. from a coroutine this
            bridge is running, where waiting would deadlock; ``await`` instead.
    """
    portal = _get_portal()
    if threading.get_ident() == _portal_thread:
        raise RuntimeError(
            "a cross-judge *_sync method was called from a coroutine that the sync bridge "
            "is running, which would deadlock; await the async method instead"
        )
    future = portal.start_task_soon(func, *args)
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise
    except CancelledError as exc:  # the portal was shut down under us
        raise RuntimeError("cross-judge's sync bridge was shut down during the call") from exc


async def _close_pools() -> None:
    from .transport import aclose_sessions

    await aclose_sessions()


def shutdown() -> None:
    """Close the bridge's connection pools and stop its thread (idempotent).

    Called automatically at interpreter exit; call it yourself to release sockets early.
    The next ``*_sync`` call starts a fresh bridge.
    """
    global _portal, _portal_cm, _portal_thread
    with _lock:
        portal, cm = _portal, _portal_cm
        _portal = _portal_cm = _portal_thread = None
    if portal is None or cm is None:
        return
    try:
        portal.call(_close_pools)
    finally:
        cm.__exit__(None, None, None)
