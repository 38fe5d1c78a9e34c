"""Inter-rater statistics: Krippendorff's alpha, Fleiss' and Cohen's kappa, pairwise tables.

Oracles: the ``krippendorff`` package (alpha), published worked examples, and a small numpy
confusion-matrix computation (Cohen's kappa).
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from typing import Literal

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.stats._agreement import (
    Level,
    cohen_kappa,
    fleiss_kappa,
    matrix_from_labels,
    pairwise_agreement,
    reliability_alpha,
)

Weights = Literal["linear", "quadratic"] | None

LEVELS: list[Level] = ["nominal", "ordinal", "interval", "ratio"]

NA = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section E: 4 observers
# x 12 units with missing values.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NA, NA, NA],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NA, 3],
    [NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NA],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NA],
]

# Fleiss (1971) as worked in Wikipedia's "Fleiss' kappa": 10 subjects x 5 categories, each
# cell the number of the 14 raters who chose that category.
FLEISS_1971_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def package_alpha(data: Sequence[Sequence[Hashable | None]], level: Level) -> float | None:
    """``krippendorff.alpha`` with our conventions: None for missing in, None for undefined out.

    The package wants ``np.nan`` for missing values; on undefined alpha it raises ValueError
    (no pairable unit, or fewer than two values in the domain) or returns nan (0/0 when the
    domain has values but the pairable ones do not vary).
    """
    matrix = np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
    except ValueError:
        return None
    return None if math.isnan(value) else value


def assert_same_alpha(ours: float | None, theirs: float | None) -> None:
    if theirs is None:
        assert ours is None
    else:
        assert ours is not None
        assert ours == pytest.approx(theirs, abs=1e-9)


@st.composite
def reliability_matrices(
    draw: st.DrawFn, domain: Sequence[int | float] = (0, 1, 2, 3, 4)
) -> list[list[int | float | None]]:
    """2-6 raters x 1-30 units over ``domain``, about a quarter of the cells missing."""
    raters = draw(st.integers(2, 6))
    units = draw(st.integers(1, 30))
    # 0-3 of 0-15 is missing (25%); the rest index the domain.
    cells = st.integers(0, 15).map(lambda i: None if i < 4 else domain[i % len(domain)])
    return [draw(st.lists(cells, min_size=units, max_size=units)) for _ in range(raters)]


def labels_from_counts(counts: Sequence[Sequence[int]]) -> list[list[int]]:
    """Subjects x category-count table -> raters x units label matrix (categories 1..k)."""
    columns = [
        [category for category, n in enumerate(row, start=1) for _ in range(n)] for row in counts
    ]
    raters = len(columns[0])
    assert all(len(column) == raters for column in columns)
    return [[column[r] for column in columns] for r in range(raters)]


def numpy_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], weights: Weights, labels: Sequence[Hashable]
) -> float | None:
    """Independent Cohen's kappa: confusion matrix, disagreement weights, 1 - sum wO / sum wE."""
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        observed[index[x], index[y]] += 1
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    else:
        w = ((i - j) ** 2).astype(float)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    denominator = float((w * expected).sum())
    if abs(denominator) < 1e-12:
        return None
    return 1.0 - float((w * observed).sum()) / denominator


# --- reliability_alpha: agreement with the reference implementation ------------------------


@settings(max_examples=300, deadline=None)
@given(data=reliability_matrices())
def test_alpha_matches_krippendorff_package_on_random_integer_matrices_at_every_level(
    data: list[list[int | float | None]],
) -> None:
    # One matrix, four levels: generating matrices costs more than computing alpha. Domain
    # 0..4 includes 0 for ratio too: both implementations define delta(0, 0) = 0.
    for level in LEVELS:
        assert_same_alpha(reliability_alpha(data, level), package_alpha(data, level))


@settings(max_examples=100, deadline=None)
@given(data=reliability_matrices(domain=(0.1, 0.25, 1.5, 2.0, 3.75)))
def test_alpha_matches_krippendorff_package_on_float_values(
    data: list[list[int | float | None]],
) -> None:
    for level in ("interval", "ratio"):
        assert_same_alpha(reliability_alpha(data, level), package_alpha(data, level))


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_alpha_reproduces_krippendorff_2011_worked_example(level: Level, published: float) -> None:
    alpha = reliability_alpha(KRIPPENDORFF_2011, level)
    assert alpha is not None
    assert round(alpha, 3) == published
    assert alpha == pytest.approx(package_alpha(KRIPPENDORFF_2011, level), abs=1e-12)


def test_ordinal_alpha_on_string_labels_follows_values_order() -> None:
    words = ["very low", "low", "mid", "high", "very high"]
    data = [[None if v is None else words[v - 1] for v in row] for row in KRIPPENDORFF_2011]
    alpha = reliability_alpha(data, "ordinal", values=words)
    assert alpha is not None
    assert round(alpha, 3) == 0.815


