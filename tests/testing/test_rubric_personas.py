"""Specification of rubrics in ``cross_judge.testing``: personas with an accuracy per
criterion (``Persona.criteria_accuracy``), a server that knows each item's truth per
criterion (``VendorServer(criteria=, criteria_gold=, criteria_labels=)``) and answers
``per_criterion`` requests (one requirement in the message) like an ordinary verdict and
``one_call`` requests (``- id: requirement`` lines) with ``{"criteria": {...}}`` for exactly
the criteria asked; and :func:`cross_judge.testing.rubric_items`.

The HTTP tests drive a real ``VendorServer`` on 127.0.0.1 with a sync ``httpx.Client``; the
end-to-end tests send a real rubric :class:`~cross_judge.Critic` panel through
``Ensemble.judge``. Statistical bounds allow 4.5 binomial standard errors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from cross_judge import Critic, Ensemble
from cross_judge.critic._prompts import parse_prompt
from cross_judge.testing import Persona, VendorServer, rubric_items

CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}
CRITERIA = {
    "correct": "The answer is factually correct.",
    "cites": "The answer cites a source.",
    "concise": "The answer is concise.",
}
GOLD = {
    "Paris is the capital of France [1].": {"correct": "PASS", "cites": "PASS", "concise": "PASS"},
    "Lyon is the capital of France.": {"correct": "FAIL", "cites": "FAIL", "concise": "PASS"},
}
TOLERANCE_SE = 4.5

PER_CRITERION = """
id: sim-per-criterion
version: 1
system_prompt: You judge answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Requirement: {criterion}
  Reply {{"kind": "PASS or FAIL", "confidence": 0.9, "reasoning": "..."}}
criteria:
  - {id: correct, requirement: The answer is factually correct., weight: 3, gate: true}
  - {id: cites, requirement: The answer cites a source.}
  - {id: concise, requirement: The answer is concise.}
"""
ONE_CALL = """
id: sim-one-call
version: 1
system_prompt: You judge answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Judge each criterion:
  {criteria}
  Reply {{"criteria": {{"<id>": {{"kind": "PASS or FAIL", "confidence": 0.9}}}}}}
criteria_mode: one_call
criteria:
  - {id: correct, requirement: The answer is factually correct., weight: 3, gate: true}
  - {id: cites, requirement: The answer cites a source.}
  - {id: concise, requirement: The answer is concise.}
