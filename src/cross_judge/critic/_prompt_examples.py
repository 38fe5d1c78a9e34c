"""Few-shot examples a prompt shows its judge: :class:`PromptExample`, and the block the
template's ``{examples}`` placeholder becomes.

An example is an item a person labelled: its text, the person's label and, optionally,
why. A prompt lists them under ``examples:`` and places them with ``{examples}`` in its
``user_prompt_template``; each is shown in the prompt's own answer format, the JSON object
its ``output`` fields ask for, fenced apart from the item judged, under one header line::

    Examples labelled by people:

    <example>
    The refund was issued twice.
    Answer: {"kind": "FAIL", "reasoning": "Labelled FAIL by a person."}
    </example>

The block is the same for every item, so it is put into the template once, when the prompt
is built (:func:`inline_examples`): the critic sends that text, and the prompt's digest
covers the examples. No examples: ``{examples}`` is empty.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, field_validator

from ._parsing import LABEL_KEYS, REASONING_KEYS, normalize_label
from ._template import Template

__all__ = [
    "EXAMPLES_FIELD",
    "EXAMPLES_HEADER",
    "PromptExample",
    "examples_block",
    "inline_examples",
]

EXAMPLES_FIELD = "examples"
"""The template placeholder the examples block fills."""

EXAMPLES_HEADER = "Examples labelled by people:\n\n"
"""The line the examples block opens with (and a blank line)."""


class PromptExample(BaseModel):
    """One labelled item a prompt shows as an example.

    Attributes:
        id: the item's id where it came from (a gold file's ``id``), for provenance.
        text: the item as the judge would see it.
        label: the person's label, normalised as an answer's label is; must be one of
            the prompt's ``labels`` when it has them.
        reasoning: why, shown as the example answer's reasoning; default
            ``"Labelled <label> by a person."``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    label: str
    reasoning: str | None = None

    @field_validator("text")
    @classmethod
    def _check_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an example's text is empty; give the item's text")
        return value

    @field_validator("label", mode="before")
    @classmethod
    def _check_label(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        label = normalize_label(value)
        if label is None:
            raise ValueError(f"{value!r} is not a usable label; labels are non-empty strings")
        return label


def _answer_keys(output: Sequence[str]) -> tuple[str, str | None]:
    """The label key and the reasoning key (``None``: not asked) of ``output``."""
    label_key = next(key for key in output if key.lower() in LABEL_KEYS)
    reasoning_key = next((key for key in output if key.lower() in REASONING_KEYS), None)
    return label_key, reasoning_key


def examples_block(examples: Sequence[PromptExample], output: Sequence[str]) -> str:
    """The text ``{examples}`` becomes: :data:`EXAMPLES_HEADER`, then one fenced block per
    example, in order, each with its answer as the JSON object of the prompt's ``output``
    (its label key, and its reasoning key when the prompt asks for one), separated by blank
    lines and ending with a line break; ``""`` for none."""
    label_key, reasoning_key = _answer_keys(output)
    blocks = []
    for example in examples:
        answer: dict[str, str] = {label_key: example.label}
        if reasoning_key is not None:
            answer[reasoning_key] = example.reasoning or f"Labelled {example.label} by a person."
        shown = json.dumps(answer, ensure_ascii=False)
        blocks.append(f"<example>\n{example.text.strip()}\nAnswer: {shown}\n</example>")
    if not blocks:
        return ""
    return EXAMPLES_HEADER + "\n\n".join(blocks) + "\n"


def inline_examples(template: Template, block: str) -> str:
    """``template``'s source with every ``{examples}`` replaced by ``block`` as literal
    text (its braces doubled), every other placeholder and doubled brace kept."""
    out: list[str] = []
    for literal, name in template.parts:
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if name == EXAMPLES_FIELD:
            out.append(block.replace("{", "{{").replace("}", "}}"))
        elif name is not None:
            out.append("{" + name + "}")
    return "".join(out)
