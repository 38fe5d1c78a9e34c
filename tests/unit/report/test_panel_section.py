"""The report's "Which panel" section: the plans ``select_panel`` ranks on the report's
batch (against its gold, else a Dawid-Skene estimate said so), or one line saying why no
plan can be chosen from these results (read as text, no browser)."""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cross_judge import revote
from cross_judge.batch import BatchResult
from cross_judge.errors import StatisticsWarning
from cross_judge.report import render_report
from cross_judge.report._panel_section import (
    MAX_CRITICS,
    PLANS_SHOWN,
    cheaper_alike,
    lean_pilot,
)
from cross_judge.stats import split_gold
from cross_judge.verdict import EnsembleVerdict, ItemText, Verdict

LABELS = ("PASS", "FAIL")
FOUR = {
    "cheap-a": (0.70, 0.0001),
    "cheap-b": (0.72, 0.0001),
    "mid": (0.82, 0.0005),
    "strong": (0.93, 0.0020),
}
"""name -> (accuracy, USD per verdict)."""


def pilot(
    critics: Mapping[str, tuple[float, float | None]], n: int = 60, seed: int = 0
) -> tuple[BatchResult, dict[str, str]]:
    """``n`` items every critic judged, each right with its accuracy and costing its price
    (``None``: no cost recorded); the batch and every item's gold label."""
    rng = random.Random(seed)
    results: list[EnsembleVerdict] = []
    gold: dict[str, str] = {}
    for i in range(n):
        truth = LABELS[rng.random() < 0.4]
        gold[f"q{i}"] = truth
        verdicts = [
            Verdict(
                kind=truth if rng.random() < accuracy else LABELS[truth == LABELS[0]],
                critic_id=name,
                confidence=0.8,
                reasoning="because",
                cost_usd=price,
            )
            for name, (accuracy, price) in critics.items()
        ]
        stored = EnsembleVerdict(
            query_id=f"q{i}",
            verdicts=verdicts,
            consensus="",
            voting="majority",
            item=ItemText(query=f"item {i}"),
        )
        results.append(revote(stored, "majority"))
    return BatchResult.from_results(results), gold


def section(page: str) -> str:
    match = re.search(r'<section id="which-panel">(.*?)</section>', page, re.S)
    assert match, "no Which panel section"
    return match.group(1)


