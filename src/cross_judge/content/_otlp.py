"""Reading OpenTelemetry GenAI spans, exported as OTLP JSON, into runs: one per trace.

The input is what an OTLP/HTTP JSON exporter sends or the collector's file exporter
writes: ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``, one such document or
several (a list, or JSON Lines); attributes as ``{"key", "value": {"stringValue" |
"intValue" | "doubleValue" | "boolValue" | "arrayValue" | "kvlistValue" | "bytesValue"}}``.
The snake_case spelling (``resource_spans``, ``string_value``) is read too.

Two kinds of span make a run, following the GenAI semantic conventions; the others
(``invoke_agent``, cross-judge's ``cross_judge.judge`` and ``cross_judge.batch``, HTTP
spans) are passed over:

* **chat** (``gen_ai.operation.name`` ``chat`` / ``text_completion`` /
  ``generate_content``): ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages``, JSON text of messages with ``parts`` (``text``,
  ``tool_call``, ``tool_call_response``, and images as ``blob`` or ``uri``; ``reasoning``
  and ``file`` parts are skipped). A call's input usually repeats the conversation so
  far: only what is new is added (when the input does not start with the conversation
  read so far, all of it is: a new exchange, as each of cross-judge's critic calls is).
* **execute_tool**: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``; an error status
  (``status.code`` 2) or an ``error.type`` attribute makes the call an error (its text:
  the status message, else the error type). The span answers the model's call of the
  same id (else the earliest unanswered call of that tool); a tool span with no call
  seen is a step of its own, with its arguments.

Spans are taken in order of start time (ties in file order). Message content is on spans
only when the application recorded it: cross-judge and most instrumentations do so only
with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ItemError
from ._model import Image
from ._render import compact_json
from ._transcript import RunBuilder, Transcript, answer_error

__all__ = ["read_otlp_json"]

_CHAT_OPERATIONS = ("chat", "text_completion", "generate_content")
_FIX = (
    "export the spans as OTLP JSON ({'resourceSpans': [{'scopeSpans': [{'spans': "
    "[...]}]}]}, as the collector's file exporter or an OTLP/HTTP JSON exporter writes)"
)
_VALUE_KEYS = (
    "stringValue",
    "intValue",
    "doubleValue",
    "boolValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
)


@dataclass(frozen=True)
class _Span:
    trace_id: str
    name: str
    start: int
    order: int
    attributes: dict[str, Any]
    failed: bool
    status_message: str
    where: str


def _get(mapping: Mapping[str, Any], camel: str) -> Any:
    """``mapping[camel]``, or its snake_case spelling."""
    if camel in mapping:
        return mapping[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return mapping.get(snake)


def _list(value: object, where: str, what: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ItemError(f"{where} must be a list of {what}; {_FIX}")
    return value


def read_otlp_json(data: object) -> list[Transcript]:
    """The runs in OpenTelemetry spans exported as OTLP JSON: one :class:`Transcript`
    per trace that holds a chat span with messages or a tool span (its ``trace_id``
    set), in order of their first span's start.

    ``data``: one export document (a mapping), a list of them, or their JSON text (one
    document, or JSON Lines of them). A trace split across documents is one run.

    Raises:
        ItemError: text that is not JSON; a document, span or attribute of the wrong
            shape, named by its path (``resourceSpans[0].scopeSpans[1].spans[3]``, after
            ``document 2:`` when there are several); message attributes that are not JSON
            messages; or no trace with anything to read (the message says how to record
            message content).
    """
    documents = _documents(data)
    spans: list[_Span] = []
    for number, document in enumerate(documents):
        prefix = f"document {number + 1}: " if len(documents) > 1 else ""
        spans.extend(_spans_of(document, prefix, len(spans)))
    traces: dict[str, list[_Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    runs: list[tuple[int, Transcript]] = []
    for trace_id, members in traces.items():
        members.sort(key=lambda s: (s.start, s.order))
        transcript = _run(trace_id, members)
        if transcript is not None:
            runs.append((members[0].start, transcript))
    if not runs:
        raise ItemError(
            f"none of the {len(traces)} traces holds a chat span with messages or an "
            "execute_tool span: chat spans need gen_ai.input.messages or "
            "gen_ai.output.messages, which cross-judge and most instrumentations record only "
            "with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"
        )
    runs.sort(key=lambda pair: pair[0])
    return [transcript for _, transcript in runs]


def _documents(data: object) -> list[Mapping[str, Any]]:
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ItemError("the OTLP JSON is not UTF-8 text") from None
    if isinstance(data, str):
        text = data
        try:
            data = json.loads(text)
        except ValueError:
            lines: list[Any] = []
            for number, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    lines.append(json.loads(line))
                except ValueError as exc:
                    raise ItemError(f"line {number} is not JSON ({exc}); {_FIX}") from None
            data = lines
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        raise ItemError(f"expected OTLP JSON, got {type(data).__name__}; {_FIX}")
    if not data:
        raise ItemError(f"the OTLP JSON holds no spans; {_FIX}")
    for number, document in enumerate(data):
        if not isinstance(document, Mapping) or _get(document, "resourceSpans") is None:
            where = f"document {number + 1}" if len(data) > 1 else "the document"
            raise ItemError(f"{where} has no 'resourceSpans'; {_FIX}")
    return list(data)


def _spans_of(document: Mapping[str, Any], prefix: str, first: int) -> list[_Span]:
    found: list[_Span] = []
    resources = _list(_get(document, "resourceSpans"), f"{prefix}resourceSpans", "resources")
    for r, resource in enumerate(resources):
        at = f"{prefix}resourceSpans[{r}]"
        if not isinstance(resource, Mapping):
            raise ItemError(f"{at} must be a mapping; {_FIX}")
        scopes = _get(resource, "scopeSpans")
        if scopes is None:
            scopes = _get(resource, "instrumentationLibrarySpans")  # before OTLP 0.15
        for s, scope in enumerate(_list(scopes, f"{at}.scopeSpans", "scopes")):
            here = f"{at}.scopeSpans[{s}]"
            if not isinstance(scope, Mapping):
                raise ItemError(f"{here} must be a mapping; {_FIX}")
            for n, raw in enumerate(_list(_get(scope, "spans"), f"{here}.spans", "spans")):
                found.append(_span(raw, f"{here}.spans[{n}]", first + len(found)))
    return found


def _span(raw: object, where: str, order: int) -> _Span:
    if not isinstance(raw, Mapping):
        raise ItemError(f"{where} must be a span mapping; {_FIX}")
    trace_id = _get(raw, "traceId")
    if not isinstance(trace_id, str) or not trace_id:
        raise ItemError(f"{where} has no traceId; {_FIX}")
    name = _get(raw, "name")
    if not isinstance(name, str):
        raise ItemError(f"{where}.name must be the span's name; {_FIX}")
    start = _get(raw, "startTimeUnixNano")
    try:
        started = int(start) if start is not None and not isinstance(start, bool) else 0
    except (TypeError, ValueError):
        raise ItemError(
            f"{where}.startTimeUnixNano must be nanoseconds (a whole number, as text or a "
            f"number), got {start!r}"
        ) from None
    attributes = _attributes(_get(raw, "attributes"), f"{where}.attributes")
    status = _get(raw, "status") or {}
    if not isinstance(status, Mapping):
        raise ItemError(f"{where}.status must be a mapping ({{'code': 2, 'message': ...}})")
    code = _get(status, "code")
    message = _get(status, "message")
    return _Span(
        trace_id=trace_id,
        name=name,
        start=started,
        order=order,
        attributes=attributes,
        failed=code in (2, "2", "STATUS_CODE_ERROR"),
        status_message=message if isinstance(message, str) else "",
        where=where,
    )


def _attributes(raw: object, where: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for index, entry in enumerate(_list(raw, where, "attributes")):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("key"), str):
            raise ItemError(f"{at} must be {{'key': ..., 'value': {{'stringValue': ...}}}}")
        found[entry["key"]] = _value(entry.get("value"), f"{at}.value")
    return found


def _value(raw: object, where: str) -> Any:
    """An OTLP ``AnyValue`` as a Python value (``{}``: ``None``)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ItemError(f"{where} must be an OTLP value ({{'stringValue': ...}}); {_FIX}")
    for key in _VALUE_KEYS:
        value = _get(raw, key)
        if value is None:
            continue
        if key == "intValue":
            try:
                return int(value)
            except (TypeError, ValueError):
                raise ItemError(f"{where}.intValue must be a whole number, got {value!r}") from None
        if key == "doubleValue":
            try:
                return float(value)
            except (TypeError, ValueError):
                raise ItemError(f"{where}.doubleValue must be a number, got {value!r}") from None
        if key == "arrayValue":
            items = _get(value, "values") if isinstance(value, Mapping) else None
            return [_value(v, f"{where}.arrayValue.values[{i}]") for i, v in enumerate(items or ())]
        if key == "kvlistValue":
            items = _get(value, "values") if isinstance(value, Mapping) else None
            return _attributes(items or (), f"{where}.kvlistValue.values")
        if key == "bytesValue":
            return value
        return value
    if raw:
        raise ItemError(
            f"{where} holds none of {', '.join(_VALUE_KEYS)} (keys {sorted(map(str, raw))}); {_FIX}"
        )
    return None


