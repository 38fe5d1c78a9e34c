"""The answers journal of a resumable run: every valid answer, in a file beside the results
as soon as it arrives, so that a resume after a kill asks again only the calls whose answer
never came back.

A review writes an item's result to its results file only once the item's whole panel has
answered, so a run killed with SIGKILL would lose the answers of the critics that had
answered the items still in flight (and the tiers of a cascade, the criteria of a rubric
asked one per call, the samples of a critic): those calls were billed, and a resume would
make and bill them again. :class:`AnswerJournal` keeps them: one JSON line per valid
answer, written with one ``write`` and flushed the moment the answer arrives, before its item
is voted. A line holds the request's key (:meth:`ChatRequest.cache_key
<cross_judge.transport.ChatRequest.cache_key>`, a sha256: never the request, never an API
key), the id of the item it was asked for, the answer's text (redacted, as every answer is
before anything stores it), usage, model and token probabilities, and what it cost
(``cost_usd``, ``cost_estimates``).

On resume, :meth:`AnswerJournal.open` (given the ids already in the results file) keeps the
answers of the items not in it, and a call whose request has a kept answer is not made: the
critic rebuilds its verdict from the answer (re-parsed, as a cache hit is), with
``cached=True``, ``attempts=0`` and the usage and ``cost_usd`` it was billed when it was
asked. That cost is in no other result, so the results file counts it once; a budget counts
the kept answers as spent before the run (:meth:`AnswerJournal.kept_cost`) and does not
charge them again. Each kept answer serves one call (two items with the same text asked
the same critic are two calls).

A kill at any byte leaves the journal readable: a last line without its newline (torn by
the kill) and any line that does not read as an answer are passed over, and the file is
rewritten without them, and without the answers of items already in the results file, when
it is opened for a resume. The run that finishes removes it (:meth:`AnswerJournal.remove`).

Which calls go through the journal: those made while it is active (:func:`journaling`,
which :func:`cross_judge.batch._runner.stream` carries into its work) for an item set by
:func:`judging_item` (the batch runner does it for every item), live or through a provider
batch job.

What it deliberately does not do: keep failed calls or answers that gave no valid verdict
(they are asked again on resume, as ``--retry-failed`` would), know anything of calls in
flight at the kill (their answers never arrived; the vendor may have billed them), ``fsync``
(a killed process loses no answer; a power cut may lose the last ones), or share answers
between results files (the response cache, :mod:`cross_judge.critic._cache`, does that).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections import deque
from collections.abc import Collection, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import ConfigError
from ..transport import Completion
from ..verdict import Usage
from ._cache import logprobs_as_lists, logprobs_from_lists

if TYPE_CHECKING:
    from ..verdict import Verdict

__all__ = [
    "AnswerJournal",
    "KeptAnswer",
    "KeptShare",
    "active_journal",
    "journal_path",
    "journaling",
    "judging_item",
]

logger = logging.getLogger("cross_judge")

JOURNAL_VERSION = 1
"""The ``v`` of every line; a line of another version is passed over, never misread."""

_active: ContextVar[AnswerJournal | None] = ContextVar("cross_judge_journal", default=None)
_item: ContextVar[str | None] = ContextVar("cross_judge_journal_item", default=None)


def journal_path(results: str | os.PathLike[str]) -> Path:
    """``OUT.jsonl`` -> ``OUT.jsonl.journal.jsonl``: the answers journal beside the results."""
    path = Path(results)
    return path.with_name(path.name + ".journal.jsonl")


def active_journal() -> AnswerJournal | None:
    """The journal the current task's calls record their answers in; ``None`` outside one."""
    return _active.get()


@contextlib.contextmanager
def journaling(journal: AnswerJournal | None) -> Iterator[None]:
    """Make ``journal`` the active journal of the current context (and of the tasks it
    starts) for the block; ``None`` leaves the active one as it is."""
    if journal is None:
        yield
        return
    token = _active.set(journal)
    try:
        yield
    finally:
        _active.reset(token)


@contextlib.contextmanager
def judging_item(item_id: str) -> Iterator[None]:
    """Mark the calls of the block (and of the tasks it starts) as made for the item
    ``item_id``: a journal records each answer with it."""
    token = _item.set(item_id)
    try:
        yield
    finally:
        _item.reset(token)


@dataclass(frozen=True)
class KeptAnswer:
    """One answer of the journal: the key of its request, the item it was asked for
    (``None``: not known), the answer as the response cache would hold it, and what the
    vendor billed for it."""

    key: str
    item: str | None
    completion: Completion
    cost_usd: float | None
    cost_estimates: int = 0


