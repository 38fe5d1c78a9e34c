"""choix as a live oracle for the Bradley-Terry fit (``nox -s choix``; skipped without it).

choix is never a dependency. Its ``mm_pairwise(alpha=a)`` maximises the same regularised
likelihood as ``fit_bradley_terry(alpha=a)``, and its ``ilsr_pairwise`` puts ``alpha / n`` on
every transition of its Markov chain, the same prior scaled by ``n`` (see the module
docstring of :mod:`cross_judge.stats.bradley_terry`).
"""

from __future__ import annotations

import math
import random

import pytest

from cross_judge.stats.bradley_terry import fit_bradley_terry

choix = pytest.importorskip("choix")


def random_wins(n: int, m: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    strengths = [rng.gauss(0.0, 1.0) for _ in range(n)]
    wins = []
    for _ in range(m):
        a, b = rng.sample(range(n), 2)
        beats = rng.random() < 1.0 / (1.0 + math.exp(strengths[b] - strengths[a]))
        wins.append((a, b) if beats else (b, a))
    return wins


CASES = [(10, 300, 1), (25, 1000, 2), (60, 3000, 3)]


@pytest.mark.parametrize(("n", "m", "seed"), CASES)
@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.5])
def test_fit_equals_choix_mm_pairwise(n: int, m: int, seed: int, alpha: float) -> None:
    wins = random_wins(n, m, seed)
    ours = fit_bradley_terry(n, wins, alpha=alpha)
    theirs = choix.mm_pairwise(n, wins, alpha=alpha, tol=1e-13, max_iter=200_000)
    assert max(abs(a - float(b)) for a, b in zip(ours.log_strengths, theirs, strict=True)) < 1e-6


@pytest.mark.parametrize(("n", "m", "seed"), CASES)
@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.5])
def test_fit_equals_choix_ilsr_pairwise_with_alpha_over_n(
    n: int, m: int, seed: int, alpha: float
) -> None:
    wins = random_wins(n, m, seed)
    ours = fit_bradley_terry(n, wins, alpha=alpha)
    theirs = choix.ilsr_pairwise(n, wins, alpha=alpha / n, tol=1e-13, max_iter=10_000)
    assert max(abs(a - float(b)) for a, b in zip(ours.log_strengths, theirs, strict=True)) < 1e-6


def test_an_item_that_only_wins_gets_choix_regularised_answer_by_default() -> None:
    wins = random_wins(8, 200, 4) + [(8, j) for j in range(8)]
    ours = fit_bradley_terry(9, wins)
    theirs = choix.mm_pairwise(9, wins, alpha=ours.alpha, tol=1e-13, max_iter=200_000)
    assert ours.alpha > 0
    assert max(abs(a - float(b)) for a, b in zip(ours.log_strengths, theirs, strict=True)) < 1e-6
