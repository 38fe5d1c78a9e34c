"""Running a batch: many items through one :class:`Panel` (an
:class:`~cross_judge.ensemble.Ensemble`, a :class:`~cross_judge.cascade.Cascade`).

* :func:`judge_many` (``Ensemble.judge_many``): judge every item, at most ``concurrency``
  at once, and return a :class:`~cross_judge.batch.BatchResult` with the results in input
  order.
* :func:`stream` (``Ensemble.stream``): the same work, results handed out as they finish.
  Items are read lazily and at most ``concurrency`` are in flight, so memory stays flat
  however many items there are. :class:`ResultStream` is what it returns;
  :func:`stop_streams` stops a panel's streams when it closes.

Concurrency is per item: each item fans out to every critic of the panel, so up to
``concurrency x critics`` calls are in flight; each vendor's own limits (see
:mod:`cross_judge.limits._gate`) apply underneath. This module makes no HTTP calls itself and
does not vote (the panel does both). Items are :mod:`cross_judge.batch._items`; the results
model is :mod:`cross_judge.results`; the results file is
:mod:`cross_judge.batch._results_file`; batch mode is :mod:`cross_judge.batch._provider_jobs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterable, Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

import anyio
from typing_extensions import Unpack

from .. import _otel
from .._sync import loop_caller
from ..budget import Budget
from ..critic import active_journal, journaling
from ..errors import ConfigError
from ..results import BatchResult
from ..verdict import EnsembleVerdict
from ..voting import strategy_name
from ._admission import admit, judge_item
from ._items import Item, ItemFeed
from ._progress import BatchProgress
from ._provider_jobs import BatchOptions, check_batch_prices, run_job
from ._run_options import DEFAULT_CONCURRENCY, Mode, RunOptions, with_defaults

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream

    from ._panel_protocol import Panel

__all__ = [
    "DEFAULT_CONCURRENCY",
    "Mode",
    "ResultStream",
    "judge_many",
    "stop_streams",
    "stream",
]

Deliver = Callable[[int, EnsembleVerdict], Awaitable[None]]


def _check_concurrency(concurrency: object) -> int:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    return concurrency


# -- the engine ---------------------------------------------------------------------------------


async def _judge_each(
    panel: Panel,
    feed: ItemFeed,
    concurrency: int,
    deliver: Deliver,
    budget: Budget | None = None,
    item_text: bool = True,
) -> None:
    """Judge the feed's items with at most ``concurrency`` in flight; ``deliver`` each result.

    Items are taken by :func:`~cross_judge.batch._admission.admit`. A slot is freed only
    after ``deliver`` returns, so a slow consumer holds the batch back instead of piling up
    results. An invalid item stops new items from starting; those in flight finish and
    are delivered, then its :class:`ItemError` is raised. The feed is closed however this
    ends.
    """
    slots = anyio.Semaphore(concurrency)

    async def run(index: int, item: Item) -> None:
        try:
            await deliver(index, await judge_item(panel, item, budget, item_text=item_text))
        finally:
            slots.release()

    try:
        async with anyio.create_task_group() as group:

            def start(index: int, item: Item) -> None:
                group.start_soon(run, index, item)

            problem = await admit(feed, slots, start)
    finally:
        await feed.aclose()
    if problem is not None:
        raise problem


async def judge_many(
    ensemble: Panel,
    items: Iterable[object] | AsyncIterable[object],
    **options: Unpack[RunOptions],
) -> BatchResult:
    """Judge every item and return the results in input order (``Ensemble.judge_many``).

    All items are read and checked before the first call, so a malformed item (or one
    whose ``context`` lacks a template field) raises :class:`ItemError` before anything
    is billed. Duplicate ids are allowed here (each item gets its own result); the CLI
    refuses them. Cancelling the caller cancels every call in flight.

    Args:
        items: strings, mappings (``id``, ``query``, ``context``, ``meta``) or
            :class:`Item` objects; a sync or async iterable.
        **options: how the batch runs (``concurrency``, ``progress``, ``budget_usd``,
            ``mode``, ``batch``, ``item_text``): see :class:`~cross_judge.batch.RunOptions`.

    Raises:
        TypeError: a keyword that is not a :class:`~cross_judge.batch.RunOptions` key.
        ItemError: an item cannot be judged; nothing was sent.
        ConfigError: the ensemble has no critics, an option's value is invalid
            (``concurrency`` not an integer >= 1, an unknown ``mode``, ``batch`` without
            ``mode="batch"``), a critic's endpoint has become invalid since it was built,
            or a budget is given and a critic's model has no known price; nothing was
            sent. A failure of one critic's call is never raised: it is that critic's
            ``ERROR`` verdict, the others' verdicts stand.
    """
    run = with_defaults(options, "judge_many")
    mode, item_text = run["mode"], run["item_text"]
    limit = _check_concurrency(run["concurrency"])
    job = _check_mode(mode, run["batch"])
    budget = _checked_budget(ensemble, run["budget_usd"])
    if job is not None:
        check_batch_prices(ensemble, job)
    feed = ItemFeed(ensemble, items)
    checked: list[Item] = []
    try:
        while (item := await feed.next()) is not None:
            checked.append(item)
    finally:
        await feed.aclose()
    results: list[EnsembleVerdict | None] = [None] * len(checked)
    started = time.perf_counter()

    with (
        _otel.batch_span(ensemble, mode=mode, concurrency=limit, items=len(checked)) as span,
        BatchProgress(len(checked), enabled=run["progress"]) as bar,
    ):

        async def deliver(index: int, result: EnsembleVerdict) -> None:
            results[index] = result
            bar.advance(result)
            span.add(result)

        again = ItemFeed(ensemble, checked, checked=True)
        if job is None:
            await _judge_each(ensemble, again, limit, deliver, budget, item_text)
        else:
            await run_job(ensemble, again, job, limit, deliver, budget, item_text=item_text)
    done = [r for r in results if r is not None]
    return BatchResult(
        verdicts=done,
        critics=[c.name for c in ensemble.critics],
        voting=strategy_name(ensemble.voting),
        elapsed_s=round(time.perf_counter() - started, 3),
    )


def _check_mode(mode: object, batch: BatchOptions | None) -> BatchOptions | None:
    """The batch options to run with, ``None`` for live mode.

    Raises:
        ConfigError: an unknown ``mode``, or ``batch`` options with ``mode="live"``.
    """
    if mode == "live":
        if batch is not None:
            raise ConfigError(
                "batch= options apply to mode='batch' only; pass mode='batch', or drop batch="
            )
        return None
    if mode == "batch":
        if batch is not None and not isinstance(batch, BatchOptions):
            raise ConfigError(
                f"batch= takes a BatchOptions(...), got {type(batch).__name__}; e.g. "
                "batch=BatchOptions(ledger='run.batches.jsonl')"
            )
        return batch if batch is not None else BatchOptions()
    raise ConfigError(f"mode must be 'live' or 'batch', got {mode!r}")


def _checked_budget(ensemble: Panel, budget_usd: Budget | float | None) -> Budget | None:
    """The batch's budget, after the checks every batch makes before its first call: the
    panel can judge (it has critics), every endpoint is valid, and with a budget every
    model has a price."""
    ensemble.check_can_judge()
    _check_endpoints(ensemble)
    budget = Budget.of(budget_usd)
    if budget is not None:
        ensemble.check_prices()
    return budget


def _check_endpoints(ensemble: Panel) -> None:
    """Raise now if a critic's endpoint has become unusable since it was built (a
    ``base_url`` or vendor reassigned to one that does not validate): found mid-batch, it
    would fail every item from inside the fan-out instead of once, before any call.

    Raises:
        ConfigError: naming the critic and what to fix.
    """
    for critic in ensemble.critics:
        try:
            critic.endpoint()
        except ConfigError as exc:
            raise ConfigError(f"critic {critic.name!r}: {exc}") from None


def stream(
    ensemble: Panel,
    items: Iterable[object] | AsyncIterable[object],
    *,
    owner: Panel | None = None,
    **options: Unpack[RunOptions],
) -> ResultStream:
    """Judge items and hand out each result as it finishes (``Ensemble.stream``).

    Items are read lazily: one is taken only when fewer than ``concurrency`` are in
    flight, and results wait in a buffer of ``concurrency``, so memory does not grow with
    the number of items. Results come in completion order; each carries its item's id as
    ``query_id`` and its ``meta``.

    Iterate the returned :class:`ResultStream` with ``async for``. Work starts at the first
    iteration (or on entering ``async with``) and stops when the stream is exhausted,
    closed (``await s.aclose()``, leaving ``async with``), garbage-collected after a
    ``break``, or its consumer is cancelled: calls in flight are then cancelled.

    An item that cannot be judged (see :func:`judge_many`) ends the stream: items in
    flight finish and are handed out, then :class:`ItemError` is raised.

    ``options`` are :class:`~cross_judge.batch.RunOptions`, as in :func:`judge_many`
    (``budget_usd`` caps the whole stream; in batch mode ``batch.window`` items are in
    flight, and results come as each round's batches end). ``owner`` is the panel whose
    ``aclose()`` stops the stream (:func:`stop_streams`), ``ensemble`` by default; the
    stream keeps it alive.
    The answers journal active where ``stream`` is called
    (:func:`~cross_judge.critic._journal.journaling`) is the one its calls use.

    Raises:
        TypeError: a keyword that is not a :class:`~cross_judge.batch.RunOptions` key.
        ConfigError: the ensemble has no critics, an option's value is invalid (as in
            :func:`judge_many`), a critic's endpoint has become invalid since it was
            built, or a budget is given and a critic's model has no known price (at
            once, not at iteration).
    """
    run_options = with_defaults(options, "stream")
    mode, item_text, progress = (
        run_options["mode"],
        run_options["item_text"],
        run_options["progress"],
    )
    limit = _check_concurrency(run_options["concurrency"])
    job = _check_mode(mode, run_options["batch"])
    budget = _checked_budget(ensemble, run_options["budget_usd"])
    if job is not None:
        check_batch_prices(ensemble, job)
    # The caller's tracing context and answers journal: the stream's work runs in a host
    # task that, on trio, does not inherit them.
    parent = _otel.current_context()
    journal = active_journal()

    async def run(deliver: Callable[[EnsembleVerdict], Awaitable[None]]) -> None:
        total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
        with (
            journaling(journal),
            _otel.batch_span(
                ensemble, mode=mode, concurrency=limit, items=total, parent=parent
            ) as span,
            BatchProgress(total, enabled=progress) as bar,
        ):

            async def handed_out(_index: int, result: EnsembleVerdict) -> None:
                await deliver(result)
                bar.advance(result)
                span.add(result)

            feed = ItemFeed(ensemble, items)
            if job is None:
                await _judge_each(ensemble, feed, limit, handed_out, budget, item_text)
            else:
                await run_job(ensemble, feed, job, limit, handed_out, budget, item_text=item_text)

    return ResultStream(run, buffer=limit, owner=ensemble if owner is None else owner)


# -- the stream object --------------------------------------------------------------------------

_background: set[asyncio.Task[None]] = set()  # strong references to running stream hosts

# The streams still running, per ensemble: Panel.aclose() stops them (stop_streams)
# before it closes the pools their calls use. Streams may run on loops in several threads.
_running: weakref.WeakKeyDictionary[Panel, set[_Host]] = weakref.WeakKeyDictionary()
_running_lock = threading.Lock()


def _spawn(host: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``host()`` as a task of its own on the running loop (asyncio or trio).

    The stream's work cannot run in a task group of the consumer's, because that task
    group would stay open across the consumer's ``async for`` steps; a ``break`` would
    then close it from the wrong task (the hazard PEP 789 describes). A separate host task
    owns the work instead; the stream cancels it on every way out (exhaustion, ``aclose``,
    ``async with`` exit, cancellation of the consumer, garbage collection, closing the
    ensemble).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:  # not asyncio, so trio: the only other backend anyio runs on
        import trio

        async def system_host() -> None:
            await host()

        trio.lowlevel.spawn_system_task(system_host, name="cross-judge stream")
        return
    task = loop.create_task(host(), name="cross-judge stream")
    _background.add(task)
    task.add_done_callback(_background.discard)


class _Host:
    """The state a stream's host task shares with its :class:`ResultStream`.

    The host task holds this, never the stream itself, so that a stream dropped after a
    ``break`` can be garbage-collected (and then stop its host) while the host still runs.
    """

    def __init__(self, receive: MemoryObjectReceiveStream[EnsembleVerdict]) -> None:
        self.receive = receive
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.error: Exception | None = None
        self.loop, self._call_soon = loop_caller()

    def stop(self) -> None:
        """Cancel the work and close the consumer's end, from any thread or context.

        For a stream's finaliser, which the garbage collector may run in another thread
        (one freeing a reference cycle) or between tasks: anyio's ``cancel()`` there raises
        (no running loop; not in async context) and the stop would be lost, leaving every
        call running. So the stop is handed to the owning loop, which runs it at once.
        """
        with contextlib.suppress(Exception):  # the loop or run is over: nothing runs
            self._call_soon(self._stop_here)

    def _stop_here(self) -> None:
        # Runs as a loop callback: raising would crash a trio run, so never raise.
        with contextlib.suppress(Exception):
            self.receive.close()
            if not self.done.is_set():
                self.scope.cancel()


async def stop_streams(ensemble: Panel) -> None:
    """Stop every stream of ``ensemble`` still running on this event loop, and wait until
    each has stopped: its calls in flight are cancelled, not left to finish.

    ``Ensemble.aclose()`` (and leaving ``async with ensemble``) calls it before closing
    the connection pools, so a stream still referenced after a ``break`` (``s =
    ensemble.stream(...)``) never keeps running on connections being closed. Streams on
    other loops or threads are left alone. A stream stopped this way ends: a consumer
    iterating it again gets what was already buffered, then the end.
    """
    loop, _ = loop_caller()
    with _running_lock:
        hosts = [h for h in _running.get(ensemble, ()) if h.loop is loop]
    for host in hosts:
        host.scope.cancel()
    with anyio.CancelScope(shield=True):
        for host in hosts:
            await host.done.wait()


class ResultStream:
    """Results of :func:`stream` as they finish: ``async for result in stream: ...``.

    Also an async context manager: ``async with ensemble.stream(items) as results:``
    starts the work on entry and stops it on exit, however the block is left; prefer it
    when you may stop early. Single use: iterate it once.
    """

    def __init__(
        self,
        run: Callable[[Callable[[EnsembleVerdict], Awaitable[None]]], Awaitable[None]],
        *,
        buffer: int,
        owner: Panel | None = None,
    ) -> None:
        self._run = run
        self._buffer = buffer
        self._owner = owner
        self._host: _Host | None = None
        self._closed = False

    def _start(self) -> _Host:
        send, receive = anyio.create_memory_object_stream[EnsembleVerdict](self._buffer)
        state = self._host = _Host(receive)
        run = self._run
        siblings: set[_Host] | None = None
        if self._owner is not None:
            with _running_lock:
                siblings = _running.setdefault(self._owner, set())
                siblings.add(state)

        async def host() -> None:
            try:
                with state.scope:
                    async with send:
                        await run(send.send)
            except Exception as exc:  # handed to the consumer by __anext__
                state.error = exc
            finally:
                if siblings is not None:
                    with _running_lock:
                        siblings.discard(state)
                state.done.set()

        _spawn(host)
        return state

    def __aiter__(self) -> ResultStream:
        return self

    async def __anext__(self) -> EnsembleVerdict:
        if self._closed:
            raise StopAsyncIteration
        state = self._host or self._start()
        try:
            return await state.receive.receive()
        except anyio.EndOfStream:
            await state.done.wait()
            self._closed = True
            state.receive.close()
            if state.error is not None:
                error, state.error = state.error, None
                raise error from None
            raise StopAsyncIteration from None
        except BaseException:  # the consumer was cancelled or interrupted: stop the work
            self._closed = True
            state.scope.cancel()
            state.receive.close()
            raise

    async def aclose(self) -> None:
        """Stop the work (calls in flight are cancelled) and wait until it has stopped."""
        self._closed = True
        state = self._host
        if state is not None:
            state.scope.cancel()
            with anyio.CancelScope(shield=True):
                await state.done.wait()
            state.receive.close()

    async def __aenter__(self) -> ResultStream:
        if self._host is None and not self._closed:
            self._start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # A `break` out of a bare `async for` leaves no other way to stop the work.
        state = self._host
        if state is not None:
            with contextlib.suppress(Exception):  # the event loop may already be gone
                state.stop()
