"""PANEL.yaml with ``tiers:``: a cascade written down once. Parsing, building, the
``simulator:`` settings, and every mistake reported at its field and line."""

from __future__ import annotations

import gc
import math
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from cross_judge import Cascade, Ensemble, Escalation
from cross_judge.panel_file import PanelError, load_panel, parse_panel
from cross_judge.testing import VendorServer

from ...waits import SAFETY_NET_S

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SECRET = "sk-live-0123456789abcdefSECRET"
ITEM = "Felines (see also: Cats)"


# Line numbers matter below: tiers[0] critics on lines 3-4, tiers[1] on 6-7.
@pytest.fixture(autouse=True)
def _simulators_stop_with_their_test() -> Iterator[None]:
    """A built cascade owns the simulator it started and stops it when collected; a
    cascade is in a reference cycle, so collect here and no server outlives its test."""
    yield
    gc.collect()


CASCADE = """\
tiers:
  - critics:
      - {name: a, model: m-a, vendor: custom, base_url: "http://127.0.0.1:1/v1"}
      - {name: b, model: m-b, vendor: custom, base_url: "http://127.0.0.1:1/v1"}
  - critics:
      - {name: c, model: m-c, vendor: custom, base_url: "http://127.0.0.1:1/v1"}
"""

SIMULATED = """\
tiers:
  - critics:
      - {name: a, vendor: simulated, persona: {accuracy: 0.75, seed: 1}}
      - {name: b, vendor: simulated, persona: {accuracy: 0.75, seed: 2}}
      - {name: c, vendor: simulated, persona: {accuracy: 0.75, seed: 3}}
  - critics:
      - {name: d, vendor: simulated, persona: {accuracy: 0.93, seed: 4}}
"""


def problem(tmp_path: Path, text: str) -> PanelError:
    path = tmp_path / "panel.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(PanelError) as info:
        load_panel(path)
    return info.value


def where(error: PanelError) -> list[tuple[str, int | None]]:
    return [(p.field, p.line) for p in error.problems]


def vendor_server_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("cross-judge-vendor-server-")}


# -- what a valid file gives --------------------------------------------------------------------


def test_a_panel_with_tiers_is_a_cascade_and_one_with_critics_is_not() -> None:
    assert parse_panel(CASCADE).is_cascade
    assert not parse_panel("critics: [{name: a, model: m}]\n").is_cascade


def test_tiers_build_a_cascade_of_ensembles_in_file_order() -> None:
    cascade = parse_panel(CASCADE).build()
    assert isinstance(cascade, Cascade)
    assert all(isinstance(tier, Ensemble) for tier in cascade.tiers)
    assert [[c.name for c in tier.critics] for tier in cascade.tiers] == [["a", "b"], ["c"]]


def test_each_tier_takes_its_own_ensemble_settings() -> None:
    text = """\
tiers:
  - voting: unanimous
    early_stop: true
    min_valid: 2
    deadline: 30
    critics:
      - {name: a, model: m-a, vendor: custom, base_url: "http://127.0.0.1:1/v1"}
      - {name: b, model: m-b, vendor: custom, base_url: "http://127.0.0.1:1/v1"}
  - voting: majority
    voting_kwargs: {priority: [REJECT]}
    critics:
      - {name: c, model: m-c, vendor: custom, base_url: "http://127.0.0.1:1/v1"}
"""
    cascade = parse_panel(text).build()
    assert isinstance(cascade, Cascade)
    cheap, strong = cascade.tiers
    assert (cheap.voting, cheap.early_stop, cheap.min_valid, cheap.deadline) == (
        "unanimous",
        True,
        2,
        30,
    )
    assert (strong.voting, strong.voting_kwargs, strong.early_stop) == (
        "majority",
        {"priority": ["REJECT"]},
        False,
    )


def test_without_escalate_the_cascade_escalates_on_errors_and_fallbacks_and_decides() -> None:
    spec = parse_panel(CASCADE)
    cascade = spec.build()
    assert isinstance(cascade, Cascade)
    assert cascade.escalate == Escalation()
    assert cascade.final == "decide"


def test_escalate_and_final_become_the_cascades_rule() -> None:
    text = (
        CASCADE
        + "escalate:\n  agreement_below: [0.9, .inf]\n  confidence_below: [null, 0.5]\n"
        + "  on_error: false\nfinal: abstain\n"
    )
    cascade = parse_panel(text).build()
    assert isinstance(cascade, Cascade)
    assert cascade.final == "abstain"
    assert cascade.escalate == Escalation(
        agreement_below=(0.9, math.inf), confidence_below=(None, 0.5), on_error=False
    )


