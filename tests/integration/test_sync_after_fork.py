"""``*_sync`` calls in a child made by ``os.fork()``: a fresh bridge, never a hang.

The parent's bridge thread does not exist in a forked child; the child starts its own on
its first call and opens its own connections (the parent's sockets stay the parent's).
Each scenario runs in a subprocess that bounds every wait itself, under an outer timeout,
so that a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import cross_judge
from cross_judge.testing import Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY

pytestmark = [
    pytest.mark.slow,  # a fresh interpreter per scenario, which forks
    pytest.mark.integration,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX only"),
]

SUBPROCESS_TIMEOUT_S = SAFETY_NET_S

PRELUDE = textwrap.dedent(
    """
    import multiprocessing
    import os
    import signal
    import sys
    import time

    from cross_judge import Critic, Ensemble

    VENDOR, BASE_URL, KEY, MODEL = sys.argv[1:5]
    CHILD_TIMEOUT_S = 300  # half the outer SAFETY_NET_S: a hung child is reported as one

    panel = Ensemble(
        [
            Critic(name=f"c{i}", model=MODEL, vendor=VENDOR, base_url=BASE_URL, api_key=KEY)
            for i in range(2)
        ]
    )


    def judge(item):
        return panel.judge_sync(item).consensus


    def wait_for_child(pid):
        # Bounded: a hung child is killed and reported, never waited for forever.
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return "hung"
    """
)


def run_script(
    server: VendorServer, model: str, body: str, *, vendor: str
) -> subprocess.CompletedProcess[str]:
    base_url = server.url if vendor == "custom" else server.anthropic_url
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    script = PRELUDE + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script, vendor, base_url, KEY, model],
        capture_output=True,
        text=True,
        env=env,
        timeout=SUBPROCESS_TIMEOUT_S,
    )


@pytest.fixture
def keep(server: VendorServer, model: str) -> Iterator[None]:
    server.always(model, Reply.content('{"kind": "KEEP", "confidence": 0.9}'))
    yield
    server.always(model, None)


@pytest.mark.usefixtures("keep")
@pytest.mark.parametrize("vendor", ["custom", "anthropic"])
def test_judge_sync_works_in_a_fork_pool_worker_after_the_parent_used_it(
    server: VendorServer, model: str, vendor: str
) -> None:
    done = run_script(
        server,
        model,
        """
        if __name__ == "__main__":
            print("parent", judge("before the fork"), flush=True)  # bridge up, pool warm
            with multiprocessing.get_context("fork").Pool(2) as pool:
                found = pool.map_async(judge, ["a", "b", "c", "d"]).get(CHILD_TIMEOUT_S)
            print("workers", *found, flush=True)
            print("parent", judge("after the fork"), flush=True)
        """,
        vendor=vendor,
    )
    assert (done.returncode, done.stdout) == (
        0,
        "parent KEEP\nworkers KEEP KEEP KEEP KEEP\nparent KEEP\n",
    ), done.stderr


@pytest.mark.usefixtures("keep")
def test_a_forked_child_judges_and_exits_normally(server: VendorServer, model: str) -> None:
    # sys.exit() in the child runs the exit handlers inherited from the parent, the
    # bridge's shutdown included: it must stop the child's bridge, not wait for the parent's.
    done = run_script(
        server,
        model,
        """
        print("parent", judge("before the fork"), flush=True)
        pid = os.fork()
        if pid == 0:
            print("child", judge("in the child"), flush=True)
            sys.exit(0)
        print("child exit", wait_for_child(pid), flush=True)
        print("parent", judge("after the fork"), flush=True)
        """,
        vendor="custom",
    )
    assert (done.returncode, done.stdout) == (
        0,
        "parent KEEP\nchild KEEP\nchild exit 0\nparent KEEP\n",
    ), done.stderr


@pytest.mark.usefixtures("keep")
def test_a_forked_child_opens_its_own_connection_and_leaves_the_parents_alone(
    server: VendorServer, model: str
) -> None:
    server.reset_stats()
    done = run_script(
        server,
        model,
        """
        solo = Critic(name="solo", model=MODEL, vendor=VENDOR, base_url=BASE_URL, api_key=KEY)
        print("parent", solo.judge_sync("before the fork").kind, flush=True)
        pid = os.fork()
        if pid == 0:
            print("child", solo.judge_sync("in the child").kind, flush=True)
            os._exit(0)
        print("child exit", wait_for_child(pid), flush=True)
        print("parent", solo.judge_sync("after the fork").kind, flush=True)
        """,
        vendor="custom",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "parent KEEP\nchild KEEP\nchild exit 0\nparent KEEP\n"
    # The parent's one warm connection serves both of its calls; the child opened its
    # own rather than writing to the parent's socket.
    assert server.stats()["requests"] == 3
    assert server.stats()["connections"] == 2
