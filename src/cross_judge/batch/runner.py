"""Batch review: many items through one :class:`~cross_judge.ensemble.Ensemble` (or any
:class:`Panel`, such as a :class:`~cross_judge.cascade.Cascade`).

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
* :func:`shard_of`: the shard of an item id when a dataset is split across machines
  (``cross-judge review --shard i/N``), the same everywhere.

Concurrency is per item: each item fans out to every critic of the ensemble, so up to
``concurrency x critics`` calls are in flight; each vendor's own limits (see
:mod:`cross_judge._limits`) apply underneath. This module makes no HTTP calls itself and
does not vote (the ensemble does both).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import threading
import time
import weakref
from collections import Counter
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, Protocol

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError

from .. import _otel
from ..budget import Budget
from ..errors import ConfigError, ErrorKind
from ..stats.agreement import Level, fleiss_kappa, pairwise_agreement, reliability_alpha
from ..verdict import ABSTAIN, EnsembleVerdict, Usage, Verdict
from .provider_jobs import BatchOptions, check_batch_prices, run_job

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream
    from rich.console import RenderableType

    from ..critic.critic import Critic
    from ..stats.bias import LengthBias, PositionBias, SelfStats
    from ..stats.gold import GoldReport
    from ..voting import VotingStrategy

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

DEFAULT_CONCURRENCY = 32
"""Items in flight at once unless the caller says otherwise."""

Deliver = Callable[[int, EnsembleVerdict], Awaitable[None]]

Mode = Literal["live", "batch"]
"""How a batch's calls reach the vendors: live, or through their batch APIs."""


class Panel(Protocol):
    """What a batch needs of the thing that judges its items: an
    :class:`~cross_judge.ensemble.Ensemble` or a :class:`~cross_judge.cascade.Cascade`.

    ``critics`` are every critic that may be asked (each item is checked against all of
    their prompts before the first call); ``voting`` names the vote in the results.
    """

    @property
    def critics(self) -> list[Critic]: ...

    @property
    def voting(self) -> str | VotingStrategy: ...

    async def judge(
        self,
        query: str,
        *,
        query_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        budget_usd: Budget | float | None = None,
    ) -> EnsembleVerdict: ...

    def check_can_judge(self) -> None: ...

    def check_prices(self) -> None: ...

    def check_item(self, query: str, context: Mapping[str, Any] | None) -> None: ...


# -- items -----------------------------------------------------------------------------------


class ItemError(ConfigError):
    """An item that cannot be judged: wrong shape, no query, or a template field its
    ``context`` does not supply. ``position`` is its 0-based place in the input."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        where = f"item {position}: " if position is not None else ""
        super().__init__(where + message)
        self.position = position


class Item(BaseModel):
    """One item to judge.

    Attributes:
        id: unique within a batch; the ``query_id`` of its result. Default: the query
            itself up to 80 characters, else its start and a hash
            (:func:`cross_judge.ensemble.default_query_id`).
        query: the text the critics judge.
        context: values for the critics' other template fields.
        meta: copied to the result's ``meta``.
    """

    # defer_build: validators are built on first use, not at import (cold start).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    query: str
    context: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_value(cls, value: object, *, position: int | None = None) -> Item:
        """An :class:`Item` from a string (the query), a mapping or an :class:`Item`.

        A mapping needs ``query`` (a non-empty string); ``id`` may be a string or an
        integer (stored as text); ``context`` and ``meta`` must be mappings. A pair's
        candidates may be given as ``a`` and ``b`` (strings, both), short for
        ``context={"response_a": a, "response_b": b}``. Any other key is kept in ``meta``
        (``{"query": ..., "gold": "KEEP"}`` keeps ``gold``), unless ``meta`` already has
        it.

        Raises:
            ItemError: the value is none of those, or a field is missing or of the wrong
                type; the message names the field (and ``position`` when given).
        """
        if isinstance(value, Item):
            return value
        if isinstance(value, str):
            return cls._build({"query": value}, position)
        if isinstance(value, Mapping):
            return cls._build(value, position)
        raise ItemError(
            f"expected a string, a mapping with 'query' or an Item, got {type(value).__name__}",
            position=position,
        )

    @classmethod
    def _build(cls, data: Mapping[Any, Any], position: int | None) -> Item:
        from ..ensemble import default_query_id

        query = data.get("query")
        if not isinstance(query, str):
            got = "nothing" if query is None else type(query).__name__
            raise ItemError(f"'query' must be the text to judge, got {got}", position=position)
        if not query.strip():
            raise ItemError("'query' is empty", position=position)
        _check_sendable("query", query, position)
        raw_id = data.get("id")
        if raw_id is None:
            item_id = default_query_id(query)
        elif isinstance(raw_id, str) and raw_id.strip():
            item_id = raw_id
        elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
            item_id = str(raw_id)
        else:
            raise ItemError(
                f"'id' must be a non-empty string or an integer, got {raw_id!r}", position=position
            )
        fields: dict[str, dict[str, Any]] = {}
        for name in ("context", "meta"):
            given = data.get(name)
            if given is not None and not isinstance(given, Mapping):
                raise ItemError(
                    f"{name!r} must be a mapping, got {type(given).__name__}", position=position
                )
            fields[name] = {str(k): v for k, v in (given or {}).items()}
        if "a" in data or "b" in data:
            fields["context"].update(_candidates(data, fields["context"], position))
        _check_sendable("context", fields["context"], position)
        for key, extra in data.items():
            if key not in ("id", "query", "context", "meta", "a", "b"):
                fields["meta"].setdefault(str(key), extra)
        return cls(id=item_id, query=query, context=fields["context"], meta=fields["meta"])


def shard_of(item_id: str, n: int) -> int:
    """The shard (1 to ``n``) that the item with id ``item_id`` belongs to when a dataset is
    split ``n`` ways: ``sha256(id as UTF-8) mod n``, plus 1.

    The split depends on the id alone, so it is the same on every machine, Python version
    and input order, and ``n`` machines that each judge one shard judge every item exactly
    once (``cross-judge review --shard i/N`` uses it). Pass the id :meth:`Item.from_value`
    gives (an item without one gets its default id, from its query). Shards are about
    equal in size, not exactly: each id falls in one at random. ``n == 1`` puts every item
    in shard 1. Changing ``n`` reassigns most items.

    Raises:
        ValueError: ``n`` is not a whole number >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of shards must be a whole number >= 1, got {n!r}")
    # surrogatepass: any str has a digest, so no id makes the split raise
    digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest, "big") % n + 1


