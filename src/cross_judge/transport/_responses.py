"""The ``"openai-responses"`` wire protocol: OpenAI's Responses API (``POST
{base_url}/responses``), over the same pooled HTTP session as chat completions.

The request
    ``model``; ``input``, the non-system messages as message items (``{"role", "content":
    [{"type": "input_text", "text"}]}``; an assistant turn's parts are ``output_text``);
    ``instructions``, the system messages' text, when not empty; and exactly
    :meth:`~cross_judge.transport.ChatRequest.sent_settings`: ``temperature`` (left out
    with a reasoning effort, which OpenAI's reasoning models refuse it with),
    ``max_output_tokens``, ``text.format`` (``json_schema`` with ``name``, ``schema`` and
    ``strict`` for the schema form, ``json_object`` for the json form), ``reasoning:
    {"effort"}``, and ``top_logprobs`` with ``include: ["message.output_text.logprobs"]``
    when token probabilities are asked. There is no seed and no thinking budget.

The reply
    ``output[]``: ``message`` items whose ``output_text`` parts make the text (their
    ``logprobs`` the token probabilities) and whose ``refusal`` parts the refusal;
    ``reasoning`` items whose ``summary_text`` parts make the reasoning. ``status``
    ``completed`` is the finish reason, and an ``incomplete`` reply's
    ``incomplete_details.reason`` (``max_output_tokens``: a truncated answer); ``failed``
    is a ``SERVER`` failure with its error's message. ``usage``: ``input_tokens`` (its
    ``input_tokens_details.cached_tokens`` cache reads), ``output_tokens`` (with
    ``output_tokens_details.reasoning_tokens``). Errors have OpenAI's shape and are
    classified as for chat completions.

Batches
    OpenAI's Batch API with ``/v1/responses`` as each line's ``url`` (and the batch's
    ``endpoint``): the line's body is the live body, a result's body is parsed as the
    live reply (:class:`~._openai_batch.OpenAIBatchAPI`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind
from ..verdict import Usage
from ._adapter import Connection, WireAdapter, register_protocol
from ._failure import CallFailure
from ._http import HTTPSession, RawResponse
from ._openai_batch import OpenAIBatchAPI
from ._openai_compat import read_logprobs, status_failure
from ._pool import ready_session
from ._wire import ChatRequest, Completion, StructuredForm, TextPart

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = ["ADAPTER", "ResponsesAdapter", "parse_response", "response_payload"]

PROTOCOL = "openai-responses"
LOGPROBS_INCLUDE = "message.output_text.logprobs"


def _settings(request: ChatRequest) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if request.effort is None:
        settings["temperature"] = request.temperature
    settings["max_tokens"] = request.max_tokens
    schema = request.schema
    if request.structured == "schema" and schema is not None:
        settings["text"] = {
            "format": {
                "type": "json_schema",
                "name": schema.name,
                "schema": schema.as_dict(),
                "strict": True,
            }
        }
    elif request.structured == "json":
        settings["text"] = {"format": {"type": "json_object"}}
    if request.effort is not None:
        settings["reasoning"] = {"effort": request.effort}
    if request.logprobs is not None:
        settings["top_logprobs"] = request.logprobs
        settings["include"] = [LOGPROBS_INCLUDE]
    return settings


def response_payload(config: VendorConfig, request: ChatRequest) -> dict[str, Any]:
    """The Responses body of ``request``: model, ``input``, ``instructions`` (when the
    system messages have text) and exactly its sent settings, the cap as
    ``max_output_tokens``."""
    items: list[dict[str, Any]] = []
    instructions: list[str] = []
    for message in request.messages:
        if message.role == "system":
            instructions.append(message.text())
            continue
        kind = "output_text" if message.role == "assistant" else "input_text"
        content = [
            {"type": kind, "text": part.text}
            if isinstance(part, TextPart)
            else {"type": "input_image", "image_url": part.data_url(), "detail": "auto"}
            for part in message.parts
        ]
        items.append({"role": message.role, "content": content})
    payload: dict[str, Any] = {"model": request.model, "input": items}
    if any(instructions):
        payload["instructions"] = "".join(instructions)
    for name, value in _settings(request).items():
        payload["max_output_tokens" if name == "max_tokens" else name] = value
    return payload


async def create_response(
    session: HTTPSession,
    config: VendorConfig,
    request: ChatRequest,
    *,
    api_key: str | None,
    timeout: float,
) -> Completion:
    """One attempt of ``request`` against ``config``'s ``/responses`` endpoint.

    Raises:
        CallFailure: for every outcome that is not a usable completion.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    body = json.dumps(response_payload(config, request), ensure_ascii=False).encode()
    raw = await session.post(
        config.base_url.rstrip("/") + "/responses", headers=headers, body=body, timeout=timeout
    )
    return parse_response(raw)


