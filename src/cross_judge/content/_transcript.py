"""A run read from another tool's format: :class:`Transcript`, and :class:`RunBuilder`,
which every reader (:mod:`._readers`, :mod:`._otlp`) assembles one with.

A run is read as events in order: system and user turns, assistant turns (their texts
and tool calls in the order said), and tool results, each answering the call with its
id (without one, the earliest unanswered call of its tool, or of any). From them the
builder makes both views of the run: the conversation (each result a ``tool`` turn) and
the agent steps (each call holding its result or error).

**When a tool result is an error** (:func:`answer_error`): when the format marks it
(Anthropic's ``is_error: true``; the same key on an OpenAI ``tool`` message), or when
its text is a JSON object with ``"is_error": true`` or a non-empty ``"error"`` (and no
``"is_error": false``). The error's text is that ``"error"`` value (compact JSON when it
is not text), else the result's text.

Nothing here reads a file or a URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ItemError
from ._model import FinalAnswer, Image, ModelMessage, Step, ToolCall, Turn, fail
from ._render import compact_json

__all__ = ["ITEM_FORMS", "CallDraft", "RunBuilder", "Transcript", "answer_error"]

ITEM_FORMS = ("conversation", "trajectory")
"""What an item made of a :class:`Transcript` may judge: its turns, or its agent steps."""


@dataclass(frozen=True)
class Transcript:
    """One conversation or agent run, read from another tool's format.

    Attributes:
        messages: the conversation; each tool result is a ``tool`` turn, and a call
            whose result was an error has the error's text as its ``error``.
        trajectory: the same run as agent steps: each tool call with its result (or
            error), the model's text between calls as messages, and its last text, when
            no call follows it, as the final answer (a run that ends on a call has none).
            User and system turns are not steps.
        images: every image of the turns, in order.
        tools: the tools the model was offered (``"name: description"``), when given.
        trace_id: the OpenTelemetry trace the run was read from (``None`` otherwise).
    """

    messages: tuple[Turn, ...] = ()
    trajectory: tuple[Step, ...] = ()
    images: tuple[Image, ...] = ()
    tools: tuple[str, ...] = ()
    trace_id: str | None = None

    @property
    def task(self) -> str | None:
        """The text of the first user turn that has some: what the run was asked."""
        return next((t.content for t in self.messages if t.role == "user" and t.content), None)

    def item_fields(self, form: str = "conversation") -> dict[str, Any]:
        """The fields of an item that judges this run: ``Item(**t.item_fields())``.

        ``form="conversation"``: ``messages`` (its images ride on the turns).
        ``form="trajectory"``: ``trajectory``, the ``images``, and ``context["task"]``
        (:attr:`task`, for a template's ``{task}``), since steps hold no user turn.
        Either form adds ``context["tools"]`` (one tool a line) when :attr:`tools` is
        given. The item's ``query`` then defaults to the final answer (or the last
        assistant turn).

        Raises:
            ItemError: an unknown form; a conversation of system turns only; a
                trajectory asked of a run with no assistant turn.
        """
        if form not in ITEM_FORMS:
            raise ItemError(f"form must be 'conversation' or 'trajectory', got {form!r}")
        context: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        if form == "conversation":
            if not any(turn.role != "system" for turn in self.messages):
                raise ItemError(
                    "the transcript holds no user or assistant turn: there is no "
                    "conversation to judge"
                )
            fields["messages"] = self.messages
        else:
            if not self.trajectory:
                raise ItemError(
                    "the transcript has no agent steps (no assistant turn or tool call); "
                    "judge it as a conversation (form='conversation')"
                )
            fields["trajectory"] = self.trajectory
            if self.images:
                fields["images"] = self.images
            if self.task is not None:
                context["task"] = self.task
        if self.tools:
            context["tools"] = "\n".join(self.tools)
        if context:
            fields["context"] = context
        return fields


# -- assembling a run ------------------------------------------------------------------------


@dataclass(eq=False)
class CallDraft:
    """A tool call being read (:meth:`RunBuilder.call` makes one): what the call said,
    then what answered it."""

    name: str
    arguments: Any = None
    id: str | None = None
    given_result: Any = None  # on the call itself (the plain form)
    given_error: str | None = None
    result: Any = None  # from the tool turn that answered it
    error: str | None = None
    answered: bool = False


@dataclass(eq=False)
class _TurnDraft:
    role: str
    content: str = ""
    calls: list[CallDraft] = field(default_factory=list)
    name: str | None = None
    tool_call_id: str | None = None
    images: tuple[Image, ...] = ()
    ready: Turn | None = None  # a Turn object given as it is


class RunBuilder:
    """Assembles a :class:`Transcript` from a run's events in order: turns, tool calls,
    and the results that answer them (the readers of every format use it).

    A result answers the call with its id; without an id, the earliest unanswered call
    of its tool's name (or of any name). ``strict``: a result naming an id no earlier
    call has is an error (as the vendors' APIs say); otherwise it is kept, as a turn and
    as a tool call step of its own.
    """

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self._turns: list[_TurnDraft] = []
        self._steps: list[str | CallDraft] = []
        self._by_id: dict[str, CallDraft] = {}
        self._open: list[CallDraft] = []

    def turn(
        self, role: str, content: str = "", images: Sequence[Image] = (), name: str | None = None
    ) -> None:
        """A system or user turn (``name``: the speaker's, when the format gives one)."""
        self._turns.append(_TurnDraft(role, content, name=name, images=tuple(images)))

    def given(self, turn: Turn) -> None:
        """A :class:`Turn` object, kept as it is (its calls and results read from it)."""
        draft = _TurnDraft(turn.role, turn.content, ready=turn)
        if turn.role == "tool":
            error = answer_error(turn.content)
            self._answer(turn.tool_call_id, turn.name, turn.content, None, error, None, (), draft)
            return
        self._turns.append(draft)
        if turn.role == "assistant":
            self._speak(turn.content)
            for call in turn.tool_calls:
                answered = call.result is not None or call.error is not None
                given = CallDraft(call.name, call.arguments, call.id, call.result, call.error)
                given.answered = answered
                self._call(given, draft)

    def assistant(
        self,
        pieces: Sequence[str | CallDraft],
        images: Sequence[Image] = (),
        name: str | None = None,
    ) -> None:
        """An assistant turn: its texts and calls (see :meth:`call`) in the order said."""
        draft = _TurnDraft("assistant", name=name, images=tuple(images))
        texts: list[str] = []
        for piece in pieces:
            if isinstance(piece, str):
                if piece:
                    texts.append(piece)
                    self._speak(piece)
            else:
                self._call(piece, draft)
        draft.content = "\n".join(texts)
        self._turns.append(draft)

    @staticmethod
    def call(
        name: str,
        arguments: Any = None,
        call_id: str | None = None,
        *,
        result: Any = None,
        error: str | None = None,
    ) -> CallDraft:
        """A tool call for :meth:`assistant`; ``result``/``error`` when the call itself
        carries them."""
        answered = result is not None or error is not None
        return CallDraft(name, arguments, call_id, result, error, answered=answered)

    def answer(
        self,
        call_id: str | None,
        name: str | None,
        content: str,
        *,
        value: Any = None,
        error: str | None = None,
        images: Sequence[Image] = (),
        arguments: Any = None,
        where: str = "",
        position: int | None = None,
    ) -> None:
        """A tool's result (``value``, default its ``content`` text) or ``error``, as a
        ``tool`` turn answering its call; ``arguments`` for a result whose call was not
        seen (an OpenTelemetry tool span).

        Raises:
            ItemError: ``strict`` and ``call_id`` names no earlier call.
        """
        if self.strict and call_id is not None and call_id not in self._by_id:
            raise fail(
                f"{where}: answers tool call {call_id!r}, which no earlier assistant turn "
                "made; give the assistant turn that made the call first",
                position,
            )
        self._answer(call_id, name, content, value, error, arguments, images)

    def answered(self, call_id: str) -> bool:
        """A result for the call ``call_id`` was read already."""
        call = self._by_id.get(call_id)
        return call is not None and call.answered

    def known(self, call_id: str) -> bool:
        """A call with id ``call_id`` was read."""
        return call_id in self._by_id

    def _speak(self, text: str) -> None:
        if text.strip():
            self._steps.append(text)

    def _call(self, call: CallDraft, draft: _TurnDraft) -> None:
        draft.calls.append(call)
        self._steps.append(call)
        if call.id is not None:
            self._by_id.setdefault(call.id, call)
        if not call.answered:
            self._open.append(call)

    def _answer(
        self,
        call_id: str | None,
        name: str | None,
        content: str,
        value: Any,
        error: str | None,
        arguments: Any,
        images: Sequence[Image] = (),
        turn: _TurnDraft | None = None,
    ) -> None:
        call = self._find(call_id, name)
        result = content if value is None else value
        if call is None:
            orphan = CallDraft(name or "tool", arguments, call_id, answered=True)
            orphan.result, orphan.error = (None, error) if error is not None else (result, None)
            self._steps.append(orphan)
            if call_id is not None:
                self._by_id[call_id] = orphan
        elif not call.answered:
            call.answered = True
            if error is not None:
                call.error = error
            else:
                call.result = result
            if call in self._open:
                self._open.remove(call)
            name = name or call.name
        if turn is None:
            turn = _TurnDraft("tool", content, name=name, tool_call_id=call_id)
            turn.images = tuple(images)
        self._turns.append(turn)

    def _find(self, call_id: str | None, name: str | None) -> CallDraft | None:
        if call_id is not None:
            return self._by_id.get(call_id)
        for call in self._open:
            if name is None or call.name == name:
                return call
        return None

    def build(self, *, tools: Sequence[str] = (), trace_id: str | None = None) -> Transcript:
        """The run read so far."""
        turns: list[Turn] = []
        for draft in self._turns:
            if draft.ready is not None:
                turns.append(draft.ready)
                continue
            calls = tuple(
                ToolCall(
                    name=c.name,
                    arguments=c.arguments,
                    id=c.id,
                    result=c.given_result,
                    error=c.given_error if c.given_error is not None else c.error,
                )
                for c in draft.calls
            )
            turns.append(
                Turn.model_validate(
                    {
                        "role": draft.role,
                        "content": draft.content,
                        "tool_calls": calls,
                        "name": draft.name,
                        "tool_call_id": draft.tool_call_id,
                        "images": draft.images,
                    }
                )
            )
        steps: list[Step] = []
        for entry in self._steps:
            if isinstance(entry, str):
                steps.append(ModelMessage(text=entry))
                continue
            error = entry.given_error if entry.given_error is not None else entry.error
            result = entry.given_result if entry.given_result is not None else entry.result
            steps.append(
                ToolCall(
                    name=entry.name,
                    arguments=entry.arguments,
                    id=entry.id,
                    result=None if error is not None else result,
                    error=error,
                )
            )
        if steps and isinstance(steps[-1], ModelMessage):
            steps[-1] = FinalAnswer(text=steps[-1].text)
        images = tuple(image for turn in turns for image in turn.images)
        return Transcript(tuple(turns), tuple(steps), images, tuple(tools), trace_id)


def answer_error(text: str, *, flagged: bool | None = None) -> str | None:
    """The error's text when a tool result is an error (see the module docstring), else
    ``None``: ``flagged`` is the format's own mark (``is_error``; ``None`` when it has
    none), ``text`` the result."""
    if flagged is False:
        return None
    parsed: object = None
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
    if isinstance(parsed, Mapping):
        marked = parsed.get("is_error")
        said = parsed.get("error")
        if marked is False and not flagged:
            return None
        if flagged or marked is True or _present(said):
            return _error_text(said, text)
        return None
    if flagged:
        return text if text.strip() else "error"
    return None


def _present(value: object) -> bool:
    """An ``"error"`` value that says something (not null, false or empty)."""
    if value is None or value is False:
        return False
    return not (isinstance(value, (str, Mapping, list)) and not value)


def _error_text(said: object, text: str) -> str:
    if isinstance(said, str) and said.strip():
        return said
    if _present(said):
        return compact_json(said)
    return text if text.strip() else "error"
