"""The rubric's data: what a criterion and a rubric accept, and the weighted total."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, strategies as st
from pydantic import ValidationError

from cross_judge.rubric import MET_AT, Criterion, Rubric


def c(cid: str, weight: float = 1.0, *, gate: bool = False) -> Criterion:
    return Criterion(id=cid, requirement=f"{cid} holds.", weight=weight, gate=gate)


def rubric(*criteria: Criterion, **kwargs: Any) -> Rubric:
    return Rubric(criteria=criteria, **kwargs)


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [0, math.nan, math.inf, -math.inf])
def test_a_zero_or_non_finite_weight_is_refused_by_name(weight: float) -> None:
    with pytest.raises(ValidationError, match="weight must be a finite number other than 0"):
        c("a", weight)


@pytest.mark.parametrize("weight", [True, False])
def test_a_boolean_weight_is_refused_rather_than_read_as_a_number(weight: bool) -> None:
    with pytest.raises(ValidationError, match="weight must be a finite number"):
        Criterion(id="a", requirement="r", weight=weight)


def test_a_negative_weight_is_accepted_and_kept() -> None:
    assert c("insults", -2).weight == -2.0


def test_a_gate_with_a_negative_weight_is_refused() -> None:
    with pytest.raises(ValidationError, match="'bad' is a gate with a negative weight"):
        c("bad", -1, gate=True)


@pytest.mark.parametrize("cid", ["1a", "", "a b", "a.b", "x" * 65])
def test_an_id_that_cannot_be_a_json_key_and_column_is_refused(cid: str) -> None:
    with pytest.raises(ValidationError, match="must start with a letter or _"):
        Criterion(id=cid, requirement="r")


def test_an_empty_requirement_is_refused() -> None:
    with pytest.raises(ValidationError, match="requirement must say what must hold"):
        Criterion(id="a", requirement="  ")


def test_a_rubric_without_criteria_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least one criterion"):
        Rubric(criteria=())


def test_repeated_criterion_ids_are_refused_and_named() -> None:
    with pytest.raises(ValidationError, match=r"unique; repeated: \['a'\]"):
        rubric(c("a"), c("b"), c("a", 2))


def test_a_rubric_of_negative_criteria_only_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least one criterion needs a positive weight"):
        rubric(c("a", -1), c("b", -2))


def test_a_scale_of_one_label_is_refused() -> None:
    with pytest.raises(ValidationError, match="at least two labels"):
        rubric(c("a"), scale={"PASS": 1.0})


@pytest.mark.parametrize("score", [1.5, -0.1, math.nan])
def test_a_scale_score_outside_0_1_is_refused_naming_the_label(score: float) -> None:
    with pytest.raises(ValidationError, match="the score of 'GOOD' must be in"):
        rubric(c("a"), scale={"GOOD": score, "BAD": 0.0})


def test_a_boolean_scale_score_is_refused() -> None:
    with pytest.raises(ValidationError, match="the score of 'GOOD' must be in"):
        rubric(c("a"), scale={"GOOD": True, "BAD": 0.0})


@pytest.mark.parametrize("threshold", [-0.1, 1.1, math.nan, True])
def test_a_threshold_outside_0_1_is_refused(threshold: float) -> None:
    with pytest.raises(ValidationError, match="threshold must be in"):
        rubric(c("a"), threshold=threshold)


def test_criterion_lookup_names_the_known_ids_when_missing() -> None:
    with pytest.raises(KeyError, match=r"\['a', 'b'\]"):
        rubric(c("a"), c("b")).criterion("z")


# -- the total -------------------------------------------------------------------------------


def test_the_total_is_the_positive_weights_met_over_their_sum() -> None:
    r = rubric(c("a", 3), c("b", 1))
    assert r.total({"a": 1.0, "b": 0.0}) == pytest.approx(0.75)


def test_a_met_negative_criterion_subtracts_its_weight() -> None:
    r = rubric(c("a", 3), c("b", 1), c("insults", -2))
    assert r.total({"a": 1.0, "b": 1.0, "insults": 1.0}) == pytest.approx(0.5)


def test_an_unmet_negative_criterion_subtracts_nothing() -> None:
    r = rubric(c("a", 3), c("b", 1), c("insults", -2))
    assert r.total({"a": 1.0, "b": 1.0, "insults": 0.0}) == 1.0


def test_the_total_is_clipped_at_zero() -> None:
    r = rubric(c("a", 1), c("insults", -5))
    assert r.total({"a": 1.0, "insults": 1.0}) == 0.0


def test_a_gate_not_met_makes_the_total_zero() -> None:
    r = rubric(c("correct", 3, gate=True), c("cites", 1))
    assert r.total({"correct": 0.0, "cites": 1.0}) == 0.0


def test_a_gate_not_met_decides_the_total_even_with_undecided_criteria() -> None:
    r = rubric(c("correct", 3, gate=True), c("cites", 1))
    assert r.total({"correct": 0.0, "cites": None}) == 0.0
    assert r.total({"correct": 0.0}) == 0.0


def test_a_gate_just_at_the_met_mark_is_met() -> None:
    r = rubric(c("correct", gate=True), c("cites"), scale={"Y": 1.0, "H": MET_AT, "N": 0.0})
    assert r.total({"correct": MET_AT, "cites": 1.0}) == pytest.approx(0.75)


def test_an_undecided_criterion_makes_the_total_undecided() -> None:
    r = rubric(c("a"), c("b"))
    assert r.total({"a": 1.0, "b": None}) is None
    assert r.total({"a": 1.0}) is None


def test_the_partial_total_leaves_undecided_criteria_out_of_the_denominator() -> None:
    r = rubric(c("a", 3), c("b", 1))
    assert r.partial_total({"a": 1.0, "b": None}) == 1.0
    assert r.partial_total({"b": 1.0}) == 1.0


def test_the_partial_total_is_none_without_a_scored_positive_criterion() -> None:
    r = rubric(c("a"), c("insults", -1))
    assert r.partial_total({"insults": 1.0}) is None
    assert r.partial_total({}) is None


def test_the_partial_total_is_zero_for_a_failed_gate() -> None:
    r = rubric(c("a", gate=True), c("b"))
    assert r.partial_total({"a": 0.0}) == 0.0


def test_an_item_passes_at_the_threshold_and_fails_below() -> None:
    r = rubric(c("a"), threshold=0.6)
    assert r.passes(0.6)
    assert not r.passes(0.59)


# -- scales ----------------------------------------------------------------------------------


def test_the_default_scale_is_pass_1_fail_0_and_binary() -> None:
    r = rubric(c("a"))
    assert r.scale == {"PASS": 1.0, "FAIL": 0.0}
    assert r.labels == ("PASS", "FAIL")
    assert not r.ordinal


def test_a_scale_of_more_than_two_labels_is_ordinal_and_keeps_its_order() -> None:
    scale = {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}
    r = rubric(c("a"), scale=scale)
    assert r.ordinal
    assert r.labels == ("1", "2", "3", "4", "5")
    assert r.score_of("4") == 0.75
    assert r.score_of("6") is None


def test_an_ordinal_total_weights_each_criterion_by_its_score() -> None:
    r = rubric(c("a", 1), c("b", 3), scale={"lo": 0.0, "mid": 0.5, "hi": 1.0})
    assert r.total({"a": 1.0, "b": 0.5}) == pytest.approx((1 + 1.5) / 4)


# -- properties ------------------------------------------------------------------------------

weights = st.one_of(
    st.floats(min_value=0.01, max_value=100), st.floats(min_value=-100, max_value=-0.01)
)
scores = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def rubrics(draw: st.DrawFn) -> Rubric:
    n = draw(st.integers(min_value=1, max_value=6))
    ws = draw(st.lists(weights, min_size=n, max_size=n))
    ws[0] = abs(ws[0])
    gates = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return rubric(
        *(c(f"c{i}", w, gate=g and w > 0) for i, (w, g) in enumerate(zip(ws, gates, strict=True)))
    )


@given(rubrics(), st.data())
def test_the_total_is_always_between_0_and_1(r: Rubric, data: st.DataObject) -> None:
    got = r.total({cid: data.draw(scores) for cid in r.ids})
    assert got is not None
    assert 0.0 <= got <= 1.0


@given(rubrics())
def test_all_positive_criteria_met_and_no_negative_met_totals_1(r: Rubric) -> None:
    met = {x.id: (1.0 if x.weight > 0 else 0.0) for x in r.criteria}
    assert r.total(met) == pytest.approx(1.0)


@given(rubrics(), st.data())
def test_the_total_never_falls_when_a_positive_criterion_scores_higher(
    r: Rubric, data: st.DataObject
) -> None:
    base = {cid: data.draw(scores) for cid in r.ids}
    target = data.draw(st.sampled_from([x.id for x in r.criteria if x.weight > 0]))
    higher = {**base, target: data.draw(st.floats(min_value=base[target], max_value=1.0))}
    low, high = r.total(base), r.total(higher)
    assert low is not None and high is not None
    assert high >= low - 1e-12


@given(rubrics(), st.data())
def test_a_failed_gate_makes_the_total_zero(r: Rubric, data: st.DataObject) -> None:
    gated = r.model_copy(update={"criteria": (c("gate", 1.0, gate=True), *r.criteria)})
    values = {cid: data.draw(st.one_of(st.none(), scores)) for cid in r.ids}
    values["gate"] = data.draw(st.floats(min_value=0.0, max_value=MET_AT, exclude_max=True))
    assert gated.total(values) == 0.0
