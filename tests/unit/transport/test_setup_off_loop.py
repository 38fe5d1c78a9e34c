"""A pooled HTTP session is set up in worker threads, once, however many calls ask at once.

Structural: each test records the thread that does the work, or counts how often it is
done. Nothing is timed; the stall a cold first call causes is measured by
``bench/bench_loop_stall.py``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from cross_judge.transport import _http, _pool
from cross_judge.transport._framing import GuardedBackend
from cross_judge.transport._http import AiohttpSession, HttpxSession, import_in_worker

from ...waits import SAFETY_NET_S

pytestmark = pytest.mark.anyio


async def test_an_owned_httpx_client_is_built_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built_on: list[int] = []
    build = HttpxSession._new_client

    def recording(self: HttpxSession) -> httpx.AsyncClient:
        built_on.append(threading.get_ident())
        return build(self)

    monkeypatch.setattr(HttpxSession, "_new_client", recording)
    session = HttpxSession()
    await session.prepare()
    await session.aclose()
    assert built_on and built_on[0] != threading.get_ident()


async def test_concurrent_first_calls_build_one_httpx_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    builds: list[httpx.AsyncClient] = []

    def slow_build(self: HttpxSession) -> httpx.AsyncClient:
        release.wait(SAFETY_NET_S)  # until both callers are waiting: one in here, one at the lock
        client = httpx.AsyncClient()
        builds.append(client)
        return client

    monkeypatch.setattr(HttpxSession, "_new_client", slow_build)
    session = HttpxSession()
    async with anyio.create_task_group() as group:
        group.start_soon(session.prepare)
        group.start_soon(session.prepare)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert len(builds) == 1 and session._get() is builds[0]
    await session.aclose()


async def test_the_owned_httpx_client_refuses_bytes_after_a_response() -> None:
    session = HttpxSession()
    await session.prepare()
    client = session._get()
    assert isinstance(client._transport._pool._network_backend, GuardedBackend)
    await session.aclose()


async def test_an_injected_httpx_client_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpxSession, "_new_client", lambda self: pytest.fail("built one"))
    client = httpx.AsyncClient()
    session = HttpxSession(client)
    await session.prepare()
    assert session._get() is client
    await client.aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_concurrent_first_calls_make_one_aiohttp_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import aiohttp

    made: list[aiohttp.ClientSession] = []
    real = aiohttp.ClientSession

    def counted(*args: Any, **kwargs: Any) -> aiohttp.ClientSession:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(aiohttp, "ClientSession", counted)
    session = AiohttpSession()
    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(session.prepare)
    await session.aclose()
    assert len(made) == 1


async def test_ready_session_is_the_shared_session_set_up() -> None:
    session = await _pool.ready_session("http://setup.test/v1")
    try:
        assert session is _pool.shared_session("http://setup.test/v2")  # one pool per origin
        assert (getattr(session, "_session", None) or getattr(session, "_client", None)) is not None
    finally:
        await _pool.aclose_sessions(["http://setup.test"])


@pytest.fixture
def probe_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a new module that records the thread running its code (``RAN_ON``)."""
    name = f"cj_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("import threading\nRAN_ON = threading.get_ident()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)
    _http._imported.discard(name)


async def test_a_module_imported_in_a_worker_runs_its_code_off_the_loop(probe_module: str) -> None:
    loop_thread = threading.get_ident()
    await import_in_worker(probe_module)
    ran_on = sys.modules[probe_module].RAN_ON
    assert ran_on != loop_thread


async def test_a_module_imported_once_is_not_imported_again_in_a_thread(
    probe_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await import_in_worker(probe_module)

    async def no_thread(*args: Any, **kwargs: Any) -> None:
        pytest.fail("a worker thread for a module already imported")

    monkeypatch.setattr(anyio.to_thread, "run_sync", no_thread)
    await import_in_worker(probe_module)
