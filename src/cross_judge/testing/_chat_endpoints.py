"""The live endpoints, ``POST /v1/chat/completions``, ``POST /v1/messages`` and ``POST
/v1/responses`` (:mod:`._responses`): capacity,
recording, auth, refusals (a bad body, then a feature the server refuses), then a
scripted :class:`~._replies.Reply` or a persona's answer after its latency.

A scripted reply is sent here, including the ones that misbehave on purpose (a hang, a
reset connection, a one-byte-a-second trickle). What a persona answers is decided by
:mod:`._answers`; routing a path to these handlers and running the event loop is
:mod:`._server`'s job.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter

from ._answers import feature_refusal, persona_body, persona_draw, vision_refusal
from ._features import reasoning_request_fields
from ._images import SeenImage, Wire, request_images, too_large_refusal
from ._protocol import (
    STOP_REASONS,
    Api,
    all_text,
    anthropic_message,
    api_error_response,
    chat_completion,
    fault_response,
    is_authorized,
    json_response,
    message_text,
    persona_refusal,
    request_refusal,
    unauthorized,
    unknown_model,
)
from ._replies import Reply
from ._responses import as_chat_request, responses_reply
from ._state import VendorState

__all__ = ["serve_chat"]

_SECRET_HEADERS = frozenset({"x-api-key", "api-key"})


class _DroppedResponse(web.StreamResponse):
    """Returned after the transport was aborted on purpose.

    aiohttp treats a ``ConnectionError`` from ``prepare`` as a client disconnect and
    ends the connection quietly, instead of logging and trying to send a 500.
    """

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        raise ConnectionResetError("connection dropped on purpose by cross_judge.testing")


async def serve_chat(
    state: VendorState,
    tasks: set[asyncio.Task[Any]],
    request: web.BaseRequest,
    api: Api,
    *,
    responses: bool = False,
) -> web.StreamResponse:
    """Answer a chat-completions (``api="chat"``) or Messages request; with ``responses``
    (``api="chat"``), a Responses API request, read and answered as :mod:`._responses`
    describes.

    The handler's task is in ``tasks`` while it runs, so a stopping server can cancel
    it. A request arriving while ``state.capacity`` requests are being answered gets an
    immediate 429 (DeepSeek's: an error body, no ``Retry-After``).
    """
    task = asyncio.current_task()
    if task is not None:
        tasks.add(task)
    with state.lock:
        state.requests += 1
        refused = state.capacity is not None and state.in_flight >= state.capacity
        if refused:
            state.rate_limited += 1
        else:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
    if refused:
        if task is not None:
            tasks.discard(task)
        # DeepSeek's 429: an error body, no Retry-After, no x-ratelimit-* headers.
        return api_error_response(api, 429, "Rate limit reached for requests (simulated capacity)")
    try:
        return await _answer_chat(state, request, api, responses)
    finally:
        with state.lock:
            state.in_flight -= 1
        if task is not None:
            tasks.discard(task)


async def _answer_chat(
    state: VendorState, request: web.BaseRequest, api: Api, responses: bool
) -> web.StreamResponse:
    # request.content has no size cap (request.read() stops at 1 MiB).
    raw = await request.content.read()
    wire: Wire = "responses" if responses else api
    limit = state.max_request_bytes
    if limit is not None and len(raw) > limit:
        # Refused before it is read, as the vendors' front ends refuse it.
        with state.lock:
            state.too_large += 1
        return too_large_refusal(len(raw), limit, wire).response(api)
    try:
        body: Any = json.loads(raw)
    except ValueError:  # includes UnicodeDecodeError
        body = None
    model = body.get("model") if isinstance(body, dict) else None
    headers: dict[str, str] = {}
    for key, value in request.headers.items():
        lower = key.lower()
        if lower == "authorization":
            value = "Bearer ***"
        elif lower in _SECRET_HEADERS:
            value = "***"
        headers[key] = value
    with state.lock:
        state.recent.append(
            {
                "model": model if isinstance(model, str) else None,
                "body": body,
                "headers": headers,
                "path": request.path,
                "reasoning": reasoning_request_fields(body, api),
            }
        )
        if isinstance(model, str):
            state.by_model[model] = state.by_model.get(model, 0) + 1
    images = request_images(body, wire)
    if images:
        with state.lock:
            state.images_seen += len(images)
    if responses:
        answer = await _answer_recorded(
            state, request, api, as_chat_request(body), images, "responses"
        )
        return responses_reply(answer, body)
    return await _answer_recorded(state, request, api, body, images, api)


async def _answer_recorded(
    state: VendorState,
    request: web.BaseRequest,
    api: Api,
    body: Any,
    images: tuple[SeenImage, ...],
    wire: Wire,
) -> web.StreamResponse:
    model = body.get("model") if isinstance(body, dict) else None
    if not is_authorized(request, state.api_key, api):
        return unauthorized(api)
    refusal = request_refusal(body, api, request.headers.get("anthropic-version"))
    if refusal is None:
        refusal = feature_refusal(state, body, api)
    if refusal is not None:
        return refusal.response(api)
    model = str(model)  # a non-empty string: request_refusal checked

    with state.lock:
        reply = state.take_reply_locked(model)
        persona = state.persona_locked(model)
    if reply is not None:
        return await _send_reply(state, request, reply, model, body, api)
    if persona is None:
        return unknown_model(model, api).response(api)
    refusal = vision_refusal(state, persona, images, wire) or persona_refusal(body, api)
    if refusal is not None:
        return refusal.response(api)
    draw = persona_draw(state, persona, model, body, faults=True, images=images)
    if draw.decision.delay:
        await asyncio.sleep(draw.decision.delay)
    if draw.fault is not None:
        return fault_response(draw.fault, api)
    return json_response(persona_body(state, model, draw, body, api))


async def _send_reply(
    state: VendorState,
    request: web.BaseRequest,
    reply: Reply,
    model: str,
    body: dict[str, Any],
    api: Api,
) -> web.StreamResponse:
    action = reply.action
    if action == "trickle":
        return await _trickle(state, request, reply, model, body, api)
    if reply.latency:
        await asyncio.sleep(reply.latency)
    usage = json.loads(reply.usage_json) if reply.usage_json is not None else None
    messages = body.get("messages")
    if not isinstance(messages, list):
        messages = []
    if action == "content" and api == "messages":
        stop_reason = STOP_REASONS.get(reply.finish_reason, reply.finish_reason)
        if reply.refusal is not None:
            stop_reason = "refusal"
        return json_response(
            anthropic_message(
                state.ids,
                model,
                reply.text,
                stop_reason,
                prompt=message_text(body.get("system")) + all_text(messages),
                thinking=reply.reasoning_content,
                refusal=reply.refusal,
                usage=usage,
            )
        )
    if action == "content":
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        return json_response(
            chat_completion(state.ids, model, message, reply.finish_reason, messages, usage=usage)
        )
    if action == "hang":
        # Never resolved: ends by cancellation (client gone or stop()).
        await asyncio.get_running_loop().create_future()
    if action == "reset":
        return _drop_connection(request)
    headers = dict(reply.headers)
    # A Content-Type given in Reply.status(headers=...) wins over the default.
    if not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = reply.content_type
    payload = reply.body
    if api == "messages" and reply.anthropic_body is not None:
        payload = reply.anthropic_body
    return web.Response(body=payload, status=reply.status_code, headers=headers)


async def _trickle(
    state: VendorState,
    request: web.BaseRequest,
    reply: Reply,
    model: str,
    body: dict[str, Any],
    api: Api,
) -> web.StreamResponse:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    if api == "messages":
        prompt = message_text(body.get("system")) + all_text(messages)
        answer = anthropic_message(state.ids, model, reply.text, "end_turn", prompt=prompt)
    else:
        message = {"role": "assistant", "content": reply.text}
        answer = chat_completion(state.ids, model, message, "stop", messages)
    payload = json.dumps(answer).encode()
    response = web.StreamResponse(
        status=200,
        headers={"Content-Type": "application/json", "Content-Length": str(len(payload))},
    )
    await response.prepare(request)
    for i in range(len(payload)):
        # Ends early by cancellation: the client went away, or stop().
        await response.write(payload[i : i + 1])
        await asyncio.sleep(reply.latency)
    await response.write_eof()
    return response


def _drop_connection(request: web.BaseRequest) -> web.StreamResponse:
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # SO_LINGER 0: close() sends a TCP RST instead of an orderly FIN. If the
            # platform refuses, the FIN mid-body still fails the client's read.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b'Content-Length: 4096\r\n\r\n{"id": "chatcmpl-'
        )
        transport.abort()
    return _DroppedResponse()
