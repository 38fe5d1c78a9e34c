"""The provider batch endpoints and the batches they hold: OpenAI's Files and Batch API
and Anthropic's Message Batches, served over HTTP and run when a batch ends.

:class:`BatchEndpoints` keeps the uploaded and generated files and the batches, behind
its own lock (taken before the server's state lock, never while holding it), counts
polls in place of time, and answers each request of an ending batch as the live
endpoint would (:func:`~._answers.batch_answer`), or fails, expires or cancels it. The
wire objects and input validation are :mod:`._batches`; routing a path here is
:mod:`._server`'s job.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import Counter
from typing import Any

from aiohttp import BodyPartReader, web

from ._answers import batch_answer
from ._batches import (
    BATCH_ENDPOINTS,
    CANCELLED_MESSAGE,
    EXPIRED_MESSAGE,
    METADATA_MAX_PAIRS,
    OPENAI_MAX_FILE_BYTES,
    RESPONSES_BATCH_ENDPOINT,
    BatchRoute,
    SimBatch,
    SimFile,
    anthropic_batch_refusal,
    openai_batch_errors,
)
from ._images import request_images
from ._protocol import (
    Api,
    Refusal,
    anthropic_error_body,
    error_body,
    is_authorized,
    json_response,
    unauthorized,
)
from ._responses import as_chat_request, as_response
from ._state import VendorState

__all__ = ["BatchEndpoints"]


class BatchEndpoints:
    """The batch and file endpoints of one server, and the batches and files they hold.

    ``polls`` is how many status polls a batch takes to end; ``failure_rate`` and
    ``expiry_rate`` fail (HTTP 500) or expire each request with a draw seeded by (batch
    id, ``custom_id``). Counters and scripted request outcomes live in ``state``. The
    values are validated by :class:`~cross_judge.testing.VendorServer`.
    """

    def __init__(
        self, state: VendorState, *, polls: int, failure_rate: float, expiry_rate: float
    ) -> None:
        self._state = state
        # Serialises batch and file state; taken before state.lock, never while holding it.
        self._batch_lock = threading.Lock()
        self._batch_polls = polls
        self._batch_failure_rate = failure_rate
        self._batch_expiry_rate = expiry_rate
        self._files: dict[str, SimFile] = {}
        self._batches: dict[str, SimBatch] = {}
        self._batch_ids: dict[str, itertools.count[int]] = {}

    async def handle(self, request: web.BaseRequest, route: BatchRoute) -> web.Response:
        """Serve the batch or file endpoint ``route`` (same auth as the live endpoints)."""
        api: Api = "chat" if route.protocol == "openai" else "messages"
        expected = "POST" if route.id is None or route.action == "cancel" else "GET"
        if request.method != expected:
            return Refusal(405, f"Use {expected} for {request.path}").response(api)
        if not is_authorized(request, self._state.api_key, api):
            return unauthorized(api)
        if route.resource == "files":
            if route.id is None:
                return await self._upload_file(request)
            return self._get_file(route.id, content=route.action == "content")
        if route.id is None:
            raw = await request.content.read()
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = None
            if route.protocol == "openai":
                return self._create_openai_batch(body)
            return self._create_anthropic_batch(body, request)
        origin = f"{request.scheme}://{request.host}"
        with self._batch_lock:
            batch = self._batches.get(route.id)
            if batch is None or batch.protocol != route.protocol:
                if api == "chat":
                    return Refusal(404, f"No batch found with id '{route.id}'.").response(api)
                return Refusal(404, f"message_batch_id: {route.id} not found").response(api)
            if route.action is None:
                self._poll_locked(batch)
            elif route.action == "cancel":
                if batch.state == "ended":
                    message = f"Batch {batch.id} has ended ({batch.outcome}): nothing to cancel."
                    return Refusal(400, message).response(api)
                if batch.state == "pending":
                    batch.state, batch.cancel_at = "cancelling", time.time()
            else:  # results
                if batch.state != "ended":
                    message = f"Batch {batch.id} is still processing: no results yet."
                    return Refusal(400, message).response(api)
                return web.Response(
                    body=batch.results, headers={"Content-Type": "application/binary"}
                )
            return json_response(batch.wire(origin))

    def complete_all(self) -> list[str]:
        """End every batch that has not ended, as its next due poll would; returns their
        ids in creation order (see :meth:`VendorServer.complete_batches`)."""
        with self._batch_lock:
            open_batches = [b for b in self._batches.values() if b.state != "ended"]
            for batch in open_batches:
                self._end_batch_locked(batch, cancelled=batch.state == "cancelling")
        return [b.id for b in open_batches]

    def expire(self, batch_id: str) -> None:
        """End batch ``batch_id`` now with every request expired (see
        :meth:`VendorServer.expire_batch`); ``KeyError`` for an unknown id, ``ValueError``
        for a batch that ended."""
        with self._batch_lock:
            batch = self._batches[batch_id]
            if batch.state == "ended":
                raise ValueError(f"batch {batch_id!r} already ended ({batch.outcome})")
            self._end_batch_locked(batch, expire_all=True)

    async def _upload_file(self, request: web.BaseRequest) -> web.Response:
        """``POST /v1/files``: multipart with ``purpose`` ``"batch"`` and ``file``."""
        if not request.content_type.startswith("multipart/"):
            return Refusal(400, "The request must be multipart/form-data.").response("chat")
        purpose: str | None = None
        filename, content = "", None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "purpose":
                purpose = (await part.text()).strip()
            elif part.name == "file":
                filename = part.filename or "upload.jsonl"
                content = bytes(await part.read())
            else:
                await part.release()
        if purpose is None:
            return Refusal(400, "Missing required parameter: 'purpose'.").response("chat")
        if purpose != "batch":
            message = f"Invalid purpose {purpose!r}: the simulated vendor accepts only 'batch'."
            return Refusal(400, message).response("chat")
        if content is None:
            return Refusal(400, "Missing required parameter: 'file'.").response("chat")
        if len(content) > OPENAI_MAX_FILE_BYTES:
            message = f"File is {len(content)} bytes; the batch limit is {OPENAI_MAX_FILE_BYTES}."
            return Refusal(400, message).response("chat")
        with self._batch_lock:
            file_id = self._store_file_locked(filename, "batch", content, int(time.time()))
            wire = self._files[file_id].wire()
        with self._state.lock:
            self._state.files_uploaded += 1
        return json_response(wire)

    def _get_file(self, file_id: str, *, content: bool) -> web.Response:
        with self._batch_lock:
            file = self._files.get(file_id)
        if file is None:
            return Refusal(404, f"No such File object: {file_id}").response("chat")
        if not content:
            return json_response(file.wire())
        if file.purpose == "batch":
            message = "Not allowed to download files of purpose: batch"
            return Refusal(400, message).response("chat")
        return web.Response(body=file.content, headers={"Content-Type": "application/jsonl"})

    def _create_openai_batch(self, body: Any) -> web.Response:
        """``POST /v1/batches``; the input file is validated as the batch runs (see
        :func:`openai_batch_errors`), so an invalid one makes a ``"failed"`` batch."""
        if not isinstance(body, dict):
            return Refusal(400, "The request body is not a JSON object.").response("chat")
        file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
        window, metadata = body.get("completion_window"), body.get("metadata")
        if not isinstance(file_id, str):
            return Refusal(400, "Missing required parameter: 'input_file_id'.").response("chat")
        if endpoint not in BATCH_ENDPOINTS:
            message = f"Invalid 'endpoint' {endpoint!r}: the simulated vendor serves only "
            served = " and ".join(map(repr, BATCH_ENDPOINTS))
            return Refusal(400, message + f"{served}.").response("chat")
        if window != "24h":
            message = f"Invalid 'completion_window' {window!r}: only '24h' is supported."
            return Refusal(400, message).response("chat")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= METADATA_MAX_PAIRS
            and all(isinstance(v, str) for v in metadata.values())
        ):
            message = "Invalid 'metadata': at most 16 string keys with string values."
            return Refusal(400, message).response("chat")
        with self._batch_lock:
            file = self._files.get(file_id)
            if file is None:
                return Refusal(404, f"No such File object: {file_id}").response("chat")
            if file.purpose != "batch":
                message = f"File {file_id} has purpose {file.purpose!r}, not 'batch'."
                return Refusal(400, message).response("chat")
            requests, errors = openai_batch_errors(file.content, endpoint)
            batch = SimBatch(
                self._new_id("batch_"),
                "openai",
                time.time(),
                requests,
                self._batch_polls,
                input_file_id=file_id,
                metadata=None if metadata is None else dict(metadata),
                errors=errors,
                endpoint=endpoint,
            )
            self._add_batch_locked(batch)
            return json_response(batch.wire(""))

    def _create_anthropic_batch(self, body: Any, request: web.BaseRequest) -> web.Response:
        """``POST /v1/messages/batches`` (see :func:`anthropic_batch_refusal`)."""
        refusal = anthropic_batch_refusal(body)
        if refusal is not None:
            return Refusal(400, refusal).response("messages")
        requests = [(entry["custom_id"], entry["params"]) for entry in body["requests"]]
        with self._batch_lock:
            batch = SimBatch(
                self._new_id("msgbatch_"),
                "anthropic",
                time.time(),
                requests,
                self._batch_polls,
                version=request.headers.get("anthropic-version"),
            )
            self._add_batch_locked(batch)
            return json_response(batch.wire(f"{request.scheme}://{request.host}"))

    def _new_id(self, prefix: str) -> str:
        """The next id with ``prefix`` (a counter per prefix, so a batch's id does not
        depend on the sizes of earlier batches); caller holds ``self._batch_lock``."""
        counter = self._batch_ids.setdefault(prefix, itertools.count(1))
        return f"{prefix}sim{next(counter):012d}"

    def _add_batch_locked(self, batch: SimBatch) -> None:
        """Store a new batch, count it, and end it at once when ``batch_polls`` is 0;
        caller holds ``self._batch_lock``."""
        self._batches[batch.id] = batch
        with self._state.lock:
            self._state.batches_created[batch.protocol] += 1
            self._state.batch_requests[batch.protocol] += len(batch.requests)
        if batch.polls_to_end == 0:
            self._end_batch_locked(batch)

    def _poll_locked(self, batch: SimBatch) -> None:
        """One status poll of ``batch``: it ends on its ``polls_to_end``-th (an invalid
        OpenAI batch fails on the first), a cancelling one on the next; caller holds
        ``self._batch_lock``."""
        with self._state.lock:
            self._state.batch_status_polls += 1
        if batch.state == "ended":
            return
        batch.polls += 1
        if batch.state == "cancelling":
            self._end_batch_locked(batch, cancelled=True)
        elif batch.polls >= batch.polls_to_end or batch.errors:
            self._end_batch_locked(batch)

    def _end_batch_locked(
        self, batch: SimBatch, *, cancelled: bool = False, expire_all: bool = False
    ) -> None:
        """Answer ``batch``'s requests and end it; caller holds ``self._batch_lock``."""
        batch.ended_at = time.time()
        batch.state = "ended"
        if batch.protocol == "openai" and batch.errors and not (cancelled or expire_all):
            batch.outcome = "failed"
            batch.counts = {"total": 0, "completed": 0, "failed": 0}
            return
        results = [
            (custom_id, self._batch_result(batch, custom_id, body, cancelled, expire_all))
            for custom_id, body in batch.requests
        ]
        if batch.protocol == "anthropic":
            self._end_anthropic(batch, results, cancelled)
        else:
            self._end_openai(batch, results, cancelled)

    def _batch_result(
        self, batch: SimBatch, custom_id: str, body: Any, cancelled: bool, expire_all: bool
    ) -> tuple[str, int, Any]:
        """What became of one request: ``("cancelled" | "expired", 0, None)``,
        ``("failed", status, error body)``, or ``("answered", status, body)`` (the live
        answer, an error status included)."""
        api: Api = "chat" if batch.protocol == "openai" else "messages"
        if cancelled:
            return "cancelled", 0, None
        if expire_all:
            return "expired", 0, None
        with self._state.lock:
            queue = self._state.scripted_batch.get(custom_id)
            scripted = queue.popleft() if queue else None
            if queue is not None and not queue:
                del self._state.scripted_batch[custom_id]
        if scripted is None and (self._batch_failure_rate or self._batch_expiry_rate):
            u = random.Random(f"batch|{batch.id}|{custom_id}").random()
            if u < self._batch_expiry_rate:
                scripted = ("expired", 0, None)
            elif u < self._batch_expiry_rate + self._batch_failure_rate:
                scripted = ("failed", 500, None)
        if scripted is not None:
            kind, status, message = scripted
            if kind == "expired":
                return "expired", 0, None
            error = error_body(status, message) if api == "chat" else None
            return "failed", status, json.loads(error or anthropic_error_body(status, message))
        if batch.endpoint == RESPONSES_BATCH_ENDPOINT:
            images = request_images(body, "responses")
            status, answer = batch_answer(
                self._state, as_chat_request(body), api, None, images=images, wire="responses"
            )
            return "answered", status, as_response(answer, body) if status == 200 else answer
        images = request_images(body, api)
        status, answer = batch_answer(self._state, body, api, batch.version, images=images)
        return "answered", status, answer

    def _end_openai(
        self, batch: SimBatch, results: list[tuple[str, tuple[str, int, Any]]], cancelled: bool
    ) -> None:
        output: list[bytes] = []
        failed: list[bytes] = []
        expired = False
        for custom_id, (kind, status, payload) in results:
            line: dict[str, Any] = {"id": self._new_id("batch_req_"), "custom_id": custom_id}
            if kind in ("expired", "cancelled"):
                expired = expired or kind == "expired"
                code, text = (
                    ("batch_expired", EXPIRED_MESSAGE)
                    if kind == "expired"
                    else ("batch_cancelled", CANCELLED_MESSAGE)
                )
                line |= {"response": None, "error": {"code": code, "message": text}}
            else:
                response = {"status_code": status, "request_id": self._new_id("req_")}
                line |= {"response": response | {"body": payload}, "error": None}
            encoded = json.dumps(line).encode() + b"\n"
            (output if kind == "answered" and status == 200 else failed).append(encoded)
        now = int(time.time())
        if output:
            batch.output_file_id = self._store_file_locked(
                f"{batch.id}_output.jsonl", "batch_output", b"".join(output), now
            )
        if failed:
            batch.error_file_id = self._store_file_locked(
                f"{batch.id}_error.jsonl", "batch_output", b"".join(failed), now
            )
        batch.counts = {"total": len(results), "completed": len(output), "failed": len(failed)}
        batch.outcome = "cancelled" if cancelled else "expired" if expired else "completed"

    def _end_anthropic(
        self, batch: SimBatch, results: list[tuple[str, tuple[str, int, Any]]], cancelled: bool
    ) -> None:
        lines: list[bytes] = []
        counts = Counter({"succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
        for custom_id, (kind, status, payload) in results:
            result: dict[str, Any]
            if kind == "cancelled":
                result = {"type": "canceled"}
            elif kind == "expired":
                result = {"type": "expired"}
            elif kind == "answered" and status == 200:
                result = {"type": "succeeded", "message": payload}
            else:
                error = dict(payload) | {"request_id": self._new_id("req_")}
                result = {"type": "errored", "error": error}
            counts[result["type"]] += 1
            lines.append(json.dumps({"custom_id": custom_id, "result": result}).encode() + b"\n")
        batch.results = b"".join(lines)
        batch.counts = {"processing": 0, **counts}
        batch.outcome = "cancelled" if cancelled else "completed"

    def _store_file_locked(self, filename: str, purpose: str, content: bytes, now: int) -> str:
        file = SimFile(self._new_id("file-"), filename, purpose, content, now)
        self._files[file.id] = file
        return file.id
