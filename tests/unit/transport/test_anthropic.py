"""The Anthropic Messages adapter: request shape, usage, error classification, body cap.

Requests go through the real SDK into an ``httpx2.MockTransport`` (no socket); the mapping
functions are tested directly. End-to-end behaviour over HTTP is in
tests/integration/test_anthropic_over_http.py.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import httpx2
import pytest

from cross_judge import ErrorKind
from cross_judge.transport import (
    CallFailure,
    ChatRequest,
    _anthropic as wire,
    _pool,
    aclose_sessions,
)
from cross_judge.vendors import get_vendor, with_base_url
from cross_judge.verdict import Usage

from ...waits import SAFETY_NET_S

KEY = "sk-ant-unit-test-key-0123456789"
CONFIG = get_vendor("anthropic")
MESSAGE_URL = "https://api.anthropic.com/v1/messages"

Handler = Callable[[httpx2.Request], httpx2.Response]


def message(*blocks: dict[str, Any], stop_reason: str = "end_turn", **extra: Any) -> bytes:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
        **extra,
    }
    return json.dumps(body).encode()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def request(**kwargs: Any) -> ChatRequest:
    fields: dict[str, Any] = {
        "model": "claude-haiku-4-5",
        "system": "Be a judge.",
        "user": "Judge this.",
        "temperature": 0.0,
        "max_tokens": 256,
    }
    fields.update(kwargs)
    return ChatRequest(**fields)


class MockVendor:
    """Answers every request with ``reply``; keeps the requests it saw."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.reply: Handler = lambda _: httpx2.Response(200, content=message(text("ok")))

    def handle(self, req: httpx2.Request) -> httpx2.Response:
        self.requests.append(req)
        return self.reply(req)

    def body(self, index: int = -1) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.requests[index].content)
        return parsed


@pytest.fixture
async def vendor(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MockVendor]:
    mock = MockVendor()

    def mock_client(library: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=httpx2.MockTransport(mock.handle),
            follow_redirects=False,
            event_hooks={"response": [wire._cap_response_body]},
        )

    monkeypatch.setattr(wire, "_new_http_client", mock_client)
    yield mock
    await aclose_sessions()


async def call(req: ChatRequest | None = None, *, api_key: str | None = KEY) -> Any:
    return await wire.complete(CONFIG, req or request(), api_key=api_key, timeout=5.0)


async def failure(req: ChatRequest | None = None, *, api_key: str | None = KEY) -> CallFailure:
    with pytest.raises(CallFailure) as info:
        await call(req, api_key=api_key)
    return info.value


# -- the request -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_request_goes_to_v1_messages_with_system_max_tokens_and_one_user_message(
    vendor: MockVendor,
) -> None:
    await call()
    assert str(vendor.requests[0].url) == MESSAGE_URL
    assert vendor.body() == {
        "model": "claude-haiku-4-5",
        "max_tokens": 256,
        "system": "Be a judge.",
        "messages": [{"role": "user", "content": "Judge this."}],
    }


@pytest.mark.anyio
async def test_an_empty_system_prompt_is_left_out(vendor: MockVendor) -> None:
    await call(request(system=""))
    assert "system" not in vendor.body()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "model",
    [
        "claude-haiku-4-5",
        "claude-sonnet-4-6",
        "claude-opus-4-7",
        "claude-sonnet-5-5",
        "claude-fable-5-1",
    ],
)
async def test_no_sampling_parameter_is_sent_for_any_model(vendor: MockVendor, model: str) -> None:
    await call(request(model=model, temperature=0.7))
    assert not {"temperature", "top_p", "top_k"} & set(vendor.body())


@pytest.mark.anyio
async def test_json_mode_and_seed_are_not_sent(vendor: MockVendor) -> None:
    await call(request(json_mode=True, seed=7))
    assert set(vendor.body()) == {"model", "max_tokens", "system", "messages"}


