"""cross-judge: ask several LLMs to judge the same item; get one verdict you can trust.

Importing this package has no side effects: no files, no network, no environment reads,
and the heavy HTTP stacks load on the first call, not here.
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
from .batch.provider_jobs import BATCH_VENDORS, BatchOptions
from .batch.runner import BatchResult, Item, ItemError
from .budget import Budget
from .cascade import Cascade, Escalation
from .cascade_calibration import CascadeFit, calibrate_cascade
from .critic.cache import CacheStats, ResponseCache
from .critic.critic import Critic
from .ensemble import Ensemble, revote
from .errors import (
    ConfigError,
    CrossJudgeError,
    ErrorKind,
    ItemTooLongError,
    MissingAPIKeyError,
    PromptError,
    SharedLimitError,
    UnknownVendorError,
)
from .panel import JudgePanel
from .pricing import Price, load_prices, price_for, register_price
from .reviewer import Reviewer
from .schema import EnsembleResult
from .schema import Verdict as LegacyVerdict
from .stats.agreement import cohen_kappa, fleiss_kappa, pairwise_agreement, reliability_alpha
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
    "Critic",
    "CrossJudgeError",
    "Ensemble",
    "EnsembleResult",
    "EnsembleVerdict",
    "ErrorKind",
    "Escalation",
    "Item",
    "ItemError",
    "ItemTooLongError",
    "JudgePanel",
    "LegacyVerdict",
    "MissingAPIKeyError",
    "Price",
    "PromptError",
    "ResponseCache",
    "Reviewer",
    "SharedLimitError",
    "UnknownVendorError",
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
