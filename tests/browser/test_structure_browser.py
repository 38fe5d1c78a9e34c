"""A report and a labelling page of structured results opened in a real headless Chromium
(``nox -s browser``): an agent run judged per step (a failed tool call, a step the critics
split on) and a conversation judged per turn. The trajectory renders as steps that start
closed and expand on a click, the failed call is marked, the split is said; on the
labelling page the unit results stay hidden with the jury until ``h``. Nothing fetched,
nothing logged as an error.

Skipped, saying why, without the ``playwright`` package or a Chromium binary
(``CROSS_JUDGE_CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge.report import render_label_page, write_report
from cross_judge.stats.label_queue import label_queue

from ..unit.report.structured import structured_batch
from .chromium import FLAGS, PROBLEMS, chromium, watch

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs the playwright package"
)

WAIT_MS = 30_000  # a safety net only: every step settles in well under a second

pytestmark = pytest.mark.skipif(
    chromium() is None,
    reason="no Chromium found (apt-get install chromium, or set CROSS_JUDGE_CHROMIUM)",
)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("structure")
    batch = structured_batch()
    report = write_report(batch, folder / "report.html")
    label = folder / "label.html"
    render_label_page(label_queue(batch, 2, strategy="uniform", seed=3), batch, label)
    return {"report": report, "label": label}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def opened(browser: Any, path: Path, ready: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        tab = context.new_page()
        events = watch(tab)
        tab.goto(path.as_uri())
        tab.wait_for_selector(ready, timeout=WAIT_MS)
        yield tab
        assert [e for e in events if e[0] in PROBLEMS] == []
    finally:
        context.close()


@pytest.fixture
def report(browser: Any, pages: dict[str, Path]) -> Iterator[Any]:
    yield from opened(browser, pages["report"], "body[data-charts=ready]")


@pytest.fixture
def label(browser: Any, pages: dict[str, Path]) -> Iterator[Any]:
    yield from opened(browser, pages["label"], "body[data-ready=true]")


def to_the_agent_run(tab: Any) -> None:
    """Move the labelling page to run-1 (the queue holds two items, in a drawn order)."""
    for _ in range(2):
        if run_step(tab, 1).count():
            return
        tab.keyboard.press("j")
    assert run_step(tab, 1).count(), "run-1 is not in the queue"


def run_step(tab: Any, number: int) -> Any:
    """Step ``number`` of run-1's trajectory (on the page shown now)."""
    return tab.locator(f'li[data-step="{number}"] > details.cj-step:visible').first


def test_the_reports_trajectory_shows_its_steps_closed(report: Any) -> None:
    steps = report.locator("li[data-step] > details.cj-step")
    assert steps.count() == 4
    assert steps.evaluate_all("els => els.map(e => e.open)") == [False] * 4
    assert run_step(report, 1).locator(".cj-body").is_visible() is False


def test_a_click_expands_a_step_in_the_report(report: Any) -> None:
    step = run_step(report, 2)
    step.locator("summary").click()
    body = step.locator(".cj-body")
    body.wait_for(state="visible", timeout=WAIT_MS)
    assert "error: permission denied" in body.inner_text()


def test_the_failed_call_is_marked_in_the_report(report: Any) -> None:
    step = run_step(report, 2)
    assert "cj-failed" in (step.get_attribute("class") or "")
    assert "\u2717 ERROR" in step.locator("summary").inner_text()


def test_the_report_says_the_critics_split_on_step_2(report: Any) -> None:
    split = report.locator(".cj-split", has_text="critics split on step 2")
    assert split.first.is_visible()


def test_the_label_pages_steps_render_and_expand(label: Any) -> None:
    to_the_agent_run(label)
    step = run_step(label, 2)
    assert "\u2717 ERROR" in step.locator("summary").inner_text()
    step.locator("summary").click()
    step.locator(".cj-body").wait_for(state="visible", timeout=WAIT_MS)


def test_the_label_page_hides_the_step_results_until_the_jury_is_shown(label: Any) -> None:
    to_the_agent_run(label)
    badge = run_step(label, 2).locator(".cj-unit")
    assert badge.is_visible() is False
    label.keyboard.press("h")
    badge.wait_for(state="visible", timeout=WAIT_MS)
    assert "split" in badge.inner_text()
