"""Client-stack throughput: cross-judge's Critic vs the official SDK and raw HTTP clients.

A simulated vendor (``python -m cross_judge.testing``) runs in a separate process and
answers every call after ``--latency`` seconds. Each stack makes the same number of calls
with the same number in flight; the table shows calls/s and two ratios computed in this
run: against the physical limit (in flight / latency) and against the official
``openai.AsyncOpenAI`` baseline. A noisy machine moves all rows together, not the ratios.

    python bench/bench_transport.py [--latency 0.1] [--concurrency 48 128] [--calls 1500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai

import cross_judge
from cross_judge import Critic

sys.path.insert(0, str(Path(__file__).parent))
from _server import start_server

RESULTS = Path(__file__).parent / "results"
BODY = {
    "model": "bench",
    "messages": [{"role": "user", "content": "Judge: item"}],
    "temperature": 0.0,
    "max_tokens": 100,
}


async def run_bounded(call: Callable[[int], Awaitable[None]], calls: int, limit: int) -> float:
    semaphore = asyncio.Semaphore(limit)

    async def one(i: int) -> None:
        async with semaphore:
            await call(i)

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return time.perf_counter() - started


async def bench_cross_judge(url: str, calls: int, limit: int) -> float:
    critic = Critic(name="b", model="bench", vendor="custom", base_url=url, json_mode=False)

    async def call(i: int) -> None:
        verdict = await critic.judge(f"item {i}")
        assert verdict.is_valid, verdict.error

    try:
        await run_bounded(call, limit, limit)  # warm the pool
        return await run_bounded(call, calls, limit)
    finally:
        await critic.aclose()


async def bench_openai_sdk(url: str, calls: int, limit: int) -> float:
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)

    async def call(i: int) -> None:
        resp = await client.chat.completions.create(**BODY)  # type: ignore[call-overload]
        assert resp.choices[0].message.content

    try:
        await run_bounded(call, limit, limit)
        return await run_bounded(call, calls, limit)
    finally:
        await client.close()


async def bench_aiohttp(url: str, calls: int, limit: int) -> float:
    connector = aiohttp.TCPConnector(limit=limit)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def call(i: int) -> None:
            async with session.post(url + "/chat/completions", json=BODY) as resp:
                data = await resp.json()
                assert data["choices"][0]["message"]["content"]

        await run_bounded(call, limit, limit)
        return await run_bounded(call, calls, limit)


async def bench_httpx(url: str, calls: int, limit: int) -> float:
    limits = httpx.Limits(max_connections=limit, max_keepalive_connections=limit)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def call(i: int) -> None:
            resp = await client.post(url + "/chat/completions", json=BODY)
            assert resp.json()["choices"][0]["message"]["content"]

        await run_bounded(call, limit, limit)
        return await run_bounded(call, calls, limit)


STACKS: dict[str, Callable[[str, int, int], Awaitable[float]]] = {
    "openai.AsyncOpenAI (baseline)": bench_openai_sdk,
    "cross-judge Critic": bench_cross_judge,
    "raw aiohttp": bench_aiohttp,
    "plain httpx.AsyncClient": bench_httpx,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[48, 128])
    parser.add_argument("--calls", type=int, default=1500)
    args = parser.parse_args()

    rows: list[dict[str, Any]] = []
    with start_server(args.latency) as url:
        for limit in args.concurrency:
            physical = limit / args.latency
            results = {name: asyncio.run(fn(url, args.calls, limit)) for name, fn in STACKS.items()}
            baseline = args.calls / results["openai.AsyncOpenAI (baseline)"]
            for name, wall in results.items():
                rate = args.calls / wall
                rows.append(
                    {
                        "stack": name,
                        "concurrency": limit,
                        "calls": args.calls,
                        "calls_per_s": round(rate, 1),
                        "vs_physical_limit": round(rate / physical, 3),
                        "vs_openai_sdk": round(rate / baseline, 3),
                    }
                )

    print(
        f"latency {args.latency * 1000:.0f} ms, {args.calls} calls per stack; python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, cross-judge {cross_judge.__version__}"
    )
    print(f"{'stack':32} {'in flight':>9} {'calls/s':>9} {'x limit':>8} {'x SDK':>7}")
    for r in rows:
        print(
            f"{r['stack']:32} {r['concurrency']:>9} {r['calls_per_s']:>9.1f} "
            f"{r['vs_physical_limit']:>8.2f} {r['vs_openai_sdk']:>7.2f}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "transport.json"
    out.write_text(json.dumps({"latency_s": args.latency, "rows": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
