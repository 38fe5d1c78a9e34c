"""Paired statistics: McNemar, the paired-proportion interval, Wilcoxon, the paired bootstrap,
the minimum detectable effects and Holm's adjustment.

statsmodels and scipy are checked live in tests/unit/stats/test_paired_oracles.py
(``nox -s paired``); here their answers are recorded as literals (computed once with
statsmodels 0.15.0 and scipy 1.17.1), beside exact values computed with :mod:`fractions` and
invariants checked with hypothesis, so this file needs neither.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.stats import (
    holm,
    linear_quantile,
    mcnemar_exact,
    mcnemar_mde,
    mean_difference_mde,
    paired_bootstrap_interval,
    paired_proportion_interval,
    wilcoxon_signed_rank,
)
from cross_judge.stats._paired import (
    _binomial_sampler,
    _binomial_variate,
    _elementwise_means,
    _multinomial_means,
)

Z_975 = statistics.NormalDist().inv_cdf(0.975)
Z_80 = statistics.NormalDist().inv_cdf(0.8)


def exact_mcnemar(b: int, c: int) -> Fraction:
    """``min(1, 2 P(X <= min(b, c)))`` for ``X ~ Binomial(b + c, 1/2)``, as a fraction."""
    n = b + c
    term = tail = 1  # C(n, 0); C(n, k + 1) = C(n, k) (n - k) / (k + 1), exactly
    for k in range(min(b, c)):
        term = term * (n - k) // (k + 1)
        tail += term
    assert term == math.comb(n, min(b, c))
    return min(Fraction(1), Fraction(2 * tail, 2**n))


# --- mcnemar_exact ----------------------------------------------------------------------


def test_mcnemar_small_counts_equal_the_hand_computed_binomial_tail() -> None:
    # b=1, c=6: 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * 8 / 128.
    assert exact_mcnemar(1, 6) == Fraction(1, 8)
    assert mcnemar_exact(1, 6) == 0.125
    assert mcnemar_exact(0, 5) == float(Fraction(2, 32))
    assert mcnemar_exact(3, 12) == float(exact_mcnemar(3, 12))


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_equal_counts_is_one() -> None:
    assert mcnemar_exact(7, 7) == 1.0
    assert mcnemar_exact(60_000, 60_000) == 1.0


def test_mcnemar_is_correctly_rounded_below_the_exact_limit() -> None:
    for b, c in [(0, 1), (1, 1), (10, 25), (400, 520), (2400, 2600), (0, 5000)]:
        assert mcnemar_exact(b, c) == float(exact_mcnemar(b, c))


@pytest.mark.parametrize(("b", "c"), [(2450, 2551), (2900, 3100), (5600, 6400), (10, 7000)])
def test_mcnemar_floating_point_path_agrees_with_the_exact_sum(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(float(exact_mcnemar(b, c)), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(
    ("b", "c", "statsmodels_p"),
    [
        (3, 30, 1.4011748135089874e-06),
        (120, 95, 0.10145232764870649),
        (2400, 2600, 0.004883649737517494),
        (10_000, 10_400, 0.005211904014323954),
        (99_800, 100_200, 0.3722905400576759),
    ],
)
def test_mcnemar_equals_recorded_statsmodels_values(b: int, c: int, statsmodels_p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(statsmodels_p, abs=1e-12)


def test_mcnemar_underflows_to_zero_for_a_one_sided_large_table() -> None:
    assert mcnemar_exact(0, 200_000) == 0.0
    assert mcnemar_exact(0, 1100) == float(Fraction(2, 2**1100))


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 3)
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(3, -1)


counts = st.integers(min_value=0, max_value=12_000)


@given(counts, counts)
@settings(max_examples=150, deadline=None)
def test_mcnemar_is_a_probability_symmetric_in_b_and_c(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert 0.0 <= p <= 1.0
    assert mcnemar_exact(c, b) == p


@given(st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=9000))
@settings(max_examples=150, deadline=None)
def test_mcnemar_never_rises_when_the_larger_count_grows(smaller: int, extra: int) -> None:
    larger = smaller + extra
    assert mcnemar_exact(smaller, larger + 1) <= mcnemar_exact(smaller, larger)


def test_mcnemar_is_monotone_across_the_exact_limit() -> None:
    values = [mcnemar_exact(2400, c) for c in range(2590, 2610)]
    assert values == sorted(values, reverse=True)


# --- paired_proportion_interval ---------------------------------------------------------


def test_paired_interval_equals_the_hand_computed_agresti_min_interval() -> None:
    # b=10, c=2, n=50: cells + 0.5 over n + 2 = 52: 10.5/52 and 2.5/52, difference 8/52,
    # variance (13/52 - (8/52)^2) / 52.
    difference = 8 / 52
    se = math.sqrt((13 / 52 - difference**2) / 52)
    low, high = paired_proportion_interval(10, 2, 50)
    assert low == pytest.approx(difference - Z_975 * se, abs=1e-15)
    assert high == pytest.approx(difference + Z_975 * se, abs=1e-15)
    assert (round(low, 6), round(high, 6)) == (0.02454, 0.283152)


def test_paired_interval_without_discordant_pairs_is_centred_on_zero() -> None:
    low, high = paired_proportion_interval(0, 0, 40)
    assert low == -high
    assert high > 0.0


def test_paired_interval_is_antisymmetric_in_b_and_c() -> None:
    low, high = paired_proportion_interval(12, 3, 60, confidence=0.9)
    assert paired_proportion_interval(3, 12, 60, confidence=0.9) == (-high, -low)


def test_paired_interval_is_clipped_to_minus_one_one() -> None:
    low, high = paired_proportion_interval(1, 0, 1)
    assert -1.0 <= low < high == 1.0


def test_paired_interval_without_items_is_everything() -> None:
    assert paired_proportion_interval(0, 0, 0) == (-1.0, 1.0)


def test_paired_interval_widens_with_confidence() -> None:
    narrow = paired_proportion_interval(20, 9, 200, confidence=0.8)
    wide = paired_proportion_interval(20, 9, 200, confidence=0.99)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


@pytest.mark.parametrize(
    ("b", "c", "n", "confidence"),
    [(5, 6, 10, 0.95), (-1, 0, 10, 0.95), (0, 0, -1, 0.95), (1, 1, 10, 1.0), (1, 1, 10, 0.0)],
)
def test_paired_interval_rejects_impossible_arguments(
    b: int, c: int, n: int, confidence: float
) -> None:
    with pytest.raises(ValueError):
        paired_proportion_interval(b, c, n, confidence)


@given(st.integers(0, 500), st.integers(0, 500), st.integers(0, 500))
def test_paired_interval_holds_the_shrunk_estimate(b: int, c: int, extra: int) -> None:
    n = b + c + extra
    low, high = paired_proportion_interval(b, c, n)
    assert -1.0 <= low <= (b - c) / (n + 2) <= high <= 1.0


# --- wilcoxon_signed_rank ---------------------------------------------------------------

# Hollander & Wolfe (1973), p. 29: Hamilton depression scale before (x) and after (y) the
# first tranquilliser visit, the example of R's ?wilcox.test. V = 40, one-sided exact
# p = 0.01953 (10 of the 512 sign patterns have a negative-rank sum <= 5), two-sided 20/512.
HAMILTON_X = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
HAMILTON_Y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]

TIED_SCORES = [2, -1, 0, 3, 1, 1, -2, 4, 0, 2, 1, -1, 3, 2, 0, 1, -3, 2, 1, 1]
TIED_SCORES_SCIPY = 0.04604956444989421  # wilcoxon(zero_method='wilcox', correction=False)
SIXTY = [round(2 * math.sin(1.3 * i) + 0.25, 6) for i in range(1, 61)]
SIXTY_SCIPY = 0.07245776535607991  # 60 > 50: method='approx', correction=False


def test_wilcoxon_equals_the_textbook_exact_p_value() -> None:
    differences = [x - y for x, y in zip(HAMILTON_X, HAMILTON_Y, strict=True)]
    assert wilcoxon_signed_rank(differences) == float(Fraction(20, 512))


def test_wilcoxon_with_ties_and_zeros_equals_scipys_normal_approximation() -> None:
    assert wilcoxon_signed_rank(TIED_SCORES) == pytest.approx(TIED_SCORES_SCIPY, abs=1e-12)


def test_wilcoxon_over_fifty_differences_equals_scipys_normal_approximation() -> None:
    assert wilcoxon_signed_rank(SIXTY) == pytest.approx(SIXTY_SCIPY, abs=1e-12)


def test_wilcoxon_drops_zero_differences() -> None:
    with_zeros = [0.0, 1.5, 0.0, -0.5, 2.5, 3.5, 0, -4.5, 5.5]
    assert wilcoxon_signed_rank(with_zeros) == wilcoxon_signed_rank([d for d in with_zeros if d])


def test_wilcoxon_exact_small_sample_counts_sign_patterns() -> None:
    # n = 3, all positive: 1 of the 8 patterns has R- = 0, so p = 2/8.
    assert wilcoxon_signed_rank([1.0, 2.0, 3.0]) == 0.25
    # One non-zero difference cannot reject anything.
    assert wilcoxon_signed_rank([0.0, -2.0]) == 1.0


def test_wilcoxon_of_nothing_or_only_zeros_is_one() -> None:
    assert wilcoxon_signed_rank([]) == 1.0
    assert wilcoxon_signed_rank([0, 0.0, 0]) == 1.0


def test_wilcoxon_rejects_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        wilcoxon_signed_rank([1.0, math.nan, 2.0])


differences_strategy = st.lists(
    st.one_of(st.integers(-5, 5), st.floats(-100, 100, allow_nan=False)), max_size=120
)


@given(differences_strategy)
@settings(deadline=None)
def test_wilcoxon_is_a_probability_unchanged_by_flipping_every_sign(
    differences: list[float],
) -> None:
    p = wilcoxon_signed_rank(differences)
    assert 0.0 <= p <= 1.0
    assert wilcoxon_signed_rank([-d for d in differences]) == pytest.approx(p, abs=1e-15)


@given(differences_strategy, st.randoms(use_true_random=False))
@settings(deadline=None)
def test_wilcoxon_ignores_the_order_of_the_differences(
    differences: list[float], rng: random.Random
) -> None:
    shuffled = list(differences)
    rng.shuffle(shuffled)
    assert wilcoxon_signed_rank(shuffled) == wilcoxon_signed_rank(differences)


# --- paired_bootstrap_interval ----------------------------------------------------------


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    differences = [1, 0, 0, -1, 1, 1, 0, 2, -1, 0] * 5
    first = paired_bootstrap_interval(differences, seed=3)
    assert paired_bootstrap_interval(differences, seed=3) == first
    assert paired_bootstrap_interval(list(reversed(differences)), seed=3) == first


def test_bootstrap_of_equal_differences_is_that_value() -> None:
    assert paired_bootstrap_interval([0.25] * 40) == (0.25, 0.25)


def test_bootstrap_rejects_empty_differences() -> None:
    with pytest.raises(ValueError, match="no differences"):
        paired_bootstrap_interval([])


@pytest.mark.parametrize(("confidence", "resamples"), [(1.0, 100), (0.0, 100), (0.95, 0)])
def test_bootstrap_rejects_bad_settings(confidence: float, resamples: int) -> None:
    with pytest.raises(ValueError):
        paired_bootstrap_interval([0.0, 1.0], confidence=confidence, resamples=resamples)


def test_bootstrap_rejects_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        paired_bootstrap_interval([0.0, math.nan])


def test_bootstrap_with_few_distinct_values_resamples_counts() -> None:
    differences = [(i * 7) % 5 - 2 for i in range(300)]
    means = _multinomial_means(Counter(differences), 500, random.Random(4))
    means.sort()
    expected = (linear_quantile(means, 0.025), linear_quantile(means, 0.975))
    assert paired_bootstrap_interval(differences, resamples=500, seed=4) == expected


def test_bootstrap_with_many_distinct_values_resamples_elements() -> None:
    differences = [math.sin(i) for i in range(100)]
    means = _elementwise_means(differences, 300, random.Random(5))
    means.sort()
    expected = (linear_quantile(means, (1 - 0.9) / 2), linear_quantile(means, (1 + 0.9) / 2))
    assert paired_bootstrap_interval(differences, confidence=0.9, resamples=300, seed=5) == expected


def test_bootstrap_paths_agree_in_distribution() -> None:
    rng = random.Random(11)
    differences = [rng.choice([-1, -1, 0, 0, 0, 1, 1, 1, 2]) for _ in range(120)]
    by_counts = sorted(_multinomial_means(Counter(differences), 20_000, random.Random(1)))
    by_elements = sorted(_elementwise_means(differences, 20_000, random.Random(2)))
    assert statistics.fmean(by_counts) == pytest.approx(statistics.fmean(by_elements), abs=0.004)
    assert statistics.stdev(by_counts) == pytest.approx(statistics.stdev(by_elements), rel=0.04)
    for q in (0.025, 0.1, 0.5, 0.9, 0.975):
        assert linear_quantile(by_counts, q) == pytest.approx(
            linear_quantile(by_elements, q), abs=0.02
        )


def test_quantile_interpolates_linearly_between_order_statistics() -> None:
    assert linear_quantile([0.0, 1.0, 2.0, 4.0], 0.5) == 1.5
    assert linear_quantile([0.0, 1.0, 2.0, 4.0], 0.9) == pytest.approx(3.4)
    assert linear_quantile([3.0], 0.975) == 3.0


@given(st.lists(st.integers(-3, 3), min_size=10, max_size=200), st.integers(0, 2**32))
@settings(max_examples=60, deadline=None)
def test_bootstrap_interval_holds_the_mean_of_score_differences(
    differences: list[int], seed: int
) -> None:
    low, high = paired_bootstrap_interval(differences, resamples=400, seed=seed)
    assert low <= statistics.fmean(differences) <= high


@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=70, max_size=120, unique=True),
    st.integers(0, 2**32),
)
@settings(max_examples=25, deadline=None)
def test_bootstrap_interval_holds_the_mean_of_continuous_differences(
    differences: list[float], seed: int
) -> None:
    low, high = paired_bootstrap_interval(differences, resamples=300, seed=seed)
    assert low <= statistics.fmean(differences) <= high


# --- the binomial sampler ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "p"),
    [(20, 0.2), (5, 0.9), (50, 0.3), (1000, 0.7), (100_000, 0.5), (3, 0.5), (400, 0.01)],
)
def test_binomial_sampler_matches_the_binomial_mean_and_variance(n: int, p: float) -> None:
    rng = random.Random(n)
    draws = [_binomial_variate(rng, n, p) for _ in range(20_000)]
    mean, variance = n * p, n * p * (1 - p)
    assert statistics.fmean(draws) == pytest.approx(mean, abs=6 * math.sqrt(variance / 20_000))
    assert statistics.variance(draws) == pytest.approx(variance, rel=0.1)


def test_binomial_sampler_handles_degenerate_cases() -> None:
    rng = random.Random(0)
    assert _binomial_variate(rng, 0, 0.4) == 0
    assert _binomial_variate(rng, 10, 0.0) == 0
    assert _binomial_variate(rng, 10, 1.0) == 10
    assert _binomial_variate(rng, 1, 0.5) in (0, 1)


def test_binomial_sampler_rejects_impossible_arguments() -> None:
    with pytest.raises(ValueError):
        _binomial_variate(random.Random(0), -1, 0.5)
    with pytest.raises(ValueError):
        _binomial_variate(random.Random(0), 5, 1.5)


@given(st.integers(0, 5000), st.floats(0, 1), st.integers(0, 2**32))
def test_binomial_sampler_stays_within_zero_and_n(n: int, p: float, seed: int) -> None:
    assert 0 <= _binomial_variate(random.Random(seed), n, p) <= n


def test_binomial_sampler_prefers_pythons_own_binomialvariate() -> None:
    class WithNative(random.Random):
        def binomialvariate(self, n: int = 1, p: float = 0.5) -> int:
            return -7

    assert _binomial_sampler(WithNative(0))(10, 0.5) == -7
    if not hasattr(random.Random, "binomialvariate"):  # Python < 3.12: ours
        assert 0 <= _binomial_sampler(random.Random(0))(10, 0.5) <= 10


# --- minimum detectable effects ---------------------------------------------------------


def test_mean_difference_mde_is_z_sum_times_the_standard_error() -> None:
    assert mean_difference_mde(1.0, 100) == pytest.approx((Z_975 + Z_80) / 10, rel=1e-15)
    assert round(mean_difference_mde(1.0, 100), 6) == 0.280159


def test_mean_difference_mde_shrinks_with_alpha_raised_and_power_lowered() -> None:
    base = mean_difference_mde(2.0, 50)
    assert mean_difference_mde(2.0, 50, alpha=0.1) < base
    assert mean_difference_mde(2.0, 50, power=0.5) < base
    assert mean_difference_mde(2.0, 200) == pytest.approx(base / 2)


def test_mean_difference_mde_is_infinite_below_two_items() -> None:
    assert mean_difference_mde(1.0, 1) == math.inf
    assert mean_difference_mde(1.0, 0) == math.inf


@pytest.mark.parametrize("kwargs", [{"sd": -1.0}, {"sd": math.nan}, {"alpha": 0.0}, {"power": 1.0}])
def test_mean_difference_mde_rejects_bad_arguments(kwargs: dict[str, float]) -> None:
    arguments = {"sd": 1.0, "alpha": 0.05, "power": 0.8} | kwargs
    with pytest.raises(ValueError):
        mean_difference_mde(arguments["sd"], 10, alpha=arguments["alpha"], power=arguments["power"])


def test_mcnemar_mde_follows_connors_approximation() -> None:
    assert mcnemar_mde(0.2, 100) == pytest.approx((Z_975 + Z_80) * math.sqrt(0.002), rel=1e-15)


def test_mcnemar_mde_without_discordant_pairs_counts_one() -> None:
    assert mcnemar_mde(0.0, 400) == mcnemar_mde(1 / 400, 400) > 0.0


def test_mcnemar_mde_without_items_is_infinite() -> None:
    assert mcnemar_mde(0.3, 0) == math.inf


@pytest.mark.parametrize(("share", "n"), [(-0.1, 10), (1.5, 10), (math.nan, 10), (0.2, -1)])
def test_mcnemar_mde_rejects_bad_arguments(share: float, n: int) -> None:
    with pytest.raises(ValueError):
        mcnemar_mde(share, n)


# --- holm -------------------------------------------------------------------------------


def test_holm_equals_recorded_statsmodels_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.2, 0.04]
    expected = [0.05, 0.12, 0.12, 0.03, 0.2, 0.12]  # multipletests(p, method='holm')[1]
    assert holm(p) == pytest.approx(expected, abs=1e-15)


def test_holm_of_nothing_is_nothing() -> None:
    assert holm([]) == []


def test_holm_caps_at_one() -> None:
    assert holm([0.6, 0.7, 0.9]) == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan])
def test_holm_rejects_values_that_are_not_p_values(bad: float) -> None:
    with pytest.raises(ValueError):
        holm([0.1, bad])


@given(st.lists(st.floats(0, 1), max_size=40))
def test_holm_is_monotone_at_least_the_raw_p_and_at_most_one(p_values: list[float]) -> None:
    adjusted = holm(p_values)
    assert all(raw <= adj <= 1.0 for raw, adj in zip(p_values, adjusted, strict=True))
    by_raw = sorted(zip(p_values, adjusted, strict=True))
    assert [adj for _, adj in by_raw] == sorted(adj for _, adj in by_raw)


@given(st.lists(st.floats(0, 1), max_size=40))
def test_holm_equals_its_step_down_definition(p_values: list[float]) -> None:
    m = len(p_values)
    ordered = sorted(p_values)
    steps = [min(1.0, (m - i) * p) for i, p in enumerate(ordered)]
    # The adjusted value of p is the largest step among the p-values sorted at or before it.
    expected = [max(steps[: max(i for i, q in enumerate(ordered) if q == p) + 1]) for p in p_values]
    assert holm(p_values) == expected
