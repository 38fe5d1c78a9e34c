"""cross-judge: ask several LLMs to judge the same item; get one verdict you can trust.

Importing this package has no side effects: no files, no network, no environment reads,
and the heavy HTTP stacks load on the first call, not here.
"""

from ._version import __version__
from .agreement import cohen_kappa, fleiss_kappa, pairwise_agreement, reliability_alpha
from .core import Critic
from .ensemble import Ensemble, revote
from .errors import (
    ConfigError,
    CrossJudgeError,
    ErrorKind,
    MissingAPIKeyError,
    PromptError,
    UnknownVendorError,
)
from .vendors import (
    VENDOR_DEFAULTS,
    VENDORS,
    VendorConfig,
    get_vendor,
    make_client,
    register_vendor,
)
from .verdict import EnsembleVerdict, Usage, Verdict, VerdictKind
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

__all__ = [
    "VENDORS",
    "VENDOR_DEFAULTS",
    "VOTING_STRATEGIES",
    "ConfigError",
    "Critic",
    "CrossJudgeError",
    "Ensemble",
    "EnsembleVerdict",
    "ErrorKind",
    "MissingAPIKeyError",
    "PromptError",
    "UnknownVendorError",
    "Usage",
    "VendorConfig",
    "Verdict",
    "VerdictKind",
    "Vote",
    "VotingStrategy",
    "__version__",
    "agreement_pct",
    "cohen_kappa",
    "fleiss_kappa",
    "get_vendor",
    "get_voting_strategy",
    "krippendorff_alpha",
    "majority_vote",
    "make_client",
    "pairwise_agreement",
    "register_vendor",
    "register_voting_strategy",
    "reliability_alpha",
    "revote",
    "unanimous",
]
