"""Bradley-Terry (Davidson) ratings: the fit, its regularisation, its intervals.

choix, the oracle, is checked in tests/unit/stats/test_bradley_terry_choix_oracle.py
(``nox -s choix``); here the fit is checked against its own likelihood equations, written out
independently below.
"""

from __future__ import annotations

import math
import random
import warnings

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError, StatisticsWarning
from cross_judge.stats import bradley_terry as bt
from cross_judge.stats.bradley_terry import (
    DEFAULT_ALPHA,
    BTFit,
    bootstrap_intervals,
    elo,
    fisher_intervals,
    fit_bradley_terry,
    mle_exists,
)

needs_numpy = pytest.mark.skipif(not bt.numpy_available(), reason="numpy is not installed")

Pairs = list[tuple[int, int]]


def simulate(
    strengths: list[float], m: int, rng: random.Random, nu: float = 0.0
) -> tuple[Pairs, Pairs]:
    """``m`` comparisons of uniformly random pairs under Davidson's model."""
    wins: Pairs = []
    ties: Pairs = []
    n = len(strengths)
    for _ in range(m):
        a, b = rng.sample(range(n), 2)
        pa, pb = math.exp(strengths[a]), math.exp(strengths[b])
        tie = nu * math.sqrt(pa * pb)
        u = rng.random() * (pa + pb + tie)
        if u < pa:
            wins.append((a, b))
        elif u < pa + pb:
            wins.append((b, a))
        else:
            ties.append((a, b))
    return wins, ties


def log_likelihood(logs: list[float], log_nu: float, wins: Pairs, ties: Pairs) -> float:
    """Davidson's log-likelihood, written from the model's definition."""
    total = 0.0
    nu = math.exp(log_nu)
    for w, lo in wins:
        d = math.exp(logs[w]) + math.exp(logs[lo]) + nu * math.exp((logs[w] + logs[lo]) / 2)
        total += logs[w] - math.log(d)
    for a, b in ties:
        g = math.exp((logs[a] + logs[b]) / 2)
        total += math.log(nu * g) - math.log(math.exp(logs[a]) + math.exp(logs[b]) + nu * g)
    return total


def centred_truth(strengths: list[float]) -> list[float]:
    mean = sum(strengths) / len(strengths)
    return [s - mean for s in strengths]


TRUE_12 = [(-1.5 + 3.0 * i / 11) for i in range(12)]


# --- the fit -------------------------------------------------------------------------------


def test_fit_solves_the_likelihood_equations_without_ties() -> None:
    wins, _ = simulate(TRUE_12, 800, random.Random(1))
    fit = fit_bradley_terry(12, wins, backend="python")
    h = 1e-6
    for i in range(12):
        up = list(fit.log_strengths)
        down = list(fit.log_strengths)
        up[i] += h
        down[i] -= h
        slope = (log_likelihood(up, -50, wins, []) - log_likelihood(down, -50, wins, [])) / (2 * h)
        assert abs(slope) < 1e-5
    assert fit.tie == 0.0 and fit.alpha == 0.0 and fit.converged


def test_fit_with_ties_solves_davidsons_likelihood_equations_in_strengths_and_nu() -> None:
    wins, ties = simulate(TRUE_12, 1500, random.Random(2), nu=0.8)
    fit = fit_bradley_terry(12, wins, ties, backend="python")
    h = 1e-6
    point = [*fit.log_strengths, math.log(fit.tie)]
    for i in range(13):
        up, down = list(point), list(point)
        up[i] += h
        down[i] -= h
        slope = (
            log_likelihood(up[:12], up[12], wins, ties)
            - log_likelihood(down[:12], down[12], wins, ties)
        ) / (2 * h)
        assert abs(slope) < 1e-4
    assert 0.6 < fit.tie < 1.0


def test_log_strengths_are_mean_centred() -> None:
    wins, ties = simulate(TRUE_12, 500, random.Random(3), nu=0.5)
    fit = fit_bradley_terry(12, wins, ties)
    assert abs(sum(fit.log_strengths)) < 1e-9


