"""Interrupting a judgement stops it: every call in flight ends promptly, nothing is left open.

What this file proves, against the real stack and a simulated vendor on 127.0.0.1 whose
requests never answer (:meth:`Reply.hang`), so that only the interrupt can end them:

* **Cancel scopes.** ``Critic.judge`` (OpenAI-compatible and Anthropic), ``Ensemble.judge``,
  ``judge_many`` and ``stream``, cancelled by ``CancelScope.cancel()`` or run out by
  the deadline of ``anyio.move_on_after``, under asyncio and trio: the caller gets control
  back and the vendor sees no request in flight promptly after the cancel (calls that were
  not cancelled would run for their timeout of ``SAFETY_NET_S``); closing the pools then
  leaves no socket, fd, task or thread of ours behind.
* **asyncio task cancellation.** The same four entry points in a task that is
  ``task.cancel()``-ed: the task ends cancelled (not with a verdict), with the same bound.
* **Budgets.** A call cancelled in flight settles its reservation: ``reserved_usd`` returns
  to 0 and the estimated prompt is charged.
* **Streams.** Leaving a stream early (``break`` out of a bare ``async for``, or out of
  ``async with``) cancels the calls it still had in flight.
* **Waits that are not the vendor.** A call queued for a vendor slot
  (``max_concurrency``), paused by the vendor limiter after a 429, or sleeping out a
  ``Retry-After`` stops as promptly, and gives its place in the queue back.
* **The sync bridge.** Ctrl-C (a real SIGINT to the main thread) while ``judge_sync``
  waits raises ``KeyboardInterrupt`` and cancels the call in flight.
* **The CLI.** SIGINT to ``cross-judge review`` with calls in flight: the vendor sees none
  and the process exits 130, promptly; the results file is valid JSONL (every
  line a whole result, no torn line) and agrees with the run manifest (status
  ``interrupted``, its totals); ``--resume`` then judges exactly the items not written,
  each once, sends nothing for the items already written, and records the second run. A
  second Ctrl-C while the review winds down (closing connections, writing the manifest)
  changes none of that: still 130, no traceback, no manifest left saying ``running``.

"Promptly" is :data:`~tests.waits.PROMPTLY_S`, a correctness bound, not a speed target: in
practice calls stop within milliseconds and the CLI exits within the few hundred the
interpreter takes to shut down (``record_property`` keeps the measurements, and
``bench/bench_reliability.py`` reports them), while what the bound rules out (a call that
was not cancelled, a timeout or ``Retry-After`` waited out) takes ``SAFETY_NET_S``, ten
times as long, so no load on the machine can make the two look alike. Every interrupt is
sent once what it must interrupt is observed (requests in flight at the vendor, a call
queued at the limiter, a retry wait begun), never after a fixed sleep, and every wait is
bounded, so a call that keeps running fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

import cross_judge
from cross_judge import Critic, Ensemble, _sync
from cross_judge.budget import Budget
from cross_judge.limits._gate import VendorLimiter, limiter_for
from cross_judge.pricing import register_price
from cross_judge.testing import Reply, VendorServer
from cross_judge.transport import _retry as _retry
from cross_judge.vendors import VENDORS, get_vendor, register_vendor, set_vendor_limits

from ..waits import PROMPTLY_S, SAFETY_NET_S
from .conftest import KEY, Snapshot, close_pools_and_check_tasks, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and /proc"),
]

STOP_S = PROMPTLY_S
"""The bound: from the interrupt until the caller has control and no call is in flight."""

WAIT_S = SAFETY_NET_S
"""Upper bound for waits that normally take milliseconds (a failure, not a hang)."""

CONCURRENCY = 4
ITEMS = [f"interrupt item {n:02d}" for n in range(12)]
ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fits"}'
LONG_RETRY_AFTER_S = SAFETY_NET_S
"""A Retry-After only an interrupt can cut short (the policy's 60 s cap is lifted for it)."""

ONE_WORKER = pytest.mark.xdist_group("interrupted-review")
"""For the tests of ``interrupted_review``: on one xdist worker, so the module builds it once."""


# -- helpers ------------------------------------------------------------------------------------


def critic(server: VendorServer, model: str, *, vendor: str = "custom", **kwargs: Any) -> Critic:
    """A critic on the test server whose calls only an interrupt can end (its timeout is
    ``SAFETY_NET_S``, ten times the bound of a prompt stop)."""
    base_url = server.anthropic_url if vendor == "anthropic" else server.url
    kwargs.setdefault("timeout", SAFETY_NET_S)
    return Critic(name=model, model=model, vendor=vendor, base_url=base_url, api_key=KEY, **kwargs)


def in_flight(server: VendorServer) -> int:
    return int(server.stats()["in_flight"])


async def eventually(predicate: Callable[[], bool], *, poll: float = 0.005) -> None:
    """Wait (bounded by ``WAIT_S``) until ``predicate()`` holds. Polling, because what it
    watches (the server's counters, the limiter's queue) has no event to wait on."""
    with anyio.fail_after(WAIT_S):
        while not predicate():  # noqa: ASYNC110 - nothing to wait on but the predicate
            await anyio.sleep(poll)


async def until_in_flight(server: VendorServer, count: int) -> None:
    """Wait (bounded) until the server is answering exactly ``count`` requests."""
    await eventually(lambda: in_flight(server) == count)


def limiter_of(c: Critic, *, pause: bool = False) -> VendorLimiter | None:
    """The running loop's limiter of ``c``'s endpoint (its ``max_concurrency`` queue), or
    with ``pause`` the one holding its model's 429 state; None: none was needed yet."""
    return limiter_for(c.endpoint(), c.model if pause else None)


async def seconds_until_idle(server: VendorServer, since: float) -> float:
    """Wait (bounded) until the server has nothing in flight; seconds from ``since``
    (``anyio.current_time()``) until then."""
    await eventually(lambda: in_flight(server) == 0, poll=0.002)
    return anyio.current_time() - since


@dataclass(frozen=True)
class Stop:
    """How an interrupted operation stopped, in seconds from the interrupt."""

    returned_s: float  # until the interrupted code had control back
    idle_s: float  # until the vendor saw no request in flight


async def cancel_when_in_flight(
    server: VendorServer,
    count: int,
    work: Callable[[], Awaitable[object]],
    *,
    just_before: Callable[[], object] = lambda: None,
) -> Stop:
    """Run ``work``; once ``count`` of its requests are in flight, call ``just_before()``
    and ``CancelScope.cancel()`` it.

    Fails if ``work`` finishes by itself instead of being cancelled.
    """
    scope = anyio.CancelScope()
    finished = False

    async def run() -> None:
        nonlocal finished
        with scope:
            await work()
            finished = True

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await until_in_flight(server, count)
            just_before()
            cancelled_at = anyio.current_time()
            scope.cancel()
        returned = anyio.current_time() - cancelled_at
    assert not finished and scope.cancelled_caught
    return Stop(returned, await seconds_until_idle(server, cancelled_at))


async def deadline_when_in_flight(
    server: VendorServer, count: int, work: Callable[[], Awaitable[object]]
) -> Stop:
    """Run ``work`` under ``anyio.move_on_after``; once ``count`` of its requests are in
    flight, move that deadline to now, so it runs out exactly then.

    Fails if ``work`` finishes by itself instead of running out of time.
    """
    async with anyio.create_task_group() as group:
        with anyio.move_on_after(WAIT_S) as scope:

            async def run_out_once_in_flight() -> None:
                await until_in_flight(server, count)
                scope.deadline = anyio.current_time()

            group.start_soon(run_out_once_in_flight)
            await work()
        ran_out_at = scope.deadline
        returned = anyio.current_time() - ran_out_at
        group.cancel_scope.cancel()
    assert scope.cancelled_caught, "the work ended before its deadline ran out"
    return Stop(returned, await seconds_until_idle(server, ran_out_at))


# -- the operations under test ------------------------------------------------------------------


async def critic_judge(critics: list[Critic], budget: Budget | None) -> object:
    return await critics[0].judge(ITEMS[0], budget=budget)


async def ensemble_judge(critics: list[Critic], budget: Budget | None) -> object:
    return await Ensemble(critics).judge(ITEMS[0], budget_usd=budget)


async def judge_many(critics: list[Critic], budget: Budget | None) -> object:
    return await Ensemble(critics).judge_many(ITEMS, concurrency=CONCURRENCY, budget_usd=budget)


async def stream(critics: list[Critic], budget: Budget | None) -> object:
    results = Ensemble(critics).stream(ITEMS, concurrency=CONCURRENCY, budget_usd=budget)
    return [r async for r in results]


@dataclass(frozen=True)
class Operation:
    """A public entry point that calls vendors, and the calls it has in flight at once."""

    run: Callable[[list[Critic], Budget | None], Coroutine[Any, Any, object]]
    critics: int
    in_flight: int
    vendor: str = "custom"


OPERATIONS = {
    "Critic.judge": Operation(critic_judge, critics=1, in_flight=1),
    "Critic.judge-anthropic": Operation(critic_judge, critics=1, in_flight=1, vendor="anthropic"),
    "Ensemble.judge": Operation(ensemble_judge, critics=3, in_flight=3),
    "judge_many": Operation(judge_many, critics=2, in_flight=2 * CONCURRENCY),
    "stream": Operation(stream, critics=2, in_flight=2 * CONCURRENCY),
}


@pytest.fixture
def long_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a Retry-After of ``LONG_RETRY_AFTER_S`` be honoured as sent: the retry policy and
    the vendor limiter cap waits at 60 s, which a prompt stop must stay well clear of."""
    monkeypatch.setattr(_retry, "MAX_RETRY_AFTER_S", LONG_RETRY_AFTER_S)
    monkeypatch.setattr("cross_judge.limits._gate.MAX_RETRY_AFTER_S", LONG_RETRY_AFTER_S)


@pytest.fixture
def models(server: VendorServer, model: str) -> Iterator[list[str]]:
    """Three model names for this test, every request for them hanging (cleared after)."""
    names = [f"{model}-{n}" for n in range(3)]
    assert wait_until(lambda: in_flight(server) == 0), "a previous test left calls in flight"
    server.reset_stats()
    for name in names:
        server.always(name, Reply.hang())
    yield names
    for name in names:
        server.always(name, None)


def panel_for(server: VendorServer, operation: Operation, models: list[str]) -> list[Critic]:
    return [critic(server, m, vendor=operation.vendor) for m in models[: operation.critics]]


# -- (a) anyio cancel scopes ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", OPERATIONS)
async def test_cancel_scope_cancel_stops_every_call_in_flight_promptly(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    name: str,
    record_property: Callable[[str, object], None],
) -> None:
    operation = OPERATIONS[name]
    critics = panel_for(server, operation, models)

    stop = await cancel_when_in_flight(
        server, operation.in_flight, lambda: operation.run(critics, None)
    )

    record_property("stop", asdict(stop))
    assert stop.returned_s < STOP_S
    assert stop.idle_s < STOP_S
    assert await close_pools_and_check_tasks() == []


@pytest.mark.anyio
@pytest.mark.parametrize("name", OPERATIONS)
async def test_move_on_after_stops_every_call_in_flight_promptly_at_its_deadline(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    name: str,
    record_property: Callable[[str, object], None],
) -> None:
    operation = OPERATIONS[name]
    critics = panel_for(server, operation, models)

    stop = await deadline_when_in_flight(
        server, operation.in_flight, lambda: operation.run(critics, None)
    )

    record_property("stop", asdict(stop))
    assert server.stats()["max_in_flight"] == operation.in_flight  # no more were sent
    assert stop.returned_s < STOP_S
    assert stop.idle_s < STOP_S
    assert await close_pools_and_check_tasks() == []


# -- (b) asyncio task cancellation ----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("name", OPERATIONS)
async def test_task_cancel_stops_every_call_in_flight_promptly(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    name: str,
    record_property: Callable[[str, object], None],
) -> None:
    operation = OPERATIONS[name]
    critics = panel_for(server, operation, models)
    loop = asyncio.get_running_loop()

    task = loop.create_task(operation.run(critics, None))
    try:
        await until_in_flight(server, operation.in_flight)
        cancelled_at = loop.time()
        task.cancel()
        await asyncio.wait({task}, timeout=WAIT_S)
        returned = loop.time() - cancelled_at
    finally:
        task.cancel()
    idle = await seconds_until_idle(server, cancelled_at)

    record_property("stop", asdict(Stop(returned, idle)))
    assert task.cancelled()  # the cancellation propagated: not swallowed into a verdict
    assert returned < STOP_S
    assert idle < STOP_S
    assert await close_pools_and_check_tasks() == []


# -- budgets -------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Critic.judge", "judge_many"])
async def test_a_call_cancelled_in_flight_settles_its_budget_reservation(
    server: VendorServer, models: list[str], leaks: Snapshot, name: str
) -> None:
    operation = OPERATIONS[name]
    critics = panel_for(server, operation, models)
    for c in critics:
        register_price(c.model, vendor=operation.vendor, input=1.0, output=2.0)
    budget = Budget(10.0)
    reserved: list[float] = []

    await cancel_when_in_flight(
        server,
        operation.in_flight,
        lambda: operation.run(critics, budget),
        just_before=lambda: reserved.append(budget.reserved_usd),  # every call in flight
    )

    assert reserved[0] > 0
    assert budget.reserved_usd == 0
    assert 0 < budget.spent_usd < reserved[0]  # each prompt charged, not the worst case
    assert await close_pools_and_check_tasks() == []


# -- streams -------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["bare async for", "async with"])
async def test_leaving_a_stream_early_cancels_its_calls_in_flight_promptly(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    how: str,
    record_property: Callable[[str, object], None],
) -> None:
    server.script(models[0], Reply.content(ANSWER))  # the first call answers, others hang
    ensemble = Ensemble([critic(server, models[0])])

    async def first_then_leave() -> float:
        """Take one result, wait until the slots refilled, then leave; when it left."""
        if how == "bare async for":
            async for result in ensemble.stream(ITEMS, concurrency=CONCURRENCY):
                assert result.consensus == "KEEP"
                await until_in_flight(server, CONCURRENCY)
                left_at = anyio.current_time()
                break
            return left_at
        async with ensemble.stream(ITEMS, concurrency=CONCURRENCY) as results:
            async for result in results:
                assert result.consensus == "KEEP"
                await until_in_flight(server, CONCURRENCY)
                left_at = anyio.current_time()
                break
        return left_at

    with anyio.fail_after(WAIT_S):
        left_at = await first_then_leave()
        idle = await seconds_until_idle(server, left_at)

    record_property("stop", asdict(Stop(0.0, idle)))
    assert idle < STOP_S
    assert await close_pools_and_check_tasks() == []


# -- waits that are not the vendor ----------------------------------------------------------------


@pytest.fixture
def gated_vendor(server: VendorServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A vendor on the test server allowing one request in flight (removed after the test)."""
    name = "interrupts-gated"
    monkeypatch.setitem(VENDORS, name, get_vendor("custom"))  # undone: the key is removed
    register_vendor(name, server.url, replace_existing=True)
    set_vendor_limits(name, max_concurrency=1)
    return name


@pytest.mark.anyio
async def test_cancelling_calls_queued_for_a_vendor_slot_stops_them_and_frees_the_queue(
    server: VendorServer,
    models: list[str],
    gated_vendor: str,
    leaks: Snapshot,
    record_property: Callable[[str, object], None],
) -> None:
    critics = [critic(server, m, vendor=gated_vendor) for m in models]

    with anyio.fail_after(WAIT_S):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                for c in critics:
                    group.start_soon(c.judge, ITEMS[0])
                await until_in_flight(server, 1)
                queue = limiter_of(critics[0])
                assert queue is not None
                await eventually(lambda: queue.waiting == 2)  # queued behind the first
                cancelled_at = anyio.current_time()
                scope.cancel()
        returned = anyio.current_time() - cancelled_at
        idle = await seconds_until_idle(server, cancelled_at)

    record_property("stop", asdict(Stop(returned, idle)))
    assert returned < STOP_S
    assert idle < STOP_S
    assert queue is not None and (queue.in_flight, queue.waiting) == (0, 0)  # all given back
    # The slot is free: the next call is admitted and answered (a slot still held would
    # keep it queued until the bound).
    server.script(models[0], Reply.content(ANSWER))
    with anyio.fail_after(WAIT_S):
        assert (await critics[0].judge(ITEMS[1])).kind == "KEEP"
    assert await close_pools_and_check_tasks() == []


@pytest.mark.anyio
async def test_cancelling_a_call_sleeping_out_a_retry_after_stops_it_promptly(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    record_property: Callable[[str, object], None],
    monkeypatch: pytest.MonkeyPatch,
    long_retry_after: None,
) -> None:
    server.always(models[0], Reply.status(429, retry_after=LONG_RETRY_AFTER_S))
    c = critic(server, models[0], max_retries=3)
    waits: list[float] = []
    policy_wait = _retry._wait

    def recorded_wait(state: Any) -> float:
        seconds = policy_wait(state)
        waits.append(seconds)  # the retry policy starts this wait next
        return seconds

    monkeypatch.setattr(_retry, "_wait", recorded_wait)

    with anyio.fail_after(WAIT_S):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(c.judge, ITEMS[0])
                # The 429 is answered: the call now sleeps out its Retry-After (SAFETY_NET_S).
                await eventually(lambda: bool(waits))
                assert waits == [LONG_RETRY_AFTER_S]
                cancelled_at = anyio.current_time()
                scope.cancel()
        returned = anyio.current_time() - cancelled_at

    record_property("stop", asdict(Stop(returned, 0.0)))
    assert returned < STOP_S
    assert server.stats()["requests"] == 1  # no retry was sent
    assert await close_pools_and_check_tasks() == []


@pytest.mark.anyio
async def test_cancelling_a_call_held_by_a_vendor_pause_after_a_429_stops_it_promptly(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    record_property: Callable[[str, object], None],
    long_retry_after: None,
) -> None:
    # A 429 with a long Retry-After pauses the vendor (for this model at least); the next
    # call to it waits at the limiter.
    server.script(models[0], Reply.status(429, retry_after=LONG_RETRY_AFTER_S))
    first = await critic(server, models[0], max_retries=0).judge(ITEMS[0])
    assert first.kind == "ERROR" and server.stats()["requests"] == 1
    held = critic(server, models[0])

    with anyio.fail_after(WAIT_S):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(held.judge, ITEMS[1])
                # Every other task blocked: the held call would wait out the long pause.
                await anyio.wait_all_tasks_blocked()
                cancelled_at = anyio.current_time()
                scope.cancel()
        returned = anyio.current_time() - cancelled_at

    record_property("stop", asdict(Stop(returned, 0.0)))
    assert scope.cancelled_caught
    assert returned < STOP_S
    assert server.stats()["requests"] == 1  # the held call was never sent
    limiter = limiter_of(held, pause=True)
    assert limiter is not None and (limiter.in_flight, limiter.waiting) == (0, 0)
    assert await close_pools_and_check_tasks() == []


# -- the sync bridge ------------------------------------------------------------------------------


def test_ctrl_c_during_judge_sync_cancels_the_call_in_flight_promptly(
    server: VendorServer,
    models: list[str],
    leaks: Snapshot,
    record_property: Callable[[str, object], None],
) -> None:
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    assert main is not None
    sent: list[float] = []

    def ctrl_c_once_in_flight() -> None:
        # A real SIGINT to the main thread, as a terminal's Ctrl-C: it interrupts the
        # blocking wait (_thread.interrupt_main() only sets a flag, seen when the wait ends).
        if wait_until(lambda: in_flight(server) == 1, WAIT_S):
            sent.append(time.monotonic())
            signal.pthread_kill(main, signal.SIGINT)

    interrupter = threading.Thread(target=ctrl_c_once_in_flight, name="ctrl-c")
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            critic(server, models[0]).judge_sync(ITEMS[0])
        raised = time.monotonic()
        assert wait_until(lambda: in_flight(server) == 0, WAIT_S)
        idle = time.monotonic()
    finally:
        interrupter.join(WAIT_S)
        _sync.shutdown()  # the bridge's pools and thread; the leaks fixture checks both

    stop = Stop(raised - sent[0], idle - sent[0])
    record_property("stop", asdict(stop))
    assert stop.returned_s < STOP_S
    assert stop.idle_s < STOP_S


# -- the CLI --------------------------------------------------------------------------------------

PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])
KEY_ENV = "CJ_INTERRUPTS_TEST_KEY"
CLI_MODELS = ("cli-interrupt-a", "cli-interrupt-b")
CLI_ITEMS = {f"id-{n:02d}": f"cli interrupt candidate {n:02d}" for n in range(24)}
ANSWERED_FIRST = 6  # requests answered per critic before every further one hangs


