"""cross-judge: ask several LLMs to judge the same item; get one verdict you can trust.

Importing this package has no side effects: no files, no network, no environment reads,
and the heavy HTTP stacks load on the first call, not here.

A few imports below (marked ``noqa: F401``) are for what the module does when imported,
not for a name: the modules implementing result-model methods (``BatchResult.summary()``,
``.to_pandas()``, ``.position_bias()``, ``Verdict._repr_html_()``...) register them in
:mod:`cross_judge._extensions`. Python runs this file before any ``cross_judge.*`` module,
so every method is in place before any model exists. None of them imports an optional
dependency.
"""

from ._version import __version__
from .aggregation import (
    AggregationStrategy,
    avg_confidence,
    first_disagreement,
    get_strategy,
    majority,
    weighted,
)
from .agreement import cohen_kappa, fleiss_kappa, pairwise_agreement, reliability_alpha
from .batch import BATCH_VENDORS, BatchOptions, BatchResult, Item, ItemError
from .budget import Budget
from .cache import CacheStats, ResponseCache
from .cascade import Cascade, Escalation
from .cascade_calibration import CascadeFit, calibrate_cascade
from .core import Critic
from .ensemble import Ensemble, revote
from .errors import (
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
from .integrations import frames as _frames  # noqa: F401 - registers to_pandas/to_polars
from .panel import JudgePanel
from .pricing import Price, load_prices, price_for, register_price
from .ranking import Ranking
from .report import (
    label_page as _label_page,  # noqa: F401 - registers LabelQueue.to_html
    leaderboard as _leaderboard,  # noqa: F401 - registers the Ranking views
    notebook as _notebook,  # noqa: F401 - registers the _repr_html_ views
    summary as _summary,  # noqa: F401 - registers BatchResult.summary
)
from .reviewer import Reviewer
from .rubric import Criterion, CriterionConsensus, CriterionVerdict, Rubric
from .schema import EnsembleResult, Verdict as LegacyVerdict
from .stats import (
    bias as _bias,  # noqa: F401 - registers the bias statistics
    criteria as _criteria,  # noqa: F401 - registers the statistics per criterion
    estimates as _estimates,  # noqa: F401 - registers BatchResult.estimate*
    label_queue as _label_queue,  # noqa: F401 - registers BatchResult.label_queue
    reliability as _reliability,  # noqa: F401 - registers against/dawid_skene
)
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

# cross-judge 0.1's names: Verdict and unanimous are the new core's; majority, weighted,
# first_disagreement, get_strategy and avg_confidence are the legacy aggregation's.
__all__ = [
    "ABSTAIN",
    "BATCH_VENDORS",
    "VENDORS",
    "VENDOR_DEFAULTS",
    "VOTING_STRATEGIES",
    "AggregationStrategy",
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
    "Item",
    "ItemError",
    "ItemTooLongError",
    "JudgePanel",
    "LabelQueue",
    "LegacyVerdict",
    "MissingAPIKeyError",
    "PanelError",
    "Price",
    "PromptError",
    "Ranking",
    "ResponseCache",
    "ResultsLocked",
    "Reviewer",
    "Rubric",
    "SharedLimitError",
    "StatisticsWarning",
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
    "all_vendors",
    "avg_confidence",
    "calibrate_cascade",
    "cohen_kappa",
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
    "set_vendor_limits",
    "unanimous",
    "weighted",
]
