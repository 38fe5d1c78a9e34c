"""Provider batch mode: a batch of items judged through vendors' batch APIs.

``judge_many(items, mode="batch")`` (and ``stream``, ``cross-judge review --mode batch``)
runs the panel exactly as live mode does (prompts, orders, samples, early stop, cascades,
cache, budget, parsing, voting), with one difference at the bottom: a critic's call to a
vendor with a batch API is not sent but *parked* here. When every item in flight is waiting
on parked requests (or on live calls), the parked requests are submitted together as one
*round*: grouped per endpoint and key, built as each vendor takes them
(:mod:`cross_judge.transport._batch_codecs`), split within its limits (one model per OpenAI file;
at most the API's requests and bytes per batch, or the vendor's ``max_batch_bytes``:
:func:`batch_limits`, so a round of large image requests goes out as several batches),
and submitted. Each batch id is written to the ledger before anything else happens, then
the batch is polled with backoff, its results fetched, and each parked call gets the
verdict a live call would have given (:meth:`~cross_judge.core.Critic.verdict_from_batch`,
priced at the batch rate). The items then go on as they would live: with staged early
stop, the critics still needed for undecided items park again and form round 2, so round
2 holds only the undecided items.

How a round is told apart from a trickle. Each item in flight is tracked: how many of its
calls are running and how many of those wait here (parked, or a live call). An item is
*settled* when it is finished, or when every running call of it waits here: nothing it does
can change until a batch comes back or a live call ends. A round is submitted when every
item in flight is settled and no new item can start (the window is full or the input is
exhausted), so a round holds every request the items in flight will make before they hear
back, never a few stragglers.

Critics on vendors without a batch API (``BatchOptions.vendors``) run live in the same job,
at most ``concurrency`` calls at once per live critic; their items count as settled while
they wait, so they do not hold a round back.

Request ids. A request's ``custom_id`` is :func:`~cross_judge.transport._batch_codecs.request_id`
of the item id, the critic's name and the request's cache key, so it is the same in every
run of the same panel on the same item: the ledger finds it again. Two items with the same
id and query share one request.

The ledger (``BatchOptions.ledger``, ``<OUT>.batches.jsonl`` for ``cross-judge review``)
is an append-only JSONL file, each line flushed and fsynced: ``submitted`` (batch id,
vendor, endpoint without credentials, the custom ids) right after the vendor accepts a
batch, ``ended`` (its status and the ids whose request failed) once its results are in. A
later run with the same ledger attaches each request whose id is in a submitted batch to
that batch (polling and fetching it again; vendors keep results for weeks) instead of
submitting it again, so a run killed while polling is resumed without paying twice; ids
that failed are submitted anew. A kill between the vendor accepting a batch and the
ledger line being written (milliseconds) would submit those requests again.

Deadline. With ``BatchOptions.deadline_s``, the job stops waiting for batches that many
seconds after it started: each unfinished batch is cancelled (best effort: the vendor keeps
and bills what it had finished) and its requests are made live, as are requests parked
after the deadline. The ensemble's and the critics' own ``deadline`` do not apply to a
parked call (a batch takes hours); they apply to live calls as usual.

Failures never lose an item: a batch the vendor refuses, a request that failed or expired,
results that cannot be fetched, each becomes that critic's ``ERROR`` verdict with its kind
(``batch`` for an expired or missing result) and the vendor's message, key redacted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Collection, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ..critic import active_job, charge_unreported_usage, reset_active_job, set_active_job
from ..errors import ConfigError, ErrorKind
from ..transport import CallFailure, redactor_for, secrets_of
from ._admission import admit, judge_item
from ._items import ItemError

if TYPE_CHECKING:
    from ..budget import Budget
    from ..critic import Critic
    from ..pricing import Price
    from ..transport import BatchLimits, ChatRequest, Outcome
    from ..vendors import VendorConfig
    from ..verdict import EnsembleVerdict, Verdict
    from ._items import Item, ItemFeed
    from ._panel_protocol import Panel

__all__ = [
    "BATCH_ENVELOPE_BYTES",
    "BATCH_VENDORS",
    "BatchLedger",
    "BatchOptions",
    "active_job",
    "batch_limits",
]

logger = logging.getLogger("cross_judge")

BATCH_VENDORS: frozenset[str] = frozenset({"openai", "anthropic"})
"""Vendors whose batch API batch mode uses by default: OpenAI's Batch API and Anthropic's
Message Batches. Others run live unless named in ``BatchOptions.vendors``: DeepSeek has no
batch API; OpenRouter's batches depend on the model behind it; an OpenAI-compatible gateway
(``custom``) may serve ``/v1/files`` and ``/v1/batches``."""

_RETRY_POLL = frozenset(
    {ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.TIMEOUT, ErrorKind.CONNECTION}
)
"""Poll failures that are waited out (the next poll may work); others end the batch."""

SETTLE_CHECKPOINTS = 8
"""Scheduler trips with no change before a round is submitted (see ``_Job._quiet``): more
than the nesting of task spawns between an item and its calls (cascade tier, critic,
order, sample)."""

MAX_POLL_FAILURES = 20
"""Consecutive failed polls of one batch (of the kinds above) before its requests fail."""


@dataclass(frozen=True)
class BatchOptions:
    """How ``mode="batch"`` runs (:func:`cross_judge.batch.judge_many`).

    Attributes:
        vendors: vendor names whose critics go through the batch API; the others' calls
            are made live in the same job. Default :data:`BATCH_VENDORS`.
        ledger: a JSONL file recording submitted batches, so a later run with the same
            ledger picks them up instead of submitting them again; ``None`` keeps no
            record. ``cross-judge review`` uses ``<OUT>.batches.jsonl``.
        poll_s: seconds before the first poll of a batch; each later wait is 1.5 times
            longer, up to ``max_poll_s``.
        max_poll_s: the longest wait between two polls of a batch.
        deadline_s: stop waiting for batches this many seconds after the job starts:
            what is not back is cancelled and asked live. ``None``: wait until the
            vendors' batches end (their own window is 24 h).
        window: items in flight at once; their requests are submitted together, so this
            is also the most items one round holds.
    """

    vendors: Collection[str] = BATCH_VENDORS
    ledger: str | os.PathLike[str] | None = None
    poll_s: float = 30.0
    max_poll_s: float = 600.0
    deadline_s: float | None = None
    window: int = 50_000

    def __post_init__(self) -> None:
        if isinstance(self.vendors, str):
            raise ConfigError(
                f"BatchOptions(vendors=) takes a collection of vendor names, got the string "
                f"{self.vendors!r}; write vendors={{{self.vendors!r}}}"
            )
        object.__setattr__(self, "vendors", frozenset(v.lower() for v in self.vendors))
        for name in ("poll_s", "max_poll_s"):
            value = getattr(self, name)
            if not _positive(value):
                raise ConfigError(f"BatchOptions({name}=) must be a number > 0, got {value!r}")
        if self.max_poll_s < self.poll_s:
            raise ConfigError(
                f"BatchOptions(max_poll_s={self.max_poll_s!r}) is below poll_s="
                f"{self.poll_s!r}; give a max_poll_s at least as long"
            )
        if self.deadline_s is not None and not (_positive(self.deadline_s) or self.deadline_s == 0):
            raise ConfigError(
                f"BatchOptions(deadline_s=) must be a number >= 0 or None, got {self.deadline_s!r}"
            )
        window = self.window
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ConfigError(f"BatchOptions(window=) must be an integer >= 1, got {window!r}")

    def takes(self, config: VendorConfig) -> bool:
        """Whether a critic on ``config``'s vendor goes through the batch API: the vendor
        is in :attr:`vendors` and its protocol has a batch API."""
        return config.name.lower() in self.vendors and _has_batch_api(config)

    def why_live(self, config: VendorConfig) -> str | None:
        """Why a critic on ``config``'s vendor runs live in batch mode (at live prices),
        in words for a user; ``None`` when it goes through the vendor's batch API.

        A vendor not in :attr:`vendors` runs live: DeepSeek has no batch API; any other
        (``custom``, a local server, OpenRouter) is batched only when named there, as an
        OpenAI-compatible gateway that serves ``/v1/files`` and ``/v1/batches`` (or an
        Anthropic-protocol one serving ``/v1/messages/batches``) can be.
        """
        if self.takes(config):
            return None
        if config.name.lower() in self.vendors:
            return f"{config.name} speaks {config.protocol!r}, which has no batch API"
        if config.name.lower() == "deepseek":
            return "DeepSeek has no batch API"
        listed = ", ".join(sorted(self.vendors)) or "none"
        return f"{config.name} is not among the batch vendors: {listed}"


def _has_batch_api(config: VendorConfig) -> bool:
    from ..transport import protocol_adapter

    return protocol_adapter(config.protocol).batch is not None


def _positive(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


# -- the ledger ---------------------------------------------------------------------------------


@dataclass
class _Recorded:
    """A batch the ledger knows: its vendor, ids, and (once ended) the ids that failed."""

    batch_id: str
    vendor: str
    custom_ids: frozenset[str]
    failed: frozenset[str] | None = None  # None until its results are in


class BatchLedger:
    """The append-only record of a job's submitted batches (see the module docstring).

    Lines are JSON objects; a torn last line (a kill while writing it) is ignored and
    cut off before the next line is written. Holds no key: the endpoint is written
    without any ``user:password@``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._batches: dict[str, _Recorded] = {}
        self._by_id: dict[str, str] = {}
        self._file: IO[bytes] | None = None
        self._load()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot read the batch ledger: {exc}") from None
        keep = len(data)
        for number, line in enumerate(data.splitlines(keepends=True), start=1):
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
            except ValueError:
                if not line.endswith(b"\n"):  # torn by a kill: cut off on the next write
                    keep = len(data) - len(line)
                    break
                raise ConfigError(
                    f"{self.path}:{number}: not a batch ledger line; this file is written "
                    "by cross-judge batch mode: point BatchOptions(ledger=) at another file"
                ) from None
            self._apply(record, number)
        if keep < len(data):
            with self.path.open("r+b") as f:
                f.truncate(keep)

    def _apply(self, record: dict[str, Any], number: int) -> None:
        event, batch_id = record.get("event"), record.get("batch_id")
        if not isinstance(batch_id, str):
            raise ConfigError(f"{self.path}:{number}: a ledger line without a batch_id")
        if event == "submitted":
            ids = frozenset(str(i) for i in record.get("custom_ids", ()))
            self._batches[batch_id] = _Recorded(batch_id, str(record.get("vendor")), ids)
            for custom_id in ids:
                self._by_id[custom_id] = batch_id
        elif event == "ended" and batch_id in self._batches:
            failed = frozenset(str(i) for i in record.get("failed", ()))
            self._batches[batch_id].failed = failed
            for custom_id in failed:
                if self._by_id.get(custom_id) == batch_id:
                    del self._by_id[custom_id]

    def custom_ids(self, batch_id: str) -> frozenset[str]:
        """Every request id of recorded batch ``batch_id``."""
        return self._batches[batch_id].custom_ids

    def batch_of(self, custom_id: str) -> str | None:
        """The batch that holds ``custom_id``'s answer (submitted, and not failed there)."""
        return self._by_id.get(custom_id)

    @property
    def batches(self) -> list[str]:
        """Every batch id recorded, in submission order."""
        return list(self._batches)

    def submitted(self, batch_id: str, config: VendorConfig, custom_ids: list[str]) -> None:
        """Record a batch the vendor has accepted (before it is polled). Lookups
        (:meth:`batch_of`) answer for the batches of earlier runs, read when the ledger
        was opened: this run's own are followed by the job itself, and not indexing them
        keeps memory flat over a long job."""
        from ..vendors import without_userinfo

        record = {
            "event": "submitted",
            "batch_id": batch_id,
            "vendor": config.name,
            "endpoint": without_userinfo(config.base_url),
            "at": time.time(),
            "custom_ids": custom_ids,
        }
        self._write(record)

    def ended(self, batch_id: str, status: str, failed: list[str]) -> None:
        """Record that ``batch_id``'s results are in, and which of its requests failed."""
        record = {"event": "ended", "batch_id": batch_id, "status": status, "failed": failed}
        self._apply(record, 0)  # a batch of an earlier run: its failed ids are not found again
        self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            self._file = self.path.open("ab")
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file (it is reopened by the next write)."""
        if self._file is not None:
            self._file.close()
            self._file = None


# -- items and parked requests ------------------------------------------------------------------


class _ItemTrack:
    """One item in flight: its calls running, and of those the ones waiting here."""

    __slots__ = ("done", "item_id", "running", "settled", "waiting")

    def __init__(self, item_id: str) -> None:
        self.item_id = item_id
        self.running = 0
        self.waiting = 0
        self.done = False
        self.settled = False


_GO_LIVE = CallFailure(ErrorKind.BATCH, "not answered by the batch before the deadline")
"""The outcome that sends a parked call live (the deadline passed)."""


@dataclass(eq=False)
class _Parked:
    """A request waiting for a batch's answer, shared by every call that makes it."""

    custom_id: str
    critic: Critic
    config: VendorConfig
    api_key: str | None
    request: ChatRequest
    ready: anyio.Event = field(default_factory=anyio.Event)
    outcome: Outcome | None = None
    waiters: int = 0
    submitted: bool = False

    def resolve(self, outcome: Outcome) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.ready.set()


