"""A misbehaving vendor, fault by fault: what a Critic, an Ensemble, a batch and the CLI do.

Each fault is served over a real socket by :class:`~cross_judge.testing.VendorServer` to
both wire protocols (OpenAI-compatible chat completions over the pooled aiohttp/httpx
session, and Anthropic Messages through the official SDK), on asyncio and trio. For every
fault the test pins the outcome (verdict kind, ``error_kind``, attempts), checks that
``judge()`` returned rather than raised, and that no task, socket, fd or thread was left
behind. The reliability table of docs/reliability.md is this file's ``FAULTS`` list.

No outcome here depends on how fast the machine is (CI shares two cores under load): a
timeout that must fire meets a vendor that never completes (a hang, a trickle), and every
other timeout and deadline is far longer than any answer takes. Time bounds only catch a
call that hangs (:data:`HUNG_S` beyond its deadline); they never time a fast path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from cross_judge import Critic, Ensemble, ErrorKind, Verdict
from cross_judge.batch import ResultsFile
from cross_judge.cli import main
from cross_judge.testing import Reply, VendorServer

from ..waits import SAFETY_NET_S
from .conftest import KEY, Snapshot, close_pools_and_check_tasks

pytestmark = pytest.mark.integration

Protocol = Literal["chat", "messages"]
PROTOCOLS: tuple[Protocol, ...] = ("chat", "messages")

GOOD = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'
TIMEOUT_S = SAFETY_NET_S / 10
"""Per attempt: never reached by a vendor that answers, however loaded the machine."""
FIRES_S = 0.25
"""Per attempt, for a vendor that never completes (hang, trickle): it always fires."""
MAX_RETRIES = 2
DEADLINE_S = SAFETY_NET_S / 4
"""Per call: never reached by these faults (the deadline test sets its own)."""
HUNG_S = SAFETY_NET_S / 10
"""How far past its deadline a call may run before the test calls it hung: judge() only
needs a scheduling round and closing a connection; a minute is beyond any stall of a
loaded machine."""


def chat_body(**fields: Any) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": GOOD},
                "finish_reason": "stop",
            }
        ],
    }
    body.update(fields)
    return json.dumps(body).encode()


def message_body(**fields: Any) -> bytes:
    body: dict[str, Any] = {
        "id": "msg_fault",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": GOOD}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    body.update(fields)
    return json.dumps(body).encode()


def body_for(protocol: Protocol, **fields: Any) -> bytes:
    return chat_body(**fields) if protocol == "chat" else message_body(**fields)


def no_answer(protocol: Protocol) -> bytes:
    # "choices": [] / "content": []: a 200 that carries no answer at all.
    if protocol == "chat":
        return body_for(protocol, choices=[])
    return body_for(protocol, content=[])


DEEPSEEK_429 = json.dumps(
    {
        "error": {
            "message": "Rate Limit Reached",
            "type": "rate_limit_reached_error",
            "param": None,
            "code": "rate_limit_reached",
        }
    }
)


@dataclass(frozen=True)
class Fault:
    """One way a vendor misbehaves, and what a critic must make of it."""

    name: str
    reply: Callable[[Protocol], Reply]
    kind: str
    error_kind: ErrorKind | None
    attempts: int
    # Per protocol, when the two differ: {"messages": (kind, error_kind)}.
    differs: tuple[tuple[Protocol, str, ErrorKind | None], ...] = ()
    # Per-attempt timeout, for a fault that only a timeout can end.
    timeout: float | None = None

    def settings(self) -> dict[str, Any]:
        """Critic settings this fault needs beyond the module's defaults."""
        return {} if self.timeout is None else {"timeout": self.timeout}

    def expected(self, protocol: Protocol) -> tuple[str, ErrorKind | None]:
        for which, kind, error_kind in self.differs:
            if which == protocol:
                return kind, error_kind
        return self.kind, self.error_kind


RETRIED = MAX_RETRIES + 1

