"""What a critic sends for a structured item: its conversation, trajectory and references
rendered into the prompt, its images as parts after the text, a missing field refused
before any call, what was cut recorded on the verdict; a plain item's request unchanged."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from cross_judge import Ensemble, Item, ItemError
from cross_judge.content import Image, ToolCall
from cross_judge.critic._prompts import parse_prompt
from cross_judge.transport import ImagePart, TextPart

from ..content.test_items_with_structure import BOOKING, png
from ..rubric.vendor import Vendor

TRAJECTORY_PROMPT = parse_prompt(
    """\
id: run-check
version: 1
render_limits: {max_chars: 600, max_value_chars: 40, keep_first: 1, keep_last: 1}
user_prompt_template: |
  Task: {query}
  <run>
  {trajectory}
  </run>
  Reply {{"kind": "PASS", "confidence": 0.9, "reasoning": "r"}}
"""
)
REFERENCE_PROMPT = parse_prompt(
    """\
id: ref-check
version: 1
user_prompt_template: |
  <item>{query}</item>
  Reference: {reference}
"""
)
CONVERSATION_PROMPT = parse_prompt(
    """\
id: chat-check
version: 1
user_prompt_template: |
  {conversation}
"""
)
ANSWER = json.dumps({"kind": "PASS", "confidence": 0.9, "reasoning": "r"})


def vendor() -> Vendor:
    return Vendor(lambda model, user: ANSWER)


def user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def test_the_trajectory_is_rendered_into_the_prompt() -> None:
    v = vendor()
    item = Item(
        query="weather?",
        trajectory=[{"name": "w", "arguments": {"c": "Oslo"}}, {"final_answer": "3C"}],
    )
    v.critic("a", TRAJECTORY_PROMPT).judge_sync(item)
    assert '[step 1] call w({"c":"Oslo"})\n[step 2] final answer: 3C' in user_text(v.requests[0])


def test_a_conversation_is_rendered_turn_by_turn() -> None:
    v = vendor()
    v.critic("a", CONVERSATION_PROMPT).judge_sync(Item(messages=BOOKING))
    assert "[turn 3] user: Yes\n[turn 4] assistant: Booked" in user_text(v.requests[0])


def test_a_prompt_using_reference_refuses_an_item_without_one_before_any_call() -> None:
    v = vendor()
    panel = Ensemble([v.critic("a", REFERENCE_PROMPT), v.critic("b", REFERENCE_PROMPT)])
    with pytest.raises(ItemError, match=r"uses \{reference\}, and item 'Paris\.' has no reference"):
        panel.judge_sync(Item(query="Paris."))
    assert v.requests == []


def test_a_string_query_for_a_reference_prompt_says_what_is_missing_too() -> None:
    with pytest.raises(ItemError, match="has no reference"):
        vendor().critic("a", REFERENCE_PROMPT).render_prompt("Paris.")


def test_a_reference_given_in_context_still_works_as_before() -> None:
    critic = vendor().critic("a", REFERENCE_PROMPT)
    assert "Reference: Paris" in critic.render_prompt("x", {"reference": "Paris"})


def test_a_reference_given_twice_is_refused() -> None:
    item = Item(query="x", reference="Paris", context={"reference": "Lyon"})
    with pytest.raises(ItemError, match=r"gives \{reference\} twice"):
        vendor().critic("a", REFERENCE_PROMPT).render_prompt(item)


def test_a_prompt_using_trajectory_refuses_an_item_without_one() -> None:
    with pytest.raises(ItemError, match=r"has no trajectory: give the item trajectory="):
        vendor().critic("a", TRAJECTORY_PROMPT).render_prompt(Item(query="x"))


def test_item_text_is_never_read_as_a_template() -> None:
    v = vendor()
    item = Item(query="{reference}", reference="{query} {0} {__class__}")
    v.critic("a", REFERENCE_PROMPT).judge_sync(item)
    assert (
        user_text(v.requests[0]) == "<item>{reference}</item>\nReference: {query} {0} {__class__}\n"
    )


def test_what_the_rendering_cut_is_recorded_on_the_verdict() -> None:
    steps = [ToolCall(name="t", arguments={"i": i}, result="r" * 100) for i in range(30)]
    verdict = vendor().critic("a", TRAJECTORY_PROMPT).judge_sync(Item(query="q", trajectory=steps))
    assert verdict.render_cut is not None
    (cut,) = verdict.render_cut
    assert cut["field"] == "trajectory" and cut["entries"] == 30 and cut["omitted"]
    assert "render_cut" in verdict.model_dump()


def test_a_verdict_with_nothing_cut_dumps_as_before() -> None:
    verdict = vendor().critic("a", REFERENCE_PROMPT).judge_sync(Item(query="q", reference="r"))
    assert verdict.render_cut is None and "render_cut" not in verdict.model_dump()


def test_images_go_after_the_text_as_image_parts_in_order() -> None:
    one, two = Image.from_bytes(png(1, 1)), Image.from_url("https://x.test/b.png")
    critic = vendor().critic("a", REFERENCE_PROMPT)
    request = critic.build_request(Item(query="q", reference="r", images=[one, two]))
    (user,) = request.messages
    assert isinstance(user.parts[0], TextPart)
    assert user.parts[1:] == (
        ImagePart("image/png", one.sha256, one.data),
        ImagePart("image/png", two.sha256, None, two.url),
    )


def test_images_reach_a_chat_vendor_as_image_url_parts() -> None:
    v = vendor()
    image = Image.from_bytes(png())
    v.critic("a", REFERENCE_PROMPT).judge_sync(Item(query="q", reference="r", images=[image]))
    content = v.requests[0]["messages"][-1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": image.data_url()}}


def test_the_cache_key_changes_with_the_image_bytes_and_not_with_its_path() -> None:
    critic = vendor().critic("a", REFERENCE_PROMPT)
    config = critic.endpoint()

    def key(image: Image) -> str:
        return critic.build_request(Item(query="q", reference="r", images=[image])).cache_key(
            config
        )

    same = Image.from_bytes(png()).model_copy(update={"source": "/elsewhere.png"})
    assert key(Image.from_bytes(png())) == key(same)
    assert key(Image.from_bytes(png())) != key(Image.from_bytes(png(2, 2)))


def test_a_plain_item_sends_exactly_what_it_sent_before() -> None:
    plain = parse_prompt("id: p\nversion: 1\nuser_prompt_template: '<item>{query}</item>'\n")
    critic = vendor().critic("b", plain)
    request = critic.build_request(Item(query="x"))
    as_text = dataclasses.replace(request, messages=(), system="", user="<item>x</item>")
    assert request.messages == as_text.messages
    assert request.cache_key(critic.endpoint()) == as_text.cache_key(critic.endpoint())
    assert request.render_cut == ()