def _candidates(
    data: Mapping[Any, Any], context: Mapping[str, Any], position: int | None
) -> dict[str, str]:
    """A pair's candidates given as ``a`` and ``b``, as context fields.

    Raises:
        ItemError: only one of them, one that is not a string, or the candidates given
            in ``context`` as well.
    """
    given = {name: data.get(name) for name in ("a", "b")}
    for name, value in given.items():
        if not isinstance(value, str):
            got = "nothing" if value is None else type(value).__name__
            raise ItemError(
                f"a pair needs both candidates as text in 'a' and 'b'; {name!r} is {got}",
                position=position,
            )
    if "response_a" in context or "response_b" in context:
        raise ItemError(
            "the candidates are given twice, as 'a'/'b' and in context "
            "(response_a/response_b): keep one",
            position=position,
        )
    return {"response_a": str(given["a"]), "response_b": str(given["b"])}


def _check_sendable(name: str, value: object, position: int | None) -> None:
    """Raise :class:`ItemError` if text in ``value`` holds a lone surrogate.

    JSON can hold one (``"\\udc80"``) and ``json.loads`` keeps it, but it is not Unicode
    text: no vendor request can carry it (UTF-8 cannot encode it). Ids and ``meta`` may
    hold one (they are stored losslessly, see :func:`dump_result`); what is sent may not.
    """
    found = _lone_surrogate(value)
    if found is not None:
        where, index, char = found
        raise ItemError(
            f"{name!r}{where} holds a lone surrogate ({char!r} at character {index}): not "
            "Unicode text (UTF-8 cannot encode it), so no vendor can be sent it; fix the "
            "item's text",
            position=position,
        )


def _lone_surrogate(value: object) -> tuple[str, int, str] | None:
    """``(path, index, character)`` of the first lone surrogate in the strings of
    ``value`` (nested mappings and sequences included), else ``None``."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        path, current = stack.pop()
        if isinstance(current, str):
            if current.isascii():
                continue
            try:
                current.encode("utf-8")
            except UnicodeEncodeError as exc:
                return path, exc.start, current[exc.start]
        elif isinstance(current, Mapping):
            stack.extend((f"{path}[{k!r}]", v) for k, v in reversed(list(current.items())))
        elif isinstance(current, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(current))))
    return None


class _Feed:
    """Items from a sync or async iterable, one at a time, each checked as it is taken.

    A plain class rather than an async generator, so that stopping early never leaves a
    half-run generator for the garbage collector to finalise on the wrong task.
    :meth:`aclose` closes the caller's generator when the batch stops before its end.
    """

    def __init__(
        self,
        ensemble: Panel,
        source: Iterable[object] | AsyncIterable[object],
        *,
        checked: bool = False,
    ) -> None:
        self._ensemble = ensemble
        self._checked = checked
        self._sync: Iterator[object] | None = None
        self._async: AsyncIterator[object] | None = None
        if isinstance(source, AsyncIterable):
            self._async = source.__aiter__()
        else:
            self._sync = iter(source)
        self.position = 0

    async def next(self) -> Item | None:
        """The next item, or ``None`` at the end.

        Raises:
            ItemError: the next value cannot be judged.
        """
        try:
            if self._sync is not None:
                value = next(self._sync)
            else:
                assert self._async is not None
                value = await self._async.__anext__()
        except (StopIteration, StopAsyncIteration):
            return None
        item = (
            value
            if self._checked and isinstance(value, Item)
            else _checked(self._ensemble, value, self.position)
        )
        self.position += 1
        return item

    async def aclose(self) -> None:
        """Close the source if it is a generator (its ``finally`` blocks run now)."""
        if self._async is not None:
            close = getattr(self._async, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()
        elif self._sync is not None:
            sync_close = getattr(self._sync, "close", None)
            if sync_close is not None:
                sync_close()


def _check_concurrency(concurrency: object) -> int:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    return concurrency


def _checked(ensemble: Panel, value: object, position: int) -> Item:
    """``value`` as an Item whose prompts render for every critic (nothing is billed yet)."""
    from ..errors import PromptError

    item = Item.from_value(value, position=position)
    try:
        ensemble.check_item(item.query, item.context or None)
        for critic in ensemble.critics:
            critic.render_prompt(item.query, item.context)
    except (PromptError, ConfigError) as exc:
        raise ItemError(f"id {item.id!r}: {exc}", position=position) from None
    return item


# -- the engine ---------------------------------------------------------------------------------


async def judge_item(panel: Panel, item: Item, budget: Budget | None) -> EnsembleVerdict:
    """``panel``'s verdict on ``item``: its query, with its id, context and meta."""
    return await panel.judge(
        item.query,
        query_id=item.id,
        context=item.context or None,
        meta=item.meta,
        budget_usd=budget,
    )


async def _judge_each(
    ensemble: Panel,
    feed: _Feed,
    concurrency: int,
    deliver: Deliver,
    budget: Budget | None = None,
) -> None:
    """Judge the feed's items with at most ``concurrency`` in flight; ``deliver`` each result.

    An item is taken only when a slot is free, so a lazy source is read as the batch goes.
    A slot is freed only after ``deliver`` returns, so a slow consumer holds the batch back
    instead of piling up results. An invalid item stops new items from starting; those in
    flight finish and are delivered, then its :class:`ItemError` is raised. The feed is
    closed however this ends.
    """
    slots = anyio.Semaphore(concurrency)
    problem: ItemError | None = None

    async def run(index: int, item: Item) -> None:
        try:
            await deliver(index, await judge_item(ensemble, item, budget))
        finally:
            slots.release()

    try:
        async with anyio.create_task_group() as group:
            index = 0
            while True:
                await slots.acquire()
                try:
                    item = await feed.next()
                except ItemError as exc:
                    problem = exc
                    item = None
                if item is None:
                    slots.release()
                    break
                group.start_soon(run, index, item)
                index += 1
    finally:
        await feed.aclose()
    if problem is not None:
        raise problem


