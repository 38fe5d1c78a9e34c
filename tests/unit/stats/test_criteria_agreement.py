"""Agreement per criterion of a rubric batch: Krippendorff's alpha (nominal for PASS/FAIL,
ordinal by the scale's scores for a longer scale), Fleiss' kappa, pairwise agreement and
the disputed share, from the critics x items matrix of each criterion's answers.

Oracles: the ``krippendorff`` package (alpha, to 1e-9) and Krippendorff's (2011) worked
example, laid out as the answers of four critics on one criterion.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from cross_judge.errors import ConfigError
from cross_judge.stats._agreement import fleiss_kappa
from cross_judge.stats._criteria import (
    CriteriaVotes,
    criteria_agreement,
    criterion_agreement,
    scale_order,
)

from .criteria_batches import BINARY, FIVE_POINT, batch, result

CRITICS = ("a", "b", "c", "d")


def package_alpha(
    matrix: Sequence[Sequence[str | None]], order: Sequence[str], level: str
) -> float:
    """``krippendorff.alpha`` of a label matrix, labels coded by their rank in ``order``."""
    rank = {label: float(i) for i, label in enumerate(order)}
    data = np.array([[np.nan if x is None else rank[x] for x in row] for row in matrix])
    return float(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement=level,
            value_domain=list(rank.values()),
        )
    )


def random_items(
    rubric_labels: Sequence[str], ids: Sequence[str], n: int, seed: int
) -> list[dict[str, dict[str, str | None]]]:
    """``n`` items of four critics, each answer a random label or (1 in 5) a parse failure."""
    rng = random.Random(seed)
    return [
        {
            critic: {
                cid: None if rng.random() < 0.2 else rng.choice(list(rubric_labels)) for cid in ids
            }
            for critic in CRITICS
        }
        for _ in range(n)
    ]


# -- the level follows the scale ----------------------------------------------------------------


def test_pass_fail_criteria_use_nominal_alpha() -> None:
    items = random_items(("PASS", "FAIL"), BINARY.ids, 30, seed=1)
    agreements = criteria_agreement(batch(items))
    assert [a.level for a in agreements.values()] == ["nominal", "nominal"]


def test_a_five_point_scale_uses_ordinal_alpha_ranked_by_score() -> None:
    items = random_items(FIVE_POINT.labels, FIVE_POINT.ids, 30, seed=2)
    agreements = criteria_agreement(batch(items, FIVE_POINT))
    assert {a.level for a in agreements.values()} == {"ordinal"}
    assert agreements["clarity"].values == ("1", "2", "3", "4", "5")


def test_scale_order_ranks_labels_by_score_not_by_listing() -> None:
    assert scale_order(FIVE_POINT.scale) == ("1", "2", "3", "4", "5")
    assert scale_order(BINARY.scale) == ("FAIL", "PASS")


def test_criteria_come_in_rubric_order() -> None:
    items = [{"a": {"cites": "PASS", "correct": "PASS"}, "b": {"cites": "FAIL", "correct": "PASS"}}]
    assert list(criteria_agreement(batch(items))) == ["correct", "cites"]


# -- the reference implementation --------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_nominal_alpha_per_criterion_equals_the_krippendorff_package(seed: int) -> None:
    votes = CriteriaVotes.of(batch(random_items(("PASS", "FAIL"), BINARY.ids, 25, seed)))
    agreements = criteria_agreement(votes)
    for cid in BINARY.ids:
        theirs = package_alpha(votes.matrix(cid), ("FAIL", "PASS"), "nominal")
        assert agreements[cid].alpha == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_ordinal_alpha_per_criterion_equals_the_krippendorff_package(seed: int) -> None:
    votes = CriteriaVotes.of(
        batch(random_items(FIVE_POINT.labels, FIVE_POINT.ids, 25, seed), FIVE_POINT)
    )
    agreements = criteria_agreement(votes)
    for cid in FIVE_POINT.ids:
        theirs = package_alpha(votes.matrix(cid), ("1", "2", "3", "4", "5"), "ordinal")
        assert agreements[cid].alpha == pytest.approx(theirs, abs=1e-9)


def test_ordinal_alpha_differs_from_nominal_on_near_misses() -> None:
    # Critics one step apart everywhere: ordinal credits the near miss, nominal does not.
    items = [
        {"a": {"clarity": x, "depth": x}, "b": {"clarity": y, "depth": y}}
        for x, y in [("1", "2"), ("2", "3"), ("4", "5"), ("5", "5"), ("1", "1"), ("3", "4")]
    ]
    data = batch(items, FIVE_POINT)
    ordinal = data.criteria_agreement()["clarity"].alpha
    nominal = data.criteria_agreement("nominal")["clarity"].alpha
    assert ordinal is not None and nominal is not None and ordinal > nominal


# Krippendorff (2011), section E: 4 observers x 12 units, values 1-5, with gaps.
NA = None
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NA, NA, NA],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NA, 3],
    [NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NA],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NA],
]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815)])
def test_the_published_example_as_one_criterion_gives_the_published_alpha(
    level: str, published: float
) -> None:
    items = [
        {
            critic: {"clarity": None if row[unit] is None else str(row[unit])}
            for critic, row in zip(CRITICS, KRIPPENDORFF_2011, strict=True)
        }
        for unit in range(12)
    ]
    alpha = batch(items, FIVE_POINT).criteria_agreement(level)["clarity"].alpha  # type: ignore[arg-type]
    assert alpha is not None and round(alpha, 3) == published


# -- the other figures --------------------------------------------------------------------------


def test_failed_answers_are_missing_not_votes() -> None:
    items = [
        {"a": {"correct": "PASS", "cites": "PASS"}, "b": {"correct": None, "cites": "PASS"}},
        {"a": {"correct": "FAIL", "cites": "FAIL"}, "b": {"correct": "FAIL", "cites": None}},
    ]
    matrix = CriteriaVotes.of(batch(items)).matrix("correct")
    assert matrix == [["PASS", "FAIL"], [None, "FAIL"]]


def test_fleiss_kappa_per_criterion_is_fleiss_kappa_of_its_matrix() -> None:
    votes = CriteriaVotes.of(batch(random_items(("PASS", "FAIL"), BINARY.ids, 40, seed=7)))
    agreements = criteria_agreement(votes)
    for cid in BINARY.ids:
        assert agreements[cid].fleiss_kappa == fleiss_kappa(votes.matrix(cid))


def test_counts_items_answered_pairable_and_disputed() -> None:
    items = [
        {"a": {"correct": "PASS"}, "b": {"correct": "PASS"}},  # unanimous
        {"a": {"correct": "PASS"}, "b": {"correct": "FAIL"}},  # disputed
        {"a": {"correct": "FAIL"}, "b": {"correct": None}},  # one answer
        {"a": {"correct": None}, "b": {"correct": None}},  # none
    ]
    row = criteria_agreement(batch(items))["correct"]
    assert (row.n_items, row.n_pairable, row.n_disputed) == (3, 2, 1)
    assert row.disputed_share == pytest.approx(1 / 3)


def test_disputed_count_matches_the_panels_disputed_flags() -> None:
    data = batch(random_items(("PASS", "FAIL"), BINARY.ids, 40, seed=9))
    agreements = data.criteria_agreement()
    for cid in BINARY.ids:
        flagged = sum(1 for r in data.verdicts if r.criteria and r.criteria[cid].disputed)
        assert agreements[cid].n_disputed == flagged


def test_pairwise_agreement_per_criterion_is_over_items_both_answered() -> None:
    items = [
        {"a": {"correct": "PASS"}, "b": {"correct": "PASS"}},
        {"a": {"correct": "PASS"}, "b": {"correct": "FAIL"}},
        {"a": {"correct": "FAIL"}, "b": {"correct": None}},
    ]
    row = criteria_agreement(batch(items))["correct"]
    assert row.pairwise[("a", "b")] == row.pairwise[("b", "a")] == 0.5


def test_perfect_agreement_without_variation_is_undefined_not_one() -> None:
    items = [{"a": {"correct": "PASS"}, "b": {"correct": "PASS"}}] * 3
    row = criteria_agreement(batch(items))["correct"]
    assert row.alpha is None and row.fleiss_kappa is None and row.disputed_share == 0.0


def test_results_without_criteria_give_no_rows() -> None:
    from cross_judge.batch import BatchResult
    from cross_judge.verdict import EnsembleVerdict, Verdict

    plain = EnsembleVerdict(
        query_id="q", verdicts=[Verdict(kind="PASS", critic_id="a")], consensus="PASS", voting="m"
    )
    assert BatchResult.from_results([plain]).criteria_agreement() == {}


def test_a_label_off_an_ordinal_scale_is_a_config_error_naming_the_criterion() -> None:
    with pytest.raises(ConfigError, match=r"criterion 'clarity'.*'7'"):
        criterion_agreement(
            [["1", "7"], ["2", "3"]],
            ["a", "b"],
            level="ordinal",
            values=("1", "2", "3", "4", "5"),
            criterion="clarity",
        )


def test_ordinal_without_values_is_refused() -> None:
    with pytest.raises(ConfigError, match="values"):
        criterion_agreement([["1"], ["2"]], ["a", "b"], level="ordinal")


def test_results_file_and_batch_give_the_same_agreement(tmp_path: Path) -> None:
    data = batch(random_items(FIVE_POINT.labels, FIVE_POINT.ids, 20, seed=3), FIVE_POINT)
    path = tmp_path / "out.jsonl"
    data.to_jsonl(path)
    from_file = criteria_agreement(path)
    in_memory = data.criteria_agreement()
    assert from_file == in_memory


def test_a_critic_first_seen_late_is_missing_before() -> None:
    votes = CriteriaVotes()
    votes.add(result("0", {"a": {"correct": "PASS", "cites": "PASS"}}))
    votes.add(result("1", {"a": {"correct": "PASS"}, "b": {"correct": "FAIL"}}))
    assert votes.critics == ["a", "b"]
    assert votes.matrix("correct") == [["PASS", "PASS"], [None, "FAIL"]]
    assert votes.matrix("cites") == [["PASS", None], [None, None]]
    assert len(votes) == 2
