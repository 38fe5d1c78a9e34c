"""The retry policy: what is retried, how long it waits, and the deadline."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import anyio
import pytest

from cross_judge import ErrorKind
from cross_judge.transport import CallFailure
from cross_judge.transport._openai_compat import retry_after_seconds
from cross_judge.transport._retry import MAX_RETRY_AFTER_S, call_with_retries

pytestmark = pytest.mark.anyio


class Script:
    """An attempt function that fails with the given failures, then returns "ok"."""

    def __init__(self, *failures: CallFailure) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the policy's waits instead of sleeping."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(anyio, "sleep", fake_sleep)
    return recorded


def rate_limited(retry_after: float | None = None) -> CallFailure:
    return CallFailure(ErrorKind.RATE_LIMIT, "HTTP 429", status=429, retry_after=retry_after)


async def test_success_on_first_attempt_counts_one(sleeps: list[float]) -> None:
    assert await call_with_retries(Script(), max_retries=2, timeout=1) == ("ok", 1)
    assert sleeps == []


async def test_retry_after_is_honoured(sleeps: list[float]) -> None:
    result = await call_with_retries(
        Script(rate_limited(1.5), rate_limited(0.25)), max_retries=2, timeout=1
    )
    assert result == ("ok", 3)
    assert sleeps == [1.5, 0.25]


async def test_retry_after_is_capped(sleeps: list[float]) -> None:
    await call_with_retries(Script(rate_limited(3600)), max_retries=1, timeout=1)
    assert sleeps == [MAX_RETRY_AFTER_S]


async def test_without_retry_after_backoff_is_jittered_and_grows(sleeps: list[float]) -> None:
    failures = [CallFailure(ErrorKind.SERVER, "HTTP 503", status=503) for _ in range(4)]
    await call_with_retries(Script(*failures), max_retries=4, timeout=1)
    assert len(sleeps) == 4
    assert all(0 <= s <= cap for s, cap in zip(sleeps, [0.5, 1.0, 2.0, 4.0], strict=True))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(sleeps: list[float], status: int) -> None:
    script = Script(CallFailure(ErrorKind.BAD_REQUEST, f"HTTP {status}", status=status))
    with pytest.raises(CallFailure) as info:
        await call_with_retries(script, max_retries=3, timeout=1)
    assert info.value.attempts == 1 and script.calls == 1


async def test_gives_up_after_max_retries_with_attempts_recorded(sleeps: list[float]) -> None:
    script = Script(*[rate_limited(0) for _ in range(10)])
    with pytest.raises(CallFailure) as info:
        await call_with_retries(script, max_retries=2, timeout=1)
    assert info.value.kind is ErrorKind.RATE_LIMIT and info.value.attempts == 3


async def test_a_wait_past_the_deadline_is_not_started(sleeps: list[float]) -> None:
    script = Script(rate_limited(10), rate_limited(0))
    with pytest.raises(CallFailure) as info:
        await call_with_retries(script, max_retries=5, timeout=1, deadline=2)
    assert sleeps == [] and info.value.attempts == 1


async def test_an_attempt_slower_than_timeout_is_a_timeout_failure() -> None:
    async def slow() -> str:
        await anyio.sleep(5)
        return "late"

    with pytest.raises(CallFailure) as info:
        await call_with_retries(slow, max_retries=0, timeout=0.05)
    assert info.value.kind is ErrorKind.TIMEOUT and info.value.attempts == 1


async def test_a_self_timed_attempt_is_left_to_its_own_timeout() -> None:
    # The HTTP client enforces the timeout (aiohttp's total timeout): no second timer.
    async def slower_than_timeout() -> str:
        await anyio.sleep(0.1)
        return "ok"

    result = await call_with_retries(
        slower_than_timeout, max_retries=0, timeout=0.01, self_timed=True
    )
    assert result == ("ok", 1)


async def test_a_self_timed_timeout_failure_reads_like_any_other_timeout() -> None:
    script = Script(CallFailure(ErrorKind.TIMEOUT, "aiohttp: total timeout"))
    with pytest.raises(CallFailure) as info:
        await call_with_retries(script, max_retries=0, timeout=0.5, self_timed=True)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert str(info.value).endswith("no response within 0.5s (timeout)")


async def test_a_deadline_shorter_than_the_timeout_still_cuts_a_self_timed_attempt() -> None:
    async def slow() -> str:
        await anyio.sleep(5)
        return "late"

    with pytest.raises(CallFailure) as info:
        await call_with_retries(slow, max_retries=0, timeout=10, deadline=0.05, self_timed=True)
    assert info.value.kind is ErrorKind.TIMEOUT and "deadline" in str(info.value)


async def test_cancellation_is_never_turned_into_a_failure() -> None:
    async def slow() -> str:
        await anyio.sleep(5)
        return "late"

    with anyio.move_on_after(0.05) as scope:
        await call_with_retries(slow, max_retries=3, timeout=10)
    assert scope.cancelled_caught


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_forms(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_retry_after_as_an_http_date() -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    seconds = retry_after_seconds({"retry-after": format_datetime(when, usegmt=True)})
    # Whole seconds on the wire (up to 1 s lost); the lower bound leaves a stalled
    # machine 10 s between the two lines.
    assert seconds is not None and 20 <= seconds <= 31
