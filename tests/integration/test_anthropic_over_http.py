"""The acceptance list of the native Anthropic path, over real HTTP to a local Messages server.

Each test drives ``Critic(vendor="anthropic")`` -> the ``anthropic`` SDK -> httpx2 (over
aiohttp under asyncio, httpcore under trio) -> socket -> ``VendorServer``'s
``/v1/messages`` -> parsing -> Verdict.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any

import anyio
import anyio.to_thread
import pytest

from cross_judge import Critic, Ensemble, ErrorKind
from cross_judge.pricing import price_for
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport import _pool
from cross_judge.verdict import Usage

from ..waits import SAFETY_NET_S
from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

VERDICT = '{"kind": "KEEP", "confidence": 0.8, "reasoning": "fine"}'


def claude(server: VendorServer, model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("base_url", server.anthropic_url)
    return Critic(name="claude", model=model, vendor="anthropic", **kwargs)


def last_request(server: VendorServer) -> dict[str, Any]:
    request: dict[str, Any] = server.recent_requests[-1]
    assert request["path"] == "/v1/messages"
    return request


def headers_of(request: dict[str, Any]) -> dict[str, str]:
    return {k.lower(): v for k, v in request["headers"].items()}


def cost(usage: Usage, *, vendor: str, model: str) -> float:
    """The cost of ``usage`` from the shipped price table, computed here by hand."""
    price = price_for(vendor, model)
    assert price is not None and price.cache_read is not None
    read, written = usage.cache_read_tokens, usage.cache_write_tokens
    uncached = usage.prompt_tokens - read - written
    write_rate = price.input if price.cache_write is None else price.cache_write
    return (
        uncached * price.input
        + read * price.cache_read
        + written * write_rate
        + usage.completion_tokens * price.output
    ) / 1_000_000


# -- a valid answer -----------------------------------------------------------------------------


async def test_a_valid_answer_becomes_a_verdict_with_its_usage_and_cost(
    server: VendorServer,
) -> None:
    model = "claude-haiku-4-5"  # priced in prices.yaml
    reported = {
        "input_tokens": 1200,
        "cache_read_input_tokens": 300,
        "cache_creation_input_tokens": 20,
        "output_tokens": 80,
    }
    server.script(model, Reply.content(VERDICT, usage=reported))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.confidence, v.error, v.attempts) == ("KEEP", 0.8, None, 1)
    assert (v.vendor, v.model, v.raw_response) == ("anthropic", model, VERDICT)
    assert v.usage == Usage(
        prompt_tokens=1520,
        completion_tokens=80,
        cache_read_tokens=300,
        cache_write_tokens=20,
    )
    expected = (1200 * 1.00 + 300 * 0.10 + 20 * 1.25 + 80 * 5.00) / 1_000_000
    assert v.cost_usd == pytest.approx(expected)


async def test_a_persona_answers_through_the_messages_api() -> None:
    with VendorServer([Persona("claude-haiku-4-5", accuracy=1.0)], api_key=KEY) as server:
        async with claude(server, "claude-haiku-4-5") as c:
            v = await c.judge("an item")
    assert v.is_valid and v.kind in ("KEEP", "REJECT", "SPLIT", "MERGE")
    assert v.usage is not None and v.usage.prompt_tokens > 0 and v.usage.completion_tokens > 0


# -- what is sent -------------------------------------------------------------------------------


async def test_the_system_prompt_is_sent_as_system_and_the_query_as_the_one_user_message(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(VERDICT))
    system = "You judge taxonomy merges. Output JSON."
    async with claude(server, model, system_prompt=system, prompt_template="Q: {query}") as c:
        await c.judge("Cats vs Felines")
    body = last_request(server)["body"]
    assert body["system"] == system
    assert body["messages"] == [{"role": "user", "content": "Q: Cats vs Felines"}]


async def test_an_empty_system_prompt_is_not_sent(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model, system_prompt="", prompt_template="JSON: {query}") as c:
        await c.judge("item")
    assert "system" not in last_request(server)["body"]


async def test_max_tokens_is_sent(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model, max_tokens=321) as c:
        await c.judge("item")
    assert last_request(server)["body"]["max_tokens"] == 321


@pytest.mark.parametrize("family", ["claude-haiku-4-5", "claude-opus-4-7", "claude-sonnet-5-5"])
async def test_no_temperature_is_sent_so_the_current_api_version_accepts_the_call(
    server: VendorServer, family: str, request: pytest.FixtureRequest
) -> None:
    model = f"{family}-{request.node.name}"  # unique, so scripts never leak between tests
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model, temperature=0.7) as c:
        v = await c.judge("item")
    sent = last_request(server)
    assert v.is_valid
    assert headers_of(sent)["anthropic-version"] >= "2026-10-21"
    assert not {"temperature", "top_p", "top_k"} & set(sent["body"])


async def test_temperature_and_seed_are_not_sent_and_each_is_warned_once(
    server: VendorServer, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cross_judge")
    server.script(model, Reply.content(VERDICT), Reply.content(VERDICT))
    async with claude(server, model, temperature=0.7, seed=7) as c:
        verdicts = [await c.judge("item one"), await c.judge("item two")]
    bodies = [r["body"] for r in server.recent_requests if r["body"].get("model") == model]
    assert all(v.is_valid for v in verdicts) and len(bodies) == 2
    for body in bodies:
        assert not {"temperature", "top_p", "top_k", "seed"} & set(body)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2
    assert any(f"model {model!r}: temperature=0.7 is not sent" in w for w in warned)
    assert any(f"model {model!r}: seed=7 is not sent" in w for w in warned)


async def test_the_key_is_sent_as_x_api_key_and_not_as_a_bearer_token(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model) as c:
        v = await c.judge("item")
    headers = headers_of(last_request(server))
    assert v.is_valid  # the server checked x-api-key against KEY
    assert headers["x-api-key"] == "***" and "authorization" not in headers


async def test_a_base_url_ending_in_v1_reaches_the_same_endpoint(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model, base_url=server.url) as c:
        v = await c.judge("item")
    assert v.is_valid and last_request(server)["path"] == "/v1/messages"


# -- the key stays secret -----------------------------------------------------------------------


async def test_the_key_appears_in_no_log_line_error_or_dump(
    server: VendorServer, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the anthropic and httpx2 loggers included
    server.script(model, Reply.status(401, message=f"invalid x-api-key {KEY}"))
    async with claude(server, model) as c:
        v = await c.judge("item")
        dumped = c.model_dump_json() + repr(c)
    assert v.error_kind is ErrorKind.AUTH and "invalid x-api-key" in (v.error or "")
    assert any(r.name.startswith("anthropic") for r in caplog.records)
    for text in (caplog.text, v.model_dump_json(), dumped, repr(_pool._by_loop)):
        assert KEY not in text


# -- failures and retries -----------------------------------------------------------------------


async def test_a_429_with_retry_after_is_retried_then_succeeds(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.status(429, retry_after=0), Reply.content(VERDICT))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.attempts, v.error) == ("KEEP", 2, None)


async def test_a_429_without_retry_after_is_retried_then_succeeds(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.script(model, Reply.status(429), Reply.content(VERDICT))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.attempts, v.error) == ("KEEP", 2, None)


async def test_a_529_overloaded_is_retried_then_succeeds(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.script(model, Reply.status(529), Reply.content(VERDICT))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.attempts) == ("KEEP", 2)


async def test_overloaded_every_time_is_a_server_error_with_the_vendor_message(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.always(model, Reply.status(529, message="Overloaded"))
    try:
        async with claude(server, model, max_retries=2) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    assert (v.kind, v.error_kind, v.attempts) == ("ERROR", ErrorKind.SERVER, 3)
    assert "HTTP 529: overloaded_error: Overloaded" in (v.error or "")
    assert server.stats()["by_model"][model] == 3


async def test_a_400_is_not_retried_and_keeps_the_vendor_message(
    server: VendorServer, model: str
) -> None:
    message = "temperature: Extra inputs are not permitted"
    server.script(model, Reply.status(400, message=message))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.error_kind, v.attempts) == ("ERROR", ErrorKind.BAD_REQUEST, 1)
    assert f"invalid_request_error: {message}" in (v.error or "")
    assert server.stats()["by_model"][model] == 1


async def test_a_wrong_key_is_an_auth_error_and_is_not_retried(
    server: VendorServer, model: str
) -> None:
    wrong = "sk-ant-wrong-key-abcdef123456"
    async with claude(server, model, api_key=wrong) as c:
        v = await c.judge("item")
    assert (v.kind, v.error_kind, v.attempts) == ("ERROR", ErrorKind.AUTH, 1)
    assert "authentication_error" in (v.error or "") and wrong not in (v.error or "")


async def test_a_server_that_never_answers_times_out(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.always(model, Reply.hang())
    try:
        async with claude(server, model, timeout=0.3, max_retries=1) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    assert (v.kind, v.error_kind, v.attempts) == ("ERROR", ErrorKind.TIMEOUT, 2)


async def test_a_dropped_connection_is_retried_then_succeeds(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.script(model, Reply.reset(), Reply.content(VERDICT))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.attempts) == ("KEEP", 2)


async def test_a_connection_dropped_every_time_is_a_connection_error(
    server: VendorServer, model: str, no_backoff: None
) -> None:
    server.always(model, Reply.reset())
    try:
        async with claude(server, model, max_retries=1) as c:
            v = await c.judge("item")
    finally:
        server.always(model, None)
    assert (v.kind, v.error_kind, v.attempts) == ("ERROR", ErrorKind.CONNECTION, 2)


async def test_an_html_page_with_status_200_is_an_invalid_response_not_retried(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.html(200))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.error_kind, v.attempts) == ("ERROR", ErrorKind.INVALID_RESPONSE, 1)
    assert "HTML" in (v.error or "")


async def test_a_body_over_the_size_cap_is_an_invalid_response(
    server: VendorServer, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cross_judge.transport._anthropic.MAX_RESPONSE_BYTES", 4096)
    server.script(model, Reply.content("x" * 10_000))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.error_kind, v.attempts) == (ErrorKind.INVALID_RESPONSE, 1)
    assert "larger than" in (v.error or "")


# -- what the answer says -----------------------------------------------------------------------


async def test_a_refusal_stop_reason_is_a_refusal_error(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content(None, refusal="I can't help with judging this."))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.error_kind) == ("ERROR", ErrorKind.REFUSAL)
    assert "I can't help with judging this." in (v.error or "")


async def test_a_max_tokens_stop_with_unparseable_text_is_truncated_naming_the_cap(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content('{"kind": "KEEP", "confid', finish_reason="max_tokens"))
    async with claude(server, model, max_tokens=12, retry_truncated=False) as c:
        v = await c.judge("item")
    assert (v.kind, v.error_kind) == ("ERROR", ErrorKind.TRUNCATED)
    assert "cut off at the token limit (max_tokens=12)" in (v.error or "")


async def test_thinking_blocks_are_never_read_as_the_verdict(
    server: VendorServer, model: str
) -> None:
    thinking = 'Maybe {"kind": "REJECT", "confidence": 1.0}? No.'
    server.script(model, Reply.content(VERDICT, reasoning_content=thinking))
    async with claude(server, model) as c:
        v = await c.judge("item")
    assert (v.kind, v.raw_response) == ("KEEP", VERDICT)


# -- pooling and closing ------------------------------------------------------------------------


def drains(server: VendorServer, seconds: float = 5.0) -> bool:
    """Whether the server has no request in flight within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.stats()["in_flight"] == 0:
            return True
        time.sleep(0.01)
    return False


