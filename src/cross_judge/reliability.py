"""How far to trust each critic, learned from the verdicts a batch already holds.

This is the documented path; the implementation lives in :mod:`cross_judge.stats.reliability`.
"""

from .stats.reliability import (
    BatchResult as BatchResult,
)
from .stats.reliability import (
    ConfidenceCalibration,
    DawidSkeneResult,
    WeightsFit,
    alpha_interval,
    calibrate_confidence,
    dawid_skene,
    effective_votes,
    gold_report,
    learn_weights,
)
from .stats.reliability import (
    ConfigError as ConfigError,
)
from .stats.reliability import (
    EnsembleVerdict as EnsembleVerdict,
)
from .stats.reliability import (
    Verdict as Verdict,
)
from .stats.reliability import (
    apply_calibration as apply_calibration,
)
from .stats.reliability import (
    as_batch as as_batch,
)
from .stats.reliability import (
    revote_dawid_skene as revote_dawid_skene,
)

__all__ = [
    "ConfidenceCalibration",
    "DawidSkeneResult",
    "WeightsFit",
    "alpha_interval",
    "calibrate_confidence",
    "dawid_skene",
    "effective_votes",
    "gold_report",
    "learn_weights",
]
