"""Judging on a Ray cluster: a Ray Dataset through async actors, under cluster-wide vendor
limits (the optional extra ``cross-judge[ray]``).

This is the documented path; the implementation lives in :mod:`cross_judge.integrations._ray`.
"""

from .batch import (
    Panel as Panel,
    judge_many as judge_many,
)
from .errors import (
    ConfigError as ConfigError,
)
from .integrations import (
    DEFAULT_TERM_S as DEFAULT_TERM_S,
    RESULT_COLUMNS as RESULT_COLUMNS,
    judge_dataset,
    label_column,
    shared_limit,
    shared_limit_state,
)
from .verdict import (
    EnsembleVerdict as EnsembleVerdict,
)

__all__ = [
    "judge_dataset",
    "label_column",
    "shared_limit",
    "shared_limit_state",
]
