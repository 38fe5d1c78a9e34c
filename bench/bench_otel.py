"""OpenTelemetry overhead per critic call: absent, API only (no provider), SDK + exporter.

Two measurements, both in this one process:

1. **Hooks when OpenTelemetry is absent** (the target, < 1 us per call). What the hooks add
   to the call path is timed directly, against the same path without them: each hooked
   method is driven as a bare coroutine (``coro.send(None)``, no event loop, so no loop
   noise) with the work below it replaced by one that returns at once, and compared with
   the pre-hook code of that method (the critic's caller's ``_judge_once`` as it was, and
   ``Ensemble._judge`` called directly instead of ``Ensemble.judge``). The two checks inside
   the caller's ``_call``
   are timed as statements. Per call = ``_judge_once``'s delta + the two checks + the
   judge hook's delta shared by the panel's critics.
2. **End to end** (reported): a panel judging items over an in-process transport that
   answers at once (no sockets, so the client's own work is all there is), CPU per critic
   call with OpenTelemetry off (``_otel.available = False``: the path taken when it is not
   installed), with the API's default proxy tracer and no provider (no-op), and with the
   SDK and an in-memory exporter. Modes interleave over repeats; medians are reported.

    python bench/bench_otel.py [--items 2000] [--critics 3] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import Critic, Ensemble, Item, _otel
from cross_judge.critic._calls import Caller
from cross_judge.critic._parking import active_job
from cross_judge.critic._warmup import warm_up
from cross_judge.transport import Completion, _openai_compat as openai_compat
from cross_judge.verdict import EnsembleVerdict, Usage, Verdict

TARGET_ABSENT_NS = 1000.0
ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'


# -- 1. the hooks, with OpenTelemetry absent --------------------------------------------------


def drive(make: Callable[[], Coroutine[Any, Any, Any]], n: int) -> float:
    """Nanoseconds per run of a coroutine that never suspends, driven without a loop."""
    started = time.perf_counter_ns()
    for _ in range(n):
        coro = make()
        try:
            coro.send(None)
        except StopIteration:
            pass
        else:
            raise RuntimeError("the coroutine suspended")
    return (time.perf_counter_ns() - started) / n


async def pre_hook_judge_once(
    self: Caller, config: Any, request: Any, price: Any, spending: Any, store: Any
) -> Verdict:
    """``Caller._judge_once`` before the OpenTelemetry hook, verbatim (bound to a critic's
    caller below, so both sides are called as methods)."""
    job = active_job()
    if job is None:
        return await self._judge_one(config, request, price, spending, store, None)
    with job.running():
        return await self._judge_one(config, request, price, spending, store, job)


def hook_costs(n: int, critics: int) -> dict[str, float]:
    """ns added per call by each hook, with ``_otel.available`` false."""
    verdict = Verdict(kind="KEEP", critic_id="c")
    result = EnsembleVerdict(query_id="q", verdicts=[verdict], consensus="KEEP", voting="majority")
    critic = Critic(name="c", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1")
    config, request = critic.endpoint(), critic.build_request("item")

    async def done_one(*args: Any) -> Verdict:
        return verdict

    async def done_judge(*args: Any) -> EnsembleVerdict:
        return result

    caller = critic._parts().caller  # the critic's caller (critic.calls.Caller)

    class Done(Caller):  # the work below _judge_once returns at once
        __slots__ = ()
        _judge_one = done_one  # type: ignore[assignment]

    stub = Done(caller.settings, caller.builder, caller.assembler, session=None, owner=critic)
    panel = Ensemble([critic])
    panel._judge = done_judge  # type: ignore[method-assign]
    once = (config, request, None, None, None)
    pre_hook = pre_hook_judge_once.__get__(stub)

    def statements(k: int) -> float:
        module = _otel
        started = time.perf_counter_ns()
        for _ in range(k):
            if module.available:
                raise AssertionError
            if module.available:
                raise AssertionError
        return (time.perf_counter_ns() - started) / k

    def empty(k: int) -> float:
        started = time.perf_counter_ns()
        for _ in range(k):
            pass
        return (time.perf_counter_ns() - started) / k

    samples: dict[str, list[float]] = {"once": [], "judge": [], "call": []}
    anyio.run(warm_up)  # the process's one-off set-up, done: what follows is the hot path
    was, _otel.available = _otel.available, False  # the path taken when it is not installed
    try:
        for _ in range(7):  # interleaved; the median resists a busy moment
            hooked = drive(lambda: stub._judge_once(*once), n)
            plain = drive(lambda: pre_hook(*once), n)
            samples["once"].append(hooked - plain)
            hooked = drive(lambda: panel.judge("item", query_id="q"), n)
            # The item judge() makes of its keywords is not the hook's cost: made here too.
            plain = drive(lambda: panel._judge(Item.of("item", query_id="q"), None), n)
            samples["judge"].append(hooked - plain)
            samples["call"].append(statements(n) - empty(n))
    finally:
        _otel.available = was
    return {k: statistics.median(v) for k, v in samples.items()} | {"critics": critics}


# -- 2. end to end --------------------------------------------------------------------------


async def instant(*args: Any, **kwargs: Any) -> Completion:
    """A vendor that answers at once, in process."""
    return Completion(
        text=ANSWER,
        usage=Usage(prompt_tokens=100, completion_tokens=12),
        finish_reason="stop",
        model="bench",
    )


def sdk_tracer() -> tuple[Any, Callable[[], int]]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("cross_judge")

    def drain() -> int:
        count = len(exporter.get_finished_spans())
        exporter.clear()
        return count

    return tracer, drain


async def per_call_cpu(panel: Ensemble, items: int) -> float:
    """CPU seconds per critic call over ``items`` judgements, one at a time."""
    for i in range(50):  # warm-up
        await panel.judge(f"warm {i}", query_id=f"w{i}")
    cpu = time.process_time()
    for i in range(items):
        await panel.judge(f"item {i}", query_id=f"i{i}")
    return (time.process_time() - cpu) / (items * len(panel.critics))


def bare_sdk_span_us(n: int = 5000) -> float:
    """CPU us of one bare SDK span with 20 attributes, made current and ended: the floor
    the SDK itself sets, for reading the SDK row."""
    from opentelemetry import context, trace

    tracer, drain = sdk_tracer()
    attributes = {f"bench.attribute.{i}": i for i in range(20)}
    started = time.process_time()
    for _ in range(n):
        span = tracer.start_span("chat bench", kind=trace.SpanKind.CLIENT)
        span.set_attributes(attributes)
        context.detach(context.attach(trace.set_span_in_context(span)))
        span.end()
    drain()
    return (time.process_time() - started) / n * 1e6


def end_to_end(items: int, critics: int, repeats: int) -> dict[str, float]:
    """Median CPU seconds per critic call, per mode."""
    openai_compat.complete = instant  # type: ignore[assignment]
    panel = Ensemble(
        [
            Critic(
                name=f"c{k}",
                model=f"m{k}",
                vendor="custom",
                base_url="http://127.0.0.1:9/v1",
                prompt="pass-fail@2",
                labels=["KEEP", "REJECT"],
            )
            for k in range(critics)
        ]
    )
    installed = _otel._api_installed()
    modes: dict[str, tuple[bool, Any]] = {"absent": (False, None)}
    drain: Callable[[], int] | None = None
    if installed:
        from opentelemetry import trace

        modes["api only (no provider)"] = (True, trace.get_tracer("cross_judge"))
        try:
            tracer, drain = sdk_tracer()
            modes["sdk + in-memory exporter"] = (True, tracer)
        except ImportError:
            pass
    samples: dict[str, list[float]] = {name: [] for name in modes}
    original = (_otel.available, _otel._tracer)
    try:
        for _ in range(repeats):
            for name, (available, tracer) in modes.items():
                _otel.available = available
                _otel._tracer = (lambda t=tracer: t) if tracer is not None else original[1]  # type: ignore[misc]
                samples[name].append(anyio.run(per_call_cpu, panel, items))
                if drain is not None:
                    spans = drain()
                    expected = (items + 50) * (critics + 1)
                    if name.startswith("sdk") and spans != expected:
                        raise RuntimeError(f"{spans} spans exported, expected {expected}")
    finally:
        _otel.available, _otel._tracer = original  # type: ignore[misc]
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--critics", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hook-runs", type=int, default=200_000)
    args = parser.parse_args()
    report = Report(
        "otel",
        "OpenTelemetry overhead per critic call",
        items=args.items,
        critics=args.critics,
        repeats=args.repeats,
        opentelemetry="installed" if _otel._api_installed() else "absent",
    )

    hooks = hook_costs(args.hook_runs, args.critics)
    absent_ns = hooks["once"] + hooks["call"] + hooks["judge"] / args.critics
    report.note(
        f"hooks with OpenTelemetry absent: _judge_once +{hooks['once']:.0f} ns, the two "
        f"checks in _call +{hooks['call']:.0f} ns, Ensemble.judge +{hooks['judge']:.0f} ns "
        f"per item (/{args.critics} critics)"
    )
    report.check(
        "hook cost per call, OpenTelemetry absent", absent_ns, at_most=TARGET_ABSENT_NS, unit=" ns"
    )

    cpu = end_to_end(args.items, args.critics, args.repeats)
    base = cpu["absent"]
    for name, seconds in cpu.items():
        report.row(
            mode=name,
            us_per_call=round(seconds * 1e6, 2),
            overhead_us=round((seconds - base) * 1e6, 2),
            vs_absent=round(seconds / base, 3),
        )
    if "sdk + in-memory exporter" in cpu:
        report.note(
            f"for scale: one bare SDK span with 20 attributes costs {bare_sdk_span_us():.1f} us "
            f"CPU here; a critic call records one chat span, 1/{args.critics} of a judge span "
            "and one evaluation event"
        )
    if "api only (no provider)" not in cpu:
        report.note("opentelemetry-api is not installed: only the absent mode was measured")
    return report.finish(
        [
            ("mode", "mode"),
            ("us_per_call", "CPU us/call"),
            ("overhead_us", "+us vs absent"),
            ("vs_absent", "x absent"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
