"""Confidence calibration of one critic: ECE, temperature scaling, isotonic regression."""

from __future__ import annotations

import json
import math
import random
from typing import Literal

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError
from cross_judge.stats._confidence_calibration import (
    TEMPERATURE_BOUNDS,
    ConfidenceCalibration,
    expected_calibration_error,
    fit_confidence_calibration,
)

Method = Literal["temperature", "isotonic"]


def overconfident(seed: int, n: int = 5000) -> tuple[list[float], list[bool]]:
    """States 0.85-1.0 (0.925 on average), right 70% of the time, a little more when surer."""
    rng = random.Random(seed)
    confidences = [rng.uniform(0.85, 1.0) for _ in range(n)]
    correct = [rng.random() < 0.7 + 0.5 * (c - 0.925) for c in confidences]
    return confidences, correct


def calibrated(seed: int, n: int = 5000) -> tuple[list[float], list[bool]]:
    """Right with exactly the probability it states."""
    rng = random.Random(seed)
    confidences = [rng.uniform(0.5, 1.0) for _ in range(n)]
    return confidences, [rng.random() < c for c in confidences]


def nll(temperature: float, confidences: list[float], correct: list[bool]) -> float:
    total = 0.0
    for c, y in zip(confidences, correct, strict=True):
        p = 1.0 / (1.0 + math.exp(-math.log(c / (1.0 - c)) / temperature))
        total -= math.log(p if y else 1.0 - p)
    return total


# -- expected calibration error ----------------------------------------------------------------


def test_ece_weighs_each_bins_gap_by_its_share_of_items() -> None:
    # bin [0.0, 0.1): conf 0.05, acc 0 -> 0.05 * 1/4
    # bin [0.1, 0.2): conf 0.15, acc 0.5 -> 0.35 * 2/4
    # bin [0.9, 1.0]: conf 0.95, acc 1 -> 0.05 * 1/4
    ece = expected_calibration_error([0.05, 0.15, 0.15, 0.95], [False, True, False, True])
    assert ece == pytest.approx(0.0125 + 0.175 + 0.0125)


def test_ece_is_zero_when_each_bins_accuracy_matches_its_confidence() -> None:
    assert expected_calibration_error([0.75] * 4, [True, True, True, False]) == pytest.approx(0.0)


def test_ece_bins_are_left_closed_and_the_last_holds_one() -> None:
    # With 2 bins, 0.5 and 1.0 share the upper bin: mean confidence 0.75, accuracy 0.5.
    # (Were 0.5 in the lower bin, the error would be 0.5 / 2 + 1.0 / 2 = 0.75.)
    assert expected_calibration_error([0.5, 1.0], [True, False], bins=2) == pytest.approx(0.25)


def test_ece_with_one_bin_is_the_gap_between_mean_confidence_and_accuracy() -> None:
    ece = expected_calibration_error([0.2, 0.9, 1.0, 0.7], [True, True, False, True], bins=1)
    assert ece == pytest.approx(abs(0.75 - 0.7))


def test_ece_accepts_zero_one_integers_for_correct() -> None:
    zero_one = [1, 0]
    assert expected_calibration_error([0.9, 0.9], zero_one) == pytest.approx(0.4)  # type: ignore[arg-type]  # ints on purpose


def test_fit_accepts_numpy_arrays_as_it_accepts_lists() -> None:
    np = pytest.importorskip("numpy")
    confidences, correct = overconfident(seed=8, n=200)
    from_arrays = fit_confidence_calibration(
        np.array(confidences, dtype=np.float32), np.array(correct, dtype=bool)
    )
    as_floats = [float(c) for c in np.array(confidences, dtype=np.float32)]
    assert from_arrays == fit_confidence_calibration(as_floats, correct)


