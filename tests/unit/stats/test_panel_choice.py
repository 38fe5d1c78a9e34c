"""The panel-choice replay: a pilot read into answer patterns, each plan decided by the real
voting strategies, figures on the held-out items, and the search over subsets."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cross_judge import BatchResult, ConfigError, EnsembleVerdict, revote
from cross_judge.stats import (
    PanelTier,
    measure_panel,
    pilot_table,
    search_panels,
    split_gold,
)
from tests.unit.panel_choice.pilots import FOUR, pilot

EIGHT = {f"c{i}": (0.6 + 0.04 * i, 0.0001 * (i + 1)) for i in range(8)}


def only(batch: BatchResult, critics: tuple[str, ...]) -> BatchResult:
    """The batch as if only ``critics`` had judged."""
    return BatchResult.from_results(
        r.model_copy(update={"verdicts": [v for v in r.verdicts if v.critic_id in critics]})
        for r in batch.verdicts
    )


def accuracy_of(results: list[EnsembleVerdict], gold: dict[str, str], ids: set[str]) -> float:
    chosen = [r for r in results if r.query_id in ids]
    return sum(r.consensus == gold[r.query_id] for r in chosen) / len(chosen)


def held_out_ids(batch: BatchResult, gold: dict[str, str], seed: int) -> set[str]:
    ids = [r.query_id for r in batch.verdicts]
    return set(split_gold(gold, ids, holdout=0.5, seed=seed).held_out)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    subset=st.sets(st.sampled_from(sorted(FOUR)), min_size=1),
    voting=st.sampled_from(["majority", "weighted"]),
)
def test_a_plans_figures_are_the_real_votes_on_each_part(
    seed: int, subset: set[str], voting: str
) -> None:
    batch, gold = pilot(FOUR, n=120, seed=seed, failed={"mid": 0.1})
    table = pilot_table(batch, gold, seed=seed)
    critics = tuple(sorted(subset))
    weights = {name: table.weights[name] for name in critics} if voting == "weighted" else None
    figures = measure_panel(table, [PanelTier(critics, voting, weights)])
    options = {"weights": weights, "use_confidence": False} if weights else {}
    voted = [revote(r, voting, **options) for r in only(batch, critics).verdicts]
    held = held_out_ids(batch, gold, seed)
    assert figures.accuracy == pytest.approx(accuracy_of(voted, gold, held))
    assert figures.selection_accuracy == pytest.approx(accuracy_of(voted, gold, set(gold) - held))


def test_a_dawid_skene_plan_is_the_batch_revoted_by_its_own_critics() -> None:
    batch, gold = pilot(FOUR, n=300, seed=3)
    table = pilot_table(batch, gold, seed=3)
    critics = ("cheap-a", "cheap-b", "mid")
    figures = measure_panel(table, [PanelTier(critics, "dawid_skene")])
    revoted = only(batch, critics).revote("dawid_skene").verdicts
    assert figures.accuracy == pytest.approx(
        accuracy_of(revoted, gold, held_out_ids(batch, gold, 3))
    )


def test_a_cascade_pays_for_its_second_tier_only_on_the_items_it_escalates() -> None:
    batch, gold = pilot(FOUR, n=300, seed=1)
    table = pilot_table(batch, gold)
    first = PanelTier(("cheap-a", "cheap-b"), "majority")
    figures = measure_panel(table, [first, PanelTier(("strong",), "majority")], 1.0)
    assert figures.escalated is not None and 0 < figures.escalated < 1
    assert figures.cost_per_item == pytest.approx(0.0002 + figures.escalated * 0.002)


def test_costs_are_each_critics_mean_per_item_and_prices_override_them() -> None:
    batch, gold = pilot(FOUR, n=60)
    assert pilot_table(batch, gold).cost(["mid", "strong"]) == pytest.approx(0.0025)
    priced = pilot_table(batch, gold, prices={"strong": 0.01})
    assert priced.cost(["strong"]) == pytest.approx(0.01)


def test_a_critic_without_costs_is_refused_with_the_price_flag() -> None:
    batch, gold = pilot(FOUR, n=60)
    unpriced = BatchResult.from_results(
        r.model_copy(
            update={
                "verdicts": [
                    v.model_copy(update={"cost_usd": None}) if v.critic_id == "mid" else v
                    for v in r.verdicts
                ]
            }
        )
        for r in batch.verdicts
    )
    with pytest.raises(ConfigError, match=r"\['mid'\] carry no cost.*--price mid="):
        pilot_table(unpriced, gold)
    assert pilot_table(unpriced, gold, prices={"mid": 0.0005}).cost(["mid"]) == 0.0005


def test_cached_answers_do_not_count_as_a_critics_price() -> None:
    batch, gold = pilot(FOUR, n=60)
    cached = BatchResult.from_results(
        r.model_copy(
            update={
                "verdicts": [
                    v.model_copy(update={"cost_usd": 0.0, "cached": True})
                    if v.critic_id == "strong" and i % 2
                    else v
                    for v in r.verdicts
                ]
            }
        )
        for i, r in enumerate(batch.verdicts)
    )
    assert pilot_table(cached, gold).cost(["strong"]) == pytest.approx(0.002)


def test_gold_labels_no_critic_answers_are_refused() -> None:
    batch, gold = pilot(FOUR, n=60)
    gold["q0"] = "MAYBE"
    with pytest.raises(ConfigError, match=r"gold labels \['MAYBE'\] are not among"):
        pilot_table(batch, gold)


def test_a_pilot_with_one_critic_is_refused() -> None:
    batch, gold = pilot({"solo": (0.9, 0.001)}, n=60)
    with pytest.raises(ConfigError, match="two or more candidate critics"):
        pilot_table(batch, gold)


def test_critics_that_judged_different_items_are_refused_as_not_overlapping() -> None:
    batch, gold = pilot(FOUR, n=30, missing=("strong",))
    with pytest.raises(ConfigError, match="without enough overlapping critics"):
        pilot_table(batch, gold)


def test_items_some_critic_did_not_judge_are_left_out_and_counted() -> None:
    batch, gold = pilot(FOUR, n=200, missing=("strong",))
    table = pilot_table(batch, gold)
    assert table.left_out == 100
    assert table.n_selection + table.n_held_out == 100


def test_a_cascades_results_are_refused() -> None:
    batch, gold = pilot(FOUR, n=60)
    first = batch.verdicts[0]
    nested = BatchResult.from_results(
        [first.model_copy(update={"tiers": [first]}), *batch.verdicts[1:]]
    )
    with pytest.raises(ConfigError, match="come from a cascade"):
        pilot_table(nested, gold)


def test_without_gold_the_truth_is_the_models_posterior() -> None:
    batch, _ = pilot(FOUR, n=200)
    table = pilot_table(batch)
    assert table.reference == "dawid_skene"
    assert all(math.isclose(sum(p for _, p in g.truth), 1.0) for g in table.groups)


def test_every_subset_of_eight_critics_is_replayed_under_each_strategy() -> None:
    batch, gold = pilot(EIGHT, n=200)
    found, how = search_panels(pilot_table(batch, gold), budget_per_item=None)
    assert how == "exhaustive"
    by_strategy = {s: sum(f.tiers[0].voting == s for f in found) for s in ("majority", "weighted")}
    assert by_strategy == {"majority": 255, "weighted": 255}
    assert sum(f.tiers[0].voting == "dawid_skene" for f in found) == 255 - 8 - 28


def test_beyond_twelve_critics_a_greedy_search_finds_the_strong_panel() -> None:
    critics = {f"weak{i}": (0.6, 0.0001) for i in range(12)}
    critics.update({"strong-a": (0.9, 0.0002), "strong-b": (0.9, 0.0002)})
    batch, gold = pilot(critics, n=300)
    found, how = search_panels(
        pilot_table(batch, gold), budget_per_item=None, strategies=("majority",)
    )
    assert how == "greedy"
    assert len(found) < 2**14
    assert set(found[0].critics) & {"strong-a", "strong-b"}


def test_a_budget_no_panel_meets_says_the_cheapest_cost() -> None:
    batch, gold = pilot(FOUR, n=60)
    with pytest.raises(ConfigError, match=r"cheapest costs \$0\.0001; raise budget_per_item"):
        search_panels(pilot_table(batch, gold), budget_per_item=0.00001)


def test_size_keeps_only_panels_of_that_many_critics() -> None:
    batch, gold = pilot(FOUR, n=100)
    found, _ = search_panels(pilot_table(batch, gold), budget_per_item=None, size=2)
    assert {f.size for f in found} == {2}


def test_every_panel_found_fits_the_budget() -> None:
    batch, gold = pilot(FOUR, n=100)
    found, _ = search_panels(pilot_table(batch, gold), budget_per_item=0.0007)
    assert found and all(f.cost_per_item <= 0.0007 + 1e-12 for f in found)
    assert not any("strong" in f.critics for f in found)


def test_the_weighted_votes_weights_are_learn_weights_on_the_selection_items() -> None:
    from cross_judge.stats import learn_weights

    batch, gold = pilot(FOUR, n=200, seed=5, failed={"mid": 0.1})
    held = held_out_ids(batch, gold, 5)
    expected = learn_weights(batch, {i: label for i, label in gold.items() if i not in held})
    assert pilot_table(batch, gold, seed=5).weights == pytest.approx(expected.weights)
