"""BatchResult.reliability_alpha at a numeric level reads one kind of number per batch: every
verdict's score, or every label as a number, never a mix of the two scales."""

from __future__ import annotations

import random
from typing import Literal

import krippendorff
import numpy as np
import pytest

from cross_judge import ConfigError
from cross_judge.batch import BatchResult
from cross_judge.errors import ErrorKind
from cross_judge.verdict import EnsembleVerdict, Verdict

CRITICS = ["a", "b", "c"]


def panel(rows: list[list[tuple[str, float | None] | None]]) -> BatchResult:
    """One item per row; per critic ``(label, score)`` or ``None`` for a failed call."""
    results = []
    for i, row in enumerate(rows):
        verdicts = [
            Verdict(kind="ERROR", critic_id=c, error="HTTP 503", error_kind=ErrorKind.SERVER)
            if cell is None
            else Verdict(kind=cell[0], critic_id=c, score=cell[1])
            for c, cell in zip(CRITICS, row, strict=True)
        ]
        results.append(
            EnsembleVerdict(query_id=f"q{i}", verdicts=verdicts, consensus="x", voting="majority")
        )
    return BatchResult(verdicts=results, critics=CRITICS, voting="majority")


def mixed_panel() -> BatchResult:
    """Critics a and b score 1..5 labels on [0, 1]; c gives the same labels and no score."""
    rng = random.Random(0)
    rows: list[list[tuple[str, float | None] | None]] = []
    for _ in range(20):
        label = rng.randint(1, 5)
        score = (label - 1) / 4
        rows.append([(str(label), score), (str(label), score), (str(label), None)])
    return panel(rows)


def oracle(matrix: list[list[float | None]], level: Literal["interval", "ratio"]) -> float:
    data = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


@pytest.mark.parametrize("level", ["interval", "ratio", "ordinal"])
def test_a_panel_mixing_scored_and_unscored_verdicts_is_refused_with_the_fix(level: str) -> None:
    # Identical labels from every critic: reading a score on one scale and a label on
    # another made this panel disagree with itself (interval alpha -0.22, not 1).
    with pytest.raises(ConfigError, match="40 of 60 valid verdicts carry a score") as caught:
        mixed_panel().reliability_alpha(level)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "critic 'c'" in message
    assert "numbers='labels'" in message and "numbers='scores'" in message


def test_reading_every_label_as_a_number_gives_perfect_agreement_on_identical_labels() -> None:
    assert mixed_panel().reliability_alpha("interval", numbers="labels") == pytest.approx(1.0)


def test_reading_scores_leaves_the_unscored_verdicts_out_as_missing() -> None:
    batch = mixed_panel()
    alpha = batch.reliability_alpha("interval", numbers="scores")
    scores: list[list[float | None]] = [
        [next(v.score for v in r.verdicts if v.critic_id == c) for r in batch.verdicts]
        for c in ("a", "b")
    ]
    scores.append([None] * len(batch.verdicts))  # critic c gave no score
    assert alpha == pytest.approx(oracle(scores, "interval")) == pytest.approx(1.0)


def test_scores_are_read_when_every_valid_verdict_has_one() -> None:
    # Labels say one thing, scores another: the scores are what is compared.
    rows: list[list[tuple[str, float | None] | None]] = [
        [("1", 0.1), ("1", 0.9), None],
        [("5", 0.8), ("5", 0.2), ("5", 0.5)],
        [("3", 0.4), ("3", 0.45), ("3", 0.5)],
    ]
    scores: list[list[float | None]] = [[0.1, 0.8, 0.4], [0.9, 0.2, 0.45], [None, 0.5, 0.5]]
    alpha = panel(rows).reliability_alpha("interval")
    assert alpha == pytest.approx(oracle(scores, "interval"))


def test_labels_are_read_as_numbers_when_no_verdict_has_a_score() -> None:
    rows: list[list[tuple[str, float | None] | None]] = [
        [("1", None), ("2", None), ("1", None)],
        [("4", None), None, ("5", None)],
        [("3", None), ("3", None), ("2", None)],
    ]
    labels: list[list[float | None]] = [[1.0, 4.0, 3.0], [2.0, None, 3.0], [1.0, 5.0, 2.0]]
    assert panel(rows).reliability_alpha("ratio") == pytest.approx(oracle(labels, "ratio"))


def test_numbers_labels_refuses_a_label_that_is_not_a_number() -> None:
    rows: list[list[tuple[str, float | None] | None]] = [
        [("KEEP", 0.9), ("KEEP", 0.8), ("REJECT", 0.1)],
        [("KEEP", 0.7), ("REJECT", 0.2), ("REJECT", 0.3)],
    ]
    with pytest.raises(ConfigError, match="needs numbers"):
        panel(rows).reliability_alpha("interval", numbers="labels")


def test_numbers_must_name_a_reading() -> None:
    with pytest.raises(ConfigError, match="numbers must be 'auto', 'scores' or 'labels'"):
        mixed_panel().reliability_alpha("interval", numbers="both")  # type: ignore[arg-type]


@pytest.mark.parametrize(("level", "values"), [("nominal", None), ("ordinal", ["1", "2"])])
def test_scores_cannot_be_read_where_labels_are_compared(
    level: str, values: list[str] | None
) -> None:
    with pytest.raises(ConfigError, match="compares labels"):
        mixed_panel().reliability_alpha(level, values, numbers="scores")  # type: ignore[arg-type]
