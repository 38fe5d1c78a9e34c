"""Batch review: many items through one panel (an :class:`~cross_judge.ensemble.Ensemble`
or a :class:`~cross_judge.cascade.Cascade`), live or through the vendors' batch APIs.

* :class:`Item`: one thing to judge (``id``, ``query``, ``context``, ``meta``); a plain
  string or a mapping is turned into one by :meth:`Item.from_value`.
* :func:`judge_many` (``Ensemble.judge_many``): judge every item, at most ``concurrency``
  at once, and return a :class:`BatchResult` with the results in input order.
* :func:`stream` (``Ensemble.stream``): the same work, results handed out as they finish.
  Items are read lazily and at most ``concurrency`` are in flight, so memory stays flat
  however many items there are.
* :class:`BatchResult`: the results plus batch statistics (Krippendorff's alpha over the
  critics x items matrix, Fleiss' kappa, pairwise critic agreement, per-critic error
  rates, consensus counts, usage and cost totals), ``revote`` without model calls,
  ``to_jsonl``, ``to_records`` and a ``rich`` summary.
* :class:`ResultsFile`: the append-only JSONL file a resumable run writes (one
  ``EnsembleVerdict`` per line, flushed at once), which knows the ids already done and
  repairs a line torn by a kill.
* :class:`RunOptions`: the options every batch entry point takes as keywords
  (``concurrency``, ``progress``, ``budget_usd``, ``mode``, ``batch``, ``item_text``), each
  documented there once; :class:`PanelRunOptions` adds a Cascade's ``all_tiers``.
* :class:`BatchOptions`: provider batch mode (``mode="batch"``): which vendors' batch APIs
  to use, the ledger that makes a killed job resumable, polling and deadline.
* :func:`shard_of`: the shard of an item id when a dataset is split across machines
  (``cross-judge review --shard i/N``), the same everywhere.

This package is the public path of these names; the modules inside it each hold one part
(:mod:`~cross_judge.batch._items`, :mod:`~cross_judge.batch._runner`,
:mod:`~cross_judge.batch._admission`, :mod:`~cross_judge.batch._provider_jobs`,
:mod:`~cross_judge.batch._results_file`, :mod:`~cross_judge.batch._lock`,
:mod:`~cross_judge.batch._progress`), and :class:`BatchResult` is stats-layer data defined in
:mod:`cross_judge.results`.
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports
from ..results import (
    BatchResult,
    CriticStats,
    TierStats,
    as_batch,
    call_failed,
    dump_result,
    is_fallback,
    is_incomplete,
    load_result,
    read_results,
)
from ._admission import judge_item
from ._items import ITEM_TEXT_CAP, Item, ItemError, shard_of
from ._panel_protocol import Panel
from ._provider_jobs import BATCH_VENDORS, BatchOptions
from ._results_file import ResultsFile
from ._run_options import PanelRunOptions, RunOptions
from ._runner import DEFAULT_CONCURRENCY, Mode, ResultStream, judge_many, stop_streams, stream
from .votes import read_votes_file  # also registers from_votes / add_votes

__all__ = [
    "BATCH_VENDORS",
    "DEFAULT_CONCURRENCY",
    "ITEM_TEXT_CAP",
    "BatchOptions",
    "BatchProgress",
    "BatchResult",
    "CriticStats",
    "Item",
    "ItemError",
    "Mode",
    "Panel",
    "PanelMethods",
    "PanelRunOptions",
    "PanelView",
    "ResultStream",
    "ResultsFile",
    "ResultsLock",
    "RunOptions",
    "TierStats",
    "as_batch",
    "call_failed",
    "dump_result",
    "is_fallback",
    "is_incomplete",
    "judge_item",
    "judge_many",
    "load_result",
    "read_results",
    "read_votes_file",
    "shard_of",
    "stop_streams",
    "stream",
]

# The public path of the classes defined in this package's modules: reprs, pickles and the
# docs name cross_judge.batch, as before the package was split.
for _public in (Item, ResultStream, ResultsFile, BatchOptions, Panel, RunOptions, PanelRunOptions):
    _public.__module__ = __name__
del _public

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._lock import ResultsLock
    from ._panel_methods import PanelMethods
    from ._panel_protocol import PanelView
    from ._progress import BatchProgress

_exports = LazyExports(
    __name__,
    {
        "BatchProgress": "._progress",
        "PanelMethods": "._panel_methods",
        "PanelView": "._panel_protocol",
        "ResultsLock": "._lock",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
