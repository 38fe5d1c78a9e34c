"""Provider batch mode against live mode, on the simulated vendor.

``--items`` items (default 10,000) x 3 critics (OpenAI protocol, seeded personas, priced at
$2 / $8 per million tokens with the batch rate 0.5) are judged twice in one process: live
(``judge_many``, concurrency 64) and in batch mode (``judge_many(mode="batch")``: one
OpenAI batch per model, each ending on its second poll). Then ``cross-judge review --mode
batch`` runs in a child process on ``--resume-items`` items against batches that do not end,
is killed with SIGKILL once its ledger holds every batch, the batches are ended, and
``--resume`` finishes the run.

Targets: batch cost <= 0.51x live cost (priced by the table); every item's consensus and
every critic's label identical to live mode; after the kill and ``--resume``, 0 items lost,
0 judged twice, 0 batches submitted twice. Wall times are reported, not targeted: a real
batch takes minutes to hours, the simulator's two polls are only the protocol.

    python bench/bench_batch.py [--items 10000] [--resume-items 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

import cross_judge
from cross_judge import BatchOptions, BatchResult, Critic, Ensemble, register_price
from cross_judge.testing import Persona, VendorServer

MODELS = ("bb-careful", "bb-lenient", "bb-noisy")
ACCURACY = (0.9, 0.75, 0.6)
PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])
WAIT_S = 300.0


def panel(server: VendorServer) -> Ensemble:
    return Ensemble(
        [
            Critic(
                name=m, model=m, vendor="custom", base_url=server.url, prompt="taxonomy-review@1"
            )
            for m in MODELS
        ]
    )


def items(n: int) -> list[dict[str, str]]:
    return [{"id": f"bench item {k}", "query": f"candidate category number {k}"} for k in range(n)]


def labels(result: BatchResult) -> list[tuple[str, tuple[str, ...]]]:
    return [(r.consensus, tuple(v.kind for v in r.verdicts)) for r in result.verdicts]


async def live_and_batch(n: int) -> dict[str, float | int]:
    personas = [
        Persona(m, accuracy=a, seed=k)
        for k, (m, a) in enumerate(zip(MODELS, ACCURACY, strict=True))
    ]
    with VendorServer(personas, batch_polls=2) as server:
        async with panel(server) as ensemble:
            started = time.perf_counter()
            live = await ensemble.judge_many(items(n), concurrency=64)
            live_s = time.perf_counter() - started
        live_requests = server.stats()["requests"]
        server.reset_stats()
        options = BatchOptions(vendors={"custom"}, poll_s=0.05, max_poll_s=0.5)
        async with panel(server) as ensemble:
            started = time.perf_counter()
            batched = await ensemble.judge_many(items(n), mode="batch", batch=options)
            batch_s = time.perf_counter() - started
        stats = server.stats()
    same = sum(a == b for a, b in zip(labels(live), labels(batched), strict=True))
    assert live.cost_usd is not None
    assert batched.cost_usd is not None
    return {
        "live_cost": live.cost_usd,
        "batch_cost": batched.cost_usd,
        "live_s": live_s,
        "batch_s": batch_s,
        "live_requests": live_requests,
        "batch_live_requests": stats["requests"],
        "batches": sum(stats["batches"].values()),
        "batch_requests": sum(stats["batch_requests"].values()),
        "identical": same,
        "valid": sum(r.n_valid for r in batched.verdicts),
    }


def submitted(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    return sum('"submitted"' in line for line in ledger.read_text().splitlines())


def kill_and_resume(n: int) -> dict[str, int]:
    personas = [
        Persona(m, accuracy=a, seed=k)
        for k, (m, a) in enumerate(zip(MODELS, ACCURACY, strict=True))
    ]
    with (
        VendorServer(personas, batch_polls=10**9) as server,
        tempfile.TemporaryDirectory() as folder,
    ):
        root = Path(folder)
        (root / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items(n)))
        critics = "".join(
            f"\n  - name: {m}\n    model: {m}\n    vendor: custom\n    base_url: {server.url}"
            "\n    prompt: taxonomy-review@1"
            for m in MODELS
        )
        (root / "panel.yaml").write_text(f"critics:{critics}\n")
        out = root / "out.jsonl"
        ledger = out.with_name(out.name + ".batches.jsonl")
        command = [
            sys.executable,
            "-m",
            "cross_judge.cli",
            "review",
            str(root / "items.jsonl"),
            "--panel",
            str(root / "panel.yaml"),
            "--out",
            str(out),
            "--no-progress",
            "--mode",
            "batch",
            "--batch-vendors",
            "custom",
            "--poll",
            "0.05",
        ]
        env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
        with subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL) as first:
            deadline = time.monotonic() + WAIT_S
            while submitted(ledger) < len(MODELS) and time.monotonic() < deadline:
                time.sleep(0.05)
            first.send_signal(signal.SIGKILL)
            first.wait()
        before = sum(server.stats()["batches"].values())
        server.complete_batches()
        subprocess.run([*command, "--resume"], env=env, check=True, stderr=subprocess.DEVNULL)
        after = sum(server.stats()["batches"].values())
        ids = [json.loads(line)["query_id"] for line in out.read_text().splitlines()]
    expected = {i["id"] for i in items(n)}
    return {
        "batches_before_kill": before,
        "batches_submitted_twice": after - before,
        "lost": len(expected - set(ids)),
        "judged_twice": len(ids) - len(set(ids)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--resume-items", type=int, default=2_000)
    args = parser.parse_args()
    for model in MODELS:
        register_price(model, vendor="custom", input=2.0, output=8.0, batch=0.5)
    run = asyncio.run(live_and_batch(args.items))
    resumed = kill_and_resume(args.resume_items)
    report = Report(
        "batch",
        "Provider batch mode vs live mode (simulated vendor)",
        items=args.items,
        critics=len(MODELS),
        resume_items=args.resume_items,
    )
    report.row(
        mode="live",
        cost_usd=run["live_cost"],
        wall_s=run["live_s"],
        live_requests=run["live_requests"],
        batches=0,
        batch_requests=0,
    )
    report.row(
        mode="batch",
        cost_usd=run["batch_cost"],
        wall_s=run["batch_s"],
        live_requests=run["batch_live_requests"],
        batches=run["batches"],
        batch_requests=run["batch_requests"],
    )
    report.note(
        f"kill -9 while polling ({args.resume_items} items): {resumed['batches_before_kill']} "
        f"batches submitted before the kill, {resumed['batches_submitted_twice']} after; "
        f"{resumed['lost']} items lost, {resumed['judged_twice']} judged twice"
    )
    report.check("batch cost / live cost", run["batch_cost"] / run["live_cost"], at_most=0.51)
    report.check(
        "items whose consensus or a critic's label differs from live",
        args.items - run["identical"],
        at_most=0,
    )
    report.check("live requests in batch mode", run["batch_live_requests"], at_most=0)
    report.check("items lost after kill -9 + --resume", resumed["lost"], at_most=0)
    report.check("items judged twice after kill -9 + --resume", resumed["judged_twice"], at_most=0)
    report.check(
        "batches submitted twice after kill -9 + --resume",
        resumed["batches_submitted_twice"],
        at_most=0,
    )
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
