"""What the ``cross-judge`` commands share: exit codes, the two consoles, plain report lines
and reading a results file with a diagnosis instead of a traceback.

It does not parse arguments (:mod:`._arguments` holds the argument types) and holds nothing
that one command alone uses.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from ..batch import BatchResult
    from ..report import BatchDigest

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "counted",
    "has_torn_tail",
    "note",
    "read_results_digest",
    "read_results_file",
    "say",
    "shown_ids",
    "stderr_console",
    "stdout_console",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_REFUSED = 3
"""``cross-judge align`` measured no clear gain (or fewer effective votes): nothing written."""

_SHOWN_IDS = 5


def stdout_console() -> Console:
    """The console for results and summaries: stdout, never wrapped."""
    from rich.console import Console

    return Console(soft_wrap=False)


def stderr_console() -> Console:
    """The console for progress, warnings and notes: stderr."""
    from rich.console import Console

    return Console(stderr=True)


def note(console: Console, message: str) -> None:
    """A plain line on ``console``: no markup (ids and paths may hold brackets), no wrapping."""
    say(console, f"cross-judge: {message}")


def say(console: Console, text: str) -> None:
    """A plain line of the report: no markup, no wrapping (paths and ids stay whole)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def counted(n: int, noun: str) -> str:
    """``"1 item"``, ``"3 items"``: ``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def shown_ids(ids: Sequence[str], total: int | None = None) -> str:
    """The first few ``ids``, quoted, then how many more there are (none: empty).
    ``total``: how many there are in all, when ``ids`` holds only the first few."""
    listed = ", ".join(repr(i) for i in ids[:_SHOWN_IDS])
    more = (len(ids) if total is None else total) - _SHOWN_IDS
    return listed + (f" and {more} more" if more > 0 else "")


def read_results_file(path: str, *, slim: bool) -> BatchResult:
    """The results in ``path``, read as a finished run.

    Raises:
        ConfigError: the last line is torn (a killed run, which ``--resume`` repairs),
            or the file holds no results.
    """
    from ..batch import BatchResult

    if has_torn_tail(path):
        raise ConfigError(
            f"{path}: the last line is torn (a run was stopped while writing it); "
            "run the same review again with --resume, which repairs it"
        )
    batch = BatchResult.from_jsonl(path, slim=slim)
    if not batch.verdicts:
        raise ConfigError(f"{path} holds no results")
    return batch


def read_results_digest(path: str, **options: Any) -> BatchDigest:
    """The results in ``path`` read once, line by line, into a
    :class:`~cross_judge.report._digest.BatchDigest` (``options`` go to
    :meth:`~cross_judge.report._digest.BatchDigest.read`): what ``stats``, ``report`` and the
    end of ``review`` show, in memory that does not grow with the results' text.

    Raises:
        ConfigError: the last line is torn (a killed run, which ``--resume`` repairs),
            a line is not a result, or the file holds no results.
    """
    from ..report import BatchDigest

    if has_torn_tail(path):
        raise ConfigError(
            f"{path}: the last line is torn (a run was stopped while writing it); "
            "run the same review again with --resume, which repairs it"
        )
    digest = BatchDigest.read(path, **options)
    if not len(digest):
        raise ConfigError(f"{path} holds no results")
    return digest


def has_torn_tail(path: str) -> bool:
    """True if the file's last line lacks its newline (a writer was killed mid-line)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return False
            handle.seek(size - 1)
            return handle.read(1) != b"\n"
    except OSError:  # missing or unreadable: the reader reports it
        return False