"""


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[tuple[VendorServer, httpx.Client]]:
    kwargs.setdefault("criteria", CRITERIA)
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


def per_criterion_text(item: str, cid: str) -> str:
    return f"<item>{item}</item>\nRequirement: {CRITERIA[cid]}\nReply in JSON."


def one_call_text(item: str, ids: list[str]) -> str:
    lines = "\n".join(f"- {cid}: {CRITERIA[cid]}" for cid in ids)
    return f"<item>{item}</item>\nJudge each criterion:\n{lines}\nReply in JSON."


def chat(client: httpx.Client, model: str, text: str, **fields: Any) -> Any:
    body = {"model": model, "messages": [{"role": "user", "content": text}], **fields}
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return json.loads(response.json()["choices"][0]["message"]["content"])


# -- configuration ---------------------------------------------------------------------------


def test_persona_criteria_accuracy_falls_back_to_accuracy() -> None:
    persona = Persona("p", accuracy=0.7, criteria_accuracy={"cites": 0.2})
    assert persona.accuracy_for("cites") == 0.2
    assert persona.accuracy_for("correct") == 0.7


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan, "0.5", True])
def test_persona_criteria_accuracy_outside_zero_to_one_raises(value: Any) -> None:
    with pytest.raises(ValueError, match=r"criteria_accuracy\['cites'\] must be a probability"):
        Persona("p", criteria_accuracy={"cites": value})


def test_persona_criteria_accuracy_is_read_only() -> None:
    given = {"cites": 0.5}
    persona = Persona("p", criteria_accuracy=given)
    given["cites"] = 0.9
    assert persona.accuracy_for("cites") == 0.5
    with pytest.raises(TypeError):
        persona.criteria_accuracy["cites"] = 0.1  # type: ignore[index]  # the point: read-only


def test_criteria_gold_naming_an_unknown_criterion_raises_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"'tone'.*add it to criteria"):
        VendorServer(criteria=CRITERIA, criteria_gold={"an item": {"tone": "PASS"}})


def test_criteria_gold_label_outside_criteria_labels_raises_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"'MAYBE'.*criteria_labels"):
        VendorServer(criteria=CRITERIA, criteria_gold={"an item": {"cites": "MAYBE"}})


def test_criteria_gold_without_criteria_raises_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"criteria_gold needs criteria="):
        VendorServer(criteria_gold={"an item": {"cites": "PASS"}})


def test_persona_criteria_accuracy_naming_an_unknown_criterion_raises() -> None:
    with pytest.raises(ValueError, match=r"'cite'.*not among the server's criteria"):
        VendorServer([Persona("p", criteria_accuracy={"cite": 1.0})], criteria=CRITERIA)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"criteria": {"": "text"}},
        {"criteria": {"a": "  "}},
        {"criteria_labels": ("PASS",)},
        {"criteria_labels": ("PASS", "PASS")},
    ],
)
def test_bad_criteria_settings_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="criteria"):
        VendorServer(**kwargs)


# -- per_criterion ---------------------------------------------------------------------------


def test_per_criterion_persona_is_right_on_an_accuracy_one_criterion_and_wrong_on_zero() -> None:
    persona = Persona("p", accuracy=0.5, criteria_accuracy={"correct": 1.0, "cites": 0.0})
    with serving(persona, criteria_gold=GOLD) as (_, client):
        for item, truth in GOLD.items():
            correct = chat(client, "p", per_criterion_text(item, "correct"))
            cites = chat(client, "p", per_criterion_text(item, "cites"))
            assert correct["kind"] == truth["correct"]
            assert cites["kind"] != truth["cites"]
            assert cites["kind"] in ("PASS", "FAIL")


def test_per_criterion_answer_follows_the_persona_style() -> None:
    persona = Persona("p", style="fenced", accuracy=1.0)
    with serving(persona, criteria_gold=GOLD) as (_, client):
        body = {
            "model": "p",
            "messages": [
                {
                    "role": "user",
                    "content": per_criterion_text("Lyon is the capital of France.", "cites"),
                }
            ],
        }
        text = client.post("/chat/completions", json=body).json()["choices"][0]["message"][
            "content"
        ]
    assert text.startswith("I reviewed the item") and '"kind": "FAIL"' in text


def test_wrong_answers_on_an_ordinal_scale_are_spread_over_the_other_labels() -> None:
    labels = ("1", "2", "3", "4", "5")
    items = {f"ordinal item {i:03d}": {"cites": "3"} for i in range(200)}
    persona = Persona("p", criteria_accuracy={"cites": 0.0})
    seen: set[str] = set()
    with serving(persona, criteria_gold=items, criteria_labels=labels) as (_, client):
        for item in list(items)[:60]:
            seen.add(chat(client, "p", per_criterion_text(item, "cites"))["kind"])
    assert seen == {"1", "2", "4", "5"}


def test_each_criterion_of_an_item_gets_its_own_draw() -> None:
    """With accuracy 0.5 everywhere, the criteria of one item are right independently."""
    items = rubric_items(300, list(CRITERIA), seed=3)
    persona = Persona("p", accuracy=0.5)
    same = 0
    with serving(persona, criteria_gold=items) as (_, client):
        for item, truth in items.items():
            a = chat(client, "p", per_criterion_text(item, "correct"))["kind"] == truth["correct"]
            b = chat(client, "p", per_criterion_text(item, "cites"))["kind"] == truth["cites"]
            same += a == b
    # independent: P(same) = 0.5; identical draws would give 1.
    assert abs(same / 300 - 0.5) <= TOLERANCE_SE * math.sqrt(0.25 / 300)


def test_an_item_without_criteria_gold_has_a_latent_truth_shared_by_personas() -> None:
    personas = [Persona(f"p{i}", accuracy=1.0, seed=i) for i in range(3)]
    with serving(*personas) as (_, client):
        for cid in CRITERIA:
            answers = {
                chat(client, f"p{i}", per_criterion_text("an unknown item", cid))["kind"]
                for i in range(3)
            }
            assert len(answers) == 1 and answers <= {"PASS", "FAIL"}


def test_per_criterion_schema_request_gets_the_label_in_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "kind": {"type": "string", "enum": ["PASS", "FAIL"]},
            "confidence": {"type": "number"},
        },
        "required": ["reasoning", "kind", "confidence"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": schema}}
    persona = Persona("p", criteria_accuracy={"cites": 1.0}, style="messy")
    with serving(persona, criteria_gold=GOLD) as (_, client):
        answer = chat(
            client,
            "p",
            per_criterion_text("Lyon is the capital of France.", "cites"),
            response_format=fmt,
        )
    assert list(answer) == ["reasoning", "kind", "confidence"] and answer["kind"] == "FAIL"


def test_per_criterion_logprobs_use_the_criterion_vocabulary() -> None:
    persona = Persona("p", criteria_accuracy={"cites": 1.0})
    with serving(persona, criteria_gold=GOLD) as (_, client):
        body = {
            "model": "p",
            "messages": [
                {
                    "role": "user",
                    "content": per_criterion_text("Lyon is the capital of France.", "cites"),
                }
            ],
            "logprobs": True,
            "top_logprobs": 5,
        }
        choice = client.post("/chat/completions", json=body).json()["choices"][0]
    label_tokens = [t for t in choice["logprobs"]["content"] if t["token"] in ("PASS", "FAIL")]
    assert label_tokens and {a["token"] for a in label_tokens[0]["top_logprobs"]} == {
        "PASS",
        "FAIL",
    }


# -- one_call --------------------------------------------------------------------------------


def test_one_call_answer_lists_exactly_the_criteria_asked() -> None:
    persona = Persona("p", criteria_accuracy={"correct": 1.0, "cites": 0.0})
    item = "Paris is the capital of France [1]."
    with serving(persona, criteria_gold=GOLD) as (_, client):
        answer = chat(client, "p", one_call_text(item, ["cites", "correct"]))
        only = chat(client, "p", one_call_text(item, ["concise"]))
    assert set(answer) == {"criteria"}
    assert list(answer["criteria"]) == ["cites", "correct"]
    assert answer["criteria"]["correct"]["kind"] == "PASS"
    assert answer["criteria"]["cites"]["kind"] == "FAIL"
    assert set(answer["criteria"]["cites"]) == {"kind", "confidence", "reasoning"}
    assert list(only["criteria"]) == ["concise"]


def test_one_call_criterion_answers_equal_the_per_criterion_ones() -> None:
    """The draw is per (item, criterion), whatever the request's mode."""
    items = rubric_items(20, list(CRITERIA), seed=1)
    persona = Persona("p", accuracy=0.6)
    with serving(persona, criteria_gold=items) as (_, client):
        for item in items:
            together = chat(client, "p", one_call_text(item, list(CRITERIA)))["criteria"]
            for cid in CRITERIA:
                alone = chat(client, "p", per_criterion_text(item, cid))
                assert together[cid]["kind"] == alone["kind"]


