"""How far to trust each critic, learned from the verdicts a batch already holds.

This is the documented path; the implementation lives in :mod:`cross_judge.stats.reliability`.
"""

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
