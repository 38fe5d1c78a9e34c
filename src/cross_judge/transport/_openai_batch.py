"""OpenAI's Batch API, for the two OpenAI protocols: a JSONL file of requests to one
endpoint (``/v1/chat/completions`` or ``/v1/responses``) is uploaded
(``purpose="batch"``), a batch is created on it with a 24 h window, polled with
``batches.retrieve``, and its output and error files are downloaded, through the official
``openai`` SDK. A result line with status 200 is parsed as the live reply would be.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
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
from ._failure import CallFailure, failure_for_status
from ._http import RawResponse

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from ._wire import ChatRequest, Completion

__all__ = ["OPENAI_LIMITS", "OpenAIBatchAPI", "parse_results"]

OPENAI_LIMITS = BatchLimits(max_requests=50_000, max_bytes=200_000_000)
"""OpenAI: at most 50,000 requests and 200 MB per input file, and one model per file (its
Batch API reference; MB read as 10**6 bytes, the smaller reading)."""

_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


def parse_results(jsonl: bytes, parse: Callable[[RawResponse], Completion]) -> dict[str, Outcome]:
    """The outcome per ``custom_id`` of an OpenAI batch's output or error file, a 200
    response's body parsed by ``parse`` (the live reply's parser).

    A request that expired is a ``BATCH`` failure; one that failed with an HTTP status is
    classified like a live call with that status; any other error is a ``BATCH`` failure
    with the vendor's message. Blank lines are skipped.

    Raises:
        ConfigError: a line that is not a JSON object with a ``custom_id``.
    """
    outcomes: dict[str, Outcome] = {}
    for number, data in result_lines(jsonl):
        custom_id = custom_id_of(data, number)
        response = data.get("response")
        error = data.get("error")
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if status == 200 and not error:
            raw = RawResponse(200, {}, json.dumps(body).encode())
            outcomes[custom_id] = completion_or_failure(functools.partial(parse, raw))
            continue
        message = error_message(error) or error_message(body) or "no answer"
        code = error.get("code") if isinstance(error, dict) else None
        if code == "batch_expired":
            outcomes[custom_id] = CallFailure(ErrorKind.BATCH, f"expired: {message}")
        elif isinstance(status, int) and status >= 300:
            outcomes[custom_id] = failure_for_status(status, {}, message)
        else:
            outcomes[custom_id] = CallFailure(ErrorKind.BATCH, f"{code or 'failed'}: {message}")
    return outcomes


class OpenAIBatchAPI(BatchAPI):
    """OpenAI's Batch API for lines to ``url`` whose bodies ``build`` makes and whose
    replies ``parse`` reads (``protocol`` names the adapter, for messages)."""

    limits = OPENAI_LIMITS
    one_model = True

    def __init__(
        self,
        url: str,
        build: Callable[[VendorConfig, ChatRequest], dict[str, Any]],
        parse: Callable[[RawResponse], Completion],
        protocol: str,
    ) -> None:
        self.url = url
        self._build = build
        self._parse = parse
        self.protocol = protocol

    def encode(self, config: VendorConfig, request: ChatRequest, custom_id: str) -> BatchRequest:
        line = {
            "custom_id": custom_id,
            "method": "POST",
            "url": self.url,
            "body": self._build(config, request),
        }
        return sized(custom_id, request.model, line)

    def decode(self, results: bytes) -> dict[str, Outcome]:
        return parse_results(results, self._parse)

    async def submit(
        self, config: VendorConfig, api_key: str | None, requests: Sequence[BatchRequest]
    ) -> str:
        body = b"".join(
            json.dumps(r.line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            for r in requests
        )
        async with _client(config, api_key) as client:
            uploaded = await client.files.create(file=("cross-judge.jsonl", body), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint=self.url, completion_window="24h"
            )
            return str(batch.id)

    async def poll(self, config: VendorConfig, api_key: str | None, batch_id: str) -> BatchState:
        async with _client(config, api_key) as client:
            batch = await client.batches.retrieve(batch_id)
            counts = batch.request_counts.model_dump() if batch.request_counts else {}
            status = str(batch.status)
            ints = {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}
            return BatchState(batch_id, status, status in _ENDED, ints)

    async def cancel(self, config: VendorConfig, api_key: str | None, batch_id: str) -> None:
        async with _client(config, api_key) as client:
            await client.batches.cancel(batch_id)

    async def fetch(
        self, config: VendorConfig, api_key: str | None, batch_id: str
    ) -> tuple[str, dict[str, Outcome]]:
        async with _client(config, api_key) as client:
            batch = await client.batches.retrieve(batch_id)
            status = str(batch.status)
            files = [f for f in (batch.output_file_id, batch.error_file_id) if f]
            parts = [(await client.files.content(file_id)).content for file_id in files]
        return status, self.decode(b"\n".join(parts))


def _client(config: VendorConfig, api_key: str | None) -> Any:
    import openai

    client = openai.AsyncOpenAI(base_url=config.base_url, api_key=api_key or "unused")
    return sdk_failures(openai, client)
