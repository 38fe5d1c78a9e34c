"""What a persona reads in a prompt beyond the item's text: the conversation and
trajectory lines cross-judge renders, and the images a request carries.

The rendered format (``cross_judge.content``'s rendering) is read back line by line:
``[step N] call NAME(ARGS) -> RESULT`` (``-> ERROR: TEXT`` for a failed call),
``[step N] message: ...``, ``[step N] final answer: ...``, ``[turn N] ROLE: ...`` with an
assistant's tool calls on indented ``    call NAME(...)`` lines, continuation lines
indented by four spaces, and ``[… ... left out ...]`` markers. :func:`read_shown` makes a
:class:`Shown` of it; :func:`content_truth` is what a persona's content rules
(``forbidden_tools``, ``fail_unhandled_errors``, ``needs_context``, ``vision``; see
:class:`~._personas.Persona`) make of it. Everything here depends on the text the prompt
shows and the images the request carries, never on anything else: a judge shown only the
final answer sees no call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ._images import SeenImage
from ._personas import Persona

__all__ = [
    "ADMITS_FAILURE",
    "FOLLOW_UP_WORDS",
    "Call",
    "Shown",
    "content_truth",
    "is_bare_follow_up",
    "read_shown",
]

_INDENT = "    "
_STEP = re.compile(r"\[step (\d+)\] (.*)\Z", re.DOTALL)
_TURN = re.compile(
    r"\[turn (\d+)\] (user|assistant|system|tool(?: \([^)\n]*\))?):(?: (.*))?\Z", re.DOTALL
)
_CALL = re.compile(r"call ([^\s(]+)\(")
_ERROR = re.compile(r"\) -> ERROR: ")
_MARKER = "[\u2026 "

ADMITS_FAILURE = re.compile(
    r"\b(errors?|fail(?:s|ed|ure)?|could ?n[o']t|cannot|can't|unable|not able|sorry|"
    r"unfortunately)\b",
    re.IGNORECASE,
)
"""Words by which a final answer admits that something went wrong (an error is then
handled: reported, not hidden)."""

FOLLOW_UP_WORDS = frozenset(
    {
        "yes",
        "no",
        "yeah",
        "yep",
        "yup",
        "nope",
        "sure",
        "ok",
        "okay",
        "please",
        "correct",
        "right",
        "agreed",
        "go",
        "do",
        "y",
        "n",
    }
)
"""The first words of a bare follow-up reply (``"Yes"``, ``"No thanks"``, ``"Sure,
go ahead"``, ``"Please do"``): a reply that says nothing without the turn it answers."""

_FOLLOW_UP_MAX_WORDS = 3
_WORD = re.compile(r"[a-z']+")


def is_bare_follow_up(text: str) -> bool:
    """Whether ``text`` is a bare follow-up reply: 1 to 3 words, the first one of
    :data:`FOLLOW_UP_WORDS` (case and punctuation ignored)."""
    words = _WORD.findall(text.lower())
    return 0 < len(words) <= _FOLLOW_UP_MAX_WORDS and words[0] in FOLLOW_UP_WORDS


@dataclass(frozen=True)
class Call:
    """A tool call the prompt shows: its ``name``, whether it failed (``-> ERROR:``),
    and its ``position`` among the entries shown."""

    name: str
    error: bool
    position: int


@dataclass(frozen=True)
class _Entry:
    """One entry shown: a step, a turn, or a cut marker; its text with continuation
    lines joined (their indent removed)."""

    kind: Literal["step", "turn", "marker"]
    role: str
    text: str
    calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shown:
    """What a prompt shows of a conversation or trajectory, in order.

    ``calls``: every tool call (steps' and assistant turns' indented ones);
    ``final_answer``: the text of the last ``final answer`` step, else of the last
    assistant turn, with its position (``None``: none shown); ``last_user``: the text of
    the last user turn and whether the entry just before it is an assistant turn
    (``None``: no user turn shown).
    """

    calls: tuple[Call, ...] = ()
    final_answer: tuple[str, int] | None = None
    last_user: tuple[str, bool] | None = None
    entries: int = field(default=0)


def _entries(text: str) -> list[_Entry]:
    """The entries of the rendered lines in ``text`` (other lines are passed over)."""
    entries: list[_Entry] = []
    head: re.Match[str] | None = None
    lines: list[str] = []  # the current entry's continuation lines, unindented

    def flush() -> None:
        if head is None:
            return
        if head.re is _STEP:
            entries.append(_Entry("step", "", "\n".join([head.group(2), *lines])))
            return
        # A turn: its own text, then (an assistant's) tool calls on "call" lines.
        role = head.group(2)
        own: list[str] = [head.group(3) or ""]  # an assistant turn of tool calls only: ""
        calls: list[str] = []
        for line in lines:
            if role == "assistant" and _CALL.match(line):
                calls.append(line)
            elif not calls:  # after a call: that call's continuation
                own.append(line)
        entries.append(_Entry("turn", role, "\n".join(own), tuple(calls)))

    for line in text.replace("\r\n", "\n").split("\n"):
        if head is not None and line.startswith(_INDENT):
            lines.append(line[len(_INDENT) :])
            continue
        flush()
        head, lines = _STEP.match(line) or _TURN.match(line), []
        if head is None and line.startswith(_MARKER):
            entries.append(_Entry("marker", "", line))
    flush()
    return entries


def _call_of(text: str, position: int) -> Call | None:
    match = _CALL.match(text)
    if match is None:
        return None
    return Call(match.group(1), _ERROR.search(text) is not None, position)


def read_shown(text: str) -> Shown:
    """What ``text`` (a prompt) shows of a rendered conversation or trajectory; an empty
    :class:`Shown` when it shows none (a plain prompt)."""
    if "[step " not in text and "[turn " not in text:
        return Shown()  # the plain path: nothing to read
    entries = _entries(text)
    calls: list[Call] = []
    final: tuple[str, int] | None = None
    last_answer: tuple[str, int] | None = None
    last_user: tuple[str, bool] | None = None
    for position, entry in enumerate(entries):
        if entry.kind == "step":
            call = _call_of(entry.text, position)
            if call is not None:
                calls.append(call)
            elif entry.text.startswith("final answer: "):
                final = (entry.text[len("final answer: ") :], position)
        elif entry.kind == "turn":
            if entry.role == "assistant":
                last_answer = (entry.text, position)
                calls.extend(
                    call for c in entry.calls if (call := _call_of(c, position)) is not None
                )
            elif entry.role == "user":
                before = entries[position - 1] if position else None
                answered = (
                    before is not None and before.kind == "turn" and before.role == "assistant"
                )
                last_user = (entry.text, answered)
    return Shown(tuple(calls), final or last_answer, last_user, len(entries))


def _unhandled_error(shown: Shown) -> bool:
    """A failed call after which the final answer claims success: no later call of the
    same tool succeeded before it, and it admits no failure (:data:`ADMITS_FAILURE`)."""
    if shown.final_answer is None:
        return False
    answer, at = shown.final_answer
    if ADMITS_FAILURE.search(answer):
        return False
    for call in shown.calls:
        if not call.error or call.position >= at:
            continue
        retried = any(
            later.name == call.name and not later.error and call.position < later.position <= at
            for later in shown.calls
        )
        if not retried:
            return True
    return False


def content_truth(
    persona: Persona, user_text: str, images: Sequence[SeenImage] = ()
) -> tuple[str | None, str | None]:
    """The truth ``persona``'s content rules read in a request, and the rule that gave
    it: ``(label, rule)``, or ``(None, None)`` when no rule applies (the item's truth
    then comes from its gold label or text, as without the rules).

    First match wins: a call of one of ``persona.forbidden_tools`` (``fail_label``,
    ``"forbidden_tool"``); with ``fail_unhandled_errors``, an unhandled tool error
    (``fail_label``, ``"unhandled_error"``); with ``needs_context``, a last user turn that
    is a bare follow-up (:func:`is_bare_follow_up`) whose preceding entry shown is not an
    assistant turn (``fail_label``, ``"out_of_context"``); with ``vision="sees"``, the
    label the first image carrying one holds (``"image"``).
    """
    rules = persona.forbidden_tools or persona.fail_unhandled_errors or persona.needs_context
    if rules:
        shown = read_shown(user_text)
        forbidden = set(persona.forbidden_tools)
        if forbidden and any(call.name in forbidden for call in shown.calls):
            return persona.fail_label, "forbidden_tool"
        if persona.fail_unhandled_errors and _unhandled_error(shown):
            return persona.fail_label, "unhandled_error"
        if persona.needs_context and shown.last_user is not None:
            text, answered = shown.last_user
            if not answered and is_bare_follow_up(text):
                return persona.fail_label, "out_of_context"
    if persona.vision == "sees":
        for image in images:
            truth = image.truth
            if truth is not None:
                return truth, "image"
    return None, None
