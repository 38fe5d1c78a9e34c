"""The response cache keeps an answer holding a lone surrogate (a vendor's JSON may escape one,
``"\\ud800"``; UTF-8 cannot encode it, so SQLite refused it and the write raised): stored and
read back as the same text (issue 25, point 9)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import respx

from cross_judge import Critic, Usage
from cross_judge.critic._cache import ResponseCache
from cross_judge.transport import Completion

pytestmark = pytest.mark.anyio

URL = "https://api.deepseek.com/v1/chat/completions"
LONE = [chr(code) for code in (0xD800, 0xDBFF, 0xDC80, 0xDFFF)]
"""High (leading) and low (trailing) surrogates, each alone."""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


@pytest.mark.parametrize("odd", LONE)
async def test_an_answer_and_model_with_a_lone_surrogate_round_trip(
    tmp_path: Path, odd: str
) -> None:
    stored = Completion(
        text=f'{{"kind": "KEEP", "reasoning": "a{odd}b"}}',
        usage=Usage(prompt_tokens=3, completion_tokens=2),
        model=f"judge{odd}",
    )
    async with ResponseCache(tmp_path / "c.sqlite3") as cache:
        await cache.put("k", stored)
        assert await cache.get("k") == stored
        stats = cache.stats()
    assert (stats.writes, stats.hits, stats.write_errors, stats.read_errors) == (1, 1, 0, 0)


async def test_an_ordinary_answer_is_still_stored_as_text(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    async with ResponseCache(path) as cache:
        await cache.put("k", Completion(text="plain é", model="m"))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT typeof(text), typeof(model) FROM responses").fetchone() == (
            "text",
            "text",
        )


@respx.mock
async def test_a_critic_replays_a_cached_answer_holding_a_lone_surrogate(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    answer = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "odd \ud800 text"}'
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "deepseek-chat",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }
    route = respx.post(URL).respond(
        content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    critic = Critic(
        name="c1",
        model="deepseek-chat",
        api_key="sk-unit-test-key-0123456789",
        http_client=client,
        cache=tmp_path / "c.sqlite3",
    )
    first = await critic.judge("item")
    again = await critic.judge("item")
    assert first.reasoning == "odd \ud800 text" and not first.cached
    assert again.reasoning == "odd \ud800 text" and again.cached
    assert route.call_count == 1
