"""The results file of a resumable run: an append-only JSONL file, one result per line.

:class:`ResultsFile` appends and flushes each result, and on resume reads the ids already
done, repairs a line torn by a kill and, with ``retry_failed``, drops the results worth
judging again. With ``journal=True`` it also holds the run's answers journal
(:mod:`cross_judge.critic._journal`, ``OUT.journal.jsonl``): the answers that arrived for
items not yet written, so a resume asks only the calls whose answer never came. Reading a
results file into memory is :func:`~cross_judge.batch.read_results` (base layer). Locking
a file against a second writer is :mod:`cross_judge.batch._lock`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from ..critic import AnswerJournal, journal_path
from ..errors import ConfigError
from ..results import dump_result, is_incomplete, load_result, read_results
from ..verdict import EnsembleVerdict

__all__ = ["ResultsFile"]


class ResultsFile:
    """An append-only JSONL file of results, one ``EnsembleVerdict`` per line.

    Each result is written as one line with a single ``write`` and flushed at once, so a
    killed run loses at most the line being written. :meth:`open` with ``resume=True``
    reads the ids already done and repairs a torn last line (one without its newline,
    left by a kill mid-write) by cutting it off; that item is judged again.

    :attr:`journal` is the run's answers journal when opened with ``journal=True``, else
    ``None``; :meth:`complete` removes it once the run is done.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: Path,
        handle: IO[str],
        done: set[str],
        *,
        repaired: bool = False,
        dropped: list[str] | None = None,
        spent_usd: float = 0.0,
        unpriced: int = 0,
        journal: AnswerJournal | None = None,
    ) -> None:
        self.path = path
        self.done_ids = done
        self.repaired = repaired
        self.dropped_ids = dropped or []
        self.spent_usd = spent_usd
        self.unpriced = unpriced
        self.journal = journal
        self._handle = handle

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        resume: bool = False,
        retry_failed: bool = False,
        journal: bool = False,
    ) -> ResultsFile:
        """Open ``path`` for appending results.

        Without ``resume`` the file must not exist or be empty (nothing is overwritten).
        With ``retry_failed`` (which implies ``resume``) the results that have a failed
        call (an ``ERROR`` verdict) are removed from the file first, so those items are
        judged again; their ids are in :attr:`dropped_ids`. The file is rewritten through
        a temporary file and an atomic rename, so a kill leaves either version whole.

        :attr:`spent_usd` is what the results found in the file cost (those removed by
        ``retry_failed`` included: they were paid for), and :attr:`unpriced` how many of
        them have no known cost; a resumed run's budget starts from it.

        With ``journal``, the answers journal beside the file (:func:`~cross_judge.critic.
        journal.journal_path`) is opened as :attr:`journal`, keeping the answers of the
        items not in the file (see :meth:`AnswerJournal.open
        <cross_judge.critic._journal.AnswerJournal.open>`); their cost is in
        :attr:`spent_usd` too (paid for, and in no result yet), except for the items
        ``retry_failed`` removed, whose results counted it already. Run the panel inside
        :func:`~cross_judge.critic._journal.journaling` of it, so that its calls record
        their answers there and those kept are not asked again.

        Raises:
            ConfigError: the file holds results and ``resume`` is false; a line that is
                not a result (with its number); the folder does not exist; with
                ``journal``, the journal holds answers and neither ``resume`` nor
                ``retry_failed`` is set, or it cannot be used.
        """
        target = Path(path)
        done: set[str] = set()
        repaired = False
        dropped: list[str] = []
        cost = _CostTally()
        if target.exists() and target.stat().st_size > 0:
            if not (resume or retry_failed):
                raise ConfigError(
                    f"{target} already holds results; pass --resume to continue that run "
                    "(resume=True in Python), or choose another output file"
                )
            repaired = _repair_torn_tail(target)
            if retry_failed:
                dropped = _drop_failed(target, cost)
            for record in cls.read(target, slim=True):
                done.add(record.query_id)
                cost.add(record)
        if not target.parent.exists():
            raise ConfigError(f"{target.parent} does not exist; create it or choose another path")
        answers = None
        if journal:
            answers = AnswerJournal.open(
                journal_path(target), done=done, resume=resume or retry_failed
            )
            kept_usd, _unknown = answers.kept_cost(excluding=set(dropped))
            cost.usd += kept_usd
        try:
            handle = open(target, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        except BaseException:
            if answers is not None:
                answers.close()
            raise
        return cls(
            target,
            handle,
            done,
            repaired=repaired,
            dropped=dropped,
            spent_usd=cost.usd,
            unpriced=cost.unpriced,
            journal=answers,
        )

    def append(self, result: EnsembleVerdict) -> None:
        """Write ``result`` as one line (:func:`dump_result`) and flush it."""
        self._handle.write(dump_result(result) + "\n")
        self._handle.flush()
        self.done_ids.add(result.query_id)

    def complete(self) -> None:
        """The run is done: remove its answers journal (nothing is left to resume)."""
        if self.journal is not None:
            self.journal.remove()

    def close(self) -> None:
        """Close the file (and the journal, left for a resume unless :meth:`complete`)."""
        self._handle.close()
        if self.journal is not None:
            self.journal.close()

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    read = staticmethod(read_results)
    """The results in a file, in file order (:func:`~cross_judge.batch.read_results`)."""


class _CostTally:
    """The known cost of results, and how many had none."""

    def __init__(self) -> None:
        self.usd = 0.0
        self.unpriced = 0

    def add(self, result: EnsembleVerdict) -> None:
        if result.cost_usd is None:
            self.unpriced += 1
        else:
            self.usd += result.cost_usd


def _drop_failed(path: Path, cost: _CostTally) -> list[str]:
    """Rewrite ``path`` without results that have an ERROR verdict; return their ids (and
    add their cost to ``cost``: they were paid for)."""
    kept: list[str] = []
    dropped: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = load_result(line)
            except ValidationError:
                raise ConfigError(f"{path} line {number}: not a result record") from None
            if is_incomplete(record):
                dropped.append(record.query_id)
                cost.add(record)
            else:
                kept.append(line if line.endswith("\n") else line + "\n")
    if dropped:
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            out.writelines(kept)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    return dropped


def _repair_torn_tail(path: Path) -> bool:
    """Cut off a last line that lacks its newline; True if something was cut."""
    with open(path, "rb+") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if size == 0:
            return False
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return False
        # Find the last newline, reading backwards in blocks.
        position = size
        cut = 0
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            block = handle.read(position - start)
            found = block.rfind(b"\n")
            if found != -1:
                cut = start + found + 1
                break
            position = start
        handle.truncate(cut)
        return True