@pytest.mark.anyio
async def test_the_body_carries_exactly_the_settings_anthropic_sends(vendor: MockVendor) -> None:
    sent = request(temperature=0.7, seed=7, json_mode=True, max_tokens=99)
    await call(sent)
    body = vendor.body()
    settings = {k: v for k, v in body.items() if k not in ("model", "system", "messages")}
    assert settings == sent.sent_settings("anthropic") == {"max_tokens": 99}


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.anyio
async def test_a_temperature_that_is_not_sent_is_warned_once(
    vendor: MockVendor, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cross_judge")
    for _ in range(3):
        await call(request(model=model, temperature=0.7))
    [warning] = warnings_of(caplog)
    assert f"model {model!r}: temperature=0.7 is not sent, so it has no effect" in warning
    assert "(2026-10-21) takes no temperature" in warning
    assert "remove it from the critic's settings" in warning
    assert all("temperature" not in vendor.body(i) for i in range(3))


@pytest.mark.anyio
async def test_a_seed_that_is_not_sent_is_warned_once(
    vendor: MockVendor, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cross_judge")
    for _ in range(2):
        await call(request(model=model, seed=7))
    [warning] = warnings_of(caplog)
    assert f"model {model!r}: seed=7 is not sent" in warning
    assert "the Messages API has no seed" in warning


@pytest.mark.anyio
async def test_each_model_and_value_is_warned_once(
    vendor: MockVendor, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cross_judge")
    for temperature in (0.7, 0.9, 0.7):
        await call(request(model=model, temperature=temperature))
        await call(request(model=f"{model}-other", temperature=temperature))
    warned = warnings_of(caplog)
    assert len(warned) == 4
    assert len({w for w in warned if "temperature=0.7" in w}) == 2


@pytest.mark.anyio
async def test_the_default_temperature_and_no_seed_are_not_warned(
    vendor: MockVendor, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cross_judge")
    await call(request(model=model, temperature=0.0, seed=None))
    assert warnings_of(caplog) == []


@pytest.mark.anyio
async def test_the_key_goes_out_as_x_api_key_without_an_authorization_header(
    vendor: MockVendor,
) -> None:
    await call()
    headers = vendor.requests[0].headers
    assert headers["x-api-key"] == KEY
    assert "authorization" not in headers
    assert headers["anthropic-version"]


@pytest.mark.anyio
async def test_without_a_key_no_credential_header_is_sent(
    vendor: MockVendor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment-0000")
    await call(api_key=None)
    headers = vendor.requests[0].headers
    assert "x-api-key" not in headers and "authorization" not in headers


@pytest.mark.anyio
async def test_calls_with_different_keys_each_send_their_own(vendor: MockVendor) -> None:
    await call(api_key="sk-ant-first-key-000000")
    await call(api_key="sk-ant-second-key-11111")
    await call(api_key="sk-ant-first-key-000000")
    sent = [r.headers["x-api-key"] for r in vendor.requests]
    assert sent == ["sk-ant-first-key-000000", "sk-ant-second-key-11111", "sk-ant-first-key-000000"]


@pytest.mark.anyio
async def test_the_sdk_does_not_retry(vendor: MockVendor) -> None:
    vendor.reply = lambda _: httpx2.Response(529, json={"type": "error", "error": {}})
    await failure()
    assert len(vendor.requests) == 1


@pytest.mark.anyio
async def test_a_redirect_is_not_followed(vendor: MockVendor) -> None:
    vendor.reply = lambda _: httpx2.Response(307, headers={"location": "https://elsewhere.test/"})
    failed = await failure()
    assert (failed.kind, failed.status, len(vendor.requests)) == (ErrorKind.BAD_REQUEST, 307, 1)


@pytest.mark.anyio
async def test_a_base_url_with_v1_reaches_the_same_messages_url(vendor: MockVendor) -> None:
    config = with_base_url(CONFIG, "https://api.anthropic.com/v1/")
    await wire.complete(config, request(), api_key=KEY, timeout=5.0)
    assert str(vendor.requests[0].url) == MESSAGE_URL


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.anthropic.com", "https://api.anthropic.com"),
        ("https://api.anthropic.com/", "https://api.anthropic.com"),
        ("https://api.anthropic.com/v1", "https://api.anthropic.com"),
        ("https://api.anthropic.com/v1/", "https://api.anthropic.com"),
        ("https://gw.example/anthropic", "https://gw.example/anthropic"),
        ("https://gw.example/anthropic/v1", "https://gw.example/anthropic"),
        ("http://127.0.0.1:8080/v10", "http://127.0.0.1:8080/v10"),
    ],
)
def test_sdk_base_url_drops_trailing_slashes_and_one_v1(base_url: str, expected: str) -> None:
    assert wire.sdk_base_url(base_url) == expected


# -- pooling and import ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_aclose_sessions_closes_the_anthropic_pool_of_that_origin_only(
    vendor: MockVendor,
) -> None:
    await call()
    token, _ = _pool.loop_token()
    key = ("anthropic", "https://api.anthropic.com:443")
    endpoint = _pool._by_loop[token][key]
    http = endpoint._http
    await aclose_sessions(["https://other.example/v1"])
    assert _pool._by_loop[token][key] is endpoint and not http.is_closed
    await aclose_sessions(["https://api.anthropic.com/v1"])
    assert key not in _pool._by_loop[token] and http.is_closed


def test_importing_cross_judge_and_the_adapter_does_not_import_the_sdk() -> None:
    code = (
        "import sys, cross_judge, cross_judge.transport._anthropic; "
        "print('anthropic' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        check=True,
    )
    assert result.stdout.strip() == "False"


# -- the body cap ----------------------------------------------------------------------------


class Chunks(httpx2.AsyncByteStream):
    """A response body of unknown length."""

    def __init__(self, *chunks: bytes) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


@pytest.mark.anyio
async def test_a_body_declared_over_the_cap_is_an_invalid_response(
    vendor: MockVendor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "MAX_RESPONSE_BYTES", 1024)
    vendor.reply = lambda _: httpx2.Response(200, content=message(text("x" * 2000)))
    failed = await failure()
    assert failed.kind is ErrorKind.INVALID_RESPONSE and "larger than" in failed.message


@pytest.mark.anyio
async def test_a_body_of_unknown_length_is_cut_off_at_the_cap(
    vendor: MockVendor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "MAX_RESPONSE_BYTES", 1024)
    vendor.reply = lambda _: httpx2.Response(200, stream=Chunks(b"{" + b" " * 800, b" " * 800))
    failed = await failure()
    assert failed.kind is ErrorKind.INVALID_RESPONSE and "larger than" in failed.message


@pytest.mark.anyio
async def test_a_body_of_unknown_length_under_the_cap_is_read_whole(vendor: MockVendor) -> None:
    body = message(text("chunked"))
    vendor.reply = lambda _: httpx2.Response(200, stream=Chunks(body[:10], body[10:]))
    completion = await call()
    assert completion.text == "chunked"


# -- usage ----------------------------------------------------------------------------------


def test_usage_counts_cache_reads_and_writes_as_prompt_tokens() -> None:
    usage = wire.usage_of(
        {
            "input_tokens": 100,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 7,
            "output_tokens": 12,
        }
    )
    assert usage == Usage(
        prompt_tokens=137,
        completion_tokens=12,
        total_tokens=149,
        cache_read_tokens=30,
        cache_write_tokens=7,
    )


def test_usage_treats_missing_and_null_cache_counts_as_zero() -> None:
    usage = wire.usage_of({"input_tokens": 40, "output_tokens": 2, "cache_read_input_tokens": None})
    assert usage == Usage(prompt_tokens=40, completion_tokens=2)


def test_no_usage_object_is_no_usage() -> None:
    assert wire.usage_of(None) is None


# -- 2xx bodies ------------------------------------------------------------------------------


def parse(body: bytes, content_type: str = "application/json") -> Any:
    return wire.parse_message_response(200, {"content-type": content_type}, body)


def test_text_blocks_are_joined_and_thinking_goes_to_reasoning() -> None:
    completion = parse(
        message(
            {"type": "thinking", "thinking": '{"kind": "REJECT"}', "signature": "s"},
            {"type": "redacted_thinking", "data": "opaque"},
            text('{"kind": '),
            text('"KEEP"}'),
        )
    )
    assert completion.text == '{"kind": "KEEP"}'
    assert completion.reasoning == '{"kind": "REJECT"}'
    assert (completion.finish_reason, completion.model) == ("end_turn", "claude-haiku-4-5")


def test_a_max_tokens_stop_is_truncated() -> None:
    assert parse(message(text("{"), stop_reason="max_tokens")).truncated


def test_a_refusal_keeps_the_vendor_explanation_and_category() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Not this one."}
    completion = parse(message(stop_reason="refusal", stop_details=details))
    assert completion.refusal == "cyber: Not this one."


def test_a_refusal_without_details_keeps_the_text_written_before_it() -> None:
    completion = parse(message(text("I can't judge this."), stop_reason="refusal"))
    assert completion.refusal == "I can't judge this."


def test_a_refusal_with_nothing_said_still_is_a_refusal() -> None:
    assert parse(message(stop_reason="refusal")).refusal == "the model declined to answer"


def test_no_content_blocks_is_an_empty_text_not_a_failure() -> None:
    assert parse(message()).text == ""


@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        (b"<html><body>Bad gateway</body></html>", "text/html", "HTML"),
        (b"", "application/json", "empty"),
        (b'{"id": "msg_1", "type": "mess', "application/json", "not JSON"),
    ],
    ids=["html", "empty", "truncated"],
)
def test_a_2xx_body_that_is_not_json_is_an_invalid_response(
    body: bytes, content_type: str, says: str
) -> None:
    with pytest.raises(CallFailure) as info:
        parse(body, content_type)
    assert info.value.kind is ErrorKind.INVALID_RESPONSE and says in info.value.message
    assert not info.value.retryable