_Group = tuple[str, str, str, str | None]
"""(vendor, protocol, base URL, key): the requests that can share a batch."""


class _Job:
    """One batch-mode run (see the module docstring)."""

    def __init__(self, options: BatchOptions, live_calls: int) -> None:
        self.options = options
        self.ledger = BatchLedger(options.ledger) if options.ledger is not None else None
        self._live = anyio.Semaphore(live_calls)
        self._pending: dict[_Group, dict[str, _Parked]] = {}
        self._parked: dict[str, _Parked] = {}
        self._watched: dict[str, _Watched] = {}
        self._unsettled = 0
        self._changes = 0  # of any item's counts: tells a quiet spell from a busy one
        self._feeding = True
        self._wake = anyio.Event()
        self.deadline = (
            math.inf if options.deadline_s is None else anyio.current_time() + options.deadline_s
        )
        self.past_deadline = False
        self._group: anyio.abc.TaskGroup | None = None

    # -- accounting ----------------------------------------------------------------------

    def item_started(self) -> None:
        self._unsettled += 1  # a new item is unsettled until its calls wait here

    def item_finished(self, track: _ItemTrack) -> None:
        track.done = True
        self._update(track)

    def feeding(self, active: bool) -> None:
        """The feeder is reading or starting items (``True``), or blocked on a full
        window or done (``False``)."""
        self._feeding = active
        if not active:
            self._check()

    async def _quiet(self) -> bool:
        """Whether a round may go now: every item settled, no item about to start, and
        still so after :data:`SETTLE_CHECKPOINTS` trips through the scheduler with no
        change. The trips let tasks already spawned but not yet run (a critic's call
        started beside one that has parked) take their first step, which counts them."""
        for _ in range(SETTLE_CHECKPOINTS):
            if self._unsettled or self._feeding or not self._pending:
                return False
            changes = self._changes
            await anyio.lowlevel.checkpoint()
            if changes != self._changes:
                return False
        return not (self._unsettled or self._feeding or not self._pending)

    def _update(self, track: _ItemTrack) -> None:
        self._changes += 1
        settled = track.done or (track.running > 0 and track.running == track.waiting)
        if settled == track.settled:
            return
        track.settled = settled
        self._unsettled += -1 if settled else 1
        self._check()

    def _check(self) -> None:
        if self._unsettled == 0 and not self._feeding and self._pending:
            self._wake.set()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Count one call of the current item as running while the block runs."""
        track = _item.get()
        if track is None:
            yield
            return
        track.running += 1
        self._update(track)
        try:
            yield
        finally:
            track.running -= 1
            self._update(track)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Count one running call of the current item as waiting here while the block
        runs: parked, making a live call, or waiting for a budget's reservations to settle
        (:meth:`~cross_judge.budget.Budget.reserve_or_wait`). An item whose running calls
        all wait is settled, so a round can go."""
        track = _item.get()
        if track is None:
            yield
            return
        track.waiting += 1
        self._update(track)
        try:
            yield
        finally:
            track.waiting -= 1
            self._update(track)

    # -- a critic's call -----------------------------------------------------------------

    async def ask(
        self,
        critic: Critic,
        config: VendorConfig,
        request: ChatRequest,
        api_key: str | None,
        live: Callable[[], Awaitable[Verdict]],
    ) -> Verdict:
        """The verdict for one call: through a batch when its vendor has one and the
        deadline has not passed, else ``live()`` (at most ``concurrency`` at once)."""
        track = _item.get()
        if track is None or self.past_deadline or not self.options.takes(config):
            return await self._live_call(live)
        from ..transport import request_id

        custom_id = request_id(track.item_id, critic.name, variant=request.cache_key(config))
        parked = self._parked.get(custom_id)
        if parked is None:
            parked = _Parked(custom_id, critic, config, api_key, request)
            self._parked[custom_id] = parked
            self._place(parked)
        parked.waiters += 1
        try:
            with self.waiting():
                await parked.ready.wait()
        except BaseException:
            parked.waiters -= 1
            if parked.waiters == 0:
                self._parked.pop(custom_id, None)
                if not parked.submitted and parked.outcome is None:
                    self._withdraw(parked)  # no one waits for it: it is not submitted
            raise
        parked.waiters -= 1
        if parked.waiters == 0:
            self._parked.pop(custom_id, None)
        outcome = parked.outcome
        assert outcome is not None
        if outcome is _GO_LIVE:
            return await self._live_call(live)
        verdict = critic.verdict_from_batch(outcome, structured=request.structured)
        if isinstance(outcome, CallFailure):
            return verdict
        return charge_unreported_usage(verdict, outcome, request, critic.price(), batch=True)

    async def _live_call(self, live: Callable[[], Awaitable[Verdict]]) -> Verdict:
        with self.waiting():
            async with self._live:
                return await live()

    def _place(self, parked: _Parked) -> None:
        """Attach a new request to the batch the ledger has it in, or queue it for the
        next round."""
        batch_id = self.ledger.batch_of(parked.custom_id) if self.ledger is not None else None
        if batch_id is not None:
            parked.submitted = True
            watched = self._watched.get(batch_id)
            if watched is None:
                assert self.ledger is not None
                watched = self._watch(batch_id, parked.config, self.ledger.custom_ids(batch_id))
                assert self._group is not None
                self._group.start_soon(self._follow, watched, parked.api_key, True)
            watched.add(parked)
            return
        group: _Group = (
            parked.config.name,
            parked.config.protocol,
            parked.config.base_url,
            parked.api_key,
        )
        self._pending.setdefault(group, {})[parked.custom_id] = parked

    def _withdraw(self, parked: _Parked) -> None:
        self._parked.pop(parked.custom_id, None)
        for requests in self._pending.values():
            requests.pop(parked.custom_id, None)

    # -- rounds --------------------------------------------------------------------------

    async def run(self, group: anyio.abc.TaskGroup) -> None:
        """Submit a round whenever the items in flight are settled; until cancelled.
        Batches are followed in tasks of ``group``."""
        self._group = group
        if self.deadline < math.inf:
            group.start_soon(self._watch_deadline)
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if not await self._quiet():
                continue
            pending, self._pending = self._pending, {}
            for key, requests in pending.items():
                live = [p for p in requests.values() if p.outcome is None]
                if live:
                    group.start_soon(self._submit_group, key, live)

    async def _watch_deadline(self) -> None:
        await anyio.sleep_until(self.deadline)
        self.past_deadline = True
        for requests in self._pending.values():
            for parked in requests.values():
                parked.resolve(_GO_LIVE)
        self._pending.clear()
        for watched in self._watched.values():
            watched.deadline_passed.set()

    async def _submit_group(self, key: _Group, requests: list[_Parked]) -> None:
        from ..transport import batch_api, split

        first = requests[0]
        config, api_key = first.config, first.api_key
        by_id = {p.custom_id: p for p in requests}
        try:
            api = batch_api(config)
            limits = batch_limits(api.limits, config)
            built = []
            for parked in requests:
                entry = api.encode(config, parked.request, parked.custom_id)
                if entry.size > limits.max_bytes:  # alone over a batch: it fails alone
                    parked.resolve(_over_batch(config, entry.size, limits.max_bytes))
                    by_id.pop(parked.custom_id)
                else:
                    built.append(entry)
            chunks = split(built, limits, one_model=api.one_model)
        except Exception as exc:  # a codec failing on a request: none of them is sent
            failure = CallFailure(ErrorKind.BAD_REQUEST, str(exc))
            for parked in by_id.values():
                parked.resolve(failure)
            return
        async with anyio.create_task_group() as group:
            for chunk in chunks:
                group.start_soon(
                    self._submit_batch, config, api_key, [by_id[r.custom_id] for r in chunk], chunk
                )

    async def _submit_batch(
        self, config: VendorConfig, api_key: str | None, requests: list[_Parked], built: list[Any]
    ) -> None:
        from ..transport import submit

        for parked in requests:
            parked.submitted = True
        try:
            batch_id = await submit(config, api_key, built)
        except Exception as exc:  # the verdicts say why; they are redacted by the critic
            refused = _as_failure(exc, "batch submission")
            hide = redactor_for(*secrets_of(config.base_url, api_key))
            logger.debug("batch submission to %s failed: %s", config.name, hide.error(str(refused)))
            for parked in requests:
                parked.resolve(refused)
            return
        ids = [p.custom_id for p in requests]
        if self.ledger is not None:
            self.ledger.submitted(batch_id, config, ids)
        watched = self._watch(batch_id, config, frozenset(ids))
        for parked in requests:
            watched.add(parked)
        await self._follow(watched, api_key, False)

    def _watch(self, batch_id: str, config: VendorConfig, ids: frozenset[str]) -> _Watched:
        """Start following ``batch_id``. A batch whose submission returned after the
        deadline (the deadline's watcher has already told the batches it knew of) is told
        at once, so it is cancelled and its requests go live rather than wait on it."""
        watched = self._watched[batch_id] = _Watched(batch_id, config, ids)
        if self.past_deadline:
            watched.deadline_passed.set()
        return watched

    async def _follow(self, watched: _Watched, api_key: str | None, resumed: bool) -> None:
        """Poll ``watched`` with backoff until it ends, then hand each request its answer;
        at the deadline, cancel it and send its requests live."""
        from ..transport import cancel, fetch_results, poll

        config = watched.config
        wait = 0.0 if resumed else self.options.poll_s
        failures = 0
        while True:
            with anyio.move_on_after(max(0.0, wait)):
                await watched.deadline_passed.wait()
            if watched.deadline_passed.is_set():
                with contextlib.suppress(CallFailure, Exception):
                    await cancel(config, api_key, watched.batch_id)
                watched.finish_all(_GO_LIVE)
                return
            try:
                state = await poll(config, api_key, watched.batch_id)
            except Exception as exc:
                failure = _as_failure(exc, f"polling batch {watched.batch_id}")
                failures += 1
                if failure.kind not in _RETRY_POLL or failures >= MAX_POLL_FAILURES:
                    watched.finish_all(failure)
                    return
                wait = _next_wait(wait, self.options)
                continue
            failures = 0
            if state.ended:
                break
            wait = _next_wait(wait, self.options)
        try:
            outcomes = await fetch_results(config, api_key, watched.batch_id, watched.all_ids)
        except Exception as exc:
            watched.finish_all(_as_failure(exc, f"fetching batch {watched.batch_id}"))
            return
        failed = sorted(i for i, o in outcomes.items() if isinstance(o, CallFailure))
        if self.ledger is not None:
            self.ledger.ended(watched.batch_id, state.status, failed)
        watched.finish(outcomes, keep=resumed)
        if not resumed:  # no request of this run attaches to it later: let it go
            self._watched.pop(watched.batch_id, None)

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()


