"""A scripted pairwise judge behind an ``httpx.MockTransport``: it reads the two responses
of a ``pairwise`` request and decides by a latent Bradley-Terry strength table, with a
draw seeded by sha256 of the model and the pair as shown (so a repeat gets the same
answer, and the two orders are independent draws)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Mapping

import httpx

from cross_judge import Critic

_TAG = re.compile(r"<response_([ab])>\s*(.*?)\s*</response_\1>", re.S)


class StrengthJudge:
    """Answers ``A``/``B`` by Bradley-Terry on ``strengths`` (text -> log-worth); a pair
    of equal texts, or texts within ``tie_gap`` of each other, is a ``TIE``."""

    def __init__(self, strengths: Mapping[str, float], *, tie_gap: float = 0.0) -> None:
        self.strengths = dict(strengths)
        self.tie_gap = tie_gap
        self.calls = 0
        self.seen: list[tuple[str, str, str]] = []  # (model, a, b) as shown

    def answer(self, model: str, a: str, b: str) -> str:
        """The label ``model`` gives the pair shown as ``a`` then ``b``."""
        gap = self.strengths[a] - self.strengths[b]
        if abs(gap) <= self.tie_gap:
            return "TIE"
        seed = hashlib.sha256(f"{model}|{a}|{b}".encode()).hexdigest()
        p_a = 1.0 / (1.0 + math.exp(-gap))
        return "A" if random.Random(seed).random() < p_a else "B"

    async def handler(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        body = json.loads(b"".join([chunk async for chunk in request.stream]))  # type: ignore[union-attr]
        model = body["model"]
        text = body["messages"][-1]["content"]
        found = dict(_TAG.findall(text))
        a, b = found["a"], found["b"]
        self.seen.append((model, a, b))
        label = self.answer(model, a, b)
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

    def critic(self, name: str, *, family: str | None = None, prompt: str = "pairwise") -> Critic:
        return Critic(
            name=name,
            model=name,
            vendor="custom",
            base_url="http://vendor.test/v1",
            api_key="k",
            prompt=prompt,
            family=family,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self.handler)),
        )
