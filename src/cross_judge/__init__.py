"""cross-judge: ask several LLMs to judge the same item; get one verdict you can trust.

Importing this package has no side effects: no files, no network, no environment reads,
and the heavy HTTP stacks load on the first call, not here.
"""

from ._version import __version__
from .core import Critic
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
from .verdict import Usage, Verdict, VerdictKind
from .voting import (
    VOTING_STRATEGIES,
    VotingStrategy,
    agreement_pct,
    get_voting_strategy,
    krippendorff_alpha,
    majority_vote,
    unanimous,
)

__all__ = [
    "VENDORS",
    "VENDOR_DEFAULTS",
    "VOTING_STRATEGIES",
    "ConfigError",
    "Critic",
    "CrossJudgeError",
    "ErrorKind",
    "MissingAPIKeyError",
    "PromptError",
    "UnknownVendorError",
    "Usage",
    "VendorConfig",
    "Verdict",
    "VerdictKind",
    "VotingStrategy",
    "__version__",
    "agreement_pct",
    "get_vendor",
    "get_voting_strategy",
    "krippendorff_alpha",
    "majority_vote",
    "make_client",
    "register_vendor",
    "unanimous",
]
