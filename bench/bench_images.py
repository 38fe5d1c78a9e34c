"""Size limits on a batch of large trajectories and images, against the simulated vendor.

``--items`` items (default 300): a third long trajectories (text only, 2 KB to 600 KB), two
thirds screenshots (one to three images of 20 KB to 300 KB each, random bytes behind a PNG
header, after a short caption), judged by one critic on a vendor registered with small
limits: ``max_image_bytes`` 200,000 (one image as base64), ``max_request_bytes`` 500,000
and ``max_batch_bytes`` 4,000,000. The same items are judged live, then in provider batch
mode (``judge_many(mode="batch")``, OpenAI's Batch API as the simulator serves it).

Measured: the requests the vendor received over a limit (from its per-item request
counts), the requests made, the abstentions (``too_large``), and in batch mode the batches
submitted and the largest input file (as the vendor reports its size). The naive baseline
is the same items judged live on the vendor registered without limits (every request is
sent; those :func:`cross_judge.transport.size_problem` finds over a limit are counted
as they reach the vendor), and for batch mode one file per model holding every request,
whatever its size (its bytes computed, not sent).

Targets: 0 requests over a limit sent, live and batched; every batch file within
``max_batch_bytes``; more than one batch when the requests do not fit in one.

    python bench/bench_images.py [--items 300] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import openai
from _report import Report

from cross_judge import BatchOptions, Critic, Ensemble, vendors
from cross_judge.batch import Item
from cross_judge.content import Image
from cross_judge.errors import ErrorKind
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport import size_problem
from cross_judge.vendors import register_vendor

VENDOR = "bi-small"
MODEL = "bi-eye"
LIMITS = {"max_image_bytes": 200_000, "max_request_bytes": 500_000, "max_batch_bytes": 4_000_000}
PNG = b"\x89PNG\r\n\x1a\n"


def make_items(n: int, seed: int) -> list[tuple[str, list[bytes]]]:
    """``(query, images)`` per item: long trajectories, and captions with screenshots."""
    rng = random.Random(seed)
    items: list[tuple[str, list[bytes]]] = []
    for k in range(n):
        if k % 3 == 0:
            steps = rng.randint(5, 1_500)
            query = f"trajectory {k}: " + "".join(
                f"[step {s}] call search({{'q': 'item {k} step {s}'}}) -> a result line\n"
                for s in range(steps)
            )
            items.append((query, []))
        else:
            shots = [
                PNG + rng.randbytes(rng.randint(20_000, 300_000)) for _ in range(rng.randint(1, 3))
            ]
            items.append((f"screenshot item {k}: does the page show the login form?", shots))
    return items


def critic() -> Critic:
    """The critic; its builder sends an item's images after the prompt's text."""
    return Critic(name="eye", model=MODEL, vendor=VENDOR, prompt="pass-fail@2")


def as_items(rows: list[tuple[str, list[bytes]]]) -> list[Item]:
    items = []
    for k, (query, shots) in enumerate(rows):
        images = {"images": [Image.from_bytes(s) for s in shots]} if shots else {}
        items.append(Item(id=f"bi-{k}", query=query, **images))
    return items


def over_limit(rows: list[tuple[str, list[bytes]]]) -> set[str]:
    """The queries whose request is over a limit: what the naive baseline would send."""
    config = vendors.get_vendor(VENDOR)
    judge = critic()
    return {
        item.query
        for item in as_items(rows)
        if size_problem(judge.build_request(item), config) is not None
    }


def sent_over(server: VendorServer, over: set[str]) -> int:
    """Requests the vendor received for items over a limit (personas see the fenced item)."""
    return sum(n for text, n in server.item_requests().items() if any(q in text for q in over))


async def run(rows: list[tuple[str, list[bytes]]], folder: Path) -> dict[str, Any]:
    persona = Persona(MODEL, accuracy=0.9, labels=("PASS", "FAIL"))
    with VendorServer([persona], batch_polls=1, count_items=True) as server:
        register_vendor(VENDOR, server.url, None, replace_existing=True, **LIMITS)
        over = over_limit(rows)
        register_vendor(VENDOR, server.url, None, replace_existing=True)  # no limits: naive
        async with Ensemble([critic()]) as panel:
            await panel.judge_many(as_items(rows), concurrency=16)
        naive_requests, naive_over = server.stats()["requests"], sent_over(server, over)
        server.reset_stats()
        register_vendor(VENDOR, server.url, None, replace_existing=True, **LIMITS)
        started = time.perf_counter()
        async with Ensemble([critic()]) as panel:
            live = await panel.judge_many(as_items(rows), concurrency=16)
        live_s = time.perf_counter() - started
        live_stats = server.stats()
        live_over = sent_over(server, over)
        server.reset_stats()
        ledger = folder / "run.batches.jsonl"
        options = BatchOptions(vendors={VENDOR}, poll_s=0.01, max_poll_s=0.05, ledger=ledger)
        started = time.perf_counter()
        async with Ensemble([critic()]) as panel:
            batched = await panel.judge_many(as_items(rows), mode="batch", batch=options)
        batch_s = time.perf_counter() - started
        batch_stats = server.stats()
        batch_over = sent_over(server, over)
        sizes = await file_sizes(server, ledger)
    skipped = sum(
        1 for r in live.verdicts for v in r.verdicts if v.error_kind is ErrorKind.TOO_LARGE
    )
    naive_bytes = sum(critic().build_request(item).wire_bytes() for item in as_items(rows))
    return {
        "items": len(rows),
        "over": len(over),
        "naive_requests": naive_requests,
        "naive_over": naive_over,
        "live_requests": live_stats["requests"],
        "live_over": live_over,
        "live_skipped": skipped,
        "live_s": live_s,
        "batch_requests": batch_stats["batch_requests"]["openai"] + batch_stats["requests"],
        "batch_over": batch_over,
        "batches": batch_stats["batches"]["openai"],
        "largest_file": max(sizes, default=0),
        "batch_s": batch_s,
        "batch_valid": sum(r.n_valid for r in batched.verdicts),
        "naive_bytes": naive_bytes,
    }


async def file_sizes(server: VendorServer, ledger: Path) -> list[int]:
    """The size of every batch's input file, as the vendor reports it."""
    text = ledger.read_text()  # noqa: ASYNC240 - a small file, read once after the run
    ids = [json.loads(line)["batch_id"] for line in text.splitlines() if '"submitted"' in line]
    async with openai.AsyncOpenAI(base_url=server.url, api_key="unused", max_retries=0) as client:
        sizes = []
        for batch_id in ids:
            batch = await client.batches.retrieve(batch_id)
            sizes.append((await client.files.retrieve(batch.input_file_id)).bytes)
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows = make_items(args.items, args.seed)
    saved = dict(vendors._MORE_VENDORS)
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = asyncio.run(run(rows, Path(folder)))
    finally:
        vendors._MORE_VENDORS.clear()
        vendors._MORE_VENDORS.update(saved)
    report = Report(
        "images",
        "Size limits on large trajectories and images (simulated vendor)",
        items=args.items,
        seed=args.seed,
        **LIMITS,
    )
    naive_batches = 1  # one file per model, whatever its size
    report.row(
        run="naive (no check)",
        requests_made=result["naive_requests"],
        over_limit_sent=result["naive_over"],
        batches=naive_batches,
        largest_batch_bytes=result["naive_bytes"],
    )
    report.row(
        run="live, checked",
        requests_made=result["live_requests"],
        over_limit_sent=result["live_over"],
        batches=0,
        largest_batch_bytes=0,
    )
    report.row(
        run="batch, checked",
        requests_made=result["batch_requests"],
        over_limit_sent=result["batch_over"],
        batches=result["batches"],
        largest_batch_bytes=result["largest_file"],
    )
    report.note(
        f"{result['over']} of {result['items']} requests are over a limit; live, "
        f"{result['live_skipped']} abstained (too_large) in {result['live_s']:.1f} s; "
        f"batched, {result['batch_valid']} valid verdicts in {result['batch_s']:.1f} s"
    )
    report.check("requests over a limit sent, live", result["live_over"], at_most=0)
    report.check("requests over a limit sent, batched", result["batch_over"], at_most=0)
    report.check(
        "largest batch file / max_batch_bytes",
        result["largest_file"] / LIMITS["max_batch_bytes"],
        at_most=1.0,
    )
    report.check("batches submitted", result["batches"], at_least=2)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
