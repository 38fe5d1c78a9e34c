"""calibrate_cascade: thresholds chosen on labelled items by fixed-sequence testing with an
exact binomial bound, so that a cascade's agreement with gold is guaranteed."""

from __future__ import annotations

import json
import math
import random
import warnings
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge import (
    ABSTAIN,
    BatchResult,
    Cascade,
    ConfigError,
    Critic,
    Ensemble,
    EnsembleVerdict,
    calibrate_cascade,
)
from cross_judge.cascade import CalibrationItemsWarning
from cross_judge.cascade_calibration import (
    LEVELS,
    agreement_lower_bound,
    binomial_cdf,
    load_gold,
)

# -- building stored results ---------------------------------------------------------------------

Tier = tuple[str, float, float]  # consensus, agreement_pct, avg_confidence


def tier_result(
    qid: str,
    consensus: str,
    agreement: float,
    confidence: float,
    *,
    cost: float | None = 0.001,
    n_errors: int = 0,
    fallback: bool = False,
) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id=qid,
        verdicts=[],
        consensus=consensus,
        agreement_pct=agreement,
        avg_confidence=confidence,
        voting="majority",
        cost_usd=cost,
        n_errors=n_errors,
        fallback=fallback,
    )


def stored(qid: str, *tiers: EnsembleVerdict) -> EnsembleVerdict:
    """A result as judge_many(all_tiers=True) stores it (its tier 0 decided)."""
    return tiers[0].model_copy(update={"tier": 0, "tiers": list(tiers)})


def item(qid: str, *tiers: Tier, costs: Sequence[float] = (0.001, 0.02)) -> EnsembleVerdict:
    return stored(
        qid,
        *(
            tier_result(qid, c, a, f, cost=costs[i] if i < len(costs) else 0.0)
            for i, (c, a, f) in enumerate(tiers)
        ),
    )


def two_tier_cascade(final: str = "decide") -> Cascade:
    def critic(name: str) -> Critic:
        return Critic(name=name, model=name, vendor="custom", base_url="http://127.0.0.1:9")

    return Cascade(
        tiers=[Ensemble([critic("a"), critic("b"), critic("c")]), Ensemble([critic("s")])],
        final=final,  # type: ignore[arg-type]
    )


# -- the exact binomial tail -------------------------------------------------------------------


def exact_cdf(k: int, n: int, p: Fraction) -> Fraction:
    return sum(
        (Fraction(math.comb(n, i)) * p**i * (1 - p) ** (n - i) for i in range(min(k, n) + 1)),
        Fraction(0),
    )


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=80),
    k=st.integers(min_value=-2, max_value=82),
    p=st.fractions(min_value=0, max_value=1, max_denominator=40),
)
def test_binomial_cdf_equals_the_exact_rational_sum(n: int, k: int, p: Fraction) -> None:
    expected = Fraction(0) if k < 0 else exact_cdf(k, n, p)
    assert binomial_cdf(k, n, float(p)) == pytest.approx(float(expected), rel=1e-9, abs=1e-15)


def test_binomial_cdf_does_not_underflow_for_large_n() -> None:
    tiny = binomial_cdf(9_000, 100_000, 0.1)
    assert 0.0 < tiny < 1e-20
    assert binomial_cdf(10_000, 100_000, 0.1) == pytest.approx(0.5, abs=0.01)


def whole_tail(k: int, n: int, p: float) -> float:
    """Every term of the tail summed, in log space: the sum before it stopped early."""
    log_p, log_q = math.log(p), math.log1p(-p)

    def log_pmf(i: int) -> float:
        return (
            math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
            + i * log_p + (n - i) * log_q
        )  # fmt: skip

    below = k < n * p
    logs = [log_pmf(i) for i in (range(k + 1) if below else range(k + 1, n + 1))]
    top = max(logs)
    tail = math.exp(top) * math.fsum(math.exp(x - top) for x in logs)
    return min(1.0, tail) if below else max(0.0, 1.0 - tail)


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=500, max_value=6000),
    k_share=st.floats(min_value=0.0, max_value=0.999),
    p=st.floats(min_value=0.001, max_value=0.999),
)
def test_a_long_binomial_tail_stopped_at_negligible_terms_equals_the_whole_sum(
    n: int, k_share: float, p: float
) -> None:
    k = int(k_share * n)
    assert binomial_cdf(k, n, p) == pytest.approx(whole_tail(k, n, p), rel=1e-12, abs=1e-300)


