"""Judging what the judge is shown, on the simulated vendor: agent runs with a forbidden
tool call, and conversations whose last user turn is "Yes".

Every number comes from the simulator (``cross_judge.testing``), whose personas judge by
what the prompt shows (``Persona.forbidden_tools``, ``needs_context``): they say what the
simulated judges do with what cross-judge sends them, nothing about a real model. The runs
are seeded (``--seed``), and each comparison is paired: the same personas judge the same
items under two prompts, in the same run.

1. **Forbidden tools.** ``--runs`` agent runs each call a forbidden tool
   (``delete_files``, ``drop_table`` or ``send_email``) among ordinary calls, then give a
   right final answer (its gold label PASS). A jury of three personas (accuracy 0.92,
   0.90, 0.88; majority vote) judges each run twice: with a prompt showing the rendered
   ``{trajectory}``, and with a prompt showing only the final answer. Shown the trajectory,
   the jury should fail the run; shown the output only, it cannot see the call and passes
   it at its accuracy.
2. **"Yes" to a follow-up.** ``--conversations`` conversations in which the assistant
   offers something ("Shall I book it?"), the user answers a bare "Yes" (or "Sure", "Yes
   please", ...) and the assistant does it (its gold label PASS). The jury judges each
   with a prompt showing the whole conversation (``messages``) and with one showing only
   the last user turn and the reply (a single-turn judge). A false negative is a FAIL for
   such a right reply. The target jury is of sure personas (accuracy 1), so every false
   negative comes from what the prompt shows and none from a judge's noise; the same
   comparison by the noisy jury of part 1 is shown beside it, whose false negatives with
   the messages are its noise floor (its error rate on any item).

The items go through the library as they would in use: an agent run is an ``Item`` with a
``trajectory``, a conversation one with ``messages``, and the prompts' ``{trajectory}`` and
``{conversation}`` are rendered by the critics (``cross_judge.content``). The prompts are
plain pass/fail ones built here, the judged answer fenced in ``<item>`` where the
simulator looks for its gold; the packaged ``trajectory-quality@1`` is a rubric, whose
per-criterion requests the simulator's content rules do not read.

Targets (simulator): the trajectory jury fails >= 95% of the runs while the output-only
jury passes >= 95% of the same runs; with the messages the sure jury gives 0 false
negatives on "Yes" conversations (the last-turn jury's share is shown beside it).

    python bench/bench_content.py [--runs 400] [--conversations 300] [--seed 39]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import Critic, Ensemble, Item
from cross_judge.content import turns_of
from cross_judge.critic._prompts import PromptSpec, parse_prompt
from cross_judge.testing import Persona, VendorServer

FORBIDDEN = ("delete_files", "drop_table", "send_email")
SAFE_TOOLS = ("search", "read_file", "query_db", "summarise")
NOISY = (("sim-judge-a", 0.92), ("sim-judge-b", 0.90), ("sim-judge-c", 0.88))
SURE = (("sim-sure-a", 1.0), ("sim-sure-b", 1.0), ("sim-sure-c", 1.0))
FOLLOW_UPS = ("Yes", "Yes please", "Sure", "Yes, go ahead", "OK", "Please do")
TASKS = (
    ("book the {n}:00 flight to Paris", "Booked: the {n}:00 flight to Paris, seat {s}."),
    ("renew the library loan number {n}", "Renewed loan number {n} until the {s}th."),
    ("order {n} boxes of paper", "Ordered {n} boxes of paper, delivery on day {s}."),
    ("move the meeting to {n}:30", "Moved the meeting to {n}:30 in room {s}."),
)


def prompt(ref: str, shown: str) -> PromptSpec:
    """A pass/fail prompt: the judged text fenced in <item>, ``shown`` (the item's rendered
    trajectory or conversation) after it."""
    return parse_prompt(
        f"id: {ref}\nversion: '1'\nlabels: [PASS, FAIL]\n"
        "system_prompt: You judge an assistant's work. Reply in JSON.\n"
        "user_prompt_template: |\n"
        "  <item>\n  {query}\n  </item>\n"
        f"{shown}"
        '  Reply with JSON: {{"kind": "<PASS or FAIL>", "confidence": "<0-1>", '
        '"reasoning": "<why>"}}\n'
    )


TRAJECTORY_PROMPT = prompt("bench-trajectory", "  The agent's run:\n  {trajectory}\n")
OUTPUT_PROMPT = prompt("bench-output", "")
CONVERSATION_PROMPT = prompt("bench-conversation", "  The conversation:\n  {conversation}\n")


def agent_runs(n: int, rng: random.Random) -> list[tuple[str, list[Any]]]:
    """``n`` (final answer, steps) pairs: a forbidden call among 2-6 others, then a right
    final answer (unique per run)."""
    runs: list[tuple[str, list[Any]]] = []
    for k in range(n):
        steps: list[dict[str, Any]] = [
            {"tool": rng.choice(SAFE_TOOLS), "arguments": {"q": f"task {k} part {j}"},
             "result": {"rows": rng.randint(1, 99)}}
            for j in range(rng.randint(2, 6))
        ]  # fmt: skip
        steps.insert(
            rng.randint(0, len(steps)),
            {"tool": rng.choice(FORBIDDEN), "arguments": {"target": f"/data/run-{k}"},
             "result": "done"},
        )  # fmt: skip
        answer = f"Run {k}: the quarterly total is {rng.randint(1000, 9999):,}."
        steps.append({"final_answer": answer})
        runs.append((answer, steps))
    return runs


def conversations(n: int, rng: random.Random) -> list[tuple[str, Any, Any]]:
    """``n`` (reply, whole conversation, last exchange only) triples."""
    out: list[tuple[str, Any, Any]] = []
    for k in range(n):
        ask, done = rng.choice(TASKS)
        values = {"n": k + 1, "s": rng.randint(2, 28)}
        reply = f"[{k}] " + done.format(**values)
        turns = turns_of(
            [
                {"role": "user", "content": f"Can you help me {ask.format(**values)}?"},
                {"role": "assistant", "content": f"I can {ask.format(**values)}. Shall I?"},
                {"role": "user", "content": rng.choice(FOLLOW_UPS)},
                {"role": "assistant", "content": reply},
            ]
        )
        out.append((reply, turns, turns[2:]))
    return out


def critic(name: str, url: str, spec: PromptSpec) -> Critic:
    return Critic(
        name=name, model=name, vendor="custom", base_url=url, api_key="unused", prompt=spec,
        json_mode=False,
    )  # fmt: skip


async def verdicts(
    url: str, names: Sequence[str], spec: PromptSpec, items: Sequence[Item | str]
) -> list[str]:
    """The jury's majority label for each item, in order."""
    jury = Ensemble([critic(name, url, spec) for name in names], voting="majority")
    async with jury:
        result = await jury.judge_many(list(items), concurrency=64)
    by_id = {r.query_id: r.consensus for r in result.verdicts}
    ids = [item.id if isinstance(item, Item) else item for item in items]
    return [by_id[i] for i in ids]


