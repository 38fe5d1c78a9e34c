"""What a chat or Messages request asks for beyond text, read from its body: the answer's
enforced shape (a JSON schema, a forced tool), reasoning (effort, budget), the output cap,
and the refusals a server configured with ``VendorServer(refuses=...)`` sends for them.

Pure reading of request bodies and building of refusals: nothing here draws an answer
(:mod:`._decisions`, :mod:`._structured`, :mod:`._logprobs`) or holds state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from ._protocol import Api, Refusal

__all__ = [
    "EFFORT_SHARES",
    "REASONING_FIELDS",
    "REFUSABLE",
    "AnswerShape",
    "Reasoning",
    "answer_shape",
    "checked_refuses",
    "invalid_feature_request",
    "output_cap",
    "reasoning_of",
    "reasoning_request_fields",
    "reasoning_tokens",
    "refused_feature",
]

REFUSABLE: Mapping[str, str] = {
    "json_schema": "chat: 400 for response_format type json_schema",
    "json_schema_500": "chat: llama-cpp-python 0.3.x's 500 validation error for json_schema",
    "json_object": "chat: 400 for response_format type json_object (with a schema or not)",
    "logprobs": "chat: 400 for logprobs / top_logprobs",
    "tools": "messages: 400 for tools / tool_choice",
    "output_format": "messages: 400 for output_config.format",
}
"""The features ``VendorServer(refuses=...)`` can refuse, with what each refusal is."""

EFFORT_SHARES: Mapping[str, float] = {"high": 1.0, "medium": 0.5, "low": 0.25}
"""The share of ``Persona.thinking_tokens`` spent at each reasoning effort."""

_EFFORTS = ("minimal", "low", "medium", "high")
REASONING_FIELDS: Mapping[Api, tuple[str, ...]] = {
    "chat": ("reasoning_effort", "thinking", "enable_thinking", "thinking_budget", "reasoning"),
    "messages": ("thinking", "output_config"),
}
"""The request fields that can ask for reasoning, per protocol (recorded per request)."""

_MIN_ANTHROPIC_BUDGET = 1024


def checked_refuses(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a set; ``ValueError`` naming the valid ones for anything else (a lone
    string is refused too: it would be read as its characters)."""
    if isinstance(names, (str, bytes)):
        raise ValueError(
            f"refuses must be an iterable of names, got the string {names!r}; "
            f"e.g. refuses=[{names!r}]"
        )
    chosen = frozenset(names)
    unknown = sorted(str(n) for n in chosen - set(REFUSABLE))
    if unknown:
        raise ValueError(f"refuses has unknown names {unknown}; choose from {sorted(REFUSABLE)}")
    return chosen


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _response_format_type(body: Mapping[str, Any]) -> str | None:
    kind = _dict(body.get("response_format")).get("type")
    return kind if isinstance(kind, str) else None


def _llama_cpp_validation_error(kind: str) -> str:
    # What str(RequestValidationError) reads like in llama-cpp-python 0.3.x's 500 body.
    return (
        "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", "
        f"'input': {kind!r}, 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}]"
    )


