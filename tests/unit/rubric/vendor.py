"""A scripted OpenAI-compatible vendor on ``httpx.MockTransport`` for rubric tests, and the
prompts they use. Each critic's model name is who answers; the script sees the user message."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from cross_judge import Critic
from cross_judge.critic._prompts import PromptSpec, parse_prompt

CRITERIA = """\
criteria:
  - {id: correct, requirement: The answer is correct., weight: 3, gate: true}
  - {id: cites, requirement: The answer cites a source.}
  - {id: insults, requirement: The answer insults the reader., weight: -2}
"""
PER_CRITERION = parse_prompt(
    """\
id: rq
version: 1
system_prompt: You judge answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Requirement ({criterion_id}): {criterion}
  Reply {{"kind": "PASS or FAIL", "confidence": 0.9, "reasoning": "..."}}
"""
    + CRITERIA
)
ONE_CALL = parse_prompt(
    """\
id: rq-one
version: 1
system_prompt: You judge answers. Reply in JSON.
user_prompt_template: |
  <item>{query}</item>
  Judge each criterion:
  {criteria}
criteria_mode: one_call
"""
    + CRITERIA
)
IDS = ("correct", "cites", "insults")
REQUIREMENTS = {
    "correct": "The answer is correct.",
    "cites": "The answer cites a source.",
    "insults": "The answer insults the reader.",
}

Reply = str | tuple[str, str] | httpx.Response
"""The content of the answer, or (content, finish_reason), or a whole response."""


def asked_criterion(user: str) -> str:
    """The criterion a per_criterion request asks about."""
    return next(cid for cid in IDS if f"({cid})" in user)


def listed_criteria(user: str) -> list[str]:
    """The criteria a one_call request lists."""
    return [cid for cid in IDS if f"- {cid}: " in user]


def labels_reply(labels: Mapping[str, str], *, confidence: float = 0.8) -> Callable[..., Reply]:
    """A script: each critic answers ``labels`` (criterion -> label) in whichever mode asks."""

    def script(model: str, user: str) -> Reply:
        if "Judge each criterion" in user:
            asked = listed_criteria(user)
            body = {
                cid: {"kind": labels[cid], "confidence": confidence, "reasoning": "r"}
                for cid in asked
            }
            return json.dumps({"criteria": body})
        cid = asked_criterion(user)
        return json.dumps({"kind": labels[cid], "confidence": confidence, "reasoning": "r"})

    return script


@dataclass
class Vendor:
    """Answers each request with ``script(model, user_message)``; keeps every request."""

    script: Callable[[str, str], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    completion_tokens: int = 5

    async def handle(self, request: httpx.Request) -> httpx.Response:
        stream = cast(httpx.AsyncByteStream, request.stream)
        body = json.loads(b"".join([chunk async for chunk in stream]))
        self.requests.append(body)
        model = body["model"]
        reply = self.script(model, body["messages"][-1]["content"])
        if isinstance(reply, httpx.Response):
            return reply
        content, finish = reply if isinstance(reply, tuple) else (reply, "stop")
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
                        "finish_reason": finish,
                    }
                ],
                "usage": {
                    "prompt_tokens": 10,
                    "completion_tokens": self.completion_tokens,
                    "total_tokens": 10 + self.completion_tokens,
                },
            },
        )

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))

    def critic(self, name: str, prompt: PromptSpec | str = PER_CRITERION, **kwargs: Any) -> Critic:
        return Critic(
            name=name,
            model=kwargs.pop("model", name),
            vendor="custom",
            base_url="http://vendor.test/v1",
            api_key="sk-test",
            prompt=prompt,
            http_client=self.client(),
            max_retries=kwargs.pop("max_retries", 0),
            **kwargs,
        )

    def users(self, model: str | None = None) -> list[str]:
        """The user messages sent (by ``model``, when given)."""
        return [
            r["messages"][-1]["content"]
            for r in self.requests
            if model is None or r["model"] == model
        ]
