"""cross_judge.stats._reliability: trust learned from a batch's verdicts, with no vendor call."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import BatchResult, ConfigError, Ensemble, EnsembleVerdict, Verdict
from cross_judge.cli import main
from cross_judge.stats._confidence_calibration import expected_calibration_error
from cross_judge.stats._reliability import (
    alpha_interval,
    apply_calibration,
    calibrate_confidence,
    dawid_skene,
    effective_votes,
    gold_report,
    learn_weights,
)

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
PANEL = Ensemble(critics=[])


def vote(critic: str, kind: str | None, confidence: float = 0.8) -> Verdict:
    if kind is None:
        return Verdict(kind="ERROR", critic_id=critic, error="timeout", attempts=1)
    return Verdict(kind=kind, critic_id=critic, confidence=confidence)


def item(query_id: str, **answers: str | None) -> EnsembleVerdict:
    return PANEL.aggregate_verdicts(
        [vote(name, kind) for name, kind in answers.items()], query_id=query_id
    )


def batch_of(results: list[EnsembleVerdict]) -> BatchResult:
    critics = list(dict.fromkeys(v.critic_id for r in results for v in r.verdicts))
    return BatchResult(verdicts=results, critics=critics, voting="majority")


def simulated(
    n: int,
    accuracies: dict[str, float],
    *,
    seed: int = 1,
    confidence: dict[str, tuple[float, float]] | None = None,
) -> tuple[BatchResult, dict[str, str]]:
    """``n`` items judged by independent critics of the given accuracies (4 labels)."""
    rng = random.Random(seed)
    results, gold = [], {}
    for i in range(n):
        truth = rng.choice(LABELS)
        gold[f"q{i}"] = truth
        verdicts = []
        for name, accuracy in accuracies.items():
            right = rng.random() < accuracy
            kind = truth if right else rng.choice([x for x in LABELS if x != truth])
            low, high = (confidence or {}).get(name, (0.5, 0.95))
            verdicts.append(vote(name, kind, rng.uniform(low, high)))
        results.append(PANEL.aggregate_verdicts(verdicts, query_id=f"q{i}"))
    return batch_of(results), gold


# -- gold metrics ----------------------------------------------------------------


def test_against_gold_reports_each_critic_and_the_consensus() -> None:
    batch = batch_of(
        [
            item("a", x="KEEP", y="KEEP", z="REJECT"),
            item("b", x="REJECT", y="KEEP", z="REJECT"),
            item("c", x="KEEP", y=None, z="KEEP"),
        ]
    )
    report = batch.against({"a": "KEEP", "b": "REJECT"})
    assert report["x"].accuracy == 1.0 and report["x"].coverage == 1.0
    assert report["y"].accuracy == 0.5
    assert report["z"].accuracy == 0.5
    assert report["consensus"].accuracy == 1.0
    assert report["x"].n_gold == 2


def test_gold_ids_that_are_no_item_are_refused_with_examples() -> None:
    batch = batch_of([item("a", x="KEEP")])
    with pytest.raises(ConfigError, match="zzz"):
        batch.against({"a": "KEEP", "zzz": "KEEP"})


def test_a_gold_label_no_critic_could_give_is_refused() -> None:
    batch = batch_of([item("a", x="KEEP"), item("b", x="REJECT")])
    with pytest.raises(ConfigError, match="KEPT"):
        batch.against({"a": "KEPT"})


def test_gold_report_reads_a_results_file_and_a_gold_file(tmp_path: Path) -> None:
    batch, gold = simulated(50, {"x": 0.9, "y": 0.7})
    results, labels = tmp_path / "out.jsonl", tmp_path / "gold.jsonl"
    batch.to_jsonl(results)
    labels.write_text("".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in gold.items()))
    assert gold_report(results, labels)["x"].accuracy == batch.against(gold)["x"].accuracy


def test_bootstrap_intervals_surround_the_accuracy() -> None:
    batch, gold = simulated(300, {"x": 0.8, "y": 0.6})
    row = batch.against(gold, ci=0.95)["x"]
    assert row.accuracy_ci is not None and row.accuracy is not None
    assert row.accuracy_ci[0] <= row.accuracy <= row.accuracy_ci[1]


# -- learned weights ----------------------------------------------------------------


def test_a_perfect_critic_outweighs_the_others_and_chance_weighs_nothing() -> None:
    batch, gold = simulated(400, {"perfect": 1.0, "good": 0.8, "chance": 0.25})
    fit = learn_weights(batch, gold)
    assert fit.weights["perfect"] > fit.weights["good"] > fit.weights["chance"]
    assert fit.weights["chance"] == pytest.approx(0.0, abs=0.25)
    assert fit.classes == 4 and fit.n["good"] == 400


def test_smoothing_pulls_a_critic_seen_on_few_items_towards_chance() -> None:
    batch, gold = simulated(3, {"x": 1.0})
    assert learn_weights(batch, gold, classes=4).accuracy["x"] == pytest.approx((3 + 0.5) / 5)
    assert learn_weights(batch, gold, smoothing=0).weights["x"] > 10


def test_learned_weights_beat_majority_when_one_critic_is_much_better() -> None:
    batch, gold = simulated(1500, {"a": 0.95, "b": 0.55, "c": 0.55})
    labelled = dict(list(gold.items())[:200])
    fit = learn_weights(batch, labelled)
    weighted = batch.revote("weighted", weights=fit.weights, use_confidence=False)

    def accuracy(b: BatchResult) -> float:
        return sum(r.consensus == gold[r.query_id] for r in b.verdicts) / len(b)

    assert accuracy(weighted) > accuracy(batch) + 0.05


def test_a_negative_smoothing_is_refused() -> None:
    batch, gold = simulated(5, {"x": 0.9})
    with pytest.raises(ConfigError, match="smoothing"):
        learn_weights(batch, gold, smoothing=-1)


# -- Dawid-Skene ----------------------------------------------------------------


def test_dawid_skene_learns_who_to_trust_without_labels() -> None:
    # The reliable critic comes last, so a tie does not fall to it by critic order.
    batch, gold = simulated(2000, {"b": 0.6, "c": 0.6, "d": 0.55, "a": 0.95})
    learned = dawid_skene(batch)
    assert learned.accuracy["a"] == pytest.approx(0.95, abs=0.03)
    assert learned.accuracy["d"] == pytest.approx(0.55, abs=0.04)
    ds = sum(learned.labels[k] == v for k, v in gold.items()) / len(gold)
    majority = sum(r.consensus == gold[r.query_id] for r in batch.verdicts) / len(gold)
    assert ds > majority + 0.03
    for posterior in list(learned.posteriors.values())[:50]:
        assert sum(posterior.values()) == pytest.approx(1.0)


def test_revote_dawid_skene_re_decides_every_item_with_its_posterior_as_score() -> None:
    batch, _ = simulated(500, {"a": 0.95, "b": 0.6, "c": 0.6})
    revoted = batch.revote("dawid_skene")
    learned = dawid_skene(batch)
    assert revoted.voting == "dawid_skene" and len(revoted) == len(batch)
    for result in revoted.verdicts[:50]:
        assert result.consensus == learned.labels[result.query_id]
        assert result.score == pytest.approx(learned.posteriors[result.query_id][result.consensus])
        assert result.verdicts == batch.verdicts[revoted.verdicts.index(result)].verdicts


def test_revote_dawid_skene_takes_only_one_coin() -> None:
    batch, _ = simulated(20, {"a": 0.9, "b": 0.6})
    with pytest.raises(ConfigError, match="one_coin"):
        batch.revote("dawid_skene", weights={"a": 2.0})
    assert batch.revote("dawid_skene", one_coin=True).voting == "dawid_skene"


def test_failed_calls_are_missing_votes_for_dawid_skene() -> None:
    batch = batch_of([item(f"q{i}", a="KEEP", b=None, c="KEEP") for i in range(20)])
    learned = dawid_skene(batch)
    assert set(learned.labels.values()) == {"KEEP"}


# -- confidence ----------------------------------------------------------------


def test_calibrating_an_inflated_critic_halves_its_calibration_error() -> None:
    batch, gold = simulated(
        4000, {"honest": 0.8, "inflated": 0.6}, confidence={"inflated": (0.9, 1.0)}
    )
    labelled = dict(list(gold.items())[:1000])
    fits = calibrate_confidence(batch, labelled)
    assert fits["inflated"].ece_after <= fits["inflated"].ece_before / 2
    calibrated = apply_calibration(batch, fits)

    def ece(b: BatchResult) -> float:
        pairs = [
            (v.confidence, v.kind == gold[r.query_id])
            for r in b.verdicts[1000:]
            for v in r.verdicts
            if v.critic_id == "inflated"
        ]
        return expected_calibration_error([c for c, _ in pairs], [ok for _, ok in pairs])

    assert ece(calibrated) <= ece(batch) / 2  # on the items it was not fit on
    assert [r.consensus for r in calibrated.verdicts] == [r.consensus for r in batch.verdicts]


def test_a_critic_that_cannot_be_calibrated_is_named() -> None:
    batch, gold = simulated(30, {"always": 1.0, "other": 0.6})
    with pytest.raises(ConfigError, match="'always'"):
        calibrate_confidence(batch, gold)


# -- the panel ----------------------------------------------------------------


def test_copies_of_one_critic_are_worth_one_vote() -> None:
    rng = random.Random(3)
    results, gold = [], {}
    for i in range(300):
        truth = rng.choice(LABELS)
        answer = truth if rng.random() < 0.7 else rng.choice([x for x in LABELS if x != truth])
        gold[f"q{i}"] = truth
        results.append(item(f"q{i}", a=answer, b=answer, c=answer))
    votes = effective_votes(batch_of(results), gold)
    assert votes.effective == pytest.approx(1.0)


def correlated_panel(n: int, rho: float, seed: int = 2) -> tuple[BatchResult, dict[str, str]]:
    """Five critics (0.9 .. 0.6) whose errors correlate through item difficulty (see
    tests/unit/stats/test_dawid_skene_correlated.py)."""
    from tests.unit.stats.test_dawid_skene_correlated import correlated_votes

    truth, rows = correlated_votes(seed=seed, n_items=n, rho=rho, missing=0.0)
    names = [f"c{j}" for j in range(len(rows[0]))]
    mapping = dict(zip("ABCD", LABELS, strict=True))
    results = [
        item(f"q{i}", **{name: mapping[label] for name, label in zip(names, row, strict=True)})
        for i, row in enumerate(rows)
        if all(label is not None for label in row)
    ]
    return batch_of(results), {f"q{i}": mapping[t] for i, t in enumerate(truth)}


def test_without_gold_effective_votes_come_from_the_correlated_model() -> None:
    pytest.importorskip("numpy")
    batch, gold = correlated_panel(4000, rho=0.3)
    on_gold = effective_votes(batch, gold)
    modelled = effective_votes(batch)
    assert on_gold.reference == "gold"
    assert modelled.reference == "model"
    assert on_gold.effective is not None
    assert modelled.effective is not None
    assert abs(modelled.effective - on_gold.effective) <= 0.5
    assert set(modelled.pairwise) == set(on_gold.pairwise)


def test_without_numpy_effective_votes_fall_back_to_the_consensus_and_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cross_judge.stats import _dawid_skene as _dawid_skene

    batch, gold = correlated_panel(4000, rho=0.3)
    monkeypatch.setattr(_dawid_skene, "numpy_available", lambda: False)
    fallback = effective_votes(batch)
    on_gold = effective_votes(batch, gold)
    assert fallback.reference == "consensus"
    assert fallback.effective is not None
    assert on_gold.effective is not None
    # Critics wrong together carry the consensus with them: it hides shared errors.
    assert fallback.effective > on_gold.effective + 1.0


def test_independent_critics_are_worth_about_their_number() -> None:
    batch, gold = simulated(3000, {"a": 0.7, "b": 0.7, "c": 0.7})
    votes = effective_votes(batch, gold)
    assert votes.effective is not None and votes.effective > 2.7


def test_alpha_interval_surrounds_the_batch_alpha() -> None:
    batch, _ = simulated(300, {"a": 0.8, "b": 0.8, "c": 0.7})
    interval = alpha_interval(batch, n_boot=200)
    alpha = batch.reliability_alpha()
    assert interval is not None and alpha is not None
    assert interval[0] <= alpha <= interval[1]


# -- command line ----------------------------------------------------------------


def test_stats_with_gold_shows_the_gold_table_weights_and_effective_votes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, gold = simulated(200, {"a": 0.9, "b": 0.7, "c": 0.6})
    results, labels = tmp_path / "out.jsonl", tmp_path / "gold.jsonl"
    batch.to_jsonl(results)
    labels.write_text("".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in gold.items()))
    assert main(["stats", str(results), "--gold", str(labels), "--ci", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "consensus" in out and "log-odds weights learned on these labels: a " in out
    assert "effective votes:" in out


def test_stats_ci_without_gold_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch, _ = simulated(5, {"a": 0.9})
    results = tmp_path / "out.jsonl"
    batch.to_jsonl(results)
    assert main(["stats", str(results), "--ci", "0.9"]) == 2
    assert "--ci is for --gold" in capsys.readouterr().err


def test_the_summary_with_gold_warns_when_the_panel_is_worth_under_two_votes() -> None:
    from cross_judge.report._summary import plain_text

    rng = random.Random(5)
    results, gold = [], {}
    for i in range(200):
        truth = rng.choice(LABELS)
        answer = truth if rng.random() < 0.7 else rng.choice([x for x in LABELS if x != truth])
        gold[f"q{i}"] = truth
        results.append(item(f"q{i}", a=answer, b=answer, c=answer))
    text = plain_text(batch_of(results).summary(gold=gold))
    assert "against gold (200 of 200 items labelled)" in text
    assert "warning: the critics err together" in text


def test_the_summary_without_gold_warns_that_echoing_critics_may_be_one_vote() -> None:
    from cross_judge.report._summary import plain_text

    rng = random.Random(5)
    results = []
    for i in range(200):
        truth = rng.choice(LABELS)
        answer = truth if rng.random() < 0.7 else rng.choice([x for x in LABELS if x != truth])
        other = rng.choice(LABELS)
        results.append(item(f"q{i}", a=answer, b=answer, c=other))
    text = " ".join(plain_text(batch_of(results).summary()).split())  # unwrapped
    assert "warning: a and b give the same label on 100.0% of items" in text
    assert "if they are the same model they are one vote" in text


def test_the_summary_without_gold_shows_effective_votes_from_the_model() -> None:
    from cross_judge.report._summary import plain_text

    batch, _ = simulated(400, {"a": 0.9, "b": 0.7, "c": 0.6})
    text = " ".join(plain_text(batch.summary()).split())  # unwrapped
    assert "effective votes: " in text
    assert "estimated without gold by the correlated-errors Dawid-Skene model" in text
    assert "warning" not in text


def test_the_summary_without_gold_leaves_effective_votes_out_below_200_items() -> None:
    from cross_judge.report._summary import plain_text

    batch, _ = simulated(199, {"a": 0.9, "b": 0.7, "c": 0.6})
    assert "effective votes" not in plain_text(batch.summary())


@settings(max_examples=30, deadline=None)
@given(
    others=st.lists(st.floats(min_value=0.0, max_value=0.95), min_size=1, max_size=4),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_a_perfect_critics_weight_dominates_and_weights_are_never_negative(
    others: list[float], seed: int
) -> None:
    accuracies = {"perfect": 1.0, **{f"c{i}": a for i, a in enumerate(others)}}
    batch, gold = simulated(120, accuracies, seed=seed)
    fit = learn_weights(batch, gold, classes=4)
    assert all(w >= 0 for w in fit.weights.values())
    assert all(fit.weights["perfect"] >= w for w in fit.weights.values())
