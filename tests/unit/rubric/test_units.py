"""Prompts that judge each turn or step on its own (``unit: turn|step``): each unit is a
criterion of the item's result, voted and measured like a rubric's criteria, and a cascade
sends only the disputed units to its stronger tier."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cross_judge import (
    BatchResult,
    Cascade,
    ConfigError,
    Ensemble,
    Escalation,
    Item,
    ItemError,
    PromptError,
)
from cross_judge.critic._prompts import parse_prompt
from cross_judge.rubric import Criterion, Rubric, unit_of

from .vendor import Reply, Vendor

STEP_PROMPT = parse_prompt(
    """\
id: step-check
version: 1
unit: step
max_units: 6
user_prompt_template: |
  Task: {query}
  {trajectory}
  Judge step {step_number}: {step}
"""
)
TURN_PROMPT = parse_prompt(
    """\
id: turn-check
version: 1
unit: turn
criteria_mode: one_call
criteria:
  - {id: answers, requirement: The turn answers the user., weight: 2}
  - {id: consistent, requirement: The turn agrees with earlier turns.}
user_prompt_template: |
  {conversation}
  Judge turn {turn_number}: {turn}
  {criteria}
"""
)
RUN = Item(
    query="tidy /tmp",
    trajectory=[
        {"name": "ls", "arguments": {"p": "/tmp"}, "result": ["a"]},
        {"name": "rm", "arguments": {"p": "/"}, "error": "denied"},
        {"final_answer": "done"},
    ],
)
CHAT = Item(
    messages=[
        {"role": "user", "content": "Book Anna's?"},
        {"role": "assistant", "content": "Shall I book 8pm?"},
        {"role": "user", "content": "Yes"},
        {"role": "assistant", "content": "Booked 8pm."},
    ]
)


def step_of(user: str) -> int:
    found = re.search(r"Judge step (\d+):", user)
    assert found is not None
    return int(found.group(1))


def answer(kind: str) -> str:
    return json.dumps({"kind": kind, "confidence": 0.9, "reasoning": "r"})


def by_step(labels: dict[str, dict[int, str]]) -> Vendor:
    """Each critic (model) answers its label for the step asked (PASS when not listed)."""

    def script(model: str, user: str) -> Reply:
        return answer(labels.get(model, {}).get(step_of(user), "PASS"))

    return Vendor(script)


def test_a_unit_prompt_has_a_rubric_of_its_unit() -> None:
    rubric = STEP_PROMPT.rubric
    assert rubric is not None and rubric.unit == "step" and rubric.per_unit_only
    assert TURN_PROMPT.rubric is not None and TURN_PROMPT.rubric.ids == ("answers", "consistent")


def test_an_items_rubric_has_a_criterion_per_unit() -> None:
    rubric = Rubric(criteria=(Criterion(id="step", requirement="r", gate=True),), unit="step")
    assert rubric.for_units([1, 2, 3]).ids == ("step-1", "step-2", "step-3")
    assert TURN_PROMPT.rubric is not None
    assert TURN_PROMPT.rubric.for_units([2, 4]).ids == (
        "turn-2.answers",
        "turn-2.consistent",
        "turn-4.answers",
        "turn-4.consistent",
    )


def test_a_unit_id_names_its_unit_and_criterion() -> None:
    assert unit_of("step-7") == ("step", 7, None)
    assert unit_of("turn-4.consistent") == ("turn", 4, "consistent")
    assert unit_of("correct") is None


def test_each_step_is_asked_on_its_own_with_the_whole_trajectory() -> None:
    v = by_step({})
    v.critic("a", STEP_PROMPT).judge_sync(RUN)
    users = v.users()
    assert sorted(step_of(u) for u in users) == [1, 2, 3]
    assert all("[step 2] call rm" in u for u in users)
    assert any('Judge step 2: [step 2] call rm({"p":"/"}) -> ERROR: denied' in u for u in users)


def test_the_panel_says_where_its_critics_split() -> None:
    v = by_step({"b": {2: "FAIL"}, "c": {2: "FAIL"}})
    result = Ensemble([v.critic(n, STEP_PROMPT) for n in "abc"]).judge_sync(RUN)
    assert result.criteria is not None
    assert list(result.criteria) == ["step-1", "step-2", "step-3"]
    split = result.criteria["step-2"]
    assert split.consensus == "FAIL" and split.dissenters == ["a"]
    assert split.agreement_pct == pytest.approx(2 / 3)
    assert result.criteria["step-1"].agreement_pct == 1.0
    assert result.consensus == "FAIL"  # a failed step fails the run


def test_a_run_whose_every_step_passes_passes() -> None:
    result = Ensemble([by_step({}).critic(n, STEP_PROMPT) for n in "ab"]).judge_sync(RUN)
    assert result.consensus == "PASS" and result.score == 1.0


def test_each_assistant_turn_is_judged_on_the_turns_up_to_it() -> None:
    def script(model: str, user: str) -> Reply:
        asked = [line[2:].split(":")[0] for line in user.splitlines() if line.startswith("- ")]
        body = {cid: {"kind": "PASS", "confidence": 0.8, "reasoning": "r"} for cid in asked}
        return json.dumps({"criteria": body})

    v = Vendor(script)
    result = Ensemble([v.critic("a", TURN_PROMPT), v.critic("b", TURN_PROMPT)]).judge_sync(CHAT)
    turn2 = [u for u in v.users() if "Judge turn 2:" in u]
    assert turn2 and all("[turn 3]" not in u for u in turn2)  # later turns are not shown
    assert result.criteria is not None and set(result.criteria) == {
        "turn-2.answers",
        "turn-2.consistent",
        "turn-4.answers",
        "turn-4.consistent",
    }
    assert len(v.requests) == 4  # one call per turn per critic (one_call)
    assert result.consensus == "PASS"


def test_an_item_with_more_units_than_max_units_is_refused_before_any_call() -> None:
    v = by_step({})
    long_run = Item(query="q", trajectory=[{"name": "t", "arguments": {"i": i}} for i in range(7)])
    with pytest.raises(ItemError, match="has 7, over the prompt's max_units=6"):
        Ensemble([v.critic("a", STEP_PROMPT)]).judge_sync(long_run)
    assert v.requests == []


def test_a_step_prompt_refuses_an_item_without_a_trajectory() -> None:
    with pytest.raises(ItemError, match=r"judges each step .* has no trajectory"):
        Ensemble([by_step({}).critic("a", STEP_PROMPT)]).judge_sync(Item(query="x"))


def test_a_turn_prompt_refuses_a_conversation_without_an_assistant_turn() -> None:
    item = Item(query="x", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ItemError, match="no assistant turn"):
        Ensemble([by_step({}).critic("a", TURN_PROMPT)]).judge_sync(item)


@pytest.mark.parametrize(
    ("template", "extra", "words"),
    [
        ("{trajectory}\n{step}", "", "filled only when each step is judged"),
        ("{trajectory}\n{turn}", "unit: step\n", "belongs to unit: turn"),
        ("{trajectory}", "unit: step\n", "has no {step} placeholder"),
        ("{query}\n{step}", "unit: step\n", "has no {trajectory} placeholder"),
        ("{conversation}", "", None),
        ("{reference}", "", "has no {query} placeholder"),
    ],
)
def test_a_unit_prompts_template_is_checked_when_loaded(
    template: str, extra: str, words: str | None
) -> None:
    text = f"id: x\nversion: 1\n{extra}user_prompt_template: '{template}'\n"
    if words is None:
        parse_prompt(text)
        return
    with pytest.raises(PromptError, match=re.escape(words)):
        parse_prompt(text)


def test_render_limits_with_an_unknown_key_are_refused_with_the_known_ones() -> None:
    text = "id: x\nversion: 1\nrender_limits: {max_steps: 3}\nuser_prompt_template: '{query}'\n"
    with pytest.raises(
        PromptError, match=r"unknown keys \['max_steps'\]; the limits are max_chars"
    ):
        parse_prompt(text)


def test_declaring_an_item_field_as_a_variable_is_refused() -> None:
    text = (
        "id: x\nversion: 1\nvariables: [reference]\nuser_prompt_template: '{query} {reference}'\n"
    )
    with pytest.raises(PromptError, match="which the item fills itself"):
        parse_prompt(text)


def test_a_cascade_sends_only_the_disputed_steps_to_its_strong_tier() -> None:
    cheap = by_step({"b": {2: "FAIL"}})  # the cheap tier splits on step 2 only
    strong = by_step({"s1": {2: "FAIL"}, "s2": {2: "FAIL"}})
    cascade = Cascade(
        tiers=[
            Ensemble([cheap.critic(n, STEP_PROMPT) for n in "ab"]),
            Ensemble([strong.critic(n, STEP_PROMPT) for n in ("s1", "s2")]),
        ],
        escalate=Escalation(),
    )
    result = cascade.judge_sync(RUN)
    assert sorted(step_of(u) for u in strong.users()) == [2, 2]  # one call per strong critic
    assert result.criteria is not None
    assert result.criteria["step-2"].tier == 1 and result.criteria["step-2"].consensus == "FAIL"
    assert result.criteria["step-1"].tier == 0
    assert result.consensus == "FAIL"


def test_panels_of_different_units_do_not_mix() -> None:
    v = by_step({})
    turn = v.critic("t", TURN_PROMPT)
    with pytest.raises(ConfigError, match="another rubric"):
        Ensemble([v.critic("s", STEP_PROMPT), turn])


def two_tier_cascade() -> tuple[Cascade, Vendor]:
    cheap = by_step({"b": {2: "FAIL"}})
    strong = by_step({"s1": {2: "FAIL"}, "s2": {2: "FAIL"}})
    cascade = Cascade(
        tiers=[
            Ensemble([cheap.critic(n, STEP_PROMPT) for n in "ab"]),
            Ensemble([strong.critic(n, STEP_PROMPT) for n in ("s1", "s2")]),
        ],
        escalate=Escalation(),
    )
    return cascade, strong


def test_all_tiers_decides_each_step_as_tier_by_tier_does() -> None:
    cascade, _ = two_tier_cascade()
    live = cascade.judge_sync(RUN)
    stored = cascade.judge_sync(RUN, all_tiers=True)
    assert stored.criteria is not None and live.criteria is not None
    assert {c: (v.consensus, v.tier) for c, v in stored.criteria.items()} == {
        c: (v.consensus, v.tier) for c, v in live.criteria.items()
    }


def test_a_replay_of_stored_tiers_escalates_steps_as_a_live_run() -> None:
    cascade, _ = two_tier_cascade()
    stored = cascade.judge_many_sync([RUN], all_tiers=True)
    (replayed,) = cascade.replay(stored).verdicts
    assert replayed.criteria is not None
    assert replayed.criteria["step-2"].tier == 1 and replayed.consensus == "FAIL"


def test_a_batch_of_step_results_reads_back_with_its_units(tmp_path: Path) -> None:
    panel = Ensemble([by_step({"b": {2: "FAIL"}}).critic(n, STEP_PROMPT) for n in "ab"])
    batch = panel.judge_many_sync([RUN])
    batch.to_jsonl(tmp_path / "out.jsonl")
    (back,) = BatchResult.from_jsonl(tmp_path / "out.jsonl").verdicts
    assert back.rubric is not None
    assert (back.rubric.unit, back.rubric.units) == ("step", (1, 2, 3))
    assert back.criteria is not None and back.criteria["step-2"].disputed
