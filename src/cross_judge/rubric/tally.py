"""The vote of a rubric panel, criterion by criterion: :func:`tally`.

Each criterion is voted on its own with the panel's strategy and policies, over each
critic's answer on it (:func:`criterion_verdicts`): a failed call is a failed answer on
every criterion it was to answer, a ``one_call`` answer that left a criterion out is a
``PARSE_FAIL`` on that criterion only, and a criterion a critic was not asked (early stop,
a cascade's later tier) is ``SKIPPED``. The criteria's consensus scores then give the item's
weighted total (:meth:`~cross_judge.rubric.models.Rubric.total`) and its consensus:
``PASS`` when the total reaches the rubric's threshold, else ``FAIL``; the strategy's
fallback (``UNCLEAR``) when a criterion is undecided and no failed gate decides it.

Calls no model; :func:`infer_rubric` rebuilds a rubric from stored verdicts when none is
given (weights 1, no gate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ErrorKind
from ..verdict import Verdict, as_verdict
from ..voting import (
    VotingStrategy,
    agreement_pct,
    reconcile_labels,
)
from .models import DEFAULT_SCALE, Criterion, CriterionConsensus, Rubric

__all__ = [
    "FAIL",
    "PASS",
    "RubricTally",
    "criterion_verdicts",
    "has_criteria",
    "infer_rubric",
    "tally",
]

PASS = "PASS"
"""An item's consensus when its total reaches the rubric's threshold."""
FAIL = "FAIL"
"""An item's consensus when its total is below the rubric's threshold."""

_NOT_ASKED = "early_stop: not asked about this criterion"


def has_criteria(verdicts: Sequence[Any]) -> bool:
    """Whether any of ``verdicts`` answers a rubric (has ``criteria``)."""
    return any(getattr(v, "criteria", None) for v in verdicts)


def criterion_verdicts(verdicts: Sequence[Verdict], criterion_id: str) -> list[Verdict]:
    """Each critic's answer on ``criterion_id`` as a :class:`~cross_judge.verdict.Verdict`
    (critic id, model and vendor kept), in the order given.

    A verdict without an answer on it is its own failure when it failed as a whole
    (``ERROR``, ``PARSE_FAIL``, ``SKIPPED``, same ``error`` and ``error_kind``), else
    ``SKIPPED`` with ``error_kind="early_stop"``: the critic was not asked about it.
    """
    out: list[Verdict] = []
    for verdict in verdicts:
        answer = (verdict.criteria or {}).get(criterion_id)
        who: dict[str, Any] = {
            "critic_id": verdict.critic_id,
            "model": verdict.model,
            "vendor": verdict.vendor,
        }
        if answer is not None:
            out.append(
                Verdict(
                    kind=answer.kind,
                    confidence=answer.confidence,
                    reasoning=answer.reasoning,
                    score=answer.score,
                    error=answer.error,
                    error_kind=answer.error_kind,
                    confidence_stated=answer.confidence_stated or answer.error is not None,
                    confidence_source=(
                        "stated" if answer.error is None and answer.confidence_stated else "none"
                    ),
                    **who,
                )
            )
        elif verdict.error is not None:
            out.append(
                Verdict(
                    kind=verdict.kind,
                    error=verdict.error,
                    error_kind=verdict.error_kind,
                    confidence_source="none",
                    **who,
                )
            )
        else:
            out.append(
                Verdict(
                    kind="SKIPPED",
                    error=_NOT_ASKED,
                    error_kind=ErrorKind.EARLY_STOP,
                    confidence_source="none",
                    **who,
                )
            )
    return out


@dataclass(frozen=True)
class RubricTally:
    """What :func:`tally` found: the per-criterion results and the item's outcome."""

    criteria: dict[str, CriterionConsensus]
    total: float | None
    consensus: str
    fallback: bool
    disagreement: bool
    agreement_pct: float
    alpha: float | None


def _nearest_label(score: float, rubric: Rubric) -> str:
    """The scale label whose score is nearest ``score`` (the lower one on a tie)."""
    ranked = sorted(rubric.scale.items(), key=lambda kv: (abs(kv[1] - score), kv[1]))
    return ranked[0][0]


def _binary_label(label: str, rubric: Rubric, kwargs: Mapping[str, Any]) -> str:
    """A score strategy's pass or fail label as the two-label scale's met or unmet label
    (a scale such as ``GOOD``/``BAD`` is not the strategy's ``PASS``/``FAIL``); any other
    label (an abstain label on a tie at the threshold) as it is."""
    ranked = sorted(rubric.scale, key=lambda name: rubric.scale[name])
    if label == str(kwargs.get("pass_label", PASS)):
        return ranked[-1]
    if label == str(kwargs.get("fail_label", FAIL)):
        return ranked[0]
    return label


