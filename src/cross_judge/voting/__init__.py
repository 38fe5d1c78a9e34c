"""Voting strategies: turn one item's verdicts into ``(consensus_label, disagreement)``.

A strategy is any callable ``(verdicts, **kwargs) -> (label, disagreement)``, the shape of
cross-judge 0.1, registered by lower-case name in :data:`VOTING_STRATEGIES`. The built-ins
return a :class:`Vote`, a ``(label, disagreement)`` tuple that also carries the aggregate
``score`` of score strategies.

Built-ins:

* label strategies: ``majority`` (0.1's :func:`majority_vote`), ``unanimous`` (alias
  ``consensus``), ``weighted``, ``any``, ``first_disagreement``;
* score strategies: ``average``, ``weighted_average``, ``median``, ``trimmed_mean``,
  ``highest``, ``lowest``.

Every built-in first turns verdicts into *ballots* with one shared function, so the error,
tie and quorum policies mean the same thing everywhere, and every built-in accepts the same
policy keywords (``errors``, ``ties``, ``min_valid``, ``priority``, ``fallback``,
``pass_label``, ``fail_label``, ``abstain_label``, ``weights``, ``scores``, ``threshold``)
so an :class:`~cross_judge.Ensemble` can always pass them. With default keywords,
``majority`` and ``unanimous`` give exactly 0.1's answers: only valid verdicts
(``error is None``) vote, ``ERROR`` and ``PARSE_FAIL`` verdicts are left out.

The module also checks a strategy and its keywords before anything is billed
(:func:`validate_voting`) and tells the Ensemble when early stop may cancel the remaining
critics (:func:`outcome_is_decided`).

**Look-alike labels.** Labels are compared as written, case included (``"keep"`` and
``"KEEP"`` are different labels: the parser upper-cases), with one exception: labels that
only *look* different from each other are one label. Before any ballot is counted (every
built-in, the early-stop test, and an :class:`~cross_judge.Ensemble`'s statistics through
:func:`reconcile_labels`), the valid verdicts' labels go through
:func:`cross_judge.verdict.lookalike_labels`: invisible characters and compatibility forms
are folded (``KE\\u200bEP``, ``ＫＥＥＰ``), a label mixing Latin letters with Cyrillic or Greek
look-alikes is read in Latin (``КEEP``), and labels that then share a skeleton (``KEEP``
and an all-Cyrillic ``КЕЕР``) count as one, spelt as the label the policy names (priority,
pass, fail, fallback, abstain and score labels, in that order), else the Latin spelling,
else the most common one. So a look-alike can neither split a label's votes nor win under
its own spelling, and nothing is silent: each relabelled verdict keeps what it wrote in
``Verdict.written_label``, which ``print(result)`` and the notebook view show. A label in
another script that no other label imitates (Russian ``НЕТ``) is left as it is.

The implementation is split by concern into private modules (the vote, the shared policies
and ballots, the label strategies, the score strategies, the registry and checks, early
stop); every public name is here, and shows ``cross_judge.voting`` as its module.

Not here: model calls, case folding, statistics over many items (see
:mod:`cross_judge.agreement`; :func:`krippendorff_alpha` here is 0.1's per-item flag), the
legacy ``aggregation`` strategies (their shim keeps 0.1's tie-breaking).
"""

from __future__ import annotations

from . import _per_item, _registry
from ._early_stop import calls_to_decide, outcome_is_decided, supports_early_stop
from ._labels import (
    LABEL_STRATEGIES,
    any_vote,
    first_disagreement,
    majority_vote,
    unanimous,
    weighted_vote,
)
from ._per_item import agreement_pct, krippendorff_alpha
from ._policy import ErrorPolicy, TiePolicy, reconcile_labels
from ._registry import (
    BATCH_STRATEGIES,
    VOTING_STRATEGIES,
    StrategyT as StrategyT,
    accepts_kwarg,
    get_voting_strategy,
    register_voting_strategy,
    strategy_name,
    validate_voting,
)
from ._scores import (
    SCORE_STRATEGIES,
    average_score,
    highest_score,
    lowest_score,
    median_score,
    trimmed_mean_score,
    weighted_average_score,
)
from ._vote import Vote, VotingStrategy, _rebuild_vote

__all__ = [
    "BATCH_STRATEGIES",
    "LABEL_STRATEGIES",
    "SCORE_STRATEGIES",
    "VOTING_STRATEGIES",
    "ErrorPolicy",
    "TiePolicy",
    "Vote",
    "VotingStrategy",
    "accepts_kwarg",
    "agreement_pct",
    "any_vote",
    "average_score",
    "calls_to_decide",
    "first_disagreement",
    "get_voting_strategy",
    "highest_score",
    "krippendorff_alpha",
    "lowest_score",
    "majority_vote",
    "median_score",
    "outcome_is_decided",
    "reconcile_labels",
    "register_voting_strategy",
    "strategy_name",
    "supports_early_stop",
    "trimmed_mean_score",
    "unanimous",
    "validate_voting",
    "weighted_average_score",
    "weighted_vote",
]

# Not public; kept at the paths they had before the split: cross-judge 0.1 code imports
# _valid and _label_counts, the legacy aggregation shim calls _lookup_strategy, pickles
# name _rebuild_vote, and StrategyT and _strategy_name were module names.
_valid = _per_item.valid_verdicts
_label_counts = _per_item.label_counts
_lookup_strategy = _registry.lookup_strategy
_strategy_name = strategy_name

# The public path in __module__: what pickles record (a Vote pickles as
# cross_judge.voting._rebuild_vote, as before the split), and what help() and repr show.
for _value in (*(globals()[_name] for _name in __all__), _rebuild_vote):
    if callable(_value) and getattr(_value, "__module__", "").startswith(f"{__name__}."):
        _value.__module__ = __name__
del _value
