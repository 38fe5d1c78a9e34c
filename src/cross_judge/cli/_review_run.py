"""The run of ``cross-judge review``: items streamed through the panel into the results
file, the run's totals, and Ctrl-C turned into a clean stop (nothing half-written, a
manifest that says "interrupted").

It does not read options or print the report: :mod:`._review` does both.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind

if TYPE_CHECKING:
    from anyio import CancelScope
    from anyio.abc import TaskStatus
    from rich.console import Console

    from ..batch import ResultsFile, RunOptions
    from ..cascade import Cascade
    from ..critic import KeptShare
    from ..ensemble import Ensemble
    from ..verdict import EnsembleVerdict
    from ._items import ItemReader

__all__ = ["RunState", "judge_into", "sigint_held"]


@dataclass
class RunState:
    """What one review run did so far: results written, calls, cost; interrupted or not.
    ``cost_estimates`` counts the calls priced at their worst case because the vendor
    reported no usable usage (their share of ``cost_usd`` is that estimate).
    ``kept_answers`` counts the answers an earlier, interrupted run paid for and the
    answers journal handed back: their usage and cost are that run's, not this one's."""

    interrupted: bool = False
    written: int = 0
    calls: int = 0
    cache_hits: int = 0
    kept_answers: int = 0
    budget_skips: int = 0
    cost_estimates: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    def count(self, result: EnsembleVerdict, kept: KeptShare | None = None) -> None:
        """Add one finished result to this run's totals, less ``kept``, what the answers
        kept by the journal brought into it (see :meth:`AnswerJournal.share_of
        <cross_judge.critic._journal.AnswerJournal.share_of>`)."""
        self.written += 1
        replayed = kept.critics if kept is not None else set()
        for verdict in result.verdicts:
            self.calls += verdict.attempts
            self.cache_hits += verdict.cached and verdict.critic_id not in replayed
            self.budget_skips += verdict.error_kind is ErrorKind.BUDGET
            self.cost_estimates += verdict.cost_estimates
        self.prompt_tokens += result.usage.prompt_tokens
        self.completion_tokens += result.usage.completion_tokens
        if result.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += result.cost_usd
        if kept is not None:
            self.kept_answers += kept.calls
            self.cost_estimates -= kept.cost_estimates
            self.prompt_tokens -= kept.usage.prompt_tokens
            self.completion_tokens -= kept.usage.completion_tokens
            self.cost_usd = max(0.0, self.cost_usd - kept.cost_usd)  # no float residue

    def totals(self, reader: ItemReader) -> dict[str, Any]:
        """The run's totals, as the manifest records them."""
        return {
            "items_judged": self.written,
            "items_already_done": reader.already_done,
            "lines_skipped": reader.bad_lines,
            "items_other_shards": reader.other_shards,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "answers_kept": self.kept_answers,
            "calls_over_budget": self.budget_skips,
            "calls_priced_at_worst_case": self.cost_estimates,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6) if self.cost_known else None,
        }


async def _watch_interrupt(
    work: CancelScope, state: RunState, *, task_status: TaskStatus[None]
) -> None:
    """Turn Ctrl-C into a clean stop: the first cancels ``work``, so calls in flight are
    dropped and nothing half-done is written; later ones, while the run winds down
    (closing the stream and the connections), are absorbed. Raised as KeyboardInterrupt
    at whatever line the loop was running, one could cut that cleanup in half (a stream
    whose cancellation is never delivered, waiting on its calls; a traceback). Runs until
    the caller cancels it, once the wind-down is over. Where signals cannot be received
    here (not the main thread, Windows), Ctrl-C arrives as KeyboardInterrupt instead."""
    import anyio

    try:
        receiver = anyio.open_signal_receiver(signal.SIGINT)
        signals = receiver.__enter__()
    except (NotImplementedError, RuntimeError, ValueError):
        task_status.started()
        return
    try:
        task_status.started()
        async for _ in signals:
            state.interrupted = True
            work.cancel()
    finally:
        receiver.__exit__(None, None, None)


async def judge_into(
    panel: Ensemble | Cascade,
    items: ItemReader,
    results: ResultsFile,
    *,
    run: RunOptions,
    progress: bool,
    total: int | None,
    console: Console,
    state: RunState,
    all_tiers: bool = False,
) -> RunState:
    """Stream ``items`` through ``panel`` with the options ``run`` (every tier of a cascade
    with ``all_tiers``) and append each result to ``results`` at once. ``progress`` is
    this run's own bar (over ``total`` items, on ``console``), not the stream's. With
    ``results.journal``, every valid answer is recorded there as it arrives, and the
    answers it kept are not asked again."""
    import anyio

    from ..batch import BatchProgress
    from ..cascade import Cascade
    from ..critic import journaling

    failure: Exception | None = None
    journal = results.journal
    async with anyio.create_task_group() as group:
        # The watcher is outside the scope it cancels, so it keeps absorbing Ctrl-C until
        # the wind-down below is over.
        work = anyio.CancelScope()
        await group.start(_watch_interrupt, work, state)
        try:
            with (
                work,
                journaling(journal),
                BatchProgress(total, enabled=progress, console=console) as bar,
            ):
                if isinstance(panel, Cascade):
                    stream = panel.stream(items, all_tiers=all_tiers, **run)
                else:
                    stream = panel.stream(items, **run)
                async with stream:
                    async for result in stream:
                        results.append(result)
                        kept = None if journal is None else journal.share_of(result.query_id)
                        state.count(result, kept)
                        bar.advance(result)
        except Exception as exc:  # re-raised below, outside the task group
            failure = exc
        finally:
            with anyio.CancelScope(shield=True):
                await panel.aclose()
        group.cancel_scope.cancel()  # stop the interrupt watcher
    if failure is not None:
        raise failure
    return state


@contextlib.contextmanager
def sigint_held(*, then_raise: bool) -> Iterator[None]:
    """Hold off Ctrl-C during a few milliseconds of bookkeeping that must not be cut in half.

    A SIGINT inside the block is recorded instead of raised; at the end the previous
    handler is restored and, if one came and ``then_raise``, ``KeyboardInterrupt`` is
    raised. Only the main thread may set signal handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if came and then_raise:
        raise KeyboardInterrupt
