"""Dawid-Skene EM (cross_judge.stats._dawid_skene): hand-computed steps, invariants, recovery of
known critic accuracies on synthetic votes, and agreement with crowd-kit's recorded labels."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError
from cross_judge.stats import _dawid_skene as _dawid_skene
from cross_judge.stats._dawid_skene import DawidSkeneFit, dawid_skene

CROWDKIT_FIXTURE = Path(__file__).parents[2] / "fixtures" / "dawid_skene_crowdkit.json.gz"
ISSUE_ACCURACIES = (0.9, 0.75, 0.7, 0.65, 0.6)
LETTERS = ("A", "B", "C", "D")

needs_numpy = pytest.mark.skipif(
    not _dawid_skene.numpy_available(), reason="numpy is not installed"
)


def synthetic_votes(
    seed: int,
    n_items: int,
    accuracies: Sequence[float],
    classes: Sequence[str] = LETTERS,
    class_shares: Sequence[float] = (0.4, 0.3, 0.2, 0.1),
    missing: float = 0.1,
) -> tuple[list[str], list[list[str | None]]]:
    """Seeded votes from the one-coin model: the true labels and the items x critics matrix.

    Each item's true class is drawn by ``class_shares``; each critic independently gives no
    vote with probability ``missing``, else the true class with probability ``accuracy``,
    else one of the other classes uniformly. Only ``random.Random.random()`` is used, whose
    stream is stable across Python versions, so a seed always gives the same data
    (tests/fixtures/record_dawid_skene_crowdkit.py relies on it).
    """
    rng = random.Random(seed)
    k = len(classes)
    cumulative = [sum(class_shares[: i + 1]) for i in range(k)]
    truth: list[str] = []
    rows: list[list[str | None]] = []
    for _ in range(n_items):
        u = rng.random() * cumulative[-1]
        true = next((i for i, c in enumerate(cumulative) if u < c), k - 1)
        row: list[str | None] = []
        for accuracy in accuracies:
            if rng.random() < missing:
                row.append(None)
            elif rng.random() < accuracy:
                row.append(classes[true])
            else:
                wrong = int(rng.random() * (k - 1))
                row.append(classes[wrong + (wrong >= true)])
        truth.append(classes[true])
        rows.append(row)
    return truth, rows


def majority_labels(rows: Sequence[Sequence[str | None]], classes: Sequence[str]) -> list[str]:
    """Plain majority vote, ties to the earliest class (as Dawid-Skene breaks them)."""
    labels = []
    for row in rows:
        counts = Counter(label for label in row if label is not None)
        top = max(counts.values(), default=0)
        labels.append(next(c for c in classes if counts[c] == top))
    return labels


def share_equal(a: Sequence[str], b: Sequence[str]) -> float:
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


@pytest.fixture(scope="module")
def issue_votes() -> tuple[list[str], list[list[str | None]]]:
    """The issue's panel: 20,000 items, accuracies 0.9 .. 0.6, 4 labels, 10% missing."""
    return synthetic_votes(seed=15, n_items=20_000, accuracies=ISSUE_ACCURACIES)


