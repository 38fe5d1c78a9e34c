"""Bytes a vendor sends after a complete response are never read as another call's answer.

A vendor (or a buggy proxy in front of one) that writes a second complete HTTP response
after the first on a keep-alive connection must not desynchronise that connection: before,
under trio (httpx) the extra response sat in the connection's read buffer and became the
answer to the *next* request sent on it, whichever critic and item that was (11 of 40
verdicts carried the injected answer, and the response cache stored two of them).

The rule tested here: a response followed by bytes it did not declare is not trusted. The
connection is closed (never reused), and the call it answered fails with
``ErrorKind.CONNECTION`` (retried, like any dropped connection, on a fresh connection); no
later call on any connection receives the extra bytes. Every test runs on asyncio (aiohttp)
and on trio (httpx), for the OpenAI-compatible and the Anthropic wire protocols.

The hostile vendor is a raw-socket HTTP/1.1 server on 127.0.0.1 that answers each request
with a verdict naming the request's own item and model, so a verdict that reached the wrong
call is recognisable; its injected response says ``INJECTED``. It writes the answer and
the injected response in one ``sendall``, so the extra bytes always arrive with (or right
after) the answer, before the client can send its next request on that connection. No
outcome depends on timing.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from cross_judge import Critic, Ensemble, ErrorKind, Verdict
from cross_judge.critic._cache import ResponseCache

from ..waits import SAFETY_NET_S
from .conftest import close_pools_and_check_tasks
from .test_hostile_bodies import answer_body

pytestmark = pytest.mark.integration

TIMEOUT_S = SAFETY_NET_S / 10
"""Per attempt: never reached by a vendor that answers, however loaded the machine."""

INJECTED = "INJECTED"
_ITEM = re.compile(rb"item-\d+")


def verdict_text(model: str, item: str) -> str:
    """The honest answer to ``item`` from ``model``: its reasoning names both."""
    return json.dumps({"kind": "KEEP", "confidence": 0.9, "reasoning": f"{model} on {item}"})


def injected_text() -> str:
    return json.dumps({"kind": "REJECT", "confidence": 1.0, "reasoning": INJECTED})


def http_response(path: str, text: str) -> bytes:
    """A complete keep-alive HTTP/1.1 200 response answering ``text`` on ``path``'s protocol."""
    data = answer_body("anthropic" if path.endswith("/messages") else "openai", text)
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + data


