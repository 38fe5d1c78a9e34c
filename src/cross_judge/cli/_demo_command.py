"""``cross-judge demo``: the full pipeline offline against simulated critics, printed as a
table of each critic's verdict, the vote and the gold label.

The demo run itself is :func:`._demo.run_demo`; this module holds its options and prints.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from ..batch import Mode

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo`` and its options to ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="judge a sample taxonomy offline with three simulated critics",
        description=(
            "Runs the real pipeline (prompt, HTTP, retries, parsing, voting) against a local "
            "simulated vendor on 127.0.0.1. No API key, no network, no model download."
        ),
    )
    demo.add_argument(
        "--latency-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="multiply the simulated critics' latencies by X (default 1.0)",
    )
    demo.add_argument(
        "--mode",
        choices=("live", "batch"),
        default="live",
        help="batch: send every call through the simulator's OpenAI Batch API instead",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge demo``; the exit code."""
    return _run_demo(args.latency_scale, args.mode)


def _run_demo(latency_scale: float, mode: Mode = "live") -> int:
    import anyio
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from ._demo import run_demo

    if latency_scale < 0:
        raise ConfigError("--latency-scale must be >= 0")
    rows, facts = anyio.run(lambda: run_demo(latency_scale=latency_scale, mode=mode))
    console = Console()
    console.print(
        "[bold]cross-judge demo[/bold]: the critics are [bold yellow]simulated[/bold yellow] "
        f"by cross_judge.testing.VendorServer at {facts['server_url']}. Their answers come "
        "from a seeded random generator, not a language model. Everything else is the real "
        f"pipeline: prompt {facts['prompt']}, HTTP with retries, tolerant parsing, majority "
        "vote. No API key, no network."
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("candidate category", no_wrap=True, overflow="ellipsis", max_width=24)
    for name in ["gold", *facts["critics"], "vote"]:
        table.add_column(name, no_wrap=True, min_width=6)
    table.add_column("agree", justify="right", no_wrap=True)
    for row in rows:
        cells = []
        for v in row.verdicts:
            label = v.kind if v.is_valid else f"[red]{v.kind}[/red]"
            cells.append(label + ("[yellow]*[/yellow]" if v.attempts > 1 else ""))
        mark = "[green]" if row.consensus == row.gold else "[red]"
        table.add_row(
            row.item,
            row.gold,
            *cells,
            f"{mark}{row.consensus}[/]",
            f"{row.agreement:.0%}",
        )
    console.print(table)
    if facts["retried_calls"]:
        console.print("[yellow]*[/yellow] answered after a retry (the vendor sent 429 first)")
    if mode == "batch":
        how = (
            f"{facts['batch_requests']} requests in {facts['batches']} provider batches, "
            f"{facts['batch_polls']} polls, {facts['requests']} live requests, "
            f"{facts['failed_calls']} failed"
        )
    else:
        how = (
            f"{facts['requests']} HTTP requests, {facts['retried_calls']} retried, "
            f"{facts['failed_calls']} failed"
        )
    console.print(
        f"{len(rows)} items x {len(facts['critics'])} critics = {facts['calls']} verdicts "
        f"({how}) in {facts['elapsed_s']:.2f} s; "
        f"consensus matched gold on {facts['correct']}/{len(rows)} items."
    )
    return EXIT_OK if facts["failed_calls"] == 0 else EXIT_FAILED
