"""A panel file's simulator grades rubrics as the Python one does: ``persona:
{criteria_accuracy: {id: accuracy}}``, ``simulator: {criteria_gold: ...}`` (a mapping by
item text, or a file of ``{"id", "criteria"}`` lines with ``items:``), ``criteria`` and
``criteria_labels`` taken from the critics' rubric prompt unless given, each mistake
reported at its key with the fix, and the record of what the simulator knew.
"""

from __future__ import annotations

import gc
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge.cascade import Escalation
from cross_judge.panel_file import PanelError, PanelSpec, load_panel

RUBRIC_PROMPT = """\
id: sim-rubric
version: 1
system_prompt: You judge answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Judge each criterion:
  {criteria}
  Reply {{"criteria": {{"<id>": {{"kind": "PASS or FAIL", "confidence": 0.9}}}}}}
criteria_mode: one_call
criteria:
  - {id: correct, requirement: The answer is factually correct.}
  - {id: cites, requirement: The answer cites a source.}
"""
ITEM = "Paris is the capital of France."


@pytest.fixture(autouse=True)
def _simulators_stop_with_their_test() -> Iterator[None]:
    yield
    gc.collect()


def load(folder: Path, panel: str) -> PanelSpec:
    (folder / "rubric.yaml").write_text(RUBRIC_PROMPT, encoding="utf-8")
    path = folder / "panel.yaml"
    path.write_text(textwrap.dedent(panel), encoding="utf-8")
    return load_panel(path)


def problem(folder: Path, panel: str) -> str:
    with pytest.raises(PanelError) as info:
        load(folder, panel)
    return str(info.value)


PANEL = """\
critics:
  - name: a
    vendor: simulated
    prompt: rubric.yaml
    persona: {accuracy: 0.5, criteria_accuracy: {correct: 1.0, cites: 0.0}}
simulator:
  criteria_gold:
    "Paris is the capital of France.": {correct: PASS, cites: PASS}
"""


def test_criteria_accuracy_and_criteria_gold_reach_the_simulator(tmp_path: Path) -> None:
    spec = load(tmp_path, PANEL)
    (persona,) = spec.personas()
    assert dict(persona.criteria_accuracy or {}) == {"correct": 1.0, "cites": 0.0}
    result = spec.build().judge_sync(ITEM)
    assert result.criteria is not None
    assert result.criteria["correct"].consensus == "PASS"
    assert result.criteria["cites"].consensus == "FAIL"


def test_criteria_are_taken_from_the_rubric_prompt(tmp_path: Path) -> None:
    spec = load(tmp_path, PANEL)
    server = spec.simulator()
    assert server._state.criteria == {
        "correct": "The answer is factually correct.",
        "cites": "The answer cites a source.",
    }
    assert server._state.criteria_labels == ("PASS", "FAIL")


def test_criteria_given_under_simulator_win_over_the_prompts(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        PANEL + '  criteria: {correct: "The answer is factually correct.", cites: "Cites."}\n'
        "  criteria_labels: [PASS, FAIL]\n",
    )
    assert spec.simulator()._state.criteria == {
        "correct": "The answer is factually correct.",
        "cites": "Cites.",
    }
    record = spec.simulator_record()
    assert record is not None and record["criteria"] == ["correct", "cites"]


