"""What sways a persona beyond its accuracy: a :class:`HiddenPolicy` (a rule of its own it
applies unless the prompt says otherwise) and anchoring on the few-shot examples a prompt
shows (:attr:`~._personas.Persona.anchoring`).

Together they give an offline target for alignment (rewriting a critic's prompt with
examples labelled by people): a persona with a policy disagrees with people on every
item mentioning its trigger until the prompt shows an example, or says in its
instructions, that such items are judged otherwise; and a persona that anchors copies the
label of a shown example on the same topic, so jurors shown the same examples err
together.

The prompt is read as cross-judge renders it (``cross_judge.critic``'s examples block)::

    <example>
    The refund was issued twice.
    Answer: {"kind": "FAIL", "reasoning": "Labelled FAIL by a person."}
    </example>

This module reads prompts and draws the sway; it decides nothing else (that is
:mod:`._decisions`) and speaks no HTTP. Every draw has its own seeded generator, so the
answers it does not change stay byte-identical.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ._protocol import message_text

if TYPE_CHECKING:
    from ._personas import Persona

__all__ = [
    "EXAMPLE_LABEL_KEYS",
    "HiddenPolicy",
    "PromptView",
    "ShownExample",
    "Sway",
    "check_trigger",
    "mentions",
    "read_prompt",
    "sway",
    "topic_of",
]

EXAMPLE_LABEL_KEYS: tuple[str, ...] = ("kind", "label", "verdict", "answer", "decision")
"""Keys of an example's answer object that hold its label, highest precedence first
(matched case-insensitively)."""

_TRIGGER = re.compile(r"[\w-]*[^\W_][\w-]*")  # letters, digits, _ and -, one letter or digit
_EXAMPLE = re.compile(r"<example>(.*?)</example>", re.DOTALL)
_ANSWER_PREFIX = "Answer:"
_SYSTEM_ROLES = frozenset({"system", "developer"})

_POLICY_REASONS = (
    "This is clearly a case for {kind}.",
    "Items like this one are {kind}.",
    "The item falls squarely under {kind}.",
)
_ANCHOR_REASONS = (
    "Like the labelled example it resembles, this is {kind}.",
    "It matches the shown example labelled {kind}.",
    "As in the similar example, the answer is {kind}.",
)


def check_trigger(trigger: object) -> None:
    """Raise ``ValueError`` unless ``trigger`` is a single word: letters, digits, ``_``
    and ``-``, at least one letter or digit."""
    if not isinstance(trigger, str) or _TRIGGER.fullmatch(trigger) is None:
        found = _TRIGGER.search(trigger) if isinstance(trigger, str) else None
        first = found.group() if found is not None else "refund"
        raise ValueError(
            "HiddenPolicy.trigger must be a single word (letters, digits, _ or -, matched "
            f"as a whole word, case-insensitively), got {trigger!r}; e.g. trigger={first!r}"
        )


@dataclass(frozen=True)
class HiddenPolicy:
    """A rule a persona applies that its prompt does not state: an item whose text holds
    the word ``trigger`` is answered ``answer``, whatever its truth.

    * ``trigger``: one word (letters, digits, ``_``, ``-``), matched case-insensitively
      as a whole word: ``"refund"`` matches ``"Refund issued."`` but not ``"refunds"`` or
      ``"refund-policy"``.
    * ``answer``: the label it answers; must be one of the persona's ``labels``
      (checked by :class:`Persona`).

    The policy is lifted (the persona answers as without it) for a prompt that shows
    otherwise: an example whose text holds the trigger with a label other than
    ``answer``, or instructions (the system prompt, or the user message outside the item
    and the examples) holding the trigger. Invalid values raise ``ValueError``.
    """

    trigger: str
    answer: str

    def __post_init__(self) -> None:
        check_trigger(self.trigger)
        if not isinstance(self.answer, str) or not self.answer:
            raise ValueError(
                f"HiddenPolicy.answer must be a non-empty label (one of the persona's "
                f"labels), got {self.answer!r}"
            )


class ShownExample(NamedTuple):
    """One ``<example>`` block a prompt shows: its text and its label."""

    text: str
    label: str


class PromptView(NamedTuple):
    """What a prompt shows besides its item: the examples, in order, and the instruction
    text (system prompt, then the last user message without the item and the examples)."""

    examples: tuple[ShownExample, ...]
    instructions: str


class Sway(NamedTuple):
    """An answer a policy or anchoring puts in place of a decision's."""

    kind: str
    confidence: float
    reasoning: str


