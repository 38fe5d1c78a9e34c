"""The answers journal seen from a panel's calls, over real HTTP to a local vendor: each valid
answer is recorded as it arrives (also from a stream's host task, which on trio does not
inherit the caller's context), and a kept answer is replayed without a request, with the
cost it was billed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble, pricing
from cross_judge.batch import ResultsFile
from cross_judge.critic._journal import journal_path, journaling
from cross_judge.pricing import register_price
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ANSWER = '{"kind": "REJECT", "confidence": 0.8, "reasoning": "not a subcategory"}'
USAGE = {"prompt_tokens": 90, "completion_tokens": 20}


@pytest.fixture(autouse=True)
def _forget_prices() -> Iterator[None]:
    yield
    pricing._clear_registered()


def panel(server: VendorServer, *models: str) -> Ensemble:
    for model in models:
        register_price(model, vendor="custom", input=1.0, output=4.0)
    critics = [
        Critic(name=m, model=m, vendor="custom", base_url=server.url, api_key=KEY) for m in models
    ]
    return Ensemble(critics)


def journal_items(out: Path) -> list[str | None]:
    return [json.loads(line)["item"] for line in journal_path(out).read_text().splitlines()]


async def test_a_stream_records_each_valid_answer_with_its_item_as_it_arrives(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    models = (f"{model}-a", f"{model}-b")
    for m in models:
        server.always(m, Reply.content(ANSWER, usage=USAGE))
    out = tmp_path / "out.jsonl"
    try:
        with ResultsFile.open(out, journal=True) as results:
            async with panel(server, *models) as ensemble:
                with journaling(results.journal):
                    stream = ensemble.stream([{"id": f"i{n}", "query": f"q{n}"} for n in range(3)])
                async with stream:
                    done = [r.query_id async for r in stream]
    finally:
        for m in models:
            server.always(m, None)
    assert sorted(done) == ["i0", "i1", "i2"]
    assert sorted(journal_items(out)) == ["i0", "i0", "i1", "i1", "i2", "i2"]  # kept: not complete


async def test_a_kept_answer_is_replayed_without_a_request_with_the_cost_it_was_billed(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    server.script(model, Reply.content(ANSWER, usage=USAGE))
    out = tmp_path / "out.jsonl"
    items = [{"id": "i0", "query": "Felines"}]
    with ResultsFile.open(out, journal=True) as results:  # a run killed before OUT had i0
        async with panel(server, model) as ensemble:
            with journaling(results.journal):
                (first,) = (await ensemble.judge_many(items)).verdicts
    with ResultsFile.open(out, resume=True, journal=True) as results:
        assert results.spent_usd == pytest.approx(first.cost_usd)  # paid, in no result yet
        async with panel(server, model) as ensemble:
            with journaling(results.journal):
                (again,) = (await ensemble.judge_many(items)).verdicts
    assert server.stats()["by_model"][model] == 1
    (asked,), (kept,) = first.verdicts, again.verdicts
    assert (kept.kind, kept.confidence, kept.reasoning) == (
        asked.kind,
        asked.confidence,
        asked.reasoning,
    )
    assert (kept.cached, kept.attempts, kept.usage) == (True, 0, asked.usage)
    assert kept.cost_usd == pytest.approx(asked.cost_usd) and asked.cost_usd
    assert again.cost_usd == pytest.approx(first.cost_usd)


async def test_an_answer_that_gives_no_valid_verdict_is_not_kept(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    server.script(model, Reply.content("I would rather not say."), Reply.status(400))
    out = tmp_path / "out.jsonl"
    with ResultsFile.open(out, journal=True) as results:
        async with panel(server, model) as ensemble:
            with journaling(results.journal):
                batch = await ensemble.judge_many(["unparseable", "refused"])
        assert results.journal is not None and results.journal.recorded == 0
    assert [r.verdicts[0].kind for r in batch.verdicts] == ["PARSE_FAIL", "ERROR"]
    assert journal_path(out).read_bytes() == b""
