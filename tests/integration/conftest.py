"""One simulated vendor per test module, on 127.0.0.1, stopped when the module ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cross_judge.testing import VendorServer

KEY = "sk-integration-test-key-9f8e7d6c5b4a"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(api_key=KEY) as srv:
        yield srv


@pytest.fixture
def model(request: pytest.FixtureRequest) -> str:
    """A model name unique to the test, so scripted replies never leak between tests."""
    return f"m-{request.node.name}"


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cross_judge._retry._backoff", lambda state: 0.0)