FAULTS: tuple[Fault, ...] = (
    Fault(
        "429 with Retry-After",
        lambda p: Reply.status(429, retry_after=0),
        "ERROR",
        ErrorKind.RATE_LIMIT,
        RETRIED,
    ),
    Fault(
        "429 without Retry-After",
        lambda p: Reply.status(429),
        "ERROR",
        ErrorKind.RATE_LIMIT,
        RETRIED,
    ),
    Fault(
        "429 DeepSeek-style body, no headers",
        lambda p: Reply.status(429, body=DEEPSEEK_429),
        "ERROR",
        ErrorKind.RATE_LIMIT,
        RETRIED,
    ),
    Fault("500", lambda p: Reply.status(500), "ERROR", ErrorKind.SERVER, RETRIED),
    Fault("502", lambda p: Reply.status(502), "ERROR", ErrorKind.SERVER, RETRIED),
    Fault("503", lambda p: Reply.status(503), "ERROR", ErrorKind.SERVER, RETRIED),
    Fault("529 overloaded", lambda p: Reply.status(529), "ERROR", ErrorKind.SERVER, RETRIED),
    Fault(
        "connection reset mid-body",
        lambda p: Reply.reset(),
        "ERROR",
        ErrorKind.CONNECTION,
        RETRIED,
    ),
    Fault(
        "accepts and never answers",
        lambda p: Reply.hang(),
        "ERROR",
        ErrorKind.TIMEOUT,
        RETRIED,
        timeout=FIRES_S,
    ),
    Fault(
        # The body (~200 bytes) would take minutes: the total timeout always fires.
        "trickles a byte a second",
        lambda p: Reply.trickle(GOOD, interval=1.0),
        "ERROR",
        ErrorKind.TIMEOUT,
        RETRIED,
        timeout=FIRES_S,
    ),
    Fault("200 with HTML", lambda p: Reply.html(200), "ERROR", ErrorKind.INVALID_RESPONSE, 1),
    Fault("200 empty body", lambda p: Reply.raw(b""), "ERROR", ErrorKind.INVALID_RESPONSE, 1),
    Fault(
        "200 truncated JSON",
        lambda p: Reply.raw(body_for(p)[:60]),
        "ERROR",
        ErrorKind.INVALID_RESPONSE,
        1,
    ),
    Fault(
        "200 with a 20 MB body",
        lambda p: Reply.raw(b'{"padding": "' + b"x" * (20 * 1024 * 1024) + b'"}'),
        "ERROR",
        ErrorKind.INVALID_RESPONSE,
        1,
    ),
    Fault(
        "200 with invalid UTF-8",
        lambda p: Reply.raw(body_for(p).replace(b"KEEP", b"KE\xff\xfeEP")),
        "ERROR",
        ErrorKind.INVALID_RESPONSE,
        1,
    ),
    Fault(
        "choices: [] (content: [] for Messages)",
        lambda p: Reply.raw(no_answer(p)),
        "ERROR",
        ErrorKind.INVALID_RESPONSE,
        1,
        # A Messages reply with no content block is a well-formed empty answer.
        differs=(("messages", "ERROR", ErrorKind.EMPTY),),
    ),
    Fault("content: null", lambda p: Reply.content(None), "ERROR", ErrorKind.EMPTY, 1),
    Fault(
        "refusal",
        lambda p: Reply.content(None, refusal="I can't help with that."),
        "ERROR",
        ErrorKind.REFUSAL,
        1,
    ),
    Fault(
        "content filter stop",
        lambda p: Reply.content("", finish_reason="content_filter"),
        "ERROR",
        ErrorKind.REFUSAL,
        1,
    ),
    Fault(
        "wrong content-type (text/plain) on a valid body",
        lambda p: Reply.raw(body_for(p), content_type="text/plain"),
        "KEEP",
        None,
        1,
    ),
    Fault(
        "prose instead of the JSON verdict",
        lambda p: Reply.content("Looks fine to me."),
        "PARSE_FAIL",
        ErrorKind.PARSE,
        1,
    ),
    Fault(
        "answer cut off at max_tokens",
        lambda p: Reply.content('{"kind": "KEEP", "reas', finish_reason="length"),
        "ERROR",
        ErrorKind.TRUNCATED,
        2,  # asked once more with twice the cap (retry_truncated), cut off again
    ),
    Fault(
        "a label outside the vocabulary",
        lambda p: Reply.content('{"kind": "MAYBE"}'),
        "PARSE_FAIL",
        ErrorKind.PARSE,
        1,
    ),
    Fault("401 key rejected", lambda p: Reply.status(401), "ERROR", ErrorKind.AUTH, 1),
    Fault("400 bad request", lambda p: Reply.status(400), "ERROR", ErrorKind.BAD_REQUEST, 1),
)


