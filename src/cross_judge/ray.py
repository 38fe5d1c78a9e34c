"""Judging on a Ray cluster: a Ray Dataset through async actors, under cluster-wide vendor
limits (the optional extra ``cross-judge[ray]``).

This is the documented path; the implementation lives in :mod:`cross_judge.integrations.ray`.
"""

from .integrations.ray import (
    DEFAULT_TERM_S as DEFAULT_TERM_S,
)
from .integrations.ray import (
    RESULT_COLUMNS as RESULT_COLUMNS,
)
from .integrations.ray import (
    ConfigError as ConfigError,
)
from .integrations.ray import (
    EnsembleVerdict as EnsembleVerdict,
)
from .integrations.ray import (
    Panel as Panel,
)
from .integrations.ray import (
    judge_dataset,
    label_column,
    shared_limit,
    shared_limit_state,
)
from .integrations.ray import (
    judge_many as judge_many,
)

__all__ = [
    "judge_dataset",
    "label_column",
    "shared_limit",
    "shared_limit_state",
]
