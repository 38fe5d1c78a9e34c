"""OpenTelemetry spans (:mod:`cross_judge._otel`) against the SDK's in-memory exporter and a
simulated vendor on 127.0.0.1.

The golden file ``tests/fixtures/otel_spans.json`` holds the normalised span tree of one
scripted batch: names, kinds, attributes, status and events, children sorted; no ids or
timestamps, and the volatile values (the server's port, the time queued at the rate-limit
gate) replaced by placeholders. After an intended change to the spans, regenerate it with

    CROSS_JUDGE_REGEN_GOLDEN=1 .venv/bin/pytest -p no:cacheprovider tests/unit/test_otel.py

and review the diff. Skipped as a whole without ``opentelemetry-sdk`` (the default session).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from cross_judge import Critic, Ensemble, __version__, _otel
from cross_judge.critic._cache import ResponseCache
from cross_judge.testing import Reply, VendorServer
from cross_judge.vendors import register_vendor, set_vendor_limits
from cross_judge.verdict import EnsembleVerdict

from ..waits import PROMPTLY_S, SAFETY_NET_S

pytestmark = pytest.mark.anyio

KEY = "sk-otel-test-key-5e4d3c2b1a"
GOLDEN = Path(__file__).parent.parent / "fixtures" / "otel_spans.json"
REGENERATE = os.environ.get("CROSS_JUDGE_REGEN_GOLDEN") == "1"
VOLATILE = {"server.port": "<port>", "cross_judge.rate_limit.wait_s": "<seconds>"}
CONTENT_KEYS = {
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.evaluation.explanation",
}


def answer(kind: str, confidence: float, reasoning: str) -> str:
    return json.dumps({"kind": kind, "confidence": confidence, "reasoning": reasoning})


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Spans go to an SDK provider of this test's own (the global provider is left alone)."""
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


