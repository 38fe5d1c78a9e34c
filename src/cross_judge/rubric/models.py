"""The data of a rubric: its :class:`Criterion` list and scale (:class:`Rubric`), one
critic's answer on one criterion (:class:`CriterionVerdict`) and a panel's result on one
criterion (:class:`CriterionConsensus`).

Plain data: nothing here calls a vendor, parses an answer or votes (see
:mod:`cross_judge.rubric.tally` for the vote per criterion and
:mod:`cross_judge.critic._rubric` for the calls).

**The total.** A criterion's score is in [0, 1] (the scale's score of its label: ``PASS``
1, ``FAIL`` 0 by default). The weighted total of an item is the weights of the positive
criteria times their scores, minus the absolute weights of the negative criteria times
theirs, over the sum of the positive weights, clipped to [0, 1]. A criterion is *met*
when its score is at least :data:`MET_AT` (0.5); a gate criterion that is not met makes the
total 0 whatever the others say. An item passes when its total is at least the rubric's
``threshold`` (0.5 by default).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from ..errors import ConfigError, ErrorKind

__all__ = [
    "DEFAULT_SCALE",
    "MET_AT",
    "CriteriaMode",
    "Criterion",
    "CriterionConsensus",
    "CriterionVerdict",
    "Rubric",
    "Unit",
    "unit_of",
]

CriteriaMode = Literal["per_criterion", "one_call"]
"""How a rubric critic asks: one call per criterion, or one call for all of them."""

MET_AT = 0.5
"""A criterion whose score is at least this is met (for ``PASS``/``FAIL``: ``PASS``)."""

DEFAULT_SCALE: dict[str, float] = {"PASS": 1.0, "FAIL": 0.0}
"""The labels of a criterion and their scores when a rubric names no other scale."""

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_UNIT_ID = re.compile(r"^(turn|step)-([1-9][0-9]{0,8})(?:\.([A-Za-z_][A-Za-z0-9_-]{0,63}))?$")

Unit = Literal["turn", "step"]
"""What a unit rubric judges one by one: an item's assistant turns or its steps."""
_WEIGHT_PROBLEM = "weight must be a finite number other than 0 (negative subtracts), got {value!r}"


