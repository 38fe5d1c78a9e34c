"""Votes held compactly and grouped by item: what :meth:`BatchResult.from_votes
<cross_judge.batch.BatchResult.from_votes>` and ``cross-judge import`` read rows into before
they vote, so that millions of votes fit in a few tens of bytes each.

A :class:`VoteTable` takes votes already checked (:mod:`cross_judge.batch.votes` checks each
row) and keeps, per vote, four integers in :mod:`array` columns (its item, voter, label and
row number) and, only once some vote has one, its confidence (8 bytes) and where its
reasoning is. Item ids are held as UTF-8 in one buffer behind an open-addressing table
(:class:`TextIds`, about 20 bytes an item beside its text, where a ``dict`` of ``str``
takes about 150); voters and labels, few, in dicts. Reasoning text goes to an unnamed
temporary file when the table is given a folder for it (the command line: beside
``--out``), else stays in memory.

:meth:`VoteTable.items` then gives each item in first-seen order with its votes in the
order of first-seen voters, a voter's repeated identical vote once, and hands a voter's
two different labels on one item to the caller to refuse. It builds no model and votes
nothing (the callers do), and the temporary file is gone when the table is closed or
collected.
"""

from __future__ import annotations

import math
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import IO, NoReturn

__all__ = ["Clash", "TextIds", "VoteTable"]

_FIRST_SLOTS = 1024
_NO_REASON = -1


class TextIds:
    """Distinct texts numbered ``0, 1, ...`` in first-seen order, held as UTF-8 in one
    ``bytearray`` (lone surrogates kept, through ``surrogatepass``) with an open-addressing
    table of their numbers (linear probing, at most half full)."""

    __slots__ = ("_ends", "_mask", "_slots", "_text")

    def __init__(self) -> None:
        self._text = bytearray()
        self._ends = array("Q", [0])
        self._slots = array("i", [-1]) * _FIRST_SLOTS
        self._mask = _FIRST_SLOTS - 1

    def __len__(self) -> int:
        return len(self._ends) - 1

    def number(self, text: str) -> int:
        """The number of ``text``, given it now if it is new."""
        data = text.encode("utf-8", "surrogatepass")
        slots, mask, ends, stored = self._slots, self._mask, self._ends, self._text
        slot = hash(data) & mask
        while True:
            known = slots[slot]
            if known < 0:
                break
            if stored[ends[known] : ends[known + 1]] == data:
                return known
            slot = (slot + 1) & mask
        known = len(ends) - 1
        stored += data
        ends.append(len(stored))
        slots[slot] = known
        if 2 * (known + 1) > mask:
            self._grow()
        return known

    def text(self, number: int) -> str:
        """The text numbered ``number``."""
        ends = self._ends
        return self._text[ends[number] : ends[number + 1]].decode("utf-8", "surrogatepass")

    def _grow(self) -> None:
        size = 2 * (self._mask + 1)
        slots = array("i", [-1]) * size
        mask = size - 1
        ends, stored = self._ends, self._text
        for known in range(len(ends) - 1):
            slot = hash(bytes(stored[ends[known] : ends[known + 1]])) & mask
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = known
        self._slots, self._mask = slots, mask


Clash = Callable[[str, str, str, int, str, int], NoReturn]
"""Refuses one voter's two labels on an item: ``(item, voter, label, row, kept label, kept
row)``, the later row first."""


