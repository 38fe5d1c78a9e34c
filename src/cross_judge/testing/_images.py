"""Images on the simulated vendor: a PNG that carries its truth (:func:`truth_image`,
:func:`image_truth`), the image parts of a request in each protocol
(:func:`request_images`), and the refusals a text-only model or a size limit sends
(:func:`image_refusal`, :func:`too_large_refusal`).

A simulated image is judged by what it holds, as a real one is: a PNG whose ``tEXt``
chunk ``cross-judge-truth`` holds a label is an image "showing" that label. A persona
that sees images reads it (:class:`~._personas.Persona` ``vision="sees"``); one that
does not answers as if the image were absent. Nothing here decides an answer or serves
a socket.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
import zlib
from typing import Any, Literal, NamedTuple

from ._protocol import Refusal

__all__ = [
    "TRUTH_KEYWORD",
    "SeenImage",
    "Wire",
    "image_refusal",
    "image_truth",
    "request_images",
    "too_large_refusal",
    "truth_image",
]

TRUTH_KEYWORD = "cross-judge-truth"
"""The ``tEXt`` keyword of the truth a simulated image carries."""

Wire = Literal["chat", "messages", "responses"]
"""The request body's protocol: chat completions, Anthropic Messages, OpenAI Responses."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAX_LABEL_CHARS = 200


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def truth_image(label: str, *, size: int = 1) -> bytes:
    """A valid PNG (``size`` x ``size`` grey pixels) whose ``tEXt`` chunk
    ``cross-judge-truth`` holds ``label``: an image that "shows" ``label`` to a persona
    with ``vision="sees"``. Its bytes are a pure function of ``label`` and ``size``.

    Raises:
        ValueError: ``label`` is empty, longer than 200 characters, not Latin-1 (PNG
            text is) or holds a NUL; ``size`` is not an int in 1..256.
    """
    if not isinstance(label, str) or not label or len(label) > _MAX_LABEL_CHARS:
        raise ValueError(
            f"truth_image needs a label of 1 to {_MAX_LABEL_CHARS} characters, e.g. "
            f'truth_image("PASS"); got {label!r}'
        )
    try:
        text = label.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(
            f"truth_image's label must be Latin-1 text (a PNG tEXt chunk is), got {label!r}"
        ) from None
    if b"\x00" in text:
        raise ValueError(f"truth_image's label must not hold a NUL character, got {label!r}")
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 256:
        raise ValueError(f"truth_image's size must be an int in 1..256 pixels, got {size!r}")
    header = struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0)  # 8-bit greyscale
    rows = b"".join(b"\x00" + b"\x80" * size for _ in range(size))  # filter 0, mid grey
    return (
        _PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"tEXt", TRUTH_KEYWORD.encode("latin-1") + b"\x00" + text)
        + _chunk(b"IDAT", zlib.compress(rows, 9))
        + _chunk(b"IEND", b"")
    )


def image_truth(data: bytes) -> str | None:
    """The label a :func:`truth_image` carries; ``None`` for any other image (not a PNG,
    no ``cross-judge-truth`` chunk, a chunk whose CRC is wrong, a truncated file)."""
    if not data.startswith(_PNG_SIGNATURE):
        return None
    at = len(_PNG_SIGNATURE)
    keyword = TRUTH_KEYWORD.encode("latin-1") + b"\x00"
    while at + 12 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        end = at + 8 + length
        if end + 4 > len(data):
            return None
        body = data[at + 8 : end]
        (crc,) = struct.unpack(">I", data[end : end + 4])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            return None
        if kind == b"tEXt" and body.startswith(keyword):
            label = body[len(keyword) :].decode("latin-1")
            return label or None
        if kind == b"IEND":
            return None
        at = end + 4
    return None


class SeenImage(NamedTuple):
    """One image part of a request: where it is (``param``, the request field, as the
    vendor's error names it), its ``media_type`` (``""`` when not given), its bytes
    (``None`` for a URL the vendor would fetch, or bytes that are not valid base64) and
    ``url`` (a URL image's)."""

    param: str
    media_type: str
    data: bytes | None
    url: str | None = None

    @property
    def sha256(self) -> str:
        """The digest of its bytes (of its URL for a URL image)."""
        blob = self.data if self.data is not None else (self.url or "").encode()
        return hashlib.sha256(blob).hexdigest()

    @property
    def truth(self) -> str | None:
        """The label it carries (:func:`image_truth`); ``None`` for a URL image."""
        return image_truth(self.data) if self.data is not None else None


