"""Early stop: whether the remaining critics can still change an item's label.

The Ensemble asks :func:`outcome_is_decided` after each verdict and, for staged early stop,
:func:`calls_to_decide` how many more to ask at once. Only ``majority`` and ``unanimous``
support it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..verdict import Verdict, as_verdict
from ._labels import majority_vote, unanimous
from ._policy import POLICY_DEFAULTS, Policy, cast_ballots, is_uncast
from ._registry import get_voting_strategy, strategy_name, validate_voting
from ._vote import VotingStrategy


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
    panel = cast_ballots(verdicts_so_far, Policy.from_args({**POLICY_DEFAULTS, **kwargs}))
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
        v.kind for v in map(as_verdict, verdicts_so_far) if v.error is None and not is_uncast(v)
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
