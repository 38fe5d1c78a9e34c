"""The options of a batch run, declared once: :class:`RunOptions`.

Every entry point of a batch (:func:`~cross_judge.batch.judge_many`,
:func:`~cross_judge.batch.stream`, and a panel's ``judge_many``, ``judge_many_sync`` and
``stream``) takes them as keywords, typed ``**options: Unpack[RunOptions]``; what each
means, and its default, is written here and nowhere else. :class:`PanelRunOptions` adds
the one option of a panel's own (a Cascade's ``all_tiers``). Checking the values is the
runner's work (:mod:`cross_judge.batch._runner`); this module only declares and merges them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from ..budget import Budget
    from ._provider_jobs import BatchOptions

__all__ = [
    "DEFAULT_CONCURRENCY",
    "RUN_DEFAULTS",
    "Mode",
    "PanelRunOptions",
    "RunOptions",
    "split_options",
    "with_defaults",
]

DEFAULT_CONCURRENCY = 32
"""Items in flight at once unless the caller says otherwise."""

Mode = Literal["live", "batch"]
"""How a batch's calls reach the vendors: live, or through their batch APIs."""


class RunOptions(TypedDict, total=False):
    """How a batch runs: the keywords every batch entry point takes, each optional.

    ``panel.judge_many(items, concurrency=8, mode="batch")``; or kept in a dict and passed
    on, ``options: RunOptions = {"concurrency": 8}`` then ``panel.stream(items,
    **options)``. A keyword that is not one of these raises ``TypeError`` naming it; a
    value out of range raises :class:`~cross_judge.ConfigError` before anything is sent.
    """

    concurrency: int
    """Items in flight at once, default 32 (:data:`DEFAULT_CONCURRENCY`); each fans out to
    every critic, so up to ``concurrency x critics`` calls are in flight, under each
    vendor's own limits. An integer >= 1, else ``ConfigError``. In batch mode it caps the
    live calls per live critic, and ``batch.window`` caps the items in flight. A stream
    also buffers at most this many finished results."""

    progress: bool
    """Show a ``rich`` progress bar on stderr; default ``False``."""

    budget_usd: Budget | float | None
    """A cap in USD for the whole run (or a shared :class:`~cross_judge.budget.Budget`);
    default ``None``, no cap. A call whose worst case does not fit beside the calls in
    flight waits for them to settle; calls that cannot fit are not made and give
    ``SKIPPED`` verdicts with ``error_kind="budget"``. With a budget, every critic's
    model needs a known price (else ``ConfigError``)."""

    mode: Mode
    """``"live"`` (the default) calls each vendor at once; ``"batch"`` sends the calls of
    critics on vendors with a batch API through it, at about half the price, results
    within the vendor's window (24 h), and the others live
    (:mod:`cross_judge.batch._provider_jobs`). Another value: ``ConfigError``."""

    batch: BatchOptions | None
    """Batch mode's options (:class:`~cross_judge.BatchOptions`: which vendors, the ledger
    that makes a killed job resumable, polling, deadline); default ``None``, the defaults.
    Only with ``mode="batch"``, else ``ConfigError``."""

    item_text: bool
    """Store each item's query and context with its result (``item``, bounded:
    :data:`~cross_judge.batch._items.ITEM_TEXT_CAP`), so reports show what was judged;
    default ``True``. ``False`` leaves them out (private data)."""


class PanelRunOptions(RunOptions, total=False):
    """:class:`RunOptions` plus the option of a panel's own, for its ``judge_many``,
    ``judge_many_sync`` and ``stream``; a panel without it refuses it (``TypeError``)."""

    all_tiers: bool
    """A :class:`~cross_judge.cascade.Cascade`'s only: ask every tier on every item, the
    stored results calibration (:func:`~cross_judge.cascade_calibration.calibrate_cascade`)
    and :meth:`~cross_judge.cascade.Cascade.replay` need; default ``False``."""


RUN_DEFAULTS: Final[RunOptions] = {
    "concurrency": DEFAULT_CONCURRENCY,
    "progress": False,
    "budget_usd": None,
    "mode": "live",
    "batch": None,
    "item_text": True,
}
"""The value of each option not given (what :class:`RunOptions` documents)."""


def with_defaults(options: Mapping[str, Any], where: str) -> RunOptions:
    """``options`` with :data:`RUN_DEFAULTS` for those not given.

    Raises:
        TypeError: a keyword that is not an option, named as Python names an unexpected
            keyword of ``where``.
    """
    for name in options:
        if name not in RUN_DEFAULTS:
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")
    return cast(RunOptions, {**RUN_DEFAULTS, **options})


def split_options(options: Mapping[str, Any]) -> tuple[RunOptions, dict[str, Any]]:
    """``options`` as (the run's options, the rest: the panel's own, for
    ``panel_for_batch``), in the order given."""
    run: dict[str, Any] = {}
    panel: dict[str, Any] = {}
    for name, value in options.items():
        (run if name in RUN_DEFAULTS else panel)[name] = value
    return cast(RunOptions, run), panel
