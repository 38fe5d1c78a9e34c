"""Rubric requests to the simulated vendor, without HTTP: which criteria a request asks
about and in which mode, each (item, criterion)'s seed, truth and decision, the answer
holding several criteria, and :func:`rubric_items` (seeded per-criterion truths).

A rubric critic asks either about one criterion per request (``per_criterion``: its
requirement text is in the message) or about several at once (``one_call``: one
``- <id>: <requirement>`` line each, as cross-judge's ``{criteria}`` renders them). Each
(item, criterion) is its own draw, so a criterion gets the same answer in either mode.
What a server knows (the criteria, the truths, counters) is passed in, as in
:mod:`._decisions`; putting an answer on the wire is :mod:`._answers`' job.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from ._decisions import Decision, decide
from ._personas import Persona
from ._structured import structured_answer

__all__ = [
    "CRITERIA_LABELS",
    "CriterionAnswer",
    "RubricAsk",
    "checked_criteria",
    "checked_criteria_gold",
    "checked_criteria_labels",
    "criteria_object",
    "criterion_digest",
    "criterion_key",
    "criterion_persona",
    "latent_truth",
    "render_criteria",
    "rubric_ask",
    "rubric_items",
]

CRITERIA_LABELS = ("PASS", "FAIL")
"""The default scale of a criterion: met, not met."""


class RubricAsk(NamedTuple):
    """What a rubric request asks: ``mode`` and the criterion ids, in the order asked."""

    mode: Literal["per_criterion", "one_call"]
    ids: tuple[str, ...]


class CriterionAnswer(NamedTuple):
    """A persona's answer on one criterion of a ``one_call`` request, and its truth."""

    criterion_id: str
    decision: Decision
    truth: str


def checked_criteria(criteria: Mapping[str, str] | None) -> dict[str, str]:
    """``criteria`` as ``{id: requirement}`` with the requirements stripped; ``ValueError``
    for an empty id or requirement, or a requirement shared by two criteria (a request
    could not say which one it asks about)."""
    out: dict[str, str] = {}
    for cid, requirement in (criteria or {}).items():
        if not isinstance(cid, str) or not cid.strip():
            raise ValueError(
                f"criteria must map criterion ids (non-empty text) to texts, got {cid!r}"
            )
        if not isinstance(requirement, str) or not requirement.strip():
            raise ValueError(
                f"criteria[{cid!r}] must be the criterion's requirement text, as the prompt "
                f"shows it, got {requirement!r}"
            )
        out[cid] = requirement.strip()
    seen: dict[str, str] = {}
    for cid, requirement in out.items():
        if requirement in seen:
            raise ValueError(
                f"criteria {seen[requirement]!r} and {cid!r} share the requirement "
                f"{requirement!r}; give each criterion its own text"
            )
        seen[requirement] = cid
    return out


def checked_criteria_labels(labels: Sequence[str]) -> tuple[str, ...]:
    """``labels`` as a tuple; ``ValueError`` unless it holds two or more distinct texts."""
    out = tuple(labels)
    if len(out) < 2 or not all(isinstance(x, str) and x for x in out) or len(set(out)) != len(out):
        raise ValueError(
            f"criteria_labels must be two or more distinct labels (the rubric's scale, e.g. "
            f"('PASS', 'FAIL')), got {labels!r}"
        )
    return out


def checked_criteria_gold(
    gold: Mapping[str, Mapping[str, str]] | None,
    criteria: Mapping[str, str],
    labels: Sequence[str],
) -> dict[str, dict[str, str]]:
    """``gold`` (item text -> {criterion id: label}) with item texts stripped; ``ValueError``
    naming the fix for gold without ``criteria``, an unknown criterion id or a label off
    the scale."""
    if gold and not criteria:
        raise ValueError(
            "criteria_gold needs criteria={id: requirement text}: the simulator finds the "
            "criterion a request asks about by its requirement text"
        )
    out: dict[str, dict[str, str]] = {}
    for item, truths in (gold or {}).items():
        if not isinstance(truths, Mapping):
            raise ValueError(
                f"criteria_gold must map item texts to {{criterion id: label}}, got "
                f"{truths!r} for item {item!r}"
            )
        for cid, label in truths.items():
            if cid not in criteria:
                raise ValueError(
                    f"criteria_gold of item {item!r} names criterion {cid!r}, which is not "
                    f"among the criteria {sorted(criteria)}; add it to criteria or fix the id"
                )
            if label not in labels:
                raise ValueError(
                    f"criteria_gold of item {item!r} gives criterion {cid!r} the label "
                    f"{label!r}, not one of criteria_labels {list(labels)}; fix the label or "
                    "set criteria_labels to the rubric's scale"
                )
        out[item.strip()] = dict(truths)
    return out


