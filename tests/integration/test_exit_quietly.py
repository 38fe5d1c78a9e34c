"""A program that never closes anything exits quietly: pools close when their loop ends.

The subprocess tests run the README's quick start as most people write it (no ``async
with``, no ``aclose()``) against the simulated vendor and require an empty stderr: no
aiohttp "Unclosed client session" / "Unclosed connector" report, no ResourceWarning, no
"Task was destroyed", also under ``python -X dev``. The in-process tests pin the mechanism
of :mod:`cross_judge.transport._pool` with a probe client.

What the ``-X dev`` tests check is leaks: dev mode's reports of unclosed sessions and
transports, ResourceWarnings, exceptions never retrieved, tasks destroyed while pending.
Dev mode also logs every asyncio loop step over 0.1 s; whether a step takes that long on a
loaded machine is the OS scheduler's doing, so the script raises that threshold rather than
let the test fail at random. That cross-judge's own first call does not stall the loop is
checked apart, structurally (``test_first_call_off_loop.py``: no import, no TLS context on
the loop thread), and measured by ``bench/bench_loop_stall.py``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
import trio

import cross_judge
from cross_judge.testing import Reply, VendorServer
from cross_judge.transport import _pool

from ..waits import SAFETY_NET_S
from .conftest import KEY

# Each test starts a fresh interpreter (or several): seconds of CPU each.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

SUBPROCESS_TIMEOUT_S = SAFETY_NET_S

VERDICT = '{"kind": "KEEP", "confidence": 0.8, "reasoning": "fine"}'

# The quick start, unclosed. argv: runner, vendor, base URL, key, model.
QUICK_START = textwrap.dedent(
    """
    import asyncio
    import sys

    import anyio

    from cross_judge import Critic, Ensemble

    RUNNER, VENDOR, BASE_URL, KEY, MODEL = sys.argv[1:6]


    panel = Ensemble(
        critics=[
            Critic(name=f"c{i}", model=MODEL, vendor=VENDOR, base_url=BASE_URL, api_key=KEY)
            for i in range(3)
        ]
    )


    async def main() -> None:
        if RUNNER != "anyio.run(trio)":
            # -X dev also logs each loop step over 0.1 s: a report on timing, not a leak,
            # which a loaded machine produces at random (see the module docstring for
            # where the first call's stall is checked instead).
            asyncio.get_running_loop().slow_callback_duration = 3600
        print((await panel.judge("Felines (see also: Cats)")).consensus)


    if RUNNER == "judge_sync":
        print(panel.judge_sync("Felines (see also: Cats)").consensus)
    elif RUNNER == "asyncio.run":
        asyncio.run(main())
    elif RUNNER == "anyio.run(asyncio)":
        anyio.run(main, backend="asyncio")
    elif RUNNER == "anyio.run(trio)":
        anyio.run(main, backend="trio")
    elif RUNNER == "loop left open":
        # As a notebook kernel leaves its loop at shutdown: stopped, never closed. That
        # unclosed loop is the script's own doing, so its warning is not ours to judge.
        import warnings

        warnings.filterwarnings("ignore", "unclosed event loop", ResourceWarning)
        loop = asyncio.new_event_loop()
        loop.run_until_complete(main())
    """
)


def run_quick_start(
    server: VendorServer, model: str, *, runner: str, vendor: str, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    base_url = server.url if vendor == "custom" else server.anthropic_url
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    env.pop("PYTHONWARNINGS", None)
    server.always(model, Reply.content(VERDICT))
    try:
        return subprocess.run(
            [sys.executable, *flags, "-c", QUICK_START, runner, vendor, base_url, KEY, model],
            capture_output=True,
            text=True,
            env=env,
            timeout=SUBPROCESS_TIMEOUT_S,
        )
    finally:
        server.always(model, None)


RUNNERS = ["asyncio.run", "anyio.run(asyncio)", "anyio.run(trio)", "loop left open"]
VENDORS = ["custom", "anthropic"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_quick_start_without_closing_prints_nothing_but_its_result(
    server: VendorServer, model: str, vendor: str
) -> None:
    done = run_quick_start(server, model, runner="asyncio.run", vendor=vendor)
    assert (done.returncode, done.stdout, done.stderr) == (0, "KEEP\n", "")


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("vendor", VENDORS)
def test_the_quick_start_without_closing_reports_no_leak_under_dev_mode(
    server: VendorServer, model: str, vendor: str, runner: str
) -> None:
    done = run_quick_start(server, model, runner=runner, vendor=vendor, flags=("-X", "dev"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "KEEP\n", "")


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_script_of_sync_calls_without_closing_exits_quietly(
    server: VendorServer, model: str, vendor: str
) -> None:
    # ResourceWarnings shown. Not -X dev: it would also log the bridge loop's slow steps
    # (timing noise), and the script cannot tune a loop that is not its own.
    flags = ("-W", "default::ResourceWarning")
    done = run_quick_start(server, model, runner="judge_sync", vendor=vendor, flags=flags)
    assert (done.returncode, done.stdout, done.stderr) == (0, "KEEP\n", "")


def readme_quick_start() -> str:
    """The first Python block under the README's "Quick start" heading, as a user pastes it."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Quick start\n") :]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


