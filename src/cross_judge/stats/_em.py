"""The expectation-maximisation core both Dawid-Skene models share: the distinct vote
patterns of a batch, the estimate either backend returns, and the EM loop.

The models themselves are :mod:`cross_judge.stats._dawid_skene` (independent errors) and
:mod:`cross_judge.stats._dawid_skene_correlated` (errors that come together); this module
knows neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EMEstimate", "VotePatterns", "VoteUnits", "iterate_em"]


@dataclass(frozen=True)
class VotePatterns:
    """Distinct vote patterns of the items that have at least one vote.

    ``codes[p][j]`` is critic ``j``'s class index in pattern ``p``, or -1 for no vote;
    ``weights[p]`` counts the items with that pattern; ``item_pattern[i]`` is item ``i``'s
    pattern, or -1 for an item with no vote.
    """

    codes: list[tuple[int, ...]]
    weights: list[int]
    item_pattern: list[int]
    n_critics: int


@dataclass(frozen=True)
class VoteUnits:
    """Sparse votes grouped into units, each unit standing for the items that share it.

    One entry per vote of a unit in ``unit``, ``critic`` and ``label`` (class index);
    ``weights[u]`` counts the items unit ``u`` stands for; ``item_unit[i]`` is item ``i``'s
    unit, or -1 for an item with no vote. Units are the distinct vote patterns when they are
    cheap to find (few critics), else one unit per voted item: the EM is the same either way.
    The sequences are lists or, for the numpy backend, integer arrays.
    """

    unit: Any
    critic: Any
    label: Any
    weights: Any
    item_unit: Any
    n_critics: int

    def votes_per_critic(self) -> list[int]:
        """How many votes each critic gave, over all the items its units stand for."""
        if hasattr(self.unit, "dtype"):  # numpy arrays: one pass in C
            import numpy as np

            per_vote = np.asarray(self.weights, dtype=np.int64)[self.unit]
            counts = np.bincount(self.critic, weights=per_vote, minlength=self.n_critics)
            return [round(c) for c in counts.tolist()]
        votes = [0] * self.n_critics
        weights = list(self.weights)
        for u, j in zip(self.unit, self.critic, strict=True):
            votes[j] += weights[u]
        return votes

    def patterns(self) -> VotePatterns:
        """The units as dense :class:`VotePatterns` (one code per critic), in unit order."""
        codes = [[-1] * self.n_critics for _ in range(len(self.weights))]
        for u, j, a in zip(self.unit, self.critic, self.label, strict=True):
            codes[int(u)][int(j)] = int(a)
        return VotePatterns(
            [tuple(c) for c in codes],
            [int(w) for w in self.weights],
            [int(u) for u in self.item_unit],
            self.n_critics,
        )


@dataclass(frozen=True)
class EMEstimate:
    """Parameters and per-pattern posteriors as plain floats, from either backend."""

    priors: list[float]
    confusion: list[list[list[float]]]  # critic x true x answered
    posteriors: list[list[float]]  # pattern (or unit) x class
    log_likelihood: float
    iterations: int
    converged: bool
    best: list[int] | None = None  # per pattern, the label's class index, if computed


def iterate_em(
    m_step: Callable[[Any], tuple[Any, Any]],
    e_step: Callable[[Any, Any], tuple[Any, float]],
    objective: Callable[[float, Any, Any], float],
    posteriors: Any,
    *,
    max_iter: int,
    tol: float,
    n_votes: float,
) -> tuple[Any, Any, Any, float, int, bool]:
    """EM from ``posteriors`` (either backend's arrays): an M-step and an E-step, then up
    to ``max_iter`` more rounds while the objective gains at least ``tol`` per vote.
    Returns priors, confusion, posteriors, log-likelihood, rounds and whether it
    converged."""
    priors, confusion = m_step(posteriors)
    posteriors, log_likelihood = e_step(priors, confusion)
    current = objective(log_likelihood, priors, confusion)
    iterations = 0
    converged = False
    while iterations < max_iter:
        priors, confusion = m_step(posteriors)
        posteriors, log_likelihood = e_step(priors, confusion)
        iterations += 1
        previous, current = current, objective(log_likelihood, priors, confusion)
        if (current - previous) / n_votes < tol:
            converged = True
            break
    return priors, confusion, posteriors, log_likelihood, iterations, converged
