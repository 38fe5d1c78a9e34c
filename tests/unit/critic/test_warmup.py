"""The first call's one-off set-up runs once per process, in a worker thread.

Structural: the tests record the thread the set-up runs on and count how often it runs.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from cross_judge import Critic, Ensemble
from cross_judge.critic import _warmup as warmup

pytestmark = pytest.mark.anyio


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A process whose set-up has not run; returns the threads that ran it, one per run."""
    ran_on: list[int] = []
    monkeypatch.setattr(warmup, "_done", False)
    monkeypatch.setattr(warmup, "prices_as_of", lambda: ran_on.append(threading.get_ident()))
    return ran_on


async def test_the_set_up_runs_in_a_worker_thread(cold: list[int]) -> None:
    loop_thread = threading.get_ident()
    await warmup.warm_up()
    assert len(cold) == 1 and cold[0] != loop_thread
    assert warmup.warmed_up()


async def test_concurrent_first_calls_run_the_set_up_once(cold: list[int]) -> None:
    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(warmup.warm_up)
    assert len(cold) == 1


async def test_once_set_up_a_call_starts_no_thread(
    cold: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    await warmup.warm_up()

    async def no_thread(*args: Any, **kwargs: Any) -> None:
        pytest.fail("a worker thread after the set-up")

    monkeypatch.setattr(anyio.to_thread, "run_sync", no_thread)
    await warmup.warm_up()


async def test_a_set_up_that_fails_leaves_the_failure_to_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> str:
        raise ValueError("prices.yaml is broken")

    monkeypatch.setattr(warmup, "_done", False)
    monkeypatch.setattr(warmup, "prices_as_of", broken)
    await warmup.warm_up()  # does not raise
    assert warmup.warmed_up()


async def test_a_critics_first_call_is_set_up_before_it_looks_its_price_up(
    cold: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    monkeypatch.setattr(warmup, "prices_as_of", lambda: order.append("set-up"))
    monkeypatch.setattr(Critic, "price", lambda self: order.append("price"))
    critic = Critic(
        name="c", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1", max_retries=0
    )
    await critic.judge("item")  # nobody listens on port 9: a connection error verdict
    assert order[:2] == ["set-up", "price"]


async def test_an_ensembles_first_call_is_set_up_before_anything_else(
    cold: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    monkeypatch.setattr(warmup, "prices_as_of", lambda: order.append("set-up"))
    monkeypatch.setattr(Ensemble, "check_item", lambda self, *args: order.append("checks"))
    critic = Critic(
        name="c", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1", max_retries=0
    )
    await Ensemble([critic]).judge("item")
    assert order[:2] == ["set-up", "checks"]