def parse_response(raw: RawResponse) -> Completion:
    """A Responses reply as a :class:`Completion`, or raise a classified failure."""
    if raw.status >= 300:
        raise status_failure(raw)
    try:
        data = json.loads(raw.body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        what = "empty" if not raw.body.strip() else "not JSON"
        raise CallFailure(ErrorKind.INVALID_RESPONSE, f"HTTP {raw.status} body is {what}") from exc
    if not isinstance(data, dict):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response body is not a JSON object")
    status = data.get("status")
    error = data.get("error")
    if status == "failed" or (isinstance(error, dict) and "output" not in data):
        message = error.get("message") if isinstance(error, dict) else None
        raise CallFailure(ErrorKind.SERVER, f"response failed: {message or 'no message'}")
    output = data.get("output")
    if not isinstance(output, list):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response has no output items")
    texts: list[str] = []
    refusals: list[str] = []
    thoughts: list[str] = []
    logprobs: list[Any] = []
    has_logprobs = False
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "reasoning":
            for part in item.get("summary") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    thoughts.append(part["text"])
        elif item.get("type") == "message":
            for part in item.get("content") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                    if "logprobs" in part and part["logprobs"] is not None:
                        has_logprobs = True
                        value = part["logprobs"]
                        logprobs.extend(value if isinstance(value, list) else [value])
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    refusals.append(part["refusal"])
    tokens, problem = read_logprobs({"content": logprobs}) if has_logprobs else (None, None)
    finish = status if isinstance(status, str) and status else None
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = reason if isinstance(reason, str) and reason else "incomplete"
    model = data.get("model")
    return Completion(
        text="".join(texts) if texts or not refusals else None,
        usage=_usage(data.get("usage")),
        finish_reason=finish,
        model=model if isinstance(model, str) and model else None,
        refusal="\n".join(refusals) or None,
        reasoning="\n\n".join(t for t in thoughts if t) or None,
        logprobs=tokens,
        logprobs_problem=problem,
    )


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None

    def count(data: Any, key: str) -> int:
        value = data.get(key) if isinstance(data, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    prompt = count(usage, "input_tokens")
    completion = count(usage, "output_tokens")
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=count(usage, "total_tokens") or prompt + completion,
        cache_read_tokens=min(count(usage.get("input_tokens_details"), "cached_tokens"), prompt),
        # Reasoning tokens are part of output_tokens, as OpenAI bills them.
        reasoning_tokens=min(
            count(usage.get("output_tokens_details"), "reasoning_tokens"), completion
        ),
    )


class ResponsesAdapter(WireAdapter):
    """The ``"openai-responses"`` protocol (see the module's description)."""

    name = PROTOCOL
    title = "OpenAI's Responses API"
    forms = frozenset({"schema", "json", "off"})
    takes_http_client = True
    token_probabilities = True

    def __init__(self) -> None:
        self.batch = OpenAIBatchAPI("/v1/responses", response_payload, parse_response, self.name)

    def sent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        return _settings(request)

    def unsent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        unsent: dict[str, Any] = {}
        if request.effort is not None:
            unsent["temperature"] = request.temperature
        if request.seed is not None:
            unsent["seed"] = request.seed
        return unsent

    def sends_temperature(self, config: VendorConfig, effort: str | None) -> bool:
        return effort is None

    def payload(self, config: VendorConfig, request: ChatRequest) -> dict[str, Any]:
        return response_payload(config, request)

    async def connect(
        self, config: VendorConfig, api_key: str | None, session: HTTPSession | None
    ) -> Connection:
        ready = session or await ready_session(config.base_url)

        async def send(request: ChatRequest, timeout: float) -> Completion:
            return await create_response(ready, config, request, api_key=api_key, timeout=timeout)

        return Connection(send, ready.enforces_total_timeout)

    def parse(self, raw: RawResponse) -> Completion:
        return parse_response(raw)

    def form_problem(self, config: VendorConfig, structured: str) -> str | None:
        if structured == "tool":
            return (
                f"structured='tool' forces an Anthropic tool; vendor {config.name!r} speaks "
                "OpenAI's Responses API, where structured='schema' sends the schema as "
                "text.format (or use 'auto')"
            )
        return super().form_problem(config, structured)

    def auto_form(self, config: VendorConfig, *, thinking: bool, json_ok: bool) -> StructuredForm:
        return "schema"

    def reasoning_problem(
        self,
        config: VendorConfig,
        effort: str | None,
        thinking_budget: int | None,
        structured: str | None,
    ) -> str | None:
        if thinking_budget is not None:
            return (
                f"vendor {config.name!r}: OpenAI's Responses API takes a reasoning effort, "
                "not a token budget; use effort='low'|'medium'|'high' and leave "
                "thinking_budget out"
            )
        return None


ADAPTER = register_protocol(ResponsesAdapter())
"""The registered ``"openai-responses"`` adapter."""