def test_without_ties_nu_is_zero_and_with_ties_it_is_fitted() -> None:
    wins, ties = simulate(TRUE_12, 600, random.Random(4), nu=1.0)
    assert fit_bradley_terry(12, wins).tie == 0.0
    assert fit_bradley_terry(12, wins, ties).tie > 0.0


def test_fit_recovers_the_true_strengths_from_many_comparisons() -> None:
    wins, ties = simulate(TRUE_12, 20_000, random.Random(5), nu=0.5)
    fit = fit_bradley_terry(12, wins, ties)
    truth = centred_truth(TRUE_12)
    assert max(abs(a - b) for a, b in zip(fit.log_strengths, truth, strict=True)) < 0.15
    assert abs(fit.tie - 0.5) < 0.05


def test_repeated_comparisons_count() -> None:
    once = fit_bradley_terry(3, [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (0, 2), (2, 0)])
    twice = fit_bradley_terry(3, [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (0, 2), (2, 0), (0, 2)])
    assert twice.log_strengths[0] > once.log_strengths[0]


@needs_numpy
@pytest.mark.parametrize("nu", [0.0, 0.7])
def test_numpy_and_python_backends_agree(nu: float) -> None:
    wins, ties = simulate([0.3 * i for i in range(30)], 3000, random.Random(6), nu=nu)
    fast = fit_bradley_terry(30, wins, ties, backend="numpy")
    slow = fit_bradley_terry(30, wins, ties, backend="python")
    assert (
        max(abs(a - b) for a, b in zip(fast.log_strengths, slow.log_strengths, strict=True)) < 1e-8
    )
    assert abs(fast.tie - slow.tie) < 1e-8
    assert fast.converged and slow.converged


@needs_numpy
def test_backends_agree_on_a_regularised_fit() -> None:
    wins = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 1)]  # item 0 only wins
    fast = fit_bradley_terry(5, wins, backend="numpy")
    slow = fit_bradley_terry(5, wins, backend="python")
    assert (
        max(abs(a - b) for a, b in zip(fast.log_strengths, slow.log_strengths, strict=True)) < 1e-8
    )


def test_elo_scale_maps_ten_to_one_odds_to_400_points() -> None:
    assert elo(0.0) == 1000.0
    assert elo(math.log(10.0)) - elo(0.0) == pytest.approx(400.0)


# --- regularisation --------------------------------------------------------------------------


def test_mle_exists_needs_a_strongly_connected_graph() -> None:
    assert mle_exists(3, [(0, 1), (1, 2), (2, 0)])
    assert not mle_exists(3, [(0, 1), (1, 2), (0, 2)])  # 0 only wins, 2 only loses
    assert not mle_exists(4, [(0, 1), (1, 0), (2, 3), (3, 2)])  # two groups never compared
    assert mle_exists(2, [], [(0, 1)]) is False  # every comparison a tie: nu is infinite


def test_ties_do_not_count_towards_the_mle_existing() -> None:
    # joined only by ties, items can drift apart without bound (a huge nu explains a tie
    # between very unequal items), so the fit is regularised
    assert not mle_exists(3, [(0, 1), (1, 0)], [(1, 2), (0, 2)])
    assert fit_bradley_terry(3, [(0, 1), (1, 0)], [(1, 2), (0, 2)]).alpha == DEFAULT_ALPHA


def test_when_the_mle_exists_the_fit_is_unregularised() -> None:
    fit = fit_bradley_terry(3, [(0, 1), (1, 2), (2, 0), (0, 2)])
    assert fit.alpha == 0.0


def test_an_item_that_only_wins_gets_a_finite_top_strength_from_the_default_prior() -> None:
    fit = fit_bradley_terry(4, [(0, 1), (0, 2), (0, 3), (1, 2), (2, 3), (3, 1)])
    assert fit.alpha == DEFAULT_ALPHA and fit.converged
    assert all(math.isfinite(x) for x in fit.log_strengths)
    assert fit.log_strengths[0] == max(fit.log_strengths)


