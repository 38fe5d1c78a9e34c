"""Provider batches without HTTP: the state of an uploaded file and of a batch, their
wire objects, the validation of an OpenAI batch input file and of an Anthropic batch
create request, and which endpoint a path names.

OpenAI's Files and Batch API and Anthropic's Message Batches are both modelled. Running a
batch (answering its requests) and serving the endpoints is :mod:`._batch_endpoints`.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = [
    "BATCH_ENDPOINT",
    "BATCH_ENDPOINTS",
    "CANCELLED_MESSAGE",
    "EXPIRED_MESSAGE",
    "METADATA_MAX_PAIRS",
    "OPENAI_MAX_FILE_BYTES",
    "RESPONSES_BATCH_ENDPOINT",
    "BatchProtocol",
    "BatchRoute",
    "SimBatch",
    "SimFile",
    "anthropic_batch_refusal",
    "batch_route",
    "openai_batch_errors",
]


BatchProtocol = Literal["openai", "anthropic"]
BATCH_ENDPOINT = "/v1/chat/completions"
RESPONSES_BATCH_ENDPOINT = "/v1/responses"
BATCH_ENDPOINTS = (BATCH_ENDPOINT, RESPONSES_BATCH_ENDPOINT)
"""The endpoints an OpenAI batch may be created for: chat completions, and OpenAI's
Responses API (its lines read and answered as :mod:`._responses` describes)."""
_BATCH_WINDOW_S = 24 * 3600
OPENAI_MAX_FILE_BYTES = 200 * 1024 * 1024
_OPENAI_MAX_BATCH_REQUESTS = 50_000
_ANTHROPIC_MAX_BATCH_REQUESTS = 100_000
METADATA_MAX_PAIRS = 16
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."


@dataclass
class SimFile:
    """An uploaded (``purpose="batch"``) or generated (``"batch_output"``) file."""

    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def wire(self) -> dict[str, Any]:
        """The OpenAI ``file`` object."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass
class SimBatch:
    """One submitted batch, OpenAI or Anthropic, and what became of it.

    ``state``: ``"pending"`` until it ends, ``"cancelling"`` after a cancel, then
    ``"ended"`` with ``outcome`` ``"completed"``, ``"failed"`` (OpenAI: input file
    invalid), ``"expired"`` or ``"cancelled"``.
    """

    id: str
    protocol: BatchProtocol
    created_at: float
    requests: list[tuple[str, Any]]  # (custom_id, the request body), in input order
    polls_to_end: int
    version: str | None = None  # Anthropic: the anthropic-version of the create request
    input_file_id: str = ""
    metadata: dict[str, str] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)  # OpenAI validation errors
    polls: int = 0
    state: Literal["pending", "cancelling", "ended"] = "pending"
    outcome: Literal["completed", "failed", "expired", "cancelled"] | None = None
    cancel_at: float | None = None
    ended_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    results: bytes = b""  # Anthropic: the results JSONL once ended
    endpoint: str = BATCH_ENDPOINT  # OpenAI: the endpoint every line of the batch is for

    def wire(self, results_origin: str) -> dict[str, Any]:
        """The batch object of its protocol (``results_origin``: the Anthropic
        ``results_url`` origin)."""
        if self.protocol == "openai":
            return self._openai_wire()
        return self._anthropic_wire(results_origin)

    def _openai_wire(self) -> dict[str, Any]:
        created = int(self.created_at)
        ended = None if self.ended_at is None else int(self.ended_at)
        if self.state == "cancelling":
            status = "cancelling"
        elif self.state == "ended":
            status = str(self.outcome)
        else:
            status = "validating" if self.polls == 0 else "in_progress"
        validated = status not in ("validating", "failed")
        counts = self.counts or {"total": len(self.requests), "completed": 0, "failed": 0}
        model = None
        if self.requests and isinstance(self.requests[0][1], dict):
            first = self.requests[0][1].get("model")
            model = first if isinstance(first, str) else None
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "model": model,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": created,
            "in_progress_at": created if validated else None,
            "expires_at": created + _BATCH_WINDOW_S,
            "finalizing_at": ended if status == "completed" else None,
            "completed_at": ended if status == "completed" else None,
            "failed_at": ended if status == "failed" else None,
            "expired_at": ended if status == "expired" else None,
            "cancelling_at": None if self.cancel_at is None else int(self.cancel_at),
            "cancelled_at": ended if status == "cancelled" else None,
            "request_counts": counts,
            "metadata": self.metadata,
        }

    def _anthropic_wire(self, results_origin: str) -> dict[str, Any]:
        ended = self.state == "ended"
        if ended:
            counts = self.counts
        else:
            counts = {"processing": len(self.requests), "succeeded": 0, "errored": 0}
            counts |= {"canceled": 0, "expired": 0}
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": {"pending": "in_progress", "cancelling": "canceling"}.get(
                self.state, "ended"
            ),
            "request_counts": counts,
            "created_at": _rfc3339(self.created_at),
            "ended_at": None if self.ended_at is None else _rfc3339(self.ended_at),
            "expires_at": _rfc3339(self.created_at + _BATCH_WINDOW_S),
            "archived_at": None,
            "cancel_initiated_at": None if self.cancel_at is None else _rfc3339(self.cancel_at),
            "results_url": (
                f"{results_origin}/v1/messages/batches/{self.id}/results" if ended else None
            ),
        }


