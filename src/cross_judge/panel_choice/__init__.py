"""Choosing a panel from its own results: which critics, voting how, in which tiers, for
what budget.

``plans = batch.select_panel(gold, budget_per_item=0.002)`` (or :func:`select_panel`)
replays the stored verdicts of a pilot run in which every candidate critic judged the same
items, under every subset of critics and each voting strategy, and two-tier cascades whose
escalation the cascade calibration chooses. It makes no call. ``plans.best.panel(ensemble)``
builds the chosen panel; ``plans.write("panel.yaml", panel_file=...)`` writes its panel file.
The figures are statistics (:mod:`cross_judge.stats`), on held-out items.
"""

from __future__ import annotations

from ._plan import RECORD_KIND, PanelPlan, PanelPlans
from ._select import DEFAULT_TOP, MIN_EFFECTIVE_VOTES, select_panel

# The public path in reprs, docs and pickles (the implementation module may move).
PanelPlan.__module__ = __name__
PanelPlans.__module__ = __name__

__all__ = [
    "DEFAULT_TOP",
    "MIN_EFFECTIVE_VOTES",
    "RECORD_KIND",
    "PanelPlan",
    "PanelPlans",
    "select_panel",
]