def test_an_uncompared_item_is_flagged_and_sits_at_the_prior_mode() -> None:
    fit = fit_bradley_terry(4, [(0, 1), (1, 2), (2, 0), (1, 0)])
    assert fit.uncompared == (3,)
    assert fit.alpha == DEFAULT_ALPHA
    # pi = 1 before centring: the uncompared item's log-strength is minus the mean of logs
    raw = [x - fit.log_strengths[3] for x in fit.log_strengths]
    assert raw[3] == 0.0


def test_all_ties_give_equal_strengths_and_a_finite_nu() -> None:
    fit = fit_bradley_terry(3, [], [(0, 1), (1, 2), (0, 2)] * 5)
    assert fit.alpha == DEFAULT_ALPHA
    assert max(abs(x) for x in fit.log_strengths) < 1e-9
    assert math.isfinite(fit.tie) and fit.tie > 1.0


def test_no_comparisons_gives_zero_strengths_in_zero_iterations() -> None:
    assert fit_bradley_terry(3, []) == BTFit(
        (0.0, 0.0, 0.0), 0.0, 0, True, DEFAULT_ALPHA, (0, 1, 2)
    )


def test_one_item_is_the_mean() -> None:
    assert fit_bradley_terry(1, []).log_strengths == (0.0,)


def test_alpha_zero_without_a_finite_mle_raises_saying_the_fix() -> None:
    with pytest.raises(ConfigError, match="alpha=None"):
        fit_bradley_terry(3, [(0, 1), (1, 2)], alpha=0)


def test_an_explicit_alpha_is_used_even_when_the_mle_exists() -> None:
    wins = [(0, 1), (1, 2), (2, 0), (0, 2)]
    assert fit_bradley_terry(3, wins, alpha=0.5).alpha == 0.5
    plain = fit_bradley_terry(3, wins).log_strengths
    shrunk = fit_bradley_terry(3, wins, alpha=0.5).log_strengths
    assert max(map(abs, shrunk)) < max(map(abs, plain))


# --- invariants ------------------------------------------------------------------------------

outcomes = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from(["win", "tie"])).filter(
        lambda t: t[0] != t[1]
    ),
    max_size=40,
)


def split(data: list[tuple[int, int, str]]) -> tuple[Pairs, Pairs]:
    return [(a, b) for a, b, k in data if k == "win"], [(a, b) for a, b, k in data if k == "tie"]


@settings(max_examples=60, deadline=None)
@given(outcomes, st.permutations(range(6)))
def test_relabelling_items_relabels_the_strengths(
    data: list[tuple[int, int, str]], perm: list[int]
) -> None:
    wins, ties = split(data)
    fit = fit_bradley_terry(6, wins, ties, backend="python")
    moved = fit_bradley_terry(
        6,
        [(perm[a], perm[b]) for a, b in wins],
        [(perm[a], perm[b]) for a, b in ties],
        backend="python",
    )
    for i in range(6):
        assert moved.log_strengths[perm[i]] == pytest.approx(fit.log_strengths[i], abs=1e-7)
    assert moved.tie == pytest.approx(fit.tie, rel=1e-7, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(outcomes, st.integers(1, 3))
def test_an_item_that_beats_everyone_and_never_loses_ranks_first(
    data: list[tuple[int, int, str]], repeat: int
) -> None:
    # item 6 beats each of 0..5 `repeat` times; the others' results are arbitrary
    wins, ties = split(data)
    wins += [(6, j) for j in range(6)] * repeat
    fit = fit_bradley_terry(7, wins, ties, backend="python")
    assert all(fit.log_strengths[6] > x for x in fit.log_strengths[:6])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=12))
