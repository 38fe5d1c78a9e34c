"""Specification of what sways a persona beyond its accuracy in ``cross_judge.testing``: a
hidden policy (``Persona.policy``, a :class:`HiddenPolicy`) that answers a set label for
every item mentioning its trigger word unless the prompt shows otherwise, and anchoring
(``Persona.anchoring``) on the labelled examples a prompt shows; and that every answer
they leave alone is byte for byte the answer of a persona without them.

Prompts show examples as cross-judge renders them (``<example>`` blocks ending in an
``Answer: {...}`` line). The HTTP tests drive a real ``VendorServer`` on 127.0.0.1 with the
official ``openai`` and ``anthropic`` SDKs. Statistical bounds allow 4.5 binomial
standard errors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anthropic
import openai
import pytest

from cross_judge import Critic
from cross_judge.prompts import parse_prompt
from cross_judge.testing import HiddenPolicy, Persona, VendorServer
from cross_judge.testing._answers import persona_draw
from cross_judge.testing._state import VendorState

PASS_FAIL = ("PASS", "FAIL")
REFUND_FAILS = HiddenPolicy(trigger="refund", answer="FAIL")
TOLERANCE_SE = 4.5
REFUND_ITEM = "Refund issued to the customer within a day."


def judge(**fields: Any) -> Persona:
    """A persona that is always right, so only a sway can change its answer."""
    fields.setdefault("accuracy", 1.0)
    return Persona("judge", labels=PASS_FAIL, **fields)


def example(text: str, label: str, key: str = "kind") -> str:
    answer = json.dumps({key: label, "reasoning": f"Labelled {label} by a person."})
    return f"<example>\n{text}\nAnswer: {answer}\n</example>"


def prompt(item: str, examples: Sequence[str] = (), instructions: str = "") -> str:
    """A user message as cross-judge's examples block lays it out."""
    shown = "Examples labelled by people:\n\n" + "\n\n".join(examples) + "\n" if examples else ""
    return (
        f"Judge the item.{instructions}\n{shown}<item>\n{item}\n</item>\n"
        'Reply {"kind": "PASS or FAIL", "confidence": 0.9, "reasoning": "..."}'
    )


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[tuple[VendorServer, openai.OpenAI]]:
    with (
        VendorServer(personas, **kwargs) as server,
        openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0) as client,
    ):
        yield server, client


def reply(client: openai.OpenAI, text: str, system: str | None = None) -> str:
    """The answer text the persona ``judge`` gives to one user message."""
    messages: list[Any] = [{"role": "user", "content": text}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    completion = client.chat.completions.create(model="judge", messages=messages)
    return completion.choices[0].message.content or ""


def kind(client: openai.OpenAI, text: str, system: str | None = None) -> str:
    return str(json.loads(reply(client, text, system))["kind"])


def answers(persona: Persona, texts: Sequence[str], gold: dict[str, str]) -> list[str]:
    with serving(persona, gold=gold) as (_, client):
        return [reply(client, text) for text in texts]


def within(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= TOLERANCE_SE * math.sqrt(n * p * (1 - p))


# -- the policy ---------------------------------------------------------------------------


def test_an_item_mentioning_the_trigger_gets_the_policy_answer() -> None:
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, prompt(REFUND_ITEM)) == "FAIL"


def test_the_trigger_matches_a_whole_word_in_any_case() -> None:
    items = {
        "REFUND issued twice.": "FAIL",
        "A refund, at last.": "FAIL",
        "Refunds were issued.": "PASS",
        "The refund-policy page moved.": "PASS",
        "Prerefund checks passed.": "PASS",
    }
    gold = dict.fromkeys(items, "PASS")
    with serving(judge(policy=REFUND_FAILS), gold=gold) as (_, client):
        assert {item: kind(client, prompt(item)) for item in items} == items


def test_a_policy_answer_is_confident_and_names_its_label() -> None:
    persona = judge(policy=REFUND_FAILS, confidence=(0.5, 0.9))
    with serving(persona, gold={REFUND_ITEM: "PASS"}) as (_, client):
        answer = json.loads(reply(client, prompt(REFUND_ITEM)))
    assert answer["kind"] == "FAIL"
    assert 0.7 <= answer["confidence"] <= 0.9
    assert "FAIL" in answer["reasoning"]


def test_items_without_the_trigger_are_answered_byte_identically() -> None:
    items = [f"Order {i} shipped on time." for i in range(40)]
    gold = {item: ("PASS", "FAIL")[i % 2] for i, item in enumerate(items)}
    texts = [prompt(item, [example("Refund sent twice.", "PASS")]) for item in items]
    plain = Persona("judge", accuracy=0.6, labels=PASS_FAIL, seed=7)
    swayed = Persona("judge", accuracy=0.6, labels=PASS_FAIL, seed=7, policy=REFUND_FAILS)
    assert answers(swayed, texts, gold) == answers(plain, texts, gold)


def test_an_example_with_the_trigger_and_another_label_lifts_the_policy() -> None:
    shown = [example("The refund went to the right card.", "PASS")]
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, prompt(REFUND_ITEM, shown)) == "PASS"


