"""Vendors' batch APIs: the requests a batch submits, and its results mapped back.

OpenAI's Batch API (a JSONL file of chat-completions requests, uploaded, then
``/v1/batches``) and Anthropic's Message Batches (``/v1/messages/batches``) answer within
24 hours at about half the live price. This module holds what does not depend on how a job
is run: the id that ties a result to its item and critic, the request lines each vendor
takes, their split into batches within each vendor's limits, and the parsing of result
lines into the :class:`~cross_judge.transport.Completion` or
:class:`~cross_judge.transport.CallFailure` a live call would have given, so the answers go
through the same parsing, voting, cache and cost as live ones. It makes no call.

Each protocol's own codec is its adapter's ``batch``
(:attr:`~cross_judge.transport.WireAdapter.batch`); the functions here are the two
original protocols' codecs under their long-standing names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._anthropic import message_params, parse_message_response
from ._anthropic_batch import ANTHROPIC_LIMITS, parse_results as _anthropic_results
from ._batch_api import BatchLimits, BatchRequest, Outcome, sized
from ._openai_batch import OPENAI_LIMITS, parse_results as _openai_results
from ._openai_compat import ADAPTER as _CHAT, parse_chat_response
from ._wire import ChatRequest

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


def openai_request(config: VendorConfig, request: ChatRequest, custom_id: str) -> BatchRequest:
    """A line of an OpenAI batch input file: ``request``'s chat-completions body exactly as
    a live call sends it (:func:`~cross_judge.transport._openai_compat.build_payload`)."""
    assert _CHAT.batch is not None
    return _CHAT.batch.encode(config, request, custom_id)


def anthropic_request(request: ChatRequest, custom_id: str) -> BatchRequest:
    """An entry of an Anthropic message batch: the Messages body a live call sends (model,
    the user message, the system prompt when there is one, and exactly
    :meth:`~cross_judge.transport.ChatRequest.sent_settings` for ``"anthropic"``:
    ``max_tokens``, and thinking, a forced tool or ``output_config`` when asked)."""
    params = message_params(request)
    return sized(custom_id, request.model, {"custom_id": custom_id, "params": params})


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
    return _openai_results(jsonl, parse_chat_response)


def parse_anthropic_results(jsonl: bytes) -> dict[str, Outcome]:
    """The outcome per ``custom_id`` of an Anthropic message batch's results.

    ``succeeded`` is parsed as the live Messages response would be; ``errored`` is
    classified by the error's type (``invalid_request_error`` a ``BAD_REQUEST``,
    ``overloaded_error`` a ``SERVER`` failure, ...); ``expired`` and ``canceled`` are
    ``BATCH`` failures. Blank lines are skipped.

    Raises:
        ConfigError: a line that is not a JSON object with a ``custom_id``.
    """
    return _anthropic_results(jsonl, parse_message_response)
