"""What an item holds beyond text: a conversation's turns, an agent's steps, and images.

* :class:`Turn`: one message of a conversation (``role``, ``content``, the tool calls an
  assistant turn makes, the images it carries; a ``tool`` turn names the call it answers).
* A trajectory :data:`Step` is a :class:`ToolCall` (name, arguments, and its result or its
  error), a :class:`ModelMessage` (what the model said between calls) or a
  :class:`FinalAnswer`.
* :class:`Image`: the bytes of a picture (from a path or bytes, its media type read from
  the bytes) or a URL that only the vendor fetches; its ``sha256`` names it in the
  response cache.

:func:`steps_of` and :func:`images_of` read the plain forms an items file holds (mappings
and strings) and raise :class:`~cross_judge.errors.ItemError` with the field's path and
the fix; :func:`fail`, :func:`text_of`, :func:`listed` and :func:`tool_call_of` are their
helpers, shared with the conversation readers of :mod:`._readers` (where ``turns_of``
lives, since a conversation may come in either vendor's format). Base layer: imports
nothing above the errors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import ItemError

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "FinalAnswer",
    "Image",
    "ModelMessage",
    "Step",
    "ToolCall",
    "Turn",
    "final_text",
    "images_of",
    "steps_of",
]

ROLES = ("system", "user", "assistant", "tool")

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types every vision API takes (OpenAI, Anthropic, the Responses API)."""

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def sniff_media_type(data: bytes) -> str | None:
    """The media type ``data`` starts like (PNG, JPEG, GIF, WebP), else ``None``."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class Image(BaseModel):
    """One image: its bytes (``data``, with ``media_type``) or a ``url`` the vendor fetches.

    Build it with :meth:`from_path`, :meth:`from_bytes` or :meth:`from_url` (or give an
    items file a path, a URL or a ``data:`` URL). ``sha256`` is the digest of the bytes (of
    the URL's text for a URL image: an image changed behind the same URL is not noticed
    by the response cache), ``size`` the number of bytes (0 for a URL). ``source`` is
    what it was read from, for display (a path or a URL; ``None`` for bytes). Nothing here
    fetches a URL.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        defer_build=True,
        ser_json_bytes="base64",
        val_json_bytes="base64",
    )

    media_type: str
    sha256: str
    data: bytes | None = Field(default=None, repr=False)
    url: str | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Image:
        if (self.data is None) == (self.url is None):
            raise ValueError("an image is its bytes or a URL: give exactly one of data and url")
        if self.data is not None and self.media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(
                f"image type {self.media_type!r} is not one vision APIs take; convert it to "
                f"one of {', '.join(IMAGE_MEDIA_TYPES)}"
            )
        return self

    @property
    def size(self) -> int:
        """The number of bytes (0 for a URL image)."""
        return 0 if self.data is None else len(self.data)

    def data_url(self) -> str:
        """The image as a ``data:`` URL (a URL image: its URL)."""
        if self.data is None:
            assert self.url is not None
            return self.url
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def base64(self) -> str:
        """The bytes as base64 text (``""`` for a URL image)."""
        return "" if self.data is None else base64.b64encode(self.data).decode("ascii")

    def describe(self) -> dict[str, Any]:
        """What a results file stores of the image: type, size, digest and source; never
        the bytes."""
        shown: dict[str, Any] = {"media_type": self.media_type, "sha256": self.sha256}
        if self.data is not None:
            shown["size"] = len(self.data)
        if self.url is not None:
            shown["url"] = self.url
        if self.source is not None and self.source != self.url:
            shown["source"] = self.source
        return shown

    @classmethod
    def from_bytes(cls, data: bytes, *, media_type: str | None = None) -> Image:
        """An image of ``data``; ``media_type`` default: read from the bytes.

        Raises:
            ItemError: empty bytes, or a type that is not PNG, JPEG, GIF or WebP.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ItemError(f"image bytes must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if not data:
            raise ItemError("the image is empty (0 bytes)")
        found = sniff_media_type(data)
        kind = media_type or found
        if kind is None:
            raise ItemError(
                "the image's bytes are not PNG, JPEG, GIF or WebP; convert it to one of them "
                "(or pass media_type= if it is one of them)"
            )
        if kind not in IMAGE_MEDIA_TYPES:
            raise ItemError(
                f"image type {kind!r} is not one vision APIs take; convert it to one of "
                f"{', '.join(IMAGE_MEDIA_TYPES)}"
            )
        return cls(media_type=kind, sha256=hashlib.sha256(data).hexdigest(), data=data)

    @classmethod
    def from_path(cls, path: str | Path) -> Image:
        """The image in the file at ``path``, its type read from its bytes.

        Raises:
            ItemError: the file cannot be read, or is not PNG, JPEG, GIF or WebP.
        """
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ItemError(f"cannot read image {str(path)!r}: {exc.strerror or exc}") from None
        except ValueError:  # what the OS cannot take as a path at all
            raise ItemError(
                f"cannot read image {str(path)!r}: a file path cannot hold a NUL character"
            ) from None
        try:
            image = cls.from_bytes(data)
        except ItemError as exc:
            raise ItemError(f"image {str(path)!r}: {exc}") from None
        return image.model_copy(update={"source": str(path)})

    @classmethod
    def from_url(cls, url: str, *, media_type: str | None = None) -> Image:
        """An image the vendor fetches from ``url`` (``http``/``https``), or a ``data:``
        URL (decoded here into bytes).

        Raises:
            ItemError: another scheme, or a ``data:`` URL that is not base64 image data.
        """
        if url.startswith("data:"):
            return _from_data_url(url)
        if not url.startswith(("https://", "http://")):
            raise ItemError(
                f"image URL {url[:80]!r} is not http(s) or data:; give a file as a path "
                "({'path': ...}) or its bytes (Image.from_bytes)"
            )
        kind = media_type or _type_from_name(url) or "image/*"
        digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()
        return cls(media_type=kind, sha256=digest, url=url, source=url)


def _type_from_name(name: str) -> str | None:
    tail = name.split("?", 1)[0].rsplit(".", 1)[-1].lower()
    return {
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
    }.get(tail)


def _from_data_url(url: str) -> Image:
    head, sep, payload = url.partition(",")
    if not sep or not head.endswith(";base64"):
        raise ItemError("a data: URL image must be base64 (data:image/png;base64,...)")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ItemError("the data: URL image's base64 text is not valid base64") from None
    return Image.from_bytes(data, media_type=head[5:-7] or None)


def _compact(value: object) -> object:
    """A JSON string as its value (so that it is shown compactly), else ``value``."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return json.loads(text)
            except ValueError:
                return value
    return value