# A tiny case worked by hand with smoothing 0.5 and max_iter=0, i.e. the soft-majority start,
# one M-step and one E-step. Classes sorted: ("no", "yes").
# Start: posteriors(yes) = 1, 1/2, 0, 1; priors = (1.5 + .5, 2.5 + .5) / (4 + 1) = (.4, .6).
# Critic 0 counts (true x answered): no: (1, .5), yes: (0, 2.5)
#   -> rows no: (1.5, 1) / 2.5 = (.6, .4); yes: (.5, 3) / 3.5 = (1/7, 6/7).
# Critic 1 counts: no: (1.5, 0), yes: (.5, 1)  -> rows no: (.8, .2); yes: (.4, .6).
# E-step, P(no), P(yes) per item (times 7): (yes, yes): .224, 2.16; (yes, no): .896, 1.44;
# (no, no): 1.344, .24; (yes, -): 1.12, 3.6.
HAND_VOTES: list[list[str | None]] = [["yes", "yes"], ["yes", "no"], ["no", "no"], ["yes", None]]
HAND_EVIDENCE_TIMES_7 = [2.384, 2.336, 1.584, 4.72]


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_one_em_step_matches_the_hand_computation(backend: Any) -> None:
    fit = dawid_skene(HAND_VOTES, max_iter=0, smoothing=0.5, shrinkage=0.0, backend=backend)

    assert fit.classes == ("no", "yes")
    assert fit.priors == pytest.approx({"no": 0.4, "yes": 0.6}, abs=1e-12)
    assert fit.confusion[0]["no"] == pytest.approx({"no": 0.6, "yes": 0.4}, abs=1e-12)
    assert fit.confusion[0]["yes"] == pytest.approx({"no": 1 / 7, "yes": 6 / 7}, abs=1e-12)
    assert fit.confusion[1]["no"] == pytest.approx({"no": 0.8, "yes": 0.2}, abs=1e-12)
    assert fit.confusion[1]["yes"] == pytest.approx({"no": 0.4, "yes": 0.6}, abs=1e-12)
    expected_yes = [Fraction(135, 149), Fraction(45, 73), Fraction(5, 33), Fraction(45, 59)]
    assert [p[1] for p in fit.posteriors] == pytest.approx([float(f) for f in expected_yes])
    assert [p[0] for p in fit.posteriors] == pytest.approx([float(1 - f) for f in expected_yes])
    assert fit.labels == ("yes", "yes", "no", "yes")
    # accuracy = .4 * .6 + .6 * 6/7 and .4 * .8 + .6 * .6
    assert fit.accuracy == pytest.approx((0.24 + 3.6 / 7, 0.68))
    assert fit.votes == (4, 3)
    expected_ll = sum(math.log(e / 7) for e in HAND_EVIDENCE_TIMES_7)
    assert fit.log_likelihood == pytest.approx(expected_ll)
    assert (fit.iterations, fit.converged, fit.one_coin) == (0, False, False)


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_one_coin_em_step_matches_the_hand_computation(backend: Any) -> None:
    # Same start as above. Critic 0 is right on 1 + 2.5 of 4 votes: p = (3.5 + .5) / (4 + 1);
    # critic 1 on 1.5 + 1 of 3: p = (2.5 + .5) / (3 + 1). With K = 2 errors go to the other
    # class: P(no), P(yes) for (yes, yes) = .4*.2*.25, .6*.8*.75 = .02, .36, and so on.
    fit = dawid_skene(
        HAND_VOTES, one_coin=True, max_iter=0, smoothing=0.5, shrinkage=0.0, backend=backend
    )

    assert fit.accuracy == pytest.approx((0.8, 0.75))
    assert fit.confusion[0]["yes"] == pytest.approx({"no": 0.2, "yes": 0.8})
    assert fit.confusion[1]["no"] == pytest.approx({"no": 0.75, "yes": 0.25})
    assert [p[1] for p in fit.posteriors] == pytest.approx([18 / 19, 2 / 3, 1 / 9, 6 / 7])
    assert fit.log_likelihood == pytest.approx(math.log(0.38 * 0.18 * 0.27 * 0.56))
    assert fit.one_coin


def test_symmetric_votes_are_a_fixed_point_with_ties_to_the_first_class() -> None:
    votes: list[list[str | None]] = [["a", "b"], ["b", "a"]]

    fit = dawid_skene(votes)
    reordered = dawid_skene(votes, classes=["b", "a"])

    assert fit.posteriors == ((0.5, 0.5), (0.5, 0.5))
    assert fit.labels == ("a", "a")
    assert reordered.labels == ("b", "b")
    assert fit.converged
    assert fit.iterations == 1


label_matrices = st.integers(1, 3).flatmap(
    lambda n_classes: st.integers(1, 4).flatmap(
        lambda n_critics: st.tuples(
            st.just(("x", "y", "z")[:n_classes]),
            st.lists(
                st.lists(
                    st.sampled_from([None, *("x", "y", "z")[:n_classes]]),
                    min_size=n_critics,
                    max_size=n_critics,
                ),
                max_size=25,
            ),
        )
    )
)


