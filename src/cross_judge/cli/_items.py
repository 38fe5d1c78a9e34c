"""The items file of ``cross-judge review``: reading it one line at a time, skipping and
reporting the lines that cannot be judged, diagnosing a file that is plainly not JSON Lines
before anything is billed, and counting items for the progress bar.

It does not judge anything: :mod:`._review` hands the reader to the panel.
"""

from __future__ import annotations

import codecs
import json
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._common import counted, note

if TYPE_CHECKING:
    from rich.console import Console

    from ..batch import Item
    from ..critic import Critic

__all__ = ["ItemReader", "check_items_format", "count_lines", "count_shard_items"]


class ItemReader:
    """The items of a JSONL file, read one line at a time as the batch asks for them; an
    item's image paths are relative to the file's folder.

    Lines that cannot be judged are reported (with their line number) and skipped: not
    JSON, not an object, no usable ``query``, a context missing a template field, an id
    seen on an earlier line. Items whose ids are in ``done`` (a resumed run) are skipped
    silently and counted. With ``shard`` ``(i, N)``, so are the items of other shards
    (:func:`~cross_judge.batch.shard_of`), before the duplicate check, so a duplicate is
    reported by its own shard's run only; a line that is not an item has no id to place
    it, and every shard's run reports it.
    """

    def __init__(
        self,
        path: Path,
        critics: Sequence[Critic],
        done: set[str],
        console: Console,
        shard: tuple[int, int] | None = None,
    ) -> None:
        self.path = path
        self.critics = critics
        self.done = done
        self.console = console
        self.shard = shard
        self.bad_lines = 0
        self.already_done = 0
        self.other_shards = 0

    def __iter__(self) -> Iterator[Item]:
        from ..batch import Item, ItemError, shard_of
        from ..errors import PromptError

        seen: dict[str, int] = {}
        with open(self.path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                if not raw.strip():
                    continue
                try:
                    value = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    self._skip(
                        number, f"not UTF-8 text ({_bad_byte(exc)}); re-encode the file as UTF-8"
                    )
                    continue
                except RecursionError:
                    self._skip(number, "not JSON (nested too deeply)")
                    continue
                except ValueError as exc:
                    reason = (
                        f"{exc.msg} at column {exc.colno}"
                        if isinstance(exc, json.JSONDecodeError)
                        else str(exc)
                    )
                    self._skip(number, f"not JSON ({reason})")
                    continue
                if not isinstance(value, dict):
                    self._skip(
                        number, f"expected a JSON object with 'query', got {_json_type(value)}"
                    )
                    continue
                try:
                    item = Item.from_value(value, base_dir=self.path.parent)
                except ItemError as exc:
                    self._skip(number, str(exc))
                    continue
                if self.shard is not None and shard_of(item.id, self.shard[1]) != self.shard[0]:
                    self.other_shards += 1
                    continue
                first = seen.get(item.id)
                if first is not None:
                    self._skip(number, f"duplicate id {item.id!r} (first on line {first})")
                    continue
                seen[item.id] = number
                if item.id in self.done:
                    self.already_done += 1
                    continue
                try:
                    for critic in self.critics:
                        critic.check_renders(item)
                except (PromptError, ItemError) as exc:  # a missing reference, steps, ...
                    self._skip(number, f"id {item.id!r}: {exc}")
                    continue
                yield item

    def _skip(self, number: int, reason: str) -> None:
        self.bad_lines += 1
        note(self.console, f"{self.path}:{number}: skipped: {reason}")


_EXPECTED_ITEMS = (
    'expected JSON Lines: one JSON object per line, e.g. {"id": "1", "query": "text to judge"}'
)
_SNIFF_BYTES = 65536
_SNIFF_LINES = 5


def check_items_format(path: Path) -> None:
    """Raise one :class:`ConfigError` saying what ``path`` looks like when it is plainly not
    JSON Lines of objects: empty, UTF-16, not UTF-8 (naming the line and the byte, and how
    to re-encode it), a JSON array, one JSON document over several lines, CSV, or other
    text. Decided from its first few lines (up to 64 KiB): when they are UTF-8 and one of
    them is a JSON object, the file is read line by line, each bad line reported on its
    own, so one damaged line never stops a run.
    """
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        more = bool(handle.read(1))
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise ConfigError(f"{path} is UTF-32 text; save it as UTF-8 ({_EXPECTED_ITEMS})")
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError(f"{path} is UTF-16 text; save it as UTF-8 ({_EXPECTED_ITEMS})")
    head = head.removeprefix(codecs.BOM_UTF8)
    raw_lines = head.split(b"\n")
    if more:
        raw_lines.pop()  # maybe cut short by the sniff limit
    numbered = [(n, raw) for n, raw in enumerate(raw_lines, start=1) if raw.strip()]
    sample = [raw.strip() for _, raw in numbered[:_SNIFF_LINES]]
    if not sample:
        if more:  # 64 KiB of blank lines, then something: let the reader see it
            return
        raise ConfigError(f"{path} is empty: there are no items to judge ({_EXPECTED_ITEMS})")
    _check_utf8(path, numbered[:_SNIFF_LINES])
    values = [_json_or_none(line) for line in sample]
    first = sample[0]
    shown = first[:80].decode("utf-8", "replace")
    # One JSON value over several lines (pretty-printed): the whole of a small file parses
    # as one; a large one starts with a line that is only its opening bracket.
    whole = _json_or_none(head) if not more and len(sample) > 1 else None
    opening = values[0] is None and (first.startswith(b"[") or first == b"{")
    if (
        isinstance(whole, list)
        or (opening and first.startswith(b"["))
        or (isinstance(values[0], list) and not any(isinstance(v, dict) for v in values))
    ):
        raise ConfigError(
            f"{path} holds a JSON array, not JSON Lines ({_EXPECTED_ITEMS}); convert it with "
            f"e.g. jq -c '.[]' {shlex.quote(str(path))} > items.jsonl"
        )
    if isinstance(whole, dict) or opening:
        raise ConfigError(
            f"{path} holds a JSON document spread over several lines (line 1: {shown!r}), "
            f"not JSON Lines ({_EXPECTED_ITEMS}); write each item on one line, e.g. with "
            "jq -c"
        )
    if any(isinstance(value, dict) for value in values):
        return
    delimiter = _csv_delimiter(sample, path)
    if delimiter is not None:
        name = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}[delimiter]
        option = "" if delimiter == "," else f", delimiter={delimiter!r}"
        convert = (
            "import csv, json, sys; [print(json.dumps(row)) for row in csv.DictReader("
            f"open(sys.argv[1], newline='', encoding='utf-8'){option})]"
        )
        raise ConfigError(
            f"{path} looks like CSV ({name}-separated; line 1: {shown!r}), not JSON Lines "
            f"({_EXPECTED_ITEMS}); convert it, with a 'query' column, e.g. python -c "
            f"{shlex.quote(convert)} {shlex.quote(str(path))} > items.jsonl"
        )
    raise ConfigError(
        f"{path} is not JSON Lines: none of its first {counted(len(sample), 'line')} is a "
        f"JSON object (line 1: {shown!r}); {_EXPECTED_ITEMS}"
    )


