"""The vote-level Bradley-Terry fit: the outcome fit where they coincide, the position
advantage recovered, the stationarity of the maximum-likelihood fit, and clear errors."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError
from cross_judge.stats import (
    PairVote,
    fit_bradley_terry,
    fit_votes_bradley_terry,
    vote_bootstrap_intervals,
    vote_fisher_intervals,
)


def drawn_votes(
    seed: int, n: int = 6, clusters: int = 300, leans: tuple[float, ...] = (0.0,), nu: float = 0.0
) -> tuple[list[float], list[PairVote]]:
    """Votes drawn from the model itself: each cluster a random pair, each critic both orders."""
    rng = random.Random(seed)
    strengths = [rng.gauss(0.0, 1.0) for _ in range(n)]
    votes = []
    for cluster in range(clusters):
        i, j = rng.sample(range(n), 2)
        for critic, lean in enumerate(leans):
            for first, second in ((i, j), (j, i)):
                a, b = math.exp(strengths[first] + lean), math.exp(strengths[second])
                t = nu * math.sqrt(a * b)
                u = rng.random() * (a + b + t)
                outcome = 1.0 if u < a else 0.0 if u < a + b else 0.5
                votes.append(PairVote(first, second, outcome, critic, True, cluster))
    return strengths, votes


def test_votes_of_unknown_order_are_the_outcome_fit() -> None:
    _, votes = drawn_votes(1)
    plain = [v._replace(shown=False) for v in votes]
    wins = [(v.first, v.second) if v.outcome == 1.0 else (v.second, v.first) for v in plain]
    by_votes = fit_votes_bradley_terry(6, plain)
    by_outcomes = fit_bradley_terry(6, wins, tol=1e-12)
    assert by_votes.log_strengths == pytest.approx(by_outcomes.log_strengths, abs=1e-7)
    assert by_votes.alpha == by_outcomes.alpha == 0.0


def test_ties_of_unknown_order_are_davidsons_fit() -> None:
    _, votes = drawn_votes(2, nu=0.5)
    plain = [v._replace(shown=False) for v in votes]
    wins = [
        (v.first, v.second) if v.outcome == 1.0 else (v.second, v.first)
        for v in plain
        if v.outcome != 0.5
    ]
    ties = [(v.first, v.second) for v in plain if v.outcome == 0.5]
    by_votes = fit_votes_bradley_terry(6, plain)
    by_outcomes = fit_bradley_terry(6, wins, ties, tol=1e-12)
    assert by_votes.log_strengths == pytest.approx(by_outcomes.log_strengths, abs=1e-6)
    assert by_votes.tie == pytest.approx(by_outcomes.tie, rel=1e-6)


def test_each_critics_lean_to_the_first_shown_is_recovered() -> None:
    _, votes = drawn_votes(3, clusters=1500, leans=(0.0, 0.8, 1.6))
    fit = fit_votes_bradley_terry(6, votes, critics=3)
    assert fit.converged
    assert fit.home == pytest.approx([0.0, 0.8, 1.6], abs=0.15)


def test_the_fit_is_stationary_each_candidates_points_are_expected() -> None:
    _, votes = drawn_votes(4, leans=(0.0, 0.9), nu=0.3)
    fit = fit_votes_bradley_terry(6, votes, critics=2)
    observed, expected = [0.0] * 6, [0.0] * 6
    pi = [math.exp(x) for x in fit.log_strengths]
    for v in votes:
        a, b = pi[v.first] * math.exp(fit.home[v.critic]), pi[v.second]
        t = fit.tie * math.sqrt(a * b)
        d = a + b + t
        observed[v.first] += v.outcome
        observed[v.second] += 1.0 - v.outcome
        expected[v.first] += (a + t / 2) / d
        expected[v.second] += (b + t / 2) / d
    assert observed == pytest.approx(expected, abs=1e-6)


def test_a_critic_whose_first_shown_always_wins_gets_a_finite_lean() -> None:
    _, votes = drawn_votes(5, leans=(0.0,))
    always = [PairVote(v.first, v.second, 1.0, 1, True, v.cluster) for v in votes[:40]]
    fit = fit_votes_bradley_terry(6, [*votes, *always], critics=2)
    assert fit.home_prior == (1,)
    assert math.isfinite(fit.home[1]) and fit.home[1] > 1.0


def test_a_candidate_that_only_wins_is_fitted_with_the_prior() -> None:
    votes = [PairVote(0, 1, 1.0), PairVote(1, 0, 0.0), PairVote(1, 2, 1.0), PairVote(2, 1, 0.0)]
    fit = fit_votes_bradley_terry(3, votes, prior=0.25)
    assert fit.alpha == 0.25
    assert fit.log_strengths[0] > fit.log_strengths[1] > fit.log_strengths[2]


def test_fisher_intervals_cover_the_estimate_and_narrow_with_more_votes() -> None:
    _, few = drawn_votes(6, clusters=100, leans=(0.0, 0.5))
    _, many = drawn_votes(6, clusters=1000, leans=(0.0, 0.5))
    widths = []
    for votes in (few, many):
        fit = fit_votes_bradley_terry(6, votes, critics=2)
        bounds = vote_fisher_intervals(fit, 6, votes, critics=2)
        for (low, high), x in zip(bounds, fit.log_strengths, strict=True):
            assert low < x < high
        widths.append(sum(h - lo for lo, h in bounds))
    assert widths[1] < widths[0] / 2


def test_bootstrap_intervals_are_seeded() -> None:
    _, votes = drawn_votes(7, clusters=60)
    first = vote_bootstrap_intervals(6, votes, rounds=30, seed=3)
    assert first == vote_bootstrap_intervals(6, votes, rounds=30, seed=3)
    assert first != vote_bootstrap_intervals(6, votes, rounds=30, seed=4)


@pytest.mark.parametrize(
    ("vote", "words"),
    [
        (PairVote(0, 0, 1.0), "different index"),
        (PairVote(0, 5, 1.0), "different index"),
        (PairVote(0, 1, 0.7), "outcome"),
        (PairVote(0, 1, 1.0, critic=2), "critic"),
        (PairVote(0, 1, 1.0, weight=-1.0), "weight"),
    ],
)
def test_a_bad_vote_is_refused_with_what_is_wrong(vote: PairVote, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        fit_votes_bradley_terry(3, [vote], critics=1)


def test_no_vote_is_refused() -> None:
    with pytest.raises(ConfigError, match="no vote"):
        fit_votes_bradley_terry(3, [])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.permutations(range(5)))
def test_relabelling_the_candidates_relabels_the_strengths(seed: int, perm: list[int]) -> None:
    _, votes = drawn_votes(seed, n=5, clusters=40, leans=(0.0, 0.6))
    fit = fit_votes_bradley_terry(5, votes, critics=2)
    moved = [v._replace(first=perm[v.first], second=perm[v.second]) for v in votes]
    again = fit_votes_bradley_terry(5, moved, critics=2)
    for k in range(5):
        assert again.log_strengths[perm[k]] == pytest.approx(fit.log_strengths[k], abs=1e-6)
    assert again.home == pytest.approx(fit.home, abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_a_vote_of_weight_two_is_two_votes(seed: int) -> None:
    _, votes = drawn_votes(seed, n=4, clusters=30, leans=(0.0, 0.5))
    doubled = [v._replace(weight=2.0) if v.critic == 1 else v for v in votes]
    repeated = [*votes, *(v for v in votes if v.critic == 1)]
    a = fit_votes_bradley_terry(4, doubled, critics=2)
    b = fit_votes_bradley_terry(4, repeated, critics=2)
    assert a.log_strengths == pytest.approx(b.log_strengths, abs=1e-7)


def test_the_standard_library_path_gives_the_numpy_paths_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cross_judge.stats import _bt_votes

    _, votes = drawn_votes(8, leans=(0.0, 0.7), nu=0.4)
    vectorised = fit_votes_bradley_terry(6, votes, critics=2)
    bounds = vote_fisher_intervals(vectorised, 6, votes, critics=2)
    monkeypatch.setattr(_bt_votes, "numpy_available", lambda: False)
    plain = fit_votes_bradley_terry(6, votes, critics=2)
    assert plain.log_strengths == pytest.approx(vectorised.log_strengths, abs=1e-9)
    assert plain.home == pytest.approx(vectorised.home, abs=1e-9)
    assert plain.tie == pytest.approx(vectorised.tie, rel=1e-9)
    again = vote_fisher_intervals(plain, 6, votes, critics=2)
    flat = [x for pair in again for x in pair]
    assert flat == pytest.approx([x for pair in bounds for x in pair], abs=1e-9)


def test_a_lean_the_orders_confound_with_the_strengths_takes_the_prior() -> None:
    # 0 always shown before 1, 1 before 2: "first shown" and "higher in the chain" are the
    # same thing, so the lean and the strengths cannot be told apart without a prior.
    votes = [
        PairVote(0, 1, 1.0),
        PairVote(0, 1, 0.0),
        PairVote(0, 1, 1.0),
        PairVote(1, 2, 1.0),
        PairVote(1, 2, 0.0),
        PairVote(1, 2, 1.0),
    ]
    fit = fit_votes_bradley_terry(3, votes)
    assert fit.home_prior == (0,)
    assert all(math.isfinite(x) for x in (*fit.log_strengths, *fit.home))
    bounds = vote_fisher_intervals(fit, 3, votes)
    assert all(low < high for low, high in bounds)


def test_alpha_zero_on_a_confounded_design_still_fits_with_the_leans_prior() -> None:
    votes = [PairVote(0, 1, 1.0), PairVote(0, 1, 0.0), PairVote(1, 2, 1.0), PairVote(1, 2, 0.0)]
    fit = fit_votes_bradley_terry(3, votes, alpha=0.0)
    assert fit.alpha == 0.0 and fit.home_prior == (0,)
