"""Votes cast elsewhere as a batch: :meth:`BatchResult.from_votes
<cross_judge.batch.BatchResult.from_votes>`, :meth:`BatchResult.add_votes
<cross_judge.batch.BatchResult.add_votes>` and the votes files of ``cross-judge import``.

A *vote* is one voter's label on one item: a person's annotation, or a line of another
tool's judge log. Rows of votes (dicts, tuples, a pandas or polars data frame, or a CSV,
TSV or JSONL file) become one :class:`~cross_judge.verdict.Verdict` per (item, voter),
grouped into one :class:`~cross_judge.verdict.EnsembleVerdict` per item and voted by a
strategy (through :meth:`BatchResult.revote <cross_judge.batch.BatchResult.revote>`), so
every statistic, view and re-vote reads them as it reads a jury's verdicts.

How a row is read (one set of checks, :func:`read_votes`, ``from_votes`` and
:func:`import_votes` alike):

* labels, items and voters are text, kept as given once stripped; a number is written as
  its decimal text (``4`` -> ``"4"``, ``0.5`` -> ``"0.5"``, ``7.0`` stays ``"7.0"``), an
  infinite one is refused. Labels are not upper-cased, as gold labels are not
  (:func:`cross_judge.stats._gold.load_gold`). :func:`add_votes` alone folds case, and only
  onto a label the batch already holds (``"pass"`` -> ``"PASS"``), since a critic's
  answers are upper-cased by its parser;
* a boolean, a mapping (a JSON object), a list or bytes where text is expected (item,
  voter, label, reasoning) is refused: it is not turned into its Python text
  (``"{'a': 1}"``, ``"True"``);
* an empty or missing label, a label that reads as one reserved for failed calls
  (``ERROR``, ``PARSE_FAIL``, ``SKIPPED``, ``ABSTAIN``, in any case and spacing, as a
  critic's parser reads a model's answer: ``" error "``, ``"Parse fail"``), a missing item
  or voter, a confidence that is not a number in [0, 1] (``"nan"`` and ``"inf"`` too): a
  :class:`~cross_judge.errors.ConfigError` naming the row (``rows[3]``, or the file and
  line). A float NaN (a data frame's missing value) is a missing cell;
* one verdict per (item, voter): the same label twice keeps the first row (exported logs
  often repeat a line), two different labels is an error naming both rows;
* without a confidence a verdict has ``confidence=0.0`` with ``confidence_stated=False``
  and ``confidence_source="none"`` (the calibration statistics leave it out);
* a person's verdict has ``vendor="human"`` (:data:`HUMAN_VENDOR`) and ``model=None``.

Rows are first read into a :class:`~cross_judge.batch._vote_table.VoteTable` (a few tens of
bytes a vote), then grouped and voted item by item. :func:`import_votes` (``cross-judge
import``) hands out the voted items one at a time, so a file of millions of votes is never
held as models.

It calls no model, imports no data-frame library (a frame is read through its own
``to_dicts()`` or ``to_dict("records")``), and writes no file but the unnamed temporary
file :func:`import_votes` may keep reasoning text in.
"""

from __future__ import annotations

import codecs
import csv
import functools
import json
import math
import numbers
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, TextIO, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from .._extensions import provide, provider
from ..critic import normalize_label
from ..errors import ConfigError
from ..results import HUMAN_VENDOR, BatchResult, dump_result
from ..verdict import RESERVED_KINDS, EnsembleVerdict, Verdict, label_skeleton
from ..voting import BATCH_STRATEGIES, strategy_name
from ._vote_table import Clash, VoteTable

__all__ = [
    "VOTES_FORMATS",
    "ImportedVotes",
    "NamedRows",
    "Vote",
    "VotesFormat",
    "add_votes",
    "batch_from_votes",
    "import_votes",
    "numbered_rows",
    "read_votes",
    "read_votes_file",
    "votes_format",
]

VotesFormat = Literal["csv", "tsv", "jsonl"]
VOTES_FORMATS: dict[str, VotesFormat] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
"""A votes file's format by its suffix."""

_PLACEHOLDER = "UNCLEAR"  # each item's consensus before it is voted
_T = TypeVar("_T")
_MEMO_SIZE = 2048
"""Voted items kept by their votes (:meth:`ImportedVotes.results`), then forgotten at once."""
_MEMO_REASONING = 256
"""Characters of reasoning beyond which an item's votes are voted without the memo."""
_ENCODING_HINT = (
    "pass its encoding (cross-judge import --encoding NAME, encoding= in Python), "
    "e.g. latin-1, cp1252 or utf-16"
)


@dataclass(frozen=True)
class Vote:
    """One row read: ``voter``'s ``label`` on ``item`` (``where`` names the row in errors)."""

    item: str
    voter: str
    label: str
    confidence: float | None
    reasoning: str
    where: str


