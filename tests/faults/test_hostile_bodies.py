"""A vendor's response body cannot take the process's memory: compressed bodies are capped
after decompression.

The cap on a response body (8 MiB, ``transport._http.MAX_RESPONSE_BYTES``) counts the
bytes *decoded*: a decompression bomb (a ~1 MB gzip or deflate body holding 1 GiB of
zeros) is refused as ``INVALID_RESPONSE`` once 8 MiB have come out of it, with memory
bounded by the cap. Before, one such reply drove a process to 2 GiB (aiohttp's ``read()``
inflates a body whose compressed ``Content-Length`` is small) or 130 MiB (httpx inflates a
whole network read at once). Requests offer only the codings the decoder bounds, and a body
in any other coding is refused. Memory is measured in a child process, where the peak RSS
(``ru_maxrss``) has a clean baseline.

Every test runs on asyncio (aiohttp) and trio (httpx); the wire protocol is the
OpenAI-compatible one unless a test says otherwise. No outcome depends on timing.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import Critic, ErrorKind
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport import CallFailure, aclose_sessions
from cross_judge.transport._http import ACCEPT_ENCODING, MAX_RESPONSE_BYTES, BodyDecoder

from ..waits import SAFETY_NET_S

pytestmark = pytest.mark.integration

GOOD = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "a whale is a mammal"}'
TIMEOUT_S = SAFETY_NET_S / 10
"""Per attempt: never reached by a vendor that answers, however loaded the machine."""
GROWTH_LIMIT_MIB = 64
"""Peak RSS a refused bomb may add: the 8 MiB cap, joined once, is about 16 MiB; the old
readers added 130 MiB (httpx) to 2 GiB (aiohttp)."""


def bomb(coding: str, mib: int = 1024) -> bytes:
    """``mib`` MiB of zeros in ``coding`` (gzip, or deflate in its zlib wrapper): about
    1 KiB per MiB, a valid stream with its checksum. Made from one compressed MiB repeated
    (after a full flush the compressor's output for the same input is the same), so 1 GiB
    takes a fraction of a second to build."""
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, _wbits(coding))
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()  # the final empty block, then the trailer for 2 MiB
    if coding == "gzip":
        crc = 0
        for _ in range(mib):
            crc = zlib.crc32(zeros, crc)
        trailer = struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)
        end = end[:-8]
    else:
        adler = 1
        for _ in range(mib):
            adler = zlib.adler32(zeros, adler)
        trailer = struct.pack(">I", adler)
        end = end[:-4]
    return head + block * (mib - 1) + end + trailer


def _wbits(coding: str) -> int:
    return {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw-deflate": -15}[coding]


def compress(data: bytes, coding: str) -> bytes:
    """``data`` in ``coding``: gzip, deflate (zlib-wrapped) or raw-deflate (no wrapper,
    which some servers send as ``deflate``)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, _wbits(coding))
    return compressor.compress(data) + compressor.flush()


def answer_body(protocol: str, text: str = GOOD) -> bytes:
    """A complete 200 body answering ``text`` in ``protocol``."""
    if protocol == "anthropic":
        body: dict[str, Any] = {
            "id": "msg_hostile",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    else:
        body = {
            "id": "chatcmpl-hostile",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
    return json.dumps(body).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(default_persona=Persona("default")) as srv:
        yield srv


def critic_on(srv: VendorServer, model: str, protocol: str = "openai", **kwargs: Any) -> Critic:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", TIMEOUT_S)
    if protocol == "anthropic":
        return Critic(
            name="c",
            model=model,
            vendor="anthropic",
            base_url=srv.anthropic_url,
            api_key="k",
            **kwargs,
        )
    return Critic(name="c", model=model, vendor="custom", base_url=srv.url, api_key="k", **kwargs)


# -- decompression bombs, memory measured in a child process ---------------------------------

_CHILD = r"""
import json, resource, sys
import anyio
from cross_judge import Critic
from cross_judge.transport import aclose_sessions

backend, protocol, url, warm_model, bomb_model = sys.argv[1:6]

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

async def main():
    vendor = "anthropic" if protocol == "anthropic" else "custom"
    settings = dict(vendor=vendor, base_url=url, api_key="k", max_retries=0, timeout=600.0)
    # The first call imports the HTTP stack and opens the pool: part of the baseline.
    warm = await Critic(name="warm", model=warm_model, **settings).judge("Is a whale a fish?")
    assert warm.is_valid, warm.error
    before = peak_mib()
    verdict = await Critic(name="bomb", model=bomb_model, **settings).judge("Is a whale a fish?")
    growth = peak_mib() - before
    await aclose_sessions()
    print(json.dumps({"kind": verdict.kind, "error_kind": verdict.error_kind,
                      "error": verdict.error, "growth_mib": growth}))

anyio.run(main, backend=backend)
"""


def _judge_in_child(srv: VendorServer, backend: str, protocol: str, model: str) -> dict[str, Any]:
    url = srv.anthropic_url if protocol == "anthropic" else srv.url
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, backend, protocol, url, f"{model}-warm", model],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow  # a fresh interpreter each, to measure its peak memory alone
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("coding", ["gzip", "deflate"])
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_decompression_bomb_is_refused_at_the_cap_with_bounded_memory(
    server: VendorServer, backend: str, coding: str, protocol: str, model: str
) -> None:
    body = bomb(coding)
    assert len(body) < MAX_RESPONSE_BYTES // 4  # small on the wire: only decoding is large
    server.always(model, Reply.raw(body, headers={"Content-Encoding": coding}))
    try:
        result = _judge_in_child(server, backend, protocol, model)
    finally:
        server.always(model, None)
    assert (result["kind"], result["error_kind"]) == ("ERROR", "invalid_response"), result
    assert f"larger than 8 MiB after decompression (Content-Encoding: {coding})" in result["error"]
    print(f"peak RSS growth {result['growth_mib']:.1f} MiB")  # shown with pytest -s
    assert result["growth_mib"] < GROWTH_LIMIT_MIB, result


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_bomb_in_an_error_response_is_refused_at_the_cap_too(
    server: VendorServer, protocol: str, model: str
) -> None:
    server.script(
        model, Reply.raw(bomb("gzip", 64), status=500, headers={"Content-Encoding": "gzip"})
    )
    try:
        verdict = await critic_on(server, model, protocol).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.INVALID_RESPONSE)
    assert "larger than 8 MiB after decompression (Content-Encoding: gzip)" in (verdict.error or "")


