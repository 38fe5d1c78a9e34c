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
        threads, sessions = threading.active_count(), bridge_sessions()
        server.reset_stats()
        kinds = [c.judge_sync(f"item {i}").kind for i in range(100)]
    finally:
        server.always(model, None)
    assert kinds == ["KEEP"] * 100
    assert threading.active_count() == threads
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


def test_shutdown_closes_the_bridge_thread(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"kind": "KEEP"}'))
    critic(server, model).judge_sync("item")
    _sync.shutdown()
    assert not [t for t in threading.enumerate() if "AnyIO" in t.name or "portal" in t.name.lower()]


def test_ctrl_c_cancels_the_call_in_flight(server: VendorServer, model: str) -> None:
    server.always(model, Reply.hang())
    script = textwrap.dedent(
        f"""
        import sys
        from cross_judge import Critic
        c = Critic(name="c", model={model!r}, vendor="custom", base_url={server.url!r},
                   api_key={KEY!r}, timeout=60)
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
        deadline = time.monotonic() + 10
        while server.stats()["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.stats()["in_flight"] == 1
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        took = time.monotonic() - started
    finally:
        server.always(model, None)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "INTERRUPTED" in out and proc.returncode == 130
    assert took < 5
    deadline = time.monotonic() + 3
    while server.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.stats()["in_flight"] == 0


def test_a_sync_call_from_inside_the_bridge_raises_instead_of_deadlocking() -> None:
    async def nested() -> None:
        _sync.run_sync(anyio.sleep, 0)

    with pytest.raises(RuntimeError, match="would deadlock; await the async method"):
        _sync.run_sync(nested)
