"""One simulated vendor per test module, on 127.0.0.1, stopped when the module ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cross_judge.testing import VendorServer

KEY = "sk-integration-test-key-9f8e7d6c5b4a"


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(api_key=KEY) as srv:
        yield srv