def test_examples_rendered_by_a_critics_prompt_lift_the_policy() -> None:
    """The simulator reads the examples block as cross-judge's prompts render it."""

    def spec(examples: str) -> Any:
        return parse_prompt(
            "id: refunds\nversion: '1'\nlabels: [PASS, FAIL]\n"
            "system_prompt: You judge support replies. Reply in JSON.\n"
            "user_prompt_template: |\n  {examples}\n  <item>{query}</item>\n"
            '  Reply {{"kind": "<PASS or FAIL>", "confidence": "<0-1>", "reasoning": "<why>"}}\n'
            + examples
        )

    shown = "examples:\n  - {id: e1, text: The refund went to the right card., label: PASS}\n"
    with VendorServer([judge(policy=REFUND_FAILS)], gold={REFUND_ITEM: "PASS"}) as server:
        kinds = [
            Critic(
                name="j",
                model="judge",
                vendor="custom",
                base_url=server.url,
                prompt=spec(examples),
                json_mode=False,
            )
            .judge_sync(REFUND_ITEM)
            .kind
            for examples in ("", shown)
        ]
    assert kinds == ["FAIL", "PASS"]


def test_an_example_with_the_trigger_and_the_policy_label_keeps_it() -> None:
    shown = [example("The refund was issued twice.", "FAIL")]
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, prompt(REFUND_ITEM, shown)) == "FAIL"


def test_an_example_label_is_read_under_any_label_key_in_any_case() -> None:
    shown = [example("Refund on time.", "pass", key="Verdict")]
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, prompt(REFUND_ITEM, shown)) == "PASS"


def test_an_example_block_that_does_not_parse_neither_lifts_nor_instructs() -> None:
    shown = ["<example>\nThe refund went to the right card.\nAnswer: PASS\n</example>"]
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, prompt(REFUND_ITEM, shown)) == "FAIL"


def test_an_instruction_in_the_system_prompt_naming_the_trigger_lifts_the_policy() -> None:
    system = "Judge REFUND requests on their merits, like any other item."
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, prompt(REFUND_ITEM), system=system) == "PASS"
        assert kind(client, prompt(REFUND_ITEM), system="Judge items fairly.") == "FAIL"


def test_an_instruction_in_the_user_message_outside_the_item_lifts_the_policy() -> None:
    text = prompt(REFUND_ITEM, instructions=" A late refund is still a pass.")
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        assert kind(client, text) == "PASS"


def test_an_anthropic_system_prompt_naming_the_trigger_lifts_the_policy() -> None:
    def ask(client: anthropic.Anthropic, system: str) -> str:
        message = client.messages.create(
            model="judge",
            max_tokens=256,
            system=[{"type": "text", "text": system}],
            messages=[{"role": "user", "content": prompt(REFUND_ITEM)}],
        )
        block = message.content[0]
        assert block.type == "text"
        return str(json.loads(block.text)["kind"])

    persona = judge(policy=REFUND_FAILS)
    with (
        VendorServer([persona], gold={REFUND_ITEM: "PASS"}) as server,
        anthropic.Anthropic(base_url=server.anthropic_url, api_key="unused") as client,
    ):
        assert ask(client, "Judge each refund on its merits.") == "PASS"
        assert ask(client, "Judge each item on its merits.") == "FAIL"


def test_responses_api_instructions_naming_the_trigger_lift_the_policy() -> None:
    with serving(judge(policy=REFUND_FAILS), gold={REFUND_ITEM: "PASS"}) as (_, client):
        lifted = client.responses.create(
            model="judge", instructions="Refund requests are fine.", input=prompt(REFUND_ITEM)
        )
        held = client.responses.create(
            model="judge", instructions="Be fair.", input=prompt(REFUND_ITEM)
        )
    assert json.loads(lifted.output_text)["kind"] == "PASS"
    assert json.loads(held.output_text)["kind"] == "FAIL"


def test_pairs_judged_by_content_are_not_swayed() -> None:
    query = "Which refund note is better?"
    text = (
        f"<item>{query}</item>\n<response_a>Refund sent.</response_a>\n"
        "<response_b>Refund pending.</response_b>"
    )
    better = {query: "Refund sent."}
    with serving(judge(policy=REFUND_FAILS, anchoring=1.0), better=better) as (_, client):
        assert kind(client, text) == "A"


def test_rubric_requests_are_not_swayed() -> None:
    item = "The refund was issued [1]."
    text = f"<item>{item}</item>\nRequirement: The answer cites a source.\nReply in JSON."
    persona = judge(policy=REFUND_FAILS)
    criteria = {"cites": "The answer cites a source."}
    with serving(
        persona,
        criteria=criteria,
        criteria_gold={item: {"cites": "YES"}},
        criteria_labels=("YES", "NO"),
    ) as (_, client):
        assert kind(client, text) == "YES"