class VoteTable:
    """Checked votes, compactly (see the module docstring). ``spill``: a folder for the
    temporary file of reasoning text (``None``: keep it in memory)."""

    def __init__(self, *, spill: str | None = None) -> None:
        self._spill_dir = spill
        self._items = TextIds()
        self.voters: dict[str, int] = {}
        """Voter names, numbered in first-seen order."""
        self.labels: dict[str, int] = {}
        """Labels, numbered in first-seen order."""
        self._item = array("I")
        self._voter = array("I")
        self._label = array("I")
        self._row = array("Q")
        self._confidence: array[float] | None = None
        self._reason_at: array[int] | None = None
        self._reason_size: array[int] | None = None
        self._reasons: list[str] = []
        self._spill: IO[bytes] | None = None
        self._last_item: str | None = None
        self._last_number = -1

    def __len__(self) -> int:
        """The votes added (repeated ones included)."""
        return len(self._row)

    @property
    def n_items(self) -> int:
        return len(self._items)

    def add(
        self,
        item: str,
        voter: str,
        label: str,
        confidence: float | None,
        reasoning: str,
        row: int,
    ) -> None:
        """Take one vote; ``row`` (an integer >= 0) names its row in :meth:`items`."""
        self.extend(((item, voter, label, confidence, reasoning, row),))

    def extend(self, votes: Iterable[tuple[str, str, str, float | None, str, int]]) -> None:
        """Take each vote ``(item, voter, label, confidence, reasoning, row)`` as
        :meth:`add` does."""
        voters, labels, number = self.voters, self.labels, self._items.number
        items, voter_column, label_column, rows = self._item, self._voter, self._label, self._row
        last_item, last_number = self._last_item, self._last_number
        try:
            for item, voter, label, confidence, reasoning, row in votes:
                who = voters.get(voter)
                if who is None:
                    who = voters[voter] = len(voters)
                what = labels.get(label)
                if what is None:
                    what = labels[label] = len(labels)
                if item != last_item:  # votes files often hold an item's votes together
                    last_item, last_number = item, number(item)
                items.append(last_number)
                voter_column.append(who)
                label_column.append(what)
                rows.append(row)
                if confidence is not None or self._confidence is not None:
                    self._add_confidence(confidence)
                if reasoning or self._reason_at is not None:
                    self._add_reasoning(reasoning)
        finally:
            self._last_item, self._last_number = last_item, last_number

    def _add_confidence(self, confidence: float | None) -> None:
        if self._confidence is None:
            self._confidence = array("d", [math.nan]) * (len(self._row) - 1)
        self._confidence.append(math.nan if confidence is None else confidence)

    def _add_reasoning(self, reasoning: str) -> None:
        if self._reason_at is None or self._reason_size is None:
            self._reason_at = array("q", [_NO_REASON]) * (len(self._row) - 1)
            self._reason_size = array("I", bytes(4 * (len(self._row) - 1)))
        at, size = self._keep(reasoning) if reasoning else (_NO_REASON, 0)
        self._reason_at.append(at)
        self._reason_size.append(size)

    def _keep(self, text: str) -> tuple[int, int]:
        if self._spill_dir is None:
            self._reasons.append(text)
            return len(self._reasons) - 1, 0
        if self._spill is None:
            self._spill = tempfile.TemporaryFile(dir=self._spill_dir)  # noqa: SIM115 - close()
        data = text.encode("utf-8", "surrogatepass")
        at = self._spill.seek(0, 2)
        self._spill.write(data)
        return at, len(data)

    def reasoning(self, vote: int) -> str:
        """The reasoning of vote ``vote`` (``""``: none)."""
        if self._reason_at is None or self._reason_size is None:
            return ""
        at = self._reason_at[vote]
        if at == _NO_REASON:
            return ""
        if self._spill is None:
            return self._reasons[at]
        self._spill.seek(at)
        return self._spill.read(self._reason_size[vote]).decode("utf-8", "surrogatepass")

    def close(self) -> None:
        """Drop the temporary file of reasoning text (the table reads no reasoning after)."""
        if self._spill is not None:
            self._spill.close()

    @property
    def voter_column(self) -> array[int]:
        """Per vote, the number of its voter (an index into :attr:`voters`); read only."""
        return self._voter

    @property
    def label_column(self) -> array[int]:
        """Per vote, the number of its label (an index into :attr:`labels`); read only."""
        return self._label

    def confidence(self, vote: int) -> float | None:
        """The confidence of vote ``vote``; ``None``: not stated."""
        if self._confidence is None:
            return None
        stated = self._confidence[vote]
        return None if stated != stated else stated  # NaN: not stated

    @property
    def has_confidence(self) -> bool:
        """Whether some vote states a confidence."""
        return self._confidence is not None

    @property
    def has_reasoning(self) -> bool:
        """Whether some vote has reasoning."""
        return self._reason_at is not None

    def items(self, clash: Clash) -> Iterator[tuple[str, list[int]]]:
        """Each item id in first-seen order with its votes (their numbers, indexes into
        :attr:`voter_column` and :attr:`label_column`, for :meth:`confidence` and
        :meth:`reasoning`), ordered by the voters' first appearance; a voter's later vote
        with the label of its first is dropped, one with another label goes to ``clash``
        (which raises). Can be read once: the grouping replaces the per-vote item column."""
        n_items = len(self._items)
        starts = array("I", bytes(4 * (n_items + 1)))
        for item in self._item:
            starts[item + 1] += 1
        total = 0
        for index in range(n_items + 1):
            total += starts[index]
            starts[index] = total
        fill = array("I", starts)
        order = array("I", bytes(4 * len(self._item)))
        for vote, item in enumerate(self._item):
            order[fill[item]] = vote
            fill[item] += 1
        del fill
        self._item = array("I")  # the order above holds the grouping now
        voter, text = self._voter, self._items.text
        for index in range(n_items):
            votes = order[starts[index] : starts[index + 1]].tolist()
            if len(votes) > 1:
                votes.sort(key=voter.__getitem__)
                if len({voter[v] for v in votes}) < len(votes):
                    votes = self._once(text(index), votes, clash)
            yield text(index), votes

    def _once(self, item: str, votes: list[int], clash: Clash) -> list[int]:
        """``votes`` (ordered by voter, then row) with each voter's repeats of its first
        label dropped; another label goes to ``clash``."""
        voter, label = self._voter, self._label
        kept: list[int] = []
        for vote in votes:
            if kept and voter[kept[-1]] == voter[vote]:
                first = kept[-1]
                if label[vote] != label[first]:
                    voters, labels = list(self.voters), list(self.labels)
                    clash(
                        item,
                        voters[voter[vote]],
                        labels[label[vote]],
                        self._row[vote],
                        labels[label[first]],
                        self._row[first],
                    )
                continue
            kept.append(vote)
        return kept
