"""Test-wide guards: no real API keys, no traffic beyond the loopback interface."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

import cross_judge.vendors
from cross_judge.vendors import VENDORS, all_vendors

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
    monkeypatch.setattr("cross_judge.transport.retry._backoff", lambda state: 0.0)
