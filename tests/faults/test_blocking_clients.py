"""A cross-judge 0.1 blocking client that never returns holds a bounded number of threads.

0.1's injected clients are synchronous: ``Critic(http_client=X)`` calls ``X.post(...)`` and
``Reviewer(client=X)`` calls ``X.chat.completions.create(...)``, each in a worker thread so
that the event loop keeps running. A thread blocked in such a call cannot be stopped. So
that timed-out and retried calls do not each leave one more thread behind, a client holds
at most :data:`~cross_judge.transport._blocking.THREADS_PER_CLIENT` threads at once,
counting threads still blocked in calls given up on; a call beyond that waits for one of
them (and times out waiting, an ``ERROR`` verdict like any other timeout).

The clients block on a :class:`threading.Event` that only the fixture's teardown sets:
nothing returns before the test is done with it, so no outcome depends on timing. Every
timeout is 2 s or more and always fires (the client never answers in time).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest

from cross_judge import Critic, ErrorKind
from cross_judge.errors import ConfigError
from cross_judge.panel import JudgePanel
from cross_judge.reviewer import DEFAULT_REVIEWER_TIMEOUT, Reviewer
from cross_judge.transport._blocking import THREADS_PER_CLIENT, calls_waiting, threads_in_use

from ..waits import SAFETY_NET_S
from .conftest import wait_until

FIRES_S = 2.0
"""A timeout that always fires: the client never returns while the test runs."""
GENEROUS_S = SAFETY_NET_S
"""Longer than anything here takes, however loaded the machine."""
ANSWER = {"kind": "KEEP", "confidence": 0.9, "reasoning": "ok"}


class Blocking:
    """Counts the calls that enter a client and blocks each until :attr:`release` is set
    (the fixture's teardown); then answers with a valid completion."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.entered = 0
        self.inside = 0

    def enter(self, model: str) -> None:
        with self._lock:
            self.entered += 1
            self.inside += 1
        try:
            if model != "fast":
                self.release.wait(SAFETY_NET_S)
        finally:
            with self._lock:
                self.inside -= 1


class BlockingHttpClient(Blocking):
    """0.1's ``Critic(http_client=...)`` surface: ``post(url, json=..., headers=...)``."""

    def post(self, url: str, *, json: dict[str, Any], headers: dict[str, str]) -> Any:
        self.enter(json["model"])
        body = {"choices": [{"message": {"content": _dumps(ANSWER)}}]}
        return SimpleNamespace(status_code=200, headers={}, json=lambda: body)


class BlockingOpenAIClient(Blocking):
    """0.1's ``Reviewer(client=...)`` surface: ``chat.completions.create(**kwargs)``."""

    def __init__(self) -> None:
        super().__init__()
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        self.enter(kwargs["model"])
        message = SimpleNamespace(content='{"verdict": "KEEP", "confidence": 0.9}')
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def _dumps(obj: object) -> str:
    """``json.dumps``, which ``post``'s parameter named ``json`` (0.1's keyword) hides."""
    return json.dumps(obj)


def _released(client: Blocking) -> None:
    """Let every blocked call return, and wait until their threads are given back."""
    client.release.set()
    assert wait_until(lambda: threads_in_use(client) == 0 and client.inside == 0, GENEROUS_S)


@pytest.fixture
def http_client() -> Iterator[BlockingHttpClient]:
    client = BlockingHttpClient()
    yield client
    _released(client)


@pytest.fixture
def openai_client() -> Iterator[BlockingOpenAIClient]:
    client = BlockingOpenAIClient()
    yield client
    _released(client)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cross_judge.transport._retry._backoff", lambda state: 0.0)


def _critic(client: Any, *, model: str = "m", timeout: float = FIRES_S, **kwargs: Any) -> Critic:
    return Critic(
        name=f"legacy-{model}",
        model=model,
        vendor="custom",
        base_url="http://127.0.0.1:9/v1",  # never dialled: the injected client answers
        api_key="sk-blocking-test-key-0000",
        http_client=client,
        timeout=timeout,
        **kwargs,
    )


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.is_alive()]


# -- Critic(http_client=...) -----------------------------------------------------------------


def test_ten_judge_sync_calls_on_a_client_that_never_returns_hold_at_most_the_thread_cap(
    http_client: BlockingHttpClient, no_backoff: None
) -> None:
    critic = _critic(http_client, max_retries=2)  # 10 calls x 3 attempts: 30 attempts
    before = set(threading.enumerate())
    with ThreadPoolExecutor(10) as pool:  # 10 judge_sync calls at once, from 10 threads
        verdicts = list(pool.map(critic.judge_sync, [f"item {i}" for i in range(10)]))
    # Each attempt timed out, in the client or waiting for one of its threads.
    assert [v.error_kind for v in verdicts] == [ErrorKind.TIMEOUT] * 10
    assert all(v.kind == "ERROR" and v.attempts == 3 for v in verdicts)
    # The first THREADS_PER_CLIENT attempts took a thread each and are still blocked in
    # the client; the other 14 waited for one instead of starting a thread of their own.
    assert http_client.entered == http_client.inside == THREADS_PER_CLIENT
    assert threads_in_use(http_client) == THREADS_PER_CLIENT
    assert calls_waiting(http_client) == 0
    # The pool's threads have ended; the sync bridge's own thread may have started.
    extra = [t for t in _new_threads(before) if t.name != "cross-judge-sync-bridge"]
    assert len(extra) <= THREADS_PER_CLIENT, [t.name for t in extra]


