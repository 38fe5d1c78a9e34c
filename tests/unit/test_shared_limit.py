"""The shared limit: the permit broker's rules on a fake clock; the client on a local broker."""

from __future__ import annotations

import math
import socket
import threading
from collections.abc import Awaitable, Callable

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cross_judge import ConfigError, ErrorKind
from cross_judge.limits.gate import PAUSE_BASE_S, VendorGate, pause_after_rate_limit
from cross_judge.limits.shared_limit import (
    DEAD_AFTER_TERMS,
    LeaseReply,
    LeaseRequest,
    PermitBroker,
    SharedLimit,
    SharedLimitError,
)
from cross_judge.transport import CallFailure
from cross_judge.transport.retry import MAX_RETRY_AFTER_S
from cross_judge.vendors import VendorConfig, get_vendor, register_vendor, set_vendor_limits

WAIT_S = 10.0  # a safety net: nothing here should take near this long


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def broker(limit: int = 4, *, term_s: float = 2.0) -> tuple[PermitBroker, Clock]:
    clock = Clock()
    return PermitBroker(limit, term_s=term_s, clock=clock), clock


def ask(b: PermitBroker, client: str, want: int = 0, **report: object) -> LeaseReply:
    return b.exchange(LeaseRequest(client, want, **report))  # type: ignore[arg-type]


# -- granting ------------------------------------------------------------------------------------


def test_a_grant_is_up_to_what_is_free() -> None:
    b, _ = broker(4)
    assert ask(b, "a", 3).granted == 3
    reply = ask(b, "b", 3)
    assert (reply.granted, reply.held) == (1, 1)
    assert b.held == 4
    assert b.clients == {"a": 3, "b": 1}


def test_a_reply_says_the_limit_and_the_term() -> None:
    b, _ = broker(4, term_s=1.5)
    reply = ask(b, "a", 1)
    assert (reply.limit, reply.term_s, reply.pause_s) == (4, 1.5, 0.0)


def test_returned_permits_can_be_granted_to_another_client() -> None:
    b, _ = broker(2)
    ask(b, "a", 2)
    assert ask(b, "b", 1).granted == 0
    ask(b, "a", returning=2)
    assert ask(b, "b", 1).granted == 1


def test_returning_more_than_held_returns_only_what_is_held() -> None:
    b, _ = broker(4)
    ask(b, "a", 1)
    ask(b, "a", returning=3)
    assert b.held == 0
    assert b.clients == {"a": 0}


def test_a_lone_client_may_keep_the_whole_limit() -> None:
    b, _ = broker(4)
    ask(b, "a", 4)
    reply = ask(b, "a", 2)  # wants more than there is: nobody else waits, it keeps all
    assert (reply.granted, reply.held) == (0, 4)


def test_a_waiting_client_makes_a_holder_shrink_to_its_share() -> None:
    b, _ = broker(4)
    ask(b, "a", 4)
    assert ask(b, "b", 2).granted == 0  # b now waits
    reply = ask(b, "a")  # a's next exchange (a renewal) tells it to keep 2
    assert (reply.granted, reply.held) == (0, 2)
    ask(b, "a", returning=2)  # as two of its calls finish
    assert ask(b, "b", 2).granted == 2


def test_a_client_below_its_share_is_not_told_to_shrink() -> None:
    b, _ = broker(4)
    ask(b, "a", 1)
    ask(b, "b", 3)
    ask(b, "c", 1)  # waits: nothing free
    assert ask(b, "a").held == 1  # shares of 4 among a, b, c: 1, 1 + the remainder, 1
    assert ask(b, "b").held == 2


def test_the_remainder_of_a_share_goes_to_the_biggest_holder() -> None:
    b, _ = broker(5)
    ask(b, "a", 4)
    ask(b, "b", 1)
    ask(b, "b", 2)  # waits
    assert ask(b, "a").held == 3  # 5 // 2 = 2, and the remainder stays where it is held
    assert ask(b, "b").held == 1


