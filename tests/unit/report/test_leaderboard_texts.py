"""The leaderboard page shows what was ranked and how: the question(s) and each
candidate's answer (escaped; long ones shortened, the whole behind ``<details>``), that
the judges were simulated when they were, and the calls of every run of a resumed
ranking."""

from __future__ import annotations

from cross_judge import EnsembleVerdict, Verdict
from cross_judge.ranking import Ranking, fit_ranking
from cross_judge.report._leaderboard import TEXT_CLIP, leaderboard_html, render_leaderboard
from cross_judge.verdict import ItemText

QUESTION = "Why is the sky blue?"


def pair(a: str, b: str, kind: str, *, attempts: int = 2, n: int = 0) -> EnsembleVerdict:
    """One judged pair (``a`` shown first), its item's text stored as the batch stores it."""
    return EnsembleVerdict(
        query_id=f"{a}|{b}|{n}",
        verdicts=[Verdict(kind=kind, critic_id="judge", attempts=attempts)],
        consensus=kind,
        voting="majority",
        meta={"rank": {"a": a, "b": b, "query": None}},
        item=ItemText(
            query=QUESTION, context={"response_a": f"text of {a}", "response_b": f"text of {b}"}
        ),
    )


def ranked(**recorded: object) -> Ranking:
    results = [pair("x", "y", "A"), pair("y", "z", "A"), pair("x", "z", "A"), pair("z", "x", "B")]
    return fit_ranking(["x", "y", "z"], results).model_copy(update=recorded)


def test_the_page_shows_the_question_and_each_candidates_answer() -> None:
    page = render_leaderboard(
        ranked(queries=[QUESTION], answers={c: [f"answer {c}"] for c in "xyz"})
    )
    assert "<strong>Question.</strong> Why is the sky blue?" in page
    for cid in "xyz":
        assert f"answer {cid}" in page


def test_a_candidates_text_is_escaped() -> None:
    hostile = '<script>alert("x")</script>'
    page = render_leaderboard(
        ranked(queries=[f"<b>{QUESTION}</b>"], answers={"x": [hostile], "y": ["y"], "z": ["z"]})
    )
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
    assert "&lt;b&gt;Why is the sky blue?&lt;/b&gt;" in page


def test_a_long_answer_is_shortened_with_the_whole_behind_details() -> None:
    long = "word " * 200 + "THE END"
    page = leaderboard_html(ranked(queries=[QUESTION], answers={"x": [long], "y": ["y"]}))
    summary = page.split("<details><summary>", 1)[1].split("</summary>", 1)[0]
    assert len(summary) <= TEXT_CLIP and summary.endswith("\u2026")
    assert "THE END" in page.split("</summary>", 1)[1]


def test_many_questions_are_listed_and_each_candidates_answers_numbered() -> None:
    page = leaderboard_html(
        ranked(
            queries=["first question", "second question"],
            answers={"x": ["x one", "x two"], "y": ["y one", None], "z": [None, "z two"]},
        )
    )
    assert "2 questions" in page and "first question" in page and "second question" in page
    assert "<strong>Q2.</strong> x two" in page
    assert "1 of 2 questions answered" in page  # y and z answered one each


def test_a_ranking_that_recorded_no_texts_shows_those_its_judged_pairs_hold() -> None:
    page = leaderboard_html(ranked())  # as a ranking file of an earlier version
    assert "<strong>Question.</strong> Why is the sky blue?" in page
    for cid in "xyz":
        assert f"text of {cid}" in page


def test_the_page_says_when_the_judges_were_simulated() -> None:
    page = render_leaderboard(ranked(simulated_critics=["judge"]))
    assert "Simulated judges." in page
    assert "judge is simulated: their answers come from the simulated vendor" in page
    assert "judge (simulated)" in page.replace('<span style="opacity:.7">', "").replace(
        "</span>", ""
    )


def test_a_ranking_of_real_judges_has_no_simulated_note() -> None:
    assert "simulated" not in render_leaderboard(ranked()).lower()


def test_after_a_resume_the_page_counts_the_calls_of_every_run() -> None:
    page = leaderboard_html(ranked(calls=0, calls_total=8))
    assert "8 calls (0 by its last run" in page
    assert "; 0 calls;" not in page