def test_binomial_cdf_rejects_impossible_arguments() -> None:
    with pytest.raises(ValueError, match="0 <= p <= 1"):
        binomial_cdf(1, 10, 1.5)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=400),
    share=st.floats(min_value=0.0, max_value=1.0),
    delta=st.sampled_from([0.01, 0.05, 0.1, 0.2]),
)
def test_agreement_lower_bound_is_the_clopper_pearson_bound(
    n: int, share: float, delta: float
) -> None:
    agreed = round(share * n)
    bound = agreement_lower_bound(agreed, n, delta)
    assert bound is not None
    assert bound <= agreed / n + 1e-12
    if 0 < agreed < n:  # the error rate 1 - bound is where the observed errors have tail delta
        assert binomial_cdf(n - agreed, n, 1 - bound) == pytest.approx(delta, abs=1e-6)


def test_agreement_lower_bound_with_no_error_is_delta_to_the_one_over_n() -> None:
    assert agreement_lower_bound(50, 50, 0.1) == pytest.approx(0.1 ** (1 / 50), abs=1e-9)


def test_agreement_lower_bound_edges() -> None:
    assert agreement_lower_bound(0, 0, 0.1) is None
    assert agreement_lower_bound(0, 20, 0.1) == 0.0


# -- gold labels ------------------------------------------------------------------------------


def test_load_gold_reads_a_mapping_or_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "a", "label": "KEEP"}\n\n{"id": "b", "label": "REJECT"}\n')
    assert load_gold(path) == {"a": "KEEP", "b": "REJECT"}
    assert load_gold({"a": "KEEP"}) == {"a": "KEEP"}


def test_load_gold_names_the_line_that_is_not_a_label(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "a", "label": "KEEP"}\n{"id": "b"}\n')
    with pytest.raises(ConfigError, match="line 2"):
        load_gold(path)


def test_load_gold_refuses_an_id_with_two_labels(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"id": "a", "label": "KEEP"}\n{"id": "a", "label": "REJECT"}\n')
    with pytest.raises(ConfigError, match="labelled both 'KEEP' and 'REJECT'"):
        load_gold(path)


def test_load_gold_says_when_the_file_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the gold labels"):
        load_gold(tmp_path / "nope.jsonl")


# -- what calibrate_cascade refuses -----------------------------------------------------------


@pytest.mark.parametrize("name", ["target", "delta"])
@pytest.mark.parametrize("value", [0, 1, 1.5, -0.1, True])
def test_target_and_delta_must_be_strictly_between_0_and_1(name: str, value: object) -> None:
    results = [item("a", ("KEEP", 1.0, 0.9), ("KEEP", 1.0, 0.9))]
    with pytest.raises(ConfigError, match=f"{name} must be a number strictly between 0 and 1"):
        calibrate_cascade(results, {"a": "KEEP"}, **{name: value})  # type: ignore[arg-type]


def test_an_unknown_score_is_refused() -> None:
    results = [item("a", ("KEEP", 1.0, 0.9), ("KEEP", 1.0, 0.9))]
    with pytest.raises(ConfigError, match="score must be 'agreement', 'confidence' or 'support'"):
        calibrate_cascade(results, {"a": "KEEP"}, score="vibes")  # type: ignore[arg-type]


def test_a_score_list_needs_one_entry_per_tier_that_can_escalate() -> None:
    results = [item("a", ("KEEP", 1.0, 0.9), ("KEEP", 1.0, 0.9))]
    with pytest.raises(ConfigError, match=r"one entry per tier that can escalate \(1 here\)"):
        calibrate_cascade(results, {"a": "KEEP"}, score=["agreement", "confidence"])


def test_results_without_gold_labels_are_refused_with_the_reason() -> None:
    results = [item("a", ("KEEP", 1.0, 0.9), ("KEEP", 1.0, 0.9))]
    with pytest.raises(ConfigError, match="none of the 1 results has a gold label"):
        calibrate_cascade(results, {"zzz": "KEEP"})


def test_results_judged_without_all_tiers_are_refused() -> None:
    plain = tier_result("a", "KEEP", 1.0, 0.9)
    with pytest.raises(ConfigError, match="all_tiers=True"):
        calibrate_cascade([plain], {"a": "KEEP"})


def test_results_with_different_numbers_of_tiers_are_refused() -> None:
    results = [
        item("a", ("KEEP", 1.0, 0.9), ("KEEP", 1.0, 0.9)),
        stored("b", tier_result("b", "KEEP", 1.0, 0.9)),
    ]
    with pytest.raises(ConfigError, match="different numbers of tiers"):
        calibrate_cascade(results, {"a": "KEEP", "b": "KEEP"})


