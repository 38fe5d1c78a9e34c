"""What every protocol's batch API shares: the request line, the limits, the outcome, the
state of a submitted batch, the :class:`BatchAPI` interface an adapter's ``batch`` is,
and the helpers its codecs use (results lines, SDK errors as failures).

The protocols' own batch APIs are :mod:`._openai_batch` (OpenAI's Batch API, for chat
completions and responses) and :mod:`._anthropic_batch` (Anthropic's Message Batches);
:mod:`._batch_codecs` and :mod:`._batches` are the public faces.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ErrorKind
from ._failure import CallFailure, failure_for_status
from ._wire import Completion

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from ._wire import ChatRequest

__all__ = [
    "BatchAPI",
    "BatchLimits",
    "BatchRequest",
    "BatchState",
    "Outcome",
    "completion_or_failure",
    "custom_id_of",
    "error_message",
    "result_lines",
    "sdk_failures",
    "sized",
]

Outcome = Completion | CallFailure
"""What a batch gave for one request: the completion, or why there is none."""


@dataclass(frozen=True)
class BatchLimits:
    """How much one batch may hold: requests, and bytes of its JSONL (or JSON) body."""

    max_requests: int
    max_bytes: int


@dataclass(frozen=True)
class BatchRequest:
    """One request as a batch takes it: its ``custom_id``, its model, the JSON object to
    submit (``line``), and ``size``, the bytes of that object as one JSONL line."""

    custom_id: str
    model: str
    line: dict[str, Any]
    size: int


@dataclass(frozen=True)
class BatchState:
    """Where a submitted batch stands: the vendor's ``status`` (OpenAI's ``status``,
    Anthropic's ``processing_status``), whether it has ``ended`` (no result will change
    any more) and its request counts as the vendor reports them."""

    batch_id: str
    status: str
    ended: bool
    counts: dict[str, int] = field(default_factory=dict)


class BatchAPI:
    """A protocol's batch API: its limits, its request lines and result parsing (the
    codec), and the calls that move them (submit, poll, cancel, fetch).

    Attributes:
        limits: what one batch may hold.
        one_model: every batch holds one model's requests (OpenAI).
    """

    limits: BatchLimits = BatchLimits(1, 1)
    one_model: bool = False

    def encode(self, config: VendorConfig, request: ChatRequest, custom_id: str) -> BatchRequest:
        """The batch entry of ``request``: its body exactly as a live call sends it."""
        raise NotImplementedError

    def decode(self, results: bytes) -> dict[str, Outcome]:
        """The outcome per ``custom_id`` of a batch's results (JSONL).

        Raises:
            ConfigError: a line that is not a JSON object with a ``custom_id``.
        """
        raise NotImplementedError

    async def submit(
        self, config: VendorConfig, api_key: str | None, requests: Sequence[BatchRequest]
    ) -> str:
        """Create one batch of ``requests``; its id."""
        raise NotImplementedError

    async def poll(self, config: VendorConfig, api_key: str | None, batch_id: str) -> BatchState:
        """Where batch ``batch_id`` stands now."""
        raise NotImplementedError

    async def cancel(self, config: VendorConfig, api_key: str | None, batch_id: str) -> None:
        """Ask the vendor to cancel batch ``batch_id``."""
        raise NotImplementedError

    async def fetch(
        self, config: VendorConfig, api_key: str | None, batch_id: str
    ) -> tuple[str, dict[str, Outcome]]:
        """The batch's status and the outcomes its results hold (none before it ended)."""
        raise NotImplementedError


def sized(custom_id: str, model: str, line: dict[str, Any]) -> BatchRequest:
    """``line`` as a :class:`BatchRequest`, its size measured as one JSONL line."""
    size = len(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode()) + 1
    return BatchRequest(custom_id, model, line, size)


def completion_or_failure(parse: Callable[[], Completion]) -> Outcome:
    """What ``parse()`` returns, or the :class:`CallFailure` it raises."""
    try:
        return parse()
    except CallFailure as failure:
        return failure


def result_lines(jsonl: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line.

    Raises:
        ConfigError: a line that is not a JSON object.
    """
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


def custom_id_of(data: dict[str, Any], number: int) -> str:
    """The line's ``custom_id``.

    Raises:
        ConfigError: it has none.
    """
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise ConfigError(f"batch results line {number} has no custom_id")
    return custom_id


def error_message(value: object) -> str:
    """The vendor's message in an error object (``{"message"}`` or ``{"error": {...}}``)."""
    if not isinstance(value, dict):
        return ""
    message = value.get("message")
    if isinstance(message, str):
        return message
    return error_message(value.get("error"))


@asynccontextmanager
async def sdk_failures(sdk: Any, client: Any) -> AsyncIterator[Any]:
    """``client`` (an official SDK's async client), closed on the way out; the SDK's status
    and connection errors raised inside come out as :class:`CallFailure` (both SDKs share
    those exception shapes, and the key never appears in a message)."""
    try:
        yield client
    except sdk.APIStatusError as exc:
        raise failure_for_status(
            exc.status_code, dict(exc.response.headers), _detail(exc)
        ) from None
    except sdk.APIConnectionError as exc:
        raise CallFailure(ErrorKind.CONNECTION, f"batch endpoint: {type(exc).__name__}") from None
    finally:
        await client.close()


def _detail(exc: Any) -> str:
    """The vendor's own message from an SDK status error (its body's error message)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:500]
    return str(getattr(exc, "message", ""))[:500]
