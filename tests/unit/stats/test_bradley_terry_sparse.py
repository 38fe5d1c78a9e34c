"""Fisher intervals of sparse comparisons: a regularised fit's information is solved one
connected group at a time (``log nu`` through a Schur complement), so memory follows the
groups, not ``n``; the numbers are those of the whole matrix; a group above the limit is
refused naming the bootstrap. Memory is measured with tracemalloc (a count of bytes, not a
time)."""

from __future__ import annotations

import math
import random
import tracemalloc

import pytest

from cross_judge.errors import ConfigError
from cross_judge.stats import bradley_terry as bt
from cross_judge.stats.bradley_terry import fisher_intervals, fit_bradley_terry

needs_numpy = pytest.mark.skipif(not bt.numpy_available(), reason="numpy is not installed")

Pairs = list[tuple[int, int]]

# Two groups never compared across ({0, 1, 2} with a tie, {3, 4, 5}) and item 6 never
# compared at all: the maximum-likelihood fit does not exist, the prior is used.
WINS: Pairs = [(0, 1), (1, 2), (2, 0), (0, 2), (3, 4), (4, 5), (5, 3), (3, 5), (4, 3)]
TIES: Pairs = [(0, 1), (1, 2)]


def log_posterior(theta: list[float], log_nu: float, alpha: float) -> float:
    """Davidson's log-likelihood of WINS and TIES plus the Gamma prior of every strength
    and of ``nu``, in log coordinates (not centred: the prior fixes the scale)."""
    pi = [math.exp(t) for t in theta]
    nu = math.exp(log_nu)

    def denominator(i: int, j: int) -> float:
        return pi[i] + pi[j] + nu * math.sqrt(pi[i] * pi[j])

    total = sum(theta[i] - math.log(denominator(i, j)) for i, j in WINS)
    total += sum(log_nu + (theta[i] + theta[j]) / 2 - math.log(denominator(i, j)) for i, j in TIES)
    total += alpha * sum(t - p for t, p in zip(theta, pi, strict=True))
    return total + alpha * (log_nu - nu)


def centred_variances_of_the_numeric_curvature(fit: bt.BTFit) -> list[float]:
    """Variances of the centred log-strengths from the finite-difference Hessian of
    :func:`log_posterior` at the fit (on the prior's scale)."""
    np = pytest.importorskip("numpy")
    n = len(fit.log_strengths)
    pi = [math.exp(x) for x in fit.log_strengths]
    scale = n / sum(pi)
    point = [math.log(p * scale) for p in pi] + [math.log(fit.tie)]
    k, h = len(point), 1e-4

    def f(x: list[float]) -> float:
        return log_posterior(x[:n], x[n], fit.alpha)

    hessian = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            values = []
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                x = list(point)
                x[i] += si * h
                x[j] += sj * h
                values.append(f(x))
            hessian[i, j] = (values[0] - values[1] - values[2] + values[3]) / (4 * h * h)
    covariance = np.linalg.inv(-hessian)[:n, :n]
    centring = np.eye(n) - np.full((n, n), 1.0 / n)
    return [float(v) for v in np.diag(centring @ covariance @ centring)]


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_fisher_intervals_of_separate_groups_match_the_whole_posterior_curvature(
    backend: bt.Backend,
) -> None:
    fit = fit_bradley_terry(7, WINS, TIES)
    assert fit.alpha > 0 and fit.tie > 0 and fit.uncompared == (6,)
    intervals = fisher_intervals(fit, 7, WINS, TIES, backend=backend)
    z = 1.959963984540054
    expected = centred_variances_of_the_numeric_curvature(fit)
    for (low, high), x, variance in zip(intervals, fit.log_strengths, expected, strict=True):
        assert (low + high) / 2 == pytest.approx(x, abs=1e-12)
        assert ((high - low) / (2 * z)) ** 2 == pytest.approx(variance, rel=1e-4)


def test_fisher_intervals_of_a_sparse_fit_over_many_items_need_no_n_by_n_matrix() -> None:
    n, rng = 3000, random.Random(5)
    wins: Pairs = [(k, k + 1) if rng.random() < 0.6 else (k + 1, k) for k in range(0, 40, 2)]
    fit = fit_bradley_terry(n, wins)
    tracemalloc.start()
    try:
        intervals = fisher_intervals(fit, n, wins)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(intervals) == n
    assert peak < 10_000_000  # a 3,000 x 3,000 matrix alone is 72 MB


def test_a_group_above_the_limit_is_refused_naming_the_bootstrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bt, "FISHER_MAX_GROUP", 4)
    monkeypatch.setattr(bt, "FISHER_MAX_GROUP_PYTHON", 4)
    cycle: Pairs = [(k, (k + 1) % 6) for k in range(6)]  # wins join all 6: one group
    fit = fit_bradley_terry(6, cycle)
    assert fit.alpha == 0
    with pytest.raises(ConfigError, match=r"group of 6 .*ci='bootstrap'"):
        fisher_intervals(fit, 6, cycle)


def test_many_small_groups_are_solved_whatever_their_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bt, "FISHER_MAX_GROUP", 4)
    monkeypatch.setattr(bt, "FISHER_MAX_GROUP_PYTHON", 4)
    pairs: Pairs = [(k, k + 1) for k in range(0, 60, 3)] + [(k + 2, k) for k in range(0, 60, 3)]
    fit = fit_bradley_terry(60, pairs)
    intervals = fisher_intervals(fit, 60, pairs)
    assert all(math.isfinite(low) and low < high for low, high in intervals)


def test_the_group_limit_follows_the_backend() -> None:
    assert bt.fisher_group_limit("python") == bt.FISHER_MAX_GROUP_PYTHON
    if bt.numpy_available():
        assert bt.fisher_group_limit("numpy") == bt.FISHER_MAX_GROUP
