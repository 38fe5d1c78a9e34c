"""Pooled clients, one per event loop and endpoint, shared by every critic on it.

Connection pools belong to an event loop: an aiohttp session made on one loop cannot be
used on another. So clients are kept per running loop (asyncio) or per run (trio, keyed
by its root task), and within it per endpoint origin (``scheme://host:port``): three
critics on the same vendor share one pool and its warm connections.

Two kinds of client live here, keyed the same way and closed together:

* ``"http"``: the :class:`~cross_judge.transport.HTTPSession` of the chat-completions path
  (:func:`shared_session`);
* ``"anthropic"``: the Anthropic SDK's pooled client of :mod:`.anthropic`, registered
  through :func:`shared_client`.

Nothing is created at import or construction time; the first call on a loop makes the
client. :func:`aclose_sessions` closes them, every kind (``Critic.aclose()`` and
``async with`` call it). The sync bridge (:mod:`cross_judge._sync`) closes its loop's
clients at exit. A loop that ends without closing them leaks nothing but sockets the OS
reclaims; close them to avoid aiohttp's "Unclosed client session" warning.

Nothing here holds an API key: keys travel with each call.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit

from ._http import AiohttpSession, HTTPSession, HttpxSession

__all__ = ["Closeable", "aclose_sessions", "endpoint_key", "shared_client", "shared_session"]


class Closeable(Protocol):
    """A pooled client: something with connections to release."""

    async def aclose(self) -> None:
        """Release the connections (idempotent)."""
        ...


C = TypeVar("C", bound=Closeable)

_lock = threading.Lock()
# loop token -> {(kind, endpoint origin): client}
_by_loop: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], Closeable]] = (
    weakref.WeakKeyDictionary()
)


@functools.lru_cache(maxsize=256)
def endpoint_key(base_url: str) -> str:
    """The pool key of a base URL: its origin, lower-cased (paths share a pool)."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}"


def _loop_token() -> tuple[Any, str]:
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
    """
    token, library = _loop_token()
    key = (kind, endpoint_key(base_url))
    with _lock:
        clients = _by_loop.setdefault(token, {})
        client = clients.get(key)
        if client is None:
            client = factory(library)
            clients[key] = client
        return cast("C", client)


def _new_session(library: str) -> HTTPSession:
    return AiohttpSession() if library == "asyncio" else HttpxSession()


def shared_session(base_url: str) -> HTTPSession:
    """The HTTP session for ``base_url`` on the running event loop, created on first use."""
    return shared_client("http", base_url, _new_session)


async def aclose_sessions(base_urls: list[str] | None = None) -> None:
    """Close the running loop's clients, of every kind, for the origins of ``base_urls``
    (all of them for ``None``).

    A closed client is forgotten; the next call on that endpoint opens a fresh one. Every
    client is closed even if one fails to; the first failure is raised afterwards.
    """
    token, _ = _loop_token()
    origins = None if base_urls is None else {endpoint_key(u) for u in base_urls}
    with _lock:
        clients = _by_loop.get(token, {})
        keys = [k for k in clients if origins is None or k[1] in origins]
        closing = [clients.pop(k) for k in keys]
    failure: Exception | None = None
    for client in closing:
        try:
            await client.aclose()
        except Exception as exc:
            failure = failure or exc
    if failure is not None:
        raise failure