# -- compressed answers that are fine ---------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
async def test_a_compressed_answer_is_decoded_and_judged(
    server: VendorServer, protocol: str, coding: str, model: str
) -> None:
    header = "deflate" if coding == "raw-deflate" else coding
    body = compress(answer_body(protocol), coding)
    server.script(model, Reply.raw(body, headers={"Content-Encoding": header}))
    try:
        verdict = await critic_on(server, model, protocol).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.confidence, verdict.error) == ("KEEP", 0.9, None)


@pytest.mark.anyio
async def test_a_gzip_body_of_several_members_is_decoded_whole(
    server: VendorServer, model: str
) -> None:
    body = answer_body("openai")
    members = b"".join(gzip.compress(body[i : i + 40]) for i in range(0, len(body), 40))
    server.script(model, Reply.raw(members, headers={"Content-Encoding": "gzip"}))
    try:
        verdict = await critic_on(server, model).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.error) == ("KEEP", None)


@pytest.mark.anyio
async def test_an_answer_just_under_the_cap_after_decompression_is_accepted(
    server: VendorServer, model: str
) -> None:
    padding = MAX_RESPONSE_BYTES - len(answer_body("openai")) - 64
    body = answer_body("openai")[:-1] + b', "padding": "' + b" " * padding + b'"}'
    assert MAX_RESPONSE_BYTES - 64 < len(body) <= MAX_RESPONSE_BYTES
    server.script(model, Reply.raw(compress(body, "gzip"), headers={"Content-Encoding": "gzip"}))
    try:
        verdict = await critic_on(server, model).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.error) == ("KEEP", None)


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_requests_offer_only_the_codings_the_reader_bounds(
    server: VendorServer, protocol: str, model: str
) -> None:
    try:
        verdict = await critic_on(server, model, protocol).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert verdict.is_valid, verdict.error
    (request,) = [r for r in server.recent_requests if r["model"] == model]
    headers = {name.lower(): value for name, value in request["headers"].items()}
    assert headers["accept-encoding"] == ACCEPT_ENCODING == "gzip, deflate"


# -- bodies the reader refuses ----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "gzip, gzip"])
async def test_a_body_in_a_coding_the_reader_cannot_bound_is_refused(
    server: VendorServer, coding: str, protocol: str, model: str
) -> None:
    body = compress(answer_body(protocol), "gzip")  # the coding's own bytes do not matter
    server.script(model, Reply.raw(body, headers={"Content-Encoding": coding}))
    try:
        verdict = await critic_on(server, model, protocol).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.INVALID_RESPONSE)
    assert f"Content-Encoding {coding!r}, which cross-judge does not decode" in (
        verdict.error or ""
    )


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_corrupt_gzip_data_is_an_invalid_response(
    server: VendorServer, protocol: str, model: str
) -> None:
    body = bytearray(compress(answer_body(protocol), "gzip"))
    body[12:20] = b"\xff" * 8  # inside the deflate stream
    server.script(model, Reply.raw(bytes(body), headers={"Content-Encoding": "gzip"}))
    try:
        verdict = await critic_on(server, model, protocol).judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.INVALID_RESPONSE)
    assert "not valid gzip data" in (verdict.error or "")