_Cast = tuple[str, str, str, float | None, str, int]
"""A checked vote as a table takes it: item, voter, label, confidence, reasoning, row."""


@dataclass(frozen=True)
class _Columns:
    """Where a mapping row holds each part of a vote."""

    item: str
    critic: str
    label: str
    confidence: str | None
    reasoning: str | None


# -- reading rows -----------------------------------------------------------------------------


class NamedRows:
    """Rows of votes that name themselves for errors: ``(where, row)`` pairs, such as a
    votes file's lines (:func:`read_votes_file`). ``from_votes`` reads them as they are
    named instead of as ``rows[0]``, ``rows[1]``, ..."""

    __slots__ = ("_name", "_named", "_numbered", "_votes")

    def __init__(self, named: Iterable[tuple[str, Any]]) -> None:
        self._named = named
        self._numbered: Iterable[tuple[int, Any]] | None = None
        self._name: Callable[[int], str] | None = None
        self._votes: Callable[[_Columns], Iterator[_Cast]] | None = None

    @classmethod
    def numbered(
        cls,
        rows: Iterable[tuple[int, Any]],
        name: Callable[[int], str],
        votes: Callable[[_Columns], Iterator[_Cast]] | None = None,
    ) -> NamedRows:
        """Rows given as ``(number, row)``, named by ``name(number)`` (a file's lines):
        a table of them keeps the number, not the name. ``votes``, when given, reads the
        same rows straight into checked votes (a CSV file's cells by their column)."""
        named = cls(())
        named._numbered, named._name, named._votes = rows, name, votes
        return named

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        if self._numbered is not None and self._name is not None:
            name = self._name
            return ((name(number), row) for number, row in self._numbered)
        return iter(self._named)


def _row_values(rows: Any) -> Iterable[Any]:
    """The rows of ``rows``: an iterable of dicts or tuples, a polars frame (``to_dicts()``)
    or a pandas frame (``to_dict("records")``). Raises ConfigError for text, a mapping or
    something not iterable."""
    if hasattr(rows, "to_dicts"):
        rows = rows.to_dicts()
    elif hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        rows = rows.to_dict("records")
    if isinstance(rows, (str, bytes, Mapping)):
        raise ConfigError(
            "votes are rows (dicts, tuples or a data frame), not one "
            f"{type(rows).__name__}; wrap a single vote in a list"
        )
    try:
        iter(rows)
    except TypeError:
        raise ConfigError(
            f"votes must be an iterable of rows or a data frame, got {type(rows).__name__}"
        ) from None
    values: Iterable[Any] = rows
    return values


def numbered_rows(rows: Any) -> Iterator[tuple[str, Any]]:
    """Each row of ``rows`` named for errors (``rows[0]``, ...): an iterable of dicts or
    tuples, a polars frame (``to_dicts()``) or a pandas frame (``to_dict("records")``);
    :class:`NamedRows` keep their own names.

    Raises:
        ConfigError: ``rows`` is a mapping or text (not rows), or not iterable.
    """
    if isinstance(rows, NamedRows):
        yield from rows
        return
    for index, row in enumerate(_row_values(rows)):
        yield f"rows[{index}]", row


def _numbered(rows: Any) -> tuple[Iterator[tuple[int, Any]], Callable[[int], str]]:
    """``rows`` as ``(number, row)`` pairs and the function that names a number."""
    if isinstance(rows, NamedRows):
        if rows._numbered is not None and rows._name is not None:
            return iter(rows._numbered), rows._name
        names: list[str] = []

        def named() -> Iterator[tuple[int, Any]]:
            for where, row in rows._named:
                names.append(where)
                yield len(names) - 1, row

        return named(), names.__getitem__
    return enumerate(_row_values(rows)), "rows[{}]".format


def read_votes(
    rows: Iterable[tuple[str, Any]],
    *,
    item: str = "item",
    critic: str = "critic",
    label: str = "label",
    confidence: str | None = None,
    reasoning: str | None = None,
) -> list[Vote]:
    """The votes in ``rows``, each ``(where, row)``: a mapping read by the column names, or
    a tuple ``(item, critic, label[, confidence])``. A repeated (item, voter) with the same
    label is kept once (its first row).

    Raises:
        ConfigError: a bad row, or one voter's two different labels on an item (both rows
            named). See the module's docstring.
    """
    columns = _Columns(item, critic, label, confidence, reasoning)
    votes: list[Vote] = []
    seen: dict[tuple[str, str], Vote] = {}
    for where, row in rows:
        vote = Vote(*_cells(where, row, columns), where)
        key = (vote.item, vote.voter)
        known = seen.get(key)
        if known is None:
            seen[key] = vote
            votes.append(vote)
        elif known.label != vote.label:
            _clash(vote.item, vote.voter, vote.label, vote.where, known.label, known.where)
    return votes