def make_critic(server: VendorServer, protocol: Protocol, model: str, **kwargs: Any) -> Critic:
    where: dict[str, Any] = (
        {"vendor": "custom", "base_url": server.url}
        if protocol == "chat"
        else {"vendor": "anthropic", "base_url": server.anthropic_url}
    )
    settings: dict[str, Any] = {
        "timeout": TIMEOUT_S,
        "max_retries": MAX_RETRIES,
        "deadline": DEADLINE_S,
        "labels": ["KEEP", "REJECT"],
        **kwargs,
    }
    return Critic(name=f"{protocol}-critic", model=model, api_key=KEY, **where, **settings)


def fault_id(fault: Fault) -> str:
    return fault.name.replace(" ", "-")


async def judge_timed(
    critic: Critic, item: str = "item", *, deadline: float = DEADLINE_S
) -> tuple[Verdict, float]:
    """``critic.judge(item)`` and the seconds it took; fails the test (instead of hanging
    it) if the call runs :data:`HUNG_S` past ``deadline``."""
    started = time.perf_counter()
    with anyio.fail_after(deadline + HUNG_S):
        verdict = await critic.judge(item)
    return verdict, time.perf_counter() - started


# -- one critic, one fault --------------------------------------------------------------------


# Every fault runs on asyncio; those that reach the event loop's own I/O differently (a
# socket that stalls, resets or floods, a status the SDKs map) run on trio as well.
ON_TRIO = {
    "429 without Retry-After",
    "503",
    "connection reset mid-body",
    "accepts and never answers",
    "trickles a byte a second",
    "200 with HTML",
    "200 with a 20 MB body",
}
CASES = [pytest.param("asyncio", f, id=f"asyncio-{fault_id(f)}") for f in FAULTS] + [
    pytest.param("trio", f, id=f"trio-{fault_id(f)}") for f in FAULTS if f.name in ON_TRIO
]
# The ensemble and batch tests take the faults that differ in how they end a call.
ENSEMBLE_FAULTS = [
    f
    for f in FAULTS
    if f.name
    in {
        "429 with Retry-After",
        "500",
        "connection reset mid-body",
        "accepts and never answers",
        "200 with HTML",
        "200 with a 20 MB body",
        "refusal",
        "prose instead of the JSON verdict",
    }
]


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("anyio_backend", "fault"), CASES)
async def test_a_fault_becomes_a_classified_verdict_within_the_deadline_leaving_nothing_open(
    server: VendorServer,
    model: str,
    protocol: Protocol,
    fault: Fault,
    leaks: Snapshot,
    no_backoff: None,
) -> None:
    server.always(model, fault.reply(protocol))
    try:
        critic = make_critic(server, protocol, model, **fault.settings())
        verdict, _ = await judge_timed(critic)
    finally:
        server.always(model, None)
    kind, error_kind = fault.expected(protocol)
    assert (verdict.kind, verdict.error_kind) == (kind, error_kind), verdict.error
    assert verdict.attempts == fault.attempts, verdict.error
    if error_kind is not None:
        assert verdict.error, "a failed verdict says why"
    assert await close_pools_and_check_tasks() == []


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_deadline_cuts_a_hanging_vendor_short_of_all_its_retries(
    server: VendorServer, model: str, protocol: Protocol, leaks: Snapshot, no_backoff: None
) -> None:
    # Without the deadline: 31 attempts of 0.5 s, which the attempts check below fails.
    timeout, retries, deadline = 0.5, 30, 1.2
    server.always(model, Reply.hang())
    try:
        critic = make_critic(
            server, protocol, model, timeout=timeout, max_retries=retries, deadline=deadline
        )
        verdict, elapsed = await judge_timed(critic, deadline=deadline)
    finally:
        server.always(model, None)
    assert verdict.kind == "ERROR" and verdict.error_kind is ErrorKind.TIMEOUT
    # Each attempt ends by its timeout or the deadline, never sooner: at most 0.5 + 0.5 +
    # what is left of 1.2 s, however loaded the machine (fewer when it is slow).
    assert 1 <= verdict.attempts <= 3, verdict.error
    assert elapsed >= deadline - 0.01  # not given up before the deadline
    assert await close_pools_and_check_tasks() == []


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "first",
    [Reply.status(429, retry_after=0), Reply.status(429, body=DEEPSEEK_429), Reply.status(503)],
    ids=["429-retry-after", "429-deepseek", "503"],
)
async def test_a_transient_fault_is_retried_into_a_valid_verdict(
    server: VendorServer, model: str, protocol: Protocol, first: Reply, no_backoff: None
) -> None:
    server.script(model, first, first, Reply.content(GOOD))
    verdict, _ = await judge_timed(make_critic(server, protocol, model))
    assert (verdict.kind, verdict.attempts) == ("KEEP", 3)
    await close_pools_and_check_tasks()


