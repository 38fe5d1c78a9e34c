"""Rubric results as records and frames: ``BatchResult.to_records()`` gets one column per
critic and criterion and the consensus, score and dispute of each criterion; the long frame
(``columns_of`` / ``to_pandas`` / ``to_polars``) gets the same per-criterion columns on
each critic's row (no network). Non-rubric output is unchanged (``test_frames.py``)."""

from __future__ import annotations

import pytest

from cross_judge import Ensemble
from cross_judge.batch import BatchResult
from cross_judge.ensemble import revote
from cross_judge.errors import ErrorKind
from cross_judge.integrations._frames import COLUMNS, columns_of
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.verdict import EnsembleVerdict, Verdict

RUBRIC = Rubric(
    criteria=(
        Criterion(id="correct", requirement="The answer is correct.", weight=3, gate=True),
        Criterion(id="cites", requirement="The answer cites a source."),
    )
)
CRITICS = ["a", "b", "c"]


def answer(kind: str) -> CriterionVerdict:
    if kind == "PARSE_FAIL":
        return CriterionVerdict(kind=kind, error="parse_fail: no label", error_kind=ErrorKind.PARSE)
    return CriterionVerdict(kind=kind, confidence=0.8, score=1.0 if kind == "PASS" else 0.0)


def critic(name: str, correct: str, cites: str) -> Verdict:
    return Verdict(
        kind="PASS",
        confidence=0.8,
        critic_id=name,
        criteria={"correct": answer(correct), "cites": answer(cites)},
    )


def judged(query_id: str, *verdicts: Verdict) -> EnsembleVerdict:
    inferred = Ensemble(critics=[]).aggregate_verdicts(list(verdicts), query_id=query_id)
    return revote(inferred.model_copy(update={"rubric": RUBRIC}), "majority")


def rubric_batch() -> BatchResult:
    first = judged(
        "q1",
        critic("a", "PASS", "PASS"),
        critic("b", "PASS", "FAIL"),
        critic("c", "PASS", "PASS"),
    )
    failed = Verdict(kind="ERROR", critic_id="c", error="server: 503", error_kind=ErrorKind.SERVER)
    second = judged("q2", critic("a", "FAIL", "PASS"), critic("b", "FAIL", "PARSE_FAIL"), failed)
    return BatchResult(verdicts=[first, second], critics=CRITICS, voting="majority")


# -- to_records --------------------------------------------------------------------------------


def test_records_have_each_critics_label_on_each_criterion() -> None:
    first, second = rubric_batch().to_records()
    assert [first[f"{c}.criterion.cites"] for c in CRITICS] == ["PASS", "FAIL", "PASS"]
    assert [first[f"{c}.criterion.correct"] for c in CRITICS] == ["PASS", "PASS", "PASS"]
    assert second["b.criterion.cites"] == "PARSE_FAIL"
    assert second["c.criterion.cites"] == "ERROR"  # its whole call failed


def test_records_have_each_criterions_consensus_score_and_dispute() -> None:
    first, second = rubric_batch().to_records()
    assert first["criterion.cites"] == "PASS"
    assert first["criterion.cites.score"] == 1.0
    assert first["criterion.cites.disputed"] is True
    assert first["criterion.cites.agreement_pct"] == pytest.approx(2 / 3)
    assert first["criterion.correct.disputed"] is False
    assert second["criterion.correct"] == "FAIL"


def test_records_score_is_the_items_weighted_total() -> None:
    first, second = rubric_batch().to_records()
    assert first["score"] == 1.0
    assert second["score"] == 0.0  # the gate 'correct' failed


def test_records_of_a_batch_without_rubric_have_no_criterion_columns() -> None:
    panel = Ensemble(critics=[])
    plain = panel.aggregate_verdicts(
        [Verdict(kind="KEEP", critic_id="a", confidence=0.9)], query_id="q"
    )
    (record,) = BatchResult(verdicts=[plain], critics=["a"], voting="majority").to_records()
    assert not any("criterion" in key for key in record)


# -- the long frame ----------------------------------------------------------------------------


def test_long_frame_has_the_critics_label_on_each_criterion_on_its_row() -> None:
    columns = columns_of(rubric_batch())
    assert columns["critic"] == ["a", "b", "c", "a", "b", "c"]
    assert columns["criterion.cites.kind"] == [
        "PASS",
        "FAIL",
        "PASS",
        "PASS",
        "PARSE_FAIL",
        "ERROR",
    ]


def test_long_frame_has_the_items_consensus_score_and_dispute_per_criterion() -> None:
    columns = columns_of(rubric_batch())
    assert columns["criterion.cites"][:3] == ["PASS"] * 3
    assert columns["criterion.cites.disputed"][:3] == [True] * 3
    assert columns["criterion.correct.score"][3:] == [0.0] * 3


def test_long_frame_places_criterion_columns_after_the_fixed_ones() -> None:
    names = list(columns_of(rubric_batch()))
    assert names[: len(COLUMNS)] == list(COLUMNS)
    assert names[len(COLUMNS)] == "criterion.correct"


def test_pandas_frame_types_the_criterion_columns() -> None:
    pytest.importorskip("pandas")
    frame = rubric_batch().to_pandas()
    assert str(frame["criterion.cites.score"].dtype) == "float64"
    assert str(frame["criterion.cites.disputed"].dtype) == "boolean"