@settings(max_examples=60, deadline=None)
@given(label_matrices, st.booleans())
def test_posteriors_are_probabilities_summing_to_one(data: Any, one_coin: bool) -> None:
    classes, votes = data

    fit = dawid_skene(votes, classes=classes, one_coin=one_coin)

    assert len(fit.posteriors) == len(votes)
    for posterior in fit.posteriors:
        assert len(posterior) == len(classes)
        assert all(0.0 <= p <= 1.0 for p in posterior)
        assert math.fsum(posterior) == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(fit.priors.values()) == pytest.approx(1.0, abs=1e-12)
    for matrix in fit.confusion.values():
        for row in matrix.values():
            assert math.fsum(row.values()) == pytest.approx(1.0, abs=1e-12)
            assert min(row.values()) > 0.0


@settings(max_examples=40, deadline=None)
@given(label_matrices.flatmap(lambda d: st.tuples(st.just(d), st.permutations(range(4)))))
def test_permuting_critics_permutes_their_estimates(data: Any) -> None:
    (classes, votes), order = data
    n_critics = len(votes[0]) if votes else 0
    perm = [j for j in order if j < n_critics]  # new critic j is old critic perm[j]
    permuted = [[row[j] for j in perm] for row in votes]

    fit = dawid_skene(votes, classes=classes, tol=0.0, max_iter=30)
    refit = dawid_skene(permuted, classes=classes, tol=0.0, max_iter=30)

    for j, old in enumerate(perm):
        assert refit.votes[j] == fit.votes[old]
        if fit.accuracy[old] is None:
            assert refit.accuracy[j] is None
        else:
            assert refit.accuracy[j] == pytest.approx(fit.accuracy[old], abs=1e-6)
    for new, old in zip(refit.posteriors, fit.posteriors, strict=True):
        assert new == pytest.approx(old, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(label_matrices, st.permutations(["apple", "kiwi", "fig"]))
def test_relabelling_classes_relabels_the_output(data: Any, new_names: list[str]) -> None:
    classes, votes = data
    rename = dict(zip(classes, new_names, strict=False))
    renamed = [[None if v is None else rename[v] for v in row] for row in votes]

    fit = dawid_skene(votes, classes=classes, tol=0.0, max_iter=30)
    # Default classes are sorted, so the renamed vocabulary comes in another order.
    refit = dawid_skene(renamed, classes=sorted(rename.values()), tol=0.0, max_iter=30)

    position = {c: refit.classes.index(rename[c]) for c in classes}
    for old, new in zip(fit.posteriors, refit.posteriors, strict=True):
        assert [new[position[c]] for c in classes] == pytest.approx(list(old), abs=1e-6)
    for c in classes:
        assert refit.priors[rename[c]] == pytest.approx(fit.priors[c], abs=1e-6)
    for old_post, old_label, new_label in zip(
        fit.posteriors, fit.labels, refit.labels, strict=True
    ):
        runner_up = sorted(old_post)[-2] if len(old_post) > 1 else 0.0
        if max(old_post) - runner_up > 1e-6:  # a clear winner, not a tie broken by class order
            assert new_label == rename[old_label]


@needs_numpy
@settings(max_examples=60, deadline=None)
@given(label_matrices, st.booleans())
def test_numpy_and_python_backends_agree(data: Any, one_coin: bool) -> None:
    classes, votes = data

    # A fixed number of steps: near a symmetric fixed point EM is unstable, and the
    # backends' rounding differences (1e-16) grow about 2x per step, so over a full run
    # they can part by more than 1e-9 before meeting at the same answer again (seen on
    # [[None, "x"], ["x", "y"]], one-coin: 3e-5 apart at step 72, 1e-9 at convergence).
    # With tol=0 a backend may still stop a step early on a gain of -1e-17 (its rounding
    # made the objective fall by a hair), and one more step can move an unstable fit by
    # 2e-9; so the backend that ran longer is rerun for the other's number of steps.
    def fit(backend: Any, steps: int) -> DawidSkeneFit:
        return dawid_skene(
            votes, classes=classes, one_coin=one_coin, backend=backend, max_iter=steps, tol=0.0
        )

    by_python = fit("python", 10)
    by_numpy = fit("numpy", by_python.iterations)
    if by_numpy.iterations < by_python.iterations:
        by_python = fit("python", by_numpy.iterations)

    # Same steps; ``converged`` may still differ (a last step's gain of -1e-17 or +1e-17).
    assert by_python.iterations == by_numpy.iterations
    assert_same_fit(by_python, by_numpy, same_steps=False)


@needs_numpy
def test_the_backends_meet_at_the_same_answer_after_an_unstable_start() -> None:
    votes = [[None, "x"], ["x", "y"]]
    settle = {"classes": ["x", "y"], "one_coin": True, "max_iter": 5000, "tol": 1e-15}
    by_python = dawid_skene(votes, backend="python", **settle)
    by_numpy = dawid_skene(votes, backend="numpy", **settle)
    assert by_python.priors == pytest.approx(by_numpy.priors, abs=1e-6)
    assert by_python.labels == by_numpy.labels


@needs_numpy
@pytest.mark.parametrize("one_coin", [False, True])
def test_numpy_and_python_backends_agree_on_the_issue_panel(
    issue_votes: tuple[list[str], list[list[str | None]]], one_coin: bool
) -> None:
    _, votes = issue_votes

    by_python = dawid_skene(votes, one_coin=one_coin, backend="python")
    by_numpy = dawid_skene(votes, one_coin=one_coin, backend="numpy")

    assert_same_fit(by_python, by_numpy)


def assert_same_fit(a: DawidSkeneFit, b: DawidSkeneFit, *, same_steps: bool = True) -> None:
    assert (a.classes, a.votes) == (b.classes, b.votes)
    if same_steps:
        assert (a.iterations, a.converged) == (b.iterations, b.converged)
    assert a.priors == pytest.approx(b.priors, abs=1e-9)
    for j, matrix in a.confusion.items():
        for true, row in matrix.items():
            assert row == pytest.approx(b.confusion[j][true], abs=1e-9)
    assert [x for x in a.accuracy if x is not None] == pytest.approx(
        [x for x in b.accuracy if x is not None], abs=1e-9
    )
    assert a.log_likelihood == pytest.approx(b.log_likelihood, rel=1e-9, abs=1e-9)
    for p, q, la, lb in zip(a.posteriors, b.posteriors, a.labels, b.labels, strict=True):
        assert p == pytest.approx(q, abs=1e-9)
        runner_up = sorted(p)[-2] if len(p) > 1 else 0.0
        if max(p) - runner_up > 1e-6:
            assert la == lb


@pytest.mark.parametrize("one_coin", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_a_perfect_critic_is_estimated_near_one_and_its_labels_win(
    seed: int, one_coin: bool
) -> None:
    # Not exactly 1 and not every item: with finite data the maximum-likelihood fit gives the
    # perfect critic a small error rate, so a handful of items where all the noisy critics
    # agree against it can flip (crowd-kit's DawidSkene does the same).
    truth, noisy = synthetic_votes(seed, 2000, accuracies=(0.7, 0.6, 0.55), missing=0.1)
    votes = [[answer, *row] for answer, row in zip(truth, noisy, strict=True)]
    outvoted = [i for i, label in enumerate(majority_labels(votes, LETTERS)) if label != truth[i]]

    fit = dawid_skene(votes, one_coin=one_coin)

    assert fit.accuracy[0] is not None
    assert fit.accuracy[0] > 0.98
    assert share_equal(fit.labels, truth) >= 0.99
    # Where the majority vote overrules the perfect critic, Dawid-Skene sides with it.
    assert len(outvoted) > 100
    assert sum(fit.labels[i] == truth[i] for i in outvoted) >= 0.9 * len(outvoted)


@pytest.mark.parametrize("seed", range(3))
def test_a_critic_answering_at_random_is_estimated_near_chance(seed: int) -> None:
    # Accuracy 1/K with errors spread evenly over the other K-1 classes is a uniform guess.
    _, votes = synthetic_votes(seed, 4000, accuracies=(0.85, 0.8, 0.75, 0.25), missing=0.0)

    fit = dawid_skene(votes)

    assert fit.accuracy[3] == pytest.approx(0.25, abs=0.03)
    for row in fit.confusion[3].values():
        assert list(row.values()) == pytest.approx([0.25] * 4, abs=0.06)


def test_full_model_recovers_the_issue_panels_accuracies_within_three_points(
    issue_votes: tuple[list[str], list[list[str | None]]],
) -> None:
    _, votes = issue_votes

    fit = dawid_skene(votes)

    assert fit.converged
    assert fit.accuracy == pytest.approx(ISSUE_ACCURACIES, abs=0.03)
    assert list(fit.priors.values()) == pytest.approx([0.4, 0.3, 0.2, 0.1], abs=0.02)


def test_one_coin_model_recovers_the_issue_panels_accuracies_within_three_points(
    issue_votes: tuple[list[str], list[list[str | None]]],
) -> None:
    _, votes = issue_votes

    fit = dawid_skene(votes, one_coin=True)

    assert fit.converged
    assert fit.accuracy == pytest.approx(ISSUE_ACCURACIES, abs=0.03)
    for j, accuracy in enumerate(fit.accuracy):
        assert fit.confusion[j]["B"] == pytest.approx(
            {
                "A": (1 - accuracy) / 3,
                "B": accuracy,
                "C": (1 - accuracy) / 3,
                "D": (1 - accuracy) / 3,
            }  # type: ignore[operator]
        )


def test_dawid_skene_labels_beat_majority_vote_on_unequal_critics(
    issue_votes: tuple[list[str], list[list[str | None]]],
) -> None:
    truth, votes = issue_votes

    fit = dawid_skene(votes)

    majority = share_equal(majority_labels(votes, LETTERS), truth)
    assert share_equal(fit.labels, truth) >= majority + 0.01


def test_a_missing_vote_contributes_nothing() -> None:
    _, votes = synthetic_votes(3, 300, accuracies=(0.8, 0.7, 0.6), missing=0.2)
    with_silent_critic = [[*row, None] for row in votes]

    fit = dawid_skene(votes)
    refit = dawid_skene(with_silent_critic)

    for new, old in zip(refit.posteriors, fit.posteriors, strict=True):
        assert new == pytest.approx(old, abs=1e-12)
    assert refit.accuracy[:3] == pytest.approx(fit.accuracy, abs=1e-12)
    assert refit.accuracy[3] is None
    assert refit.votes == (*fit.votes, 0)
    assert refit.log_likelihood == pytest.approx(fit.log_likelihood)


def test_an_item_with_no_vote_gets_the_priors_and_their_most_likely_class() -> None:
    votes: list[list[str | None]] = [["b", "b"], ["b", "a"], [None, None], ["b", None]]

    fit = dawid_skene(votes)

    assert fit.posteriors[2] == tuple(fit.priors.values())
    assert fit.priors["b"] > fit.priors["a"]
    assert fit.labels[2] == "b"


def test_no_vote_at_all_gives_uniform_priors_and_the_first_class() -> None:
    fit = dawid_skene([[None, None], [None, None]], classes=["pass", "fail"])

    assert fit.priors == {"pass": 0.5, "fail": 0.5}
    assert fit.posteriors == ((0.5, 0.5), (0.5, 0.5))
    assert fit.labels == ("pass", "pass")
    assert fit.accuracy == (None, None)
    assert (fit.iterations, fit.converged, fit.log_likelihood) == (0, True, 0.0)


def test_no_items_gives_an_empty_fit() -> None:
    fit = dawid_skene([], classes=["pass", "fail"])

    assert fit.posteriors == ()
    assert fit.labels == ()
    assert fit.accuracy == ()
    assert fit.priors == {"pass": 0.5, "fail": 0.5}


def test_a_single_class_is_certain() -> None:
    fit = dawid_skene([["ok", None], ["ok", "ok"]], one_coin=True)

    assert fit.posteriors == ((1.0,), (1.0,))
    assert fit.accuracy == (1.0, 1.0)


def test_a_class_nobody_chose_keeps_a_small_prior_and_is_never_the_label() -> None:
    _, votes = synthetic_votes(
        4, 400, accuracies=(0.9, 0.8), classes=("a", "b"), class_shares=(0.5, 0.5)
    )

    fit = dawid_skene(votes, classes=["a", "b", "unused"])

    assert 0.0 < fit.priors["unused"] < 1e-3
    assert "unused" not in fit.labels


def test_max_iter_stops_the_em_before_it_converges(
    issue_votes: tuple[list[str], list[list[str | None]]],
) -> None:
    _, votes = issue_votes

    fit = dawid_skene(votes, max_iter=1)

    assert (fit.iterations, fit.converged) == (1, False)


def test_the_fit_is_frozen_and_holds_plain_python_floats() -> None:
    fit = dawid_skene(HAND_VOTES)

    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.labels = ()  # type: ignore[misc]
    assert all(type(p) is float for posterior in fit.posteriors for p in posterior)
    assert all(type(p) is float for p in fit.priors.values())
    assert all(type(a) is float for a in fit.accuracy)
    assert type(fit.log_likelihood) is float


def test_a_label_outside_classes_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"'maybe' \(item 1, critic 0\).*classes="):
        dawid_skene([["yes", "no"], ["maybe", "no"]], classes=["yes", "no"])


@pytest.mark.parametrize(
    ("votes", "classes", "message"),
    [
        ([["a", "b"], ["a"]], None, "row 1 has 1 entries but row 0 has 2"),
        (["ab", "ba"], None, "items x critics"),
        ([[None], [None]], None, "pass classes="),
        ([["a"]], ["a", "a"], "duplicates"),
        ([["a"]], [], "empty"),
        ([["a"]], "ab", "sequence of labels"),
        ([["a"]], ["a", None], "must not contain None"),
        ([[["a"]]], ["a"], r"\['a'\].*not one of the classes"),
    ],
)
def test_malformed_labels_or_classes_are_config_errors(
    votes: Any, classes: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        dawid_skene(votes, classes=classes)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"max_iter": -1}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"tol": -1e-3}, "tol"),
        ({"tol": math.nan}, "tol"),
        ({"smoothing": 0.0}, "smoothing"),
        ({"backend": "cuda"}, "backend"),
    ],
)
def test_bad_settings_are_config_errors(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        dawid_skene(HAND_VOTES, **setting)


def test_numpy_backend_without_numpy_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dawid_skene, "numpy_available", lambda: False)

    with pytest.raises(ConfigError, match=r"cross-judge\[stats\]"):
        dawid_skene(HAND_VOTES, backend="numpy")


