"""Voting strategies: turn one item's verdicts into ``(consensus_label, disagreement)``.

A strategy is any callable ``(verdicts, **kwargs) -> (label, disagreement)``, the shape of
cross-judge 0.1, registered by name in :data:`VOTING_STRATEGIES`. Only *valid* verdicts
(``error is None``) vote; ``ERROR`` and ``PARSE_FAIL`` verdicts are left out of every
count and denominator, as in 0.1.

This module holds 0.1's strategies with 0.1's answers (``majority``, ``unanimous``) and its
per-item agreement numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ConfigError
from .verdict import Verdict

__all__ = [
    "VOTING_STRATEGIES",
    "VotingStrategy",
    "agreement_pct",
    "get_voting_strategy",
    "krippendorff_alpha",
    "majority_vote",
    "unanimous",
]

VotingStrategy = Callable[..., tuple[str, bool]]
"""``(verdicts, **kwargs) -> (consensus_label, disagreement)``."""


def _valid(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.error is None]


def _label_counts(verdicts: Sequence[Verdict]) -> Counter[str]:
    """Votes per label among valid verdicts, in first-seen order."""
    return Counter(v.kind for v in verdicts if v.error is None)


def majority_vote(
    verdicts: Sequence[Verdict],
    *,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
) -> tuple[str, bool]:
    """The most common label wins.

    Edge cases (cross-judge 0.1 semantics): no valid verdict -> ``(fallback, False)``;
    a tie goes to the first tied label in ``priority``, else to the tied label seen first
    in critic order. ``disagreement`` is true when valid verdicts hold more than one label.
    """
    counts = _label_counts(verdicts)
    if not counts:
        return fallback, False
    disagree = len(counts) > 1
    top = max(counts.values())
    tied = [label for label, n in counts.items() if n == top]  # Counter keeps first-seen order
    if len(tied) > 1 and priority:
        for label in priority:
            if label in tied:
                return label, disagree
    return tied[0], disagree


def unanimous(verdicts: Sequence[Verdict], *, fallback: str = "UNCLEAR") -> tuple[str, bool]:
    """The label if every valid verdict agrees, else ``(fallback, True)``.

    Edge case kept from 0.1: no valid verdict also gives ``(fallback, True)``.
    """
    labels = {v.kind for v in verdicts if v.error is None}
    if len(labels) == 1:
        return labels.pop(), False
    return fallback, True


def agreement_pct(verdicts: Sequence[Verdict], consensus: str) -> float:
    """Fraction of valid verdicts whose label equals ``consensus`` (0.0 if none is valid).

    Errors are not in the denominator: 1 valid vote out of 3 critics that matches gives 1.0.
    """
    valid = _valid(verdicts)
    if not valid:
        return 0.0
    return sum(1 for v in valid if v.kind == consensus) / len(valid)


def krippendorff_alpha(verdicts: Sequence[Verdict]) -> float | None:
    """cross-judge 0.1's per-item "Krippendorff's alpha", kept for compatibility.

    On a single item, observed and expected disagreement are computed from the same label
    counts and are equal whenever they are non-zero, so this can only return ``None``
    (fewer than 2 valid verdicts), ``1.0`` (all valid verdicts agree) or ``0.0`` give or
    take ~4e-16 of rounding (any disagreement). It is an "all agree?" flag, not a
    reliability estimate: use Krippendorff's alpha over many items (critics x items) for
    that.
    """
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


VOTING_STRATEGIES: dict[str, VotingStrategy] = {
    "majority": majority_vote,
    "unanimous": unanimous,
}
"""Strategies by lower-case name."""


def get_voting_strategy(name_or_fn: str | VotingStrategy) -> VotingStrategy:
    """A strategy by name (case-insensitive), or the callable itself.

    Raises:
        KeyError: (also a ``ConfigError``) unknown name; the message lists the known ones.
    """
    if callable(name_or_fn):
        return name_or_fn
    strategy = VOTING_STRATEGIES.get(str(name_or_fn).strip().lower())
    if strategy is None:
        raise _UnknownStrategyError(
            f"Unknown voting strategy {name_or_fn!r}. Known: {sorted(VOTING_STRATEGIES)}."
        )
    return strategy


class _UnknownStrategyError(ConfigError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _strategy_name(strategy: str | VotingStrategy) -> str:
    if isinstance(strategy, str):
        return strategy
    name: Any = getattr(strategy, "__name__", "custom")
    return str(name)