def rubric_ask(user_text: str, criteria: Mapping[str, str]) -> RubricAsk | None:
    """Which criteria ``user_text`` asks about, else ``None`` (not a rubric request).

    ``one_call`` when it holds ``- <id>: <requirement>`` lines of configured criteria:
    those, in the order they appear. Else ``per_criterion`` when it holds a configured
    requirement text: the criterion with the longest one found (so a requirement that
    contains another wins), the first configured on a tie. A ``per_criterion`` template
    that writes its criterion as such a line is read as ``one_call`` of one criterion.
    """
    listed = [
        (at, cid)
        for cid, requirement in criteria.items()
        if (at := user_text.find(f"- {cid}: {requirement}")) != -1
    ]
    if listed:
        return RubricAsk("one_call", tuple(cid for _, cid in sorted(listed)))
    found = [cid for cid, requirement in criteria.items() if requirement in user_text]
    if not found:
        return None
    return RubricAsk("per_criterion", (max(found, key=lambda cid: len(criteria[cid])),))


def criterion_digest(item: str, criterion_id: str) -> str:
    """sha256 of the item and criterion (JSON, so unambiguous): seeds the draw of one
    (item, criterion) and stands for the item in fault and resample counters."""
    return hashlib.sha256(json.dumps([item, criterion_id]).encode()).hexdigest()


def criterion_key(item: str, criterion_id: str) -> str:
    """The text an (item, criterion) is keyed by for difficulty and distractor draws, so
    each criterion of an item has its own (see :func:`~._decisions.seeded_difficulty`)."""
    return json.dumps([item, criterion_id])


def latent_truth(digest: str, labels: Sequence[str]) -> str:
    """The truth of an (item, criterion) without gold: a label picked by its digest, so
    personas agree on it."""
    return labels[int(digest[:16], 16) % len(labels)]


def criterion_persona(persona: Persona, criterion_id: str, labels: tuple[str, ...]) -> Persona:
    """``persona`` as it answers ``criterion_id``: its accuracy on it
    (:meth:`Persona.accuracy_for`), the scale ``labels`` and no ``bias`` (a wrong answer
    is uniform among the other labels, on ordinal scales too)."""
    return dataclasses.replace(
        persona,
        accuracy=persona.accuracy_for(criterion_id),
        labels=labels,
        bias=None,
    )


def decide_criterion(
    persona: Persona,
    model: str,
    criterion_id: str,
    truth: str,
    seed_digest: str,
    labels: tuple[str, ...],
    *,
    difficulty: float,
    error_correlation: float,
    distractor_key: int,
) -> Decision:
    """:func:`~._decisions.decide` for one criterion (:func:`criterion_persona`)."""
    return decide(
        criterion_persona(persona, criterion_id, labels),
        model,
        truth,
        seed_digest,
        difficulty=difficulty,
        error_correlation=error_correlation,
        distractor_key=distractor_key,
    )


def _criterion_object(decision: Decision, confidence: Any) -> dict[str, Any]:
    return {"kind": decision.kind, "confidence": confidence, "reasoning": decision.reasoning}