def refused_feature(
    body: Mapping[str, Any], api: Api, refuses: frozenset[str]
) -> tuple[str, Refusal] | None:
    """The feature of ``body`` the server refuses (one of ``refuses``) and the error it
    answers with, else ``None``.

    ``json_schema``: a 400 ``response_format type json_schema is not supported by this
    model`` (param ``response_format``). ``json_schema_500``: llama-cpp-python 0.3.x's
    HTTP 500 (type ``internal_server_error``) whose message is pydantic's validation
    error (``Input should be 'text' or 'json_object'`` at ``('body',
    'response_format', 'type')``); its ``json_object`` + ``schema`` form is accepted.
    ``json_object``: a 400 naming ``response_format`` (with a schema or not).
    ``logprobs``: a 400 naming ``logprobs`` (for ``logprobs: true`` or any
    ``top_logprobs``). ``tools``: a Messages 400 naming ``tool_choice`` (for ``tools`` or
    ``tool_choice``). ``output_format``: a Messages 400 naming ``output_config`` (for
    ``output_config.format``). Each name applies to its protocol only.
    """
    if api == "chat":
        kind = _response_format_type(body)
        if kind == "json_schema" and "json_schema" in refuses:
            message = (
                "response_format type json_schema is not supported by this model "
                "(cross_judge.testing)"
            )
            return "json_schema", Refusal(400, message, param="response_format")
        if kind == "json_schema" and "json_schema_500" in refuses:
            error = _llama_cpp_validation_error(kind)
            return "json_schema_500", Refusal(500, error, error_type="internal_server_error")
        if kind == "json_object" and "json_object" in refuses:
            message = "response_format type json_object is not supported by this model"
            return "json_object", Refusal(400, message, param="response_format")
        asks_logprobs = body.get("logprobs") is True or "top_logprobs" in body
        if asks_logprobs and "logprobs" in refuses:
            message = "logprobs is not supported by this model"
            return "logprobs", Refusal(400, message, param="logprobs")
        return None
    if ("tools" in body or "tool_choice" in body) and "tools" in refuses:
        return "tools", Refusal(400, "tool_choice: tool use is not supported by this model")
    if "format" in _dict(body.get("output_config")) and "output_format" in refuses:
        message = "output_config.format: Extra inputs are not permitted"
        return "output_format", Refusal(400, message)
    return None