def vote_criterion(
    answers: Sequence[Verdict],
    rubric: Rubric,
    strategy: VotingStrategy,
    kwargs: Mapping[str, Any],
    *,
    tier: int | None = None,
) -> CriterionConsensus:
    """The panel's result on one criterion from each critic's answer on it (see
    :func:`criterion_verdicts`).

    A score strategy's result is given a label of the rubric's scale: on an ordinal scale
    the label whose score is nearest (the lower on a tie), on a two-label scale the met
    label for the strategy's pass label and the unmet one for its fail label."""
    answers = reconcile_labels(list(answers), kwargs)
    vote = strategy(answers, **kwargs)
    label, _ = vote
    label = str(label)
    fallback = bool(getattr(vote, "fallback", False))
    valid = [a for a in answers if a.error is None]
    score: float | None = getattr(vote, "score", None)
    if score is not None and rubric.ordinal:
        label = _nearest_label(score, rubric)
    elif score is not None:
        label = _binary_label(label, rubric, kwargs)
    elif score is None and not fallback:
        score = rubric.score_of(label)
    return CriterionConsensus(
        consensus=label,
        agreement_pct=agreement_pct(answers, label),
        disputed=len({a.kind for a in valid}) > 1,
        score=None if fallback else score,
        n_valid=len(valid),
        fallback=fallback,
        dissenters=[a.critic_id for a in valid if a.kind != label],
        tier=tier,
    )


def outcome(
    criteria: Mapping[str, CriterionConsensus],
    rubric: Rubric,
    *,
    fallback_label: str = "UNCLEAR",
    partial: bool = False,
) -> RubricTally:
    """The item's outcome from per-criterion results: total, consensus and the item-level
    agreement figures (``partial``: a total over the criteria given only, as a cascade
    tier asked about some criteria gives)."""
    scores = {cid: c.score for cid, c in criteria.items()}
    total = rubric.partial_total(scores) if partial else rubric.total(scores)
    if total is None:
        consensus, fell_back = fallback_label, True
    else:
        consensus, fell_back = (PASS if rubric.passes(total) else FAIL), False
    counted = [c for c in criteria.values() if c.n_valid > 0]
    voted = [c for c in criteria.values() if c.n_valid > 1]
    disputed = any(c.disputed for c in criteria.values())
    return RubricTally(
        criteria=dict(criteria),
        total=total,
        consensus=consensus,
        fallback=fell_back,
        disagreement=disputed,
        agreement_pct=sum(c.agreement_pct for c in counted) / len(counted) if counted else 0.0,
        alpha=None if not voted else (0.0 if disputed else 1.0),
    )


def tally(
    verdicts: Sequence[Verdict],
    rubric: Rubric,
    strategy: VotingStrategy,
    kwargs: Mapping[str, Any],
    *,
    ids: Sequence[str] | None = None,
    tier: int | None = None,
) -> RubricTally:
    """Vote every criterion in ``ids`` (default: the rubric's) and decide the item.

    With ``ids`` a part of the rubric, the total is over those criteria only (see
    :func:`outcome`).
    """
    wanted = tuple(rubric.ids if ids is None else dict.fromkeys(ids))
    verdicts = [as_verdict(v) for v in verdicts]
    criteria = {
        cid: vote_criterion(criterion_verdicts(verdicts, cid), rubric, strategy, kwargs, tier=tier)
        for cid in wanted
    }
    fallback_label = str(kwargs.get("fallback", "UNCLEAR"))
    return outcome(
        criteria, rubric, fallback_label=fallback_label, partial=set(wanted) != set(rubric.ids)
    )


def infer_rubric(verdicts: Sequence[Verdict]) -> Rubric:
    """A rubric for stored verdicts that came without one: their criterion ids in the
    order first seen, weight 1 and no gate each, and the scale ``PASS``/``FAIL`` when
    their labels are those, else their labels with the scores they carried (evenly spaced
    in sorted order for a label seen without one)."""
    ids: dict[str, None] = {}
    labels: dict[str, float | None] = {}
    for v in verdicts:
        for cid, answer in (v.criteria or {}).items():
            ids.setdefault(cid, None)
            if answer.error is None and labels.get(answer.kind) is None:
                labels[answer.kind] = answer.score
    if not ids:
        raise ValueError("these verdicts hold no criteria: there is no rubric to infer")
    scale: dict[str, float]
    if set(labels) <= set(DEFAULT_SCALE):
        scale = dict(DEFAULT_SCALE)
    else:
        ordered = sorted(labels)
        step = 1.0 / max(1, len(ordered) - 1)
        scale = {
            label: (score if (score := labels[label]) is not None else i * step)
            for i, label in enumerate(ordered)
        }
        if len(scale) < 2:
            scale = {**scale, **{k: v for k, v in DEFAULT_SCALE.items() if k not in scale}}
    criteria = tuple(Criterion(id=cid, requirement=cid) for cid in ids)
    return Rubric(criteria=criteria, scale=scale)
