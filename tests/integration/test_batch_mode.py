"""Batch mode (``judge_many(mode="batch")``) end to end against the simulated vendor's batch
endpoints: the openai / anthropic SDKs, httpx, a socket, the vendor's batch files, parsing,
voting. Batches end after a counted number of polls (or when a test ends them), so no
outcome here depends on the machine's speed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from cross_judge import BatchOptions, Critic, Ensemble, register_price
from cross_judge.batch import BatchResult
from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport import CallFailure
from cross_judge.transport._batch_codecs import request_id
from cross_judge.transport._batches import poll

from ..waits import SAFETY_NET_S

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

KEY = "sk-batch-mode-secret-5d4c3b2a"
MODELS = ("bm-a", "bm-b", "bm-c")
ITEMS = [{"id": f"item/{n} with spaces ✓", "query": f"candidate category {n}"} for n in range(24)]
FAST = {"poll_s": 0.01, "max_poll_s": 0.05}
WAIT_S = SAFETY_NET_S


@pytest.fixture
def server() -> Iterator[VendorServer]:
    personas = [Persona(m, accuracy=0.75) for m in MODELS]
    with VendorServer(personas, api_key=KEY, batch_polls=2) as running:
        yield running


@pytest.fixture(autouse=True)
def prices() -> None:
    for model in MODELS:
        register_price(model, vendor="custom", input=2.0, output=8.0, batch=0.5)
        register_price(model, vendor="anthropic", input=2.0, output=8.0, batch=0.5)


def critic(server: VendorServer, model: str, *, anthropic: bool = False) -> Critic:
    return Critic(
        name=model,
        model=model,
        vendor="anthropic" if anthropic else "custom",
        base_url=server.anthropic_url if anthropic else server.url,
        api_key=KEY,
        prompt="taxonomy-review@1",
    )


def panel(server: VendorServer, *, anthropic: bool = False, **kwargs: Any) -> Ensemble:
    return Ensemble([critic(server, m, anthropic=anthropic) for m in MODELS], **kwargs)


def options(**kwargs: Any) -> BatchOptions:
    kwargs.setdefault("vendors", {"custom", "anthropic"})
    return BatchOptions(**(FAST | kwargs))


def votes(result: BatchResult) -> list[tuple[str, list[str]]]:
    return [(r.consensus, [v.kind for v in r.verdicts]) for r in result.verdicts]


def custom_id(judge: Critic, item: dict[str, str]) -> str:
    request = judge.build_request(item["query"])
    return request_id(item["id"], judge.name, variant=request.cache_key(judge.endpoint()))


def submitted(ledger: Path) -> int:
    return ledger.read_text().count('"submitted"') if ledger.exists() else 0


def batch_requests(server: VendorServer) -> int:
    return sum(server.stats()["batch_requests"].values())


def batches(server: VendorServer) -> int:
    return sum(server.stats()["batches"].values())


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_batch_mode_gives_the_live_verdicts_at_half_the_price(
    server: VendorServer, protocol: str
) -> None:
    anthropic = protocol == "anthropic"
    async with panel(server, anthropic=anthropic) as ensemble:
        live = await ensemble.judge_many(ITEMS)
    server.reset_stats()
    async with panel(server, anthropic=anthropic) as ensemble:
        batched = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    assert votes(batched) == votes(live)
    assert [r.query_id for r in batched.verdicts] == [i["id"] for i in ITEMS]
    assert server.stats()["requests"] == 0  # no live call at all
    assert batch_requests(server) == len(ITEMS) * len(MODELS)
    assert live.cost_usd is not None and batched.cost_usd is not None
    assert batched.cost_usd == pytest.approx(live.cost_usd * 0.5)


async def test_one_openai_batch_per_model(server: VendorServer) -> None:
    async with panel(server) as ensemble:
        await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    assert server.stats()["batches"] == {"openai": len(MODELS), "anthropic": 0}


async def test_critics_on_vendors_without_a_batch_api_run_live_in_the_same_job(
    server: VendorServer,
) -> None:
    mixed = Ensemble(
        [critic(server, "bm-a", anthropic=True), critic(server, "bm-b"), critic(server, "bm-c")]
    )
    async with mixed:
        result = await mixed.judge_many(ITEMS, mode="batch", batch=options(vendors={"anthropic"}))
    stats = server.stats()
    assert stats["batch_requests"] == {"openai": 0, "anthropic": len(ITEMS)}
    assert stats["requests"] == 2 * len(ITEMS)  # the two custom critics, live
    assert all(r.n_valid == 3 for r in result.verdicts)


async def test_staged_early_stop_submits_only_the_undecided_items_in_round_two(
    server: VendorServer,
) -> None:
    async with panel(server, early_stop=True) as ensemble:
        result = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    third = [r for r in result.verdicts if r.verdicts[2].error_kind is not ErrorKind.EARLY_STOP]
    undecided = [r for r in result.verdicts if r.verdicts[0].kind != r.verdicts[1].kind]
    assert third == undecided  # the third critic was asked exactly where the first two split
    assert batch_requests(server) == 2 * len(ITEMS) + len(undecided)
    # Round 1: one batch per model of the first two critics; round 2: the third's.
    assert batches(server) == 2 + (1 if undecided else 0)


async def test_failed_and_expired_requests_become_error_verdicts_of_their_kind(
    server: VendorServer,
) -> None:
    ensemble = panel(server)
    first, second = ITEMS[0], ITEMS[1]
    server.fail_batch_request(custom_id(ensemble.critics[0], first), status=500, message="boom")
    server.expire_batch_request(custom_id(ensemble.critics[1], second))
    async with ensemble:
        result = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    failed = result.verdicts[0].verdicts[0]
    expired = result.verdicts[1].verdicts[1]
    assert (failed.kind, failed.error_kind) == ("ERROR", ErrorKind.SERVER)
    assert "boom" in (failed.error or "")
    assert (expired.kind, expired.error_kind) == ("ERROR", ErrorKind.BATCH)
    assert len(result) == len(ITEMS)  # no item lost
    others = [v for r in result.verdicts for v in r.verdicts if v not in (failed, expired)]
    assert all(v.is_valid for v in others)


async def test_a_batch_the_vendor_refuses_gives_error_verdicts_not_an_exception(
    server: VendorServer,
) -> None:
    wrong_key = Ensemble(
        [
            Critic(
                name="bm-a",
                model="bm-a",
                vendor="custom",
                base_url=server.url,
                api_key="sk-wrong-key-0000",
                prompt="taxonomy-review@1",
            )
        ]
    )
    async with wrong_key:
        result = await wrong_key.judge_many(ITEMS[:3], mode="batch", batch=options())
    kinds = {(v.kind, v.error_kind) for r in result.verdicts for v in r.verdicts}
    assert kinds == {("ERROR", ErrorKind.AUTH)}
    assert all(
        "sk-wrong-key-0000" not in (v.error or "") for r in result.verdicts for v in r.verdicts
    )


async def test_a_poll_that_fails_transiently_is_tried_again(
    server: VendorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cross_judge.transport as batches_module  # the provider jobs call it from here

    real_poll = batches_module.poll
    failed: list[str] = []

    async def flaky_poll(*args: Any) -> Any:
        if len(failed) < 2:
            failed.append("503")
            raise CallFailure(ErrorKind.SERVER, "HTTP 503: try again")
        return await real_poll(*args)

    monkeypatch.setattr(batches_module, "poll", flaky_poll)
    async with panel(server) as ensemble:
        result = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    assert failed == ["503", "503"]
    assert all(r.n_valid == 3 for r in result.verdicts)


async def test_a_poll_refused_for_good_fails_the_batchs_requests(
    server: VendorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cross_judge.transport as batches_module  # the provider jobs call it from here

    async def refused(*args: Any) -> Any:
        raise CallFailure(ErrorKind.AUTH, "HTTP 401: key revoked")

    monkeypatch.setattr(batches_module, "poll", refused)
    async with panel(server) as ensemble:
        result = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    kinds = {(v.kind, v.error_kind) for r in result.verdicts for v in r.verdicts}
    assert kinds == {("ERROR", ErrorKind.AUTH)}
    assert len(result) == len(ITEMS)


async def test_cached_answers_are_not_submitted_again(server: VendorServer, tmp_path: Path) -> None:
    from cross_judge import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite")
    async with panel(server, cache=cache) as ensemble:
        first = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    server.reset_stats()
    async with panel(server, cache=cache) as ensemble:
        again = await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    assert batches(server) == 0 and server.stats()["requests"] == 0
    assert votes(again) == votes(first)
    assert all(v.cached for r in again.verdicts for v in r.verdicts)


async def test_the_deadline_sends_what_is_not_back_live(tmp_path: Path) -> None:
    personas = [Persona(m, accuracy=0.75) for m in MODELS]
    # The batches never end by themselves; the deadline must end the wait.
    with VendorServer(personas, api_key=KEY, batch_polls=10**9) as server:
        ledger = tmp_path / "run.batches.jsonl"
        async with panel(server) as ensemble:
            result = await ensemble.judge_many(
                ITEMS, mode="batch", batch=options(deadline_s=2.0, ledger=ledger)
            )
        assert all(r.n_valid == 3 for r in result.verdicts)
        assert server.stats()["requests"] == len(ITEMS) * len(MODELS)  # asked live instead
        config = ensemble.critics[0].endpoint()
        for line in ledger.read_text().splitlines():  # every batch submitted was cancelled
            state = await poll(config, KEY, json.loads(line)["batch_id"])
            assert state.status in ("cancelling", "cancelled")


async def test_a_batch_whose_submission_returns_after_the_deadline_is_cancelled_and_asked_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each submission answers after the deadline has passed (a slow vendor, or a loaded
    # machine): the batch must still be cancelled and its requests asked live, not
    # polled until a vendor ends it. Timers fire in the order of their times, so the
    # deadline's comes first however busy the machine is. The deadline is long enough that
    # the submissions start before it even on a loaded machine (a deadline passed before
    # any submission asks every request live and submits nothing, another path).
    import cross_judge.transport as transport

    deadline_s, late_s = 2.0, 2.6
    real_submit = transport.submit

    async def late_submit(*args: Any, **kwargs: Any) -> str:
        await anyio.sleep(late_s)
        return await real_submit(*args, **kwargs)

    monkeypatch.setattr(transport, "submit", late_submit)  # the face the runner imports from
    personas = [Persona(m, accuracy=0.75) for m in MODELS]
    with VendorServer(personas, api_key=KEY, batch_polls=10**9) as server:
        ledger = tmp_path / "run.batches.jsonl"
        with anyio.fail_after(WAIT_S):
            async with panel(server) as ensemble:
                result = await ensemble.judge_many(
                    ITEMS, mode="batch", batch=options(deadline_s=deadline_s, ledger=ledger)
                )
        assert all(r.n_valid == 3 for r in result.verdicts)
        assert submitted(ledger) == len(MODELS)
        config = ensemble.critics[0].endpoint()
        for line in ledger.read_text().splitlines():
            record = json.loads(line)
            if record["event"] == "submitted":
                state = await poll(config, KEY, record["batch_id"])
                assert state.status in ("cancelling", "cancelled")


async def test_the_ledger_records_each_batch_without_the_key(
    server: VendorServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "run.batches.jsonl"
    async with panel(server) as ensemble:
        await ensemble.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
    text = ledger.read_text()
    assert KEY not in text
    records = [json.loads(line) for line in text.splitlines()]
    submitted = [r for r in records if r["event"] == "submitted"]
    ended = [r for r in records if r["event"] == "ended"]
    assert len(submitted) == len(MODELS) and len(ended) == len(MODELS)
    ids = {i for r in submitted for i in r["custom_ids"]}
    assert ids == {custom_id(c, item) for c in ensemble.critics for item in ITEMS}


async def test_a_job_stopped_while_polling_resumes_from_the_ledger_without_resubmitting(
    tmp_path: Path,
) -> None:
    personas = [Persona(m, accuracy=0.75) for m in MODELS]
    ledger = tmp_path / "run.batches.jsonl"
    with VendorServer(personas, api_key=KEY, batch_polls=10**9) as server:
        async with panel(server) as ensemble, anyio.create_task_group() as group:
            group.start_soon(
                lambda: ensemble.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
            )
            with anyio.fail_after(WAIT_S):  # a safety net: the batches are submitted at once
                while submitted(ledger) < len(MODELS):  # noqa: ASYNC110 - a file to watch
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()  # the job dies while its batches are pending
        assert batches(server) == len(MODELS)
        server.complete_batches()
        async with panel(server) as ensemble:
            resumed = await ensemble.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
        assert batches(server) == len(MODELS)  # nothing submitted twice
        assert batch_requests(server) == len(ITEMS) * len(MODELS)
        assert all(r.n_valid == 3 for r in resumed.verdicts)


async def test_requests_that_failed_in_a_recorded_batch_are_submitted_again(
    server: VendorServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "run.batches.jsonl"
    ensemble = panel(server)
    failing = custom_id(ensemble.critics[2], ITEMS[5])
    server.fail_batch_request(failing, status=503)
    async with ensemble:
        first = await ensemble.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
    assert first.verdicts[5].verdicts[2].kind == "ERROR"
    server.reset_stats()
    async with panel(server) as again:
        second = await again.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
    assert batch_requests(server) == 1  # only the failed one; the rest re-fetched
    assert batches(server) == 1
    assert all(r.n_valid == 3 for r in second.verdicts)
    assert votes(second)[:5] == votes(first)[:5]


async def test_both_orders_and_samples_each_get_a_request_of_their_own() -> None:
    personas = [Persona(m, accuracy=0.7, position_bias=0.4) for m in MODELS[:2]]
    pairs = [
        {"id": f"pair {n}", "query": f"Task {n}", "a": f"good answer {n}", "b": f"poor {n}"}
        for n in range(10)
    ]
    better = {f"Task {n}": f"good answer {n}" for n in range(10)}
    with VendorServer(personas, api_key=KEY, batch_polls=1, better=better) as server:

        def pairwise() -> Ensemble:
            critics = [
                Critic(
                    name=m,
                    model=m,
                    vendor="custom",
                    base_url=server.url,
                    api_key=KEY,
                    prompt="pairwise",
                    samples=3,
                    temperature=0.7,
                )
                for m in MODELS[:2]
            ]
            return Ensemble(critics, order="both")

        async with pairwise() as ensemble:
            live = await ensemble.judge_many(pairs)
        server.reset_stats()
        async with pairwise() as ensemble:
            batched = await ensemble.judge_many(pairs, mode="batch", batch=options())
        assert batch_requests(server) == len(pairs) * 2 * 2 * 3  # critics x orders x samples
    assert votes(batched) == votes(live)
    assert [r.verdicts[0].answers for r in batched.verdicts] == [
        r.verdicts[0].answers for r in live.verdicts
    ]


async def test_a_cascade_submits_the_next_tier_only_for_the_items_it_escalates(
    server: VendorServer,
) -> None:
    from cross_judge import Cascade, Escalation

    def cascade() -> Cascade:
        return Cascade(
            [
                Ensemble([critic(server, m) for m in MODELS[:2]]),
                Ensemble([critic(server, MODELS[2])]),
            ],
            escalate=Escalation(agreement_below=1.0),
        )

    async with cascade() as judge:
        live = await judge.judge_many(ITEMS)
    server.reset_stats()
    async with cascade() as judge:
        batched = await judge.judge_many(ITEMS, mode="batch", batch=options())
    escalated = sum(1 for r in batched.verdicts if len(r.verdicts) == 3)
    assert [r.consensus for r in batched.verdicts] == [r.consensus for r in live.verdicts]
    assert batch_requests(server) == 2 * len(ITEMS) + escalated
    assert batches(server) == 2 + (1 if escalated else 0)  # round 2: tier 2's model only


async def test_stream_in_batch_mode_hands_out_every_result(server: VendorServer) -> None:
    async with panel(server) as ensemble:
        got = [r async for r in ensemble.stream(ITEMS, mode="batch", batch=options())]
    assert sorted(r.query_id for r in got) == sorted(i["id"] for i in ITEMS)


async def test_a_small_window_judges_every_item_in_several_rounds(server: VendorServer) -> None:
    async with panel(server) as ensemble:
        result = await ensemble.judge_many(ITEMS, mode="batch", batch=options(window=10))
    assert len(result) == len(ITEMS) and all(r.n_valid == 3 for r in result.verdicts)
    assert batches(server) == 3 * len(MODELS)  # 10 + 10 + 4 items


async def test_a_batched_model_priced_without_a_batch_rate_is_refused_before_any_call(
    server: VendorServer,
) -> None:
    register_price("bm-a", vendor="custom", input=2.0, output=8.0)  # no batch rate
    async with panel(server) as ensemble:
        with pytest.raises(ConfigError, match="no batch rate"):
            await ensemble.judge_many(ITEMS, mode="batch", batch=options())
    assert batches(server) == 0


async def test_batch_options_outside_batch_mode_are_refused(server: VendorServer) -> None:
    async with panel(server) as ensemble:
        with pytest.raises(ConfigError, match="mode='batch'"):
            await ensemble.judge_many(ITEMS, batch=options())
        with pytest.raises(ConfigError, match="'live' or 'batch'"):
            await ensemble.judge_many(ITEMS, mode="offline")  # type: ignore[arg-type]
