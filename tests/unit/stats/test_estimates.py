"""cross_judge.stats.estimates: PPI++ shares and accuracies from the jury and people's labels."""

from __future__ import annotations

import json
import math
import os
import random
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
from cross_judge.stats.label_queue import Candidate, LabelQueue, label_queue

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


def test_predictions_no_label_contradicts_get_full_weight_and_still_an_interval() -> None:
    # Four labels that all agree with the jury: the rectifier's variance estimate is 0, but
    # four labels cannot rule out disagreements among the other four items. The floor is
    # what one disagreement each way would give: ((-1)^2 + 1^2) / (n + 1) per label.
    predictions = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    labels = {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}
    est = prediction_powered_mean(
        predictions, labels, dict.fromkeys(labels, 0.5), simple_random=True
    )
    assert est.lam == 1.0
    assert est.method == "ppi++"
    assert est.value == pytest.approx(3 / 8)
    assert est.se == pytest.approx(math.sqrt((1 - 4 / 8) * (2 / 5) / 4))
    assert est.low is not None and est.high is not None and est.high - est.low > 0.5


def test_simple_random_variance_has_the_finite_population_correction() -> None:
    # lam = 0 (constant predictions): the textbook (1 - n/N) s^2 / n.
    labels = {0: 1.0, 1: 0.0, 2: 1.0, 3: 1.0}
    est = prediction_powered_mean(
        [0.0] * 20, labels, dict.fromkeys(labels, 4 / 20), simple_random=True
    )
    s2 = statistics.variance(labels.values())
    assert est.se == pytest.approx(math.sqrt((1 - 4 / 20) * s2 / 4))


def test_unequal_probability_variance_is_at_least_the_with_replacement_one() -> None:
    labels = {0: 1.0, 1: 0.0, 2: 1.0}
    probabilities = {0: 0.2, 1: 0.5, 2: 0.4}
    est = prediction_powered_mean([0.0] * 10, labels, probabilities, simple_random=False)
    z = [3 * y / probabilities[k] for k, y in labels.items()]
    expected = statistics.variance(z) / 3  # sum (z - mean)^2 / (n (n - 1))
    assert est.se is not None and est.se >= math.sqrt(expected) / 10 - 1e-12


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


@pytest.mark.slow  # a statistical simulation: thousands of draws
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


# --- few labels: no zero-width interval, and notes that say what was assumed ------------------


def lenient_batch() -> BatchResult:
    """50 items the jury calls FAIL; critic c2 ("lenient") agrees on 40 and says PASS on 10."""
    results = [item(f"q{i}", "FAIL", "FAIL", "FAIL") for i in range(40)]
    results += [item(f"r{i}", "FAIL", "FAIL", "PASS") for i in range(10)]
    return batch_of(*results)


def test_ten_labels_that_all_agree_with_the_jury_give_an_interval_of_real_width() -> None:
    # The case: each label agrees with the jury (c2 right where it agrees with the
    # consensus, wrong where it does not), which used to print 0.800 [0.800, 0.800].
    gold = {f"q{i}": "FAIL" for i in range(8)} | {"r0": "FAIL", "r1": "FAIL"}
    est = estimate_accuracy(lenient_batch(), "c2", gold=gold)
    assert est.value == pytest.approx(0.8)
    assert est.low is not None and est.high is not None
    assert est.high - est.low > 0.3
    assert est.low < 0.8 < est.high


def test_labels_only_at_no_success_is_wilsons_interval_not_a_point() -> None:
    # Constant predictions carry nothing (lam = 0): ten labels, none FAIL, of 1,000 items.
    est = prediction_powered_mean(
        [0.5] * 1000,
        dict.fromkeys(range(10), 0.0),
        dict.fromkeys(range(10), 0.01),
        simple_random=True,
    )
    assert est.method == "labels only"
    assert est.value == 0.0
    n_eff = 10 / (1 - 10 / 1000)
    z = 2.262157  # Student's t, 9 degrees of freedom, 97.5%
    assert est.low == 0.0
    assert est.high == pytest.approx((z * z / n_eff) / (1 + z * z / n_eff), abs=2e-3)


def test_the_notes_always_state_the_population_the_labels_the_design_and_the_interval() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(100)))
    gold = {f"q{i}": "PASS" if i % 3 else "FAIL" for i in range(60)}
    notes = " | ".join(estimate_share(batch, "FAIL", gold=gold).notes)
    assert "population: the 100 items of these results" in notes
    assert "without seeing the jury's answers" in notes
    assert "simple random sample" in notes
    assert "interval:" in notes
    assert "only 60 labels" not in notes  # not a small sample


def test_the_notes_say_a_queue_design_and_a_small_sample() -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(40)))
    queue = label_queue(batch, 8, strategy="uncertain", seed=3)
    est = estimate_share(batch, "FAIL", gold=dict.fromkeys(queue.items, "PASS"), queue=queue)
    notes = " | ".join(est.notes)
    assert "design: a 'uncertain' label queue of 8 of the 40 items" in notes
    assert "only 8 labels: the interval is approximate" in notes