def test_a_tie_between_two_equal_items_changes_no_order(extra: list[tuple[int, int]]) -> None:
    # items 4 and 5 have mirror-image records against 0..3 (so equal strengths); adding a tie
    # between them keeps every clear order of the fit (it moves the tie parameter, and so
    # every strength a little: two items a hair apart may swap)
    base: Pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (1, 0), (2, 1)]
    base += [(a, b) for a, b in extra if a != b]
    base += [(4, 0), (0, 4), (5, 0), (0, 5), (4, 1), (5, 1), (2, 4), (2, 5), (3, 4), (3, 5)]
    before = fit_bradley_terry(6, base, [(0, 2)], backend="python").log_strengths
    after = fit_bradley_terry(6, base, [(0, 2), (4, 5)], backend="python").log_strengths
    assert before[4] == pytest.approx(before[5], abs=1e-8)
    for i in range(6):
        for j in range(6):
            if before[i] > before[j] + 1e-2:
                assert after[i] > after[j]


# --- convergence and errors ------------------------------------------------------------------


def test_too_few_rounds_are_flagged_and_warned() -> None:
    wins, _ = simulate(TRUE_12, 500, random.Random(7))
    with pytest.warns(StatisticsWarning, match="raise max_iter"):
        fit = fit_bradley_terry(12, wins, max_iter=3)
    assert fit.converged is False and fit.iterations == 3


