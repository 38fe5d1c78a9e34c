"""Ranking many candidates from pairwise jury verdicts: Bradley-Terry (Davidson) ratings
with intervals, fitted from every critic's vote in each order shown (or one consensus per
pair); every pair, an adaptive design or random pairs; and self-preference sit-outs.

``ranking = await ensemble.rank(candidates, query=...)`` (or :func:`rank`) judges pairs of
candidates with a pairwise panel through the normal batch path and returns a
:class:`Ranking`. The fit itself is :mod:`cross_judge.stats.bradley_terry`.

This package sits in the panels layer and uses a panel only through the
:class:`~cross_judge.batch.Panel` protocol: it never imports an Ensemble or a Cascade.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import LazyExports
from ._engine import DEFAULT_MAX_CALLS, PairDesign, RankPlan, calls_per_pair, check_pairwise, rank
from ._model import (
    TIED_WITHIN,
    VOTE_FIT_LIMIT,
    CIMethod,
    FitMethod,
    Ranking,
    comparisons_of,
    fit_ranking,
    recorded_calls,
    spearman,
    votes_of,
)

# The public path in reprs, docs and pickles (the implementation module may move).
Ranking.__module__ = __name__
RankPlan.__module__ = __name__

__all__ = [
    "DEFAULT_MAX_CALLS",
    "DEFAULT_PRIOR",
    "META_KEY",
    "TIED_WITHIN",
    "VOTE_FIT_LIMIT",
    "CIMethod",
    "FitMethod",
    "PairDesign",
    "RankPlan",
    "Ranking",
    "calls_per_pair",
    "check_pairwise",
    "comparisons_of",
    "fit_ranking",
    "rank",
    "recorded_calls",
    "spearman",
    "votes_of",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._model import DEFAULT_PRIOR, META_KEY

_exports = LazyExports(
    __name__,
    {
        "DEFAULT_PRIOR": "._model",
        "META_KEY": "._model",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