def _clash(item: str, voter: str, label: str, where: str, kept: str, kept_where: str) -> NoReturn:
    raise ConfigError(
        f"{where}: {voter!r} labels item {item!r} {label!r}, but {kept_where} has {kept!r}; "
        "one vote per voter and item: keep one"
    )


def _cells(where: str, row: Any, columns: _Columns) -> tuple[str, str, str, float | None, str]:
    """The checked item, voter, label, confidence and reasoning of one row."""
    if type(row) is dict or isinstance(row, Mapping):
        try:
            values = (row[columns.item], row[columns.critic], row[columns.label])
            stated = row[columns.confidence] if columns.confidence is not None else None
            why = row[columns.reasoning] if columns.reasoning is not None else None
        except KeyError:
            _missing_column(where, row, columns)
    elif isinstance(row, (tuple, list)) and len(row) in (3, 4):
        values = (row[0], row[1], row[2])
        stated = row[3] if len(row) == 4 else None
        why = None
    else:
        raise ConfigError(
            f"{where} is not a vote: give a mapping with {columns.item!r}, "
            f"{columns.critic!r} and {columns.label!r}, or a tuple (item, critic, "
            f"label[, confidence]); got {_short(row)}"
        )
    return _checked(_as_is, where, *values, stated, why)


def _as_is(where: str) -> str:
    return where


def _checked(
    name: Callable[[Any], str], key: Any, item_id: Any, voter: Any, text: Any, stated: Any, why: Any
) -> tuple[str, str, str, float | None, str]:
    """The checks every vote passes, on its cells: the item, voter, label, confidence and
    reasoning as read. ``name(key)`` names the row in an error (formatted only then)."""
    # Text cells are the common case: stripped here, anything else checked by _text.
    item_id = item_id.strip() if type(item_id) is str else _text(name(key), "item", item_id)
    voter = voter.strip() if type(voter) is str else _text(name(key), "critic", voter)
    text = text.strip() if type(text) is str else _text(name(key), "label", text)
    if not item_id:
        raise ConfigError(f"{name(key)}: no item id")
    if not voter:
        raise ConfigError(f"{name(key)}: no voter (critic) name")
    if not text:
        raise ConfigError(f"{name(key)}: empty label; every vote needs one")
    reserved = _reserved_as(text)
    if reserved is not None:
        reads = "" if reserved == text else f" reads as {reserved!r}, which"
        raise ConfigError(
            f"{name(key)}: the label {text!r}{reads} is reserved for failed or unmade calls, "
            "not a vote; leave such rows out (a voter who skipped an item cast no vote)"
        )
    if type(why) is str:
        why = why.strip()
    else:
        why = "" if why is None else _text(name(key), "reasoning", why)
    return item_id, voter, text, None if stated is None else _confidence(name, key, stated), why


def _missing_column(where: str, row: Mapping[Any, Any], columns: _Columns) -> NoReturn:
    for role, column in (
        ("item", columns.item),
        ("critic", columns.critic),
        ("label", columns.label),
        ("confidence", columns.confidence),
        ("reasoning", columns.reasoning),
    ):
        if column is not None and column not in row:
            raise ConfigError(
                f"{where} has no {column!r} column for the {role} (it has "
                f"{sorted(map(str, row))}); name the right one ({role}= in Python, "
                f"--{role} COL with cross-judge import)"
            )
    raise ConfigError(f"{where}: cannot read its columns")  # a mapping whose lookup failed


@functools.lru_cache(maxsize=4096)
def _reserved_as(label: str) -> str | None:
    """The reserved label ``label`` reads as, the way a critic's parser reads a model's
    answer (case, spaces, hyphens, quotes, invisible characters, look-alike letters),
    else ``None``."""
    if label in RESERVED_KINDS:
        return label
    normal = normalize_label(label)
    if normal is None:
        return None
    if normal in RESERVED_KINDS:
        return normal
    skeleton = label_skeleton(normal)
    return skeleton if skeleton in RESERVED_KINDS else None


def _text(where: str, role: str, value: Any) -> str:
    """A cell as text, stripped; missing (``None``, NaN) is empty. A number is its decimal
    text; a boolean, mapping, list, bytes or other object is refused."""
    if isinstance(value, str):
        return value.strip()
    if value is None:
        return ""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        what = "a boolean"
    elif isinstance(value, numbers.Number) and not isinstance(value, complex):
        if _is_nan(value):
            return ""  # a data frame's missing value
        if not _is_finite(value):
            raise ConfigError(f"{where}: the {role} is {value!r}, not text or a finite number")
        return str(value).strip()
    elif isinstance(value, Mapping):
        what = "an object (a mapping)"
    elif isinstance(value, (list, tuple, set, frozenset)):
        what = "a list"
    elif isinstance(value, (bytes, bytearray)):
        what = "bytes"
    else:
        what = f"a {type(value).__name__}"
    raise ConfigError(
        f"{where}: the {role} is {what} ({_short(value)}), not text; give the {role} as a "
        f'string (in JSON, in quotes: "{role}": "...")'
    )


