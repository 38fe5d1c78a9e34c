"""Dawid-Skene on sparse crowds (cross_judge.stats._dawid_skene.fit_votes): accuracy against
crowd-kit's recorded answer and the majority vote, shrinkage of sparse annotators, the sparse
entry point, and the below-chance warning."""

from __future__ import annotations

import gzip
import json
import random
import tracemalloc
import warnings
from pathlib import Path

import pytest

from cross_judge import BatchResult, Ensemble, StatisticsWarning, Verdict
from cross_judge.errors import ConfigError
from cross_judge.stats import _dawid_skene as _dawid_skene, _reliability as reliability
from cross_judge.stats._dawid_skene import below_chance_critics, dawid_skene, fit_votes
from tests.fixtures.dawid_skene_sparse import SparseCrowd, majority, sparse_crowd
from tests.unit.stats.test_dawid_skene import synthetic_votes

SPARSE_FIXTURE = Path(__file__).parents[2] / "fixtures" / "dawid_skene_sparse_crowdkit.json.gz"

needs_numpy = pytest.mark.skipif(
    not _dawid_skene.numpy_available(), reason="numpy is not installed"
)


def accuracy(labels: list[str] | tuple[str, ...], truth: list[str]) -> float:
    return sum(a == b for a, b in zip(labels, truth, strict=True)) / len(truth)


def fit_crowd(crowd: SparseCrowd, **settings: object) -> _dawid_skene.DawidSkeneFit:
    return crowd.fit(**settings)


@pytest.fixture(scope="module")
def recorded() -> tuple[SparseCrowd, str]:
    """The sparse crowd crowd-kit was run on, and its label per item."""
    record = json.loads(gzip.decompress(SPARSE_FIXTURE.read_bytes()))
    crowd = sparse_crowd(**record["generator"])
    assert len(record["labels"]) == crowd.n_items
    return crowd, record["labels"]


# -- accuracy on sparse annotators -------------------------------------------------------------


def test_sparse_crowd_labels_are_no_worse_than_crowdkits_by_more_than_a_point(
    recorded: tuple[SparseCrowd, str],
) -> None:
    crowd, theirs = recorded

    fit = dawid_skene(crowd.rows(), classes=crowd.classes)

    assert accuracy(fit.labels, crowd.truth) >= accuracy(list(theirs), crowd.truth) - 0.01


def test_sparse_crowd_labels_are_no_worse_than_the_majority_vote_by_more_than_a_point(
    recorded: tuple[SparseCrowd, str],
) -> None:
    crowd, _ = recorded

    fit = dawid_skene(crowd.rows(), classes=crowd.classes)

    assert accuracy(fit.labels, crowd.truth) >= accuracy(majority(crowd), crowd.truth) - 0.01


def test_without_shrinkage_the_textbook_fit_falls_below_the_majority_vote(
    recorded: tuple[SparseCrowd, str],
) -> None:
    # Why shrinkage is on by default: the maximum-likelihood fit (crowd-kit's too) overfits
    # annotators with a few dozen votes on this crowd.
    crowd, theirs = recorded

    textbook = fit_crowd(crowd, shrinkage=0.0)

    assert accuracy(textbook.labels, crowd.truth) < accuracy(majority(crowd), crowd.truth) - 0.01
    assert accuracy(list(theirs), crowd.truth) < accuracy(majority(crowd), crowd.truth)


def test_a_sparse_annotator_does_not_look_like_an_oracle_on_a_class_it_saw_twice() -> None:
    truth, votes = synthetic_votes(7, 2000, accuracies=(0.8, 0.75, 0.7), missing=0.0)
    # A fourth critic that voted on two items only, both "B" and both right.
    two = [i for i, t in enumerate(truth) if t == "B"][:2]
    rows = [[*row, "B" if i in two else None] for i, row in enumerate(votes)]

    fit = dawid_skene(rows)

    assert fit.votes[3] == 2
    assert fit.confusion[3]["B"]["B"] < 0.9
    assert fit.confusion[0]["B"]["B"] > 0.75  # a critic with 500 votes on B keeps its own


# -- the sparse entry point --------------------------------------------------------------------


