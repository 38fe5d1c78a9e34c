"""What a chat span says about the new request settings (issue 27): the answer shape asked
(``structured``, its schema), a reasoning model's effort and thinking budget, token
probabilities asked, the reasoning tokens spent, and where the verdict's confidence came
from. A request without any of them keeps exactly the attributes it had before (the golden
file of ``test_otel.py`` holds that). Skipped without ``opentelemetry-sdk``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from cross_judge import Critic, Ensemble, Verdict, __version__, _otel
from cross_judge.testing import Reply, VendorServer
from cross_judge.vendors import register_vendor

pytestmark = pytest.mark.anyio

KEY = "sk-otel-reasoning-key-1a2b3c4d5e"
NEW_NAMES = {
    "cross_judge.request.structured",
    "cross_judge.request.schema",
    "cross_judge.request.effort",
    "cross_judge.request.thinking_budget",
    "cross_judge.request.logprobs",
    "cross_judge.confidence_source",
    "gen_ai.usage.reasoning.output_tokens",
}


def answer(kind: str = "PASS", confidence: float = 0.9) -> str:
    return json.dumps({"kind": kind, "confidence": confidence, "reasoning": "ok"})


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv(_otel.CAPTURE_CONTENT_ENV, raising=False)
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(_otel, "available", True)
    monkeypatch.setattr(_otel, "_tracer", lambda: provider.get_tracer("cross_judge", __version__))
    yield spans
    provider.shutdown()


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(api_key=KEY) as srv:
        yield srv


def critic(server: VendorServer, model: str, vendor: str = "custom", **kwargs: Any) -> Critic:
    kwargs.setdefault("prompt", "pass-fail@2")
    base = {"base_url": server.url} if vendor == "custom" else {}
    return Critic(name="solo", model=model, vendor=vendor, api_key=KEY, **base, **kwargs)


def chat_attributes(exporter: InMemorySpanExporter) -> dict[str, Any]:
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    return dict(chat.attributes or {})


async def judged(judge: Critic) -> Verdict:
    result = await Ensemble([judge]).judge("def add(a, b): return a + b", query_id="i")
    return result.verdicts[0]


async def test_a_default_request_carries_none_of_the_new_attributes(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    server.script(
        model, Reply.content(answer(), usage={"prompt_tokens": 9, "completion_tokens": 4})
    )
    await judged(critic(server, model))
    assert set(chat_attributes(exporter)) & NEW_NAMES == set()


async def test_a_schema_request_records_the_form_and_the_schemas_name(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(answer()))
    judge = critic(server, model, structured="schema")
    verdict = await judged(judge)
    attributes = chat_attributes(exporter)
    assert attributes["cross_judge.request.structured"] == verdict.structured == "schema"
    assert attributes["cross_judge.request.schema"] == judge.answer_schema().name
    assert attributes["gen_ai.output.type"] == "json"


async def test_structured_off_is_recorded_as_asked_with_text_output(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(answer()))
    await judged(critic(server, model, structured="off"))
    attributes = chat_attributes(exporter)
    assert attributes["cross_judge.request.structured"] == "off"
    assert "gen_ai.output.type" not in attributes
    assert "cross_judge.request.schema" not in attributes


async def test_effort_token_probabilities_and_reasoning_tokens_are_recorded(
    exporter: InMemorySpanExporter, server: VendorServer, model: str, vendor_registry: None
) -> None:
    register_vendor("otel-thinker", base_url=server.url, api_key_env="X", reasoning="openai")
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 70,
        "completion_tokens_details": {"reasoning_tokens": 40},
    }
    server.script(model, Reply.content(answer(), usage=usage))
    verdict = await judged(critic(server, model, "otel-thinker", effort="low", confidence="auto"))
    attributes = chat_attributes(exporter)
    assert attributes["cross_judge.request.effort"] == "low"
    assert attributes["cross_judge.request.logprobs"] > 0
    assert attributes["gen_ai.usage.output_tokens"] == 70
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 40
    assert attributes["cross_judge.confidence_source"] == verdict.confidence_source
    assert "gen_ai.request.temperature" not in attributes  # not sent with an openai effort


async def test_a_thinking_budget_is_recorded(
    exporter: InMemorySpanExporter, server: VendorServer, model: str, vendor_registry: None
) -> None:
    register_vendor("otel-qwen", base_url=server.url, api_key_env="X", reasoning="qwen")
    server.script(model, Reply.content(answer()))
    await judged(critic(server, model, "otel-qwen", thinking_budget=512))
    attributes = chat_attributes(exporter)
    assert attributes["cross_judge.request.thinking_budget"] == 512
    assert "cross_judge.request.effort" not in attributes


async def test_a_verdicts_stepped_down_form_replaces_the_form_first_asked(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    judge = critic(server, model, structured="auto")
    config = judge.endpoint()
    request = judge.build_request("item")
    assert request.structured == "schema"
    stepped = Verdict(kind="PASS", confidence=0.9, critic_id="solo", structured="off")
    with _otel.chat_span(judge, config, request) as span:
        span.ended(stepped)
    attributes = chat_attributes(exporter)
    assert attributes["cross_judge.request.structured"] == "off"
    assert attributes["gen_ai.output.type"] == "text"


def test_the_reasoning_token_count_has_its_semantic_convention_name() -> None:
    registry = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    known = {v for v in vars(registry).values() if isinstance(v, str)}
    assert {n for n in NEW_NAMES if n.startswith("gen_ai.")} <= known
    assert "text" in {v.value for v in registry.GenAiOutputTypeValues}