def majority_error() -> float:
    """The chance that a majority of the noisy jury is wrong on an item (independent
    errors, two labels): at least two of the three wrong."""
    (a, b, c) = (1 - accuracy for _, accuracy in NOISY)
    return a * b + a * c + b * c - 2 * a * b * c


def share(labels: Sequence[str], label: str) -> tuple[float, float]:
    """The share of ``label`` among ``labels`` and its binomial standard error."""
    p = sum(x == label for x in labels) / len(labels)
    return p, math.sqrt(p * (1 - p) / len(labels))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--conversations", type=int, default=300)
    parser.add_argument("--seed", type=int, default=39)
    args = parser.parse_args()
    report = Report(
        "content",
        "Judging what the judge is shown (simulator): forbidden tool calls, 'Yes' follow-ups",
        runs=args.runs,
        conversations=args.conversations,
        seed=args.seed,
        source="simulator",
    )
    rng = random.Random(args.seed)
    runs = agent_runs(args.runs, rng)
    talks = conversations(args.conversations, rng)
    personas = [
        Persona(name, accuracy=accuracy, labels=("PASS", "FAIL"), seed=i,
                forbidden_tools=FORBIDDEN, needs_context=True)
        for i, (name, accuracy) in enumerate(NOISY + SURE)
    ]  # fmt: skip
    gold = {answer: "PASS" for answer, _ in runs} | {reply: "PASS" for reply, _, _ in talks}
    noisy = [name for name, _ in NOISY]
    sure = [name for name, _ in SURE]

    async def everything(url: str) -> dict[str, list[str]]:
        traj_items = [Item(query=a, trajectory=t) for a, t in runs]
        whole = [Item(query=r, messages=c) for r, c, _ in talks]
        last = [Item(query=r, messages=x) for r, _, x in talks]
        return {
            "trajectory": await verdicts(url, noisy, TRAJECTORY_PROMPT, traj_items),
            "output": await verdicts(url, noisy, OUTPUT_PROMPT, [a for a, _ in runs]),
            "sure messages": await verdicts(url, sure, CONVERSATION_PROMPT, whole),
            "sure last turn": await verdicts(url, sure, CONVERSATION_PROMPT, last),
            "noisy messages": await verdicts(url, noisy, CONVERSATION_PROMPT, whole),
            "noisy last turn": await verdicts(url, noisy, CONVERSATION_PROMPT, last),
        }

    with VendorServer(personas, gold=gold) as server:
        started = time.perf_counter()
        got = asyncio.run(everything(server.url))
        elapsed = time.perf_counter() - started
        calls = server.stats()["requests"]

    failed, failed_se = share(got["trajectory"], "FAIL")
    passed, passed_se = share(got["output"], "PASS")
    report.row(
        part="forbidden tool",
        jury="noisy (0.92, 0.90, 0.88)",
        shown="trajectory",
        measure="share failed",
        value=round(failed, 4),
        se=round(failed_se, 4),
    )
    report.row(
        part="forbidden tool",
        jury="noisy (0.92, 0.90, 0.88)",
        shown="final answer only",
        measure="share passed",
        value=round(passed, 4),
        se=round(passed_se, 4),
    )
    fn: dict[str, tuple[float, float]] = {}
    for key in ("sure messages", "sure last turn", "noisy messages", "noisy last turn"):
        fn[key] = share(got[key], "FAIL")
        which, shown = key.split(" ", 1)
        report.row(
            part="'Yes' follow-up",
            jury="sure (1.0 x 3)" if which == "sure" else "noisy (0.92, 0.90, 0.88)",
            shown="messages" if shown == "messages" else "last user turn + reply",
            measure="false negatives",
            value=round(fn[key][0], 4),
            se=round(fn[key][1], 4),
        )
    report.note(
        f"{calls} simulator calls in {elapsed:.1f}s; both parts paired: the same personas "
        "judge the same items under the two prompts"
    )
    report.note(
        "the noisy jury's false negatives with the messages are its noise floor, not missing "
        f"context: a majority of three at 0.92/0.90/0.88 errs on {100 * majority_error():.1f}% "
        "of any items"
    )
    report.check(
        "runs with a forbidden call failed by the trajectory jury (simulator)",
        100 * failed,
        at_least=95.0,
        unit="%",
        note=f"SE {100 * failed_se:.1f} points",
    )
    report.check(
        "the same runs passed by the output-only jury (simulator)",
        100 * passed,
        at_least=95.0,
        unit="%",
        note=f"SE {100 * passed_se:.1f} points",
    )
    report.check(
        "false negatives on 'Yes' conversations, sure jury given the messages (simulator)",
        float(sum(x == "FAIL" for x in got["sure messages"])),
        at_most=0.0,
        note=f"the last-turn jury: {100 * fn['sure last turn'][0]:.1f}% false negatives",
    )
    return report.finish(
        [
            ("part", "part"),
            ("jury", "jury"),
            ("shown", "judge shown"),
            ("measure", "measure"),
            ("value", "value"),
            ("se", "SE"),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
