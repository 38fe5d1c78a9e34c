"""``SetUpLine``: one-off set-up that keeps the calls waiting for it in the order they came,
so that a batch's first requests reach the vendor in the order they were made."""

from __future__ import annotations

import anyio
import pytest

from cross_judge.transport._first_use import SetUpLine

pytestmark = pytest.mark.anyio


async def test_calls_leave_the_line_in_the_order_they_came_and_the_work_runs_once() -> None:
    line = SetUpLine("test-order")
    gate = anyio.Event()
    done = False
    runs = 0
    left: list[str] = []

    async def work() -> None:
        nonlocal done, runs
        runs += 1
        await gate.wait()
        done = True

    async def call(name: str) -> None:
        await line.join(lambda: done, work)
        left.append(name)

    async with anyio.create_task_group() as tg:
        for name in "abc":  # one at a time: trio starts tasks started together in any order
            tg.start_soon(call, name)
            await anyio.wait_all_tasks_blocked()
        gate.set()
    assert (left, runs) == (["a", "b", "c"], 1)


async def test_a_call_arriving_once_the_set_up_is_done_waits_behind_those_still_in_line() -> None:
    line = SetUpLine("test-latecomer")
    gate = anyio.Event()
    done = False
    left: list[str] = []

    async with anyio.create_task_group() as tg:

        async def call(name: str) -> None:
            await line.join(lambda: done, work)
            left.append(name)

        async def work() -> None:
            nonlocal done
            await gate.wait()
            done = True
            tg.start_soon(call, "late")  # done, but b and c are still in line

        for name in "abc":
            tg.start_soon(call, name)
            await anyio.wait_all_tasks_blocked()
        gate.set()
    assert left == ["a", "b", "c", "late"]


async def test_once_done_with_nobody_in_line_a_call_returns_without_yielding() -> None:
    line = SetUpLine("test-done")

    async def work() -> None:
        raise AssertionError("no set-up is due")

    with anyio.CancelScope() as scope:
        scope.cancel()  # a checkpoint would raise Cancelled here
        await line.join(lambda: True, work)
    assert not scope.cancelled_caught


async def test_a_failed_set_up_is_tried_again_by_the_next_in_line() -> None:
    line = SetUpLine("test-retry")
    attempts = 0
    outcomes: list[str] = []

    async def work() -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise OSError("first attempt fails")

    async def call(name: str) -> None:
        try:
            await line.join(lambda: attempts >= 2, work)
        except OSError:
            outcomes.append(f"{name}: failed")
        else:
            outcomes.append(f"{name}: ok")

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "a")
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(call, "b")
    assert outcomes == ["a: failed", "b: ok"]
