"""The voting keywords of a panel file that name a label its critics never give.

``voting_kwargs: {priority: [FAIL, PASSS]}`` is valid for the strategy, and the tie-break
then does nothing: ``PASSS`` is never voted. :func:`vote_label_problem` reports such a
label at its keyword (``voting_kwargs.priority``), with the critics' labels and a close
match, when the file is loaded. Which keywords are checked, and when nothing is, is
:func:`cross_judge.ensemble.voting_label_problems` (an :class:`~cross_judge.ensemble.
Ensemble` built in Python refuses the same labels).

What it does not do: check anything else of the vote (the schema does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..critic import Critic
from ..ensemble import voting_label_problems
from ..voting import validate_voting
from ._problems import FieldProblem

if TYPE_CHECKING:
    from ._schema import EnsembleFields

__all__ = ["vote_label_problem"]


def vote_label_problem(fields: EnsembleFields, critics: Sequence[Critic]) -> FieldProblem | None:
    """The first voting keyword of ``fields`` (a panel's keys, or a tier's) naming a label
    none of ``critics`` gives, at ``voting_kwargs.<keyword>``; ``None`` when there is none.

    Raises:
        ConfigError: ``fields.voting`` is not a known strategy (checked before this).
    """
    strategy = validate_voting(fields.voting, {})
    problems = voting_label_problems(
        critics, strategy, fields.voting_kwargs, order=fields.order, on_flip=fields.on_flip
    )
    for keyword, problem in problems:
        return FieldProblem(("voting_kwargs", keyword), problem)
    return None
