"""``cross-judge demo``: the real pipeline, offline, against simulated critics.

Three personas of :class:`~cross_judge.testing.VendorServer` stand in for three LLMs. The
rest is the production path: the packaged ``taxonomy-review`` prompt, ``Critic`` over a
pooled HTTP client to 127.0.0.1, retries (one persona is scripted to answer 429 once),
tolerant parsing (one persona writes messy JSON, one wraps it in ``<think>`` blocks) and
majority voting. No API key, no network, no model download.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio

from ..batch import BatchOptions
from ..critic import Critic, load_prompt
from ..ensemble import Ensemble
from ..testing import Persona, Reply, VendorServer
from ..verdict import EnsembleVerdict, Verdict

if TYPE_CHECKING:
    from ..batch import Mode

__all__ = ["DEMO_ITEMS", "DemoRow", "run_demo"]

DEMO_ITEMS: tuple[tuple[str, str], ...] = (
    ("Mammals: warm-blooded vertebrates that nurse their young", "KEEP"),
    ("Things that are blue", "REJECT"),
    ("Programming languages and their compilers and their conference venues", "SPLIT"),
    ("Felines (see also: Cats)", "MERGE"),
    ("Deciduous trees: trees that shed their leaves seasonally", "KEEP"),
    ("Stuff people like", "REJECT"),
    ("Vehicles, including cars, boats, aircraft and bicycle repair shops", "SPLIT"),
    ("Automobiles (duplicate of Cars)", "MERGE"),
    ("Noble gases: helium, neon, argon, krypton, xenon, radon", "KEEP"),
    ("Miscellaneous", "REJECT"),
    ("Fruit and the countries that export fruit", "SPLIT"),
    ("Bovines, a.k.a. Cattle", "MERGE"),
)
"""(candidate category, gold label) pairs judged by the demo."""

PERSONAS: tuple[Persona, ...] = (
    Persona(model="sim-careful", accuracy=0.92, style="json", latency=0.05, seed=1),
    Persona(
        model="sim-lenient",
        accuracy=0.8,
        bias={"KEEP": 4.0},
        style="messy",
        latency=0.08,
        seed=2,
    ),
    Persona(model="sim-reasoner", accuracy=0.85, style="think", latency=0.12, seed=3),
)


@dataclass(frozen=True)
class DemoRow:
    """One judged item."""

    item: str
    gold: str
    verdicts: tuple[Verdict, ...]
    consensus: str
    agreement: float


async def run_demo(
    *, latency_scale: float = 1.0, mode: Mode = "live"
) -> tuple[list[DemoRow], dict[str, Any]]:
    """Judge :data:`DEMO_ITEMS` with three simulated critics; return rows and run facts.

    ``mode="batch"`` sends every call through the simulator's OpenAI Batch API (files,
    batches, results; each batch ends on its second poll) instead of live requests."""
    prompt = load_prompt("taxonomy-review@1")
    personas = [replace(p, latency=p.latency * latency_scale) for p in PERSONAS]
    async with VendorServer(personas, gold=dict(DEMO_ITEMS), batch_polls=2) as server:
        if mode == "live":
            # One rate-limited answer, to show a retry honouring Retry-After.
            server.script(personas[0].model, Reply.status(429, retry_after=0.05))
        critics = [
            Critic(
                name=p.model.removeprefix("sim-"),
                model=p.model,
                vendor="custom",
                base_url=server.url,
                prompt=prompt,
                timeout=10.0,
            )
            for p in personas
        ]
        ensemble = Ensemble(
            critics, voting="majority", voting_kwargs={"priority": ["REJECT", "SPLIT", "MERGE"]}
        )
        started = time.perf_counter()
        async with ensemble:
            if mode == "batch":
                options = BatchOptions(vendors={"custom"}, poll_s=0.05, max_poll_s=0.2)
                batch = await ensemble.judge_many(
                    [item for item, _ in DEMO_ITEMS], mode="batch", batch=options
                )
                results = batch.verdicts
            else:
                results = await _judge_all(ensemble)
        elapsed = time.perf_counter() - started
        stats = server.stats()
    rows = [
        DemoRow(item, gold, tuple(r.verdicts), r.consensus, r.agreement_pct)
        for (item, gold), r in zip(DEMO_ITEMS, results, strict=True)
    ]
    facts = {
        "server_url": server.url,
        "critics": [c.name for c in critics],
        "elapsed_s": elapsed,
        "requests": stats["requests"],
        "calls": sum(len(r.verdicts) for r in rows),
        "retried_calls": sum(1 for r in rows for v in r.verdicts if v.attempts > 1),
        "failed_calls": sum(1 for r in rows for v in r.verdicts if not v.is_valid),
        "correct": sum(1 for r in rows if r.consensus == r.gold),
        "prompt": prompt.ref,
        "mode": mode,
        "batches": sum(stats["batches"].values()),
        "batch_requests": sum(stats["batch_requests"].values()),
        "batch_polls": stats["batch_polls"],
    }
    return rows, facts


async def _judge_all(ensemble: Ensemble) -> list[EnsembleVerdict]:
    """Every demo item at once: each Ensemble.judge fans out to its critics."""
    results: list[EnsembleVerdict | None] = [None] * len(DEMO_ITEMS)

    async def one(index: int, item: str) -> None:
        results[index] = await ensemble.judge(item)

    async with anyio.create_task_group() as tg:
        for index, (item, _) in enumerate(DEMO_ITEMS):
            tg.start_soon(one, index, item)
    return [r for r in results if r is not None]