@dataclass
class Run:
    """One ``cross-judge review`` process and what it left behind."""

    code: int | None
    stderr: str
    results: bytes  # the results file when the process had exited
    manifest: dict[str, Any]
    idle_s: float = 0.0  # SIGINT -> the vendor sees no request in flight
    exit_s: float = 0.0  # SIGINT -> the process has exited
    requested: Counter[str] | None = None  # item id -> requests sent during the run
    # item id -> answers the run left in its answers journal (arrived, item not written)
    kept: Counter[str] = field(default_factory=Counter)


@dataclass
class InterruptedReview:
    folder: Path
    first: Run  # interrupted by SIGINT with every slot hanging
    resumed: Run  # the same command with --resume, against an answering vendor


def _write_review_inputs(folder: Path, server: VendorServer, models: tuple[str, ...]) -> list[str]:
    """Write the items and a panel of ``models`` on ``server``; the review's arguments."""
    (folder / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in CLI_ITEMS.items()),
        encoding="utf-8",
    )
    critics = "".join(
        f"\n  - name: {m}\n    model: {m}\n    vendor: custom\n    base_url: {server.url}"
        f"\n    api_key_env: {KEY_ENV}\n    prompt: taxonomy-review@1"
        f"\n    timeout: {SAFETY_NET_S:g}"
        for m in models
    )
    (folder / "panel.yaml").write_text(f"critics:{critics}\n", encoding="utf-8")
    return [
        "review",
        str(folder / "items.jsonl"),
        "--panel",
        str(folder / "panel.yaml"),
        "--out",
        str(folder / "out.jsonl"),
        "--concurrency",
        str(CONCURRENCY),
        "--no-progress",
    ]


