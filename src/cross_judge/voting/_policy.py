"""The policy keywords every built-in strategy shares, and ballots.

:class:`Policy` validates the keywords (``errors``, ``ties``, ``min_valid``, ``priority``,
``fallback``, ``pass_label``, ``fail_label``, ``abstain_label``, ``weights``, ``scores``,
``threshold``); :func:`cast_ballots` turns one item's verdicts into ballots, the one place
the error policy is applied and look-alike labels become one label (see the package's
docstring); :func:`apply_quorum` applies ``min_valid``. No strategy is here: the label and
score strategies (``_labels``, ``_scores``) build on these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal, get_args

from ..errors import ConfigError, ErrorKind
from ..verdict import Verdict, as_verdict, lookalike_labels
from ._vote import Vote

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

POLICY_DEFAULTS: dict[str, Any] = {
    "errors": "ignore",
    "ties": "priority",
    "min_valid": None,
    "priority": None,
    "fallback": "UNCLEAR",
    "pass_label": "PASS",
    "fail_label": "FAIL",
    "abstain_label": None,
    "weights": None,
    "scores": None,
    "threshold": 0.5,
}
"""Every policy keyword and its default: the same in every built-in's signature (a test
holds each built-in to it)."""


@dataclass(frozen=True)
class Policy:
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
    def from_args(cls, args: Mapping[str, Any]) -> Policy:
        """Validate the policy keywords in ``args`` (a built-in's ``locals()``).

        Every name of :data:`POLICY_DEFAULTS` must be present; other names are ignored.

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
        fallback = checked_label("fallback", args["fallback"])
        abstain = args["abstain_label"]
        return cls(
            errors=errors,
            ties=ties,
            min_valid=min_valid,
            priority=_labels("priority", args["priority"]),
            fallback=fallback,
            pass_label=checked_label("pass_label", args["pass_label"]),
            fail_label=checked_label("fail_label", args["fail_label"]),
            abstain_label=fallback if abstain is None else checked_label("abstain_label", abstain),
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


def checked_label(name: str, value: Any) -> str:
    """``value``, checked to be a label (a ``str``); ``ConfigError`` naming ``name`` if not."""
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a label (str), got {value!r}")
    return value


def _labels(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    # A bare string is a sequence of characters: almost certainly a missing pair of [].
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{name} must be None or a sequence of labels, got {value!r}")
    return tuple(checked_label(name, item) for item in value)


def is_number(value: Any) -> bool:
    """A real number, ``bool`` aside."""
    # float and int first: the ABC check is ten times slower, and this runs on every vote.
    kind = type(value)
    return kind is float or kind is int or (isinstance(value, Real) and kind is not bool)


def _unit(name: str, value: Any) -> float:
    if not is_number(value) or not 0.0 <= float(value) <= 1.0:
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
        or not is_number(w)
        or not (math.isfinite(float(w)) and 0.0 <= float(w) <= high)
    }
    if bad:
        raise ConfigError(f"{name} must map str to numbers {bound}; invalid: {bad!r}")
    return {k: float(w) for k, w in value.items()}


@dataclass(frozen=True)
class Ballot:
    """One counted vote: its label, score (``None``: none), weight, and whether it is an
    error counted as an abstention."""

    label: str
    score: float | None
    weight: float
    abstained: bool


@dataclass(frozen=True)
class BallotBox:
    """One item's ballots, how many valid verdicts produced them, and the policy."""

    ballots: tuple[Ballot, ...]
    n_valid: int
    policy: Policy

    @property
    def disagreement(self) -> bool:
        return len({b.label for b in self.ballots}) > 1

    @property
    def quorum_met(self) -> bool:
        return self.policy.min_valid is None or self.n_valid >= self.policy.min_valid


def is_uncast(v: Verdict) -> bool:
    """A call that was never made (early stop, budget): not a vote and not a failure."""
    return v.kind == _SKIPPED or v.error_kind in _UNCAST_ERROR_KINDS


def _clamp_unit(x: float) -> float:
    # Verdict validates confidence, but model_construct skips validation; NaN counts as 0
    # (0.1 clamped NaN to 1.0 with min/max, which made "no idea" the strongest vote).
    return min(1.0, max(0.0, x)) if not math.isnan(x) else 0.0


def _score_of(v: Verdict, label: str, policy: Policy) -> float | None:
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


def cast_ballots(
    verdicts: Sequence[Verdict], policy: Policy, *, use_confidence: bool = False
) -> BallotBox:
    """Turn verdicts into ballots: the one place the error policy is applied, and where
    look-alike labels become one label (see the module's docstring)."""
    ballots: list[Ballot] = []
    n_valid = 0
    made = [v for v in map(as_verdict, verdicts) if not is_uncast(v)]
    # Answered at once for an all-ASCII vote under an all-ASCII policy (the usual case).
    counted_as = lookalike_labels([v.kind for v in made if v.error is None], policy.known_labels)
    for v in made:
        weight = policy.weights.get(v.critic_id, 1.0)
        if v.error is None:
            n_valid += 1
            if use_confidence:
                weight *= _clamp_unit(v.confidence)
            label = counted_as.get(v.kind, v.kind)
            ballots.append(Ballot(label, _score_of(v, label, policy), weight, abstained=False))
        # An error ballot weighs its critic's weight without a confidence factor: a failed
        # call has confidence 0, which would make errors="fail" a no-op under `weighted`.
        elif policy.errors == "abstain":
            ballots.append(Ballot(policy.abstain_label, None, weight, abstained=True))
        elif policy.errors == "fail":
            ballots.append(Ballot(policy.fail_label, 0.0, weight, abstained=False))
    return BallotBox(tuple(ballots), n_valid, policy)


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
    votes = [v for v in given if v.error is None and not is_uncast(v)]
    counted_as = lookalike_labels(
        [v.kind for v in votes], _known_labels({**POLICY_DEFAULTS, **kwargs})
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


def apply_quorum(panel: BallotBox, vote: Vote) -> Vote:
    """Below the quorum the label is the fallback; the disagreement flag is kept."""
    if panel.quorum_met:
        return vote
    return Vote(panel.policy.fallback, vote.disagreement, fallback=True)
