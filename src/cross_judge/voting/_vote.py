"""What a strategy returns: :class:`Vote`, and the :data:`VotingStrategy` shape.

``Vote`` and ``_rebuild_vote`` say ``cross_judge.voting`` in ``__module__`` (the package sets
it), so a pickle names the public path, as pickles made before the package was split do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

VotingStrategy = Callable[..., tuple[str, bool]]
"""``(verdicts, **kwargs) -> (consensus_label, disagreement)``."""


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