# -- a trace into a run -----------------------------------------------------------------------


def _is_chat(span: _Span) -> bool:
    operation = span.attributes.get("gen_ai.operation.name")
    if operation is None:
        return span.name.split(" ", 1)[0] in _CHAT_OPERATIONS
    return bool(operation in _CHAT_OPERATIONS)


def _is_tool(span: _Span) -> bool:
    operation = span.attributes.get("gen_ai.operation.name")
    if operation is None:
        return span.name.split(" ", 1)[0] == "execute_tool"
    return bool(operation == "execute_tool")


class _Trace:
    """One trace's spans, read into a :class:`RunBuilder`."""

    def __init__(self) -> None:
        self.run = RunBuilder(strict=False)
        self.history: list[tuple[Any, ...]] = []
        self.systems: set[str] = set()
        self.empty = True

    def chat(self, span: _Span) -> None:
        attributes = span.attributes
        where = f"{span.where}.attributes"
        system = attributes.get("gen_ai.system_instructions")
        if system is not None:
            parts = _json(system, f"{where}[gen_ai.system_instructions]")
            text = _system_text(parts, f"{where}[gen_ai.system_instructions]")
            if text and text not in self.systems:
                self.systems.add(text)
                self.run.turn("system", text)
                self.empty = False
        inputs = _events(attributes.get("gen_ai.input.messages"), f"{where}[gen_ai.input.messages]")
        outputs = _events(
            attributes.get("gen_ai.output.messages"), f"{where}[gen_ai.output.messages]"
        )
        keys = [event.key for event in inputs]
        continues = keys[: len(self.history)] == self.history
        new = inputs[len(self.history) :] if continues else inputs
        for event in [*new, *outputs]:
            self.emit(event)
        base = [] if continues else self.history
        self.history = [*base, *keys, *(event.key for event in outputs)]

    def emit(self, event: _Event) -> None:
        if event.role == "tool":
            if event.call_id is not None and self.run.answered(event.call_id):
                return  # a tool span (or an earlier input) gave its result already
            text = event.text
            self.run.answer(event.call_id, None, text, value=event.value, error=answer_error(text))
        elif event.role == "assistant":
            self.run.assistant(event.pieces, event.images)
        else:
            self.run.turn(event.role, event.text, event.images)
        self.empty = False

    def tool(self, span: _Span) -> None:
        attributes = span.attributes
        call_id = attributes.get("gen_ai.tool.call.id")
        call_id = str(call_id) if call_id is not None else None
        if call_id is not None and self.run.answered(call_id):
            return
        name = attributes.get("gen_ai.tool.name")
        if not isinstance(name, str) or not name:
            head, _, tail = span.name.partition(" ")
            name = tail.strip() if head == "execute_tool" and tail.strip() else "tool"
        result = attributes.get("gen_ai.tool.call.result")
        text = result if isinstance(result, str) else "" if result is None else compact_json(result)
        error_type = attributes.get("error.type")
        error: str | None = None
        if span.failed or error_type is not None:
            error = span.status_message or (str(error_type) if error_type else "") or text
            error = error or "error"
        else:
            error = answer_error(text)
        self.run.answer(
            call_id,
            name,
            error if error is not None and not text else text,
            value=result,
            error=error,
            arguments=attributes.get("gen_ai.tool.call.arguments"),
        )
        self.history.append(("tool", call_id if call_id is not None else text))
        self.empty = False