async def judge_many(
    ensemble: Panel,
    items: Iterable[object] | AsyncIterable[object],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
    budget_usd: Budget | float | None = None,
    mode: Mode = "live",
    batch: BatchOptions | None = None,
) -> BatchResult:
    """Judge every item and return the results in input order (``Ensemble.judge_many``).

    All items are read and checked before the first call, so a malformed item (or one
    whose ``context`` lacks a template field) raises :class:`ItemError` before anything
    is billed. Duplicate ids are allowed here (each item gets its own result); the CLI
    refuses them. Cancelling the caller cancels every call in flight.

    Args:
        items: strings, mappings (``id``, ``query``, ``context``, ``meta``) or
            :class:`Item` objects; a sync or async iterable.
        concurrency: items in flight at once (each fans out to every critic).
        progress: show a ``rich`` progress bar on stderr.
        budget_usd: a cap in USD for the whole batch (or a shared
            :class:`~cross_judge.budget.Budget`); calls that no longer fit are not made
            and give ``SKIPPED`` verdicts with ``error_kind="budget"``.
        mode: ``"live"`` calls each vendor at once; ``"batch"`` sends the calls of
            critics on vendors with a batch API through it, at about half the price,
            results within the vendor's window (24 h), and the others live
            (:mod:`cross_judge._batch_job`). In batch mode ``concurrency`` caps the live
            calls per live critic; ``batch.window`` caps the items in flight.
        batch: batch mode's options (:class:`~cross_judge.BatchOptions`: which vendors,
            the ledger that makes a killed job resumable, polling, deadline); only with
            ``mode="batch"``.

    Raises:
        ItemError: an item cannot be judged; nothing was sent.
        ConfigError: the ensemble has no critics, ``concurrency`` is not an integer
            >= 1, a critic's endpoint has become invalid since it was built, or a budget
            is given and a critic's model has no known price; nothing was sent. A
            failure of one critic's call is never raised: it is that critic's ``ERROR``
            verdict, the others' verdicts stand.
    """
    limit = _check_concurrency(concurrency)
    options = _check_mode(mode, batch)
    budget = _checked_budget(ensemble, budget_usd)
    if options is not None:
        check_batch_prices(ensemble, options)
    feed = _Feed(ensemble, items)
    checked: list[Item] = []
    try:
        while (item := await feed.next()) is not None:
            checked.append(item)
    finally:
        await feed.aclose()
    results: list[EnsembleVerdict | None] = [None] * len(checked)
    started = time.perf_counter()

    from .progress import BatchProgress

    with (
        _otel.batch_span(ensemble, mode=mode, concurrency=limit, items=len(checked)) as span,
        BatchProgress(len(checked), enabled=progress) as bar,
    ):

        async def deliver(index: int, result: EnsembleVerdict) -> None:
            results[index] = result
            bar.advance(result)
            span.add(result)

        again = _Feed(ensemble, checked, checked=True)
        if options is None:
            await _judge_each(ensemble, again, limit, deliver, budget)
        else:
            await run_job(ensemble, again, options, limit, deliver, budget)
    done = [r for r in results if r is not None]
    return BatchResult(
        verdicts=done,
        critics=[c.name for c in ensemble.critics],
        voting=_voting_name(ensemble.voting),
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
            critic._endpoint()
        except ConfigError as exc:
            raise ConfigError(f"critic {critic.name!r}: {exc}") from None


def _voting_name(voting: str | VotingStrategy) -> str:
    from ..voting import strategy_name

    return strategy_name(voting)


def stream(
    ensemble: Panel,
    items: Iterable[object] | AsyncIterable[object],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
    budget_usd: Budget | float | None = None,
    owner: Panel | None = None,
    mode: Mode = "live",
    batch: BatchOptions | None = None,
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

    ``budget_usd`` caps the whole stream, as in :func:`judge_many`. ``owner`` is the panel
    whose ``aclose()`` stops the stream (:func:`stop_streams`), ``ensemble`` by default;
    the stream keeps it alive. ``mode="batch"`` (with ``batch`` options) goes through the
    vendors' batch APIs as in :func:`judge_many`: ``batch.window`` items are in flight, and
    results come as each round's batches end.

    Raises:
        ConfigError: the ensemble has no critics, ``concurrency`` is not an integer
            >= 1, a critic's endpoint has become invalid since it was built, a budget
            is given and a critic's model has no known price, or the mode or batch options
            are wrong (at once, not at iteration).
    """
    limit = _check_concurrency(concurrency)
    options = _check_mode(mode, batch)
    budget = _checked_budget(ensemble, budget_usd)
    if options is not None:
        check_batch_prices(ensemble, options)
    # The caller's tracing context: the stream's work runs in a host task that, on trio,
    # does not inherit it.
    parent = _otel.current_context()

    async def run(deliver: Callable[[EnsembleVerdict], Awaitable[None]]) -> None:
        from .progress import BatchProgress

        total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
        with (
            _otel.batch_span(
                ensemble, mode=mode, concurrency=limit, items=total, parent=parent
            ) as span,
            BatchProgress(total, enabled=progress) as bar,
        ):

            async def handed_out(_index: int, result: EnsembleVerdict) -> None:
                await deliver(result)
                bar.advance(result)
                span.add(result)

            feed = _Feed(ensemble, items)
            if options is None:
                await _judge_each(ensemble, feed, limit, handed_out, budget)
            else:
                await run_job(ensemble, feed, options, limit, handed_out, budget)

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


def _loop_caller() -> tuple[object, Callable[[Callable[[], object]], object]]:
    """The running event loop (asyncio) or run (trio), and a function that schedules a
    callback on it from any thread."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import trio

        return trio.lowlevel.current_root_task(), trio.lowlevel.current_trio_token().run_sync_soon
    return loop, loop.call_soon_threadsafe


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
        self.loop, self._call_soon = _loop_caller()

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
    loop, _ = _loop_caller()
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


# -- results ------------------------------------------------------------------------------------


class CriticStats(BaseModel):
    """One critic's record over a batch.

    ``error_rate`` and ``parse_fail_rate`` are over the items it was asked to judge,
    skipped calls (early stop, budget) excluded; ``agreement`` is the share of its valid
    verdicts equal to the consensus (its own tier's, for a cascade's results). Rates are
    ``None`` when undefined (no calls made). ``error_kinds`` counts its failed calls
    (``ERROR`` and ``PARSE_FAIL``) by ``error_kind``, most common first, and
    ``error_messages`` gives each kind's most common ``error`` text (e.g.
    ``"bad_request: HTTP 404: model does not exist"``): why its calls failed, in the
    vendor's words.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    critic: str
    items: int = 0
    valid: int = 0
    errors: int = 0
    parse_failures: int = 0
    skipped: int = 0
    error_rate: float | None = None
    parse_fail_rate: float | None = None
    agreement: float | None = None
    mean_elapsed_s: float | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    error_kinds: dict[str, int] = Field(default_factory=dict)
    error_messages: dict[str, str] = Field(default_factory=dict)


class TierStats(BaseModel):
    """One tier's record over a cascade's batch (:meth:`BatchResult.tier_stats`).

    ``asked`` counts the items this tier judged, ``decided`` those whose consensus it
    gave, ``abstained`` those it left for a human (last tier, ``final="abstain"``);
    ``share_asked`` and ``share_decided`` are over all items. ``cost_usd`` is what its
    calls cost (``None`` unless every one is priced); ``agreement`` is, over the items it
    decided, the mean of its ``agreement_pct``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    tier: int
    critics: list[str]
    asked: int = 0
    decided: int = 0
    abstained: int = 0
    share_asked: float = 0.0
    share_decided: float = 0.0
    agreement: float | None = None
    cost_usd: float | None = None


class BatchResult(BaseModel):
    """The results of a batch, in input order, and statistics over them.

    ``verdicts`` holds one :class:`~cross_judge.verdict.EnsembleVerdict` per item;
    ``critics`` names the panel (the rows of the reliability matrix); ``voting`` the
    strategy; ``elapsed_s`` the wall time of the run. Statistics are computed on demand
    from ``verdicts`` and never call a model; ``None`` means undefined, never a made-up 0.
    ``len(batch)`` is the number of items; ``print(batch)`` prints :meth:`summary`.
    """

    model_config = ConfigDict(defer_build=True)

    verdicts: list[EnsembleVerdict]
    critics: list[str]
    voting: str
    elapsed_s: float = 0.0

    def __len__(self) -> int:
        return len(self.verdicts)

    def __repr__(self) -> str:
        return (
            f"BatchResult({len(self.verdicts)} items, critics={self.critics!r}, "
            f"voting={self.voting!r}, elapsed_s={self.elapsed_s})"
        )

    # -- agreement ---------------------------------------------------------------------------

    def labels_matrix(self) -> list[list[str | None]]:
        """Critics x items matrix of labels; ``None`` where a critic gave no valid verdict."""
        return self._matrix(lambda v: v.kind)

    def reliability_alpha(
        self, level: Level = "nominal", values: Iterable[str] | None = None
    ) -> float | None:
        """Krippendorff's alpha of the critics over the whole batch.

        ``nominal`` compares labels. The other levels need numbers: each verdict's
        ``score`` when it has one, else its label read as a number (``"4"`` -> 4.0). For
        ``ordinal`` over text labels pass their order as ``values`` (low to high).

        Raises:
            ConfigError: a verdict has neither a score nor a numeric label at a numeric
                level, or a label is not in ``values``.
        """
        order = list(values) if values is not None else None
        if level == "nominal" or (level == "ordinal" and order is not None):
            matrix: list[list[Any]] = self.labels_matrix()
        else:
            matrix = self._matrix(lambda v: _numeric(v, level))
        try:
            return reliability_alpha(matrix, level, order)
        except ValueError as exc:
            raise ConfigError(f"reliability_alpha({level!r}): {exc}") from None

    def fleiss_kappa(self) -> float | None:
        """Fleiss' kappa over the items every critic judged validly (others are dropped)."""
        return fleiss_kappa(self.labels_matrix())

    def pairwise_agreement(
        self, measure: Literal["percent", "cohen"] = "percent"
    ) -> dict[tuple[str, str], float | None]:
        """Agreement of each pair of critics over the items both judged validly, keyed both
        ways round: percent agreement or Cohen's kappa."""
        return pairwise_agreement(self.labels_matrix(), self.critics, measure)

    def _matrix(self, value: Callable[[Verdict], Any]) -> list[list[Any]]:
        rows: list[list[Any]] = [[None] * len(self.verdicts) for _ in self.critics]
        index = {name: i for i, name in enumerate(self.critics)}
        for column, result in enumerate(self.verdicts):
            for verdict in result.verdicts:
                row = index.get(verdict.critic_id)
                if row is not None and verdict.error is None:
                    rows[row][column] = value(verdict)
        return rows

    # -- counts ------------------------------------------------------------------------------

    def consensus_counts(self) -> dict[str, int]:
        """Items per consensus label chosen by a vote, most common first.

        Items with no consensus (:attr:`no_consensus_items`: the strategy fell back to its
        ``fallback`` label, ``UNCLEAR`` by default) are left out: a fallback ``UNCLEAR`` is
        not a vote for ``UNCLEAR``, while a panel agreeing on ``UNCLEAR`` is counted.
        """
        return dict(Counter(r.consensus for r in self.verdicts if not is_fallback(r)).most_common())

    @property
    def no_consensus_items(self) -> list[str]:
        """Ids of items whose consensus is the strategy's fallback label because no vote
        decided it (no valid verdict, quorum not met, no unanimity): see
        :func:`is_fallback`."""
        return [r.query_id for r in self.verdicts if is_fallback(r)]

    @property
    def abstained_items(self) -> list[str]:
        """Ids of items a cascade left for a human (consensus ``ABSTAIN``)."""
        return [r.query_id for r in self.verdicts if r.consensus == ABSTAIN and r.tier is not None]

    @property
    def failed_items(self) -> list[str]:
        """Ids of items that are worth judging again: a call failed after its retries
        (an ``ERROR`` verdict), or was not made for lack of budget (``SKIPPED`` with
        ``error_kind="budget"``). Parse failures and early-stop skips do not count."""
        return [r.query_id for r in self.verdicts if is_incomplete(r)]

    @property
    def usage(self) -> Usage:
        """Tokens used by the whole batch."""
        total = Usage()
        for result in self.verdicts:
            total = total + result.usage
        return total

    @property
    def cost_usd(self) -> float | None:
        """Cost of the whole batch; ``None`` unless every item's cost is known."""
        costs = [r.cost_usd for r in self.verdicts]
        if not costs or any(c is None for c in costs):
            return None
        return sum(c for c in costs if c is not None)

    def tier_stats(self) -> list[TierStats]:
        """Per-tier counts of a cascade's batch (items asked, decided, abstained, cost), in
        tier order; empty when no result came from a cascade."""
        depth = max((len(r.tiers or ()) for r in self.verdicts), default=0)
        n = len(self.verdicts)
        out: list[TierStats] = []
        for index in range(depth):
            asked = [r for r in self.verdicts if r.tiers and len(r.tiers) > index]
            mine = [r.tiers[index] for r in asked if r.tiers]
            decided = [
                r.tiers[index]
                for r in asked
                if r.tier == index and r.consensus != ABSTAIN and r.tiers
            ]
            abstained = sum(1 for r in asked if r.tier == index and r.consensus == ABSTAIN)
            costs = [t.cost_usd for t in mine]
            out.append(
                TierStats(
                    tier=index,
                    critics=list(dict.fromkeys(v.critic_id for t in mine for v in t.verdicts)),
                    asked=len(asked),
                    decided=len(decided),
                    abstained=abstained,
                    share_asked=len(asked) / n if n else 0.0,
                    share_decided=len(decided) / n if n else 0.0,
                    agreement=sum(t.agreement_pct for t in decided) / len(decided)
                    if decided
                    else None,
                    cost_usd=sum(c for c in costs if c is not None)
                    if all(c is not None for c in costs)
                    else None,
                )
            )
        return out

    def critic_stats(self) -> dict[str, CriticStats]:
        """Per-critic counts and rates, by critic name in panel order.

        One pass over the verdicts (a 100,000-item batch of three critics takes well under
        a second), counting into a tally per critic.
        """
        tallies = {name: _CriticTally() for name in self.critics}
        for result in self.verdicts:
            for verdict, consensus in _votes_and_consensus(result):
                tally = tallies.get(verdict.critic_id)
                if tally is not None:
                    tally.add(verdict, consensus)
        return {name: tally.stats(name) for name, tally in tallies.items()}

    # -- bias --------------------------------------------------------------------------------

    def position_bias(self) -> PositionBias:
        """Per critic and for the whole panel, the share of decisive answers on pairs that
        picked the candidate shown first, the flip rate of pairs judged in both orders and
        a fairness score. See :func:`cross_judge.bias.position_bias`."""
        from ..stats.bias import position_bias

        return position_bias(self)

    def length_bias(self, bins: Sequence[float] | None = None) -> LengthBias:
        """Per critic and for the consensus, the win rate of a pair's longer candidate,
        binned by relative length difference (``bins``: inner edges, by default 10%, 25%,
        50%). See :func:`cross_judge.bias.length_bias`.

        Raises:
            ConfigError: ``bins`` are not strictly rising numbers in (0, 1).
        """
        from ..stats.bias import LENGTH_BINS, length_bias

        return length_bias(self, LENGTH_BINS if bins is None else bins)

    def self_consistency(self) -> dict[str, SelfStats]:
        """Per critic, the mean agreement with itself of its sampled verdicts
        (``Critic(samples=n)``), apart from agreement between critics. See
        :func:`cross_judge.bias.self_consistency`."""
        from ..stats.bias import self_consistency

        return self_consistency(self)

    # -- re-voting ---------------------------------------------------------------------------

    def against(
        self, gold: Mapping[str, str] | str | os.PathLike[str], *, ci: float | None = None
    ) -> GoldReport:
        """How each critic and the consensus fare against ``gold`` (``{id: label}`` or a
        JSONL file of ``{"id", "label"}``; partial gold is fine): accuracy, Cohen's kappa,
        confusion, coverage, Brier score, expected calibration error, reliability table;
        bootstrap intervals with ``ci=0.95``. See :func:`cross_judge.reliability.gold_report`.

        Raises:
            ConfigError: gold ids that are no item of the batch, or a gold label outside
                what the critics answer.
        """
        from ..stats.reliability import gold_report

        return gold_report(self, gold, ci=ci)

    def revote(
        self,
        voting: str | VotingStrategy = "majority",
        *,
        weights: Mapping[str, float] | None = None,
        min_valid: int | None = None,
        **voting_kwargs: Any,
    ) -> BatchResult:
        """The same verdicts under another strategy; calls no model.

        ``voting="dawid_skene"`` re-decides every item by the Dawid-Skene model learned
        from the whole batch (:func:`cross_judge.reliability.dawid_skene`; ``one_coin=True``
        for its one-accuracy-per-critic variant, ``errors="correlated"`` for critics that
        err together); the consensus's posterior probability is each item's ``score``.

        Raises:
            ConfigError: unknown strategy or invalid arguments (before any item is touched);
                results of a cascade, whose tiers vote apart (replay the cascade with
                another escalation instead, or re-vote a tier's results).
        """
        from ..ensemble import revote

        if voting == "dawid_skene":
            from ..stats.reliability import revote_dawid_skene

            unknown = sorted(set(voting_kwargs) - {"one_coin", "errors"})
            if weights is not None or min_valid is not None or unknown:
                raise ConfigError(
                    "revote('dawid_skene') learns each critic's reliability from the "
                    "verdicts and takes only one_coin=True/False and "
                    "errors='independent'/'correlated'; drop "
                    + ", ".join(
                        [
                            *unknown,
                            *(["weights"] if weights else []),
                            *(["min_valid"] if min_valid else []),
                        ]
                    )
                )
            return revote_dawid_skene(
                self,
                one_coin=bool(voting_kwargs.get("one_coin", False)),
                errors=voting_kwargs.get("errors", "independent"),
            )
        if any(r.tiers for r in self.verdicts):
            raise ConfigError(
                "these results come from a cascade, whose tiers vote separately; replay it "
                "with another escalation (cascade.replay(results, escalation=...)), or "
                "re-vote one tier's results: revote(result.tiers[i], ...)"
            )

        results = [
            revote(r, voting, weights=weights, min_valid=min_valid, **voting_kwargs)
            for r in self.verdicts
        ]
        return self.model_copy(update={"verdicts": results, "voting": _voting_name(voting)})

    # -- export ------------------------------------------------------------------------------

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write one ``EnsembleVerdict`` JSON object per line (what the CLI writes), replacing
        the file. :meth:`from_jsonl` reads it back."""
        with open(path, "w", encoding="utf-8") as out:
            for result in self.verdicts:
                out.write(dump_result(result) + "\n")

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str], *, slim: bool = False) -> BatchResult:
        """Read a results file written by :meth:`to_jsonl` or ``cross-judge review``.

        Critics are named in first-seen order; ``voting`` is the first record's. With
        ``slim`` each verdict's ``raw_response`` and ``reasoning`` are dropped as lines are
        read, which keeps a large run's statistics in a fraction of the memory.

        Raises:
            ConfigError: the file is missing or a line is not a result (line number given).
        """
        return cls.from_results(ResultsFile.read(path, slim=slim))

    @classmethod
    def from_results(cls, results: Iterable[EnsembleVerdict]) -> BatchResult:
        """A batch of stored results: critics named in first-seen order, ``voting`` the
        first result's (``"majority"`` when there is none)."""
        verdicts = list(results)
        critics = list(dict.fromkeys(v.critic_id for r in verdicts for v in r.verdicts))
        voting = verdicts[0].voting if verdicts else "majority"
        return cls(verdicts=verdicts, critics=critics, voting=voting)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per item, for ``pandas.DataFrame(batch.to_records())``.

        Keys: ``id``, ``consensus``, ``agreement_pct``, ``disagreement``, ``n_valid``,
        ``n_errors``, ``score``, ``cost_usd``, ``elapsed_s`` (and ``tier`` for a cascade's
        results), then per critic
        ``<critic>.kind``, ``<critic>.confidence`` and ``<critic>.error_kind``, then each
        meta key as ``meta.<key>``.
        """
        records: list[dict[str, Any]] = []
        for result in self.verdicts:
            record: dict[str, Any] = {
                "id": result.query_id,
                "consensus": result.consensus,
                "agreement_pct": result.agreement_pct,
                "disagreement": result.disagreement,
                "n_valid": result.n_valid,
                "n_errors": result.n_errors,
                "score": result.score,
                "cost_usd": result.cost_usd,
                "elapsed_s": result.elapsed_s,
            }
            if result.tier is not None:
                record["tier"] = result.tier
            by_critic = {v.critic_id: v for v in result.verdicts}
            for name in self.critics:
                v = by_critic.get(name)
                record[f"{name}.kind"] = v.kind if v else None
                record[f"{name}.confidence"] = v.confidence if v and v.error is None else None
                record[f"{name}.error_kind"] = v.error_kind.value if v and v.error_kind else None
            for key, value in result.meta.items():
                record[f"meta.{key}"] = value
            records.append(record)
        return records

    # -- summary -----------------------------------------------------------------------------

    def summary(
        self,
        *,
        gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
        ci: float | None = None,
    ) -> RenderableType:
        """A ``rich`` renderable: totals and agreement, consensus counts, one row per critic;
        with ``gold`` also the critics and the consensus against it (bootstrap intervals at
        ``ci``), the weights it earns and the panel's effective votes.

        ``rich.print(batch.summary())`` in a terminal or notebook; ``print(batch)`` gives
        the same as plain text.
        """
        from ..report.summary import render_summary

        return render_summary(self, gold=gold, ci=ci)

    def __rich__(self) -> RenderableType:
        return self.summary()

    def __str__(self) -> str:
        from ..report.summary import plain_text

        return plain_text(self.summary())

    # -- notebooks ---------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        """The batch at a glance for Jupyter: headline statistics, per-critic and consensus
        tables, then up to 50 items, the disputed ones first (see
        :func:`cross_judge._html.batch_html`)."""
        from ..report.notebook import batch_html

        return batch_html(self)

    def to_pandas(self) -> Any:
        """A long ``pandas.DataFrame``: one row per critic verdict of each item, items in
        batch order (a panel's batch has items x critics rows; a cascade's, the critics of
        each tier asked, tier by tier). ``?`` marks a column that may be missing.

        Per verdict: ``position`` (int, the item's index in the batch), ``query_id``,
        ``critic``, ``tier`` (int?, the cascade tier that asked it), ``kind`` (the label, or
        ``ERROR`` / ``PARSE_FAIL`` / ``SKIPPED``), ``valid`` (bool, a vote: no error),
        ``confidence`` (float?, valid verdicts only), ``score`` (float?), ``reasoning``,
        ``error_kind`` and ``error`` (str?, why the call failed), ``agrees`` (bool?, a valid
        verdict's label equals the consensus it is measured against: the item's, or its own
        tier's in a cascade, as in :meth:`critic_stats`), ``model``, ``vendor`` (str?),
        ``cost_usd`` (float?, missing when unpriced), ``elapsed_s`` (float), ``attempts``
        (int), ``cached`` (bool), ``prompt_tokens`` and ``completion_tokens`` (int?,
        missing when the call reported no usage), ``order`` and ``flipped`` (pairs only).

        Per item, repeated on each of its rows: ``consensus``, ``agreement_pct`` (float),
        ``fallback`` (bool, no vote decided), ``disagreement`` (bool), ``decided_tier``
        (int?, the cascade tier that decided), then ``meta.<key>`` for each key of the
        items' ``meta`` (missing where an item lacks it). Item totals such as cost are left
        out on purpose: summed over rows they would count once per critic; sum
        ``cost_usd`` instead. (:meth:`to_records` is the wide one-row-per-item table.)

        dtypes: ``int64``, ``float64`` (``NaN`` when missing), ``bool``; nullable ``Int64``
        and ``boolean`` for ints and bools that may be missing; text in pandas' default
        string dtype; meta columns inferred. An empty batch gives the columns and no rows.

        Raises:
            ConfigError: pandas is not installed (``pip install 'cross-judge[pandas]'``).
        """
        from ..integrations.frames import to_pandas

        return to_pandas(self)

    def to_polars(self) -> Any:
        """The long frame of :meth:`to_pandas` (same columns, same rows) as a
        ``polars.DataFrame``: ``Int64``, ``Float64``, ``Boolean`` and ``String`` columns with
        nulls for missing values; a meta key whose values mix types is a ``String`` column
        of their text.

        Raises:
            ConfigError: polars is not installed (``pip install 'cross-judge[polars]'``).
        """
        from ..integrations.frames import to_polars

        return to_polars(self)


def _votes_and_consensus(result: EnsembleVerdict) -> Iterator[tuple[Verdict, str]]:
    """Each verdict of ``result`` with the consensus it is measured against: the item's, or
    for a cascade's result its own tier's (a cheap critic is not in dissent when its tier
    escalated, nor when the last tier abstained)."""
    for part in result.tiers or (result,):
        for verdict in part.verdicts:
            yield verdict, part.consensus


def as_batch(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
) -> BatchResult:
    """``results`` as a :class:`BatchResult`: itself, stored results
    (:meth:`BatchResult.from_results`), or a results file (read slim: raw text and
    reasoning dropped).

    Raises:
        ConfigError: the file is missing or a line is not a result.
    """
    if isinstance(results, BatchResult):
        return results
    if isinstance(results, (str, os.PathLike)):
        return BatchResult.from_jsonl(results, slim=True)
    return BatchResult.from_results(results)


def is_fallback(result: EnsembleVerdict) -> bool:
    """True when ``result.consensus`` is the voting strategy's fallback label, given because
    no vote decided (``EnsembleVerdict.fallback``), not a label the critics voted for.
    Results stored without that flag (older files) read as votes: the field defaults to
    False."""
    return result.fallback


_MESSAGES_KEPT = 16  # distinct messages tallied per error kind: bounded memory on huge runs


class _CriticTally:
    """What :meth:`BatchResult.critic_stats` counts for one critic, verdict by verdict."""

    __slots__ = (
        "agreeing",
        "asked",
        "cost",
        "cost_known",
        "elapsed",
        "errors",
        "failed",
        "items",
        "parse",
        "tokens",
        "valid",
    )

    def __init__(self) -> None:
        self.items = self.asked = self.valid = self.agreeing = self.errors = self.parse = 0
        self.elapsed = self.cost = 0.0
        self.cost_known = True
        self.tokens = [0, 0, 0, 0, 0]  # prompt, completion, total, cache read, cache write
        self.failed: list[Verdict] = []

    def add(self, verdict: Verdict, consensus: str) -> None:
        self.items += 1
        usage = verdict.usage
        if usage is not None:
            tokens = self.tokens
            tokens[0] += usage.prompt_tokens
            tokens[1] += usage.completion_tokens
            tokens[2] += usage.total_tokens
            tokens[3] += usage.cache_read_tokens
            tokens[4] += usage.cache_write_tokens
        if verdict.error is None:
            self.valid += 1
            self.agreeing += verdict.kind == consensus
        kind = verdict.kind
        if kind == "SKIPPED":
            return
        self.asked += 1
        self.elapsed += verdict.elapsed_s
        if verdict.cost_usd is None:
            self.cost_known = False
        else:
            self.cost += verdict.cost_usd
        if kind == "ERROR":
            self.errors += 1
            self.failed.append(verdict)
        elif kind == "PARSE_FAIL":
            self.parse += 1
            self.failed.append(verdict)

    def stats(self, name: str) -> CriticStats:
        asked = self.asked
        kinds, messages = _failure_tally(self.failed)
        prompt, completion, total, cache_read, cache_write = self.tokens
        return CriticStats(
            critic=name,
            items=self.items,
            valid=self.valid,
            errors=self.errors,
            parse_failures=self.parse,
            skipped=self.items - asked,
            error_rate=self.errors / asked if asked else None,
            parse_fail_rate=self.parse / asked if asked else None,
            agreement=self.agreeing / self.valid if self.valid else None,
            mean_elapsed_s=self.elapsed / asked if asked else None,
            usage=Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=total,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
            cost_usd=self.cost if asked and self.cost_known else None,
            error_kinds=kinds,
            error_messages=messages,
        )


def _failure_tally(failed: Iterable[Verdict]) -> tuple[dict[str, int], dict[str, str]]:
    """Failed verdicts by error kind (most common first), and each kind's most common
    message among the first few distinct ones seen."""
    kinds: Counter[str] = Counter()
    messages: dict[str, Counter[str]] = {}
    for verdict in failed:
        kind = str(verdict.error_kind or ("parse" if verdict.kind == "PARSE_FAIL" else "error"))
        kinds[kind] += 1
        seen = messages.setdefault(kind, Counter())
        text = verdict.error or ""
        if text in seen or len(seen) < _MESSAGES_KEPT:
            seen[text] += 1
    return dict(kinds.most_common()), {
        kind: seen.most_common(1)[0][0] for kind, seen in messages.items() if seen
    }


def is_incomplete(result: EnsembleVerdict) -> bool:
    """True when a call of ``result`` failed after its retries (``ERROR``) or was not made
    for lack of budget: the item is worth judging again (``--retry-failed``). For a
    cascade's result only the deciding tier counts (a failure in a tier that escalated is
    covered by the tier after it), unless it holds tiers past the deciding one (judged with
    ``all_tiers``, the data calibration and replay read): then every tier counts."""
    if result.tiers and result.tier is not None and len(result.tiers) == result.tier + 1:
        verdicts = result.tiers[result.tier].verdicts
    else:
        verdicts = result.verdicts
    return any(call_failed(v) for v in verdicts)


def call_failed(verdict: Verdict) -> bool:
    """True when ``verdict``'s call failed after its retries (``ERROR``) or was not made
    for lack of budget (``SKIPPED`` with ``error_kind="budget"``)."""
    return verdict.kind == "ERROR" or (
        verdict.kind == "SKIPPED" and verdict.error_kind is ErrorKind.BUDGET
    )


def _numeric(verdict: Verdict, level: str) -> float:
    if verdict.score is not None:
        return verdict.score
    try:
        number = float(verdict.kind)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ConfigError(
            f"reliability_alpha({level!r}) needs numbers, but critic {verdict.critic_id!r} "
            f"answered {verdict.kind!r} with no score; use level='nominal', or 'ordinal' "
            "with values=[...] listing the labels from low to high"
        )
    return number


# -- the results file ---------------------------------------------------------------------------


def dump_result(result: EnsembleVerdict) -> str:
    """``result`` as one line of JSON (no newline), as results files hold it.

    Lossless for any text, including a lone surrogate (valid JSON as an escape such as
    ``"\\udc80"``, e.g. in an item id read from a JSONL file): UTF-8 cannot encode one, so
    such a record is written with ASCII escapes instead of failing. :func:`load_result`
    reads both forms back.
    """
    try:
        return result.model_dump_json()
    except PydanticSerializationError:
        # Rare (text that is not Unicode); the escaped form is ~3x slower to write.
        return json.dumps(result.model_dump(mode="json"), ensure_ascii=True, separators=(",", ":"))


def load_result(line: str | bytes) -> EnsembleVerdict:
    """One line written by :func:`dump_result`, as an :class:`EnsembleVerdict`.

    Raises:
        ValidationError: the line is not JSON or not a result record.
    """
    try:
        return EnsembleVerdict.model_validate_json(line)
    except ValidationError as exc:
        # pydantic's JSON parser refuses lone surrogate escapes, which json.loads keeps.
        if not any("surrogate" in str(e.get("msg", "")) for e in exc.errors()):
            raise
        try:
            value = json.loads(line)
        except ValueError:
            raise exc from None
        return EnsembleVerdict.model_validate(value)


class ResultsFile:
    """An append-only JSONL file of results, one ``EnsembleVerdict`` per line.

    Each result is written as one line with a single ``write`` and flushed at once, so a
    killed run loses at most the line being written. :meth:`open` with ``resume=True``
    reads the ids already done and repairs a torn last line (one without its newline,
    left by a kill mid-write) by cutting it off; that item is judged again.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: Path,
        handle: IO[str],
        done: set[str],
        *,
        repaired: bool = False,
        dropped: list[str] | None = None,
        spent_usd: float = 0.0,
        unpriced: int = 0,
    ) -> None:
        self.path = path
        self.done_ids = done
        self.repaired = repaired
        self.dropped_ids = dropped or []
        self.spent_usd = spent_usd
        self.unpriced = unpriced
        self._handle = handle

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, resume: bool = False, retry_failed: bool = False
    ) -> ResultsFile:
        """Open ``path`` for appending results.

        Without ``resume`` the file must not exist or be empty (nothing is overwritten).
        With ``retry_failed`` (which implies ``resume``) the results that have a failed
        call (an ``ERROR`` verdict) are removed from the file first, so those items are
        judged again; their ids are in :attr:`dropped_ids`. The file is rewritten through
        a temporary file and an atomic rename, so a kill leaves either version whole.

        :attr:`spent_usd` is what the results found in the file cost (those removed by
        ``retry_failed`` included: they were paid for), and :attr:`unpriced` how many of
        them have no known cost; a resumed run's budget starts from it.

        Raises:
            ConfigError: the file holds results and ``resume`` is false; a line that is
                not a result (with its number); the folder does not exist.
        """
        target = Path(path)
        done: set[str] = set()
        repaired = False
        dropped: list[str] = []
        cost = _CostTally()
        if target.exists() and target.stat().st_size > 0:
            if not (resume or retry_failed):
                raise ConfigError(
                    f"{target} already holds results; pass --resume to continue that run "
                    "(resume=True in Python), or choose another output file"
                )
            repaired = _repair_torn_tail(target)
            if retry_failed:
                dropped = _drop_failed(target, cost)
            for record in cls.read(target, slim=True):
                done.add(record.query_id)
                cost.add(record)
        if not target.parent.exists():
            raise ConfigError(f"{target.parent} does not exist; create it or choose another path")
        handle = open(target, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        return cls(
            target,
            handle,
            done,
            repaired=repaired,
            dropped=dropped,
            spent_usd=cost.usd,
            unpriced=cost.unpriced,
        )

    def append(self, result: EnsembleVerdict) -> None:
        """Write ``result`` as one line (:func:`dump_result`) and flush it."""
        self._handle.write(dump_result(result) + "\n")
        self._handle.flush()
        self.done_ids.add(result.query_id)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    def read(path: str | os.PathLike[str], *, slim: bool = False) -> Iterator[EnsembleVerdict]:
        """The results in a file, in file order; blank lines are skipped. With ``slim``,
        verdicts lose ``raw_response`` and ``reasoning`` (see :meth:`BatchResult.from_jsonl`).

        Raises:
            ConfigError: the file is missing, or a line is not a result (line number given).
        """
        try:
            handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such results file") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    result = load_result(line)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"])
                    raise ConfigError(
                        f"{path} line {number}: not a result record ({where}: {first['msg']})"
                    ) from None
                if slim:
                    result.verdicts = [
                        v.model_copy(update={"raw_response": None, "reasoning": ""})
                        for v in result.verdicts
                    ]
                yield result


