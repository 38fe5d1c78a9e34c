"""cross_judge.stats.estimates: PPI++ shares and accuracies from the jury and people's labels."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from cross_judge import BatchResult, ConfigError, Ensemble, EnsembleVerdict, Verdict
from cross_judge.stats.estimates import (
    Estimate,
    estimate_accuracy,
    estimate_share,
    prediction_powered_mean,
)
from cross_judge.stats.label_queue import LabelQueue, label_queue

from .estimates_batch import TARGET, Judged, judged, offline

PANEL = Ensemble(critics=[])


def item(query_id: str, *kinds: str | None) -> EnsembleVerdict:
    votes = [
        Verdict(kind="ERROR", critic_id=f"c{i}", error="timeout")
        if kind is None
        else Verdict(kind=kind, critic_id=f"c{i}", confidence=0.8)
        for i, kind in enumerate(kinds)
    ]
    return PANEL.aggregate_verdicts(votes, query_id=query_id)


def batch_of(*results: EnsembleVerdict) -> BatchResult:
    critics = list(dict.fromkeys(v.critic_id for r in results for v in r.verdicts))
    return BatchResult(verdicts=list(results), critics=critics, voting="majority")


@pytest.fixture(scope="module")
def jury() -> Judged:
    return offline()


# --- the statistic on plain numbers -----------------------------------------------------------


def test_labels_of_every_item_give_the_exact_mean_with_no_width() -> None:
    predictions = [1.0, 0.0, 1.0, 1.0]
    labels = {0: 1.0, 1: 1.0, 2: 0.0, 3: 1.0}
    est = prediction_powered_mean(
        predictions, labels, dict.fromkeys(labels, 1.0), simple_random=True
    )
    assert est.value == pytest.approx(0.75)
    assert est.se == pytest.approx(0.0)  # a census: the finite-population correction is 0
    assert (est.low, est.high) == (pytest.approx(0.75), pytest.approx(0.75))


def test_lam_zero_is_the_labels_only_horvitz_thompson_estimate() -> None:
    # Predictions that carry nothing (all equal) get no weight.
    predictions = [0.5] * 10
    labels = {0: 1.0, 3: 0.0, 7: 1.0}
    probabilities = {0: 0.5, 3: 0.25, 7: 0.5}
    est = prediction_powered_mean(predictions, labels, probabilities, simple_random=False)
    assert est.lam == 0.0
    assert est.method == "labels only"
    assert est.value == pytest.approx((1 / 0.5 + 0 + 1 / 0.5) / 10)
    assert est.labels_only == pytest.approx(est.value)


def test_perfect_predictions_get_full_weight_and_a_zero_width_interval() -> None:
    predictions = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    labels = {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}
    est = prediction_powered_mean(
        predictions, labels, dict.fromkeys(labels, 0.5), simple_random=True
    )
    assert est.lam == 1.0
    assert est.method == "ppi++"
    assert est.value == pytest.approx(3 / 8)
    assert est.se == pytest.approx(0.0)


def test_simple_random_variance_has_the_finite_population_correction() -> None:
    # lam = 0 (constant predictions): the textbook (1 - n/N) s^2 / n.
    labels = {0: 1.0, 1: 0.0, 2: 1.0, 3: 1.0}
    est = prediction_powered_mean(
        [0.0] * 20, labels, dict.fromkeys(labels, 4 / 20), simple_random=True
    )
    s2 = statistics.variance(labels.values())
    assert est.se == pytest.approx(math.sqrt((1 - 4 / 20) * s2 / 4))


def test_unequal_probability_variance_is_the_with_replacement_approximation() -> None:
    labels = {0: 1.0, 1: 0.0, 2: 1.0}
    probabilities = {0: 0.2, 1: 0.5, 2: 0.4}
    est = prediction_powered_mean([0.0] * 10, labels, probabilities, simple_random=False)
    z = [3 * y / probabilities[k] for k, y in labels.items()]
    expected = statistics.variance(z) / 3  # sum (z - mean)^2 / (n (n - 1))
    assert est.se == pytest.approx(math.sqrt(expected) / 10)


def test_items_drawn_with_certainty_add_no_variance() -> None:
    labels = {0: 1.0, 1: 0.0}
    est = prediction_powered_mean(
        [0.0] * 5, labels, dict.fromkeys(labels, 1.0), simple_random=False
    )
    assert est.se == 0.0
    assert est.value == pytest.approx(1 / 5)


def test_one_label_gives_an_estimate_without_an_interval() -> None:
    est = prediction_powered_mean([1.0, 0.0, 1.0], {0: 1.0}, {0: 1 / 3}, simple_random=True)
    assert est.se is None
    assert est.low is None and est.high is None


def test_no_label_is_the_jury_alone_without_an_interval() -> None:
    est = prediction_powered_mean([1.0, 0.0, 1.0, 1.0], {}, {}, simple_random=True)
    assert est.method == "jury only"
    assert est.value == pytest.approx(0.75)
    assert est.low is None and est.n_labels == 0


def test_items_outside_the_domain_count_as_draws_of_value_zero() -> None:
    # Items 1 and 3 are outside the population; item 1 is labelled (a draw of the frame).
    est = prediction_powered_mean(
        [1.0, None, 0.0, None, 1.0, 1.0],
        {0: 1.0, 1: 1.0, 2: 1.0},
        dict.fromkeys(range(3), 0.75),
        simple_random=True,
    )
    assert est.n_items == 4
    assert est.n_labels == 2
    assert est.labels_only == pytest.approx((1 + 0 + 1) / 0.75 / 4)


def test_interval_is_clipped_to_zero_and_one() -> None:
    labels = {0: 1.0, 1: 1.0, 2: 0.0}
    est = prediction_powered_mean(
        [0.0] * 3, labels, dict.fromkeys(labels, 0.01), simple_random=False
    )
    assert est.low == 0.0 or est.high == 1.0
    assert 0.0 <= (est.low or 0.0) <= (est.high or 1.0) <= 1.0


@pytest.mark.parametrize(
    ("labels", "probabilities", "message"),
    [
        ({0: 1.0}, {}, "probability"),
        ({0: 1.0}, {0: 0.0}, "probability"),
        ({5: 1.0}, {5: 0.5}, "outside"),
        ({0: 2.0}, {0: 0.5}, "label value"),
    ],
)
def test_bad_labels_or_probabilities_are_refused(
    labels: dict[int, float], probabilities: dict[int, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        prediction_powered_mean([0.5, 0.5], labels, probabilities, simple_random=True)


@pytest.mark.parametrize("ci", [0.0, 1.0, 1.5])
def test_ci_outside_zero_one_is_refused(ci: float) -> None:
    with pytest.raises(ConfigError, match="ci"):
        prediction_powered_mean([0.5], {0: 1.0}, {0: 1.0}, simple_random=True, ci=ci)


# --- on a batch ----------------------------------------------------------------------------


def test_share_reads_gold_from_the_labelling_pages_jsonl(tmp_path: Path) -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "FAIL", "PASS") for i in range(4)))
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "label": "PASS"}) + "\n" for i in range(2)))
    from_file = estimate_share(batch, "FAIL", gold=path)
    from_dict = estimate_share(batch, "FAIL", gold={"q0": "PASS", "q1": "PASS"})
    assert from_file == from_dict
    assert from_file.n_labels == 2


def test_jury_only_is_the_share_of_consensus_and_labels_correct_it() -> None:
    # The jury says FAIL everywhere; people say half are PASS.
    batch = batch_of(*(item(f"q{i}", "FAIL", "FAIL", "PASS") for i in range(10)))
    est = estimate_share(
        batch, "FAIL", gold={f"q{i}": "FAIL" if i % 2 else "PASS" for i in range(10)}
    )
    assert est.jury_only == 1.0
    assert est.value == pytest.approx(0.5)


def test_without_a_queue_labels_are_a_uniform_sample_and_the_notes_say_so() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(6)))
    est = estimate_share(batch, "FAIL", gold={"q0": "FAIL", "q1": "PASS"})
    assert est.design == "simple random"
    assert any("simple random sample" in note for note in est.notes)


def test_without_a_queue_gold_outside_the_results_is_refused() -> None:
    batch = batch_of(item("q0", "FAIL", "PASS", "PASS"))
    with pytest.raises(ConfigError, match="not among"):
        estimate_share(batch, "FAIL", gold={"elsewhere": "FAIL"})


def test_with_a_queue_only_queued_labels_count_and_the_notes_say_so() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(6)))
    queue = label_queue(batch, 2, strategy="uniform", seed=1)
    other = next(r.query_id for r in batch.verdicts if r.query_id not in queue.items)
    gold = dict.fromkeys(queue.items, "FAIL") | {other: "PASS"}
    est = estimate_share(batch, "FAIL", gold=gold, queue=queue)
    assert est.n_labels == 2
    assert est == estimate_share(
        batch, "FAIL", gold=dict.fromkeys(queue.items, "FAIL"), queue=queue
    ).model_copy(update={"notes": est.notes})
    assert any("outside the queue" in note for note in est.notes)


def test_a_partly_labelled_queue_scales_its_probabilities() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(20)))
    queue = label_queue(batch, 8, strategy="uniform", seed=2)
    gold = dict.fromkeys(queue.items[:4], "PASS")
    est = estimate_share(batch, "FAIL", gold=gold, queue=queue)
    # Four labels of a uniform queue are a simple random sample of 4 of the 20 items.
    assert est == estimate_share(batch, "FAIL", gold=gold).model_copy(update={"notes": est.notes})
    assert any("4 of the 8 queued" in note for note in est.notes)


def test_a_queue_from_other_results_is_refused() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(6)))
    queue = label_queue(batch, 2, strategy="uniform", seed=1, exclude=["q5"])
    with pytest.raises(ConfigError, match="same exclude"):
        estimate_share(batch, "FAIL", gold={}, queue=queue)
    est = estimate_share(batch, "FAIL", gold={}, queue=queue, exclude=["q5"])
    assert est.n_items == 5


def test_a_queue_with_unknown_ids_is_refused() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(3)))
    queue = LabelQueue(items=["x"], probabilities={"x": 0.3}, strategy="uniform", population=3)
    with pytest.raises(ConfigError, match="not among these results"):
        estimate_share(batch, "FAIL", gold={"x": "FAIL"}, queue=queue)


def test_consensus_prediction_is_one_for_decided_label_only() -> None:
    # A fallback (no valid vote) predicts nothing, whatever its fallback label.
    batch = batch_of(item("q0", "FAIL", "FAIL", "PASS"), item("q1", None, None, None))
    est = estimate_share(batch, "FAIL", gold={}, prediction="consensus")
    assert est.value == pytest.approx(0.5)


def test_accuracy_population_is_the_items_the_critic_voted_on() -> None:
    results = [item(f"q{i}", "FAIL", "FAIL", "PASS") for i in range(6)]
    results += [item(f"r{i}", None, "PASS", "PASS") for i in range(4)]
    batch = batch_of(*results)
    gold = {f"q{i}": "FAIL" for i in range(3)} | {"r0": "PASS"}
    est = estimate_accuracy(batch, "c0", gold=gold)
    assert est.n_items == 6
    assert est.n_labels == 3
    assert est.jury_only == 1.0


def test_accuracy_of_a_critic_without_votes_is_refused() -> None:
    batch = batch_of(item("q0", None, "PASS", "PASS"))
    with pytest.raises(ConfigError, match="no valid vote"):
        estimate_accuracy(batch, "c0", gold={})


def test_unknown_prediction_is_refused() -> None:
    batch = batch_of(item("q0", "PASS", "PASS", "PASS"))
    with pytest.raises(ConfigError, match="prediction"):
        estimate_share(batch, "PASS", gold={}, prediction="mean")  # type: ignore[arg-type]


def test_batch_methods_match_the_functions(jury: Judged) -> None:
    queue = jury.batch.label_queue(50, strategy="uncertain", seed=4, floor=0.3)
    gold = {i: jury.truth[i] for i in queue.items}
    assert jury.batch.estimate(TARGET, gold=gold, queue=queue) == estimate_share(
        jury.batch, TARGET, gold=gold, queue=queue
    )
    assert jury.batch.estimate_accuracy("c1", gold=gold, queue=queue) == estimate_accuracy(
        jury.batch, "c1", gold=gold, queue=queue
    )


def test_estimate_prints_value_interval_and_jury_share() -> None:
    est = Estimate(
        value=0.2,
        low=0.1,
        high=0.3,
        method="ppi++",
        n_labels=100,
        n_items=2000,
        se=0.05,
        ci=0.95,
        jury_only=0.28,
        labels_only=0.19,
        labels_only_low=0.1,
        labels_only_high=0.29,
        lam=0.5,
    )
    assert str(est) == (
        "0.200 [0.100, 0.300] (ppi++, 100 labels, 2000 items; jury only 0.280; "
        "labels only 0.190 [0.100, 0.290])"
    )


# --- the numbers, fewer draws ---------------------------------------------------------

# 300 draws of a 100-label queue from one simulated jury (2,000 items, 3 critics of accuracy
# 0.75, error correlation 0.3, true FAIL share 0.15, the jury's 0.28). The seeds are fixed,
# so the outcome is deterministic; the thresholds are set so that a correct estimator passes
# with room: at a true 95% coverage the binomial standard error over 300 draws is 1.3 points,
# and the normal interval on 100 binary labels runs about 1 point under its level, so 90%
# is about 3 standard errors below what a correct estimator gives. A broken weighting (e.g.
# ignoring the probabilities of the uncertain queue) covers far less: it is biased by a few
# points, more than the interval's half-width.

DRAWS = 300


def coverage_and_widths(jury: Judged, strategy: str) -> tuple[float, float, float, float]:
    covered, widths, labels_widths, values = 0, [], [], []
    for seed in range(DRAWS):
        queue = label_queue(jury.batch, 100, strategy=strategy, seed=seed, floor=0.3)  # type: ignore[arg-type]
        est = estimate_share(
            jury.batch, TARGET, gold={i: jury.truth[i] for i in queue.items}, queue=queue
        )
        assert est.low is not None and est.high is not None
        covered += est.low <= jury.true_share <= est.high
        widths.append(est.high - est.low)
        assert est.labels_only_low is not None and est.labels_only_high is not None
        labels_widths.append(est.labels_only_high - est.labels_only_low)
        values.append(est.value)
    bias = statistics.fmean(values) - jury.true_share
    return covered / DRAWS, statistics.fmean(widths), statistics.fmean(labels_widths), bias


@pytest.mark.parametrize("strategy", ["uniform", "uncertain"])
def test_ppi_interval_covers_the_true_share_and_is_narrower_than_labels_alone(
    jury: Judged, strategy: str
) -> None:
    coverage, width, labels_width, bias = coverage_and_widths(jury, strategy)
    assert coverage >= 0.90
    assert width < labels_width
    # Unbiased: the mean of 300 estimates (sd about 0.03) is within 3 standard errors.
    assert abs(bias) < 3 * 0.035 / math.sqrt(DRAWS)


def test_the_jury_alone_is_biased_on_the_simulated_batch(jury: Judged) -> None:
    est = estimate_share(jury.batch, TARGET, gold={})
    assert est.jury_only - jury.true_share > 0.1


def test_offline_jury_answers_as_the_simulator_does() -> None:
    # The fast twin used above must give the simulator's votes (a real server, 40 items).
    served, twin = judged(40), offline(40)
    assert [[v.kind for v in r.verdicts] for r in served.batch.verdicts] == [
        [v.kind for v in r.verdicts] for r in twin.batch.verdicts
    ]
    assert served.truth == twin.truth


@pytest.mark.parametrize(
    ("df", "exact"),
    [(10, 2.228138852), (30, 2.042272456), (99, 1.984216952), (1000, 1.962339081)],
)
def test_the_t_quantile_is_students_at_95_percent(df: int, exact: float) -> None:
    from cross_judge.stats.estimates import t_quantile

    assert t_quantile(0.975, df) == pytest.approx(exact, abs=2e-3)
