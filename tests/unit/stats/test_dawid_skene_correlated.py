"""Dawid-Skene for critics whose errors are correlated (``errors="correlated"``).

Votes come from the simulated vendor's model of correlated judges (a Gaussian threshold
model over item difficulty, and a shared tempting wrong answer per item), generated here in
pure Python so every test is seeded and fast.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import BatchResult, EnsembleVerdict, Verdict
from cross_judge.errors import ConfigError
from cross_judge.stats import _dawid_skene as _dawid_skene
from cross_judge.stats._dawid_skene import dawid_skene
from cross_judge.stats._reliability import dawid_skene as dawid_skene_of_batch

pytestmark = pytest.mark.skipif(
    not _dawid_skene.numpy_available(), reason="errors='correlated' needs numpy"
)

ACCURACIES = (0.9, 0.75, 0.7, 0.65, 0.6)
LETTERS = ("A", "B", "C", "D")
NORMAL = NormalDist()


def correlated_votes(
    seed: int,
    n_items: int,
    accuracies: Sequence[float] = ACCURACIES,
    rho: float = 0.3,
    missing: float = 0.1,
) -> tuple[list[str], list[list[str | None]]]:
    """True labels and votes from the simulated vendor's model with error correlation rho.

    Each item has a difficulty ``D ~ N(0, 1)`` and a tempting wrong answer; critic ``j`` is
    right when ``-sqrt(rho) D + sqrt(1 - rho) E > Phi^-1(1 - accuracy_j)`` (so right with
    probability ``accuracy_j`` on average), and when wrong gives the tempting answer with
    probability ``rho``, else a uniformly drawn wrong label. A vote is missing with
    probability ``missing``. ``rho = 0`` gives independent one-coin critics.
    """
    rng = random.Random(seed)
    k = len(LETTERS)
    truth: list[str] = []
    rows: list[list[str | None]] = []
    for _ in range(n_items):
        true = rng.randrange(k)
        tempting = (true + 1 + rng.randrange(k - 1)) % k
        difficulty = NORMAL.inv_cdf(min(max(rng.random(), 1e-12), 1 - 1e-12))
        row: list[str | None] = []
        for accuracy in accuracies:
            noise = NORMAL.inv_cdf(min(max(rng.random(), 1e-12), 1 - 1e-12))
            right = -math.sqrt(rho) * difficulty + math.sqrt(1 - rho) * noise > NORMAL.inv_cdf(
                1 - accuracy
            )
            if right:
                answer = true
            elif rng.random() < rho:
                answer = tempting
            else:
                answer = (true + 1 + rng.randrange(k - 1)) % k
            row.append(None if rng.random() < missing else LETTERS[answer])
        truth.append(LETTERS[true])
        rows.append(row)
    return truth, rows


def measured_accuracy(truth: Sequence[str], rows: Sequence[Sequence[str | None]]) -> list[float]:
    out = []
    for j in range(len(rows[0])):
        pairs = [(row[j], t) for row, t in zip(rows, truth, strict=True) if row[j] is not None]
        out.append(sum(a == t for a, t in pairs) / len(pairs))
    return out


def hit_rate(labels: Sequence[str], truth: Sequence[str]) -> float:
    return sum(a == b for a, b in zip(labels, truth, strict=True)) / len(truth)


def worst_gap(estimated: Sequence[float | None], measured: Sequence[float]) -> float:
    gaps = []
    for e, m in zip(estimated, measured, strict=True):
        assert e is not None
        gaps.append(abs(e - m))
    return max(gaps)


@pytest.fixture(scope="module")
def correlated_panel() -> tuple[list[str], list[list[str | None]]]:
    return correlated_votes(seed=3, n_items=8000)


def test_estimates_every_critics_accuracy_within_three_points_when_errors_correlate(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    truth, rows = correlated_panel
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert worst_gap(fit.accuracy, measured_accuracy(truth, rows)) <= 0.03


def test_the_classic_model_misjudges_correlated_critics_more(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    truth, rows = correlated_panel
    measured = measured_accuracy(truth, rows)
    classic = dawid_skene(rows, classes=LETTERS)
    correlated = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert worst_gap(correlated.accuracy, measured) < worst_gap(classic.accuracy, measured)
    # The classic fit over-rates the weakest critic, whose errors others share.
    assert classic.accuracy[-1] is not None
    assert classic.accuracy[-1] > measured[-1] + 0.02


def test_correlated_labels_beat_the_classic_ones_when_errors_correlate(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    truth, rows = correlated_panel
    classic = dawid_skene(rows, classes=LETTERS)
    correlated = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert hit_rate(correlated.labels, truth) >= hit_rate(classic.labels, truth) + 0.005


def test_on_independent_errors_it_is_as_good_as_the_classic_model() -> None:
    truth, rows = correlated_votes(seed=4, n_items=6000, rho=0.0)
    measured = measured_accuracy(truth, rows)
    classic = dawid_skene(rows, classes=LETTERS)
    correlated = dawid_skene(rows, classes=LETTERS, errors="correlated")
    # It may read chance coincidences of wrong answers as a small shared wrong answer, which
    # moves a few near-tied items (1-2%) either way, not the hit rate.
    same = sum(a == b for a, b in zip(classic.labels, correlated.labels, strict=True))
    assert same / len(rows) >= 0.97
    assert hit_rate(correlated.labels, truth) >= hit_rate(classic.labels, truth) - 0.005
    assert worst_gap(correlated.accuracy, measured) <= 0.015


def test_it_learns_how_often_errors_land_on_the_shared_wrong_answer(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert fit.correlation is not None
    assert 0.2 <= fit.correlation.tempting_share <= 0.4  # 0.3 in the generator


def test_a_small_batch_does_not_lose_to_the_classic_model_on_average() -> None:
    gains = []
    for seed in range(6):
        truth, rows = correlated_votes(seed=seed, n_items=500)
        classic = dawid_skene(rows, classes=LETTERS)
        correlated = dawid_skene(rows, classes=LETTERS, errors="correlated")
        gains.append(hit_rate(correlated.labels, truth) - hit_rate(classic.labels, truth))
    assert sum(gains) / len(gains) >= 0.0
    assert min(gains) >= -0.03


def test_every_critic_stays_better_than_chance_at_every_difficulty() -> None:
    for seed in range(4):
        _, rows = correlated_votes(seed=seed, n_items=500, rho=0.6)
        fit = dawid_skene(rows, classes=LETTERS, errors="correlated")
        assert fit.correlation is not None
        for levels in fit.correlation.accuracy_by_difficulty:
            assert levels is not None
            assert min(levels) > 1 / len(LETTERS)


def test_difficulty_levels_are_listed_easiest_first_and_explain_accuracy(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated")
    correlation = fit.correlation
    assert correlation is not None
    assert len(correlation.difficulty) == 2
    assert math.isclose(sum(correlation.difficulty), 1.0)
    for j, levels in enumerate(correlation.accuracy_by_difficulty):
        assert levels is not None
        assert levels[0] > levels[1]
        overall = sum(w * a for w, a in zip(correlation.difficulty, levels, strict=True))
        accuracy = fit.accuracy[j]
        assert accuracy is not None
        assert math.isclose(overall, accuracy, rel_tol=1e-9)


def test_the_marginal_confusion_matrices_are_distributions_whose_diagonal_gives_accuracy(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    fit = dawid_skene(rows[:2000], classes=LETTERS, errors="correlated")
    for j, matrix in fit.confusion.items():
        for row in matrix.values():
            assert math.isclose(sum(row.values()), 1.0)
            assert all(p > 0 for p in row.values())
        diagonal = sum(fit.priors[c] * matrix[c][c] for c in LETTERS)
        accuracy = fit.accuracy[j]
        assert accuracy is not None
        assert math.isclose(diagonal, accuracy, rel_tol=1e-9)


def test_the_one_coin_variant_also_recovers_accuracies(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    truth, rows = correlated_panel
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated", one_coin=True)
    assert fit.one_coin
    assert worst_gap(fit.accuracy, measured_accuracy(truth, rows)) <= 0.03


label_matrices = st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.lists(
        st.lists(st.sampled_from(["x", "y", "z", None]), min_size=3, max_size=3),
        min_size=n,
        max_size=n,
    )
)


@settings(max_examples=40, deadline=None)
@given(label_matrices, st.booleans())
def test_posteriors_sum_to_one_and_labels_are_their_argmax(data: Any, one_coin: bool) -> None:
    fit = dawid_skene(data, classes=["x", "y", "z"], errors="correlated", one_coin=one_coin)
    for posterior, label in zip(fit.posteriors, fit.labels, strict=True):
        assert math.isclose(sum(posterior), 1.0, rel_tol=1e-9)
        assert all(0.0 <= p <= 1.0 for p in posterior)
        assert posterior[fit.classes.index(label)] >= max(posterior) - 1e-9


def test_a_critic_with_no_vote_has_no_estimate_and_changes_nothing(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    rows = rows[:1500]
    with_silent = [[*row, None] for row in rows]
    fit = dawid_skene(with_silent, classes=LETTERS, errors="correlated")
    without = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert fit.accuracy[-1] is None
    assert fit.correlation is not None
    assert fit.correlation.accuracy_by_difficulty[-1] is None
    assert fit.labels == without.labels


def test_a_single_class_or_no_vote_leaves_nothing_to_correlate() -> None:
    single = dawid_skene([["yes", "yes"], ["yes", None]], errors="correlated")
    assert single.posteriors == ((1.0,), (1.0,))
    assert single.errors == "correlated"
    assert single.correlation is None
    empty = dawid_skene([[None, None]], classes=["a", "b"], errors="correlated")
    assert empty.correlation is None
    assert empty.labels == ("a",)


def test_max_iter_zero_returns_the_start() -> None:
    _, rows = correlated_votes(seed=5, n_items=300)
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated", max_iter=0)
    assert fit.iterations == 0
    assert not fit.converged


def test_it_converges_within_its_default_rounds(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert fit.converged
    assert 0 < fit.iterations <= 1000


def test_without_numpy_it_is_a_config_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_dawid_skene, "numpy_available", lambda: False)
    with pytest.raises(ConfigError, match=r"cross-judge\[stats\]"):
        dawid_skene([["a", "b"]], errors="correlated")


def test_the_python_backend_cannot_fit_it() -> None:
    with pytest.raises(ConfigError, match="backend='auto'"):
        dawid_skene([["a", "b"]], errors="correlated", backend="python")


def test_an_unknown_error_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'independent' or 'correlated'"):
        dawid_skene([["a", "b"]], errors="dependent")  # type: ignore[arg-type]


# -- on a batch ---------------------------------------------------------------------------------


def batch_of(rows: Sequence[Sequence[str | None]]) -> BatchResult:
    critics = [f"c{j}" for j in range(len(rows[0]))]
    verdicts = []
    for i, row in enumerate(rows):
        votes = [
            Verdict(kind=label, confidence=0.8, critic_id=name)
            if label is not None
            else Verdict(kind="ERROR", error="timeout", critic_id=name)
            for name, label in zip(critics, row, strict=True)
        ]
        verdicts.append(
            EnsembleVerdict(query_id=f"item-{i}", consensus="A", verdicts=votes, voting="majority")
        )
    return BatchResult(verdicts=verdicts, critics=critics, voting="majority")


def test_the_batch_facade_names_critics_in_what_it_learned(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    learned = dawid_skene_of_batch(batch_of(rows[:2000]), errors="correlated")
    assert set(learned.accuracy_by_difficulty) == {f"c{j}" for j in range(5)}
    assert len(learned.difficulty) == 2
    assert learned.tempting_share is not None
    classic = dawid_skene_of_batch(batch_of(rows[:2000]))
    assert classic.accuracy_by_difficulty == {}
    assert classic.difficulty == ()
    assert classic.tempting_share is None


def test_revote_by_the_correlated_model_takes_its_labels(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    batch = batch_of(rows[:2000])
    revoted = batch.revote("dawid_skene", errors="correlated")
    learned = dawid_skene_of_batch(batch, errors="correlated")
    assert [r.consensus for r in revoted.verdicts] == [
        learned.labels[r.query_id] for r in batch.verdicts
    ]
    assert revoted.voting == "dawid_skene"


def test_revote_refuses_an_unknown_error_model() -> None:
    batch = batch_of([["A", "B", None]])
    with pytest.raises(ConfigError, match="'independent' or 'correlated'"):
        batch.revote("dawid_skene", errors="sometimes")


def test_the_error_correlation_the_difficulty_levels_imply_matches_the_hand_computation() -> None:
    from cross_judge.stats._dawid_skene_correlated import Correlation

    # Wrong: i 0.5 * 0.1 + 0.5 * 0.5 = 0.3; j 0.5 * 0.2 + 0.5 * 0.6 = 0.4.
    # Both wrong: 0.5 * 0.1 * 0.2 + 0.5 * 0.5 * 0.6 = 0.16; covariance 0.16 - 0.12 = 0.04.
    # phi = 0.04 / sqrt(0.3 * 0.7 * 0.4 * 0.6).
    correlation = Correlation(
        difficulty=(0.5, 0.5),
        accuracy_by_difficulty=((0.9, 0.5), (0.8, 0.4), None, (1.0, 1.0)),
        tempting_share=0.3,
    )
    assert correlation.error_correlation(0, 1) == pytest.approx(0.04 / math.sqrt(0.0504))
    assert correlation.error_correlation(0, 2) is None  # no vote
    assert correlation.error_correlation(0, 3) is None  # never wrong


def test_the_modelled_error_correlation_tracks_the_measured_one(
    correlated_panel: tuple[list[str], list[list[str | None]]],
) -> None:
    _, rows = correlated_panel
    fit = dawid_skene(rows, classes=LETTERS, errors="correlated")
    assert fit.correlation is not None
    independent = dawid_skene(
        correlated_votes(seed=3, n_items=8000, rho=0.0)[1], classes=LETTERS, errors="correlated"
    )
    assert independent.correlation is not None
    modelled = [fit.correlation.error_correlation(i, j) for i in range(5) for j in range(i + 1, 5)]
    baseline = [
        independent.correlation.error_correlation(i, j) for i in range(5) for j in range(i + 1, 5)
    ]
    assert all(phi is not None and 0.05 < phi < 0.35 for phi in modelled)
    assert all(phi is not None and abs(phi) < 0.05 for phi in baseline)
