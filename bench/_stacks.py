"""Ways to make the same chat call, for benchmarks to compare in one run.

Each ``make_*`` returns ``(call, close)``: ``await call(i)`` makes one call and checks its
answer; ``await close()`` releases the client. ``run_bounded`` makes ``calls`` calls with at
most ``limit`` in flight (asyncio tasks and a semaphore, the plain way to use an SDK).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

BODY = {
    "model": "bench",
    "messages": [{"role": "user", "content": "Judge: <item>candidate</item>"}],
    "temperature": 0.0,
    "max_tokens": 100,
}

Call = Callable[[int], Awaitable[None]]
Close = Callable[[], Awaitable[None]]


async def run_bounded(call: Call, calls: int, limit: int) -> tuple[float, int]:
    """(wall seconds, failed calls) for ``calls`` calls with ``limit`` in flight. A failed
    call (an exception: the SDK timing out under load, say) is counted, not raised."""
    semaphore = asyncio.Semaphore(limit)
    failed = 0

    async def one(i: int) -> None:
        nonlocal failed
        async with semaphore:
            try:
                await call(i)
            except Exception:
                failed += 1

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return time.perf_counter() - started, failed


def make_cross_judge(url: str) -> tuple[Call, Close]:
    from cross_judge import Critic

    critic = Critic(name="b", model="bench", vendor="custom", base_url=url, json_mode=False)

    async def call(i: int) -> None:
        verdict = await critic.judge(f"item {i}")
        assert verdict.is_valid, verdict.error

    return call, critic.aclose


def make_openai_sdk(url: str) -> tuple[Call, Close]:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)

    async def call(i: int) -> None:
        body = dict(BODY, messages=[{"role": "user", "content": f"Judge: <item>item {i}</item>"}])
        response = await client.chat.completions.create(**body)  # type: ignore[call-overload]
        assert response.choices[0].message.content

    return call, client.close


def make_aiohttp(url: str, pool: int = 0) -> tuple[Call, Close]:
    """Bare HTTP with aiohttp; ``pool`` connections at most (0: no limit; aiohttp's own
    default is 100)."""
    import aiohttp

    session: aiohttp.ClientSession | None = None

    async def call(i: int) -> None:
        nonlocal session
        if session is None:
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=pool))
        body = dict(BODY, messages=[{"role": "user", "content": f"Judge: <item>item {i}</item>"}])
        async with session.post(url + "/chat/completions", json=body) as response:
            data = await response.json()
            assert data["choices"][0]["message"]["content"]

    async def close() -> None:
        if session is not None:
            await session.close()

    return call, close


def make_httpx(url: str, pool: int = 100) -> tuple[Call, Close]:
    """Bare HTTP with a plain ``httpx.AsyncClient`` of ``pool`` connections."""
    import httpx

    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    client = httpx.AsyncClient(limits=limits, timeout=60)

    async def call(i: int) -> None:
        body = dict(BODY, messages=[{"role": "user", "content": f"Judge: <item>item {i}</item>"}])
        response = await client.post(url + "/chat/completions", json=body)
        assert response.json()["choices"][0]["message"]["content"]

    return call, client.aclose


STACKS: dict[str, Callable[[str], tuple[Call, Close]]] = {
    "openai.AsyncOpenAI": make_openai_sdk,
    "cross-judge Critic": make_cross_judge,
    "raw aiohttp": make_aiohttp,
}
