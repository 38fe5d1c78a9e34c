"""A cheap jury, a strong critic and the cascade of the two, each judging the same items:
what the escalation benchmarks (per criterion, per step) compare in one run."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cross_judge import BatchResult, Cascade, Critic, Ensemble, Escalation


async def jury_strong_cascade(
    make: Callable[[str], Critic], cheap: Sequence[str], strong: str, items: Sequence[object]
) -> tuple[BatchResult, BatchResult, BatchResult]:
    """The results of the cheap critics voting (majority), of the strong critic alone, and
    of the two-tier cascade escalating whatever the jury did not agree on unanimously
    (``agreement_below=1.0``); ``make(model)`` builds each critic."""
    jury = Ensemble([make(name) for name in cheap], voting="majority")
    alone = Ensemble([make(strong)])
    cascade = Cascade(
        tiers=[
            Ensemble([make(name) for name in cheap], voting="majority"),
            Ensemble([make(strong)]),
        ],
        escalate=Escalation(agreement_below=1.0),
    )
    async with jury, alone, cascade:
        cheap_run = await jury.judge_many(items, concurrency=64)
        strong_run = await alone.judge_many(items, concurrency=64)
        cascaded = await cascade.judge_many(items, concurrency=64)
    return cheap_run, strong_run, cascaded
