"""The labelling page of a label queue opened in a real headless Chromium (``nox -s browser``).

Results judged by three simulated critics (``Ensemble.judge_many`` against a local
VendorServer, which stores each item's text), one item written to inject markup; the
page of a queue of every item is opened from disk. Labels are given with key presses; the
tests read the progress, reload to see the labels kept, show the jury with ``h`` (hidden by
default), click Export and read the downloaded file with ``load_gold`` and its
``jury_shown`` flags; nothing may be fetched and nothing logged as an error.

Skipped, saying why, without the ``playwright`` package or a Chromium binary
(``CROSS_JUDGE_CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH): Debian's
``apt-get install chromium`` is enough; no browser is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Critic, Ensemble
from cross_judge.batch import BatchResult
from cross_judge.stats._gold import load_gold
from cross_judge.stats.label_queue import LabelQueue
from cross_judge.testing import Persona, VendorServer

from .chromium import FLAGS, PROBLEMS, chromium, watch

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs the playwright package"
)

WAIT_MS = 30_000  # a safety net only: every step settles in well under a second
HOSTILE = "<script>window.__pwned = 1</script></script><img src=x onerror='window.__pwned=2'>"


pytestmark = pytest.mark.skipif(
    chromium() is None,
    reason="no Chromium found (apt-get install chromium, or set CROSS_JUDGE_CHROMIUM)",
)


@pytest.fixture(scope="module")
def batch() -> BatchResult:
    personas = [
        Persona("sim-a", accuracy=0.9, seed=1),
        Persona("sim-b", accuracy=0.6, seed=2, bias={"KEEP": 3.0}),
        Persona("sim-c", accuracy=0.7, seed=3),
    ]
    items = [{"id": f"item-{i}", "query": f"candidate category number {i}"} for i in range(7)]
    items.append({"id": "hostile</script>", "query": HOSTILE})
    with VendorServer(personas) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                vendor="custom",
                base_url=server.url,
                prompt="taxonomy-review@1",
                max_retries=0,
            )
            for p in personas
        ]
        result: BatchResult = Ensemble(critics).judge_many_sync(items)
    assert all(r.item is not None for r in result.verdicts)
    return result


@pytest.fixture(scope="module")
def queue(batch: BatchResult) -> LabelQueue:
    return batch.label_queue(len(batch), strategy="uniform", seed=11)


@pytest.fixture(scope="module")
def page_file(
    batch: BatchResult, queue: LabelQueue, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path = tmp_path_factory.mktemp("label-page") / "queue.html"
    queue.to_html(batch, path)
    return path


@pytest.fixture(scope="module")
def shown_page_file(
    batch: BatchResult, queue: LabelQueue, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The same queue's page with the jury shown on every item (``--show-jury``)."""
    path = tmp_path_factory.mktemp("label-page-shown") / "queue.html"
    queue.to_html(batch, path, show_jury=True)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def opened(browser: Any, path: Path) -> Iterator[Any]:
    """``path`` open in a fresh browser context (its own, empty localStorage);
    ``tab.events`` holds every console message, page error and non-file request."""
    context = browser.new_context(accept_downloads=True)
    try:
        page = context.new_page()
        events = watch(page)
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
        page.events = events
        yield page
        assert [e for e in events if e[0] in PROBLEMS] == []
    finally:
        context.close()


@pytest.fixture
def tab(browser: Any, page_file: Path) -> Iterator[Any]:
    """The page, the jury hidden by default."""
    yield from opened(browser, page_file)


@pytest.fixture
def shown_tab(browser: Any, shown_page_file: Path) -> Iterator[Any]:
    """The page started with the jury shown on every item."""
    yield from opened(browser, shown_page_file)


def offered(batch: BatchResult) -> list[str]:
    """The labels the page must offer, in key order: valid votes and consensus labels."""
    seen = {r.consensus for r in batch.verdicts}
    seen |= {v.kind for r in batch.verdicts for v in r.verdicts if v.error is None}
    return sorted(seen)


def expect_progress(tab: Any, done: int, total: int) -> None:
    sync_api.expect(tab.locator("#progress")).to_have_text(
        f"{done} of {total} labelled", timeout=WAIT_MS
    )


def current_id(tab: Any) -> str:
    text: str = tab.locator("section.item:not([hidden]) .id").inner_text()
    return text


def exported(tab: Any, folder: Path) -> list[dict[str, Any]]:
    """Click Export and read the downloaded lines."""
    with tab.expect_download(timeout=WAIT_MS) as download:
        tab.click("#export")
    target = folder / "labels.jsonl"
    download.value.save_as(target)
    assert download.value.suggested_filename == "labels.jsonl"
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def test_labels_pressed_persist_across_a_reload_and_export_as_gold(
    tab: Any, batch: BatchResult, queue: LabelQueue, tmp_path: Path
) -> None:
    labels = offered(batch)
    assert len(labels) >= 3
    total = len(queue)
    expect_progress(tab, 0, total)
    assert current_id(tab) == queue.items[0]
    pressed = {}
    for step, key in enumerate(["1", "2", "3"]):
        assert current_id(tab) == queue.items[step]
        tab.keyboard.press(key)
        pressed[queue.items[step]] = labels[int(key) - 1]
        expect_progress(tab, step + 1, total)
    assert current_id(tab) == queue.items[3]  # each label moves on to the next item

    tab.reload()
    tab.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
    expect_progress(tab, 3, total)
    assert current_id(tab) == queue.items[3]  # the first item still to label
    tab.keyboard.press("ArrowLeft")
    sync_api.expect(tab.locator("section.item:not([hidden]) .given")).to_have_text(
        pressed[queue.items[2]], timeout=WAIT_MS
    )

    with tab.expect_download(timeout=WAIT_MS) as download:
        tab.click("#export")
    target = tmp_path / "labels.jsonl"
    download.value.save_as(target)
    assert download.value.suggested_filename == "labels.jsonl"
    assert load_gold(target) == pressed
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == queue.items[:3]  # queue order
    assert {r["id"]: r["probability"] for r in rows} == {
        i: queue.probabilities[i] for i in queue.items[:3]
    }
    assert [r["jury_shown"] for r in rows] == [False, False, False]  # never shown


