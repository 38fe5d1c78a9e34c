"""The :class:`Cascade`: a cheap tier judges every item; only the items it is unsure about
go on to a stronger (dearer) tier.

``Cascade(tiers=[cheap, strong], escalate=Escalation(agreement_below=0.9))`` asks ``cheap``
(an :class:`~cross_judge.ensemble.Ensemble`) first, and ``strong`` only when the
:class:`Escalation` rule says ``cheap``'s result is not good enough to stand: its agreement
or mean confidence is below a threshold, a critic failed, or no vote decided. The last
tier decides whatever it finds (``final="decide"``) or, with ``final="abstain"``, gives
the reserved consensus :data:`~cross_judge.verdict.ABSTAIN` when the rule fires on it too:
the item is for a human. A rule may also be any callable ``(result, tier) -> bool``.

Thresholds can be chosen on labelled items so that the cascade's decisions agree with
the labels at a guaranteed rate (:func:`cross_judge.cascade_calibration.calibrate_cascade`).
Calibration and :meth:`Cascade.replay` work from stored results with every tier's
verdicts (``judge_many(items, all_tiers=True)``), so they cost no calls.

A cascade judges like an ensemble: ``judge``, ``judge_sync``, ``judge_many``,
``judge_many_sync`` and ``stream`` take the same arguments and return
:class:`~cross_judge.verdict.EnsembleVerdict` objects, with ``tier`` (the index of the
tier that decided) and ``tiers`` (each asked tier's own result). Its ``verdicts``,
``usage``, ``cost_usd`` and ``elapsed_s`` cover every tier asked; ``consensus`` and the
vote statistics (``agreement_pct``, ``avg_confidence``, ``dissenters``, ...) are the
deciding tier's. Each tier keeps its own voting, early stop, deadline and cache; a budget
is shared by all tiers. A one-tier cascade is its ensemble (plus ``tier``/``tiers``, and
abstention with ``final="abstain"``); an empty one is a :class:`ConfigError`.

**Rubrics.** When the tiers are rubric panels (they must share one rubric), each criterion
escalates on its own: tier 0 judges every criterion, and a later tier is asked only about
the criteria whose result at the tier before did not stand (``tier.judge(query,
criteria=[...])``). The rule is applied to each criterion's view of a tier's result
(:func:`criterion_result`; see :class:`Escalation` for what each option reads there); by
default a criterion goes on when it is disputed, undecided or failed. Each criterion's
result is the last tier's that judged it (``CriterionConsensus.tier``); the item's
``score`` is the weighted total over these and ``consensus`` PASS/FAIL by the rubric's
threshold; ``tier`` is the highest tier asked. With ``final="abstain"`` a criterion whose
last tier's result does not stand is ``ABSTAIN``, and the item abstains unless the
criteria that stood decide it anyway (a failed gate: total 0, ``FAIL``).
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio

from . import _sync
from ._item import Item
from .batch import Panel, PanelMethods, PanelView, stop_streams
from .budget import Budget
from .ensemble import Ensemble
from .errors import ConfigError, ErrorKind
from .results import BatchResult
from .rubric.models import CriterionConsensus, Rubric, unit_of
from .rubric.tally import criterion_verdicts, outcome
from .verdict import ABSTAIN, EnsembleVerdict, Usage

if TYPE_CHECKING:
    from .critic import Critic
    from .ranking import Ranking

__all__ = [
    "CalibrationItemsWarning",
    "Cascade",
    "EscalateRule",
    "Escalation",
    "FinalTier",
    "Score",
    "Threshold",
    "criterion_of",
    "criterion_result",
    "score_of",
    "support",
]

FinalTier = Literal["decide", "abstain"]
"""What the last tier does: always decide, or abstain (``ABSTAIN``) when the rule fires."""

EscalateRule: TypeAlias = Callable[[EnsembleVerdict, int], bool]
"""A custom rule: ``rule(result, tier)`` is True when tier ``tier``'s ``result`` should not
stand (escalate it, or abstain on the last tier with ``final="abstain"``)."""

Threshold: TypeAlias = (
    "float | Sequence[float | None] | Mapping[str, float | Sequence[float | None] | None] | None"
)
"""One threshold for every tier, one per tier (``None``: no threshold there), none, or (in a
cascade of rubric panels) a mapping from criterion id to one of those: that criterion's
own threshold(s); a criterion the mapping does not name has none."""

CRITERION = "criterion"
"""The ``meta`` key naming the criterion of a per-criterion view (:func:`criterion_result`)."""

ON_CALIBRATION_ITEMS = ("refuse", "skip", "keep")

Score = Literal["agreement", "confidence", "support"]
"""What a threshold applies to: a tier result's ``agreement_pct``, its ``avg_confidence``,
or its :func:`support`."""


def support(result: EnsembleVerdict) -> float:
    """How strongly a tier backs its consensus, in [0, 1]: the confidences of the valid
    verdicts equal to the consensus, summed, over the number of critics asked (early-stop
    skips are not counted; failed calls and budget skips are, as no support).

    It folds agreement and confidence into one number: three critics agreeing at 0.9 give
    0.9, two of three agreeing at 0.9 give 0.6, three agreeing at 0.6 give 0.6. On the
    simulated vendor it separates right from wrong decisions better than either alone
    (``bench/bench_cascade.py``). 0.0 when no critic was asked.
    """
    asked = [v for v in result.verdicts if v.error_kind is not ErrorKind.EARLY_STOP]
    if not asked:
        return 0.0
    backing = sum(v.confidence for v in asked if v.error is None and v.kind == result.consensus)
    return backing / len(asked)


def score_of(result: EnsembleVerdict, score: Score) -> float:
    """``result``'s ``score``: ``agreement_pct``, ``avg_confidence`` or :func:`support`."""
    if score == "agreement":
        return result.agreement_pct
    if score == "confidence":
        return result.avg_confidence
    return support(result)


