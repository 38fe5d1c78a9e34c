"""``cross-judge cache stats | clear``: the response cache's size and age, and emptying it
(after asking, on a terminal).

The cache itself is :class:`cross_judge.critic._cache.ResponseCache`; this module asks and
prints.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    counted,
    note,
    say,
    stderr_console,
    stdout_console,
)

if TYPE_CHECKING:
    from ..critic import ResponseCache

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``cache`` and its actions to ``sub``."""
    cache = sub.add_parser(
        "cache",
        help="show or clear the response cache",
        description=(
            "The response cache keeps the answers of valid verdicts (Critic(cache=True) or a "
            "cache path) so that asking again costs nothing. Its file is "
            "$CROSS_JUDGE_CACHE_DIR/responses.sqlite3 when that is set, else "
            "cross-judge/responses.sqlite3 in the user cache folder; --path names another."
        ),
    )
    cache.set_defaults(cache_parser=cache)
    actions = cache.add_subparsers(dest="cache_command", metavar="ACTION")
    where = (
        "the cache file (default: $CROSS_JUDGE_CACHE_DIR/responses.sqlite3, else "
        "cross-judge/responses.sqlite3 in the user cache folder)"
    )
    stats = actions.add_parser("stats", help="entries, size and age of the cache")
    stats.add_argument("--path", metavar="FILE", help=where)
    clear = actions.add_parser(
        "clear",
        help="remove every cached answer",
        description=(
            "Remove every cached answer, after asking for confirmation on a terminal. When "
            "stdin is not a terminal, --yes is required. A damaged cache file, or one of a "
            "newer cross-judge, is removed as a whole; a file that is not a cross-judge "
            "cache is never touched. Exit code 1 when the answer to the question is no."
        ),
    )
    clear.add_argument("--path", metavar="FILE", help=where)
    clear.add_argument("--yes", "-y", action="store_true", help="clear without asking")


def run(args: argparse.Namespace) -> int:
    """Run ``cross-judge cache``; the exit code."""
    from ..critic import ResponseCache

    if args.cache_command is None:
        args.cache_parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.cache_command == "clear" and not args.yes and not _stdin_is_terminal():
        raise ConfigError(
            "cache clear asks for confirmation, and stdin is not a terminal; "
            "pass --yes to clear without asking"
        )
    with ResponseCache(args.path) as cache:
        if args.cache_command == "stats":
            return _cache_stats(cache)
        return _cache_clear(cache, ask=not args.yes)


def _cache_stats(cache: ResponseCache) -> int:
    from rich import box
    from rich.table import Table

    out = stdout_console()
    stats = cache.stats()
    if not stats.exists:
        say(out, f"no response cache at {cache.path} yet: nothing has been cached there")
        return EXIT_OK
    say(out, f"response cache: {cache.path}")
    table = Table(box=box.SIMPLE_HEAD, show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("entries", f"{stats.entries:,}")
    table.add_row("size on disk", _human_size(stats.size_bytes))
    table.add_row("oldest entry", _local_time(stats.oldest))
    table.add_row("newest entry", _local_time(stats.newest))
    out.print(table)
    return EXIT_OK


def _cache_clear(cache: ResponseCache, *, ask: bool) -> int:
    from ..critic import UnusableCacheError, database_files

    out = stdout_console()
    path = cache.path
    if not path.exists():
        say(out, f"nothing to clear: no response cache at {path}")
        return EXIT_OK
    try:
        entries = cache.stats().entries
    except UnusableCacheError as exc:
        if not exc.removable:
            raise
        if ask and not _confirm(f"{exc}\nRemove the file {path}?"):
            note(stderr_console(), "nothing removed")
            return EXIT_FAILED
        cache.close()
        for file in database_files(path):
            file.unlink(missing_ok=True)
        say(out, f"removed the unusable response cache {path}")
        return EXIT_OK
    if entries == 0:
        say(out, f"the response cache {path} is already empty")
        return EXIT_OK
    if ask and not _confirm(f"Remove all {counted(entries, 'cached answer')} from {path}?"):
        note(stderr_console(), "nothing removed")
        return EXIT_FAILED
    removed = cache.clear()
    say(out, f"removed {counted(removed, 'cached answer')} from {path}")
    return EXIT_OK


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdin
        return False


def _confirm(question: str) -> bool:
    """Ask ``question`` on stderr and read the answer from stdin; only yes is yes."""
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _local_time(moment: datetime | None) -> str:
    return "n/a" if moment is None else moment.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