def test_a_one_tier_cascade_that_always_decides_has_nothing_to_calibrate() -> None:
    results = [stored("a", tier_result("a", "KEEP", 1.0, 0.9))]
    with pytest.raises(ConfigError, match="no threshold to choose"):
        calibrate_cascade(results, {"a": "KEEP"})


# -- choosing the level -------------------------------------------------------------------------


def batch_of(
    count: int, agreement: float, cheap_right: int, strong_right: int, start: int = 0
) -> tuple[list[EnsembleVerdict], dict[str, str]]:
    """``count`` items whose cheap tier has ``agreement``, right on the first
    ``cheap_right``; the strong tier right on the first ``strong_right``."""
    results, gold = [], {}
    for i in range(count):
        qid = f"q{start + i}"
        gold[qid] = "KEEP"
        cheap = "KEEP" if i < cheap_right else "REJECT"
        strong = "KEEP" if i < strong_right else "REJECT"
        results.append(item(qid, (cheap, agreement, 0.8), (strong, 1.0, 0.9)))
    return results, gold


def test_the_lowest_level_of_the_unbroken_passing_run_is_chosen() -> None:
    # 100 unanimous items, all right; 100 split 2/3, 60 right; the strong tier 98% right.
    unanimous, gold = batch_of(100, 1.0, 100, 98)
    split, gold2 = batch_of(100, 2 / 3, 60, 98, start=100)
    fit = calibrate_cascade(
        unanimous + split, {**gold, **gold2}, target=0.9, delta=0.1, ordering_share=0
    )
    # inf, 1.00 .. 0.67: the split items go to the strong tier (2 wrong of 200): pass.
    # 0.66: the cheap tier decides the split items (40 wrong of 200): fail, stop.
    assert fit.guaranteed
    assert fit.threshold == 0.67
    assert [level.threshold for level in fit.levels[:2]] == [math.inf, 1.0]
    assert fit.levels[-1].threshold == 0.66 and not fit.levels[-1].passed
    assert fit.coverage == 1.0
    assert fit.agreement == pytest.approx(198 / 200)
    assert [t.decided for t in fit.tiers] == [0.5, 0.5]
    assert fit.tiers[1].agreement == pytest.approx(0.98)


def test_testing_stops_at_the_first_failure_even_if_a_lower_level_would_pass() -> None:
    # Unanimous items are bad (the strong tier is better); split items are good: the risk
    # is not monotone in the level, and the sequence may not skip over a failure.
    unanimous, gold = batch_of(100, 1.0, 50, 100)
    split, gold2 = batch_of(100, 2 / 3, 100, 100, start=100)
    fit = calibrate_cascade(
        unanimous + split, {**gold, **gold2}, target=0.9, delta=0.1, ordering_share=0
    )
    assert fit.guaranteed and fit.threshold == math.inf  # the strong tier alone
    assert [level.threshold for level in fit.levels] == [math.inf, 1.0]
    assert [level.passed for level in fit.levels] == [True, False]
    assert fit.tiers[1].decided == 1.0


def marginal_strong_tier() -> tuple[list[EnsembleVerdict], dict[str, str]]:
    """The strong tier alone is 85% right (below a 0.9 target); the cheap tier's 360
    unanimous items are all right, and the 40 split ones go to the strong tier."""
    unanimous, gold = batch_of(360, 1.0, 360, 306)
    split, gold2 = batch_of(40, 2 / 3, 0, 34, start=360)
    return unanimous + split, {**gold, **gold2}


def test_in_the_strict_first_order_a_weak_last_tier_ends_the_search() -> None:
    results, gold = marginal_strong_tier()
    fit = calibrate_cascade(results, gold, ordering_share=0)
    assert not fit.guaranteed
    assert [level.threshold for level in fit.levels] == [math.inf]


def test_the_ordering_items_start_the_search_at_the_best_looking_level() -> None:
    results, gold = marginal_strong_tier()
    fit = calibrate_cascade(results, gold)
    assert fit.guaranteed and fit.threshold == 0.67
    assert fit.levels[0].threshold != math.inf
    assert fit.agreement == pytest.approx(394 / 400)


def test_the_ordering_split_is_a_seeded_share_of_the_labelled_items() -> None:
    results, gold = marginal_strong_tier()
    fit = calibrate_cascade(results, gold, ordering_share=0.25, seed=7)
    assert fit.n_ordering == 100 and fit.n_items == 400
    again = calibrate_cascade(results, gold, ordering_share=0.25, seed=7)
    assert again.levels == fit.levels


