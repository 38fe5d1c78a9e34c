"""Start the simulated vendor in its own process for a benchmark, and stop it after."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def start_server(latency: float, *extra: str) -> Iterator[str]:
    """Run ``python -m cross_judge.testing`` with ``latency``; yield its base URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cross_judge.testing",
            "--latency",
            str(latency),
            "--max-seconds",
            "900",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("READY "):
            raise RuntimeError(f"simulated vendor did not start: {line!r}")
        yield f"http://127.0.0.1:{line.split()[1]}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