def test_a_converged_fit_says_so_in_few_rounds() -> None:
    wins, _ = simulate(TRUE_12, 500, random.Random(7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_bradley_terry(12, wins)
    assert fit.converged and fit.iterations < 1000


@pytest.mark.parametrize(
    ("wins", "match"),
    [([(0, 3)], "outside 0..2"), ([(1, 1)], "itself"), ([(0, True)], "outside")],
)
def test_bad_comparisons_raise_saying_which(wins: Pairs, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        fit_bradley_terry(3, wins)


def test_bad_settings_raise() -> None:
    with pytest.raises(ConfigError, match="backend"):
        fit_bradley_terry(2, [(0, 1)], backend="fortran")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="n must"):
        fit_bradley_terry(0, [])
    with pytest.raises(ConfigError, match="alpha"):
        fit_bradley_terry(2, [(0, 1)], alpha=-1.0)
    with pytest.raises(ConfigError, match="level"):
        fisher_intervals(fit_bradley_terry(2, [(0, 1), (1, 0)]), 2, [(0, 1), (1, 0)], level=1.5)


def test_numpy_backend_without_numpy_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bt, "numpy_available", lambda: False)
    with pytest.raises(ConfigError, match="pip install"):
        fit_bradley_terry(2, [(0, 1), (1, 0)], backend="numpy")
    assert fit_bradley_terry(2, [(0, 1), (1, 0)]).converged  # auto falls back to Python


# --- intervals -------------------------------------------------------------------------------


def numeric_covariance(fit: BTFit, wins: Pairs, ties: Pairs) -> list[float]:
    """Variances of the centred log-strengths from a finite-difference Hessian (numpy)."""
    np = pytest.importorskip("numpy")
    n = len(fit.log_strengths)
    point = list(fit.log_strengths) + ([math.log(fit.tie)] if ties else [])
    k = len(point)
    h = 1e-4

    def f(x: list[float]) -> float:
        return log_likelihood(x[:n], x[n] if ties else -700.0, wins, ties)

    hess = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            vals = []
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                x = list(point)
                x[i] += si * h
                x[j] += sj * h
                vals.append(f(x))
            hess[i, j] = (vals[0] - vals[1] - vals[2] + vals[3]) / (4 * h * h)
    # the finite differences leave the null direction (a common shift) a tiny noisy
    # eigenvalue: the cut-off drops it, as the exact pseudo-inverse would
    cov = np.linalg.pinv(-hess, rcond=1e-6, hermitian=True)
    return [float(cov[i, i]) for i in range(n)]


@pytest.mark.parametrize("nu", [0.0, 0.6])
@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_fisher_intervals_match_the_pseudo_inverse_of_the_numeric_hessian(
    nu: float, backend: bt.Backend
) -> None:
    wins, ties = simulate(TRUE_12[:6], 400, random.Random(8), nu=nu)
    fit = fit_bradley_terry(6, wins, ties)
    intervals = fisher_intervals(fit, 6, wins, ties, level=0.95, backend=backend)
    z = 1.959963984540054
    for (lo, hi), x, var in zip(
        intervals, fit.log_strengths, numeric_covariance(fit, wins, ties), strict=True
    ):
        assert (lo + hi) / 2 == pytest.approx(x, abs=1e-12)
        assert ((hi - lo) / (2 * z)) ** 2 == pytest.approx(var, rel=1e-4)


def test_fisher_intervals_of_a_regularised_fit_are_finite_for_an_uncompared_item() -> None:
    wins = [(0, 1), (1, 2), (2, 0), (1, 0)]
    fit = fit_bradley_terry(4, wins)
    intervals = fisher_intervals(fit, 4, wins)
    assert all(math.isfinite(lo) and math.isfinite(hi) and lo < hi for lo, hi in intervals)
    assert intervals[3][1] - intervals[3][0] > intervals[0][1] - intervals[0][0]


def test_fisher_intervals_refuse_a_fit_of_other_data() -> None:
    fit = fit_bradley_terry(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ConfigError, match="pass the data"):
        fisher_intervals(fit, 4, [(0, 1), (1, 2), (2, 0)])


def coverage(nu: float, draws: int, m: int, seed: int) -> float:
    rng = random.Random(seed)
    truth = centred_truth(TRUE_12)
    hits = 0
    for _ in range(draws):
        wins, ties = simulate(TRUE_12, m, rng, nu=nu)
        fit = fit_bradley_terry(12, wins, ties, tol=1e-8)
        for (lo, hi), t in zip(fisher_intervals(fit, 12, wins, ties), truth, strict=True):
            hits += lo <= t <= hi
    return hits / (draws * 12)


@pytest.mark.slow  # a statistical simulation: thousands of draws
@pytest.mark.parametrize("nu", [0.0, 0.5])
def test_fisher_intervals_cover_the_true_strengths_at_the_stated_level(nu: float) -> None:
    # 300 draws of 2,000 comparisons, 12 items: 3,600 intervals. Were they independent, the
    # standard error of a 95% coverage would be 0.0036; the 12 of one draw share data, so
    # count only the 300 draws (0.0126) and allow 2.4 of those: 0.92 .. 0.98.
    assert 0.92 <= coverage(nu, draws=300, m=2000, seed=9 + int(10 * nu)) <= 0.98


def test_bootstrap_intervals_are_deterministic_for_a_seed() -> None:
    wins, ties = simulate(TRUE_12[:5], 200, random.Random(10), nu=0.5)
    first = bootstrap_intervals(5, wins, ties, rounds=30, seed=3)
    assert first == bootstrap_intervals(5, wins, ties, rounds=30, seed=3)
    assert first != bootstrap_intervals(5, wins, ties, rounds=30, seed=4)


def test_bootstrap_intervals_agree_with_fisher_on_plenty_of_data() -> None:
    wins, ties = simulate(TRUE_12[:5], 3000, random.Random(11), nu=0.5)
    fit = fit_bradley_terry(5, wins, ties)
    fisher = fisher_intervals(fit, 5, wins, ties)
    boot = bootstrap_intervals(5, wins, ties, rounds=200, seed=0)
    for (flo, fhi), (blo, bhi), x in zip(fisher, boot, fit.log_strengths, strict=True):
        assert blo < x < bhi
        assert (bhi - blo) == pytest.approx(fhi - flo, rel=0.25)


def test_bootstrap_survives_resamples_where_an_item_only_wins() -> None:
    wins = [(0, 1), (1, 0), (0, 1), (1, 2), (2, 1), (2, 0)]
    intervals = bootstrap_intervals(3, wins, rounds=50, seed=1)
    assert all(math.isfinite(lo) and math.isfinite(hi) for lo, hi in intervals)


def test_bootstrap_of_no_comparisons_is_a_point() -> None:
    assert bootstrap_intervals(2, [], rounds=10) == [(0.0, 0.0), (0.0, 0.0)]


def test_bootstrap_needs_two_rounds() -> None:
    with pytest.raises(ConfigError, match="rounds"):
        bootstrap_intervals(2, [(0, 1)], rounds=1)