def test_a_wait_older_than_one_term_no_longer_makes_others_shrink() -> None:
    b, clock = broker(4, term_s=2.0)
    ask(b, "a", 4)
    ask(b, "b", 1)  # waits, then stops asking (its demand went away without telling)
    clock.advance(2.5)
    assert ask(b, "a").held == 4


def test_a_client_whose_demand_is_met_stops_waiting() -> None:
    b, _ = broker(4)
    ask(b, "a", 3)
    ask(b, "b", 2)  # gets 1, waits for 1 more
    ask(b, "b", 0)  # wants nothing more now
    assert ask(b, "a").held == 3


# -- dead clients --------------------------------------------------------------------------------


def test_a_client_silent_for_three_terms_loses_its_permits() -> None:
    b, clock = broker(4, term_s=2.0)
    ask(b, "dead", 4)
    clock.advance(DEAD_AFTER_TERMS * 2.0 + 0.01)
    reply = ask(b, "alive", 4)
    assert reply.granted == 4
    assert b.clients == {"alive": 4}


def test_a_client_exchanging_every_term_keeps_its_permits() -> None:
    b, clock = broker(4, term_s=2.0)
    ask(b, "a", 4)
    for _ in range(10):
        clock.advance(1.9)
        ask(b, "a")
    assert ask(b, "b", 1).granted == 0
    assert b.clients["a"] == 4


def test_a_client_silent_for_less_than_three_terms_is_not_reclaimed() -> None:
    b, clock = broker(4, term_s=2.0)
    ask(b, "slow", 4)
    clock.advance(DEAD_AFTER_TERMS * 2.0 - 0.01)
    assert ask(b, "other", 1).granted == 0


def test_a_client_presumed_dead_that_comes_back_holds_nothing() -> None:
    b, clock = broker(4, term_s=2.0)
    ask(b, "sleeper", 2)
    clock.advance(DEAD_AFTER_TERMS * 2.0 + 1)
    ask(b, "other", 4)
    reply = ask(b, "sleeper", returning=2)  # it still thinks it holds two
    assert (reply.granted, reply.held) == (0, 0)
    assert b.clients == {"other": 4, "sleeper": 0}


# -- AIMD ----------------------------------------------------------------------------------------


def test_a_429_halves_the_limit_from_what_is_held() -> None:
    b, _ = broker(8)
    ask(b, "a", 6)
    reply = ask(b, "a", rate_limits=(None,))
    assert reply.limit == 3  # min(8, 6 held) // 2


def test_echoes_of_the_same_burst_do_not_halve_again() -> None:
    b, clock = broker(16)
    ask(b, "a", 8)
    ask(b, "a", rate_limits=(None,))  # 8 // 2 = 4
    clock.advance(0.01)
    reply = ask(b, "a", rate_limits=(None,))  # an echo: 8 - 2 refused = 6 > 4, unchanged
    assert reply.limit == 4


def test_echoes_lower_the_limit_to_what_the_vendor_did_not_refuse() -> None:
    b, _ = broker(16)
    ask(b, "a", 16)
    reply = ask(b, "a", rate_limits=(None,) * 12)  # 12 of a burst of 16 refused
    assert reply.limit == 4


def test_a_429_after_the_echo_window_halves_again() -> None:
    b, clock = broker(16, term_s=2.0)
    ask(b, "a", 8)
    ask(b, "a", rate_limits=(None,))
    assert b.limit == 4
    clock.advance(2.0)  # past the pause and one term
    ask(b, "a", returning=4)
    reply = ask(b, "a", rate_limits=(None,))
    assert reply.limit == 2


def test_a_429_pauses_every_client() -> None:
    b, clock = broker(4)
    ask(b, "a", 2)
    ask(b, "b", 2)
    ask(b, "a", rate_limits=(None,))
    clock.advance(0.1)
    reply = ask(b, "b")
    assert reply.pause_s == pytest.approx(PAUSE_BASE_S - 0.1)


def test_the_pause_honours_retry_after_capped() -> None:
    b, _ = broker(4)
    ask(b, "a", 1)
    assert ask(b, "a", rate_limits=(7.0,)).pause_s == 7.0
    assert ask(b, "a", rate_limits=(10_000.0,)).pause_s == MAX_RETRY_AFTER_S


