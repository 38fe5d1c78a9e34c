"""Votes cast elsewhere as a batch: :meth:`BatchResult.from_votes
<cross_judge.batch.BatchResult.from_votes>`, :meth:`BatchResult.add_votes
<cross_judge.batch.BatchResult.add_votes>` and the votes files of ``cross-judge import``.

A *vote* is one voter's label on one item: a person's annotation, or a line of another
tool's judge log. Rows of votes (dicts, tuples, a pandas or polars data frame, or a CSV,
TSV or JSONL file) become one :class:`~cross_judge.verdict.Verdict` per (item, voter),
grouped into one :class:`~cross_judge.verdict.EnsembleVerdict` per item and voted by a
strategy (through :meth:`BatchResult.revote <cross_judge.batch.BatchResult.revote>`), so
every statistic, view and re-vote reads them as it reads a jury's verdicts.

How a row is read:

* labels are text, kept as given once stripped (a number is ``str()``-ed: ``4`` -> ``"4"``);
  they are not upper-cased, as gold labels are not (:func:`cross_judge.stats.gold.load_gold`).
  :func:`add_votes` alone folds case, and only onto a label the batch already holds
  (``"pass"`` -> ``"PASS"``), since a critic's answers are upper-cased by its parser;
* an empty or missing label, a label reserved for failed calls (``ERROR``, ``PARSE_FAIL``,
  ``SKIPPED``, ``ABSTAIN``), a missing item or voter, a confidence that is not a number in
  [0, 1]: a :class:`~cross_judge.errors.ConfigError` naming the row (``rows[3]``, or the
  file and line);
* one verdict per (item, voter): the same label twice keeps the first row (exported logs
  often repeat a line), two different labels is an error naming both rows;
* without a confidence a verdict has ``confidence=0.0`` with ``confidence_stated=False``
  and ``confidence_source="none"`` (the calibration statistics leave it out);
* a person's verdict has ``vendor="human"`` (:data:`HUMAN_VENDOR`) and ``model=None``.

It calls no model, imports no data-frame library (a frame is read through its own
``to_dicts()`` or ``to_dict("records")``), and does not write files.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._extensions import provide
from ..errors import ConfigError
from ..results import HUMAN_VENDOR, BatchResult
from ..verdict import RESERVED_KINDS, EnsembleVerdict, Verdict

__all__ = [
    "VOTES_FORMATS",
    "NamedRows",
    "Vote",
    "VotesFormat",
    "add_votes",
    "batch_from_votes",
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


@dataclass(frozen=True)
class Vote:
    """One row read: ``voter``'s ``label`` on ``item`` (``where`` names the row in errors)."""

    item: str
    voter: str
    label: str
    confidence: float | None
    reasoning: str
    where: str


# -- reading rows -----------------------------------------------------------------------------


class NamedRows:
    """Rows of votes that name themselves for errors: ``(where, row)`` pairs, such as a
    votes file's lines (:func:`read_votes_file`). ``from_votes`` reads them as they are
    named instead of as ``rows[0]``, ``rows[1]``, ..."""

    __slots__ = ("_named",)

    def __init__(self, named: Iterable[tuple[str, Any]]) -> None:
        self._named = named

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._named)


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
        iterator = iter(rows)
    except TypeError:
        raise ConfigError(
            f"votes must be an iterable of rows or a data frame, got {type(rows).__name__}"
        ) from None
    for index, row in enumerate(iterator):
        yield f"rows[{index}]", row


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
    votes: list[Vote] = []
    seen: dict[tuple[str, str], Vote] = {}
    for where, row in rows:
        vote = _vote(where, row, item, critic, label, confidence, reasoning)
        key = (vote.item, vote.voter)
        known = seen.get(key)
        if known is None:
            seen[key] = vote
            votes.append(vote)
        elif known.label != vote.label:
            raise ConfigError(
                f"{vote.where}: {vote.voter!r} labels item {vote.item!r} {vote.label!r}, but "
                f"{known.where} has {known.label!r}; one vote per voter and item: keep one"
            )
    return votes