def test_one_call_schema_request_conforms_to_the_schema() -> None:
    answer_schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "kind": {"type": "string", "enum": ["PASS", "FAIL"]},
            "confidence": {"type": "number"},
        },
        "required": ["reasoning", "kind", "confidence"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "object",
                "properties": {"correct": answer_schema, "concise": answer_schema},
                "required": ["correct", "concise"],
                "additionalProperties": False,
            }
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "strict": True, "schema": schema}}
    persona = Persona("p", accuracy=1.0, style="think")
    item = "Lyon is the capital of France."
    with serving(persona, criteria_gold=GOLD) as (_, client):
        answer = chat(client, "p", one_call_text(item, ["correct", "concise"]), response_format=fmt)
    assert list(answer) == ["criteria"]
    assert list(answer["criteria"]) == ["correct", "concise"]
    for cid, value in answer["criteria"].items():
        assert list(value) == ["reasoning", "kind", "confidence"]
        assert value["kind"] == GOLD[item][cid]
        assert isinstance(value["confidence"], float) and isinstance(value["reasoning"], str)


def test_one_call_forced_tool_input_holds_the_criteria() -> None:
    schema = {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "object",
                "properties": {
                    "cites": {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "enum": ["PASS", "FAIL"]},
                            "confidence": {"type": "number"},
                        },
                    }
                },
            }
        },
    }
    persona = Persona("p", accuracy=1.0)
    item = "Paris is the capital of France [1]."
    with serving(persona, criteria_gold=GOLD) as (server, _):
        body = {
            "model": "p",
            "max_tokens": 200,
            "messages": [{"role": "user", "content": one_call_text(item, ["cites"])}],
            "tools": [{"name": "verdict", "input_schema": schema}],
            "tool_choice": {"type": "tool", "name": "verdict"},
        }
        response = httpx.post(
            f"{server.anthropic_url}/v1/messages", json=body, **CLIENT_OPTIONS
        ).json()
    block = response["content"][0]
    assert block["type"] == "tool_use"
    assert list(block["input"]) == ["criteria"]
    assert list(block["input"]["criteria"]) == ["cites"]
    assert list(block["input"]["criteria"]["cites"]) == ["kind", "confidence"]
    assert block["input"]["criteria"]["cites"]["kind"] == "PASS"