class _CostTally:
    """The known cost of results, and how many had none."""

    def __init__(self) -> None:
        self.usd = 0.0
        self.unpriced = 0

    def add(self, result: EnsembleVerdict) -> None:
        if result.cost_usd is None:
            self.unpriced += 1
        else:
            self.usd += result.cost_usd


def _drop_failed(path: Path, cost: _CostTally) -> list[str]:
    """Rewrite ``path`` without results that have an ERROR verdict; return their ids (and
    add their cost to ``cost``: they were paid for)."""
    kept: list[str] = []
    dropped: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = load_result(line)
            except ValidationError:
                raise ConfigError(f"{path} line {number}: not a result record") from None
            if is_incomplete(record):
                dropped.append(record.query_id)
                cost.add(record)
            else:
                kept.append(line if line.endswith("\n") else line + "\n")
    if dropped:
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            out.writelines(kept)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    return dropped


def _repair_torn_tail(path: Path) -> bool:
    """Cut off a last line that lacks its newline; True if something was cut."""
    with open(path, "rb+") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return False
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return False
        # Find the last newline, reading backwards in blocks.
        position = size
        cut = 0
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            block = handle.read(position - start)
            found = block.rfind(b"\n")
            if found != -1:
                cut = start + found + 1
                break
            position = start
        handle.truncate(cut)
        return True
