"""The offline labelling page of a label queue (``LabelQueue.to_html``,
cross_judge.report._label_page), read as text: no browser (tests/browser opens it in
Chromium and labels items with key presses)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from cross_judge.batch import BatchResult
from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.report._label_page import (
    EXPORT_NAME,
    offered_labels,
    queue_id,
    render_label_page,
)
from cross_judge.stats._gold import load_gold
from cross_judge.stats.label_queue import LabelQueue, label_queue
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

HOSTILE = "<script>alert(1)</script>"
CLOSER = "</script><img src=x onerror=alert(2)>"


def vote(critic: str, kind: str, reasoning: str = "", **extra: Any) -> Verdict:
    return Verdict(kind=kind, confidence=0.8, critic_id=critic, reasoning=reasoning, **extra)


def result(query_id: str, verdicts: list[Verdict], consensus: str, **extra: Any) -> EnsembleVerdict:
    valid = [v for v in verdicts if v.error is None]
    agreeing = sum(v.kind == consensus for v in valid)
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=verdicts,
        consensus=consensus,
        agreement_pct=agreeing / len(valid) if valid else 0.0,
        disagreement=agreeing < len(valid),
        voting="majority",
        n_valid=len(valid),
        n_errors=len(verdicts) - len(valid),
        **extra,
    )


def batch() -> BatchResult:
    """Five items, three critics: unanimous, split, a failed call, no consensus, and one
    whose text, id, label and reasoning try to inject markup."""
    failed = Verdict(
        kind="ERROR",
        critic_id="c",
        error="timeout: no answer in 60 s",
        error_kind=ErrorKind.TIMEOUT,
    )
    results = [
        result(
            "calm",
            [vote("a", "KEEP"), vote("b", "KEEP"), vote("c", "KEEP")],
            "KEEP",
            item=ItemText(query="Mammals", context={"note": "zoology"}),
        ),
        result(
            "split",
            [vote("a", "REJECT", "too broad"), vote("b", "KEEP"), vote("c", "REJECT")],
            "REJECT",
        ),
        result("broken", [vote("a", "SPLIT"), vote("b", "SPLIT"), failed], "SPLIT"),
        result(
            "undecided",
            [vote("a", "KEEP"), vote("b", "MERGE"), vote("c", "SPLIT")],
            "UNCLEAR",
            fallback=True,
        ),
        result(
            f"id{HOSTILE}",
            [vote("a", f"L{CLOSER}", HOSTILE), vote("b", "KEEP", CLOSER), vote("c", "KEEP")],
            "KEEP",
            item=ItemText(query=f"query {HOSTILE}", context={"x": CLOSER}),
        ),
    ]
    out = BatchResult.from_results(results)
    out.simulated_critics = ["b"]
    return out


def every_queued(results: BatchResult) -> LabelQueue:
    return label_queue(results, len(results), strategy="uniform", seed=3)


class Page(HTMLParser):
    """The page's elements: every tag with its attributes, the scripts' text, and the
    visible text of each item section."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.sections: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._section_depth = 0
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "script":
            self._script = attributes
            self.scripts.append((attributes, ""))
        if tag == "section":
            self.sections.append("")
            self._section_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None
        if tag == "section":
            self._section_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attributes, text = self.scripts[-1]
            self.scripts[-1] = (attributes, text + data)
        elif self._section_depth:
            self.sections[-1] += data


def embedded(page: Page) -> dict[str, Any]:
    [(_, text)] = [s for s in page.scripts if s[0].get("id") == "cj-queue"]
    data: dict[str, Any] = json.loads(text)
    return data


def test_page_shows_one_section_per_queued_item_in_queue_order() -> None:
    results = batch()
    queue = every_queued(results)
    page = Page(queue.to_html(results))
    ids = [s.split(" of ", 1)[1].split(maxsplit=1)[1].split("your label")[0] for s in page.sections]
    assert ids == queue.items
    assert [item["id"] for item in embedded(page)["items"]] == queue.items


def test_every_section_starts_hidden_for_the_script_to_show_one() -> None:
    results = batch()
    page = Page(every_queued(results).to_html(results))
    sections = [a for tag, a in page.tags if tag == "section"]
    assert len(sections) == len(results) and all("hidden" in a for a in sections)


def test_embedded_data_carries_the_queue_id_labels_and_probabilities() -> None:
    results = batch()
    queue = label_queue(results, 3, strategy="disputed", seed=1)
    data = embedded(Page(queue.to_html(results)))
    assert data["queue"] == queue_id(queue)
    assert data["labels"] == offered_labels(results.verdicts)
    assert data["export"] == EXPORT_NAME
    assert {i["id"]: i["probability"] for i in data["items"]} == queue.probabilities


def test_offered_labels_are_valid_votes_and_consensus_labels_sorted() -> None:
    labels = offered_labels(batch().verdicts)
    assert labels == sorted(["KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR", f"L{CLOSER}"])
    assert "ERROR" not in labels


def test_the_first_nine_labels_have_a_key_in_order() -> None:
    results = batch()
    text = every_queued(results).to_html(results)
    buttons = re.findall(r'<button type="button" class="choice" data-label="[^"]*"><kbd>(\d)', text)
    assert buttons == [str(n) for n in range(1, len(offered_labels(results.verdicts)) + 1)]


