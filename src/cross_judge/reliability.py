"""How far to trust each critic, learned from the verdicts a batch already holds.

This is the documented path; the implementation lives in :mod:`cross_judge.stats._reliability`.
"""

from .errors import (
    ConfigError as ConfigError,
)
from .results import (
    BatchResult as BatchResult,
    as_batch as as_batch,
)
from .stats import (
    ConfidenceCalibration,
    DawidSkeneResult,
    WeightsFit,
    alpha_interval,
    apply_calibration as apply_calibration,
    calibrate_confidence,
    dawid_skene,
    effective_votes,
    gold_report,
    learn_weights,
    revote_dawid_skene as revote_dawid_skene,
)
from .verdict import (
    EnsembleVerdict as EnsembleVerdict,
    Verdict as Verdict,
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
