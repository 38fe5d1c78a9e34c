"""Specification of ``cross_judge.testing``: the simulated vendor, over its OpenAI
chat-completions and its Anthropic Messages endpoints.

Every test drives a real ``VendorServer`` on 127.0.0.1 over HTTP with plain ``httpx`` (one
with the ``anthropic`` SDK) and stops it before returning.

No outcome depends on the machine's speed (CI shares two cores under load): a client
timeout that must fire meets a reply that never completes, every other one is 30 s, and
requests that must be in flight together are held open (``Reply.hang``) until they are.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from cross_judge.testing import Persona, Reply, VendorServer, main

from ..waits import SAFETY_NET_S

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
# Plain HTTP on loopback: ignore proxy env vars (a proxy would take the request off
# 127.0.0.1) and skip loading the CA bundle, which costs ~50 ms per client.
CLIENT_OPTIONS: dict[str, Any] = {
    "timeout": SAFETY_NET_S / 10,
    "trust_env": False,
    "verify": False,
}
GIVE_UP = httpx.Timeout(30.0, read=0.5)
"""A client that gives up on a reply stalled for 0.5 s (connecting and sending never time
out): against a hang or a 30 s trickle, it always does."""
WAIT_S = SAFETY_NET_S
"""Bound for waits that normally take milliseconds."""


def wait_for(predicate: Callable[[], bool], seconds: float = WAIT_S) -> bool:
    """Poll ``predicate`` until it holds (True) or ``seconds`` pass (False)."""
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[tuple[VendorServer, httpx.Client]]:
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


def chat(client: httpx.Client, model: str, text: str = "an item", **headers: str) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": text}]}
    return client.post("/chat/completions", json=body, headers=headers)


def content(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def answer(client: httpx.Client, model: str, text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(content(chat(client, model, text)))
    return parsed


# -- persona answers -----------------------------------------------------------------------


def test_persona_answer_is_strict_json_with_a_label_from_its_vocabulary() -> None:
    with serving(Persona("critic", labels=("PASS", "FAIL"))) as (_, client):
        for i in range(20):
            verdict = answer(client, "critic", f"item {i}")
            assert verdict["kind"] in ("PASS", "FAIL")
            assert 0.6 <= verdict["confidence"] <= 0.95
            assert isinstance(verdict["reasoning"], str)
            assert verdict["reasoning"]


def test_same_item_gets_the_same_answer_every_time() -> None:
    with serving(Persona("critic", accuracy=0.5)) as (_, client):
        first = [answer(client, "critic", f"item {i}") for i in range(10)]
        again = [answer(client, "critic", f"item {i}") for i in range(10)]
    assert first == again


def test_answers_are_reproducible_across_servers() -> None:
    with serving(Persona("critic", accuracy=0.5, seed=7)) as (_, client):
        first = answer(client, "critic", "some item")
    with serving(Persona("critic", accuracy=0.5, seed=7)) as (_, client):
        assert answer(client, "critic", "some item") == first


def test_accuracy_over_400_gold_items_matches_persona_accuracy() -> None:
    gold = {f"gold item {i}": LABELS[i % 4] for i in range(400)}
    with serving(Persona("critic", accuracy=0.7), gold=gold) as (_, client):
        hits = sum(answer(client, "critic", item)["kind"] == label for item, label in gold.items())
    assert abs(hits / 400 - 0.7) <= 0.07


def test_personas_agree_on_a_latent_truth_without_gold() -> None:
    with serving(Persona("a", accuracy=1.0), Persona("b", accuracy=1.0, seed=3)) as (_, client):
        for i in range(20):
            assert answer(client, "a", f"x{i}")["kind"] == answer(client, "b", f"x{i}")["kind"]


def test_bias_steers_wrong_answers() -> None:
    gold = {f"item {i}": "KEEP" for i in range(30)}
    persona = Persona("critic", accuracy=0.0, bias={"SPLIT": 1.0})
    with serving(persona, gold=gold) as (_, client):
        kinds = {answer(client, "critic", item)["kind"] for item in gold}
    assert kinds == {"SPLIT"}


def test_wrong_answers_draw_confidence_from_the_lower_half() -> None:
    persona = Persona("critic", accuracy=0.0, confidence=(0.2, 0.8))
    with serving(persona) as (_, client):
        for i in range(20):
            assert 0.2 <= answer(client, "critic", f"item {i}")["confidence"] <= 0.5


def test_fenced_style_wraps_the_json_in_prose_and_a_json_fence() -> None:
    with serving(Persona("critic", style="fenced")) as (_, client):
        text = content(chat(client, "critic"))
    match = re.fullmatch(r"(.+?)\n+```json\n(.+?)\n```\n+(.+)", text, re.DOTALL)
    assert match is not None, text
    assert json.loads(match.group(2))["kind"] in LABELS
    assert match.group(1).strip()
    assert match.group(3).strip()


def test_think_style_puts_braces_in_a_think_block_before_the_json() -> None:
    with serving(Persona("critic", style="think")) as (_, client):
        text = content(chat(client, "critic"))
    match = re.fullmatch(r"<think>(.+?)</think>\s*(\{.+\})", text, re.DOTALL)
    assert match is not None, text
    assert "{" in match.group(1)
    assert "}" in match.group(1)
    assert json.loads(match.group(2))["kind"] in LABELS


def test_messy_style_has_a_trailing_comma_and_a_percent_confidence() -> None:
    with serving(Persona("critic", style="messy")) as (_, client):
        text = content(chat(client, "critic"))
    assert re.search(r",\s*}$", text), text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    repaired = json.loads(re.sub(r",\s*}$", "}", text))
    assert re.fullmatch(r"\d{1,3}%", repaired["confidence"])
    assert repaired["kind"] in LABELS


def test_latency_delays_the_answer() -> None:
    with serving(Persona("critic", latency=0.2)) as (_, client):
        started = time.monotonic()
        chat(client, "critic").raise_for_status()
        assert time.monotonic() - started >= 0.2


def test_success_body_is_a_chat_completion_with_usage() -> None:
    with serving(Persona("critic")) as (_, client):
        body = chat(client, "critic", "x" * 400).json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "critic"
    assert body["id"]
    assert isinstance(body["created"], int)
    (choice,) = body["choices"]
    assert choice["index"] == 0
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    usage = body["usage"]
    assert usage["prompt_tokens"] == 100
    assert usage["completion_tokens"] == len(choice["message"]["content"]) // 4
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_default_persona_answers_models_without_a_persona() -> None:
    with serving(default_persona=Persona("fallback", labels=("YES", "NO"))) as (_, client):
        response = chat(client, "any-model")
        assert json.loads(content(response))["kind"] in ("YES", "NO")
        assert response.json()["model"] == "any-model"


# -- item text and gold --------------------------------------------------------------------


def test_item_text_is_taken_from_the_last_item_fence() -> None:
    persona = Persona("critic", accuracy=1.0)
    prompt = "Example:\n<item>\nnot this\n</item>\nNow judge:\n<item>\n  the item  \n</item>\n"
    with serving(persona, gold={"the item": "MERGE"}) as (_, client):
        assert answer(client, "critic", prompt)["kind"] == "MERGE"


def test_item_text_is_read_from_the_last_user_message_text_parts() -> None:
    body = {
        "model": "critic",
        "messages": [
            {"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "an earlier question"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "<item>\nparts\n</item>"}]},
        ],
    }
    with serving(Persona("critic", accuracy=1.0), gold={"parts": "SPLIT"}) as (_, client):
        verdict = json.loads(content(client.post("/chat/completions", json=body)))
    assert verdict["kind"] == "SPLIT"


def test_gold_key_occurring_in_the_user_message_is_found() -> None:
    with serving(Persona("critic", accuracy=1.0), gold={"needle": "REJECT"}) as (_, client):
        assert answer(client, "critic", "Judge this: a needle in a haystack.")["kind"] == "REJECT"


def test_set_gold_changes_the_truth() -> None:
    with serving(Persona("critic", accuracy=1.0)) as (server, client):
        server.set_gold("late item", "SPLIT")
        assert answer(client, "critic", "late item")["kind"] == "SPLIT"


# -- scripted replies ----------------------------------------------------------------------


def test_script_replies_are_consumed_fifo_before_the_persona_answers() -> None:
    with serving(Persona("critic")) as (server, client):
        server.script("critic", Reply.content("first"), Reply.status(500))
        assert content(chat(client, "critic")) == "first"
        assert chat(client, "critic").status_code == 500
        assert json.loads(content(chat(client, "critic")))["kind"] in LABELS


def test_wildcard_script_applies_to_any_model_after_the_models_own_queue() -> None:
    with serving() as (server, client):
        server.script("*", Reply.content("star"))
        server.script("m", Reply.content("own"))
        assert content(chat(client, "m")) == "own"
        assert content(chat(client, "other")) == "star"
        assert chat(client, "other").status_code == 404


def test_always_overrides_every_request_until_cleared() -> None:
    with serving(Persona("critic")) as (server, client):
        server.always("critic", Reply.status(503))
        assert [chat(client, "critic").status_code for _ in range(3)] == [503, 503, 503]
        server.always("critic", None)
        assert chat(client, "critic").status_code == 200


def test_content_reply_sets_null_content_reasoning_refusal_and_finish_reason() -> None:
    reply = Reply.content(None, finish_reason="length", reasoning_content="thinking", refusal="no")
    with serving() as (server, client):
        server.script("m", reply)
        choice = chat(client, "m").json()["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "thinking",
        "refusal": "no",
    }
    assert choice["finish_reason"] == "length"


def test_status_reply_has_retry_after_and_an_openai_error_body() -> None:
    with serving() as (server, client):
        server.script("m", Reply.status(429, retry_after=1.5), Reply.status(429, retry_after=0))
        response = chat(client, "m")
        assert response.status_code == 429
        assert response.headers["Retry-After"] == "1.5"
        error = response.json()["error"]
        assert error["type"] == "rate_limit_error"
        assert error["code"] == "rate_limit_exceeded"
        assert error["message"]
        assert chat(client, "m").headers["Retry-After"] == "0"


def test_status_reply_sends_a_custom_message_headers_and_body() -> None:
    with serving() as (server, client):
        server.script(
            "m",
            Reply.status(500, message="boom", headers={"X-Request-Id": "r1"}),
            Reply.status(502, body="not json"),
        )
        response = chat(client, "m")
        assert response.json()["error"]["message"] == "boom"
        assert response.headers["X-Request-Id"] == "r1"
        assert chat(client, "m").text == "not json"


def test_html_reply_is_a_text_html_page() -> None:
    with serving() as (server, client):
        server.script("m", Reply.html(502))
        response = chat(client, "m")
    assert response.status_code == 502
    assert response.headers["Content-Type"].startswith("text/html")
    assert "<html" in response.text


def test_raw_reply_sends_the_body_verbatim() -> None:
    with serving() as (server, client):
        server.script("m", Reply.raw(b'{"choices": [', status=200, content_type="text/plain"))
        response = chat(client, "m")
    assert response.status_code == 200
    assert response.content == b'{"choices": ['
    assert response.headers["Content-Type"].startswith("text/plain")


def test_reset_reply_gives_the_client_a_connection_error() -> None:
    with serving() as (server, client):
        server.script("m", Reply.reset())
        with pytest.raises(httpx.TransportError):
            chat(client, "m")
        server.script("m", Reply.content("still serving"))
        assert content(chat(client, "m")) == "still serving"


def test_trickle_sends_a_valid_completion_one_byte_per_interval() -> None:
    with serving() as (server, client):
        server.script("m", Reply.trickle("slow", interval=0.001))
        started = time.monotonic()
        response = chat(client, "m")
        elapsed = time.monotonic() - started
    assert content(response) == "slow"
    assert elapsed >= 0.001 * len(response.content) * 0.5  # each byte waited (loosely)


def test_trickle_ends_when_the_client_gives_up() -> None:
    with serving() as (server, client):
        server.script("m", Reply.trickle(interval=30.0))
        with pytest.raises(httpx.ReadTimeout):
            client.post("/chat/completions", json={"model": "m"}, timeout=GIVE_UP)
        # The handler stopped with the client, long before its next byte was due.
        assert wait_for(lambda: server.stats()["in_flight"] == 0)


@pytest.mark.parametrize("interval", [0, -1.0])
def test_trickle_interval_must_be_positive(interval: float) -> None:
    with pytest.raises(ValueError, match="interval must be > 0"):
        Reply.trickle(interval=interval)


def test_hang_is_released_by_stop_and_the_client_sees_an_error() -> None:
    errors: queue.Queue[BaseException | None] = queue.Queue()

    def call(url: str) -> None:
        try:
            with httpx.Client(base_url=url, **CLIENT_OPTIONS) as c:
                chat(c, "m")
            errors.put(None)
        except BaseException as exc:
            errors.put(exc)

    server = VendorServer()
    with server:
        server.always("m", Reply.hang())
        threads = [threading.Thread(target=call, args=(server.url,)) for _ in range(3)]
        for t in threads:
            t.start()
        assert wait_for(lambda: server.stats()["in_flight"] == 3)
        server.stop()  # the clients' 30 s timeout is not what ends their calls
    for t in threads:
        t.join(WAIT_S)
    results = [errors.get(timeout=WAIT_S) for _ in threads]
    assert all(isinstance(r, httpx.TransportError) for r in results), results
    # stop() joins its thread for at most 5 s; on a loaded machine the loop can take longer
    # to wind down, so wait for this server's thread (the safety net) instead of asserting.
    own = f"cross-judge-vendor-server-{id(server):x}"
    assert wait_for(lambda: not [t for t in threading.enumerate() if t.name == own])


def test_hang_ends_when_the_client_gives_up() -> None:
    with serving() as (server, client):
        server.script("m", Reply.hang())
        with pytest.raises(httpx.ReadTimeout):
            client.post("/chat/completions", json={"model": "m"}, timeout=GIVE_UP)
        assert wait_for(lambda: server.stats()["in_flight"] == 0)


def test_fault_rate_one_gives_only_faults_and_counts_them() -> None:
    with serving(Persona("critic", fault_rate=1.0)) as (server, client):
        responses = [chat(client, "critic", f"item {i}") for i in range(20)]
        assert server.stats()["faults"] == 20
    for r in responses:
        if r.status_code == 200:  # the malformed fault
            with pytest.raises(json.JSONDecodeError):
                r.json()
        else:
            assert r.status_code in (429, 500, 503)
            assert "error" in r.json()


# -- errors, auth, endpoints ---------------------------------------------------------------


def test_unknown_model_gets_404_model_not_found() -> None:
    with serving(Persona("critic")) as (_, client):
        response = chat(client, "x")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "message": "The model 'x' does not exist",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


def test_body_that_is_not_json_gets_400() -> None:
    with serving(Persona("critic")) as (_, client):
        response = client.post("/chat/completions", content=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_api_key_is_required_when_configured() -> None:
    with serving(Persona("critic"), api_key="sk-test") as (_, client):
        assert chat(client, "critic").status_code == 401
        wrong = chat(client, "critic", Authorization="Bearer nope")
        assert wrong.status_code == 401
        assert wrong.json()["error"]["code"] == "invalid_api_key"
        assert chat(client, "critic", Authorization="Bearer sk-test").status_code == 200


def test_recent_requests_redact_the_authorization_header() -> None:
    with serving(Persona("critic"), api_key="sk-secret") as (server, client):
        chat(client, "critic", "hello", Authorization="Bearer sk-secret")
        (recent,) = server.recent_requests
    assert recent["model"] == "critic"
    assert recent["path"] == "/v1/chat/completions"
    assert recent["body"]["messages"][0]["content"] == "hello"
    auth = {k.lower(): v for k, v in recent["headers"].items()}["authorization"]
    assert auth == "Bearer ***"
    assert "sk-secret" not in json.dumps(recent)


def test_recent_requests_keep_the_last_100() -> None:
    with serving(Persona("critic")) as (server, client):
        for i in range(105):
            chat(client, "critic", f"item {i}")
        recent = server.recent_requests
    assert len(recent) == 100
    assert recent[-1]["body"]["messages"][0]["content"] == "item 104"


def test_stats_count_requests_models_connections_and_concurrency() -> None:
    with serving(Persona("a"), Persona("b")) as (server, client):
        for model in ("a", "a", "b", "nope"):
            chat(client, model)
        stats = server.stats()
    assert stats == {
        "requests": 4,
        "by_model": {"a": 2, "b": 1, "nope": 1},
        "in_flight": 0,
        "max_in_flight": 1,
        "connections": 1,
        "faults": 0,
        "faults_by_kind": {},
        "rate_limited": 0,
        "refusals": 0,
        "refusals_by_feature": {},
        "files_uploaded": 0,
        "batches": {"openai": 0, "anthropic": 0},
        "batch_requests": {"openai": 0, "anthropic": 0},
        "batch_polls": 0,
        "images": 0,
        "images_refused": 0,
        "too_large": 0,
    }


def test_reset_stats_zeroes_counters_and_recent_requests() -> None:
    with serving(Persona("a")) as (server, client):
        chat(client, "a")
        server.reset_stats()
        assert server.stats()["requests"] == 0
        assert server.stats()["by_model"] == {}
        assert server.recent_requests == []


def test_http_endpoints_list_models_and_serve_stats() -> None:
    with serving(Persona("a"), Persona("b")) as (server, client):
        models = client.get("/models").json()
        chat(client, "a")
        root = str(server.url).removesuffix("/v1")
        with httpx.Client(base_url=root, **CLIENT_OPTIONS) as plain:
            stats = plain.get("/stats").json()
            reset = plain.post("/stats/reset").json()
    assert [m["id"] for m in models["data"]] == ["a", "b"]
    assert stats["requests"] == 1
    assert reset["requests"] == 0


def test_chat_completions_is_also_served_without_the_v1_prefix() -> None:
    with serving(Persona("critic")) as (server, _):
        root = server.url.removesuffix("/v1")
        body = {"model": "critic", "messages": [{"role": "user", "content": "x"}]}
        with httpx.Client(base_url=root, **CLIENT_OPTIONS) as plain:
            assert plain.post("/chat/completions", json=body).status_code == 200


async def _raw_post(port: int, body: bytes) -> int:
    """One request on its own connection; returns the status code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode() + body)
        status_line = await reader.readline()
        await reader.read()  # until the server closes
        return int(status_line.split()[1])
    finally:
        writer.close()
        await writer.wait_closed()


