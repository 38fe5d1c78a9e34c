"""A worker process for the shared-limit tests: judges items against a simulated vendor,
every attempt holding a permit of a shared limit served by a LimitServer.

    python _shared_limit_worker.py VENDOR_URL LIMIT_ADDRESS --items N --prefix P

Prints ``JUDGED <n>`` after each verdict and, at the end, ``DONE <json>`` with the number
of valid verdicts and the errors. Exits 0 when it got that far.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import anyio

from cross_judge import Critic, Verdict
from cross_judge.limits._client import SharedLimit
from cross_judge.vendors import register_vendor


async def judge(args: argparse.Namespace) -> dict[str, object]:
    shared = SharedLimit.connect(args.limit, name=f"worker {args.prefix}")
    register_vendor("sim", args.vendor_url, None, limit_scope="endpoint", shared=shared)
    critics = [
        Critic(name=f"c{i}", model=f"sim-{i}", vendor="sim", json_mode=False, deadline=120.0)
        for i in range(args.critics)
    ]
    verdicts: list[Verdict] = []
    started_at = time.time()

    async def one(critic: Critic, item: str) -> None:
        verdicts.append(await critic.judge(item))
        print(f"JUDGED {len(verdicts)}", flush=True)

    async with anyio.create_task_group() as tg:
        for i in range(args.items):
            for critic in critics:
                tg.start_soon(one, critic, f"{args.prefix} item {i}")
    ended_at = time.time()
    await critics[0].aclose()
    await shared.aclose()
    return {
        "valid": sum(v.is_valid for v in verdicts),
        "errors": sorted({v.error or "" for v in verdicts if not v.is_valid}),
        "started_at": started_at,  # wall clock, to compare processes
        "ended_at": ended_at,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("vendor_url")
    parser.add_argument("limit")
    parser.add_argument("--items", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--critics", type=int, default=2)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    summary = anyio.run(judge, args, backend=args.backend)
    print(f"DONE {json.dumps(summary)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