def test_ordinal_alpha_without_values_ranks_labels_by_sorted_order() -> None:
    words = ["very low", "low", "mid", "high", "very high"]
    data = [[None if v is None else words[v - 1] for v in row] for row in KRIPPENDORFF_2011]
    by_sorted = {word: rank for rank, word in enumerate(sorted(words), start=1)}
    recoded = [[None if v is None else by_sorted[v] for v in row] for row in data]
    assert reliability_alpha(data, "ordinal") == reliability_alpha(recoded, "ordinal")
    assert reliability_alpha(data, "ordinal") != reliability_alpha(data, "ordinal", values=words)


def test_ordinal_alpha_ignores_categories_nobody_used() -> None:
    data = [[1, 2, 3, 3], [1, 3, 3, 2]]
    assert reliability_alpha(data, "ordinal", values=[1, 2, 3]) == reliability_alpha(
        data, "ordinal", values=[0, 1, 2, 2.5, 3, 9]
    )


def test_nan_counts_as_missing_like_none() -> None:
    with_nan = [[math.nan if v is None else v for v in row] for row in KRIPPENDORFF_2011]
    for level in LEVELS:
        assert reliability_alpha(with_nan, level) == reliability_alpha(KRIPPENDORFF_2011, level)


def test_alpha_is_one_for_perfect_agreement_with_variation() -> None:
    assert reliability_alpha([["a", "b", "c"], ["a", "b", "c"]]) == 1.0


# --- reliability_alpha: undefined cases and edges -----------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_is_none_when_every_value_is_identical(level: Level) -> None:
    assert reliability_alpha([[3, 3, 3], [3, 3, None], [3, None, 3]], level) is None


def test_alpha_is_none_when_pairable_values_do_not_vary_even_if_a_lone_value_does() -> None:
    # The 2 in the last unit has no partner, so it is not pairable: no variation to compare.
    assert reliability_alpha([[1, 1, 2], [1, 1, None]]) is None


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_is_none_when_everything_is_missing(level: Level) -> None:
    assert reliability_alpha([[None, None], [None, math.nan]], level) is None


def test_alpha_is_none_for_a_single_rater() -> None:
    assert reliability_alpha([[1, 2, 3, 4]]) is None


def test_alpha_is_none_for_no_rows_or_no_units() -> None:
    assert reliability_alpha([]) is None
    assert reliability_alpha([[], []]) is None


def test_alpha_is_none_when_no_unit_has_two_values() -> None:
    assert reliability_alpha([[1, None, 3], [None, 2, None]]) is None


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_of_a_single_unit_with_different_values_is_zero(level: Level) -> None:
    assert reliability_alpha([[1], [2], [4]], level) == 0.0


def test_unpairable_units_do_not_change_alpha() -> None:
    extra = [[*row, v] for row, v in zip(KRIPPENDORFF_2011, [7, None, None, None], strict=True)]
    assert reliability_alpha(extra, "interval") == reliability_alpha(KRIPPENDORFF_2011, "interval")


def test_unequal_row_lengths_raise_naming_the_row() -> None:
    with pytest.raises(ValueError, match="Row 2 has 2 values but row 0 has 3"):
        reliability_alpha([[1, 2, 3], [1, 2, 3], [1, 2]])


def test_unknown_level_raises() -> None:
    with pytest.raises(ValueError, match="Unknown level"):
        reliability_alpha([[1, 2], [1, 2]], "cardinal")  # type: ignore[arg-type]


@pytest.mark.parametrize("level", LEVELS)
def test_value_outside_values_raises(level: Level) -> None:
    with pytest.raises(ValueError, match="Value 9 is not in values"):
        reliability_alpha([[1, 2, 9], [1, 2, 3]], level, values=[1, 2, 3])


def test_value_outside_values_raises_even_in_an_unpairable_unit() -> None:
    with pytest.raises(ValueError, match="not in values"):
        reliability_alpha([["a", "b", "zzz"], ["a", "b", None]], values=["a", "b"])


def test_duplicate_values_raise() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        reliability_alpha([[1, 2], [1, 2]], "ordinal", values=[1, 2, 2])


def test_values_declares_the_domain_without_changing_nominal_or_interval_alpha() -> None:
    for level in ("nominal", "interval"):
        assert reliability_alpha(KRIPPENDORFF_2011, level, values=[5, 4, 3, 2, 1, 0]) == (
            reliability_alpha(KRIPPENDORFF_2011, level)
        )


