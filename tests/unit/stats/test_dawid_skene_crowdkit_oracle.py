"""crowd-kit as a live oracle for Dawid-Skene on sparse crowds (``nox -s crowdkit``).

crowd-kit is never a dependency: this file skips without it, and the default test session
checks against its recorded answer instead (tests/unit/stats/test_dawid_skene_sparse.py).
Here crowd-kit's ``DawidSkene(n_iter=100)`` runs on the same seeded crowds, so a new
crowd-kit release or a new generator setting is compared afresh.
"""

from __future__ import annotations

import warnings

import pytest

from tests.fixtures.dawid_skene_sparse import SparseCrowd, majority, sparse_crowd

pytest.importorskip("crowdkit")
pd = pytest.importorskip("pandas")

from crowdkit.aggregation import DawidSkene  # noqa: E402  (after the skip)


def crowdkit_labels(crowd: SparseCrowd) -> list[str]:
    frame = pd.DataFrame({"task": crowd.items, "worker": crowd.critics, "label": crowd.labels})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas deprecations inside crowd-kit
        labels = DawidSkene(n_iter=100).fit_predict(frame)
    return [labels.get(i, crowd.classes[0]) for i in range(crowd.n_items)]


def accuracy(labels: list[str] | tuple[str, ...], crowd: SparseCrowd) -> float:
    return sum(a == b for a, b in zip(labels, crowd.truth, strict=True)) / crowd.n_items


CROWDS = {
    "a seventh of the issue's crowd": {"n_items": 1500, "n_critics": 110, "votes_per_item": 8.2},
    "no good annotator": {
        "n_items": 1500,
        "n_critics": 110,
        "votes_per_item": 5.0,
        "kind_shares": (0.0, 0.5, 0.4, 0.05, 0.05),
    },
    "hard items, rare classes": {
        "n_items": 1500,
        "n_critics": 110,
        "class_shares": (0.7, 0.2, 0.07, 0.03),
        "hard_share": 0.2,
    },
}


@pytest.mark.parametrize("shape", list(CROWDS))
def test_sparse_crowd_accuracy_is_within_a_point_of_crowdkits_or_better(shape: str) -> None:
    crowd = sparse_crowd(seed=11, **CROWDS[shape])  # type: ignore[arg-type]

    fit = crowd.fit()

    assert accuracy(fit.labels, crowd) >= accuracy(crowdkit_labels(crowd), crowd) - 0.01
    assert accuracy(fit.labels, crowd) >= accuracy(majority(crowd), crowd) - 0.01


def test_without_shrinkage_the_fit_is_crowdkits_model() -> None:
    # shrinkage=0 is the textbook maximum-likelihood fit crowd-kit runs: the labels agree on
    # nearly every item (the remaining few differ by start ties and stopping rules).
    crowd = sparse_crowd(seed=12, n_items=1500, n_critics=110)

    fit = crowd.fit(shrinkage=0.0)

    theirs = crowdkit_labels(crowd)
    assert sum(a == b for a, b in zip(fit.labels, theirs, strict=True)) >= 0.97 * crowd.n_items