def _run(trace_id: str, spans: list[_Span]) -> Transcript | None:
    trace = _Trace()
    for span in spans:
        if _is_chat(span):
            trace.chat(span)
        elif _is_tool(span):
            trace.tool(span)
    if trace.empty:
        return None
    return trace.run.build(trace_id=trace_id)


@dataclass
class _Event:
    """One message of a chat span, or one tool result in it."""

    role: str
    text: str = ""
    pieces: tuple[Any, ...] = ()
    images: tuple[Image, ...] = ()
    call_id: str | None = None
    value: Any = None

    @property
    def key(self) -> tuple[Any, ...]:
        """What two spans' copies of one message share: its role, text and calls."""
        if self.role == "tool":
            return ("tool", self.call_id if self.call_id is not None else self.text)
        calls = tuple((p.id, p.name) for p in self.pieces if not isinstance(p, str))
        return (self.role, self.text, calls, tuple(i.sha256 for i in self.images))


def _json(value: object, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ItemError(f"{where} is not JSON ({exc}); record it as JSON text") from None
    return value


def _system_text(parts: object, where: str) -> str:
    texts = []
    for index, part in enumerate(_list(parts, where, "parts")):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text":
            texts.append(_content(part, f"{where}[{index}]"))
    return "\n".join(t for t in texts if t)


def _content(part: Mapping[str, Any], where: str) -> str:
    content = part.get("content")
    if not isinstance(content, str):
        raise ItemError(f"{where}.content must be text")
    return content


def _events(value: object, where: str) -> list[_Event]:
    """The messages of a ``gen_ai.input.messages`` / ``output.messages`` attribute."""
    if value is None:
        return []
    messages = _list(_json(value, where), where, "messages ({'role', 'parts'})")
    events: list[_Event] = []
    for index, message in enumerate(messages):
        at = f"{where}[{index}]"
        if not isinstance(message, Mapping):
            raise ItemError(f"{at} must be a message mapping ({{'role', 'parts'}})")
        role = message.get("role")
        role = "system" if role == "developer" else role
        if role not in ("system", "user", "assistant", "tool"):
            raise ItemError(f"{at}.role must be system, user, assistant or tool, got {role!r}")
        parts = message.get("parts")
        if parts is None and isinstance(message.get("content"), str):
            parts = [{"type": "text", "content": message["content"]}]
        events.extend(_message_events(role, _list(parts, f"{at}.parts", "parts"), at))
    return events


def _message_events(role: str, parts: Sequence[Any], where: str) -> list[_Event]:
    texts: list[str] = []
    pieces: list[Any] = []
    images: list[Image] = []
    answers: list[_Event] = []
    for index, part in enumerate(parts):
        at = f"{where}.parts[{index}]"
        if not isinstance(part, Mapping):
            raise ItemError(f"{at} must be a part mapping ({{'type': 'text', 'content': ...}})")
        kind = part.get("type")
        if kind == "text":
            text = _content(part, at)
            texts.append(text)
            pieces.append(text)
        elif kind == "tool_call":
            name = part.get("name")
            if not isinstance(name, str) or not name:
                raise ItemError(f"{at}.name must be the tool's name")
            call_id = part.get("id")
            pieces.append(
                RunBuilder.call(
                    name, part.get("arguments"), None if call_id is None else str(call_id)
                )
            )
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            text = response if isinstance(response, str) else compact_json(response)
            call_id = part.get("id")
            answers.append(
                _Event(
                    "tool",
                    text,
                    call_id=None if call_id is None else str(call_id),
                    value=response if not isinstance(response, str) else None,
                )
            )
        elif kind in ("blob", "uri") and _is_image(part):
            images.append(_image(part, at))
        # reasoning (hidden), file (an id only the vendor can read) and other parts: skipped
    events: list[_Event] = []
    if role == "tool" and not answers and texts:  # a tool message without response parts
        answers.append(_Event("tool", "\n".join(texts)))
    elif pieces or images or not answers:
        events.append(_Event(role, "\n".join(texts), tuple(pieces), tuple(images)))
    return events + answers


def _is_image(part: Mapping[str, Any]) -> bool:
    mime = part.get("mime_type")
    return part.get("modality") == "image" or (isinstance(mime, str) and mime.startswith("image/"))


def _image(part: Mapping[str, Any], where: str) -> Image:
    mime = part.get("mime_type")
    media_type = mime if isinstance(mime, str) else None
    try:
        if part.get("type") == "uri":
            uri = part.get("uri")
            if not isinstance(uri, str):
                raise ItemError("a uri part needs 'uri'")
            return Image.from_url(uri, media_type=media_type)
        content = part.get("content")
        if not isinstance(content, str):
            raise ItemError("a blob part needs its bytes as base64 text in 'content'")
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise ItemError("its 'content' is not valid base64") from None
        return Image.from_bytes(data, media_type=media_type)
    except ItemError as exc:
        raise ItemError(f"{where}: {exc}") from None
