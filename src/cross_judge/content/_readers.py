"""Reading the conversations and agent runs other tools write, as they come.

* :func:`read_openai_chat`: OpenAI chat-completions ``messages`` (``system`` /
  ``developer`` / ``user`` / ``assistant`` / ``tool``, the assistant's ``tool_calls``
  with ``function.arguments`` as a JSON string, content as text or ``text`` /
  ``image_url`` parts, ``refusal``; the legacy ``function_call`` and ``function`` role).
* :func:`read_anthropic_messages`: Anthropic Messages content blocks (``text``, ``image``
  with a base64 or URL source, ``tool_use``, ``tool_result`` with ``is_error``, the
  server tools' ``server_tool_use`` and ``*_tool_result``); ``thinking`` and
  ``redacted_thinking`` blocks are skipped: the judge sees what the model said, not its
  hidden reasoning.
* :func:`turns_of`: the ``messages`` of an items file, in the plain form (``role``,
  ``content``, ``tool_calls`` with ``result`` / ``error``, ``images``) or either vendor's,
  turn by turn, through the same reading.
* OpenTelemetry GenAI spans in OTLP JSON: :func:`cross_judge.content.read_otlp_json`
  (:mod:`._otlp`), which builds its runs with :class:`RunBuilder` too.

Each reader gives a :class:`Transcript`: the run as a conversation (``messages``, each
tool result a ``tool`` turn) and as agent steps (``trajectory``: each call a
:class:`ToolCall` holding its result or error, the model's text between calls a
:class:`ModelMessage`, its last text the :class:`FinalAnswer`).

**When a tool result is an error**: Anthropic's ``is_error: true`` says so; OpenAI's
``tool`` messages have no flag, so the rule for every format
(:func:`~cross_judge.content._transcript.answer_error`) is: the result is an error when
it is marked (``is_error: true`` on the block or the message), or when its text is a
JSON object with ``"is_error": true`` or a non-empty ``"error"`` (and no ``"is_error":
false``). The error's text is that ``"error"`` value, else the result's text.

Bad input raises :class:`~cross_judge.errors.ItemError` naming the place
(``messages[3].content[1]``) and the fix. Nothing here fetches a URL or reads a file
other than an items file's image paths (:func:`~cross_judge.content.images_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ItemError
from ._model import ROLES, Image, Turn, fail, images_of, listed, text_of, tool_call_of
from ._render import compact_json
from ._transcript import CallDraft, RunBuilder, Transcript, answer_error

__all__ = [
    "read_anthropic_messages",
    "read_openai_chat",
    "turns_of",
]

# -- reading messages --------------------------------------------------------------------------

_TEXT_BLOCKS = ("text", "input_text", "output_text")
_SKIPPED_BLOCKS = ("thinking", "redacted_thinking", "reasoning")
_CALL_BLOCKS = ("tool_use", "server_tool_use")
_BLOCKS = "text, image_url, image, refusal, tool_use, tool_result (thinking blocks are skipped)"
_TURN_KEYS = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "name",
        "tool_call_id",
        "images",
        "refusal",
        "function_call",
        "is_error",
    }
)
_ROLE_ALIASES = {"developer": "system", "function": "tool"}
_IGNORED_KEYS = frozenset({"annotations", "audio", "reasoning_content"})
"""Keys of OpenAI-compatible messages that say nothing a judge reads (hidden reasoning,
citations, audio): passed over."""


class _Reader:
    """Reads one list of messages into a :class:`RunBuilder`."""

    def __init__(
        self, builder: RunBuilder, where: str, position: int | None, base_dir: Path | None
    ) -> None:
        self.run = builder
        self.where = where
        self.position = position
        self.base_dir = base_dir
        self.cut = False  # the message being read had a tool result: its turn was cut

    def fail(self, message: str) -> ItemError:
        return fail(message, self.position)

    def messages(self, value: object) -> None:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise self.fail(
                f"{self.where!r} must be a list of turns ({{'role': 'user', 'content': "
                f"'...'}}), got {type(value).__name__}"
            )
        if not value:
            raise self.fail(
                f"{self.where!r} is empty: leave it out, or give the conversation's turns"
            )
        for index, raw in enumerate(value):
            self.message(raw, f"{self.where}[{index}]")

    def message(self, raw: object, at: str) -> None:
        self.cut = False
        if isinstance(raw, Turn):
            self.run.given(raw)
            return
        if not isinstance(raw, Mapping):
            raise self.fail(f"{at} must be a mapping with 'role' and 'content'")
        given_role = raw.get("role")
        role = _ROLE_ALIASES.get(given_role, given_role) if isinstance(given_role, str) else None
        if role not in ROLES:
            model_words = ("bot", "model", "ai")
            hint = " (use 'assistant' for the model's turns)" if role in model_words else ""
            raise self.fail(
                f"{at}.role must be one of system, developer, user, assistant, tool, got "
                f"{raw.get('role')!r}{hint}"
            )
        unknown = set(raw) - _TURN_KEYS - _IGNORED_KEYS
        if unknown:
            raise self.fail(
                f"{at} has unknown keys {sorted(map(str, unknown))}; a turn takes role, "
                "content, tool_calls, name, tool_call_id and images (or refusal, "
                "function_call and is_error, as OpenAI writes them)"
            )
        for key in ("name", "tool_call_id"):
            if raw.get(key) is not None and not isinstance(raw.get(key), str):
                raise self.fail(f"{at}.{key} must be text")
        images = list(
            images_of(
                raw.get("images") or (),
                where=f"{at}.images",
                position=self.position,
                base_dir=self.base_dir,
                allow_empty=True,
            )
        )
        if role == "tool":
            self.tool_message(raw, at, images)
            return
        if (raw.get("tool_calls") or raw.get("function_call")) and role != "assistant":
            raise self.fail(f"{at}: only an assistant turn makes tool_calls")
        pieces = self.content(raw.get("content"), f"{at}.content", role, images)
        refusal = raw.get("refusal")
        if refusal is not None:
            if not isinstance(refusal, str):
                raise self.fail(f"{at}.refusal must be text")
            pieces.append(refusal)
        calls = raw.get("tool_calls") or ()
        for i, call in enumerate(listed(calls, f"{at}.tool_calls", self.position)):
            pieces.append(self.tool_call(call, f"{at}.tool_calls[{i}]"))
        legacy = raw.get("function_call")
        if legacy is not None:
            pieces.append(self.tool_call({"function": legacy}, f"{at}.function_call"))
        self.flush(role, pieces, images, raw.get("name"), at=at, last=True)

    def flush(
        self,
        role: str,
        pieces: list[str | CallDraft],
        images: list[Image],
        name: str | None = None,
        *,
        at: str,
        last: bool = False,
    ) -> None:
        """Turn the pieces read so far into a turn: the message's ``last`` always (an
        empty turn too), one cut short by a tool result only when it has something."""
        if not pieces and not images and not (last and not self.cut):
            return
        if role == "assistant":
            self.run.assistant(pieces, images, name)
        else:
            if any(isinstance(p, CallDraft) for p in pieces):
                raise self.fail(f"{at}: only an assistant turn makes tool calls (tool_use)")
            text = "\n".join(p for p in pieces if isinstance(p, str) and p)
            self.run.turn(role, text, images, name)
        pieces.clear()
        images.clear()

    def content(
        self, value: object, at: str, role: str, images: list[Image]
    ) -> list[str | CallDraft]:
        """The texts and calls of a turn's content, in order; its images added to
        ``images``. A tool result block closes the turn so far (the result is a turn of
        its own) and continues with a new one."""
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if isinstance(value, (bytes, Mapping)) or not isinstance(value, Sequence):
            raise self.fail(f"{at} must be text or a list of content blocks")
        pieces: list[str | CallDraft] = []
        for index, block in enumerate(value):
            here = f"{at}[{index}]"
            if isinstance(block, str):
                pieces.append(block)
                continue
            if not isinstance(block, Mapping):
                raise self.fail(f"{here} must be a content block mapping ({_BLOCKS})")
            kind = block.get("type")
            if kind in _SKIPPED_BLOCKS:
                continue
            if kind in _TEXT_BLOCKS or (kind is None and "text" in block):
                pieces.append(text_of(block.get("text"), f"{here}.text", self.position))
            elif kind == "refusal":
                pieces.append(text_of(block.get("refusal"), f"{here}.refusal", self.position))
            elif kind in ("image_url", "input_image", "image"):
                images.append(self.image(block, here))
            elif kind in _CALL_BLOCKS:
                pieces.append(self.tool_use(block, here))
            elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
                self.flush(role, pieces, images, at=here)
                self.cut = True
                self.tool_result(block, here)
            else:
                raise self.fail(
                    f"{here} is a {kind!r} block, which cannot be judged here; give "
                    f"{_BLOCKS}, or leave it out"
                )
        return pieces

    def image(self, block: Mapping[Any, Any], at: str) -> Image:
        kind = block.get("type")
        try:
            if kind == "image":  # Anthropic: {"source": {"type": "base64" | "url", ...}}
                source = block.get("source")
                if not isinstance(source, Mapping):
                    raise ItemError("an image block needs a 'source'")
                if source.get("type") == "base64":
                    data = source.get("data")
                    return images_of(
                        [{"base64": data, "media_type": source.get("media_type")}],
                    )[0]
                if source.get("type") == "url" and isinstance(source.get("url"), str):
                    return Image.from_url(source["url"])
                raise ItemError(
                    f"its source type {source.get('type')!r} cannot be read here (a file "
                    "id names bytes only the vendor holds); give the image as base64 or a URL"
                )
            url = block.get("image_url")
            if isinstance(url, Mapping):
                url = url.get("url")
            if not isinstance(url, str):
                raise ItemError("an image_url part needs 'image_url': {'url': ...}")
            return Image.from_url(url)
        except ItemError as exc:
            message = str(exc).removeprefix("images[0]: ")
            raise self.fail(f"{at}: {message}") from None

    def tool_call(self, raw: object, at: str) -> CallDraft:
        call = tool_call_of(raw, at, self.position)
        return RunBuilder.call(
            call.name, call.arguments, call.id, result=call.result, error=call.error
        )

    def tool_use(self, block: Mapping[Any, Any], at: str) -> CallDraft:
        name = block.get("name")
        if not isinstance(name, str) or not name.strip():
            raise self.fail(f"{at}.name must be the tool's name")
        call_id = block.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise self.fail(f"{at}.id must be text")
        return RunBuilder.call(name, block.get("input"), call_id)

    def tool_result(self, block: Mapping[Any, Any], at: str) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            raise self.fail(f"{at}.tool_use_id must be the id of the tool_use it answers")
        flagged = block.get("is_error")
        if flagged is not None and not isinstance(flagged, bool):
            raise self.fail(f"{at}.is_error must be true or false")
        text, value, images = self.result_content(block.get("content"), f"{at}.content")
        error = answer_error(text, flagged=flagged)
        if error is None and isinstance(value, Mapping):  # a server tool's error object
            kind = value.get("type")
            if isinstance(kind, str) and kind.endswith("_error"):
                error = str(value.get("error_code") or kind)
        self.run.answer(
            call_id,
            None,
            error if error is not None and not text else text,
            value=value,
            error=error,
            images=images,
            where=at,
            position=self.position,
        )

    def result_content(self, value: object, at: str) -> tuple[str, Any, list[Image]]:
        """A result's text, its value (the text, or the JSON of blocks that are not text
        or images), and its images."""
        if value is None:
            return "", None, []
        if isinstance(value, str):
            return value, None, []
        if isinstance(value, Mapping):
            return compact_json(value), dict(value), []
        if not isinstance(value, Sequence) or isinstance(value, bytes):
            raise self.fail(f"{at} must be text or a list of blocks")
        texts: list[str] = []
        others: list[Any] = []
        images: list[Image] = []
        for index, block in enumerate(value):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if isinstance(block, str):
                texts.append(block)
            elif kind in _TEXT_BLOCKS and isinstance(block, Mapping):
                texts.append(text_of(block.get("text"), f"{at}[{index}].text", self.position))
            elif kind in ("image", "image_url", "input_image") and isinstance(block, Mapping):
                images.append(self.image(block, f"{at}[{index}]"))
            else:
                others.append(block)
        if others:
            return compact_json(others) if not texts else "\n".join(texts), others, images
        text = "\n".join(texts)
        if not text and images:
            text = f"[{len(images)} image{'s' if len(images) != 1 else ''}]"
        return text, None, images

    def tool_message(self, raw: Mapping[Any, Any], at: str, images: list[Image]) -> None:
        content = raw.get("content")
        if isinstance(content, Sequence) and not isinstance(content, (str, bytes)):
            text, value, found = self.result_content(content, f"{at}.content")
            images.extend(found)
        else:
            if content is not None and not isinstance(content, str):
                if not isinstance(content, Mapping):
                    raise self.fail(f"{at}.content must be the tool's result as text")
                content = compact_json(content)
            text, value = content or "", None
        flagged = raw.get("is_error")
        if flagged is not None and not isinstance(flagged, bool):
            raise self.fail(f"{at}.is_error must be true or false")
        error = answer_error(text, flagged=flagged)
        self.run.answer(
            raw.get("tool_call_id"),
            raw.get("name"),
            text,
            value=value,
            error=error,
            images=images,
            where=f"{at}.tool_call_id",
            position=self.position,
        )


def _tool_lines(tools: object, where: str) -> tuple[str, ...]:
    """``tools`` (OpenAI's ``{"type": "function", "function": {...}}``, or a flat
    ``{"name", "description"}`` as Anthropic and the Responses API write it) as
    ``"name: description"`` lines.

    Raises:
        ItemError: not a list of tool definitions with names.
    """
    if tools is None:
        return ()
    lines: list[str] = []
    for index, tool in enumerate(listed(tools, where, None)):
        spec = tool.get("function", tool) if isinstance(tool, Mapping) else None
        name = spec.get("name") if isinstance(spec, Mapping) else None
        if not isinstance(spec, Mapping) or not isinstance(name, str) or not name.strip():
            raise ItemError(
                f"{where}[{index}] must be a tool definition with a name "
                "({'type': 'function', 'function': {'name': ..., 'description': ...}})"
            )
        description = spec.get("description")
        first = description.strip().split("\n", 1)[0] if isinstance(description, str) else ""
        lines.append(f"{name}: {first}" if first else name)
    return tuple(lines)


def _read(
    messages: object,
    *,
    where: str,
    position: int | None = None,
    base_dir: Path | None = None,
    strict: bool,
    system: object = None,
) -> RunBuilder:
    builder = RunBuilder(strict=strict)
    reader = _Reader(builder, where, position, base_dir)
    if system is not None:
        pieces = reader.content(system, "system", "system", [])
        text = "\n".join(p for p in pieces if isinstance(p, str) and p)
        if text:
            builder.turn("system", text)
    reader.messages(messages)
    return builder


def read_openai_chat(messages: object, *, tools: object = None) -> Transcript:
    """The run in OpenAI chat-completions ``messages``.

    ``developer`` turns are read as ``system`` turns; an assistant's ``refusal`` as its
    text; ``tool`` messages answer the call whose ``tool_call_id`` they name (the legacy
    ``function`` role the earliest unanswered call of its ``name``); ``image_url`` parts
    become the turn's images (a ``data:`` URL decoded, an ``http(s)`` URL kept for the
    vendor to fetch). ``tools``, the definitions the model was offered, become
    :attr:`Transcript.tools`. Keys that say nothing a judge reads (``annotations``,
    ``audio``, ``reasoning_content``) are passed over.

    Raises:
        ItemError: not a list of messages, an empty one, an unknown role, key or content
            part, a tool message answering no earlier call, or a malformed image; the
            message names the place (``messages[3].content[1]``) and the fix.
    """
    lines = _tool_lines(tools, "tools")
    return _read(messages, where="messages", strict=True).build(tools=lines)


def read_anthropic_messages(
    messages: object, *, system: object = None, tools: object = None
) -> Transcript:
    """The run in Anthropic Messages ``messages`` (and the request's ``system``, text or
    text blocks, read as a first ``system`` turn).

    A user message's ``tool_result`` blocks become ``tool`` turns answering the
    ``tool_use`` of their ``tool_use_id`` (an error with ``is_error: true``), the rest of
    it a user turn; ``image`` blocks (base64 or URL source) the turn's images, in a
    result too; ``thinking`` and ``redacted_thinking`` blocks are skipped. A server
    tool's ``server_tool_use`` and ``*_tool_result`` blocks are read as a call and its
    result (an ``*_error`` result object as an error).

    Raises:
        ItemError: not a list of messages, an empty one, a block of another type
            (``document``, ...), an image given by file id, or a result answering no
            earlier call; the message names the place and the fix.
    """
    lines = _tool_lines(tools, "tools")
    return _read(messages, where="messages", strict=True, system=system).build(tools=lines)


def turns_of(
    value: object,
    *,
    where: str = "messages",
    position: int | None = None,
    base_dir: Path | None = None,
) -> tuple[Turn, ...]:
    """A conversation from a list of turns: :class:`Turn` objects, or mappings in the
    plain form (``{"role", "content"}``; an assistant turn's ``tool_calls`` as
    ``{"name", "arguments", "result" or "error", "id"}`` or OpenAI's ``{"function":
    {...}}``; ``images`` as :func:`~cross_judge.content.images_of` reads them, relative
    paths under ``base_dir``), OpenAI's (``image_url`` parts, ``tool`` turns) or
    Anthropic's (``tool_use``, ``tool_result`` and ``image`` blocks), read as
    :func:`read_openai_chat` and :func:`read_anthropic_messages` read them. Unlike them,
    a result whose call is not in the list is kept (a turn of its own).

    Raises:
        ItemError: not a list, an empty list, a turn of the wrong shape, or only system
            turns; the message names the turn (``messages[2].role``) and the fix.
    """
    builder = _read(value, where=where, position=position, base_dir=base_dir, strict=False)
    turns = builder.build().messages
    if all(turn.role == "system" for turn in turns):
        raise fail(f"{where!r} holds only system turns: give the conversation itself", position)
    return turns