def criteria_object(
    answers: Sequence[CriterionAnswer], schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``one_call`` answer object: ``{"criteria": {id: {"kind", "confidence",
    "reasoning"}}}`` for exactly ``answers``, in their order.

    With an enforced ``schema`` (or a forced tool's input schema) it conforms as a
    schema-enforcing vendor's answer does: its properties in its order, the criteria
    under its ``criteria`` property (matched case-insensitively; ``"criteria"`` when it
    has none), each criterion's object shaped by that criterion's schema (or the
    ``criteria`` object's ``additionalProperties`` schema) like a whole answer
    (:func:`~._structured.structured_answer`: the label under the label property, in its
    enum), other top-level properties filled as there from the first criterion's answer.
    """
    if schema is None:
        return {
            "criteria": {
                a.criterion_id: _criterion_object(a.decision, round(a.decision.confidence, 2))
                for a in answers
            }
        }
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    key = next((name for name in properties if name.lower() == "criteria"), "criteria")
    holder = properties.get(key)
    holder = holder if isinstance(holder, dict) else {}
    each = holder.get("properties")
    each = each if isinstance(each, dict) else {}
    extra = holder.get("additionalProperties")
    fallback = extra if isinstance(extra, dict) else {}
    criteria: dict[str, Any] = {}
    for a in answers:
        sub = each.get(a.criterion_id, fallback)
        sub = sub if isinstance(sub, dict) else {}
        confidence = round(a.decision.confidence, 2)
        if not isinstance(sub.get("properties"), dict):
            criteria[a.criterion_id] = _criterion_object(a.decision, confidence)
            continue
        criteria[a.criterion_id] = structured_answer(
            sub, a.decision.kind, confidence, a.decision.reasoning
        )[0]
    others = {name: spec for name, spec in properties.items() if name != key}
    if not others:
        return {key: criteria}
    # Other top-level properties (none in cross-judge's schema) are filled as a whole
    # answer's would be, from the first criterion's answer.
    first = answers[0].decision if answers else Decision("", 0.0, "", 0.0)
    filled, _ = structured_answer(
        {"properties": others}, first.kind, round(first.confidence, 2), first.reasoning
    )
    return {name: criteria if name == key else filled.get(name) for name in properties} | (
        {} if key in properties else {key: criteria}
    )


def render_criteria(style: str, answers: Sequence[CriterionAnswer], labels: Sequence[str]) -> str:
    """The text of a ``one_call`` answer in a persona's ``style``, as
    :func:`~._decisions.render` writes a verdict: ``"json"`` strict JSON; ``"fenced"`` in a
    ```json fence between sentences; ``"think"`` after a ``<think>`` block holding braces;
    ``"messy"`` confidences as percent strings and a trailing comma before the last ``}``.
    """
    if style == "messy":
        criteria = {
            a.criterion_id: _criterion_object(a.decision, f"{round(a.decision.confidence * 100)}%")
            for a in answers
        }
        return json.dumps({"criteria": criteria})[:-1] + ",}"
    obj = json.dumps(criteria_object(answers, None))
    if style == "fenced":
        return (
            "I reviewed the item against each criterion.\n\n"
            f"```json\n{obj}\n```\n\nThat is my final assessment."
        )
    if style == "think":
        options = ", ".join(labels)
        return (
            f"<think>\nEach criterion takes one of {{{options}}}; the answer is an object "
            f'like {{"criteria": ...}}.\n</think>\n{obj}'
        )
    return obj


def rubric_items(
    n_items: int,
    criteria_ids: Sequence[str],
    seed: int = 0,
    pass_rate: float = 0.5,
    labels: Sequence[str] = CRITERIA_LABELS,
) -> dict[str, dict[str, str]]:
    """``n_items`` item texts, each with a truth per criterion: the ``criteria_gold`` of a
    :class:`~cross_judge.testing.VendorServer` for a benchmark or a test.

    Items are ``"rubric item 0000 (seed S)"`` ..., numbered with at least four digits so
    that no text contains another (the server matches gold by substring too). Each
    (item, criterion) is the first label (``PASS``) with probability ``pass_rate``, else
    one of the others uniformly, from ``random.Random(seed)``: the same arguments give the
    same truths. ``n_items`` 0 gives ``{}``.

    Raises:
        ValueError: ``n_items`` < 0, no criterion id (or an empty or repeated one),
            ``pass_rate`` outside [0, 1], fewer than two distinct labels.
    """
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 0:
        raise ValueError(f"n_items must be an int >= 0, got {n_items!r}")
    ids = list(criteria_ids)
    if not ids or not all(isinstance(c, str) and c for c in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"criteria_ids must be distinct non-empty ids, got {criteria_ids!r}")
    if not (isinstance(pass_rate, (int, float)) and 0.0 <= pass_rate <= 1.0):
        raise ValueError(f"pass_rate must be a probability in [0, 1], got {pass_rate!r}")
    scale = checked_criteria_labels(labels)
    rng = random.Random(f"rubric_items|{seed}")
    width = max(4, len(str(n_items - 1)))
    out: dict[str, dict[str, str]] = {}
    for i in range(n_items):
        truths = {
            cid: scale[0] if rng.random() < pass_rate else rng.choice(scale[1:]) for cid in ids
        }
        out[f"rubric item {i:0{width}d} (seed {seed})"] = truths
    return out
