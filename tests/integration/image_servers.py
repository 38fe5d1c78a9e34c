"""Servers that take images exactly as the vendors document them, and nothing else.

Written from the vendors' public documentation of their image content, NOT from
:mod:`cross_judge.testing` nor from cross-judge's adapters:

* OpenAI chat completions (:class:`ChatImageServer`): a user message's ``content`` is a
  string or a list of parts; an image part is ``{"type": "image_url", "image_url": {"url":
  ..., "detail"?: "auto" | "low" | "high"}}``, its URL a ``data:image/<png|jpeg|gif|webp>;
  base64,...`` URL or an ``https://``/``http://`` one.
* Anthropic Messages (:class:`MessagesImageServer`): a content block ``{"type": "image",
  "source": {"type": "base64", "media_type": "image/png" | "image/jpeg" | "image/gif" |
  "image/webp", "data": ...}}`` or ``{"type": "image", "source": {"type": "url", "url":
  ...}}``; an image over 5 MiB (5,242,880 bytes) of base64 is refused as the API refuses it.
* OpenAI Responses (:class:`ResponsesImageServer`): an ``input`` message's part
  ``{"type": "input_image", "image_url": ..., "detail": "auto" | "low" | "high"}``.

Anything else (another part type, a missing or extra key, a media type outside the four, a
``data:`` URL whose base64 does not decode, bytes that are not the declared type) gets the
vendor's own 400 error body. Every image accepted is recorded as ``(media_type, sha256 of
its bytes)`` (or ``("url", url)``) in :attr:`images`, per request, so a test checks that
the bytes that arrived are the bytes sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

from .wire_servers import (
    AnthropicMessagesServer,
    OpenAIChatServer,
    Script,
    WireError,
    WireServer,
    _anthropic_error,
    _openai_error,
)

__all__ = ["ChatImageServer", "MessagesImageServer", "ResponsesImageServer", "sniff"]

MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
DETAILS = ("auto", "low", "high")
ANTHROPIC_MAX_IMAGE = 5 * 1024 * 1024
_DATA_URL = re.compile(r"^data:(image/[a-z]+);base64,(.*)$", re.DOTALL)


def sniff(data: bytes) -> str | None:
    """The image type of ``data`` by its first bytes (PNG, JPEG, GIF, WebP), or ``None``."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _decode(text: object) -> bytes | None:
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


class _Recording:
    """The images each accepted request held, in order."""

    def __init__(self) -> None:
        self.images: list[list[tuple[str, str]]] = []


