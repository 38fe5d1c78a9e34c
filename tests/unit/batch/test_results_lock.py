"""The lock that keeps two reviews off one results file (``cross_judge.batch._lock``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import cross_judge
from cross_judge.batch._lock import ResultsLock, ResultsLocked, lock_path
from cross_judge.errors import ConfigError

from ...waits import SAFETY_NET_S

PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])


def test_the_lock_file_names_its_holder_and_goes_away_on_release(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with ResultsLock.acquire(out, command=["cross-judge", "review", "x"]) as lock:
        assert lock.path == lock_path(out) == tmp_path / "out.jsonl.lock"
        holder = json.loads(lock.path.read_text())
        assert holder["pid"] == os.getpid()
        assert holder["host"] == socket.gethostname()
        assert holder["command"] == "cross-judge review x"
        assert holder["started_at"].endswith("+00:00")
    assert not lock_path(out).exists()


def test_a_held_lock_is_refused_naming_the_holder_and_the_way_out(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with (
        ResultsLock.acquire(out, command=["cross-judge", "review", "first"]),
        pytest.raises(ResultsLocked) as caught,
    ):
        ResultsLock.acquire(out, command=["cross-judge", "review", "second"])
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError)
    assert f"pid {os.getpid()} on host {socket.gethostname()}" in message
    assert "cross-judge review first" in message and "--resume" in message
    assert caught.value.holder["pid"] == os.getpid()


def test_a_released_lock_can_be_taken_again(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    ResultsLock.acquire(out).release()
    with ResultsLock.acquire(out):
        pass


def test_a_lock_file_left_by_a_dead_process_does_not_block(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    script = (
        "import sys, time; from pathlib import Path; "
        "from cross_judge.batch._lock import ResultsLock; "
        "ResultsLock.acquire(Path(sys.argv[1])); print('locked', flush=True); time.sleep(600)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(out)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"locked\n"
        with pytest.raises(ResultsLocked, match=f"pid {child.pid} "):
            ResultsLock.acquire(out)
        child.kill()  # no chance to release: the lock file stays behind
        child.wait(timeout=SAFETY_NET_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=SAFETY_NET_S)
        if child.stdout is not None:
            child.stdout.close()
    assert json.loads(lock_path(out).read_text())["pid"] == child.pid
    with ResultsLock.acquire(out) as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
