"""select_panel: the ranked plans a pilot's own verdicts support, what they are worth on
held-out items, the panels and panel files they build, and the errors that say the fix."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytest

from cross_judge import BatchResult, Cascade, ConfigError, Critic, Ensemble, select_panel
from cross_judge.errors import StatisticsWarning
from cross_judge.panel_choice import PanelPlans
from cross_judge.panel_file import load_panel
from tests.unit.panel_choice.pilots import FOUR, pilot

FAMILY = {
    "twin-a": (0.85, 0.0004),
    "twin-b": (0.85, 0.0004),
    "twin-c": (0.85, 0.0004),
    "loner-a": (0.80, 0.0004),
    "loner-b": (0.80, 0.0004),
}
"""Three critics that copy one answer on most items, and two that err on their own."""


def quiet(*args: object, **options: object) -> PanelPlans:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticsWarning)
        return select_panel(*args, **options)  # type: ignore[arg-type]


def critics_of(names: list[str]) -> list[Critic]:
    return [
        Critic(name=name, vendor="custom", model=f"m-{name}", base_url="http://127.0.0.1:9/v1",
               api_key="sk-test", prompt="pass-fail@2")
        for name in names
    ]  # fmt: skip


def panel_file(folder: Path, names: list[str]) -> Path:
    entries = "".join(
        f"\n  - name: {n}\n    vendor: custom\n    model: m-{n}\n"
        "    base_url: http://127.0.0.1:9/v1\n    prompt: pass-fail@2"
        for n in names
    )
    path = folder / "pilot.yaml"
    path.write_text(f"voting: majority\nvoting_kwargs: {{priority: [FAIL]}}\ncritics:{entries}\n")
    return path


def test_the_best_plan_within_the_budget_ranks_first() -> None:
    batch, gold = pilot(FOUR, n=600, seed=2)
    plans = quiet(batch, gold, budget_per_item=0.0008, cascade=False)
    assert plans.best.critics == ("cheap-a", "cheap-b", "mid")
    assert all(p.cost_per_item <= 0.0008 + 1e-12 for p in plans)
    assert [p.rank for p in plans] == list(range(1, len(plans) + 1))


def test_the_reported_accuracy_is_on_items_the_plans_were_not_ranked_on() -> None:
    batch, gold = pilot(FOUR, n=600, seed=2)
    plans = quiet(batch, gold)
    assert plans.n_selection + plans.n_held_out == 600
    assert any(p.accuracy != p.selection_accuracy for p in plans)
    low, high = plans.best.interval or (0.0, 0.0)
    assert low <= plans.best.accuracy <= high


def test_panels_whose_critics_err_together_count_fewer_votes() -> None:
    batch, gold = pilot(FAMILY, n=800, families=dict.fromkeys(FAMILY, "f") | {
        "loner-a": "la", "loner-b": "lb"}, shared=0.8)  # fmt: skip
    plans = quiet(batch, gold, size=3, strategies=["majority"], cascade=False, top=50)
    votes = {frozenset(p.critics): p.effective_votes for p in plans}
    twins = votes[frozenset({"twin-a", "twin-b", "twin-c"})]
    mixed = votes[frozenset({"twin-a", "loner-a", "loner-b"})]
    assert twins is not None and mixed is not None and twins < mixed


def test_a_best_plan_under_two_effective_votes_is_warned_about_and_noted() -> None:
    batch, gold = pilot(FOUR, n=400)
    with pytest.warns(StatisticsWarning, match="fewer than 2"):
        plans = select_panel(batch, gold, budget_per_item=0.0025, size=1)
    assert any("effective votes" in note for note in plans.notes)


def test_without_gold_the_accuracy_is_said_to_be_a_dawid_skene_estimate() -> None:
    batch, _ = pilot(FOUR, n=400)
    plans = quiet(batch)
    assert plans.reference == "dawid_skene"
    assert "ESTIMATED by Dawid-Skene" in plans.heading()
    assert any("no cascade offered" in note for note in plans.notes)
    assert all(p.versus_next is None or p.versus_next.p_value is None for p in plans)


def test_with_gold_a_cascade_is_offered_with_its_calibrated_escalation() -> None:
    batch, gold = pilot(FOUR, n=1500, seed=4)
    plans = quiet(batch, gold, budget_per_item=0.0016, top=50)
    cascades = [p for p in plans if p.is_cascade]
    assert cascades
    plan = cascades[0]
    assert plan.escalation is not None and plan.escalation.agreement_below is not None
    assert plan.guarantee and "Calibrated on" in plan.guarantee
    assert plan.cost_per_item <= 0.0016 + 1e-12
    first, second = (sum(FOUR[name][1] for name in tier) for tier in plan.tiers)
    assert first < second


@pytest.mark.parametrize("with_gold", [True, False], ids=["gold", "no gold"])
def test_the_plans_do_not_depend_on_the_order_of_the_results_file(with_gold: bool) -> None:
    # A results file is written in the order the calls finished, so a rerun's differs.
    batch, gold = pilot(FOUR, n=600, seed=7)
    shuffled = list(batch.verdicts)
    random.Random(3).shuffle(shuffled)
    truth = gold if with_gold else None
    options = {"budget_per_item": 0.0016, "top": 50}
    forward = quiet(batch, truth, **options).record()
    again = quiet(BatchResult.from_results(shuffled), truth, **options).record()
    assert again == forward


def test_plans_that_decide_every_item_alike_are_shown_once() -> None:
    batch, gold = pilot(FOUR, n=300)
    plans = quiet(batch, gold, top=100)
    single_strong = [p for p in plans if p.critics == ("strong",)]
    assert len(single_strong) == 1 and single_strong[0].voting == "majority"


def test_each_plan_says_why_it_ranks_above_the_next() -> None:
    batch, gold = pilot(FOUR, n=400)
    plans = quiet(batch, gold)
    assert all("held out" in p.reason for p in plans.plans[:-1])
    assert plans.plans[-1].reason == "last shown"


def test_a_weighted_plan_builds_an_ensemble_with_its_weights() -> None:
    batch, gold = pilot(FOUR, n=400)
    plans = quiet(batch, gold, strategies=["weighted"], size=3, cascade=False)
    panel = plans.best.panel(Ensemble(critics_of(list(FOUR))))
    assert isinstance(panel, Ensemble)
    assert [c.name for c in panel.critics] == list(plans.best.critics)
    assert panel.voting == "weighted" and panel.weights == dict(plans.best.weights or {})
    assert panel.voting_kwargs == {"use_confidence": False}


def test_a_cascade_plan_builds_a_cascade() -> None:
    batch, gold = pilot(FOUR, n=1500, seed=4)
    plans = quiet(batch, gold, budget_per_item=0.0016, top=50)
    plan = next(p for p in plans if p.is_cascade)
    built = plan.panel(critics_of(list(FOUR)))
    assert isinstance(built, Cascade)
    assert [[c.name for c in t.critics] for t in built.tiers] == [list(t) for t in plan.tiers]


def test_the_panel_given_to_select_panel_builds_the_best_plan() -> None:
    batch, gold = pilot(FOUR, n=300)
    source = Ensemble(critics_of(list(FOUR)))
    plans = quiet(batch, gold, panel=source, cascade=False)
    assert [c.name for c in plans.panel().critics] == list(plans.best.critics)


def test_a_plan_without_the_pilots_critics_cannot_be_built() -> None:
    batch, gold = pilot(FOUR, n=300)
    plans = quiet(batch, gold, cascade=False)
    with pytest.raises(ConfigError, match="needs the critics that judged the pilot"):
        plans.best.panel()
    with pytest.raises(ConfigError, match="has no critic"):
        plans.best.panel(critics_of(["other"]))


def test_the_written_panel_file_loads_with_the_plans_critics_and_voting(tmp_path: Path) -> None:
    batch, gold = pilot(FOUR, n=400)
    plans = quiet(batch, gold, strategies=["weighted"], size=3, cascade=False)
    (tmp_path / "out").mkdir()
    source = panel_file(tmp_path, list(FOUR))
    written = plans.write(tmp_path / "out" / "panel.yaml", panel_file=source)
    spec = load_panel(written)
    assert [c.name for c in spec.critics] == list(plans.best.critics)
    assert spec.voting == "weighted" and spec.voting_kwargs == {"use_confidence": False}
    weights = plans.best.weights or {}
    assert {c.name: c.weight for c in spec.critics} == pytest.approx(dict(weights), abs=1e-6)
    assert written.read_text().startswith("# Chosen by cross-judge plan-panel")


def test_a_written_cascade_plan_loads_as_a_cascade_panel_file(tmp_path: Path) -> None:
    batch, gold = pilot(FOUR, n=1500, seed=4)
    plans = quiet(batch, gold, budget_per_item=0.0016, top=50)
    plan = next(p for p in plans if p.is_cascade)
    spec = load_panel(
        plan.write(tmp_path / "cascade.yaml", panel_file=panel_file(tmp_path, list(FOUR)))
    )
    assert spec.tiers is not None and [[c.name for c in t.critics] for t in spec.tiers] == [
        list(t) for t in plan.tiers
    ]
    assert spec.escalate is not None
    assert spec.escalate.agreement_below == plan.escalation.agreement_below  # type: ignore[union-attr]


def test_a_plan_never_overwrites_a_file(tmp_path: Path) -> None:
    batch, gold = pilot(FOUR, n=300)
    plans = quiet(batch, gold, cascade=False)
    target = tmp_path / "panel.yaml"
    target.write_text("mine\n")
    with pytest.raises(ConfigError, match="never overwrites"):
        plans.write(target, panel_file=panel_file(tmp_path, list(FOUR)))
    assert target.read_text() == "mine\n"


def test_a_panel_file_without_a_chosen_critic_is_refused(tmp_path: Path) -> None:
    batch, gold = pilot(FOUR, n=300)
    plans = quiet(batch, gold, cascade=False)
    with pytest.raises(ConfigError, match="has no critic"):
        plans.write(tmp_path / "out.yaml", panel_file=panel_file(tmp_path, ["other"]))


def test_the_record_is_plain_json_and_the_table_lists_every_plan() -> None:
    batch, gold = pilot(FOUR, n=300)
    plans = quiet(batch, gold, top=4)
    record = json.loads(json.dumps(plans.record()))
    assert record["kind"] == "cross-judge panel plans" and len(record["plans"]) == 4
    text = str(plans)
    assert "Which panel" in text
    assert all(plan.critics[0] in text for plan in plans)
    assert "<table>" in plans._repr_html_()


def test_the_table_escapes_critic_names_in_html() -> None:
    batch, gold = pilot({"<b>x</b>": (0.8, 0.001), "y": (0.8, 0.001)}, n=200)
    assert "<b>x</b>" not in quiet(batch, gold)._repr_html_()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget_per_item": 0}, "budget_per_item must be USD per item above 0"),
        ({"size": 9}, "size must be a number of critics from 1 to 4"),
        ({"top": 0}, "top must be an integer >= 1"),
        ({"strategies": ["median"]}, "strategies must be some of"),
        ({"holdout": 1.5}, "holdout must be a share strictly between 0 and 1"),
    ],
)
def test_bad_options_are_refused_before_any_replay(
    options: dict[str, object], message: str
) -> None:
    batch, gold = pilot(FOUR, n=100)
    with pytest.raises(ConfigError, match=message):
        select_panel(batch, gold, **options)  # type: ignore[arg-type]


def test_a_results_file_path_is_read(tmp_path: Path) -> None:
    batch, gold = pilot(FOUR, n=200)
    path = tmp_path / "pilot.jsonl"
    batch.to_jsonl(path)
    assert quiet(str(path), gold).best.critics == quiet(batch, gold).best.critics


def test_the_method_on_a_batch_is_the_function() -> None:
    batch, gold = pilot(FOUR, n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticsWarning)
        assert batch.select_panel(gold).record() == select_panel(batch, gold).record()
