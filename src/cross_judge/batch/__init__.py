"""Batch review: many items through one :class:`~cross_judge.ensemble.Ensemble` (or any
:class:`Panel`, such as a :class:`~cross_judge.cascade.Cascade`).
"""

from .runner import (
    BatchResult,
    CriticStats,
    Item,
    ItemError,
    Panel,
    ResultsFile,
    ResultStream,
    TierStats,
    dump_result,
    is_fallback,
    judge_many,
    load_result,
    shard_of,
    stop_streams,
    stream,
)

__all__ = [
    "BatchResult",
    "CriticStats",
    "Item",
    "ItemError",
    "Panel",
    "ResultStream",
    "ResultsFile",
    "TierStats",
    "dump_result",
    "is_fallback",
    "judge_many",
    "load_result",
    "shard_of",
    "stop_streams",
    "stream",
]
