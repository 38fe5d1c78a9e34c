"""Test-wide guards: no real API keys, no traffic beyond the loopback interface, and no
limit a busy machine can reach: every async test is bounded by its own cancel scope
(``tests/waits.py``), hypothesis has no per-example deadline."""

from __future__ import annotations

import functools
import inspect
import ipaddress
import os
import socket
from collections.abc import Callable, Coroutine, Generator, Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, settings

import cross_judge.vendors
from cross_judge.vendors import VENDORS, all_vendors

from .waits import SAFETY_NET_S

# pytester runs pytest on a test file of its own: the cross-judge pytest plugin's tests.
pytest_plugins = ["pytester"]

# Hypothesis's own limits are timings: a 200 ms deadline per example and a health check that
# fails a test whose inputs are slow to generate. A loaded machine reaches both; the number of
# examples bounds a property test instead. Derandomized: every run tries the same inputs, so
# a run fails only where the code changed (``HYPOTHESIS_PROFILE=explore`` draws new ones).
settings.register_profile(
    "cross-judge",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
settings.register_profile(
    "explore", deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "cross-judge"))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_local(host: Any) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if isinstance(address, tuple) and not _is_local(address[0]):
        raise ConnectionRefusedError(f"test tried to reach {address[0]!r}: only loopback allowed")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if isinstance(address, tuple) and not _is_local(address[0]):
        raise ConnectionRefusedError(f"test tried to reach {address[0]!r}: only loopback allowed")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode() if isinstance(host, bytes) else host
    if name is not None and not _is_local(name):
        raise socket.gaierror(f"test tried to resolve {name!r}: only loopback allowed")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", _guarded_getaddrinfo)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for config in all_vendors().values():
        if config.api_key_env:
            monkeypatch.delenv(config.api_key_env, raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


# -- shared by the unit, integration and fault suites --------------------------------------------


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on asyncio and on trio."""
    return str(request.param)


@pytest.fixture
def vendor_registry() -> Iterator[None]:
    """Restore the global vendor registry (0.1's ``VENDORS`` and every other registered
    vendor) after the test, whatever it registered or replaced."""
    saved = [(live, dict(live)) for live in (VENDORS, cross_judge.vendors._MORE_VENDORS)]
    yield
    for live, before in saved:
        live.clear()
        live.update(before)


@pytest.fixture
def model(request: pytest.FixtureRequest) -> str:
    """A model name unique to the test, so scripted replies never leak between tests."""
    return f"m-{request.node.name}"


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries go at once (Retry-After and the limiter's pauses still apply)."""
    monkeypatch.setattr("cross_judge.transport._retry._backoff", lambda state: 0.0)


# -- a bound for every async test ----------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, None, None]:
    """Run an async test (on anyio's runner, either backend) inside a cancel scope that
    gives up after ``SAFETY_NET_S`` (or the seconds of its ``safety_net`` mark): a hang
    fails that test alone, where a process-wide alarm would fire wherever the worker
    happened to be."""
    test = pyfuncitem.obj
    if not inspect.iscoroutinefunction(test) or hasattr(test, "hypothesis"):
        yield
        return
    marker = pyfuncitem.get_closest_marker("safety_net")
    limit = float(marker.args[0]) if marker is not None else SAFETY_NET_S
    pyfuncitem.obj = _bounded(test, pyfuncitem.nodeid, limit)
    try:
        yield
    finally:
        pyfuncitem.obj = test


def _bounded(
    test: Callable[..., Coroutine[Any, Any, None]], name: str, limit: float
) -> Callable[..., Coroutine[Any, Any, None]]:
    @functools.wraps(test)
    async def bounded(**kwargs: Any) -> None:
        with anyio.move_on_after(limit) as scope:
            await test(**kwargs)
        if scope.cancelled_caught:
            pytest.fail(f"{name} was still running after {limit:.0f} s: a hang")

    return bounded
