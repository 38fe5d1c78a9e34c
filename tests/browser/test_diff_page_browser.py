"""The comparison page of two runs (``cross-judge compare --html``) opened in a real
headless Chromium (``nox -s browser``): nothing fetched, nothing logged as an error, no
script run (a hostile item's markup is shown as text), the flipped items side by side,
and the worse/better filter, made of CSS alone, working.

Skipped, saying why, without the ``playwright`` package or a Chromium binary (see
tests/browser/chromium.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge.report import compare_runs

from ..unit.report.compare_runs import batch, result
from .chromium import FLAGS, PROBLEMS, chromium, watch

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs the playwright package"
)

WAIT_MS = 30_000  # a safety net only: the page is static
HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror='window.__pwned=2'>"

pytestmark = pytest.mark.skipif(
    chromium() is None,
    reason="no Chromium found (apt-get install chromium, or set CROSS_JUDGE_CHROMIUM)",
)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A comparison with 12 items worse (one of them hostile), 3 better, 25 unchanged."""
    labels = [("PASS", "FAIL")] * 12 + [("FAIL", "PASS")] * 3 + [("PASS", "PASS")] * 25
    base = [result(f"i{n}", was, text=f"old answer {n}") for n, (was, _now) in enumerate(labels)]
    cand = [result(f"i{n}", now, text=f"new answer {n}") for n, (_was, now) in enumerate(labels)]
    base[0] = result("i0", "PASS", text=HOSTILE)
    cand[0] = result("i0", "FAIL", text=HOSTILE)
    path = tmp_path_factory.mktemp("diff-page") / "diff.html"
    compare_runs(batch(base), batch(cand)).write_html(path)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def tab(browser: Any, page_file: Path) -> Iterator[Any]:
    context = browser.new_context()
    try:
        page = context.new_page()
        events = watch(page)
        page.goto(page_file.as_uri())
        page.wait_for_selector(".flips", timeout=WAIT_MS)
        yield page
        assert [e for e in events if e[0] in PROBLEMS] == []
    finally:
        context.close()


def visible(tab: Any, selector: str) -> int:
    return int(tab.locator(selector).evaluate_all("els => els.filter(e => e.offsetParent).length"))


def test_the_page_opens_offline_with_the_regression_headline(tab: Any) -> None:
    assert tab.title() == "cross-judge compare: REGRESSION"
    assert "REGRESSION: PASS share" in tab.inner_text("body")


def test_each_flip_shows_both_runs_side_by_side(tab: Any) -> None:
    first = tab.locator(".flip").first
    sides = first.locator(".side")
    assert sides.count() == 2
    left, right = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert left["x"] + left["width"] <= right["x"]  # beside, not below
    assert abs(left["y"] - right["y"]) < 1


def test_a_hostile_text_is_shown_as_text_and_never_run(tab: Any) -> None:
    assert tab.evaluate("window.__pwned === undefined")
    assert tab.locator("img").count() == 0
    assert "<script>window.__pwned = 1</script>" in tab.inner_text(".flips")


def test_the_filter_shows_the_worse_or_the_better_items(tab: Any) -> None:
    assert visible(tab, ".flip") == 15
    tab.click("label[for=show-worse]")
    assert (visible(tab, ".flip.worse"), visible(tab, ".flip.better")) == (12, 0)
    tab.click("label[for=show-better]")
    assert (visible(tab, ".flip.worse"), visible(tab, ".flip.better")) == (0, 3)
    tab.click("label[for=show-all]")
    assert visible(tab, ".flip") == 15