def plan_rows(html: str) -> list[str]:
    table = html.split('<table id="which-panel-table">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S)


def test_with_gold_and_costs_the_section_ranks_the_plans_in_a_table() -> None:
    batch, gold = pilot(FOUR)
    page = render_report(batch, gold=gold)
    shown = section(page)
    rows = plan_rows(shown)
    assert 1 <= len(rows) <= PLANS_SHOWN
    assert rows[0].startswith("<td class=num>1</td>")
    assert "measured against the gold labels" in shown
    for header in ("held-out accuracy", "ranked on", "cost/item", "eff. votes", "why"):
        assert f">{header}</th>" in shown
    assert "cross-judge plan-panel RESULTS --budget-per-item USD --out panel.yaml" in shown
    assert '<a href="#which-panel">Which panel</a>' in page


def test_without_gold_the_section_says_accuracy_is_a_dawid_skene_estimate() -> None:
    batch, _ = pilot(FOUR)
    shown = section(render_report(batch))
    assert plan_rows(shown)
    assert "No gold labels were given" in shown
    assert "<strong>estimated</strong> by a Dawid-Skene model" in shown
    assert "ESTIMATED by Dawid-Skene" in shown  # the plans' own heading


def test_unknown_costs_give_one_line_saying_how_to_give_prices() -> None:
    batch, gold = pilot({**FOUR, "mid": (0.82, None)})
    shown = section(render_report(batch, gold=gold))
    assert "which-panel-table" not in shown
    assert (
        "Not computed: costs unknown (the verdicts of mid carry none): pass prices to "
        "select_panel / --price to plan-panel." in shown
    )


def test_results_of_one_critic_have_no_panel_section() -> None:
    batch, gold = pilot({"strong": FOUR["strong"]})
    page = render_report(batch, gold=gold)
    assert 'id="which-panel"' not in page and 'href="#which-panel"' not in page


def test_too_few_items_give_select_panels_reason_in_one_line() -> None:
    batch, gold = pilot(FOUR, n=12)
    shown = section(render_report(batch, gold=gold))
    assert "which-panel-table" not in shown
    assert re.search(r"Not computed: .*each part needs at least 10", shown)


def test_more_critics_than_a_page_replays_point_to_plan_panel() -> None:
    many = {f"c{i}": (0.8, 0.001) for i in range(MAX_CRITICS + 1)}
    batch, _ = pilot(many, n=20)
    shown = section(render_report(batch))
    assert f"{MAX_CRITICS + 1} critics are too many" in shown
    assert "<code>cross-judge plan-panel RESULTS --budget-per-item USD" in shown


def test_a_cascades_results_give_one_line() -> None:
    cheap = revote(
        EnsembleVerdict(
            query_id="q",
            verdicts=[
                Verdict(kind="PASS", critic_id="a", cost_usd=0.001),
                Verdict(kind="FAIL", critic_id="b", cost_usd=0.001),
            ],
            consensus="",
            voting="majority",
        ),
        "majority",
    )
    strong = revote(
        EnsembleVerdict(
            query_id="q",
            verdicts=[Verdict(kind="PASS", critic_id="c", cost_usd=0.01)],
            consensus="",
            voting="majority",
        ),
        "majority",
    )
    result = strong.model_copy(
        update={"verdicts": [*cheap.verdicts, *strong.verdicts], "tiers": [cheap, strong]}
    )
    shown = section(render_report(BatchResult.from_results([result])))
    assert "Not computed: these are a cascade&#x27;s results" in shown


def test_a_critic_name_is_escaped_in_the_section() -> None:
    batch, gold = pilot({"<b>x</b>": (0.9, 0.002), **FOUR})
    shown = section(render_report(batch, gold=gold))
    assert "&lt;b&gt;x&lt;/b&gt;" in shown
    assert "<b>" not in shown


def test_an_unknown_cost_for_a_named_critic_is_escaped_too() -> None:
    batch, gold = pilot({"<b>x</b>": (0.9, None), **FOUR})
    shown = section(render_report(batch, gold=gold))
    assert "the verdicts of &lt;b&gt;x&lt;/b&gt; carry none" in shown
    assert "<b>" not in shown


def test_the_statistics_warning_is_not_raised_and_its_note_is_shown() -> None:
    # Two critics are worth fewer than 2 effective votes: select_panel warns and notes it.
    batch, gold = pilot({"mid": FOUR["mid"], "strong": FOUR["strong"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticsWarning)
        shown = section(render_report(batch, gold=gold))
    assert re.search(r'<p class="note">the best affordable panel .*effective votes', shown)


def test_a_results_file_gives_the_section_its_batch_gives(tmp_path: Path) -> None:
    batch, gold = pilot(FOUR)
    path = tmp_path / "pilot.jsonl"
    batch.to_jsonl(path)
    from_file = section(render_report(path, gold=gold))
    assert "cross-judge plan-panel pilot.jsonl --budget-per-item USD" in from_file
    assert from_file.replace("pilot.jsonl", "RESULTS") == section(render_report(batch, gold=gold))


def plan(rank: int, accuracy: float, cost: float) -> Any:
    return SimpleNamespace(rank=rank, accuracy=accuracy, cost_per_item=cost)


def test_the_cheapest_plan_within_a_point_of_the_best_is_the_one_named() -> None:
    plans = [plan(1, 0.90, 0.003), plan(2, 0.895, 0.002), plan(3, 0.893, 0.001), plan(4, 0.80, 0)]
    assert cheaper_alike(plans).rank == 3


def test_no_plan_is_named_when_the_best_is_the_cheapest_alike() -> None:
    assert cheaper_alike([plan(1, 0.90, 0.001), plan(2, 0.90, 0.002), plan(3, 0.5, 0)]) is None


def test_a_cheaper_plan_as_good_held_out_is_named_under_the_table() -> None:
    # "dear" and "cheap" are always right but for one of cheap's answers on an item the
    # plans are ranked on: dear alone ranks first, and cheap alone is as good held out.
    twins = {"dear": (1.0, 0.002), "cheap": (1.0, 0.0002), "mid": (0.8, 0.0005)}
    batch, gold = pilot(twins)
    ranked_on = split_gold(gold, list(gold), holdout=0.5, seed=0).train[0]
    flipped = [
        r
        if r.query_id != ranked_on
        else r.model_copy(
            update={
                "verdicts": [
                    v.model_copy(update={"kind": LABELS[v.kind == LABELS[0]]})
                    if v.critic_id == "cheap"
                    else v
                    for v in r.verdicts
                ]
            }
        )
        for r in batch.verdicts
    ]
    shown = section(render_report(BatchResult.from_results(flipped), gold=gold))
    assert re.search(
        r'<p id="which-panel-cheaper">Plan #\d \(cheap, majority\) costs \$0.0002 per item '
        r"against the best's \$[\d.]+, and its held-out accuracy \([\d.]+%\) is within 1 "
        r"point of the best's",
        shown,
    )


def test_lean_pilot_prices_a_critic_by_its_uncached_verdicts() -> None:
    results = [
        EnsembleVerdict(
            query_id=f"q{i}",
            verdicts=[
                Verdict(kind="PASS", critic_id="a", cost_usd=0.002 if i else 0.004),
                Verdict(kind="PASS", critic_id="b", cost_usd=0.0, cached=True),
                Verdict(kind="ERROR", critic_id="c", error="timeout", cost_usd=0.001),
            ],
            consensus="PASS",
            voting="majority",
        )
        for i in range(3)
    ]
    batch, prices, unpriced = lean_pilot(results, ["a", "b", "c"])
    assert prices == pytest.approx({"a": 0.008 / 3, "c": 0.001})
    assert unpriced == ["b"]  # only cached verdicts: no price
    assert [r.query_id for r in batch.verdicts] == ["q0", "q1", "q2"]
    assert batch.verdicts[0].verdicts[0] is batch.verdicts[1].verdicts[0]  # shared stand-ins
    assert batch.verdicts[0].verdicts[2].error is not None