@dataclass
class KeptShare:
    """What the kept answers an item's result holds add to it: ``calls`` answers (of the
    critics named in ``critics``), their ``usage``, their known cost (``cost_usd``) and
    how many of them were priced at their worst case (``cost_estimates``). A run's own
    totals are the result's minus this share: it was paid for by an earlier run."""

    calls: int = 0
    critics: set[str] = field(default_factory=set)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    cost_estimates: int = 0

    def add(self, answer: KeptAnswer, critic: str) -> None:
        self.calls += 1
        self.critics.add(critic)
        if answer.completion.usage is not None:
            self.usage = self.usage + answer.completion.usage
        self.cost_usd += answer.cost_usd or 0.0
        self.cost_estimates += answer.cost_estimates


class AnswerJournal:
    """The valid answers of a run, one JSON line each, in a file beside its results.

    Open one with :meth:`open`; :meth:`record` appends an answer (a critic does it for
    each valid answer while the journal is active, see :func:`journaling`), :meth:`take`
    hands out a kept answer once. :meth:`close` leaves the file for a resume;
    :meth:`remove` deletes it once the run is complete.

    The file is created with mode 0600 (answers may quote the items judged).
    """

    def __init__(
        self,
        path: Path,
        handle: IO[str],
        kept: dict[str, deque[KeptAnswer]],
        *,
        passed_over: int = 0,
    ) -> None:
        self.path = path
        self.passed_over = passed_over
        self.kept_answers = sum(len(queue) for queue in kept.values())
        self.recorded = 0
        self.replayed = 0
        self.write_errors = 0
        self._kept = kept
        self._shares: dict[str | None, KeptShare] = {}
        self._handle = handle
        self._warned = False

    def __repr__(self) -> str:
        return f"AnswerJournal(path={str(self.path)!r}, kept_answers={self.kept_answers})"

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        done: Collection[str] = (),
        resume: bool = False,
    ) -> AnswerJournal:
        """Open the journal at ``path`` for appending, keeping its answers for the items
        not in ``done`` (the ids already in the results file).

        ``passed_over`` counts the lines that did not read as answers (a line torn by a
        kill, one of another version). When it read any such line, or answers of items in
        ``done``, the file is rewritten without them (through a temporary file and an
        atomic rename, so a kill leaves either version whole).

        Raises:
            ConfigError: the file holds answers and ``resume`` is false (they belong to an
                interrupted run: resume it, or delete the file); it cannot be read or
                written.
        """
        target = Path(path)
        kept: dict[str, deque[KeptAnswer]] = {}
        passed_over = 0
        try:
            if target.exists() and target.stat().st_size > 0:
                if not resume:
                    raise ConfigError(
                        f"{target} holds the answers of an interrupted run of "
                        f"{target.name.removesuffix('.journal.jsonl')}, paid for and not yet "
                        "in its results; pass --resume to use them (resume=True in Python), "
                        "or delete that file to start afresh"
                    )
                lines, passed_over, dropped = _read(target, done, kept)
                if passed_over or dropped:
                    _rewrite(target, lines)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            handle = os.fdopen(fd, "a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot use the answers journal {target}: {exc.strerror or exc}; check that "
                "its folder is writable"
            ) from None
        return cls(target, handle, kept, passed_over=passed_over)

    def kept_cost(self, *, excluding: Collection[str] = ()) -> tuple[float, int]:
        """The known cost of the kept answers, and how many have none, leaving out the
        answers of the items in ``excluding`` (those whose cost is counted elsewhere)."""
        usd, unknown = 0.0, 0
        for queue in self._kept.values():
            for answer in queue:
                if answer.item is not None and answer.item in excluding:
                    continue
                if answer.cost_usd is None:
                    unknown += 1
                else:
                    usd += answer.cost_usd
        return usd, unknown

    def take(self, key: str, critic: str) -> KeptAnswer | None:
        """The kept answer for the request with ``key`` (the oldest, when several), or
        ``None``; each is handed out once. It counts in the share of the current item
        (:func:`judging_item`), see :meth:`share_of`."""
        queue = self._kept.get(key)
        if not queue:
            return None
        answer = queue.popleft()
        if not queue:
            del self._kept[key]
        item = _item.get()
        self._shares.setdefault(answer.item if item is None else item, KeptShare()).add(
            answer, critic
        )
        self.replayed += 1
        return answer

    def share_of(self, item_id: str) -> KeptShare:
        """What the kept answers handed out for ``item_id`` add to its result (empty when
        none); forgotten once read."""
        return self._shares.pop(item_id, None) or KeptShare()

    def record(self, key: str, completion: Completion, verdict: Verdict) -> None:
        """Append ``completion`` (what the response cache would store of ``verdict``, a
        valid verdict) as the answer to the request with ``key``, for the current item,
        with ``verdict``'s cost; flushed at once.

        Never raises for the file: it runs after a billed call, whose verdict must not be
        lost. A failed write is counted in ``write_errors`` and logged once at WARNING.
        """
        if completion.text is None:
            return
        usage = completion.usage
        fields = {
            "v": JOURNAL_VERSION,
            "item": _item.get(),
            "key": key,
            "text": completion.text,
            # Its non-zero counts (the rest read back as 0): cheaper than model_dump.
            "usage": None if usage is None else {name: n for name, n in usage if n},
            "model": completion.model,
            "logprobs": logprobs_as_lists(completion.logprobs),
            "cost_usd": verdict.cost_usd,
            "cost_estimates": verdict.cost_estimates or None,
        }
        # What is unset is left out (read back as None, or 0 estimates): shorter lines.
        line = json.dumps(
            {name: value for name, value in fields.items() if value is not None},
            separators=(",", ":"),
        )
        try:
            # One write of the whole line: a kill tears at most this line, which the next
            # open passes over. ASCII only (json escapes), so no encoding can fail here.
            self._handle.write(line + "\n")
            self._handle.flush()
        except (OSError, ValueError) as exc:  # ValueError: written after close
            self.write_errors += 1
            if not self._warned:
                self._warned = True
                logger.warning(
                    "answers journal %s: a write failed (%s); that answer would be asked "
                    "again by a resume, and later failures are not logged",
                    self.path,
                    exc,
                )
            return
        self.recorded += 1

    def close(self) -> None:
        """Close the file, leaving it for a resume. Idempotent."""
        self._handle.close()

    def remove(self) -> None:
        """Close and delete the file: the run is complete, nothing is left to resume."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _read(
    path: Path, done: Collection[str], kept: dict[str, deque[KeptAnswer]]
) -> tuple[list[bytes], int, int]:
    """Fill ``kept`` with the answers at ``path`` of items not in ``done``; return their
    lines, how many lines did not read as answers, and how many answers were of items in
    ``done``."""
    lines: list[bytes] = []
    passed_over = dropped = 0
    with open(path, "rb") as handle:
        for raw in handle:
            if done and raw.endswith(b"\n") and _item_of(raw) in done:
                dropped += 1  # the usual case in a long journal: no need to read the rest
                continue
            data = _record(raw)
            if data is None:
                passed_over += raw.strip() != b""
                continue
            item = data.get("item")
            if isinstance(item, str) and item in done:
                dropped += 1
                continue
            answer = _answer(data)
            if answer is None:
                passed_over += 1
                continue
            lines.append(raw)
            kept.setdefault(answer.key, deque()).append(answer)
    return lines, passed_over, dropped


_ITEM_FIRST = b'{"v":%d,"item":"' % JOURNAL_VERSION  # how record() starts a line with an item
_STRING = json.JSONDecoder()


def _item_of(raw: bytes) -> str | None:
    """The item id of a line that :meth:`AnswerJournal.record` wrote with one, read without
    parsing the rest of the line; ``None`` for any other line."""
    if not raw.startswith(_ITEM_FIRST):
        return None
    try:
        item, _end = _STRING.raw_decode(raw.decode("ascii"), len(_ITEM_FIRST) - 1)
    except ValueError:  # not ASCII (record writes none), or not a JSON string
        return None
    return item if isinstance(item, str) else None


def _record(raw: bytes) -> dict[str, Any] | None:
    """The JSON object of a whole journal line of this version, or ``None``."""
    if not raw.endswith(b"\n"):
        return None  # torn by a kill
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("v") != JOURNAL_VERSION:
        return None
    return data


def _answer(data: dict[str, Any]) -> KeptAnswer | None:
    """The answer a journal record holds, or ``None`` when it is not one."""
    try:
        key, item, text = data.get("key"), data.get("item"), data.get("text")
        model, usage, cost = data.get("model"), data.get("usage"), data.get("cost_usd")
        estimates = data.get("cost_estimates", 0)
        if not (isinstance(key, str) and isinstance(text, str)):
            return None
        if not all(value is None or isinstance(value, str) for value in (item, model)):
            return None
        if cost is not None and not _cost(cost):
            return None
        if isinstance(estimates, bool) or not isinstance(estimates, int) or estimates < 0:
            return None
        completion = Completion(
            text=text,
            usage=None if usage is None else Usage.model_validate(usage),
            model=model,
            logprobs=logprobs_from_lists(data.get("logprobs")),
        )
    except (ValueError, TypeError):  # pydantic and shape errors alike
        return None
    return KeptAnswer(key, item, completion, None if cost is None else float(cost), estimates)


def _cost(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _rewrite(path: Path, lines: list[bytes]) -> None:
    """Replace ``path`` by ``lines``, atomically (a kill leaves either version whole)."""
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.writelines(lines)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
