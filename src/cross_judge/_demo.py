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
from typing import Any

import anyio
import yaml

from ._resources import prompt_files
from .core import Critic
from .testing import Persona, Reply, VendorServer
from .verdict import Verdict
from .voting import agreement_pct, majority_vote

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


def _load_taxonomy_prompt() -> dict[str, Any]:
    text = (prompt_files() / "taxonomy-review.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


async def run_demo(*, latency_scale: float = 1.0) -> tuple[list[DemoRow], dict[str, Any]]:
    """Judge :data:`DEMO_ITEMS` with three simulated critics; return rows and run facts."""
    prompt = _load_taxonomy_prompt()
    personas = [replace(p, latency=p.latency * latency_scale) for p in PERSONAS]
    async with VendorServer(personas, gold=dict(DEMO_ITEMS)) as server:
        # One rate-limited answer, to show a retry honouring Retry-After.
        server.script(personas[0].model, Reply.status(429, retry_after=0.05))
        critics = [
            Critic(
                name=p.model.removeprefix("sim-"),
                model=p.model,
                vendor="custom",
                base_url=server.url,
                system_prompt=prompt["system_prompt"],
                prompt_template=prompt["user_prompt_template"],
                labels=prompt["labels"],
                timeout=10.0,
            )
            for p in personas
        ]
        started = time.perf_counter()
        rows: list[DemoRow | None] = [None] * len(DEMO_ITEMS)

        async def judge_item(index: int, item: str, gold: str) -> None:
            verdicts: list[Verdict | None] = [None] * len(critics)

            async def one(j: int, critic: Critic) -> None:
                verdicts[j] = await critic.judge(item)

            async with anyio.create_task_group() as tg:
                for j, critic in enumerate(critics):
                    tg.start_soon(one, j, critic)
            done = tuple(v for v in verdicts if v is not None)
            consensus, _ = majority_vote(done, priority=["REJECT", "SPLIT", "MERGE", "KEEP"])
            rows[index] = DemoRow(item, gold, done, consensus, agreement_pct(done, consensus))

        try:
            async with anyio.create_task_group() as tg:
                for index, (item, gold) in enumerate(DEMO_ITEMS):
                    tg.start_soon(judge_item, index, item, gold)
        finally:
            await critics[0].aclose()
        elapsed = time.perf_counter() - started
        stats = server.stats()
    finished = [r for r in rows if r is not None]
    facts = {
        "server_url": server.url,
        "critics": [c.name for c in critics],
        "elapsed_s": elapsed,
        "requests": stats["requests"],
        "calls": sum(len(r.verdicts) for r in finished),
        "retried_calls": sum(1 for r in finished for v in r.verdicts if v.attempts > 1),
        "failed_calls": sum(1 for r in finished for v in r.verdicts if not v.is_valid),
        "correct": sum(1 for r in finished if r.consensus == r.gold),
        "prompt": f"{prompt['id']}@{prompt['version']}",
    }
    return finished, facts
