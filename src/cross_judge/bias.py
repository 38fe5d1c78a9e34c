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
from .stats.bias import (
    BatchResult as BatchResult,
)
from .stats.bias import (
    ConfigError as ConfigError,
)
from .stats.bias import (
    EnsembleVerdict as EnsembleVerdict,
)
from .stats.bias import (
    Results as Results,
)
from .stats.bias import (
    Verdict as Verdict,
)
from .stats.bias import (
    as_batch as as_batch,
)
from .stats.bias import (
    is_fallback as is_fallback,
)
from .stats.bias import (
    map_back as map_back,
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