@contextlib.contextmanager
def _review_process(folder: Path, argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``python *argv`` (a review), output to files; killed if still running at the end."""
    with open(folder / "stderr.txt", "wb") as err, open(folder / "stdout.txt", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *argv],
            stdout=out,
            stderr=err,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT, KEY_ENV: KEY},
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=WAIT_S)


@contextlib.contextmanager
def _review_with_every_slot_hanging(
    folder: Path, server: VendorServer, models: tuple[str, ...], argv: list[str]
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``python *argv`` (a review of ``models``); yield it once it has written a result
    and every slot waits on the vendor, which answers each critic's first
    ``ANSWERED_FIRST`` requests and hangs on the rest."""
    out = folder / "out.jsonl"
    slots = CONCURRENCY * len(models)
    assert wait_until(lambda: in_flight(server) == 0)
    for m in models:
        server.script(m, *[Reply.content(ANSWER)] * ANSWERED_FIRST)
        server.always(m, Reply.hang())
    try:
        with _review_process(folder, argv) as proc:
            assert wait_until(
                lambda: (
                    proc.poll() is not None
                    or (out.exists() and b"\n" in out.read_bytes() and in_flight(server) == slots)
                ),
                WAIT_S,
            ), f"the review never had {slots} calls in flight"
            assert proc.poll() is None, (folder / "stderr.txt").read_text()
            yield proc
    finally:
        for m in models:
            server.always(m, None)


def _finished_run(folder: Path, code: int | None) -> Run:
    manifest_file = folder / "out.jsonl.manifest.json"
    journal = folder / "out.jsonl.journal.jsonl"  # gone once a run is complete
    lines = journal.read_text().splitlines() if journal.exists() else []
    return Run(
        code=code,
        stderr=(folder / "stderr.txt").read_text(errors="replace"),
        results=(folder / "out.jsonl").read_bytes(),
        manifest=json.loads(manifest_file.read_text()) if manifest_file.exists() else {},
        kept=Counter(json.loads(line)["item"] for line in lines),
    )


def _requested_items(server: VendorServer) -> Counter[str]:
    """Item id -> requests the server received for it (since its stats were reset)."""
    recent = server.recent_requests
    assert len(recent) < 100, "more requests than recent_requests keeps"
    by_id: Counter[str] = Counter()
    for request in recent:
        text = json.dumps(request["body"])
        by_id.update(i for i, query in CLI_ITEMS.items() if query in text)
    return by_id


@pytest.fixture(scope="module")
def interrupted_review(
    server: VendorServer, tmp_path_factory: pytest.TempPathFactory
) -> InterruptedReview:
    """A review interrupted by SIGINT while its every slot waits on the vendor, then resumed.

    When the signal comes, ``CONCURRENCY`` items (x2 critics) are in flight, and only the
    interrupt can stop them. The vendor then answers everything, and ``--resume`` runs.
    """
    folder = tmp_path_factory.mktemp("interrupted-review")
    args = _write_review_inputs(folder, server, CLI_MODELS)
    cli = ["-m", "cross_judge.cli"]
    with _review_with_every_slot_hanging(folder, server, CLI_MODELS, [*cli, *args]) as proc:
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        idle_at = exit_at = math.inf
        while math.inf in (idle_at, exit_at) and time.monotonic() < sent + WAIT_S:
            now = time.monotonic()
            if idle_at == math.inf and in_flight(server) == 0:
                idle_at = now
            if exit_at == math.inf and proc.poll() is not None:
                exit_at = now
            time.sleep(0.002)
        code = proc.wait(timeout=WAIT_S)
    first = _finished_run(folder, code)
    first.idle_s, first.exit_s = idle_at - sent, exit_at - sent

    try:
        for m in CLI_MODELS:
            server.always(m, Reply.content(ANSWER))
        server.reset_stats()
        with _review_process(folder, [*cli, *args, "--resume"]) as proc:
            code = proc.wait(timeout=WAIT_S)
        resumed = _finished_run(folder, code)
        resumed.requested = _requested_items(server)
    finally:
        for m in CLI_MODELS:
            server.always(m, None)
    return InterruptedReview(folder, first, resumed)


def _ids(results: bytes) -> list[str]:
    return [json.loads(line)["query_id"] for line in results.splitlines()]


@ONE_WORKER
def test_ctrl_c_stops_every_call_of_a_review_promptly(
    interrupted_review: InterruptedReview, record_property: Callable[[str, object], None]
) -> None:
    first = interrupted_review.first
    record_property("stop", asdict(Stop(first.exit_s, first.idle_s)))
    assert first.idle_s < STOP_S


@ONE_WORKER
def test_ctrl_c_ends_the_review_process_with_130_promptly(
    interrupted_review: InterruptedReview,
) -> None:
    first = interrupted_review.first
    assert first.code == 130, first.stderr
    assert first.exit_s < STOP_S
    assert "--resume" in first.stderr and "Traceback" not in first.stderr


@ONE_WORKER
def test_an_interrupted_review_leaves_valid_jsonl_without_a_torn_line(
    interrupted_review: InterruptedReview,
) -> None:
    results = interrupted_review.first.results
    assert results.endswith(b"\n")
    records = [json.loads(line) for line in results.splitlines()]  # each line whole JSON
    ids = [r["query_id"] for r in records]
    assert 0 < len(ids) < len(CLI_ITEMS)
    assert len(set(ids)) == len(ids)
    assert all(r["n_valid"] == len(CLI_MODELS) for r in records)  # no cancelled call written


@ONE_WORKER
def test_the_manifest_of_an_interrupted_review_says_so_and_counts_what_was_written(
    interrupted_review: InterruptedReview,
) -> None:
    first = interrupted_review.first
    (run,) = first.manifest["runs"]
    assert run["status"] == "interrupted" and run["ended_at"] is not None
    written = len(_ids(first.results))
    assert run["totals"]["items_judged"] == written
    assert run["totals"]["calls"] == written * len(CLI_MODELS)


@ONE_WORKER
def test_resume_after_ctrl_c_completes_the_review_with_every_item_exactly_once(
    interrupted_review: InterruptedReview,
) -> None:
    resumed = interrupted_review.resumed
    assert resumed.code == 0, resumed.stderr
    assert interrupted_review.resumed.results.startswith(interrupted_review.first.results)
    assert Counter(_ids(resumed.results)) == Counter(dict.fromkeys(CLI_ITEMS, 1))


@ONE_WORKER
def test_resume_after_ctrl_c_judges_no_item_twice(interrupted_review: InterruptedReview) -> None:
    written_before = set(_ids(interrupted_review.first.results))
    requested = interrupted_review.resumed.requested
    assert requested is not None
    assert not written_before & set(requested)  # nothing already written is sent again
    # Every other item is sent once per critic whose answer did not arrive before the
    # interrupt (the others are in the answers journal), and nothing else is sent.
    kept = interrupted_review.first.kept
    assert requested == Counter(
        {i: len(CLI_MODELS) - kept[i] for i in set(CLI_ITEMS) - written_before}
    )


@ONE_WORKER
def test_the_manifest_records_the_interrupted_run_and_its_resume(
    interrupted_review: InterruptedReview,
) -> None:
    first_written = len(_ids(interrupted_review.first.results))
    runs = interrupted_review.resumed.manifest["runs"]
    assert [r["status"] for r in runs] == ["interrupted", "done"]
    assert runs[0] == interrupted_review.first.manifest["runs"][0]  # left as it was
    totals = runs[1]["totals"]
    assert totals["items_already_done"] == first_written
    assert totals["items_judged"] == len(CLI_ITEMS) - first_written
    assert runs[1]["options"]["resume"] is True


# A review whose wind-down after Ctrl-C is held at one step until the second Ctrl-C has been
# sent: the step touches MARKER when it starts, then waits (at most 10 s) for MARKER.sent,
# which the test creates right after sending the signal; the signal is pending by then, so
# it lands while the step runs, however loaded the machine. Both steps are busy (a blocking
# wait, not an await), as the process is for most of a real wind-down: the signal then
# lands in Python code, not in the event loop's idle wait.
SLOW_STEP_REVIEW = """
import sys, time
from pathlib import Path

import cross_judge.report._manifest
import cross_judge.ensemble
from cross_judge.cli import main

marker, step = Path(sys.argv[1]), sys.argv[2]
sent = marker.with_name(marker.name + ".sent")


def held_until_the_second_ctrl_c():
    marker.touch()
    end = time.monotonic() + 10
    while not sent.exists() and time.monotonic() < end:
        time.sleep(0.005)


if step == "closing connections":
    real_aclose = cross_judge.ensemble.Ensemble.aclose

    async def aclose(self):
        held_until_the_second_ctrl_c()
        await real_aclose(self)

    cross_judge.ensemble.Ensemble.aclose = aclose
else:  # "writing the manifest"
    real_finish = cross_judge.report._manifest.RunManifest.finish

    def finish(self, status, totals):
        held_until_the_second_ctrl_c()
        real_finish(self, status, totals)

    cross_judge.report._manifest.RunManifest.finish = finish
sys.exit(main(sys.argv[3:]))
"""
TWICE_MODELS = ("cli-twice-a", "cli-twice-b")


@pytest.mark.parametrize("step", ["closing connections", "writing the manifest"])
def test_a_second_ctrl_c_while_the_review_winds_down_leaves_it_consistent(
    server: VendorServer, tmp_path: Path, step: str
) -> None:
    args = _write_review_inputs(tmp_path, server, TWICE_MODELS)
    marker = tmp_path / "winding-down"
    argv = ["-c", SLOW_STEP_REVIEW, str(marker), step, *args]
    with _review_with_every_slot_hanging(tmp_path, server, TWICE_MODELS, argv) as proc:
        proc.send_signal(signal.SIGINT)
        assert wait_until(marker.exists, WAIT_S), "the review never wound down"
        proc.send_signal(signal.SIGINT)  # impatient: again, while it winds down
        marker.with_name(marker.name + ".sent").touch()  # the step may go on
        code = proc.wait(timeout=WAIT_S)
    run = _finished_run(tmp_path, code)

    assert code == 130, run.stderr
    assert "Traceback" not in run.stderr
    assert "--resume" in run.stderr  # the way on is still printed
    assert [r["status"] for r in run.manifest["runs"]] == ["interrupted"]
    assert not list(tmp_path.glob("*.tmp"))  # no manifest write cut in half
    assert run.results.endswith(b"\n")
    written = [json.loads(line)["query_id"] for line in run.results.splitlines()]
    assert (
        0 < len(written) == len(set(written)) == run.manifest["runs"][0]["totals"]["items_judged"]
    )
