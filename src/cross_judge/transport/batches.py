"""Talk to vendors' batch endpoints through the official SDKs: submit, poll, fetch results.

OpenAI (and OpenAI-compatible vendors that have the Batch API): the requests are uploaded as
a JSONL file (``purpose="batch"``), a batch is created on it for ``/v1/chat/completions``
with a 24 h window, polled with ``batches.retrieve``, and its output and error files are
downloaded. Anthropic: a message batch is created from the entries, polled, and its results
streamed. Each function opens a client for the call and closes it: a batch job makes a
handful of these calls, far from the hot path that the pooled clients serve.

The requests and results themselves are :mod:`cross_judge.transport.batch_codecs`'; this module
moves them. SDK errors are turned into :class:`~cross_judge.transport.CallFailure` (the
key never appears in a message).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind
from ._failure import CallFailure, failure_for_status

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from .batch_codecs import BatchRequest, Outcome

__all__ = ["BatchState", "cancel", "fetch_results", "poll", "submit"]

_OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True)
class BatchState:
    """Where a submitted batch stands: the vendor's ``status`` (OpenAI's ``status``,
    Anthropic's ``processing_status``), whether it has ``ended`` (no result will change
    any more) and its request counts as the vendor reports them."""

    batch_id: str
    status: str
    ended: bool
    counts: dict[str, int] = field(default_factory=dict)


async def submit(
    config: VendorConfig, api_key: str | None, requests: Sequence[BatchRequest]
) -> str:
    """Create one batch of ``requests`` on ``config``'s vendor; its id.

    Raises:
        CallFailure: the vendor refused the upload or the batch (the vendor's message kept).
    """
    if config.protocol == "anthropic":
        async with _client(config, api_key) as client:
            created = await client.messages.batches.create(
                requests=[request.line for request in requests]
            )
            return str(created.id)
    body = b"".join(
        json.dumps(r.line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for r in requests
    )
    async with _client(config, api_key) as client:
        uploaded = await client.files.create(file=("cross-judge.jsonl", body), purpose="batch")
        batch = await client.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
        )
        return str(batch.id)


async def poll(config: VendorConfig, api_key: str | None, batch_id: str) -> BatchState:
    """Where batch ``batch_id`` stands now.

    Raises:
        CallFailure: the vendor could not be asked (the vendor's message kept).
    """
    if config.protocol == "anthropic":
        async with _client(config, api_key) as client:
            batch = await client.messages.batches.retrieve(batch_id)
            status = str(batch.processing_status)
            counts = batch.request_counts.model_dump() if batch.request_counts else {}
            return BatchState(batch_id, status, status == "ended", _ints(counts))
    async with _client(config, api_key) as client:
        batch = await client.batches.retrieve(batch_id)
        counts = batch.request_counts.model_dump() if batch.request_counts else {}
        status = str(batch.status)
        return BatchState(batch_id, status, status in _OPENAI_ENDED, _ints(counts))


async def cancel(config: VendorConfig, api_key: str | None, batch_id: str) -> None:
    """Ask the vendor to cancel batch ``batch_id``; requests it has already finished are
    kept (and billed) by the vendor.

    Raises:
        CallFailure: the vendor refused or could not be asked (the vendor's message kept).
    """
    if config.protocol == "anthropic":
        async with _client(config, api_key) as client:
            await client.messages.batches.cancel(batch_id)
        return
    async with _client(config, api_key) as client:
        await client.batches.cancel(batch_id)


async def fetch_results(
    config: VendorConfig, api_key: str | None, batch_id: str, custom_ids: Sequence[str]
) -> dict[str, Outcome]:
    """The outcome of each of ``custom_ids`` in the ended batch ``batch_id``: its
    completion, or why there is none. An id the vendor returned nothing for (a batch that
    failed validation, expired or was cancelled as a whole) is a ``BATCH`` failure naming
    the batch's status, so no item is ever lost.

    Raises:
        CallFailure: the results could not be downloaded (the vendor's message kept).
    """
    from .batch_codecs import parse_anthropic_results, parse_openai_results

    outcomes: dict[str, Outcome]
    if config.protocol == "anthropic":
        async with _client(config, api_key) as client:
            batch = await client.messages.batches.retrieve(batch_id)
            status = str(batch.processing_status)
            lines = []
            if status == "ended":
                async for entry in await client.messages.batches.results(batch_id):
                    lines.append(entry.model_dump_json().encode())
        outcomes = parse_anthropic_results(b"\n".join(lines))
    else:
        async with _client(config, api_key) as client:
            batch = await client.batches.retrieve(batch_id)
            status = str(batch.status)
            files = [f for f in (batch.output_file_id, batch.error_file_id) if f]
            parts = [(await client.files.content(file_id)).content for file_id in files]
        outcomes = parse_openai_results(b"\n".join(parts))
    missing = CallFailure(ErrorKind.BATCH, f"batch {batch_id} {status}: no result for this request")
    return {custom_id: outcomes.get(custom_id, missing) for custom_id in custom_ids}


def _ints(counts: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}


@asynccontextmanager
async def _client(config: VendorConfig, api_key: str | None) -> AsyncIterator[Any]:
    """The official SDK's async client for ``config``'s protocol, closed on the way out;
    the SDK's status and connection errors raised inside come out as
    :class:`CallFailure` (both SDKs share those exception shapes)."""
    sdk: Any
    if config.protocol == "anthropic":
        import anthropic as sdk

        from .anthropic import sdk_base_url

        client = sdk.AsyncAnthropic(
            base_url=sdk_base_url(config.base_url), api_key=api_key or "unused"
        )
    else:
        import openai as sdk

        client = sdk.AsyncOpenAI(base_url=config.base_url, api_key=api_key or "unused")
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