BATCH_ENVELOPE_BYTES = 4096
"""Bytes kept free in every batch for what wraps its requests (Anthropic's
``{"requests": [...]}``, the upload's multipart framing), so a full batch stays under the
API's limit."""


def batch_limits(limits: BatchLimits, config: VendorConfig) -> BatchLimits:
    """What one batch to ``config``'s vendor may hold: the API's ``limits``, their bytes
    lowered to the vendor's ``max_batch_bytes`` when it has one, less
    :data:`BATCH_ENVELOPE_BYTES`. A round's requests are split into as many batches as
    these take (:func:`cross_judge.transport.split`): by count and by bytes."""
    cap = limits.max_bytes
    if config.max_batch_bytes is not None:
        cap = min(cap, config.max_batch_bytes)
    return dataclasses.replace(limits, max_bytes=max(1, cap - BATCH_ENVELOPE_BYTES))


def _over_batch(config: VendorConfig, size: int, cap: int) -> CallFailure:
    """The failure of a request that alone is larger than one batch may be."""
    return CallFailure(
        ErrorKind.TOO_LARGE,
        f"too large for a batch: this request is {size} bytes as a batch line, over the "
        f"{cap} bytes one batch to vendor {config.name!r} may hold (max_batch_bytes, less "
        f"{BATCH_ENVELOPE_BYTES} for its envelope); not sent. Raise max_batch_bytes, "
        "shorten the item, or judge this vendor live (leave it out of BatchOptions(vendors=))",
    )


