"""Paired comparisons against gold (cross_judge.stats._gold_paired): two rows on the same
gold items, the items each alone got right, the exact McNemar p (checked against
statsmodels in test_paired_oracles.py), and Holm's adjustment over critics.

The constructed case is issue 41's: on 333 gold items, Dawid-Skene right where majority is
wrong on 16, the other way on 21; 16 of 37 under Binomial(37, 1/2), twice the lower tail
is p = 0.5114.
"""

from __future__ import annotations

import pytest

from cross_judge.errors import ConfigError
from cross_judge.results import plain_text
from cross_judge.stats import CONSENSUS, gold_metrics, holm, mcnemar_exact


def crowd_case() -> tuple[list[list[str | None]], list[str | None]]:
    """333 items: 16 only the second critic right, 21 only the first, 230 both, 66 none."""
    gold: list[str | None] = ["A"] * 333
    rows: list[list[str | None]] = (
        [["B", "A"]] * 16 + [["A", "B"]] * 21 + [["A", "A"]] * 230 + [["B", "B"]] * 66
    )
    return rows, gold


def test_compare_counts_the_items_each_row_alone_got_right() -> None:
    rows, gold = crowd_case()
    comparison = gold_metrics(rows, ["majority", "dawid_skene"], gold).compare(
        "majority", "dawid_skene"
    )
    assert (comparison.n, comparison.better, comparison.worse) == (333, 16, 21)
    assert comparison.baseline_accuracy == pytest.approx(251 / 333)
    assert comparison.candidate_accuracy == pytest.approx(246 / 333)
    assert comparison.difference == pytest.approx(-5 / 333)


def test_compare_gives_the_exact_mcnemar_p_of_16_against_21() -> None:
    rows, gold = crowd_case()
    comparison = gold_metrics(rows, ["m", "d"], gold).compare("m", "d")
    assert comparison.p_value == pytest.approx(0.5114, abs=1e-4)
    assert comparison.p_adjusted is None
    low, high = comparison.interval  # type: ignore[misc]
    assert low < 0 < high


def test_compare_leaves_out_items_either_row_did_not_answer() -> None:
    rows: list[list[str | None]] = [["A", None], ["B", "A"], ["A", "A"]]
    comparison = gold_metrics(rows, ["x", "y"], ["A", "A", "A"]).compare("x", "y")
    assert (comparison.n, comparison.better, comparison.worse) == (2, 1, 0)


def test_versus_pairs_two_reports_by_item_id() -> None:
    rows, gold = crowd_case()
    ids = [f"q{i}" for i in range(333)]
    majority = gold_metrics(
        [[r[0]] for r in rows], ["c"], gold, consensus=[r[0] for r in rows], item_ids=ids
    )
    order = list(reversed(range(333)))  # the candidate's items in another order
    dawid_skene = gold_metrics(
        [[rows[i][1]] for i in order],
        ["c"],
        [gold[i] for i in order],
        consensus=[rows[i][1] for i in order],
        item_ids=[ids[i] for i in order],
    )
    comparison = dawid_skene.versus(majority, names=("majority", "dawid_skene"))
    assert (comparison.better, comparison.worse) == (16, 21)
    assert (comparison.baseline, comparison.candidate) == ("majority", "dawid_skene")
    assert comparison.p_value == pytest.approx(mcnemar_exact(16, 21))


def test_versus_refuses_reports_of_different_gold() -> None:
    first = gold_metrics([["A"]], ["c"], ["A"], consensus=["A"])
    second = gold_metrics([["A"]], ["c"], ["B"], consensus=["A"])
    with pytest.raises(ConfigError, match="same gold"):
        second.versus(first)


def test_pairwise_adjusts_every_pair_of_critics_by_holm() -> None:
    rows: list[list[str | None]] = (
        [["A", "B", "A"]] * 12 + [["B", "A", "A"]] * 2 + [["A", "A", "B"]] * 5 + [["A"] * 3] * 20
    )
    report = gold_metrics(rows, ["x", "y", "z"], ["A"] * 39)
    pairs = report.pairwise(["x", "y", "z"])
    assert [(c.baseline, c.candidate) for c in pairs] == [("x", "y"), ("x", "z"), ("y", "z")]
    expected = holm([c.p_value for c in pairs])
    assert [c.p_adjusted for c in pairs] == expected
    assert pairs[0].p_value == mcnemar_exact(2, 12)


def test_the_summary_shows_the_paired_comparisons_with_counts_and_p() -> None:
    rows, gold = crowd_case()
    report = gold_metrics(rows, ["m", "d"], gold, consensus=[r[1] for r in rows])
    text = " ".join(plain_text(report.summary()).split())
    assert "paired comparisons on the same gold items" in text
    assert "d vs m 333 -0.015" in text
    assert "16 21 0.511" in text
    assert f"{CONSENSUS} vs m" in text


def test_the_comparison_reads_as_one_sentence() -> None:
    rows, gold = crowd_case()
    text = str(
        gold_metrics(rows, ["majority", "dawid_skene"], gold).compare("majority", "dawid_skene")
    )
    assert "16 right only by dawid_skene, 21 only by majority" in text
    assert "exact McNemar p = 0.511" in text


def test_comparing_a_row_with_itself_is_refused() -> None:
    rows, gold = crowd_case()
    with pytest.raises(ConfigError, match="two different rows"):
        gold_metrics(rows, ["m", "d"], gold).compare("m", "m")


def test_the_html_table_lists_each_pair_with_its_counts_and_p() -> None:
    from cross_judge.report._against_gold import paired_table

    rows, gold = crowd_case()
    html = paired_table(gold_metrics(rows, ["m", "d"], gold))
    assert 'id="gold-paired-table"' in html
    assert "<td>d vs m</td><td class=num>333</td>" in html
    assert "<td class=num>16</td><td class=num>21</td><td class=num>0.511</td>" in html


def test_two_batches_with_their_items_in_another_order_pair_by_query_id() -> None:
    from cross_judge.batch import BatchResult

    labels = {"q0": "PPF", "q1": "FFF", "q2": "PPP", "q3": "FFP", "q4": "PFF"}
    gold = {"q0": "P", "q1": "F", "q2": "P", "q3": "P", "q4": "P"}

    def votes(order: list[str], flip: str | None = None) -> BatchResult:
        rows = []
        for item in order:
            cast = labels[item] if item != flip else "PPP"
            rows += [(item, voter, label) for voter, label in zip("abc", cast, strict=True)]
        return BatchResult.from_votes(rows)

    base = votes(list(labels)).against(gold)
    # The same votes but q4's, read in reverse order: only q4's consensus changes (F -> P).
    cand = votes(list(reversed(labels)), flip="q4").against(gold)
    comparison = cand.versus(base)
    assert (comparison.n, comparison.better, comparison.worse) == (5, 1, 0)