def _vote(
    where: str,
    row: Any,
    item: str,
    critic: str,
    label: str,
    confidence: str | None,
    reasoning: str | None,
) -> Vote:
    if isinstance(row, Mapping):

        def cell(role: str, column: str) -> Any:
            if column not in row:
                raise ConfigError(
                    f"{where} has no {column!r} column for the {role} (it has "
                    f"{sorted(map(str, row))}); name the right one ({role}= in Python, "
                    f"--{role} COL with cross-judge import)"
                )
            return row[column]

        values = (cell("item", item), cell("critic", critic), cell("label", label))
        stated = cell("confidence", confidence) if confidence is not None else None
        why = cell("reasoning", reasoning) if reasoning is not None else None
    elif isinstance(row, (tuple, list)) and len(row) in (3, 4):
        values = (row[0], row[1], row[2])
        stated = row[3] if len(row) == 4 else None
        why = None
    else:
        raise ConfigError(
            f"{where} is not a vote: give a mapping with {item!r}, {critic!r} and {label!r}, "
            f"or a tuple (item, critic, label[, confidence]); got {_short(row)}"
        )
    item_id, voter, text = (_text(v) for v in values)
    if not item_id:
        raise ConfigError(f"{where}: no item id")
    if not voter:
        raise ConfigError(f"{where}: no voter (critic) name")
    if not text:
        raise ConfigError(f"{where}: empty label; every vote needs one")
    if text in RESERVED_KINDS:
        raise ConfigError(
            f"{where}: the label {text!r} is reserved for failed or unmade calls, not a vote"
        )
    return Vote(item_id, voter, text, _confidence(where, stated), _text(why), where)


def _text(value: Any) -> str:
    """A cell as text, stripped; missing (``None``, NaN) is empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _confidence(where: str, value: Any) -> float | None:
    """A cell as a confidence in [0, 1]; missing (``None``, empty text, NaN) is ``None``."""
    if isinstance(value, str):
        value = value.strip() or None
    if value is None:
        return None
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = math.inf
    if math.isnan(number) and not isinstance(value, bool):
        return None  # a data frame's missing value
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{where}: confidence {_short(value)} is not a number in [0, 1]")
    return number


def _short(value: Any) -> str:
    text = repr(value)
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


def _verdict(vote: Vote, person: bool) -> Verdict:
    stated = vote.confidence is not None
    return Verdict(
        kind=vote.label,
        confidence=vote.confidence if vote.confidence is not None else 0.0,
        confidence_stated=stated,
        confidence_source="stated" if stated else "none",
        reasoning=vote.reasoning,
        critic_id=vote.voter,
        vendor=HUMAN_VENDOR if person else None,
        model=None,
    )


def _voted(batch: BatchResult, voting: str, voting_kwargs: Mapping[str, Any] | None) -> BatchResult:
    return batch.revote(voting, **dict(voting_kwargs or {}))


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
    votes = read_votes(
        numbered_rows(rows),
        item=item,
        critic=critic,
        label=label,
        confidence=confidence,
        reasoning=reasoning,
    )
    critics = list(dict.fromkeys(v.voter for v in votes))
    humans = _people(people, critics)
    rank = {name: i for i, name in enumerate(critics)}
    by_item: dict[str, list[Vote]] = {}
    for vote in votes:
        by_item.setdefault(vote.item, []).append(vote)
    results = [
        EnsembleVerdict(
            query_id=item_id,
            verdicts=[
                _verdict(v, v.voter in humans)
                for v in sorted(item_votes, key=lambda v: rank[v.voter])
            ],
            consensus=_PLACEHOLDER,
            voting=voting,
        )
        for item_id, item_votes in by_item.items()
    ]
    unvoted = BatchResult(verdicts=results, critics=critics, voting=voting)
    return _voted(unvoted, voting, voting_kwargs)


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
        verdict = _verdict(vote, vote.voter in humans).model_copy(update={"kind": folded})
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


def read_votes_file(path: str | os.PathLike[str], format: str | None = None) -> NamedRows:
    """The rows of a votes file, read lazily, each named ``"<path> line <n>"``, ready for
    ``BatchResult.from_votes``: a CSV or TSV file with a header line (read by :mod:`csv`;
    every cell is text, an empty cell is missing), or a JSONL file of one object per line
    (blank lines skipped). ``format`` (``csv``, ``tsv``, ``jsonl``) overrides the suffix.

    Raises:
        ConfigError: the file is missing or unreadable, a JSONL line is not an object, a
            CSV row has more cells than the header (line numbers given).
    """
    kind = votes_format(path, format)
    return NamedRows(_file_rows(path, kind))


def _file_rows(path: str | os.PathLike[str], kind: VotesFormat) -> Iterator[tuple[str, Any]]:
    try:
        handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the votes ({exc.strerror or exc})") from None
    with handle:
        if kind == "jsonl":
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path} line {number}"
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise ConfigError(f"{where}: not JSON ({exc})") from None
                if not isinstance(row, dict):
                    raise ConfigError(f"{where}: not a JSON object; one vote per line")
                yield where, row
            return
        reader = csv.DictReader(handle, delimiter="," if kind == "csv" else "\t")
        try:
            for row in reader:
                where = f"{path} line {reader.line_num}"
                if None in row:
                    raise ConfigError(f"{where}: more cells than the header has columns")
                yield where, {k: (v if v != "" else None) for k, v in row.items()}
        except csv.Error as exc:
            raise ConfigError(f"{path} line {reader.line_num}: {exc}") from None
