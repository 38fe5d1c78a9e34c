"""``cross-judge review`` of structured items: per-step prompts judge each step, and a line
the prompt cannot judge (no reference, no trajectory) is skipped and reported, never the
end of the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.batch import ResultsFile

from .conftest import run, write_items

pytestmark = pytest.mark.integration

STEP_PROMPT = """\
id: step-check
version: "1"
unit: step
labels: [PASS, FAIL]
system_prompt: You judge one step. Reply JSON.
user_prompt_template: |
  {trajectory}
  <item>
  {step}
  </item>
  Reply {{"kind": "PASS", "confidence": 0.9, "reasoning": "r"}}
"""


def panel(folder: Path, prompt: str) -> Path:
    critics = "".join(
        f"\n  - {{name: {n}, vendor: simulated, model: sim-{n}, prompt: {prompt}, "
        f"persona: {{accuracy: 0.9, seed: {i}}}}}"
        for i, n in enumerate("ab")
    )
    path = folder / "panel.yaml"
    path.write_text(f"critics:{critics}\n", encoding="utf-8")
    return path


def run_item(i: int) -> dict[str, object]:
    steps = [{"name": f"t{k}", "arguments": {"i": i, "k": k}, "result": "ok"} for k in range(2)]
    return {"id": f"run-{i}", "query": "tidy up", "trajectory": [*steps, {"final_answer": "done"}]}


def test_a_step_prompt_judges_every_step_of_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "step.yaml").write_text(STEP_PROMPT, encoding="utf-8")
    items = write_items(tmp_path, [run_item(i) for i in range(3)])
    out = tmp_path / "out.jsonl"
    code, stdout, _ = run(
        capsys, "review", items, "--panel", panel(tmp_path, "step.yaml"), "--out", out
    )
    assert code == 0
    results = list(ResultsFile.read(out))
    # The file is in the order the items finished, which a busy machine can change.
    assert sorted(r.query_id for r in results) == ["run-0", "run-1", "run-2"]
    assert all(list(r.criteria or {}) == ["step-1", "step-2", "step-3"] for r in results)
    assert all(r.item is not None and r.item.trajectory is not None for r in results)
    assert "step-3" in stdout


def test_a_line_without_the_steps_the_prompt_judges_is_skipped_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "step.yaml").write_text(STEP_PROMPT, encoding="utf-8")
    items = write_items(tmp_path, [run_item(0), {"id": "bare", "query": "no steps"}])
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", panel(tmp_path, "step.yaml"), "--out", out
    )
    assert [r.query_id for r in ResultsFile.read(out)] == ["run-0"]
    assert "has no trajectory" in err and "1 line of" in err and "skipped for bad input" in err
    assert code in (0, 1)


def test_a_line_without_the_reference_its_prompt_uses_is_skipped_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": "ok", "query": "Paris.", "reference": "Paris is the capital."},
        {"id": "bare", "query": "Lyon."},
    ]
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys,
        "review", write_items(tmp_path, rows), "--panel", panel(tmp_path, "reference-correct@1"),
        "--out", out,
    )  # fmt: skip
    assert [json.loads(line)["query_id"] for line in out.read_text().splitlines()] == ["ok"]
    assert "has no reference" in err
    assert code in (0, 1)
