"""Gold metrics, bootstrap intervals and effective votes (cross_judge.stats._gold).

Every expected number is worked by hand in the comments next to it; numpy's percentile is
the oracle for the bootstrap's quantiles.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError
from cross_judge.stats._agreement import cohen_kappa
from cross_judge.stats._gold import (
    CONSENSUS,
    GoldReport,
    _accuracy_kappa,
    _pair_codes,
    bootstrap_ci,
    check_gold,
    effective_votes,
    gold_metrics,
    unknown_ids,
)

# Six items, two critics; item 5 is unlabelled.
GOLD: list[str | None] = ["yes", "yes", "yes", "no", "no", None]
LABELS: list[list[str | None]] = [
    # a      b
    ["yes", "yes"],
    ["yes", None],
    ["no", "yes"],
    ["no", "no"],
    ["yes", None],
    ["no", "yes"],
]
CRITICS = ["a", "b"]


def report(**kwargs: Any) -> GoldReport:
    return gold_metrics(LABELS, CRITICS, GOLD, **kwargs)


def scored(confidences: list[float], correct: list[bool], bins: int) -> GoldReport:
    """One critic answering 'x' on every item with the given confidences; gold makes the
    answer correct or not."""
    gold: list[str | None] = ["x" if ok else "y" for ok in correct]
    return gold_metrics(
        [["x"] for _ in correct],
        ["c"],
        gold,
        confidences=[[conf] for conf in confidences],
        bins=bins,
    )


# --- hand-computed metrics ----------------------------------------------------------------


def test_accuracy_counts_labelled_items_with_a_valid_verdict() -> None:
    # a on items 0-4: right, right, wrong, right, wrong -> 3/5; b answers 0, 2, 3: all right.
    assert report()["a"].accuracy == pytest.approx(3 / 5)
    assert report()["b"].accuracy == 1.0


def test_coverage_is_the_share_of_labelled_items_answered() -> None:
    # b has a valid verdict on 3 of the 5 labelled items; a on all 5.
    rows = report()
    assert (rows["b"].n_gold, rows["b"].n_answered, rows["b"].coverage) == (5, 3, 0.6)
    assert rows["a"].coverage == 1.0


def test_kappa_against_gold_matches_the_hand_computation() -> None:
    # a: n=5, agree=3; gold yes 3 / no 2, answered yes 3 / no 2: p_o = 3/5,
    # p_e = (3*3 + 2*2) / 25 = 13/25, kappa = (15 - 13) / (25 - 13) = 1/6.
    assert report()["a"].kappa == pytest.approx(1 / 6)


def test_kappa_is_none_when_gold_has_a_single_label() -> None:
    # b answered items 0, 2 (gold yes) and 3 (gold no): kappa 1; restrict gold to 'yes'.
    rows = gold_metrics(LABELS, CRITICS, {0: "yes", 2: "yes"})
    assert rows["b"].accuracy == 1.0
    assert rows["b"].kappa is None


def test_confusion_is_gold_by_answered_counts_over_every_label() -> None:
    assert report()["a"].confusion == {
        "no": {"no": 1, "yes": 1},
        "yes": {"no": 1, "yes": 2},
    }
    assert report()["b"].confusion == {"no": {"no": 1, "yes": 0}, "yes": {"no": 0, "yes": 2}}


def test_vocabulary_orders_the_labels_and_the_confusion() -> None:
    rows = report(vocabulary=["yes", "no", "maybe"])
    assert rows.labels == ("yes", "no", "maybe")
    assert list(rows["a"].confusion) == ["yes", "no", "maybe"]
    assert rows["a"].confusion["maybe"] == {"yes": 0, "no": 0, "maybe": 0}


def test_brier_is_the_mean_squared_gap_between_confidence_and_correctness() -> None:
    # (0.9 - 1)^2 + (0.8 - 1)^2 + (0.7 - 0)^2 + (0.6 - 1)^2 + (0.95 - 0)^2
    # = 0.01 + 0.04 + 0.49 + 0.16 + 0.9025 = 1.6025, over 5 votes.
    confidences = [[0.9, None], [0.8, None], [0.7, 0.5], [0.6, 0.5], [0.95, None], [0.5, 0.5]]
    rows = report(confidences=confidences)
    assert rows["a"].brier == pytest.approx(1.6025 / 5)
    # b: confidences on items 2 and 3 (both right): (0.5 - 1)^2 = 0.25.
    assert rows["b"].brier == pytest.approx(0.25)


def test_ece_with_two_bins_matches_the_hand_computation() -> None:
    # [0, 0.5): 0.2 wrong, 0.4 right -> mean 0.3, accuracy 0.5, gap 0.2, weight 2/5.
    # [0.5, 1]: 0.6, 0.8 right, 1.0 wrong -> mean 0.8, accuracy 2/3, gap 2/15, weight 3/5.
    # ECE = 0.4 * 0.2 + 0.6 * 2/15 = 0.08 + 0.08 = 0.16.
    row = scored([0.2, 0.4, 0.6, 0.8, 1.0], [False, True, True, True, False], bins=2)["c"]
    assert row.ece == pytest.approx(0.16)


def test_reliability_table_lists_each_bin_with_count_confidence_and_accuracy() -> None:
    row = scored([0.2, 0.4, 0.6, 0.8, 1.0], [False, True, True, True, False], bins=2)["c"]
    assert row.reliability is not None
    low, high = row.reliability
    assert (low.lo, low.hi, low.count) == (0.0, 0.5, 2)
    assert low.mean_confidence == pytest.approx(0.3)
    assert low.accuracy == pytest.approx(0.5)
    assert (high.lo, high.hi, high.count) == (0.5, 1.0, 3)
    assert high.mean_confidence == pytest.approx(0.8)
    assert high.accuracy == pytest.approx(2 / 3)


def test_bin_edges_are_closed_below_and_the_last_bin_holds_one() -> None:
    row = scored([0.0, 0.5, 1.0], [True, True, True], bins=2)["c"]
    assert row.reliability is not None
    assert [b.count for b in row.reliability] == [1, 2]


def test_empty_bins_are_listed_without_confidence_or_accuracy() -> None:
    row = scored([0.9, 0.95], [True, True], bins=4)["c"]
    assert row.reliability is not None
    assert [b.count for b in row.reliability] == [0, 0, 0, 2]
    assert row.reliability[0].mean_confidence is None
    assert row.reliability[0].accuracy is None


def test_calibration_is_none_without_confidences() -> None:
    row = report()["a"]
    assert (row.brier, row.ece, row.reliability) == (None, None, None)


def test_partial_gold_mapping_counts_only_the_labelled_items() -> None:
    # Items 0 (a right) and 2 (a wrong).
    rows = gold_metrics(LABELS, CRITICS, {0: "yes", 2: "yes"})
    assert rows.n_gold == 2
    assert rows["a"].accuracy == 0.5
    assert rows["a"].confusion == {"no": {"no": 0, "yes": 0}, "yes": {"no": 1, "yes": 1}}


def test_no_gold_at_all_gives_undefined_statistics() -> None:
    row = gold_metrics(LABELS, CRITICS, [None] * 6)["a"]
    assert (row.n_gold, row.coverage, row.accuracy, row.kappa) == (0, None, None, None)


def test_consensus_is_the_last_row_measured_like_a_critic() -> None:
    # Consensus right on items 0, 1, 3, 4 and silent on 2: accuracy 4/4, coverage 4/5.
    consensus: list[str | None] = ["yes", "yes", None, "no", "no", "yes"]
    rows = report(consensus=consensus, confidences=[[0.9, 0.9]] * 6)
    assert [row.name for row in rows.rows] == ["a", "b", CONSENSUS]
    assert rows.consensus is not None
    assert (rows.consensus.accuracy, rows.consensus.coverage) == (1.0, 0.8)
    assert rows.consensus.brier is None  # a consensus states no confidence


def test_rows_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        report()["a"].accuracy = 1.0  # type: ignore[misc]


def test_unknown_row_name_raises_key_error_listing_the_rows() -> None:
    with pytest.raises(KeyError, match="'a', 'b'"):
        report()["zed"]


# --- rendering ----------------------------------------------------------------------------


def test_str_renders_one_line_per_row_with_the_interval() -> None:
    text = str(report(consensus=GOLD, ci=0.95, n_boot=50))
    assert "against gold (5 of 6 items labelled)" in text
    table = text.split("paired comparisons")[0]  # the pairs' lines start with a row's name too
    lines = {line.split()[0]: line for line in table.splitlines() if line.strip()}
    assert "0.600 [" in lines["a"]
    assert "1.000 [1.000, 1.000]" in lines[CONSENSUS]
    assert "Brier" not in text  # no confidences, no calibration columns


def test_summary_shows_calibration_columns_when_confidences_are_given() -> None:
    text = str(report(confidences=[[0.9, 0.9]] * 6))
    assert "Brier" in text
    assert "ECE" in text


def test_detailed_summary_adds_confusion_and_reliability_tables() -> None:
    from rich.console import Console

    console = Console(width=100, color_system=None, record=True, force_terminal=False)
    with console.capture() as captured:
        console.print(report(confidences=[[0.9, 0.9]] * 6).summary(detailed=True))
    text = captured.get()
    assert "a: confusion" in text
    assert "gold \\ answered" in text
    assert "b: reliability" in text


# --- validation ---------------------------------------------------------------------------


def test_gold_label_outside_the_vocabulary_names_it_and_the_vocabulary() -> None:
    with pytest.raises(ConfigError, match=r"'maybe'.*\['no', 'yes'\]"):
        gold_metrics(
            LABELS, CRITICS, ["yes", "maybe", None, None, None, None], vocabulary=["yes", "no"]
        )


def test_check_gold_rejects_a_non_string_label() -> None:
    with pytest.raises(ConfigError, match="must be strings"):
        check_gold(["yes", 1])


def test_check_gold_accepts_none_and_known_labels() -> None:
    check_gold(["yes", None, "no"], ["yes", "no"])


def test_unknown_ids_name_up_to_five_examples_and_count_the_rest() -> None:
    gold_ids = ["q1", "x1", "x2", "x3", "x4", "x5", "x6", "x7"]
    with pytest.raises(
        ConfigError, match=r"7 gold id\(s\).*'x1', 'x2', 'x3', 'x4', 'x5' \(and 2 more\)"
    ):
        unknown_ids(gold_ids, ["q1", "q2"])


def test_unknown_ids_passes_when_every_gold_id_is_an_item() -> None:
    unknown_ids(["q2"], ["q1", "q2"])


def test_gold_mapping_key_outside_the_items_raises() -> None:
    with pytest.raises(ConfigError, match="not among the 6 items: 9"):
        gold_metrics(LABELS, CRITICS, {9: "yes"})


def test_gold_not_aligned_with_the_items_raises() -> None:
    with pytest.raises(ConfigError, match="gold has 2 labels for 6 items"):
        gold_metrics(LABELS, CRITICS, ["yes", "no"])


def test_labels_row_not_one_per_critic_raises() -> None:
    with pytest.raises(ConfigError, match="Item 0 has 2 labels for 3 critics"):
        gold_metrics(LABELS, ["a", "b", "c"], GOLD)


def test_confidence_outside_the_unit_interval_raises() -> None:
    with pytest.raises(ConfigError, match=r"Confidence 1.5 \(item 0, critic 1\)"):
        report(confidences=[[0.5, 1.5]] + [[0.5, 0.5]] * 5)


def test_critic_named_consensus_clashes_with_the_consensus_row() -> None:
    with pytest.raises(ConfigError, match="rename it"):
        gold_metrics(LABELS, ["a", CONSENSUS], GOLD, consensus=GOLD)


@pytest.mark.parametrize("ci", [0.0, 1.0, 95])
def test_ci_outside_zero_one_raises(ci: float) -> None:
    with pytest.raises(ConfigError, match="strictly between 0 and 1"):
        report(ci=ci)


# --- bootstrap ----------------------------------------------------------------------------


def share(values: list[int]) -> Callable[[list[int]], float]:
    """A statistic: the share of 1s among the resampled items of ``values``."""

    def statistic(items: list[int]) -> float:
        return sum(values[i] for i in items) / len(items)

    return statistic


def test_bootstrap_interval_contains_the_point_estimate() -> None:
    values = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 3
    interval = bootstrap_ci(share(values), len(values), n_boot=300)
    assert interval is not None
    low, high = interval
    assert low <= 0.7 <= high


def test_bootstrap_interval_narrows_with_more_items() -> None:
    few = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 2
    many = few * 10
    narrow = bootstrap_ci(share(many), len(many), n_boot=300)
    wide = bootstrap_ci(share(few), len(few), n_boot=300)
    assert narrow is not None
    assert wide is not None
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 2


def test_bootstrap_is_reproducible_by_seed() -> None:
    values = [0.3, 1.7, 2.2, 0.9, 4.1, 3.3, 0.2, 5.8, 1.1, 2.9, 0.4, 3.7]

    def mean(items: list[int]) -> float:
        return sum(values[i] for i in items) / len(items)

    one = bootstrap_ci(mean, len(values), n_boot=200, seed=7)
    assert one == bootstrap_ci(mean, len(values), n_boot=200, seed=7)
    assert one != bootstrap_ci(mean, len(values), n_boot=200, seed=8)


def test_bootstrap_bounds_are_numpy_percentiles_of_the_resampled_statistic() -> None:
    values = [1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1]
    seen: list[float] = []

    def recorded(items: list[int]) -> float:
        seen.append(sum(values[i] for i in items) / len(items))
        return seen[-1]

    interval = bootstrap_ci(recorded, len(values), ci=0.9, n_boot=101)
    assert interval == pytest.approx(tuple(np.percentile(seen, [5, 95])))


def test_bootstrap_skips_resamples_where_the_statistic_is_undefined() -> None:
    values = [1, 0, 1]
    calls: list[float | None] = []

    def sometimes(items: list[int]) -> float | None:
        calls.append(None if len(calls) % 2 else sum(values[i] for i in items) / 3)
        return calls[-1]

    interval = bootstrap_ci(sometimes, 3, n_boot=20)
    defined = [c for c in calls if c is not None]
    assert interval == pytest.approx(tuple(np.percentile(defined, [2.5, 97.5])))


def test_bootstrap_of_no_items_or_an_always_undefined_statistic_is_none() -> None:
    assert bootstrap_ci(lambda items: 1.0, 0) is None
    assert bootstrap_ci(lambda items: None, 5, n_boot=10) is None


def test_gold_intervals_contain_the_point_estimates() -> None:
    rows = gold_metrics(LABELS * 5, CRITICS, GOLD * 5, ci=0.95, n_boot=300)
    for row in rows.rows:
        assert row.accuracy_ci is not None
        assert row.accuracy is not None
        assert row.accuracy_ci[0] <= row.accuracy <= row.accuracy_ci[1]
    kappa, kappa_ci = rows["a"].kappa, rows["a"].kappa_ci
    assert kappa is not None
    assert kappa_ci is not None
    assert kappa_ci[0] <= kappa <= kappa_ci[1]


def test_gold_intervals_equal_bootstrap_ci_of_the_same_statistic_and_seed() -> None:
    labels = [row for row, g in zip(LABELS, GOLD, strict=True) if g is not None] * 4
    gold = [g for g in GOLD if g is not None] * 4
    answers = [row[0] for row in labels]
    row = gold_metrics(labels, CRITICS, gold, ci=0.9, n_boot=200, seed=3)["a"]

    def accuracy(items: list[int]) -> float:
        return sum(answers[i] == gold[i] for i in items) / len(items)

    def kappa(items: list[int]) -> float | None:
        return cohen_kappa([answers[i] for i in items], [gold[i] for i in items])

    assert row.accuracy_ci == bootstrap_ci(accuracy, len(gold), ci=0.9, n_boot=200, seed=3)
    assert row.kappa_ci == pytest.approx(bootstrap_ci(kappa, len(gold), ci=0.9, n_boot=200, seed=3))


def test_intervals_are_none_without_ci() -> None:
    row = report()["a"]
    assert (row.accuracy_ci, row.kappa_ci) == (None, None)


# --- effective votes ----------------------------------------------------------------------


def test_identical_critics_are_worth_one_vote() -> None:
    column: list[str | None] = ["yes", "no", "no", "yes", "no", "yes"]
    reference: list[str | None] = ["yes", "yes", "no", "yes", "no", "no"]
    votes = effective_votes([[label] * 4 for label in column], reference)
    assert votes.mean_error_correlation == pytest.approx(1.0)
    assert votes.effective == pytest.approx(1.0)


def test_independent_critics_are_worth_one_vote_each() -> None:
    # Every pattern of three critics being wrong, once: the error indicators are exactly
    # uncorrelated, phi = 0 for every pair.
    patterns = list(itertools.product([False, True], repeat=3))
    labels = [["no" if wrong else "yes" for wrong in pattern] for pattern in patterns]
    votes = effective_votes(labels, ["yes"] * len(patterns))
    assert votes.pairwise == {(0, 1): 0.0, (0, 2): 0.0, (1, 2): 0.0}
    assert votes.effective == 3.0


def test_nine_critics_with_error_correlation_half_are_worth_one_point_eight() -> None:
    # 3 items all nine wrong, 2 items per critic where it alone is wrong, 4 all right:
    # per pair n11 = 3, n10 = n01 = 2, n00 = 18, phi = (54 - 4) / sqrt(5 * 20 * 5 * 20) = 0.5;
    # n_eff = 9 / (1 + 8 * 0.5) = 1.8.
    wrong_rows = [[True] * 9] * 3
    wrong_rows += [[k == j for k in range(9)] for j in range(9) for _ in range(2)]
    wrong_rows += [[False] * 9] * 4
    labels = [["no" if w else "yes" for w in row] for row in wrong_rows]
    votes = effective_votes(labels, ["yes"] * len(labels))
    assert set(votes.pairwise.values()) == {0.5}
    assert votes.effective == pytest.approx(1.8)


def test_negatively_correlated_errors_count_as_independent_not_more() -> None:
    # Each critic is wrong exactly where the other is right: phi = -1, clamped to 0.
    labels: list[list[str | None]] = [["no", "yes"], ["yes", "no"], ["no", "yes"], ["yes", "no"]]
    votes = effective_votes(labels, ["yes"] * 4)
    assert votes.mean_error_correlation == pytest.approx(-1.0)
    assert votes.effective == 2.0


def test_error_correlation_uses_only_items_both_critics_judged() -> None:
    # Critic 1 is missing where the two would disagree, so on shared items they err together.
    labels: list[list[str | None]] = [["no", "no"], ["yes", "yes"], ["no", None], ["yes", "yes"]]
    votes = effective_votes(labels, ["yes"] * 4)
    assert votes.pairwise == {(0, 1): pytest.approx(1.0)}


def test_effective_votes_undefined_when_no_critic_errs() -> None:
    votes = effective_votes([["yes", "yes"], ["no", "no"]], ["yes", "no"])
    assert votes.pairwise == {(0, 1): None}
    assert (votes.mean_error_correlation, votes.effective) == (None, None)


def test_a_critic_without_valid_verdicts_casts_no_vote() -> None:
    labels: list[list[str | None]] = [["yes", None], ["no", None]]
    votes = effective_votes(labels, ["yes", "yes"])
    assert (votes.n_critics, votes.effective, votes.pairwise) == (1, 1.0, {})


def test_effective_votes_reference_not_aligned_raises() -> None:
    with pytest.raises(ConfigError, match="reference has 1 labels for 2 items"):
        effective_votes([["yes"], ["no"]], ["yes"])


# --- invariants ---------------------------------------------------------------------------

LABEL = st.sampled_from(["a", "b", "c"])
CONF = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def panels(
    draw: st.DrawFn,
) -> tuple[list[list[str | None]], list[str | None], list[list[float | None]]]:
    n_items = draw(st.integers(min_value=1, max_value=25))
    n_critics = draw(st.integers(min_value=1, max_value=3))
    labels = [
        draw(st.lists(st.none() | LABEL, min_size=n_critics, max_size=n_critics))
        for _ in range(n_items)
    ]
    gold = draw(st.lists(st.none() | LABEL, min_size=n_items, max_size=n_items))
    confidences = [
        draw(st.lists(st.none() | CONF, min_size=n_critics, max_size=n_critics))
        for _ in range(n_items)
    ]
    return labels, gold, confidences


@settings(max_examples=60, deadline=None)
@given(panels(), st.integers(min_value=1, max_value=12))
def test_accuracy_ece_and_brier_stay_in_the_unit_interval(
    panel: tuple[list[list[str | None]], list[str | None], list[list[float | None]]], bins: int
) -> None:
    labels, gold, confidences = panel
    critics = [f"c{j}" for j in range(len(labels[0]))]
    rows = gold_metrics(labels, critics, gold, confidences=confidences, bins=bins)
    for row in rows.rows:
        for value in (row.accuracy, row.coverage, row.ece, row.brier):
            assert value is None or 0.0 <= value <= 1.0
        assert sum(sum(counts.values()) for counts in row.confusion.values()) == row.n_answered


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(LABEL, CONF), min_size=1, max_size=30))
def test_a_perfect_critic_has_accuracy_one_kappa_one_and_brier_of_its_doubt(
    votes: list[tuple[str, float]],
) -> None:
    gold: list[str | None] = [label for label, _ in votes]
    row = gold_metrics(
        [[label] for label in gold], ["p"], gold, confidences=[[conf] for _, conf in votes]
    )["p"]
    assert row.accuracy == 1.0
    assert row.kappa == (1.0 if len(set(gold)) > 1 else None)
    assert row.brier == pytest.approx(math.fsum((1 - conf) ** 2 for _, conf in votes) / len(votes))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.none() | LABEL, LABEL), max_size=30))
def test_bootstrap_kappa_arithmetic_matches_cohen_kappa(
    pairs: list[tuple[str | None, str]],
) -> None:
    answers = [a for a, _ in pairs]
    gold = [g for _, g in pairs]
    index = {"a": 0, "b": 1, "c": 2}
    counts = Counter(_pair_codes(gold, answers, index))
    assert _accuracy_kappa(counts, len(index))[1] == cohen_kappa(answers, gold)


@settings(max_examples=60, deadline=None)
@given(panels())
def test_effective_votes_lie_between_one_and_the_number_of_voting_critics(
    panel: tuple[list[list[str | None]], list[str | None], list[list[float | None]]],
) -> None:
    labels, gold, _ = panel
    votes = effective_votes(labels, gold)
    if votes.effective is not None:
        assert 1.0 - 1e-9 <= votes.effective <= votes.n_critics + 1e-9
    for phi in votes.pairwise.values():
        assert phi is None or -1.0 - 1e-9 <= phi <= 1.0 + 1e-9
