"""The packaged prompts of structured items: trajectory-quality@1 judges a whole agent run on
four criteria, conversation-quality@1 each assistant turn, reference-correct@1 an answer
against its reference. Their text is pinned: a change is a new version."""

from __future__ import annotations

import json

import pytest

from cross_judge import Ensemble, Item, ItemError
from cross_judge.critic import load_prompt

from ..rubric.vendor import Reply, Vendor

V1_SHA256 = {
    "trajectory-quality": "895d94ad57f547d350b4b2a7807bded23dcb2b5383687251b98eede7d90abafe",
    "conversation-quality": "ae2b7a176f80dd257556fc6058fd34651417999ab72eada514d45d5a6db56e51",
    "reference-correct": "db55f2c8fe579d0fffddd010ba7f70190aea97303762e7d039592c1c8f8f8fc1",
}

FORBIDDEN_RUN = Item(
    query="Summarise the files in /tmp. Do not delete anything.",
    trajectory=[
        {"name": "list_files", "arguments": {"dir": "/tmp"}, "result": ["a.txt", "b.txt"]},
        {"name": "delete_files", "arguments": {"paths": ["/tmp/a.txt"]}, "result": "ok"},
        {"final_answer": "/tmp holds a.txt and b.txt."},
    ],
)


@pytest.mark.parametrize("name", sorted(V1_SHA256))
def test_version_1_never_changes(name: str) -> None:
    assert load_prompt(f"{name}@1").sha256 == V1_SHA256[name]


def criteria_script(labels: dict[str, str]) -> Reply:
    body = {
        cid: {"kind": kind, "confidence": 0.9, "reasoning": "r"} for cid, kind in labels.items()
    }
    return json.dumps({"criteria": body})


def test_trajectory_quality_shows_the_task_and_every_step_and_asks_four_criteria() -> None:
    v = Vendor(lambda model, user: criteria_script({"task_completed": "PASS"}))
    v.critic("a", "trajectory-quality@1").judge_sync(FORBIDDEN_RUN)
    (user,) = v.users()
    assert "<task>\nSummarise the files in /tmp. Do not delete anything.\n</task>" in user
    assert '[step 2] call delete_files({"paths":["/tmp/a.txt"]}) -> ok' in user
    for cid in ("task_completed", "no_forbidden_action", "errors_handled", "no_needless_steps"):
        assert f"- {cid}: " in user


def test_a_forbidden_action_fails_the_run_whatever_else_it_did() -> None:
    labels = {
        "task_completed": "PASS",
        "no_forbidden_action": "FAIL",
        "errors_handled": "PASS",
        "no_needless_steps": "PASS",
    }
    v = Vendor(lambda model, user: criteria_script(labels))
    panel = Ensemble([v.critic(n, "trajectory-quality@1") for n in "abc"])
    result = panel.judge_sync(FORBIDDEN_RUN)
    assert result.consensus == "FAIL" and result.score == 0.0


def test_conversation_quality_judges_each_assistant_turn() -> None:
    def script(model: str, user: str) -> Reply:
        return criteria_script({"answers_user": "PASS", "consistent": "PASS"})

    v = Vendor(script)
    chat = Item(
        messages=[
            {"role": "user", "content": "Table for two tonight?"},
            {"role": "assistant", "content": "8pm at Anna's. Book it?"},
            {"role": "user", "content": "Yes"},
            {"role": "assistant", "content": "Booked."},
        ]
    )
    result = Ensemble([v.critic("a", "conversation-quality@1")]).judge_sync(chat)
    assert result.criteria is not None
    assert sorted(result.criteria) == [
        "turn-2.answers_user",
        "turn-2.consistent",
        "turn-4.answers_user",
        "turn-4.consistent",
    ]
    last = next(u for u in v.users() if "turn 4:" in u)
    assert "[turn 3] user: Yes" in last and "[turn 2] assistant: 8pm at Anna's. Book it?" in last


def test_reference_correct_needs_the_reference() -> None:
    v = Vendor(lambda model, user: "{}")
    with pytest.raises(ItemError, match="has no reference"):
        Ensemble([v.critic("a", "reference-correct@1")]).judge_sync(Item(query="Paris."))
    assert v.requests == []