def _as_failure(exc: Exception, doing: str) -> CallFailure:
    """``exc`` as the failure the waiting calls get: a vendor's refusal as it is, anything
    else (a client library failing in a way it does not document) as ``INTERNAL``."""
    if isinstance(exc, CallFailure):
        return exc
    return CallFailure(ErrorKind.INTERNAL, f"internal: {doing}: {type(exc).__name__}: {exc}")


def _next_wait(wait: float, options: BatchOptions) -> float:
    return min(options.max_poll_s, max(options.poll_s, wait * 1.5))


class _Watched:
    """A submitted batch being followed, and the requests waiting on it. Requests may
    attach after its results are in (a resumed run reaching them later): they get the
    kept answer at once."""

    def __init__(self, batch_id: str, config: VendorConfig, ids: frozenset[str]) -> None:
        self.batch_id = batch_id
        self.config = config
        self.all_ids = sorted(ids)
        self._requests: dict[str, _Parked] = {}
        self._outcomes: dict[str, Outcome] | None = None
        self.deadline_passed = anyio.Event()

    def add(self, parked: _Parked) -> None:
        if self._outcomes is not None:
            outcome = self._outcomes.pop(parked.custom_id, None)
            if outcome is None:
                outcome = CallFailure(
                    ErrorKind.BATCH, f"batch {self.batch_id}: no result for this request"
                )
            parked.resolve(outcome)
            return
        self._requests[parked.custom_id] = parked

    def finish(self, outcomes: dict[str, Outcome], *, keep: bool) -> None:
        """Hand each waiting request its outcome; with ``keep`` (a batch of an earlier
        run, whose other requests may attach later) keep the rest for them."""
        self._outcomes = outcomes
        waiting, self._requests = self._requests, {}
        for parked in waiting.values():
            self.add(parked)
        if not keep:
            self._outcomes = {}

    def finish_all(self, outcome: Outcome) -> None:
        for parked in self._requests.values():
            parked.resolve(outcome)
        self._requests.clear()


