"""The shared limit's client (cross_judge.limits._client) over a local broker, and attached
to a vendor's gate."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Awaitable, Callable

import anyio
import pytest

from cross_judge import ConfigError, ErrorKind
from cross_judge.errors import SharedLimitError
from cross_judge.limits._broker import DEAD_AFTER_TERMS, LeaseReply, LeaseRequest, PermitBroker
from cross_judge.limits._client import SharedLimit
from cross_judge.limits._gate import VendorGate
from cross_judge.transport import CallFailure
from cross_judge.vendors import VendorConfig, get_vendor, register_vendor, set_vendor_limits

from ...waits import SAFETY_NET_S

WAIT_S = SAFETY_NET_S  # a safety net: nothing here should take near this long


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
    # The broker's clock moves on by most of a term each time the holder has renewed by
    # itself, so a slow machine delaying a renewal cannot look like a dead client, and a
    # client that stops renewing fails the wait instead.
    term = 0.5
    now = [0.0]
    b = PermitBroker(1, term_s=term, clock=lambda: now[0])
    holder, exchange = client_of(b)
    await holder.acquire(WAIT_S)
    for _ in range(2 * DEAD_AFTER_TERMS):  # a long call: past when a silent client is dead
        sent = len(exchange.requests)
        await eventually(lambda: len(exchange.requests) > sent)  # noqa: B023 - waited here
        now[0] += 0.9 * term
    assert now[0] > DEAD_AFTER_TERMS * term
    other, _ = client_of(b)
    with pytest.raises(TimeoutError):
        await other.acquire(0.5)  # the broker's clock stands still: only a renewal frees it
    assert b.clients[holder.client] == 1
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
    from cross_judge.limits._gate import limiter_for

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


def test_the_public_classes_show_and_pickle_at_the_documented_path() -> None:
    import cross_judge.shared_limit as public

    classes = (
        public.LeaseReply,
        public.LeaseRequest,
        public.LimitServer,
        public.PermitBroker,
        public.SharedLimit,
    )
    assert {cls.__module__ for cls in classes} == {"cross_judge.shared_limit"}
    assert public.main.__module__ == "cross_judge.shared_limit"
    request = public.LeaseRequest("a", 1, rate_limits=(None, 2.0))
    pickled = pickle.dumps(request)
    assert b"cross_judge.shared_limit" in pickled
    assert pickle.loads(pickled) == request
