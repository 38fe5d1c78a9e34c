"""The rules that keep this suite green on a loaded machine (docs/development.md): no
per-test alarm, a hang fails its own test and nothing else, hypothesis keeps no time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from .waits import SAFETY_NET_S

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict[str, object]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    with open(ROOT / "pyproject.toml", "rb") as handle:
        loaded: dict[str, object] = tomllib.load(handle)
    return loaded


def test_no_per_test_alarm_is_configured_or_installed() -> None:
    config = pyproject()
    options = config["tool"]["pytest"]["ini_options"]  # type: ignore[index]
    assert "timeout" not in options
    extras = config["project"]["optional-dependencies"]  # type: ignore[index]
    assert not any(req.startswith("pytest-timeout") for req in extras["test"])


def test_hypothesis_keeps_no_time_and_draws_the_same_inputs_on_every_run() -> None:
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
    assert settings.default.derandomize


@pytest.mark.slow  # a fresh interpreter running a small suite of its own
def test_a_hung_async_test_fails_alone_and_the_run_goes_on(tmp_path: Path) -> None:
    # A suite of three tests under this suite's conftest: one hangs (on both backends),
    # the others pass. The hang must fail with its own message, not stop the run.
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    (tmp_path / "test_hang.py").write_text(
        textwrap.dedent(
            """
            import anyio
            import pytest

            def test_before():
                pass

            @pytest.mark.anyio
            async def test_hangs():
                await anyio.sleep_forever()

            def test_after():
                pass
            """
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "CROSS_JUDGE_TEST_SAFETY_NET_S": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=SAFETY_NET_S,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # tests failed; no internal error
    assert "2 failed, 2 passed" in done.stdout, done.stdout
    assert "test_hangs[asyncio] was still running after 1 s: a hang" in done.stdout
    assert "test_hangs[trio] was still running after 1 s: a hang" in done.stdout