def _rfc3339(timestamp: float) -> str:
    """``timestamp`` as the Anthropic API writes times: RFC 3339 in UTC, ``Z``-suffixed."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def _batch_error(code: str, message: str, line: int | None, param: str | None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": param, "line": line}


def openai_batch_errors(
    content: bytes, endpoint: str = BATCH_ENDPOINT
) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """The requests of an OpenAI batch input file for ``endpoint``, and why it fails
    validation (empty when it does not).

    Each non-blank line must be a JSON object with a ``custom_id`` (a non-empty string,
    unique in the file), ``method`` ``"POST"``, ``url`` the batch's ``endpoint`` and a
    ``body`` object with a ``model`` string, the same model on every line; at most 50,000
    lines. Error codes: ``empty_file``, ``too_many_tasks``, ``invalid_json_line``,
    ``duplicate_custom_id``, ``url_mismatch``, ``model_mismatch`` (as the Batch API
    reports them), and ``invalid_request`` with the field as ``param`` for a missing or
    mistyped field (the simulator's own code, where the API documents none). Lines are
    numbered from 1, blank ones included.
    """
    requests: list[tuple[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    model: str | None = None
    try:
        text = content.decode()
    except UnicodeDecodeError:
        return [], [_batch_error("invalid_json_line", "The file is not UTF-8 text.", None, None)]
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if not isinstance(line, dict):
            message = "This line is not parseable as a valid JSON object."
            errors.append(_batch_error("invalid_json_line", message, number, None))
            continue
        custom_id, body = line.get("custom_id"), line.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            message = "custom_id must be a non-empty string."
            errors.append(_batch_error("invalid_request", message, number, "custom_id"))
        elif custom_id in seen:
            message = (
                "The custom_id for this request is a duplicate of another request. "
                "The custom_id parameter must be unique for each request in a batch."
            )
            errors.append(_batch_error("duplicate_custom_id", message, number, "custom_id"))
        else:
            seen.add(custom_id)
        if line.get("method") != "POST":
            message = "method must be 'POST'."
            errors.append(_batch_error("invalid_request", message, number, "method"))
        if line.get("url") != endpoint:
            message = f"The url does not match the batch endpoint {endpoint}."
            errors.append(_batch_error("url_mismatch", message, number, "url"))
        line_model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(body, dict):
            message = "body must be a JSON object (a chat-completions request)."
            errors.append(_batch_error("invalid_request", message, number, "body"))
        elif not isinstance(line_model, str) or not line_model:
            message = "body.model must be a non-empty string."
            errors.append(_batch_error("invalid_request", message, number, "body.model"))
        elif model is None:
            model = line_model
        elif line_model != model:
            message = (
                f"The model {line_model!r} does not match the model {model!r} of the other "
                "requests in the file: a batch input file holds one model."
            )
            errors.append(_batch_error("model_mismatch", message, number, "body.model"))
        requests.append((custom_id if isinstance(custom_id, str) else "", body))
    if not requests and not errors:
        errors.append(_batch_error("empty_file", "The input file has no requests.", None, None))
    if len(requests) > _OPENAI_MAX_BATCH_REQUESTS:
        message = f"The input file has more than {_OPENAI_MAX_BATCH_REQUESTS} requests."
        errors.append(_batch_error("too_many_tasks", message, None, None))
    return requests, errors


def anthropic_batch_refusal(body: Any) -> str | None:
    """Why ``POST /v1/messages/batches`` refuses ``body`` with a 400, else ``None``.

    ``requests`` must be a list of 1 to 100,000 objects, each with a ``custom_id``
    matching ``^[a-zA-Z0-9_-]{1,64}$``, unique in the batch, and a ``params`` object.
    The params themselves are checked as the batch runs (an invalid one is an
    ``errored`` result), as the API does.
    """
    if not isinstance(body, dict):
        return "The request body is not a JSON object."
    requests = body.get("requests")
    if not isinstance(requests, list):
        return "requests: Field required (a list of requests)"
    if not 1 <= len(requests) <= _ANTHROPIC_MAX_BATCH_REQUESTS:
        return f"requests: List should have 1 to {_ANTHROPIC_MAX_BATCH_REQUESTS} items"
    seen: set[str] = set()
    for index, entry in enumerate(requests):
        if not isinstance(entry, dict):
            return f"requests.{index}: Input should be an object"
        custom_id = entry.get("custom_id")
        if not isinstance(custom_id, str) or _CUSTOM_ID.fullmatch(custom_id) is None:
            return (
                f"requests.{index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if custom_id in seen:
            return f"requests.{index}.custom_id: Duplicate custom_id {custom_id!r} in the batch"
        seen.add(custom_id)
        if not isinstance(entry.get("params"), dict):
            return f"requests.{index}.params: Input should be an object"
    return None


class BatchRoute(NamedTuple):
    """A provider-batch endpoint: its protocol, the resource, the id and the action."""

    protocol: BatchProtocol
    resource: Literal["files", "batches"]
    id: str | None
    action: str | None


def batch_route(path: str) -> BatchRoute | None:
    """The batch or file endpoint ``path`` names (with or without ``/v1``), else ``None``.

    ``/files``, ``/files/{id}``, ``/files/{id}/content``, ``/batches``, ``/batches/{id}``,
    ``/batches/{id}/cancel`` (OpenAI); ``/messages/batches``, ``/messages/batches/{id}``,
    ``/messages/batches/{id}/cancel`` and ``/results`` (Anthropic).
    """
    rest = path.removeprefix("/v1")
    parts = rest.split("/")[1:] if rest.startswith("/") else []
    protocol: BatchProtocol = "openai"
    if parts[:2] == ["messages", "batches"]:
        protocol, parts = "anthropic", parts[1:]
    if not parts or parts[0] not in ("files", "batches") or len(parts) > 3 or "" in parts:
        return None
    if protocol == "anthropic" and parts[0] != "batches":
        return None
    resource: Literal["files", "batches"] = "files" if parts[0] == "files" else "batches"
    action = parts[2] if len(parts) == 3 else None
    allowed: tuple[str | None, ...] = (None, "content") if resource == "files" else (None, "cancel")
    if protocol == "anthropic":
        allowed = (None, "cancel", "results")
    if action not in allowed:
        return None
    return BatchRoute(protocol, resource, parts[1] if len(parts) > 1 else None, action)