def test_undo_clears_the_last_label_and_goes_back_to_it(
    tab: Any, batch: BatchResult, queue: LabelQueue
) -> None:
    tab.keyboard.press("2")
    expect_progress(tab, 1, len(queue))
    tab.keyboard.press("u")
    expect_progress(tab, 0, len(queue))
    assert current_id(tab) == queue.items[0]
    assert tab.locator("#export").is_disabled()


def test_a_label_of_ones_own_and_moving_with_j_and_k(tab: Any, queue: LabelQueue) -> None:
    tab.keyboard.press("j")
    assert current_id(tab) == queue.items[1]
    tab.keyboard.press("k")
    assert current_id(tab) == queue.items[0]
    tab.keyboard.press("o")
    tab.keyboard.type("NEEDS <b>REVIEW</b>")
    tab.keyboard.press("Enter")
    expect_progress(tab, 1, len(queue))
    tab.keyboard.press("k")
    sync_api.expect(tab.locator("section.item:not([hidden]) .given")).to_have_text(
        "NEEDS <b>REVIEW</b>", timeout=WAIT_MS
    )


def test_help_toggles_with_its_key(tab: Any) -> None:
    assert tab.locator("#help").is_hidden()
    tab.keyboard.press("?")
    sync_api.expect(tab.locator("#help")).to_be_visible(timeout=WAIT_MS)
    tab.keyboard.press("Escape")
    sync_api.expect(tab.locator("#help")).to_be_hidden(timeout=WAIT_MS)


def test_the_jury_is_hidden_until_h_shows_it_for_the_current_item_only(tab: Any) -> None:
    jury = tab.locator("section.item:not([hidden]) .jury")
    sync_api.expect(jury).to_be_hidden(timeout=WAIT_MS)
    sync_api.expect(tab.locator("#jury-button")).to_have_text("Show the jury (h)")
    tab.keyboard.press("h")
    sync_api.expect(jury).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(tab.locator("#jury-button")).to_have_text("Hide the jury (h)")
    tab.keyboard.press("j")  # the next item: hidden again
    sync_api.expect(tab.locator("section.item:not([hidden]) .jury")).to_be_hidden(timeout=WAIT_MS)
    tab.click("#jury-button")  # the visible control does what h does
    sync_api.expect(tab.locator("section.item:not([hidden]) .jury")).to_be_visible(timeout=WAIT_MS)


def test_each_exported_label_records_whether_the_jury_was_shown_before_it(
    tab: Any, queue: LabelQueue, tmp_path: Path
) -> None:
    tab.keyboard.press("1")  # item 0: labelled blind
    tab.keyboard.press("h")  # item 1: the jury shown, then hidden again, then labelled
    tab.keyboard.press("h")
    tab.keyboard.press("1")
    tab.keyboard.press("2")  # item 2: labelled blind, then the jury shown afterwards
    tab.keyboard.press("k")
    tab.keyboard.press("h")
    expect_progress(tab, 3, len(queue))
    tab.reload()  # what was seen and when survives a reload
    tab.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
    rows = exported(tab, tmp_path)
    assert [(r["id"], r["jury_shown"]) for r in rows] == [
        (queue.items[0], False),
        (queue.items[1], True),
        (queue.items[2], False),
    ]
    tab.keyboard.press("k")  # back on item 2, whose jury was seen: a new label records it
    assert current_id(tab) == queue.items[2]
    tab.keyboard.press("3")
    assert {r["id"]: r["jury_shown"] for r in exported(tab, tmp_path)}[queue.items[2]]


def test_a_page_started_with_the_jury_shown_shows_it_everywhere_and_records_it(
    shown_tab: Any, queue: LabelQueue, tmp_path: Path
) -> None:
    sync_api.expect(shown_tab.locator("section.item:not([hidden]) .jury")).to_be_visible(
        timeout=WAIT_MS
    )
    shown_tab.keyboard.press("1")
    sync_api.expect(shown_tab.locator("section.item:not([hidden]) .jury")).to_be_visible(
        timeout=WAIT_MS
    )
    shown_tab.keyboard.press("1")
    expect_progress(shown_tab, 2, len(queue))
    rows = exported(shown_tab, tmp_path)
    assert [r["jury_shown"] for r in rows] == [True, True]


def test_a_hostile_item_shows_as_text_and_runs_nothing(
    tab: Any, batch: BatchResult, queue: LabelQueue
) -> None:
    for _ in range(queue.items.index("hostile</script>")):
        tab.keyboard.press("ArrowRight")
    assert current_id(tab) == "hostile</script>"
    text = tab.locator("section.item:not([hidden]) .judged .text").first.inner_text()
    assert text == HOSTILE
    assert tab.evaluate("window.__pwned") is None
    assert tab.locator("img").count() == 0
    assert tab.locator("script").count() == 2
