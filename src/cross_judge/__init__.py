"""cross-judge: ask several LLMs to judge the same item; get one verdict you can trust.

Importing this package has no side effects: no files, no network, no environment reads.
It is also cheap: ``import cross_judge`` binds ``__version__`` and the exception classes
(:mod:`cross_judge.errors`, which imports nothing heavy) and nothing else. Every other
public name is imported on first access (PEP 562): ``from cross_judge import Ensemble`` or
``cross_judge.Ensemble`` imports :mod:`cross_judge.ensemble` then and returns the very
object that module holds, so each name keeps its path, its identity and its pickles. A
report page, a statistic, the cascade calibration, the ranking or an integration is loaded
only by the code that uses it; the heavy HTTP stacks load on the first call.

The result models' methods implemented in higher layers (``BatchResult.summary()``,
``.to_pandas()``, ``Verdict._repr_html_()``...) need no import here either: the registry in
:mod:`cross_judge._extensions` imports the one module providing a method when it is first
called, in whatever process (a worker, an unpickling one) calls it.

To export one more name lazily, add it to ``_LAZY`` (name -> the module it is imported
from), to the ``TYPE_CHECKING`` block (for type checkers and IDEs) and to ``__all__``;
``tests/test_lazy_import.py`` fails naming whichever of the three lacks it.
"""

import importlib as _importlib
import typing as _typing

from ._version import __version__
from .errors import (
    AlignmentRefused,
    ConfigError,
    CrossJudgeError,
    ErrorKind,
    ItemTooLongError,
    MissingAPIKeyError,
    PanelError,
    PromptError,
    ResultsLocked,
    SharedLimitError,
    StatisticsWarning,
    UnknownStrategyError,
    UnknownVendorError,
    UnusableCacheError,
)

if _typing.TYPE_CHECKING:
    from .aggregation import (
        AggregationStrategy,
        avg_confidence,
        first_disagreement,
        get_strategy,
        majority,
        weighted,
    )
    from .agreement import cohen_kappa, fleiss_kappa, pairwise_agreement, reliability_alpha
    from .alignment import AlignmentPlan, align
    from .batch import (
        BATCH_VENDORS,
        BatchOptions,
        BatchResult,
        Item,
        ItemError,
        PanelRunOptions,
        RunOptions,
    )
    from .budget import Budget
    from .cache import CacheStats, ResponseCache
    from .cascade import Cascade, Escalation
    from .cascade_calibration import CascadeFit, calibrate_cascade
    from .content import FinalAnswer, Image, ModelMessage, RenderLimits, ToolCall, Turn
    from .core import Critic
    from .ensemble import Ensemble, revote
    from .panel import JudgePanel
    from .panel_choice import PanelPlan, PanelPlans, select_panel
    from .pricing import Price, load_prices, price_for, register_price
    from .ranking import Ranking
    from .report import RunDiff, assert_no_regression, compare_runs
    from .reviewer import Reviewer
    from .rubric import Criterion, CriterionConsensus, CriterionVerdict, Rubric
    from .schema import EnsembleResult, Verdict as LegacyVerdict
    from .stats.estimates import Estimate
    from .stats.label_queue import LabelQueue
    from .vendors import (
        VENDOR_DEFAULTS,
        VENDORS,
        VendorConfig,
        all_vendors,
        get_vendor,
        make_client,
        register_vendor,
        set_vendor_limits,
    )
    from .verdict import ABSTAIN, Answer, EnsembleVerdict, Usage, Verdict, VerdictKind
    from .voting import (
        VOTING_STRATEGIES,
        Vote,
        VotingStrategy,
        agreement_pct,
        get_voting_strategy,
        krippendorff_alpha,
        majority_vote,
        register_voting_strategy,
        unanimous,
    )