@pytest.mark.parametrize("one_coin", [False, True])
def test_fit_votes_gives_the_same_fit_as_the_matrix(one_coin: bool) -> None:
    _, rows = synthetic_votes(5, 500, accuracies=(0.9, 0.7, 0.6), missing=0.2)
    items, critics, labels = zip(
        *[(i, j, v) for i, row in enumerate(rows) for j, v in enumerate(row) if v is not None],
        strict=True,
    )

    sparse = fit_votes(items, critics, labels, n_items=500, n_critics=3, one_coin=one_coin)
    dense = dawid_skene(rows, one_coin=one_coin)

    assert sparse.labels == dense.labels
    for a, b in zip(sparse.posteriors, dense.posteriors, strict=True):
        assert a == pytest.approx(b, abs=1e-12)
    assert sparse.accuracy == pytest.approx(dense.accuracy, abs=1e-12)
    assert sparse.votes == dense.votes


@needs_numpy
def test_numpy_and_python_backends_agree_on_a_sparse_crowd() -> None:
    crowd = sparse_crowd(seed=3, n_items=600, n_critics=60, votes_per_item=4.0)

    fast = fit_crowd(crowd, backend="numpy")
    slow = fit_crowd(crowd, backend="python")

    assert fast.iterations == slow.iterations
    for a, b in zip(fast.posteriors, slow.posteriors, strict=True):
        assert a == pytest.approx(b, abs=1e-9)
    assert fast.accuracy == pytest.approx(slow.accuracy, abs=1e-9)


def test_items_and_critics_without_votes_are_allowed() -> None:
    fit = fit_votes([0, 0, 2], [0, 1, 1], ["a", "a", "b"], n_items=4, n_critics=3)

    assert fit.votes == (1, 2, 0)
    assert fit.accuracy[2] is None
    assert fit.posteriors[1] == tuple(fit.priors.values())
    assert fit.posteriors[3] == tuple(fit.priors.values())


def test_a_none_label_is_no_vote() -> None:
    with_none = fit_votes([0, 1, 1], [0, 0, 1], ["a", None, "b"], n_items=2, n_critics=2)
    without = fit_votes([0, 1], [0, 1], ["a", "b"], n_items=2, n_critics=2)

    assert with_none.votes == without.votes == (1, 1)
    assert with_none.posteriors == without.posteriors


@needs_numpy
def test_a_thousand_critics_on_a_sparse_batch_never_build_an_items_by_critics_array() -> None:
    # 20,000 items x 1,000 critics, 3 votes an item: a dense float array would be 160 MB
    # (the old one-hot pattern array five times that); the votes take about 1.5 MB.
    rng = random.Random(4)
    n_items, n_critics = 20_000, 1000
    items = [i for i in range(n_items) for _ in range(3)]
    critics = [c for _ in range(n_items) for c in rng.sample(range(n_critics), 3)]
    labels = [rng.choice("ABCD") for _ in items]
    fit_votes(items[:30], critics[:30], labels[:30], n_items=10, n_critics=n_critics)  # warm up

    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatisticsWarning)
            fit = fit_votes(items, critics, labels, n_items=n_items, n_critics=n_critics)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert len(fit.labels) == n_items
    assert peak < 40_000_000


@pytest.mark.parametrize(
    ("votes", "sizes", "message"),
    [
        (([0, 1], [0], ["a", "b"]), (2, 1), "parallel"),
        (([0, 2], [0, 0], ["a", "b"]), (2, 1), r"items\[1\] = 2 is not an index"),
        (([0, 1], [0, -1], ["a", "b"]), (2, 1), r"critics\[1\] = -1 is not an index"),
        (([0, 1], [0, 0], ["a", "c"]), (2, 1), r"'c' \(vote 1\) is not one of the classes"),
        (([0], [0], ["a"]), (-1, 1), "n_items"),
    ],
)
def test_malformed_votes_are_config_errors(
    votes: tuple[list[int], list[int], list[str]], sizes: tuple[int, int], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        fit_votes(*votes, n_items=sizes[0], n_critics=sizes[1], classes=["a", "b"])


def test_shrinkage_must_be_a_number_of_pseudo_votes_at_least_zero() -> None:
    with pytest.raises(ConfigError, match="shrinkage"):
        fit_votes([0], [0], ["a"], n_items=1, n_critics=1, shrinkage=-1.0)


# -- below chance ------------------------------------------------------------------------------


def below_chance_panel(seed: int) -> tuple[list[str], list[list[str | None]]]:
    """Three critics who are mostly wrong (accuracy 0.1) and two honest ones (0.7)."""
    return synthetic_votes(seed, 1000, accuracies=(0.1, 0.1, 0.1, 0.7, 0.7), missing=0.0)


def test_a_panel_of_mostly_below_chance_critics_warns_that_labels_may_be_flipped() -> None:
    _, votes = below_chance_panel(1)

    with pytest.warns(StatisticsWarning, match=r"below chance.*flipped.*one_coin=True"):
        fit = dawid_skene(votes)

    assert below_chance_critics(fit)


def test_the_warning_names_the_critics_it_flags() -> None:
    _, votes = below_chance_panel(2)

    items, critics, labels = zip(
        *[(i, j, v) for i, row in enumerate(votes) for j, v in enumerate(row)], strict=True
    )

    with pytest.warns(StatisticsWarning) as caught:
        fit = fit_votes(
            items,
            critics,
            labels,
            n_items=len(votes),
            n_critics=5,
            critic_names=["ann", "bob", "cy", "dee", "eve"],
        )

    flagged = [["ann", "bob", "cy", "dee", "eve"][j] for j in below_chance_critics(fit)]
    assert flagged
    assert all(name in str(caught[0].message) for name in flagged)


def test_an_honest_panel_does_not_warn() -> None:
    _, votes = synthetic_votes(3, 4000, accuracies=(0.9, 0.75, 0.7, 0.65, 0.6))

    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticsWarning)
        fit = dawid_skene(votes)

    assert below_chance_critics(fit) == ()