def test_ordering_share_must_leave_items_to_test() -> None:
    results, gold = marginal_strong_tier()
    with pytest.raises(ConfigError, match=r"ordering_share must be in \[0, 1\)"):
        calibrate_cascade(results, gold, ordering_share=1.0)


def test_without_a_passing_level_every_item_goes_to_the_last_tier_with_no_guarantee() -> None:
    results, gold = batch_of(200, 1.0, 100, 120)
    fit = calibrate_cascade(results, gold, target=0.9, delta=0.1)
    assert not fit.guaranteed and fit.threshold is None
    assert fit.escalation.agreement_below == (math.inf,)
    assert fit.tiers[1].decided == 1.0
    assert "no guarantee" in fit.guarantee
    assert "sends every item to the last tier" in fit.guarantee


def test_the_fitted_escalation_carries_its_calibration_items_and_mode() -> None:
    results, gold = batch_of(100, 1.0, 100, 100)
    fit = calibrate_cascade(results + batch_of(5, 1.0, 5, 5, start=500)[0], gold)
    assert fit.calibration_ids == frozenset(gold)
    assert fit.n_items == 100
    assert fit.escalation.calibrated_for == "decide"
    assert fit.escalation.on_error and fit.escalation.on_fallback
    assert fit.escalation.agreement_below == (fit.threshold,)
    assert fit.escalation.confidence_below == (None,)


def test_the_guarantee_sentence_states_target_confidence_and_sample() -> None:
    results, gold = batch_of(300, 1.0, 300, 300)
    fit = calibrate_cascade(results, gold, target=0.85, delta=0.05)
    assert fit.guarantee.startswith("With probability at least 95% over the draw of these 300")
    assert "at least 85%" in fit.guarantee


def test_costs_per_item_and_saving_against_the_last_tier_alone() -> None:
    # Half the items stand at tier 0 (cost 0.001); the other half also pay tier 1 (0.02).
    unanimous, gold = batch_of(100, 1.0, 100, 100)
    split, gold2 = batch_of(100, 0.5, 0, 100, start=100)
    fit = calibrate_cascade(unanimous + split, {**gold, **gold2})
    assert fit.threshold == 0.51
    assert fit.tiers[0].cost_per_item == pytest.approx(0.001)
    assert fit.tiers[1].cost_per_item == pytest.approx(0.5 * 0.02)
    assert fit.cost_per_item == pytest.approx(0.011)
    assert fit.last_tier_cost_per_item == pytest.approx(0.02)
    assert fit.cost_saved == pytest.approx(1 - 0.011 / 0.02)


def test_an_unknown_cost_makes_the_cost_figures_unknown() -> None:
    results = [
        stored(
            f"q{i}",
            tier_result(f"q{i}", "KEEP", 1.0, 0.9, cost=None),
            tier_result(f"q{i}", "KEEP", 1.0, 0.9),
        )
        for i in range(60)
    ]
    fit = calibrate_cascade(results, {f"q{i}": "KEEP" for i in range(60)})
    assert fit.cost_per_item is None and fit.cost_saved is None


def test_a_tier_with_errors_or_a_fallback_never_stands_under_those_rules() -> None:
    results, gold = [], {}
    for i in range(100):
        qid = f"q{i}"
        gold[qid] = "KEEP"
        cheap = tier_result(qid, "REJECT", 1.0, 0.9, n_errors=1 if i < 50 else 0)
        if i >= 50:
            cheap = tier_result(qid, "UNCLEAR", 1.0, 0.9, fallback=True)
        results.append(stored(qid, cheap, tier_result(qid, "KEEP", 1.0, 0.9)))
    guarded = calibrate_cascade(results, gold)
    assert guarded.guaranteed and guarded.tiers[0].decided == 0.0
    assert guarded.threshold == 0.0  # no level lets a failed or undecided tier stand
    unguarded = calibrate_cascade(results, gold, on_error=False, on_fallback=False)
    # Without the rules the cheap tier's wrong results stand at every finite level.
    assert unguarded.threshold == math.inf and unguarded.levels[1].passed is False