# -- storms: many calls at once ---------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "storm",
    [Reply.status(429, retry_after=0.2), Reply.status(429, body=DEEPSEEK_429)],
    ids=["with-retry-after", "deepseek-style-no-headers"],
)
async def test_a_429_storm_over_a_batch_is_ridden_out_and_every_item_is_judged(
    server: VendorServer, model: str, storm: Reply, leaks: Snapshot
) -> None:
    """The vendor refuses every request for its first second, then recovers.

    Each item may try 11 times, and its waits (0.2 s Retry-After, or the limiter's pause
    doubling from 0.25 s) outlast the storm long before that, on a loaded machine too.
    """
    retries = 10
    critic = make_critic(server, "chat", model, max_retries=retries, deadline=60.0)
    server.always(model, storm)
    server.reset_stats()

    async def storm_ends() -> None:
        await anyio.sleep(1.0)
        server.always(model, Reply.content(GOOD))

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(storm_ends)
            batch = await Ensemble([critic]).judge_many(
                [f"storm item {i}" for i in range(40)], concurrency=16
            )
    finally:
        server.always(model, None)
    assert [r.consensus for r in batch.verdicts] == ["KEEP"] * 40
    attempts = sum(r.verdicts[0].attempts for r in batch.verdicts)
    refused = attempts - 40
    # Every request is accounted for (none lost, none doubled)...
    assert server.stats()["requests"] == attempts
    # ...and the client backed off rather than hammering: far fewer 429s than the
    # 40 x 11 attempts the retry policy alone would allow (about 30 in practice; a
    # slower machine sends fewer in the storm's second, not more).
    assert 1 <= refused <= 40 * (retries + 1) // 4
    assert await close_pools_and_check_tasks() == []


# -- an ensemble and a batch go on around a broken critic -------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", ENSEMBLE_FAULTS, ids=fault_id)
async def test_an_ensemble_with_one_broken_critic_still_decides_from_the_others(
    server: VendorServer,
    model: str,
    protocol: Protocol,
    fault: Fault,
    leaks: Snapshot,
    no_backoff: None,
) -> None:
    broken, fine = f"{model}-broken", f"{model}-fine"
    server.always(broken, fault.reply(protocol))
    server.always(fine, Reply.content(GOOD))
    try:
        critics = [
            make_critic(server, protocol, broken, **fault.settings()),
            make_critic(server, "chat", fine),
            make_critic(server, "messages", fine),
        ]
        for i, c in enumerate(critics):
            c.name = f"critic-{i}"
        with anyio.fail_after(DEADLINE_S + HUNG_S):
            result = await Ensemble(critics).judge("item")
    finally:
        server.always(broken, None)
        server.always(fine, None)
    assert result.consensus == "KEEP"
    assert [v.kind for v in result.verdicts[1:]] == ["KEEP", "KEEP"]
    assert result.verdicts[0].error_kind is fault.expected(protocol)[1]
    assert await close_pools_and_check_tasks() == []


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_batch_goes_on_past_the_items_that_met_a_fault(
    server: VendorServer, model: str, protocol: Protocol, leaks: Snapshot
) -> None:
    # No hang here: a timeout short enough to end one would race the answers of the others.
    faults = [Reply.reset(), Reply.html(), Reply.raw(b""), Reply.status(500), Reply.html(502)]
    server.script(model, *faults)  # the first five requests, one item each
    server.always(model, Reply.content(GOOD))
    critic = make_critic(server, protocol, model, max_retries=0)
    try:
        batch = await Ensemble([critic]).judge_many([f"item {i}" for i in range(12)], concurrency=1)
    finally:
        server.always(model, None)
    kinds = [r.verdicts[0].error_kind for r in batch.verdicts]
    assert kinds[:5] == [
        ErrorKind.CONNECTION,
        ErrorKind.INVALID_RESPONSE,
        ErrorKind.INVALID_RESPONSE,
        ErrorKind.SERVER,
        ErrorKind.SERVER,
    ]
    assert [r.consensus for r in batch.verdicts[5:]] == ["KEEP"] * 7
    assert await close_pools_and_check_tasks() == []


