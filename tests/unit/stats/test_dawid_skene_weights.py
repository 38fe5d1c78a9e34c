"""``dawid_skene(..., weights=)``: a row that stands for several items fits as that many
copies of it, so a caller that counted each distinct vote pattern (the streamed results
file of ``cross-judge stats``) fits in memory that does not grow with the items."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from cross_judge.errors import ConfigError
from cross_judge.stats._dawid_skene import DawidSkeneFit, dawid_skene, numpy_available

LABELS = ("A", "B", "C")


def rows(n: int, seed: int = 7) -> list[tuple[str | None, ...]]:
    """``n`` items x 3 critics of unequal accuracy, some votes missing."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        truth = rng.choice(LABELS)
        row = []
        for accuracy in (0.9, 0.75, 0.6):
            if rng.random() < 0.1:
                row.append(None)
            else:
                row.append(truth if rng.random() < accuracy else rng.choice(LABELS))
        out.append(tuple(row))
    return out


def assert_same_fit(a: DawidSkeneFit, b: DawidSkeneFit) -> None:
    assert a.classes == b.classes and a.votes == b.votes
    for x, y in zip(a.accuracy, b.accuracy, strict=True):
        assert x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9)
    for c in a.classes:
        assert math.isclose(a.priors[c], b.priors[c], rel_tol=1e-9)
    assert math.isclose(a.log_likelihood, b.log_likelihood, rel_tol=1e-9)


BACKENDS = ["python", *(["numpy"] if numpy_available() else [])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_weighted_distinct_rows_fit_as_the_repeated_rows(backend: str) -> None:
    items = rows(600)
    counts = Counter(items)
    distinct = list(counts)
    weighted = dawid_skene(distinct, weights=[counts[r] for r in distinct], backend=backend)  # type: ignore[arg-type]
    assert_same_fit(weighted, dawid_skene(items, backend=backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_weighted_row_gets_the_label_its_copies_get(backend: str) -> None:
    items = rows(400, seed=3)
    counts = Counter(items)
    distinct = list(counts)
    weighted = dawid_skene(distinct, weights=[counts[r] for r in distinct], backend=backend)  # type: ignore[arg-type]
    full = dawid_skene(items, backend=backend)
    by_row = dict(zip(items, full.labels, strict=True))
    assert list(weighted.labels) == [by_row[r] for r in distinct]


def test_weighted_rows_give_the_correlated_model_of_the_repeated_rows() -> None:
    pytest.importorskip("numpy")
    items = rows(800, seed=11)
    counts = Counter(items)
    distinct = list(counts)
    weighted = dawid_skene(
        distinct,  # type: ignore[arg-type]
        weights=[counts[r] for r in distinct],
        errors="correlated",
    )
    full = dawid_skene(items, errors="correlated")
    assert weighted.correlation is not None and full.correlation is not None
    for i in range(3):
        for j in range(i + 1, 3):
            a = weighted.correlation.error_correlation(i, j)
            b = full.correlation.error_correlation(i, j)
            assert a is not None and b is not None and math.isclose(a, b, abs_tol=1e-9)


@pytest.mark.parametrize(
    "weights",
    [[1, 2], [1, 0, 1], [1, 2.5, 1], [1, True, 1], "abc"],
    ids=["too few", "zero", "fraction", "bool", "a string"],
)
def test_weights_that_are_not_a_count_per_row_are_refused(weights: object) -> None:
    with pytest.raises(ConfigError, match="weights"):
        dawid_skene([("A", "B"), ("B", "B"), ("A", "A")], weights=weights)  # type: ignore[arg-type]
