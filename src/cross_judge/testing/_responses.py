"""OpenAI's Responses API (``POST /v1/responses``) on the simulated vendor, written from its
wire description: a request is read as the chat-completions request it asks the same of,
answered by the same personas and scripted replies, and the chat completion written back
as a Responses reply.

The request: ``model``; ``instructions`` (the system prompt); ``input``, a string or
message items ``{"role", "content": [{"type": "input_text" | "output_text", "text"}]}``;
``temperature``; ``max_output_tokens``; ``text.format`` (``{"type": "json_schema", "name",
"schema", "strict"}`` or ``{"type": "json_object"}``); ``reasoning.effort``;
``top_logprobs`` with ``include: ["message.output_text.logprobs"]``.

The reply: ``status`` ``completed``, or ``incomplete`` with ``incomplete_details.reason``
``max_output_tokens`` for an answer cut at the cap; ``output[]``, a ``reasoning`` item with
``summary[]`` ``summary_text`` when the persona reasoned, then a ``message`` item whose
``content[]`` holds an ``output_text`` part (its ``logprobs`` when asked) or a ``refusal``
part; ``usage`` with ``input_tokens``, ``output_tokens`` and
``output_tokens_details.reasoning_tokens``. Errors keep OpenAI's ``{"error": {...}}``
shape, as the API sends them. A scripted ``Reply.trickle`` is sent as a chat completion.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

__all__ = ["LOGPROBS_INCLUDE", "as_chat_request", "as_response", "responses_reply"]

LOGPROBS_INCLUDE = "message.output_text.logprobs"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("input_text", "output_text")
            and isinstance(part.get("text"), str)
        )
    return ""


def as_chat_request(body: Any) -> Any:
    """The chat-completions request asking what the Responses request ``body`` asks (a
    body that is not a JSON object is returned as it is, to be refused as one)."""
    if not isinstance(body, dict):
        return body
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
    elif isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("role"), str):
                messages.append({"role": item["role"], "content": _text_of(item.get("content"))})
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if "temperature" in body:
        chat["temperature"] = body["temperature"]
    if "max_output_tokens" in body:
        chat["max_tokens"] = body["max_output_tokens"]
    text = body.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    if isinstance(form, dict) and form.get("type") == "json_schema":
        chat["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": form.get("name"),
                "strict": form.get("strict"),
                "schema": form.get("schema"),
            },
        }
    elif isinstance(form, dict) and form.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        chat["reasoning_effort"] = reasoning["effort"]
    include = body.get("include")
    if isinstance(include, list) and LOGPROBS_INCLUDE in include:
        chat["logprobs"] = True
        chat["top_logprobs"] = body.get("top_logprobs", 0)
    return chat


def as_response(completion: dict[str, Any], request: Any) -> dict[str, Any]:
    """The Responses reply saying what the chat ``completion`` says, to ``request`` (the
    Responses request body)."""
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    number = str(completion.get("id", "")).rsplit("sim", 1)[-1]
    output: list[dict[str, Any]] = []
    thinking = message.get("reasoning_content")
    if isinstance(thinking, str) and thinking:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_sim{number}",
                "summary": [{"type": "summary_text", "text": thinking}],
            }
        )
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str) and (content or message.get("refusal") is None):
        logprobs = choice.get("logprobs")
        tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
        parts.append(
            {
                "type": "output_text",
                "text": content,
                "annotations": [],
                "logprobs": tokens if isinstance(tokens, list) else [],
            }
        )
    if isinstance(message.get("refusal"), str):
        parts.append({"type": "refusal", "refusal": message["refusal"]})
    output.append(
        {
            "type": "message",
            "id": f"msg_sim{number}",
            "status": "completed",
            "role": "assistant",
            "content": parts,
        }
    )
    finish = choice.get("finish_reason")
    status, details = "completed", None
    if finish == "length":
        status, details = "incomplete", {"reason": "max_output_tokens"}
    elif finish == "content_filter":
        status, details = "incomplete", {"reason": "content_filter"}
    usage = completion.get("usage") or {}
    reasoning_tokens = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
    body = request if isinstance(request, dict) else {}
    return {
        "id": f"resp_sim{number}",
        "object": "response",
        "created_at": completion.get("created", 0),
        "model": completion.get("model"),
        "status": status,
        "incomplete_details": details,
        "error": None,
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": body.get("temperature"),
        "top_p": 1.0,
        "max_output_tokens": body.get("max_output_tokens"),
        "reasoning": body.get("reasoning"),
        "text": body.get("text") or {"format": {"type": "text"}},
        "metadata": {},
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.get("completion_tokens", 0),
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": usage.get("total_tokens", 0),
        },
    }


def responses_reply(answer: web.StreamResponse, request: Any) -> web.StreamResponse:
    """``answer`` (to the chat request read from ``request``) as the Responses endpoint
    sends it: a chat completion becomes a Responses reply; errors and anything streamed
    are sent as they are."""
    if not isinstance(answer, web.Response) or answer.status != 200:
        return answer
    raw = answer.body
    if not isinstance(raw, bytes):
        return answer
    try:
        completion = json.loads(raw)
    except ValueError:
        return answer  # a malformed body on purpose (a fault): sent as it is
    if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
        return answer
    body = json.dumps(as_response(completion, request)).encode()
    return web.Response(body=body, status=200, headers={"Content-Type": "application/json"})
