"""OpenAI's Responses API end to end: a vendor registered with
``protocol="openai-responses"``, a Critic and an Ensemble on it, the pooled HTTP client ->
socket -> the simulated vendor's ``/v1/responses`` -> the adapter's parsing -> Verdict; and
the official ``openai`` SDK -> httpx -> socket -> the same server -> the adapter's parsing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from cross_judge import Critic, Ensemble, ErrorKind, register_price, vendors
from cross_judge.batch import BatchOptions
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport import RawResponse, _adapter, protocol_adapter, register_protocol
from cross_judge.vendors import register_vendor

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

KEY = "sk-responses-test-key-0a1b2c3d4e"
VENDOR = "responses-sim"
PROMPT = "pass-fail@2"
LABELS = ("PASS", "FAIL")


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    personas = [
        Persona("r-plain", accuracy=1.0, labels=LABELS),
        Persona("r-think", labels=LABELS, thinking_tokens=400),
    ]
    saved = dict(vendors._MORE_VENDORS)
    with VendorServer(personas, api_key=KEY) as running:
        register_vendor(
            VENDOR,
            running.url,
            "RESPONSES_SIM_KEY",
            protocol="openai-responses",
            replace_existing=True,
        )
        try:
            yield running
        finally:  # the registry is global: later tests on this worker must not see it
            vendors._MORE_VENDORS.clear()
            vendors._MORE_VENDORS.update(saved)


def critic(model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("prompt", PROMPT)
    kwargs.setdefault("api_key", KEY)
    return Critic(name=model, model=model, vendor=VENDOR, **kwargs)


def last_body(server: VendorServer) -> dict[str, Any]:
    request = server.recent_requests[-1]
    assert request["path"] == "/v1/responses"
    body: dict[str, Any] = request["body"]
    return body


async def test_a_critic_on_the_responses_protocol_gives_a_verdict(
    server: VendorServer,
) -> None:
    async with critic("r-plain") as judge:
        verdict = await judge.judge("def add(a, b): return a + b")
    assert verdict.error is None
    assert verdict.kind in ("PASS", "FAIL")
    assert verdict.usage is not None and verdict.usage.prompt_tokens > 0


async def test_the_request_on_the_wire_is_exactly_what_sent_settings_says(
    server: VendorServer,
) -> None:
    async with critic("r-plain", structured="schema") as judge:
        request = judge.build_request("an item")
        await judge.judge("an item")
    body = last_body(server)
    settings = request.sent_settings(judge.endpoint())
    sent = {k: v for k, v in body.items() if k not in ("model", "input", "instructions")}
    assert sent == {"max_output_tokens" if k == "max_tokens" else k: v for k, v in settings.items()}
    assert body["instructions"] == request.system
    assert body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": request.user}]}
    ]
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["strict"] is True


async def test_an_effort_is_sent_as_reasoning_without_temperature(server: VendorServer) -> None:
    async with critic("r-think", effort="high", temperature=0.7) as judge:
        verdict = await judge.judge("an item to think about")
    body = last_body(server)
    assert body["reasoning"] == {"effort": "high"}
    assert "temperature" not in body
    assert verdict.usage is not None and verdict.usage.reasoning_tokens == 400


async def test_an_answer_cut_at_max_output_tokens_is_truncated(server: VendorServer) -> None:
    async with critic("r-think", effort="high", max_tokens=50) as judge:
        verdict = await judge.judge("an item cut short")
    assert verdict.error_kind is ErrorKind.TRUNCATED
    assert "cut off at the token limit" in (verdict.error or "")


async def test_a_refusal_part_becomes_a_refused_verdict(server: VendorServer, model: str) -> None:
    server.add_persona(Persona(model, labels=LABELS))
    server.script(model, Reply.content("", refusal="I can't judge this."))
    async with critic(model) as judge:
        verdict = await judge.judge("an item")
    assert verdict.error_kind is ErrorKind.REFUSAL
    assert verdict.error == "refusal: I can't judge this."


async def test_token_probabilities_give_the_confidence(server: VendorServer) -> None:
    async with critic("r-plain", confidence="logprob") as judge:
        verdict = await judge.judge("an item with a confidence")
    body = last_body(server)
    assert (body["top_logprobs"], body["include"]) == (10, ["message.output_text.logprobs"])
    assert verdict.confidence_source == "logprob"
    assert 0.0 < verdict.confidence <= 1.0


async def test_the_json_form_is_sent_as_a_json_object_format(server: VendorServer) -> None:
    async with critic("r-plain", structured="json") as judge:
        verdict = await judge.judge("an item in JSON")
    assert last_body(server)["text"] == {"format": {"type": "json_object"}}
    assert verdict.error is None


async def test_usage_prices_the_call(server: VendorServer, model: str) -> None:
    server.add_persona(Persona(model, labels=LABELS))
    register_price(model, vendor=VENDOR, input=1.0, output=2.0)
    async with critic(model) as judge:
        verdict = await judge.judge("an item to price")
    assert verdict.usage is not None
    expected = (verdict.usage.prompt_tokens * 1.0 + verdict.usage.completion_tokens * 2.0) / 1e6
    assert verdict.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_rate_limits_and_server_errors_are_retried(
    server: VendorServer, model: str, status: int
) -> None:
    server.add_persona(Persona(model, labels=LABELS))
    server.script(model, Reply.status(status, retry_after=0))
    async with critic(model) as judge:
        verdict = await judge.judge("an item")
    assert verdict.error is None
    assert verdict.attempts == 2


async def test_a_refused_key_is_not_retried(server: VendorServer, model: str) -> None:
    server.add_persona(Persona(model, labels=LABELS))
    async with critic(model, api_key="sk-wrong") as judge:
        verdict = await judge.judge("an item")
    assert verdict.error_kind is ErrorKind.AUTH
    assert verdict.attempts == 1


async def test_an_ensemble_on_the_responses_protocol_votes(server: VendorServer) -> None:
    async with Ensemble([critic("r-plain"), critic("r-think", effort="low")]) as panel:
        result = await panel.judge("def sub(a, b): return a - b")
    assert result.n_valid == 2
    assert result.consensus in ("PASS", "FAIL")


async def test_batch_mode_sends_responses_lines_through_the_batch_api(
    server: VendorServer,
) -> None:
    items = [{"id": f"b{n}", "query": f"batched item {n}"} for n in range(3)]
    options = BatchOptions(vendors={VENDOR}, poll_s=0.01, max_poll_s=0.05)
    async with Ensemble([critic("r-plain")]) as panel:
        live = await panel.judge_many(items)
        server.reset_stats()
        batched = await panel.judge_many(items, mode="batch", batch=options)
    assert [r.consensus for r in batched.verdicts] == [r.consensus for r in live.verdicts]
    stats = server.stats()
    assert (stats["batch_requests"]["openai"], stats["requests"]) == (3, 0)  # none asked live


@pytest.fixture
def scratch_protocols() -> Iterator[None]:
    """Forget the protocols a test registers (the registry is global to the worker)."""
    saved = dict(_adapter._ADAPTERS)
    yield
    _adapter._ADAPTERS.clear()
    _adapter._ADAPTERS.update(saved)


async def test_batch_mode_asks_a_protocol_without_a_batch_api_live(
    server: VendorServer, vendor_registry: None, scratch_protocols: None
) -> None:
    class NoBatch(type(protocol_adapter("openai-responses"))):  # type: ignore[misc]
        name = "openai-responses-unbatched"

        def __init__(self) -> None:
            self.batch = None

    register_protocol(NoBatch(), replace_existing=True)
    register_vendor(
        "unbatched-sim", server.url, "UNBATCHED_KEY", protocol=NoBatch.name, replace_existing=True
    )
    judge = Critic(name="u", model="r-plain", vendor="unbatched-sim", api_key=KEY, prompt=PROMPT)
    options = BatchOptions(vendors={"unbatched-sim"}, poll_s=0.01, max_poll_s=0.05)
    assert options.why_live(judge.endpoint()) == (
        "unbatched-sim speaks 'openai-responses-unbatched', which has no batch API"
    )
    items = [{"id": f"u{n}", "query": f"item {n}"} for n in range(2)]
    server.reset_stats()
    async with Ensemble([judge]) as panel:
        result = await panel.judge_many(items, mode="batch", batch=options)
    assert [r.n_valid for r in result.verdicts] == [1, 1]
    assert server.stats()["requests"] == 2


async def test_the_openai_sdk_reads_the_server_and_the_adapter_parses_its_reply(
    server: VendorServer,
) -> None:
    client = openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0)
    try:
        raw = await client.responses.with_raw_response.create(
            model="r-think",
            instructions="Answer in JSON.",
            input=[{"role": "user", "content": [{"type": "input_text", "text": "an item"}]}],
            max_output_tokens=2000,
            reasoning={"effort": "medium"},
        )
        parsed = raw.parse()
    finally:
        await client.close()
    http = raw.http_response
    completion = protocol_adapter("openai-responses").parse(
        RawResponse(http.status_code, dict(http.headers), http.content)
    )
    assert parsed.status == "completed"
    assert completion.text == parsed.output_text
    assert completion.reasoning is not None
    assert completion.usage is not None
    assert parsed.usage is not None
    assert completion.usage.reasoning_tokens == parsed.usage.output_tokens_details.reasoning_tokens
    assert completion.usage.reasoning_tokens == 200