@pytest.mark.parametrize("style", ["json", "fenced", "think", "messy"])
def test_one_call_text_answers_follow_the_persona_style(style: str) -> None:
    persona = Persona("p", accuracy=1.0, style=style)  # type: ignore[arg-type]  # a Style
    item = "Lyon is the capital of France."
    with serving(persona, criteria_gold=GOLD) as (_, client):
        body = {
            "model": "p",
            "messages": [{"role": "user", "content": one_call_text(item, list(CRITERIA))}],
        }
        text = client.post("/chat/completions", json=body).json()["choices"][0]["message"][
            "content"
        ]
    critic = Critic(
        name="c",
        model="p",
        vendor="custom",
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        prompt=parse_prompt(ONE_CALL),
    )
    read = critic.read_criteria(text)
    assert not isinstance(read, str), read
    assert {cid: v.kind for cid, v in read.items()} == GOLD[item]


# -- correlated errors -----------------------------------------------------------------------


def criterion_wrongness(rho: float, n: int) -> tuple[list[bool], list[bool], list[bool]]:
    """Over n items: whether personas a and b are wrong on criterion correct, and whether a
    is wrong on criterion cites."""
    items = rubric_items(n, list(CRITERIA), seed=7)
    personas = [Persona("a", accuracy=0.7), Persona("b", accuracy=0.7, seed=1)]
    a_wrong, b_wrong, a_cites_wrong = [], [], []
    with serving(*personas, criteria_gold=items, error_correlation=rho) as (_, client):
        for item, truth in items.items():
            ask = one_call_text(item, ["correct", "cites"])
            a = chat(client, "a", ask)["criteria"]
            b = chat(client, "b", ask)["criteria"]
            a_wrong.append(a["correct"]["kind"] != truth["correct"])
            b_wrong.append(b["correct"]["kind"] != truth["correct"])
            a_cites_wrong.append(a["cites"]["kind"] != truth["cites"])
    return a_wrong, b_wrong, a_cites_wrong


