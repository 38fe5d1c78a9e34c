"""OpenTelemetry spans for critic calls, judgements and batches (the ``[otel]`` extra).

When ``opentelemetry-api`` is installed and a tracer provider is configured (the SDK, or
an agent such as ``opentelemetry-instrument``), cross-judge emits, following the
OpenTelemetry GenAI semantic conventions (``gen_ai.provider.name``, which replaced
``gen_ai.system`` in semconv 1.37):

* ``chat {model}`` (``CLIENT``): one per critic call, retries included (one logical
  operation, as the conventions ask). ``gen_ai.operation.name="chat"``,
  ``gen_ai.provider.name`` (the vendor's registered name: ``openai``, ``anthropic``,
  ``deepseek``, ...), ``gen_ai.request.model`` / ``gen_ai.response.model``,
  ``gen_ai.request.max_tokens`` / ``temperature`` (only when sent: not for Anthropic, nor
  with an effort on OpenAI's reasoning models) / ``seed``, ``gen_ai.output.type="json"``
  when the request asks for JSON (JSON mode, a schema or a forced tool; ``"text"`` when
  ``structured="auto"`` stepped down to nothing), ``server.address`` / ``server.port``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens`` (and the prompt cache's
  ``cache_read`` / ``cache_creation`` parts and the reasoning model's
  ``gen_ai.usage.reasoning.output_tokens``, part of the output, when non-zero),
  ``gen_ai.response.finish_reasons``, and ``cross_judge.*``: ``critic``, ``prompt.id`` /
  ``prompt.version`` / ``prompt.sha256``, ``attempts`` (retries are ``attempts - 1``),
  ``cache_hit``, ``rate_limit.wait_s`` (time queued at the vendor's gate, every attempt),
  ``cost_usd``, ``sample`` (self-consistency samples after the first). The answer
  settings, each only when used (a request without them keeps the attributes
  above): ``request.structured`` (the answer shape asked, ``schema`` / ``tool`` / ``json``
  / ``off``, when the critic sets ``structured=``; after a step down of ``"auto"``, the
  shape finally asked), ``request.schema`` (the schema's name, with ``schema`` / ``tool``),
  ``request.effort`` and ``request.thinking_budget`` (no semantic convention names them
  yet), ``request.logprobs`` (alternatives asked per token), and ``confidence_source``
  (``stated`` / ``logprob`` / ``none``, when the critic's ``confidence`` is ``"logprob"``
  or ``"auto"``). A failed call has
  ``error.type`` (the verdict's :class:`~cross_judge.errors.ErrorKind` value: ``timeout``,
  ``rate_limit``, ``server``, ``auth``, ``parse``, ``budget``, ...; ``cancelled`` for a
  cancelled call; the exception's class name for anything raised) and status ``ERROR``.
  Tokens are recorded on these spans only, so a backend that sums them counts each once.
* ``cross_judge.judge`` (``INTERNAL``): one per item (:meth:`Ensemble.judge
  <cross_judge.ensemble.Ensemble.judge>`), parent of its chat spans: ``voting``,
  ``critics``, ``prompts`` (``id@version``, or ``sha256:<12 hex>`` for an unnamed prompt),
  ``consensus``, ``agreement_pct``, ``disagreement``, ``krippendorff_alpha``, ``fallback``,
  counts of valid / failed / saved verdicts, and one ``gen_ai.evaluation.result`` event per
  critic (``gen_ai.evaluation.name``: the prompt id, else ``cross_judge``;
  ``gen_ai.evaluation.score.label``: the label; ``gen_ai.evaluation.score.value``: the
  score when there is one; ``error.type`` for a failed verdict; ``cross_judge.critic``,
  ``cross_judge.confidence``).
* ``cross_judge.batch`` (``INTERNAL``): one per :func:`~cross_judge.batch.judge_many` or
  :func:`~cross_judge.batch.stream`, parent of its judge spans (:func:`batch_span`).

Message content (system prompt, user message, the model's answer, the critic's reasoning as
``gen_ai.evaluation.explanation``, an item id that is the query text itself) is recorded
only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true`` (read at each
span, so it can be switched at run time), as ``gen_ai.system_instructions`` /
``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON strings. API keys are never
recorded: nothing here reads one, and answers are recorded after the critic redacted them.

Cost: :data:`available` is decided once, at import, without importing OpenTelemetry; when
it is false every hook is one branch. With the API but no provider configured, a span is
started, found not recording and dropped (~0.5 us); no attribute is computed.

This module does not configure OpenTelemetry (no provider, exporter or sampler is set up:
that is the application's job), emit metrics or logs, or propagate context over HTTP.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from .critic import Critic
    from .transport import ChatRequest, Completion, Gate
    from .vendors import VendorConfig
    from .verdict import EnsembleVerdict, Verdict

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "available",
    "batch_span",
    "capture_content",
    "chat_span",
    "current_context",
    "judge_span",
    "record_completion",
    "watched_gate",
]


class _Panel(Protocol):
    """What the judge and batch spans read of a panel (an Ensemble, a Cascade, any
    :class:`~cross_judge.batch.Panel`): its critics and its vote. Declared here, below the
    batch layer that defines the panels."""

    @property
    def critics(self) -> Sequence[Critic]: ...

    @property
    def voting(self) -> str | Callable[..., tuple[str, bool]]: ...


CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The standard opt-in variable: ``true`` records prompts and answers on spans."""

