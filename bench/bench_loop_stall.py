"""Loop stall: the longest time the first ``judge()`` of a process keeps the event loop busy.

``import cross_judge`` defers work to first use (importing the HTTP library or the vendor
SDK, building TLS contexts, reading the price table, loading the OpenTelemetry API). The
first call pays for it; done on the event loop, that work stalls every other task of the
program for as long (0.1-1.6 s before this was fixed, and asyncio's dev mode reports each
such step). cross-judge now does it in worker threads; this measures what is left.

How: in fresh subprocesses, against a simulated vendor in its own process at zero latency,
a probe task sleeps 5 ms in a loop and records how late each wake-up is. The longest
lateness while a cold first ``await Ensemble.judge()`` (3 critics) runs is that call's
stall. In the same process, as its baseline, the probe's longest lateness over the next
``--later`` warm calls (same loop, same work minus the set-up): the ratio cold/warm says how
much of the stall is the first call's own. As a second reference, other fresh subprocesses
do the same set-up *on* the loop (the library's own set-up functions, called directly:
what the first call of a chat-completions critic did before) and report that stall.

Work in a worker thread still holds the interpreter lock, and a single C call holds it
throughout: the loop cannot run until it returns. The Anthropic SDK has such steps of its
own: its import compiles a long type annotation, and the heap it builds (thousands of
pydantic models) makes the full garbage collections that follow take 50-100 ms each on a
2-core machine, whichever thread triggers them. So for the Anthropic cases a third
reference, fresh subprocesses that only import the SDK and build its client in a worker
thread (no call), gives the floor no set-up order can go under.

Target: a cold first call of a chat-completions critic stalls the loop at most 50 ms on an
idle machine (median over processes), against asyncio's 100 ms slow-step threshold. The
Anthropic cases are reported against their SDK-import floor, without a target. On a loaded
machine every number grows with the OS's scheduling delays, the warm baseline too: compare
the ratios. Python files must be byte-compiled (as pip and ``nox -s bench`` install them):
compiling a module from source holds the interpreter lock for as long as it takes.

    python bench/bench_loop_stall.py [--processes 5] [--later 20] [--cases asyncio/custom,...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

TARGET_STALL_S = 0.050
CRITICS = 3
TIMEOUT_S = 120
CASES = ("asyncio/custom", "trio/custom", "asyncio/anthropic", "trio/anthropic")

# argv: backend. Imports the Anthropic SDK and builds its client (cross-judge's own set-up
# functions) in a worker thread, no call; prints the longest lateness.
SDK_ONLY = """
import json, sys, time

import anyio
import anyio.to_thread

from cross_judge.transport import _anthropic as anthropic


def sdk_and_client():
    anthropic._import_sdk()
    return anthropic._new_http_client(sys.argv[1])

PERIOD = 0.005


async def main():
    late = []
    stop = anyio.Event()

    async def probe():
        while not stop.is_set():
            t = time.perf_counter()
            await anyio.sleep(PERIOD)
            late.append(time.perf_counter() - t - PERIOD)

    async with anyio.create_task_group() as group:
        group.start_soon(probe)
        await anyio.sleep(0.1)
        late.clear()
        client = await anyio.to_thread.run_sync(sdk_and_client)
        stop.set()
    await client.aclose()
    return {"stall_s": max(late, default=0.0)}


print(json.dumps(anyio.run(main, backend=sys.argv[1])))
"""

# argv: mode ("judge" | "on-loop"), backend, vendor, base URL, later calls. One JSON line.
CHILD = """
import json, statistics, sys, time

import anyio

from cross_judge import Critic, Ensemble

MODE, BACKEND, VENDOR, URL = sys.argv[1:5]
LATER = int(sys.argv[5])
PERIOD = 0.005


def set_up_on_the_loop():
    # What the first call did on the loop before: the same set-up functions, called here.
    # Returns the client made, to be closed.
    from cross_judge.critic import _warmup as warmup
    from cross_judge.transport import _http, _anthropic as anthropic

    warmup._set_up()
    if VENDOR == "anthropic":
        anthropic._import_sdk()
        return anthropic._new_http_client(BACKEND)
    if BACKEND == "asyncio":
        import aiohttp  # its TLS contexts are built as it is imported

        session = _http.AiohttpSession()
        session._client()
        return session
    return _http.HttpxSession()._new_client()


