"""A critic on a packaged prompt refuses a reply that copies the prompt's example answer.

Critic(prompt=...) -> pooled HTTP -> VendorServer -> parsing with the prompt's examples ->
Verdict. Small models send the example back verbatim; such a reply is no vote.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cross_judge import Critic, ErrorKind
from cross_judge.critic._prompts import load_prompt
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

COPIED = "parse_fail: copied the prompt's example answer"


def critic(server: VendorServer, model: str, **kwargs: Any) -> Critic:
    return Critic(
        name="critic", model=model, vendor="custom", base_url=server.url, api_key=KEY, **kwargs
    )


def example_line(ref: str) -> str:
    text = load_prompt(ref).render("x")
    return next(line for line in text.splitlines() if line.startswith('{"kind"'))


async def test_a_verbatim_copy_of_the_example_is_parse_fail(
    server: VendorServer, model: str
) -> None:
    copy = example_line("pass-fail@2")
    server.script(model, Reply.content(copy))
    async with critic(server, model, prompt="pass-fail@2") as c:
        v = await c.judge("def add(a, b): return a + b")
    assert (v.kind, v.error_kind, v.raw_response) == ("PARSE_FAIL", ErrorKind.PARSE, copy)
    assert v.error == f"{COPIED} (its label '<PASS or FAIL>' is the example's placeholder)"


async def test_a_vote_with_the_examples_reasoning_is_parse_fail(
    server: VendorServer, model: str
) -> None:
    reply = json.dumps(
        {"kind": "KEEP", "confidence": 0.85, "reasoning": "One to three sentences on why."}
    )
    server.script(model, Reply.content(reply))
    async with critic(server, model, prompt="taxonomy-review@1") as c:
        v = await c.judge("Mammals")
    assert (v.kind, v.error_kind) == ("PARSE_FAIL", ErrorKind.PARSE)
    assert v.error == f"{COPIED} (its reasoning is the example's text)"


async def test_an_answer_in_the_models_own_words_is_a_vote(
    server: VendorServer, model: str
) -> None:
    reply = '{"kind": "PASS", "confidence": 0.8, "reasoning": "Adds its arguments."}'
    server.script(model, Reply.content(reply))
    async with critic(server, model, prompt="pass-fail@2") as c:
        v = await c.judge("def add(a, b): return a + b")
    assert (v.kind, v.confidence, v.error, v.prompt_version) == ("PASS", 0.8, None, "2")


async def test_an_overridden_template_drops_the_prompts_examples(
    server: VendorServer, model: str
) -> None:
    reply = '{"kind": "KEEP", "reasoning": "One to three sentences on why."}'
    server.script(model, Reply.content(reply))
    c = Critic.from_yaml_prompt(
        "critic",
        model,
        "taxonomy-review@1",
        prompt_template="Judge: {query}",
        vendor="custom",
        base_url=server.url,
        api_key=KEY,
    )
    async with c:
        v = await c.judge("Mammals")
    assert (v.kind, v.error) == ("KEEP", None)
