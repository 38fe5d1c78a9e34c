"""statsmodels and scipy as live oracles for the paired statistics (``nox -s paired``).

Neither is ever a dependency; without them these tests are skipped, and
tests/unit/stats/test_paired.py checks against their answers recorded as literals.

* :func:`mcnemar_exact` against ``statsmodels.stats.contingency_tables.mcnemar(exact=True)``
  to 1e-12 absolute: every table up to 60 discordant pairs a side, tables on both sides of
  the exact-sum limit (5,000), up to 200,000 discordant pairs, near the centre where the
  p-value is large and in the tails, and random ones.
* :func:`holm` against ``multipletests(method='holm')``.
* :func:`wilcoxon_signed_rank` against ``scipy.stats.wilcoxon(zero_method='wilcox',
  correction=False)`` to 1e-9: ``method='exact'`` for at most 50 tie-free non-zero
  differences, ``method='approx'`` for ties or more than 50.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Iterator

import pytest

from cross_judge.stats import holm, mcnemar_exact, wilcoxon_signed_rank

statsmodels_tables = pytest.importorskip("statsmodels.stats.contingency_tables")
statsmodels_multitest = pytest.importorskip("statsmodels.stats.multitest")
scipy_stats = pytest.importorskip("scipy.stats")


def statsmodels_mcnemar(b: int, c: int) -> float:
    table = [[0, b], [c, 0]]  # the concordant cells do not enter the exact test
    return float(statsmodels_tables.mcnemar(table, exact=True).pvalue)


def scipy_wilcoxon(differences: list[float], method: str) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on small samples for 'approx'
        result = scipy_stats.wilcoxon(
            differences, zero_method="wilcox", correction=False, method=method
        )
    return float(result.pvalue)


def large_tables() -> Iterator[tuple[int, int]]:
    """Tables from a few thousand to 200,000 discordant pairs: the tails, the centre in
    steps of a sixth of a standard deviation, and random splits."""
    rng = random.Random(20_050)
    for n in (4_999, 5_000, 5_001, 5_002, 7_777, 20_000, 50_001, 100_000, 199_999, 200_000):
        for share in (0.0, 1e-4, 0.01, 0.3, 0.45, 0.48, 0.49, 0.495, 0.499, 0.4999, 0.5):
            smaller = int(n * share)
            yield smaller, n - smaller
        sd = math.sqrt(n) / 2
        for step in range(60):
            smaller = int(n / 2 - step * sd / 6)
            yield smaller, n - smaller
        for _ in range(20):
            smaller = rng.randint(0, n // 2)
            yield smaller, n - smaller


def test_mcnemar_equals_statsmodels_on_every_small_table() -> None:
    worst = max(
        abs(mcnemar_exact(b, c) - statsmodels_mcnemar(b, c)) for b in range(61) for c in range(61)
    )
    assert worst <= 1e-12


def test_mcnemar_equals_statsmodels_on_large_tables() -> None:
    errors = [
        (abs(mcnemar_exact(b, c) - statsmodels_mcnemar(b, c)), b, c) for b, c in large_tables()
    ]
    assert max(errors) <= (1e-12, math.inf, math.inf)


def test_mcnemar_equals_statsmodels_on_random_tables() -> None:
    rng = random.Random(7)
    for _ in range(500):
        b = rng.randint(0, rng.choice([30, 300, 3_000, 30_000, 100_000]))
        c = rng.randint(0, 2 * b + 10)
        assert mcnemar_exact(b, c) == pytest.approx(statsmodels_mcnemar(b, c), abs=1e-12)


def test_holm_equals_statsmodels_multipletests() -> None:
    rng = random.Random(3)
    for size in (1, 2, 3, 5, 10, 40, 200):
        for _ in range(5):  # statsmodels takes ~60 ms a call
            p = [rng.choice([rng.random(), rng.random() ** 6, 0.05, 0.0, 1.0]) for _ in range(size)]
            expected = statsmodels_multitest.multipletests(p, method="holm")[1]
            assert holm(p) == pytest.approx(list(expected), abs=1e-15)


def _tie_free(rng: random.Random, n: int, shift: float) -> list[float]:
    return [rng.gauss(shift, 1.0) for _ in range(n)]


def test_wilcoxon_equals_scipy_exact_without_ties() -> None:
    rng = random.Random(11)
    for n in range(1, 51):
        for shift in (0.0, 0.3, 1.0):
            differences = _tie_free(rng, n, shift)
            expected = scipy_wilcoxon(differences, "exact")
            assert wilcoxon_signed_rank(differences) == pytest.approx(expected, abs=1e-9)


def test_wilcoxon_equals_scipy_exact_with_zeros_dropped() -> None:
    rng = random.Random(12)
    for n in range(2, 51, 3):
        differences = _tie_free(rng, n, 0.4) + [0.0] * rng.randint(1, 5)
        rng.shuffle(differences)
        expected = scipy_wilcoxon(differences, "exact")
        assert wilcoxon_signed_rank(differences) == pytest.approx(expected, abs=1e-9)


def test_wilcoxon_equals_scipy_approx_above_fifty() -> None:
    rng = random.Random(13)
    for n in (51, 60, 100, 500, 2_000, 10_000):
        for shift in (0.0, 0.05, 0.2):
            differences = _tie_free(rng, n, shift)
            expected = scipy_wilcoxon(differences, "approx")
            assert wilcoxon_signed_rank(differences) == pytest.approx(expected, abs=1e-9)


def test_wilcoxon_equals_scipy_approx_with_ties_and_zeros() -> None:
    rng = random.Random(14)
    for n in (5, 12, 30, 50, 51, 200, 1_000, 20_000):
        for levels in ([-2, -1, 0, 1, 2, 3], [-1, 0, 0, 1, 1], [-0.5, 0.5, 1.5, 2.0]):
            differences = [float(rng.choice(levels)) for _ in range(n)]
            nonzero = [d for d in differences if d]
            if len(set(map(abs, nonzero))) == len(nonzero):
                continue  # no tie left: the exact test applies, checked above
            expected = scipy_wilcoxon(differences, "approx")
            assert wilcoxon_signed_rank(differences) == pytest.approx(expected, abs=1e-9)