def _bad_byte(exc: UnicodeDecodeError) -> str:
    """The first byte of a line that UTF-8 cannot decode, and where it is in the line."""
    bad = exc.object[exc.start : exc.start + 1]
    return f"byte 0x{bad.hex().upper()} at position {exc.start + 1} of the line"


def _check_utf8(path: Path, numbered: list[tuple[int, bytes]]) -> None:
    """Refuse a file whose first lines are not UTF-8: its encoding is wrong (Latin-1,
    Windows-1252, ...), and a guess at its format from mis-decoded text would mislead."""
    for number, line in numbered:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            quoted = shlex.quote(str(path))
            raise ConfigError(
                f"{path} is not UTF-8 text: line {number} has {_bad_byte(exc)}, which "
                "UTF-8 cannot decode (the file is probably Latin-1 or Windows-1252, as Excel "
                "and older editors save); re-encode it as UTF-8, e.g. iconv -f WINDOWS-1252 "
                f"-t UTF-8 {quoted} > items.utf8.jsonl ({_EXPECTED_ITEMS})"
            ) from None


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def _csv_delimiter(sample: list[bytes], path: Path) -> str | None:
    """The delimiter if ``sample`` (lines that are not JSON) reads as CSV with at least two
    columns in every line, else ``None``; a ``.csv`` or ``.tsv`` name settles it."""
    import csv

    text = "\n".join(line.decode("utf-8", "replace") for line in sample)
    suffix = path.suffix.lower()
    try:
        dialect = csv.Sniffer().sniff(text, delimiters=",\t;|")
    except csv.Error:
        return "\t" if suffix == ".tsv" else "," if suffix == ".csv" else None
    rows = list(csv.reader(text.splitlines(), dialect))
    if suffix in (".csv", ".tsv") or all(len(row) >= 2 for row in rows):
        return str(dialect.delimiter)
    return None


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"


def count_lines(path: Path) -> int:
    """Non-blank lines, for the progress bar's total."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def count_shard_items(path: Path, shard: tuple[int, int], done: set[str]) -> int:
    """The items of ``shard`` not in ``done``, for the progress bar's total: one pass over
    the file before the run (only when the bar is drawn). Bad lines are not counted."""
    from ..batch import Item, ItemError, shard_of

    index, count = shard
    total = 0
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                value = json.loads(raw.removeprefix(codecs.BOM_UTF8))
                if not isinstance(value, dict):
                    continue
                item = Item.from_value(value, base_dir=path.parent)
            except (ValueError, RecursionError, ItemError):  # bad lines: the reader says why
                continue
            total += shard_of(item.id, count) == index and item.id not in done
    return total
