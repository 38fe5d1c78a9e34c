"""What ``print()``, ``repr()`` and ``outcome`` say of a rubric panel's result: the
consensus with the weighted total against the pass mark, and a line per disputed or
undecided criterion (no network: results built from stored verdicts)."""

from __future__ import annotations

from cross_judge import Ensemble
from cross_judge.ensemble import revote
from cross_judge.errors import ErrorKind
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric
from cross_judge.verdict import EnsembleVerdict, Verdict

RUBRIC = Rubric(
    criteria=(
        Criterion(id="correct", requirement="The answer is correct.", weight=3, gate=True),
        Criterion(id="cites", requirement="The answer cites a source."),
        Criterion(id="insults", requirement="The answer insults the reader.", weight=-2),
    )
)


def answer(kind: str, **extra: object) -> CriterionVerdict:
    score = {"PASS": 1.0, "FAIL": 0.0}.get(kind)
    return CriterionVerdict(kind=kind, confidence=0.8, reasoning="r", score=score, **extra)


def critic(name: str, **labels: str | CriterionVerdict) -> Verdict:
    criteria = {k: v if isinstance(v, CriterionVerdict) else answer(v) for k, v in labels.items()}
    return Verdict(kind="PASS", confidence=0.8, critic_id=name, criteria=criteria)


def judged(*verdicts: Verdict, voting: str = "majority") -> EnsembleVerdict:
    """The vote of ``verdicts`` on :data:`RUBRIC` (as a rubric panel gives it)."""
    inferred = Ensemble(critics=[]).aggregate_verdicts(list(verdicts), query_id="q1")
    return revote(inferred.model_copy(update={"rubric": RUBRIC}), voting)


def test_headline_names_the_per_criterion_vote_the_total_against_the_threshold() -> None:
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b", correct="PASS", cites="FAIL", insults="FAIL"),
        critic("c", correct="PASS", cites="PASS", insults="FAIL"),
    )
    assert result.outcome.startswith(
        "PASS (majority per criterion, total 1.00 >= 0.50; disputed: cites)"
    )


def test_a_disputed_criterion_gets_a_line_with_its_votes_and_dissenters() -> None:
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b", correct="PASS", cites="FAIL", insults="FAIL"),
        critic("c", correct="PASS", cites="PASS", insults="FAIL"),
    )
    lines = str(result).splitlines()
    assert lines[0] == "q1: PASS (majority per criterion, total 1.00 >= 0.50; disputed: cites)"
    assert "  cites: PASS 2 of 3 (against: b voted FAIL)" in lines
    assert not any(line.strip().startswith(("correct", "insults")) for line in lines)


def test_a_total_below_the_threshold_is_shown_as_such() -> None:
    result = judged(
        critic("a", correct="PASS", cites="FAIL", insults="PASS"),
        critic("b", correct="PASS", cites="FAIL", insults="PASS"),
    )
    assert result.consensus == "FAIL"
    assert result.outcome.startswith("FAIL (majority per criterion, total 0.25 < 0.50)")


def test_a_failed_gate_is_named_in_the_headline() -> None:
    result = judged(
        critic("a", correct="FAIL", cites="PASS", insults="FAIL"),
        critic("b", correct="FAIL", cites="PASS", insults="FAIL"),
    )
    assert result.outcome.startswith(
        "FAIL (majority per criterion, total 0.00 < 0.50; gate not met: correct)"
    )


def test_an_undecided_criterion_makes_no_consensus_and_says_its_votes() -> None:
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b", correct="PASS", cites="FAIL", insults="FAIL"),
        voting="unanimous",
    )
    assert result.fallback
    lines = str(result).splitlines()
    assert lines[0].startswith("q1: no consensus (UNCLEAR is the fallback; undecided: cites")
    assert any(line.startswith("  cites: undecided (votes: PASS 1, FAIL 1)") for line in lines), (
        lines
    )


def test_an_answer_that_failed_on_one_criterion_is_listed_with_its_reason() -> None:
    broken = answer(
        "PARSE_FAIL", error="parse_fail: no label for cites", error_kind=ErrorKind.PARSE
    )
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b", correct="PASS", cites=broken, insults="FAIL"),
        critic("c", correct="PASS", cites="PASS", insults="FAIL"),
    )
    assert "failed on cites: b: unreadable answer: no label for cites" in result.outcome


def test_a_failed_call_is_still_listed_for_a_rubric_panel() -> None:
    failed = Verdict(
        kind="ERROR", critic_id="c", error="timeout: read timed out", error_kind=ErrorKind.TIMEOUT
    )
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b", correct="PASS", cites="PASS", insults="FAIL"),
        failed,
    )
    assert result.outcome.startswith("PASS (majority per criterion, total 1.00 >= 0.50)")
    assert "failed: c: timed out: read timed out" in result.outcome


def test_criterion_texts_from_critics_are_escaped_and_clipped() -> None:
    hostile = "\x1b[31m" + "X" * 500
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b\x1b]0;", correct="PASS", cites=hostile, insults="FAIL"),
        critic("c", correct="PASS", cites="PASS", insults="FAIL"),
    )
    text = str(result)
    assert "\x1b" not in text
    assert "X" * 100 not in text


def test_repr_ends_with_the_rubric_outcome() -> None:
    result = judged(
        critic("a", correct="PASS", cites="PASS", insults="FAIL"),
        critic("b", correct="PASS", cites="FAIL", insults="FAIL"),
    )
    assert "disputed: cites" in repr(result)
