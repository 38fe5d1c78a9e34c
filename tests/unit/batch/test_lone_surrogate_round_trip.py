"""A lone surrogate (valid JSON such as ``"\\ud800"``, not Unicode) anywhere a user or a
vendor can put text must survive the results file and every view of it (issue 25, point 9):
high surrogates made pydantic's parser fail with "unexpected end of hex escape", which the
old fallback (keyed on the word "surrogate") did not catch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult, ResultsFile, dump_result, load_result
from cross_judge.report import render_report, write_report
from cross_judge.report._notebook import batch_html, ensemble_html
from cross_judge.report._summary import plain_text, printable, render_disputed, render_summary
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

LONE = ["\ud800", "\udbff", "\udc80", "\udfff"]
"""High (leading) and low (trailing) surrogates, each alone."""


def result_with(odd: str) -> EnsembleVerdict:
    """A disputed result holding ``odd`` in every text a user or a vendor supplies."""
    return EnsembleVerdict(
        query_id=f"x{odd}y",
        verdicts=[
            Verdict(kind=f"K{odd}", confidence=0.8, critic_id=f"c{odd}", reasoning=f"r{odd}"),
            Verdict(kind="KEEP", confidence=0.6, critic_id="b", raw_response=f"raw{odd}"),
        ],
        consensus=f"K{odd}",
        agreement_pct=0.5,
        disagreement=True,
        voting="majority",
        n_valid=2,
        meta={f"k{odd}": f"v{odd}"},
        item=ItemText(query=f"q{odd}", context={"c": f"t{odd}"}),
    )


@pytest.mark.parametrize("odd", LONE)
def test_a_result_line_with_a_lone_surrogate_reads_back_equal(odd: str) -> None:
    original = result_with(odd)
    line = dump_result(original)
    assert line.isascii()
    assert load_result(line) == original


def test_a_high_surrogate_id_from_an_items_file_reads_back() -> None:
    # The exact shape of the report: {"id": "x\ud800y", ...}.
    line = json.dumps({"query_id": "x\ud800y", "verdicts": [], "consensus": "KEEP", "voting": "m"})
    assert load_result(line).query_id == "x\ud800y"


def test_a_line_that_is_not_json_is_still_refused() -> None:
    with pytest.raises(ValueError, match="Invalid JSON"):
        load_result('{"query_id": "x\\ud800')


@pytest.mark.parametrize("odd", LONE)
def test_a_results_file_with_lone_surrogates_resumes_and_reads(tmp_path: Path, odd: str) -> None:
    path = tmp_path / "out.jsonl"
    with ResultsFile.open(path) as out:
        out.append(result_with(odd))
    with ResultsFile.open(path, resume=True) as again:
        assert again.done_ids == {f"x{odd}y"}
    with ResultsFile.open(path, retry_failed=True) as again:
        assert again.done_ids == {f"x{odd}y"}
    assert BatchResult.from_jsonl(path).verdicts == [result_with(odd)]


@pytest.mark.parametrize("odd", LONE)
def test_the_report_of_lone_surrogates_is_utf8_with_each_shown_as_its_escape(
    tmp_path: Path, odd: str
) -> None:
    path = tmp_path / "out.jsonl"
    BatchResult.from_results([result_with(odd)]).to_jsonl(path)
    page = render_report(path)
    page.encode("utf-8")  # no lone surrogate left
    escape = odd.encode("utf-8", "backslashreplace").decode()
    assert f'<span class="id">x{escape}y</span>' in page
    written = write_report(path, tmp_path / "report.html")
    assert written.read_text(encoding="utf-8").count(f"x{escape}y") >= 1


@pytest.mark.parametrize("odd", LONE)
def test_notebook_views_of_lone_surrogates_are_utf8(odd: str) -> None:
    batch = BatchResult.from_results([result_with(odd)])
    for html in (batch_html(batch), ensemble_html(batch.verdicts[0])):
        html.encode("utf-8")
        assert "x" + odd.encode("utf-8", "backslashreplace").decode() + "y" in html


@pytest.mark.parametrize("odd", LONE)
def test_the_terminal_summary_and_disputed_listing_of_lone_surrogates_render(odd: str) -> None:
    batch = BatchResult.from_results([result_with(odd)])
    escape = odd.encode("utf-8", "backslashreplace").decode()  # shown as printable() shows it
    assert f"c{escape}" in plain_text(render_summary(batch))
    assert f"x{escape}y" in plain_text(render_disputed(batch, 5))


def test_printable_escapes_lone_surrogates_only() -> None:
    assert printable("a\ud800b\udc80c") == "a\\ud800b\\udc80c"
    assert printable("café 😀") == "café 😀"
    assert printable("plain") == "plain"