def test_item_text_critic_answers_and_consensus_are_shown() -> None:
    results = batch()
    queue = LabelQueue(
        items=["calm", "split", "broken", "undecided"],
        probabilities=dict.fromkeys(["calm", "split", "broken", "undecided"], 0.8),
        strategy="uniform",
        population=5,
    )
    calm, split, broken, undecided = Page(queue.to_html(results)).sections
    assert "Mammals" in calm and "context.note" in calm and "zoology" in calm
    assert "agreement 100%" in calm
    assert "too broad" in split and "80%" in split
    assert "ERROR" in broken and "call failed" in broken and "no answer in 60 s" in broken
    assert "UNCLEAR" in undecided and "no vote decided" in undecided
    assert "store no text" in split  # no item text: the id only


def test_simulated_critics_are_marked() -> None:
    results = batch()
    page = every_queued(results).to_html(results)
    assert page.count('<span class="sim">simulated</span>') == len(results)  # b, each item


def test_untrusted_text_cannot_inject_markup() -> None:
    results = batch()
    text = every_queued(results).to_html(results)
    page = Page(text)
    assert "<script>alert" not in text and "<img" not in text
    assert [t for t, _ in page.tags].count("img") == 0
    scripts = [a for t, a in page.tags if t == "script"]
    assert len(scripts) == 2  # the data and the page's own script, nothing injected
    hostile = next(s for s in page.sections if "query" in s and "id<script>" in s)
    assert HOSTILE in hostile and CLOSER in hostile  # shown as text, whole
    data = embedded(page)
    assert f"id{HOSTILE}" in [i["id"] for i in data["items"]]
    assert f"L{CLOSER}" in data["labels"]


def test_only_the_pages_own_nonce_may_run_scripts_and_nothing_is_fetched() -> None:
    results = batch()
    page = Page(every_queued(results).to_html(results))
    [csp] = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") is not None]
    assert csp is not None and csp.startswith("default-src 'none'; script-src 'nonce-")
    nonce = csp.split("'nonce-")[1].split("'")[0]
    runnable = [a for a, _ in page.scripts if a.get("type") != "application/json"]
    assert [a.get("nonce") for a in runnable] == [nonce]
    linked = [
        (t, a)
        for t, a in page.tags
        if any(a.get(k) for k in ("src", "href", "srcset", "action")) or t == "link"
    ]
    assert linked == []


def test_a_reload_keeps_labels_under_the_queue_id() -> None:
    results = batch()
    one = every_queued(results)
    again = every_queued(results)
    other = label_queue(results, len(results), strategy="uniform", seed=4)
    assert queue_id(one) == queue_id(again)
    assert queue_id(one) != queue_id(other) or one.items == other.items
    script = Page(one.to_html(results)).scripts[-1][1]
    assert "localStorage" in script and '"cross-judge:label-queue:" + data.queue' in script


def test_the_export_lines_are_what_load_gold_reads(tmp_path: Path) -> None:
    """The page writes each line as JSON.stringify({id, label, probability, jury_shown}):
    the extra keys do not stop load_gold."""
    path = tmp_path / EXPORT_NAME
    rows = [
        {"id": "split", "label": "KEEP", "probability": 0.25, "jury_shown": False},
        {"id": "calm", "label": "X", "probability": 0.5, "jury_shown": True},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert load_gold(path) == {"split": "KEEP", "calm": "X"}
    script = Page(every_queued(batch()).to_html(batch())).scripts[-1][1]
    assert "probability: item.probability,\n          jury_shown: shownAt[item.id] === true" in (
        script
    )


def test_path_writes_the_page_and_returns_it(tmp_path: Path) -> None:
    results = batch()
    target = tmp_path / "queue.html"
    text = every_queued(results).to_html(results, target)
    assert target.read_text(encoding="utf-8") == text


def test_a_sequence_of_results_works_as_a_batch() -> None:
    results = batch()
    queue = every_queued(results)
    assert len(Page(render_label_page(queue, results.verdicts)).sections) == len(results)


def test_an_empty_queue_says_there_is_nothing_to_label() -> None:
    results = batch()
    text = label_queue(results, 0, strategy="uniform").to_html(results)
    assert "nothing to label" in text and Page(text).sections == []


def test_a_queued_id_the_results_lack_is_refused() -> None:
    results = batch()
    queue = LabelQueue(
        items=["calm", "elsewhere"],
        probabilities={"calm": 0.5, "elsewhere": 0.5},
        strategy="uniform",
        population=5,
    )
    with pytest.raises(ConfigError, match=r"'elsewhere'.*draw the queue from these results"):
        queue.to_html(results)


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    results = batch()
    with pytest.raises(ConfigError, match="does not exist"):
        every_queued(results).to_html(results, tmp_path / "nowhere" / "queue.html")


def test_a_lone_surrogate_is_written_as_its_escape() -> None:
    results = BatchResult.from_results(
        [result("bad\ud800id", [vote("a", "KEEP"), vote("b", "KEEP")], "KEEP")]
    )
    text = every_queued(results).to_html(results)
    text.encode("utf-8")
    assert "bad\\ud800id" in text
