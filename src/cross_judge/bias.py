"""Bias statistics of a batch: where critics lean for reasons other than the content.

This is the documented path; the implementation lives in :mod:`cross_judge.stats.bias`.
"""

from .stats.bias import (
    LENGTH_BINS,
    LengthBias,
    LengthBin,
    PositionBias,
    PositionStats,
    SelfStats,
    length_bias,
    position_bias,
    self_consistency,
)

__all__ = [
    "LENGTH_BINS",
    "LengthBias",
    "LengthBin",
    "PositionBias",
    "PositionStats",
    "SelfStats",
    "length_bias",
    "position_bias",
    "self_consistency",
]