async def main():
    late = []
    stop = anyio.Event()

    async def probe():
        while not stop.is_set():
            t = time.perf_counter()
            await anyio.sleep(PERIOD)
            late.append(time.perf_counter() - t - PERIOD)

    def worst():
        value = max(late, default=0.0)
        late.clear()
        return value

    critics = [
        Critic(name=f"c{i}", model=f"sim-{i}", vendor=VENDOR, base_url=URL, api_key="k",
               json_mode=False)
        for i in range(CRITICS)
    ]
    panel = Ensemble(critics)
    result = {}
    async with anyio.create_task_group() as group:
        group.start_soon(probe)
        await anyio.sleep(0.1)
        result["idle_s"] = worst()
        t = time.perf_counter()
        made = set_up_on_the_loop() if MODE == "on-loop" else None
        verdict = await panel.judge("first query of this process")
        result["first_s"] = time.perf_counter() - t
        result["cold_stall_s"] = worst()
        valid = verdict.n_valid
        for i in range(LATER):
            valid += (await panel.judge(f"later query {i}")).n_valid
        result["warm_stall_s"] = worst()
        result["valid"], result["calls"] = valid, CRITICS * (LATER + 1)
        stop.set()
    await panel.aclose()
    if made is not None:
        await made.aclose()
    return result


print(json.dumps(anyio.run(main, backend=BACKEND)))
""".replace("CRITICS", str(CRITICS))


def ms(seconds: float) -> float:
    return round(1000 * seconds, 1)


def child(*argv: str) -> dict[str, float]:
    """The JSON result of one fresh subprocess."""
    done = subprocess.run(
        [sys.executable, "-c", *argv],
        check=True,
        timeout=TIMEOUT_S,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(mode: str, case: str, url: str, later: int, processes: int) -> list[dict[str, float]]:
    """One JSON result per fresh subprocess."""
    backend, vendor = case.split("/")
    base_url = url if vendor == "custom" else url.removesuffix("/v1")
    results = []
    for _ in range(processes):
        result = child(CHILD, mode, backend, vendor, base_url, str(later))
        assert result["valid"] == result["calls"], f"{case}: calls without a valid verdict"
        results.append(result)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5, help="fresh subprocesses per case")
    parser.add_argument("--later", type=int, default=20, help="warm calls after the first")
    parser.add_argument("--cases", default=",".join(CASES), help="backend/vendor, comma-separated")
    args = parser.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]

    report = Report(
        "loop_stall",
        "Loop stall: the longest event-loop stall of a cold first judge()",
        processes=args.processes,
        later=args.later,
        critics=CRITICS,
    )
    worst_case: tuple[float, str] | None = None
    with start_server(0.0) as url:
        for case in cases:
            now = run("judge", case, url, args.later, args.processes)
            before = run("on-loop", case, url, args.later, args.processes)
            cold = statistics.median(r["cold_stall_s"] for r in now)
            warm = statistics.median(r["warm_stall_s"] for r in now)
            on_loop = statistics.median(r["cold_stall_s"] for r in before)
            floor = None
            if case.endswith("/anthropic"):
                backend = case.split("/")[0]
                floor = statistics.median(
                    child(SDK_ONLY, backend)["stall_s"] for _ in range(args.processes)
                )
            else:
                worst_case = max(worst_case or (0.0, ""), (cold, case))
            report.row(
                case=case,
                cold_ms=ms(cold),
                cold_max_ms=ms(max(r["cold_stall_s"] for r in now)),
                warm_ms=ms(warm),
                idle_ms=ms(statistics.median(r["idle_s"] for r in now)),
                cold_over_warm=round(cold / warm, 1) if warm > 0 else None,
                on_loop_ms=ms(on_loop),
                on_loop_over_cold=round(on_loop / cold, 1) if cold > 0 else None,
                sdk_floor_ms=None if floor is None else ms(floor),
                first_call_ms=ms(statistics.median(r["first_s"] for r in now)),
            )
    report.note(
        "cold: longest lateness of a 5 ms probe during the cold first judge() (median over "
        "processes; cold max: the worst process); warm: the same over the next warm calls "
        "in the same processes (the baseline); idle: 100 ms of nothing before the call; "
        "on-loop: the cold stall when the same set-up runs on the loop (for chat "
        "completions, what the first call did before); SDK floor: the stall of importing "
        "the Anthropic SDK and building its client in a worker thread, without a call"
    )
    if worst_case is not None:
        report.check(
            "longest loop stall of a chat-completions critic's cold first judge()",
            worst_case[0],
            at_most=TARGET_STALL_S,
            unit=" s",
            note=f"worst case {worst_case[1]}; target on an idle machine",
        )
    return report.finish(
        [
            ("case", "case"),
            ("cold_ms", "cold ms"),
            ("cold_max_ms", "cold max ms"),
            ("warm_ms", "warm ms"),
            ("idle_ms", "idle ms"),
            ("cold_over_warm", "cold/warm"),
            ("on_loop_ms", "on-loop ms"),
            ("on_loop_over_cold", "on-loop/cold"),
            ("sdk_floor_ms", "SDK floor ms"),
            ("first_call_ms", "first call ms"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
