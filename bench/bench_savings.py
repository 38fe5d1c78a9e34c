"""Cost savings: vendor calls saved by early stop and by the response cache.

A 5-critic majority panel judges ``--items`` items. The simulated vendor (its own process)
answers from a seeded RNG; each critic is right with probability ``--accuracy`` (0.887 by
default, so two critics agree about 80% of the time over 4 labels: p^2 + (1-p)^2/3). The
vendor's own request counter, read over HTTP, counts the calls:

* ``early_stop=False`` asks all 5 critics for every item;
* ``early_stop=True`` (staged) asks 3 and more only while the majority is undecided
  (target: >= 30% fewer calls), and must reach the same consensus on every item;
* ``early_stop="cancel"`` asks all 5 at once and cancels the rest when decided: shown for
  contrast, it saves latency and cancelled work, not requests;
* a rerun with the response cache on (target: 0 calls).

    python bench/bench_savings.py [--items 200] [--accuracy 0.887]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report
from _server import start_server

from cross_judge import BatchResult, Critic, Ensemble

CRITICS = 5
TARGET_SAVED = 0.30


def requests_so_far(url: str) -> int:
    stats_url = url.rsplit("/v1", 1)[0] + "/stats"
    with urllib.request.urlopen(stats_url, timeout=10) as response:
        return int(json.load(response)["requests"])


async def run(url: str, items: list[str], early_stop: object, cache: Path | None) -> BatchResult:
    critics = [
        Critic(name=f"c{i}", model=f"critic-{i}", vendor="custom", base_url=url, json_mode=False)
        for i in range(CRITICS)
    ]
    async with Ensemble(critics, early_stop=early_stop, cache=cache) as panel:  # type: ignore[arg-type]
        return await panel.judge_many(items, concurrency=32)


def calls(
    url: str, items: list[str], early_stop: object, cache: Path | None = None
) -> tuple[int, BatchResult]:
    before = requests_so_far(url)
    batch = asyncio.run(run(url, items, early_stop, cache))
    return requests_so_far(url) - before, batch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--accuracy", type=float, default=0.887)
    args = parser.parse_args()

    report = Report(
        "savings",
        f"Vendor calls saved, {CRITICS}-critic majority panel",
        items=args.items,
        accuracy=args.accuracy,
    )
    items = [f"candidate category {i}" for i in range(args.items)]
    extra = ("--accuracy", str(args.accuracy), "--jitter", "0.02")
    with start_server(0.02, *extra) as url, tempfile.TemporaryDirectory() as folder:
        full_calls, full = calls(url, items, False)
        staged_calls, staged = calls(url, items, True)
        cancel_calls, cancel = calls(url, items, "cancel")
        cache = Path(folder) / "responses.sqlite3"
        calls(url, items, False, cache)  # fills the cache
        cached_calls, cached = calls(url, items, False, cache)

    pairs = full.pairwise_agreement()
    agreement = sum(v for v in pairs.values() if v is not None) / len(pairs)
    same = sum(
        a.consensus == b.consensus for a, b in zip(full.verdicts, staged.verdicts, strict=True)
    ) / len(items)
    saved = 1 - staged_calls / full_calls
    for mode, count, batch in (
        ("early_stop=False", full_calls, full),
        ("early_stop=True (staged)", staged_calls, staged),
        ('early_stop="cancel"', cancel_calls, cancel),
        ("cached rerun", cached_calls, cached),
    ):
        report.row(
            mode=mode,
            vendor_calls=count,
            calls_per_item=round(count / len(items), 2),
            vs_no_early_stop=round(count / full_calls, 3),
            verdicts_skipped=sum(r.calls_saved for r in batch.verdicts),
        )
    report.note(f"measured pairwise agreement of the critics: {agreement:.1%}")
    report.note(
        '"cancel" sends every request and cancels the ones still running once decided: it '
        "saves latency (and output a vendor has not generated yet), not requests"
    )
    report.check(
        "calls saved by early_stop=True", saved * 100, at_least=TARGET_SAVED * 100, unit="%"
    )
    report.check(
        "items whose consensus matches asking everyone", same * 100, at_least=100, unit="%"
    )
    report.check("vendor calls of a cached rerun", cached_calls, at_most=0)
    return report.finish(
        [
            ("mode", "mode"),
            ("vendor_calls", "vendor calls"),
            ("calls_per_item", "calls/item"),
            ("vs_no_early_stop", "x no early stop"),
            ("verdicts_skipped", "skipped"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