def test_a_call_waiting_for_a_thread_runs_once_a_blocked_call_returns(
    http_client: BlockingHttpClient,
) -> None:
    blocked = _critic(http_client, timeout=GENEROUS_S, max_retries=0)
    fast = _critic(http_client, model="fast", timeout=GENEROUS_S, max_retries=0)
    with ThreadPoolExecutor(THREADS_PER_CLIENT + 1) as pool:
        holding = [pool.submit(blocked.judge_sync, f"item {i}") for i in range(THREADS_PER_CLIENT)]
        assert wait_until(lambda: http_client.inside == THREADS_PER_CLIENT, GENEROUS_S)
        waiting = pool.submit(fast.judge_sync, "a fast item")
        assert wait_until(lambda: calls_waiting(http_client) == 1, GENEROUS_S)
        assert http_client.entered == THREADS_PER_CLIENT  # it did not start a thread
        http_client.release.set()  # the blocked calls return: their threads are free
        answered = waiting.result(GENEROUS_S)
        assert all(f.result(GENEROUS_S).is_valid for f in holding)
    assert (answered.kind, answered.error) == ("KEEP", None)
    assert http_client.entered == THREADS_PER_CLIENT + 1


def test_threads_blocked_in_timed_out_calls_are_given_back_when_the_client_returns(
    http_client: BlockingHttpClient,
) -> None:
    critic = _critic(http_client, max_retries=0)
    verdict = critic.judge_sync("an item")
    assert verdict.error_kind is ErrorKind.TIMEOUT
    assert threads_in_use(http_client) == 1  # still blocked in the client
    http_client.release.set()
    assert wait_until(lambda: threads_in_use(http_client) == 0, GENEROUS_S)
    assert critic.judge_sync("another item").is_valid  # the client answers now


# -- Reviewer(client=...) --------------------------------------------------------------------


def test_reviewer_ask_on_a_client_that_never_returns_is_an_error_verdict_after_its_timeout(
    openai_client: BlockingOpenAIClient,
) -> None:
    reviewer = Reviewer("r", "m", client=openai_client, timeout=FIRES_S)
    outcome: list[Any] = []
    started = time.monotonic()
    # In a thread of its own, so that a call that never returns fails this test instead
    # of hanging it (the fixture's teardown then lets it return).
    asking = threading.Thread(target=lambda: outcome.append(reviewer.ask("x")), daemon=True)
    asking.start()
    asking.join(GENEROUS_S)
    assert not asking.is_alive(), "Reviewer.ask() did not return"
    elapsed = time.monotonic() - started
    (verdict,) = outcome
    assert verdict.verdict == "ERROR" and verdict.error == verdict.rationale
    assert verdict.error == (
        f"TimeoutError: client.chat.completions.create() gave no answer within {FIRES_S:g}s"
    )
    assert elapsed >= FIRES_S
    assert threads_in_use(openai_client) == 1  # the blocked thread is still counted


def test_a_reviewer_waits_600_seconds_by_default_as_openai_python_did_for_0_1() -> None:
    assert DEFAULT_REVIEWER_TIMEOUT == 600.0
    assert Reviewer("r", "m").timeout == DEFAULT_REVIEWER_TIMEOUT


def test_a_panel_of_reviewers_sharing_a_blocked_client_holds_at_most_the_thread_cap(
    openai_client: BlockingOpenAIClient,
) -> None:
    reviewers = [
        Reviewer(f"r{i}", "m", client=openai_client, timeout=FIRES_S)
        for i in range(THREADS_PER_CLIENT + 4)
    ]
    result = JudgePanel(reviewers).ask("item", "x")  # every reviewer at once
    assert [v.verdict for v in result.verdicts] == ["ERROR"] * len(reviewers)
    assert openai_client.entered == THREADS_PER_CLIENT
    assert threads_in_use(openai_client) == THREADS_PER_CLIENT


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_a_reviewer_timeout_that_is_not_a_positive_number_is_refused(
    timeout: float,
) -> None:
    client = BlockingOpenAIClient()
    client.release.set()
    with pytest.raises(ConfigError, match="timeout"):
        Reviewer("r", "m", client=client, timeout=timeout).ask("x")