def test_a_sparse_crowd_with_spammers_does_not_warn(recorded: tuple[SparseCrowd, str]) -> None:
    # Annotators answering at random or always the same label are at chance, not below it.
    crowd, _ = recorded

    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticsWarning)
        fit = fit_crowd(crowd)

    assert below_chance_critics(fit) == ()


def test_a_critic_always_giving_the_same_label_is_at_chance_not_below() -> None:
    _, votes = synthetic_votes(4, 2000, accuracies=(0.9, 0.8, 0.7), missing=0.0)
    rows = [[*row, "D"] for row in votes]  # D is the rarest class: accuracy about 0.1

    fit = dawid_skene(rows)

    assert fit.accuracy[3] == pytest.approx(0.1, abs=0.03)
    assert 3 not in below_chance_critics(fit)


# -- over a batch ------------------------------------------------------------------------------


def batch_from_rows(rows: list[list[str | None]], names: list[str]) -> BatchResult:
    panel = Ensemble(critics=[])
    results = [
        panel.aggregate_verdicts(
            [Verdict(kind=v, critic_id=n) for n, v in zip(names, row, strict=True) if v],
            query_id=f"q{i}",
        )
        for i, row in enumerate(rows)
    ]
    return BatchResult(verdicts=results, critics=names, voting="majority")


def test_a_batch_is_fitted_from_its_verdicts_without_an_items_by_critics_matrix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crowd = sparse_crowd(seed=5, n_items=300, n_critics=40, votes_per_item=4.0)
    names = [f"annotator-{j}" for j in range(crowd.n_critics)]
    batch = batch_from_rows(crowd.rows(), names)

    def dense(self: BatchResult) -> list[list[str | None]]:
        raise AssertionError("built the critics x items matrix")

    monkeypatch.setattr(BatchResult, "labels_matrix", dense)
    learned = reliability.dawid_skene(batch)

    direct = fit_crowd(crowd)
    assert list(learned.labels.values()) == list(direct.labels)
    assert list(learned.accuracy.values()) == pytest.approx(direct.accuracy)


def test_a_batch_fit_names_its_below_chance_critics_in_the_warning() -> None:
    _, votes = below_chance_panel(3)
    names = ["ann", "bob", "cy", "dee", "eve"]

    with pytest.warns(StatisticsWarning) as caught:
        learned = reliability.dawid_skene(batch_from_rows(votes, names))

    flagged = [names[j] for j in below_chance_critics(learned.fit)]
    assert flagged
    assert all(name in str(caught[0].message) for name in flagged)


def test_without_numpy_the_sparse_fit_runs_in_pure_python_with_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crowd = sparse_crowd(seed=8, n_items=300, n_critics=30, votes_per_item=4.0)
    expected = fit_crowd(crowd)

    monkeypatch.setattr(_dawid_skene, "numpy_available", lambda: False)
    fit = fit_crowd(crowd)

    assert fit.labels == expected.labels
    for a, b in zip(fit.posteriors, expected.posteriors, strict=True):
        assert a == pytest.approx(b, abs=1e-9)
