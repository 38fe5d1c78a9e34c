"""cross_judge.stats.estimates (issue 41): the interval's variance against an exact
enumeration of a tiny design, the floors a weighted queue refuses, and point estimates
that the new variance leaves as they were."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from cross_judge import ConfigError
from cross_judge.stats.estimates import estimate_share, prediction_powered_mean
from cross_judge.stats.label_queue import LabelQueue, label_queue

from .estimates_batch import TARGET, offline

# A population of 8 items: the jury's vote share and the truth (two jury mistakes).
PREDICTIONS = [1.0, 2 / 3, 0.0, 1 / 3, 0.0, 1.0, 0.0, 1 / 3]
TRUTH = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]


def every_sample(n: int) -> list[tuple[float, float]]:
    """``(value, se**2)`` of the estimate from every simple random sample of ``n`` of the
    8 items: the whole design, each sample equally likely."""
    out = []
    for sample in itertools.combinations(range(len(TRUTH)), n):
        est = prediction_powered_mean(
            PREDICTIONS,
            {k: TRUTH[k] for k in sample},
            dict.fromkeys(sample, n / len(TRUTH)),
            simple_random=True,
        )
        assert est.se is not None
        out.append((est.value, est.se**2))
    return out


@pytest.mark.parametrize("n", [3, 4, 5])
def test_the_estimated_variance_is_not_below_the_exact_one_of_the_design(n: int) -> None:
    # The exact variance of the estimate over all C(8, n) samples, lam tuned in each, next
    # to the mean estimated variance: the interval must not be optimistic.
    found = every_sample(n)
    exact = statistics.pvariance([value for value, _ in found])
    assert statistics.fmean(v for _, v in found) >= exact


def test_the_point_estimate_is_the_ppi_formula() -> None:
    # The variance changed in issue 41, the estimate did not: lam F + HT(Y - lam f), / N.
    labels = {0: 1.0, 1: 1.0, 2: 0.0, 4: 1.0}
    probabilities = {0: 0.5, 1: 0.25, 2: 0.5, 4: 0.2}
    est = prediction_powered_mean(PREDICTIONS, labels, probabilities, simple_random=False)
    assert est.lam is not None
    lam = est.lam
    expected = (
        lam * sum(PREDICTIONS)
        + sum((y - lam * PREDICTIONS[k]) / probabilities[k] for k, y in labels.items())
    ) / len(PREDICTIONS)
    assert est.value == pytest.approx(min(1.0, max(0.0, expected)))


def test_a_class_of_few_heavy_labels_that_show_no_mistake_still_widens_the_interval() -> None:
    # 20 labels at weight 2 and 3 at weight 40, all agreeing with the jury: the heavy class
    # shows no variance, but 3 labels cannot rule out the jury's mistakes on its items.
    predictions = [1.0 if k % 4 == 0 else 0.0 for k in range(200)]
    light = {k: predictions[k] for k in range(20)}
    heavy = {k: predictions[k] for k in (100, 101, 102)}
    probabilities = dict.fromkeys(light, 0.5) | dict.fromkeys(heavy, 1 / 40)
    est = prediction_powered_mean(predictions, light | heavy, probabilities, simple_random=False)
    assert est.se is not None
    assert est.se * 200 >= math.sqrt(3 * 40**2 * 2 / 4)  # the heavy class's floor alone


@pytest.mark.parametrize(
    ("strategy", "floor", "message"),
    [
        ("uncertain", 0.05, "floor must be at least 0.1 for strategy 'uncertain'"),
        ("disputed", 0.099, "floor must be at least 0.1 for strategy 'disputed'"),
        ("disputed", 10.5, "floor must be at most 10.0 for strategy 'disputed'"),
    ],
)
def test_a_floor_outside_the_strategys_bounds_is_refused_with_the_fix(
    strategy: str, floor: float, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        label_queue(offline(40).batch, 5, strategy=strategy, floor=floor)  # type: ignore[arg-type]


@pytest.mark.parametrize(("strategy", "floor"), [("uncertain", 0.1), ("disputed", 10.0)])
def test_the_bounds_themselves_are_accepted(strategy: str, floor: float) -> None:
    queue = label_queue(offline(40).batch, 5, strategy=strategy, floor=floor)  # type: ignore[arg-type]
    assert len(queue) == 5


def test_the_unweighted_strategies_ignore_the_floor() -> None:
    assert len(label_queue(offline(40).batch, 5, strategy="uniform", floor=0.01)) == 5


def test_an_estimate_from_a_queue_drawn_below_the_floor_is_refused() -> None:
    jury = offline(40)
    ids = [r.query_id for r in jury.batch.verdicts][:4]
    queue = LabelQueue(
        items=ids,
        probabilities=dict.fromkeys(ids, 0.1),
        strategy="uncertain",
        population=40,
        floor=0.01,
    )
    with pytest.raises(ConfigError, match="draw a new queue"):
        estimate_share(jury.batch, TARGET, gold={i: jury.truth[i] for i in ids}, queue=queue)


# 400 seeded draws of a 100-label queue from the simulated jury (2,000 items) at the
# smallest floor each weighted strategy accepts. Deterministic (fixed seeds); at a true
# 95% the binomial standard error over 400 draws is 1.1 points, so 90% is 4.5 below, and
# the old interval (0.70 for "disputed" at floor 0.1) is far under it.


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["uncertain", "disputed"])
def test_the_interval_covers_at_the_smallest_floor(strategy: str) -> None:
    jury = offline(2000)
    covered = 0
    for seed in range(400):
        queue = label_queue(jury.batch, 100, strategy=strategy, seed=seed, floor=0.1)  # type: ignore[arg-type]
        est = estimate_share(
            jury.batch, TARGET, gold={i: jury.truth[i] for i in queue.items}, queue=queue
        )
        assert est.low is not None and est.high is not None
        covered += est.low <= jury.true_share <= est.high
    assert covered / 400 >= 0.90