# -- the CLI ----------------------------------------------------------------------------------


def write_panel(folder: Path, server: VendorServer, models: tuple[str, ...]) -> Path:
    critics = "".join(
        f"""
  - name: {m}
    model: {m}
    vendor: custom
    base_url: {server.url}
    api_key_env: FAULTS_TEST_KEY
    prompt: pass-fail
    timeout: 10
    max_retries: 1"""
        for m in models
    )
    path = folder / "panel.yaml"
    path.write_text(f"voting: majority\ndeadline: 30\ncritics:{critics}\n", encoding="utf-8")
    return path


def test_the_cli_writes_every_item_and_names_the_ones_a_fault_failed(
    tmp_path: Path,
    server: VendorServer,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_backoff: None,
) -> None:
    monkeypatch.setenv("FAULTS_TEST_KEY", KEY)
    broken, fine = f"{model}-b", f"{model}-f"
    # The first three items' calls to `broken` fail on every attempt (a 200 that is not
    # a completion is not retried); the rest answer. (No hang: a timeout short enough to
    # end one would race the other answers on a loaded machine.)
    server.script(
        broken,
        *[Reply.status(503)] * 2,
        Reply.raw(b"x" * (20 * 1024 * 1024)),
        *[Reply.reset()] * 2,
    )
    server.always(broken, Reply.content('{"verdict": "PASS"}'))
    server.always(fine, Reply.content('{"verdict": "PASS"}'))
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(json.dumps({"id": f"i{n}", "query": f"q{n}"}) + "\n" for n in range(8))
    )
    out = tmp_path / "out.jsonl"
    argv = ["review", str(items), "--panel", str(write_panel(tmp_path, server, (broken, fine)))]
    try:
        code = main([*argv, "--out", str(out), "--concurrency", "1", "--no-progress"])
    finally:
        server.always(broken, None)
        server.always(fine, None)
    err = capsys.readouterr().err
    results = list(ResultsFile.read(out))
    assert code == 1
    assert sorted(r.query_id for r in results) == [f"i{n}" for n in range(8)]
    failed = [r.query_id for r in results if r.verdicts[0].kind == "ERROR"]
    assert failed == ["i0", "i1", "i2"], [(r.query_id, r.verdicts[0].error) for r in results]
    assert [r.verdicts[0].error_kind for r in results[:3]] == [
        ErrorKind.SERVER,
        ErrorKind.INVALID_RESPONSE,
        ErrorKind.CONNECTION,
    ]
    assert "3 items with a failed call" in err and "--retry-failed" in err
    for line in out.read_text().splitlines():
        json.loads(line)  # valid JSONL throughout


def test_judge_never_raises_on_any_fault_for_legacy_callers(server: VendorServer) -> None:
    """The legacy JudgePanel over the same faults returns 0.1-shaped verdicts, no raise."""
    from cross_judge import JudgePanel, Reviewer

    model = "legacy-faults"
    server.script(model, Reply.html(), Reply.reset(), Reply.status(500), Reply.raw(b"{"))
    reviewers = [
        Reviewer(
            reviewer_id=f"r{i}", model=model, vendor="custom", base_url=server.url, api_key=KEY
        )
        for i in range(4)
    ]
    server.always(model, Reply.status(500))
    try:
        result = JudgePanel(reviewers).ask("item-1", "Judge this item.")
    finally:
        server.always(model, None)
    assert [v.verdict for v in result.verdicts] == ["ERROR"] * 4
    assert all(v.error for v in result.verdicts)


def test_a_fault_suite_run_leaves_the_server_idle(server: VendorServer) -> None:
    """Every connection this module's tests opened was closed: nothing still in flight."""
    assert anyio.run(_idle, server)


async def _idle(server: VendorServer) -> bool:
    """True once nothing is in flight (polled: the counter has no event), within the
    safety net."""
    with anyio.move_on_after(SAFETY_NET_S):
        while server.stats()["in_flight"]:  # noqa: ASYNC110 - nothing to wait on but this
            await anyio.sleep(0.02)
        return True
    return False
