"""Vendors' batch APIs: the requests a batch submits, and its results mapped back.

OpenAI's Batch API (a JSONL file of chat-completions requests, uploaded, then
``/v1/batches``) and Anthropic's Message Batches (``/v1/messages/batches``) answer within
24 hours at about half the live price. This module holds what does not depend on how a job
is run: the id that ties a result to its item and critic, the request lines each vendor
takes, their split into batches within each vendor's limits, and the parsing of result
lines into the :class:`~cross_judge.transport.Completion` or
:class:`~cross_judge.transport.CallFailure` a live call would have given, so the answers go
through the same parsing, voting, cache and cost as live ones. It makes no call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, ErrorKind
from ._failure import CallFailure, failure_for_status
from ._http import RawResponse
from ._wire import ChatRequest, Completion
from .anthropic import parse_message_response
from .openai_compat import build_payload, parse_chat_response

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = [
    "ANTHROPIC_LIMITS",
    "OPENAI_LIMITS",
    "BatchLimits",
    "BatchRequest",
    "Outcome",
    "anthropic_request",
    "openai_request",
    "parse_anthropic_results",
    "parse_openai_results",
    "request_id",
    "split",
]

Protocol = Literal["openai", "anthropic"]

Outcome = Completion | CallFailure
"""What a batch gave for one request: the completion, or why there is none."""


@dataclass(frozen=True)
class BatchLimits:
    """How much one batch may hold: requests, and bytes of its JSONL (or JSON) body."""

    max_requests: int
    max_bytes: int


OPENAI_LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
"""OpenAI: at most 50,000 requests and 200 MB per input file, and one model per file."""

ANTHROPIC_LIMITS = BatchLimits(max_requests=100_000, max_bytes=256 * 1024 * 1024)
"""Anthropic: at most 100,000 requests and 256 MB per message batch."""

_ID_PREFIX = "cj-"
_ID_HEX = 48


def request_id(
    item_id: str,
    critic: str,
    *,
    order: str | None = None,
    sample: int = 0,
    variant: str | None = None,
) -> str:
    """The ``custom_id`` of the request asking ``critic`` about item ``item_id`` (shown in
    ``order`` for a pair judged in both orders, ``sample`` for a sampled critic;
    ``variant`` tells apart any other requests of one critic about one item, e.g. the
    request's :meth:`~cross_judge.transport.ChatRequest.cache_key`, as batch mode uses).

    ``cj-`` and 48 hex digits of sha256 over the four values: the same on every machine and
    run (so a resumed job recognises its results), distinct for any two requests in
    practice (192 bits), and within Anthropic's ``^[a-zA-Z0-9_-]{1,64}$`` whatever the item
    id holds (spaces, slashes, any script, any length).
    """
    parts: list[object] = [item_id, critic, order, sample]
    if variant is not None:  # absent: ids made without one are unchanged
        parts.append(variant)
    key = json.dumps(parts, ensure_ascii=False)
    # surrogatepass: an item id may hold a lone surrogate (valid JSON); other ids hash as before
    return _ID_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_ID_HEX]


@dataclass(frozen=True)
class BatchRequest:
    """One request as a batch takes it: its ``custom_id``, its model, the JSON object to
    submit (``line``), and ``size``, the bytes of that object as one JSONL line."""

    custom_id: str
    model: str
    line: dict[str, Any]
    size: int


def _sized(custom_id: str, model: str, line: dict[str, Any]) -> BatchRequest:
    size = len(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode()) + 1
    return BatchRequest(custom_id, model, line, size)


def openai_request(config: VendorConfig, request: ChatRequest, custom_id: str) -> BatchRequest:
    """A line of an OpenAI batch input file: ``request``'s chat-completions body exactly as
    a live call sends it (:func:`~cross_judge.transport.openai_compat.build_payload`)."""
    line = {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": build_payload(config, request),
    }
    return _sized(custom_id, request.model, line)


def anthropic_request(request: ChatRequest, custom_id: str) -> BatchRequest:
    """An entry of an Anthropic message batch: the Messages body a live call sends (model,
    the user message, the system prompt when there is one, and exactly
    :meth:`~cross_judge.transport.ChatRequest.sent_settings` for ``"anthropic"``:
    ``max_tokens``, and thinking, a forced tool or ``output_config`` when asked)."""
    params: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": "user", "content": request.user}],
    }
    if request.system:
        params["system"] = request.system
    params.update(request.sent_settings("anthropic"))
    return _sized(custom_id, request.model, {"custom_id": custom_id, "params": params})


def split(
    requests: Iterable[BatchRequest], limits: BatchLimits, *, one_model: bool
) -> list[list[BatchRequest]]:
    """``requests`` as batches within ``limits``, in order; with ``one_model`` (OpenAI) each
    batch holds one model's requests only (models in order of first appearance).

    Raises:
        ConfigError: two requests share a ``custom_id``, or one request alone exceeds
            ``limits.max_bytes``.
    """
    seen: set[str] = set()
    groups: dict[str, list[BatchRequest]] = {}
    for request in requests:
        if request.custom_id in seen:
            raise ConfigError(f"two batch requests share the custom_id {request.custom_id!r}")
        seen.add(request.custom_id)
        if request.size > limits.max_bytes:
            raise ConfigError(
                f"batch request {request.custom_id!r} is {request.size} bytes, over the "
                f"vendor's {limits.max_bytes} bytes per batch: shorten the item or judge it live"
            )
        groups.setdefault(request.model if one_model else "", []).append(request)
    batches: list[list[BatchRequest]] = []
    for group in groups.values():
        batches.extend(_chunks(group, limits))
    return batches


def _chunks(requests: Sequence[BatchRequest], limits: BatchLimits) -> Iterator[list[BatchRequest]]:
    batch: list[BatchRequest] = []
    size = 0
    for request in requests:
        if batch and (len(batch) == limits.max_requests or size + request.size > limits.max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(request)
        size += request.size
    if batch:
        yield batch


# -- results ------------------------------------------------------------------------------------


def parse_openai_results(jsonl: bytes) -> dict[str, Outcome]:
    """The outcome per ``custom_id`` of an OpenAI batch's output or error file.

    A line whose ``response`` has status 200 is parsed as the live chat-completions
    response would be. A request that expired is a ``BATCH`` failure; one that failed with
    an HTTP status is classified like a live call with that status; any other error is a
    ``BATCH`` failure with the vendor's message. Blank lines are skipped.

    Raises:
        ConfigError: a line that is not a JSON object with a ``custom_id``.
    """
    outcomes: dict[str, Outcome] = {}
    for number, data in _lines(jsonl):
        custom_id = _custom_id(data, number)
        response = data.get("response")
        error = data.get("error")
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if status == 200 and not error:
            raw = RawResponse(200, {}, json.dumps(body).encode())
            outcomes[custom_id] = _completion(lambda raw=raw: parse_chat_response(raw))
            continue
        message = _message(error) or _message(body) or "no answer"
        code = error.get("code") if isinstance(error, dict) else None
        if code == "batch_expired":
            outcomes[custom_id] = CallFailure(ErrorKind.BATCH, f"expired: {message}")
        elif isinstance(status, int) and status >= 300:
            outcomes[custom_id] = failure_for_status(status, {}, message)
        else:
            outcomes[custom_id] = CallFailure(ErrorKind.BATCH, f"{code or 'failed'}: {message}")
    return outcomes


_ANTHROPIC_ERRORS = {
    "invalid_request_error": ErrorKind.BAD_REQUEST,
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "not_found_error": ErrorKind.BAD_REQUEST,
    "request_too_large": ErrorKind.BAD_REQUEST,
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "api_error": ErrorKind.SERVER,
    "overloaded_error": ErrorKind.SERVER,
}


def parse_anthropic_results(jsonl: bytes) -> dict[str, Outcome]:
    """The outcome per ``custom_id`` of an Anthropic message batch's results.

    ``succeeded`` is parsed as the live Messages response would be; ``errored`` is
    classified by the error's type (``invalid_request_error`` a ``BAD_REQUEST``,
    ``overloaded_error`` a ``SERVER`` failure, ...); ``expired`` and ``canceled`` are
    ``BATCH`` failures. Blank lines are skipped.

    Raises:
        ConfigError: a line that is not a JSON object with a ``custom_id``.
    """
    outcomes: dict[str, Outcome] = {}
    for number, data in _lines(jsonl):
        custom_id = _custom_id(data, number)
        result = data.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded" and isinstance(result, dict):
            body = json.dumps(result.get("message")).encode()
            outcomes[custom_id] = _completion(
                lambda body=body: parse_message_response(200, {}, body)
            )
        elif kind == "errored" and isinstance(result, dict):
            error = result.get("error")
            inner = error.get("error") if isinstance(error, dict) else None
            detail = inner if isinstance(inner, dict) else error
            error_type = detail.get("type") if isinstance(detail, dict) else None
            failure_kind = _ANTHROPIC_ERRORS.get(str(error_type), ErrorKind.SERVER)
            message = _message(detail) or str(error_type or "errored")
            outcomes[custom_id] = CallFailure(failure_kind, f"{error_type}: {message}")
        else:
            outcomes[custom_id] = CallFailure(
                ErrorKind.BATCH, f"{kind or 'no result'}: the batch gave no answer"
            )
    return outcomes


def _completion(parse: Any) -> Outcome:
    try:
        completion: Completion = parse()
    except CallFailure as failure:
        return failure
    return completion


def _lines(jsonl: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(jsonl.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            raise ConfigError(f"batch results line {number} is not JSON") from None
        if not isinstance(data, dict):
            raise ConfigError(f"batch results line {number} is not a JSON object")
        yield number, data


def _custom_id(data: dict[str, Any], number: int) -> str:
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise ConfigError(f"batch results line {number} has no custom_id")
    return custom_id


def _message(value: object) -> str:
    """The vendor's message in an error object (``{"message"}`` or ``{"error": {...}}``)."""
    if not isinstance(value, dict):
        return ""
    message = value.get("message")
    if isinstance(message, str):
        return message
    return _message(value.get("error"))