class ToolCall(BaseModel):
    """One call of a tool: its ``name``, ``arguments`` (any JSON value; a JSON string is
    read as its value), and its ``result`` or its ``error`` (the error's text). ``id`` is
    the call's id, when the source gave one."""

    model_config = _FROZEN

    kind: Literal["tool_call"] = "tool_call"
    name: str = Field(min_length=1)
    arguments: Any = None
    result: Any = None
    error: str | None = None
    id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _json_strings(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = dict(data)
            for key in ("arguments", "result"):
                if key in data:
                    data[key] = _compact(data[key])
        return data

    @property
    def failed(self) -> bool:
        """The call ended in an error."""
        return self.error is not None


class ModelMessage(BaseModel):
    """What the model said between tool calls."""

    model_config = _FROZEN

    kind: Literal["message"] = "message"
    text: str


class FinalAnswer(BaseModel):
    """The agent's final answer: the end of its trajectory."""

    model_config = _FROZEN

    kind: Literal["final_answer"] = "final_answer"
    text: str


Step: TypeAlias = Annotated[ToolCall | ModelMessage | FinalAnswer, Field(discriminator="kind")]
"""One step of an agent's trajectory."""

_STEP_TYPES = {"tool_call": ToolCall, "message": ModelMessage, "final_answer": FinalAnswer}


class Turn(BaseModel):
    """One message of a conversation.

    ``role`` is ``system``, ``user``, ``assistant`` or ``tool``; ``content`` its text
    (``""`` for an assistant turn that only calls tools). An assistant turn's
    ``tool_calls`` are the calls it made (their results come in ``tool`` turns, or on the
    call itself); a ``tool`` turn's ``name`` is the tool and ``tool_call_id`` the call it
    answers. ``images`` are shown to the judge after the turn's text.
    """

    model_config = _FROZEN

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    name: str | None = None
    tool_call_id: str | None = None
    images: tuple[Image, ...] = ()


# -- reading the plain forms ---------------------------------------------------------------


def fail(message: str, position: int | None) -> ItemError:
    return ItemError(message, position=position)


def text_of(value: object, where: str, position: int | None, *, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        # content blocks: the text ones joined (images are read separately)
        texts = [
            block.get("text", "")
            for block in value
            if isinstance(block, Mapping)
            and block.get("type") in ("text", "input_text", None)
            and isinstance(block.get("text"), str)
        ]
        if texts or not value:
            return "\n".join(texts)
    got = "nothing" if value is None else type(value).__name__
    raise fail(f"{where} must be text, got {got}", position)


def listed(value: object, where: str, position: int | None) -> Sequence[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise fail(f"{where} must be a list, got {type(value).__name__}", position)
    return value


def tool_call_of(raw: object, where: str, position: int | None) -> ToolCall:
    if isinstance(raw, ToolCall):
        return raw
    if not isinstance(raw, Mapping):
        raise fail(f"{where} must be a mapping with 'name' and 'arguments'", position)
    data = dict(raw)
    function = data.pop("function", None)
    if isinstance(function, Mapping):  # OpenAI's {"id", "type": "function", "function": {...}}
        data.pop("type", None)
        data.setdefault("name", function.get("name"))
        data.setdefault("arguments", function.get("arguments"))
    data.pop("kind", None)
    data.pop("type", None)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise fail(f"{where}.name must be the tool's name", position)
    unknown = set(data) - {"name", "arguments", "result", "error", "id"}
    if unknown:
        raise fail(
            f"{where} has unknown keys {sorted(map(str, unknown))}; a tool call takes name, "
            "arguments, result, error and id",
            position,
        )
    error = data.get("error")
    if error is not None and not isinstance(error, str):
        data["error"] = json.dumps(error, ensure_ascii=False, default=str)
    if data.get("id") is not None and not isinstance(data.get("id"), str):
        data["id"] = str(data["id"])
    return ToolCall.model_validate(data)


def steps_of(value: object, *, position: int | None = None) -> tuple[Step, ...]:
    """An agent's trajectory from a list of steps: :class:`ToolCall`, :class:`ModelMessage`
    or :class:`FinalAnswer` objects, or mappings. A mapping's ``kind`` (or ``type``) is
    ``tool_call``, ``message`` or ``final_answer``; without one, a mapping with ``name``
    (or ``tool``) is a tool call, one with ``final_answer`` (or ``answer``) the final
    answer, one with ``text`` (or ``content``) a message.

    Raises:
        ItemError: not a list, an empty one, or a step of none of these shapes; the
            message names the step (``trajectory[3]``) and the fix.
    """
    where = "trajectory"
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise fail(
            f"{where!r} must be a list of steps (tool calls, messages, a final answer), got "
            f"{type(value).__name__}",
            position,
        )
    if not value:
        raise fail(f"{where!r} is empty: leave it out, or give the agent's steps", position)
    steps: list[Step] = []
    for index, raw in enumerate(value):
        at = f"{where}[{index}]"
        if isinstance(raw, (ToolCall, ModelMessage, FinalAnswer)):
            steps.append(raw)
            continue
        if not isinstance(raw, Mapping):
            raise fail(
                f"{at} must be a mapping (a tool call, a message or a final answer)", position
            )
        data = dict(raw)
        kind = data.pop("kind", None) or data.pop("type", None)
        if kind is None:
            if "name" in data or "tool" in data:
                kind = "tool_call"
            elif "final_answer" in data or "answer" in data:
                kind = "final_answer"
            elif "text" in data or "content" in data:
                kind = "message"
        if kind == "tool_call":
            if "tool" in data and "name" not in data:
                data["name"] = data.pop("tool")
            steps.append(tool_call_of(data, at, position))
            continue
        if kind not in _STEP_TYPES:
            raise fail(
                f"{at}: a step is a tool call ({{'name', 'arguments', 'result' or 'error'}}), "
                f"a message ({{'text'}}) or a final answer ({{'final_answer'}}); got kind "
                f"{kind!r} and keys {sorted(map(str, raw))}",
                position,
            )
        keys = ("text", "content", "final_answer", "answer")
        text = next((data.pop(k) for k in keys if k in data), None)
        if data:
            raise fail(f"{at} has unknown keys {sorted(map(str, data))}", position)
        model = _STEP_TYPES[kind]
        steps.append(model(text=text_of(text, f"{at}.text", position)))
    return tuple(steps)


def images_of(
    value: object,
    *,
    where: str = "images",
    position: int | None = None,
    base_dir: Path | None = None,
    allow_empty: bool = False,
) -> tuple[Image, ...]:
    """Images from a list of :class:`Image` objects, bytes, or what an items file holds:
    a path (relative to ``base_dir`` when given), an ``http(s)`` or ``data:`` URL, or a
    mapping with one of ``path``, ``url`` or ``base64`` (with ``media_type``).

    Raises:
        ItemError: not a list, an empty one (unless ``allow_empty``), or an image that
            cannot be read; the message names it (``images[1]``).
    """
    if isinstance(value, (str, bytes, Mapping, Image)) or not isinstance(value, Sequence):
        value = [value]
    if not value:
        if allow_empty:
            return ()
        raise fail(f"{where!r} is empty: leave it out, or give the images", position)
    images: list[Image] = []
    for index, raw in enumerate(value):
        at = f"{where}[{index}]"
        try:
            images.append(_image(raw, base_dir))
        except ItemError as exc:
            raise fail(f"{at}: {exc}", position) from None
    return tuple(images)


def _image(raw: object, base_dir: Path | None) -> Image:
    if isinstance(raw, Image):
        return raw
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return Image.from_bytes(bytes(raw))
    if isinstance(raw, Path):
        return Image.from_path(raw if base_dir is None else base_dir / raw)
    if isinstance(raw, str):
        if raw.startswith("data:") or _SCHEME.match(raw):
            return Image.from_url(raw)
        path = Path(raw)
        return Image.from_path(path if base_dir is None or path.is_absolute() else base_dir / path)
    if isinstance(raw, Mapping):
        given = [key for key in ("path", "url", "base64") if raw.get(key) is not None]
        if len(given) != 1:
            raise ItemError("an image mapping takes exactly one of 'path', 'url' and 'base64'")
        media_type = raw.get("media_type")
        if media_type is not None and not isinstance(media_type, str):
            raise ItemError("'media_type' must be text such as 'image/png'")
        key = given[0]
        text = raw[key]
        if not isinstance(text, str):
            raise ItemError(f"{key!r} must be text")
        if key == "path":
            return _image(text, base_dir)
        if key == "url":
            return Image.from_url(text, media_type=media_type)
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ItemError("'base64' is not valid base64") from None
        return Image.from_bytes(data, media_type=media_type)
    raise ItemError(f"an image is a path, a URL, a mapping or bytes, got {type(raw).__name__}")


def final_text(messages: Sequence[Turn] = (), trajectory: Sequence[Step] = ()) -> str | None:
    """The judged text of a structured item when no query is given: the trajectory's
    final answer (else its last message), or the conversation's last assistant turn's
    text; ``None`` when there is none."""
    for step in reversed(trajectory):
        if isinstance(step, FinalAnswer):
            return step.text
    for step in reversed(trajectory):
        if isinstance(step, ModelMessage):
            return step.text
    for turn in reversed(messages):
        if turn.role == "assistant" and turn.content:
            return turn.content
    return None


for _model in (Image, ToolCall, ModelMessage, FinalAnswer, Turn):
    _model.__module__ = "cross_judge.content"  # the public path (and the one pickles record)
