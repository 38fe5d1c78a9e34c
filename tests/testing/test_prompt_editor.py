"""The simulated prompt editor: the instruction it writes from a judge's mistakes, and its
answer over HTTP."""

from __future__ import annotations

import json

from openai import OpenAI

from cross_judge.testing import Persona, VendorServer
from cross_judge.testing._editor import edit_instruction

CASES = """
<case>
Item: refund: the customer asks for a refund; the agent resolved it.
Judge said: FAIL (no reason)
People said: PASS
</case>
<case>
Item: refund: money back for a damaged kettle; the agent followed the policy.
Judge said: FAIL (no reason)
People said: PASS
</case>
<case>
Item: billing: billed twice; the agent answered with the right figures.
Judge said: PASS (no reason)
People said: FAIL
</case>
"""


def test_the_instruction_names_the_topic_most_cases_share_and_peoples_label() -> None:
    text = edit_instruction(CASES)
    assert text is not None
    assert "refund items" in text and "PASS" in text and "billing" not in text


def test_a_request_without_cases_is_not_an_edit_request() -> None:
    assert edit_instruction("refund: the customer asks for a refund") is None


def test_ties_between_topics_are_broken_by_name() -> None:
    two = CASES.replace("refund: money back", "shipping: money back")
    text = edit_instruction(two)
    assert text is not None and "billing items" in text


def test_over_http_an_edit_request_is_answered_edit_with_the_instruction() -> None:
    with VendorServer([Persona("editor", labels=("PASS", "FAIL"))], api_key="sk-e") as server:
        client = OpenAI(base_url=server.url, api_key="sk-e", max_retries=0)
        reply = client.chat.completions.create(
            model="editor",
            messages=[{"role": "user", "content": f"<item>\n{CASES}\n</item>"}],
        )
        client.close()
    answer = json.loads(reply.choices[0].message.content or "")
    assert answer["kind"] == "EDIT"
    assert answer["reasoning"] == edit_instruction(CASES)
