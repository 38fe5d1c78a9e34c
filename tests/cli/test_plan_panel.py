"""``cross-judge plan-panel`` on a pilot judged by the shipped offline panel: the table it
prints, the panel file it writes (from the panel the run manifest records), and the errors
that say the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cross_judge.panel_file import load_panel

from .conftest import run

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PRICES = ("--price", "a=0.0002", "--price", "b=0.0003", "--price", "c=0.001")
GOLD = ("--gold", "support.gold.jsonl")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the shipped alignment panel's pilot on the support items."""
    folder = tmp_path_factory.mktemp("pilot")
    for name in ("align.yaml", "support.jsonl", "support.gold.jsonl"):
        shutil.copy(EXAMPLES / name, folder / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        from cross_judge.cli import main

        assert main(
            ["review", "support.jsonl", "--panel", "align.yaml", "--out", "pilot.jsonl"]
        ) in (0, 1)
    return folder


@pytest.fixture
def folder(judged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for path in judged.iterdir():
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    return tmp_path


def test_the_ranked_plans_are_printed_with_held_out_accuracy(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "plan-panel", "pilot.jsonl", *GOLD, *PRICES)
    assert code == 0
    assert "Which panel" in out and "held-out accuracy against gold" in out


def test_out_writes_the_best_plan_from_the_panel_the_manifest_records(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "plan-panel", "pilot.jsonl", *GOLD, *PRICES, "--budget-per-item", "0.0006",
        "--no-cascade", "--out", "chosen.yaml",
    )  # fmt: skip
    assert code == 0 and "wrote chosen.yaml" in err
    spec = load_panel(folder / "chosen.yaml")
    assert {c.name for c in spec.critics} <= {"a", "b"}


def test_the_written_panel_judges_the_items(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "plan-panel", "pilot.jsonl", *GOLD, *PRICES, "--out", "chosen.yaml")
    code, _, _ = run(
        capsys, "review", "support.jsonl", "--panel", "chosen.yaml", "--out", "again.jsonl"
    )
    assert code in (0, 1)
    assert len((folder / "again.jsonl").read_text().splitlines()) == 300


def test_json_prints_the_record(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan-panel", "pilot.jsonl", *GOLD, *PRICES, "--json", "--top", "2")
    assert code == 0
    record = json.loads(out)
    assert record["reference"] == "gold" and len(record["plans"]) == 2


def test_without_gold_the_estimate_is_named_as_one(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "plan-panel", "pilot.jsonl", *PRICES)
    flat = " ".join(out.split())
    assert code == 0
    assert "ESTIMATED by Dawid-Skene" in flat and "no cascade offered" in flat


def test_unknown_costs_ask_for_a_price_per_critic(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "plan-panel", "pilot.jsonl", *GOLD)
    assert code == 2 and "--price a=" in err


def test_a_budget_no_panel_meets_exits_2_with_the_cheapest_cost(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "plan-panel", "pilot.jsonl", *GOLD, *PRICES, "--budget-per-item", "0.00001"
    )
    assert code == 2 and "the cheapest costs $0.0002" in err


def test_an_existing_out_is_refused_before_anything_runs(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "chosen.yaml").write_text("mine\n")
    code, _, err = run(capsys, "plan-panel", "pilot.jsonl", *PRICES, "--out", "chosen.yaml")
    assert code == 2 and "never overwrites" in err
    assert (folder / "chosen.yaml").read_text() == "mine\n"


def test_out_without_a_recorded_panel_asks_for_panel(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "align.yaml").unlink()
    code, _, err = run(capsys, "plan-panel", "pilot.jsonl", *PRICES, "--out", "chosen.yaml")
    assert code == 2 and "pass --panel PANEL.yaml" in err


@pytest.mark.parametrize("price", ["a", "a=-1", "=0.1", "a=x"])
def test_a_malformed_price_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str], price: str
) -> None:
    code, _, err = run(capsys, "plan-panel", "pilot.jsonl", "--price", price)
    assert code == 2 and "CRITIC=USD" in err