def _injected_critic(client: Any) -> Critic:
    return Critic(
        name="c",
        model="m",
        vendor="custom",
        base_url="http://vendor.test/v1",
        api_key="k",
        http_client=client,
        max_retries=0,
    )


@pytest.mark.anyio
async def test_an_injected_httpx_client_gets_the_same_bounded_reader() -> None:
    body = bomb("gzip", 64)

    def vendor(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == ACCEPT_ENCODING
        # stream=: sent as a transport's response is, unread (content= would decode it here).
        return httpx.Response(
            200, stream=httpx.ByteStream(body), headers={"Content-Encoding": "gzip"}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(vendor)) as client:
        verdict = await _injected_critic(client).judge("Is a whale a fish?")
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.INVALID_RESPONSE)
    assert "larger than 8 MiB after decompression (Content-Encoding: gzip)" in (verdict.error or "")


@pytest.mark.anyio
async def test_an_injected_client_response_read_in_advance_is_capped_at_its_decoded_size() -> None:
    padding = b" " * (MAX_RESPONSE_BYTES + 1)
    content = answer_body("openai")[:-1] + b', "padding": "' + padding + b'"}'

    def vendor(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=gzip.compress(content), headers={"Content-Encoding": "gzip"}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(vendor)) as client:
        verdict = await _injected_critic(client).judge("Is a whale a fish?")
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.INVALID_RESPONSE)
    assert "larger than 8 MiB" in (verdict.error or "")


class _DuckResponse:
    status_code = 200

    def __init__(self, content: bytes) -> None:
        self.content = content
        self.headers = {"content-type": "application/json"}

    def json(self) -> Any:
        return json.loads(self.content)


class _DuckClient:
    """cross-judge 0.1's injected client, whose library has decoded the body already."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def post(self, url: str, json: object = None, headers: object = None) -> _DuckResponse:
        return _DuckResponse(self._content)


@pytest.mark.anyio
async def test_a_sync_client_body_over_the_cap_once_decoded_is_refused() -> None:
    padding = b" " * (MAX_RESPONSE_BYTES + 1)
    content = answer_body("openai")[:-1] + b', "padding": "' + padding + b'"}'
    verdict = await _injected_critic(_DuckClient(content)).judge("Is a whale a fish?")
    assert (verdict.kind, verdict.error_kind) == ("ERROR", ErrorKind.INVALID_RESPONSE)
    assert "larger than 8 MiB" in (verdict.error or "")


# -- the decoder on its own -------------------------------------------------------------------

CODINGS = ["identity", "gzip", "deflate", "raw-deflate"]


def _encode(data: bytes, coding: str) -> tuple[bytes, str | None]:
    if coding == "identity":
        return data, None
    return compress(data, coding), "deflate" if coding == "raw-deflate" else coding


def _decode(decoder: BodyDecoder, raw: bytes, cuts: list[int]) -> bytes:
    bounds = [0, *sorted(c % (len(raw) + 1) for c in cuts), len(raw)]
    out = [decoder.feed(raw[a:b]) for a, b in itertools.pairwise(bounds)]
    return b"".join(out) + decoder.flush()


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=4096),
    coding=st.sampled_from(CODINGS),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
)
def test_decoding_in_any_chunks_gives_the_body_back(
    data: bytes, coding: str, cuts: list[int]
) -> None:
    raw, header = _encode(data, coding)
    assert _decode(BodyDecoder(header), raw, cuts) == data


@pytest.mark.parametrize("coding", CODINGS)
def test_the_cap_admits_exactly_limit_bytes_after_decoding(coding: str) -> None:
    limit = 1000
    raw, header = _encode(bytes(limit), coding)
    assert _decode(BodyDecoder(header, limit=limit), raw, [1, 2, 500]) == bytes(limit)
    raw, header = _encode(bytes(limit + 1), coding)
    with pytest.raises(CallFailure) as info:
        _decode(BodyDecoder(header, limit=limit), raw, [1, 2, 500])
    assert info.value.kind is ErrorKind.INVALID_RESPONSE
    assert "larger than 1000 bytes" in info.value.message


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_bomb_fed_at_once_yields_no_more_than_the_cap(coding: str) -> None:
    decoder = BodyDecoder(coding, limit=MAX_RESPONSE_BYTES)
    out: list[bytes] = []
    body = bomb(coding, 64)
    with pytest.raises(CallFailure, match="after decompression"):
        out.append(decoder.feed(body))
    assert not out  # the over-cap chunk is never returned


def test_codings_are_read_case_insensitively_and_identity_is_none() -> None:
    data = answer_body("openai")
    for header in ("GZIP", "x-gzip", " gzip ", "identity, gzip"):
        assert BodyDecoder(header).feed(compress(data, "gzip")) == data
    for header in (None, "", "identity", "Identity"):
        assert BodyDecoder(header).feed(data) == data
