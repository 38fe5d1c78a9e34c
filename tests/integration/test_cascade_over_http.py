"""A Cascade over real HTTP on the simulated vendor, with correlated errors: replaying
stored all-tier results equals a live run item for item, a batch resumes from its results
file without asking again, and an Anthropic-protocol tier works beside OpenAI-protocol
critics.

The vendor is deterministic (each persona's answer is seeded by its model and the item),
so two runs over the same items get the same verdicts, whatever the order or timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import ABSTAIN, Cascade, Critic, Ensemble, EnsembleVerdict, pricing
from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.cascade import Escalation, FinalTier
from cross_judge.testing import Persona, VendorServer

from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TEMPLATE = "Judge this item.\n<item>{query}</item>\nAnswer in JSON: kind, confidence, reasoning."
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
CHEAP = ("cheap-1", "cheap-2", "cheap-3")
STRONG = "strong"
N_ITEMS = 100


def item(i: int) -> str:
    return f"Candidate category {i:03d}"


@pytest.fixture(scope="module")
def sim() -> Iterator[VendorServer]:
    personas = [
        Persona(model, accuracy=0.75, labels=LABELS, seed=i, confidence=(0.5, 0.95))
        for i, model in enumerate(CHEAP)
    ]
    personas.append(Persona(STRONG, accuracy=0.93, labels=LABELS, confidence=(0.6, 0.98)))
    gold = {item(i): LABELS[i % len(LABELS)] for i in range(N_ITEMS)}
    with VendorServer(
        personas,
        gold=gold,
        api_key=KEY,
        error_correlation=0.4,
        difficulty_seed=7,
        count_items=True,
    ) as server:
        yield server


@pytest.fixture(autouse=True)
def prices() -> Iterator[None]:
    for model in CHEAP:
        pricing.register_price(model, vendor="custom", input=0.1, output=0.4)
    pricing.register_price(STRONG, vendor="custom", input=2.0, output=8.0)
    yield
    pricing._clear_registered()


def critic(server: VendorServer, model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("name", model)
    return Critic(
        model=model,
        vendor="custom",
        base_url=server.url,
        api_key=KEY,
        prompt_template=TEMPLATE,
        **kwargs,
    )


def cascade(
    server: VendorServer, escalate: Escalation, final: FinalTier = "decide", strong: Any = None
) -> Cascade:
    return Cascade(
        [
            Ensemble([critic(server, m) for m in CHEAP]),
            Ensemble([strong if strong is not None else critic(server, STRONG)]),
        ],
        escalate=escalate,
        final=final,
    )


def decision(result: EnsembleVerdict) -> tuple[Any, ...]:
    """Everything a cascade decides about an item and what it asked, without timings."""
    assert result.tiers is not None
    tiers = [
        (t.consensus, t.agreement_pct, [(v.critic_id, v.kind, v.confidence) for v in t.verdicts])
        for t in result.tiers
    ]
    verdicts = [(v.critic_id, v.kind, v.confidence) for v in result.verdicts]
    return (
        result.query_id,
        result.consensus,
        result.tier,
        result.agreement_pct,
        result.avg_confidence,
        tiers,
        verdicts,
        result.usage,
    )


# -- replay equals a live run -------------------------------------------------------------------

STORED_RULES: dict[str, Escalation] = {
    "decide": Escalation(agreement_below=0.5),
    "abstain": Escalation(agreement_below=[0.5, 0.0]),
}
NEW_RULES: dict[str, Escalation] = {
    # Escalate any disagreement, and agreeing but unsure cheap tiers.
    "decide": Escalation(agreement_below=1.0, confidence_below=0.75),
    # The same, and the strong critic abstains when unsure.
    "abstain": Escalation(agreement_below=[1.0, None], confidence_below=[0.75, 0.8]),
}


@pytest.mark.slow  # two live cascade runs and a replay over a whole batch
@pytest.mark.parametrize("final", ["decide", "abstain"])
async def test_replay_with_a_new_escalation_equals_a_live_run_item_for_item(
    sim: VendorServer, final: FinalTier
) -> None:
    items = [item(i) for i in range(N_ITEMS)]
    async with cascade(sim, STORED_RULES[final], final) as stored_cascade:
        full = await stored_cascade.judge_many(items, concurrency=16, all_tiers=True)
    assert all(r.tiers is not None and len(r.tiers) == 2 for r in full.verdicts)

    sim.reset_stats()
    new = cascade(sim, NEW_RULES[final], final)
    replayed = new.replay(full)
    same = cascade(sim, STORED_RULES[final], final).replay(full)
    assert sim.stats()["requests"] == 0  # replay calls nothing

    async with new:
        live = await new.judge_many(items, concurrency=16)
    assert [decision(r) for r in replayed.verdicts] == [decision(r) for r in live.verdicts]
    for again, ran in zip(replayed.verdicts, live.verdicts, strict=True):
        assert again.cost_usd == pytest.approx(ran.cost_usd, rel=1e-12)
    assert replayed.tier_stats() == live.tier_stats()
    assert (replayed.critics, replayed.voting) == (live.critics, live.voting)

    # Replaying with the rule the results were stored under gives their own decisions.
    assert [(r.consensus, r.tier) for r in same.verdicts] == [
        (r.consensus, r.tier) for r in full.verdicts
    ]
    # The new rule changes something, or this test could not tell replay from a copy.
    tiers = [r.tier for r in replayed.verdicts]
    assert 0 < tiers.count(0) < N_ITEMS
    assert any(a.tier != b.tier for a, b in zip(replayed.verdicts, full.verdicts, strict=True))
    if final == "abstain":
        assert 0 < len(replayed.abstained_items) < tiers.count(1)
    else:
        assert replayed.abstained_items == []


# -- a results file and resume -----------------------------------------------------------------


async def test_a_cascade_batch_resumes_from_its_results_file_without_asking_done_items(
    sim: VendorServer, tmp_path: Path
) -> None:
    items = [{"id": f"r{i}", "query": item(i)} for i in range(12)]
    path = tmp_path / "results.jsonl"
    async with cascade(sim, Escalation(agreement_below=1.0)) as judge:
        with ResultsFile.open(path) as out:  # a first run, stopped after 5 items
            for result in (await judge.judge_many(items[:5])).verdicts:
                out.append(result)

        sim.reset_stats()
        with ResultsFile.open(path, resume=True) as out:
            assert out.done_ids == {f"r{i}" for i in range(5)}
            todo = [x for x in items if x["id"] not in out.done_ids]
            async with judge.stream(todo, concurrency=4) as results:
                resumed = [r async for r in results]
                for result in resumed:
                    out.append(result)
        asked = sim.item_requests()
        assert set(asked) == {item(i) for i in range(5, 12)}  # nothing done is asked again
        made = sum(v.attempts for r in resumed for v in r.verdicts)
        assert sim.stats()["requests"] == made

        sim.reset_stats()
        with ResultsFile.open(path, resume=True) as out:
            assert [x for x in items if x["id"] not in out.done_ids] == []
        fresh = await judge.judge_many(items)  # the same items in one uninterrupted run

    stored = {r.query_id: r for r in ResultsFile.read(path)}
    assert sorted(stored) == sorted(x["id"] for x in items)
    assert [decision(stored[r.query_id]) for r in fresh.verdicts] == [
        decision(r) for r in fresh.verdicts
    ]
    batch = BatchResult.from_jsonl(path)
    zero, one = batch.tier_stats()
    assert (zero.asked, zero.decided + one.asked) == (12, 12)
    assert one.asked == sum(1 for r in fresh.verdicts if r.tier == 1)


# -- the Anthropic protocol in one tier -----------------------------------------------------------


async def test_an_anthropic_tier_and_an_openai_tier_judge_in_one_cascade(
    sim: VendorServer,
) -> None:
    claude = Critic(
        name="claude-strong",
        model=STRONG,
        vendor="anthropic",
        base_url=sim.anthropic_url,
        api_key=KEY,
        prompt_template=TEMPLATE,
    )
    items = [item(i) for i in range(20)]
    rule = Escalation(agreement_below=1.0)
    sim.reset_stats()
    async with cascade(sim, rule, strong=claude) as mixed:
        batch = await mixed.judge_many(items, concurrency=5, all_tiers=True)
        paths = {(r["model"], r["path"]) for r in sim.recent_requests}
    assert paths == {(m, "/v1/chat/completions") for m in CHEAP} | {(STRONG, "/v1/messages")}
    assert sim.stats()["by_model"] == {**dict.fromkeys(CHEAP, 20), STRONG: 20}
    strong_verdicts = [r.tiers[1].verdicts[0] for r in batch.verdicts if r.tiers]
    assert all(v.is_valid and v.vendor == "anthropic" for v in strong_verdicts)
    assert batch.critics == [*CHEAP, "claude-strong"]

    # The same persona over the OpenAI protocol answers alike: the decisions match.
    async with cascade(sim, rule) as plain:
        same = await plain.judge_many(items, concurrency=5)
    assert [(r.consensus, r.tier) for r in batch.verdicts] == [
        (r.consensus, r.tier) for r in same.verdicts
    ]
    escalated = [r for r in batch.verdicts if r.tier == 1]
    assert escalated and all(r.consensus != ABSTAIN for r in escalated)
    assert [r.consensus for r in escalated] == [r.tiers[1].consensus for r in escalated if r.tiers]
