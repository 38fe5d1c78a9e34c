"""The two wire protocols the simulated vendor speaks, as stateless shapes: OpenAI chat
completions and Anthropic Messages.

Request text extraction, error bodies and responses in either protocol, the 400/404
refusals a request gets before any persona answers it, API-key checks, the responses of
injected faults, and the bodies of a chat completion and of a message. Nothing here
holds state, decides an answer or serves a socket: :mod:`._decisions` decides,
:mod:`._server` serves.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import Any, Literal, NamedTuple

from aiohttp import web

__all__ = [
    "STOP_REASONS",
    "Api",
    "Refusal",
    "all_text",
    "anthropic_error_body",
    "anthropic_message",
    "api_error_response",
    "chat_completion",
    "error_body",
    "error_response",
    "fault_response",
    "is_authorized",
    "json_response",
    "last_user_text",
    "message_text",
    "persona_refusal",
    "request_refusal",
    "unauthorized",
    "unknown_model",
]

# The Anthropic API version from which temperature, top_p and top_k are refused.
_NO_SAMPLING_FROM_VERSION = "2026-10-21"
_SAMPLING_PARAMETERS = ("temperature", "top_p", "top_k")


Api = Literal["chat", "messages"]
"""The protocol of a request: OpenAI chat completions or Anthropic Messages."""


_ERROR_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"),
    408: ("timeout", None),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    529: ("overloaded_error", None),
}


def _phrase(status: int) -> str:
    """The reason phrase of ``status`` ("Overloaded" for Anthropic's 529, else "Error")."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else "Error"


def error_body(
    status: int,
    message: str | None = None,
    code: str | None = None,
    *,
    param: str | None = None,
    error_type: str | None = None,
) -> bytes:
    """An OpenAI-style error body; the type and code follow the status when not given,
    ``param`` names the request field at fault (``None``: null)."""
    default_type = "invalid_request_error" if status < 500 else "server_error"
    err_type, default_code = _ERROR_TYPES.get(status, (default_type, None))
    if message is None:
        message = f"{_phrase(status)} (simulated {status} from cross_judge.testing)"
    error = {
        "message": message,
        "type": error_type or err_type,
        "param": param,
        "code": code or default_code,
    }
    return json.dumps({"error": error}).encode()


_ANTHROPIC_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def anthropic_error_body(status: int, message: str | None = None) -> bytes:
    """An Anthropic-style error body, ``{"type": "error", "error": {"type", "message"}}``;
    the error type follows the status (as the Messages API documents them)."""
    default_type = "invalid_request_error" if status < 500 else "api_error"
    err_type = _ANTHROPIC_ERROR_TYPES.get(status, default_type)
    if message is None:
        message = f"{_phrase(status)} (simulated {status} from cross_judge.testing)"
    body = {"type": "error", "error": {"type": err_type, "message": message}}
    return json.dumps(body).encode()


def message_text(content: Any) -> str:
    """The text of a message ``content``: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


def last_user_text(messages: list[Any]) -> str:
    """The text of the last message whose role is ``user`` (``""`` when there is none)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def json_response(
    payload: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """``payload`` as a JSON response; ``headers`` are added to the JSON content type."""
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    return web.Response(body=json.dumps(payload).encode(), status=status, headers=hdrs)


def error_response(
    status: int, message: str | None = None, code: str | None = None
) -> web.Response:
    """An OpenAI-style error response (see :func:`error_body`)."""
    return web.Response(
        body=error_body(status, message, code),
        status=status,
        headers={"Content-Type": "application/json"},
    )


def api_error_response(api: Api, status: int, message: str | None = None) -> web.Response:
    """An error response in the protocol of the request."""
    if api == "chat":
        return error_response(status, message)
    return web.Response(
        body=anthropic_error_body(status, message),
        status=status,
        headers={"Content-Type": "application/json"},
    )


# Chat-completions finish reasons -> Anthropic stop reasons (others are kept as written).
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


def _invalid_messages_request(body: Mapping[str, Any], version: str | None) -> str | None:
    """Why the Messages API would refuse ``body`` with a 400, or ``None``."""
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return "max_tokens: Field required"
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Input should be an integer greater than or equal to 1"
    if version is not None and version >= _NO_SAMPLING_FROM_VERSION:
        for name in _SAMPLING_PARAMETERS:
            if name in body:
                return f"{name}: Extra inputs are not permitted"
    return None


def all_text(messages: list[Any]) -> str:
    """The text of every message, concatenated (what a prompt's token count is
    estimated from)."""
    return "".join(message_text(m.get("content")) for m in messages if isinstance(m, dict))


class Refusal(NamedTuple):
    """Why a chat or Messages request gets an error instead of an answer."""

    status: int
    message: str
    code: str | None = None  # the OpenAI error code (None: the status's default)
    param: str | None = None  # the OpenAI error's param: the request field at fault
    error_type: str | None = None  # the OpenAI error type (None: the status's default)

    def body(self, api: Api) -> bytes:
        """The error body in the protocol ``api``."""
        if api == "chat":
            return error_body(
                self.status, self.message, self.code, param=self.param, error_type=self.error_type
            )
        return anthropic_error_body(self.status, self.message)

    def response(self, api: Api) -> web.Response:
        """The error response in the protocol ``api``."""
        return web.Response(
            body=self.body(api), status=self.status, headers={"Content-Type": "application/json"}
        )


def request_refusal(body: Any, api: Api, version: str | None) -> Refusal | None:
    """The 400 a request body gets before any scripted reply or persona, else ``None``:
    not a JSON object, no ``model``, or (Messages) an invalid ``max_tokens`` or a sampling
    parameter the API ``version`` refuses."""
    if not isinstance(body, dict):
        return Refusal(400, "The request body is not a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        if api == "messages":
            return Refusal(400, "model: Field required")
        return Refusal(400, "You must provide a model parameter.")
    if api == "messages":
        invalid = _invalid_messages_request(body, version)
        if invalid is not None:
            return Refusal(400, invalid)
    return None


def unknown_model(model: str, api: Api) -> Refusal:
    """The 404 of a request for a model no persona serves."""
    if api == "messages":
        return Refusal(404, f"model: {model}")
    return Refusal(404, f"The model '{model}' does not exist", "model_not_found")


def persona_refusal(body: Mapping[str, Any], api: Api) -> Refusal | None:
    """The 400 a request for a persona gets when its ``messages`` is not a list, else
    ``None``."""
    if not isinstance(body.get("messages"), list):
        if api == "messages":
            return Refusal(400, "messages: Input should be a valid list")
        return Refusal(400, "'messages' must be a list of chat messages.")
    return None


def fault_response(fault: str, api: Api) -> web.Response:
    """The response of a ``Persona.fault_rate`` fault (``"429"``, ``"500"``, ``"503"``,
    ``"malformed"``) in the protocol ``api``."""
    if fault == "429":
        return web.Response(
            body=error_body(429) if api == "chat" else anthropic_error_body(429),
            status=429,
            headers={"Content-Type": "application/json", "Retry-After": "0"},
        )
    if fault in ("500", "503"):
        return api_error_response(api, int(fault))
    truncated = (
        b'{"id": "chatcmpl-fault", "object": "chat.completion", "choices": [{"in'
        if api == "chat"
        else b'{"id": "msg_fault", "type": "message", "content": [{"ty'
    )
    return web.Response(body=truncated, headers={"Content-Type": "application/json"})


def is_authorized(request: web.BaseRequest, api_key: str | None, api: Api) -> bool:
    """Whether ``request`` carries ``api_key`` (always, when it is ``None``): as
    ``Authorization: Bearer <api_key>``, or for Messages as ``x-api-key`` (which, when
    present, decides alone)."""
    if api_key is None:
        return True
    bearer = request.headers.get("Authorization") == f"Bearer {api_key}"
    if api == "messages":
        key = request.headers.get("x-api-key")
        return key == api_key if key is not None else bearer
    return bearer


def unauthorized(api: Api) -> web.Response:
    """The 401 of a request without the server's API key, in the protocol ``api``."""
    if api == "messages":
        return api_error_response("messages", 401, "invalid x-api-key (cross_judge.testing)")
    return error_response(401, "Incorrect API key provided (cross_judge.testing).")


def chat_completion(
    ids: Iterator[int],
    model: str,
    message: dict[str, Any],
    finish_reason: str,
    messages: list[Any],
    *,
    usage: dict[str, Any] | None = None,
    logprobs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` body answering ``messages`` with ``message``; its id number
    is the next of ``ids`` and ``usage`` (``None``: estimated, 4 characters a token) is
    sent as given, as is the choice's ``logprobs`` (``None``: null)."""
    prompt_chars = sum(len(message_text(m.get("content"))) for m in messages if isinstance(m, dict))
    content = message.get("content")
    prompt_tokens = max(1, prompt_chars // 4)
    completion_tokens = len(content) // 4 if isinstance(content, str) else 0
    if usage is None:
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return {
        "id": f"chatcmpl-sim{next(ids):012d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": logprobs}
        ],
        "usage": usage,
    }


def anthropic_message(
    ids: Iterator[int],
    model: str,
    text: str | None,
    stop_reason: str,
    *,
    prompt: str,
    thinking: str | None = None,
    refusal: str | None = None,
    usage: dict[str, Any] | None = None,
    tool_use: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An Anthropic Messages response body; its id number is the next of ``ids`` and
    ``usage`` (``None``: estimated from ``prompt`` and the text, 4 characters a token)
    is sent as given. Its content: a ``thinking`` block when ``thinking`` is given, a
    ``text`` block when ``text`` is, then the ``tool_use`` block when given."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "simulated"})
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_use is not None:
        content.append(tool_use)
    if usage is None:
        usage = {
            "input_tokens": max(1, len(prompt) // 4),
            "output_tokens": (len(text or "") + len(thinking or "")) // 4,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
    details = None
    if refusal is not None:
        details = {"type": "refusal", "category": None, "explanation": refusal}
    return {
        "id": f"msg_sim{next(ids):012d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "stop_details": details,
        "usage": usage,
    }