# Points the README's vendors at the simulated one, then runs the pasted script as a file.
README_PRELUDE = textwrap.dedent(
    """
    import runpy
    import sys

    from cross_judge.vendors import register_vendor

    BASE_URL, SCRIPT = sys.argv[1:3]
    for name in ("deepseek", "openai", "ollama"):
        register_vendor(name, BASE_URL, "QUICK_START_KEY", replace_existing=True)
    runpy.run_path(SCRIPT, run_name="__main__")
    """
)


def test_the_readme_quick_start_runs_as_pasted_and_exits_quietly(
    server: VendorServer, tmp_path: Path
) -> None:
    code = readme_quick_start()
    compile(code, "judge.py", "exec")  # no top-level await: it runs as a script
    script = tmp_path / "judge.py"
    script.write_text(code, encoding="utf-8")
    models = ("deepseek-flash", "gpt-4o-mini", "llama3.1")
    for name in models:
        server.always(name, Reply.content(VERDICT))
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root, "QUICK_START_KEY": KEY}
    env.pop("PYTHONWARNINGS", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", README_PRELUDE, server.url, str(script)],
            capture_output=True,
            text=True,
            env=env,
            timeout=SUBPROCESS_TIMEOUT_S,
        )
    finally:
        for name in models:
            server.always(name, None)
    printed = "Felines (see also: Cats): KEEP (majority, 3 of 3 valid votes)\n"
    assert (done.returncode, done.stdout, done.stderr) == (0, printed, "")


# -- the mechanism, in process ------------------------------------------------------------------


class Probe:
    """A pooled client that records how it was closed."""

    def __init__(self, library: str, *, fails: bool = False) -> None:
        self.library = library
        self.fails = fails
        self.closed_inside: str | None = None

    async def aclose(self) -> None:
        # Which loop is running proves the close ran inside one, where real clients must
        # close their sockets.
        self.closed_inside = running_library()
        if self.fails:
            raise OSError("the probe fails to close")


def running_library() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        trio.lowlevel.current_task()  # raises outside trio too
        return "trio"
    return "asyncio"


def probe(base_url: str = "http://probe.test", *, fails: bool = False) -> Probe:
    return _pool.shared_client("probe", base_url, lambda lib: Probe(lib, fails=fails))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_clients_are_closed_inside_their_loop_when_anyio_run_returns(backend: str) -> None:
    async def main() -> Probe:
        return probe()

    client = anyio.run(main, backend=backend)
    assert (client.library, client.closed_inside) == (backend, backend)


def test_clients_are_closed_inside_their_loop_when_asyncio_run_returns() -> None:
    async def main() -> Probe:
        return probe()

    client = asyncio.run(main())
    assert client.closed_inside == "asyncio"


def test_clients_are_closed_inside_their_run_when_trio_run_returns() -> None:
    async def main() -> Probe:
        return probe()

    client = trio.run(main)
    assert client.closed_inside == "trio"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_that_fails_to_close_at_loop_end_does_not_stop_the_others(backend: str) -> None:
    async def main() -> tuple[Probe, Probe]:
        return probe("http://a.test", fails=True), probe("http://b.test")

    failing, healthy = anyio.run(main, backend=backend)
    assert (failing.closed_inside, healthy.closed_inside) == (backend, backend)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_closed_explicitly_is_not_closed_again_at_loop_end(backend: str) -> None:
    closes: list[str] = []

    class Counted(Probe):
        async def aclose(self) -> None:
            closes.append(self.library)

    async def main() -> None:
        _pool.shared_client("counted", "http://c.test", Counted)
        await _pool.aclose_sessions(["http://c.test"])

    anyio.run(main, backend=backend)
    assert closes == [backend]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_only_the_first_client_of_a_loop_arranges_its_closing(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    arranged: list[str] = []
    arrange = _pool._close_when_run_ends

    def counting(clients: _pool._LoopClients, library: str) -> None:
        arranged.append(library)
        arrange(clients, library)

    monkeypatch.setattr(_pool, "_close_when_run_ends", counting)

    async def main() -> None:
        for i in range(50):
            probe(f"http://host-{i % 5}.test")
            await _pool.aclose_sessions([f"http://host-{i % 3}.test"])

    anyio.run(main, backend=backend)
    assert arranged == [backend]
