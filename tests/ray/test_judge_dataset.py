"""cross_judge.ray.judge_dataset: a Ray Dataset judged by a pool of async actors, on a Ray
instance on this machine and a simulated vendor on 127.0.0.1."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from cross_judge import Cascade, ConfigError, Critic, Ensemble, register_price
from cross_judge.batch import judge_many
from cross_judge.integrations._ray import judge_dataset, label_column
from cross_judge.testing import Persona, VendorServer

from .conftest import KEY

pytest.importorskip("ray")

CRITIC_NAMES = ("judge-a", "judge b", "judge_c")


def critic(url: str, name: str, model: str) -> Critic:
    return Critic(
        name=name, model=model, vendor="custom", base_url=url, api_key=KEY, json_mode=False
    )


def panel_of_three(url: str, model: str) -> Ensemble:
    """Three critics that disagree now and then; priced, so that costs are known."""
    for i in range(len(CRITIC_NAMES)):
        register_price(f"{model}-{i}", vendor="custom", input=1.0, output=2.0)
    return Ensemble([critic(url, name, f"{model}-{i}") for i, name in enumerate(CRITIC_NAMES)])


def two_tiers(url: str, model: str) -> Cascade:
    """A cascade whose first tier always stands (one valid verdict), so the second is never
    asked."""
    return Cascade(
        tiers=[
            Ensemble([critic(url, "cheap", f"{model}-0")]),
            Ensemble([critic(url, "strong", f"{model}-1")]),
        ]
    )


def add_personas(server: VendorServer, model: str) -> None:
    for i in range(len(CRITIC_NAMES)):
        server.add_persona(Persona(f"{model}-{i}", accuracy=0.6, labels=("KEEP", "REJECT")))


def test_rows_hold_the_input_and_what_judge_many_gives_for_the_same_items(
    ray_local: Any, server: VendorServer, model: str
) -> None:
    add_personas(server, model)
    factory = functools.partial(panel_of_three, server.url, model)
    rows = [{"id": i, "item": f"candidate item {i}"} for i in range(40)]
    ds = ray_local.data.from_items(rows)

    out = judge_dataset(
        ds, factory, batch_size=8, concurrency=2, id_column="id", num_cpus=0.5
    ).take_all()

    async def locally() -> list[Any]:
        async with factory() as panel:
            items = [{"id": str(r["id"]), "query": r["item"]} for r in rows]
            return (await judge_many(panel, items)).verdicts

    expected = anyio.run(locally)
    labels = [label_column(name) for name in CRITIC_NAMES]
    assert list(out[0]) == ["id", "item", "consensus", "agreement", "cost_usd", *labels]
    assert labels == ["label_judge_a", "label_judge_b", "label_judge_c"]
    got = sorted(out, key=lambda row: row["id"])
    assert [row["id"] for row in got] == list(range(40))
    for row, result in zip(got, expected, strict=True):
        assert row["item"] == f"candidate item {row['id']}"
        assert row["consensus"] == result.consensus
        assert row["agreement"] == result.agreement_pct
        assert row["cost_usd"] == pytest.approx(result.cost_usd)
        assert row["cost_usd"] > 0
        kinds = {v.critic_id: v.kind for v in result.verdicts}
        assert [row[label_column(name)] for name in CRITIC_NAMES] == [
            kinds[name] for name in CRITIC_NAMES
        ]
    # The personas disagree on some items: the columns are not constant.
    assert len({row["agreement"] for row in got}) > 1


def test_a_critic_a_cascade_did_not_ask_has_a_null_label(
    ray_local: Any, server: VendorServer, model: str
) -> None:
    add_personas(server, model)
    ds = ray_local.data.from_items([{"item": f"thing {i}"} for i in range(6)])

    out = judge_dataset(
        ds, functools.partial(two_tiers, server.url, model), concurrency=1, num_cpus=0.5
    ).take_all()

    assert len(out) == 6
    assert all(row["label_cheap"] in ("KEEP", "REJECT") for row in out)
    assert all(row["label_strong"] is None for row in out)
    assert all(row["consensus"] == row["label_cheap"] for row in out)
    # No price registered for these models: the cost is unknown, not 0.
    assert all(row["cost_usd"] is None for row in out)


def test_struct_items_with_null_fields_are_judged_as_mappings(
    ray_local: Any, server: VendorServer, model: str
) -> None:
    add_personas(server, model)
    # One row has meta, the other not: the struct column gives the second a null meta.
    rows = [
        {"item": {"query": "first", "meta": {"source": "x"}}},
        {"item": {"query": "second"}},
    ]
    ds = ray_local.data.from_items(rows)

    out = judge_dataset(
        ds, functools.partial(two_tiers, server.url, model), concurrency=1, num_cpus=0.5
    ).take_all()

    assert sorted(row["item"]["query"] for row in out) == ["first", "second"]
    assert all(row["consensus"] in ("KEEP", "REJECT") for row in out)


def test_an_input_column_named_like_a_result_column_is_refused(
    ray_local: Any, server: VendorServer, model: str
) -> None:
    add_personas(server, model)
    ds = ray_local.data.from_items([{"item": "x", "consensus": "mine"}])

    out = judge_dataset(
        ds, functools.partial(two_tiers, server.url, model), concurrency=1, num_cpus=0.5
    )

    # Raised in the actor; Ray hands it back wrapped, its text kept.
    with pytest.raises(Exception, match=r"ConfigError: .* already has column\(s\) \['consensus'\]"):
        out.take_all()


def test_two_critics_writing_the_same_column_are_refused_before_anything_runs(
    ray_local: Any, server: VendorServer, model: str
) -> None:
    def clashing() -> Ensemble:
        return Ensemble([critic(server.url, n, model) for n in ("gpt 4o", "gpt-4o")])

    with pytest.raises(ConfigError, match="would both write column 'label_gpt_4o'"):
        judge_dataset(ray_local.data.from_items([{"item": "x"}]), clashing)


def test_a_shared_limit_for_a_vendor_no_critic_uses_is_refused(
    ray_local: Any, server: VendorServer, model: str
) -> None:
    factory = functools.partial(two_tiers, server.url, model)

    with pytest.raises(ConfigError, match=r"shared_limits names \['openai'\]"):
        judge_dataset(
            ray_local.data.from_items([{"item": "x"}]), factory, shared_limits={"openai": 4}
        )


@pytest.mark.parametrize("field", ["batch_size", "concurrency", "item_concurrency"])
@pytest.mark.parametrize("value", [0, 1.5, True])
def test_counts_must_be_whole_numbers_of_at_least_one(
    ray_local: Any, server: VendorServer, model: str, field: str, value: object
) -> None:
    factory = functools.partial(two_tiers, server.url, model)

    with pytest.raises(ConfigError, match=f"{field} must be a whole number >= 1"):
        judge_dataset(ray_local.data.from_items([{"item": "x"}]), factory, **{field: value})


def test_label_columns_keep_letters_digits_and_underscores() -> None:
    assert label_column("gpt-4o mini") == "label_gpt_4o_mini"
    assert label_column("claude_3.5/sonnet") == "label_claude_3_5_sonnet"
    assert label_column("plain") == "label_plain"