def test_confidence_scores_per_tier_and_abstention() -> None:
    results, gold = [], {}
    rng = random.Random(3)
    for i in range(400):
        qid = f"q{i}"
        gold[qid] = "KEEP"
        confidence = rng.random()
        right = rng.random() < confidence  # confidence is calibrated
        strong_confidence = rng.random()
        results.append(
            item(
                qid,
                ("KEEP" if right else "REJECT", 1.0, confidence),
                ("KEEP" if rng.random() < strong_confidence else "REJECT", 1.0, strong_confidence),
            )
        )
    fit = calibrate_cascade(results, gold, score="confidence", final="abstain", target=0.85)
    assert fit.guaranteed and fit.final == "abstain"
    assert fit.escalation.confidence_below == (fit.threshold, fit.threshold)
    assert 0.0 < fit.coverage < 1.0
    assert fit.agreement is not None and fit.agreement >= 0.85
    assert fit.escalation.calibrated_for == "abstain"


def test_a_fit_for_one_final_mode_does_not_plug_into_a_cascade_of_the_other() -> None:
    results, gold = batch_of(100, 1.0, 100, 100)
    fit = calibrate_cascade(results, gold, final="decide")
    cascade = two_tier_cascade()
    with pytest.raises(ConfigError, match="calibrated for final='decide'"):
        Cascade(tiers=cascade.tiers, escalate=fit.escalation, final="abstain")


def test_calibrate_reads_a_results_file(tmp_path: Path) -> None:
    results, gold = batch_of(100, 1.0, 100, 100)
    path = tmp_path / "full.jsonl"
    BatchResult(verdicts=results, critics=[], voting="majority").to_jsonl(path)
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_text("".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in gold.items()))
    assert calibrate_cascade(path, gold_path).guaranteed


def test_the_summary_shows_each_tier_and_the_guarantee() -> None:
    results, gold = batch_of(200, 1.0, 200, 200)
    text = str(calibrate_cascade(results, gold))
    assert "cascade calibration" in text and "always decides" in text
    assert "200 labelled items" in text and "With probability at least 90%" in text


# -- the fast sweep equals the live rule ----------------------------------------------------------

agreements = st.sampled_from([1 / 3, 0.5, 2 / 3, 0.75, 1.0])


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(agreements, st.booleans(), st.floats(0, 1), st.booleans(), st.booleans()),
        min_size=40,
        max_size=120,
    ),
    final=st.sampled_from(["decide", "abstain"]),
    score=st.sampled_from(["agreement", "confidence", "support"]),
)
def test_replaying_the_fitted_escalation_reproduces_the_fit_item_for_item(
    rows: list[tuple[float, bool, float, bool, bool]], final: str, score: str
) -> None:
    results, gold = [], {}
    for i, (agreement, cheap_right, confidence, strong_right, failed) in enumerate(rows):
        qid = f"q{i}"
        gold[qid] = "KEEP"
        cheap = tier_result(
            qid, "KEEP" if cheap_right else "REJECT", agreement, confidence, n_errors=int(failed)
        )
        strong = tier_result(qid, "KEEP" if strong_right else "SPLIT", 1.0, confidence)
        results.append(stored(qid, cheap, strong))
    fit = calibrate_cascade(
        results,
        gold,
        target=0.6,
        delta=0.2,
        final=final,  # type: ignore[arg-type]
        score=score,  # type: ignore[arg-type]
    )
    cascade = two_tier_cascade(final)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationItemsWarning)
        replayed = cascade.replay(results, escalation=fit.escalation, on_calibration_items="keep")
    decided = [r for r in replayed.verdicts if r.consensus != ABSTAIN]
    assert len(decided) / len(results) == pytest.approx(fit.coverage)
    if decided:
        right = sum(r.consensus == "KEEP" for r in decided) / len(decided)
        assert right == pytest.approx(fit.agreement)
    for tier in fit.tiers:
        share = sum(r.tier == tier.tier and r.consensus != ABSTAIN for r in replayed.verdicts)
        assert share / len(results) == pytest.approx(tier.decided)


# -- the guarantee holds -----------------------------------------------------------------------

# A cheap tier whose agreement is 1 (55% of items), 2/3 (35%) or 1/3 (10%), right with
# probability 0.97, 0.79 and 0.45 at those; a strong tier right with probability 0.88.
# The cascade's true agreement at a level is then known exactly:
#   levels 1.00..0.67 (only unanimous items stand)      0.55*0.97 + 0.45*0.88       = 0.9295
#   levels 0.66..0.34 (2/3 majorities stand too)       0.5335 + 0.35*0.79 + 0.1*0.88 = 0.898
#   levels 0.33..0.00 (everything stands at tier 0)    0.5335 + 0.2765 + 0.1*0.45    = 0.855
# With target 0.9, choosing a level below 0.67 breaks the guarantee.
CLASSES = [(1.0, 0.55, 0.97), (2 / 3, 0.35, 0.79), (1 / 3, 0.10, 0.45)]
STRONG_ACCURACY = 0.88