@pytest.mark.parametrize("body", [b"[1, 2]", b'{"type": "message", "id": "msg_1"}'])
def test_a_2xx_json_that_is_not_a_message_is_an_invalid_response(body: bytes) -> None:
    with pytest.raises(CallFailure) as info:
        parse(body)
    assert info.value.kind is ErrorKind.INVALID_RESPONSE


def test_a_2xx_error_object_is_a_server_error_with_its_message() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(CallFailure) as info:
        parse(json.dumps(body).encode())
    assert info.value.kind is ErrorKind.SERVER and "overloaded_error: Overloaded" in str(info.value)


# -- error statuses --------------------------------------------------------------------------


def error_body(err_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": err_type, "message": message}}


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, ErrorKind.BAD_REQUEST, False),
        (401, ErrorKind.AUTH, False),
        (403, ErrorKind.AUTH, False),
        (404, ErrorKind.BAD_REQUEST, False),
        (408, ErrorKind.TIMEOUT, True),
        (409, ErrorKind.BAD_REQUEST, True),
        (413, ErrorKind.BAD_REQUEST, False),
        (429, ErrorKind.RATE_LIMIT, True),
        (500, ErrorKind.SERVER, True),
        (503, ErrorKind.SERVER, True),
        (529, ErrorKind.SERVER, True),
    ],
)
def test_error_statuses_are_classified(status: int, kind: ErrorKind, retryable: bool) -> None:
    failed = wire.status_failure(status, {}, error_body("some_error", "detail"))
    assert (failed.kind, failed.status, failed.retryable) == (kind, status, retryable)


