"""``cross-judge import``: votes cast elsewhere (people's labels, another tool's judge logs)
in a CSV, TSV or JSONL file, written as a results file that ``stats``, ``report``,
``revote`` and ``BatchResult.from_jsonl`` read like a review's. No model is called.

Rows are read by :func:`cross_judge.batch.votes.read_votes_file` and checked as
:meth:`BatchResult.from_votes <cross_judge.batch.BatchResult.from_votes>` checks them, into
a compact table (:func:`cross_judge.batch.votes.import_votes`); then each item is voted and
written in turn, and the summary is counted as the lines go out
(:class:`~cross_judge.report._digest.BatchDigest`), so memory grows by a few tens of bytes a
vote, never by a model per vote. A bad row stops the import before anything is written, its
line named. An existing ``--out`` is refused unless ``--force`` (then replaced whole, never
left half-written: the lines go to a temporary file beside it, moved into place at the
end); the votes file itself is never written over.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._common import EXIT_OK, counted, say, stdout_console

if TYPE_CHECKING:
    from ..batch.votes import ImportedVotes
    from ..report import BatchDigest

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
    command.add_argument(
        "--encoding",
        metavar="NAME",
        help=(
            "the votes file's text encoding, e.g. latin-1, cp1252, utf-16 (default utf-8, "
            "or UTF-16/UTF-32 when the file starts with their byte-order mark)"
        ),
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
    from ..batch.votes import import_votes, read_votes_file
    from ..report import render_summary

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
    imported = import_votes(
        read_votes_file(votes, args.format, encoding=args.encoding),
        item=args.item,
        critic=args.critic,
        label=args.label,
        confidence=args.confidence,
        reasoning=args.reasoning,
        voting=args.voting,
        voting_kwargs=_voting_kwargs(args.voting_kwargs),
        people=people,
        spill=out.parent,
    )
    if not imported.n_items:
        imported.close()
        raise ConfigError(f"{votes} holds no votes; nothing written")
    digest = _write(out, imported)
    console = stdout_console()
    console.print(render_summary(digest))
    say(
        console,
        f"imported {counted(imported.n_votes, 'vote')} by "
        f"{counted(len(imported.critics), 'voter')} on {counted(imported.n_items, 'item')} "
        f"({len(imported.human_critics)} of them people), voted {imported.voting}",
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


def _write(path: Path, imported: ImportedVotes) -> BatchDigest:
    """Vote and write each item to a temporary file beside ``path``, then move it into
    place: a failed write (or a voter's two labels on an item, found as the items are
    reached) leaves ``path`` as it was. The digest of what was written, for the summary."""
    from ..report import BatchDigest

    digest = BatchDigest(critics=imported.critics)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
    )
    try:
        with handle:
            write = handle.file.write  # the file itself: the wrapper adds a call per line
            for line in imported.lines(each=digest.add):
                write(line + "\n")
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    digest.voting = imported.voting
    return digest