def pooled(server: VendorServer) -> Any:
    """The pooled Anthropic client of the server's endpoint on the running loop, if any."""
    token, _ = _pool.loop_token()
    return _pool._by_loop.get(token, {}).get(
        ("anthropic", _pool.endpoint_key(server.anthropic_url))
    )


async def test_critics_on_one_endpoint_share_one_pooled_client_and_connection(
    server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(VERDICT), Reply.content(VERDICT))
    first, second = claude(server, model), claude(server, model)
    server.reset_stats()
    try:
        await first.judge("item one")
        endpoint = pooled(server)
        await second.judge("item two")
        assert pooled(server) is endpoint
        assert server.stats()["connections"] == 1
    finally:
        await first.aclose()


async def test_aclose_closes_the_pooled_client(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content(VERDICT))
    c = claude(server, model)
    await c.judge("item")
    endpoint = pooled(server)
    http = endpoint._http
    assert http is not None and not http.is_closed
    await c.aclose()
    assert http.is_closed and pooled(server) is None
    gc.collect()  # an unclosed aiohttp session would warn here (warnings are errors)


async def test_a_cancelled_call_leaves_no_request_in_flight_and_nothing_open(
    server: VendorServer, model: str
) -> None:
    server.always(model, Reply.hang())
    try:
        c = claude(server, model)
        with anyio.move_on_after(0.3) as scope:
            await c.judge("item")
        assert scope.cancelled_caught
        await c.aclose()
        assert await anyio.to_thread.run_sync(drains, server)  # it saw the client go away
    finally:
        server.always(model, None)
    gc.collect()  # a leaked response or session would warn here (warnings are errors)