def test_a_criteria_gold_file_gives_truths_by_item_id(tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").write_text(json.dumps({"id": "q1", "query": ITEM}) + "\n")
    (tmp_path / "cgold.jsonl").write_text(
        json.dumps({"id": "q1", "criteria": {"correct": "FAIL", "cites": "PASS"}}) + "\n"
    )
    spec = load(
        tmp_path,
        """\
        critics:
          - name: a
            vendor: simulated
            prompt: rubric.yaml
            persona: {accuracy: 1.0}
        simulator: {items: items.jsonl, criteria_gold: cgold.jsonl}
        """,
    )
    result = spec.build().judge_sync(ITEM)
    assert result.criteria is not None
    assert {cid: c.consensus for cid, c in result.criteria.items()} == {
        "correct": "FAIL",
        "cites": "PASS",
    }
    record = spec.simulator_record()
    assert record is not None
    assert record["criteria_gold_items"] == 1
    assert record["criteria_gold_file"] == str(tmp_path / "cgold.jsonl")
    assert record["personas"]["a"].get("criteria_accuracy") is None


def test_the_record_keeps_each_personas_criteria_accuracy(tmp_path: Path) -> None:
    record = load(tmp_path, PANEL).simulator_record()
    assert record is not None
    assert record["personas"]["a"]["criteria_accuracy"] == {"correct": 1.0, "cites": 0.0}


def test_a_criteria_accuracy_outside_zero_to_one_is_refused_at_its_key(tmp_path: Path) -> None:
    message = problem(tmp_path, PANEL.replace("cites: 0.0}}", "cites: 1.5}}"))
    assert "criteria_accuracy.cites" in message and "expected an accuracy in [0, 1]" in message


def test_a_criteria_accuracy_naming_an_unknown_criterion_is_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, PANEL.replace("cites: 0.0}}", "cite: 0.0}}"))
    assert "criteria_accuracy" in message and "['cite']" in message and "fix the ids" in message


def test_criteria_gold_naming_an_unknown_criterion_is_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, PANEL.replace("{correct: PASS, cites: PASS}", "{tone: PASS}"))
    assert "criteria_gold" in message and "['tone']" in message and "fix the ids" in message


def test_criteria_gold_off_the_scale_is_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, PANEL.replace("cites: PASS}", "cites: MAYBE}"))
    assert "['MAYBE']" in message and "criteria_labels" in message


def test_criteria_gold_that_is_not_a_mapping_per_item_is_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, PANEL.replace("{correct: PASS, cites: PASS}", "PASS"))
    assert "expected {criterion id: label}" in message


def test_criteria_gold_without_any_criterion_is_refused(tmp_path: Path) -> None:
    message = problem(
        tmp_path,
        """\
        critics:
          - name: a
            vendor: simulated
            prompt: taxonomy-review@1
        simulator:
          criteria_gold: {"an item": {correct: PASS}}
        """,
    )
    assert "knows no criterion" in message and "criteria: {ID: REQUIREMENT TEXT}" in message


def test_a_criteria_gold_file_without_items_is_refused(tmp_path: Path) -> None:
    message = problem(
        tmp_path,
        PANEL.replace(
            '  criteria_gold:\n    "Paris is the capital of France.": '
            "{correct: PASS, cites: PASS}\n",
            "  criteria_gold: g.jsonl\n",
        ),
    )
    assert "add items: ITEMS.jsonl" in message


def test_criteria_labels_of_one_label_are_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, PANEL + "  criteria_labels: [PASS]\n")
    assert "two or more distinct labels" in message


TIERS = """\
tiers:
  - critics:
      - {name: a, vendor: simulated, prompt: rubric.yaml}
      - {name: b, vendor: simulated, prompt: rubric.yaml}
  - critics:
      - {name: strong, vendor: simulated, prompt: rubric.yaml}
escalate:
  support_below: {correct: 0.9}
  on_dispute: true
"""


def test_a_rubric_cascade_takes_escalation_thresholds_per_criterion(tmp_path: Path) -> None:
    cascade = load(tmp_path, TIERS).build()
    rule = cascade.escalate
    assert isinstance(rule, Escalation)
    assert rule.support_below == {"correct": 0.9}
    assert rule.on_dispute is True


def test_a_threshold_for_a_criterion_the_rubric_lacks_is_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, TIERS.replace("{correct: 0.9}", "{sources: 0.9}"))
    assert ":7: escalate:" in message
    assert "names criteria ['sources']" in message


def test_a_per_criterion_threshold_must_be_a_number(tmp_path: Path) -> None:
    message = problem(tmp_path, TIERS.replace("{correct: 0.9}", "{correct: high}"))
    assert "escalate.support_below.correct" in message
    assert "expected a number in [0, 1]" in message
