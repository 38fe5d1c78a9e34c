"""``cross-judge revote``: the verdicts of a results file under another voting strategy, the
consensus changes counted, optionally written to a new file. No model is called.

It never overwrites a file: the new results go to a path that must not exist yet.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._common import EXIT_OK, read_results_file, say, stdout_console

if TYPE_CHECKING:
    from ..batch import BatchResult

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``revote`` and its options to ``sub``."""
    revote = sub.add_parser(
        "revote",
        help="re-aggregate stored verdicts with another strategy (no model calls)",
        description=(
            "Apply another voting strategy to the verdicts stored in OUT.jsonl and count the "
            "items whose consensus changes. Calls no model. With --out the new results are "
            "written to NEW.jsonl, which must not exist yet: results are never overwritten."
        ),
    )
    revote.add_argument("results", metavar="OUT.jsonl", help="results of cross-judge review")
    revote.add_argument("--voting", required=True, metavar="NAME", help="strategy name")
    revote.add_argument(
        "--voting-kwargs",
        metavar="JSON",
        help='strategy arguments as a JSON object, e.g. \'{"priority": ["REJECT"]}\'',
    )
    revote.add_argument("--out", metavar="NEW.jsonl", help="write the re-voted results here")


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge revote``; the exit code."""
    from rich import box
    from rich.table import Table

    kwargs: dict[str, Any] = {}
    if args.voting_kwargs is not None:
        try:
            parsed = json.loads(args.voting_kwargs)
        except ValueError as exc:
            raise ConfigError(f"--voting-kwargs is not valid JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise ConfigError(
                '--voting-kwargs must be a JSON object, e.g. \'{"priority": ["REJECT"]}\''
            )
        kwargs = parsed
    new_path = Path(args.out) if args.out is not None else None
    if new_path is not None:
        if new_path.exists():
            same = new_path.resolve() == Path(args.results).resolve()
            what = "is the results file being re-voted" if same else "already exists"
            raise ConfigError(
                f"--out {new_path} {what}; revote never overwrites results: choose a path "
                "that does not exist yet"
            )
        if not new_path.parent.exists():
            raise ConfigError(f"{new_path.parent} does not exist; create it or choose another path")
    batch = read_results_file(args.results, slim=new_path is None)
    if batch.tier_stats():
        raise ConfigError(
            f"{args.results} holds a cascade's results: each item's verdicts come from the "
            "tiers it went through, and one strategy over all of them would mix tiers. "
            "Change a tier's voting in the panel file instead; to see what another "
            "escalation would have decided, use Cascade.replay in Python, or calibrate "
            "results of review --all-tiers with 'cross-judge calibrate'"
        )
    revoted = batch.revote(args.voting, **kwargs)
    changes = Counter(
        (old.consensus, new.consensus)
        for old, new in zip(batch.verdicts, revoted.verdicts, strict=True)
        if old.consensus != new.consensus
    )
    if new_path is not None:
        _write_new(new_path, revoted)
    out = stdout_console()
    out.print(revoted.summary())
    n, changed = len(batch.verdicts), sum(changes.values())
    say(out, f"consensus changed on {changed} of {n} items ({batch.voting} -> {revoted.voting})")
    if changes:
        table = Table(box=box.SIMPLE_HEAD, title="consensus changes", title_justify="left")
        for name in ("from", "to", "items"):
            table.add_column(name, justify="right" if name == "items" else "left")
        for (before, after), count in changes.most_common():
            table.add_row(before, after, str(count))
        out.print(table)
    if new_path is not None:
        say(out, f"wrote {new_path}")
    else:
        say(out, "nothing written; pass --out NEW.jsonl to save the re-voted results")
    return EXIT_OK


def _write_new(path: Path, batch: BatchResult) -> None:
    """Write ``batch`` to a file that must not exist yet (``x`` mode: never a clobber, not
    even one racing another process); a failed write removes the partial file."""
    from ..batch import dump_result

    try:
        handle = open(path, "x", encoding="utf-8")  # noqa: SIM115 - closed below
    except FileExistsError:
        raise ConfigError(f"--out {path} already exists; revote never overwrites results") from None
    try:
        with handle:
            for result in batch.verdicts:
                handle.write(dump_result(result) + "\n")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
