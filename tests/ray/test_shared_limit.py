"""cross_judge.ray.shared_limit: one limit for every process of a Ray job, its broker in a
named Ray actor; and judge_dataset's actors under it against a vendor that allows 4."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from cross_judge import ConfigError, Critic, Ensemble
from cross_judge.errors import SharedLimitError
from cross_judge.integrations._ray import judge_dataset, shared_limit, shared_limit_state
from cross_judge.testing import Persona, VendorServer

ray = pytest.importorskip("ray")


@ray.remote
class Holder:
    """Another process of the job, holding permits of a shared limit on request."""

    def __init__(self, name: str, limit: int, term_s: float) -> None:
        self.limit = shared_limit(name, limit, term_s=term_s)

    async def take(self, n: int) -> None:
        for _ in range(n):
            await self.limit.acquire(within=30)

    async def give_one_back(self) -> None:
        self.limit.release(None)


async def wait_until(condition: Any) -> None:
    """Poll ``condition`` every 10 ms, 30 s at most (a safety net)."""
    for _ in range(3000):
        if condition():
            return
        await anyio.sleep(0.01)
    raise AssertionError("the condition did not hold within 30 s")


@pytest.mark.anyio
async def test_a_second_process_waits_while_another_holds_the_limit_and_gets_what_it_frees(
    ray_local: Any,
) -> None:
    mine = shared_limit("handoff", 2)
    holder = Holder.remote("handoff", 2, 2.0)
    await holder.take.remote(2)
    assert shared_limit_state("handoff")["held"] == 2
    admitted = anyio.Event()

    async def take() -> None:
        await mine.acquire(within=30)
        admitted.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(take)
        await wait_until(lambda: mine.limit is not None)  # the broker has answered us
        assert not admitted.is_set()
        assert mine.held == 0

        await holder.give_one_back.remote()
        with anyio.fail_after(30):
            await admitted.wait()

    state = shared_limit_state("handoff")
    assert state["held"] == 2
    assert state["clients"][mine.client] == 1
    mine.release(None)
    await mine.aclose()
    ray.kill(holder)


@pytest.mark.anyio
async def test_permits_of_an_actor_that_was_killed_come_back(ray_local: Any) -> None:
    mine = shared_limit("reclaim", 2, term_s=0.5)
    holder = Holder.remote("reclaim", 2, 0.5)
    await holder.take.remote(2)
    ray.kill(holder)

    # Both permits, once the broker presumes the silent holder dead (three terms).
    await mine.acquire(within=30)
    await mine.acquire(within=30)

    assert shared_limit_state("reclaim")["clients"] == {mine.client: 2}
    mine.release(None)
    mine.release(None)
    await mine.aclose()


def test_a_shared_limit_of_the_same_name_with_another_limit_is_refused(ray_local: Any) -> None:
    first = shared_limit("twice", 2)

    with pytest.raises(ConfigError, match=r"'twice' already exists .* with limit 2"):
        shared_limit("twice", 3)
    assert first.name == "twice"


@pytest.mark.parametrize("limit", [0, 2.5, True])
def test_a_shared_limit_must_be_a_whole_number_of_at_least_one(
    ray_local: Any, limit: object
) -> None:
    with pytest.raises(ConfigError, match="limit must be a whole number >= 1"):
        shared_limit("bad", limit)  # type: ignore[arg-type]


def test_a_ray_shared_limit_under_trio_fails_saying_asyncio_is_needed(ray_local: Any) -> None:
    mine = shared_limit("on-trio", 2)

    with pytest.raises(SharedLimitError, match="works on asyncio only, not trio"):
        anyio.run(functools.partial(mine.acquire, within=30), backend="trio")


def test_an_actor_cannot_create_a_shared_limit_that_the_driver_did_not(ray_local: Any) -> None:
    with pytest.raises(ray.exceptions.RayActorError, match="create it on the driver first"):
        ray.get(Holder.remote("nobody-made-it", 2, 2.0).take.remote(1), timeout=60)


def panel(url: str, model: str) -> Ensemble:
    return Ensemble([Critic(name="c", model=model, vendor="custom", base_url=url, json_mode=False)])


def test_two_actors_under_a_shared_limit_of_4_get_no_429_from_a_vendor_that_allows_4(
    ray_local: Any, model: str
) -> None:
    with VendorServer([Persona(model, latency=0.02)], capacity=4) as vendor:
        ds = ray_local.data.from_items([{"item": f"item {i}"} for i in range(300)])
        out = judge_dataset(
            ds,
            functools.partial(panel, vendor.url, model),
            batch_size=25,
            concurrency=2,
            num_cpus=0.5,
            shared_limits={"custom": 4},
        ).take_all()
        stats = vendor.stats()

    assert len(out) == 300
    assert all(row["label_c"] not in ("ERROR", "PARSE_FAIL") for row in out)
    assert stats["requests"] == 300
    assert stats["rate_limited"] == 0
    assert stats["max_in_flight"] <= 4
