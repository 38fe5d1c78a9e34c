"""Pooled clients, one per event loop and endpoint, shared by every critic on it, and
closed when their event loop ends.

Connection pools belong to an event loop: an aiohttp session made on one loop cannot be
used on another. So clients are kept per running loop (asyncio) or per run (trio, keyed
by its root task), and within it per endpoint origin (``scheme://host:port``): three
critics on the same vendor share one pool and its warm connections.

Two kinds of client live here, keyed the same way and closed together:

* ``"http"``: the :class:`~cross_judge.transport.HTTPSession` of the chat-completions path
  (:func:`shared_session`; :func:`ready_session` also sets it up, off the event loop);
* ``"anthropic"``: the Anthropic SDK's pooled client of :mod:`._anthropic`, registered
  through :func:`shared_client`.

Nothing is created at import or construction time; the first call on a loop makes the
client, and its heavy part (importing the HTTP library, loading the CA bundle) runs in a
worker thread, so that it never stalls the loop. :func:`aclose_sessions` closes them,
every kind (``Critic.aclose()`` and ``async with`` call it). Closing is optional: the
clients of a loop are closed when that loop ends, so a script that never closes anything
exits without aiohttp's "Unclosed client session" report or a ``ResourceWarning``. The
first client made on a loop arranges it, once per loop (later calls only look the client up):

* **asyncio** (``asyncio.run``, ``anyio.run``, pytest's loops, the sync bridge of
  :mod:`cross_judge._sync`): an async generator, stepped once to its ``yield`` so that the
  loop tracks it, waits there for the loop's life. When the loop ends,
  ``loop.shutdown_asyncgens()`` (which ``asyncio.run`` and ``anyio.run`` call after the
  main task, before closing the loop) closes it, and its ``finally`` closes the clients.
  Unlike a background task it appears in no ``asyncio.all_tasks()`` and is never
  "destroyed while pending".
* **trio** (``trio.run``, ``anyio.run(..., backend="trio")``): a system task sleeps until
  trio cancels the system tasks at the end of the run, then closes the clients in a
  shielded ``finally``.
* **interpreter exit**: clients of an asyncio loop that never ended (a notebook kernel's
  loop, which is stopped but not closed; ``loop.run_until_complete()`` without
  ``asyncio.run``) are closed by running that loop once more, from an ``atexit`` handler.

Not covered: a loop closed by hand (``loop.close()``) without ``shutdown_asyncgens()`` first
can run nothing any more; close its clients before (``await aclose_sessions()``).
A failure while closing at loop end is logged at DEBUG and otherwise ignored.

After ``os.fork()`` the child forgets the parent's clients without closing them: their
sockets are shared with the parent, which keeps using them. The child's first call opens
its own.

Nothing here holds an API key: keys travel with each call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import os
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit

from ._http import AiohttpSession, HTTPSession, HttpxSession

__all__ = [
    "Closeable",
    "aclose_sessions",
    "endpoint_key",
    "ready_session",
    "shared_client",
    "shared_session",
]

logger = logging.getLogger("cross_judge.transport")


class Closeable(Protocol):
    """A pooled client: something with connections to release."""

    async def aclose(self) -> None:
        """Release the connections (idempotent)."""
        ...


C = TypeVar("C", bound=Closeable)


class _LoopClients(dict[tuple[str, str], Closeable]):
    """One loop's clients, by ``(kind, endpoint origin)``, and what closes them at its end.

    ``closer`` is the asyncio loop's closing generator while it waits (kept here because the
    loop holds its async generators only weakly), else ``None``.
    """

    __slots__ = ("closer",)

    def __init__(self) -> None:
        super().__init__()
        self.closer: AsyncGenerator[None, None] | None = None


_lock = threading.Lock()
# loop token -> its clients
_by_loop: weakref.WeakKeyDictionary[Any, _LoopClients] = weakref.WeakKeyDictionary()
_hooks_registered = False
# A forked child's copy of the parent's registry: never used nor closed (the sockets are
# the parent's), and kept referenced so that nothing in it runs a finalizer in the child.
_left_by_parent: list[object] = []


@functools.lru_cache(maxsize=256)
def endpoint_key(base_url: str) -> str:
    """The pool key of a base URL: its origin, lower-cased (paths share a pool)."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}"


def loop_token() -> tuple[Any, str]:
    """The running event loop (asyncio) or run (trio, its root task), and the library's
    name: what loop-bound state (pools, limiters, a shared limit's client) is kept per."""
    try:
        return asyncio.get_running_loop(), "asyncio"
    except RuntimeError:
        pass
    import trio  # not asyncio, so trio: the only other backend anyio runs on

    return trio.lowlevel.current_root_task(), "trio"


def shared_client(kind: str, base_url: str, factory: Callable[[str], C]) -> C:
    """The ``kind`` client for ``base_url``'s origin on the running event loop.

    Made on first use by ``factory(library)``, where ``library`` is ``"asyncio"`` or
    ``"trio"``; the factory runs under a lock, so it must only build objects (no I/O).
    Each ``kind`` must always be made by the same factory: the result is cast to its type.
    The first client of a loop arranges for the loop's clients to be closed when it ends.
    """
    token, library = loop_token()
    key = (kind, endpoint_key(base_url))
    with _lock:
        clients = _by_loop.get(token)
        new_loop = clients is None
        if clients is None:
            clients = _by_loop[token] = _LoopClients()
        client = clients.get(key)
        if client is None:
            client = factory(library)
            clients[key] = client
    if new_loop:
        _close_when_run_ends(clients, library)
    return cast("C", client)


