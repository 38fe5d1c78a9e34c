"""Rubrics: several weighted criteria judged per item, voted criterion by criterion.

A rubric is a prompt with ``criteria`` (see :mod:`cross_judge.critic._prompts`); a critic
judging with it answers each criterion (``Verdict.criteria``), and a panel votes each
criterion with its strategy, then scores the item by the weighted total
(``EnsembleVerdict.criteria``, ``EnsembleVerdict.score``). The data lives in
:mod:`.models`, the vote in :mod:`.tally`. See the docs page "Rubric juries".
"""

from __future__ import annotations

from .models import (
    DEFAULT_SCALE,
    MET_AT,
    CriteriaMode,
    Criterion,
    CriterionConsensus,
    CriterionVerdict,
    Rubric,
    Unit,
    unit_of,
)

__all__ = [
    "DEFAULT_SCALE",
    "MET_AT",
    "CriteriaMode",
    "Criterion",
    "CriterionConsensus",
    "CriterionVerdict",
    "Rubric",
    "Unit",
    "unit_of",
]
