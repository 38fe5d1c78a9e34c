"""The score strategies: ``average``, ``weighted_average``, ``median``, ``trimmed_mean``,
``highest``, ``lowest``. Each aggregates ballot scores and labels the result against
``threshold``: ``pass_label`` above, ``fail_label`` below, the tie policy exactly at it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence

from ..errors import ConfigError
from ..verdict import Verdict
from ._policy import (
    Ballot,
    BallotBox,
    ErrorPolicy,
    Policy,
    TiePolicy,
    apply_quorum,
    cast_ballots,
    is_number,
)
from ._vote import Vote, VotingStrategy


def _score_label(score: float, policy: Policy) -> str:
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


def _score_vote(panel: BallotBox, aggregate: Callable[[list[Ballot]], float]) -> Vote:
    """Aggregate the scored ballots and label the result against the threshold."""
    scored = [b for b in panel.ballots if b.score is not None]
    if not scored:
        policy = panel.policy
        label = policy.abstain_label if any(b.abstained for b in panel.ballots) else policy.fallback
        return apply_quorum(panel, Vote(label, panel.disagreement, fallback=True))
    values = _scores(scored)
    # Rounding can land a mean a hair outside the scores it averages; it never belongs there.
    value = min(max(aggregate(scored), min(values)), max(values))
    return apply_quorum(panel, Vote(_score_label(value, panel.policy), panel.disagreement, value))


def _scores(ballots: list[Ballot]) -> list[float]:
    return [b.score for b in ballots if b.score is not None]


# The policy parameters are spelled out in each, as in the label strategies (see there).


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
    policy = Policy.from_args(locals())
    return _score_vote(cast_ballots(verdicts, policy), lambda bs: math.fsum(_scores(bs)) / len(bs))


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
    policy = Policy.from_args(locals())

    def mean(ballots: list[Ballot]) -> float:
        total = math.fsum(b.weight for b in ballots)
        if total == 0.0:
            return math.fsum(_scores(ballots)) / len(ballots)
        return math.fsum(b.weight * s for b in ballots if (s := b.score) is not None) / total

    return _score_vote(cast_ballots(verdicts, policy), mean)


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
    policy = Policy.from_args(locals())
    return _score_vote(cast_ballots(verdicts, policy), lambda bs: statistics.median(_scores(bs)))


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
    policy = Policy.from_args(locals())
    if isinstance(trim, bool) or not is_number(trim) or not 0.0 <= trim < 0.5:
        raise ConfigError(f"trim must be a share in [0, 0.5), got {trim!r}")

    def mean(ballots: list[Ballot]) -> float:
        ordered = sorted(_scores(ballots))
        cut = max(1, int(len(ordered) * trim)) if len(ordered) >= 3 and trim > 0 else 0
        kept = ordered[cut : len(ordered) - cut]
        return math.fsum(kept) / len(kept)

    return _score_vote(cast_ballots(verdicts, policy), mean)


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
    policy = Policy.from_args(locals())
    return _score_vote(cast_ballots(verdicts, policy), lambda bs: max(_scores(bs)))


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
    policy = Policy.from_args(locals())
    return _score_vote(cast_ballots(verdicts, policy), lambda bs: min(_scores(bs)))


SCORE_STRATEGIES: tuple[VotingStrategy, ...] = (
    average_score,
    weighted_average_score,
    median_score,
    trimmed_mean_score,
    highest_score,
    lowest_score,
)
"""The built-in score strategies, in registry order: they aggregate scores and produce
``pass_label``/``fail_label`` against ``threshold``."""