@pytest.mark.parametrize("level", ["interval", "ratio"])
def test_interval_and_ratio_reject_strings(level: Level) -> None:
    with pytest.raises(ValueError, match="finite real numbers"):
        reliability_alpha([["1", "2"], ["1", "3"]], level)


@pytest.mark.parametrize("level", ["interval", "ratio"])
def test_interval_and_ratio_reject_bools(level: Level) -> None:
    with pytest.raises(ValueError, match="finite real numbers"):
        reliability_alpha([[True, False], [True, True]], level)


def test_interval_rejects_infinity() -> None:
    with pytest.raises(ValueError, match="finite real numbers"):
        reliability_alpha([[1.0, math.inf], [1.0, 2.0]], "interval")


def test_nominal_treats_bools_as_labels() -> None:
    assert reliability_alpha([[True, False, True], [True, False, True]]) == 1.0


def test_ordinal_labels_that_cannot_be_sorted_ask_for_values() -> None:
    with pytest.raises(ValueError, match="pass values"):
        reliability_alpha([["a", 1], ["a", 2]], "ordinal")


def test_ratio_distance_between_zero_and_zero_is_zero() -> None:
    # Units (0, 0) agree perfectly; (0, 4) is maximally apart on the ratio scale.
    assert reliability_alpha([[0, 0, 4], [0, 0, 4]], "ratio") == 1.0


def test_alpha_on_100k_units_by_5_raters_is_a_float_in_range() -> None:
    rng = random.Random(20240601)
    truth = [rng.randrange(5) for _ in range(100_000)]
    data: list[list[int | None]] = [
        [
            None if rng.random() < 0.1 else (t if rng.random() < 0.7 else rng.randrange(5))
            for t in truth
        ]
        for _ in range(5)
    ]
    alpha = reliability_alpha(data)
    assert isinstance(alpha, float)
    assert -1.0 <= alpha <= 1.0


# --- fleiss_kappa --------------------------------------------------------------------------


def test_fleiss_kappa_reproduces_fleiss_1971_worked_example() -> None:
    kappa = fleiss_kappa(labels_from_counts(FLEISS_1971_COUNTS))
    assert kappa is not None
    assert round(kappa, 3) == 0.210


def test_fleiss_kappa_drops_units_with_a_missing_value() -> None:
    data: list[list[int | None]] = [list(row) for row in labels_from_counts(FLEISS_1971_COUNTS)]
    for r, row in enumerate(data):
        row.append(None if r == 3 else 1)
    assert fleiss_kappa(data) == fleiss_kappa(labels_from_counts(FLEISS_1971_COUNTS))


def test_fleiss_kappa_is_none_when_no_unit_is_complete() -> None:
    assert fleiss_kappa([[1, None], [None, 2]]) is None


def test_fleiss_kappa_is_none_for_a_single_rater() -> None:
    assert fleiss_kappa([[1, 2, 3]]) is None


def test_fleiss_kappa_is_none_when_every_rating_is_the_same_label() -> None:
    assert fleiss_kappa([["a", "a"], ["a", "a"], ["a", "a"]]) is None


def test_fleiss_kappa_is_one_for_perfect_agreement() -> None:
    assert fleiss_kappa([["a", "b"], ["a", "b"], ["a", "b"]]) == 1.0


def test_fleiss_kappa_raises_on_unequal_rows() -> None:
    with pytest.raises(ValueError, match="Row 1"):
        fleiss_kappa([[1, 2], [1]])


# --- cohen_kappa ---------------------------------------------------------------------------


def test_cohen_kappa_hand_computed_example() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-15)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=40))
def test_cohen_kappa_matches_numpy_confusion_matrix_oracle(
    weights: Weights, pairs: list[tuple[int, int]]
) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    expected = numpy_kappa(a, b, weights, sorted(set(a) | set(b)))
    ours = cohen_kappa(a, b, weights=weights)
    assert_same_alpha(ours, expected)


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_cohen_kappa_counts_unused_categories_in_values(weights: Weights) -> None:
    a = ["low", "low", "high", "mid", "high"]
    b = ["low", "high", "high", "low", "mid"]
    order = ["low", "mid", "unused", "high"]
    kappa = cohen_kappa(a, b, weights=weights, values=order)
    assert kappa == pytest.approx(numpy_kappa(a, b, weights, order), abs=1e-12)


def test_cohen_kappa_drops_pairs_with_a_missing_value() -> None:
    a = [1, 2, None, 2, 1, math.nan]
    b = [1, 2, 3, 1, None, 2]
    assert cohen_kappa(a, b) == cohen_kappa([1, 2, 2], [1, 2, 1])


def test_cohen_kappa_is_none_without_shared_units() -> None:
    assert cohen_kappa([1, None], [None, 2]) is None


