"""Wilson intervals for accuracies against gold (cross_judge.stats._gold_paired), and the
interval printed beside every accuracy in each view of a GoldReport.

Expected values: Newcombe (1998), Table I, method 3 (Wilson score, no continuity
correction): 81/263 -> (0.2553, 0.3662), 15/148 -> (0.0624, 0.1605), 0/20 -> (0, 0.1611),
1/29 -> (0.0061, 0.1718); statsmodels' proportion_confint(method="wilson") when installed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from cross_judge.report._against_gold import accuracy_html, criteria_gold_table
from cross_judge.results import plain_text
from cross_judge.stats import CONSENSUS, gold_metrics, wilson_interval

from .test_gold_metrics import GOLD, LABELS  # six items, two critics, one unlabelled


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [
        (81, 263, (0.2553, 0.3662)),
        (15, 148, (0.0624, 0.1605)),
        (0, 20, (0.0, 0.1611)),
        (1, 29, (0.0061, 0.1718)),
    ],
)
def test_wilson_interval_matches_newcombes_published_values(
    successes: int, n: int, expected: tuple[float, float]
) -> None:
    assert wilson_interval(successes, n) == pytest.approx(expected, abs=5e-5)


@given(st.integers(0, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_equals_statsmodels(case: tuple[int, int]) -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    successes, n = case
    if n == 0:
        assert wilson_interval(successes, n) is None
        return
    expected = proportion.proportion_confint(successes, n, alpha=0.05, method="wilson")
    assert wilson_interval(successes, n) == pytest.approx(expected, abs=1e-12)


def test_wilson_interval_is_closed_at_zero_and_all_successes() -> None:
    assert wilson_interval(0, 7)[0] == 0.0  # type: ignore[index]
    assert wilson_interval(7, 7)[1] == 1.0  # type: ignore[index]


def test_wilson_interval_refuses_more_successes_than_trials() -> None:
    with pytest.raises(ValueError, match="successes <= n"):
        wilson_interval(5, 4)


def test_every_row_carries_the_wilson_interval_of_its_accuracy() -> None:
    report = gold_metrics(LABELS, ["a", "b"], GOLD, consensus=GOLD)
    # a: 3 right of 5 answered; b: 3 of 3; the consensus 5 of 5.
    assert report["a"].n_correct == 3
    assert report["a"].accuracy_interval == wilson_interval(3, 5)
    assert report["b"].accuracy_interval == wilson_interval(3, 3)
    assert report[CONSENSUS].accuracy_interval == wilson_interval(5, 5)


def test_the_interval_level_follows_ci() -> None:
    report = gold_metrics(LABELS, ["a", "b"], GOLD, ci=0.9, n_boot=20)
    assert report.confidence == 0.9
    assert report["a"].accuracy_interval == wilson_interval(3, 5, 0.9)


def test_the_text_summary_prints_each_accuracy_with_its_interval() -> None:
    text = str(gold_metrics(LABELS, ["a", "b"], GOLD))
    low, high = wilson_interval(3, 5)  # type: ignore[misc]
    assert f"0.600 [{low:.3f}, {high:.3f}]" in text
    assert "accuracy [95% Wilson score interval]" in " ".join(text.split())


def test_the_reliability_table_prints_each_bins_accuracy_with_its_interval() -> None:
    report = gold_metrics(LABELS, ["a", "b"], GOLD, confidences=[[0.9, 0.8]] * 6)
    text = plain_text(report.summary(detailed=True))
    low, high = wilson_interval(3, 5)  # type: ignore[misc]
    assert f"0.600 [{low:.3f}, {high:.3f}]" in text.split("a: reliability")[1]


def test_the_html_cell_shows_the_rate_and_its_interval() -> None:
    assert accuracy_html(0.6, (0.2307, 0.8824)) == (
        '60.0% <span class="muted">[23.1%, 88.2%]</span>'
    )


def test_the_criteria_table_prints_each_accuracy_with_its_interval() -> None:
    report = gold_metrics(LABELS, ["a", "b"], GOLD, consensus=GOLD)
    text = plain_text(criteria_gold_table({"correct": report}))
    low, high = wilson_interval(3, 5)  # type: ignore[misc]
    assert f"0.600 [{low:.3f}, {high:.3f}]" in text
