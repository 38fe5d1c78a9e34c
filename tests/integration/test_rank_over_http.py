"""Ranking many candidates end to end over real sockets: against the simulated vendor's
latent strengths (``VendorServer(strengths=...)``), and against a judge server written here
from OpenAI's wire format (``wire_servers.OpenAIChatServer``) that decides by its own
strength table."""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from cross_judge import Critic, Ensemble, ErrorKind
from cross_judge.ranking import spearman
from cross_judge.testing import Persona, VendorServer

from .wire_servers import Answer, OpenAIChatServer

pytestmark = pytest.mark.anyio

KEY = "sk-rank-test-key-0a1b2c3d4e5f"
TASK = "Write a haiku about the sea."
LATENT = {f"model-{k:02d}": 0.6 * k for k in range(12)}
TEXTS = {cid: f"the haiku of {cid}" for cid in LATENT}


def critics(url: str, **families: str) -> list[Critic]:
    return [
        Critic(
            name=name,
            model=name,
            prompt="pairwise",
            vendor="custom",
            base_url=url,
            api_key=KEY,
            family=families.get(name),
        )
        for name in ("judge-a", "judge-b", "judge-c")
    ]


def rho(ratings: Mapping[str, float]) -> float:
    value = spearman([ratings[c] for c in LATENT], [LATENT[c] for c in LATENT])
    assert value is not None
    return value


@pytest.fixture(scope="module")
def simulator() -> Iterator[VendorServer]:
    personas = [
        Persona(name, accuracy=0.9, seed=k)
        for k, name in enumerate(["judge-a", "judge-b", "judge-c"])
    ]
    strengths = {TEXTS[c]: s for c, s in LATENT.items()}
    with VendorServer(personas, api_key=KEY, strengths=strengths) as server:
        yield server


async def test_all_pairs_on_the_simulator_reach_the_latent_order(simulator: VendorServer) -> None:
    ranking = await Ensemble(critics(simulator.url), order="both").rank(TEXTS, query=TASK)
    assert ranking.calls == 66 * 3 * 2
    assert rho(ranking.ratings) >= 0.95


async def test_adaptive_pairs_on_the_simulator_spend_at_most_their_budget(
    simulator: VendorServer,
) -> None:
    ranking = await Ensemble(critics(simulator.url), order="both").rank(
        TEXTS, query=TASK, pairs="adaptive", budget=26
    )
    assert len(ranking.results) == 26
    assert ranking.calls <= 0.4 * 66 * 3 * 2
    assert rho(ranking.ratings) >= 0.8


async def test_a_critic_sits_out_its_own_family_on_the_simulator(simulator: VendorServer) -> None:
    panel = Ensemble(critics(simulator.url, **{"judge-a": "acme"}), order="both")
    texts = {c: TEXTS[c] for c in ("model-00", "model-05", "model-11")}
    ranking = await panel.rank(texts, query=TASK, families={"model-11": "acme"})
    for result in ranking.results:
        involved = "model-11" in (result.meta["rank"]["a"], result.meta["rank"]["b"])
        assert (result.verdicts[0].error_kind is ErrorKind.SELF_PREFERENCE) == involved
    assert ranking.calls == 3 * 3 * 2 - 2 * 2


# -- a judge server written here -------------------------------------------------------------

_TAG = re.compile(r"<response_([ab])>\s*(.*?)\s*</response_\1>", re.S)


def strength_script(strengths: Mapping[str, float]) -> Any:
    """Answers a pairwise request by Bradley-Terry on ``strengths``, seeded per request."""

    def answer(body: Mapping[str, Any]) -> Answer:
        text = body["messages"][-1]["content"]
        found = dict(_TAG.findall(text))
        gap = strengths[found["a"]] - strengths[found["b"]]
        seed = hashlib.sha256(f"{body['model']}|{found['a']}|{found['b']}".encode()).hexdigest()
        p_a = 1.0 / (1.0 + math.exp(-gap))
        return Answer("A" if random.Random(seed).random() < p_a else "B", confidence=0.8)

    return answer


@pytest.fixture(scope="module")
def own_judge() -> Iterator[OpenAIChatServer]:
    strengths = {TEXTS[c]: s for c, s in LATENT.items()}
    with OpenAIChatServer(strength_script(strengths), api_key=KEY) as server:
        yield server


async def test_all_pairs_against_a_judge_server_of_our_own(own_judge: OpenAIChatServer) -> None:
    ranking = await Ensemble(critics(own_judge.url), order="both").rank(TEXTS, query=TASK)
    assert ranking.comparisons + ranking.undecided == 66
    assert rho(ranking.ratings) >= 0.95
    rows = ranking.to_records()
    assert [r["id"] for r in rows] == ranking.order
