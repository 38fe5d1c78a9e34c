"""A guarded connection counts the bytes a server sends after a complete response.

:class:`~cross_judge.transport._framing.FramedStream` follows the HTTP/1.1 framing of what
``httpcore`` reads; here a scripted inner stream plays the network, so every split of the
bytes into reads is chosen by the test.
"""

from __future__ import annotations

from typing import Any

import httpcore
import httpcore2
import httpx
import httpx2
import pytest

from cross_judge.errors import ErrorKind
from cross_judge.transport._framing import (
    FramedStream,
    GuardedBackend,
    desynchronised,
    guard_client,
    stray_bytes,
)

pytestmark = pytest.mark.anyio

REQUEST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
EXTRA = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nINJECTED"


class Network:
    """An inner network stream that returns the scripted ``reads`` in order."""

    def __init__(self, *reads: bytes, readable: bool = False) -> None:
        self.reads = list(reads)
        self.written: list[bytes] = []
        self.readable = readable
        self.closed = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.reads.pop(0) if self.reads else b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.written.append(buffer)

    async def aclose(self) -> None:
        self.closed += 1

    async def start_tls(self, *args: Any, **kwargs: Any) -> Network:
        return Network(*self.reads)

    def get_extra_info(self, info: str) -> Any:
        return self.readable if info == "is_readable" else f"inner {info}"


async def exchange(stream: FramedStream, request: bytes = REQUEST, reads: int = 1) -> None:
    await stream.write(request)
    for _ in range(reads):
        await stream.read(65536)


async def test_a_response_read_alone_leaves_no_stray_bytes() -> None:
    stream = FramedStream(Network(ANSWER))
    await exchange(stream)
    assert stream.stray == 0


async def test_a_second_response_read_with_the_first_is_stray() -> None:
    stream = FramedStream(Network(ANSWER + EXTRA))
    await exchange(stream)
    assert stream.stray == len(EXTRA)


async def test_bytes_read_while_no_request_is_outstanding_are_stray() -> None:
    stream = FramedStream(Network(ANSWER, EXTRA))
    await exchange(stream, reads=2)
    assert stream.stray == len(EXTRA)


async def test_a_response_split_over_many_reads_is_followed_to_its_end() -> None:
    cuts = [ANSWER[i : i + 3] for i in range(0, len(ANSWER), 3)]
    stream = FramedStream(Network(*cuts, ANSWER))
    await exchange(stream, reads=len(cuts))
    await exchange(stream)  # the next request, on the same connection
    assert stream.stray == 0


async def test_a_chunked_response_is_followed_to_its_last_chunk() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    stream = FramedStream(Network(chunked + EXTRA))
    await exchange(stream)
    assert stream.stray == len(EXTRA)


async def test_a_head_response_has_no_body_so_what_follows_is_stray() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    stream = FramedStream(Network(head + b"hello"))
    await exchange(stream, request=b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert stream.stray == len(b"hello")


async def test_bytes_through_an_established_tunnel_are_not_stray() -> None:
    stream = FramedStream(Network(b"HTTP/1.1 200 Connection established\r\n\r\n", b"\x16\x03tls"))
    await exchange(stream, request=b"CONNECT api.example:443 HTTP/1.1\r\nHost: x\r\n\r\n", reads=2)
    assert stream.stray == 0


async def test_a_malformed_response_is_left_to_httpcore_to_report() -> None:
    stream = FramedStream(Network(b"not http at all\r\n\r\n"))
    await exchange(stream)
    assert stream.stray == 0


async def test_a_stream_with_stray_bytes_says_it_is_readable_so_the_pool_drops_it() -> None:
    stream = FramedStream(Network(ANSWER + EXTRA))
    assert stream.get_extra_info("is_readable") is False
    await exchange(stream)
    assert stream.get_extra_info("is_readable") is True
    assert stream.get_extra_info("server_addr") == "inner server_addr"


async def test_a_tls_stream_is_guarded_too() -> None:
    tls = await FramedStream(Network(ANSWER + EXTRA)).start_tls(None)
    assert isinstance(tls, FramedStream)
    await exchange(tls)
    assert tls.stray == len(EXTRA)


async def test_closing_twice_closes_the_connection_once() -> None:
    network = Network()
    stream = FramedStream(network)
    await stream.aclose()
    await stream.aclose()
    assert network.closed == 1


def test_the_failure_is_a_dropped_connection_that_names_the_stray_bytes() -> None:
    failure = desynchronised(42)
    assert failure.kind is ErrorKind.CONNECTION and failure.retryable
    assert "42 bytes after a complete response" in failure.message


def test_a_response_of_an_unguarded_connection_has_no_stray_bytes() -> None:
    assert stray_bytes(httpx.Response(200)) == 0


@pytest.mark.parametrize(
    ("httpx_module", "httpcore_module"), [(httpx, httpcore), (httpx2, httpcore2)]
)
def test_guarding_a_client_wraps_its_pools_network_backend(
    httpx_module: Any, httpcore_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    client = guard_client(httpx_module.AsyncClient())
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    assert len(transports) == 2  # the default transport and the proxy's
    for transport in transports:
        assert isinstance(transport._pool._network_backend, GuardedBackend)
    guard_client(client)  # guarding again does not wrap twice
    assert not isinstance(client._transport._pool._network_backend._inner, GuardedBackend)


def test_a_client_whose_transport_has_no_pool_is_refused_rather_than_left_unguarded() -> None:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(200)))
    with pytest.raises(RuntimeError, match="cannot guard"):
        guard_client(client)
