"""The spans cross-judge itself emits read back with `read_otlp_json`: a panel judges an item
against a simulated vendor on 127.0.0.1 with message content recorded, the SDK's in-memory
exporter keeps the spans, they are written as OTLP JSON (the encoding an OTLP/HTTP JSON
exporter sends), and the run read from them holds each critic's prompt and answer.

Skipped without ``opentelemetry-sdk`` (the ``otel`` nox session installs it)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from cross_judge import Critic, Ensemble, __version__, _otel
from cross_judge.content import FinalAnswer, ModelMessage, read_otlp_json
from cross_judge.errors import ItemError
from cross_judge.testing import Reply, VendorServer

from .otlp_helpers import attributes

pytestmark = pytest.mark.anyio

KEY = "sk-otlp-readback-key-0a1b2c3d"
_STATUS = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Spans go to an SDK provider of this test's own, content recorded."""
    monkeypatch.setenv(_otel.CAPTURE_CONTENT_ENV, "true")
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(_otel, "available", True)
    monkeypatch.setattr(_otel, "_tracer", lambda: provider.get_tracer("cross_judge", __version__))
    yield spans
    provider.shutdown()


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Finished spans in the OTLP JSON encoding (hex ids, times and integers as text)."""
    encoded = []
    for s in spans:
        assert s.context is not None
        encoded.append(
            {
                "traceId": format(s.context.trace_id, "032x"),
                "spanId": format(s.context.span_id, "016x"),
                "parentSpanId": format(s.parent.span_id, "016x") if s.parent else "",
                "name": s.name,
                "kind": s.kind.value + 1,
                "startTimeUnixNano": str(s.start_time),
                "endTimeUnixNano": str(s.end_time),
                "attributes": attributes(dict(s.attributes or {})),
                "status": {
                    "code": _STATUS[s.status.status_code],
                    **({"message": s.status.description} if s.status.description else {}),
                },
            }
        )
    return {
        "resourceSpans": [
            {"resource": {}, "scopeSpans": [{"scope": {"name": "cross_judge"}, "spans": encoded}]}
        ]
    }


def answer(kind: str, reasoning: str) -> str:
    return json.dumps({"kind": kind, "confidence": 0.9, "reasoning": reasoning})


async def test_a_judgements_spans_read_back_as_each_critics_prompt_and_answer(
    exporter: InMemorySpanExporter,
) -> None:
    with VendorServer(api_key=KEY) as server:
        server.script("m-a", Reply.content(answer("PASS", "adds correctly")))
        server.script("m-b", Reply.content(answer("FAIL", "no tests")))
        panel = Ensemble(
            [
                Critic(
                    name=n,
                    model=m,
                    vendor="custom",
                    base_url=server.url,
                    api_key=KEY,
                    prompt="pass-fail@2",
                )
                for n, m in (("a", "m-a"), ("b", "m-b"))
            ]
        )
        await panel.judge("def add(a, b): return a + b", query_id="item-1")
    spans = exporter.get_finished_spans()
    (run,) = read_otlp_json(json.dumps(otlp_json(spans)))
    assert run.trace_id == format(spans[0].context.trace_id, "032x")  # type: ignore[union-attr]
    users = [t.content for t in run.messages if t.role == "user"]
    assert len(users) == 2 and all("def add(a, b): return a + b" in u for u in users)
    answers = sorted(t.content for t in run.messages if t.role == "assistant")
    assert answers == sorted([answer("PASS", "adds correctly"), answer("FAIL", "no tests")])
    assert [t.role for t in run.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert [type(s) for s in run.trajectory] == [ModelMessage, FinalAnswer]
    assert KEY not in json.dumps(otlp_json(spans))


async def test_spans_without_recorded_content_are_refused_with_the_switch_to_set(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(_otel.CAPTURE_CONTENT_ENV)
    with VendorServer(api_key=KEY) as server:
        server.script("m-a", Reply.content(answer("PASS", "ok")))
        critic = Critic(
            name="a",
            model="m-a",
            vendor="custom",
            base_url=server.url,
            api_key=KEY,
            prompt="pass-fail@2",
        )
        await Ensemble([critic]).judge("x = 1", query_id="item-2")
    with pytest.raises(ItemError, match="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"):
        read_otlp_json(otlp_json(exporter.get_finished_spans()))
