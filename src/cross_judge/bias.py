"""Bias statistics of a batch: where critics lean for reasons other than the content.

This is the documented path; the implementation lives in :mod:`cross_judge.stats._bias`.
"""

from .errors import (
    ConfigError as ConfigError,
)
from .pairwise import (
    map_back as map_back,
)
from .results import (
    BatchResult as BatchResult,
    as_batch as as_batch,
    is_fallback as is_fallback,
)
from .stats import (
    LENGTH_BINS,
    LengthBias,
    LengthBin,
    PositionBias,
    PositionStats,
    Results as Results,
    SelfStats,
    length_bias,
    position_bias,
    self_consistency,
)
from .verdict import (
    EnsembleVerdict as EnsembleVerdict,
    Verdict as Verdict,
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