def invalid_feature_request(body: Mapping[str, Any], api: Api) -> Refusal | None:
    """The 400 a Messages request gets for asking a feature wrongly, as Anthropic answers
    it, else ``None``: a ``tool_choice`` naming a tool not in ``tools``; extended thinking
    whose ``budget_tokens`` is not an int >= 1024, or not below ``max_tokens``. Chat
    requests are never refused here."""
    if api == "chat":
        return None
    choice = _dict(body.get("tool_choice"))
    if choice.get("type") == "tool":
        names = [_dict(t).get("name") for t in body.get("tools") or []]
        if choice.get("name") not in names:
            return Refusal(400, f"tool_choice: tool {choice.get('name')!r} not found in tools")
    thinking = _dict(body.get("thinking"))
    if thinking.get("type") == "enabled":
        budget = _budget(thinking.get("budget_tokens"))
        if budget is None or budget < _MIN_ANTHROPIC_BUDGET:
            return Refusal(
                400, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens <= budget:
            return Refusal(400, "`max_tokens` must be greater than `thinking.budget_tokens`")
    return None


class AnswerShape(NamedTuple):
    """The answer's shape a request enforces: ``form`` ``"text"`` (none: the persona's
    style), ``"schema"`` (strict JSON of ``schema``) or ``"tool"`` (Messages: a
    ``tool_use`` block calling ``tool``, its input following ``schema``)."""

    form: Literal["text", "schema", "tool"]
    schema: dict[str, Any] | None = None
    tool: str | None = None


def answer_shape(body: Mapping[str, Any], api: Api) -> AnswerShape:
    """What ``body`` (accepted: :func:`feature_refusal` found nothing) enforces.

    Chat: ``response_format`` ``{"type": "json_schema", "json_schema": {"schema"}}`` or
    llama.cpp's ``{"type": "json_object", "schema"}`` -> ``"schema"``; plain
    ``json_object`` and anything else -> ``"text"``. Messages: ``tool_choice``
    ``{"type": "tool", "name"}`` -> ``"tool"`` with that tool's ``input_schema``;
    ``output_config.format`` ``{"type": "json_schema", "schema"}`` -> ``"schema"``. A
    schema that is not an object is read as ``{}`` (an answer with no properties but the
    label).
    """
    if api == "chat":
        response_format = _dict(body.get("response_format"))
        kind = response_format.get("type")
        if kind == "json_schema":
            return AnswerShape(
                "schema", _dict(_dict(response_format.get("json_schema")).get("schema"))
            )
        if kind == "json_object" and "schema" in response_format:
            return AnswerShape("schema", _dict(response_format.get("schema")))
        return AnswerShape("text")
    choice = _dict(body.get("tool_choice"))
    if choice.get("type") == "tool":
        name = str(choice.get("name"))
        tool = next((_dict(t) for t in body.get("tools") or [] if _dict(t).get("name") == name), {})
        return AnswerShape("tool", _dict(tool.get("input_schema")), name)
    output_format = _dict(_dict(body.get("output_config")).get("format"))
    if output_format.get("type") == "json_schema":
        return AnswerShape("schema", _dict(output_format.get("schema")))
    return AnswerShape("text")


class Reasoning(NamedTuple):
    """The reasoning a request asks for: ``effort`` (``"low"``, ``"medium"``, ``"high"``)
    and a token ``budget`` capping it (``None``: none)."""

    effort: str
    budget: int | None = None


def _budget(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _effort(value: Any) -> str:
    # "minimal" spends like "low"; an unknown value like the vendors' default, medium.
    if value == "minimal":
        return "low"
    return value if isinstance(value, str) and value in EFFORT_SHARES else "medium"


def reasoning_of(body: Mapping[str, Any], api: Api) -> Reasoning | None:
    """The reasoning ``body`` asks for, or ``None``.

    Chat: ``reasoning_effort`` (OpenAI, vLLM); ``thinking: {"type": "enabled"}``
    (DeepSeek: high); ``enable_thinking: true`` with ``thinking_budget`` (Qwen: high,
    capped); ``reasoning: {"effort"}`` or ``{"max_tokens"}`` or ``{"enabled": true}``
    (OpenRouter). Messages: ``thinking: {"type": "enabled", "budget_tokens"}`` (high,
    capped) or ``{"type": "adaptive"}`` (high), and ``output_config.effort`` (which sets
    the effort when both are sent). ``"minimal"`` counts as low, an unknown effort as
    medium; disabled thinking asks for none.
    """
    if api == "messages":
        thinking = _dict(body.get("thinking"))
        effort = _dict(body.get("output_config")).get("effort")
        enabled = thinking.get("type") in ("enabled", "adaptive")
        if not enabled and effort is None:
            return None
        budget = _budget(thinking.get("budget_tokens")) if enabled else None
        return Reasoning("high" if effort is None else _effort(effort), budget)
    if "reasoning_effort" in body:
        return Reasoning(_effort(body["reasoning_effort"]))
    if _dict(body.get("thinking")).get("type") == "enabled":
        return Reasoning("high")
    if body.get("enable_thinking") is True:
        return Reasoning("high", _budget(body.get("thinking_budget")))
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("enabled", True) is not False:
        if "effort" in reasoning:
            return Reasoning(_effort(reasoning["effort"]))
        return Reasoning("high", _budget(reasoning.get("max_tokens")))
    return None


def reasoning_request_fields(body: Any, api: Api) -> dict[str, Any]:
    """The reasoning fields of ``body`` as sent (``{}``: none, or not a JSON object)."""
    if not isinstance(body, dict):
        return {}
    return {name: body[name] for name in REASONING_FIELDS[api] if name in body}


def reasoning_tokens(thinking_tokens: int, reasoning: Reasoning | None) -> int:
    """The tokens spent reasoning: ``thinking_tokens`` times the effort's share
    (:data:`EFFORT_SHARES`, rounded down), capped by the budget; 0 without reasoning."""
    if reasoning is None:
        return 0
    spent = int(thinking_tokens * EFFORT_SHARES[reasoning.effort])
    return spent if reasoning.budget is None else min(spent, reasoning.budget)


def output_cap(body: Mapping[str, Any], api: Api) -> int | None:
    """The output token cap of ``body``: chat ``max_completion_tokens``, else
    ``max_tokens``; Messages ``max_tokens``. ``None`` when absent or not an int >= 1."""
    names = ("max_tokens",) if api == "messages" else ("max_completion_tokens", "max_tokens")
    for name in names:
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return None
