"""Anthropic's Message Batches (``/v1/messages/batches``) through the official SDK: a batch
is created from the entries, polled, and its results streamed; a ``succeeded`` result is
parsed as the live Messages reply would be.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind
from ._batch_api import (
    BatchAPI,
    BatchLimits,
    BatchRequest,
    BatchState,
    Outcome,
    completion_or_failure,
    custom_id_of,
    error_message,
    result_lines,
    sdk_failures,
    sized,
)
from ._failure import CallFailure

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from ._wire import ChatRequest, Completion

__all__ = ["ANTHROPIC_LIMITS", "AnthropicBatchAPI", "parse_results"]

ANTHROPIC_LIMITS = BatchLimits(max_requests=100_000, max_bytes=256_000_000)
"""Anthropic: at most 100,000 requests and 256 MB per message batch (its batch processing
guide; MB read as 10**6 bytes, the smaller reading)."""

_ERRORS = {
    "invalid_request_error": ErrorKind.BAD_REQUEST,
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "not_found_error": ErrorKind.BAD_REQUEST,
    "request_too_large": ErrorKind.BAD_REQUEST,
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "api_error": ErrorKind.SERVER,
    "overloaded_error": ErrorKind.SERVER,
}

ParseMessage = Callable[[int, Mapping[str, str], bytes], "Completion"]


def parse_results(jsonl: bytes, parse: ParseMessage) -> dict[str, Outcome]:
    """The outcome per ``custom_id`` of an Anthropic message batch's results.

    ``succeeded`` is parsed by ``parse`` as the live Messages response would be;
    ``errored`` is classified by the error's type (``invalid_request_error`` a
    ``BAD_REQUEST``, ``overloaded_error`` a ``SERVER`` failure, ...); ``expired`` and
    ``canceled`` are ``BATCH`` failures. Blank lines are skipped.

    Raises:
        ConfigError: a line that is not a JSON object with a ``custom_id``.
    """
    outcomes: dict[str, Outcome] = {}
    for number, data in result_lines(jsonl):
        custom_id = custom_id_of(data, number)
        result = data.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded" and isinstance(result, dict):
            body = json.dumps(result.get("message")).encode()
            outcomes[custom_id] = completion_or_failure(functools.partial(parse, 200, {}, body))
        elif kind == "errored" and isinstance(result, dict):
            error = result.get("error")
            inner = error.get("error") if isinstance(error, dict) else None
            detail = inner if isinstance(inner, dict) else error
            error_type = detail.get("type") if isinstance(detail, dict) else None
            failure_kind = _ERRORS.get(str(error_type), ErrorKind.SERVER)
            message = error_message(detail) or str(error_type or "errored")
            outcomes[custom_id] = CallFailure(failure_kind, f"{error_type}: {message}")
        else:
            outcomes[custom_id] = CallFailure(
                ErrorKind.BATCH, f"{kind or 'no result'}: the batch gave no answer"
            )
    return outcomes


class AnthropicBatchAPI(BatchAPI):
    """Message Batches: entries whose ``params`` ``build`` makes (the live body), results
    whose messages ``parse`` reads; ``sdk_base_url`` maps a base URL to the SDK's."""

    limits = ANTHROPIC_LIMITS
    one_model = False

    def __init__(
        self,
        build: Callable[[ChatRequest], dict[str, Any]],
        parse: ParseMessage,
        sdk_base_url: Callable[[str], str],
    ) -> None:
        self._build = build
        self._parse = parse
        self._sdk_base_url = sdk_base_url

    def encode(self, config: VendorConfig, request: ChatRequest, custom_id: str) -> BatchRequest:
        params = self._build(request)
        return sized(custom_id, request.model, {"custom_id": custom_id, "params": params})

    def decode(self, results: bytes) -> dict[str, Outcome]:
        return parse_results(results, self._parse)

    async def submit(
        self, config: VendorConfig, api_key: str | None, requests: Sequence[BatchRequest]
    ) -> str:
        async with self._client(config, api_key) as client:
            created = await client.messages.batches.create(
                requests=[request.line for request in requests]
            )
            return str(created.id)

    async def poll(self, config: VendorConfig, api_key: str | None, batch_id: str) -> BatchState:
        async with self._client(config, api_key) as client:
            batch = await client.messages.batches.retrieve(batch_id)
            status = str(batch.processing_status)
            counts = batch.request_counts.model_dump() if batch.request_counts else {}
            ints = {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}
            return BatchState(batch_id, status, status == "ended", ints)

    async def cancel(self, config: VendorConfig, api_key: str | None, batch_id: str) -> None:
        async with self._client(config, api_key) as client:
            await client.messages.batches.cancel(batch_id)

    async def fetch(
        self, config: VendorConfig, api_key: str | None, batch_id: str
    ) -> tuple[str, dict[str, Outcome]]:
        async with self._client(config, api_key) as client:
            batch = await client.messages.batches.retrieve(batch_id)
            status = str(batch.processing_status)
            lines = []
            if status == "ended":
                async for entry in await client.messages.batches.results(batch_id):
                    lines.append(entry.model_dump_json().encode())
        return status, self.decode(b"\n".join(lines))

    def _client(self, config: VendorConfig, api_key: str | None) -> Any:
        import anthropic

        client = anthropic.AsyncAnthropic(
            base_url=self._sdk_base_url(config.base_url), api_key=api_key or "unused"
        )
        return sdk_failures(anthropic, client)
