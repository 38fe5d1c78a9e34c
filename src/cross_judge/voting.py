"""Voting strategies: turn one item's verdicts into ``(consensus_label, disagreement)``.

A strategy is any callable ``(verdicts, **kwargs) -> (label, disagreement)``, the shape of
cross-judge 0.1, registered by lower-case name in :data:`VOTING_STRATEGIES`. The built-ins
return a :class:`Vote`, a ``(label, disagreement)`` tuple that also carries the aggregate
``score`` of score strategies.

Built-ins:

* label strategies: ``majority`` (0.1's :func:`majority_vote`), ``unanimous`` (alias
  ``consensus``), ``weighted``, ``any``, ``first_disagreement``;
* score strategies: ``average``, ``weighted_average``, ``median``, ``trimmed_mean``,
  ``highest``, ``lowest``.

Every built-in first turns verdicts into *ballots* with one shared function, so the error,
tie and quorum policies mean the same thing everywhere, and every built-in accepts the same
policy keywords (``errors``, ``ties``, ``min_valid``, ``priority``, ``fallback``,
``pass_label``, ``fail_label``, ``abstain_label``, ``weights``, ``scores``, ``threshold``)
so an :class:`~cross_judge.Ensemble` can always pass them. With default keywords,
``majority`` and ``unanimous`` give exactly 0.1's answers: only valid verdicts
(``error is None``) vote, ``ERROR`` and ``PARSE_FAIL`` verdicts are left out.

The module also checks a strategy and its keywords before anything is billed
(:func:`validate_voting`) and tells the Ensemble when early stop may cancel the remaining
critics (:func:`outcome_is_decided`).

**Look-alike labels.** Labels are compared as written, case included (``"keep"`` and
``"KEEP"`` are different labels: the parser upper-cases), with one exception: labels that
only *look* different from each other are one label. Before any ballot is counted (every
built-in, the early-stop test, and an :class:`~cross_judge.Ensemble`'s statistics through
:func:`reconcile_labels`), the valid verdicts' labels go through
:func:`cross_judge.verdict.lookalike_labels`: invisible characters and compatibility forms
are folded (``KE\\u200bEP``, ``ＫＥＥＰ``), a label mixing Latin letters with Cyrillic or Greek
look-alikes is read in Latin (``КEEP``), and labels that then share a skeleton (``KEEP``
and an all-Cyrillic ``КЕЕР``) count as one, spelt as the label the policy names (priority,
pass, fail, fallback, abstain and score labels, in that order), else the Latin spelling,
else the most common one. So a look-alike can neither split a label's votes nor win under
its own spelling, and nothing is silent: each relabelled verdict keeps what it wrote in
``Verdict.written_label``, which ``print(result)`` and the notebook view show. A label in
another script that no other label imitates (Russian ``НЕТ``) is left as it is.

Not here: model calls, case folding, statistics over many items (see
:mod:`cross_judge.agreement`; :func:`krippendorff_alpha` here is 0.1's per-item flag), the
legacy ``aggregation`` strategies (their shim keeps 0.1's tie-breaking).
"""

from __future__ import annotations

import inspect
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal, TypeVar, get_args

from .errors import ConfigError, ErrorKind, UnknownStrategyError
from .verdict import Verdict, as_verdict, lookalike_labels

__all__ = [
    "BATCH_STRATEGIES",
    "VOTING_STRATEGIES",
    "ErrorPolicy",
    "TiePolicy",
    "Vote",
    "VotingStrategy",
    "accepts_kwarg",
    "agreement_pct",
    "any_vote",
    "average_score",
    "calls_to_decide",
    "first_disagreement",
    "get_voting_strategy",
    "highest_score",
    "krippendorff_alpha",
    "lowest_score",
    "majority_vote",
    "median_score",
    "outcome_is_decided",
    "reconcile_labels",
    "register_voting_strategy",
    "strategy_name",
    "supports_early_stop",
    "trimmed_mean_score",
    "unanimous",
    "validate_voting",
    "weighted_average_score",
    "weighted_vote",
]

VotingStrategy = Callable[..., tuple[str, bool]]
"""``(verdicts, **kwargs) -> (consensus_label, disagreement)``."""

ErrorPolicy = Literal["ignore", "abstain", "fail"]
"""What an ``ERROR`` / ``PARSE_FAIL`` verdict counts as: nothing, an abstention, a fail."""

TiePolicy = Literal["priority", "pass", "fail", "abstain"]
"""How a tie is resolved: by ``priority`` (then critic order), or as pass, fail, abstain."""

_ERROR_POLICIES: tuple[str, ...] = get_args(ErrorPolicy)
_TIE_POLICIES: tuple[str, ...] = get_args(TiePolicy)

# Verdicts for calls that were never made: not failures, so no error policy applies to them.
# A tuple, not a set: ErrorKind is a str Enum whose hash differs from its value's, and a
# verdict built without validation may hold the plain string.
_UNCAST_ERROR_KINDS = (ErrorKind.EARLY_STOP, ErrorKind.BUDGET)
_SKIPPED = "SKIPPED"


