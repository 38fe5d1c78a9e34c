"""The JSON schema of a critic's answer, built from its prompt, for vendors that enforce one
(``Critic(structured="schema" | "tool" | "auto")``).

:func:`answer_schema` turns the fields a prompt asks for (``PromptSpec.output``; a critic
without a prompt file asks for ``kind``, ``confidence`` and ``reasoning``) and its labels
into an :class:`~cross_judge.transport.AnswerSchema`: the label key as an enum of the
labels (any string when the critic has none), ``confidence``/``certainty`` and ``score``
as numbers, every other field as a string; every field required and no other allowed, as
OpenAI's strict mode demands. The properties keep the prompt's order, so a model writes
them in the order the prompt asks for. Numeric bounds are said in the descriptions, not as
``minimum``/``maximum``, which some strict validators refuse; the parser clamps.

The schema is named after the prompt and its version (``pass-fail@2`` ->
``pass-fail_v2``; ``verdict`` without a prompt file), so a new prompt version is a new
schema, and it joins the request's cache key and the run manifest with the rest of the
request. Nothing here sends a request.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from ..transport import AnswerSchema
from ._parsing import LABEL_KEYS, REASONING_KEYS

__all__ = ["DEFAULT_OUTPUT", "answer_schema", "schema_name"]

DEFAULT_OUTPUT: tuple[str, ...] = ("kind", "confidence", "reasoning")
"""The fields asked of a critic without a prompt file (0.1's default template)."""

_NUMBER_FIELDS = {
    "confidence": "How sure you are of the label, from 0 to 1.",
    "certainty": "How sure you are of the label, from 0 to 1.",
    "score": "The score, from 0 to 1.",
}
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_NAME_MAX = 64  # OpenAI's json_schema name and Anthropic's tool name: ^[a-zA-Z0-9_-]{1,64}$


def schema_name(prompt_id: str | None, version: str | None) -> str:
    """The schema's name: ``<prompt id>_v<version>`` with any character a vendor refuses in
    a name replaced by ``_`` and cut to 64 characters; ``"verdict"`` without a prompt."""
    if not prompt_id:
        return "verdict"
    name = prompt_id if version is None else f"{prompt_id}_v{version}"
    return _NAME_CHARS.sub("_", name)[:_NAME_MAX] or "verdict"


def answer_schema(
    *,
    labels: Sequence[str] | None,
    output: Sequence[str] = DEFAULT_OUTPUT,
    name: str = "verdict",
    label_keys: Sequence[str] = LABEL_KEYS,
) -> AnswerSchema:
    """The schema of an answer giving ``output``'s fields, its label among ``labels``.

    The label property is the first of ``output`` that is one of ``label_keys`` (matched
    case-insensitively, in ``label_keys``' order of precedence); ``kind`` is added first
    when ``output`` names none.

    Built once per distinct input and then reused: a critic asks for its schema on every
    request.

    Raises:
        ValueError: ``output`` is empty or names a field twice.
    """
    return _schema(
        None if labels is None else tuple(labels), tuple(output), name, tuple(label_keys)
    )


@functools.lru_cache(maxsize=256)
def _schema(
    labels: tuple[str, ...] | None,
    output: tuple[str, ...],
    name: str,
    label_keys: tuple[str, ...],
) -> AnswerSchema:
    fields = [str(f) for f in output]
    if not fields:
        raise ValueError("an answer schema needs at least one output field")
    if len({f.lower() for f in fields}) != len(fields):
        raise ValueError(f"output names a field twice: {fields}")
    lowered = {f.lower(): f for f in fields}
    label_key = next((lowered[k.lower()] for k in label_keys if k.lower() in lowered), None)
    if label_key is None:
        label_key = "kind"
        fields.insert(0, label_key)
    reasoning = {k.lower() for k in REASONING_KEYS}
    properties: dict[str, Any] = {}
    for field_name in fields:
        if field_name == label_key:
            label: dict[str, Any] = {"type": "string", "description": "Your verdict."}
            if labels:
                label["enum"] = list(labels)
                label["description"] = "Your verdict: one of " + ", ".join(labels) + "."
            properties[field_name] = label
        elif field_name.lower() in _NUMBER_FIELDS:
            properties[field_name] = {
                "type": "number",
                "description": _NUMBER_FIELDS[field_name.lower()],
            }
        elif field_name.lower() in reasoning:
            properties[field_name] = {"type": "string", "description": "Why, briefly."}
        else:
            properties[field_name] = {"type": "string"}
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    # Canonical text, but the properties keep their order (sort_keys would reorder them).
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return AnswerSchema(name=name, text=text, label_key=label_key)
