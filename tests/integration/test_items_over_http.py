"""An `Item` through every layer over real HTTP on the simulated vendor: a critic, an
ensemble, a cascade and a batch judge an item exactly as they judge its text and keywords,
and the simulator takes its truths keyed by items."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from cross_judge import Cascade, Critic, Ensemble, EnsembleVerdict, Escalation, Item
from cross_judge.batch import judge_many
from cross_judge.testing import Persona, VendorServer

from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TEMPLATE = "Judge for {audience}.\n<item>{query}</item>\nAnswer in JSON: kind, confidence."
LABELS = ("KEEP", "REJECT")
ITEMS = [
    Item(id=f"i{n}", query=f"Candidate category {n}", context={"audience": "ops"}, meta={"n": n})
    for n in range(6)
]


@pytest.fixture(scope="module")
def sim() -> Iterator[VendorServer]:
    personas = [Persona(f"m{k}", accuracy=0.8, labels=LABELS, seed=k) for k in range(3)]
    gold = {item: LABELS[n % 2] for n, item in enumerate(ITEMS)}  # keyed by the items
    with VendorServer(personas, gold=gold, api_key=KEY) as server:
        yield server


def critic(server: VendorServer, model: str, name: str | None = None) -> Critic:
    return Critic(
        name=name or model,
        model=model,
        vendor="custom",
        base_url=server.url,
        api_key=KEY,
        prompt_template=TEMPLATE,
        labels=list(LABELS),
    )


def panel(server: VendorServer) -> Ensemble:
    return Ensemble([critic(server, f"m{k}") for k in range(3)])


def outcome(result: EnsembleVerdict) -> tuple[Any, ...]:
    votes = [(v.critic_id, v.kind, v.confidence) for v in result.verdicts]
    return result.query_id, result.consensus, result.meta, votes


async def test_a_critic_judges_an_item_as_it_judges_its_text_and_context(
    sim: VendorServer,
) -> None:
    judge = critic(sim, "m0")
    item = ITEMS[0]
    by_item = await judge.judge(item)
    by_text = await judge.judge(item.query, dict(item.context))
    assert (by_item.kind, by_item.confidence) == (by_text.kind, by_text.confidence)
    assert by_item.is_valid


async def test_an_ensemble_judges_an_item_as_it_judges_the_keyword_form(sim: VendorServer) -> None:
    item = ITEMS[1]
    by_item = await panel(sim).judge(item)
    by_keywords = await panel(sim).judge(
        item.query, query_id=item.id, context=item.context, meta=item.meta
    )
    assert outcome(by_item) == outcome(by_keywords)
    assert by_item.query_id == "i1" and by_item.meta == {"n": 1}


async def test_the_simulators_truth_keyed_by_an_item_is_the_truth_of_its_text(
    sim: VendorServer,
) -> None:
    perfect = Persona("oracle", accuracy=1.0, labels=LABELS)
    sim.add_persona(perfect)
    judge = critic(sim, "oracle")
    for n, item in enumerate(ITEMS):
        assert (await judge.judge(item)).kind == LABELS[n % 2]


async def test_a_cascade_gives_every_tier_the_same_item(sim: VendorServer) -> None:
    cascade = Cascade(
        [panel(sim), Ensemble([critic(sim, "m2", "strong")])],
        escalate=Escalation(agreement_below=0.9),
    )
    result = await cascade.judge(ITEMS[2], all_tiers=True)
    assert result.tiers is not None
    assert [t.query_id for t in result.tiers] == ["i2", "i2"]
    assert [t.meta for t in result.tiers] == [{"n": 2}, {"n": 2}]


class Recording:
    """A panel that records what the batch runner hands its ``judge`` (an Ensemble's)."""

    def __init__(self, inner: Ensemble) -> None:
        self.inner = inner
        self.given: list[object] = []

    @property
    def critics(self) -> list[Critic]:
        return self.inner.critics

    @property
    def voting(self) -> str:
        return "majority"

    async def judge(self, query: object, **keywords: Any) -> EnsembleVerdict:
        self.given.append(query)
        assert set(keywords) == {"budget_usd"}
        return await self.inner.judge(query, **keywords)  # type: ignore[arg-type]

    def check_can_judge(self) -> None:
        self.inner.check_can_judge()

    def check_prices(self) -> None:
        self.inner.check_prices()

    def check_item(self, query: object, context: Mapping[str, Any] | None = None) -> None:
        self.inner.check_item(query, context)  # type: ignore[arg-type]


async def test_the_batch_runner_hands_the_panel_each_item_itself(sim: VendorServer) -> None:
    recording = Recording(panel(sim))
    mappings = [item.model_dump() for item in ITEMS]
    batch = await judge_many(recording, mappings, concurrency=2)  # type: ignore[arg-type]
    assert recording.given and all(isinstance(given, Item) for given in recording.given)
    assert sorted(given.id for given in recording.given) == [item.id for item in ITEMS]  # type: ignore[attr-defined]
    assert [r.query_id for r in batch.verdicts] == [item.id for item in ITEMS]
    assert [r.meta for r in batch.verdicts] == [item.meta for item in ITEMS]
