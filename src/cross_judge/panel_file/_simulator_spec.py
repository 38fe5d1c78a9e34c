"""The ``simulator:`` mapping of a panel file: :class:`SimulatorSpec`, its fields and the
checks made on them when the file is loaded.

Paths it names (items, gold labels, difficulties, strengths) are read by
:mod:`cross_judge.panel_file._simulation` into a :class:`SimulatorTruth`; a problem is
raised as a :class:`~._problems.FieldProblem` at its field, as the other specs of
:mod:`cross_judge.panel_file._schema` do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from ._problems import SPEC_CONFIG, FieldProblem, is_number, yaml_type
from ._simulation import (
    SimulatorTruth,
    gold_mapping,
    is_criteria_truth,
    read_strengths,
    read_truth,
    strengths_mapping,
)

__all__ = ["SimulatorSpec"]


class SimulatorSpec(BaseModel):
    """The ``simulator:`` mapping: settings of the :class:`~cross_judge.testing.VendorServer`
    that answers ``vendor: simulated`` critics (its arguments but those a run sets itself:
    personas, host, port, api_key, default_persona, count_items).

    ``max_request_bytes`` is the simulated vendor's request size limit (a larger live
    request gets the vendor's 413 or 400). ``items``, ``gold`` and ``difficulty`` given as
    paths are read when the file is loaded
    (relative to its folder; see :mod:`cross_judge.panel_file._simulation`), into
    :attr:`truth`.
    """

    model_config = SPEC_CONFIG

    error_correlation: float = Field(default=0.0, ge=0.0, lt=1.0)
    difficulty_seed: int = 0
    items: str | None = Field(default=None, min_length=1)
    gold: Any = None
    difficulty: Any = None
    better: Any = None
    capacity: int | None = Field(default=None, ge=1)
    batch_polls: int = Field(default=1, ge=0)
    batch_failure_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    batch_expiry_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    criteria: dict[str, str] | None = None
    criteria_gold: Any = None
    criteria_labels: list[str] | None = None
    strengths: Any = None
    tie_rate: float = Field(default=0.0, ge=0.0, lt=1.0)
    max_request_bytes: int | None = Field(default=None, ge=1)

    _truth: SimulatorTruth = PrivateAttr(default_factory=SimulatorTruth)

    @field_validator("gold")
    @classmethod
    def _gold(cls, value: Any) -> Any:
        mapping = gold_mapping(value, _GOLD_EXPECTED)
        for text, label in (mapping or {}).items():
            if not isinstance(label, str):
                raise FieldProblem(
                    (text,), f"expected a label (text), got {yaml_type(label)}; put it in quotes"
                )
        return value

    @field_validator("difficulty")
    @classmethod
    def _difficulty(cls, value: Any) -> Any:
        mapping = gold_mapping(value, _DIFFICULTY_EXPECTED)
        for text, number in (mapping or {}).items():
            if not (is_number(number) and 0.0 <= number <= 1.0):
                got = repr(number) if is_number(number) else yaml_type(number)
                raise FieldProblem(
                    (text,), f"expected a number in [0, 1] (0 easiest, 1 hardest), got {got}"
                )
        return value

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria(cls, value: Any) -> Any:
        if value is None or (
            isinstance(value, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
            and all(k and v.strip() for k, v in value.items())
        ):
            return value
        raise ValueError(
            "expected a mapping {criterion id: requirement text, as the rubric prompt shows "
            "it}, e.g. criteria: {cites: The answer cites a source.}; leave it out to take "
            "the simulated critics' rubric prompt"
        )

    @field_validator("criteria_gold")
    @classmethod
    def _criteria_gold(cls, value: Any) -> Any:
        mapping = gold_mapping(value, _CRITERIA_GOLD_EXPECTED)
        for text, truths in (mapping or {}).items():
            if not is_criteria_truth(truths):
                raise FieldProblem(
                    (text,),
                    "expected {criterion id: label}, e.g. {correct: PASS, cites: FAIL}, got "
                    f"{yaml_type(truths)}",
                )
        return value

    @field_validator("criteria_labels", mode="before")
    @classmethod
    def _criteria_labels(cls, value: Any) -> Any:
        if value is None or (
            isinstance(value, list)
            and len(value) >= 2
            and all(isinstance(v, str) and v for v in value)
            and len(set(value)) == len(value)
        ):
            return value
        raise ValueError(
            "expected two or more distinct labels, the rubric's scale, e.g. [PASS, FAIL]; "
            "leave it out to take the simulated critics' rubric prompt"
        )

    @field_validator("strengths")
    @classmethod
    def _strengths(cls, value: Any) -> Any:
        strengths_mapping(value)
        return value

    @field_validator("better")
    @classmethod
    def _better(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict) or not all(
            v is None or isinstance(v, str) for v in value.values()
        ):
            raise ValueError(
                "expected a mapping {query: the better answer's text, or null for a tie}, e.g. "
                'better: {"Capital of France?": "Paris."}'
            )
        return value

    @model_validator(mode="after")
    def _read_files(self, info: ValidationInfo) -> SimulatorSpec:
        if self.batch_failure_rate + self.batch_expiry_rate > 1.0:
            raise FieldProblem(
                ("batch_expiry_rate",),
                "batch_failure_rate + batch_expiry_rate must be at most 1 (they share each "
                f"request's draw), got {self.batch_failure_rate} + {self.batch_expiry_rate}",
            )
        if self.difficulty is not None and self.error_correlation == 0:
            raise FieldProblem(
                ("difficulty",),
                "matters only with error_correlation above 0 (difficulty moves every critic "
                "the same way); set error_correlation, e.g. 0.5, or remove difficulty",
            )
        if self.tie_rate > 0 and self.strengths is None:
            raise FieldProblem(
                ("tie_rate",),
                "applies only to pairs judged by strengths, and no candidate has one; give "
                "strengths: {CANDIDATE TEXT: STRENGTH} (or a file of them), or remove tie_rate",
            )
        context = info.context if isinstance(info.context, Mapping) else {}
        base_dir = Path(context.get("base_dir") or Path.cwd())
        strengths, strengths_file = read_strengths(self.strengths, base_dir)
        self._truth = read_truth(
            items=self.items,
            gold=self.gold,
            difficulty=self.difficulty,
            better=self.better,
            base_dir=base_dir,
            criteria_gold=self.criteria_gold,
        )
        if strengths:
            self._truth = dataclasses.replace(
                self._truth, strengths=strengths, strengths_file=strengths_file
            )
        return self

    @property
    def truth(self) -> SimulatorTruth:
        """What the simulator is told: gold labels, better answers, difficulties,
        candidates' strengths."""
        return self._truth


_GOLD_EXPECTED = (
    'the path of a gold file (JSONL lines {"id": ..., "label": ...}, the file '
    "cross-judge stats --gold reads; give items: too) or a mapping {item text: label}"
)
_CRITERIA_GOLD_EXPECTED = (
    'the path of a file of JSONL lines {"id": ..., "criteria": {"correct": "PASS"}} (give '
    "items: too) or a mapping {item text: {criterion id: label}}"
)
_DIFFICULTY_EXPECTED = (
    'the path of a file of JSONL lines {"id": ..., "difficulty": 0.7} (give '
    "items: too) or a mapping {item text: difficulty in [0, 1]}"
)