def test_a_support_threshold_is_read_like_the_others() -> None:
    spec = parse_panel(CASCADE + "escalate: {support_below: [0.6, null]}\nfinal: abstain\n")
    assert spec.escalation() == Escalation(support_below=(0.6, None))


def test_one_threshold_applies_to_every_tier_that_can_escalate() -> None:
    spec = parse_panel(CASCADE + "escalate: {agreement_below: 1}\n")
    assert spec.escalation() == Escalation(agreement_below=1.0)


def test_a_panel_with_critics_still_builds_an_ensemble() -> None:
    ensemble = parse_panel("critics: [{name: a, model: m}]\n").build(
        environ={"DEEPSEEK_API_KEY": "k"}
    )
    assert isinstance(ensemble, Ensemble)


def test_all_critics_lists_every_tiers_critics_in_order() -> None:
    assert [c.name for c in parse_panel(CASCADE).all_critics] == ["a", "b", "c"]


# -- a panel is one ensemble or a cascade --------------------------------------------------------


def test_critics_and_tiers_together_are_refused_at_critics(tmp_path: Path) -> None:
    error = problem(tmp_path, "critics: [{name: x, model: m}]\n" + CASCADE)
    assert where(error) == [("critics", 1)]
    assert "either critics: (one ensemble) or tiers: (a cascade), not both" in str(error)


def test_neither_critics_nor_tiers_is_refused_naming_both(tmp_path: Path) -> None:
    error = problem(tmp_path, "voting: majority\n")
    assert where(error) == [("critics", None)]
    assert "critics: is required" in str(error) and "or tiers: [...] for a cascade" in str(error)


def test_an_empty_tiers_list_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, "tiers: []\n")
    assert ":1: tiers: is empty; list at least one tier" in str(error)


def test_a_tier_without_critics_is_refused_at_that_tier(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "  - voting: majority\n")
    assert where(error) == [("tiers[2].critics", 7)]
    assert "is required: the list of critics" in str(error)


def test_a_tier_with_an_empty_critics_list_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "  - critics: []\n")
    assert ":7: tiers[2].critics: is empty; list at least one critic" in str(error)


def test_ensemble_keys_at_the_top_of_a_cascade_belong_to_each_tier(tmp_path: Path) -> None:
    error = problem(tmp_path, "voting: unanimous\nmin_valid: 2\n" + CASCADE)
    assert where(error) == [("voting", 1), ("min_valid", 2)]
    assert "in a cascade each tier votes on its own; move it under each tier that needs it" in (
        str(error)
    )
    assert "(tiers[i].voting)" in str(error)


@pytest.mark.parametrize("text", ["escalate: {agreement_below: 0.5}\n", "final: abstain\n"])
def test_cascade_keys_in_a_panel_of_critics_are_refused(tmp_path: Path, text: str) -> None:
    error = problem(tmp_path, "critics: [{name: a, model: m}]\n" + text)
    field = text.split(":")[0]
    assert where(error) == [(field, 2)]
    assert "is for a cascade (a panel with tiers:)" in str(error)


def test_shape_problems_are_reported_beside_problems_inside_fields(tmp_path: Path) -> None:
    error = problem(tmp_path, "voting: majority\n" + CASCADE + "      - {name: d, model: 4}\n")
    assert where(error) == [("voting", 1), ("tiers[1].critics[1].model", 8)]


# -- mistakes inside tiers: paths and lines -------------------------------------------------------


def test_an_unknown_tier_field_suggests_the_known_one(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "    votng: majority\n")
    assert where(error) == [("tiers[1].votng", 7)]
    assert "did you mean 'voting'?" in str(error)


def test_a_critic_mistake_in_a_tier_names_its_full_path_and_line(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE.replace("m-c, vendor: custom", "m-c, vendor: acme"))
    assert where(error) == [("tiers[1].critics[0].vendor", 6)]
    assert "unknown vendor 'acme'" in str(error)


def test_a_critic_name_used_in_two_tiers_is_refused_at_the_second(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE.replace("name: c,", "name: a,"))
    assert where(error) == [("tiers[1].critics[0].name", 6)]
    assert "critic name 'a' is also used by tiers[0].critics[0]" in str(error)
    assert "across tiers" in str(error)