def true_agreement(level: float) -> float:
    total = 0.0
    for agreement, share, accuracy in CLASSES:
        total += share * (accuracy if agreement >= level else STRONG_ACCURACY)
    return total


def population() -> tuple[list[EnsembleVerdict], list[float]]:
    """The 12 kinds of item (class x cheap right x strong right) and their probabilities."""
    kinds, weights = [], []
    for c, (agreement, share, accuracy) in enumerate(CLASSES):
        for cheap_right in (True, False):
            for strong_right in (True, False):
                qid = f"kind-{c}-{cheap_right}-{strong_right}"
                kinds.append(
                    stored(
                        qid,
                        tier_result(qid, "KEEP" if cheap_right else "REJECT", agreement, 0.8),
                        tier_result(qid, "KEEP" if strong_right else "REJECT", 1.0, 0.9),
                    )
                )
                weights.append(
                    share
                    * (accuracy if cheap_right else 1 - accuracy)
                    * (STRONG_ACCURACY if strong_right else 1 - STRONG_ACCURACY)
                )
    return kinds, weights


def in_sample_agreement(sample: list[EnsembleVerdict], level: float) -> float:
    right = 0
    for result in sample:
        cheap, strong = result.tiers or []
        right += (cheap if cheap.agreement_pct >= level else strong).consensus == "KEEP"
    return right / len(sample)


@pytest.mark.slow  # a statistical simulation: thousands of draws
def test_the_guarantee_fails_in_at_most_delta_of_random_calibration_draws() -> None:
    kinds, weights = population()
    gold = {k.query_id: "KEEP" for k in kinds}
    rng = random.Random(20261125)
    draws, n, target, delta = 1000, 300, 0.9, 0.1
    failures = naive_failures = guaranteed = 0
    for _ in range(draws):
        sample = rng.choices(kinds, weights=weights, k=n)
        fit = calibrate_cascade(sample, gold, target=target, delta=delta)
        if fit.guaranteed:
            guaranteed += 1
            assert fit.threshold is not None
            failures += true_agreement(fit.threshold) < target
        # The naive choice: the lowest level whose in-sample agreement reaches the target.
        in_sample = {
            level: sum(
                (r.tiers[0] if r.tiers[0].agreement_pct >= level else r.tiers[1]).consensus
                == "KEEP"
                for r in sample
            )
            / n  # type: ignore[index]
            for level in (1.0, 0.66, 0.33)
        }
        chosen = min((lv for lv, a in in_sample.items() if a >= target), default=None)
        naive_failures += chosen is not None and true_agreement(chosen) < target
    slack = 3 * math.sqrt(delta * (1 - delta) / draws)
    print(f"failed {failures}, guaranteed {guaranteed}, naive failed {naive_failures} of {draws}")
    assert failures / draws <= delta + slack
    assert guaranteed / draws > 0.3  # the test has power: it often finds a level
    assert naive_failures / draws > 2 * delta  # and the setting is one where naivety fails


def test_levels_are_fixed_in_advance_from_strict_to_lenient() -> None:
    assert LEVELS[0] == math.inf and LEVELS[1] == 1.0 and LEVELS[-1] == 0.0
    assert len(LEVELS) == 102
    assert list(LEVELS) == sorted(LEVELS, reverse=True)


def test_keeping_the_last_tiers_agreement_chooses_a_stricter_passed_level() -> None:
    # Unanimous items: all right at the cheap tier. Split items: the cheap tier 90% right,
    # the strong tier always right. The cheapest passed level lets the split items stand
    # (agreement 95%); keeping the strong tier's agreement (100%) escalates them.
    unanimous, gold = batch_of(200, 1.0, 200, 200)
    split, gold2 = batch_of(200, 2 / 3, 180, 200, start=200)
    labels = {**gold, **gold2}
    cheapest = calibrate_cascade(unanimous + split, labels, target=0.85, ordering_share=0)
    keeping = calibrate_cascade(
        unanimous + split, labels, target=0.85, ordering_share=0, keep_last_tier_agreement=True
    )
    assert cheapest.threshold is not None and cheapest.threshold <= 0.66
    assert cheapest.agreement == pytest.approx(380 / 400)
    assert keeping.guaranteed and keeping.threshold == 0.67
    assert keeping.agreement == 1.0