class DesyncVendor:
    """An HTTP/1.1 vendor on 127.0.0.1 that follows some answers with a second response.

    ``inject(model, item, times_asked)`` decides, per request, whether the answer is
    followed (in the same write) by a complete response saying ``INJECTED``. ``connections``
    counts the connections accepted; ``requests`` the requests answered.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.inject: Callable[[str, str, int], bool] = lambda model, item, n: True
        self.connections = 0
        self.requests = 0
        self._asked: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._stopping = False
        self._acceptor = threading.Thread(target=self._accept, name="desync-vendor", daemon=True)

    def __enter__(self) -> DesyncVendor:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        with self._lock:
            for conn in self._open:
                conn.close()
        self._acceptor.join(10)

    def reset(self, inject: Callable[[str, str, int], bool]) -> None:
        with self._lock:
            self.inject, self.connections, self.requests = inject, 0, 0
            self._asked.clear()

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (x.partition(":") for x in lines[1:])
                }
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[:length], buffer[length:]
                model = str(json.loads(body)["model"])
                found = _ITEM.search(body)
                item = found.group().decode() if found else "?"
                with self._lock:
                    self.requests += 1
                    asked = self._asked[model, item] = self._asked.get((model, item), 0) + 1
                    inject = self.inject(model, item, asked)
                out = http_response(path, verdict_text(model, item))
                if inject:
                    out += http_response(path, injected_text())
                conn.sendall(out)
        except OSError:
            return
        finally:
            conn.close()


@pytest.fixture(scope="module")
def vendor() -> Iterator[DesyncVendor]:
    with DesyncVendor() as srv:
        yield srv


def critic(vendor: DesyncVendor, name: str, protocol: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("timeout", TIMEOUT_S)
    if protocol == "anthropic":
        return Critic(
            name=name, model=name, vendor="anthropic", base_url=vendor.url, api_key="k", **kwargs
        )
    return Critic(
        name=name, model=name, vendor="custom", base_url=vendor.url + "/v1", api_key="k", **kwargs
    )


PROTOCOLS = ["openai", "anthropic"]


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_bytes_after_an_answer_never_reach_the_next_call_on_that_connection(
    vendor: DesyncVendor, protocol: str
) -> None:
    vendor.reset(lambda model, item, n: item == "item-1")  # only the first answer
    judge = critic(vendor, f"next-{protocol}", protocol, max_retries=0)
    await judge.judge("item-1")
    second = await judge.judge("item-2")
    await close_pools_and_check_tasks()
    assert (second.kind, second.reasoning) == ("KEEP", f"{judge.model} on item-2")
    assert vendor.connections == 2  # the connection the extra bytes came on was not reused


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_under_httpx_the_call_extra_bytes_followed_fails_as_a_dropped_connection(
    vendor: DesyncVendor, protocol: str
) -> None:
    # httpx (trio) shows cross-judge the connection's bytes; aiohttp (asyncio) closes such
    # a connection itself and does not say why, so there the call keeps its answer.
    vendor.reset(lambda model, item, n: item == "item-1")
    judge = critic(vendor, f"fails-{protocol}", protocol, max_retries=0)
    first = await judge.judge("item-1")
    await close_pools_and_check_tasks()
    assert (first.kind, first.error_kind) == ("ERROR", ErrorKind.CONNECTION)
    assert "bytes after a complete response" in (first.error or "")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_under_httpx_a_call_failed_for_extra_bytes_is_retried_on_a_fresh_connection(
    vendor: DesyncVendor, protocol: str
) -> None:
    vendor.reset(lambda model, item, n: n == 1)  # every item's first answer only
    judge = critic(vendor, f"retried-{protocol}", protocol, max_retries=1)
    verdict = await judge.judge("item-3")
    await close_pools_and_check_tasks()
    assert (verdict.kind, verdict.reasoning, verdict.attempts) == (
        "KEEP",
        f"{judge.model} on item-3",
        2,
    )
    assert vendor.connections == 2


ITEMS = [f"item-{i}" for i in range(10)]


async def judge_forty(
    vendor: DesyncVendor, cache: ResponseCache
) -> tuple[list[Critic], dict[tuple[str, str], Verdict]]:
    """4 critics (2 per protocol) x 10 items, all at once on shared pools, with ``cache``;
    every third item's first answer is followed by an injected response, the retry's is
    not. Returns the critics and each (model, item)'s verdict, the pools closed."""
    vendor.reset(lambda model, item, n: n == 1 and int(item.split("-")[1]) % 3 == 0)
    critics = [
        critic(vendor, f"{protocol}-{k}", protocol, max_retries=2)
        for protocol in PROTOCOLS
        for k in range(2)
    ]
    panel = Ensemble(critics, cache=cache)
    verdicts: dict[tuple[str, str], Verdict] = {}

    async def judge(item: str) -> None:
        result = await panel.judge(item)
        verdicts.update(((c.model, item), v) for c, v in zip(critics, result.verdicts, strict=True))

    async with anyio.create_task_group() as group:
        for item in ITEMS:
            group.start_soon(judge, item)
    await close_pools_and_check_tasks()
    return critics, verdicts


@pytest.mark.anyio
async def test_no_verdict_carries_an_answer_sent_after_another(
    vendor: DesyncVendor, tmp_path: Path
) -> None:
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        _, verdicts = await judge_forty(vendor, cache)
    answers = {key: v.reasoning for key, v in verdicts.items()}
    assert len(answers) == 40
    assert {key: text for key, text in answers.items() if text != "{} on {}".format(*key)} == {}


@pytest.mark.anyio
async def test_no_cache_entry_holds_an_answer_sent_after_another(
    vendor: DesyncVendor, tmp_path: Path
) -> None:
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        critics, _ = await judge_forty(vendor, cache)
        stored = {}
        for c in critics:
            for item in ITEMS:
                entry = await cache.get(c.build_request(item).cache_key(c.endpoint()))
                stored[c.model, item] = None if entry is None else json.loads(entry.text or "{}")
    assert len(stored) == 40
    poisoned = {
        key: entry
        for key, entry in stored.items()
        if entry is None or entry.get("reasoning") != "{} on {}".format(*key)
    }
    assert poisoned == {}