def _decode(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _from_url(param: str, url: Any) -> SeenImage | None:
    """A chat ``image_url`` / Responses ``input_image`` URL: a ``data:`` URL's bytes, else
    the URL itself."""
    if not isinstance(url, str):
        return None
    if url.startswith("data:"):
        head, _, payload = url.partition(",")
        media_type = head[len("data:") :].split(";", 1)[0]
        data = _decode(payload) if head.endswith(";base64") else payload.encode()
        return SeenImage(param, media_type, data)
    return SeenImage(param, "", None, url)


def _chat_images(body: dict[str, Any], key: str, responses: bool) -> list[SeenImage]:
    found: list[SeenImage] = []
    items = body.get(key)
    if not isinstance(items, list):
        return found
    for i, message in enumerate(items):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                continue
            if responses and part.get("type") == "input_image":
                seen = _from_url(f"input[{i}].content[{j}]", part.get("image_url"))
            elif not responses and part.get("type") == "image_url":
                inner = part.get("image_url")
                url = inner.get("url") if isinstance(inner, dict) else inner
                seen = _from_url(f"messages.[{i}].content.[{j}].type", url)
            else:
                continue
            if seen is not None:
                found.append(seen)
    return found


def _anthropic_images(body: dict[str, Any]) -> list[SeenImage]:
    found: list[SeenImage] = []
    messages = body.get("messages")
    if not isinstance(messages, list):
        return found
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not (isinstance(block, dict) and block.get("type") == "image"):
                continue
            source = block.get("source")
            source = source if isinstance(source, dict) else {}
            param = f"messages.{i}.content.{j}"
            if source.get("type") == "base64" and isinstance(source.get("data"), str):
                media_type = source.get("media_type")
                found.append(
                    SeenImage(
                        param,
                        media_type if isinstance(media_type, str) else "",
                        _decode(source["data"]),
                    )
                )
            elif source.get("type") == "url" and isinstance(source.get("url"), str):
                found.append(SeenImage(param, "", None, source["url"]))
    return found


def request_images(body: Any, wire: Wire) -> tuple[SeenImage, ...]:
    """Every image part of a request ``body``, in order: chat completions'
    ``{"type": "image_url", "image_url": {"url"}}`` parts, Anthropic's ``{"type": "image",
    "source": {"type": "base64" | "url", ...}}`` blocks, the Responses API's ``{"type":
    "input_image", "image_url"}`` parts; ``()`` for a body without any (or not an
    object)."""
    if not isinstance(body, dict):
        return ()
    if wire == "messages":
        return tuple(_anthropic_images(body))
    if wire == "responses":
        return tuple(_chat_images(body, "input", responses=True))
    return tuple(_chat_images(body, "messages", responses=False))


def image_refusal(image: SeenImage, wire: Wire) -> Refusal:
    """The 400 a text-only model answers a request holding ``image`` with: OpenAI's
    ``Invalid content type. image_url is only supported by certain models.`` (param the
    part's ``type``; ``input_image`` for the Responses API), and for Messages an
    ``invalid_request_error`` naming the block."""
    if wire == "messages":
        return Refusal(
            400,
            f"{image.param}.type: image input is not supported by this model "
            "(a text-only model on cross_judge.testing)",
        )
    kind = "input_image" if wire == "responses" else "image_url"
    return Refusal(
        400, f"Invalid content type. {kind} is only supported by certain models.", param=image.param
    )


def too_large_refusal(size: int, limit: int, wire: Wire) -> Refusal:
    """The error of a request body of ``size`` bytes over the vendor's ``limit``:
    Anthropic's 413 ``request_too_large``; OpenAI's 400 ``invalid_request_error``."""
    if wire == "messages":
        return Refusal(
            413, f"Request exceeds the maximum size of {limit:,} bytes ({size:,} bytes sent)"
        )
    return Refusal(
        400,
        f"The request is too large: {size:,} bytes, over the limit of {limit:,} bytes. "
        "Reduce the length of the messages or the size of the images.",
        code="request_too_large",
    )
