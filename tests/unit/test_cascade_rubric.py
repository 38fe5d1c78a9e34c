"""Specification of a Cascade of rubric panels (issue 28): each criterion escalates on its
own, and the next tier is asked only about the criteria the previous tier left open.

The critics talk to an ``httpx.MockTransport`` vendor whose answers are scripted per
(model, item, criterion): the handler reads the criterion id from the request text and
records every request, so a test can count what each tier was asked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from cross_judge import ABSTAIN, Cascade, ConfigError, Critic, Ensemble, EnsembleVerdict
from cross_judge.cascade import Escalation
from cross_judge.critic._prompts import parse_prompt

RUBRIC_YAML = """
id: rq
version: 1
system_prompt: You judge answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Criterion {criterion_id}: {criterion}
  Reply {{"kind": "PASS or FAIL", "confidence": 0.9, "reasoning": "..."}}
criteria:
  - {id: a, requirement: The answer is correct., weight: 2, gate: true}
  - {id: b, requirement: The answer cites a source.}
  - {id: c, requirement: The answer is concise.}
"""
OTHER_YAML = RUBRIC_YAML.replace("weight: 2", "weight: 5")

Script = Mapping[str, Mapping[str, str]]
"""model -> criterion -> label (``"*"`` for any item); a missing entry answers PASS."""


class Vendor:
    """A scripted OpenAI-compatible vendor: ``answers[model][criterion]`` (optionally
    ``answers[model][f"{item}/{criterion}"]``), recording ``(model, criterion)`` per request."""

    def __init__(self, answers: Script) -> None:
        self.answers = answers
        self.requests: list[tuple[str, str]] = []

    def asked(self, model: str) -> list[str]:
        """The criteria ``model`` was asked about, in order."""
        return [cid for who, cid in self.requests if who == model]

    async def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(b"".join([chunk async for chunk in request.stream]))  # type: ignore[union-attr]
        model = body["model"]
        user = body["messages"][-1]["content"]
        criterion = user.split("Criterion ", 1)[1].split(":", 1)[0]
        item = user.split("<item>", 1)[1].split("</item>", 1)[0]
        self.requests.append((model, criterion))
        script = self.answers.get(model, {})
        label = script.get(f"{item}/{criterion}", script.get(criterion, "PASS"))
        content = json.dumps({"kind": label, "confidence": 0.8, "reasoning": "scripted"})
        return httpx.Response(
            200,
            json={
                "id": "1",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )

    def critic(self, name: str, yaml: str = RUBRIC_YAML) -> Critic:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
        return Critic(
            name=name,
            model=name,
            vendor="custom",
            base_url="http://vendor.test/v1",
            api_key="k",
            prompt=parse_prompt(yaml),
            http_client=client,
        )

    def cascade(self, **options: Any) -> Cascade:
        cheap = Ensemble([self.critic("c0"), self.critic("c1"), self.critic("c2")])
        strong = Ensemble([self.critic("s0")])
        return Cascade(tiers=[cheap, strong], **options)


# Tier 0 agrees on a and b, and splits 2-1 on c; the strong critic fails c.
SPLIT_ON_C: Script = {"c2": {"c": "FAIL"}, "s0": {"c": "FAIL"}}


@pytest.mark.anyio
async def test_the_next_tier_is_asked_only_about_the_disputed_criterion() -> None:
    vendor = Vendor(SPLIT_ON_C)
    result = await vendor.cascade().judge("item")
    assert vendor.asked("s0") == ["c"]
    assert sorted(vendor.asked("c0")) == ["a", "b", "c"]
    assert result.tier == 1
    assert result.tiers is not None and len(result.tiers) == 2
    assert list(result.tiers[1].criteria or {}) == ["c"]


@pytest.mark.anyio
async def test_each_criterion_is_decided_by_the_last_tier_that_judged_it() -> None:
    result = await Vendor(SPLIT_ON_C).cascade().judge("item")
    criteria = result.criteria or {}
    assert {cid: (c.consensus, c.tier) for cid, c in criteria.items()} == {
        "a": ("PASS", 0),
        "b": ("PASS", 0),
        "c": ("FAIL", 1),
    }
    assert list(criteria) == ["a", "b", "c"]  # rubric order
    assert not criteria["c"].disputed  # tier 1's one critic is unanimous


@pytest.mark.anyio
async def test_the_total_is_the_weighted_total_over_the_merged_criteria() -> None:
    result = await Vendor(SPLIT_ON_C).cascade().judge("item")
    # a (weight 2) and b met at tier 0, c failed at tier 1: (2 + 1) / 4.
    assert result.score == pytest.approx(0.75)
    assert result.consensus == "PASS"
    assert result.rubric is not None and result.rubric.ids == ("a", "b", "c")
    assert result.disputed_criteria == []


@pytest.mark.anyio
async def test_a_gate_failed_in_the_next_tier_makes_the_total_zero() -> None:
    vendor = Vendor({"c2": {"a": "FAIL"}, "s0": {"a": "FAIL"}})
    result = await vendor.cascade().judge("item")
    assert vendor.asked("s0") == ["a"]
    assert result.score == 0.0
    assert result.consensus == "FAIL"
    assert (result.criteria or {})["a"].tier == 1


@pytest.mark.anyio
async def test_a_tier_that_agrees_on_every_criterion_decides_alone() -> None:
    vendor = Vendor({})
    result = await vendor.cascade().judge("item")
    assert vendor.asked("s0") == []
    assert result.tier == 0
    assert result.score == 1.0
    assert result.tiers is not None and len(result.tiers) == 1


@pytest.mark.anyio
async def test_calls_usage_and_cost_cover_every_tier_asked() -> None:
    result = await Vendor(SPLIT_ON_C).cascade().judge("item")
    assert [v.critic_id for v in result.verdicts] == ["c0", "c1", "c2", "s0"]
    # 3 critics x 3 criteria + 1 critic x 1 criterion, 15 tokens each.
    assert result.usage.prompt_tokens + result.usage.completion_tokens == 10 * 15


@pytest.mark.anyio
async def test_on_dispute_false_lets_a_majority_on_a_criterion_stand() -> None:
    vendor = Vendor(SPLIT_ON_C)
    result = await vendor.cascade(escalate=Escalation(on_dispute=False)).judge("item")
    assert vendor.asked("s0") == []
    assert (result.criteria or {})["c"].consensus == "PASS"
    assert (result.criteria or {})["c"].disputed


@pytest.mark.anyio
async def test_a_threshold_applies_to_each_criterion_s_own_agreement() -> None:
    # 2 of 3 agree on c (0.67): below 0.9 escalates c only; at 0.6 nothing escalates.
    vendor = Vendor(SPLIT_ON_C)
    await vendor.cascade(escalate=Escalation(agreement_below=0.9, on_dispute=False)).judge("x")
    assert vendor.asked("s0") == ["c"]
    vendor = Vendor(SPLIT_ON_C)
    await vendor.cascade(escalate=Escalation(agreement_below=0.6, on_dispute=False)).judge("x")
    assert vendor.asked("s0") == []


@pytest.mark.anyio
async def test_a_threshold_per_criterion_id_applies_to_that_criterion_only() -> None:
    # Tier 0 splits on b and on c; only c has a threshold.
    vendor = Vendor({"c2": {"b": "FAIL", "c": "FAIL"}})
    rule = Escalation(support_below={"c": 0.9}, on_dispute=False)
    result = await vendor.cascade(escalate=rule).judge("x")
    assert vendor.asked("s0") == ["c"]
    assert (result.criteria or {})["b"].tier == 0


@pytest.mark.anyio
async def test_a_callable_rule_is_asked_per_criterion() -> None:
    seen: list[tuple[str, int]] = []

    def rule(view: EnsembleVerdict, tier: int) -> bool:
        seen.append((view.meta["criterion"], tier))
        return bool(view.meta["criterion"] == "b")

    vendor = Vendor({})
    await vendor.cascade(escalate=rule).judge("x")
    assert seen == [("a", 0), ("b", 0), ("c", 0)]
    assert vendor.asked("s0") == ["b"]


@pytest.mark.anyio
async def test_with_final_abstain_a_criterion_still_open_makes_the_item_abstain() -> None:
    vendor = Vendor({"c2": {"c": "FAIL"}})
    cheap = Ensemble([vendor.critic("c0"), vendor.critic("c1"), vendor.critic("c2")])
    result = await Cascade(tiers=[cheap], final="abstain").judge("x")
    criteria = result.criteria or {}
    assert criteria["c"].consensus == ABSTAIN
    assert criteria["a"].consensus == "PASS"
    assert result.consensus == ABSTAIN
    assert result.score is None


@pytest.mark.anyio
async def test_with_final_abstain_a_failed_gate_that_stood_still_decides_fail() -> None:
    # a (the gate) fails unanimously; c stays disputed.
    script = {name: {"a": "FAIL"} for name in ("c0", "c1", "c2")}
    vendor = Vendor({**script, "c2": {"a": "FAIL", "c": "FAIL"}})
    cheap = Ensemble([vendor.critic("c0"), vendor.critic("c1"), vendor.critic("c2")])
    result = await Cascade(tiers=[cheap], final="abstain").judge("x")
    assert (result.criteria or {})["c"].consensus == ABSTAIN
    assert result.consensus == "FAIL"
    assert result.score == 0.0


@pytest.mark.anyio
async def test_all_tiers_asks_every_tier_about_every_criterion() -> None:
    vendor = Vendor(SPLIT_ON_C)
    result = await vendor.cascade().judge("x", all_tiers=True)
    assert sorted(vendor.asked("s0")) == ["a", "b", "c"]
    assert result.tiers is not None
    assert [sorted(t.criteria or {}) for t in result.tiers] == [["a", "b", "c"]] * 2
    assert {cid: c.tier for cid, c in (result.criteria or {}).items()} == {
        "a": 0,
        "b": 0,
        "c": 1,
    }
    assert result.score == pytest.approx(0.75)


@pytest.mark.anyio
async def test_replay_re_decides_each_criterion_without_calls() -> None:
    # item i0 splits on c, item i1 splits on b; the strong critic fails both.
    vendor = Vendor(
        {"c2": {"i0/c": "FAIL", "i1/b": "FAIL"}, "s0": {"c": "FAIL", "b": "FAIL"}},
    )
    cascade = vendor.cascade()
    stored = await cascade.judge_many(
        [{"id": "i0", "query": "i0"}, {"id": "i1", "query": "i1"}], all_tiers=True
    )
    before = len(vendor.requests)
    replayed = cascade.replay(stored)
    live = {r.query_id: r for r in stored.verdicts}
    assert len(vendor.requests) == before
    for result in replayed.verdicts:
        assert result.criteria == live[result.query_id].criteria
        assert result.score == live[result.query_id].score
    lenient = cascade.replay(stored, escalation=Escalation(on_dispute=False))
    assert [r.tier for r in lenient.verdicts] == [0, 0]
    assert [r.score for r in lenient.verdicts] == [1.0, 1.0]


@pytest.mark.anyio
async def test_replay_refuses_a_rubric_result_missing_the_tier_a_criterion_goes_to() -> None:
    vendor = Vendor(SPLIT_ON_C)
    cascade = vendor.cascade()
    stored = await cascade.judge_many([{"id": "i0", "query": "i0"}])
    # Stored live: tier 1 judged c only; a rule that also sends b there cannot be replayed.
    with pytest.raises(ConfigError, match=r"tier 1 holds no result on criteria \['a', 'b'\]"):
        cascade.replay(stored, escalation=Escalation(agreement_below=math.inf))


def test_tiers_with_different_rubrics_are_refused_with_the_fix() -> None:
    vendor = Vendor({})
    cheap = Ensemble([vendor.critic("c0")])
    strong = Ensemble([vendor.critic("s0", OTHER_YAML)])
    with pytest.raises(ConfigError, match="share one rubric"):
        Cascade(tiers=[cheap, strong])


def test_a_rubric_tier_beside_a_plain_tier_is_refused() -> None:
    vendor = Vendor({})
    plain = parse_prompt(
        "id: p\nversion: 1\nsystem_prompt: s\nuser_prompt_template: 'Judge {query}'\n"
    )
    cheap = Ensemble([vendor.critic("c0")])
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    other = Critic(
        name="s0", model="s0", vendor="custom", base_url="http://v/v1", api_key="k",
        prompt=plain, http_client=client,
    )  # fmt: skip
    with pytest.raises(ConfigError, match="rubric"):
        Cascade(tiers=[cheap, Ensemble([other])])


def test_thresholds_per_criterion_need_a_rubric_cascade() -> None:
    plain = parse_prompt(
        "id: p\nversion: 1\nsystem_prompt: s\nuser_prompt_template: 'Judge {query}'\n"
    )
    critic = Critic(
        name="p0", model="p0", vendor="custom", base_url="http://v/v1", api_key="k", prompt=plain
    )
    with pytest.raises(ConfigError, match="criterion"):
        Cascade(tiers=[Ensemble([critic])], escalate=Escalation(agreement_below={"a": 0.9}))


def test_thresholds_for_unknown_criteria_are_refused() -> None:
    vendor = Vendor({})
    with pytest.raises(ConfigError, match=r"names criteria \['zz'\]"):
        vendor.cascade(escalate=Escalation(agreement_below={"zz": 0.9}))
