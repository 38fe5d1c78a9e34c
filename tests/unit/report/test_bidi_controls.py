"""Issue 37: bidirectional controls (U+202E and friends) in ids, item text, labels, critic
names and reasoning are shown as visible escapes by every view of results (the report,
its charts' data, the labelling page, the notebook views, the leaderboard, the terminal
summary), as lone surrogates are: shown raw they reorder what a reviewer reads."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from cross_judge.batch import BatchResult
from cross_judge.ranking import fit_ranking
from cross_judge.report import render_report
from cross_judge.report._label_page import render_label_page
from cross_judge.report._leaderboard import render_leaderboard
from cross_judge.report._notebook import batch_html, ensemble_html, verdict_html
from cross_judge.report._summary import (
    BIDI_CONTROLS,
    plain_text,
    printable,
    render_disputed,
    render_summary,
)
from cross_judge.stats.label_queue import label_queue
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

RLO = "\u202e"
ID = f"invoice-{RLO}fdp.exe"  # reads "invoice-exe.pdf" when shown raw
RAW = re.compile(f"[{BIDI_CONTROLS}]")
# Unicode's Bidi_Control property (PropList.txt): 061C, 200E..200F, 202A..202E, 2066..2069.
UNICODE_BIDI_CONTROLS = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]


def vote(critic: str, kind: str, reasoning: str = "") -> Verdict:
    return Verdict(kind=kind, confidence=0.8, critic_id=critic, reasoning=reasoning)


def hostile_batch() -> BatchResult:
    """One split item whose id, text, meta, a critic's name, a label and a reasoning each
    hold a bidirectional control, and one plain item."""
    split = EnsembleVerdict(
        query_id=ID,
        verdicts=[
            vote("a", "KEEP", f"fine {RLO}enif"),
            vote(f"b{RLO}x", "REJECT", "no"),
            vote("c", f"KEEP{RLO}", "\u2067isolated\u2069 \u200fmark"),
        ],
        consensus="KEEP",
        agreement_pct=1 / 3,
        disagreement=True,
        voting="majority",
        n_valid=3,
        item=ItemText(query=f"pay {RLO}0001 now", context={"note": f"see \u202b{RLO}"}),
        meta={"source": f"mail{RLO}"},
    )
    plain = EnsembleVerdict(
        query_id="plain",
        verdicts=[vote("a", "KEEP"), vote(f"b{RLO}x", "KEEP"), vote("c", "KEEP")],
        consensus="KEEP",
        agreement_pct=1.0,
        voting="majority",
        n_valid=3,
    )
    return BatchResult.from_results([split, plain])


class _Text(HTMLParser):
    """Every text node and attribute value of a page, and each script's text apart."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        self.texts.extend(value for _, value in attrs if value)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.texts).append(data)


def parsed(page: str) -> _Text:
    found = _Text()
    found.feed(page)
    found.close()
    return found


def strings(value: Any) -> list[str]:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def script_json(page: str, element_id: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


# -- the one function --------------------------------------------------------------------------


def test_the_bidi_controls_are_unicodes_bidi_control_characters() -> None:
    assert sorted(ord(c) for c in BIDI_CONTROLS) == UNICODE_BIDI_CONTROLS


@pytest.mark.parametrize("code", UNICODE_BIDI_CONTROLS, ids=hex)
def test_printable_writes_a_bidi_control_as_its_escape(code: int) -> None:
    assert printable(f"a{chr(code)}b") == f"a\\u{code:04x}b"


def test_printable_escapes_a_bidi_control_and_a_lone_surrogate_in_one_text() -> None:
    assert printable(f"x{RLO}y\ud800z") == "x\\u202ey\\ud800z"


def test_printable_leaves_right_to_left_scripts_and_other_text_alone() -> None:
    text = "שלום مرحبا café 😀 \u200b"
    assert printable(text) is text


# -- the HTML report ---------------------------------------------------------------------------


def test_the_report_shows_no_raw_bidi_control_in_any_text_or_attribute() -> None:
    page = render_report(hostile_batch())
    found = parsed(page)
    assert [t for t in found.texts if RAW.search(t)] == []
    assert "invoice-\\u202efdp.exe" in found.texts
    assert "pay \\u202e0001 now" in " ".join(found.texts)
    assert "fine \\u202eenif" in found.texts


def test_the_report_holds_no_raw_bidi_control_anywhere() -> None:
    assert RAW.search(render_report(hostile_batch())) is None


def test_the_reports_chart_data_decodes_to_visible_escapes() -> None:
    specs = script_json(render_report(hostile_batch()), "cj-specs")
    decoded = strings(specs)
    assert [s for s in decoded if RAW.search(s)] == []
    critics = {cell["a"] for cell in specs["chart-agreement"]["data"]["values"]}
    assert critics == {"a", "b\\u202ex", "c"}


# -- the labelling page ------------------------------------------------------------------------


def labelling_page() -> str:
    results = hostile_batch()
    return render_label_page(
        label_queue(results, len(results), strategy="uniform", seed=1), results
    )


def test_the_labelling_page_shows_no_raw_bidi_control_in_any_text_or_attribute() -> None:
    found = parsed(labelling_page())
    assert [t for t in found.texts if RAW.search(t)] == []
    assert "invoice-\\u202efdp.exe" in found.texts


def test_the_labelling_pages_labels_decode_to_the_escapes_its_buttons_show() -> None:
    page = labelling_page()
    data = script_json(page, "cj-queue")
    assert "KEEP\\u202e" in data["labels"]  # what a key press sets and the page then shows
    assert 'data-label="KEEP\\u202e"' in page  # what a click sets
    assert [s for s in data["labels"] if RAW.search(s)] == []


def test_the_labelling_pages_ids_still_decode_to_the_real_ids_for_export() -> None:
    data = script_json(labelling_page(), "cj-queue")
    assert sorted(item["id"] for item in data["items"]) == sorted([ID, "plain"])


# -- notebook views, the leaderboard, the terminal -----------------------------------------------


def test_the_notebook_views_show_bidi_controls_as_escapes() -> None:
    batch = hostile_batch()
    split = batch.verdicts[0]
    for view in (batch_html(batch), ensemble_html(split), verdict_html(split.verdicts[2])):
        assert RAW.search(view) is None
    assert "invoice-\\u202efdp.exe" in ensemble_html(split)


def test_the_leaderboard_shows_bidi_controls_as_escapes() -> None:
    odd = f"cand{RLO}1"
    pair = EnsembleVerdict(
        query_id="p1",
        verdicts=[Verdict(kind="A", critic_id=f"judge{RLO}")],
        consensus="A",
        voting="majority",
        meta={"rank": {"a": odd, "b": "other", "query": None}},
    )
    page = render_leaderboard(fit_ranking([odd, "other"], [pair]))
    assert RAW.search(page) is None
    assert "cand\\u202e1" in page


def test_the_terminal_summary_shows_bidi_controls_as_escapes() -> None:
    text = plain_text(render_summary(hostile_batch()))
    assert RAW.search(text) is None
    assert "b\\u202ex" in text


def test_the_terminal_disputed_listing_shows_bidi_controls_as_escapes() -> None:
    text = plain_text(render_disputed(hostile_batch(), 5))
    assert RAW.search(text) is None
    assert "invoice-\\u202efdp.exe" in text and "pay \\u202e0001 now" in text
