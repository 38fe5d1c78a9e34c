"""Talk to vendors' batch endpoints through the official SDKs: submit, poll, fetch results.

Each protocol's batch API is its adapter's ``batch``
(:attr:`~cross_judge.transport.WireAdapter.batch`). OpenAI (and OpenAI-compatible vendors
that have the Batch API): the requests are uploaded as a JSONL file (``purpose="batch"``),
a batch is created on it for the protocol's endpoint (``/v1/chat/completions``, or
``/v1/responses`` for the Responses protocol) with a 24 h window, polled with
``batches.retrieve``, and its output and error files are downloaded. Anthropic: a message
batch is created from the entries, polled, and its results streamed. Each function opens a
client for the call and closes it: a batch job makes a handful of these calls, far from the
hot path that the pooled clients serve.

The requests and results themselves are :mod:`cross_judge.transport._batch_codecs`'; this module
moves them. SDK errors are turned into :class:`~cross_judge.transport.CallFailure` (the
key never appears in a message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError, ErrorKind
from ._adapter import protocol_adapter
from ._batch_api import BatchAPI, BatchState
from ._failure import CallFailure

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from ._batch_api import BatchRequest, Outcome

__all__ = ["BatchState", "batch_api", "cancel", "fetch_results", "poll", "submit"]


def batch_api(config: VendorConfig) -> BatchAPI:
    """The batch API of ``config``'s protocol.

    Raises:
        ConfigError: the protocol has none (its critics are asked live in batch mode).
    """
    adapter = protocol_adapter(config.protocol)
    if adapter.batch is None:
        raise ConfigError(f"vendor {config.name!r}: {adapter.title} has no batch API")
    return adapter.batch


async def submit(
    config: VendorConfig, api_key: str | None, requests: Sequence[BatchRequest]
) -> str:
    """Create one batch of ``requests`` on ``config``'s vendor; its id.

    Raises:
        CallFailure: the vendor refused the upload or the batch (the vendor's message kept).
    """
    return await batch_api(config).submit(config, api_key, requests)


async def poll(config: VendorConfig, api_key: str | None, batch_id: str) -> BatchState:
    """Where batch ``batch_id`` stands now.

    Raises:
        CallFailure: the vendor could not be asked (the vendor's message kept).
    """
    return await batch_api(config).poll(config, api_key, batch_id)


async def cancel(config: VendorConfig, api_key: str | None, batch_id: str) -> None:
    """Ask the vendor to cancel batch ``batch_id``; requests it has already finished are
    kept (and billed) by the vendor.

    Raises:
        CallFailure: the vendor refused or could not be asked (the vendor's message kept).
    """
    await batch_api(config).cancel(config, api_key, batch_id)


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
    status, outcomes = await batch_api(config).fetch(config, api_key, batch_id)
    missing = CallFailure(ErrorKind.BATCH, f"batch {batch_id} {status}: no result for this request")
    return {custom_id: outcomes.get(custom_id, missing) for custom_id in custom_ids}
