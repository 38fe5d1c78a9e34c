"""Cancellation, the sync bridge and the demo, over real HTTP."""

from __future__ import annotations

import time

import anyio
import pytest

from cross_judge import Critic, ErrorKind, _sync
from cross_judge.cli import main
from cross_judge.testing import Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY

pytestmark = pytest.mark.integration


def critic(server: VendorServer, model: str, **kwargs: object) -> Critic:
    return Critic(
        name="c", model=model, vendor="custom", base_url=server.url, api_key=KEY, **kwargs
    )


def wait_for(predicate: object, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


@pytest.mark.anyio
async def test_cancelling_judge_aborts_the_request_in_flight(
    server: VendorServer, model: str
) -> None:
    server.always(model, Reply.hang())
    try:
        async with critic(server, model, timeout=SAFETY_NET_S) as c:
            with anyio.move_on_after(0.2) as scope:
                await c.judge("item")
            assert scope.cancelled_caught
    finally:
        server.always(model, None)
    assert wait_for(lambda: server.stats()["in_flight"] == 0)


def test_judge_sync_over_real_http(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"kind": "KEEP", "confidence": 0.6}'))
    v = critic(server, model).judge_sync("item")
    assert (v.kind, v.confidence) == ("KEEP", 0.6)


def test_judge_sync_from_many_threads_shares_one_bridge(server: VendorServer, model: str) -> None:
    server.always(model, Reply.content('{"kind": "REJECT"}'))
    c = critic(server, model)
    results: list[str] = []

    def work() -> None:
        results.append(c.judge_sync("item").kind)

    try:
        import threading

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SAFETY_NET_S)
    finally:
        server.always(model, None)
    assert results == ["REJECT"] * 8


def test_sync_bridge_restarts_after_shutdown(server: VendorServer, model: str) -> None:
    server.always(model, Reply.content('{"kind": "MERGE"}'))
    try:
        c = critic(server, model)
        assert c.judge_sync("item").kind == "MERGE"
        _sync.shutdown()
        assert c.judge_sync("item").kind == "MERGE"
    finally:
        server.always(model, None)


def test_missing_key_over_real_http_sends_nothing(server: VendorServer, model: str) -> None:
    server.reset_stats()
    v = Critic(name="c", model=model, vendor="openai", base_url=server.url).judge_sync("item")
    assert v.error_kind is ErrorKind.MISSING_KEY and "OPENAI_API_KEY" in (v.error or "")
    assert server.stats()["requests"] == 0


def test_demo_runs_offline_and_says_the_critics_are_simulated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--latency-scale", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # undo the console's line wrapping
    assert "simulated" in out and "No API key" in out
    assert "12 items x 3 critics = 36 verdicts" in out and "1 retried, 0 failed" in out


def test_demo_in_batch_mode_goes_through_the_simulated_batch_api(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--mode", "batch", "--latency-scale", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "36 requests in 3 provider batches" in out and "0 live requests, 0 failed" in out


def test_cli_without_a_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
