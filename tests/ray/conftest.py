"""One Ray instance for the whole session, started on this machine (2 CPUs, no dashboard,
no usage reporting) and shut down at the end; one simulated vendor per test module, on
127.0.0.1, which Ray's worker processes reach as the test process does.

Without Ray installed (``pip install 'cross-judge[ray]'``), and in pytest-xdist workers
(``-n``), every test that needs Ray is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge.testing import VendorServer

KEY = "sk-ray-test-key-5e4d3c2b1a"

RAY_SAFETY_NET_S = 1800
"""A safety net per async test, not a measure: Ray starts a dozen processes and its actors,
which on a loaded 2-core machine takes minutes (tests/waits.py has the project's default)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.parent == here:
            item.add_marker(pytest.mark.safety_net(RAY_SAFETY_NET_S))


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Each xdist worker would start a Ray instance of its own on the same CPUs.
        pytest.skip("the Ray tests run in one process: nox -s ray, or pytest tests/ray without -n")
    ray = pytest.importorskip("ray")
    from ray import cloudpickle

    # Ray must not report usage to the internet from a test run (its processes read this).
    before = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The panel factories live in the test modules; Ray's workers get them by value.
    import tests.ray

    cloudpickle.register_pickle_by_value(tests.ray)
    try:
        yield ray
    finally:
        cloudpickle.unregister_pickle_by_value(tests.ray)
        ray.shutdown()
        if before is None:
            del os.environ["RAY_USAGE_STATS_ENABLED"]
        else:
            os.environ["RAY_USAGE_STATS_ENABLED"] = before


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    with VendorServer(api_key=KEY) as srv:
        yield srv


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: Ray's object references cannot be awaited under trio."""
    return "asyncio"
