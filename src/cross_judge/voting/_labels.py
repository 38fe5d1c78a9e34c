"""The label strategies: ``majority``, ``unanimous``, ``weighted``, ``any``,
``first_disagreement``. Each counts ballot labels; none reads a score (see ``_scores``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from ..errors import ConfigError
from ..verdict import Verdict
from ._policy import (
    BallotBox,
    ErrorPolicy,
    Policy,
    TiePolicy,
    apply_quorum,
    cast_ballots,
    checked_label,
)
from ._vote import Vote, VotingStrategy


def _break_tie(tied: Sequence[str], policy: Policy) -> str:
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


def _plurality(panel: BallotBox) -> Vote:
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


# -- built-in strategies ------------------------------------------------------------------
#
# Every built-in has the same keyword-only policy parameters, spelled out so help() and
# type checkers show them, and starts with `Policy.from_args(locals())`: at that point
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
    policy = Policy.from_args(locals())
    panel = cast_ballots(verdicts, policy)
    return apply_quorum(panel, _plurality(panel))


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
    policy = Policy.from_args(locals())
    panel = cast_ballots(verdicts, policy)
    labels = {b.label for b in panel.ballots}
    if len(labels) == 1:
        vote = Vote(labels.pop(), False)
    else:
        vote = Vote(policy.fallback, True, fallback=True)
    return apply_quorum(panel, vote)


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
    policy = Policy.from_args(locals())
    if not isinstance(use_confidence, bool):
        raise ConfigError(f"use_confidence must be True or False, got {use_confidence!r}")
    panel = cast_ballots(verdicts, policy, use_confidence=use_confidence)
    totals: dict[str, list[float]] = {}
    for b in panel.ballots:
        totals.setdefault(b.label, []).append(b.weight)
    if not totals:
        return apply_quorum(panel, Vote(policy.fallback, False, fallback=True))
    sums = {label: math.fsum(ws) for label, ws in totals.items()}
    top = max(sums.values())
    tied = [
        label
        for label, total in sums.items()
        if math.isclose(total, top, rel_tol=1e-9, abs_tol=1e-12)
    ]
    label = tied[0] if len(tied) == 1 else _break_tie(tied, policy)
    return apply_quorum(panel, Vote(label, panel.disagreement))


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
    policy = Policy.from_args(locals())
    wanted = policy.pass_label if target is None else checked_label("target", target)
    panel = cast_ballots(verdicts, policy)
    if any(b.label == wanted for b in panel.ballots):
        return apply_quorum(panel, Vote(wanted, panel.disagreement))
    return apply_quorum(panel, _plurality(panel))


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
    policy = Policy.from_args(locals())
    marker = checked_label("disagree_label", disagree_label)
    panel = cast_ballots(verdicts, policy)
    labels = {b.label for b in panel.ballots}
    if not labels:
        vote = Vote(policy.fallback, False, fallback=True)
    elif len(labels) == 1:
        vote = Vote(labels.pop(), False)
    else:
        vote = Vote(marker, True)
    return apply_quorum(panel, vote)


LABEL_STRATEGIES: tuple[VotingStrategy, ...] = (
    majority_vote,
    unanimous,
    weighted_vote,
    any_vote,
    first_disagreement,
)
"""The built-in label strategies, in registry order: they count labels, and take
``pass_label``/``fail_label`` as labels a critic may give (the score strategies produce
them)."""
