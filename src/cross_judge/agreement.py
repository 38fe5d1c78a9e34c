"""Inter-rater agreement across a batch: how far critics agree over many items.

This is the documented path; the implementation lives in :mod:`cross_judge.stats._agreement`.
"""

from .stats import (
    Level,
    cohen_kappa,
    fleiss_kappa,
    matrix_from_labels,
    pairwise_agreement,
    reliability_alpha,
)

__all__ = [
    "Level",
    "cohen_kappa",
    "fleiss_kappa",
    "matrix_from_labels",
    "pairwise_agreement",
    "reliability_alpha",
]
