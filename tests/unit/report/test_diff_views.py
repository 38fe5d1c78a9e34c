"""The views of a RunDiff: the text (print), the Markdown of a pull-request comment, the
offline HTML page and the notebook fragment; hostile texts escaped in each."""

from __future__ import annotations

import re

import pytest

from cross_judge.report import RunDiff, compare_runs

from .compare_runs import batch, labels_run, result

PASS_FAIL = ["PASS"] * 150 + ["FAIL"] * 50
DROPPED = ["FAIL"] * 30 + ["PASS"] * 120 + ["FAIL"] * 50
HOSTILE = "<img src=x onerror=alert(1)> | `code` **bold** [link](http://x)\nnext line"


def regression() -> RunDiff:
    return compare_runs(labels_run(PASS_FAIL), labels_run(DROPPED))


def hostile_diff() -> RunDiff:
    base = batch([result("<script>id|", "PASS", text=HOSTILE), result("ok", "PASS")])
    cand = batch([result("<script>id|", "FAIL", text=HOSTILE), result("ok", "PASS")])
    return compare_runs(base, cand)


@pytest.mark.parametrize(
    ("base", "cand", "word"),
    [
        (PASS_FAIL, DROPPED, "REGRESSION"),
        (DROPPED, PASS_FAIL, "IMPROVEMENT"),
        (PASS_FAIL, PASS_FAIL, "NO SIGNIFICANT CHANGE"),
    ],
)
def test_the_first_line_says_the_outcome(base: list[str], cand: list[str], word: str) -> None:
    text = str(compare_runs(labels_run(base), labels_run(cand)))
    assert text.splitlines()[0].startswith(f"{word}: PASS share")


def test_the_text_shows_the_test_the_interval_and_the_flips() -> None:
    text = regression().to_text()
    assert "exact McNemar p = " in text.splitlines()[0]
    assert "95% CI -" in text.splitlines()[0]
    assert "30 items worse:" in text
    assert "... 20 more" in text
    assert "Holm p" in text
    assert "\x1b[" not in text  # no colour codes


def test_the_text_says_when_the_panel_changed_and_was_allowed() -> None:
    base = batch([result("i0", "PASS")], manifest=False)
    cand = batch([result("i0", "PASS", voting="unanimous")], manifest=False)
    diff = compare_runs(base, cand, allow_missing_manifest=True, allow_panel_change=True)
    assert "the judge CHANGED between the runs" in str(diff)
    assert "voting: majority -&gt; unanimous" in diff.to_markdown()


def test_the_markdown_is_a_comment_with_tables_and_details() -> None:
    markdown = regression().to_markdown()
    assert markdown.startswith("### cross-judge compare: REGRESSION")
    assert "|  | n | baseline | candidate | difference | CI | p | Holm p |" in markdown
    assert "<details><summary>30 items worse</summary>" in markdown


def test_hostile_texts_can_neither_break_a_markdown_table_nor_inject_html() -> None:
    markdown = hostile_diff().to_markdown()
    assert "<img" not in markdown and "<script" not in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown
    row = next(line for line in markdown.splitlines() if "script" in line and line.startswith("|"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 6  # five cells, whatever the texts hold
    assert "\\`code\\`" in markdown


def test_hostile_texts_are_escaped_on_the_page_and_in_the_notebook() -> None:
    diff = hostile_diff()
    for page in (diff.to_html(), diff._repr_html_()):
        assert "<img src=x" not in page and "<script>id" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_page_is_offline_and_has_no_script() -> None:
    page = regression().to_html()
    assert "default-src 'none'" in page
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?https?:""", page)


def test_the_page_shows_each_flip_side_by_side_with_both_runs() -> None:
    page = regression().to_html()
    assert page.count('<div class="flip worse">') == 30
    assert page.count('<div class="side">') == 60
    assert 'id="show-worse"' in page and 'id="show-better"' in page


def test_the_notebook_view_shows_at_most_twenty_flips_each_way() -> None:
    fragment = regression()._repr_html_()
    assert fragment.count('<div class="flip worse">') == 20
    assert "... 10 more flipped items" in fragment
    assert "<html" not in fragment and "body{" not in fragment


def test_a_lone_surrogate_is_shown_as_its_escape_in_every_view() -> None:
    base = batch([result("\ud800", "PASS")])
    cand = batch([result("\ud800", "FAIL")])
    diff = compare_runs(base, cand)
    for view in (diff.to_text(), diff.to_markdown(), diff.to_html()):
        assert "\\ud800" in view
        view.encode("utf-8")  # writable as UTF-8