class Vote(tuple[str, bool]):
    """A strategy's result: ``(label, disagreement)``, plus the aggregate ``score`` and
    whether the label is a ``fallback``. A 2-tuple, so ``label, disagreement = vote`` and
    ``vote == ("KEEP", False)`` work as with 0.1's tuples; equality and hashing ignore
    ``score`` (a score strategy's aggregate; ``None`` for label strategies and when no
    score decided) and ``fallback`` (no vote decided: no valid ballot, quorum not met, no
    unanimity, a tie left to the abstain label)."""

    def __new__(
        cls,
        label: str,
        disagreement: bool,
        score: float | None = None,
        *,
        fallback: bool = False,
    ) -> Vote:
        vote = super().__new__(cls, (label, disagreement))
        # Tuple subclasses cannot have __slots__ entries; the read-only properties below
        # keep the values from being reassigned through the public names.
        vote.__dict__["_score"] = score
        vote.__dict__["_fallback"] = fallback
        return vote

    @property
    def label(self) -> str:
        """The consensus label."""
        return self[0]

    @property
    def disagreement(self) -> bool:
        """True when the ballots held more than one distinct label."""
        return self[1]

    @property
    def score(self) -> float | None:
        """The aggregate score of a score strategy, else ``None``."""
        score: float | None = self.__dict__["_score"]
        return score

    @property
    def fallback(self) -> bool:
        """True when no vote decided: the label is the fallback, not a voted label."""
        fallback: bool = self.__dict__["_fallback"]
        return fallback

    def __repr__(self) -> str:
        return (
            f"Vote(label={self[0]!r}, disagreement={self[1]!r}, score={self.score!r}, "
            f"fallback={self.fallback!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # tuple's default reduction would call Vote((label, disagreement)) and lose the
        # rest; fallback is keyword-only, so it goes through _rebuild.
        return (_rebuild_vote, (self[0], self[1], self.score, self.fallback))


def _rebuild_vote(label: str, disagreement: bool, score: float | None, fallback: bool) -> Vote:
    return Vote(label, disagreement, score, fallback=fallback)


# -- 0.1 helpers and statistics (kept: 0.1 code imports _valid and _label_counts) ---------


def _valid(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in map(as_verdict, verdicts) if v.error is None]


def _label_counts(verdicts: Sequence[Verdict]) -> Counter[str]:
    """Votes per label among valid verdicts, in first-seen order."""
    return Counter(v.kind for v in map(as_verdict, verdicts) if v.error is None)


def agreement_pct(verdicts: Sequence[Verdict], consensus: str) -> float:
    """Fraction of valid verdicts whose label equals ``consensus`` (0.0 if none is valid);
    errors are not in the denominator: 1 valid vote of 3 critics that matches gives 1.0."""
    valid = _valid(verdicts)
    if not valid:
        return 0.0
    return sum(1 for v in valid if v.kind == consensus) / len(valid)


def krippendorff_alpha(verdicts: Sequence[Verdict]) -> float | None:
    """cross-judge 0.1's per-item "Krippendorff's alpha", kept for compatibility: on one
    item observed and expected disagreement come from the same counts, so it is ``None``
    (fewer than 2 valid verdicts), ``1.0`` (all agree) or ``0.0`` give or take ~4e-16 (any
    disagreement). An "all agree?" flag; for reliability use alpha over many items."""
    counts = _label_counts(verdicts)
    n = sum(counts.values())
    if n < 2:
        return None
    # 0.1's arithmetic, kept operation for operation so results match it to the last bit
    # (rounding leaves +-4e-16 instead of an exact 0.0 on disagreement).
    total_pairs = n * (n - 1) // 2
    same_pairs = sum(c * (c - 1) // 2 for c in counts.values())
    d_observed = (total_pairs - same_pairs) / total_pairs
    d_expected = 1.0 - sum((c / n) * ((c - 1) / (n - 1)) for c in counts.values())
    if d_expected == 0.0:
        return 1.0 if d_observed == 0.0 else 0.0
    return max(-1.0, min(1.0, 1.0 - d_observed / d_expected))


# -- policies and ballots -----------------------------------------------------------------


@dataclass(frozen=True)
class _Policy:
    """The validated policy keywords shared by every built-in."""

    errors: str
    ties: str
    min_valid: int | None
    priority: tuple[str, ...]
    fallback: str
    pass_label: str
    fail_label: str
    abstain_label: str  # resolved: None means the fallback
    weights: Mapping[str, float]
    scores: Mapping[str, float] | None
    threshold: float

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> _Policy:
        """Validate the policy keywords in ``args`` (a built-in's ``locals()``).

        Every name of :data:`_POLICY_DEFAULTS` must be present; other names are ignored.

        Raises:
            ConfigError: a value of the wrong type or outside its allowed set or range; the
                message names the keyword and what it accepts.
        """
        errors = _choice("errors", args["errors"], _ERROR_POLICIES)
        ties = _choice("ties", args["ties"], _TIE_POLICIES)
        min_valid = args["min_valid"]
        if min_valid is not None and (
            isinstance(min_valid, bool) or not isinstance(min_valid, int) or min_valid < 1
        ):
            raise ConfigError(f"min_valid must be None or an integer >= 1, got {min_valid!r}")
        fallback = _label("fallback", args["fallback"])
        abstain = args["abstain_label"]
        return cls(
            errors=errors,
            ties=ties,
            min_valid=min_valid,
            priority=_labels("priority", args["priority"]),
            fallback=fallback,
            pass_label=_label("pass_label", args["pass_label"]),
            fail_label=_label("fail_label", args["fail_label"]),
            abstain_label=fallback if abstain is None else _label("abstain_label", abstain),
            weights=_number_map("weights", args["weights"], high=math.inf),
            scores=None
            if args["scores"] is None
            else _number_map("scores", args["scores"], high=1.0),
            threshold=_unit("threshold", args["threshold"]),
        )

    @property
    def known_labels(self) -> tuple[str, ...]:
        """The labels the policy names, in the order :func:`reconcile_labels` prefers
        them as the spelling of a look-alike (as :func:`_known_labels` orders them)."""
        scores = () if self.scores is None else tuple(self.scores)
        named = (self.pass_label, self.fail_label, self.fallback, self.abstain_label)
        return (*self.priority, *named, *scores)


def _known_labels(args: Mapping[str, Any]) -> tuple[str, ...]:
    """The labels named in voting keywords ``args``: ``priority``, ``pass_label``,
    ``fail_label``, ``fallback``, ``abstain_label``, the keys of ``scores``, ``target``
    and ``disagree_label``, in that order; values that are not labels are skipped (a custom
    strategy's keywords may mean anything)."""
    names: list[str] = []
    priority = args.get("priority")
    if isinstance(priority, Sequence) and not isinstance(priority, str):
        names.extend(p for p in priority if isinstance(p, str))
    for key in ("pass_label", "fail_label", "fallback", "abstain_label"):
        if isinstance(args.get(key), str):
            names.append(args[key])
    scores = args.get("scores")
    if isinstance(scores, Mapping):
        names.extend(k for k in scores if isinstance(k, str))
    names.extend(args[k] for k in ("target", "disagree_label") if isinstance(args.get(k), str))
    return tuple(names)


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def _label(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a label (str), got {value!r}")
    return value


def _labels(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    # A bare string is a sequence of characters: almost certainly a missing pair of [].
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{name} must be None or a sequence of labels, got {value!r}")
    return tuple(_label(name, item) for item in value)


def _is_number(value: Any) -> bool:
    # float and int first: the ABC check is ten times slower, and this runs on every vote.
    kind = type(value)
    return kind is float or kind is int or (isinstance(value, Real) and kind is not bool)


def _unit(name: str, value: Any) -> float:
    if not _is_number(value) or not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{name} must be a number from 0 to 1, got {value!r}")
    return float(value)


def _number_map(name: str, value: Any, *, high: float) -> Mapping[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name} must be None or a mapping of str to number, got {value!r}")
    bound = "from 0 to 1" if high == 1.0 else "finite and >= 0"
    bad = {
        k: w
        for k, w in value.items()
        if not isinstance(k, str)
        or not _is_number(w)
        or not (math.isfinite(float(w)) and 0.0 <= float(w) <= high)
    }
    if bad:
        raise ConfigError(f"{name} must map str to numbers {bound}; invalid: {bad!r}")
    return {k: float(w) for k, w in value.items()}


@dataclass(frozen=True)
class _Ballot:
    label: str
    score: float | None
    weight: float
    abstained: bool


@dataclass(frozen=True)
class _Panel:
    """One item's ballots, how many valid verdicts produced them, and the policy."""

    ballots: tuple[_Ballot, ...]
    n_valid: int
    policy: _Policy

    @property
    def disagreement(self) -> bool:
        return len({b.label for b in self.ballots}) > 1

    @property
    def quorum_met(self) -> bool:
        return self.policy.min_valid is None or self.n_valid >= self.policy.min_valid


def _is_uncast(v: Verdict) -> bool:
    """A call that was never made (early stop, budget): not a vote and not a failure."""
    return v.kind == _SKIPPED or v.error_kind in _UNCAST_ERROR_KINDS


def _clamp_unit(x: float) -> float:
    # Verdict validates confidence, but model_construct skips validation; NaN counts as 0
    # (0.1 clamped NaN to 1.0 with min/max, which made "no idea" the strongest vote).
    return min(1.0, max(0.0, x)) if not math.isnan(x) else 0.0


def _score_of(v: Verdict, label: str, policy: _Policy) -> float | None:
    """The verdict's score, else the score of ``label`` (its label as counted)."""
    if v.score is not None:
        return v.score
    if policy.scores is not None and label in policy.scores:
        return policy.scores[label]
    if label == policy.pass_label:
        return 1.0
    if label == policy.fail_label:
        return 0.0
    return None


def _panel(verdicts: Sequence[Verdict], policy: _Policy, *, use_confidence: bool = False) -> _Panel:
    """Turn verdicts into ballots: the one place the error policy is applied, and where
    look-alike labels become one label (see the module's docstring)."""
    ballots: list[_Ballot] = []
    n_valid = 0
    made = [v for v in map(as_verdict, verdicts) if not _is_uncast(v)]
    # Answered at once for an all-ASCII vote under an all-ASCII policy (the usual case).
    counted_as = lookalike_labels([v.kind for v in made if v.error is None], policy.known_labels)
    for v in made:
        weight = policy.weights.get(v.critic_id, 1.0)
        if v.error is None:
            n_valid += 1
            if use_confidence:
                weight *= _clamp_unit(v.confidence)
            label = counted_as.get(v.kind, v.kind)
            ballots.append(_Ballot(label, _score_of(v, label, policy), weight, abstained=False))
        # An error ballot weighs its critic's weight without a confidence factor: a failed
        # call has confidence 0, which would make errors="fail" a no-op under `weighted`.
        elif policy.errors == "abstain":
            ballots.append(_Ballot(policy.abstain_label, None, weight, abstained=True))
        elif policy.errors == "fail":
            ballots.append(_Ballot(policy.fail_label, 0.0, weight, abstained=False))
    return _Panel(tuple(ballots), n_valid, policy)


def reconcile_labels(verdicts: Sequence[Verdict], kwargs: Mapping[str, Any]) -> list[Verdict]:
    """``verdicts`` with look-alike labels counted as one label, as every built-in counts
    them (see the module's docstring); an :class:`~cross_judge.Ensemble` applies it before
    voting, so its statistics (agreement, dissenters, per-item alpha) and a custom
    strategy see the labels the built-ins count.

    ``kwargs`` are the voting keywords: the labels they name (``priority``, ``pass_label``,
    ``fail_label``, ``fallback``, ``abstain_label``, ``scores`` keys, ``target``,
    ``disagree_label``; defaults ``PASS``, ``FAIL``, ``UNCLEAR``) are preferred as the
    spelling. A relabelled verdict is a copy with the new ``kind`` and, unless the parser
    already set it, ``written_label`` holding the label it had. Failed and skipped verdicts
    are never changed. Without look-alikes (any all-ASCII panel), the verdicts come back
    unchanged, as a new list.
    """
    given = [as_verdict(v) for v in verdicts]
    votes = [v for v in given if v.error is None and not _is_uncast(v)]
    counted_as = lookalike_labels(
        [v.kind for v in votes], _known_labels({**_POLICY_DEFAULTS, **kwargs})
    )
    if not counted_as:
        return given
    relabel = {id(v) for v in votes if v.kind in counted_as}
    return [
        v.model_copy(
            update={"kind": counted_as[v.kind], "written_label": v.written_label or v.kind}
        )
        if id(v) in relabel
        else v
        for v in given
    ]


def _quorum(panel: _Panel, vote: Vote) -> Vote:
    """Below the quorum the label is the fallback; the disagreement flag is kept."""
    if panel.quorum_met:
        return vote
    return Vote(panel.policy.fallback, vote.disagreement, fallback=True)


def _break_tie(tied: Sequence[str], policy: _Policy) -> str:
    """Resolve a tie among labels ``tied`` (in critic order) by the tie policy."""
    if policy.ties == "pass":
        return policy.pass_label
    if policy.ties == "fail":
        return policy.fail_label
    if policy.ties == "abstain":
        return policy.abstain_label
    for label in policy.priority:
        if label in tied:
            return label
    return tied[0]


def _plurality(panel: _Panel) -> Vote:
    """The most common ballot label; no ballot -> ``(fallback, False)``."""
    counts = Counter(b.label for b in panel.ballots)  # first-seen (critic) order
    if not counts:
        return Vote(panel.policy.fallback, False, fallback=True)
    top = max(counts.values())
    tied = [label for label, n in counts.items() if n == top]
    if len(tied) == 1:
        return Vote(tied[0], panel.disagreement)
    # A tie left to the abstain label is not a decision: it is a fallback like a missed
    # quorum (a cascade escalates it). The other tie policies decide.
    return Vote(
        _break_tie(tied, panel.policy),
        panel.disagreement,
        fallback=panel.policy.ties == "abstain",
    )


def _score_label(score: float, policy: _Policy) -> str:
    if score > policy.threshold:
        return policy.pass_label
    if score < policy.threshold:
        return policy.fail_label
    # Exactly at the threshold. "priority" follows the usual ">= threshold passes" rule.
    if policy.ties == "fail":
        return policy.fail_label
    if policy.ties == "abstain":
        return policy.abstain_label
    return policy.pass_label


def _score_vote(panel: _Panel, aggregate: Callable[[list[_Ballot]], float]) -> Vote:
    """Aggregate the scored ballots and label the result against the threshold."""
    scored = [b for b in panel.ballots if b.score is not None]
    if not scored:
        policy = panel.policy
        label = policy.abstain_label if any(b.abstained for b in panel.ballots) else policy.fallback
        return _quorum(panel, Vote(label, panel.disagreement, fallback=True))
    values = _scores(scored)
    # Rounding can land a mean a hair outside the scores it averages; it never belongs there.
    value = min(max(aggregate(scored), min(values)), max(values))
    return _quorum(panel, Vote(_score_label(value, panel.policy), panel.disagreement, value))


def _scores(ballots: list[_Ballot]) -> list[float]:
    return [b.score for b in ballots if b.score is not None]


# -- built-in strategies ------------------------------------------------------------------
#
# Every built-in has the same keyword-only policy parameters, spelled out so help() and
# type checkers show them, and starts with `_Policy.from_args(locals())`: at that point
# locals() is exactly the parameters.


def majority_vote(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The most common label wins (strategy ``majority``; a plurality, not > 50%).

    With default keywords the answers are cross-judge 0.1's: only valid verdicts vote;
    no ballot -> ``(fallback, False)``; a tie goes to the first tied label in ``priority``,
    else to the tied label seen first in critic order. ``disagreement`` is true when the
    ballots hold more than one label.

    Policies: ``errors`` turns ERROR/PARSE_FAIL verdicts into nothing (default), a ballot
    for ``abstain_label`` (default ``fallback``) or one for ``fail_label``; ``ties`` other
    than ``"priority"`` make every tie ``pass_label``/``fail_label``/``abstain_label``,
    whether or not a ballot holds that label; fewer valid verdicts than ``min_valid`` ->
    ``(fallback, disagreement)``. ``weights``, ``scores`` and ``threshold`` are accepted
    and ignored. SKIPPED verdicts (early stop, budget) never count.
    """
    policy = _Policy.from_args(locals())
    panel = _panel(verdicts, policy)
    return _quorum(panel, _plurality(panel))


def unanimous(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The label if every ballot agrees, else ``(fallback, True)`` (``unanimous``,
    ``consensus``).

    Edge case kept from 0.1: no ballot (empty input, all errors ignored) also gives
    ``(fallback, True)``. Ties: not applicable, unanimity is a threshold. With
    ``errors="abstain"`` or ``"fail"`` an error is a dissenting ballot and breaks unanimity.
    Fewer valid verdicts than ``min_valid`` -> ``(fallback, disagreement)``. ``ties``,
    ``priority``, ``pass_label``, ``weights``, ``scores`` and ``threshold`` are accepted and
    ignored.
    """
    policy = _Policy.from_args(locals())
    panel = _panel(verdicts, policy)
    labels = {b.label for b in panel.ballots}
    if len(labels) == 1:
        vote = Vote(labels.pop(), False)
    else:
        vote = Vote(policy.fallback, True, fallback=True)
    return _quorum(panel, vote)


def weighted_vote(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
    use_confidence: bool = True,
) -> Vote:
    """The label with the largest total weight wins (strategy ``weighted``).

    A valid verdict weighs ``weights.get(critic_id, 1.0)``, times its confidence clamped to
    [0, 1] when ``use_confidence``; an error counted by ``errors="abstain"``/``"fail"``
    weighs its critic's weight (its confidence, 0 for a failed call, is not applied).

    Ties (totals equal within 1e-9 relative, so the order of summation cannot decide) follow
    ``ties``; with ``"priority"``, the first tied label in ``priority``, else the first seen.
    All weights 0 is a tie among every label present. Unlike 0.1's legacy
    ``aggregation.weighted``, which gave ties and all-zero confidences to the first label
    inserted whatever the counts, the tie policy applies. No ballot -> ``(fallback, False)``;
    fewer valid verdicts than ``min_valid`` -> ``(fallback, disagreement)``.

    Raises:
        ConfigError: a negative or non-finite weight, or another invalid keyword.
    """
    policy = _Policy.from_args(locals())
    if not isinstance(use_confidence, bool):
        raise ConfigError(f"use_confidence must be True or False, got {use_confidence!r}")
    panel = _panel(verdicts, policy, use_confidence=use_confidence)
    totals: dict[str, list[float]] = {}
    for b in panel.ballots:
        totals.setdefault(b.label, []).append(b.weight)
    if not totals:
        return _quorum(panel, Vote(policy.fallback, False, fallback=True))
    sums = {label: math.fsum(ws) for label, ws in totals.items()}
    top = max(sums.values())
    tied = [
        label
        for label, total in sums.items()
        if math.isclose(total, top, rel_tol=1e-9, abs_tol=1e-12)
    ]
    label = tied[0] if len(tied) == 1 else _break_tie(tied, policy)
    return _quorum(panel, Vote(label, panel.disagreement))


def any_vote(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
    target: str | None = None,
) -> Vote:
    """``target`` (default ``pass_label``) wins if any ballot holds it (strategy ``any``).

    One ballot is enough: a veto, e.g. ``target="UNSAFE"``. Otherwise the result is
    :func:`majority_vote` over the ballots, where the ``ties`` policy applies; the target
    rule itself has no ties (not applicable, it is a threshold). With ``errors="fail"`` and
    ``target=fail_label`` one failed call decides. No ballot -> ``(fallback, False)``;
    fewer valid verdicts than ``min_valid`` -> ``(fallback, disagreement)``.
    """
    policy = _Policy.from_args(locals())
    wanted = policy.pass_label if target is None else _label("target", target)
    panel = _panel(verdicts, policy)
    if any(b.label == wanted for b in panel.ballots):
        return _quorum(panel, Vote(wanted, panel.disagreement))
    return _quorum(panel, _plurality(panel))


def first_disagreement(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
    disagree_label: str = "DISAGREE",
) -> Vote:
    """The label if every ballot agrees, else ``(disagree_label, True)``
    (strategy ``first_disagreement``, 0.1's legacy strategy of that name).

    No ballot -> ``(fallback, False)`` (unlike ``unanimous``). Ties: not applicable, any
    disagreement is the threshold. Fewer valid verdicts than ``min_valid`` ->
    ``(fallback, disagreement)``.
    """
    policy = _Policy.from_args(locals())
    marker = _label("disagree_label", disagree_label)
    panel = _panel(verdicts, policy)
    labels = {b.label for b in panel.ballots}
    if not labels:
        vote = Vote(policy.fallback, False, fallback=True)
    elif len(labels) == 1:
        vote = Vote(labels.pop(), False)
    else:
        vote = Vote(marker, True)
    return _quorum(panel, vote)


def average_score(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The mean of the ballot scores against ``threshold`` (strategy ``average``).

    A ballot's score is the verdict's ``score``, else ``scores[kind]``, else 1.0 for
    ``pass_label`` and 0.0 for ``fail_label``; other labels and abstentions have none and
    are skipped; ``errors="fail"`` ballots score 0.0. Label: ``pass_label`` above the
    threshold, ``fail_label`` below; exactly at it (a tie) ``ties="priority"`` and
    ``"pass"`` pass, ``"fail"`` fails, ``"abstain"`` gives ``abstain_label``.
    ``Vote.score`` is the mean. No scored ballot -> ``abstain_label`` if an error abstained,
    else ``fallback``, with score ``None``; fewer valid verdicts than ``min_valid`` ->
    ``(fallback, disagreement)``, score ``None``. ``disagreement``: more than one distinct
    label among the ballots.
    """
    policy = _Policy.from_args(locals())
    return _score_vote(_panel(verdicts, policy), lambda bs: math.fsum(_scores(bs)) / len(bs))


def weighted_average_score(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The mean of the ballot scores weighted by ``weights[critic_id]`` (default 1.0)
    (strategy ``weighted_average``).

    Weights are renormalised over the ballots that have a score, so a failed or unscored
    critic does not drag the result toward 0. If every scored ballot weighs 0, the plain
    mean is used (all equally unimportant is all equal). Scores, threshold, ties and the
    empty and quorum cases are as in :func:`average_score`.

    Raises:
        ConfigError: a negative or non-finite weight, or another invalid keyword.
    """
    policy = _Policy.from_args(locals())

    def mean(ballots: list[_Ballot]) -> float:
        total = math.fsum(b.weight for b in ballots)
        if total == 0.0:
            return math.fsum(_scores(ballots)) / len(ballots)
        return math.fsum(b.weight * s for b in ballots if (s := b.score) is not None) / total

    return _score_vote(_panel(verdicts, policy), mean)


def median_score(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The median of the ballot scores (strategy ``median``); an even count gives the mean
    of the middle two. Robust to one outlying critic.

    Scores, threshold, ties and the empty and quorum cases are as in :func:`average_score`.
    """
    policy = _Policy.from_args(locals())
    return _score_vote(_panel(verdicts, policy), lambda bs: statistics.median(_scores(bs)))


def trimmed_mean_score(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
    trim: float = 0.1,
) -> Vote:
    """The mean of the ballot scores after dropping the ``trim`` share (in [0, 0.5)) of
    them at each end, at least one at each end with three or more ballots (strategy
    ``trimmed_mean``, as trulens' jury): one outlying critic cannot move it. One or two
    ballots are averaged whole. Otherwise as :func:`average_score`.

    Raises:
        ConfigError: ``trim`` outside [0, 0.5), or another invalid keyword.
    """
    policy = _Policy.from_args(locals())
    if isinstance(trim, bool) or not _is_number(trim) or not 0.0 <= trim < 0.5:
        raise ConfigError(f"trim must be a share in [0, 0.5), got {trim!r}")

    def mean(ballots: list[_Ballot]) -> float:
        ordered = sorted(_scores(ballots))
        cut = max(1, int(len(ordered) * trim)) if len(ordered) >= 3 and trim > 0 else 0
        kept = ordered[cut : len(ordered) - cut]
        return math.fsum(kept) / len(kept)

    return _score_vote(_panel(verdicts, policy), mean)


def highest_score(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The highest ballot score (strategy ``highest``): passes if any critic is satisfied.

    Scores, threshold, ties and the empty and quorum cases are as in :func:`average_score`.
    """
    policy = _Policy.from_args(locals())
    return _score_vote(_panel(verdicts, policy), lambda bs: max(_scores(bs)))


def lowest_score(
    verdicts: Sequence[Verdict],
    *,
    errors: ErrorPolicy = "ignore",
    ties: TiePolicy = "priority",
    min_valid: int | None = None,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
    pass_label: str = "PASS",
    fail_label: str = "FAIL",
    abstain_label: str | None = None,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, float] | None = None,
    threshold: float = 0.5,
) -> Vote:
    """The lowest ballot score (strategy ``lowest``): passes only if every critic is.

    Scores, threshold, ties and the empty and quorum cases are as in :func:`average_score`;
    with ``errors="fail"`` one failed call scores 0.0 and fails the item.
    """
    policy = _Policy.from_args(locals())
    return _score_vote(_panel(verdicts, policy), lambda bs: min(_scores(bs)))


_BUILTINS: tuple[VotingStrategy, ...] = (
    majority_vote,
    unanimous,
    weighted_vote,
    any_vote,
    first_disagreement,
    average_score,
    weighted_average_score,
    median_score,
    trimmed_mean_score,
    highest_score,
    lowest_score,
)


def _keyword_names(fn: Callable[..., Any]) -> frozenset[str]:
    params = inspect.signature(fn).parameters.values()
    return frozenset(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


_POLICY_DEFAULTS: dict[str, Any] = {
    p.name: p.default
    for p in inspect.signature(majority_vote).parameters.values()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
}
"""Every policy keyword and its default (the same in every built-in)."""

# Identity-keyed (a list of pairs, not a dict): a custom callable need not be hashable.
_BUILTIN_KEYWORDS: list[tuple[VotingStrategy, frozenset[str]]] = [
    (fn, _keyword_names(fn)) for fn in _BUILTINS
]


def _builtin_keywords(fn: object) -> frozenset[str] | None:
    for builtin, names in _BUILTIN_KEYWORDS:
        if fn is builtin:
            return names
    return None


# -- registry -----------------------------------------------------------------------------

VOTING_STRATEGIES: dict[str, VotingStrategy] = {
    "majority": majority_vote,
    "unanimous": unanimous,
    "consensus": unanimous,
    "weighted": weighted_vote,
    "any": any_vote,
    "first_disagreement": first_disagreement,
    "average": average_score,
    "weighted_average": weighted_average_score,
    "median": median_score,
    "trimmed_mean": trimmed_mean_score,
    "highest": highest_score,
    "lowest": lowest_score,
}
"""Strategies by lower-case name."""


def register_voting_strategy(name: str, fn: VotingStrategy, *, replace: bool = False) -> None:
    """Register ``fn`` under ``name`` (stripped, lower-cased), for ``voting=name``.
    ``ConfigError`` for an empty name, an ``fn`` that is not callable, or a name taken
    (built-ins included) without ``replace=True``."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a voting strategy name must be a non-empty string, got {name!r}")
    if not callable(fn):
        raise ConfigError(f"voting strategy {name!r} must be callable, got {fn!r}")
    key = name.strip().lower()
    if key in VOTING_STRATEGIES and not replace:
        raise ConfigError(
            f"voting strategy {key!r} is already registered; pass replace=True to replace it"
        )
    VOTING_STRATEGIES[key] = fn


BATCH_STRATEGIES = frozenset({"dawid_skene"})
"""Names that re-decide a whole batch and are no per-item strategy:
``BatchResult.revote`` takes them, the per-item look-up refuses them with a pointer there."""


def get_voting_strategy(name_or_fn: str | VotingStrategy) -> VotingStrategy:
    """A strategy by name (case-insensitive, surrounding spaces ignored), or the callable.

    Raises:
        UnknownStrategyError: (a ``ConfigError`` and a ``KeyError``) unknown name; the
            message lists the known ones. A batch-level name (``"dawid_skene"``, which
            learns from every item) says to re-vote the batch instead.
    """
    try:
        return _lookup_strategy(name_or_fn, VOTING_STRATEGIES, what="voting strategy")
    except UnknownStrategyError:
        name = str(name_or_fn).strip().lower()
        if name not in BATCH_STRATEGIES:
            raise
    raise UnknownStrategyError(
        f"{name!r} learns each critic's reliability from a whole batch, so it cannot "
        "decide one item on its own: vote per item with another strategy (e.g. "
        f"'majority'), then re-vote the batch: batch.revote({name!r}) "
        f"(BatchResult.revote), or cross-judge revote OUT.jsonl --voting {name}"
    )


StrategyT = TypeVar("StrategyT", bound=Callable[..., tuple[str, bool]])


def _lookup_strategy(
    name_or_fn: str | StrategyT, table: Mapping[str, StrategyT], *, what: str
) -> StrategyT:
    """``table[name]`` (case-insensitive, spaces ignored), or the callable itself; an
    unknown name raises ``UnknownStrategyError`` listing ``table``'s names. Shared by
    :func:`get_voting_strategy` and the legacy ``aggregation.get_strategy``."""
    if callable(name_or_fn):
        return name_or_fn
    strategy = table.get(str(name_or_fn).strip().lower())
    if strategy is None:
        raise UnknownStrategyError(f"Unknown {what} {name_or_fn!r}. Known: {sorted(table)}.")
    return strategy


def strategy_name(strategy: str | VotingStrategy) -> str:
    """The name recorded in ``EnsembleVerdict.voting``: a string as given (0.1 does not
    normalise ``"MAJORITY"``), else the callable's ``__name__``, else ``"custom"``."""
    if isinstance(strategy, str):
        return strategy
    name: Any = getattr(strategy, "__name__", "custom")
    return str(name)


_strategy_name = strategy_name  # the pre-registry private name


# -- validation ---------------------------------------------------------------------------


def validate_voting(strategy: str | VotingStrategy, kwargs: Mapping[str, Any]) -> VotingStrategy:
    """Resolve ``strategy`` and check that ``strategy(verdicts, **kwargs)`` can run.

    Meant for construction time, before any model is billed. Built-ins: every name must be
    one they accept and every value valid (checked by running the strategy on an empty
    panel, so the check is the call's own). Custom callables: the signature must bind one
    positional argument plus ``kwargs``; a callable whose signature cannot be inspected is
    accepted unchecked. Returns the resolved callable.

    Raises:
        ConfigError: unknown strategy (also a ``KeyError``), an unknown keyword (the message
            lists the accepted ones), an invalid value, or a custom callable that does not
            accept a keyword (the message names it).
    """
    fn = get_voting_strategy(strategy)
    name = strategy_name(strategy)
    non_str = [k for k in kwargs if not isinstance(k, str)]
    if non_str:
        raise ConfigError(f"voting keyword names must be strings, got {non_str!r}")
    accepted = _builtin_keywords(fn)
    if accepted is not None:
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise ConfigError(
                f"voting strategy {name!r} does not accept {', '.join(map(repr, unknown))}; "
                f"it accepts: {', '.join(sorted(accepted))}"
            )
        fn([], **kwargs)
        return fn
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    try:
        signature.bind([], **kwargs)
    except TypeError as exc:
        rejected = [k for k in kwargs if not _signature_accepts(signature, k)]
        what = (
            f"does not accept {', '.join(map(repr, rejected))}"
            if rejected
            else f"cannot be called as strategy(verdicts, **kwargs): {exc}"
        )
        raise ConfigError(f"custom voting strategy {name!r} {what}") from exc
    return fn


def _signature_accepts(signature: inspect.Signature, name: str) -> bool:
    try:
        signature.bind_partial([], **{name: None})
    except TypeError:
        return False
    return True


def accepts_kwarg(strategy: str | VotingStrategy, name: str) -> bool:
    """Whether ``strategy`` takes keyword ``name``.

    Built-ins take every policy keyword (plus their own extras). A custom callable takes it
    if it has that parameter (not positional-only, not the verdicts slot) or ``**kwargs``.
    A callable whose signature cannot be inspected gives False: a caller should not inject
    arguments it cannot show are accepted.
    """
    fn = get_voting_strategy(strategy)
    accepted = _builtin_keywords(fn)
    if accepted is not None:
        return name in accepted
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return _signature_accepts(signature, name)


# -- early stop ---------------------------------------------------------------------------


def supports_early_stop(strategy: str | VotingStrategy) -> bool:
    """True for the built-in ``majority`` and ``unanimous`` (by name or function); an
    unknown name raises ``UnknownStrategyError``."""
    fn = get_voting_strategy(strategy)
    return fn is majority_vote or fn is unanimous


def outcome_is_decided(
    strategy: str | VotingStrategy,
    verdicts_so_far: Sequence[Verdict],
    remaining: int,
    kwargs: Mapping[str, Any],
) -> bool:
    """True when the consensus label cannot change whatever the ``remaining`` critics say.

    Each remaining critic adds at most one ballot, to any label (a brand-new one, the fail
    or abstain label of an error), or none. ``majority``: decided iff one label's ballot
    count exceeds every other label's count plus ``remaining`` (and ``remaining`` itself,
    for a label nobody has voted yet), and the ``min_valid`` quorum, if set, is already met
    by valid verdicts. ``unanimous``: decided iff the ballots already hold two distinct
    labels (the result is the fallback). This is a sufficient test, deliberately
    conservative: e.g. a quorum that can no longer be reached is not reported as decided.
    Only the label is decided; the disagreement flag may still change.

    Raises:
        ConfigError: a strategy other than ``majority``/``unanimous`` ("early_stop supports
            majority and unanimous"), a negative ``remaining``, or invalid ``kwargs``.
    """
    fn = get_voting_strategy(strategy)
    if not supports_early_stop(fn):
        raise ConfigError(
            f"early_stop supports majority and unanimous, not {strategy_name(strategy)!r}"
        )
    if isinstance(remaining, bool) or not isinstance(remaining, int) or remaining < 0:
        raise ConfigError(f"remaining must be an integer >= 0, got {remaining!r}")
    validate_voting(fn, kwargs)
    panel = _panel(verdicts_so_far, _Policy.from_args({**_POLICY_DEFAULTS, **kwargs}))
    counts = Counter(b.label for b in panel.ballots)
    if fn is unanimous:
        return len(counts) > 1
    if not counts or not panel.quorum_met:
        return False
    ranked = counts.most_common()
    top = ranked[0][1]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    # A runner-up of 0 also covers a label nobody has voted for yet.
    return top > runner_up + remaining


_HYPOTHETICAL = ("\x00cross-judge-leader", "\x00cross-judge-other")


def calls_to_decide(
    strategy: str | VotingStrategy,
    verdicts_so_far: Sequence[Verdict],
    remaining: int,
    kwargs: Mapping[str, Any],
) -> int:
    """The fewest further verdicts that could decide an outcome not decided yet (see
    :func:`outcome_is_decided`), for staged early stop: asking fewer critics can never
    decide, so asking more than this at once may waste calls.

    Tries ``m = 1, 2, ...`` further valid votes, all for the current leader (the best case
    for ``majority``), or all but one for it and one for another label (the best case for
    ``unanimous``, which a single dissent decides). Returns ``remaining`` when no ``m`` up
    to it could decide (a quorum out of reach, say), and 0 when ``remaining`` is 0.

    Raises:
        ConfigError: as :func:`outcome_is_decided`.
    """
    if remaining <= 0:
        return 0
    counts = Counter(
        v.kind for v in map(as_verdict, verdicts_so_far) if v.error is None and not _is_uncast(v)
    )
    leader = counts.most_common(1)[0][0] if counts else _HYPOTHETICAL[0]
    for m in range(1, remaining + 1):
        for dissent in (0, 1):
            labels = [leader] * (m - dissent) + [_HYPOTHETICAL[1]] * dissent
            hypothetical = [
                Verdict.model_construct(
                    kind=label,
                    error=None,
                    error_kind=None,
                    critic_id=f"\x00hypothetical-{i}",
                    confidence=1.0,
                    score=None,
                )
                for i, label in enumerate(labels)
            ]
            decided = outcome_is_decided(
                strategy, [*verdicts_so_far, *hypothetical], remaining - m, kwargs
            )
            if decided:
                return m
    return remaining
