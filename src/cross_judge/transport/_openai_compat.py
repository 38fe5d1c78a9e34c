"""The OpenAI chat-completions wire protocol (deepseek, openai, openrouter, local servers).

One request in, a :class:`Completion` (text + usage) or a :class:`CallFailure` out. This
module classifies; it does not retry, parse verdicts or decide what an empty answer means
for a vote (that is :mod:`cross_judge.core`'s job).

Classification of a response:

* 2xx with a chat.completion body -> :class:`Completion`. DeepSeek's
  ``reasoning_content`` is kept apart from ``content`` (it is never parsed as the verdict);
  ``choices[0].logprobs.content`` (OpenAI, llama.cpp, vLLM) becomes
  :attr:`Completion.logprobs` when every entry is well-formed (otherwise ``None``: a
  confidence is never read from a partial list; :attr:`Completion.logprobs_problem` then
  names the bad field); ``completion_tokens_details.
  reasoning_tokens`` becomes :attr:`Usage.reasoning_tokens`.
* 2xx that is not JSON, not an object, or has no ``choices`` -> ``INVALID_RESPONSE``.
* 401/403 -> ``AUTH``; 429 -> ``RATE_LIMIT``; 5xx -> ``SERVER``; 408/409 are retryable;
  other 4xx -> ``BAD_REQUEST``. The vendor's own error message is kept, and
  ``Retry-After`` / ``retry-after-ms`` are read into ``retry_after``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind
from ..verdict import Usage
from ._adapter import Connection, WireAdapter, register_protocol
from ._failure import CallFailure, failure_for_status, retry_after_seconds
from ._http import HTTPSession, RawResponse
from ._openai_batch import OpenAIBatchAPI
from ._pool import ready_session
from ._wire import ChatRequest, Completion, StructuredForm, TokenLogprob

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = [
    "ADAPTER",
    "ChatCompletionsAdapter",
    "Completion",
    "build_payload",
    "chat_completion",
    "chat_settings",
    "complete",
    "logprobs_of",
    "parse_chat_response",
    "read_logprobs",
    "reasoning_fields",
    "retry_after_seconds",
    "status_failure",
]

_MAX_MESSAGE_CHARS = 500


_MAX_LOGPROB_TOKENS = 200_000
_MAX_ALTERNATIVES = 64


def chat_settings(request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
    """:meth:`ChatRequest.sent_settings` on chat completions: for ``config``'s schema and
    reasoning dialects (``None``: ``json_schema`` and ``openai``)."""
    schema_dialect = "json_schema" if config is None else config.schema_dialect
    dialect = "openai" if config is None else (config.reasoning or "openai")
    settings: dict[str, Any] = {}
    if not (request.effort is not None and dialect == "openai"):
        settings["temperature"] = request.temperature
    settings["max_tokens"] = request.max_tokens
    if request.structured == "json":
        settings["response_format"] = {"type": "json_object"}
    elif request.structured == "schema" and request.schema is not None:
        if schema_dialect == "json_object":
            settings["response_format"] = {
                "type": "json_object",
                "schema": request.schema.as_dict(),
            }
        else:
            settings["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema.name,
                    "strict": True,
                    "schema": request.schema.as_dict(),
                },
            }
    if request.seed is not None:
        settings["seed"] = request.seed
    if request.logprobs is not None:
        settings["logprobs"] = True
        settings["top_logprobs"] = request.logprobs
    settings.update(reasoning_fields(dialect, request.effort, request.thinking_budget))
    return settings


class ChatCompletionsAdapter(WireAdapter):
    """The ``"openai"`` protocol: ``POST {base_url}/chat/completions`` over the pooled HTTP
    session (or a critic's injected client), OpenAI's Batch API for batches."""

    name = "openai"
    title = "The OpenAI chat-completions API"
    forms = frozenset({"schema", "json", "off"})
    takes_http_client = True
    token_probabilities = True

    def __init__(self) -> None:
        self.batch = OpenAIBatchAPI(
            "/v1/chat/completions", build_payload, parse_chat_response, self.name
        )

    def sent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        return chat_settings(request, config)

    def unsent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        dialect = "openai" if config is None else (config.reasoning or "openai")
        if request.effort is not None and dialect == "openai":
            return {"temperature": request.temperature}
        return {}

    def sends_temperature(self, config: VendorConfig, effort: str | None) -> bool:
        return effort is None or (config.reasoning or "openai") != "openai"

    def payload(self, config: VendorConfig, request: ChatRequest) -> dict[str, Any]:
        return build_payload(config, request)

    async def connect(
        self, config: VendorConfig, api_key: str | None, session: HTTPSession | None
    ) -> Connection:
        ready = session or await ready_session(config.base_url)

        async def send(request: ChatRequest, timeout: float) -> Completion:
            return await complete(ready, config, request, api_key=api_key, timeout=timeout)

        return Connection(send, ready.enforces_total_timeout)

    def parse(self, raw: RawResponse) -> Completion:
        return parse_chat_response(raw)

    def form_problem(self, config: VendorConfig, structured: str) -> str | None:
        if structured == "tool":
            return (
                f"structured='tool' forces an Anthropic tool; vendor {config.name!r} speaks "
                "the OpenAI protocol, where structured='schema' sends the schema as "
                "response_format (or use 'auto')"
            )
        if structured == "schema" and config.json_schema is False:
            return (
                f"vendor {config.name!r} does not enforce JSON schemas; use structured='json' "
                "(a JSON object), 'auto' (the strongest form it takes), or register the "
                "endpoint with json_schema=True if it does"
            )
        return super().form_problem(config, structured)

    def auto_form(self, config: VendorConfig, *, thinking: bool, json_ok: bool) -> StructuredForm:
        if config.json_schema is not False:
            return "schema"
        if config.json_object is not False and json_ok:
            return "json"
        return "off"

    def json_allowed(self, config: VendorConfig) -> bool:
        return config.json_object is not False

    def reasoning_problem(
        self,
        config: VendorConfig,
        effort: str | None,
        thinking_budget: int | None,
        structured: str | None,
    ) -> str | None:
        problem = dialect_problem(config.reasoning, effort, thinking_budget)
        return None if problem is None else f"vendor {config.name!r}: {problem}"


def build_payload(config: VendorConfig, request: ChatRequest) -> dict[str, Any]:
    """The chat-completions body for ``request`` on ``config``'s vendor: the model, the
    messages and exactly :meth:`ChatRequest.sent_settings` for the vendor, its output cap
    under the vendor's field (``max_tokens`` or ``max_completion_tokens``)."""
    payload: dict[str, Any] = {"model": request.model, "messages": request.chat_messages()}
    for name, value in chat_settings(request, config).items():
        payload[config.max_tokens_field if name == "max_tokens" else name] = value
    return payload


async def complete(
    session: HTTPSession,
    config: VendorConfig,
    request: ChatRequest,
    *,
    api_key: str | None,
    timeout: float,
) -> Completion:
    """One attempt of ``request`` against ``config``'s chat-completions endpoint.

    Raises:
        CallFailure: for every outcome that is not a usable completion.
    """
    return await chat_completion(
        session,
        base_url=config.base_url,
        api_key=api_key,
        payload=build_payload(config, request),
        timeout=timeout,
    )


async def chat_completion(
    session: HTTPSession,
    *,
    base_url: str,
    api_key: str | None,
    payload: Mapping[str, Any],
    timeout: float,
) -> Completion:
    """POST ``payload`` to ``{base_url}/chat/completions`` and classify the answer.

    Raises:
        CallFailure: for every outcome that is not a usable completion.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    body = json.dumps(payload, ensure_ascii=False).encode()
    raw = await session.post(
        base_url.rstrip("/") + "/chat/completions", headers=headers, body=body, timeout=timeout
    )
    return parse_chat_response(raw)


def parse_chat_response(raw: RawResponse) -> Completion:
    """Turn an HTTP response into a :class:`Completion` or raise a classified failure."""
    if raw.status >= 300:
        raise status_failure(raw)
    data = _json_object(raw)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response choice has no message")
    tokens, problem = read_logprobs(choice.get("logprobs"))
    return Completion(
        text=_text_of(message.get("content")),
        usage=_usage_of(data.get("usage")),
        finish_reason=_str_or_none(choice.get("finish_reason")),
        model=_str_or_none(data.get("model")),
        refusal=_str_or_none(message.get("refusal")),
        reasoning=_str_or_none(message.get("reasoning_content") or message.get("reasoning")),
        logprobs=tokens,
        logprobs_problem=problem,
    )


def logprobs_of(data: Any) -> tuple[TokenLogprob, ...] | None:
    """``choices[i].logprobs`` as tokens: ``{"content": [{"token", "logprob",
    "top_logprobs": [{"token", "logprob"}, ...]}, ...]}``. ``None`` when absent, or when
    any entry is malformed (a token that is not text, a log-probability that is not a
    finite number <= 0), or the list is longer than any answer (200,000 tokens): a
    confidence must not be read from what a vendor garbled. Alternatives past the first 64
    are ignored, as are malformed ones. :func:`read_logprobs` also says why."""
    return read_logprobs(data)[0]


def read_logprobs(data: Any) -> tuple[tuple[TokenLogprob, ...] | None, str | None]:
    """:func:`logprobs_of` and why it gave ``None``: ``(tokens, None)`` when they can be
    used; ``(None, None)`` when the reply had none (no ``logprobs``, or its ``content``
    null or empty); ``(None, problem)`` when it had some that cannot be used, the problem
    naming the first bad field, e.g. ``"logprobs.content[3].logprob is NaN"``."""
    if data is None:
        return None, None
    if not isinstance(data, dict):
        return None, f"logprobs is {_kind(data)}, not an object"
    content = data.get("content")
    if content is None or (isinstance(content, list) and not content):
        return None, None
    if not isinstance(content, list):
        return None, f"logprobs.content is {_kind(content)}, not a list"
    if len(content) > _MAX_LOGPROB_TOKENS:
        return None, (
            f"logprobs.content has {len(content):,} entries, more than any answer "
            f"({_MAX_LOGPROB_TOKENS:,})"
        )
    tokens: list[TokenLogprob] = []
    for index, entry in enumerate(content):
        where = f"logprobs.content[{index}]"
        if not isinstance(entry, dict):
            return None, f"{where} is {_kind(entry)}, not an object"
        token = entry.get("token")
        if not isinstance(token, str):
            return None, f"{where}.token is {_kind(token)}, not text"
        logprob = _logprob(entry.get("logprob"))
        if logprob is None:
            return None, f"{where}.logprob {_logprob_problem(entry.get('logprob'))}"
        top: list[tuple[str, float]] = []
        alternatives = entry.get("top_logprobs")
        if isinstance(alternatives, list):
            for alternative in alternatives[:_MAX_ALTERNATIVES]:
                if not isinstance(alternative, dict):
                    continue
                text, value = alternative.get("token"), _logprob(alternative.get("logprob"))
                if isinstance(text, str) and value is not None:
                    top.append((text, value))
        tokens.append(TokenLogprob(token, logprob, tuple(top)))
    return tuple(tokens), None


def _logprob_problem(value: Any) -> str:
    """Why ``value`` is not a log-probability (:func:`_logprob` gave ``None``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {_kind(value)}, not a number"
    number = float(value)
    if math.isnan(number):
        return "is NaN"
    if math.isinf(number):
        return f"is {number}, not a finite number"
    return f"is {number:g}, above 0 (a log-probability is at most 0)"


def _kind(value: Any) -> str:
    """A JSON value's kind, for a message."""
    if value is None:
        return "missing (or null)"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _logprob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number <= 0.0 else None


def status_failure(raw: RawResponse) -> CallFailure:
    """The failure of an HTTP error response in OpenAI's error shape (``{"error":
    {"message": ...}}`` and common variants), its ``Retry-After`` read."""
    return failure_for_status(raw.status, raw.headers, _vendor_message(raw.body))


def _vendor_message(body: bytes) -> str:
    """The vendor's error text: ``{"error": {"message": ...}}`` and common variants."""
    if not body:
        return ""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body[:_MAX_MESSAGE_CHARS].decode("utf-8", "replace").strip()
        return "non-JSON error body" if text.lstrip().startswith("<") else text
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            for key in ("message", "detail", "error"):
                value = error.get(key)
                if isinstance(value, str) and value.strip():
                    return value.strip()[:_MAX_MESSAGE_CHARS]
        elif isinstance(error, str):
            return error.strip()[:_MAX_MESSAGE_CHARS]
    return json.dumps(data)[:_MAX_MESSAGE_CHARS]


def _json_object(raw: RawResponse) -> dict[str, Any]:
    content_type = raw.headers.get("content-type", "")
    try:
        data = json.loads(raw.body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        what = "HTML" if "html" in content_type or raw.body.lstrip()[:1] == b"<" else "not JSON"
        if not raw.body.strip():
            what = "empty"
        raise CallFailure(
            ErrorKind.INVALID_RESPONSE,
            f"HTTP {raw.status} body is {what} (content-type {content_type or 'unset'})",
        ) from exc
    if not isinstance(data, dict):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response body is not a JSON object")
    if "error" in data and "choices" not in data:
        # Some gateways answer 200 with an error object.
        raise CallFailure(ErrorKind.SERVER, f"HTTP {raw.status}: {_vendor_message(raw.body)}")
    return data


def _text_of(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        texts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return None


def _usage_of(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None

    def count(data: Any, key: str) -> int:
        value = data.get(key) if isinstance(data, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    # Cached input: OpenAI reports prompt_tokens_details.cached_tokens, DeepSeek
    # prompt_cache_hit_tokens; both are part of prompt_tokens.
    cached = count(usage.get("prompt_tokens_details"), "cached_tokens") or count(
        usage, "prompt_cache_hit_tokens"
    )
    prompt = count(usage, "prompt_tokens")
    completion = count(usage, "completion_tokens")
    # Reasoning tokens are part of completion_tokens (OpenAI, DeepSeek, vLLM report them so).
    reasoning = count(usage.get("completion_tokens_details"), "reasoning_tokens")
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=count(usage, "total_tokens"),
        cache_read_tokens=min(cached, prompt),
        reasoning_tokens=min(reasoning, completion),
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def reasoning_fields(
    dialect: str, effort: str | None, thinking_budget: int | None
) -> dict[str, Any]:
    """The request fields of an OpenAI-compatible vendor's reasoning ``dialect`` for an
    ``effort`` and a ``thinking_budget`` (both ``None``: none). What a dialect cannot
    express is refused when the critic is built (:func:`reasoning_problem`); here it is
    left out.

    ==========  ==================================  ========================================
    dialect     effort                              thinking_budget
    ==========  ==================================  ========================================
    openai      ``reasoning_effort``                (refused)
    deepseek    ``thinking: {"type": "enabled"}``   (refused)
    qwen        (refused)                           ``enable_thinking``, ``thinking_budget``
    vllm        ``reasoning_effort``                (refused)
    openrouter  ``reasoning: {"effort": ...}``      ``reasoning: {"max_tokens": ...}``
    ==========  ==================================  ========================================

    DeepSeek's thinking has no levels: only ``effort="high"`` is taken.
    """
    fields: dict[str, Any] = {}
    if dialect in ("openai", "vllm"):
        if effort is not None:
            fields["reasoning_effort"] = effort
    elif dialect == "deepseek":
        if effort is not None:
            fields["thinking"] = {"type": "enabled"}
    elif dialect == "qwen":
        if thinking_budget is not None:
            fields["enable_thinking"] = True
            fields["thinking_budget"] = thinking_budget
    elif dialect == "openrouter":
        if effort is not None:
            fields["reasoning"] = {"effort": effort}
        elif thinking_budget is not None:
            fields["reasoning"] = {"max_tokens": thinking_budget}
    return fields


def dialect_problem(
    dialect: str | None, effort: str | None, thinking_budget: int | None
) -> str | None:
    """Why a chat-completions vendor of reasoning ``dialect`` cannot be sent ``effort``
    and ``thinking_budget`` as asked, or ``None`` when it can: the fix is in the text."""
    if effort is None and thinking_budget is None:
        return None
    if dialect is None:
        return (
            "this vendor has no known reasoning fields, so effort/thinking_budget would be "
            "dropped; register the endpoint with its dialect, e.g. register_vendor(name, "
            "base_url, reasoning='openai') (reasoning_effort), 'qwen' (enable_thinking and "
            "thinking_budget), 'vllm', 'deepseek' or 'openrouter', or leave both out"
        )
    if dialect in ("openai", "vllm") and thinking_budget is not None:
        return (
            f"the {dialect!r} reasoning fields take an effort (reasoning_effort), not a token "
            "budget; use effort='low'|'medium'|'high' and leave thinking_budget out"
        )
    if dialect == "deepseek":
        if thinking_budget is not None:
            return (
                "DeepSeek's thinking mode has no token budget; use effort='high' (thinking on) "
                "and leave thinking_budget out"
            )
        if effort != "high":
            return (
                f"DeepSeek's thinking mode is on or off, with no levels, so effort={effort!r} "
                "cannot be sent; effort='high' turns thinking on"
            )
    if dialect == "qwen" and effort is not None:
        return (
            "Qwen's thinking takes a token budget (enable_thinking, thinking_budget), not an "
            "effort; use thinking_budget=N and leave effort out"
        )
    if dialect == "openrouter" and effort is not None and thinking_budget is not None:
        return "OpenRouter's reasoning takes an effort or a token budget, not both; leave one out"
    return None


ADAPTER = register_protocol(ChatCompletionsAdapter())
"""The registered ``"openai"`` adapter."""