def mentions(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word, case-insensitively (a word's
    neighbours are neither letters, digits, ``_`` nor ``-``)."""
    pattern = rf"(?<![\w-]){re.escape(word)}(?![\w-])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def topic_of(text: str) -> str:
    """The topic of a text: its first word holding a letter or digit, lower-cased, with
    leading and trailing punctuation and symbols stripped; ``""`` when there is none."""
    for token in text.split():
        word = _strip_punctuation(token).lower()
        if any(c.isalnum() for c in word):
            return word
    return ""


def _strip_punctuation(token: str) -> str:
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start])[0] in "PS":
        start += 1
    while end > start and unicodedata.category(token[end - 1])[0] in "PS":
        end -= 1
    return token[start:end]


def _example(block: str) -> ShownExample | None:
    """The example in one ``<example>`` block's body, else ``None``: no line starting
    with ``Answer:``, no text before it, an answer that is not a JSON object, or one
    without a label (a non-empty string, or an integer, under :data:`EXAMPLE_LABEL_KEYS`)."""
    lines = block.splitlines()
    at = next(
        (i for i in range(len(lines) - 1, -1, -1) if lines[i].lstrip().startswith(_ANSWER_PREFIX)),
        None,
    )
    if at is None:
        return None
    text = "\n".join(lines[:at]).strip()
    shown = "\n".join([lines[at].lstrip()[len(_ANSWER_PREFIX) :], *lines[at + 1 :]])
    try:
        answer = json.loads(shown)
    except ValueError:
        return None
    if not text or not isinstance(answer, dict):
        return None
    by_name = {str(key).lower(): value for key, value in reversed(answer.items())}
    for name in EXAMPLE_LABEL_KEYS:
        value = by_name.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return ShownExample(text, str(value))
        if isinstance(value, str) and value.strip():
            return ShownExample(text, value.strip())
    return None


def _system_text(body: Mapping[str, Any]) -> list[str]:
    """The system prompt's texts: Anthropic's ``system`` (a string or text blocks), then
    each chat message whose role is ``system`` or ``developer`` (a Responses request's
    ``instructions`` and developer items arrive as those)."""
    texts = [message_text(body.get("system"))]
    messages = body.get("messages")
    if isinstance(messages, list):
        texts.extend(
            message_text(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") in _SYSTEM_ROLES
        )
    return [t for t in texts if t]


def read_prompt(body: Mapping[str, Any], user_text: str) -> PromptView:
    """The examples and the instruction text of a request ``body`` whose last user
    message is ``user_text``.

    The item is the last ``<item>...</item>`` fence (as :func:`~._decisions.extract_item`
    finds it); examples are read outside it, so an item quoting an example block is not
    one. A message without an item fence is all item: no examples, and nothing of it in
    the instructions. A block that does not parse (:func:`_example`) is not an example
    but is still left out of the instructions.
    """
    end = user_text.rfind("</item>")
    start = user_text.rfind("<item>", 0, end) if end != -1 else -1
    after = end + len("</item>")
    rest = "" if start == -1 else user_text[:start] + "\n" + user_text[after:]
    examples = tuple(
        example
        for match in _EXAMPLE.finditer(rest)
        if (example := _example(match.group(1))) is not None
    )
    instructions = "\n".join([*_system_text(body), _EXAMPLE.sub("", rest)])
    return PromptView(examples, instructions)


def _vocabulary_label(label: str, labels: Sequence[str]) -> str:
    """``label`` as the vocabulary spells it when one of ``labels`` equals it ignoring
    case, else as shown."""
    folded = label.casefold()
    return next((x for x in labels if x.casefold() == folded), label)


def _swayed(rng: random.Random, persona: Persona, kind: str, reasons: tuple[str, ...]) -> Sway:
    """The answer ``kind`` with a confidence from the upper half of the persona's range
    and a reasoning naming it, drawn in that order from ``rng``."""
    lo, hi = persona.confidence
    confidence = rng.uniform((lo + hi) / 2, hi)
    return Sway(kind, confidence, rng.choice(reasons).format(kind=kind))


def sway(
    persona: Persona,
    model: str,
    digest: str,
    item: str,
    kind: str,
    body: Mapping[str, Any],
    user_text: str,
) -> Sway | None:
    """What ``persona`` (serving ``model``) answers instead of its decision ``kind`` for
    ``item`` (its draws seeded by ``digest``), given the request ``body`` and its last
    user message ``user_text``; ``None``: the decision stands.

    * The policy holds when the item mentions its trigger (:func:`mentions`) and the
      prompt does not show otherwise: no example mentioning the trigger has a label other
      than the policy's answer, and the instructions do not mention it. Then the answer
      is the policy's (``None`` when ``kind`` already is), and anchoring does not apply.
    * Otherwise, with ``anchoring`` > 0: the first shown example of the item's topic
      (:func:`topic_of`; an item without one resembles none), when its label (spelled as
      the vocabulary spells it, ignoring case) differs from ``kind``, is copied with
      probability ``anchoring``.

    The policy draws from ``random.Random(f"{seed}|{model}|{digest}|policy")``, anchoring
    from ``...|anchor``: the copy or not, then the confidence (upper half of
    ``persona.confidence``) and the reasoning.
    """
    policy = persona.policy
    view: PromptView | None = None
    if policy is not None and mentions(item, policy.trigger):
        view = read_prompt(body, user_text)
        trigger, answer = policy.trigger, policy.answer
        lifted = mentions(view.instructions, trigger) or any(
            mentions(example.text, trigger)
            and _vocabulary_label(example.label, persona.labels) != answer
            for example in view.examples
        )
        if not lifted:
            if kind == answer:
                return None
            rng = random.Random(f"{persona.seed}|{model}|{digest}|policy")
            return _swayed(rng, persona, answer, _POLICY_REASONS)
    if persona.anchoring <= 0:
        return None
    topic = topic_of(item)
    if not topic:
        return None
    if view is None:
        view = read_prompt(body, user_text)
    like = next((e for e in view.examples if topic_of(e.text) == topic), None)
    if like is None:
        return None
    label = _vocabulary_label(like.label, persona.labels)
    if label == kind:
        return None
    rng = random.Random(f"{persona.seed}|{model}|{digest}|anchor")
    if rng.random() >= persona.anchoring:
        return None
    return _swayed(rng, persona, label, _ANCHOR_REASONS)
