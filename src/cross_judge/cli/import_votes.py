"""``cross-judge import``: votes cast elsewhere (people's labels, another tool's judge logs)
in a CSV, TSV or JSONL file, written as a results file that ``stats``, ``report``,
``revote`` and ``BatchResult.from_jsonl`` read like a review's. No model is called.

Rows are read by :func:`cross_judge.batch.votes.read_votes_file` and voted by
:meth:`BatchResult.from_votes <cross_judge.batch.BatchResult.from_votes>`; a bad row stops
the import before anything is written, its line named. An existing ``--out`` is refused
unless ``--force`` (then replaced whole, never left half-written); the votes file itself is
never written over.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .common import EXIT_OK, counted, say, stdout_console

if TYPE_CHECKING:
    from ..batch import BatchResult

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``import`` and its options to ``sub``."""
    command = sub.add_parser(
        "import",
        help="votes from a CSV, TSV or JSONL file as a results file (no model calls)",
        description=(
            "Read votes (one voter's label on one item per row: people's annotations or "
            "another tool's judge logs) from VOTES.csv, VOTES.tsv or VOTES.jsonl, vote each "
            "item with --voting and write the results to --out, which stats, report and "
            "revote then read. Every voter is a person unless --models or --people says "
            "otherwise. A bad row stops the import with its line number; nothing is written."
        ),
    )
    command.add_argument("votes", metavar="VOTES", help="a .csv, .tsv or .jsonl file of votes")
    command.add_argument(
        "--out", required=True, metavar="RESULTS.jsonl", help="the results file to write"
    )
    command.add_argument("--force", action="store_true", help="replace --out if it exists")
    command.add_argument(
        "--format",
        choices=("csv", "tsv", "jsonl"),
        help="the votes file's format (default: suffix)",
    )
    for option, default in (("item", "item"), ("critic", "critic"), ("label", "label")):
        command.add_argument(
            f"--{option}",
            default=default,
            metavar="COL",
            help=f"the column (JSONL: key) of the {option} (default {default!r})",
        )
    command.add_argument(
        "--confidence", metavar="COL", help="the column of the confidence, a number in [0, 1]"
    )
    command.add_argument("--reasoning", metavar="COL", help="the column of a reason or note")
    command.add_argument(
        "--voting", default="majority", metavar="NAME", help="strategy (default majority)"
    )
    command.add_argument(
        "--voting-kwargs",
        metavar="JSON",
        help='strategy arguments as a JSON object, e.g. \'{"priority": ["FAIL"]}\'',
    )
    who = command.add_mutually_exclusive_group()
    who.add_argument(
        "--models", action="store_true", help="no voter is a person (e.g. another tool's judges)"
    )
    who.add_argument(
        "--people", metavar="NAME,NAME", help="only these voters are people; the rest are models"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge import``; the exit code."""
    from ..batch import BatchResult
    from ..batch.votes import read_votes_file

    votes, out = Path(args.votes), Path(args.out)
    if not votes.is_file():
        raise ConfigError(f"{votes}: no such votes file")
    if out.exists() and out.resolve() == votes.resolve():
        raise ConfigError(f"--out {out} is the votes file; write the results to another file")
    if out.exists() and not args.force:
        raise ConfigError(
            f"--out {out} already exists; pass --force to replace it, or choose another path"
        )
    if not out.parent.exists():
        raise ConfigError(f"{out.parent} does not exist; create it or choose another path")
    people: bool | list[str] = True
    if args.models:
        people = False
    elif args.people is not None:
        people = [name.strip() for name in args.people.split(",") if name.strip()]
    batch = BatchResult.from_votes(
        read_votes_file(votes, args.format),
        item=args.item,
        critic=args.critic,
        label=args.label,
        confidence=args.confidence,
        reasoning=args.reasoning,
        voting=args.voting,
        voting_kwargs=_voting_kwargs(args.voting_kwargs),
        people=people,
    )
    if not batch.verdicts:
        raise ConfigError(f"{votes} holds no votes; nothing written")
    _write(out, batch)
    console = stdout_console()
    console.print(batch.summary())
    n_votes = sum(len(r.verdicts) for r in batch.verdicts)
    humans = batch.human_critics
    say(
        console,
        f"imported {counted(n_votes, 'vote')} by {counted(len(batch.critics), 'voter')} on "
        f"{counted(len(batch), 'item')} ({len(humans)} of them people), voted {batch.voting}",
    )
    say(console, f"wrote {out}")
    return EXIT_OK


def _voting_kwargs(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--voting-kwargs is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise ConfigError('--voting-kwargs must be a JSON object, e.g. \'{"priority": ["FAIL"]}\'')
    return parsed


def _write(path: Path, batch: BatchResult) -> None:
    """Write ``batch`` to a temporary file beside ``path``, then move it into place: a
    failed write leaves ``path`` as it was."""
    from ..batch import dump_result

    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
    )
    try:
        with handle:
            for result in batch.verdicts:
                handle.write(dump_result(result) + "\n")
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