def test_a_pause_is_only_extended() -> None:
    b, _ = broker(4)
    ask(b, "a", 1)
    ask(b, "a", rate_limits=(30.0,))
    assert ask(b, "a", rate_limits=(1.0,)).pause_s == 30.0


def test_consecutive_new_signals_double_the_pause() -> None:
    b, clock = broker(64, term_s=1.0)
    ask(b, "a", 64)
    pauses = []
    for _ in range(3):
        pauses.append(ask(b, "a", rate_limits=(None,)).pause_s)
        clock.advance(1.0)  # past the echo window: the next 429 is a new signal
    assert pauses == [pause_after_rate_limit(n, None) for n in (1, 2, 3)]


def test_a_success_resets_the_consecutive_count() -> None:
    b, clock = broker(64, term_s=1.0)
    ask(b, "a", 64)
    ask(b, "a", rate_limits=(None,))
    clock.advance(1.0)
    reply = ask(b, "a", successes=1, rate_limits=(None,))  # successes are applied first
    assert reply.pause_s == pause_after_rate_limit(1, None)


def test_successes_raise_the_limit_by_one_per_window_up_to_the_ceiling() -> None:
    b, _ = broker(8)
    ask(b, "a", 4)
    ask(b, "a", rate_limits=(None,))
    assert b.limit == 2
    limits = []
    for _ in range(6):
        limits.append(ask(b, "a", successes=b.limit).limit)
    assert limits == [3, 4, 5, 6, 7, 8]
    assert ask(b, "a", successes=100).limit == 8


def test_successes_fewer_than_the_limit_do_not_raise_it() -> None:
    b, _ = broker(8)
    ask(b, "a", 8)
    ask(b, "a", rate_limits=(None,))
    assert ask(b, "a", successes=3).limit == 4
    assert ask(b, "a", successes=1).limit == 5


def test_after_a_decrease_nothing_is_granted_and_holders_shrink() -> None:
    b, _ = broker(8)
    ask(b, "a", 4)
    ask(b, "b", 4)
    reply_a = ask(b, "a", 2, rate_limits=(None,))  # limit 8 -> 4, 8 held
    assert (reply_a.granted, reply_a.held, reply_a.limit) == (0, 2, 4)
    assert ask(b, "b", 1).held == 2
    ask(b, "a", returning=2)
    ask(b, "b", returning=2)
    assert b.held == 4


def test_a_lone_client_over_a_lowered_limit_keeps_the_limit() -> None:
    b, _ = broker(8)
    ask(b, "a", 8)
    reply = ask(b, "a", rate_limits=(None,))
    assert (reply.limit, reply.held) == (4, 4)


# -- the invariant -------------------------------------------------------------------------------

requests = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 6),  # want
        st.integers(0, 6),  # returning
        st.integers(0, 5),  # successes
        st.lists(st.one_of(st.none(), st.floats(0, 100)), max_size=2),
        st.floats(0, 3),  # seconds before the exchange
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(limit=st.integers(1, 8), steps=requests)
def test_the_total_held_never_exceeds_the_limit_when_anything_is_granted(
    limit: int, steps: list[tuple[str, int, int, int, list[float | None], float]]
) -> None:
    b, clock = broker(limit, term_s=1.0)
    for client, want, returning, successes, rate_limits, wait in steps:
        clock.advance(wait)
        before = b.held
        reply = ask(
            b,
            client,
            want,
            returning=returning,
            successes=successes,
            rate_limits=tuple(rate_limits),
        )
        assert 0 <= reply.granted <= want
        assert 1 <= reply.limit <= limit
        assert 0 <= reply.held <= b.clients[client]
        assert b.held == sum(b.clients.values())
        if reply.granted:
            assert b.held <= reply.limit
        assert b.held <= max(before, reply.limit)  # over the limit only by what was held
        if not rate_limits:
            assert b.held <= limit


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(1, 8),
    steps=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 4), st.booleans()),
        max_size=60,
    ),
)
def test_clients_that_give_back_what_they_are_told_stay_within_the_limit(
    limit: int, steps: list[tuple[str, int, bool]]
) -> None:
    # Obedient clients: each returns whatever it holds beyond what the broker lets it keep,
    # at its next exchange. After a 429 every client is brought back under the new limit
    # once each has exchanged twice (once to learn, once to return).
    b, clock = broker(limit, term_s=1.0)
    holding = {"a": 0, "b": 0, "c": 0}
    keep = dict(holding)
    for client, want, refused in steps:
        clock.advance(0.1)
        excess = max(0, holding[client] - keep[client])
        reply = ask(b, client, want, returning=excess, rate_limits=(None,) if refused else ())
        holding[client] += reply.granted - excess
        keep[client] = reply.held
        assert holding[client] == b.clients[client]
    for _ in range(2):
        for client in holding:
            excess = max(0, holding[client] - keep[client])
            reply = ask(b, client, returning=excess)
            holding[client] -= excess
            keep[client] = reply.held
    assert b.held <= b.limit


