"""The shipped rubric cascade (``examples/rubric.yaml``: simulated graders that know each
answer's truth per criterion) through the command line: ``review`` with its criteria table,
``review --all-tiers`` and ``calibrate --per criterion`` whose ``escalate:`` block a panel
file takes back, and the gold file a calibration needs for each mode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from cross_judge.panel_file._schema import EscalateSpec

from .conftest import run

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CRITERIA = ("correct", "complete", "cites", "concise", "unsafe")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    for name in ("answers.jsonl", "answers.gold.jsonl", "rubric.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path


def test_review_of_a_rubric_panel_prints_a_table_per_criterion(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = example / "out.jsonl"
    code, stdout, _ = run(
        capsys, "review", example / "answers.jsonl", "--panel", example / "rubric.yaml",
        "--out", out,
    )  # fmt: skip
    assert code == 0
    table = stdout.split("criteria")[1]
    for criterion in CRITERIA:
        assert f"\n  {criterion} " in table
    assert "3 gate" in table and "-3" in table
    assert "simulated without gold" not in stdout  # the simulator knew the truth per criterion
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(set(line["criteria"]) == set(CRITERIA) for line in lines)


def test_calibrating_per_criterion_gives_an_escalate_block_a_panel_file_takes(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = example / "full.jsonl"
    code, _, _ = run(
        capsys, "review", example / "answers.jsonl", "--panel", example / "rubric.yaml",
        "--out", full, "--all-tiers",
    )  # fmt: skip
    assert code == 0
    code, stdout, _ = run(
        capsys, "calibrate", full, "--gold", example / "answers.gold.jsonl",
        "--score", "support", "--per", "criterion",
    )  # fmt: skip
    assert code in (0, 1)  # 20 labelled items may guarantee nothing; the block is printed
    block = stdout[stdout.index("final:") :]
    escalate = yaml.safe_load(block)["escalate"]
    assert set(escalate["support_below"]) == set(CRITERIA)
    assert escalate["on_dispute"] is False  # the calibrated level alone decides
    spec = EscalateSpec(**escalate)
    assert set(spec.to_escalation().support_below) == set(CRITERIA)  # type: ignore[arg-type]


def test_calibrating_on_the_total_needs_item_labels(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = example / "full.jsonl"
    assert run(
        capsys, "review", example / "answers.jsonl", "--panel", example / "rubric.yaml",
        "--out", full, "--all-tiers",
    )[0] == 0  # fmt: skip
    code, _, stderr = run(
        capsys, "calibrate", full, "--gold", example / "answers.gold.jsonl", "--per", "total"
    )
    assert code != 0
    assert 'no line gives an item label ("label")' in stderr
    assert "--per criterion" in stderr
