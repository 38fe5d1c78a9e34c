"""Load with random faults: 5,000 items x 3 critics against a vendor that fails 5% of calls.

The server (:class:`~cross_judge.testing.VendorServer` with ``Persona.fault_rate=0.05``)
answers 429, 500, 503 or a truncated 200 to a seeded 5% of requests, and counts what it
injected. Critics do not retry (``max_retries=0``), so every injected fault must come back
as exactly one failed verdict of the matching kind, and every other call as a valid one.
While the batch streams, a sampler records open file descriptors and resident memory: both
must stay bounded, whatever the number of items.

``CROSS_JUDGE_LOAD_ITEMS`` changes the number of items (default 5,000, as ``nox -s faults``
runs it; the default ``nox -s tests`` sets 2,000 to stay within its time).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

import anyio
import pytest

from cross_judge import Critic, Ensemble, ErrorKind
from cross_judge.testing import Persona, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import Snapshot, close_pools_and_check_tasks, open_fds

pytestmark = pytest.mark.integration

ITEMS = int(os.environ.get("CROSS_JUDGE_LOAD_ITEMS", "5000"))
CONCURRENCY = 64
FAULT_RATE = 0.05
# What each injected fault becomes (Persona.fault_rate's kinds, see cross_judge.testing).
EXPECTED_KIND = {
    "429": ErrorKind.RATE_LIMIT,
    "500": ErrorKind.SERVER,
    "503": ErrorKind.SERVER,
    "malformed": ErrorKind.INVALID_RESPONSE,
}


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@pytest.fixture(scope="module")
def faulty() -> Iterator[VendorServer]:
    persona = Persona("default", labels=("KEEP", "REJECT"), fault_rate=FAULT_RATE)
    with VendorServer(default_persona=persona) as srv:
        yield srv


@pytest.mark.slow  # thousands of items: CROSS_JUDGE_LOAD_ITEMS
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_item_of_a_faulty_batch_gets_a_result_with_its_faults_counted_exactly(
    faulty: VendorServer, leaks: Snapshot
) -> None:
    critics = [
        Critic(
            name=f"critic-{i}",
            model=f"load-{i}",
            vendor="custom",
            base_url=faulty.url,
            api_key="unused",
            labels=["KEEP", "REJECT"],
            max_retries=0,
            timeout=SAFETY_NET_S,  # a fault is an answer: only a hang may time out
        )
        for i in range(3)
    ]
    faulty.reset_stats()
    fds: list[int] = []
    rss: list[float] = []
    seen: Counter[str] = Counter()
    errors: Counter[ErrorKind] = Counter()
    valid = 0

    async def sample(stop: anyio.Event) -> None:
        while not stop.is_set():
            fds.append(len(open_fds()))
            rss.append(rss_mb())
            with anyio.move_on_after(0.25):
                await stop.wait()

    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(sample, stop)
        items = ({"id": f"item-{n}", "query": f"load item {n}"} for n in range(ITEMS))
        async with Ensemble(critics).stream(items, concurrency=CONCURRENCY) as results:
            async for result in results:
                seen[result.query_id] += 1
                for verdict in result.verdicts:
                    if verdict.is_valid:
                        valid += 1
                    else:
                        assert verdict.error_kind is not None, verdict
                        errors[verdict.error_kind] += 1
                        assert verdict.attempts == 1
        stop.set()

    stats = faulty.stats()
    injected = Counter(stats["faults_by_kind"])
    expected: Counter[ErrorKind] = Counter()
    for fault, count in injected.items():
        expected[EXPECTED_KIND[fault]] += count

    # Nothing lost, nothing doubled.
    assert len(seen) == ITEMS and set(seen.values()) == {1}
    assert stats["requests"] == 3 * ITEMS
    # Every injected fault is one failed verdict of its kind; every other call is valid.
    assert sum(injected.values()) == stats["faults"]
    assert 0.03 * 3 * ITEMS < stats["faults"] < 0.07 * 3 * ITEMS
    assert errors == expected
    assert valid == 3 * ITEMS - stats["faults"]
    # Bounded descriptors: the pool's connections (client and server ends) and no more.
    assert max(fds) <= len(leaks.fds) + 2 * (CONCURRENCY * 3) + 16
    # Flat memory: the last samples are not above the first steady ones by more than noise.
    tenth = max(1, len(rss) // 10)
    assert max(rss[-tenth:]) - max(rss[tenth : 2 * tenth]) < 40
    assert await close_pools_and_check_tasks() == []
