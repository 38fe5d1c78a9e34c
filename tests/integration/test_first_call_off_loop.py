"""The first ``judge()`` of a process does its heavy set-up off the event loop.

``import cross_judge`` defers work to first use: importing the HTTP library (aiohttp, httpx)
or the Anthropic SDK, building TLS contexts, reading the price table, loading the
OpenTelemetry API. Before, the first call did all of it on the event loop and stalled every
other task for 0.1-1.6 s. Here a fresh interpreter runs a cold first ``Ensemble.judge``
against the simulated vendor and records, by thread, every module it loads (an import
hook) and every CA bundle a TLS context loads: the event-loop thread must do neither.

Structural, not timed: the stall itself is measured by ``bench/bench_loop_stall.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cross_judge
from cross_judge.testing import Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY

# Each test starts a fresh interpreter and watches every import: seconds of CPU each.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

SUBPROCESS_TIMEOUT_S = SAFETY_NET_S
VERDICT = '{"kind": "KEEP", "confidence": 0.8, "reasoning": "fine"}'

# argv: backend, vendor, base URL, key, model. Prints one JSON object.
CHILD = textwrap.dedent(
    """
    import json, ssl, sys, threading

    import anyio

    from cross_judge import Critic, Ensemble

    BACKEND, VENDOR, BASE_URL, KEY, MODEL = sys.argv[1:6]
    watching = {"loop": None}
    loaded = {"loop": [], "elsewhere": []}
    tls_on_loop = []


    class Recorder:
        # First on sys.meta_path: sees every module load (a module already in
        # sys.modules never reaches the finders), on whatever thread runs it.
        def find_spec(self, name, path=None, target=None):
            loop = watching["loop"]
            if loop is not None:
                where = "loop" if threading.get_ident() == loop else "elsewhere"
                loaded[where].append(name)
            return None


    sys.meta_path.insert(0, Recorder())
    for name in ("load_verify_locations", "load_default_certs", "set_default_verify_paths"):
        real = getattr(ssl.SSLContext, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            if threading.get_ident() == watching["loop"]:
                tls_on_loop.append(_name)
            return _real(self, *args, **kwargs)

        setattr(ssl.SSLContext, name, spy)


    async def main():
        critics = [
            Critic(name=f"c{i}", model=MODEL, vendor=VENDOR, base_url=BASE_URL, api_key=KEY)
            for i in range(3)
        ]
        panel = Ensemble(critics)
        watching["loop"] = threading.get_ident()
        verdict = await panel.judge("Felines (see also: Cats)")
        watching["loop"] = None
        return {
            "valid": verdict.n_valid,
            "loaded_on_loop": loaded["loop"],
            "loaded_elsewhere": len(loaded["elsewhere"]),
            "tls_on_loop": tls_on_loop,
        }


    print(json.dumps(anyio.run(main, backend=BACKEND)))
    """
)


MODEL = "first-call"


def run_first_call(server: VendorServer, backend: str, vendor: str) -> dict[str, Any]:
    base_url = server.url if vendor == "custom" else server.anthropic_url
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, backend, vendor, base_url, KEY, MODEL],
        capture_output=True,
        text=True,
        env=env,
        timeout=SUBPROCESS_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def first_call(server: VendorServer) -> Iterator[Callable[[str, str], dict[str, Any]]]:
    """The record of a cold first call, by (backend, vendor): one child process each."""
    server.always(MODEL, Reply.content(VERDICT))
    runs: dict[tuple[str, str], dict[str, Any]] = {}

    def get(backend: str, vendor: str) -> dict[str, Any]:
        if (backend, vendor) not in runs:
            runs[backend, vendor] = run_first_call(server, backend, vendor)
        return runs[backend, vendor]

    yield get
    server.always(MODEL, None)


CASES = [(b, v) for b in ("asyncio", "trio") for v in ("custom", "anthropic")]


@pytest.mark.parametrize(("backend", "vendor"), CASES)
def test_the_first_call_loads_no_module_on_the_event_loop_thread(
    first_call: Callable[[str, str], dict[str, Any]], backend: str, vendor: str
) -> None:
    result = first_call(backend, vendor)
    assert result["valid"] == 3
    assert result["loaded_elsewhere"] > 0  # the recorder saw the set-up, in worker threads
    assert result["loaded_on_loop"] == []


@pytest.mark.parametrize(("backend", "vendor"), CASES)
def test_the_first_call_builds_no_tls_context_on_the_event_loop_thread(
    first_call: Callable[[str, str], dict[str, Any]], backend: str, vendor: str
) -> None:
    result = first_call(backend, vendor)
    assert result["valid"] == 3
    assert result["tls_on_loop"] == []