def test_auto_backend_without_numpy_runs_in_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_numpy(*args: Any) -> Any:
        raise AssertionError("the numpy path ran")

    monkeypatch.setattr(_dawid_skene, "numpy_available", lambda: False)
    monkeypatch.setattr(_dawid_skene, "_em_numpy", no_numpy)

    fit = dawid_skene(HAND_VOTES, max_iter=0, smoothing=0.5)

    assert fit.labels == ("yes", "yes", "no", "yes")


def test_labels_match_crowdkits_recorded_dawid_skene_on_995_permille_of_items() -> None:
    # Recorded once by tests/fixtures/record_dawid_skene_crowdkit.py; crowd-kit is not a
    # dependency. "-" marks an item crowd-kit gave no label (no vote at all).
    record = json.loads(gzip.decompress(CROWDKIT_FIXTURE.read_bytes()))
    _, votes = synthetic_votes(**record["generator"])
    theirs = record["labels"]
    assert len(theirs) == len(votes)

    fit = dawid_skene(votes, classes=record["generator"]["classes"])

    compared = [(ours, t) for ours, t in zip(fit.labels, theirs, strict=True) if t != "-"]
    assert len(compared) >= 0.999 * len(votes)
    assert share_equal(*zip(*compared, strict=True)) >= 0.995
