"""``cross-judge rank``: the candidates file in both forms, the ranking it writes and prints,
resuming without asking a pair again, the leaderboard page, and its errors (exit 2 with
the fix). Every run judges against the panel file's own simulator (latent strengths)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cross_judge.ranking import Ranking

from .conftest import run

STRENGTHS = {"best answer": 4.0, "good answer": 2.0, "poor answer": -2.0, "worst answer": -4.0}
IDS = {"best answer": "m1", "good answer": "m2", "poor answer": "m3", "worst answer": "m4"}


def panel_file(folder: Path, strengths: dict[str, float] = STRENGTHS) -> Path:
    """Two exact simulated critics on the pairwise prompt, judging by ``strengths``."""
    lines = "\n".join(f"    {json.dumps(t)}: {s}" for t, s in strengths.items())
    text = textwrap.dedent(
        """\
        critics:
          - name: one
            vendor: simulated
            model: sim-one
            prompt: pairwise@2
            persona: {accuracy: 1.0, seed: 1}
          - name: two
            vendor: simulated
            model: sim-two
            prompt: pairwise@2
            persona: {accuracy: 1.0, seed: 2}
        simulator:
          strengths:
        """
    )
    path = folder / "rank.yaml"
    path.write_text(text + lines + "\n", encoding="utf-8")
    return path


def jsonl(path: Path, *rows: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def candidates(folder: Path, *texts: str, query: bool = True) -> Path:
    rows: list[object] = [{"query": "Which is better?"}] if query else []
    rows += [{"id": IDS[t], "text": t} for t in texts]
    return jsonl(folder / "candidates.jsonl", *rows)


def test_ranks_one_question_candidates_and_writes_the_ranking(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "ranking.json"
    code, _, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out)
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert ranking.order == ["m1", "m2", "m3", "m4"]
    assert ranking.comparisons == 6 and len(ranking.results) == 6
    assert ranking.calls == 6 * 2 * 2  # pairs x critics x both orders


def test_prints_the_leaderboard_and_each_critics_spearman(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "ranking.json"
    code, printed, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out)
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    lines = [line.split() for line in printed.splitlines()]
    board = [words for words in lines if words and words[0] in {"1", "2", "3", "4"}]
    for words, cid in zip(board, ranking.order, strict=True):
        low, high = ranking.ci[cid]
        assert words[1] == cid and words[2] == f"{ranking.ratings[cid]:.0f}"
        assert words[3:6] == [f"{low:.0f}", "to", f"{high:.0f}"]
    assert board[0][6:] == ["3", "0", "0"]  # won, lost, tied
    for critic in ("one", "two"):
        rho = ranking.per_critic_spearman[critic]
        assert rho is not None and f"  {critic}: {rho:.3f} over 4" in printed
    assert "ranking 4 candidates on 1 question" in err


def test_the_arena_form_judges_each_pair_on_every_question_both_answered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    strengths = {f"{m} on {q}": s for m, s in (("hi", 3.0), ("lo", -3.0)) for q in "xyz"}
    file = jsonl(
        tmp_path / "c.jsonl",
        {"id": "hi", "answers": {q: f"hi on {q}" for q in "xyz"}},
        {"id": "lo", "answers": {q: f"lo on {q}" for q in "xy"}},
    )
    out = tmp_path / "r.json"
    panel = panel_file(tmp_path, strengths)
    code, _, err = run(capsys, "rank", file, "--panel", panel, "--out", out)
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert ranking.order == ["hi", "lo"] and ranking.comparisons == 2
    assert "on 3 questions" in err


def test_resume_asks_no_pair_already_judged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    panel = panel_file(tmp_path)
    out = tmp_path / "ranking.json"
    first = candidates(tmp_path, "best answer", "good answer", "poor answer")
    assert run(capsys, "rank", first, "--panel", panel, "--out", out)[0] == 0
    more = candidates(tmp_path, *STRENGTHS)  # one candidate more: 3 new pairs
    code, _, err = run(capsys, "rank", more, "--panel", panel, "--out", out, "--resume")
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert ranking.calls == 3 * 2 * 2 and len(ranking.results) == 6
    assert ranking.order == ["m1", "m2", "m3", "m4"]
    assert "resuming" in err and "3 judged pairs kept" in err
    again = run(capsys, "rank", more, "--panel", panel, "--out", out, "--resume")
    assert again[0] == 0 and "0 calls made by this run" in again[1]


def test_adaptive_pairs_stay_within_the_budget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "ranking.json"
    args = ("--pairs", "adaptive", "--budget", "4", "--seed", "3")
    code, _, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out, *args)
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert len(ranking.results) <= 4


def test_random_pairs_judge_their_budget_and_say_how_it_was_fitted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "ranking.json"
    args = ("--pairs", "random", "--budget", "4", "--seed", "3", "--fit", "votes")
    code, printed, err = run(
        capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out, *args
    )
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert len(ranking.results) == 4 and ranking.fit == "votes"
    assert "--pairs random: 4 uniformly random pair items" in err
    assert "fitted vote by vote" in printed and "lean to the first shown" in printed


def test_fit_consensus_is_recorded_and_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "ranking.json"
    code, printed, err = run(
        capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out, "--fit", "consensus"
    )
    assert code == 0, err
    assert Ranking.model_validate_json(out.read_text(encoding="utf-8")).fit == "consensus"
    assert "fitted on one consensus per pair" in printed


def test_html_writes_the_leaderboard_page_with_ids_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    evil = "<script>alert(1)</script>"
    file = jsonl(
        tmp_path / "c.jsonl",
        {"query": "Which is better?"},
        {"id": evil, "text": "best answer"},
        {"id": "plain", "text": "worst answer"},
    )
    page = tmp_path / "ranking.html"
    out = tmp_path / "r.json"
    panel = panel_file(tmp_path)
    code, printed, err = run(capsys, "rank", file, "--panel", panel, "--out", out, "--html", page)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "&lt;script&gt;" in text
    assert "Win matrix" in text and f"leaderboard page: {page}" in printed


def test_report_of_a_ranking_file_writes_its_leaderboard_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    file = candidates(tmp_path, "best answer", "worst answer")
    assert run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out)[0] == 0
    page = tmp_path / "leaderboard.html"
    code, printed, err = run(capsys, "report", out, "--out", page)
    assert code == 0, err
    assert "Win matrix" in page.read_text(encoding="utf-8")
    assert f"report: {page} (the leaderboard" in printed


def test_query_on_the_command_line_names_the_question(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, "best answer", "worst answer", query=False)
    out = tmp_path / "r.json"
    args = ("--query", "Which is better?")
    code, _, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out, *args)
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert ranking.results[0].item is not None
    assert ranking.results[0].item.query == "Which is better?"


@pytest.mark.parametrize(
    ("rows", "extra", "message"),
    [
        (
            [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
            (),
            '--query TEXT, or a line {"query": TEXT}',
        ),
        (
            [{"query": "q"}, {"id": "a", "text": "x"}, {"id": "b", "answers": {"q": "y"}}],
            (),
            "a file holds one form",
        ),
        ([{"query": "q"}, {"id": "a", "text": "x"}, {"id": "a", "text": "y"}], (), "given twice"),
        ([{"query": "q"}, {"id": "a", "text": "x"}, {"id": "b"}], (), "exactly one of them"),
        (
            [{"id": "a", "answers": {"q": "x"}}, {"id": "b", "answers": {"q": "y"}}],
            ("--query", "q"),
            "remove --query",
        ),
        ([{"query": "q"}, {"id": "a", "text": "x"}], (), "at least 2 candidates"),
        (
            [{"query": "q"}, {"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
            ("--budget", "3"),
            "--budget needs --pairs adaptive or random",
        ),
        (
            [{"query": "q"}, {"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
            ("--pairs", "random"),
            "--pairs random needs --budget N",
        ),
    ],
)
def test_a_bad_candidates_file_or_option_exits_2_with_the_fix(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    rows: list[object],
    extra: tuple[str, ...],
    message: str,
) -> None:
    file = jsonl(tmp_path / "c.jsonl", *rows)
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out, *extra)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_an_existing_ranking_is_not_overwritten_without_resume(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    out.write_text("{}", encoding="utf-8")
    file = candidates(tmp_path, "best answer", "worst answer")
    code, _, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out)
    assert code == 2 and "add --resume" in err
    assert out.read_text(encoding="utf-8") == "{}"


def test_resume_from_a_file_that_is_not_a_ranking_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    out.write_text('{"not": "a ranking"}', encoding="utf-8")
    file = candidates(tmp_path, "best answer", "worst answer")
    panel = panel_file(tmp_path)
    code, _, err = run(capsys, "rank", file, "--panel", panel, "--out", out, "--resume")
    assert code == 2 and "is not a ranking written by cross-judge rank" in err


def test_a_panel_that_does_not_judge_pairs_exits_2_before_any_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    panel = tmp_path / "p.yaml"
    panel.write_text(
        "critics:\n  - name: a\n    vendor: simulated\n    prompt: pass-fail\n", encoding="utf-8"
    )
    file = candidates(tmp_path, "best answer", "worst answer")
    code, _, err = run(capsys, "rank", file, "--panel", panel, "--out", tmp_path / "r.json")
    assert code == 2 and "does not judge pairs" in err


def test_pairs_all_says_its_pair_items_and_calls_before_the_first_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out)
    assert code == 0, err
    assert "--pairs all: 6 pair items, up to 24 calls (4 a pair item: 2 critics x 2 orders)" in err


def test_pairs_all_above_max_calls_exits_2_naming_the_count_and_the_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "r.json"
    panel = panel_file(tmp_path)
    code, _, err = run(capsys, "rank", file, "--panel", panel, "--out", out, "--max-calls", "23")
    assert code == 2 and "Traceback" not in err
    assert "is 6 pair items: up to 24 calls" in err and "more than --max-calls 23" in err
    assert "--pairs adaptive --budget N" in err and "pass --max-calls 24" in err
    assert not out.exists()


def test_max_calls_with_adaptive_pairs_exits_2_pointing_to_the_budget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    args = ("--pairs", "adaptive", "--max-calls", "5")
    panel = panel_file(tmp_path)
    code, _, err = run(capsys, "rank", file, "--panel", panel, "--out", tmp_path / "r.json", *args)
    assert code == 2 and "--budget bounds the calls" in err


def test_resume_counts_the_calls_of_every_run_on_screen_in_the_file_and_on_the_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, *STRENGTHS)
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    panel = panel_file(tmp_path)
    assert run(capsys, "rank", file, "--panel", panel, "--out", out)[0] == 0
    code, printed, err = run(
        capsys, "rank", file, "--panel", panel, "--out", out, "--resume", "--html", page
    )
    assert code == 0, err
    assert "0 calls made by this run, 24 in all its runs" in printed
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert (ranking.calls, ranking.calls_total) == (0, 24)
    assert "24 calls (0 by its last run" in page.read_text(encoding="utf-8")


def test_the_page_of_a_simulated_ranking_says_so_and_shows_the_question_and_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = candidates(tmp_path, "best answer", "worst answer")
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    panel = panel_file(tmp_path)
    code, printed, err = run(capsys, "rank", file, "--panel", panel, "--out", out, "--html", page)
    assert code == 0, err
    ranking = Ranking.model_validate_json(out.read_text(encoding="utf-8"))
    assert ranking.simulated_critics == ["one", "two"]
    assert "note: one, two are simulated" in printed
    for text in (page.read_text(encoding="utf-8"), run_report(capsys, tmp_path, out)):
        assert "Simulated judges." in text and "one, two are simulated" in text
        assert "Which is better?" in text
        assert "best answer" in text and "worst answer" in text


def run_report(capsys: pytest.CaptureFixture[str], folder: Path, ranking: Path) -> str:
    """The leaderboard page ``cross-judge report RANKING.json`` writes, as text."""
    page = folder / "report.html"
    code, _, err = run(capsys, "report", ranking, "--out", page)
    assert code == 0, err
    return page.read_text(encoding="utf-8")


def test_the_printed_leaderboard_stops_at_its_rows_and_says_how_many_more(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cross_judge.cli import _rank as rank

    monkeypatch.setattr(rank, "LEADERBOARD_ROWS", 2)
    file = candidates(tmp_path, *STRENGTHS)
    out = tmp_path / "r.json"
    code, printed, err = run(capsys, "rank", file, "--panel", panel_file(tmp_path), "--out", out)
    assert code == 0, err
    board = [line.split() for line in printed.splitlines()]
    assert [words[1] for words in board if words and words[0] in {"1", "2", "3", "4"}] == [
        "m1",
        "m2",
    ]
    assert f"... and 2 more candidates (every one is in {out})" in printed