# -- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"client": "", "want": 1},
        {"client": "a", "want": -1},
        {"client": "a", "want": 1, "returning": -2},
        {"client": "a", "want": True},
        {"client": "a", "want": 0, "rate_limits": ("soon",)},
        {"client": "a", "want": 0, "rate_limits": (math.nan,)},
    ],
)
def test_a_malformed_request_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="LeaseRequest"):
        LeaseRequest(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_a_broker_limit_must_be_a_whole_number(limit: object) -> None:
    with pytest.raises(ValueError, match="limit must be a whole number"):
        PermitBroker(limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("term_s", [0, -1.0, math.inf, math.nan])
def test_a_broker_term_must_be_positive_and_finite(term_s: float) -> None:
    with pytest.raises(ValueError, match="term_s"):
        PermitBroker(4, term_s=term_s)


# -- the client over a local broker --------------------------------------------------------------


class Counting:
    """An exchange with a local broker that records every request."""

    def __init__(self, broker: PermitBroker) -> None:
        self.broker = broker
        self.requests: list[LeaseRequest] = []
        self.replies: list[LeaseReply] = []

    async def __call__(self, request: LeaseRequest) -> LeaseReply:
        self.requests.append(request)
        self.replies.append(self.broker.exchange(request))
        return self.replies[-1]


def client_of(broker: PermitBroker, **kwargs: object) -> tuple[SharedLimit, Counting]:
    exchange = Counting(broker)
    return SharedLimit(exchange, **kwargs), exchange  # type: ignore[arg-type]


def rate_limited(retry_after: float | None = None) -> CallFailure:
    return CallFailure(ErrorKind.RATE_LIMIT, "HTTP 429", status=429, retry_after=retry_after)


async def eventually(condition: Callable[[], bool]) -> None:
    """Wait (bounded) until ``condition()`` holds."""
    with anyio.fail_after(WAIT_S):
        while not condition():  # noqa: ASYNC110 - the state polled has no event to wait on
            await anyio.sleep(0.005)


async def run_calls(
    limits: list[SharedLimit], calls: int, work: Callable[[], Awaitable[None]]
) -> int:
    """``calls`` concurrent calls spread over ``limits``; returns the most run at once."""
    running = peak = 0

    async def one(limit: SharedLimit) -> None:
        nonlocal running, peak
        await limit.acquire(WAIT_S)
        running += 1
        peak = max(peak, running)
        try:
            await work()
        finally:
            running -= 1
            limit.release(None)

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            for i in range(calls):
                tg.start_soon(one, limits[i % len(limits)])
    return peak


@pytest.mark.anyio
async def test_no_more_calls_run_at_once_than_the_shared_limit() -> None:
    limit = SharedLimit.local(3)
    peak = await run_calls([limit], 40, lambda: anyio.sleep(0.002))
    await limit.aclose()
    assert peak == 3


@pytest.mark.anyio
async def test_two_clients_of_one_broker_stay_under_its_limit_together() -> None:
    b = PermitBroker(4)
    first, _ = client_of(b)
    second, _ = client_of(b)
    peak = await run_calls([first, second], 60, lambda: anyio.sleep(0.002))
    await first.aclose()
    await second.aclose()
    assert peak <= 4
    assert b.held == 0


@pytest.mark.anyio
async def test_a_freed_permit_is_reused_at_once_without_an_exchange() -> None:
    limit, exchange = client_of(PermitBroker(4, term_s=60.0))
    await limit.acquire(WAIT_S)
    exchanges = len(exchange.requests)
    for _ in range(20):
        limit.release(None)
        await limit.acquire(WAIT_S)
    assert len(exchange.requests) == exchanges
    limit.release(None)
    await limit.aclose()


@pytest.mark.anyio
async def test_queued_calls_reuse_the_permits_leased_for_the_first_ones() -> None:
    limit, exchange = client_of(PermitBroker(4, term_s=60.0))
    peak = await run_calls([limit], 40, lambda: anyio.sleep(0.002))
    await limit.aclose()
    assert peak == 4
    assert sum(reply.granted for reply in exchange.replies) == 4


@pytest.mark.anyio
async def test_a_lease_asks_for_what_the_queue_lacks_up_to_a_chunk() -> None:
    limit, exchange = client_of(PermitBroker(16), chunk=3)
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(limit.acquire, WAIT_S)
    assert [r.want for r in exchange.requests if r.want] == [3, 2]
    for _ in range(5):
        limit.release(None)
    await limit.aclose()


@pytest.mark.anyio
async def test_a_permit_nobody_waits_for_goes_back_to_the_broker() -> None:
    b = PermitBroker(4)
    limit, _ = client_of(b)
    await limit.acquire(WAIT_S)
    assert b.held == 1
    limit.release(None)
    await eventually(lambda: b.held == 0)
    assert limit.held == 0


@pytest.mark.anyio
async def test_successes_ride_on_the_next_exchange() -> None:
    limit, exchange = client_of(PermitBroker(4))
    for _ in range(3):
        await limit.acquire(WAIT_S)
        limit.release(None)
    await limit.aclose()
    assert sum(r.successes for r in exchange.requests) == 3


@pytest.mark.anyio
async def test_a_429_is_reported_at_once_and_pauses_its_client() -> None:
    b = PermitBroker(4)
    limit, exchange = client_of(b)
    await limit.acquire(WAIT_S)
    limit.release(rate_limited(retry_after=30.0))
    await eventually(lambda: any(r.rate_limits for r in exchange.requests))
    assert [r.rate_limits for r in exchange.requests if r.rate_limits] == [(30.0,)]
    assert b.paused_until > 0
    with pytest.raises(TimeoutError):  # the pause ends after the 5 s allowed: fails at once
        await limit.acquire(5.0)
    assert limit.in_use == 0


@pytest.mark.anyio
async def test_another_client_pauses_from_its_next_exchange() -> None:
    b = PermitBroker(4)
    limit, _ = client_of(b)
    other, _ = client_of(b)
    await limit.acquire(WAIT_S)
    limit.release(rate_limited(retry_after=30.0))
    await eventually(lambda: b.paused_until > 0)
    with pytest.raises(TimeoutError):  # the 30 s pause outlasts the second allowed
        await other.acquire(1.0)
    assert (other.in_use, other.waiting) == (0, 0)


@pytest.mark.anyio
async def test_a_cancelled_acquire_holds_nothing() -> None:
    b = PermitBroker(1)
    limit, _ = client_of(b)
    await limit.acquire(WAIT_S)
    with anyio.move_on_after(0.05):
        await limit.acquire(WAIT_S)
    assert (limit.in_use, limit.waiting) == (1, 0)
    limit.release(None)
    await limit.aclose()
    assert b.held == 0


@pytest.mark.anyio
async def test_acquire_times_out_when_no_permit_frees_and_holds_nothing() -> None:
    b = PermitBroker(1)
    holder, _ = client_of(b)
    limit, _ = client_of(b)
    await holder.acquire(WAIT_S)
    with pytest.raises(TimeoutError):
        await limit.acquire(0.2)  # the only permit is never released: no race
    assert (limit.in_use, limit.waiting) == (0, 0)
    holder.release(None)
    await holder.aclose()
    await limit.aclose()


@pytest.mark.anyio
async def test_a_client_over_its_share_gives_back_the_excess_as_calls_finish() -> None:
    b = PermitBroker(4)
    first, _ = client_of(b)
    second, _ = client_of(b)
    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(first.acquire, WAIT_S)
    async with anyio.create_task_group() as tg:
        tg.start_soon(second.acquire, WAIT_S)  # waits: all 4 are held by the first
        await eventually(lambda: b.clients.get(second.client) == 0)
        tg.start_soon(first.acquire, WAIT_S)  # queued: makes the first one exchange
        for _ in range(2):
            first.release(None)
    # The first one's share is 2: its queued call got one of the two freed permits (3 in
    # use), and the second client got the other.
    assert (first.in_use, second.in_use) == (3, 1)
    assert b.held <= 4
    for _ in range(3):
        first.release(None)
    second.release(None)
    await first.aclose()
    await second.aclose()
    assert b.held == 0


@pytest.mark.anyio
async def test_a_client_holding_a_permit_renews_its_term_and_is_not_reclaimed() -> None:
    b = PermitBroker(1, term_s=0.5)
    holder, exchange = client_of(b)
    await holder.acquire(WAIT_S)
    await anyio.sleep(DEAD_AFTER_TERMS * 0.5 + 0.5)  # a long call
    other, _ = client_of(b)
    with pytest.raises(TimeoutError):
        await other.acquire(0.5)
    assert b.clients[holder.client] == 1
    assert len(exchange.requests) >= 3  # renewals
    holder.release(None)
    await holder.aclose()
    await other.aclose()


@pytest.mark.anyio
async def test_aclose_gives_every_permit_back() -> None:
    b = PermitBroker(8)
    limit, _ = client_of(b)
    for _ in range(3):
        await limit.acquire(WAIT_S)
    for _ in range(3):
        limit.release(None)
    await limit.aclose()
    assert (b.held, limit.held) == (0, 0)


@pytest.mark.anyio
async def test_a_client_leases_again_after_aclose() -> None:
    b = PermitBroker(2)
    limit, _ = client_of(b)
    await limit.acquire(WAIT_S)
    limit.release(None)
    await limit.aclose()
    await limit.acquire(WAIT_S)
    assert b.held == 1
    limit.release(None)
    await limit.aclose()


@pytest.mark.anyio
async def test_a_failed_exchange_fails_the_queued_call_with_a_clear_error() -> None:
    async def broken(request: LeaseRequest) -> LeaseReply:
        raise OSError("the broker is gone")

    limit = SharedLimit(broken, name="cluster")
    with pytest.raises(SharedLimitError, match=r"'cluster'.*the broker is gone"):
        await limit.acquire(WAIT_S)
    with pytest.raises(SharedLimitError):  # again, at once
        await limit.acquire(WAIT_S)
    assert (limit.in_use, limit.waiting) == (0, 0)


@pytest.mark.anyio
async def test_an_unreachable_server_fails_with_what_to_check() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    limit = SharedLimit.connect(f"127.0.0.1:{port}")
    with pytest.raises(SharedLimitError, match="check the address and that the server is running"):
        await limit.acquire(WAIT_S)
    await limit.aclose()


@pytest.mark.anyio
async def test_a_client_in_use_by_one_loop_refuses_another() -> None:
    limit = SharedLimit.local(2)
    await limit.acquire(WAIT_S)
    errors: list[BaseException] = []

    def other_loop() -> None:
        try:
            anyio.run(limit.acquire, WAIT_S)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other_loop)
    thread.start()
    await anyio.to_thread.run_sync(thread.join, WAIT_S)
    assert len(errors) == 1
    assert isinstance(errors[0], RuntimeError)
    assert "make one per event loop" in str(errors[0])
    limit.release(None)
    await limit.aclose()


@pytest.mark.parametrize("address", ["7007", "host:", "host:70000", ":7007", "host:port"])
def test_a_malformed_address_is_refused_with_an_example(address: str) -> None:
    with pytest.raises(ConfigError, match="host:port"):
        SharedLimit.connect(address)


def test_chunk_must_be_a_whole_number() -> None:
    with pytest.raises(ValueError, match="chunk"):
        SharedLimit.local(4, chunk=0)


def test_a_shared_limit_reprs_its_state() -> None:
    assert repr(SharedLimit.local(4, name="openai")) == (
        "SharedLimit(name='openai', chunk=4, held=0, in_use=0, limit=None)"
    )


# -- attached to a vendor ------------------------------------------------------------------------


def test_set_vendor_limits_attaches_and_detaches_a_shared_limit(vendor_registry: None) -> None:
    shared = SharedLimit.local(4, name="cluster")
    config = set_vendor_limits("openai", shared=shared)
    assert config.shared is shared
    assert get_vendor("openai").shared is shared
    assert "shared=SharedLimit(name='cluster'" in repr(config)
    assert set_vendor_limits("openai", max_concurrency=2).shared is shared  # kept
    assert set_vendor_limits("openai", shared=None).shared is None


def test_two_shared_limits_compare_by_identity(vendor_registry: None) -> None:
    first = set_vendor_limits("openai", shared=SharedLimit.local(4))
    second = set_vendor_limits("openai", shared=SharedLimit.local(4))
    assert first != second
    assert second == get_vendor("openai")


def test_shared_must_be_a_shared_limit(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match=r"shared must be a cross_judge\.shared_limit"):
        set_vendor_limits("openai", shared=4)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="shared must be"):
        register_vendor("acme", "https://acme.test/v1", shared="yes")