def test_simulated_critics_sharing_a_model_across_tiers_are_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, SIMULATED.replace("{name: d,", "{name: d, model: sim-a,"))
    assert where(error) == [("tiers[1].critics[0].model", 7)]
    assert "'sim-a' is also the model of tiers[0].critics[0]" in str(error)


def test_an_unknown_strategy_in_a_tier_is_reported_at_that_tiers_voting(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "    voting: majorty\n")
    assert where(error) == [("tiers[1].voting", 7)]
    assert "Unknown voting strategy 'majorty'" in str(error)


def test_a_quorum_above_a_tiers_size_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "    min_valid: 2\n")
    assert ":7: tiers[1].min_valid: is 2, but the panel has 1 critics" in str(error)


def test_early_stop_with_a_score_strategy_in_a_tier_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "    voting: average\n    early_stop: true\n")
    assert where(error) == [("tiers[1].early_stop", 8)]


def test_problems_of_several_tiers_are_reported_at_once_in_line_order(tmp_path: Path) -> None:
    text = CASCADE.replace(
        "  - critics:\n      - {name: c", "    voting: nope\n  - critics:\n      - {name: a"
    )
    error = problem(tmp_path, text)
    assert where(error) == [("tiers[0].voting", 5), ("tiers[1].critics[0].name", 7)]


def test_a_literal_key_in_a_tiers_critic_is_refused_unechoed(tmp_path: Path) -> None:
    text = "tiers:\n  - critics:\n      - name: a\n        model: gpt-5\n        vendor: openai\n"
    error = problem(tmp_path, text + f"        api_key: {SECRET}\n")
    assert ":6: tiers[0].critics[0].api_key: a literal key in a panel file is refused" in str(error)
    assert "api_key_env: OPENAI_API_KEY" in str(error)
    assert SECRET not in str(error)


def test_a_missing_key_of_a_tiers_critic_is_named_with_its_line() -> None:
    text = CASCADE + "      - {name: d, model: deepseek-chat, api_key_env: CJ_UNSET_KEY}\n"
    with pytest.raises(PanelError) as info:
        parse_panel(text).build(environ={})
    assert where(info.value) == [("tiers[1].critics[1].api_key_env", 7)]
    assert "CJ_UNSET_KEY is not set" in str(info.value)


# -- escalate and final ---------------------------------------------------------------------------


def test_a_percent_threshold_is_refused_as_one(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "escalate:\n  agreement_below: 90\n")
    assert where(error) == [("escalate.agreement_below", 8)]
    assert "must be in [0, 1] (a fraction, not a percent), or .inf to always escalate" in str(error)


def test_a_bad_entry_of_a_threshold_list_is_reported_at_that_entry(tmp_path: Path) -> None:
    text = CASCADE + "escalate:\n  confidence_below:\n    - 0.5\n    - 1.5\nfinal: abstain\n"
    error = problem(tmp_path, text)
    assert where(error) == [("escalate.confidence_below[1]", 10)]
    assert "must be in [0, 1]" in str(error)


def test_a_threshold_that_is_not_a_number_says_what_is_expected(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "escalate: {agreement_below: high}\n")
    assert ":7: escalate.agreement_below: expected a number in [0, 1] (.inf: always escalate)" in (
        str(error)
    )


def test_a_threshold_list_of_the_wrong_length_names_the_tiers_that_escalate(
    tmp_path: Path,
) -> None:
    error = problem(tmp_path, CASCADE + "escalate:\n  agreement_below: [0.9, 0.5]\n")
    assert where(error) == [("escalate.agreement_below", 8)]
    assert "has 2 thresholds but this cascade has 1 tier(s) that can escalate" in str(error)


def test_a_threshold_per_tier_fits_final_abstain() -> None:
    spec = parse_panel(CASCADE + "escalate: {agreement_below: [0.9, 0.5]}\nfinal: abstain\n")
    assert spec.escalation().agreement_below == (0.9, 0.5)


def test_an_unknown_escalate_field_suggests_the_known_one(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "escalate:\n  agreement_bellow: 0.9\n")
    assert where(error) == [("escalate.agreement_bellow", 8)]
    assert "did you mean 'agreement_below'?" in str(error)


def test_an_unknown_final_mode_lists_the_two(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "final: maybe\n")
    assert ":7: final: should be 'decide' or 'abstain'" in str(error)


# -- simulated critics and the simulator: settings ------------------------------------------------


def test_the_simulator_serves_the_personas_of_every_tier() -> None:
    spec = parse_panel(SIMULATED)
    assert spec.simulated_critics == ["a", "b", "c", "d"]
    assert [p.model for p in spec.personas()] == ["sim-a", "sim-b", "sim-c", "sim-d"]
    assert [p.accuracy for p in spec.personas()] == [0.75, 0.75, 0.75, 0.93]


