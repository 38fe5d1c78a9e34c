"""A ranking as HTML: the notebook view (``Ranking._repr_html_``) and the self-contained
page (``Ranking.to_html``): the leaderboard with interval bars, each critic alone and the
win matrix, every id escaped, nothing fetched."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cross_judge import EnsembleVerdict, Verdict
from cross_judge.errors import ConfigError
from cross_judge.ranking import Ranking, fit_ranking
from cross_judge.report._leaderboard import (
    MATRIX_LIMIT,
    leaderboard_html,
    render_leaderboard,
    write_leaderboard,
)


def pair(a: str, b: str, kind: str, critic: str = "c1", n: int = 0) -> EnsembleVerdict:
    """One judged pair: ``a`` shown first, the panel's consensus ``kind``."""
    return EnsembleVerdict(
        query_id=f"{a}|{b}|{kind}|{n}",
        verdicts=[Verdict(kind=kind, critic_id=critic)],
        consensus=kind,
        voting="majority",
        meta={"rank": {"a": a, "b": b, "query": None}},
    )


def three() -> Ranking:
    """x beats y twice, y beats z twice, x and z tie once and z beats x once."""
    results = [
        pair("x", "y", "A"),
        pair("x", "y", "A", n=1),
        pair("y", "z", "A"),
        pair("y", "z", "A", n=1),
        pair("x", "z", "TIE"),
        pair("z", "x", "A"),
    ]
    return fit_ranking(["x", "y", "z"], results)


def rows(html: str) -> list[str]:
    """The leaderboard's rows (the first table's body), as text."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return body.split("</tr>")[:-1]


def test_the_leaderboard_lists_candidates_best_first_with_rating_and_interval() -> None:
    ranking = three()
    shown = rows(leaderboard_html(ranking))
    assert [re.search(r"<code>(\w)</code>", r).group(1) for r in shown] == ranking.order
    best = ranking.order[0]
    low, high = ranking.ci[best]
    assert f"{ranking.ratings[best]:.0f}" in shown[0]
    assert f"{low:.0f} to {high:.0f}" in shown[0]


def test_each_row_counts_the_decided_pairs_won_lost_and_tied() -> None:
    ranking = three()
    record = {r["id"]: r for r in ranking.to_records()}
    row_x = next(r for r in rows(leaderboard_html(ranking)) if "<code>x</code>" in r)
    cells = re.findall(r">(\d+)</td>", row_x)
    assert cells[-3:] == [str(record["x"][k]) for k in ("wins", "losses", "ties")]
    assert cells[-3:] == ["2", "1", "1"]


def test_interval_bars_share_one_axis_and_the_best_bar_sits_furthest_right() -> None:
    shown = rows(leaderboard_html(three()))
    lefts = [float(re.search(r"left:([\d.]+)%;width", r).group(1)) for r in shown]
    assert lefts == sorted(lefts, reverse=True)
    assert all(0.0 <= x <= 100.0 for x in lefts)


def test_an_unbounded_interval_is_shown_as_n_a_and_its_bar_runs_to_the_edge() -> None:
    ranking = three().model_copy(update={"ci": {**three().ci, "x": (900.0, float("inf"))}})
    row_x = next(r for r in rows(leaderboard_html(ranking)) if "<code>x</code>" in r)
    assert "900 to n/a" in row_x
    left, width = (float(v) for v in re.search(r"left:([\d.]+)%;width:([\d.]+)%", row_x).groups())
    assert left + width == pytest.approx(100.0, abs=0.01)


def test_a_vote_fit_shows_each_critics_lean_to_the_first_shown() -> None:
    ranking = three().model_copy(update={"fit": "votes", "votes": 6, "first_shown": {"c1": 0.5}})
    html = leaderboard_html(ranking)
    assert "fitted vote by vote (6 votes" in html
    assert "lean to the first shown (log-odds)" in html and "+0.50" in html


def test_a_consensus_fit_says_so_and_has_no_lean_column() -> None:
    html = leaderboard_html(three().refit(fit="consensus"))
    assert "fitted on one consensus per pair" in html
    assert "lean to the first shown" not in html


def test_each_critic_alone_is_shown_with_its_spearman_correlation() -> None:
    results = [*three().results, pair("x", "y", "B", critic="contrarian")]
    ranking = fit_ranking(["x", "y", "z"], results)
    html = leaderboard_html(ranking)
    assert "Each critic alone" in html
    for critic, rho in ranking.per_critic_spearman.items():
        assert critic in html
        assert ("n/a" if rho is None else f"{rho:.3f}") in html


def test_the_win_matrix_shows_wins_of_the_row_and_leaves_never_compared_pairs_blank() -> None:
    ranking = fit_ranking(
        ["p", "q", "r"], [pair("p", "q", "A"), pair("p", "q", "A", n=1), pair("q", "r", "A")]
    )
    matrix = leaderboard_html(ranking).split("Win matrix", 1)[1]
    row_p = matrix.split('scope="row"><code>p</code></th>', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row_p)
    # columns in rank order p, q, r: itself, two wins over q, never compared with r
    assert cells == ["&middot;", "2", ""]


def test_the_win_matrix_is_capped_at_its_limit_and_says_so() -> None:
    ids = [f"c{k:02d}" for k in range(MATRIX_LIMIT + 3)]
    results = [pair(ids[k], ids[k + 1], "A", n=k) for k in range(len(ids) - 1)]
    html = leaderboard_html(fit_ranking(ids, results))
    matrix = html.split("Win matrix", 1)[1]
    assert matrix.count('scope="row"') == MATRIX_LIMIT
    assert f"The first {MATRIX_LIMIT} of {len(ids)} candidates" in matrix


def test_ids_and_critic_names_are_escaped() -> None:
    evil = "<script>alert(1)</script>"
    ranking = fit_ranking(
        [evil, "ok"],
        [pair(evil, "ok", "A", critic='<img src=x onerror="1">'), pair("ok", evil, "B")],
    )
    for html in (leaderboard_html(ranking), render_leaderboard(ranking)):
        assert "<script" not in html
        assert "<img" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_lone_surrogate_in_an_id_is_written_as_its_escape() -> None:
    ranking = fit_ranking(["a\ud800", "b"], [pair("a\ud800", "b", "A")])
    page = render_leaderboard(ranking)
    page.encode("utf-8")  # would raise with the surrogate itself
    assert "a\\ud800" in page


def test_the_page_fetches_nothing_and_runs_no_script() -> None:
    page = render_leaderboard(three(), title="My <models>")
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page
    assert "<script" not in page
    assert not re.search(r"(src|href)=\"?(https?:)?//", page)
    assert "<title>My &lt;models&gt;</title>" in page


def test_the_notebook_view_is_the_leaderboard_fragment() -> None:
    ranking = three()
    assert ranking._repr_html_() == leaderboard_html(ranking)
    assert "<html" not in ranking._repr_html_()


def test_to_html_writes_the_page_to_a_path_and_returns_it(tmp_path: Path) -> None:
    ranking = three()
    path = tmp_path / "ranking.html"
    page = ranking.to_html(path, title="t")
    assert path.read_text(encoding="utf-8") == page == render_leaderboard(ranking, title="t")


def test_writing_into_a_missing_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        write_leaderboard(three(), tmp_path / "nope" / "ranking.html")


def test_a_ranking_read_back_from_json_renders_the_same() -> None:
    ranking = three()
    again = Ranking.model_validate_json(ranking.model_dump_json())
    assert leaderboard_html(again) == leaderboard_html(ranking)
