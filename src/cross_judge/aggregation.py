"""cross-judge 0.1's legacy aggregation strategies, for :class:`~cross_judge.panel.JudgePanel`.

A thin 0.1-compatible shim. Each strategy takes one item's verdicts and returns
``(consensus_label, disagreement)``, reading only ``.verdict``, ``.error``, ``.confidence``
and ``.reviewer_id``, so legacy and new verdicts (whose properties alias those names) are
both accepted. Only valid verdicts (``error is None``) vote.

``majority``, ``unanimous`` and ``first_disagreement`` delegate to
:mod:`cross_judge.voting` and give 0.1's answers. ``weighted`` keeps 0.1's own rule,
quirks included (bug B23: a tie goes to the label seen first, whatever the counts); the
fixed version is :func:`cross_judge.voting.weighted_vote`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from . import voting
from .verdict import Verdict as NewVerdict

__all__ = [
    "STRATEGIES",
    "AggregationStrategy",
    "avg_confidence",
    "first_disagreement",
    "get_strategy",
    "majority",
    "unanimous",
    "weighted",
]

AggregationStrategy = Callable[..., tuple[str, bool]]
"""``(verdicts, **kwargs) -> (consensus_label, disagreement)``."""

# Stand-ins for a non-string fallback or disagree_label (0.1 returned any object as given;
# voting accepts only labels). No model label can equal one.
_STAND_IN = "\x00cross-judge-legacy-{}\x00"


def _label_counts(verdicts: Iterable[Any]) -> Counter[str]:
    """Votes per label among valid verdicts, in first-seen order."""
    return Counter(v.verdict for v in verdicts if v.error is None)


def _any_disagreement(verdicts: Iterable[Any]) -> bool:
    """True when the valid verdicts hold more than one distinct label."""
    return len({v.verdict for v in verdicts if v.error is None}) > 1


def _as_new(verdict: Any) -> NewVerdict:
    """A new verdict carrying what voting reads: label, error, confidence, reviewer id."""
    if isinstance(verdict, NewVerdict):
        return verdict
    # model_construct: no validation, so anything 0.1 accepted here is accepted too.
    return NewVerdict.model_construct(
        kind=verdict.verdict,
        error=verdict.error,
        confidence=getattr(verdict, "confidence", 0.0),
        critic_id=getattr(verdict, "reviewer_id", ""),
    )


def _delegate(
    strategy: Callable[..., tuple[str, bool]],
    verdicts: Iterable[Any],
    labels: Mapping[str, object],
    **kwargs: Any,
) -> tuple[str, bool]:
    """Run a :mod:`cross_judge.voting` strategy on ``verdicts`` with 0.1's argument rules.

    ``labels`` are the label keywords (``fallback``, ...); any that is not a string is
    passed as a stand-in and swapped back in the result, as 0.1 returned it unchanged.
    """
    passed = {k: v if isinstance(v, str) else _STAND_IN.format(k) for k, v in labels.items()}
    label, disagreement = strategy([_as_new(v) for v in verdicts], **passed, **kwargs)
    for key, value in labels.items():
        if label == _STAND_IN.format(key) and not isinstance(value, str):
            return value, bool(disagreement)  # type: ignore[return-value]
    return label, bool(disagreement)


def majority(
    verdicts: Sequence[Any],
    *,
    priority: Sequence[str] | None = None,
    fallback: str = "UNCLEAR",
) -> tuple[str, bool]:
    """The most common label wins; ``disagreement`` if more than one label was voted.

    A tie goes to the first tied label in ``priority``, else to the tied label seen first.
    No valid verdict gives ``(fallback, False)``. Same as
    :func:`cross_judge.voting.majority_vote` with default policies.
    """
    order = None if priority is None else [p for p in priority if isinstance(p, str)]
    return _delegate(voting.majority_vote, verdicts, {"fallback": fallback}, priority=order)


def unanimous(verdicts: Sequence[Any], *, fallback: str = "UNCLEAR") -> tuple[str, bool]:
    """The label if every valid verdict agrees, else ``(fallback, True)``.

    No valid verdict also gives ``(fallback, True)``, as in 0.1.
    """
    return _delegate(voting.unanimous, verdicts, {"fallback": fallback})


def weighted(
    verdicts: Sequence[Any],
    *,
    weights: Mapping[str, float] | None = None,
    use_confidence: bool = True,
    fallback: str = "UNCLEAR",
) -> tuple[str, bool]:
    """Weighted vote: the label with the largest total weight wins (0.1's rule, kept).

    A valid verdict adds ``weights.get(reviewer_id, 1.0)``, times its confidence clamped to
    [0, 1] when ``use_confidence``. The first label (in verdict order) whose total is
    strictly greatest wins, so ties, and all-zero confidences, go to the label seen first
    whatever the vote counts (0.1 bug B23, kept because results may depend on it:
    ``KEEP@0, REJECT@0, REJECT@0`` gives ``KEEP``). :func:`cross_judge.voting.weighted_vote`
    is the fixed version (tie policy, ``priority``). No valid verdict gives
    ``(fallback, False)``. :class:`~cross_judge.panel.JudgePanel` passes its reviewers'
    ``weight`` as ``weights`` when none are given.
    """
    table = weights or {}
    totals: dict[str, float] = {}
    for v in verdicts:
        if v.error is not None:
            continue
        w = float(table.get(v.reviewer_id, 1.0))
        if use_confidence:
            w *= max(0.0, min(1.0, v.confidence))  # NaN comes out as 1.0, as in 0.1
        totals[v.verdict] = totals.get(v.verdict, 0.0) + w
    if not totals:
        return fallback, False
    best_label, best = "", 0.0
    for position, (label, total) in enumerate(totals.items()):
        if position == 0 or total > best:
            best_label, best = label, total
    return best_label, _any_disagreement(verdicts)


def first_disagreement(
    verdicts: Sequence[Any],
    *,
    disagree_label: str = "DISAGREE",
    fallback: str = "UNCLEAR",
) -> tuple[str, bool]:
    """``disagree_label`` if any two valid verdicts differ, else the agreed label.

    No valid verdict gives ``(fallback, False)``.
    """
    return _delegate(
        voting.first_disagreement,
        verdicts,
        {"fallback": fallback, "disagree_label": disagree_label},
    )


def avg_confidence(verdicts: Sequence[Any]) -> float:
    """Mean confidence of the valid verdicts (0.0 if there is none)."""
    valid = [v.confidence for v in verdicts if v.error is None]
    return sum(valid) / len(valid) if valid else 0.0


STRATEGIES: dict[str, AggregationStrategy] = {
    "majority": majority,
    "unanimous": unanimous,
    "weighted": weighted,
    "first_disagreement": first_disagreement,
}
"""The legacy strategies by lower-case name."""


def get_strategy(name_or_fn: str | AggregationStrategy) -> AggregationStrategy:
    """A legacy strategy by name (case-insensitive, spaces ignored), or the callable itself.

    Raises:
        KeyError: (also a ``ConfigError``) unknown name; the message lists the known ones.
    """
    return voting._lookup_strategy(name_or_fn, STRATEGIES, what="strategy")
