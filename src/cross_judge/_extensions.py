"""Methods of the result models that a higher layer implements.

The result models (:class:`~cross_judge.verdict.Verdict`,
:class:`~cross_judge.verdict.EnsembleVerdict`, :class:`~cross_judge.batch.BatchResult`) are
base-layer data, yet some of their convenience methods are implemented further up:
statistics (``stats/``), views (``report/``), dataframes (``integrations/``) and re-voting
(the panels). Importing those from the models would close an import cycle. Instead, each
implementing module registers its function here under a fixed name (:data:`METHODS`) when
it is imported, and the model's method calls :func:`provider` by that name.

``cross_judge/__init__.py`` imports every providing module, and Python runs it before any
``cross_judge.*`` module, so every method is provided before a model can exist. This is
not a plugin system: the names are fixed and each is provided by one module of this
package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["METHODS", "provide", "provider"]

METHODS = frozenset(
    {
        "add_votes",
        "alpha_of_votes",
        "batch_html",
        "criteria_agreement",
        "criteria_dawid_skene",
        "criteria_gold_report",
        "ensemble_html",
        "estimate",
        "estimate_accuracy",
        "fleiss_kappa",
        "from_votes",
        "gold_report",
        "label_page",
        "label_queue",
        "length_bias",
        "pairwise_agreement",
        "position_bias",
        "ranking_html",
        "ranking_page",
        "reliability_alpha",
        "render_summary",
        "revote",
        "revote_criteria_dawid_skene",
        "revote_dawid_skene",
        "self_consistency",
        "to_pandas",
        "to_polars",
        "verdict_html",
    }
)
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
    """The function registered for ``name``.

    Raises:
        RuntimeError: nothing registered it: the providing module was not imported, which
            happens only if ``cross_judge/__init__.py`` lost that import.
    """
    try:
        return _provided[name]
    except KeyError:
        raise RuntimeError(
            f"no implementation of {name!r} is registered: cross_judge/__init__.py must "
            "import the module that provides it"
        ) from None
