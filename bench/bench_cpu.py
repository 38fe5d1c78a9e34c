"""Client CPU per call: cross-judge's Critic against the official SDK and raw aiohttp.

A simulated vendor answers at once (zero latency) from its own process, so the client's
own work is what is measured: CPU seconds of this process (``time.process_time``, all
threads) over the calls, divided by the calls. Each stack makes the same calls with the
same number in flight, after a warm-up, in this one run; ratios are against the official
``openai.AsyncOpenAI`` client (target <= 0.7x) and raw aiohttp (reported).

    python bench/bench_cpu.py [--calls 5000] [--in-flight 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server
from _stacks import STACKS, run_bounded

TARGET_VS_SDK = 0.7


async def measure(make: str, url: str, calls: int, in_flight: int) -> tuple[float, float]:
    """(CPU seconds per call, calls per wall second) for one stack."""
    call, close = STACKS[make](url)
    try:
        await run_bounded(call, max(200, in_flight), in_flight)  # warm pools and caches
        cpu0 = time.process_time()
        wall, failed = await run_bounded(call, calls, in_flight)
        cpu = time.process_time() - cpu0
        assert failed == 0, f"{make}: {failed} calls failed"
    finally:
        await close()
    return cpu / calls, calls / wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    report = Report(
        "cpu",
        "Client CPU per call (zero-latency vendor in its own process)",
        calls=args.calls,
        in_flight=args.in_flight,
        repeats=args.repeats,
    )
    per_call: dict[str, float] = {}
    with start_server(0.0) as url:
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in STACKS}
        for _ in range(args.repeats):  # interleaved, so drift hits every stack alike
            for name in STACKS:
                samples[name].append(asyncio.run(measure(name, url, args.calls, args.in_flight)))
    for name, values in samples.items():
        cpu = statistics.median(v[0] for v in values)
        rate = statistics.median(v[1] for v in values)
        per_call[name] = cpu
        report.row(stack=name, cpu_ms_per_call=round(cpu * 1000, 3), calls_per_s=round(rate, 1))
    sdk, ours, raw = (
        per_call[k] for k in ("openai.AsyncOpenAI", "cross-judge Critic", "raw aiohttp")
    )
    for row in report.rows:
        row["vs_sdk"] = round(per_call[row["stack"]] / sdk, 3)
        row["vs_aiohttp"] = round(per_call[row["stack"]] / raw, 3)
    report.check("Critic CPU per call / official SDK", ours / sdk, at_most=TARGET_VS_SDK, unit="x")
    report.note(f"Critic CPU per call / raw aiohttp: {ours / raw:.2f}x (reported, no target)")
    return report.finish(
        [
            ("stack", "stack"),
            ("cpu_ms_per_call", "CPU ms/call"),
            ("calls_per_s", "calls/s"),
            ("vs_sdk", "x SDK"),
            ("vs_aiohttp", "x aiohttp"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