def test_1000_concurrent_requests_are_served_in_parallel() -> None:
    # Raw asyncio streams, not httpx: httpx's pool, not the server, is the bottleneck at
    # this concurrency. 1000 client + 1000 server sockets need a few thousand fds.
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        if hard != resource.RLIM_INFINITY and hard < 4096:
            pytest.skip("needs RLIMIT_NOFILE >= 4096")
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
    body = json.dumps({"model": "held", "messages": [{"role": "user", "content": "x"}]})

    async def burst(server: VendorServer) -> int:
        """Send 1000 requests that the server holds; how many it held at once."""
        posts = [asyncio.ensure_future(_raw_post(server.port, body.encode())) for _ in range(1000)]
        try:
            deadline = time.monotonic() + SAFETY_NET_S
            while server.stats()["in_flight"] < 1000 and time.monotonic() < deadline:  # noqa: ASYNC110 - a counter, no event
                await asyncio.sleep(0.02)
            return int(server.stats()["max_in_flight"])
        finally:
            for post in posts:
                post.cancel()
            await asyncio.gather(*posts, return_exceptions=True)

    # Every request hangs, so all 1000 are held at once unless the server serialises them,
    # however slowly a loaded machine opens the connections; then one more is answered.
    with VendorServer([Persona("answers")]) as server:
        server.always("held", Reply.hang())
        held = asyncio.run(burst(server))
        with httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client:
            assert json.loads(content(chat(client, "answers")))["kind"] in LABELS
        assert wait_for(lambda: server.stats()["in_flight"] == 0)
    assert held == 1000


