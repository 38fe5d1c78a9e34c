"""Reading gold and labels files: one reader and one set of checks for every command and
function that takes people's labels (``stats --gold``, ``report --gold``,
``batch.against``, ``batch.estimate``, ``estimate_accuracy``, the criteria's gold, the
labelling page's export).

A line is ``{"id": "...", "label": "..."}``, ``{"id": "...", "criteria": {"<criterion id>":
"<label>"}}`` or both; the labelling page adds ``"probability"`` (ignored here) and
``"jury_shown"`` (``true`` when the person saw the jury's answers on that item before
labelling it). Blank lines are skipped; other keys are ignored.

The checks, the same everywhere (each error names the file and line, or the id of a
mapping, and says the fix):

* a label is a string, neither empty nor padded with spaces (``" FAIL "`` is refused, not
  stripped: a gold label is compared as written, and a padded one is a typing slip);
* a label is not one that marks an unmade judgement: ``ERROR``, ``PARSE_FAIL``,
  ``SKIPPED``, ``ABSTAIN`` (:data:`~cross_judge.verdict.RESERVED_KINDS`), in any case;
* an id labelled twice gets the same label (a repeated line is kept once);
* ``"jury_shown"``, when present, is ``true`` or ``false``.

Whether each label is one of a batch's labels (its critics' answers and its consensus
labels, compared exactly: ``fail`` is not ``FAIL``) is checked where the batch is known, by
:func:`~cross_judge.stats._gold.check_gold` with the batch's vocabulary
(:func:`vocabulary_of`); no reader upper-cases or strips a label.

Reads files and mappings only; it computes no statistic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..verdict import RESERVED_KINDS

if TYPE_CHECKING:
    from ..verdict import EnsembleVerdict

__all__ = [
    "GoldFile",
    "check_label",
    "gold_labels",
    "jury_shown_note",
    "read_gold",
    "read_gold_labels",
    "vocabulary_of",
]

_RESERVED_UPPER = frozenset(kind.upper() for kind in RESERVED_KINDS)

_LABEL_LINE = '{"id": "...", "label": "..."} with string values'
_EITHER_LINE = (
    '{"id": "...", "label": "..."} and/or {"id": "...", "criteria": {"<criterion id>": "<label>"}}'
)


@dataclass(frozen=True)
class GoldFile:
    """What a gold or labels file (or a mapping of labels) holds.

    Attributes:
        items: item labels, ``{id: label}``.
        criteria: criterion labels, ``{id: {criterion id: label}}`` (``null`` ones dropped).
        jury_shown: ids whose line says ``"jury_shown": true``: the person saw the jury's
            answers on the item before labelling it.
        jury_hidden: ids whose line says ``"jury_shown": false``.
        source: the file read, ``None`` for a mapping.
        names_criteria: some line (or value) gives criterion labels, even if all ``null``.
    """

    items: dict[str, str]
    criteria: dict[str, dict[str, str]]
    jury_shown: frozenset[str] = frozenset()
    jury_hidden: frozenset[str] = frozenset()
    source: str | None = None
    names_criteria: bool = False

    @property
    def ids(self) -> list[str]:
        """Every labelled id (item or criterion labels), in first-seen order."""
        return list(dict.fromkeys([*self.items, *self.criteria]))

    def split(self) -> tuple[dict[str, str] | None, dict[str, dict[str, str]] | None]:
        """The item labels and the criterion labels, as :func:`gold_labels` gives them: a
        file that names no criterion has item labels only (criterion labels ``None``);
        otherwise the item labels are ``None`` when no line gives one."""
        if not self.names_criteria:
            return self.items, None
        return self.items or None, self.criteria

    def jury_unrecorded(self, ids: Iterable[str]) -> list[str]:
        """Those of ``ids`` whose line does not say whether the jury was shown (a
        mapping, a hand-written file, an export of an older page)."""
        return [i for i in ids if i not in self.jury_shown and i not in self.jury_hidden]


def check_label(label: object, where: str) -> str:
    """``label`` if it may be a person's label, else :class:`ConfigError` naming ``where``
    (``"gold.jsonl line 3"``, ``"gold for item 'q1'"``): not a string, empty, padded with
    spaces, or a label reserved for unmade judgements (``ERROR``, ``PARSE_FAIL``,
    ``SKIPPED``, ``ABSTAIN``, in any case)."""
    if not isinstance(label, str):
        raise ConfigError(f"{where}: a label is a string, got {label!r:.60}")
    if not label.strip():
        raise ConfigError(f"{where}: the label is empty; give the item's label or leave it out")
    if label != label.strip():
        raise ConfigError(
            f"{where}: the label {label!r} has spaces around it; write {label.strip()!r} "
            "(gold labels are compared as written)"
        )
    if label.upper() in _RESERVED_UPPER:
        raise ConfigError(
            f"{where}: {label!r} marks a call that failed or was not made, not a label; give "
            "the item's true label, or leave the item out of the gold file"
        )
    return label


def read_gold(
    gold: Mapping[str, Any] | str | os.PathLike[str], *, require_label: bool = False
) -> GoldFile:
    """The labels of a gold or labels file (see the module docstring), or of a mapping
    ``{id: label}`` (values made text with ``str``) or ``{id: {criterion id: label}}``.

    ``require_label``: every line must have an item ``"label"`` (what
    :func:`~cross_judge.stats._gold.load_gold` reads); otherwise a line needs ``"label"``,
    ``"criteria"`` or both.

    Raises:
        ConfigError: a missing or unreadable file; a line that is not such an object, or a
            label the checks refuse (the line's number given); an id or criterion given two
            different labels.
    """
    if isinstance(gold, Mapping):
        return _from_mapping(gold)
    return _from_text(_text(gold), str(gold), require_label=require_label)


def gold_labels(
    path: str | os.PathLike[str],
) -> tuple[dict[str, str] | None, dict[str, dict[str, str]] | None]:
    """The item labels and the criterion labels of a gold file, what ``stats --gold`` and
    ``report --gold`` read: a file none of whose lines has ``"criteria"`` is read as
    :func:`~cross_judge.stats._gold.load_gold` reads it (every line an item label;
    criterion labels ``None``); otherwise lines may give either or both, and the item
    labels are ``None`` when no line has one. :func:`read_gold_labels` gives the same and
    whether each label was made with the jury shown.

    Raises:
        ConfigError: as :func:`read_gold`.
    """
    return read_gold_labels(path).split()


def read_gold_labels(path: str | os.PathLike[str]) -> GoldFile:
    """:func:`read_gold` of a gold file, item labels required on every line unless some
    line names ``"criteria"`` (as :func:`gold_labels` reads it).

    Raises:
        ConfigError: as :func:`read_gold`.
    """
    text = _text(path)
    return _from_text(text, str(path), require_label='"criteria"' not in text)


def vocabulary_of(results: Iterable[EnsembleVerdict]) -> list[str]:
    """What a gold label may be for ``results``: every label a critic answered (valid
    verdicts, a cascade's every tier), then every consensus label (a fallback such as
    ``UNCLEAR`` included), each once in first-seen order: what ``stats --gold`` accepts."""
    answered: dict[str, None] = {}
    consensus: dict[str, None] = {}
    for result in results:
        for verdict in result.verdicts:
            if verdict.error is None:
                answered.setdefault(verdict.kind, None)
        consensus.setdefault(result.consensus, None)
    return list({**answered, **consensus})


def jury_shown_note(shown: int, total: int) -> str | None:
    """The sentence to print beside measures against ``total`` gold labels of which
    ``shown`` were made with the jury's answers shown (``None`` when none was)."""
    if shown <= 0:
        return None
    return (
        f"{shown} of the {total} gold labels were made with the jury's answers shown "
        '("jury_shown": true): they may lean towards the jury, which flatters the critics '
        "that agree with it; label with the jury hidden for a measure that checks it"
    )


# -- reading -------------------------------------------------------------------------------


def _text(path: str | os.PathLike[str]) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"{path}: cannot read the gold labels ({reason})") from None