@pytest.mark.parametrize(
    ("confidences", "correct", "bins", "message"),
    [
        ([], [], 10, "at least one verdict"),
        ([0.5, 0.6], [True], 10, "aligned"),
        ([1.2], [True], 10, r"confidences\[0\] = 1.2 is not a number in \[0, 1\]"),
        ([math.nan], [True], 10, r"not a number in \[0, 1\]"),
        ([None], [True], 10, "drop verdicts without a confidence"),
        ([0.5], ["yes"], 10, r"correct\[0\] = 'yes' is not True or False"),
        ([0.5], [True], 0, "bins must be an integer >= 1"),
    ],
)
def test_ece_rejects_bad_input_with_the_fix(
    confidences: list[float], correct: list[bool], bins: int, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        expected_calibration_error(confidences, correct, bins=bins)


# -- temperature scaling -----------------------------------------------------------------------


def test_temperature_of_a_calibrated_critic_is_about_one() -> None:
    fit = fit_confidence_calibration(*calibrated(seed=1))
    assert fit.method == "temperature"
    assert fit.temperature == pytest.approx(1.0, abs=0.1)


def test_temperature_tempers_an_overconfident_critic_and_halves_its_ece() -> None:
    fit = fit_confidence_calibration(*overconfident(seed=1))
    assert fit.temperature is not None
    assert fit.temperature > 1.0
    assert fit.n == 5000
    assert fit.ece_before > 0.2
    assert fit.ece_after <= fit.ece_before / 2


def test_temperature_fit_halves_the_ece_on_new_items_too() -> None:
    fit = fit_confidence_calibration(*overconfident(seed=1))
    confidences, correct = overconfident(seed=2)
    before = expected_calibration_error(confidences, correct)
    after = expected_calibration_error([fit.apply(c) for c in confidences], correct)
    assert after <= before / 2


def test_temperature_sharpens_an_underconfident_critic() -> None:
    rng = random.Random(3)
    confidences = [rng.uniform(0.5, 0.7) for _ in range(2000)]
    fit = fit_confidence_calibration(confidences, [rng.random() < 0.9 for _ in confidences])
    assert fit.temperature is not None
    assert fit.temperature < 1.0


def test_temperature_maps_a_constant_confidence_to_the_critics_accuracy() -> None:
    # One stated value: the likelihood is best where sigmoid(logit(0.95) / T) = 0.7.
    fit = fit_confidence_calibration([0.95] * 10, [True] * 7 + [False] * 3)
    assert fit.apply(0.95) == pytest.approx(0.7, abs=1e-6)
    assert fit.temperature == pytest.approx(math.log(0.95 / 0.05) / math.log(0.7 / 0.3), rel=1e-6)


def test_temperature_minimises_the_negative_log_likelihood() -> None:
    confidences, correct = overconfident(seed=4, n=500)
    fit = fit_confidence_calibration(confidences, correct)
    assert fit.temperature is not None
    best = nll(fit.temperature, confidences, correct)
    assert best <= nll(fit.temperature * 1.01, confidences, correct)
    assert best <= nll(fit.temperature / 1.01, confidences, correct)


def test_temperature_stops_at_the_bracket_when_confidence_separates_perfectly() -> None:
    fit = fit_confidence_calibration([0.2, 0.3, 0.7, 0.8], [False, False, True, True])
    assert fit.temperature == pytest.approx(TEMPERATURE_BOUNDS[0])


def test_temperature_reads_zero_and_one_without_infinities() -> None:
    fit = fit_confidence_calibration([0.0, 1.0, 1.0, 0.6], [False, True, False, True])
    low, high = fit.apply(0.0), fit.apply(1.0)
    assert 0.0 < low < high < 1.0
    assert math.isfinite(fit.ece_after)


def test_temperature_rejects_confidences_that_are_all_one_half() -> None:
    with pytest.raises(ConfigError, match="use method='isotonic'"):
        fit_confidence_calibration([0.5] * 4, [True, False, True, True])


# -- isotonic regression -----------------------------------------------------------------------


def test_isotonic_steps_are_the_accuracy_of_the_pooled_blocks() -> None:
    # 0.1: 0 | 0.2: 1, 0.3: 0 violate -> pooled 0.5 | 0.4: 1, 0.5: 1 -> pooled 1.0
    fit = fit_confidence_calibration(
        [0.3, 0.1, 0.5, 0.2, 0.4], [False, False, True, True, True], method="isotonic"
    )
    assert fit.breakpoints == (0.1, 0.2, 0.4)
    assert fit.values == (0.0, 0.5, 1.0)
    assert fit.temperature is None


def test_isotonic_pools_a_violation_back_across_several_blocks() -> None:
    # 0.1: 1/2 | 0.2: 1/1 | 0.3: 0/3. 0.2 and 0.3 pool to 1/4, now below 0.1's 1/2, so all
    # three pool to 2/6.
    fit = fit_confidence_calibration(
        [0.1, 0.1, 0.2, 0.3, 0.3, 0.3, 0.9],
        [True, False, True, False, False, False, True],
        method="isotonic",
    )
    assert fit.breakpoints == (0.1, 0.9)
    assert fit.values == pytest.approx((2 / 6, 1.0))


def test_isotonic_pools_equal_confidences_into_one_block() -> None:
    fit = fit_confidence_calibration(
        [0.6, 0.6, 0.6, 0.8], [True, False, False, True], method="isotonic"
    )
    assert fit.breakpoints == (0.6, 0.8)
    assert fit.values == pytest.approx((1 / 3, 1.0))


def test_isotonic_apply_is_a_step_function_not_an_interpolation() -> None:
    fit = fit_confidence_calibration(
        [0.3, 0.1, 0.5, 0.2, 0.4], [False, False, True, True, True], method="isotonic"
    )
    assert fit.apply(0.0) == 0.0  # below the first breakpoint: the first block
    assert fit.apply(0.15) == 0.0
    assert fit.apply(0.2) == 0.5
    assert fit.apply(0.39) == 0.5
    assert fit.apply(1.0) == 1.0


def test_isotonic_fit_does_not_depend_on_the_input_order() -> None:
    confidences, correct = overconfident(seed=5, n=300)
    pairs = list(zip(confidences, correct, strict=True))
    random.Random(6).shuffle(pairs)
    shuffled = fit_confidence_calibration(
        [c for c, _ in pairs], [y for _, y in pairs], method="isotonic"
    )
    assert shuffled == fit_confidence_calibration(confidences, correct, method="isotonic")


def test_isotonic_halves_the_ece_of_an_overconfident_critic_on_new_items() -> None:
    fit = fit_confidence_calibration(*overconfident(seed=1), method="isotonic")
    assert fit.ece_after <= fit.ece_before / 2
    confidences, correct = overconfident(seed=2)
    before = expected_calibration_error(confidences, correct)
    after = expected_calibration_error([fit.apply(c) for c in confidences], correct)
    assert after <= before / 2


# -- apply() invariants ------------------------------------------------------------------------

unit = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def gold_votes(draw: st.DrawFn) -> tuple[list[float], list[bool]]:
    """At least one right and one wrong verdict, at least one confidence other than 0.5."""
    confidences = draw(st.lists(unit, min_size=2, max_size=30))
    confidences[0] = draw(unit.filter(lambda c: c != 0.5))
    correct = draw(st.lists(st.booleans(), min_size=len(confidences), max_size=len(confidences)))
    correct[0], correct[1] = True, False
    return confidences, correct


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
@settings(max_examples=60, deadline=None)
@given(data=gold_votes(), x=unit, y=unit)
def test_apply_is_monotone_and_within_zero_and_one(
    method: Method, data: tuple[list[float], list[bool]], x: float, y: float
) -> None:
    fit = fit_confidence_calibration(*data, method=method)
    low, high = fit.apply(min(x, y)), fit.apply(max(x, y))
    assert 0.0 <= low <= high <= 1.0
    assert 0.0 <= fit.ece_after <= 1.0


def test_apply_rejects_a_confidence_outside_zero_and_one() -> None:
    fit = fit_confidence_calibration([0.6, 0.9], [False, True])
    with pytest.raises(ConfigError, match=r"confidence must be a number in \[0, 1\]"):
        fit.apply(1.5)


# -- serialisation -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
def test_to_dict_round_trips_through_json(method: Method) -> None:
    fit = fit_confidence_calibration(*overconfident(seed=7, n=400), method=method)
    restored = ConfidenceCalibration.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert restored == fit
    assert restored.apply(0.93) == fit.apply(0.93)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "platt"}, "method must be 'temperature' or 'isotonic'"),
        ({"breakpoints": [0.1, 0.1], "values": [0.2, 0.4]}, "strictly increasing"),
        ({"breakpoints": [0.1], "values": [0.2, 0.4]}, "as many values as breakpoints"),
        ({"values": [0.2, 1.5], "breakpoints": [0.1, 0.2]}, r"numbers in \[0, 1\]"),
        ({"temperature": 2.0}, "no temperature"),
        ({"n": 1}, "n must be an integer >= 2"),
        ({"extra": 1}, "unknown keys"),
    ],
)
def test_from_dict_rejects_a_malformed_calibration(change: dict[str, object], message: str) -> None:
    fit = fit_confidence_calibration([0.6, 0.9, 0.7], [False, True, True], method="isotonic")
    with pytest.raises(ConfigError, match=message):
        ConfidenceCalibration.from_dict({**fit.to_dict(), **change})