def criterion_result(result: EnsembleVerdict, criterion_id: str) -> EnsembleVerdict:
    """One criterion of a rubric panel's ``result`` as a result of its own, the view an
    escalation rule judges per criterion: ``verdicts`` are each critic's answer on it
    (``SKIPPED``/early stop when a critic was not asked about it), ``consensus``,
    ``agreement_pct``, ``score``, ``fallback`` and ``dissenters`` the criterion's,
    ``disagreement`` its ``disputed``, ``avg_confidence`` the mean confidence of the valid
    answers on it, ``n_errors`` its failed answers, ``criteria`` holds it alone and
    ``meta["criterion"]`` (:data:`CRITERION`) names it.

    Raises:
        KeyError: ``result`` has no result on ``criterion_id``.
    """
    consensus = (result.criteria or {}).get(criterion_id)
    if consensus is None:
        raise KeyError(
            f"result {result.query_id!r} has no result on criterion {criterion_id!r}; "
            f"it has {sorted(result.criteria or {})}"
        )
    answers = criterion_verdicts(result.verdicts, criterion_id)
    valid = [a for a in answers if a.error is None]
    saved = sum(1 for a in answers if a.error_kind is ErrorKind.EARLY_STOP)
    return EnsembleVerdict(
        query_id=result.query_id,
        verdicts=answers,
        consensus=consensus.consensus,
        avg_confidence=sum(a.confidence for a in valid) / len(valid) if valid else 0.0,
        disagreement=consensus.disputed,
        agreement_pct=consensus.agreement_pct,
        krippendorff_alpha=None if len(valid) < 2 else (0.0 if consensus.disputed else 1.0),
        voting=result.voting,
        meta={**result.meta, CRITERION: criterion_id},
        score=consensus.score,
        fallback=consensus.fallback,
        n_valid=len(valid),
        n_errors=len(answers) - len(valid) - saved,
        calls_saved=saved,
        dissenters=list(consensus.dissenters),
        criteria={criterion_id: consensus},
        rubric=result.rubric,
    )


def criterion_of(result: EnsembleVerdict) -> str | None:
    """The criterion a :func:`criterion_result` view is about; ``None`` for a whole result."""
    named = result.meta.get(CRITERION)
    if isinstance(named, str) and list(result.criteria or {}) == [named]:
        return named
    return None


class CalibrationItemsWarning(UserWarning):
    """:meth:`Cascade.replay` was asked to replay items its escalation was calibrated on:
    their figures are optimistic and the guarantee does not cover them."""