@pytest.mark.anyio
async def test_a_gate_holds_a_permit_per_attempt_and_reports_its_outcome() -> None:
    b = PermitBroker(2)
    shared, exchange = client_of(b)
    config = VendorConfig("v", "https://v.test/v1", None, requires_api_key=False, shared=shared)
    gates = [VendorGate(config, "m") for _ in range(3)]
    await gates[0].enter(WAIT_S)
    await gates[1].enter(WAIT_S)
    assert shared.in_use == 2
    with pytest.raises(TimeoutError):
        await gates[2].enter(0.2)  # both permits in use, never released meanwhile
    gates[0].leave(None)
    gates[1].leave(rate_limited())
    assert shared.in_use == 0
    await eventually(lambda: b.limit == 1)
    await shared.aclose()
    assert sum(r.successes for r in exchange.requests) == 1


@pytest.mark.anyio
async def test_a_gate_with_local_limits_frees_its_slot_when_the_shared_permit_times_out() -> None:
    shared = SharedLimit.local(1)
    config = VendorConfig(
        "v", "https://v.test/v1", None, requires_api_key=False, max_concurrency=4, shared=shared
    )
    holder, waiting = VendorGate(config), VendorGate(config)
    await holder.enter(WAIT_S)
    with pytest.raises(TimeoutError):
        await waiting.enter(0.2)
    from cross_judge.limits.gate import limiter_for

    endpoint = limiter_for(config)
    assert endpoint is not None
    assert endpoint.in_flight == 1  # the holder's only
    holder.leave(None)
    await shared.aclose()


@pytest.mark.anyio
async def test_a_gate_without_a_shared_limit_takes_no_permit() -> None:
    shared = SharedLimit.local(1)
    with_shared = VendorConfig(
        "v", "https://v.test/v1", None, requires_api_key=False, shared=shared
    )
    without = VendorConfig("w", "https://w.test/v1", None, requires_api_key=False)
    gate = VendorGate(without)
    await gate.enter(WAIT_S)
    assert shared.in_use == 0
    gate.leave(None)
    other = VendorGate(with_shared)
    await other.enter(WAIT_S)
    assert shared.in_use == 1
    other.leave(None)
    await shared.aclose()