def _from_mapping(gold: Mapping[str, Any]) -> GoldFile:
    items: dict[str, str] = {}
    criteria: dict[str, dict[str, str]] = {}
    for key, value in gold.items():
        item = str(key)
        if isinstance(value, Mapping):
            labels: dict[str, str] = {}
            for cid, label in value.items():
                if label is None:
                    continue
                if not isinstance(cid, str) or not isinstance(label, str):
                    raise ConfigError(
                        f"gold for item {item!r} must map criterion ids to labels (str), "
                        f"got {dict(value)!r:.80}"
                    )
                labels[cid] = check_label(label, f"gold for item {item!r} criterion {cid!r}")
            criteria[item] = labels
        else:
            items[item] = check_label(str(value), f"gold for item {item!r}")
    return GoldFile(items=items, criteria=criteria, names_criteria=bool(criteria))


def _from_text(text: str, source: str, *, require_label: bool) -> GoldFile:
    items: dict[str, str] = {}
    criteria: dict[str, dict[str, str]] = {}
    shown: set[str] = set()
    hidden: set[str] = set()
    shape = _LABEL_LINE if require_label else _EITHER_LINE
    names_criteria = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        record = _record(line)
        if record is None or not _has_shape(record, require_label):
            raise ConfigError(f"{where}: a gold line is {shape}")
        item: str = record["id"]
        names_criteria = names_criteria or "criteria" in record
        if "label" in record:
            label = check_label(record["label"], where)
            known = items.setdefault(item, label)
            if known != label:
                raise ConfigError(
                    f"{where}: id {item!r} is labelled both {known!r} and {label!r}; keep one"
                )
        for cid, value in (record.get("criteria") or {}).items():
            if value is None:
                continue
            label = check_label(value, f"{where} criterion {cid!r}")
            known = criteria.setdefault(item, {}).setdefault(cid, label)
            if known != label:
                raise ConfigError(
                    f"{where}: id {item!r} criterion {cid!r} is labelled both {known!r} and "
                    f"{label!r}; keep one"
                )
        flag = record.get("jury_shown")
        if "jury_shown" in record and not isinstance(flag, bool):
            raise ConfigError(f'{where}: "jury_shown" is true or false, got {flag!r:.40}')
        if flag is True:
            shown.add(item)
        elif flag is False:
            hidden.add(item)
    # A label made once with the jury shown counts as shown, whatever another line says.
    return GoldFile(
        items=items,
        criteria=criteria,
        jury_shown=frozenset(shown),
        jury_hidden=frozenset(hidden - shown),
        source=source,
        names_criteria=names_criteria,
    )


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("id"), str) else None


def _has_shape(record: dict[str, Any], require_label: bool) -> bool:
    has_label, has_criteria = "label" in record, "criteria" in record
    if require_label and not has_label:
        return False
    if not (has_label or has_criteria):
        return False
    if has_label and not isinstance(record["label"], str):
        return False
    return not has_criteria or _criteria_labels(record["criteria"])


def _criteria_labels(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()
    )