def _checked_threshold(name: str, value: object) -> Any:
    """``value`` as a threshold, a tuple of them, or a dict from criterion id to either;
    each in [0, 1], or ``inf`` (always).

    Raises:
        ConfigError: anything else, with the fix.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        by_criterion: dict[str, float | tuple[float | None, ...] | None] = {}
        for key, entry in value.items():
            if not isinstance(key, str) or isinstance(entry, Mapping):
                raise ConfigError(
                    f"Escalation.{name} per criterion maps criterion ids to thresholds, e.g. "
                    f"{{'cites': 0.9}}; got {value!r}"
                )
            by_criterion[key] = _checked_threshold(f"{name}[{key!r}]", entry)
        return by_criterion
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _one_threshold(name, value)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return tuple(
            None if v is None else _one_threshold(f"{name}[{i}]", v) for i, v in enumerate(value)
        )
    raise ConfigError(
        f"Escalation.{name} must be a number in [0, 1], a list of them (one per tier), or "
        f"None; got {value!r}"
    )


def _one_threshold(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"Escalation.{name} must be a number in [0, 1], got {value!r}")
    number = float(value)
    if number == math.inf or 0.0 <= number <= 1.0:
        return number
    hint = " (a fraction, not a percent)" if 1.0 < number <= 100.0 else ""
    raise ConfigError(
        f"Escalation.{name} must be in [0, 1]{hint}, or inf to always escalate; got {value!r}"
    )


_SCORE_NAMES: dict[Score, str] = {
    "agreement": "agreement",
    "confidence": "mean confidence",
    "support": "support",
}


@dataclass(frozen=True)
class Escalation:
    """When a tier's result does not stand: the item goes to the next tier, or, on the last
    tier of a cascade with ``final="abstain"``, gets ``ABSTAIN``.

    A result does not stand when any of these holds (each may be turned off):

    * ``agreement_below``: its ``agreement_pct`` (share of valid verdicts equal to the
      consensus) is below the threshold;
    * ``confidence_below``: its ``avg_confidence`` (mean confidence of valid verdicts) is
      below the threshold;
    * ``support_below``: its :func:`support` (the confidence behind the consensus, over the
      critics asked) is below the threshold;
    * ``on_error``: a critic's call failed (``n_errors > 0``: ``ERROR``, ``PARSE_FAIL``, or a
      call refused by the budget);
    * ``on_fallback``: no vote decided and the consensus is the strategy's fallback
      (``fallback``: no valid verdict, quorum not met, a tie under ``ties="abstain"``);
    * ``on_dispute``: the valid verdicts are not unanimous (``disagreement``). ``None``
      (default) means True in a cascade of rubric panels and False otherwise.

    **Per criterion.** In a cascade of rubric panels the rule is applied to each criterion
    of a tier's result on its own, through :func:`criterion_result`: ``agreement_below``
    reads the criterion's ``agreement_pct``, ``confidence_below`` the mean confidence of
    the valid answers on it, ``support_below`` the confidence behind its consensus over the
    critics asked about it, ``on_error`` a failed answer on it (a failed call fails every
    criterion it was to answer), ``on_fallback`` its ``fallback`` (no vote decided it) and
    ``on_dispute`` its ``disputed``. A threshold may then be a mapping from criterion id
    to a threshold (or one per tier): ``support_below={"correct": 0.9, "cites": 0.6}``;
    a criterion it does not name has no threshold of that kind.

    A threshold is a number in [0, 1] for every tier, or a sequence with one entry per
    tier that can escalate (``None`` for none there): one per tier but the last with
    ``final="decide"``, one per tier with ``final="abstain"``. ``math.inf`` escalates
    every item. Early stop counts: a tier stopped early after 2 of 3 critics agreed has
    agreement 1.0 over its valid verdicts.

    ``calibration_ids`` and ``calibrated_for`` are set by
    :func:`~cross_judge.cascade_calibration.calibrate_cascade`: the items the thresholds
    were chosen on, and the ``final`` mode they were chosen for.

    Raises:
        ConfigError: a threshold outside [0, 1] (a percent such as 90 is named as one).
    """

    agreement_below: Threshold = None
    confidence_below: Threshold = None
    support_below: Threshold = None
    on_error: bool = True
    on_fallback: bool = True
    calibration_ids: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    calibrated_for: FinalTier | None = field(default=None, repr=False, compare=False)
    on_dispute: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "agreement_below", _checked_threshold("agreement_below", self.agreement_below)
        )
        for name in ("confidence_below", "support_below"):
            object.__setattr__(self, name, _checked_threshold(name, getattr(self, name)))
        for name in ("on_error", "on_fallback"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"Escalation.{name} must be True or False")
        if self.on_dispute is not None and not isinstance(self.on_dispute, bool):
            raise ConfigError("Escalation.on_dispute must be True, False or None (the default)")
        ids: object = self.calibration_ids
        if isinstance(ids, (str, bytes)):
            raise ConfigError("Escalation.calibration_ids must be a set of item ids, not a string")
        object.__setattr__(self, "calibration_ids", frozenset(self.calibration_ids))

    def check_tiers(self, count: int) -> None:
        """Raise unless every per-tier threshold sequence has ``count`` entries.

        Raises:
            ConfigError: a sequence of another length.
        """
        for name in ("agreement_below", "confidence_below", "support_below"):
            value = getattr(self, name)
            entries = value.items() if isinstance(value, dict) else [(None, value)]
            for criterion, entry in entries:
                if isinstance(entry, tuple) and len(entry) != count:
                    where = "" if criterion is None else f"[{criterion!r}]"
                    raise ConfigError(
                        f"Escalation.{name}{where} has {len(entry)} thresholds but this cascade "
                        f"has {count} tier(s) that can escalate (every tier but the last with "
                        "final='decide', every tier with final='abstain'); give one per such tier"
                    )

    def check_criteria(self, ids: Sequence[str] | None) -> None:
        """Raise unless every per-criterion threshold names a criterion of ``ids`` (the
        cascade's rubric; ``None``: the cascade has no rubric).

        Raises:
            ConfigError: thresholds per criterion in a cascade without a rubric, or for
                criteria its rubric does not have.
        """
        for name in ("agreement_below", "confidence_below", "support_below"):
            value = getattr(self, name)
            if not isinstance(value, dict):
                continue
            if ids is None:
                raise ConfigError(
                    f"Escalation.{name} is given per criterion, and this cascade's tiers judge "
                    "with no rubric; give one threshold (or one per tier) instead"
                )
            unknown = sorted(set(value) - set(ids))
            if unknown:
                raise ConfigError(
                    f"Escalation.{name} names criteria {unknown} that the cascade's rubric "
                    f"does not have; its criteria are {list(ids)}"
                )

    @staticmethod
    def _at(value: Threshold, tier: int, criterion: str | None) -> float | None:
        if isinstance(value, Mapping):
            if criterion is None:
                return None
            if criterion not in value:  # a unit's criterion: its prompt criterion's threshold
                found = unit_of(criterion)
                if found is not None:
                    criterion = found[2] or found[0]
            return Escalation._at(value.get(criterion), tier, None)
        if value is None or isinstance(value, (int, float)):
            return value
        thresholds = tuple(value)
        return thresholds[tier] if tier < len(thresholds) else None

    def threshold(self, score: Score, tier: int, criterion: str | None = None) -> float | None:
        """The ``agreement_below``, ``confidence_below`` or ``support_below`` threshold at
        ``tier``, for ``criterion`` when thresholds are given per criterion (``None``: no
        threshold there)."""
        return self._at(getattr(self, f"{score}_below"), tier, criterion)

    def reason(
        self, result: EnsembleVerdict, tier: int, criterion: str | None = None
    ) -> str | None:
        """Why ``result`` (of tier ``tier``) does not stand, or ``None`` when it does.

        ``criterion`` says that ``result`` is one criterion's view
        (:func:`criterion_result`); by default it is read from such a view.
        """
        if criterion is None:
            criterion = criterion_of(result)
        on_dispute = criterion is not None if self.on_dispute is None else self.on_dispute
        if self.on_error and result.n_errors > 0:
            return f"{result.n_errors} critic(s) failed"
        if self.on_fallback and result.fallback:
            return f"no vote decided (fallback {result.consensus})"
        if on_dispute and result.disagreement:
            return "the valid answers disagree"
        for score, name in _SCORE_NAMES.items():
            threshold = self.threshold(score, tier, criterion)
            if threshold is not None:
                value = score_of(result, score)
                if value < threshold:
                    return f"{name} {value:.2f} < {threshold:g}"
        return None

    def __call__(self, result: EnsembleVerdict, tier: int) -> bool:
        """True when ``result`` of tier ``tier`` does not stand (see :meth:`reason`)."""
        return self.reason(result, tier) is not None


@dataclass(eq=False)
class Cascade(PanelMethods):
    """Tiers of ensembles asked in turn; each item stops at the first tier whose result
    stands.

    Args:
        tiers: ensembles, cheapest first. Critic names must be unique across tiers (they
            key the results). A tier needs at least one critic.
        escalate: an :class:`Escalation` (default: escalate on errors and fallbacks only)
            or a callable ``(result, tier) -> bool``.
        final: ``"decide"``: the last tier's result always stands; ``"abstain"``: when the
            rule fires on the last tier, the consensus is ``ABSTAIN`` (the item is for a
            human) and the last tier's own result is in ``tiers``.

    Tiers of rubric panels (see "Rubrics" in the module docstring) must share one rubric.

    Raises:
        ConfigError: no tiers, a tier that is not an ``Ensemble`` or has no critics, a
            critic name in two tiers, an unknown ``final``, a threshold list of the wrong
            length, an escalation calibrated for the other ``final`` mode, tiers judging
            with different rubrics (or some with one and some without), or thresholds per
            criterion without a rubric or for criteria it does not have.
    """

    tiers: Sequence[Ensemble]
    escalate: Escalation | EscalateRule = field(default_factory=Escalation)
    final: FinalTier = "decide"
    _rubric: Rubric | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if isinstance(self.tiers, Ensemble) or not isinstance(self.tiers, Sequence):
            raise ConfigError(
                "Cascade(tiers=...) takes a list of Ensembles, cheapest first, e.g. "
                "Cascade(tiers=[cheap, strong])"
            )
        self.tiers = list(self.tiers)
        if not self.tiers:
            raise ConfigError(
                "a Cascade needs at least one tier: Cascade(tiers=[cheap, strong]); "
                "a single Ensemble judges on its own"
            )
        seen: dict[str, int] = {}
        for index, tier in enumerate(self.tiers):
            if not isinstance(tier, Ensemble):
                raise ConfigError(
                    f"Cascade tier {index} is a {type(tier).__name__}, not an Ensemble; "
                    "wrap its critics: Ensemble(critics=[...])"
                )
            if not tier.critics:
                raise ConfigError(
                    f"Cascade tier {index} has no critics; every tier must judge, so give it "
                    "critics=[Critic(...), ...]"
                )
            for critic in tier.critics:
                if critic.name in seen:
                    raise ConfigError(
                        f"critic {critic.name!r} is in tiers {seen[critic.name]} and {index}; "
                        "critic names key a cascade's results, so give each a distinct name"
                    )
                seen[critic.name] = index
        self._rubric = _shared_rubric(self.tiers)
        if self.final not in ("decide", "abstain"):
            raise ConfigError(f"final must be 'decide' or 'abstain', got {self.final!r}")
        rule = self.escalate
        if isinstance(rule, Escalation):
            if rule.calibrated_for is not None and rule.calibrated_for != self.final:
                raise ConfigError(
                    f"this escalation was calibrated for final={rule.calibrated_for!r} but the "
                    f"cascade has final={self.final!r}; its guarantee holds only for the mode "
                    "it was calibrated for: calibrate again, or use the same final mode"
                )
            rule.check_tiers(self.checked_tiers)
            rule.check_criteria(None if self._rubric is None else self._rubric.ids)
        elif not callable(rule):
            raise ConfigError(
                "escalate must be an Escalation(...) or a callable (result, tier) -> bool, "
                f"got {rule!r}"
            )

    @property
    def rubric(self) -> Rubric | None:
        """The rubric every tier shares, or ``None`` for tiers that judge without one."""
        return self._rubric

    # -- what the batch machinery reads ---------------------------------------------------

    @property
    def critics(self) -> list[Critic]:
        """Every tier's critics, in tier order."""
        return [critic for tier in self.tiers for critic in tier.critics]

    @property
    def voting(self) -> str:
        """``"cascade(<tier 0 voting> > <tier 1 voting> ...)"``."""
        from .voting import strategy_name

        return "cascade(" + " > ".join(strategy_name(t.voting) for t in self.tiers) + ")"

    @property
    def checked_tiers(self) -> int:
        """How many tiers the rule is applied to: all but the last with ``final="decide"``,
        all with ``final="abstain"``."""
        return len(self.tiers) - (self.final == "decide")

    def check_can_judge(self) -> None:
        """Raise unless every tier can judge (has critics).

        Raises:
            ConfigError: naming the tier.
        """
        for index, tier in enumerate(self.tiers):
            try:
                tier.check_can_judge()
            except ConfigError as exc:
                raise ConfigError(f"Cascade tier {index}: {exc}") from None

    def check_prices(self) -> None:
        """Raise unless every critic of every tier has a known price (needed by a budget).

        Raises:
            ConfigError: naming the first critic without one.
        """
        for tier in self.tiers:
            tier.check_prices()

    def check_item(self, query: str | Item, context: Mapping[str, Any] | None = None) -> None:
        """Raise unless every tier can judge the item (see :meth:`Ensemble.check_item`).

        Raises:
            ConfigError: naming the tier.
        """
        for index, tier in enumerate(self.tiers):
            try:
                tier.check_item(query, context)
            except ConfigError as exc:
                raise ConfigError(f"Cascade tier {index}: {exc}") from None

    # -- judging --------------------------------------------------------------------------

    def _rule(self, escalation: Escalation | EscalateRule | None = None) -> EscalateRule:
        rule = self.escalate if escalation is None else escalation
        if isinstance(rule, Escalation):
            rule.check_tiers(self.checked_tiers)
            rule.check_criteria(None if self._rubric is None else self._rubric.ids)
        return rule

    def _stands(self, rule: EscalateRule, result: EnsembleVerdict, tier: int) -> bool:
        """True when ``result`` of ``tier`` is the cascade's decision (``final="decide"``
        makes the last tier's always stand)."""
        if tier == len(self.tiers) - 1 and self.final == "decide":
            return True
        return not bool(rule(result, tier))

    def _settle(
        self,
        rule: EscalateRule,
        result: EnsembleVerdict,
        tier: int,
        pending: Sequence[str],
        decided: dict[str, int],
    ) -> list[str]:
        """Rubric cascades: record in ``decided`` the criteria of ``pending`` whose result
        at ``tier`` stands (the rule asked about each criterion's view); return the others.

        Raises:
            ConfigError: ``result`` has no result on a pending criterion (a stored result
                judged live, replayed with a rule that sends more criteria on).
        """
        missing = [cid for cid in pending if cid not in (result.criteria or {})]
        if missing:
            raise ConfigError(
                f"result {result.query_id!r}: tier {tier} holds no result on criteria "
                f"{missing}, and this rule sends them there; store every tier's results on "
                "every criterion with cascade.judge_many(items, all_tiers=True)"
            )
        staying: list[str] = []
        for cid in pending:
            if self._stands(rule, criterion_result(result, cid), tier):
                decided[cid] = tier
            else:
                staying.append(cid)
        return staying

    def _rubric_plan(
        self, results: Sequence[EnsembleVerdict], rule: EscalateRule, query_id: str
    ) -> tuple[dict[str, int], list[str]]:
        """Rubric cascades, from stored tier results: the tier each criterion is decided
        at, and the criteria no tier's result stood on (abstained, ``final="abstain"``).

        Raises:
            ConfigError: a tier result lacks a criterion the rule sends to it, or the
                results stop before the tier the rule sends a criterion to.
        """
        assert self._rubric is not None
        decided: dict[str, int] = {}
        pending = list(_item_ids(self._rubric, results))
        for index, result in enumerate(results):
            if not pending:
                break
            pending = self._settle(rule, result, index, pending, decided)
        if pending and len(results) < len(self.tiers):
            raise ConfigError(
                f"result {query_id!r} stops at tier {len(results) - 1}, but this rule sends "
                f"criteria {pending} to tier {len(results)}; store every tier's results with "
                "cascade.judge_many(items, all_tiers=True)"
            )
        return decided, pending

    async def judge(
        self,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
        all_tiers: bool = False,
        sit_out: Collection[str] | None = None,
    ) -> EnsembleVerdict:
        """Judge an item tier by tier until a result stands: an
        :class:`~cross_judge.batch.Item`, or its text with ``query_id``, ``context`` and
        ``meta`` (as for :meth:`Ensemble.judge <cross_judge.ensemble.Ensemble.judge>`);
        every tier is given the same item.

        With ``all_tiers`` every tier judges the item (concurrently) and the decision is
        made from their results exactly as tier by tier: the result to store for
        calibration and :meth:`replay`; it costs every tier.

        ``sit_out`` names critics (of any tier) that do not judge this item, as in
        :meth:`Ensemble.judge <cross_judge.ensemble.Ensemble.judge>` (self-preference in a
        ranking); each tier gets the names of its own critics.

        Raises:
            PromptError: a template field of any tier's critics is missing from
                ``context`` (checked for every tier before the first call).
            ConfigError: as :meth:`Ensemble.judge`, for any tier, before any call.
            TypeError: an :class:`~cross_judge.batch.Item` given with ``query_id``,
                ``context`` or ``meta``.
        """
        item = Item.of(query, query_id=query_id, context=context, meta=meta)
        self.check_can_judge()
        budget = Budget.of(budget_usd)
        if budget is not None:
            self.check_prices()
        for critic in self.critics:
            critic.check_renders(item)
        for tier in self.tiers:  # an unusable cache raises now, not after tier 0 was billed
            await tier.check_caches()
        names = {c.name for c in self.critics}
        if sit_out and not set(sit_out) <= names:
            raise ConfigError(
                f"sit_out names unknown critics {sorted(set(sit_out) - names)}; critics are "
                f"{[c.name for c in self.critics]}"
            )
        rule = self._rule()
        started = time.perf_counter()

        async def ask(tier: Ensemble, criteria: Sequence[str] | None = None) -> EnsembleVerdict:
            own = [c.name for c in tier.critics if sit_out and c.name in sit_out]
            return await tier.judge(item, budget_usd=budget, criteria=criteria, sit_out=own or None)

        if all_tiers:
            answers: list[EnsembleVerdict | None] = [None] * len(self.tiers)

            async def run(index: int) -> None:
                answers[index] = await ask(self.tiers[index])

            async with anyio.create_task_group() as group:
                for index in range(len(self.tiers)):
                    group.start_soon(run, index)
            results = [a for a in answers if a is not None]
            return self._decision(results, rule, elapsed_s=time.perf_counter() - started)
        if self._rubric is not None:
            # Each criterion goes on alone: a tier is asked only about the criteria every
            # earlier tier left open.
            results = []
            decided: dict[str, int] = {}
            rubric = self.tiers[0].item_rubric(item)  # per item for unit prompts
            pending = list(rubric.ids)
            for index, tier in enumerate(self.tiers):
                results.append(await ask(tier, None if index == 0 else pending))
                pending = self._settle(rule, results[-1], index, pending, decided)
                if not pending:
                    break
            return _combine_rubric(
                results, decided, pending, time.perf_counter() - started, self.voting, rubric
            )
        results = []
        for index, tier in enumerate(self.tiers):
            results.append(await ask(tier))
            if self._stands(rule, results[-1], index):
                return _combine(results, index, False, time.perf_counter() - started, self.voting)
        # Only final="abstain" gets here: the last tier's result did not stand either.
        return _combine(results, len(results) - 1, True, time.perf_counter() - started, self.voting)

    def _decision(
        self, results: Sequence[EnsembleVerdict], rule: EscalateRule, *, elapsed_s: float | None
    ) -> EnsembleVerdict:
        """The cascade's result from every tier's result (``all_tiers``): the first that
        stands decides; if none does, the last tier's abstains. Results past the deciding
        tier are kept in ``tiers`` and counted in ``verdicts`` and cost (they were paid
        for). ``elapsed_s=None`` sums the tiers'. A rubric cascade decides each
        criterion at the first tier whose result on it stands."""
        if self._rubric is not None:
            query_id = results[0].query_id
            decided, still_open = self._rubric_plan(results, rule, query_id)
            return _combine_rubric(
                results, decided, still_open, elapsed_s, self.voting, _item_rubric(results[0])
            )
        index = self._first_standing(results, rule)
        if index is None:
            return _combine(results, len(results) - 1, True, elapsed_s, self.voting)
        return _combine(results, index, False, elapsed_s, self.voting)

    def _first_standing(self, results: Sequence[EnsembleVerdict], rule: EscalateRule) -> int | None:
        """The index of the first tier result that stands, ``None`` when none does."""
        for index, result in enumerate(results):
            if self._stands(rule, result, index):
                return index
        return None

    def panel_for_batch(self, *, all_tiers: bool = False, **panel_options: Any) -> Panel:
        """What a batch of this cascade runs: the cascade, or with ``all_tiers=True`` every
        tier on every item (the stored results calibration and :meth:`replay` need).

        Raises:
            TypeError: another option.
        """
        if panel_options:
            return super().panel_for_batch(**panel_options)
        return _AllTiers(self) if all_tiers else self

    # -- ranking --------------------------------------------------------------------------

    async def rank(self, candidates: Mapping[str, Any], **options: Any) -> Ranking:
        """Rank ``candidates`` from pairs judged by this cascade: see
        :func:`cross_judge.ranking.rank` for the options. Each tier shows pairs in its own
        ``order``: give the tiers ``order="both"`` for a ranking free of position bias.
        """
        from .ranking import rank  # the ranking's modules load on the first ranking

        return await rank(self, candidates, **options)

    def rank_sync(self, candidates: Mapping[str, Any], **options: Any) -> Ranking:
        """:meth:`rank` for synchronous code; also works inside a running event loop."""
        self.check_can_judge()
        return _sync.run_sync(functools.partial(self.rank, candidates, **options))

    # -- replay ---------------------------------------------------------------------------

    def replay(
        self,
        results: BatchResult | Iterable[EnsembleVerdict],
        *,
        escalation: Escalation | EscalateRule | None = None,
        on_calibration_items: Literal["refuse", "skip", "keep"] = "refuse",
    ) -> BatchResult:
        """What this cascade (with ``escalation`` instead of its own rule, if given) would
        have decided on stored results, with no calls.

        Each stored result must hold the per-tier results of every tier the rule sends
        its item to: results of ``judge_many(items, all_tiers=True)`` always do. Each
        replayed result equals, item for item, what a live run of the cascade gives
        (``tiers`` up to the deciding tier; ``verdicts``, ``usage`` and ``cost_usd`` of
        those tiers; ``elapsed_s`` their sum). The batch's own ``elapsed_s`` is 0: nothing
        ran.

        ``on_calibration_items``, for an escalation fitted by ``calibrate_cascade``, about
        the items it was fitted on: ``"refuse"`` (default) raises, ``"skip"`` leaves them
        out (the held-out evaluation), ``"keep"`` replays them with a
        :class:`CalibrationItemsWarning` (their figures are optimistic, not guaranteed).

        Raises:
            ConfigError: a result without per-tier results, one whose tier holds critics
                this cascade's tier does not have, one that stops before the tier the
                rule sends it to, or calibration items with ``"refuse"``.
        """
        if on_calibration_items not in ON_CALIBRATION_ITEMS:
            raise ConfigError(
                f"on_calibration_items must be one of {ON_CALIBRATION_ITEMS}, "
                f"got {on_calibration_items!r}"
            )
        if isinstance(escalation, Escalation) and escalation.calibrated_for not in (
            None,
            self.final,
        ):
            raise ConfigError(
                f"this escalation was calibrated for final={escalation.calibrated_for!r} but "
                f"the cascade has final={self.final!r}; replay with a cascade of that mode"
            )
        rule = self._rule(escalation)
        stored = list(results.verdicts if isinstance(results, BatchResult) else results)
        calibrated = rule.calibration_ids if isinstance(rule, Escalation) else frozenset()
        overlap = [r.query_id for r in stored if r.query_id in calibrated]
        if overlap:
            stored = self._calibration_items(stored, overlap, calibrated, on_calibration_items)
        names = [{c.name for c in tier.critics} for tier in self.tiers]
        replayed = [self._replay_one(result, rule, names) for result in stored]
        # No wall time: nothing ran (each result's elapsed_s is its tiers' own, summed).
        return BatchResult(
            verdicts=replayed, critics=[c.name for c in self.critics], voting=self.voting
        )

    @staticmethod
    def _calibration_items(
        stored: list[EnsembleVerdict],
        overlap: list[str],
        calibrated: frozenset[str],
        on_calibration_items: str,
    ) -> list[EnsembleVerdict]:
        count = f"{len(overlap)} of the {len(stored)} results"
        if on_calibration_items == "refuse":
            raise ConfigError(
                f"{count} are items this escalation was calibrated on (e.g. {overlap[0]!r}); "
                "its guarantee is about new items and the calibration items' figures are "
                "optimistic. Pass on_calibration_items='skip' to replay only the others "
                "(the held-out check), or 'keep' to replay them anyway"
            )
        if on_calibration_items == "skip":
            return [r for r in stored if r.query_id not in calibrated]
        warnings.warn(
            f"{count} are calibration items of this escalation: their agreement is "
            "optimistic and not covered by the guarantee",
            CalibrationItemsWarning,
            stacklevel=3,
        )
        return stored

    def _replay_one(
        self, result: EnsembleVerdict, rule: EscalateRule, names: list[set[str]]
    ) -> EnsembleVerdict:
        stored = result.tiers
        if not stored:
            raise ConfigError(
                f"result {result.query_id!r} has no per-tier results, so it was not judged by "
                "a cascade; store them with cascade.judge_many(items, all_tiers=True)"
            )
        if len(stored) > len(self.tiers):
            raise ConfigError(
                f"result {result.query_id!r} holds {len(stored)} tiers but this cascade has "
                f"{len(self.tiers)}; replay it with the cascade that judged it"
            )
        for index, tier_result in enumerate(stored):
            strangers = {v.critic_id for v in tier_result.verdicts} - names[index]
            if strangers:
                raise ConfigError(
                    f"result {result.query_id!r}: tier {index} holds critics "
                    f"{sorted(strangers)} that this cascade's tier {index} does not have; "
                    "replay it with the cascade that judged it"
                )
        if self._rubric is not None:
            by_criterion, still_open = self._rubric_plan(stored, rule, result.query_id)
            top = len(stored) - 1 if still_open else max(by_criterion.values())
            return _combine_rubric(
                stored[: top + 1],
                by_criterion,
                still_open,
                None,
                self.voting,
                _item_rubric(stored[0], self._rubric),
            )
        decided = self._first_standing(stored, rule)
        if decided is not None:
            return _combine(stored[: decided + 1], decided, False, None, self.voting)
        if len(stored) < len(self.tiers):
            raise ConfigError(
                f"result {result.query_id!r} stops at tier {len(stored) - 1}, but this rule "
                f"sends it to tier {len(stored)}; store every tier's results with "
                "cascade.judge_many(items, all_tiers=True)"
            )
        return _combine(stored, len(stored) - 1, True, None, self.voting)

    # -- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop this cascade's streams on this event loop, then close every tier's pools."""
        await stop_streams(self)
        for tier in self.tiers:
            await tier.aclose()

    async def __aenter__(self) -> Cascade:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _AllTiers(PanelView):
    """A cascade seen by the batch machinery as a panel whose ``judge`` asks every tier.

    Made per call, never kept on the cascade: a cascade holding one would be a reference
    cycle, freed only by the cycle collector (and with it a simulator a panel file
    started for it)."""

    def __init__(self, cascade: Cascade) -> None:
        super().__init__(cascade)
        self.cascade = cascade

    async def judge(
        self,
        query: str | Item,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
    ) -> EnsembleVerdict:
        return await self.cascade.judge(
            query,
            query_id=query_id,
            context=context,
            meta=meta,
            budget_usd=budget_usd,
            all_tiers=True,
        )


def _combine(
    results: Sequence[EnsembleVerdict],
    decided: int,
    abstains: bool,
    elapsed_s: float | None,
    voting: str,
) -> EnsembleVerdict:
    """One cascade result: the deciding tier's vote, every asked tier's calls and cost;
    ``voting`` names the cascade (each tier's result keeps its own strategy's name)."""
    update = _spent(results, elapsed_s, voting)
    update["tier"] = decided
    if abstains:
        update.update(consensus=ABSTAIN, dissenters=[], score=None, fallback=False)
    return results[decided].model_copy(update=update)


def _spent(
    results: Sequence[EnsembleVerdict], elapsed_s: float | None, voting: str
) -> dict[str, Any]:
    """What every asked tier spent (verdicts, usage, cost, time) and the tiers themselves."""
    usage = Usage()
    for result in results:
        usage = usage + result.usage
    costs = [r.cost_usd for r in results]
    return {
        "verdicts": [v for r in results for v in r.verdicts],
        "usage": usage,
        "cost_usd": sum(c for c in costs if c is not None)
        if all(c is not None for c in costs)
        else None,
        "elapsed_s": round(
            sum(r.elapsed_s for r in results) if elapsed_s is None else elapsed_s, 3
        ),
        "tiers": list(results),
        "voting": voting,
    }


def _combine_rubric(
    results: Sequence[EnsembleVerdict],
    decided: Mapping[str, int],
    still_open: Sequence[str],
    elapsed_s: float | None,
    voting: str,
    rubric: Rubric,
) -> EnsembleVerdict:
    """One rubric cascade result: each criterion from the tier that decided it (``tier``
    set), a criterion in ``still_open`` (no tier's result stood, ``final="abstain"``) as
    ``ABSTAIN``; the total over the merged criteria; every asked tier's calls and cost.

    The item abstains when an abstained criterion leaves its total undecided (a gate
    that stood and failed still makes it 0, a ``FAIL``). ``tier`` is the highest tier
    asked; ``n_valid``, ``n_errors``, ``calls_saved`` and ``avg_confidence`` are over
    every tier's verdicts, ``dissenters`` the critics against a merged criterion."""
    last = len(results) - 1
    top = last if still_open else max(decided.values())
    merged: dict[str, CriterionConsensus] = {}
    for cid in rubric.ids:
        if cid in decided:
            tier = decided[cid]
            merged[cid] = (results[tier].criteria or {})[cid].model_copy(update={"tier": tier})
        else:
            merged[cid] = (results[last].criteria or {})[cid].model_copy(
                update={
                    "consensus": ABSTAIN,
                    "score": None,
                    "fallback": False,
                    "dissenters": [],
                    "tier": last,
                }
            )
    fallback_label = next((c.consensus for c in merged.values() if c.fallback), "UNCLEAR")
    judged = outcome(merged, rubric, fallback_label=fallback_label)
    abstains = bool(still_open) and judged.total is None
    dissenters = list(dict.fromkeys(d for c in merged.values() for d in c.dissenters))
    n_valid = sum(r.n_valid for r in results)
    update = _spent(results, elapsed_s, voting)
    update.update(
        tier=top,
        criteria=merged,
        rubric=rubric,
        consensus=ABSTAIN if abstains else judged.consensus,
        score=judged.total,
        fallback=judged.fallback and not abstains,
        disagreement=judged.disagreement,
        agreement_pct=judged.agreement_pct,
        krippendorff_alpha=judged.alpha,
        dissenters=dissenters,
        n_valid=n_valid,
        n_errors=sum(r.n_errors for r in results),
        calls_saved=sum(r.calls_saved for r in results),
        avg_confidence=sum(r.avg_confidence * r.n_valid for r in results) / n_valid
        if n_valid
        else 0.0,
    )
    return results[top].model_copy(update=update)


def _shared_rubric(tiers: Sequence[Ensemble]) -> Rubric | None:
    """The rubric every tier judges with, or ``None`` when none has one.

    Raises:
        ConfigError: some tiers have a rubric and others not, or two tiers' rubrics differ
            in criteria ids, weights, gates, scale or pass mark.
    """
    rubrics = [tier.rubric for tier in tiers]
    if all(r is None for r in rubrics):
        return None
    without = [i for i, r in enumerate(rubrics) if r is None]
    if without:
        raise ConfigError(
            f"Cascade tiers {without} judge with no rubric while the others do; a rubric "
            "cascade escalates criterion by criterion, so give every tier's critics a prompt "
            "with the same criteria"
        )
    first = rubrics[0]
    assert first is not None

    def shape(r: Rubric) -> tuple[Any, ...]:
        criteria = tuple((c.id, c.weight, c.gate) for c in r.criteria)
        return criteria, tuple(r.scale.items()), r.threshold, r.unit

    for index, other in enumerate(rubrics[1:], start=1):
        assert other is not None
        if shape(other) != shape(first):
            raise ConfigError(
                f"Cascade tier {index} judges with another rubric than tier 0 (criteria ids, "
                "weights, gates, scale or pass_threshold differ); a cascade merges each "
                "criterion's result over its tiers, so all tiers must share one rubric: give "
                "every tier's critics prompts with the same criteria (the wording may differ) "
                "and the tiers the same pass_threshold"
            )
    return first


def _item_ids(rubric: Rubric, results: Sequence[EnsembleVerdict]) -> tuple[str, ...]:
    """The criterion ids of an item's stored results: the rubric's, or for a unit rubric
    the units of the item as its first tier's result records them."""
    if rubric.unit is None or not results:
        return rubric.ids
    return _item_rubric(results[0], rubric).ids


def _item_rubric(result: EnsembleVerdict, rubric: Rubric | None = None) -> Rubric:
    """The rubric ``result`` (a tier's result on one item) was judged on: its own record
    of it, else ``rubric``."""
    found = result.rubric if result.rubric is not None else rubric
    assert found is not None  # a rubric cascade's results carry their rubric
    return found
