"""The permit broker's rules (cross_judge.limits._broker), on a fake clock."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings, strategies as st

from cross_judge.limits._broker import DEAD_AFTER_TERMS, LeaseReply, LeaseRequest, PermitBroker
from cross_judge.limits._gate import PAUSE_BASE_S, pause_after_rate_limit
from cross_judge.transport._retry import MAX_RETRY_AFTER_S


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
@example(  # "a" is refused while wanting more: it still ranks first at its next exchange
    limit=4,
    steps=[("b", 1, False), ("a", 3, False), ("a", 0, True)]
    + [("a", 0, False)] * 9
    + [("a", 1, True)],
)
def test_clients_that_give_back_what_they_are_told_stay_within_the_limit(
    limit: int, steps: list[tuple[str, int, bool]]
) -> None:
    # Obedient clients: each returns whatever it holds beyond what the broker lets it keep,
    # at its next exchange. After a 429 every client is brought back under the new limit
    # once each has exchanged three times: a client whose last request wanted more than it
    # got still counts as waiting, which ranks it first for a share, until its next exchange
    # (once to stop waiting, once to learn its share, once to return the rest).
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
    for _ in range(3):
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