def test_the_vendor_error_type_and_message_are_kept() -> None:
    failed = wire.status_failure(529, {}, error_body("overloaded_error", "Overloaded"))
    assert failed.message == "HTTP 529: overloaded_error: Overloaded"


def test_a_long_vendor_message_is_truncated() -> None:
    failed = wire.status_failure(400, {}, error_body("invalid_request_error", "x" * 5000))
    assert len(failed.message) < 600


def test_an_html_error_page_is_not_copied_into_the_message() -> None:
    failed = wire.status_failure(502, {}, "<html><body>Bad gateway</body></html>")
    assert failed.message == "HTTP 502: non-JSON error body"


def test_an_error_without_a_body_is_just_its_status() -> None:
    assert wire.status_failure(500, {}, None).message == "HTTP 500"


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "7"}, 0.25),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_the_headers(
    headers: dict[str, str], seconds: float | None
) -> None:
    failed = wire.status_failure(429, httpx2.Headers(headers), error_body("rate_limit_error", "x"))
    assert failed.retry_after == seconds


def status_error(
    status: int, body: dict[str, Any], headers: dict[str, str]
) -> anthropic.APIStatusError:
    req = httpx2.Request("POST", MESSAGE_URL)
    response = httpx2.Response(status, json=body, headers=headers, request=req)
    return anthropic.APIStatusError("error", response=response, body=body)


def test_an_sdk_status_error_is_classified_by_its_status_body_and_headers() -> None:
    exc = status_error(429, error_body("rate_limit_error", "Slow down"), {"Retry-After": "3"})
    failed = wire.classify_exception(exc, 5.0)
    assert (failed.kind, failed.retry_after) == (ErrorKind.RATE_LIMIT, 3.0)
    assert "rate_limit_error: Slow down" in failed.message


def test_an_sdk_timeout_is_a_timeout() -> None:
    exc = anthropic.APITimeoutError(request=httpx2.Request("POST", MESSAGE_URL))
    failed = wire.classify_exception(exc, 2.5)
    assert failed.kind is ErrorKind.TIMEOUT and "2.5s" in failed.message


def test_an_sdk_connection_error_is_a_connection_failure_naming_its_cause() -> None:
    exc = anthropic.APIConnectionError(request=httpx2.Request("POST", MESSAGE_URL))
    exc.__cause__ = httpx2.RemoteProtocolError("Server disconnected")
    failed = wire.classify_exception(exc, 5.0)
    assert failed.kind is ErrorKind.CONNECTION and failed.retryable
    assert failed.message == "RemoteProtocolError: Server disconnected"
