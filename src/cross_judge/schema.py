"""cross-judge 0.1's legacy result models: :class:`Verdict` (``LegacyVerdict``) and
:class:`EnsembleResult`.

A thin 0.1-compatible shim: the fields, defaults and constraints are 0.1's, so stored 0.1
JSON loads unchanged. The new models live in :mod:`cross_judge.verdict`; this module only
converts between the two:

* :meth:`Verdict.from_verdict` / :meth:`Verdict.to_verdict` convert a new
  :class:`cross_judge.verdict.Verdict` to a legacy one and back, losslessly for the shared
  fields; the new-only fields ride along as extras.
* Validation accepts a new ``Verdict`` wherever a legacy one is expected, so
  ``EnsembleResult(verdicts=[new_verdict, ...])`` works (0.1 raised ``ValidationError``),
  and so does a dict spelled with the new names (``kind``, ``reasoning``, ``critic_id``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .verdict import Verdict as NewVerdict

__all__ = ["EnsembleResult", "Verdict", "VerdictLabel"]

VerdictLabel = str
"""A verdict label; the vocabulary is the caller's (KEEP/REJECT, PASS/FAIL, ...)."""

# legacy name -> new name, for the three fields that were renamed.
_RENAMED = {"verdict": "kind", "rationale": "reasoning", "reviewer_id": "critic_id"}
_UNCHANGED = ("confidence", "raw_response", "error", "elapsed_s")
# Names that never travel as extras: they are fields (or aliases) on one side or the other.
_NOT_EXTRA = frozenset(_RENAMED) | frozenset(_RENAMED.values()) | frozenset(_UNCHANGED)


class Verdict(BaseModel):
    """A single reviewer's verdict for one item (cross-judge 0.1's ``schema.Verdict``).

    Exported at the top level as ``LegacyVerdict``; ``cross_judge.Verdict`` is the new
    model. The label vocabulary is the caller's; aggregation treats labels as opaque
    strings. ``error is None`` means the verdict is a vote.

    Besides 0.1's keywords it validates a new :class:`cross_judge.verdict.Verdict` (see
    :meth:`from_verdict`) and a mapping that uses the new field names.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    reviewer_id: str
    verdict: VerdictLabel
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    rationale: str = ""
    raw_response: str | None = None
    error: str | None = None
    elapsed_s: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _accept_new_verdicts(cls, data: Any) -> Any:
        if isinstance(data, NewVerdict):
            return _legacy_fields(data, extras=True)
        if isinstance(data, dict) and any(new in data for new in _RENAMED.values()):
            data = dict(data)  # never modify the caller's dict
            for old, new in _RENAMED.items():
                if new in data and old not in data:
                    data[old] = data.pop(new)
        return data

    @classmethod
    def from_verdict(cls, verdict: NewVerdict, *, extras: bool = True) -> Verdict:
        """The legacy form of a new verdict.

        ``kind``, ``reasoning`` and ``critic_id`` become ``verdict``, ``rationale`` and
        ``reviewer_id``; the other shared fields are copied. With ``extras`` (the default)
        every other field that differs from its default (``error_kind``, ``usage``,
        ``model``, ...) and the new verdict's own extras are kept as extras, so
        :meth:`to_verdict` gives the original back. ``extras=False`` gives exactly 0.1's
        seven fields.
        """
        return cls.model_validate(_legacy_fields(verdict, extras=extras))

    def to_verdict(self) -> NewVerdict:
        """The new :class:`cross_judge.verdict.Verdict` for this legacy one.

        Extras are passed on: those named like a new field (``error_kind``, ``usage``, ...,
        as :meth:`from_verdict` leaves them) fill that field, the rest stay extras.

        Raises:
            pydantic.ValidationError: an extra named like a new field holds a value that
                field does not accept.
        """
        data = {k: v for k, v in (self.model_extra or {}).items() if k not in _NOT_EXTRA}
        data.update(
            kind=self.verdict,
            reasoning=self.rationale,
            critic_id=self.reviewer_id,
            confidence=self.confidence,
            raw_response=self.raw_response,
            error=self.error,
            elapsed_s=self.elapsed_s,
        )
        return NewVerdict.model_validate(data)


def _legacy_fields(verdict: NewVerdict, *, extras: bool) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if extras:
        dumped = verdict.model_dump(exclude_defaults=True)
        data.update((k, v) for k, v in dumped.items() if k not in _NOT_EXTRA)
    data.update(
        reviewer_id=verdict.critic_id,
        verdict=verdict.kind,
        confidence=verdict.confidence,
        rationale=verdict.reasoning,
        raw_response=verdict.raw_response,
        error=verdict.error,
        elapsed_s=verdict.elapsed_s,
    )
    return data


class EnsembleResult(BaseModel):
    """A panel's result for one item (cross-judge 0.1's legacy model).

    ``verdicts`` accepts legacy and new verdicts; new ones are converted with
    :meth:`Verdict.from_verdict`. Unlike :class:`~cross_judge.verdict.EnsembleVerdict` it
    has no ``agreement_pct`` or ``krippendorff_alpha``.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    item_id: str
    verdicts: list[Verdict]
    consensus: str
    avg_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    disagreement: bool = False
    strategy: str
    meta: dict[str, Any] = Field(default_factory=dict)
