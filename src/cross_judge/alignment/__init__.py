"""Aligning judges with people: better prompts from gold labels, per critic, kept diverse,
written as new prompt versions.

``plan = await batch.align(gold, panel)`` (or :func:`align`) chooses each critic's
few-shot examples from the labelled items it and the jury got wrong, disjoint across
critics, judges the held-out labelled items again with the aligned panel, and measures
before against after with intervals; ``plan.write("prompts/")`` writes each critic's next
prompt version and a panel file that uses them, unless the jury's gain is not clearly above
zero or its effective votes fell. The decisions are statistics (:mod:`cross_judge.stats`);
the only calls are the held-out items judged again.
"""

from __future__ import annotations

from ._engine import Method, align, check_alignment
from ._plan import (
    PANEL_FILE_NAME,
    RECORD_FILE_NAME,
    RECORD_KIND,
    AlignmentPlan,
    figures_record,
    refusals_of,
)

# The public path in reprs, docs and pickles (the implementation module may move).
AlignmentPlan.__module__ = __name__

__all__ = [
    "PANEL_FILE_NAME",
    "RECORD_FILE_NAME",
    "RECORD_KIND",
    "AlignmentPlan",
    "Method",
    "align",
    "check_alignment",
    "figures_record",
    "refusals_of",
]
