"""The acceptance list of the core path, over real HTTP to a local chat-completions server.

Each test drives Critic -> pooled HTTP client (aiohttp under asyncio, httpx under trio)
-> socket -> VendorServer -> parsing -> Verdict.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from cross_judge import Critic, ErrorKind
from cross_judge.testing import Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

HUNG_S = SAFETY_NET_S / 10
"""How far past its bound a call may run before the test calls it hung. Only a hang is
caught this way: on a loaded CI machine a process can stall for a second or more."""


def critic(server: VendorServer, model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    return Critic(name="critic", model=model, vendor="custom", base_url=server.url, **kwargs)


@pytest.mark.parametrize(
    ("content", "kind", "confidence"),
    [
        ('{"kind": "KEEP", "confidence": 0.9, "reasoning": "ok"}', "KEEP", 0.9),
        (
            'Here is my verdict:\n```json\n{"kind": "reject", "confidence": 0.7}\n```\nThanks.',
            "REJECT",
            0.7,
        ),
        (
            '<think>maybe {"kind": "KEEP"}?</think>\n{"kind": "SPLIT", "confidence": 0.6}',
            "SPLIT",
            0.6,
        ),
        ('{"kind": "MERGE", "confidence": 0.5, "reasoning": "dup",\n}', "MERGE", 0.5),
        ('{"kind": "KEEP", "confidence": "85%"}', "KEEP", 0.85),
    ],
    ids=["strict", "fenced-with-prose", "think-block", "trailing-comma", "percent"],
)
async def test_answers_real_models_write_become_verdicts(
    server: VendorServer, model: str, content: str, kind: str, confidence: float
) -> None:
    server.script(model, Reply.content(content))
    async with critic(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.confidence, v.error, v.attempts) == (kind, confidence, None, 1)
    assert v.raw_response == content.strip()


async def test_prose_only_is_parse_fail_with_raw_kept(server: VendorServer, model: str) -> None:
    text = "I think this candidate should probably be kept."
    server.script(model, Reply.content(text))
    async with critic(server, model) as c:
        v = await c.judge("item")
    assert v.kind == "PARSE_FAIL" and v.error_kind is ErrorKind.PARSE
    assert v.raw_response == text and (v.error or "").startswith("parse_fail")


async def test_empty_content_is_empty_response(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content(""))
    async with critic(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.error, v.error_kind) == ("ERROR", "empty_response", ErrorKind.EMPTY)


async def test_null_content_is_empty_response(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content(None))
    async with critic(server, model) as c:
        v = await c.judge("item")
    assert v.error == "empty_response"


async def test_500_every_time_gives_error_after_max_retries_plus_one_attempts(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.always(model, Reply.status(500))
    try:
        async with critic(server, model, max_retries=2) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    assert v.kind == "ERROR" and v.error_kind is ErrorKind.SERVER
    assert v.attempts == 3 and server.stats()["by_model"][model] == 3


async def test_429_with_retry_after_zero_twice_then_200_gives_the_verdict(
    server: VendorServer, model: str
) -> None:
    server.script(
        model,
        Reply.status(429, retry_after=0),
        Reply.status(429, retry_after=0),
        Reply.content('{"kind": "KEEP", "confidence": 0.8}'),
    )
    async with critic(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.attempts, v.error) == ("KEEP", 3, None)


async def test_a_server_that_never_answers_times_out_within_the_bound(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.always(model, Reply.hang())
    timeout, attempts = 0.3, 2
    started = time.monotonic()
    try:
        async with critic(server, model, timeout=timeout, max_retries=attempts - 1) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    elapsed = time.monotonic() - started
    assert v.kind == "ERROR" and v.error_kind is ErrorKind.TIMEOUT and v.attempts == attempts
    assert "no response within 0.3s (timeout)" in (v.error or "")
    assert elapsed < timeout * attempts + HUNG_S  # a hang check: the message names the 0.3 s


async def test_deadline_bounds_the_whole_call(server: VendorServer, model: str) -> None:
    server.always(model, Reply.hang())
    started = time.monotonic()
    try:
        async with critic(server, model, timeout=SAFETY_NET_S, max_retries=5, deadline=0.4) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    assert v.error_kind is ErrorKind.TIMEOUT and "deadline" in (v.error or "")
    assert time.monotonic() - started < 0.4 + HUNG_S  # not 6 attempts of SAFETY_NET_S


async def test_html_with_status_200_is_an_error_not_an_exception(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.html(200))
    async with critic(server, model) as c:
        v = await c.judge("item")
    assert v.kind == "ERROR" and v.error_kind is ErrorKind.INVALID_RESPONSE


async def test_dropped_connection_is_a_connection_error(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.always(model, Reply.reset())
    try:
        async with critic(server, model, max_retries=1) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    assert v.kind == "ERROR" and v.error_kind is ErrorKind.CONNECTION and v.attempts == 2


async def test_wrong_key_is_auth_error(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"kind": "KEEP"}'))
    async with critic(server, model, api_key="sk-wrong-key-000000") as c:
        v = await c.judge("item")
    assert v.error_kind is ErrorKind.AUTH and v.attempts == 1


async def test_critics_on_one_endpoint_share_a_connection_pool(
    server: VendorServer, model: str
) -> None:
    server.script(model, *[Reply.content('{"kind": "KEEP"}')] * 6)
    server.reset_stats()
    a, b = critic(server, model), critic(server, model)
    for _ in range(3):
        await a.judge("item")
        await b.judge("item")
    await a.aclose()
    assert server.stats()["connections"] == 1


async def test_no_api_key_leaks_into_reprs_dumps_logs_or_errors(
    server: VendorServer, model: str, caplog: pytest.LogCaptureFixture, no_backoff: None
) -> None:
    # A vendor that echoes the key back in its error message, as some gateways do.
    server.script(
        model,
        Reply.status(401, message=f"Incorrect API key provided: {KEY}"),
        Reply.status(503, message=f"upstream refused Bearer {KEY}"),
        Reply.status(503, message="busy"),
        Reply.status(503, message="busy"),
    )
    caplog.set_level(logging.DEBUG)
    async with critic(server, model, max_retries=2) as c:
        auth = await c.judge("item")
        server_error = await c.judge("item")
        texts = [repr(c), str(c), c.model_dump_json()]
    for v in (auth, server_error):
        texts += [repr(v), str(v), v.model_dump_json(), v.error or "", v.reasoning]
    texts += [r.getMessage() for r in caplog.records]
    assert auth.error_kind is ErrorKind.AUTH and server_error.error_kind is ErrorKind.SERVER
    assert not [t for t in texts if KEY in t]
