"""Structured items in the views (read as text, no browser): the report and the labelling
page show a conversation as turns and a trajectory as collapsible steps, failed tool calls
marked by class and text, the reference beside the answer, images as placeholders, each
step's or turn's result next to it and "critics split on step N"; the notebook views show
the same compactly. Everything escaped; plain items look as before."""

from __future__ import annotations

import re

from cross_judge.batch import BatchResult, Item
from cross_judge.batch._items import item_text
from cross_judge.content import ToolCall
from cross_judge.report import render_label_page, render_report
from cross_judge.report._structure import structure_html, structure_summary
from cross_judge.report._units import unit_lines, unit_of
from cross_judge.stats.label_queue import label_queue

from .structured import HOSTILE, agent_result, chat_result, structured_batch, unit_result


def step_li(page: str, number: int) -> str:
    """The HTML of step ``number``'s list item (the first on the page)."""
    found = re.search(rf'<li data-step="{number}">(.*?)</details></li>', page, re.S)
    assert found is not None, f"no step {number}"
    return found[1]


def test_unit_ids_name_a_turn_or_a_step_numbered_from_one() -> None:
    assert unit_of("step-7") == ("step", 7, None)
    assert unit_of("turn-2.consistent") == ("turn", 2, "consistent")
    assert unit_of("step-0") is None
    assert unit_of("step-07") is None
    assert unit_of("correct") is None


def test_unit_lines_are_turns_then_steps_in_number_order() -> None:
    lines = unit_lines(chat_result())
    assert [(line.unit, line.number, line.criterion) for line in lines] == [
        ("turn", 2, "answers"),
        ("turn", 4, "answers"),
        ("turn", 4, "consistent"),
    ]


def test_the_report_shows_each_step_as_a_collapsible_details() -> None:
    page = render_report(structured_batch())
    assert len(re.findall(r'<li data-step="\d+"><details class="cj-step', page)) == 4


def test_the_report_marks_a_failed_tool_call_by_class_and_text() -> None:
    step = step_li(render_report(structured_batch()), 2)
    assert step.startswith('<details class="cj-step cj-failed">')
    assert '<span class="cj-mark">\u2717 ERROR</span>' in step
    assert "permission denied" in step


def test_the_report_says_the_critics_split_on_a_step() -> None:
    page = render_report(structured_batch())
    assert "critics split on step 2: FAIL 2 of 3 (against: c PASS)" in page


def test_the_report_shows_a_steps_result_next_to_it() -> None:
    page = render_report(structured_batch())
    assert 'class="cj-unit cj-split-unit"' in step_li(page, 2)
    assert ">PASS 100.0%</span>" in step_li(page, 1)


def test_the_report_shows_the_reference_beside_the_answer() -> None:
    page = render_report(structured_batch())
    versus = re.search(r'<div class="cj-versus">(.*?)</div></div></div>', page, re.S)
    assert versus is not None
    assert "answer" in versus[1] and "It is 21 degrees." in versus[1]
    assert "reference" in versus[1] and "21 degrees" in versus[1]


def test_the_report_shows_turns_with_their_roles_and_each_turns_result() -> None:
    page = render_report(structured_batch())
    turn = re.search(r'<li class="cj-turn" data-turn="4">(.*?)</li>', page, re.S)
    assert turn is not None
    assert '<span class="cj-role">assistant</span>' in turn[1]
    assert "consistent: split: FAIL 2 of 3 (against: a PASS)" in turn[1]


def test_an_image_is_a_placeholder_with_its_type_and_size_never_its_bytes() -> None:
    page = render_report(structured_batch())
    table = page[
        page.index('id="disputed-table"') : page.index(
            "</table>", page.index('id="disputed-table"')
        )
    ]
    assert "[image 1: image/png, 48 bytes, sha256 " in table
    assert "data:image/png" not in page
    assert "<img" not in table


def test_item_text_in_a_step_is_escaped() -> None:
    page = render_report(structured_batch())
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in step_li(page, 1)


def test_results_on_steps_the_file_does_not_store_are_listed_apart() -> None:
    html = structure_html(agent_result(stored=False))
    assert "turns or steps the results file does not store" in html
    assert "step 2: FAIL 2 of 3 (against: c PASS)" in html


def test_steps_left_out_past_the_cap_are_counted_on_the_page() -> None:
    steps = [ToolCall(name="read", result="x" * 3000) for _ in range(30)]
    stored = item_text(Item(id="long", query="done", trajectory=steps))
    result = unit_result("long", {"step-1": ("PASS", "PASS", "PASS")}, None)
    result.item = stored
    html = structure_html(result)
    left = (stored.left_out or {})["trajectory"]
    assert f"\u2026 {left:,} more steps not stored" in html
    assert "trajectory: 30 steps" in html


def test_a_plain_items_cell_holds_no_structure() -> None:
    plain = unit_result("plain", {}, Item(id="plain", query="Felines"))
    plain.criteria = None
    page = render_report(BatchResult.from_results([plain, agent_result()]))
    row = re.search(r'<td data-sort="plain"><span class="id">plain</span>(.*?)</td>', page, re.S)
    assert row is not None
    assert "cj-structure" not in row[1]


def test_the_label_page_shows_the_steps_and_their_errors() -> None:
    batch = structured_batch()
    page = render_label_page(label_queue(batch, 2), batch)
    assert len(re.findall(r'<details class="cj-step', page)) == 4
    assert '<details class="cj-step cj-failed">' in page
    assert "\u2717 ERROR" in page


def test_the_label_page_hides_the_unit_results_with_the_jury() -> None:
    batch = structured_batch()
    page = render_label_page(label_queue(batch, 2), batch)
    assert 'class="cj-unit cj-split-unit jury-unit"' in page
    assert 'class="cj-splits jury-unit"' in page
    assert ".jury-unit{display:none}" in page


def test_the_notebook_view_of_a_result_shows_its_steps_with_inline_styles() -> None:
    html = agent_result()._repr_html_()
    assert "[step 2]" in html and "\u2717 ERROR" in html
    assert "critics split on step 2" in html
    assert "class=" not in html and "<style" not in html


def test_a_batchs_notebook_row_says_its_structure_in_one_line() -> None:
    html = structured_batch()._repr_html_()
    assert "trajectory: 4 steps, 1 failed; with a reference; critics split on step 2" in html


def test_a_structure_summary_names_at_most_five_split_units() -> None:
    labels = {f"step-{n}": ("PASS", "FAIL", "PASS") for n in range(1, 9)}
    assert structure_summary(unit_result("r", labels, None)).endswith(
        "critics split on step 1, step 2, step 3, step 4, step 5 and 3 more"
    )