def test_cohen_kappa_is_none_when_both_raters_use_one_label() -> None:
    assert cohen_kappa(["a", "a", "a"], ["a", "a", "a"]) is None
    assert cohen_kappa([1, 1], [1, 1], weights="quadratic") is None


def test_cohen_kappa_raises_on_different_lengths() -> None:
    with pytest.raises(ValueError, match="a has 2 values but b has 3"):
        cohen_kappa([1, 2], [1, 2, 3])


def test_cohen_kappa_raises_on_label_outside_values() -> None:
    with pytest.raises(ValueError, match="not in values"):
        cohen_kappa(["a", "b"], ["a", "c"], values=["a", "b"])


def test_cohen_kappa_checks_labels_paired_with_a_gap_against_values() -> None:
    with pytest.raises(ValueError, match="not in values"):
        cohen_kappa(["a", "zzz"], ["a", None], values=["a", "b"])


def test_cohen_kappa_raises_on_unknown_weights() -> None:
    with pytest.raises(ValueError, match="Unknown weights"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")  # type: ignore[arg-type]


# --- pairwise_agreement --------------------------------------------------------------------

PAIRWISE: list[list[str | None]] = [
    ["a", "b", "a", None],
    ["a", "b", "b", "a"],
    ["b", "b", "a", "a"],
]


def test_pairwise_percent_agreement_is_symmetric_and_omits_self_pairs() -> None:
    table = pairwise_agreement(PAIRWISE, names=["x", "y", "z"])
    assert set(table) == {
        ("x", "y"),
        ("y", "x"),
        ("x", "z"),
        ("z", "x"),
        ("y", "z"),
        ("z", "y"),
    }
    for (i, j), value in table.items():
        assert table[j, i] == value


def test_pairwise_percent_agreement_counts_only_units_both_rated() -> None:
    table = pairwise_agreement(PAIRWISE, names=["x", "y", "z"])
    assert table["x", "y"] == pytest.approx(2 / 3)  # unit 3 has no value from x
    assert table["y", "z"] == pytest.approx(2 / 4)


def test_pairwise_percent_agreement_is_none_without_shared_units() -> None:
    assert pairwise_agreement([[1, None], [None, 1]]) == {("0", "1"): None, ("1", "0"): None}


def test_pairwise_names_default_to_row_indices() -> None:
    assert ("0", "2") in pairwise_agreement(PAIRWISE)


def test_pairwise_cohen_uses_cohen_kappa_of_the_two_rows() -> None:
    table = pairwise_agreement(PAIRWISE, measure="cohen")
    assert table["1", "2"] == cohen_kappa(PAIRWISE[1], PAIRWISE[2])
    assert table["2", "1"] == table["1", "2"]


def test_pairwise_of_a_single_rater_is_empty() -> None:
    assert pairwise_agreement([[1, 2, 3]]) == {}


def test_pairwise_names_must_match_rows() -> None:
    with pytest.raises(ValueError, match="2 names for 3 rows"):
        pairwise_agreement(PAIRWISE, names=["x", "y"])


def test_pairwise_names_must_be_unique() -> None:
    with pytest.raises(ValueError, match="unique"):
        pairwise_agreement(PAIRWISE, names=["x", "y", "x"])


def test_pairwise_unknown_measure_raises() -> None:
    with pytest.raises(ValueError, match="Unknown measure"):
        pairwise_agreement(PAIRWISE, measure="kendall")  # type: ignore[arg-type]


# --- matrix_from_labels --------------------------------------------------------------------


def test_matrix_from_labels_orders_raters_by_first_appearance_and_fills_gaps() -> None:
    names, matrix = matrix_from_labels(
        [{"gpt": "KEEP", "claude": "KEEP"}, {"claude": "REJECT", "gemini": None}, {"gpt": "KEEP"}]
    )
    assert names == ["gpt", "claude", "gemini"]
    assert matrix == [["KEEP", None, "KEEP"], ["KEEP", "REJECT", None], [None, None, None]]


def test_matrix_from_labels_uses_the_given_rater_order() -> None:
    names, matrix = matrix_from_labels([{"a": 1, "b": 2}], raters=["b", "a", "c"])
    assert names == ["b", "a", "c"]
    assert matrix == [[2], [1], [None]]


def test_matrix_from_labels_rejects_a_rater_not_in_raters() -> None:
    with pytest.raises(ValueError, match="Unit 1 has raters \\['z'\\]"):
        matrix_from_labels([{"a": 1}, {"z": 2}], raters=["a"])


def test_matrix_from_labels_feeds_reliability_alpha() -> None:
    units = [{"a": 1, "b": 1}, {"a": 2, "b": 2}, {"a": 3}]
    _, matrix = matrix_from_labels(units)
    assert reliability_alpha(matrix) == 1.0