def phi(a: list[bool], b: list[bool]) -> float:
    pairs = list(zip(a, b, strict=True))
    n11 = sum(x and y for x, y in pairs)
    n10 = sum(x and not y for x, y in pairs)
    n01 = sum(y and not x for x, y in pairs)
    n00 = len(pairs) - n11 - n10 - n01
    return (n11 * n00 - n10 * n01) / math.sqrt(
        (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
    )


def test_error_correlation_makes_personas_wrong_together_per_item_and_criterion() -> None:
    n = 400
    a_wrong, b_wrong, a_cites_wrong = criterion_wrongness(0.6, n)
    # Accuracy holds on average over (item, criterion) difficulties.
    assert abs(sum(a_wrong) / n - 0.3) <= TOLERANCE_SE * math.sqrt(0.21 / n)
    # Two personas are wrong together on a hard criterion of an item...
    assert phi(a_wrong, b_wrong) > 0.25
    # ...while the criteria of one item have difficulties of their own.
    assert abs(phi(a_wrong, a_cites_wrong)) < TOLERANCE_SE / math.sqrt(n)


def test_without_error_correlation_personas_err_independently_per_criterion() -> None:
    n = 400
    a_wrong, b_wrong, _ = criterion_wrongness(0.0, n)
    assert abs(phi(a_wrong, b_wrong)) < TOLERANCE_SE / math.sqrt(n)


# -- faults, resample ------------------------------------------------------------------------


def test_fault_rate_applies_per_rubric_request() -> None:
    persona = Persona("p", fault_rate=1.0)
    with serving(persona, criteria_gold=GOLD) as (server, client):
        body = {
            "model": "p",
            "messages": [
                {
                    "role": "user",
                    "content": per_criterion_text("Lyon is the capital of France.", "cites"),
                }
            ],
        }
        response = client.post("/chat/completions", json=body)
        assert server.stats()["faults"] == 1
    if response.status_code == 200:  # the "malformed" fault: a truncated JSON body
        with pytest.raises(ValueError):
            response.json()
    else:
        assert response.status_code in (429, 500, 503)


def test_resample_draws_afresh_per_criterion_at_temperature_above_zero() -> None:
    persona = Persona("p", accuracy=0.5, resample=True)
    text = per_criterion_text("Lyon is the capital of France.", "cites")
    with serving(persona, criteria_gold=GOLD) as (_, client):
        kinds = {chat(client, "p", text, temperature=1.0)["kind"] for _ in range(30)}
        fixed = {chat(client, "p", text, temperature=0)["kind"] for _ in range(5)}
    assert kinds == {"PASS", "FAIL"}
    assert len(fixed) == 1


# -- rubric_items ----------------------------------------------------------------------------


def test_rubric_items_are_seeded_and_hold_every_criterion() -> None:
    items = rubric_items(50, ["a", "b"], seed=4)
    assert items == rubric_items(50, ["a", "b"], seed=4)
    assert items != rubric_items(50, ["a", "b"], seed=5)
    assert len(items) == 50
    assert all(set(v) == {"a", "b"} and set(v.values()) <= {"PASS", "FAIL"} for v in items.values())


def test_rubric_items_pass_rate_sets_the_share_of_the_first_label() -> None:
    items = rubric_items(2000, ["a"], seed=0, pass_rate=0.8)
    share = sum(v["a"] == "PASS" for v in items.values()) / 2000
    assert abs(share - 0.8) <= TOLERANCE_SE * math.sqrt(0.16 / 2000)


def test_rubric_items_no_item_text_contains_another() -> None:
    texts = list(rubric_items(120, ["a"], seed=0))
    assert not any(a != b and a in b for a in texts for b in texts)


@pytest.mark.parametrize(
    "kwargs",
    [{"n_items": -1}, {"criteria_ids": []}, {"pass_rate": 1.5}, {"labels": ("PASS",)}],
)
def test_rubric_items_bad_arguments_raise(kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"n_items": 3, "criteria_ids": ["a"], "seed": 0, **kwargs}
    with pytest.raises(ValueError):
        rubric_items(**arguments)


# -- end to end: a rubric panel through Ensemble.judge ---------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("prompt", [PER_CRITERION, ONE_CALL], ids=["per_criterion", "one_call"])
@pytest.mark.parametrize("structured", ["off", "schema"])
async def test_rubric_panel_votes_each_criterion_from_the_simulated_truth(
    prompt: str, structured: str
) -> None:
    spec = parse_prompt(prompt)
    item = "Lyon is the capital of France."
    personas = [
        Persona("a", accuracy=1.0),
        Persona("b", accuracy=1.0, style="fenced"),
        Persona("c", accuracy=1.0, criteria_accuracy={"concise": 0.0}),
    ]
    async with VendorServer(personas, criteria=CRITERIA, criteria_gold=GOLD) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                vendor="custom",
                base_url=server.url,
                api_key="k",
                prompt=spec,
                structured=structured,  # type: ignore[arg-type]  # "off" or "schema"
            )
            for p in personas
        ]
        result = await Ensemble(critics).judge(item)
    assert result.criteria is not None
    assert {cid: c.consensus for cid, c in result.criteria.items()} == GOLD[item]
    assert result.disputed_criteria == ["concise"]
    assert result.consensus == "FAIL"  # the gate "correct" fails
    by_critic = {v.critic_id: v for v in result.verdicts}
    assert by_critic["c"].criteria is not None
    assert by_critic["c"].criteria["concise"].kind == "FAIL"


@pytest.mark.anyio
async def test_rubric_panel_from_the_python_server_derives_criteria_from_a_rubric() -> None:
    """``criteria`` can be taken from a prompt's rubric: ``{c.id: c.requirement}``."""
    spec = parse_prompt(ONE_CALL)
    assert spec.rubric is not None
    criteria = {c.id: c.requirement for c in spec.rubric.criteria}
    items = rubric_items(12, list(criteria), seed=2)
    async with VendorServer(
        [Persona("a", accuracy=1.0)], criteria=criteria, criteria_gold=items
    ) as server:
        critic = Critic(
            name="a", model="a", vendor="custom", base_url=server.url, api_key="k", prompt=spec
        )
        ensemble = Ensemble([critic])
        for item, truth in items.items():
            result = await ensemble.judge(item)
            assert result.criteria is not None
            assert {cid: c.consensus for cid, c in result.criteria.items()} == truth