class Criterion(BaseModel):
    """One requirement of a rubric.

    Attributes:
        id: a short name (a letter or ``_``, then letters, digits, ``_`` or ``-``, at most
            64): the key of ``Verdict.criteria``, a results column and a JSON key in the
            answer of a ``one_call`` critic.
        requirement: what must hold, in words the judge is shown
            (``"The answer cites a source."``).
        weight: how much it counts; a negative weight subtracts when the criterion is met
            (``"The answer insults the reader."``, -2). Finite and not 0.
        gate: when True, failing this criterion makes the item's total 0. Only a positive
            criterion can be a gate.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    requirement: str
    weight: float = 1.0
    gate: bool = False

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _ID.match(value) and not _UNIT_ID.match(value):
            raise ValueError(
                f"criterion id {value!r} must start with a letter or _ and hold only letters, "
                "digits, _ and - (at most 64), e.g. 'cites_source'"
            )
        return value

    @field_validator("requirement")
    @classmethod
    def _check_requirement(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                "requirement must say what must hold, e.g. 'The answer cites a source.'"
            )
        return value.strip()

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_is_not_boolean(cls, value: Any) -> Any:
        # Before coercion, which would read True (a YAML ``weight: yes``) as 1.0.
        if isinstance(value, bool):
            raise ValueError(_WEIGHT_PROBLEM.format(value=value))
        return value

    @field_validator("weight")
    @classmethod
    def _check_weight(cls, value: float) -> float:
        if not math.isfinite(value) or value == 0:
            raise ValueError(_WEIGHT_PROBLEM.format(value=value))
        return value

    @model_validator(mode="after")
    def _gate_is_positive(self) -> Criterion:
        if self.gate and self.weight < 0:
            raise ValueError(
                f"criterion {self.id!r} is a gate with a negative weight; a gate is a "
                "requirement the item must meet, so give it a positive weight"
            )
        return self


class Rubric(BaseModel):
    """A list of criteria, the scale each is judged on, and the pass mark of the total.

    Attributes:
        criteria: at least one, ids unique, at least one with a positive weight.
        scale: label -> score in [0, 1], in the order of the scale (``PASS``/``FAIL`` by
            default; an ordinal scale such as ``{"1": 0, "2": 0.25, ..., "5": 1}``). Every
            criterion is judged on it; its labels are the critic's labels.
        threshold: an item's consensus is ``PASS`` when its total is at least this, else
            ``FAIL``.
        mode: ``"per_criterion"`` (one call per criterion) or ``"one_call"``.
        unit: ``"turn"`` or ``"step"`` for a prompt that judges each assistant turn or
            each step of an item (``unit:`` in the prompt file); ``None`` otherwise. A
            unit rubric's ``criteria`` are what each unit is judged on; an item's own
            rubric is :meth:`for_units`, one criterion per unit (and criterion).
        units: the unit numbers of an item's rubric made by :meth:`for_units` (1-based,
            as rendered); empty for the prompt's rubric itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    criteria: tuple[Criterion, ...]
    scale: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_SCALE))
    threshold: float = 0.5
    mode: CriteriaMode = "per_criterion"
    unit: Unit | None = None
    units: tuple[int, ...] = ()

    @model_serializer(mode="wrap")
    def _omit_no_unit(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A rubric without units dumps as it did before units existed.
        data: dict[str, Any] = handler(self)
        if self.unit is None:
            data.pop("unit", None)
        if not self.units:
            data.pop("units", None)
        return data

    @field_validator("criteria")
    @classmethod
    def _check_criteria(cls, value: tuple[Criterion, ...]) -> tuple[Criterion, ...]:
        if not value:
            raise ValueError("a rubric needs at least one criterion")
        ids = [c.id for c in value]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"criterion ids must be unique; repeated: {repeated}")
        if not any(c.weight > 0 for c in value):
            raise ValueError(
                "at least one criterion needs a positive weight: the total is the positive "
                "weights met over their sum"
            )
        return value

    @field_validator("scale", mode="before")
    @classmethod
    def _no_boolean_scores(cls, value: Any) -> Any:
        # Before coercion, which would read True as 1.0.
        if isinstance(value, Mapping):
            for label, score in value.items():
                if isinstance(score, bool):
                    raise ValueError(f"the score of {label!r} must be in [0, 1], got {score!r}")
        return value

    @field_validator("scale")
    @classmethod
    def _check_scale(cls, value: dict[str, float]) -> dict[str, float]:
        if len(value) < 2:
            raise ValueError("a scale needs at least two labels, e.g. {PASS: 1, FAIL: 0}")
        for label, score in value.items():
            if not 0.0 <= score <= 1.0:
                raise ValueError(f"the score of {label!r} must be in [0, 1], got {score!r}")
        return value

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold_is_not_boolean(cls, value: Any) -> Any:
        # Before coercion, which would read True as 1.0.
        if isinstance(value, bool):
            raise ValueError(f"threshold must be in [0, 1], got {value!r}")
        return value

    @field_validator("threshold")
    @classmethod
    def _check_threshold(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {value!r}")
        return value

    def __hash__(self) -> int:
        scale = tuple(self.scale.items())
        return hash((self.criteria, scale, self.threshold, self.mode, self.unit, self.units))

    @property
    def per_unit_only(self) -> bool:
        """A unit rubric with no criteria of its own: each unit is judged as a whole (its
        one criterion's id is the unit's kind, ``"step"`` or ``"turn"``)."""
        return self.unit is not None and self.ids == (self.unit,)

    def for_units(self, numbers: Sequence[int]) -> Rubric:
        """The rubric of an item with the units ``numbers`` (1-based): per unit ``n``, the
        criterion ``{unit}-{n}`` (a rubric without criteria of its own: a gate, so any
        unit that fails fails the item) or ``{unit}-{n}.{criterion}`` for each criterion,
        with its weight and gate. The total is then the weighted total over every unit.
        A rubric without a unit is returned as it is.

        Raises:
            ConfigError: ``numbers`` is empty.
        """
        if self.unit is None:
            return self
        if not numbers:
            raise ConfigError(f"an item judged per {self.unit} needs at least one {self.unit}")
        criteria: list[Criterion] = []
        for number in numbers:
            for c in self.criteria:
                cid = (
                    f"{self.unit}-{number}"
                    if self.per_unit_only
                    else f"{self.unit}-{number}.{c.id}"
                )
                criteria.append(c.model_copy(update={"id": cid}))
        return self.model_copy(update={"criteria": tuple(criteria), "units": tuple(numbers)})

    def base_criterion(self, criterion_id: str) -> tuple[int | None, Criterion]:
        """For an id of :meth:`for_units`' rubric, the unit number and the criterion it is
        of (``(None, criterion)`` for a rubric without units).

        Raises:
            KeyError: no such criterion.
        """
        criterion = self.criterion(criterion_id)
        if self.unit is None:
            return None, criterion
        match = _UNIT_ID.match(criterion_id)
        if match is None:
            return None, criterion
        base = match.group(3) or self.unit
        return int(match.group(2)), criterion.model_copy(update={"id": base})

    @property
    def ids(self) -> tuple[str, ...]:
        """The criterion ids, in rubric order."""
        return tuple(c.id for c in self.criteria)

    @property
    def labels(self) -> tuple[str, ...]:
        """The scale's labels, in its order."""
        return tuple(self.scale)

    @property
    def ordinal(self) -> bool:
        """True for a scale of more than two labels (statistics then use ordinal alpha)."""
        return len(self.scale) > 2

    def criterion(self, criterion_id: str) -> Criterion:
        """The criterion with this id; ``KeyError`` naming the ids when there is none."""
        for c in self.criteria:
            if c.id == criterion_id:
                return c
        raise KeyError(f"no criterion {criterion_id!r}; the rubric has {list(self.ids)}")

    def select(
        self, criteria: Sequence[str] | None, *, whose: str = "the rubric"
    ) -> tuple[str, ...]:
        """The criterion ids ``criteria`` names, in rubric order (all of them for ``None``).

        Raises:
            ConfigError: ``criteria`` is a string (not a list of ids), empty, names an id
                twice or an id not in the rubric (``whose`` names the rubric in the message).
        """
        if criteria is None:
            return self.ids
        if isinstance(criteria, str):
            raise ConfigError(
                f"criteria must be a list of criterion ids, not the string {criteria!r}; "
                f"e.g. [{criteria!r}]"
            )
        asked = list(criteria)
        repeated = sorted({cid for cid in asked if asked.count(cid) > 1})
        if repeated:
            raise ConfigError(f"criteria repeats {repeated}; name each criterion once")
        unknown = [cid for cid in asked if cid not in self.ids]
        if unknown or not asked:
            raise ConfigError(
                f"criteria must name criteria of {whose} {list(self.ids)}; got {asked}"
            )
        return tuple(cid for cid in self.ids if cid in asked)

    def score_of(self, label: str) -> float | None:
        """The scale's score of ``label``; ``None`` for a label not on it."""
        return self.scale.get(label)

    def total(self, scores: Mapping[str, float | None]) -> float | None:
        """The weighted total of per-criterion scores (see the module docstring).

        ``scores`` maps criterion ids to scores; a missing id or ``None`` is undecided.
        A gate criterion decided and not met gives 0.0 whatever is undecided; otherwise
        any undecided criterion makes the total ``None``.
        """
        for c in self.criteria:
            value = scores.get(c.id)
            if c.gate and value is not None and value < MET_AT:
                return 0.0
        if any(scores.get(c.id) is None for c in self.criteria):
            return None
        return self.partial_total(scores)

    def partial_total(self, scores: Mapping[str, float | None]) -> float | None:
        """The total over the criteria that have a score, the others left out of the sum
        and of the denominator (a gate decided and not met still gives 0.0); ``None`` when
        no positive criterion has a score. A critic's own total when some of its answers
        failed."""
        positive = 0.0
        value = 0.0
        for c in self.criteria:
            score = scores.get(c.id)
            if score is None:
                continue
            if c.gate and score < MET_AT:
                return 0.0
            if c.weight > 0:
                positive += c.weight
                value += c.weight * score
            else:
                value += c.weight * score
        if positive == 0.0:
            return None
        return min(1.0, max(0.0, value / positive))

    def passes(self, total: float) -> bool:
        """Whether a total is a pass: at least :attr:`threshold`."""
        return total >= self.threshold


class CriterionVerdict(BaseModel):
    """One critic's answer on one criterion (``Verdict.criteria[id]``).

    ``kind`` is a label of the rubric's scale, or ``ERROR``/``PARSE_FAIL`` when this
    criterion's answer failed (a ``one_call`` answer that left it out is ``PARSE_FAIL`` for
    this criterion only), or ``SKIPPED`` when it was not asked (early stop). ``score`` is
    the scale's score of the label (or the one the model wrote). ``raw_response`` is kept
    only for a ``per_criterion`` call (a ``one_call`` answer is the verdict's).
    ``confidence_stated`` is False for an answer that gave no usable confidence (its
    ``confidence`` is then a placeholder 0.0), as on :class:`~cross_judge.verdict.Verdict`;
    written only when False.
    """

    model_config = ConfigDict(extra="allow")

    kind: str
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    reasoning: str = ""
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    error: str | None = None
    error_kind: ErrorKind | None = None
    raw_response: str | None = None
    confidence_stated: bool = True

    @property
    def is_valid(self) -> bool:
        """True when this answer is a vote (``error is None``)."""
        return self.error is None

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in ("error", "error_kind", "raw_response"):
            if data.get(name) is None:
                data.pop(name, None)
        if self.confidence_stated:
            data.pop("confidence_stated", None)
        return data


class CriterionConsensus(BaseModel):
    """A panel's result on one criterion (``EnsembleVerdict.criteria[id]``).

    ``consensus`` is the strategy's label over the valid answers on this criterion (its
    fallback when none decides, with ``fallback`` True); ``agreement_pct`` the share of
    valid answers giving it; ``disputed`` True when the valid answers are not unanimous;
    ``score`` the strategy's score (score strategies) or the scale's score of the consensus,
    ``None`` on a fallback; ``n_valid`` the valid answers; ``dissenters`` the critics
    against the consensus; ``tier`` the cascade tier that decided it (``None`` outside a
    cascade).
    """

    model_config = ConfigDict(extra="allow")

    consensus: str
    agreement_pct: float = Field(default=0.0, ge=0.0, le=1.0)
    disputed: bool = False
    score: float | None = None
    n_valid: int = 0
    fallback: bool = False
    dissenters: list[str] = Field(default_factory=list)
    tier: int | None = None


def unit_of(criterion_id: str) -> tuple[Unit, int, str | None] | None:
    """``(unit, number, criterion)`` of a per-unit criterion id (``"step-7"`` ->
    ``("step", 7, None)``; ``"turn-4.consistent"`` -> ``("turn", 4, "consistent")``), else
    ``None``."""
    match = _UNIT_ID.match(criterion_id)
    if match is None:
        return None
    kind: Unit = "turn" if match.group(1) == "turn" else "step"
    return kind, int(match.group(2)), match.group(3)