# -- the acceptance test ------------------------------------------------------------------------


async def test_acceptance_an_ensemble_of_anthropic_and_openai_critics_sums_usage_and_cost() -> None:
    claude_usage = {
        "input_tokens": 1500,
        "cache_read_input_tokens": 400,
        "cache_creation_input_tokens": 100,
        "output_tokens": 90,
    }
    gpt_usage = {
        "prompt_tokens": 900,
        "completion_tokens": 60,
        "total_tokens": 960,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    mini_usage = {"prompt_tokens": 700, "completion_tokens": 40, "total_tokens": 740}
    with VendorServer(api_key=KEY) as messages_api, VendorServer(api_key=KEY) as chat_api:
        messages_api.script("claude-haiku-4-5", Reply.content(VERDICT, usage=claude_usage))
        chat_api.script("gpt-4.1-mini", Reply.content(VERDICT, usage=gpt_usage))
        chat_api.script("gpt-4o-mini", Reply.content(VERDICT, usage=mini_usage))
        critics = [
            Critic(
                name="claude",
                model="claude-haiku-4-5",
                vendor="anthropic",
                base_url=messages_api.anthropic_url,
                api_key=KEY,
            ),
            Critic(
                name="gpt",
                model="gpt-4.1-mini",
                vendor="openai",
                base_url=chat_api.url,
                api_key=KEY,
            ),
            Critic(
                name="mini",
                model="gpt-4o-mini",
                vendor="openai",
                base_url=chat_api.url,
                api_key=KEY,
            ),
        ]
        async with Ensemble(critics) as ensemble:
            result = await ensemble.judge("Felines (see also: Cats)")

    claude_v, gpt_v, mini_v = result.verdicts
    assert [v.kind for v in result.verdicts] == ["KEEP", "KEEP", "KEEP"]
    assert claude_v.usage == Usage(
        prompt_tokens=2000, completion_tokens=90, cache_read_tokens=400, cache_write_tokens=100
    )
    assert gpt_v.usage == Usage(prompt_tokens=900, completion_tokens=60, cache_read_tokens=100)
    assert mini_v.usage == Usage(prompt_tokens=700, completion_tokens=40)
    expected = {
        "claude": cost(claude_v.usage, vendor="anthropic", model="claude-haiku-4-5"),
        "gpt": cost(gpt_v.usage, vendor="openai", model="gpt-4.1-mini"),
        "mini": cost(mini_v.usage, vendor="openai", model="gpt-4o-mini"),
    }
    assert expected["claude"] == pytest.approx((1500 + 400 * 0.1 + 100 * 1.25 + 90 * 5) / 1e6)
    for v in result.verdicts:
        assert v.cost_usd == pytest.approx(expected[v.critic_id])
    assert result.usage == claude_v.usage + gpt_v.usage + mini_v.usage
    assert result.usage.total_tokens == 2090 + 960 + 740
    assert result.cost_usd == pytest.approx(sum(expected.values()))


# -- loading the SDK ---------------------------------------------------------------------------


class SlowSdkImport:
    """Stands in for the SDK's first import, taking ``seconds`` (in its worker thread) and
    noting, on the clock core uses, when it ended."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ended: float | None = None

    def __call__(self) -> None:
        import anthropic  # noqa: F401  # the real import, then the slow part

        time.sleep(self.seconds)
        self.ended = time.perf_counter()


@pytest.fixture
def slow_import(monkeypatch: pytest.MonkeyPatch) -> SlowSdkImport:
    from cross_judge.transport import _anthropic as transport

    slow = SlowSdkImport(1.0)
    # Each test runs on a new event loop, whose first Anthropic call loads the SDK anew.
    monkeypatch.setattr(transport, "_import_sdk", slow)
    return slow


async def test_the_first_verdicts_elapsed_s_does_not_count_loading_the_sdk(
    server: VendorServer, model: str, slow_import: SlowSdkImport
) -> None:
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model) as c:
        verdict = await c.judge("item")
        returned = time.perf_counter()
    assert verdict.is_valid and slow_import.ended is not None
    # Counting the import would make elapsed_s at least `seconds` longer than the time
    # from the import's end to the verdict; the margin only absorbs rounding and
    # scheduling, whatever the machine's load.
    assert verdict.elapsed_s <= returned - slow_import.ended + slow_import.seconds / 2


async def test_the_sdk_loads_before_the_first_attempt_which_gets_the_whole_deadline(
    server: VendorServer,
    model: str,
    slow_import: SlowSdkImport,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cross_judge.critic import _calls as core

    entered: list[tuple[float, float | None]] = []
    real = core.call_with_retries

    async def spy(*args: Any, **kwargs: Any) -> Any:
        entered.append((time.perf_counter(), kwargs["deadline"]))
        return await real(*args, **kwargs)

    slow_import.seconds = 0.1  # any time spent loading would be taken off the deadline
    monkeypatch.setattr(core, "call_with_retries", spy)
    server.script(model, Reply.content(VERDICT))
    async with claude(server, model, deadline=30.0, timeout=10.0) as c:
        verdict = await c.judge("item")
    assert verdict.is_valid and slow_import.ended is not None
    [(when, deadline)] = entered
    assert when >= slow_import.ended  # the per-attempt timeout starts after the import
    assert deadline == 30.0  # and nothing of the deadline went to it


async def test_cancelling_a_call_while_the_sdk_loads_returns_and_sends_nothing(
    server: VendorServer, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cross_judge.transport import _anthropic as transport

    importing, release = threading.Event(), threading.Event()

    def stuck_import() -> None:
        importing.set()
        release.wait(SAFETY_NET_S)

    monkeypatch.setattr(transport, "_import_sdk", stuck_import)
    server.script(model, Reply.content(VERDICT))
    outcome: list[Any] = []
    try:
        with anyio.fail_after(SAFETY_NET_S):  # a safety net only: the cancellation is immediate
            async with claude(server, model) as c, anyio.create_task_group() as tg:

                async def judge() -> None:
                    outcome.append(await c.judge("item"))

                tg.start_soon(judge)
                await anyio.to_thread.run_sync(importing.wait, SAFETY_NET_S)
                tg.cancel_scope.cancel()
    finally:
        release.set()  # the abandoned import thread ends
    assert outcome == []  # cancelled, not turned into a verdict
    assert server.stats()["by_model"].get(model, 0) == 0