def test_from_dict_names_the_missing_keys() -> None:
    with pytest.raises(ConfigError, match=r"missing keys: \['n', 'ece_after'\]"):
        ConfidenceCalibration.from_dict({"method": "temperature", "ece_before": 0.1})


def test_a_temperature_calibration_needs_a_positive_temperature() -> None:
    with pytest.raises(ConfigError, match="temperature must be a finite number > 0"):
        ConfidenceCalibration(method="temperature", temperature=0.0, n=2, ece_before=0, ece_after=0)


# -- inputs the fit cannot use -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
def test_fit_needs_at_least_two_items(method: Method) -> None:
    with pytest.raises(ConfigError, match=r"at least 2 gold items.*label more items"):
        fit_confidence_calibration([0.9], [True], method=method)


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
def test_fit_refuses_a_critic_that_was_always_right(method: Method) -> None:
    with pytest.raises(
        ConfigError,
        match=r"right on all 3 gold items.*add gold items it got wrong",
    ):
        fit_confidence_calibration([0.9, 0.8, 0.7], [True] * 3, method=method)


def test_fit_refuses_a_critic_that_was_always_wrong() -> None:
    with pytest.raises(
        ConfigError,
        match=r"wrong on all 2 gold items.*add gold items it got right",
    ):
        fit_confidence_calibration([0.9, 0.8], [False, False])


def test_fit_rejects_confidences_outside_zero_and_one() -> None:
    with pytest.raises(ConfigError, match=r"confidences\[1\] = -0.1"):
        fit_confidence_calibration([0.9, -0.1], [True, False])


def test_fit_rejects_an_unknown_method() -> None:
    with pytest.raises(ConfigError, match="method must be 'temperature' or 'isotonic'"):
        fit_confidence_calibration([0.9, 0.1], [True, False], method="platt")  # type: ignore[arg-type]  # the mistake under test
