"""``cross_judge._sync.running_loop`` / ``loop_caller``: naming the event loop of this thread
and waking it from another, under asyncio and trio."""

from __future__ import annotations

import threading

import anyio
import anyio.lowlevel
import pytest

from cross_judge._sync import loop_caller, running_loop

from ..waits import SAFETY_NET_S


def test_no_loop_runs_outside_an_event_loop() -> None:
    assert running_loop() is None
    with pytest.raises(RuntimeError, match="no event loop runs in this thread"):
        loop_caller()


@pytest.mark.anyio
async def test_the_loop_is_named_by_the_same_object_for_the_whole_run() -> None:
    first, _ = loop_caller()
    await anyio.lowlevel.checkpoint()
    assert running_loop() is first and loop_caller()[0] is first


@pytest.mark.anyio
async def test_a_callback_scheduled_from_another_thread_runs_on_the_loop() -> None:
    loop, call_soon = loop_caller()
    ran = anyio.Event()
    seen: list[object] = []

    def on_the_loop() -> None:
        seen.append(running_loop())
        ran.set()

    thread = threading.Thread(target=call_soon, args=(on_the_loop,))
    thread.start()
    with anyio.fail_after(SAFETY_NET_S):
        await ran.wait()
    thread.join(SAFETY_NET_S)
    assert seen == [loop]


def test_another_thread_sees_no_loop_of_its_own() -> None:
    async def main() -> object | None:
        return await anyio.to_thread.run_sync(running_loop)

    assert anyio.run(main) is None