_LAZY: dict[str, str] = {
    # public name -> the module of this package it is imported from ("module:attribute"
    # when the attribute has another name there)
    "AggregationStrategy": "aggregation",
    "avg_confidence": "aggregation",
    "first_disagreement": "aggregation",
    "get_strategy": "aggregation",
    "majority": "aggregation",
    "weighted": "aggregation",
    "cohen_kappa": "agreement",
    "fleiss_kappa": "agreement",
    "pairwise_agreement": "agreement",
    "reliability_alpha": "agreement",
    "FinalAnswer": "content",
    "Image": "content",
    "ModelMessage": "content",
    "RenderLimits": "content",
    "ToolCall": "content",
    "Turn": "content",
    "BATCH_VENDORS": "batch",
    "BatchOptions": "batch",
    "BatchResult": "batch",
    "Item": "batch",
    "ItemError": "batch",
    "PanelRunOptions": "batch",
    "RunOptions": "batch",
    "Budget": "budget",
    "CacheStats": "cache",
    "ResponseCache": "cache",
    "Cascade": "cascade",
    "Escalation": "cascade",
    "CascadeFit": "cascade_calibration",
    "calibrate_cascade": "cascade_calibration",
    "Critic": "core",
    "Ensemble": "ensemble",
    "revote": "ensemble",
    "JudgePanel": "panel",
    "Price": "pricing",
    "load_prices": "pricing",
    "price_for": "pricing",
    "register_price": "pricing",
    "Ranking": "ranking",
    "AlignmentPlan": "alignment",
    "align": "alignment",
    "PanelPlan": "panel_choice",
    "PanelPlans": "panel_choice",
    "select_panel": "panel_choice",
    "RunDiff": "report",
    "compare_runs": "report",
    "assert_no_regression": "report",
    "Reviewer": "reviewer",
    "Criterion": "rubric",
    "CriterionConsensus": "rubric",
    "CriterionVerdict": "rubric",
    "Rubric": "rubric",
    "EnsembleResult": "schema",
    "LegacyVerdict": "schema:Verdict",
    "Estimate": "stats.estimates",
    "LabelQueue": "stats.label_queue",
    "VENDORS": "vendors",
    "VENDOR_DEFAULTS": "vendors",
    "VendorConfig": "vendors",
    "all_vendors": "vendors",
    "get_vendor": "vendors",
    "make_client": "vendors",
    "register_vendor": "vendors",
    "set_vendor_limits": "vendors",
    "ABSTAIN": "verdict",
    "Answer": "verdict",
    "EnsembleVerdict": "verdict",
    "Usage": "verdict",
    "Verdict": "verdict",
    "VerdictKind": "verdict",
    "VOTING_STRATEGIES": "voting",
    "Vote": "voting",
    "VotingStrategy": "voting",
    "agreement_pct": "voting",
    "get_voting_strategy": "voting",
    "krippendorff_alpha": "voting",
    "majority_vote": "voting",
    "register_voting_strategy": "voting",
    "unanimous": "voting",
}
"""Every public name imported on first access, and where from."""

_SUBMODULES = frozenset(
    {
        "aggregation",
        "agreement",
        "batch",
        "budget",
        "cache",
        "cascade",
        "cascade_calibration",
        "core",
        "critic",
        "ensemble",
        "errors",
        "integrations",
        "limits",
        "pairwise",
        "panel",
        "pricing",
        "ranking",
        "report",
        "results",
        "reviewer",
        "rubric",
        "schema",
        "stats",
        "transport",
        "vendors",
        "verdict",
        "voting",
    }
)
"""The sub-modules an ``import cross_judge`` used to bind as attributes (it imported them
all): each still resolves as ``cross_judge.<name>``, imported on first access."""


def __getattr__(name: str) -> _typing.Any:
    """A lazily exported name (or one of :data:`_SUBMODULES`), imported now.

    The value is bound in this module, so the next access is a plain attribute lookup.

    Raises:
        AttributeError: ``name`` is neither (as for any module attribute that does not exist).
    """
    target = _LAZY.get(name)
    if target is None:
        if name in _SUBMODULES:
            return _importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """What is bound, every name of ``__all__`` and the sub-modules, imported or not."""
    return sorted({*globals(), *__all__, *_SUBMODULES})


# cross-judge 0.1's names: Verdict and unanimous are the new core's; majority, weighted,
# first_disagreement, get_strategy and avg_confidence are the legacy aggregation's.
__all__ = [
    "ABSTAIN",
    "BATCH_VENDORS",
    "VENDORS",
    "VENDOR_DEFAULTS",
    "VOTING_STRATEGIES",
    "AggregationStrategy",
    "AlignmentPlan",
    "AlignmentRefused",
    "Answer",
    "BatchOptions",
    "BatchResult",
    "Budget",
    "CacheStats",
    "Cascade",
    "CascadeFit",
    "ConfigError",
    "Criterion",
    "CriterionConsensus",
    "CriterionVerdict",
    "Critic",
    "CrossJudgeError",
    "Ensemble",
    "EnsembleResult",
    "EnsembleVerdict",
    "ErrorKind",
    "Escalation",
    "Estimate",
    "FinalAnswer",
    "Image",
    "Item",
    "ItemError",
    "ItemTooLongError",
    "JudgePanel",
    "LabelQueue",
    "LegacyVerdict",
    "MissingAPIKeyError",
    "ModelMessage",
    "PanelError",
    "PanelPlan",
    "PanelPlans",
    "PanelRunOptions",
    "Price",
    "PromptError",
    "Ranking",
    "RenderLimits",
    "ResponseCache",
    "ResultsLocked",
    "Reviewer",
    "Rubric",
    "RunDiff",
    "RunOptions",
    "SharedLimitError",
    "StatisticsWarning",
    "ToolCall",
    "Turn",
    "UnknownStrategyError",
    "UnknownVendorError",
    "UnusableCacheError",
    "Usage",
    "VendorConfig",
    "Verdict",
    "VerdictKind",
    "Vote",
    "VotingStrategy",
    "__version__",
    "agreement_pct",
    "align",
    "all_vendors",
    "assert_no_regression",
    "avg_confidence",
    "calibrate_cascade",
    "cohen_kappa",
    "compare_runs",
    "first_disagreement",
    "fleiss_kappa",
    "get_strategy",
    "get_vendor",
    "get_voting_strategy",
    "krippendorff_alpha",
    "load_prices",
    "majority",
    "majority_vote",
    "make_client",
    "pairwise_agreement",
    "price_for",
    "register_price",
    "register_vendor",
    "register_voting_strategy",
    "reliability_alpha",
    "revote",
    "select_panel",
    "set_vendor_limits",
    "unanimous",
    "weighted",
]
