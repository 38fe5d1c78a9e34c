"""Client stacks and pool sizes: why calls go through a pooled aiohttp session.

A simulated vendor in its own process answers every call after ``--latency`` seconds. Each
stack makes ``--cycles`` x in-flight calls with the same number in flight (asyncio tasks
and a semaphore), at each ``--in-flight``; calls/s are reported against the physical limit
(in flight / latency) and against the official SDK measured in the same run:

* ``openai.AsyncOpenAI``: the official SDK (httpx inside, its default pool);
* a plain ``httpx.AsyncClient`` with a pool as large as the calls in flight;
* raw aiohttp with its default pool (100 connections) and with no pool limit;
* the cross-judge ``Critic`` (aiohttp, a pool of 1024 per endpoint: batch concurrency is
  bounded above it).

Target: at the lower in-flight count, where the CPU is not the limit, the Critic's calls/s
are >= 0.9x raw aiohttp's (judging adds parsing, not waiting). At the higher one the client
core is the limit; ``bench_cpu.py`` measures CPU per call.

    python bench/bench_transport.py [--latency 0.1] [--in-flight 48 384] [--cycles 5]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server
from _stacks import (
    Call,
    Close,
    make_aiohttp,
    make_cross_judge,
    make_httpx,
    make_openai_sdk,
    run_bounded,
)

TARGET_VS_AIOHTTP = 0.9
BASELINE = "openai.AsyncOpenAI"


def stacks(in_flight: int) -> dict[str, Callable[[str], tuple[Call, Close]]]:
    return {
        BASELINE: make_openai_sdk,
        "plain httpx.AsyncClient": functools.partial(make_httpx, pool=in_flight),
        "raw aiohttp, default pool (100)": functools.partial(make_aiohttp, pool=100),
        "raw aiohttp, no pool limit": make_aiohttp,
        "cross-judge Critic": make_cross_judge,
    }


async def measure(
    make: Callable[[str], tuple[Call, Close]], url: str, calls: int, in_flight: int
) -> tuple[float, int]:
    """(calls/s counting answered calls only, failed calls), after a warm-up round."""
    call, close = make(url)
    try:
        await run_bounded(call, in_flight, in_flight)
        wall, failed = await run_bounded(call, calls, in_flight)
    finally:
        await close()
    return (calls - failed) / wall, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[48, 384])
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()

    report = Report(
        "transport",
        "Client stacks: the same calls through each HTTP stack",
        latency_s=args.latency,
        cycles=args.cycles,
    )
    with start_server(args.latency) as url:
        for in_flight in args.in_flight:
            calls = in_flight * args.cycles
            limit = in_flight / args.latency
            rates: dict[str, float] = {}
            for name, make in stacks(in_flight).items():
                rate, failed = asyncio.run(measure(make, url, calls, in_flight))
                rates[name] = rate
                if failed:
                    report.note(f"{in_flight} in flight: {failed} of {calls} {name} calls failed")
            for name, rate in rates.items():
                report.row(
                    stack=name,
                    in_flight=in_flight,
                    calls_per_s=round(rate, 1),
                    x_limit=round(rate / limit, 3),
                    x_sdk=round(rate / rates[BASELINE], 3),
                )
            ratio = rates["cross-judge Critic"] / rates["raw aiohttp, no pool limit"]
            if in_flight == min(args.in_flight):
                report.check(
                    f"{in_flight} in flight: Critic calls/s / raw aiohttp",
                    ratio,
                    at_least=TARGET_VS_AIOHTTP,
                    unit="x",
                )
            else:
                report.note(
                    f"{in_flight} in flight: Critic calls/s / raw aiohttp {ratio:.2f}x "
                    "(CPU-bound; reported, no target)"
                )
    return report.finish(
        [
            ("stack", "stack"),
            ("in_flight", "in flight"),
            ("calls_per_s", "calls/s"),
            ("x_limit", "x limit"),
            ("x_sdk", "x SDK"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
