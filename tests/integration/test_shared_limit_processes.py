"""The shared limit across event loops and processes, against a simulated vendor that allows
4 requests at once (``capacity=4``: any request beyond gets a DeepSeek-style 429).

Every outcome is a count (429s the vendor sent, the most requests it answered at once,
verdicts), never a duration. Worker processes are always killed and reaped.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest

from cross_judge import Critic, Verdict
from cross_judge.limits._client import SharedLimit
from cross_judge.limits._server import LimitServer, main
from cross_judge.testing import Persona, VendorServer
from cross_judge.vendors import register_vendor

from ..waits import SAFETY_NET_S

WORKER = Path(__file__).with_name("_shared_limit_worker.py")
CAPACITY = 4
LATENCY_S = 0.05
WAIT_S = SAFETY_NET_S  # a safety net for a whole worker run


@pytest.fixture
def vendor() -> Iterator[VendorServer]:
    with VendorServer(
        default_persona=Persona("default", latency=LATENCY_S), capacity=CAPACITY
    ) as srv:
        yield srv


async def judge_all(critics: list[Critic], items: int, prefix: str) -> list[Verdict]:
    verdicts: list[Verdict] = []

    async def one(critic: Critic, i: int) -> None:
        verdicts.append(await critic.judge(f"{prefix} item {i}"))

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            for i in range(items):
                for critic in critics:
                    tg.start_soon(one, critic, i)
    return verdicts


def critics_of(vendor: str, count: int = 2) -> list[Critic]:
    return [
        Critic(name=f"{vendor}-{i}", model=f"{vendor}-m{i}", vendor=vendor, json_mode=False)
        for i in range(count)
    ]


# -- one process ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_critics_of_one_loop_sharing_a_limit_of_4_draw_no_429(
    vendor: VendorServer, vendor_registry: None
) -> None:
    shared = SharedLimit.local(CAPACITY)
    register_vendor("shared-sim", vendor.url, None, shared=shared)
    critics = critics_of("shared-sim", 3)

    verdicts = await judge_all(critics, 20, "one loop")
    await critics[0].aclose()
    await shared.aclose()

    assert all(v.is_valid for v in verdicts), [v.error for v in verdicts if not v.is_valid]
    assert len(verdicts) == 60
    stats = vendor.stats()
    assert (stats["rate_limited"], stats["requests"]) == (0, 60)
    assert stats["max_in_flight"] == CAPACITY


def test_two_event_loops_in_two_threads_share_a_limit_of_4_through_a_server(
    vendor: VendorServer, vendor_registry: None
) -> None:
    # A shared limit serves one event loop: each thread attaches its own client of the
    # same server, to a vendor registered per thread on the same URL.
    results: dict[str, list[Verdict]] = {}
    failures: list[BaseException] = []

    def thread(name: str, backend: str, address: str) -> None:
        async def run() -> None:
            shared = SharedLimit.connect(address)
            register_vendor(name, vendor.url, None, shared=shared)
            critics = critics_of(name)
            results[name] = await judge_all(critics, 20, name)
            await critics[0].aclose()
            await shared.aclose()

        try:
            anyio.run(run, backend=backend)
        except BaseException as exc:
            failures.append(exc)

    with LimitServer(CAPACITY) as server:
        threads = [
            threading.Thread(target=thread, args=(f"loop-{b}", b, server.address))
            for b in ("asyncio", "trio")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT_S)
        assert server.snapshot()["held"] == 0

    assert not failures, failures
    verdicts = [v for vs in results.values() for v in vs]
    assert len(verdicts) == 80
    assert all(v.is_valid for v in verdicts), [v.error for v in verdicts if not v.is_valid]
    stats = vendor.stats()
    assert stats["rate_limited"] == 0
    assert stats["max_in_flight"] <= CAPACITY


# -- worker processes -----------------------------------------------------------------------------


class Worker:
    """A worker process; its stdout lines are read by a thread into a queue."""

    def __init__(self, vendor_url: str, address: str, items: int, prefix: str, backend: str):
        command = [sys.executable, str(WORKER), vendor_url, address, "--items", str(items)]
        command += ["--prefix", prefix, "--backend", backend]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.lines.put)),
            threading.Thread(target=self._read, args=(self.process.stderr, self.stderr.append)),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str] | None, sink: Any) -> None:
        assert stream is not None
        for line in stream:
            sink(line.rstrip("\n"))
        sink(None)

    def wait_for(self, prefix: str) -> str:
        """The first line starting with ``prefix`` (bounded); fails if the worker ends first."""
        while True:
            line = self.lines.get(timeout=WAIT_S)
            if line is None:
                raise AssertionError(f"worker ended early: {self.stderr[-20:]}")
            if line.startswith(prefix):
                return line

    def summary(self) -> dict[str, Any]:
        done = self.wait_for("DONE ")
        assert self.process.wait(timeout=WAIT_S) == 0, self.stderr[-20:]
        result: dict[str, Any] = json.loads(done.removeprefix("DONE "))
        return result

    def reap(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=WAIT_S)
        for reader in self._readers:
            reader.join(WAIT_S)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.reap()


@pytest.mark.slow  # two fresh interpreters judging a batch
def test_two_processes_sharing_a_limit_of_4_draw_no_429_and_judge_everything(
    vendor: VendorServer, workers: list[Worker]
) -> None:
    with LimitServer(CAPACITY) as server:
        for name, backend in (("first", "asyncio"), ("second", "trio")):
            workers.append(Worker(vendor.url, server.address, 30, name, backend))
        summaries = [w.summary() for w in workers]
        assert server.snapshot()["held"] == 0  # both gave their permits back

    assert [s["errors"] for s in summaries] == [[], []]
    assert [s["valid"] for s in summaries] == [60, 60]
    stats = vendor.stats()
    assert (stats["rate_limited"], stats["requests"]) == (0, 120)
    assert stats["max_in_flight"] <= CAPACITY


@pytest.mark.slow  # two fresh interpreters, one killed once it holds permits
def test_a_killed_process_loses_its_permits_and_the_other_completes(
    vendor: VendorServer, workers: list[Worker]
) -> None:
    # A term of 3 s: the broker takes back a client's permits after three terms (9 s) without
    # an exchange. A live worker that the loaded CI machine does not schedule for that long
    # would lose permits it is about to use, and the vendor would count a 429 that says
    # nothing about the dead client; 1 s terms made that happen under load (2 of 60).
    with LimitServer(CAPACITY, term_s=3.0) as server:
        doomed = Worker(vendor.url, server.address, 1000, "doomed", "asyncio")
        workers.append(doomed)
        doomed.wait_for("JUDGED")  # it holds permits and is mid-run
        survivor = Worker(vendor.url, server.address, 30, "survivor", "asyncio")
        workers.append(survivor)
        survivor.wait_for("JUDGED")
        doomed.process.kill()  # SIGKILL: no chance to give anything back
        doomed.reap()

        summary = survivor.summary()

        # Every permit can be had again: the dead client's were reclaimed (after three
        # terms without an exchange) and the survivor gave its own back.
        async def take_all() -> int:
            shared = SharedLimit.connect(server.address)
            async with anyio.create_task_group() as tg:
                for _ in range(CAPACITY):
                    tg.start_soon(shared.acquire, 30.0)
            taken = shared.in_use
            for _ in range(taken):
                shared.release(None)
            await shared.aclose()
            return taken

        assert anyio.run(take_all) == CAPACITY

    assert summary["errors"] == []
    assert summary["valid"] == 60
    stats = vendor.stats()
    assert stats["rate_limited"] == 0
    assert stats["max_in_flight"] <= CAPACITY


# -- the server ------------------------------------------------------------------------------------


def test_the_server_answers_a_malformed_request_with_an_error_and_keeps_the_connection() -> None:
    async def talk(address: str) -> list[dict[str, Any]]:
        host, port = address.rsplit(":", 1)
        async with await anyio.connect_tcp(host, int(port)) as stream:
            answers = []
            for line in (
                b"not json\n",
                b'{"client": "a", "want": -1}\n',
                b'{"client": "a", "want": 2}\n',
            ):
                await stream.send(line)
                answers.append(json.loads(await stream.receive()))
            return answers

    with LimitServer(4) as server:
        answers = anyio.run(talk, server.address)
    assert "malformed lease request" in answers[0]["error"]
    assert "want must be an int >= 0" in answers[1]["error"]
    assert answers[2] == {"granted": 2, "held": 2, "limit": 4, "pause_s": 0.0, "term_s": 2.0}


def test_the_command_line_refuses_a_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with LimitServer(4) as server, pytest.raises(SystemExit) as exit_info:
        main(["--limit", "4", "--port", str(server.port)])
    assert exit_info.value.code == 1
    assert "cannot listen on" in capsys.readouterr().err


def test_the_command_line_refuses_a_limit_below_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--limit", "0", "--port", "0"])
    assert exit_info.value.code == 2
    assert "limit must be a whole number >= 1" in capsys.readouterr().err


def test_the_command_line_serves_until_interrupted() -> None:
    command = [
        sys.executable,
        "-m",
        "cross_judge.shared_limit",
        "--limit",
        "2",
        "--port",
        "0",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            run_until_interrupted(process)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=WAIT_S)


def run_until_interrupted(process: subprocess.Popen[str]) -> None:
    """Lease a permit from the server ``process`` runs, then stop it with SIGTERM."""
    assert process.stdout is not None
    ready = process.stdout.readline()
    assert ready.startswith("READY 127.0.0.1:")
    address = ready.split()[1]

    async def lease() -> int | None:
        shared = SharedLimit.connect(address)
        await shared.acquire(30.0)
        limit = shared.limit
        shared.release(None)
        await shared.aclose()
        return limit

    assert anyio.run(lease) == 2
    process.terminate()
    assert process.wait(timeout=WAIT_S) == 0