# -- lifecycle -----------------------------------------------------------------------------


def test_start_and_stop_are_idempotent_and_url_names_the_port() -> None:
    server = VendorServer()
    assert server.start() is server
    try:
        assert server.start() is server
        assert server.url == f"http://127.0.0.1:{server.port}/v1"
    finally:
        server.stop()
        server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/models", **CLIENT_OPTIONS)


def test_start_raises_runtime_error_when_the_port_is_taken() -> None:
    with VendorServer() as first, pytest.raises(RuntimeError, match="could not listen"):
        VendorServer(port=first.port).start()


def test_url_before_start_raises() -> None:
    with pytest.raises(RuntimeError, match="start"):
        _ = VendorServer().url


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.1", "example.com", ""])
def test_non_loopback_host_is_rejected(host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        VendorServer(host=host)


def test_localhost_binds_127_0_0_1() -> None:
    with VendorServer(host="localhost") as server:
        assert server.url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"accuracy": 1.5}, "accuracy"),
        ({"fault_rate": -0.1}, "fault_rate"),
        ({"latency": -1.0}, "latency"),
        ({"labels": ()}, "labels"),
        ({"confidence": (0.9, 0.5)}, "confidence"),
        ({"confidence": (0.5, 1.2)}, "confidence"),
        ({"bias": {"NOPE": 1.0}}, "bias"),
    ],
)
def test_invalid_persona_fields_raise_value_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Persona("critic", **kwargs)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Reply.status(99),
        lambda: Reply.status(429, retry_after=-1),
        lambda: Reply.content("x", latency=-0.1),
        lambda: Reply.html(700),
    ],
)
def test_reply_factories_reject_invalid_arguments(make: Any) -> None:
    with pytest.raises(ValueError, match="must"):
        make()


