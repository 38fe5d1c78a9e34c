"""Ensemble.judge over real HTTP: concurrency, order, early stop, deadline, cancellation.

No outcome depends on the machine's speed: concurrency is shown by requests held open at
the vendor (not by latencies overlapping), a critic that must not finish sleeps 30 s
while the ensemble's deadline is 5 s, and a critic that must finish has that long.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from cross_judge import ConfigError, Critic, Ensemble, ErrorKind, PromptError
from cross_judge.testing import Persona, Reply, VendorServer

from ..waits import SAFETY_NET_S

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

GOLD = {"Felines (see also: Cats)": "MERGE"}


@pytest.fixture(scope="module")
def panel_server() -> Iterator[VendorServer]:
    personas = [
        Persona("fast-1", accuracy=1.0, latency=0.02),
        Persona("fast-2", accuracy=1.0, latency=0.04),
        Persona("fast-3", accuracy=1.0, latency=0.06),
        Persona("slow-1", accuracy=0.0, latency=30.0),
        Persona("slow-2", accuracy=0.0, latency=30.0),
        Persona("mid", accuracy=1.0, latency=0.3),
    ]
    with VendorServer(personas, gold=GOLD) as srv:
        yield srv


def critic(server: VendorServer, model: str, **kwargs: object) -> Critic:
    return Critic(name=model, model=model, vendor="custom", base_url=server.url, **kwargs)


WAIT_S = SAFETY_NET_S
"""Bound for what normally takes milliseconds (a loaded CI machine can stall seconds)."""


async def in_flight_reaches(server: VendorServer, count: int) -> bool:
    """Poll (the counter has no event), up to ``WAIT_S``: does the vendor reach ``count``
    requests in flight?"""
    with anyio.move_on_after(WAIT_S):
        while server.stats()["in_flight"] != count:  # noqa: ASYNC110 - nothing to wait on
            await anyio.sleep(0.005)
        return True
    return False


async def test_critics_run_concurrently(panel_server: VendorServer, model: str) -> None:
    # Requests that never answer: all four held at the vendor at once proves concurrency.
    models = [f"{model}-{i}" for i in range(4)]
    for m in models:
        panel_server.always(m, Reply.hang())
    try:
        async with (
            Ensemble([critic(panel_server, m) for m in models]) as ensemble,
            anyio.create_task_group() as group,
        ):
            group.start_soon(ensemble.judge, "item")
            reached = await in_flight_reaches(panel_server, len(models))
            group.cancel_scope.cancel()
    finally:
        for m in models:
            panel_server.always(m, None)
    assert reached, f"never {len(models)} requests in flight: {panel_server.stats()}"
    assert await in_flight_reaches(panel_server, 0)


async def test_verdicts_come_back_in_critic_order(panel_server: VendorServer) -> None:
    models = ["mid", "fast-3", "fast-1", "fast-2"]  # they usually finish in another order
    async with Ensemble([critic(panel_server, m) for m in models]) as ensemble:
        result = await ensemble.judge("Felines (see also: Cats)")
    assert [v.critic_id for v in result.verdicts] == models
    assert (result.consensus, result.n_valid, result.agreement_pct) == ("MERGE", 4, 1.0)


async def test_early_stop_cancel_cancels_the_slow_critics_once_three_of_five_agree(
    panel_server: VendorServer,
) -> None:
    models = ["fast-1", "slow-1", "fast-2", "slow-2", "fast-3"]
    critics = [critic(panel_server, m, timeout=60) for m in models]
    async with Ensemble(critics, early_stop="cancel") as ensemble:
        result = await ensemble.judge("Felines (see also: Cats)")
    assert result.consensus == "MERGE"
    assert result.calls_saved == 2 and result.n_valid == 3 and result.n_errors == 0
    skipped = [v for v in result.verdicts if v.kind == "SKIPPED"]
    assert [v.critic_id for v in skipped] == ["slow-1", "slow-2"]
    assert all(v.error_kind is ErrorKind.EARLY_STOP for v in skipped)
    assert result.agreement_pct == 1.0 and result.dissenters == []
    assert await in_flight_reaches(panel_server, 0)  # the server saw both disconnect
    full = Ensemble(critics[::2]).aggregate_verdicts(result.verdicts[::2], query_id="x")
    assert full.consensus == result.consensus


def requests_by_model(server: VendorServer) -> dict[str, int]:
    return dict(server.stats()["by_model"])


async def test_staged_early_stop_asks_three_of_five_when_they_agree(
    panel_server: VendorServer,
) -> None:
    models = ["fast-1", "fast-2", "fast-3", "slow-1", "slow-2"]
    panel_server.reset_stats()
    async with Ensemble([critic(panel_server, m) for m in models], early_stop=True) as e:
        result = await e.judge("Felines (see also: Cats)")
    assert requests_by_model(panel_server) == {"fast-1": 1, "fast-2": 1, "fast-3": 1}
    assert result.consensus == "MERGE" and result.calls_saved == 2
    skipped = [v for v in result.verdicts if v.kind == "SKIPPED"]
    assert [v.critic_id for v in skipped] == ["slow-1", "slow-2"]
    assert all("not asked" in (v.error or "") and v.attempts == 0 for v in skipped)


async def test_staged_early_stop_asks_more_only_while_undecided(
    panel_server: VendorServer,
) -> None:
    # The first wave splits 2-1 (wrong-fast answers KEEP), so one more critic is asked.
    panel_server.always("wrong-fast", Reply.content('{"kind": "KEEP"}'))
    try:
        models = ["fast-1", "wrong-fast", "fast-2", "fast-3", "mid"]
        panel_server.reset_stats()
        async with Ensemble([critic(panel_server, m) for m in models], early_stop="staged") as e:
            result = await e.judge("Felines (see also: Cats)")
    finally:
        panel_server.always("wrong-fast", None)
    assert requests_by_model(panel_server) == {
        "fast-1": 1,
        "wrong-fast": 1,
        "fast-2": 1,
        "fast-3": 1,
    }
    assert result.consensus == "MERGE" and result.calls_saved == 1
    assert result.verdicts[-1].critic_id == "mid" and result.verdicts[-1].kind == "SKIPPED"


async def test_staged_early_stop_replaces_a_failed_critic(panel_server: VendorServer) -> None:
    panel_server.always("broken", Reply.status(400))
    try:
        models = ["fast-1", "broken", "fast-2", "fast-3", "mid"]
        panel_server.reset_stats()
        async with Ensemble([critic(panel_server, m) for m in models], early_stop=True) as e:
            result = await e.judge("Felines (see also: Cats)")
    finally:
        panel_server.always("broken", None)
    assert result.consensus == "MERGE" and result.n_errors == 1 and result.n_valid == 3
    assert "mid" not in requests_by_model(panel_server)


async def test_staged_unanimous_stops_at_the_first_dissent(panel_server: VendorServer) -> None:
    panel_server.always("dissent", Reply.content('{"kind": "KEEP"}'))
    try:
        models = ["fast-1", "dissent", "fast-2", "fast-3"]
        panel_server.reset_stats()
        critics = [critic(panel_server, m) for m in models]
        async with Ensemble(critics, voting="unanimous", early_stop=True) as staged:
            result = await staged.judge("Felines (see also: Cats)")
    finally:
        panel_server.always("dissent", None)
    assert requests_by_model(panel_server) == {"fast-1": 1, "dissent": 1}
    assert result.consensus == "UNCLEAR" and result.calls_saved == 2


async def test_staged_skips_cost_nothing_when_the_price_is_known(
    panel_server: VendorServer,
) -> None:
    from cross_judge import pricing

    pricing.register_price("*", vendor="custom", input=1.0, output=1.0)
    try:
        models = ["fast-1", "fast-2", "fast-3", "slow-1", "slow-2"]
        async with Ensemble([critic(panel_server, m) for m in models], early_stop=True) as e:
            result = await e.judge("Felines (see also: Cats)")
    finally:
        pricing._clear_registered()
    assert all(v.cost_usd == 0.0 for v in result.verdicts if v.kind == "SKIPPED")
    assert result.cost_usd == sum(v.cost_usd or 0.0 for v in result.verdicts)


def test_early_stop_values_are_checked() -> None:
    with pytest.raises(ConfigError, match="early_stop must be False, True, 'staged' or 'cancel'"):
        Ensemble([Critic(name="a", model="m", api_key="k")], early_stop="sometimes")  # type: ignore[arg-type]


async def test_deadline_turns_unfinished_critics_into_timeout_errors(
    panel_server: VendorServer,
) -> None:
    # The deadline must let fast-1 answer (in milliseconds, or seconds on a loaded
    # machine) and cut slow-1 (30 s): 5 s does both whatever the load.
    critics = [critic(panel_server, m, timeout=60) for m in ["fast-1", "slow-1"]]
    async with Ensemble(critics, deadline=5.0) as ensemble:
        result = await ensemble.judge("Felines (see also: Cats)")
    fast, slow = result.verdicts
    assert fast.kind == "MERGE"
    assert slow.kind == "ERROR" and slow.error_kind is ErrorKind.TIMEOUT
    assert "deadline" in (slow.error or "") and result.n_errors == 1
    assert await in_flight_reaches(panel_server, 0)


async def test_cancelling_the_caller_cancels_every_call(
    panel_server: VendorServer, model: str
) -> None:
    models = [f"{model}-{i}" for i in range(2)]
    for m in models:
        panel_server.always(m, Reply.hang())
    try:
        async with Ensemble([critic(panel_server, m, timeout=60) for m in models]) as ensemble:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(ensemble.judge, "item")
                    assert await in_flight_reaches(panel_server, 2)
                    scope.cancel()
    finally:
        for m in models:
            panel_server.always(m, None)
    assert scope.cancelled_caught
    assert await in_flight_reaches(panel_server, 0)


async def test_template_mistake_raises_before_any_critic_is_billed(
    panel_server: VendorServer,
) -> None:
    good = critic(panel_server, "fast-1")
    needs_rubric = critic(panel_server, "fast-2", prompt_template="{query} per {rubric}")
    panel_server.reset_stats()
    with pytest.raises(PromptError, match="rubric"):
        await Ensemble([good, needs_rubric]).judge("item")
    assert panel_server.stats()["requests"] == 0


async def test_revote_calls_no_model(panel_server: VendorServer) -> None:
    critics = [critic(panel_server, m) for m in ["fast-1", "fast-2", "mid"]]
    async with Ensemble(critics) as ensemble:
        result = await ensemble.judge("Felines (see also: Cats)")
        before = panel_server.stats()["requests"]
        again = ensemble.revote(result, "first_disagreement")
    assert panel_server.stats()["requests"] == before
    assert again.voting == "first_disagreement" and again.verdicts == result.verdicts


def test_judge_sync_over_real_http(panel_server: VendorServer) -> None:
    ensemble = Ensemble([critic(panel_server, m) for m in ["fast-1", "fast-2"]])
    result = ensemble.judge_sync("Felines (see also: Cats)", meta={"batch": 1})
    assert result.consensus == "MERGE" and result.meta == {"batch": 1}


async def test_failures_are_counted_not_raised(panel_server: VendorServer) -> None:
    panel_server.script("fast-2", Reply.html())
    critics = [critic(panel_server, m) for m in ["fast-1", "fast-2", "fast-3"]]
    async with Ensemble(critics) as ensemble:
        result = await ensemble.judge("Felines (see also: Cats)")
    assert (result.n_valid, result.n_errors, result.consensus) == (2, 1, "MERGE")
    assert result.usage.total_tokens > 0
