"""Per-turn and per-step results, as the views show them.

A panel that judges each turn or step of an item (a prompt with ``unit: turn`` or ``unit:
step``) gives a result whose criteria have the ids ``turn-<n>`` / ``step-<n>`` (``n`` from
1, the number the rendering showed the critics), or ``step-<n>.<criterion>`` when the
prompt also has criteria. :func:`unit_lines` reads them into :class:`UnitLine` objects;
:func:`split_lines` gives the sentences ``critics split on step 7: ...``;
:func:`stored_entry` and :func:`entry_text` find and write the turn or step a unit is
about, from what the results file stores (:class:`~cross_judge.verdict.ItemText`), in the
format the critics read (``call search({"q":"x"}) -> ERROR: timeout``).

Plain data, no HTML: the report, the labelling page, the notebook views and the
dataframes read these. A result without unit criteria gives nothing here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._criteria import criteria_grid

if TYPE_CHECKING:
    from ..rubric.models import CriterionConsensus, CriterionVerdict
    from ..verdict import EnsembleVerdict, ItemText

__all__ = [
    "UnitLine",
    "call_text",
    "entry_failed",
    "entry_text",
    "split_lines",
    "stored_entry",
    "unit_lines",
    "unit_of",
]

Unit = Literal["turn", "step"]

_UNIT_ID = re.compile(r"(turn|step)-([1-9][0-9]{0,8})(?:\.(.+))?", re.S)


def unit_of(criterion_id: str) -> tuple[Unit, int, str | None] | None:
    """``("step", 7, None)`` for ``"step-7"``, ``("step", 7, "correct")`` for
    ``"step-7.correct"``, ``("turn", 2, None)`` for ``"turn-2"``; ``None`` for any other
    id (an ordinary criterion, ``step-0``, ``step-07``)."""
    found = _UNIT_ID.fullmatch(criterion_id)
    if found is None:
        return None
    unit: Unit = "turn" if found[1] == "turn" else "step"
    return unit, int(found[2]), found[3]


@dataclass(frozen=True)
class UnitLine:
    """The panel's result on one turn or step (on one of its criteria when the prompt has
    criteria): ``unit`` (``"turn"``/``"step"``), ``number`` (from 1), ``criterion`` (the
    prompt's criterion, ``None`` for a plain ``step-<n>`` id), ``criterion_id`` (the id in
    ``EnsembleVerdict.criteria``), ``result`` and each critic's answer (``(critic,
    answer)`` in verdict order; ``None``: the critic gave no verdict on the item)."""

    unit: Unit
    number: int
    criterion: str | None
    criterion_id: str
    result: CriterionConsensus
    answers: tuple[tuple[str, CriterionVerdict | None], ...]

    @property
    def split(self) -> bool:
        """The critics' valid answers on it were not unanimous, or no vote decided it."""
        return self.result.disputed or self.result.fallback

    @property
    def name(self) -> str:
        """``"step 7"``, or ``"step 7 (correct)"`` with a criterion."""
        base = f"{self.unit} {self.number}"
        return base if self.criterion is None else f"{base} ({self.criterion})"

    def votes(self) -> str:
        """``"PASS 2 of 3 (against: b FAIL)"``, ``"PASS 3 of 3"``, or for a unit no vote
        decided ``"undecided (PASS 1, FAIL 1)"``."""
        valid = [(name, a) for name, a in self.answers if a is not None and a.is_valid]
        if self.result.fallback:
            counts: dict[str, int] = {}
            for _, answer in valid:
                counts[answer.kind] = counts.get(answer.kind, 0) + 1
            tally = ", ".join(f"{kind} {n}" for kind, n in counts.items()) or "no vote"
            return f"undecided ({tally})"
        consensus = self.result.consensus
        agree = sum(1 for _, a in valid if a.kind == consensus)
        against = ", ".join(f"{name} {a.kind}" for name, a in valid if a.kind != consensus)
        return f"{consensus} {agree} of {len(valid)}" + (
            f" (against: {against})" if against else ""
        )


def unit_lines(result: EnsembleVerdict) -> list[UnitLine]:
    """Every unit criterion of ``result`` as a :class:`UnitLine`: turns, then steps, by
    number, a step's criteria in the result's order; empty for a result without them."""
    if not result.criteria or not any(unit_of(cid) for cid in result.criteria):
        return []
    critics, grid = criteria_grid(result)
    found: list[tuple[tuple[int, int, int], UnitLine]] = []
    for order, line in enumerate(grid):
        parsed = unit_of(line.criterion)
        if parsed is None or line.result is None:
            continue
        unit, number, criterion = parsed
        found.append(
            (
                (0 if unit == "turn" else 1, number, order),
                UnitLine(
                    unit=unit,
                    number=number,
                    criterion=criterion,
                    criterion_id=line.criterion,
                    result=line.result,
                    answers=tuple(zip(critics, line.answers, strict=True)),
                ),
            )
        )
    return [line for _, line in sorted(found, key=lambda pair: pair[0])]


def split_lines(lines: Sequence[UnitLine]) -> list[str]:
    """``"critics split on step 7: PASS 2 of 3 (against: b FAIL)"``, one per split unit,
    in order; empty when the critics agreed on every unit."""
    return [f"critics split on {line.name}: {line.votes()}" for line in lines if line.split]


def stored_entry(stored: ItemText | None, unit: Unit, number: int) -> Mapping[str, Any] | None:
    """The stored turn or step numbered ``number`` (from 1); ``None`` when the result
    stores no such entry (no text stored, or left out past the cap)."""
    if stored is None:
        return None
    entries = stored.messages if unit == "turn" else stored.trajectory
    if not entries or not 1 <= number <= len(entries):
        return None
    return entries[number - 1]


def _json(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def call_text(call: Mapping[str, Any]) -> str:
    """A stored tool call as the critics read it: ``call NAME({json}) -> RESULT`` or
    ``-> ERROR: text``."""
    arguments = call.get("arguments")
    text = f"call {call.get('name', '?')}({'' if arguments is None else _json(arguments)})"
    if call.get("error") is not None:
        return text + f" -> ERROR: {call['error']}"
    if call.get("result") is not None:
        return text + f" -> {_json(call['result'])}"
    return text


def entry_text(unit: Unit, entry: Mapping[str, Any]) -> str:
    """A stored turn (``user: ...``, then a line per tool call) or step (``call ...``,
    ``message: ...``, ``final answer: ...``) as text, without its number."""
    if unit == "turn":
        role = str(entry.get("role", "?"))
        if role == "tool" and entry.get("name"):
            role = f"tool ({entry['name']})"
        lines = [f"{role}: {entry.get('content', '')}"]
        lines.extend(call_text(call) for call in entry.get("tool_calls") or ())
        return "\n".join(lines)
    kind = entry.get("kind")
    if kind == "tool_call":
        return call_text(entry)
    label = "final answer" if kind == "final_answer" else "message"
    return f"{label}: {entry.get('text', '')}"


def entry_failed(unit: Unit, entry: Mapping[str, Any]) -> bool:
    """The stored step is a tool call that failed, or the stored turn made one."""
    if unit == "turn":
        return any(call.get("error") is not None for call in entry.get("tool_calls") or ())
    return entry.get("kind") == "tool_call" and entry.get("error") is not None