def _is_nan(value: Any) -> bool:
    return bool(value != value)  # NaN is the one number not equal to itself


def _is_finite(value: Any) -> bool:
    if isinstance(value, numbers.Integral):
        return True
    try:
        return math.isfinite(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _confidence(name: Callable[[Any], str], key: Any, value: Any) -> float | None:
    """A cell as a confidence in [0, 1]; missing (``None``, empty text, a float NaN) is
    ``None``. Text reading as NaN or infinity, a boolean or anything else is refused,
    naming the row ``name(key)``."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            number = math.inf
    elif isinstance(value, bool):
        number = math.inf
    elif isinstance(value, float) and math.isnan(value):
        return None  # a data frame's missing value
    else:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = math.inf
    if not 0.0 <= number <= 1.0:  # NaN fails this too
        raise ConfigError(f"{name(key)}: confidence {_short(value)} is not a number in [0, 1]")
    return number + 0.0  # -0.0 is 0.0


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        text = f"<a {type(value).__name__} nested too deeply to show>"
    return text if len(text) <= 80 else text[:77] + "..."


# -- votes as results -------------------------------------------------------------------------


def _people(people: bool | Iterable[str], voters: Iterable[str]) -> set[str]:
    """The voters who are people. Raises ConfigError for names that cast no vote."""
    voters = list(voters)
    if people is True:
        return set(voters)
    if people is False:
        return set()
    if isinstance(people, (str, bytes)) or not isinstance(people, Iterable):
        raise ConfigError(
            f"people must be True, False or a list of voter names, got {_short(people)}"
        )
    named = {str(name) for name in people}
    unknown = sorted(named - set(voters))
    if unknown:
        raise ConfigError(f"people names {unknown}, who cast no vote here; the voters are {voters}")
    return named


def _verdict(
    label: str, confidence: float | None, reasoning: str, voter: str, person: bool
) -> Verdict:
    stated = confidence is not None
    return Verdict(
        kind=label,
        confidence=confidence if confidence is not None else 0.0,
        confidence_stated=stated,
        confidence_source="stated" if stated else "none",
        reasoning=reasoning,
        critic_id=voter,
        vendor=HUMAN_VENDOR if person else None,
        model=None,
    )


def _voted(batch: BatchResult, voting: str, voting_kwargs: Mapping[str, Any] | None) -> BatchResult:
    return batch.revote(voting, **dict(voting_kwargs or {}))


def _table(rows: Any, columns: _Columns, spill: str | None) -> tuple[VoteTable, Clash]:
    """Every checked vote of ``rows`` in a table, and how to refuse a voter's two labels
    on one item (naming both rows)."""
    table = VoteTable(spill=spill)
    try:
        if isinstance(rows, NamedRows) and rows._votes is not None and rows._name is not None:
            name = rows._name
            table.extend(rows._votes(columns))
        else:
            numbered, name = _numbered(rows)
            table.extend((*_cells(name(n), row, columns), n) for n, row in numbered)
    except BaseException:
        table.close()
        raise

    def clash(item: str, voter: str, label: str, row: int, kept: str, kept_row: int) -> NoReturn:
        table.close()
        _clash(item, voter, label, name(row), kept, name(kept_row))

    return table, clash


class _Unvoted:
    """The table's items as unvoted results, fresh models each."""

    def __init__(self, table: VoteTable, clash: Clash, humans: set[str]) -> None:
        self.table, self.clash = table, clash
        self.critics = list(table.voters)
        self.labels = list(table.labels)
        self.people = [name in humans for name in self.critics]
        self.n_votes = 0

    def result(self, item_id: str, votes: list[int], voting: str) -> EnsembleVerdict:
        table, critics, labels, people = self.table, self.critics, self.labels, self.people
        voters, kinds = table.voter_column, table.label_column
        self.n_votes += len(votes)
        verdicts = []
        for vote in votes:
            voter = voters[vote]
            verdicts.append(
                _verdict(
                    labels[kinds[vote]],
                    table.confidence(vote),
                    table.reasoning(vote),
                    critics[voter],
                    people[voter],
                )
            )
        return EnsembleVerdict(
            query_id=item_id, verdicts=verdicts, consensus=_PLACEHOLDER, voting=voting
        )

    def __iter__(self) -> Iterator[tuple[str, list[int]]]:
        return self.table.items(self.clash)


@provide("from_votes")
def batch_from_votes(
    rows: Any,
    *,
    item: str = "item",
    critic: str = "critic",
    label: str = "label",
    confidence: str | None = None,
    reasoning: str | None = None,
    voting: str = "majority",
    voting_kwargs: Mapping[str, Any] | None = None,
    people: bool | Iterable[str] = True,
) -> BatchResult:
    """:meth:`BatchResult.from_votes <cross_judge.batch.BatchResult.from_votes>`."""
    table, clash = _table(rows, _Columns(item, critic, label, confidence, reasoning), None)
    unvoted = _Unvoted(table, clash, _people(people, table.voters))
    results = [unvoted.result(item_id, casts, voting) for item_id, casts in unvoted]
    batch = BatchResult(verdicts=results, critics=unvoted.critics, voting=voting)
    return _voted(batch, voting, voting_kwargs)


# -- votes imported item by item --------------------------------------------------------------


class ImportedVotes:
    """Votes read and checked (:func:`import_votes`), voted and written item by item by
    :meth:`lines`. ``critics``: the voters in first-seen order; ``human_critics``: the
    people among them; ``n_items``: the items; ``n_votes``: the votes kept (a repeated
    row once), counted as :meth:`lines` runs."""

    def __init__(
        self,
        table: VoteTable,
        clash: Clash,
        humans: set[str],
        voting: str,
        voting_kwargs: Mapping[str, Any],
    ) -> None:
        self._unvoted = _Unvoted(table, clash, humans)
        self._voting = voting
        self._kwargs = dict(voting_kwargs)
        self.critics: list[str] = list(self._unvoted.critics)
        self.human_critics = [name for name in self.critics if name in humans]
        self.n_items = table.n_items
        learned = voting.strip().lower()
        self.voting = learned if learned in BATCH_STRATEGIES else strategy_name(voting)

    @property
    def n_votes(self) -> int:
        return self._unvoted.n_votes

    def close(self) -> None:
        """Drop the temporary file of reasoning text, if any (:meth:`lines` closes it
        when it ends)."""
        self._unvoted.table.close()

    def lines(self, each: Callable[[EnsembleVerdict], Any] | None = None) -> Iterator[str]:
        """Each item voted, in first-seen order, as its line of the results file (what
        :func:`~cross_judge.batch.dump_result` writes, without the newline); ``each`` is
        called with the item's voted result before its line is given. Read once.

        Items whose votes repeat another's (the same voters, labels, confidences and
        short reasoning) are not voted again: the first one's result is renamed, so a
        result passed to ``each`` is valid during the call only (copy it to keep it:
        ``result.model_copy()``). ``"dawid_skene"``, which learns from every item at
        once, holds the whole batch as models while it fits (about 5 KB a vote).

        Raises:
            ConfigError: one voter's two labels on an item (both rows named), as the
                items are reached; the strategy refusing its arguments.
        """
        try:
            if self._voting.strip().lower() in BATCH_STRATEGIES:
                yield from self._learned(each)
            else:
                yield from self._per_item(each)
        finally:
            self.close()

    def _learned(self, each: Callable[[EnsembleVerdict], Any] | None) -> Iterator[str]:
        unvoted = self._unvoted
        results = [unvoted.result(item_id, votes, self._voting) for item_id, votes in unvoted]
        batch = BatchResult(verdicts=results, critics=self.critics, voting=self._voting)
        del results
        for result in _voted(batch, self._voting, self._kwargs).verdicts:
            if each is not None:
                each(result)
            yield dump_result(result)

    def _per_item(self, each: Callable[[EnsembleVerdict], Any] | None) -> Iterator[str]:
        revote = provider("revote")
        unvoted, voting, kwargs = self._unvoted, self._voting, self._kwargs
        table = unvoted.table
        voter, label = table.voter_column, table.label_column
        confidence = table.confidence if table.has_confidence else None
        reasoning = table.reasoning if table.has_reasoning else None
        memo: dict[tuple[Any, ...], tuple[EnsembleVerdict, str]] = {}
        for item_id, votes in unvoted:
            # Its id aside, an item's result is a function of its votes: an item whose
            # votes repeat an earlier one's takes that result, renamed, and is not voted.
            key: tuple[Any, ...] = (*map(voter.__getitem__, votes), *map(label.__getitem__, votes))
            if confidence is not None:
                key += tuple(map(confidence, votes))
            if reasoning is not None:
                why = tuple(map(reasoning, votes))
                if sum(map(len, why)) > _MEMO_REASONING:
                    voted = revote(unvoted.result(item_id, votes, voting), voting, **kwargs)
                    if each is not None:
                        each(voted)
                    yield dump_result(voted)
                    continue
                key += why
            known = memo.get(key)
            if known is None:
                template = revote(unvoted.result("", votes, voting), voting, **kwargs)
                known = (template, dump_result(template)[len('{"query_id":""') :])
                if len(memo) >= _MEMO_SIZE:
                    memo.clear()
                memo[key] = known
            else:
                unvoted.n_votes += len(votes)
            template, tail = known
            # Renamed in place (a field already set, of a value already valid): a copy per
            # item would cost more than all the rest of its line.
            template.__dict__["query_id"] = item_id
            if each is not None:
                each(template)
            try:
                yield '{"query_id":' + to_json(item_id).decode() + tail
            except PydanticSerializationError:  # a lone surrogate: dump_result's own form
                yield dump_result(template)


def import_votes(
    rows: Any,
    *,
    item: str = "item",
    critic: str = "critic",
    label: str = "label",
    confidence: str | None = None,
    reasoning: str | None = None,
    voting: str = "majority",
    voting_kwargs: Mapping[str, Any] | None = None,
    people: bool | Iterable[str] = True,
    spill: str | os.PathLike[str] | None = None,
) -> ImportedVotes:
    """The votes of ``rows`` read and checked as by ``from_votes`` (same arguments), ready
    to be voted and written item by item (:meth:`ImportedVotes.lines`): what
    ``cross-judge import`` runs. Memory holds a few tens of bytes a vote
    (:class:`~cross_judge.batch._vote_table.VoteTable`), never every vote as a model.
    ``spill``: a folder for the unnamed temporary file that holds reasoning text (default:
    in memory).

    Raises:
        ConfigError: an unknown strategy or arguments it refuses (checked before any row
            is read), a bad row (named), ``people`` naming no voter.
    """
    kwargs = dict(voting_kwargs or {})
    if voting.strip().lower() not in BATCH_STRATEGIES:
        empty = EnsembleVerdict(query_id="", verdicts=[], consensus=_PLACEHOLDER, voting=voting)
        provider("revote")(empty, voting, **kwargs)  # raises for what the strategy refuses
    columns = _Columns(item, critic, label, confidence, reasoning)
    table, clash = _table(rows, columns, None if spill is None else os.fspath(spill))
    try:
        humans = _people(people, table.voters)
    except ConfigError:
        table.close()
        raise
    return ImportedVotes(table, clash, humans, voting, kwargs)


# -- adding votes to a batch ------------------------------------------------------------------


@provide("add_votes")
def add_votes(
    batch: BatchResult,
    rows: Any,
    *,
    item: str = "item",
    critic: str = "critic",
    label: str = "label",
    confidence: str | None = None,
    reasoning: str | None = None,
    people: bool | Iterable[str] = True,
    revote: bool = True,
    voting: str | None = None,
    voting_kwargs: Mapping[str, Any] | None = None,
) -> BatchResult:
    """:meth:`BatchResult.add_votes <cross_judge.batch.BatchResult.add_votes>`."""
    if any(r.tiers for r in batch.verdicts):
        raise ConfigError(
            "these results come from a cascade, whose tiers vote apart; add votes to one "
            "tier's results instead: BatchResult.from_results(r.tiers[i] for r in "
            "batch.verdicts if r.tiers and len(r.tiers) > i).add_votes(...)"
        )
    votes = read_votes(
        numbered_rows(rows),
        item=item,
        critic=critic,
        label=label,
        confidence=confidence,
        reasoning=reasoning,
    )
    voters = list(dict.fromkeys(v.voter for v in votes))
    clashing = [name for name in voters if name in batch.critics]
    if clashing:
        raise ConfigError(
            f"voters {clashing} are already critics of the batch; rename them (e.g. "
            f"'{clashing[0]} (person)') so their votes stay apart"
        )
    positions: dict[str, list[int]] = {}
    for index, result in enumerate(batch.verdicts):
        positions.setdefault(result.query_id, []).append(index)
    unknown = list(dict.fromkeys(v.item for v in votes if v.item not in positions))
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ConfigError(
            f"votes on items that are not in the batch: {shown}{more}; add_votes adds "
            "voters to the batch's items (build a batch of them with from_votes)"
        )
    humans = _people(people, voters)
    known = {
        v.kind.casefold(): v.kind for r in batch.verdicts for v in r.verdicts if v.error is None
    }
    rank = {name: i for i, name in enumerate(voters)}
    added: dict[int, list[Verdict]] = {}
    for vote in sorted(votes, key=lambda v: rank[v.voter]):
        folded = known.get(vote.label.casefold(), vote.label)
        verdict = _verdict(
            folded, vote.confidence, vote.reasoning, vote.voter, vote.voter in humans
        )
        for index in positions[vote.item]:
            added.setdefault(index, []).append(verdict)
    results = [
        r.model_copy(update={"verdicts": [*r.verdicts, *added[i]]}) if i in added else r
        for i, r in enumerate(batch.verdicts)
    ]
    combined = batch.model_copy(update={"verdicts": results, "critics": [*batch.critics, *voters]})
    if not revote:
        return combined
    return _voted(combined, voting or batch.voting, voting_kwargs)


# -- votes files ------------------------------------------------------------------------------


def votes_format(path: str | os.PathLike[str], given: str | None = None) -> VotesFormat:
    """The format of the votes file ``path``: ``given``, else by its suffix.

    Raises:
        ConfigError: an unknown format or suffix.
    """
    if given is not None:
        named = VOTES_FORMATS.get(f".{given}")
        if named is None or given == "tab":
            raise ConfigError(f"unknown votes format {given!r}; use csv, tsv or jsonl")
        return named
    found = VOTES_FORMATS.get(Path(path).suffix.lower())
    if found is None:
        raise ConfigError(
            f"{path}: cannot tell the format from the suffix; name it .csv, .tsv or .jsonl "
            "(or pass the format)"
        )
    return found


def read_votes_file(
    path: str | os.PathLike[str], format: str | None = None, *, encoding: str | None = None
) -> NamedRows:
    """The rows of a votes file, read lazily, each named ``"<path> line <n>"``, ready for
    ``BatchResult.from_votes``: a CSV or TSV file with a header line (read by :mod:`csv`;
    every cell is text, an empty cell is missing), or a JSONL file of one object per line
    (blank lines skipped; ``NaN`` and ``Infinity``, which are no JSON, refused). ``format``
    (``csv``, ``tsv``, ``jsonl``) overrides the suffix.

    ``encoding``: the file's text encoding (any name Python knows). By default UTF-8 (a
    UTF-8 byte-order mark skipped), or UTF-16 or UTF-32 when the file starts with their
    byte-order mark; UTF-8 named explicitly skips a byte-order mark too.

    Raises:
        ConfigError: the file is missing or unreadable; an unknown encoding; text that does
            not decode in the encoding (its line and byte named, and the ``--encoding``
            option); a JSONL line that is not an object or is nested too deeply to read; a
            CSV row with more cells than the header; a header with NUL characters (UTF-16
            without a byte-order mark). Line numbers are given.
    """
    kind = votes_format(path, format)
    shown = os.fspath(path)

    def name(number: int) -> str:
        return f"{shown} line {number}"

    if kind == "jsonl":
        return NamedRows.numbered(
            _opened(path, encoding, functools.partial(_json_rows, path)), name
        )

    def votes(columns: _Columns) -> Iterator[_Cast]:
        return _opened(path, encoding, functools.partial(_csv_votes, path, kind, columns, name))

    return NamedRows.numbered(
        _opened(path, encoding, functools.partial(_csv_rows, path, kind)), name, votes
    )


def _codec(path: str | os.PathLike[str], given: str | None) -> str:
    """The codec to read ``path`` with: ``given`` (UTF-8 as ``utf-8-sig``), else by its
    byte-order mark, else ``utf-8-sig``."""
    if given is not None:
        try:
            found = codecs.lookup(given).name
        except LookupError:
            raise ConfigError(
                f"unknown encoding {given!r}; name one Python knows, e.g. utf-8, utf-16, "
                "latin-1 or cp1252"
            ) from None
        return "utf-8-sig" if found == "utf-8" else given
    try:
        with open(path, "rb") as raw:
            start = raw.read(4)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the votes ({exc.strerror or exc})") from None
    if start.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8-sig"


def _opened(
    path: str | os.PathLike[str], encoding: str | None, read: Callable[[TextIO], Iterator[_T]]
) -> Iterator[_T]:
    """What ``read`` gives from the votes file opened as text (:func:`_codec`), a file
    that does not decode refused as :func:`_undecodable` says."""
    codec = _codec(path, encoding)
    try:
        handle = open(path, encoding=codec, newline="")  # noqa: SIM115 - closed below
    except LookupError:  # a codec that is not a text encoding (base64, ...)
        raise ConfigError(
            f"encoding {encoding!r} is not a text encoding; name one such as utf-8, utf-16, "
            "latin-1 or cp1252"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the votes ({exc.strerror or exc})") from None
    with handle:
        try:
            yield from read(handle)
        except UnicodeDecodeError:
            raise ConfigError(_undecodable(path, codec)) from None


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is no JSON value; write a number, or leave the key out")


def _json_rows(path: str | os.PathLike[str], handle: TextIO) -> Iterator[tuple[int, Any]]:
    loads = json.loads
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            row = loads(line, parse_constant=_no_constant)
        except RecursionError:
            raise ConfigError(
                f"{path} line {number}: a JSON value nested too deeply to read; one vote "
                "per line is a flat object of text and numbers"
            ) from None
        except ValueError as exc:
            hint = f" ({_NUL_HINT})" if "\x00" in line else ""
            raise ConfigError(f"{path} line {number}: not JSON ({exc}){hint}") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path} line {number}: not a JSON object; one vote per line")
        yield number, row


_NUL_HINT = (
    "it holds NUL characters: UTF-16 text without a byte-order mark? pass --encoding "
    "utf-16-le (or utf-16-be)"
)


def _csv_cells(
    path: str | os.PathLike[str], kind: VotesFormat, handle: TextIO
) -> Iterator[tuple[list[str], int, Sequence[str | None]]]:
    """The header, and each row's line and cells (as many as the header's, ``None`` for
    those it lacks) of a CSV or TSV file; blank lines skipped, a row with more cells than
    the header refused."""
    reader = csv.reader(handle, delimiter="," if kind == "csv" else "\t")
    try:
        header = next(reader, None)
        if header is None:
            return
        if any("\x00" in name for name in header):
            raise ConfigError(f"{path} line 1: the header is not text: {_NUL_HINT}")
        width = len(header)
        for cells in reader:
            if len(cells) == width:
                yield header, reader.line_num, cells
                continue
            if not cells:
                continue
            if len(cells) > width:
                raise ConfigError(
                    f"{path} line {reader.line_num}: more cells than the header has columns"
                )
            yield header, reader.line_num, [*cells, *[None] * (width - len(cells))]
    except csv.Error as exc:
        raise ConfigError(f"{path} line {reader.line_num}: {exc}") from None


def _csv_rows(
    path: str | os.PathLike[str], kind: VotesFormat, handle: TextIO
) -> Iterator[tuple[int, Any]]:
    """Each row of a CSV or TSV file as ``{column: cell}`` (``None`` for an empty or
    absent cell), as :class:`csv.DictReader` reads it."""
    for header, line, cells in _csv_cells(path, kind, handle):
        yield line, dict(zip(header, [c or None for c in cells], strict=True))


def _csv_votes(
    path: str | os.PathLike[str],
    kind: VotesFormat,
    columns: _Columns,
    name: Callable[[int], str],
    handle: TextIO,
) -> Iterator[_Cast]:
    """Each row of a CSV or TSV file as a checked vote: the rows :func:`_csv_rows` gives,
    read by their columns' positions and checked as every row is (:func:`_checked`),
    without a mapping built per row."""
    at: tuple[int, int, int, int, int] | None = None
    for header, line, cells in _csv_cells(path, kind, handle):
        if at is None:
            position = {column: i for i, column in enumerate(header)}  # the last one wins
            named = (columns.item, columns.critic, columns.label)
            optional = (columns.confidence, columns.reasoning)
            if any(c not in position for c in named + tuple(c for c in optional if c)):
                _missing_column(name(line), dict.fromkeys(header), columns)
            item, voter, label = (position[c] for c in named)
            stated, why = (-1 if c is None else position[c] for c in optional)
            at = (item, voter, label, stated, why)
        item, voter, label, stated, why = at
        yield (
            *_checked(
                name,
                line,
                cells[item],
                cells[voter],
                cells[label],
                None if stated < 0 else cells[stated],
                None if why < 0 else cells[why],
            ),
            line,
        )


def _undecodable(path: str | os.PathLike[str], codec: str) -> str:
    """What a file that does not decode in ``codec`` says: the first bytes that do not,
    their offset and line, and how to name the encoding. Reads the file again in binary
    (an error path only)."""
    shown = "utf-8" if codec == "utf-8-sig" else codec
    skip = 0
    if codec == "utf-8-sig":
        with open(path, "rb") as raw:
            skip = len(codecs.BOM_UTF8) if raw.read(3) == codecs.BOM_UTF8 else 0
        codec = "utf-8"
    decoder = codecs.getincrementaldecoder(codec)()
    offset, line = skip, 1
    with open(path, "rb") as raw:
        raw.seek(skip)
        while True:
            chunk = raw.read(1 << 16)
            pending = bytes(decoder.getstate()[0])
            try:
                line += decoder.decode(chunk, final=not chunk).count("\n")
            except UnicodeDecodeError as exc:
                data = pending + chunk
                at = offset - len(pending) + exc.start
                line += data[: exc.start].decode(codec, errors="replace").count("\n")
                bad = data[exc.start : min(exc.end, exc.start + 4)].hex(" ")
                return (
                    f"{path} is not {shown} text: line {line} (byte {at}) has bytes "
                    f"{bad} that {shown} cannot decode; {_ENCODING_HINT}"
                )
            if not chunk:
                break
            offset += len(chunk)
    return f"{path} is not {shown} text; {_ENCODING_HINT}"
