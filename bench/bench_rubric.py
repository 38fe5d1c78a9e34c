"""Rubric juries on the simulated vendor: a vote per criterion, and escalating only the
disputed criteria of a cascade.

A 10-criterion rubric (``per_criterion``: one call per criterion) judges ``--items`` items
whose truth per criterion is PASS or FAIL at random. The simulated vendor gives every
(item, criterion) its own difficulty with correlated errors (``error_correlation``, 0.3 by
default, as in bench_cascade: the critics tend to be wrong together on the hard criteria of
an item). Three cheap critics answer right with probability 0.75 per criterion, a strong
one with 0.93.

1. **The jury.** The three cheap critics vote each criterion (majority); their per-criterion
   accuracy against the truth is set beside each critic's own.
2. **Escalation.** A two-tier cascade (the cheap jury, then the strong critic) asks the
   strong tier only about the criteria the jury disputed. Beside it, from the strong
   critic's answers on every criterion of every item (judged once, all criteria): the same
   cascade escalating whole items (every criterion of an item with any dispute goes to the
   strong critic), whose answers are then used either for the disputed criteria only (the
   same decisions: equal accuracy by construction) or for every criterion.
3. **Agreement.** Krippendorff's alpha per criterion (nominal) from
   ``cross_judge.stats._criteria`` against the ``krippendorff`` package.

Targets: the jury is >= 3 points more accurate per criterion than its best single critic;
disputed-only escalation makes >= 50% fewer strong-tier calls (and uses >= 50% fewer
strong-tier tokens) than whole-item escalation at equal per-criterion accuracy; per-criterion
alpha equals krippendorff's to 1e-9.

    python bench/bench_rubric.py [--items 400] [--error-correlation 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _tiers import jury_strong_cascade

from cross_judge import Critic, EnsembleVerdict
from cross_judge.critic._prompts import parse_prompt
from cross_judge.testing import Persona, VendorServer

N_CRITERIA = 10
CHEAP_ACCURACY, STRONG_ACCURACY = 0.75, 0.93
CHEAP = tuple(f"sim-cheap-{i}" for i in range(3))
STRONG = "sim-strong"
REQUIREMENTS = {
    f"c{k}": f"Requirement {k}: the answer meets quality bar number {k}." for k in range(N_CRITERIA)
}
PROMPT = parse_prompt(
    "id: bench-rubric\nversion: '1'\n"
    "system_prompt: You grade answers one requirement at a time. Reply in JSON.\n"
    "user_prompt_template: |\n"
    "  <item>{query}</item>\n"
    "  Requirement: {criterion}\n"
    '  Reply with JSON: {{"kind": "<PASS or FAIL>", "confidence": "<0-1>", '
    '"reasoning": "<why>"}}\n'
    "criteria:\n"
    + "".join(f"  - {{id: {cid}, requirement: '{text}'}}\n" for cid, text in REQUIREMENTS.items())
)


def critic(name: str, url: str) -> Critic:
    return Critic(
        name=name,
        model=name,
        vendor="custom",
        base_url=url,
        api_key="unused",
        prompt=PROMPT,
        json_mode=False,
    )


def accuracy(pairs: list[tuple[str | None, str]]) -> float:
    return sum(got == want for got, want in pairs) / len(pairs)


def tokens(usage: Any) -> int:
    return 0 if usage is None else int(usage.total_tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--error-correlation", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args()
    report = Report(
        "rubric",
        "Rubric jury: per-criterion vote and disputed-only escalation",
        items=args.items,
        criteria=N_CRITERIA,
        error_correlation=args.error_correlation,
    )
    rng = random.Random(args.seed)
    items = [f"answer under review number {i:05d}" for i in range(args.items)]
    truth = {item: {cid: rng.choice(("PASS", "FAIL")) for cid in REQUIREMENTS} for item in items}
    personas = [
        Persona(name, accuracy=CHEAP_ACCURACY, labels=("PASS", "FAIL"), seed=i)
        for i, name in enumerate(CHEAP)
    ]
    personas.append(Persona(STRONG, accuracy=STRONG_ACCURACY, labels=("PASS", "FAIL"), seed=7))
    with VendorServer(
        personas,
        criteria=REQUIREMENTS,
        criteria_gold=truth,
        error_correlation=args.error_correlation,
        difficulty_seed=args.seed,
    ) as server:
        started = time.perf_counter()
        cheap_run, strong_run, cascaded = asyncio.run(
            jury_strong_cascade(lambda name: critic(name, server.url), CHEAP, STRONG, items)
        )
        elapsed = time.perf_counter() - started
        calls = server.stats()["requests"]

    def want(result: EnsembleVerdict, cid: str) -> str:
        return truth[result.query_id][cid]

    # 1. The jury against each of its critics, per criterion.
    per_critic: dict[str, list[tuple[str | None, str]]] = {name: [] for name in CHEAP}
    jury_pairs: list[tuple[str | None, str]] = []
    for result in cheap_run.verdicts:
        assert result.criteria is not None
        for cid, consensus in result.criteria.items():
            jury_pairs.append((consensus.consensus, want(result, cid)))
        for verdict in result.verdicts:
            for cid, answer in (verdict.criteria or {}).items():
                per_critic[verdict.critic_id].append((answer.kind, want(result, cid)))
    singles = {name: accuracy(pairs) for name, pairs in per_critic.items()}
    best = max(singles.values())
    jury_accuracy = accuracy(jury_pairs)
    for name, value in singles.items():
        report.row(policy=f"critic {name} alone", accuracy=round(value, 4))
    report.row(
        policy="jury of the three (majority per criterion)", accuracy=round(jury_accuracy, 4)
    )

    # 2. Escalation: disputed criteria only (the real cascade) vs whole items.
    strong_by_item = {r.query_id: r for r in strong_run.verdicts}
    cheap_by_item = {r.query_id: r for r in cheap_run.verdicts}
    disputed_calls = disputed_tokens = 0
    cascade_pairs: list[tuple[str | None, str]] = []
    for result in cascaded.verdicts:
        assert result.criteria is not None
        for cid, consensus in result.criteria.items():
            cascade_pairs.append((consensus.consensus, want(result, cid)))
        for tier in (result.tiers or [])[1:]:
            for verdict in tier.verdicts:
                disputed_calls += verdict.attempts
                disputed_tokens += tokens(verdict.usage)
    whole_calls = whole_tokens = 0
    whole_all: list[tuple[str | None, str]] = []
    whole_disputed: list[tuple[str | None, str]] = []
    for item in items:
        cheap = cheap_by_item[item]
        strong = strong_by_item[item]
        assert cheap.criteria is not None
        assert strong.criteria is not None
        escalate = any(c.disputed or c.fallback for c in cheap.criteria.values())
        if escalate:
            for verdict in strong.verdicts:
                whole_calls += verdict.attempts
                whole_tokens += tokens(verdict.usage)
        for cid, consensus in cheap.criteria.items():
            mine = consensus.consensus
            theirs = strong.criteria[cid].consensus
            whole_all.append((theirs if escalate else mine, truth[item][cid]))
            settled = not (consensus.disputed or consensus.fallback)
            whole_disputed.append((mine if settled or not escalate else theirs, truth[item][cid]))
    cascade_accuracy = accuracy(cascade_pairs)
    report.row(
        policy="cascade, disputed criteria escalated",
        accuracy=round(cascade_accuracy, 4),
        strong_calls=disputed_calls,
        strong_tokens=disputed_tokens,
    )
    report.row(
        policy="cascade, whole items escalated (strong used on disputed criteria)",
        accuracy=round(accuracy(whole_disputed), 4),
        strong_calls=whole_calls,
        strong_tokens=whole_tokens,
    )
    report.row(
        policy="cascade, whole items escalated (strong used on every criterion)",
        accuracy=round(accuracy(whole_all), 4),
        strong_calls=whole_calls,
        strong_tokens=whole_tokens,
    )
    report.row(
        policy="strong critic alone",
        accuracy=round(
            accuracy(
                [
                    (c.consensus, truth[r.query_id][cid])
                    for r in strong_run.verdicts
                    for cid, c in (r.criteria or {}).items()
                ]
            ),
            4,
        ),
        strong_calls=sum(v.attempts for r in strong_run.verdicts for v in r.verdicts),
    )

    # 3. Alpha per criterion against krippendorff.
    alpha_gap: float | None = None
    try:
        import krippendorff  # type: ignore[import-untyped]
        import numpy as np

        from cross_judge.stats._criteria import criteria_agreement
    except ImportError as exc:
        report.note(f"alpha check skipped: {exc}")
    else:
        ours = criteria_agreement(cheap_run)
        gaps = []
        for cid in REQUIREMENTS:
            matrix = [
                [
                    (
                        1.0
                        if (answer := (v.criteria or {}).get(cid)) is not None
                        and answer.error is None
                        and answer.kind == "PASS"
                        else 0.0
                        if answer is not None and answer.error is None
                        else np.nan
                    )
                    for r in cheap_run.verdicts
                    for v in r.verdicts
                    if v.critic_id == name
                ]
                for name in CHEAP
            ]
            theirs = krippendorff.alpha(
                reliability_data=np.array(matrix), level_of_measurement="nominal"
            )
            mine = ours[cid].alpha
            gaps.append(abs((mine if mine is not None else float("nan")) - theirs))
        alpha_gap = max(gaps)
        report.note(
            "per-criterion alpha: "
            + ", ".join(f"{cid} {ours[cid].alpha:.4f}" for cid in list(REQUIREMENTS)[:4])
            + ", ..."
        )

    report.note(
        f"{args.items} items x {N_CRITERIA} criteria: {calls} vendor calls in {elapsed:.1f}s "
        "(the jury, the strong critic on everything, and the cascade)"
    )
    report.check(
        "jury accuracy per criterion minus its best single critic's",
        100 * (jury_accuracy - best),
        at_least=3.0,
        unit=" points",
    )
    report.check(
        "strong-tier calls saved by escalating disputed criteria, not whole items",
        100 * (1 - disputed_calls / whole_calls) if whole_calls else None,
        at_least=50.0,
        unit="%",
    )
    report.check(
        "strong-tier tokens saved by escalating disputed criteria, not whole items",
        100 * (1 - disputed_tokens / whole_tokens) if whole_tokens else None,
        at_least=50.0,
        unit="%",
    )
    report.check(
        "per-criterion accuracy, disputed-only minus whole items (same decisions)",
        100 * (cascade_accuracy - accuracy(whole_disputed)),
        at_least=0.0,
        unit=" points",
    )
    report.check(
        "largest |alpha - krippendorff's alpha| over the criteria",
        alpha_gap,
        at_most=1e-9,
    )
    report.note(
        "whole-item escalation using the strong answers on every criterion reaches "
        f"{statistics.fmean(g == w for g, w in whole_all):.4f}: at this error correlation "
        "the cheap critics are sometimes wrong together, and only asking the strong critic "
        "about undisputed criteria too would catch that (at the calls shown)"
    )
    return report.finish(
        [
            ("policy", "policy"),
            ("accuracy", "accuracy per criterion"),
            ("strong_calls", "strong calls"),
            ("strong_tokens", "strong tokens"),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
