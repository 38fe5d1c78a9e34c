"""The expectation-maximisation core both Dawid-Skene models share: the distinct vote
patterns of a batch, the estimate either backend returns, and the EM loop.

The models themselves are :mod:`cross_judge.stats.dawid_skene` (independent errors) and
:mod:`cross_judge.stats.dawid_skene_correlated` (errors that come together); this module
knows neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EMEstimate", "VotePatterns", "iterate_em"]


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
class EMEstimate:
    """Parameters and per-pattern posteriors as plain floats, from either backend."""

    priors: list[float]
    confusion: list[list[list[float]]]  # critic x true x answered
    posteriors: list[list[float]]  # pattern x class
    log_likelihood: float
    iterations: int
    converged: bool


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