def test_an_accuracys_notes_name_the_items_the_critic_voted_on() -> None:
    results = [item(f"q{i}", "FAIL", "FAIL", "PASS") for i in range(6)]
    results += [item(f"r{i}", None, "PASS", "PASS") for i in range(4)]
    est = estimate_accuracy(batch_of(*results), "c0", gold={"q0": "FAIL", "q1": "FAIL"})
    assert "the 6 'c0' gave a valid vote on" in est.notes[0]


SCALE = float(os.environ.get("CROSS_JUDGE_FUZZ_SCALE", "1"))
DRAWS_SMALL = max(60, round(150 * SCALE))


def covered_share(n_labels: int, share: float, agreement: float, strategy: str) -> float:
    """How often the 95% interval from ``n_labels`` labels covers the true share of a fixed
    400-item population (seeded), the jury's vote share of three votes each right with
    probability ``agreement`` standing for its prediction: design-based coverage, over
    fresh queues."""
    rng = random.Random(f"small {n_labels} {share} {agreement}")
    truth = [float(rng.random() < share) for _ in range(400)]
    votes = [sum((y if rng.random() < agreement else 1 - y) for _ in range(3)) / 3 for y in truth]
    candidates = [
        Candidate(f"i{k}", "FAIL" if v > 0.5 else "PASS", False, 3, max(v, 1 - v), 0 < v < 1)
        for k, v in enumerate(votes)
    ]
    true = sum(truth) / len(truth)
    covered = 0
    for seed in range(DRAWS_SMALL):
        queue = label_queue(candidates, n_labels, strategy=strategy, seed=seed)  # type: ignore[arg-type]
        picked = [int(i[1:]) for i in queue.items]
        est = prediction_powered_mean(
            votes,
            {k: truth[k] for k in picked},
            {k: queue.probabilities[f"i{k}"] for k in picked},
            simple_random=strategy == "uniform",
        )
        assert est.low is not None and est.high is not None and est.high > est.low
        covered += est.low <= true <= est.high
    return covered / DRAWS_SMALL


@pytest.mark.parametrize(
    ("n_labels", "share", "agreement", "strategy"),
    [(10, 0.2, 0.95, "uniform"), (5, 0.05, 0.75, "uniform"), (10, 0.5, 0.95, "uncertain")],
)
def test_a_few_labels_give_a_95_percent_interval_that_covers_the_truth(
    n_labels: int, share: float, agreement: float, strategy: str
) -> None:
    # Before the floor, ten labels that mostly agree with a good jury got a near-zero
    # interval and covered the truth in about half the draws. 150 draws at a true 95%
    # have a standard error of 1.8 points: 88% is 4 below.
    assert covered_share(n_labels, share, agreement, strategy) >= 0.88


# --- labels made with the jury shown -----------------------------------------------------------


def export(tmp_path: Path, shown: dict[str, bool | None]) -> Path:
    """A labels file as the page exports it (``None``: a line without ``jury_shown``)."""
    lines = []
    for i, (query_id, flag) in enumerate(shown.items()):
        row: dict[str, object] = {"id": query_id, "label": "PASS" if i % 2 else "FAIL"}
        if flag is not None:
            row["jury_shown"] = flag
        lines.append(json.dumps(row) + "\n")
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_labels_made_with_the_jury_shown_are_refused_by_default(tmp_path: Path) -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(10)))
    gold = export(tmp_path, {f"q{i}": i == 2 for i in range(6)})
    with pytest.raises(ConfigError, match=r"1 of the 6 labels .* jury's answers shown.*allow_"):
        batch.estimate("FAIL", gold=gold)
    with pytest.raises(ConfigError, match="allow_jury_shown=True"):
        estimate_accuracy(batch, "c0", gold=gold)


def test_allow_jury_shown_counts_them_and_a_note_says_how_many(tmp_path: Path) -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(10)))
    gold = export(tmp_path, {f"q{i}": i < 2 for i in range(6)})
    est = batch.estimate("FAIL", gold=gold, allow_jury_shown=True)
    assert est.n_labels == 6
    assert any("2 of the 6 labels were made with the jury's answers shown" in n for n in est.notes)


def test_labels_that_do_not_record_the_jury_are_assumed_blind_and_noted(tmp_path: Path) -> None:
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(10)))
    gold = export(tmp_path, {"q0": False, "q1": None, "q2": None})
    est = batch.estimate("FAIL", gold=gold)
    assert any("2 of the 3 labels do not record whether the jury was shown" in n for n in est.notes)


def test_only_the_labels_that_count_are_refused_for_the_jury(tmp_path: Path) -> None:
    # A label outside the queue is left out, so its jury_shown does not matter.
    batch = batch_of(*(item(f"q{i}", "FAIL", "PASS", "PASS") for i in range(10)))
    queue = label_queue(batch, 3, strategy="uniform", seed=1)
    other = next(r.query_id for r in batch.verdicts if r.query_id not in queue.items)
    gold = export(tmp_path, dict.fromkeys(queue.items, False) | {other: True})
    assert batch.estimate("FAIL", gold=gold, queue=queue).n_labels == 3
