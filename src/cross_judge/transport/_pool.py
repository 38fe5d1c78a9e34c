"""One pooled HTTP session per event loop and endpoint, shared by every critic on it.

Connection pools belong to an event loop: an aiohttp session made on one loop cannot be
used on another. So sessions are kept per running loop (asyncio) or per run (trio, keyed
by its root task), and within it per endpoint origin (``scheme://host:port``): three
critics on the same vendor share one pool and its warm connections.

Nothing is created at import or construction time; the first call on a loop makes the
session. :func:`aclose_sessions` closes them (``Critic.aclose()`` and ``async with`` call
it). The sync bridge (:mod:`cross_judge._sync`) closes its loop's sessions at exit. A loop
that ends without closing them leaks nothing but sockets the OS reclaims; close them to
avoid aiohttp's "Unclosed client session" warning.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

from ._http import AiohttpSession, HTTPSession, HttpxSession

__all__ = ["aclose_sessions", "endpoint_key", "shared_session"]

_lock = threading.Lock()
_by_loop: weakref.WeakKeyDictionary[Any, dict[str, HTTPSession]] = weakref.WeakKeyDictionary()


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


def shared_session(base_url: str) -> HTTPSession:
    """The session for ``base_url`` on the running event loop, created on first use."""
    token, library = _loop_token()
    key = endpoint_key(base_url)
    with _lock:
        sessions = _by_loop.setdefault(token, {})
        session = sessions.get(key)
        if session is None:
            session = AiohttpSession() if library == "asyncio" else HttpxSession()
            sessions[key] = session
        return session


async def aclose_sessions(base_urls: list[str] | None = None) -> None:
    """Close the running loop's sessions for ``base_urls`` (all of them for ``None``).

    A closed session is forgotten; the next call on that endpoint opens a fresh one.
    """
    token, _ = _loop_token()
    with _lock:
        sessions = _by_loop.get(token, {})
        keys = list(sessions) if base_urls is None else [endpoint_key(u) for u in base_urls]
        closing = [sessions.pop(k) for k in keys if k in sessions]
    for session in closing:
        await session.aclose()