class ChatImageServer(OpenAIChatServer, _Recording):
    """Chat completions taking images as documented; answers as :class:`OpenAIChatServer`."""

    def __init__(self, answer: Script, *, api_key: str | None = None) -> None:
        OpenAIChatServer.__init__(self, answer, api_key=api_key)
        _Recording.__init__(self)

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        seen: list[tuple[str, str]] = []
        for m, message in enumerate(body.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                continue
            if not isinstance(content, list):
                raise _bad(f"messages[{m}].content", "Invalid type: expected a string or array.")
            for p, part in enumerate(content):
                seen.extend(_chat_part(part, f"messages[{m}].content[{p}]"))
        self.images.append(seen)
        flat = dict(body)
        flat["messages"] = [_flattened(m) for m in body.get("messages") or []]
        return super().respond(flat)


def _bad(param: str, message: str, code: str = "invalid_value") -> WireError:
    return WireError(400, _openai_error(f"Invalid '{param}': {message}", code, param))


def _chat_part(part: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(part, dict):
        raise _bad(where, "expected an object.", "invalid_type")
    kind = part.get("type")
    if kind == "text":
        if set(part) != {"type", "text"} or not isinstance(part["text"], str):
            raise _bad(f"{where}.text", "expected a string.", "invalid_type")
        return []
    if kind != "image_url":
        raise WireError(
            400,
            _openai_error(
                f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', "
                "'input_audio', 'refusal', 'audio', and 'file'.",
                "invalid_value",
                f"{where}.type",
            ),
        )
    if set(part) != {"type", "image_url"} or not isinstance(part["image_url"], dict):
        raise _bad(f"{where}.image_url", "expected an object with a url.", "invalid_type")
    image = part["image_url"]
    if not set(image) <= {"url", "detail"} or not isinstance(image.get("url"), str):
        raise _bad(f"{where}.image_url", "unknown or missing field.", "invalid_type")
    if "detail" in image and image["detail"] not in DETAILS:
        raise _bad(f"{where}.image_url.detail", f"expected one of {list(DETAILS)}.")
    return [_url_image(image["url"], f"{where}.image_url.url")]


def _url_image(url: str, param: str) -> tuple[str, str]:
    """An OpenAI image URL: a base64 data URL of one of the four types, or http(s)."""
    if url.startswith(("https://", "http://")):
        return ("url", url)
    match = _DATA_URL.match(url)
    if match is None:
        raise _bad(param, "Expected a base64-encoded data URL with an image MIME type.")
    media_type, data = match[1], _decode(match[2])
    if media_type not in MEDIA_TYPES or data is None or sniff(data) != media_type:
        raise WireError(
            400,
            _openai_error(
                "You uploaded an unsupported image. Please make sure your image is valid and "
                "of one of the following formats: ['png', 'jpeg', 'gif', 'webp'].",
                "invalid_image_format",
                param,
            ),
        )
    return (media_type, hashlib.sha256(data).hexdigest())


def _flattened(message: Any) -> Any:
    """``message`` with its text parts joined, for the answering script (which reads text)."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    text = "".join(p.get("text", "") for p in message["content"] if p.get("type") == "text")
    return {**message, "content": text}


class MessagesImageServer(AnthropicMessagesServer, _Recording):
    """The Messages API taking image blocks as documented; answers as
    :class:`AnthropicMessagesServer`."""

    def __init__(self, answer: Script, *, api_key: str | None = None) -> None:
        AnthropicMessagesServer.__init__(self, answer, api_key=api_key)
        _Recording.__init__(self)

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        seen: list[tuple[str, str]] = []
        for m, message in enumerate(body.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                continue
            if not isinstance(content, list):
                raise _anthropic_error(400, f"messages.{m}.content: Input should be a valid list")
            for b, block in enumerate(content):
                seen.extend(_block(block, f"messages.{m}.content.{b}"))
        self.images.append(seen)
        flat = dict(body)
        flat["messages"] = [_flattened(m) for m in body.get("messages") or []]
        return super().respond(flat)


def _block(block: Any, where: str) -> list[tuple[str, str]]:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise _anthropic_error(400, f"{where}.text.text: Field required")
        return []
    if kind != "image":
        raise _anthropic_error(
            400,
            f"{where}: Input tag '{kind}' found using 'type' does not match any of the "
            "expected tags: 'text', 'image', 'document', 'search_result', 'tool_use', "
            "'tool_result', 'thinking', 'redacted_thinking'",
        )
    source = block.get("source")
    if set(block) - {"type", "source", "cache_control"} or not isinstance(source, dict):
        raise _anthropic_error(400, f"{where}.image.source: Field required")
    if source.get("type") == "url":
        if set(source) != {"type", "url"} or not str(source.get("url", "")).startswith(
            ("https://", "http://")
        ):
            raise _anthropic_error(400, f"{where}.image.source.url.url: Field required")
        return [("url", source["url"])]
    if source.get("type") != "base64" or set(source) != {"type", "media_type", "data"}:
        raise _anthropic_error(
            400,
            f"{where}.image.source: Input tag '{source.get('type')}' found using 'type' does "
            "not match any of the expected tags: 'base64', 'url', 'file'",
        )
    media_type = source["media_type"]
    if media_type not in MEDIA_TYPES:
        raise _anthropic_error(
            400,
            f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', "
            "'image/png', 'image/gif' or 'image/webp'",
        )
    text = source["data"]
    if isinstance(text, str) and len(text) > ANTHROPIC_MAX_IMAGE:
        raise _anthropic_error(
            400,
            f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(text)} bytes > "
            f"{ANTHROPIC_MAX_IMAGE} bytes",
        )
    data = _decode(text)
    if data is None:
        raise _anthropic_error(400, f"{where}.image.source.base64.data: invalid base64 data")
    found = sniff(data)
    if found != media_type:
        raise _anthropic_error(
            400,
            f"{where}.image.source.base64.data: The image was specified using the "
            f"{media_type} media type, but the image appears to be a {found} image",
        )
    return [(media_type, hashlib.sha256(data).hexdigest())]


class ResponsesImageServer(WireServer, _Recording):
    """The Responses API (``POST /v1/responses``) taking ``input_image`` parts as
    documented, answering every request with the script's label as JSON text."""

    path = "/v1/responses"

    def __init__(self, answer: Script, *, api_key: str | None = None) -> None:
        WireServer.__init__(self, answer, api_key=api_key)
        _Recording.__init__(self)
        self._ids = itertools.count(1)

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list) or not items:
            raise _bad("input", "expected a string or a non-empty array.", "invalid_type")
        seen: list[tuple[str, str]] = []
        for i, item in enumerate(items):
            content = item.get("content") if isinstance(item, Mapping) else None
            if isinstance(content, str):
                continue
            if not isinstance(content, list):
                raise _bad(f"input[{i}].content", "expected a string or array.", "invalid_type")
            for p, part in enumerate(content):
                seen.extend(_input_part(part, f"input[{i}].content[{p}]"))
        self.images.append(seen)
        answer = self.answer(body)
        text = json.dumps(
            {"kind": answer.label, "confidence": answer.confidence, "reasoning": answer.reasoning}
        )
        number = next(self._ids)
        return {
            "id": f"resp_{number:08d}",
            "object": "response",
            "created_at": 1_700_000_000,
            "status": "completed",
            "model": body.get("model"),
            "output": [
                {
                    "type": "message",
                    "id": f"msg_{number:08d}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120},
        }


def _input_part(part: Any, where: str) -> list[tuple[str, str]]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text"):
        return []
    if kind != "input_image":
        raise WireError(
            400,
            _openai_error(
                f"Invalid value: '{kind}'. Supported values are: 'input_text', "
                "'input_image', and 'input_file'.",
                "invalid_value",
                f"{where}.type",
            ),
        )
    if not set(part) <= {"type", "image_url", "file_id", "detail"}:
        raise _bad(where, f"unknown parameter(s) {sorted(set(part) - {'type', 'image_url'})}.")
    if part.get("detail") not in DETAILS:
        raise _bad(f"{where}.detail", f"expected one of {list(DETAILS)}.")
    url = part.get("image_url")
    if not isinstance(url, str):
        raise _bad(f"{where}.image_url", "expected a string.", "invalid_type")
    return [_url_image(url, f"{where}.image_url")]