# -- the context a job's calls run in -----------------------------------------------------------

_item: ContextVar[_ItemTrack | None] = ContextVar("cross_judge_batch_item", default=None)


async def run_job(
    panel: Panel,
    feed: ItemFeed,
    options: BatchOptions,
    concurrency: int,
    deliver: Callable[[int, EnsembleVerdict], Awaitable[None]],
    budget: Budget | None,
    *,
    item_text: bool = True,
) -> None:
    """Judge the feed's items in batch mode and ``deliver`` each result as it finishes
    (with its item's text unless ``item_text`` is false). The feed is closed however this
    ends.

    Raises:
        ItemError: an item cannot be judged; items in flight finish first.
        ConfigError: the ledger file cannot be read or is not a ledger.
    """
    live_critics = sum(1 for c in panel.critics if not options.takes(c.endpoint()))
    job = _Job(options, live_calls=max(1, concurrency * max(1, live_critics)))
    token = set_active_job(job)
    problem: ItemError | None = None
    outstanding = 0
    all_done = anyio.Event()
    feed_over = False
    try:
        slots = anyio.Semaphore(options.window)

        async def judge(index: int, item: Item, track: _ItemTrack) -> None:
            nonlocal outstanding
            _item.set(track)  # this task's context: its calls' tasks inherit it
            try:
                await deliver(index, await judge_item(panel, item, budget, item_text=item_text))
            finally:
                job.item_finished(track)
                slots.release()
                outstanding -= 1
                if feed_over and outstanding == 0:
                    all_done.set()

        async with anyio.create_task_group() as group:
            job._group = group
            group.start_soon(job.run, group)

            def start(index: int, item: Item) -> None:
                nonlocal outstanding
                outstanding += 1
                job.item_started()
                group.start_soon(judge, index, item, _ItemTrack(item.id))

            problem = await admit(feed, slots, start, feeding=job.feeding)
            feed_over = True
            job.feeding(False)
            if outstanding:
                await all_done.wait()
            group.cancel_scope.cancel()  # the round loop and orphaned batches
    finally:
        reset_active_job(token)
        job.close()
        await feed.aclose()
    if problem is not None:
        raise problem


def check_batch_prices(panel: Panel, options: BatchOptions) -> None:
    """Raise before anything is sent when a batched critic's model has a price but no
    batch rate: its answers could not be priced."""
    for critic in panel.critics:
        config = critic.endpoint()
        if not options.takes(config):
            continue
        price: Price | None = critic.price()
        if price is not None and price.batch_multiplier is None:
            raise ConfigError(
                f"critic {critic.name!r}: the price table has no batch rate for model "
                f"{critic.model!r} on {config.name}; add one (register_price(..., batch=0.5) "
                f"or 'batch:' in a --prices file), or run {config.name} live by leaving it "
                "out of BatchOptions(vendors=) / --batch-vendors"
            )
