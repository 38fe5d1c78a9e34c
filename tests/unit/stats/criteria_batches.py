"""Rubric results built by hand for the statistics per criterion: each critic's label on
each criterion, voted per criterion by :func:`cross_judge.rubric.tally.tally`, as a panel
does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cross_judge.batch import BatchResult
from cross_judge.errors import ErrorKind
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.rubric.tally import tally
from cross_judge.verdict import EnsembleVerdict, Verdict
from cross_judge.voting import get_voting_strategy

BINARY = Rubric(
    criteria=(
        Criterion(id="correct", requirement="The answer is correct.", weight=3, gate=True),
        Criterion(id="cites", requirement="The answer cites a source."),
    )
)

FIVE_POINT = Rubric(
    criteria=(
        Criterion(id="clarity", requirement="The answer is clear."),
        Criterion(id="depth", requirement="The answer goes deep."),
    ),
    # Listed out of order on purpose: ordinal alpha ranks labels by score, not by listing.
    scale={"3": 0.5, "1": 0.0, "5": 1.0, "2": 0.25, "4": 0.75},
)

Answers = Mapping[str, Mapping[str, str | None]]
"""critic -> criterion id -> label (``None``: that answer failed to parse)."""


def verdict(critic: str, labels: Mapping[str, str | None], rubric: Rubric) -> Verdict:
    """One rubric critic's verdict: a label per criterion (``None``: a parse failure)."""
    criteria = {
        cid: CriterionVerdict(kind=label, confidence=0.8, score=rubric.score_of(label))
        if label is not None
        else CriterionVerdict(kind="PARSE_FAIL", error="no JSON", error_kind=ErrorKind.PARSE)
        for cid, label in labels.items()
    }
    return Verdict(kind="PASS", confidence=0.8, critic_id=critic, criteria=criteria)


def result(query_id: str, answers: Answers, rubric: Rubric = BINARY) -> EnsembleVerdict:
    """The panel's result on one item from each critic's labels, voted by majority."""
    verdicts = [verdict(critic, labels, rubric) for critic, labels in answers.items()]
    judged = tally(verdicts, rubric, get_voting_strategy("majority"), {})
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=verdicts,
        consensus=judged.consensus,
        voting="majority",
        score=judged.total,
        fallback=judged.fallback,
        disagreement=judged.disagreement,
        agreement_pct=judged.agreement_pct,
        n_valid=len(verdicts),
        criteria=judged.criteria,
        rubric=rubric,
    )


def batch(items: Sequence[Answers], rubric: Rubric = BINARY) -> BatchResult:
    """A batch of items ``"0"``, ``"1"``, ... from each item's answers."""
    return BatchResult.from_results(
        result(str(i), answers, rubric) for i, answers in enumerate(items)
    )