def critic(server: VendorServer, name: str, model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("prompt", "pass-fail@2")
    kwargs.setdefault("max_retries", 2)
    return Critic(
        name=name, model=model, vendor="custom", base_url=server.url, api_key=KEY, **kwargs
    )


# -- normalising finished spans ---------------------------------------------------------------


def _value(key: str, value: Any) -> Any:
    if key in VOLATILE:
        return VOLATILE[key]
    return list(value) if isinstance(value, tuple) else value


def _attributes(attributes: Any) -> dict[str, Any]:
    return {k: _value(k, v) for k, v in sorted((attributes or {}).items())}


def tree(spans: tuple[ReadableSpan, ...]) -> list[dict[str, Any]]:
    """The finished spans as a tree: roots first, children sorted by name then attributes
    (so the order the tasks finished in does not matter)."""
    nodes: dict[int, dict[str, Any]] = {}
    parents: dict[int, int | None] = {}
    for span in spans:
        node: dict[str, Any] = {
            "name": span.name,
            "kind": span.kind.name,
            "attributes": _attributes(span.attributes),
        }
        if span.status.status_code.name != "UNSET":
            node["status"] = span.status.status_code.name
            if span.status.description:
                node["status_description"] = span.status.description
        if span.events:
            node["events"] = [
                {"name": e.name, "attributes": _attributes(e.attributes)} for e in span.events
            ]
        node["children"] = []
        assert span.context is not None
        nodes[span.context.span_id] = node
        parents[span.context.span_id] = span.parent.span_id if span.parent else None
    roots = []
    for span_id, node in nodes.items():
        parent = parents[span_id]
        (nodes[parent]["children"] if parent in nodes else roots).append(node)

    def key(node: dict[str, Any]) -> str:
        return json.dumps([node["name"], node["attributes"]], sort_keys=True)

    def order(level: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for node in level:
            node["children"] = order(node["children"])
        return sorted(level, key=key)

    return order(roots)


def walk(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        yield node
        yield from walk(node["children"])


def every_value(spans: tuple[ReadableSpan, ...]) -> str:
    """Every attribute and event value of ``spans`` and their status texts, as one string."""
    return json.dumps(tree(spans), ensure_ascii=False)


# -- the golden span tree ---------------------------------------------------------------------


async def scripted_batch(server: VendorServer, cache: ResponseCache) -> list[EnsembleVerdict]:
    """Three items judged one after another (scripts are consumed in order) in a batch span:

    1. ``item-1``: alpha answers PASS; beta is refused once (429) and passes on its
       retry; gamma answers text that is not JSON (PARSE_FAIL).
    2. an item without an id (its id is its text: content, so not recorded): alpha's key
       is refused (401, no retry), beta and gamma answer FAIL.
    3. ``item-3``, item 1's text again: alpha's answer comes from the response cache.
    """
    alpha, beta, gamma = "m-alpha", "m-beta", "m-gamma"
    server.script(alpha, Reply.content(answer("PASS", 0.9, "works"), usage=usage(120, 30)))
    server.script(
        beta,
        Reply.status(429, retry_after=0),
        Reply.content(answer("PASS", 0.8, "fine"), usage=usage(110, 20)),
    )
    server.script(gamma, Reply.content("I think it passes.", usage=usage(100, 5)))
    server.script(alpha, Reply.status(401))
    server.script(beta, Reply.content(answer("FAIL", 0.7, "off by one"), usage=usage(90, 25)))
    server.script(gamma, Reply.content(answer("FAIL", 0.6, "no tests"), usage=usage(95, 15)))
    server.script(beta, Reply.content(answer("PASS", 0.8, "fine"), usage=usage(110, 20)))
    server.script(gamma, Reply.content(answer("PASS", 0.9, "ok"), usage=usage(100, 12)))
    panel = Ensemble(
        [
            critic(server, "alpha", alpha, cache=cache),
            critic(server, "beta", beta, json_mode=True),
            critic(server, "gamma", gamma, seed=7),
        ]
    )
    first = "def add(a, b): return a + b"
    items = [(first, "item-1"), ("def sub(a, b): return a + b", None), (first, "item-3")]
    results = []
    with _otel.batch_span(panel, mode="live", concurrency=1, items=len(items)) as batch:
        for query, query_id in items:
            result = await panel.judge(query, query_id=query_id)
            batch.add(result)
            results.append(result)
    return results


async def test_spans_match_the_golden_file(
    exporter: InMemorySpanExporter, server: VendorServer, tmp_path: Path
) -> None:
    with ResponseCache(tmp_path / "responses.sqlite3") as cache:
        results = await scripted_batch(server, cache)
    assert [r.consensus for r in results] == ["PASS", "FAIL", "PASS"]
    got = tree(exporter.get_finished_spans())
    if REGENERATE:
        GOLDEN.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(GOLDEN.read_text(encoding="utf-8"))


async def test_every_gen_ai_name_is_in_the_semantic_conventions(
    exporter: InMemorySpanExporter, server: VendorServer, tmp_path: Path, monkeypatch: Any
) -> None:
    registry = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    known = {v for v in vars(registry).values() if isinstance(v, str)}
    monkeypatch.setenv(_otel.CAPTURE_CONTENT_ENV, "true")
    with ResponseCache(tmp_path / "responses.sqlite3") as cache:
        await scripted_batch(server, cache)
    used = set()
    for node in walk(tree(exporter.get_finished_spans())):
        used.update(node["attributes"])
        for event in node.get("events", []):
            used.update(event["attributes"])
    gen_ai = {name for name in used if name.startswith("gen_ai.")}
    assert gen_ai >= CONTENT_KEYS  # content was on, so these are checked too
    assert gen_ai - known == set()


# -- content and secrets ----------------------------------------------------------------------


async def test_no_message_content_without_the_opt_in(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    query = "def secret_sauce(): return 42"
    server.script(model, Reply.content(answer("PASS", 0.9, "the sauce is fine")))
    await Ensemble([critic(server, "solo", model)]).judge(query)
    spans = exporter.get_finished_spans()
    names = {k for node in walk(tree(spans)) for k in node["attributes"]}
    assert names & CONTENT_KEYS == set()
    text = every_value(spans)
    assert "secret_sauce" not in text  # not even as the item id (the default id is the text)
    assert "the sauce is fine" not in text


async def test_message_content_with_the_opt_in(
    exporter: InMemorySpanExporter, server: VendorServer, model: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv(_otel.CAPTURE_CONTENT_ENV, "True")
    server.script(model, Reply.content(answer("PASS", 0.9, "the sauce is fine")))
    await Ensemble([critic(server, "solo", model)]).judge("def secret_sauce(): return 42")
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert chat.attributes is not None
    messages = json.loads(str(chat.attributes["gen_ai.input.messages"]))
    assert messages[0]["role"] == "user"
    assert "def secret_sauce(): return 42" in messages[0]["parts"][0]["content"]
    (output,) = json.loads(str(chat.attributes["gen_ai.output.messages"]))
    assert output["finish_reason"] == "stop"
    assert "the sauce is fine" in output["parts"][0]["content"]
    assert "strict, fair reviewer" in str(chat.attributes["gen_ai.system_instructions"])


async def test_the_api_key_is_never_recorded(
    exporter: InMemorySpanExporter, server: VendorServer, model: str, monkeypatch: Any
) -> None:
    # Content on, and a vendor that echoes the key in its answer and in an error body.
    monkeypatch.setenv(_otel.CAPTURE_CONTENT_ENV, "true")
    server.script(
        model,
        Reply.content(answer("PASS", 0.9, f"your key {KEY} works")),
        Reply.status(400, message=f"bad request for key {KEY}"),
    )
    panel = Ensemble([critic(server, "solo", model)])
    await panel.judge("first item")
    await panel.judge("second item")
    spans = exporter.get_finished_spans()
    assert len(spans) == 4
    assert KEY not in every_value(spans)


# -- parents and children ---------------------------------------------------------------------


async def test_chat_spans_are_children_of_their_judge_span_and_judge_spans_of_the_batch(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    models = [f"{model}-{i}" for i in range(3)]
    for m in models:
        server.always(m, Reply.content(answer("PASS", 0.9, "ok")))
    panel = Ensemble([critic(server, f"c{i}", m) for i, m in enumerate(models)])
    items = [f"item {n}" for n in range(4)]
    try:
        with _otel.batch_span(panel, mode="live", concurrency=4, items=len(items)) as batch:
            async with anyio.create_task_group() as group:  # items concurrently, as a batch does
                for n, item in enumerate(items):
                    group.start_soon(one_item, panel, batch, item, f"id-{n}")
    finally:
        for m in models:
            server.always(m, None)
    (root,) = tree(exporter.get_finished_spans())
    assert root["name"] == "cross_judge.batch"
    assert root["attributes"]["cross_judge.batch.items_done"] == 4
    judges = root["children"]
    assert [j["attributes"]["cross_judge.item.id"] for j in judges] == [f"id-{n}" for n in range(4)]
    for judge in judges:
        assert judge["name"] == "cross_judge.judge"
        assert sorted(c["attributes"]["cross_judge.critic"] for c in judge["children"]) == [
            "c0",
            "c1",
            "c2",
        ]
        assert all(c["children"] == [] for c in judge["children"])


async def one_item(panel: Ensemble, batch: Any, query: str, query_id: str) -> None:
    batch.add(await panel.judge(query, query_id=query_id))


async def test_a_judge_span_is_a_child_of_the_callers_span(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    server.script(model, Reply.content(answer("PASS", 0.9, "ok")))
    tracer = _otel._tracer()
    with tracer.start_as_current_span("application"):
        await Ensemble([critic(server, "solo", model)]).judge("x", query_id="x1")
    (root,) = tree(exporter.get_finished_spans())
    assert root["name"] == "application"
    assert [c["name"] for c in root["children"]] == ["cross_judge.judge"]


async def test_a_batch_span_given_a_context_is_its_child(
    exporter: InMemorySpanExporter, server: VendorServer
) -> None:
    tracer = _otel._tracer()
    with tracer.start_as_current_span("application"):
        captured = _otel.current_context()
    panel = Ensemble([critic(server, "solo", "m-unused")])
    with _otel.batch_span(panel, mode="live", concurrency=1, parent=captured):
        pass
    (root,) = tree(exporter.get_finished_spans())
    assert root["name"] == "application"
    assert [c["name"] for c in root["children"]] == ["cross_judge.batch"]


# -- call outcomes ------------------------------------------------------------------------------


async def test_a_cancelled_call_has_error_type_cancelled(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    fast, slow = f"{model}-fast", f"{model}-slow"
    server.script(fast, Reply.content(answer("PASS", 0.9, "ok")))
    server.script(fast, Reply.content(answer("PASS", 0.9, "ok")))
    server.script(slow, Reply.content(answer("PASS", 0.9, "ok"), latency=SAFETY_NET_S))
    panel = Ensemble(
        [critic(server, "a", fast), critic(server, "b", fast), critic(server, "c", slow)],
        early_stop="cancel",
    )
    with anyio.fail_after(PROMPTLY_S):  # the slow call is cancelled once a and b agree
        result = await panel.judge("item", query_id="i")
    assert result.consensus == "PASS"
    chats = {
        s.attributes["cross_judge.critic"]: s
        for s in exporter.get_finished_spans()
        if s.name.startswith("chat ") and s.attributes is not None
    }
    assert chats["c"].attributes is not None
    assert chats["c"].attributes["error.type"] == "cancelled"
    assert "error.type" not in (chats["a"].attributes or {})


async def test_time_queued_at_the_vendor_gate_is_recorded(
    exporter: InMemorySpanExporter, server: VendorServer, model: str, vendor_registry: None
) -> None:
    # One call at a time at this vendor: the second waits at least as long as the first
    # is held by the server (a lower bound the gate guarantees, whatever the machine).
    register_vendor("otel-gated", base_url=server.url, api_key_env="OTEL_GATED_KEY")
    set_vendor_limits("otel-gated", max_concurrency=1)
    server.always(model, Reply.content(answer("PASS", 0.9, "ok"), latency=0.5))
    try:
        panel = Ensemble(
            [
                Critic(name=n, model=model, vendor="otel-gated", api_key=KEY, prompt="pass-fail@2")
                for n in ("a", "b")
            ]
        )
        await panel.judge("item", query_id="i")
    finally:
        server.always(model, None)
    waits = sorted(
        float(s.attributes["cross_judge.rate_limit.wait_s"])  # type: ignore[arg-type]
        for s in exporter.get_finished_spans()
        if s.name.startswith("chat ") and s.attributes is not None
    )
    assert waits[0] < 0.5 <= waits[1]


# -- cost when nothing records ----------------------------------------------------------------


async def test_without_opentelemetry_no_span_code_runs(
    server: VendorServer, model: str, monkeypatch: Any
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("span code ran with OpenTelemetry absent")

    monkeypatch.setattr(_otel, "available", False)
    for name in ("chat_span", "judge_span", "watched_gate", "record_completion", "_start"):
        monkeypatch.setattr(_otel, name, refuse)
    server.script(model, Reply.content(answer("PASS", 0.9, "ok")))
    result = await Ensemble([critic(server, "solo", model)]).judge("item")
    assert result.consensus == "PASS"
    assert isinstance(_otel.batch_span(Ensemble([]), mode="live", concurrency=1), _otel._NoSpan)


async def test_with_the_api_but_no_provider_no_attribute_is_computed(
    server: VendorServer, model: str, monkeypatch: Any
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("attributes computed for a span nobody records")

    monkeypatch.setattr(_otel, "available", True)
    monkeypatch.setattr(_otel, "_tracer", lambda: trace.NoOpTracer())
    monkeypatch.setattr(_otel, "_chat_attributes", refuse)
    monkeypatch.setattr(_otel, "_prompt_ref", refuse)
    server.script(model, Reply.content(answer("PASS", 0.9, "ok")))
    result = await Ensemble([critic(server, "solo", model)]).judge("item")
    assert result.consensus == "PASS"


async def test_spans_go_to_the_applications_global_provider(
    server: VendorServer, model: str, monkeypatch: Any
) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(_otel, "available", True)
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    _otel._tracer.cache_clear()
    try:
        server.script(model, Reply.content(answer("PASS", 0.9, "ok")))
        await Ensemble([critic(server, "solo", model)]).judge("item", query_id="i")
    finally:
        _otel._tracer.cache_clear()
    assert sorted(s.name for s in spans.get_finished_spans()) == [
        f"chat {model}",
        "cross_judge.judge",
    ]
    (chat,) = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert chat.instrumentation_scope is not None
    assert chat.instrumentation_scope.name == "cross_judge"
    assert chat.instrumentation_scope.version == __version__


async def test_judge_many_is_one_batch_span_over_its_judge_spans(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    server.always(model, Reply.content(answer("PASS", 0.9, "ok")))
    try:
        panel = Ensemble([critic(server, "solo", model)])
        await panel.judge_many([{"id": f"i{n}", "query": f"item {n}"} for n in range(3)])
    finally:
        server.always(model, None)
    (root,) = tree(exporter.get_finished_spans())
    assert root["name"] == "cross_judge.batch"
    assert root["attributes"]["cross_judge.batch.items"] == 3
    assert root["attributes"]["cross_judge.batch.items_done"] == 3
    assert [c["name"] for c in root["children"]] == ["cross_judge.judge"] * 3


async def test_a_stream_is_one_batch_span_under_the_callers_span(
    exporter: InMemorySpanExporter, server: VendorServer, model: str
) -> None:
    # On trio a stream's work runs in a system task, which does not inherit the caller's
    # context: the batch span still has the caller's span as parent.
    server.always(model, Reply.content(answer("PASS", 0.9, "ok")))
    try:
        panel = Ensemble([critic(server, "solo", model)])
        with _otel._tracer().start_as_current_span("application"):
            async with panel.stream([{"id": f"i{n}", "query": f"item {n}"} for n in range(3)]) as s:
                got = [r.query_id async for r in s]
    finally:
        server.always(model, None)
    assert sorted(got) == ["i0", "i1", "i2"]
    (root,) = tree(exporter.get_finished_spans())
    assert root["name"] == "application"
    (batch,) = root["children"]
    assert batch["name"] == "cross_judge.batch"
    assert batch["attributes"]["cross_judge.batch.items_done"] == 3
    assert [c["name"] for c in batch["children"]] == ["cross_judge.judge"] * 3
