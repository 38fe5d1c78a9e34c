"""Methods of the result models that a higher layer implements.

The result models (:class:`~cross_judge.verdict.Verdict`,
:class:`~cross_judge.verdict.EnsembleVerdict`, :class:`~cross_judge.batch.BatchResult`,
:class:`~cross_judge.report.RunDiff`) are
base-layer data, yet some of their convenience methods are implemented further up:
statistics (``stats/``), views (``report/``), dataframes (``integrations/``) and re-voting
(the panels). Importing those from the models would close an import cycle. Instead, each
implementing module registers its function here under a fixed name (:data:`PROVIDERS`)
when it is imported, and the model's method calls :func:`provider` by that name.

Nothing has to import the providers in advance: :func:`provider` imports the one module
that :data:`PROVIDERS` names for a method the first time the method is called, so a model
unpickled, or built by a subprocess or a Ray worker that imported only
``cross_judge.batch``, has every method. This is not a plugin system: the names are
fixed, each is provided by one module of this package, and importing that module does
nothing else here but register.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

__all__ = ["METHODS", "PROVIDERS", "provide", "provider"]

PROVIDERS: Mapping[str, str] = MappingProxyType(
    {
        "add_votes": "cross_judge.batch.votes",
        "align": "cross_judge.alignment._engine",
        "alignment_html": "cross_judge.report._alignment_page",
        "alpha_of_votes": "cross_judge.stats._agreement",
        "batch_html": "cross_judge.report._notebook",
        "compare": "cross_judge.report._compare",
        "criteria_agreement": "cross_judge.stats._criteria",
        "criteria_dawid_skene": "cross_judge.stats._criteria",
        "criteria_gold_report": "cross_judge.stats._criteria",
        "diff_fragment": "cross_judge.report._diff_page",
        "diff_markdown": "cross_judge.report._diff_text",
        "diff_page": "cross_judge.report._diff_page",
        "diff_text": "cross_judge.report._diff_text",
        "ensemble_html": "cross_judge.report._notebook",
        "estimate": "cross_judge.stats.estimates",
        "estimate_accuracy": "cross_judge.stats.estimates",
        "fleiss_kappa": "cross_judge.stats._agreement",
        "from_votes": "cross_judge.batch.votes",
        "gold_report": "cross_judge.stats._reliability",
        "label_page": "cross_judge.report._label_page",
        "label_queue": "cross_judge.stats.label_queue",
        "length_bias": "cross_judge.stats._bias",
        "pairwise_agreement": "cross_judge.stats._agreement",
        "position_bias": "cross_judge.stats._bias",
        "ranking_html": "cross_judge.report._leaderboard",
        "ranking_page": "cross_judge.report._leaderboard",
        "reliability_alpha": "cross_judge.stats._agreement",
        "render_summary": "cross_judge.report._summary",
        "revote": "cross_judge.ensemble",
        "revote_many": "cross_judge.ensemble",
        "revote_criteria_dawid_skene": "cross_judge.stats._criteria",
        "revote_dawid_skene": "cross_judge.stats._reliability",
        "select_panel": "cross_judge.panel_choice._select",
        "self_consistency": "cross_judge.stats._bias",
        "to_pandas": "cross_judge.integrations._frames",
        "to_polars": "cross_judge.integrations._frames",
        "verdict_html": "cross_judge.report._notebook",
    }
)
"""Every name a model method may look up -> the module that provides it."""

METHODS = frozenset(PROVIDERS)
"""Every name a model method may look up."""

F = TypeVar("F", bound=Callable[..., Any])

_provided: dict[str, Callable[..., Any]] = {}


def provide(name: str) -> Callable[[F], F]:
    """Decorator: register the decorated function as the implementation of ``name``.

    Raises:
        ValueError: ``name`` is not one of :data:`METHODS` (a typo would otherwise
            surface only when the method is called).
    """
    if name not in METHODS:
        raise ValueError(f"{name!r} is not a result-model method; known: {sorted(METHODS)}")

    def register(function: F) -> F:
        _provided[name] = function
        return function

    return register


def provider(name: str) -> Callable[..., Any]:
    """The function registered for ``name``, importing its module (:data:`PROVIDERS`)
    first if nothing has registered it yet.

    Raises:
        KeyError: ``name`` is not one of :data:`METHODS`.
        RuntimeError: the module :data:`PROVIDERS` names for ``name`` was imported and did
            not register it (the table and the ``@provide`` decorators disagree).
    """
    found = _provided.get(name)
    if found is not None:
        return found
    module = PROVIDERS[name]
    importlib.import_module(module)  # its @provide decorators register into _provided
    try:
        return _provided[name]
    except KeyError:
        raise RuntimeError(
            f"{module} was imported and registered no implementation of {name!r}: "
            "PROVIDERS names the wrong module"
        ) from None
