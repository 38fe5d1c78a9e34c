"""The ``cross-judge`` command.

Subcommands: ``demo`` (the full pipeline offline, against simulated critics) and
``version``. Exit codes: 0 done, 1 finished with failures, 2 usage or configuration
error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__
from .errors import ConfigError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cross-judge",
        description="Ask several LLMs to judge the same item; get one verdict you can trust.",
    )
    parser.add_argument("--version", action="version", version=f"cross-judge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
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
    sub.add_parser("version", help="print the version")
    return parser


def _run_demo(latency_scale: float) -> int:
    import anyio
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from ._demo import run_demo

    if latency_scale < 0:
        raise ConfigError("--latency-scale must be >= 0")
    rows, facts = anyio.run(lambda: run_demo(latency_scale=latency_scale))
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
    console.print(
        f"{len(rows)} items x {len(facts['critics'])} critics = {facts['calls']} verdicts "
        f"({facts['requests']} HTTP requests, {facts['retried_calls']} retried, "
        f"{facts['failed_calls']} failed) in {facts['elapsed_s']:.2f} s; "
        f"consensus matched gold on {facts['correct']}/{len(rows)} items."
    )
    return EXIT_OK if facts["failed_calls"] == 0 else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return _run_demo(args.latency_scale)
        if args.command == "version":
            print(f"cross-judge {__version__}")
            return EXIT_OK
        parser.print_help()
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"cross-judge: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cross-judge: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
