"""The bins of the expected calibration error and the reliability table: bin ``b`` of ``B``
holds ``b/B <= c < (b+1)/B`` (the last also 1.0), each edge the float nearest to ``b/B``,
so a confidence written as 0.29 sits on the edge 29/100, not one bin below it."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError
from cross_judge.stats._confidence_calibration import calibration_bin, expected_calibration_error
from cross_judge.stats._gold import gold_metrics


def reliability_counts(confidences: list[float], bins: int) -> list[int]:
    """The reliability table's count per bin for one critic always right."""
    report = gold_metrics(
        [["x"] for _ in confidences],
        ["c"],
        ["x"] * len(confidences),
        confidences=[[c] for c in confidences],
        bins=bins,
    )
    table = report["c"].reliability
    assert table is not None
    return [row.count for row in table]


@pytest.mark.parametrize("confidence", [0.29, 0.57, 0.58])
def test_a_confidence_on_an_edge_falls_in_the_bin_the_edge_opens(confidence: float) -> None:
    # 0.29 * 100 == 28.999999999999996 in floats: floor(c * B) put these one bin low.
    assert calibration_bin(confidence, 100) == round(confidence * 100)


def test_every_decimal_edge_opens_its_own_bin() -> None:
    for bins in (3, 7, 10, 20, 50, 100, 1000):
        for b in range(bins):
            assert calibration_bin(b / bins, bins) == b


def test_one_and_zero_fall_in_the_last_and_first_bins() -> None:
    assert calibration_bin(1.0, 100) == 99
    assert calibration_bin(0.0, 100) == 0
    assert calibration_bin(1.0, 1) == 0


def test_the_reliability_table_counts_an_edge_confidence_in_its_bin() -> None:
    counts = reliability_counts([0.29, 0.57, 0.58], bins=100)
    assert [b for b, count in enumerate(counts) if count] == [29, 57, 58]


def test_ece_bins_an_edge_confidence_with_the_bin_it_opens() -> None:
    # Exact bins: {0.28 wrong} and {0.29 right}: (0.28 + 0.71) / 2. Binned one low, the two
    # share a bin: |1 - 0.57| / 2 = 0.215.
    ece = expected_calibration_error([0.28, 0.29], [False, True], bins=100)
    assert ece == pytest.approx((0.28 + 0.71) / 2, abs=1e-12)


def test_the_reliability_table_edges_are_the_floats_nearest_b_over_bins() -> None:
    report = gold_metrics([["x"]], ["c"], ["x"], confidences=[[0.5]], bins=100)
    table = report["c"].reliability
    assert table is not None
    assert [row.lo for row in table] == [b / 100 for b in range(100)]
    assert [row.hi for row in table] == [(b + 1) / 100 for b in range(100)]


def test_calibration_bin_refuses_what_is_not_a_confidence_or_a_bin_count() -> None:
    with pytest.raises(ConfigError, match="bins must be an integer >= 1"):
        calibration_bin(0.5, 0)
    with pytest.raises(ConfigError, match=r"not a number in \[0, 1\]"):
        calibration_bin(1.5, 10)


# -- the same bins as np.digitize over the edges b / B -------------------------------------------


def neighbours(bins: int) -> list[float]:
    """Every edge of ``bins`` and the floats just either side of it, inside [0, 1]."""
    values = []
    for b in range(bins + 1):
        edge = b / bins
        values += [edge, math.nextafter(edge, -1.0), math.nextafter(edge, 2.0)]
    return [v for v in values if 0.0 <= v <= 1.0]


@pytest.mark.parametrize("bins", [1, 2, 3, 7, 10, 15, 49, 100, 128, 1000])
def test_bins_equal_np_digitize_over_the_edges_b_over_bins(bins: int) -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(bins)
    values = neighbours(bins) + [rng.random() for _ in range(2000)]
    edges = np.arange(1, bins) / bins  # the interior edges, each the float nearest b / B
    expected = np.digitize(values, edges)  # edges[i - 1] <= c < edges[i]
    assert [calibration_bin(c, bins) for c in values] == expected.tolist()


@settings(max_examples=300, deadline=None)
@given(c=st.floats(min_value=0.0, max_value=1.0), bins=st.integers(min_value=1, max_value=500))
def test_bins_equal_np_digitize_for_any_confidence(c: float, bins: int) -> None:
    np = pytest.importorskip("numpy")
    assert calibration_bin(c, bins) == int(np.digitize(c, np.arange(1, bins) / bins))


def test_linspace_edges_differ_from_b_over_bins_by_one_ulp_at_some_edges() -> None:
    np = pytest.importorskip("numpy")
    # The documented difference from np.linspace(0, 1, B + 1) edges (as sklearn's
    # calibration_curve uses): linspace computes edge b as b * (1 / B), which for B = 100
    # rounds 0.57 and 0.35 one ulp off, so a confidence of exactly 0.57 lands in bin 56
    # there and in bin 57 here. Everywhere off those edges the two agree.
    linspace = np.linspace(0.0, 1.0, 101)[1:-1]
    assert int(np.digitize(0.57, linspace)) == 56 and calibration_bin(0.57, 100) == 57
    off_edges = [c for c in (random.Random(1).random() for _ in range(5000)) if c not in linspace]
    assert [calibration_bin(c, 100) for c in off_edges] == np.digitize(off_edges, linspace).tolist()