def _new_session(library: str) -> AiohttpSession | HttpxSession:
    return AiohttpSession() if library == "asyncio" else HttpxSession()


def shared_session(base_url: str) -> HTTPSession:
    """The HTTP session for ``base_url`` on the running event loop, created on first use."""
    return shared_client("http", base_url, _new_session)


async def ready_session(base_url: str) -> HTTPSession:
    """:func:`shared_session`, set up: its HTTP library imported and its client built in
    worker threads (:meth:`AiohttpSession.prepare <._http.AiohttpSession.prepare>`), so
    that the first call of a process or loop does not stall the event loop. Concurrent
    first calls share one set-up. Once set up, it costs a dictionary lookup and an
    attribute check."""
    session = shared_client("http", base_url, _new_session)
    await session.prepare()
    return session


async def aclose_sessions(base_urls: list[str] | None = None) -> None:
    """Close the running loop's clients, of every kind, for the origins of ``base_urls``
    (all of them for ``None``).

    A closed client is forgotten; the next call on that endpoint opens a fresh one. Every
    client is closed even if one fails to; the first failure is raised afterwards.
    """
    token, _ = loop_token()
    origins = None if base_urls is None else {endpoint_key(u) for u in base_urls}
    with _lock:
        clients = _by_loop.get(token)
        closing = [] if clients is None else _take(clients, origins)
    failure = await _close_all(closing)
    if failure is not None:
        raise failure


def _take(clients: _LoopClients, origins: set[str] | None = None) -> list[Closeable]:
    """Remove and return the clients of ``origins`` (all for ``None``); hold ``_lock``."""
    keys = [k for k in clients if origins is None or k[1] in origins]
    return [clients.pop(k) for k in keys]


async def _close_all(closing: list[Closeable]) -> Exception | None:
    """Close every client in ``closing``; return the first failure, if any."""
    failure: Exception | None = None
    for client in closing:
        try:
            await client.aclose()
        except Exception as exc:
            failure = failure or exc
    return failure


async def _close_quietly(clients: _LoopClients) -> None:
    """Close all of a loop's clients as its run ends, where a failure has nobody to go to."""
    with _lock:
        closing = _take(clients)
    failure = await _close_all(closing)
    if failure is not None:
        logger.debug("closing a pooled client at the end of its event loop failed: %r", failure)


# -- closing when the loop ends ---------------------------------------------------------------


def _close_when_run_ends(clients: _LoopClients, library: str) -> None:
    """Arrange, once per loop, for ``clients`` to be closed when their loop or run ends."""
    _register_process_hooks()
    if library == "trio":
        import trio

        try:
            trio.lowlevel.spawn_system_task(
                _close_at_trio_run_end, clients, name="cross-judge: close pooled clients"
            )
        except RuntimeError:  # the run is already ending (system nursery closed)
            logger.debug("a trio run that is ending cannot close its pooled clients")
        return
    if sys.get_asyncgen_hooks().firstiter is None:
        return  # a loop that tracks no async generators: interpreter exit closes them
    closer = _close_at_asyncio_loop_end(clients)
    # Calling asend() registers the generator with the running loop (its firstiter hook);
    # one step runs it to its yield, where it waits for shutdown_asyncgens() to close it.
    with contextlib.suppress(StopIteration):  # how a step that reached the yield returns
        closer.asend(None).send(None)
    clients.closer = closer


async def _close_at_asyncio_loop_end(clients: _LoopClients) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        # The generator holds its loop (as the loop's finalizer hook): let both go.
        clients.closer = None
        await _close_quietly(clients)


async def _close_at_trio_run_end(clients: _LoopClients) -> None:
    import trio

    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            await _close_quietly(clients)


def _register_process_hooks() -> None:
    """On first use, not at import: close at interpreter exit, forget across fork()."""
    global _hooks_registered
    with _lock:
        if _hooks_registered:
            return
        _hooks_registered = True
    atexit.register(_close_at_exit)
    if hasattr(os, "register_at_fork"):  # not on Windows
        os.register_at_fork(after_in_child=_forget_after_fork)


def _close_at_exit() -> None:
    """Close the clients of asyncio loops still open at exit by running each loop once more.

    Loops running in another thread (the sync bridge's, stopped by its own exit handler)
    and closed loops (see the module docstring) are left alone; trio runs have all ended.
    """
    with _lock:
        pending = [(token, clients) for token, clients in _by_loop.items() if clients]
    for loop, clients in pending:
        if not isinstance(loop, asyncio.AbstractEventLoop):
            continue
        if loop.is_closed() or loop.is_running():
            continue
        closer = clients.closer
        try:
            # Through the closing generator when there is one, so that it ends too and
            # leaves nothing for the garbage collector to finalise on the loop.
            loop.run_until_complete(_close_quietly(clients) if closer is None else closer.aclose())
        except Exception as exc:  # at exit there is nobody to raise to
            logger.debug("closing pooled clients at interpreter exit failed: %r", exc)


def _forget_after_fork() -> None:
    """In a forked child: start from an empty registry; the parent's clients stay unused."""
    global _lock, _by_loop
    _left_by_parent.append(_by_loop)
    _by_loop = weakref.WeakKeyDictionary()
    _lock = threading.Lock()  # the parent may have held it while forking
