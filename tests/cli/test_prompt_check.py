"""``cross-judge prompts check PROMPT --items FILE --panel PANEL``: the panel, given the
prompt, must fail each item's known wrong answer and pass its reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import run

pytestmark = pytest.mark.integration

ITEMS = [
    {
        "id": "capital",
        "query": "Paris.",
        "reference": "Paris is the capital of France.",
        "counter_reference": "Lyon is the capital of France.",
    },
    {"id": "sum", "query": "4", "reference": "4", "counter_reference": "5"},
]


def panel(folder: Path, gold: dict[str, str]) -> Path:
    """Two simulated critics that always tell the truth the simulator's gold gives."""
    critics = "\n".join(
        f"  - {{name: {n}, vendor: simulated, model: sim-{n}, prompt: pass-fail@1, "
        f"persona: {{accuracy: 1.0, seed: {i}}}}}"
        for i, n in enumerate("ab")
    )
    lines = "\n".join(f"    {json.dumps(k)}: {v}" for k, v in gold.items())
    path = folder / "panel.yaml"
    path.write_text(f"voting: majority\ncritics:\n{critics}\nsimulator:\n  gold:\n{lines}\n")
    return path


def items_file(folder: Path, rows: list[dict[str, str]]) -> Path:
    path = folder / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


TRUTH = {
    "Paris is the capital of France.": "PASS",
    "Lyon is the capital of France.": "FAIL",
    "4": "PASS",
    "5": "FAIL",
}


def test_a_panel_that_fails_every_known_wrong_answer_passes_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys,
        "prompts", "check", "reference-correct@1",
        "--items", items_file(tmp_path, ITEMS), "--panel", panel(tmp_path, TRUTH),
    )  # fmt: skip
    assert code == 0
    assert "capital: known wrong answer -> FAIL; reference -> PASS  [ok]" in out
    assert "failed 2 of 2 known wrong answers and passed 2 of 2 references" in out
    assert "simulated" in out


def test_a_panel_that_lets_a_known_wrong_answer_through_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fooled = {**TRUTH, "5": "PASS"}
    code, out, _ = run(
        capsys,
        "prompts", "check", "reference-correct@1", "--format", "json",
        "--items", items_file(tmp_path, ITEMS), "--panel", panel(tmp_path, fooled),
    )  # fmt: skip
    assert code == 1
    report = json.loads(out)
    assert (report["known_wrong_failed"], report["known_wrong"]) == (1, 2)
    assert [row["ok"] for row in report["items"]] == [True, False]


def test_an_item_without_the_reference_the_prompt_uses_is_reported_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [*ITEMS, {"id": "bare", "query": "Paris.", "counter_reference": "Lyon."}]
    code, _, err = run(
        capsys,
        "prompts", "check", "reference-correct@1",
        "--items", items_file(tmp_path, rows), "--panel", panel(tmp_path, TRUTH),
    )  # fmt: skip
    assert code == 2
    assert "1 item(s) cannot be judged with reference-correct@1" in err
    assert "item 'bare' has no reference" in err


def test_items_without_a_counter_reference_say_how_to_add_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": "x", "query": "Paris.", "reference": "Paris."}]
    code, _, err = run(
        capsys,
        "prompts", "check", "reference-correct@1",
        "--items", items_file(tmp_path, rows), "--panel", panel(tmp_path, TRUTH),
    )  # fmt: skip
    assert code == 2 and 'give items a known wrong answer ("counter_reference"' in err
