"""A persona's answer in a JSON schema the request enforces, as a schema-enforcing vendor
writes it (OpenAI ``json_schema`` strict, llama.cpp's grammar, Anthropic's forced tool or
output format): exactly the schema's properties, in its order, the label under the label
property and inside its ``enum``.

It builds the answer object only; choosing the label is :mod:`._decisions`' job and putting
the object on the wire :mod:`._answers`'.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["LABEL_PROPERTY_NAMES", "closest_label", "label_property", "structured_answer"]

LABEL_PROPERTY_NAMES = ("kind", "verdict", "label", "decision")
"""The property names read as the label when no property has an ``enum``, by precedence."""


def _properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def label_property(schema: Mapping[str, Any]) -> tuple[str, tuple[str, ...] | None]:
    """The property of ``schema`` holding the label, and its ``enum`` (``None``: any text).

    The first property whose schema has a non-empty ``enum``; else the first of
    :data:`LABEL_PROPERTY_NAMES` among the properties (case-insensitively); else the
    first property of type string; else ``"kind"`` (added to the answer).
    """
    properties = _properties(schema)
    for name, spec in properties.items():
        enum = spec.get("enum") if isinstance(spec, dict) else None
        if isinstance(enum, list) and enum:
            return name, tuple(str(v) for v in enum)
    lowered = {name.lower(): name for name in properties}
    for key in LABEL_PROPERTY_NAMES:
        if key in lowered:
            return lowered[key], None
    for name, spec in properties.items():
        if isinstance(spec, dict) and spec.get("type") == "string":
            return name, None
    return "kind", None


def closest_label(label: str, enum: Sequence[str]) -> str:
    """``label`` if ``enum`` holds it; else the enum value equal to it ignoring case; else
    the value most like it (``difflib``'s ratio, case-insensitive; the first on a tie).
    What a grammar-constrained model does with a label it may not write."""
    if label in enum:
        return label
    folded = label.casefold()
    for value in enum:
        if value.casefold() == folded:
            return value
    return max(
        enum,
        key=lambda v: difflib.SequenceMatcher(None, folded, v.casefold()).ratio(),
    )


def _value(spec: Any, confidence: float, reasoning: str) -> Any:
    kind = spec.get("type") if isinstance(spec, dict) else None
    if isinstance(kind, list):  # ["number", "null"] and the like: the first non-null
        kind = next((k for k in kind if k != "null"), None)
    enum = spec.get("enum") if isinstance(spec, dict) else None
    if isinstance(enum, list) and enum:
        return enum[0]
    if kind == "number":
        return confidence
    if kind == "integer":
        return round(confidence)
    if kind == "boolean":
        return True
    if kind == "object":
        return {}
    if kind == "array":
        return []
    return reasoning


def structured_answer(
    schema: Mapping[str, Any], label: str, confidence: float, reasoning: str
) -> tuple[dict[str, Any], str]:
    """The answer object for ``schema`` and the property holding its label.

    Every property of the schema, in its order: the label property
    (:func:`label_property`) holds ``label``, or its :func:`closest_label` in the enum;
    number properties the stated ``confidence``, integer ones it rounded (0 or 1);
    booleans ``true``; objects ``{}``; arrays ``[]``; other properties with an ``enum``
    its first value; everything else (strings) ``reasoning``. A schema without
    properties gives ``{"kind": label}``.
    """
    key, enum = label_property(schema)
    answer: dict[str, Any] = {}
    properties = _properties(schema)
    if key not in properties:
        answer[key] = None
    for name, spec in properties.items():
        answer[name] = None if name == key else _value(spec, confidence, reasoning)
    answer[key] = label if enum is None else closest_label(label, enum)
    return answer, key