def test_raw_reply_requires_bytes() -> None:
    with pytest.raises(TypeError, match="bytes"):
        Reply.raw("text")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_async_context_manager_works_inside_a_running_event_loop() -> None:
    body = {"model": "critic", "messages": [{"role": "user", "content": "x"}]}
    async with (
        VendorServer([Persona("critic")]) as server,
        httpx.AsyncClient(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        response = await client.post("/chat/completions", json=body)
    assert response.status_code == 200
    assert json.loads(response.json()["choices"][0]["message"]["content"])["kind"] in LABELS


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX")
def test_cli_prints_ready_serves_and_stops_on_sigterm() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-m", "cross_judge.testing", "--port", "0", "--latency", "0.01"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    ) as proc:
        try:
            stdout = proc.stdout
            assert stdout is not None
            lines: queue.Queue[str] = queue.Queue()
            # readline() blocks; a helper thread bounds the wait.
            threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
            ready = lines.get(timeout=SAFETY_NET_S)
            match = re.fullmatch(r"READY (\d+)\n", ready)
            assert match is not None, ready
            url = f"http://127.0.0.1:{match.group(1)}/v1"
            with httpx.Client(base_url=url, **CLIENT_OPTIONS) as client:
                assert json.loads(content(chat(client, "any-model")))["kind"] in LABELS
            proc.terminate()
            assert proc.wait(timeout=SAFETY_NET_S) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=SAFETY_NET_S)


def test_cli_main_prints_ready_and_returns_after_max_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    assert main(["--port", "0", "--max-seconds", "0.2"]) == 0
    assert time.monotonic() - started < WAIT_S  # not the default 900 s
    assert re.fullmatch(r"READY \d+\n", capsys.readouterr().out)


# -- capacity and item counts ----------------------------------------------------------------


@contextmanager
def held_open(url: str, count: int, send: Callable[[httpx.Client], object]) -> Iterator[None]:
    """``count`` requests sent by ``send`` from threads, each on its own client, held open
    for the block, which must stop the server; each must then end in a transport error."""
    outcomes: queue.Queue[object] = queue.Queue()

    def call() -> None:
        try:
            with httpx.Client(base_url=url, **CLIENT_OPTIONS) as own:
                outcomes.put(send(own))
        except BaseException as exc:
            outcomes.put(exc)

    threads = [threading.Thread(target=call) for _ in range(count)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        for t in threads:
            t.join(WAIT_S)
    ended = [outcomes.get(timeout=WAIT_S) for _ in threads]
    assert all(isinstance(e, httpx.TransportError) for e in ended), ended


def test_capacity_answers_429_without_retry_after_like_deepseek() -> None:
    with serving(Persona("critic"), capacity=2) as (server, client):
        server.always("critic", Reply.hang())  # those admitted stay in flight
        with held_open(server.url, 2, lambda own: chat(own, "critic", "held")):
            assert wait_for(lambda: server.stats()["in_flight"] == 2)
            refused = [chat(client, "critic", f"item {i}") for i in range(3)]
            stats = server.stats()
            server.stop()
    assert [r.status_code for r in refused] == [429] * 3
    assert stats["rate_limited"] == 3 and stats["max_in_flight"] == 2
    assert all("retry-after" not in r.headers for r in refused)
    assert all(not k.startswith("x-ratelimit") for r in refused for k in r.headers)
    assert refused[0].json()["error"]["type"] == "rate_limit_error"


def test_item_requests_counts_persona_requests_per_fenced_item() -> None:
    with serving(Persona("critic"), count_items=True) as (server, client):
        chat(client, "critic", "<item>\nA\n</item>")
        chat(client, "critic", "<item>A</item>")
        chat(client, "critic", "B")
        assert server.item_requests() == {"A": 2, "B": 1}
        server.reset_stats()
        assert server.item_requests() == {}


def test_item_requests_needs_count_items() -> None:
    with serving(Persona("critic")) as (server, _), pytest.raises(RuntimeError, match="count"):
        server.item_requests()


# -- the Anthropic Messages endpoint -------------------------------------------------------

NEW_API = {"anthropic-version": "2026-10-21"}


@contextmanager
def serving_messages(
    *personas: Persona, **kwargs: Any
) -> Iterator[tuple[VendorServer, httpx.Client]]:
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.anthropic_url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


def send(
    client: httpx.Client,
    model: str,
    text: str = "an item",
    *,
    path: str = "/v1/messages",
    headers: dict[str, str] | None = None,
    **fields: Any,
) -> httpx.Response:
    body = {
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        **fields,
    }
    return client.post(path, json=body, headers={**NEW_API, **(headers or {})})


def message_text(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    blocks = response.json()["content"]
    return "".join(b["text"] for b in blocks if b["type"] == "text")


def test_anthropic_url_is_the_origin_and_url_adds_v1() -> None:
    with VendorServer() as server:
        assert server.anthropic_url == f"http://127.0.0.1:{server.port}"
        assert server.url == f"{server.anthropic_url}/v1"


def test_messages_persona_answer_is_a_message_with_content_blocks_and_usage() -> None:
    with serving_messages(Persona("critic")) as (_, client):
        data = send(client, "critic", "an item", system="Be brief.").json()
    assert (data["type"], data["role"], data["model"]) == ("message", "assistant", "critic")
    assert data["id"].startswith("msg_") and data["stop_reason"] == "end_turn"
    [block] = data["content"]
    assert block["type"] == "text" and json.loads(block["text"])["kind"] in LABELS
    usage = data["usage"]
    assert usage["input_tokens"] == len("Be brief." + "an item") // 4
    assert usage["output_tokens"] == len(block["text"]) // 4
    assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0


def test_a_persona_gives_the_same_answer_over_both_protocols() -> None:
    with serving_messages(Persona("critic", accuracy=0.5)) as (server, client):
        for i in range(10):
            over_messages = json.loads(message_text(send(client, "critic", f"item {i}")))
            with httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as chat_client:
                assert answer(chat_client, "critic", f"item {i}") == over_messages


def test_messages_is_also_served_without_the_v1_prefix() -> None:
    with serving_messages(Persona("critic")) as (_, client):
        assert message_text(send(client, "critic", path="/messages"))


def test_messages_needs_post() -> None:
    with serving_messages() as (_, client):
        response = client.get("/v1/messages")
    assert response.status_code == 405 and response.json()["type"] == "error"


def test_messages_require_x_api_key_when_a_key_is_configured() -> None:
    with serving_messages(Persona("critic"), api_key="secret") as (_, client):
        refused = send(client, "critic")
        wrong = send(client, "critic", headers={"x-api-key": "nope"})
        accepted = send(client, "critic", headers={"x-api-key": "secret"})
        bearer = send(client, "critic", headers={"Authorization": "Bearer secret"})
    assert refused.status_code == wrong.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    assert accepted.status_code == bearer.status_code == 200


def test_messages_without_a_valid_max_tokens_get_400() -> None:
    with serving_messages(Persona("critic")) as (_, client):
        missing = client.post(
            "/v1/messages",
            json={"model": "critic", "messages": [{"role": "user", "content": "x"}]},
        )
        zero = send(client, "critic", max_tokens=0)
    assert missing.status_code == zero.status_code == 400
    assert missing.json()["error"] == {
        "type": "invalid_request_error",
        "message": "max_tokens: Field required",
    }


@pytest.mark.parametrize("name", ["temperature", "top_p", "top_k"])
def test_sampling_parameters_get_400_from_api_version_2026_10_21(name: str) -> None:
    with serving_messages(Persona("critic")) as (_, client):
        response = send(client, "critic", **{name: 1})
        old_api = send(client, "critic", headers={"anthropic-version": "2023-06-01"}, **{name: 1})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == f"{name}: Extra inputs are not permitted"
    assert old_api.status_code == 200


def test_messages_for_an_unknown_model_get_404_not_found_error() -> None:
    with serving_messages() as (_, client):
        response = send(client, "nobody")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize(
    ("status", "err_type"),
    [
        (400, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
    ],
)
def test_status_reply_on_messages_has_an_anthropic_error_body(status: int, err_type: str) -> None:
    with serving_messages() as (server, client):
        server.script("m", Reply.status(status, message="detail", retry_after=2))
        response = send(client, "m")
    assert response.status_code == status and response.headers["retry-after"] == "2"
    assert response.json() == {"type": "error", "error": {"type": err_type, "message": "detail"}}


def test_status_reply_with_a_verbatim_body_sends_it_to_both_protocols() -> None:
    with serving_messages() as (server, client):
        server.always("m", Reply.status(418, body="short and stout"))
        over_messages = send(client, "m")
        with httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as chat_client:
            over_chat = chat(chat_client, "m")
    assert over_messages.text == over_chat.text == "short and stout"


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
    ],
)
def test_content_reply_on_messages_maps_the_finish_reason(
    finish_reason: str, stop_reason: str
) -> None:
    with serving_messages() as (server, client):
        server.script("m", Reply.content("hi", finish_reason=finish_reason))
        data = send(client, "m").json()
    assert data["stop_reason"] == stop_reason
    assert data["content"] == [{"type": "text", "text": "hi"}]


def test_content_reply_on_messages_puts_reasoning_in_a_thinking_block_first() -> None:
    with serving_messages() as (server, client):
        server.script("m", Reply.content("answer", reasoning_content="pondering"))
        blocks = send(client, "m").json()["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text"]
    assert blocks[0]["thinking"] == "pondering"


def test_content_reply_on_messages_with_a_refusal_stops_for_refusal() -> None:
    with serving_messages() as (server, client):
        server.script("m", Reply.content(None, refusal="Not this."))
        data = send(client, "m").json()
    assert (data["content"], data["stop_reason"]) == ([], "refusal")
    assert data["stop_details"] == {"type": "refusal", "category": None, "explanation": "Not this."}


def test_content_reply_usage_is_reported_verbatim_in_both_protocols() -> None:
    anthropic_usage = {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 2}
    chat_usage = {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}
    with serving_messages() as (server, client):
        server.script(
            "m", Reply.content("a", usage=anthropic_usage), Reply.content("b", usage=chat_usage)
        )
        over_messages = send(client, "m").json()
        with httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as chat_client:
            over_chat = chat(chat_client, "m").json()
    assert over_messages["usage"] == anthropic_usage
    assert over_chat["usage"] == chat_usage


def test_html_raw_and_reset_replies_work_on_messages() -> None:
    with serving_messages() as (server, client):
        server.script("m", Reply.html(502), Reply.raw(b'{"type": "mess'), Reply.reset())
        html = send(client, "m")
        raw = send(client, "m")
        with pytest.raises(httpx.TransportError):
            send(client, "m")
    assert html.status_code == 502 and html.headers["content-type"].startswith("text/html")
    assert raw.content == b'{"type": "mess'


def test_hang_on_messages_ends_when_the_client_gives_up() -> None:
    with serving_messages() as (server, client):
        server.script("m", Reply.hang())
        with pytest.raises(httpx.ReadTimeout):
            client.post(
                "/v1/messages",
                json={"model": "m", "max_tokens": 5},
                headers=NEW_API,
                timeout=GIVE_UP,
            )
        assert wait_for(lambda: server.stats()["in_flight"] == 0)


def test_fault_rate_faults_on_messages_are_anthropic_shaped() -> None:
    with serving_messages(Persona("critic", fault_rate=1.0)) as (server, client):
        responses = [send(client, "critic", f"item {i}") for i in range(20)]
        assert server.stats()["faults"] == 20
    errors = [r for r in responses if r.status_code >= 400]
    assert errors and all(r.json()["type"] == "error" for r in errors)
    malformed = [r for r in responses if r.status_code == 200]
    assert all(r.content.startswith(b'{"id": "msg_fault"') for r in malformed)


def test_capacity_429_on_messages_is_an_anthropic_rate_limit_error() -> None:
    with serving_messages(Persona("critic"), capacity=1) as (server, client):
        server.always("critic", Reply.hang())  # the one admitted stays in flight
        with held_open(server.anthropic_url, 1, lambda own: send(own, "critic", "held")):
            assert wait_for(lambda: server.stats()["in_flight"] == 1)
            refused = [send(client, "critic", f"item {i}") for i in range(2)]
            server.stop()
    assert [r.status_code for r in refused] == [429] * 2
    assert all(r.json()["error"]["type"] == "rate_limit_error" for r in refused)


def test_messages_requests_are_counted_and_recorded_with_their_path() -> None:
    with serving_messages(Persona("critic"), api_key="k", count_items=True) as (server, client):
        send(client, "critic", "<item>A</item>", headers={"x-api-key": "k"})
        with httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as chat_client:
            chat(chat_client, "critic", "<item>A</item>", Authorization="Bearer k")
        stats = server.stats()
        recent = server.recent_requests
        items = server.item_requests()
    assert stats["requests"] == 2 and stats["by_model"] == {"critic": 2}
    assert items == {"A": 2}
    assert [r["path"] for r in recent] == ["/v1/messages", "/v1/chat/completions"]
    assert recent[0]["headers"]["x-api-key"] == "***"


def test_the_anthropic_sdk_reads_the_servers_messages() -> None:
    import anthropic

    with (
        VendorServer([Persona("critic")]) as server,
        anthropic.Anthropic(
            base_url=server.anthropic_url, api_key="unused", max_retries=0, timeout=30.0
        ) as client,
    ):
        reply = client.messages.create(
            model="critic",
            max_tokens=100,
            system="Be brief.",
            messages=[{"role": "user", "content": "an item"}],
        )
    assert reply.stop_reason == "end_turn" and reply.usage.input_tokens > 0
    [block] = reply.content
    assert block.type == "text" and json.loads(block.text)["kind"] in LABELS


# -- resampling personas -------------------------------------------------------------------------


def sampled_chat(
    client: httpx.Client, model: str, text: str, temperature: float | None = 0.7
) -> str:
    """The answer text to a chat request at ``temperature`` (``None``: none sent)."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": text}]}
    if temperature is not None:
        body["temperature"] = temperature
    return str(content(client.post("/chat/completions", json=body)))


def test_a_persona_repeats_its_answer_by_default() -> None:
    with serving(Persona("critic", accuracy=0.3)) as (_, client):
        answers = {sampled_chat(client, "critic", "an item") for _ in range(8)}
    assert len(answers) == 1


def test_a_resampling_persona_answers_each_repeat_as_a_new_draw() -> None:
    with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
        answers = [sampled_chat(client, "critic", "an item") for _ in range(8)]
    assert len(set(answers)) > 1


def test_a_resampling_personas_first_answer_is_its_answer_without_resampling() -> None:
    with serving(Persona("critic", accuracy=0.3)) as (_, client):
        plain = sampled_chat(client, "critic", "an item")
    with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
        first = sampled_chat(client, "critic", "an item")
    assert first == plain


def test_a_resampling_persona_draws_the_same_sequence_on_a_fresh_server() -> None:
    runs = []
    for _ in range(2):
        with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
            runs.append([sampled_chat(client, "critic", "an item") for _ in range(6)])
    assert runs[0] == runs[1]


def test_a_resampling_persona_repeats_itself_at_temperature_zero() -> None:
    with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
        answers = {sampled_chat(client, "critic", "an item", temperature=0.0) for _ in range(8)}
    assert len(answers) == 1


def test_a_request_without_a_temperature_samples_at_the_vendor_default() -> None:
    with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
        answers = {sampled_chat(client, "critic", "an item", temperature=None) for _ in range(8)}
    assert len(answers) > 1


def test_resampling_draws_are_counted_per_item() -> None:
    with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
        sampled_chat(client, "critic", "item one")
        sampled_chat(client, "critic", "item one")
        first_of_two = sampled_chat(client, "critic", "item two")
    with serving(Persona("critic", accuracy=0.3)) as (_, client):
        assert first_of_two == sampled_chat(client, "critic", "item two")


def test_a_faulted_request_uses_up_no_draw() -> None:
    body = {"model": "critic", "messages": [{"role": "user", "content": "an item"}]}
    with serving(Persona("critic", accuracy=0.3, resample=True)) as (_, client):
        clean = [sampled_chat(client, "critic", "an item") for _ in range(4)]
    faulty = Persona("critic", accuracy=0.3, resample=True, fault_rate=0.5)
    answered: list[str] = []
    with serving(faulty) as (server, client):
        for _ in range(100):  # bounded: four answers come long before
            response = client.post("/chat/completions", json={**body, "temperature": 0.7})
            try:
                answered.append(str(response.json()["choices"][0]["message"]["content"]))
            except (ValueError, KeyError):  # a 429, 500, 503 or truncated body
                continue
            if len(answered) == 4:
                break
        faults = server.stats()["faults"]
    assert faults > 0
    assert answered == clean
