"""Budget.reserve_or_wait: a call that would fit once the calls in flight settle waits for
them; only a call that cannot fit, whatever those calls cost, is refused (no network)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import anyio
import pytest

from cross_judge.budget import Budget

from ..waits import SAFETY_NET_S

pytestmark = pytest.mark.anyio

WAIT_S = SAFETY_NET_S  # an upper bound for waits that take milliseconds


class Waiting:
    """A ``while_waiting`` context that records that, and how often, a call waited."""

    def __init__(self) -> None:
        self.entered = 0
        self.now = threading.Event()

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        self.entered += 1
        self.now.set()
        try:
            yield
        finally:
            self.now.clear()


async def test_a_call_that_fits_now_is_reserved_without_waiting() -> None:
    budget, waiting = Budget(1.0), Waiting()
    assert await budget.reserve_or_wait(0.4, while_waiting=waiting)
    assert budget.reserved_usd == pytest.approx(0.4) and waiting.entered == 0


async def test_a_call_that_fits_once_a_call_in_flight_settles_waits_and_is_reserved() -> None:
    budget, waiting = Budget(1.0), Waiting()
    assert budget.reserve(0.7)
    granted: list[bool] = []

    async def call() -> None:
        granted.append(await budget.reserve_or_wait(0.5, while_waiting=waiting))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        assert waiting.now.is_set() and not granted  # waiting, not refused
        budget.settle(0.7, 0.1)
    assert granted == [True] and waiting.entered == 1
    assert (budget.spent_usd, budget.reserved_usd, budget.skipped) == (0.1, 0.5, 0)


async def test_a_call_that_cannot_fit_even_if_every_call_in_flight_is_free_is_refused_at_once() -> (
    None
):
    budget, waiting = Budget(1.0, spent_usd=0.6), Waiting()
    assert budget.reserve(0.3)
    assert not await budget.reserve_or_wait(0.5, while_waiting=waiting)
    assert budget.skipped == 1 and waiting.entered == 0


async def test_a_waiting_call_is_refused_when_the_calls_it_waited_for_spent_the_room() -> None:
    budget = Budget(1.0)
    assert budget.reserve(0.7)
    granted: list[bool] = []

    async def call() -> None:
        granted.append(await budget.reserve_or_wait(0.5))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        budget.settle(0.7, 0.6)  # only 0.4 is left, and nothing is in flight
    assert granted == [False] and budget.skipped == 1 and budget.reserved_usd == 0.0


async def test_waiting_calls_take_the_room_freed_in_turn_and_never_overspend() -> None:
    budget = Budget(1.0)
    assert budget.reserve(0.6) and budget.reserve(0.4)
    granted: list[bool] = []

    async def call() -> None:
        granted.append(await budget.reserve_or_wait(0.5))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        assert not granted
        budget.settle(0.6, 0.0)  # room for one of the three
        await anyio.wait_all_tasks_blocked()
        assert granted == [True] and budget.reserved_usd <= 1.0
        budget.settle(0.4, 0.0)  # room for one more; the third still waits on those two
        await anyio.wait_all_tasks_blocked()
        assert granted == [True, True]
        budget.settle(0.5, 0.5)
        budget.settle(0.5, 0.5)  # all spent: the third cannot fit
    assert granted == [True, True, False]
    assert budget.spent_usd == pytest.approx(1.0) and budget.reserved_usd == 0.0


async def test_a_cancelled_waiting_call_reserves_nothing_and_is_not_counted() -> None:
    budget = Budget(1.0)
    assert budget.reserve(0.7)
    with anyio.move_on_after(WAIT_S) as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(budget.reserve_or_wait, 0.5)
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()
    assert not scope.cancelled_caught
    budget.settle(0.7, 0.0)
    assert (budget.reserved_usd, budget.skipped) == (0.0, 0)


async def test_a_settled_float_residue_does_not_leave_a_call_waiting_forever() -> None:
    budget = Budget(0.3)
    for amount in (0.1, 0.2):
        assert budget.reserve(amount)
    budget.settle(0.1, 0.1)
    budget.settle(0.2, 0.15)  # 0.1 + 0.2 - 0.1 - 0.2 leaves no reservation, exactly
    with anyio.fail_after(WAIT_S):
        assert not await budget.reserve_or_wait(0.1)  # 0.05 left: refused, not waiting


def test_a_call_waiting_on_another_threads_event_loop_is_woken_by_a_settle_here() -> None:
    budget, waiting = Budget(1.0), Waiting()
    assert budget.reserve(0.7)
    granted: list[bool] = []

    async def call() -> None:
        granted.append(await budget.reserve_or_wait(0.5, while_waiting=waiting))

    thread = threading.Thread(target=anyio.run, args=(call,))
    thread.start()
    try:
        assert waiting.now.wait(WAIT_S)
        budget.settle(0.7, 0.2)
    finally:
        thread.join(WAIT_S)
    assert not thread.is_alive() and granted == [True]