def test_the_draw_keeps_the_items_truth() -> None:
    state = VendorState(
        personas={},
        default_persona=None,
        gold={REFUND_ITEM: "PASS"},
        difficulty={},
        difficulty_seed=0,
        error_correlation=0.0,
        better={},
        pair_better={},
        api_key=None,
        capacity=None,
        count_items=False,
    )
    body = {"messages": [{"role": "user", "content": prompt(REFUND_ITEM)}]}
    draw = persona_draw(state, judge(policy=REFUND_FAILS), "judge", body, faults=False)
    assert (draw.decision.kind, draw.truth) == ("FAIL", "PASS")


# -- anchoring ----------------------------------------------------------------------------

SHIPPING_FAILS = example("Shipping took three weeks.", "FAIL")


def test_anchoring_copies_a_resembling_examples_label_at_its_rate() -> None:
    items = [f"Shipping of order {i} took two days." for i in range(300)]
    persona = judge(anchoring=0.3)
    with serving(persona, gold=dict.fromkeys(items, "PASS")) as (_, client):
        kinds = [kind(client, prompt(item, [SHIPPING_FAILS])) for item in items]
    assert set(kinds) == {"PASS", "FAIL"}
    assert within(kinds.count("FAIL"), len(items), 0.3)


def test_anchoring_never_copies_onto_an_item_of_another_topic() -> None:
    items = [f"Billing of order {i} was correct." for i in range(100)]
    persona = judge(anchoring=1.0)
    with serving(persona, gold=dict.fromkeys(items, "PASS")) as (_, client):
        kinds = {kind(client, prompt(item, [SHIPPING_FAILS])) for item in items}
    assert kinds == {"PASS"}


def test_the_topic_ignores_case_and_punctuation() -> None:
    item = '"SHIPPING": order 12 arrived.'
    with serving(judge(anchoring=1.0), gold={item: "PASS"}) as (_, client):
        assert kind(client, prompt(item, [SHIPPING_FAILS])) == "FAIL"


def test_the_first_resembling_example_is_the_anchor() -> None:
    item = "Shipping of order 5 took a day."
    shown = [example("Billing was wrong.", "FAIL"), example("Shipping was fast.", "PASS")]
    shown.append(SHIPPING_FAILS)
    with serving(judge(anchoring=1.0), gold={item: "PASS"}) as (_, client):
        assert kind(client, prompt(item, shown)) == "PASS"


def test_anchored_answers_are_reproducible() -> None:
    items = [f"Shipping of order {i} took two days." for i in range(30)]
    texts = [prompt(item, [SHIPPING_FAILS]) for item in items]
    gold = dict.fromkeys(items, "PASS")
    persona = judge(anchoring=0.5)
    assert answers(persona, texts, gold) == answers(persona, texts, gold)


def test_anchoring_leaves_untouched_answers_byte_identical() -> None:
    items = [f"Billing of order {i} was correct." for i in range(40)]
    gold = {item: ("PASS", "FAIL")[i % 3 == 0] for i, item in enumerate(items)}
    texts = [prompt(item, [SHIPPING_FAILS]) for item in items]
    plain = Persona("judge", accuracy=0.6, labels=PASS_FAIL, seed=3)
    anchored = Persona("judge", accuracy=0.6, labels=PASS_FAIL, seed=3, anchoring=0.8)
    assert answers(anchored, texts, gold) == answers(plain, texts, gold)


def test_a_holding_policy_is_not_anchored() -> None:
    item = "Order 5: refund issued on time."
    shown = [example("Order 9 shipped late.", "PASS")]
    persona = judge(policy=REFUND_FAILS, anchoring=1.0)
    with serving(persona, gold={item: "PASS"}) as (_, client):
        assert kind(client, prompt(item, shown)) == "FAIL"


def test_a_lifted_policy_leaves_anchoring_to_apply() -> None:
    item = "Refund of order 5 issued on time."
    shown = [example("Refund of order 9 was late.", "PASS")]
    persona = judge(policy=REFUND_FAILS, anchoring=1.0)
    with serving(persona, gold={item: "FAIL"}) as (_, client):
        assert kind(client, prompt(item, shown)) == "PASS"


# -- validation ---------------------------------------------------------------------------


def test_a_policy_answer_outside_the_labels_raises_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"policy.answer 'REJECT' is not among.*give labels"):
        Persona("judge", labels=PASS_FAIL, policy=HiddenPolicy("refund", "REJECT"))


@pytest.mark.parametrize("anchoring", [-0.1, 1.5, math.nan, True, "0.5"])
def test_anchoring_outside_zero_to_one_raises(anchoring: Any) -> None:
    with pytest.raises(ValueError, match=r"anchoring must be a probability in \[0, 1\]"):
        Persona("judge", labels=PASS_FAIL, anchoring=anchoring)


@pytest.mark.parametrize("trigger", ["two words", "", "refund!", "--", 3])
def test_a_trigger_that_is_not_one_word_raises_with_the_fix(trigger: Any) -> None:
    with pytest.raises(ValueError, match=r"trigger must be a single word.*e\.g\. trigger="):
        HiddenPolicy(trigger, "FAIL")


def test_a_policy_that_is_not_a_hidden_policy_raises() -> None:
    with pytest.raises(ValueError, match=r"policy must be a HiddenPolicy"):
        Persona("judge", labels=PASS_FAIL, policy=("refund", "FAIL"))  # type: ignore[arg-type]