_CONTENT_ON = frozenset({"true", "span_only", "span_and_event"})


def _api_installed() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):  # no `opentelemetry` package at all, or a broken one
        return False


available: bool = _api_installed()
"""Whether ``opentelemetry-api`` is installed; checked once, at import, without importing
it. Every hook in the call path tests this first. Set it to ``False`` to turn spans off."""

_INSTRUMENTATION = "cross_judge"

T = TypeVar("T")
S = TypeVar("S", bound="_Span")


@functools.cache
def _api() -> Any:
    """``opentelemetry.trace``, imported on first use (imported as a module object, so
    that type checking does not depend on OpenTelemetry being installed)."""
    return importlib.import_module("opentelemetry.trace")


@functools.cache
def _context_api() -> Any:
    """``opentelemetry.context``, imported on first use."""
    return importlib.import_module("opentelemetry.context")


@functools.cache
def _tracer() -> Any:
    """cross-judge's tracer, from the global provider. Before the application sets one it
    is the API's proxy, which starts using the real provider as soon as one is set."""
    from ._version import __version__

    return _api().get_tracer(_INSTRUMENTATION, __version__)


def capture_content() -> bool:
    """True when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` opts in to content
    (``true``, case-insensitive; ``span_only`` and ``span_and_event`` of newer
    instrumentations count too)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CONTENT_ON


def current_context() -> Any:
    """The current OpenTelemetry context (``None`` without the API), to hand to
    :func:`batch_span` from code that runs in another task (a stream's host task, which
    on trio does not inherit the caller's context)."""
    if not available:
        return None
    return _context_api().get_current()


# -- spans ----------------------------------------------------------------------------------


class _NoSpan:
    """What every hook gets when nothing is recorded: each method does nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def ended(self, value: T) -> T:
        return value

    def add(self, result: EnsembleVerdict) -> None:
        return None


_NO_SPAN = _NoSpan()


class _Span:
    """A recording span made current for a ``with`` block (in this task only: spans are
    kept in context variables, so tasks started inside the block inherit it, on asyncio
    and trio alike). Leaving the block ends it; an exception sets ``error.type``."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Any) -> None:
        self._span = span
        self._token: object = None

    def __enter__(self: S) -> S:
        self._token = _context_api().attach(_api().set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _context_api().detach(self._token)
        if exc is not None:
            _set_error(self._span, _error_type(exc), None)
        self._span.end()

    def set(self, attributes: dict[str, Any]) -> None:
        self._span.set_attributes({k: v for k, v in attributes.items() if v is not None})


def _error_type(exc: BaseException) -> str:
    import anyio

    try:
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
    except Exception:  # no async backend running (a sync caller): not a cancellation
        cancelled = False
    return "cancelled" if cancelled else type(exc).__qualname__


def _set_error(span: Any, error_type: str, description: str | None) -> None:
    api = _api()
    span.set_attribute("error.type", error_type)
    span.set_status(api.Status(api.StatusCode.ERROR, description))


def _start(name: str, kind: str, attributes: Any, context: Any = None) -> Any:
    """A started span, or ``None`` when it would not be recorded (no provider configured,
    or sampled out). ``attributes`` is called for the start attributes only then."""
    api = _api()
    tracer = _tracer()
    span = tracer.start_span(name, context=context, kind=getattr(api.SpanKind, kind))
    if not span.is_recording():
        span.end()
        return None
    span.set_attributes({k: v for k, v in attributes().items() if v is not None})
    return span


# -- chat spans -----------------------------------------------------------------------------


class _Call:
    """What a critic call learns on its way that the verdict does not carry."""

    __slots__ = ("completion", "waited")

    def __init__(self) -> None:
        self.waited = 0.0
        self.completion: Completion | None = None


_CALL: ContextVar[_Call | None] = ContextVar("cross_judge_otel_call", default=None)


class _ChatSpan(_Span):
    __slots__ = ("_call", "_call_token", "_content", "_sources", "_structured")

    def __init__(self, span: Any, content: bool, structured: str | None, sources: bool) -> None:
        super().__init__(span)
        self._call = _Call()
        self._call_token: Any = None
        self._content = content
        self._structured = structured  # the form first asked, when the critic sets structured=
        self._sources = sources  # the critic may measure its confidence: say where from

    def __enter__(self) -> _ChatSpan:
        super().__enter__()
        self._call_token = _CALL.set(self._call)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _CALL.reset(self._call_token)
        super().__exit__(exc_type, exc, tb)

    def ended(self, verdict: Verdict) -> Verdict:
        """Record the call's outcome from its verdict; returns the verdict."""
        call = self._call
        completion = call.completion
        usage = verdict.usage
        attributes: dict[str, Any] = {
            "cross_judge.attempts": verdict.attempts,
            "cross_judge.cache_hit": verdict.cached,
            "cross_judge.cost_usd": verdict.cost_usd,
        }
        if verdict.attempts or call.waited:  # not for a call that never reached the gate
            attributes["cross_judge.rate_limit.wait_s"] = round(call.waited, 6)
        if completion is not None:
            attributes["gen_ai.response.model"] = completion.model
            if completion.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = [completion.finish_reason]
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.completion_tokens
            if usage.cache_read_tokens:
                attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
            if usage.cache_write_tokens:
                attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
            if usage.reasoning_tokens:
                attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
        stepped = verdict.structured
        if self._structured is not None and stepped not in (None, self._structured):
            # structured="auto" stepped down: the form finally asked replaces the first.
            attributes["cross_judge.request.structured"] = stepped
            attributes["gen_ai.output.type"] = "text" if stepped == "off" else "json"
        if self._sources:
            attributes["cross_judge.confidence_source"] = verdict.confidence_source
        if self._content and verdict.raw_response is not None:
            message: dict[str, Any] = {
                "role": "assistant",
                "parts": [{"type": "text", "content": verdict.raw_response}],
            }
            if completion is not None and completion.finish_reason:
                message["finish_reason"] = completion.finish_reason
            attributes["gen_ai.output.messages"] = _json([message])
        self.set(attributes)
        if verdict.error_kind is not None:
            # A parse failure's message may quote the answer: content, so opt-in only.
            shown = self._content or verdict.kind != "PARSE_FAIL"
            _set_error(self._span, verdict.error_kind.value, verdict.error if shown else None)
        return verdict


def chat_span(critic: Critic, config: VendorConfig, request: ChatRequest) -> _ChatSpan | _NoSpan:
    """The span of one critic call for ``request``, to enter around it; ``ended(verdict)``
    records the outcome. A no-op object when nothing would be recorded."""
    content = False

    def attributes() -> dict[str, Any]:
        nonlocal content
        content = capture_content()
        return _chat_attributes(critic, config, request, content)

    span = _start(f"chat {request.model}", "CLIENT", attributes)
    if span is None:
        return _NO_SPAN
    form = request.structured if critic.structured is not None else None
    return _ChatSpan(span, content, form, critic.confidence != "stated")


def _chat_attributes(
    critic: Critic, config: VendorConfig, request: ChatRequest, content: bool
) -> dict[str, Any]:
    prompt_id, prompt_version = critic.prompt_provenance()
    address, port = _server(config.base_url)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": config.name,
        "gen_ai.request.model": request.model,
        "gen_ai.request.max_tokens": request.max_tokens,
        "gen_ai.request.seed": request.seed,
        "server.address": address,
        "server.port": port,
        "cross_judge.critic": critic.name,
        "cross_judge.prompt.id": prompt_id,
        "cross_judge.prompt.version": prompt_version,
        "cross_judge.prompt.sha256": critic.prompt_sha256,
    }
    if "temperature" in request.sent_settings(config):  # as the protocol sends it
        attributes["gen_ai.request.temperature"] = request.temperature
    if request.structured != "off":
        attributes["gen_ai.output.type"] = "json"
    if critic.structured is not None:  # else the form follows json_mode, as it always did
        attributes["cross_judge.request.structured"] = request.structured
    if request.schema is not None and request.structured in ("schema", "tool"):
        attributes["cross_judge.request.schema"] = request.schema.name
    attributes["cross_judge.request.effort"] = request.effort
    attributes["cross_judge.request.thinking_budget"] = request.thinking_budget
    attributes["cross_judge.request.logprobs"] = request.logprobs
    if request.sample:
        attributes["cross_judge.sample"] = request.sample
    if content:
        if request.system:
            attributes["gen_ai.system_instructions"] = _json(
                [{"type": "text", "content": request.system}]
            )
        attributes["gen_ai.input.messages"] = _json(
            [{"role": "user", "parts": [{"type": "text", "content": request.user}]}]
        )
    return attributes


@functools.lru_cache(maxsize=128)
def _server(base_url: str) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` of an endpoint (never its ``user:password@``)."""
    parts = urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.hostname, port


def record_completion(completion: Completion) -> None:
    """Note the completion of the current call (its response model and finish reason) for
    its chat span; nothing when no chat span is recording."""
    call = _CALL.get()
    if call is not None:
        call.completion = completion


class _WatchedGate:
    """A vendor gate that adds the time each attempt waits to enter it to the call's
    ``rate_limit.wait_s``."""

    __slots__ = ("_call", "_gate")

    def __init__(self, gate: Gate, call: _Call) -> None:
        self._gate = gate
        self._call = call

    @property
    def vendor(self) -> str:
        return self._gate.vendor

    async def enter(self, within: float) -> None:
        started = time.perf_counter()
        try:
            await self._gate.enter(within)
        finally:
            self._call.waited += time.perf_counter() - started

    def leave(self, outcome: BaseException | None) -> None:
        self._gate.leave(outcome)


def watched_gate(gate: Gate) -> Gate:
    """``gate``, timed for the current chat span when one is recording."""
    call = _CALL.get()
    return gate if call is None else _WatchedGate(gate, call)


# -- judge spans ----------------------------------------------------------------------------


class _JudgeSpan(_Span):
    __slots__ = ("_content", "_query")

    def __init__(self, span: Any, query: str, content: bool) -> None:
        super().__init__(span)
        self._query = query
        self._content = content

    def ended(self, result: EnsembleVerdict) -> EnsembleVerdict:
        """Record the judgement and one evaluation event per critic; returns ``result``."""
        from .verdict import default_query_id

        attributes: dict[str, Any] = {
            "cross_judge.consensus": result.consensus,
            "cross_judge.agreement_pct": result.agreement_pct,
            "cross_judge.disagreement": result.disagreement,
            "cross_judge.krippendorff_alpha": result.krippendorff_alpha,
            "cross_judge.fallback": result.fallback,
            "cross_judge.score": result.score,
            "cross_judge.verdicts.valid": result.n_valid,
            "cross_judge.verdicts.failed": result.n_errors,
            "cross_judge.verdicts.saved": result.calls_saved,
        }
        # A default id is the query text itself: content.
        if self._content or result.query_id != default_query_id(self._query):
            attributes["cross_judge.item.id"] = result.query_id
        self.set(attributes)
        for verdict in result.verdicts:
            self._span.add_event("gen_ai.evaluation.result", _evaluation(verdict, self._content))
        return result


def _evaluation(verdict: Verdict, content: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": verdict.prompt_id or _INSTRUMENTATION,
        "gen_ai.evaluation.score.label": verdict.kind,
        "gen_ai.evaluation.score.value": verdict.score,
        "gen_ai.provider.name": verdict.vendor,
        "gen_ai.request.model": verdict.model,
        "cross_judge.critic": verdict.critic_id,
        "cross_judge.prompt.version": verdict.prompt_version,
        "cross_judge.confidence": (
            verdict.confidence if verdict.error is None and verdict.confidence_stated else None
        ),
    }
    if verdict.error_kind is not None:
        attributes["error.type"] = verdict.error_kind.value
    if content and verdict.reasoning:
        attributes["gen_ai.evaluation.explanation"] = verdict.reasoning
    return {k: v for k, v in attributes.items() if v is not None}


def judge_span(ensemble: _Panel, query: str) -> _JudgeSpan | _NoSpan:
    """The span of one judgement of ``query``, to enter around the fan-out (its critics'
    tasks then inherit it); ``ended(result)`` records the outcome."""
    content = False

    def attributes() -> dict[str, Any]:
        nonlocal content
        content = capture_content()
        return {
            "cross_judge.voting": _voting(ensemble),
            "cross_judge.critics": [c.name for c in ensemble.critics],
            "cross_judge.prompts": sorted({_prompt_ref(c) for c in ensemble.critics}),
        }

    span = _start("cross_judge.judge", "INTERNAL", attributes)
    return _NO_SPAN if span is None else _JudgeSpan(span, query, content)


def _voting(ensemble: _Panel) -> str:
    from .voting import strategy_name

    return strategy_name(ensemble.voting)


def _prompt_ref(critic: Critic) -> str:
    prompt_id, version = critic.prompt_provenance()
    if prompt_id is None:
        return f"sha256:{critic.prompt_sha256[:12]}"
    return f"{prompt_id}@{version}"


# -- batch spans ----------------------------------------------------------------------------


class _BatchSpan(_Span):
    __slots__ = ("_disputed", "_failed", "_items")

    def __init__(self, span: Any) -> None:
        super().__init__(span)
        self._items = self._disputed = self._failed = 0

    def add(self, result: EnsembleVerdict) -> None:
        """Count one finished item."""
        self._items += 1
        self._disputed += bool(result.disagreement)
        self._failed += result.n_valid == 0

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.set(
            {
                "cross_judge.batch.items_done": self._items,
                "cross_judge.batch.disputed": self._disputed,
                "cross_judge.batch.no_valid_verdict": self._failed,
            }
        )
        super().__exit__(exc_type, exc, tb)


def batch_span(
    ensemble: _Panel,
    *,
    mode: str,
    concurrency: int,
    items: int | None = None,
    parent: Any = None,
) -> _BatchSpan | _NoSpan:
    """The span of one batch, to enter around the task group that judges its items (their
    judge spans become its children). Call ``add(result)`` for each finished item.

    ``parent``: a context from :func:`current_context`, for a batch run in a task that
    did not inherit the caller's (a stream's host); default the current one. With
    OpenTelemetry absent or not recording, a no-op object (~50 ns).
    """
    if not available:
        return _NO_SPAN

    def attributes() -> dict[str, Any]:
        return {
            "cross_judge.voting": _voting(ensemble),
            "cross_judge.critics": [c.name for c in ensemble.critics],
            "cross_judge.batch.mode": mode,
            "cross_judge.batch.concurrency": concurrency,
            "cross_judge.batch.items": items,
        }

    span = _start("cross_judge.batch", "INTERNAL", attributes, parent)
    return _NO_SPAN if span is None else _BatchSpan(span)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