def test_simulator_settings_reach_the_simulator() -> None:
    spec = parse_panel(SIMULATED + "simulator: {error_correlation: 0.5, difficulty_seed: 7}\n")
    items = [f"candidate {n}" for n in range(12)]
    assert [spec.simulator().difficulty_of(t) for t in items] == [
        VendorServer(difficulty_seed=7).difficulty_of(t) for t in items
    ]
    assert [spec.simulator().difficulty_of(t) for t in items] != [
        VendorServer().difficulty_of(t) for t in items
    ]


def test_error_correlation_changes_the_simulated_answers() -> None:
    plain = parse_panel(SIMULATED)
    correlated = parse_panel(SIMULATED + "simulator: {error_correlation: 0.9}\n")
    items = [f"candidate {n}" for n in range(30)]

    def answers(cascade: Ensemble | Cascade) -> list[list[str]]:
        assert isinstance(cascade, Cascade)
        results = cascade.judge_many_sync(items, all_tiers=True)
        return [[v.kind for v in r.verdicts] for r in results.verdicts]

    assert answers(plain.build()) != answers(correlated.build())


def test_keyword_arguments_win_over_the_files_simulator_settings() -> None:
    spec = parse_panel(SIMULATED + "simulator: {difficulty_seed: 7}\n")
    assert spec.simulator(difficulty_seed=3).difficulty_of("x") == VendorServer(
        difficulty_seed=3
    ).difficulty_of("x")


def test_an_error_correlation_of_1_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, SIMULATED + "simulator:\n  error_correlation: 1\n")
    assert ":9: simulator.error_correlation: should be less than 1" in str(error)


def test_an_unknown_simulator_field_suggests_the_known_one(tmp_path: Path) -> None:
    error = problem(tmp_path, SIMULATED + "simulator: {error_corelation: 0.5}\n")
    assert "simulator.error_corelation" in str(error)
    assert "did you mean 'error_correlation'?" in str(error)


def test_simulator_settings_without_simulated_critics_are_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, CASCADE + "simulator: {error_correlation: 0.5}\n")
    assert where(error) == [("simulator", 7)]
    assert "this panel has none; remove it" in str(error)


def test_build_starts_one_simulator_for_every_tier_and_stops_it_with_the_cascade() -> None:
    before = vendor_server_threads()
    cascade = parse_panel(SIMULATED + "escalate: {agreement_below: .inf}\n").build()
    started = vendor_server_threads() - before
    assert len(started) == 1
    assert isinstance(cascade, Cascade)
    result = cascade.judge_sync(ITEM)
    assert result.tier == 1 and result.n_valid == 1
    assert [t.n_valid for t in result.tiers or []] == [3, 1]

    del cascade, result
    gc.collect()
    assert not any(t.is_alive() for t in started)


@pytest.mark.anyio
async def test_a_cascade_from_a_file_escalates_as_its_rule_says() -> None:
    spec = parse_panel(SIMULATED + "escalate: {agreement_below: .inf}\nfinal: abstain\n")
    with spec.simulator() as server:
        cascade = spec.build(simulator_url=server.url)
        assert isinstance(cascade, Cascade)
        try:
            with anyio.fail_after(SAFETY_NET_S):
                result = await cascade.judge(ITEM)
        finally:
            await cascade.aclose()
    assert result.consensus == "ABSTAIN"  # .inf: no tier's result ever stands
    assert result.tier == 1 and len(result.tiers or []) == 2


@pytest.mark.anyio
async def test_the_shipped_cascade_example_builds_and_judges() -> None:
    spec = load_panel(EXAMPLES / "cascade.yaml")
    assert spec.is_cascade and spec.tiers is not None
    assert [[c.persona.accuracy for c in t.critics if c.persona] for t in spec.tiers] == [
        [0.75, 0.75, 0.75],
        [0.93],
    ]
    assert spec.escalation() == Escalation(agreement_below=1.0)
    assert spec.simulator_config is not None and spec.simulator_config.error_correlation == 0.5
    cascade = spec.build()
    assert isinstance(cascade, Cascade)
    try:
        with anyio.fail_after(SAFETY_NET_S):
            result = await cascade.judge(ITEM)
    finally:
        await cascade.aclose()
    assert result.tier in (0, 1)
    assert result.tiers is not None and result.tiers[0].n_valid == 3
