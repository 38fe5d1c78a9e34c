"""Agent runs judged step by step on the simulated vendor: escalating only the disputed
steps of a cascade, and rendering a very long trajectory within its cap.

Every number here comes from the simulator (``cross_judge.testing.VendorServer``): its
critics are seeded random judges, not models.

``--items`` agent runs of ``--steps`` steps each; a step is bad (truth ``FAIL``) with
probability 0.15, and a run fails when any of its steps does. A ``unit: step`` prompt
judges each step on its own, the step fenced in ``<item>`` so that the simulator finds
its truth, the whole trajectory shown around it. Three cheap critics answer right with
probability 0.8 per step, a strong one with 0.95; errors are correlated across critics
(``error_correlation`` 0.3: each step has a difficulty).

1. **Escalation.** A two-tier cascade (the cheap jury, then the strong critic) sends the
   strong tier only the steps the jury disputed. Beside it, from the strong critic's
   answers on every step of every run (judged once): whole-run escalation (every step of a
   run with any disputed step goes to the strong critic), its answers used for the
   disputed steps only (the same decisions) or for every step. Strong-tier calls are
   counted per run; the saving is a paired mean over runs with its standard error, and run
   accuracy is given with its standard error for each policy.
2. **Rendering.** A trajectory of 1,000 tool calls whose results hold 20 kB each (over
   20 MB of JSON) rendered within a 40,000-character cap: its length, and its time against
   serialising the same steps with ``json.dumps`` in the same process (the naive baseline:
   pasting the whole run).

Targets: disputed-only escalation makes >= 50% fewer strong-tier calls than whole-run
escalation at equal run accuracy (0 points apart, same decisions); the rendering stays
within its cap and takes under a second.

    python bench/bench_units.py [--items 300] [--steps 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _tiers import jury_strong_cascade

from cross_judge import Critic, Item
from cross_judge.content import RenderLimits, ToolCall, render_entry, render_trajectory
from cross_judge.critic._prompts import parse_prompt
from cross_judge.testing import Persona, VendorServer

CHEAP_ACCURACY, STRONG_ACCURACY = 0.8, 0.95
CHEAP = tuple(f"sim-cheap-{i}" for i in range(3))
STRONG = "sim-strong"
BAD_STEP = 0.15
PROMPT = parse_prompt(
    "id: bench-steps\nversion: '1'\nunit: step\nmax_units: 50\n"
    "system_prompt: You judge one step of an agent's run. Reply in JSON.\n"
    "user_prompt_template: |\n"
    "  Task: {query}\n"
    "  The run:\n"
    "  {trajectory}\n"
    "  The step to judge:\n"
    "  <item>\n"
    "  {step}\n"
    "  </item>\n"
    '  Reply with JSON: {{"kind": "<PASS or FAIL>", "confidence": "<0-1>", '
    '"reasoning": "<why>"}}\n'
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


def make_runs(count: int, steps: int, seed: int) -> tuple[list[Item], dict[str, list[str]]]:
    """Runs and each one's truth per step; a step's tool and arguments name its run."""
    rng = random.Random(seed)
    runs: list[Item] = []
    truth: dict[str, list[str]] = {}
    for i in range(count):
        labels = ["FAIL" if rng.random() < BAD_STEP else "PASS" for _ in range(steps)]
        trajectory = [
            ToolCall(name=f"tool_{k}", arguments={"run": i, "step": k}, result={"ok": True})
            for k in range(steps)
        ]
        item = Item(id=f"run-{i:05d}", query=f"task number {i}", trajectory=trajectory)
        runs.append(item)
        truth[item.id] = labels
    return runs, truth


def mean_se(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def run_label(steps: dict[str, str]) -> str:
    return "FAIL" if any(label == "FAIL" for label in steps.values()) else "PASS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--error-correlation", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=39)
    args = parser.parse_args()
    report = Report(
        "units",
        "Agent runs judged step by step (simulator): disputed-step escalation, long runs",
        items=args.items,
        steps=args.steps,
        error_correlation=args.error_correlation,
    )
    runs, truth = make_runs(args.items, args.steps, args.seed)
    gold = {
        render_entry(step, k + 1, PROMPT.limits): truth[run.id][k]
        for run in runs
        for k, step in enumerate(run.trajectory)
    }
    personas = [
        Persona(name, accuracy=CHEAP_ACCURACY, labels=("PASS", "FAIL"), seed=i)
        for i, name in enumerate(CHEAP)
    ]
    personas.append(Persona(STRONG, accuracy=STRONG_ACCURACY, labels=("PASS", "FAIL"), seed=7))
    with VendorServer(
        personas,
        gold=gold,
        error_correlation=args.error_correlation,
        difficulty_seed=args.seed,
    ) as server:
        started = time.perf_counter()
        cheap_run, strong_run, cascaded = asyncio.run(
            jury_strong_cascade(lambda name: critic(name, server.url), CHEAP, STRONG, runs)
        )
        elapsed = time.perf_counter() - started
        calls = server.stats()["requests"]

    def steps_of(result: object) -> dict[str, str]:
        criteria = getattr(result, "criteria", None) or {}
        return {cid: c.consensus for cid, c in criteria.items()}

    cheap_by = {r.query_id: r for r in cheap_run.verdicts}
    strong_by = {r.query_id: r for r in strong_run.verdicts}
    cascade_by = {r.query_id: r for r in cascaded.verdicts}
    saved: list[float] = []
    disputed_right: list[float] = []
    whole_right: list[float] = []
    whole_all_right: list[float] = []
    step_pairs: list[tuple[str, str]] = []
    disputed_total = whole_total = 0
    for run in runs:
        want = truth[run.id]
        ids = [f"step-{k + 1}" for k in range(args.steps)]
        cheap = cheap_by[run.id]
        strong = strong_by[run.id]
        mine = cascade_by[run.id]
        assert cheap.criteria is not None
        assert strong.criteria is not None
        # the real cascade: strong calls it made, its decisions
        disputed_calls = sum(v.attempts for t in (mine.tiers or [])[1:] for v in t.verdicts)
        cascade_steps = steps_of(mine)
        # whole-run escalation, from the strong critic's answers on every step
        escalate = any(c.disputed or c.fallback for c in cheap.criteria.values())
        whole_calls = sum(v.attempts for v in strong.verdicts) if escalate else 0
        whole_steps: dict[str, str] = {}
        whole_all: dict[str, str] = {}
        for cid in ids:
            settled = not (cheap.criteria[cid].disputed or cheap.criteria[cid].fallback)
            theirs = strong.criteria[cid].consensus
            whole_steps[cid] = cheap.criteria[cid].consensus if settled or not escalate else theirs
            whole_all[cid] = theirs if escalate else cheap.criteria[cid].consensus
        run_truth = "FAIL" if "FAIL" in want else "PASS"
        disputed_right.append(float(run_label(cascade_steps) == run_truth))
        whole_right.append(float(run_label(whole_steps) == run_truth))
        whole_all_right.append(float(run_label(whole_all) == run_truth))
        step_pairs.extend((cascade_steps[cid], want[k]) for k, cid in enumerate(ids))
        saved.append(float(whole_calls - disputed_calls))
        disputed_total += disputed_calls
        whole_total += whole_calls
    for name, values, strong_calls in (
        ("cascade, disputed steps escalated", disputed_right, disputed_total),
        ("cascade, whole runs escalated (strong used on disputed steps)", whole_right, whole_total),
        ("cascade, whole runs escalated (strong used on every step)", whole_all_right, whole_total),
    ):
        accuracy, se = mean_se(values)
        report.row(
            policy=name,
            run_accuracy=f"{accuracy:.4f} ± {se:.4f}",
            strong_calls=strong_calls,
        )
    step_accuracy = statistics.fmean(got == want for got, want in step_pairs)
    saved_mean, saved_se = mean_se(saved)
    report.note(
        f"strong-tier calls saved per run, paired over {len(runs)} runs: {saved_mean:.3f} ± "
        f"{saved_se:.3f} (s.e.); per-step accuracy of the cascade {step_accuracy:.4f}"
    )
    report.note(
        f"{args.items} runs x {args.steps} steps: {calls} simulated vendor calls in "
        f"{elapsed:.1f}s (the jury, the strong critic on everything, and the cascade)"
    )
    gap = 100 * (statistics.fmean(disputed_right) - statistics.fmean(whole_right))
    report.check(
        "strong-tier calls saved by escalating disputed steps, not whole runs (simulator)",
        100 * (1 - disputed_total / whole_total) if whole_total else None,
        at_least=50.0,
        unit="%",
    )
    report.check(
        "run accuracy, disputed steps minus whole runs (same decisions; simulator)",
        gap,
        at_least=0.0,
        unit=" points",
    )

    # 2. Rendering a 20 MB trajectory within its cap, against pasting it whole.
    long_run = [
        ToolCall(name="fetch_page", arguments={"page": i}, result="y" * 20_000) for i in range(1000)
    ]
    limits = RenderLimits(max_chars=40_000)
    started = time.perf_counter()
    pasted = json.dumps([step.model_dump() for step in long_run])
    paste_s = time.perf_counter() - started
    started = time.perf_counter()
    rendered = render_trajectory(long_run, limits)
    render_s = time.perf_counter() - started
    report.row(
        policy="render 1,000 steps (20 MB) within 40,000 characters",
        characters=len(rendered.text),
        seconds=round(render_s, 4),
        vs_json_dumps=round(render_s / paste_s, 3) if paste_s else None,
    )
    started = time.perf_counter()
    Item.from_value({"query": "read every page", "trajectory": json.loads(pasted)})
    read_s = time.perf_counter() - started
    report.note(
        f"the same steps as JSON (the naive paste): {len(pasted):,} characters in "
        f"{paste_s:.3f}s; rendered: {len(rendered.text):,} characters; reading that JSON "
        f"into an Item (json.loads and validation, once per item): {read_s:.3f}s"
    )
    report.check(
        "rendered characters of a 20 MB trajectory over its cap",
        len(rendered.text) / limits.max_chars,
        at_most=1.0,
    )
    report.check("seconds to render a 20 MB trajectory", render_s, at_most=1.0, unit=" s")
    return report.finish(
        [
            ("policy", "policy"),
            ("run_accuracy", "run accuracy ± s.e."),
            ("strong_calls", "strong calls"),
            ("characters", "characters"),
            ("seconds", "seconds"),
            ("vs_json_dumps", "time / json.dumps"),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
