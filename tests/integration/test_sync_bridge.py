"""The sync bridge: blocking calls inside running event loops, no leaks, Ctrl-C cancels."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import anyio
import pytest

import cross_judge
from cross_judge import Critic, Ensemble, _sync
from cross_judge.testing import Reply, VendorServer
from cross_judge.transport import _pool

from ..waits import PROMPTLY_S, SAFETY_NET_S
from .conftest import KEY

pytestmark = pytest.mark.integration


def critic(server: VendorServer, model: str, **kwargs: object) -> Critic:
    return Critic(
        name=model, model=model, vendor="custom", base_url=server.url, api_key=KEY, **kwargs
    )


def bridge_sessions() -> int:
    return sum(len(sessions) for sessions in _pool._by_loop.values())


@pytest.mark.anyio
async def test_100_sync_calls_inside_a_running_loop_leave_no_thread_or_pool_behind(
    server: VendorServer, model: str
) -> None:
    server.always(model, Reply.content('{"kind": "KEEP", "confidence": 0.9}'))
    try:
        c = critic(server, model)
        assert c.judge_sync("warm-up").kind == "KEEP"  # starts the bridge and its pool
        threads, sessions = set(threading.enumerate()), bridge_sessions()
        server.reset_stats()
        kinds = [c.judge_sync(f"item {i}").kind for i in range(100)]
    finally:
        server.always(model, None)
    assert kinds == ["KEEP"] * 100
    # Other tests' threads may end meanwhile; none may have been added by these calls.
    assert set(threading.enumerate()) - threads == set()
    assert bridge_sessions() == sessions
    assert server.stats()["connections"] <= 1  # one warm connection, reused 100 times


@pytest.mark.anyio
async def test_ensemble_judge_sync_inside_a_running_loop(server: VendorServer, model: str) -> None:
    server.always(model, Reply.content('{"kind": "REJECT"}'))
    try:
        panel = Ensemble(
            [critic(server, model), critic(server, model + "-b", prompt_template="{query}")]
        )
        server.always(model + "-b", Reply.content('{"kind": "REJECT"}'))
        result = panel.judge_sync("item")
    finally:
        server.always(model, None)
        server.always(model + "-b", None)
    assert result.consensus == "REJECT" and result.n_valid == 2


def bridge_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "cross-judge-sync-bridge"]


def test_shutdown_closes_the_bridge_thread(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"kind": "KEEP"}'))
    critic(server, model).judge_sync("item")
    assert len(bridge_threads()) == 1
    _sync.shutdown()
    assert not bridge_threads()


class Probe:
    """A pooled client that records whether it was closed, and on which loop."""

    def __init__(self, library: str) -> None:
        self.closed_on_loop: object = None

    async def aclose(self) -> None:
        import asyncio

        self.closed_on_loop = asyncio.get_running_loop()


def test_shutdown_closes_the_bridges_pooled_clients_on_its_loop() -> None:
    async def pooled_probe() -> tuple[Probe, object]:
        import asyncio

        probe = _pool.shared_client("probe", "http://probe.test", Probe)
        return probe, asyncio.get_running_loop()

    probe, bridge_loop = _sync.run_sync(pooled_probe)
    assert probe.closed_on_loop is None
    _sync.shutdown()
    assert probe.closed_on_loop is bridge_loop


def test_ctrl_c_cancels_the_call_in_flight(server: VendorServer, model: str) -> None:
    server.always(model, Reply.hang())
    script = textwrap.dedent(
        f"""
        import sys
        from cross_judge import Critic
        c = Critic(name="c", model={model!r}, vendor="custom", base_url={server.url!r},
                   api_key={KEY!r}, timeout={SAFETY_NET_S})
        print("READY", flush=True)
        try:
            c.judge_sync("item")
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
            sys.exit(130)
        """
    )
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        deadline = time.monotonic() + SAFETY_NET_S
        while server.stats()["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.stats()["in_flight"] == 1
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=SAFETY_NET_S)
        took = time.monotonic() - started
    finally:
        server.always(model, None)
        if proc.poll() is None:
            proc.kill()
            proc.wait(SAFETY_NET_S)
    assert "INTERRUPTED" in out and proc.returncode == 130
    assert took < PROMPTLY_S  # the call was cancelled: its timeout is SAFETY_NET_S
    deadline = time.monotonic() + SAFETY_NET_S
    while server.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.stats()["in_flight"] == 0


def test_a_sync_call_from_inside_the_bridge_raises_instead_of_deadlocking() -> None:
    async def nested() -> None:
        _sync.run_sync(anyio.sleep, 0)

    with pytest.raises(RuntimeError, match="would deadlock; await the async method"):
        _sync.run_sync(nested)


def test_shutdown_from_inside_the_bridge_raises_instead_of_deadlocking() -> None:
    async def nested() -> None:
        _sync.shutdown()

    with pytest.raises(RuntimeError, match="cannot be shut down from a coroutine it is running"):
        _sync.run_sync(nested)


# -- calls from atexit handlers -----------------------------------------------------------------

AT_EXIT = textwrap.dedent(
    """
    import atexit
    import sys

    from cross_judge import Critic

    VENDOR, BASE_URL, KEY, MODEL, ORDER = sys.argv[1:6]
    critic = Critic(name="c", model=MODEL, vendor=VENDOR, base_url=BASE_URL, api_key=KEY)


    def judge_at_exit():
        print("at exit", critic.judge_sync("item").kind, flush=True)


    if ORDER == "handler first":  # runs after the bridge's own exit handler
        atexit.register(judge_at_exit)
        print("main", critic.judge_sync("item").kind, flush=True)
    elif ORDER == "bridge first":  # runs before the bridge's own exit handler
        print("main", critic.judge_sync("item").kind, flush=True)
        atexit.register(judge_at_exit)
    else:  # the bridge never started before exit
        atexit.register(judge_at_exit)
    """
)


def run_at_exit_script(
    server: VendorServer, model: str, *, vendor: str, order: str, host: str = "127.0.0.1"
) -> subprocess.CompletedProcess[str]:
    base_url = server.url if vendor == "custom" else server.anthropic_url
    base_url = base_url.replace("127.0.0.1", host)
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    env.pop("PYTHONWARNINGS", None)
    args = [vendor, base_url, KEY, model, order]
    server.always(model, Reply.content('{"kind": "KEEP"}'))
    try:
        return subprocess.run(
            # ResourceWarnings shown (-X dev would also log slow loop steps: timing noise)
            [sys.executable, "-W", "default::ResourceWarning", "-c", AT_EXIT, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=SAFETY_NET_S,  # a regression fails here rather than hanging the suite
        )
    finally:
        server.always(model, None)


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("order", ["handler first", "bridge first"])
def test_a_sync_call_from_an_atexit_handler_returns_and_the_interpreter_exits(
    server: VendorServer, model: str, order: str
) -> None:
    done = run_at_exit_script(server, model, vendor="custom", order=order)
    assert (done.returncode, done.stdout, done.stderr) == (0, "main KEEP\nat exit KEEP\n", "")


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("vendor", ["custom", "anthropic"])
def test_the_first_sync_call_of_a_process_can_be_made_at_exit(
    server: VendorServer, model: str, vendor: str
) -> None:
    done = run_at_exit_script(server, model, vendor=vendor, order="only at exit")
    assert (done.returncode, done.stdout, done.stderr) == (0, "at exit KEEP\n", "")


@pytest.mark.slow  # a fresh interpreter
def test_a_sync_call_at_exit_resolves_a_host_name(server: VendorServer, model: str) -> None:
    # Name lookups go through asyncio's thread pool, which cannot start at exit.
    done = run_at_exit_script(
        server, model, vendor="custom", order="only at exit", host="localhost"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "at exit KEEP\n", "")
