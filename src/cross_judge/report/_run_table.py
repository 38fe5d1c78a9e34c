"""One run of a comparison as a lean table: :class:`RunTable`, read by :func:`read_run`
from a :class:`~cross_judge.batch.BatchResult`, a :class:`~cross_judge.ranking.Ranking`, a
results file or a ranking's JSON file.

A results file is read line by line and each line reduced to what a comparison needs (the
consensus, the score, each critic's label and score, each criterion's consensus and score):
two 100,000-item files fit in a few hundred MB, and an item's text is read back from the
file (by its byte offset) only for the items that flipped.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..errors import ConfigError
from ..rubric import DEFAULT_SCALE
from ..stats import collection_paused
from ..verdict import ItemText

if TYPE_CHECKING:
    from ..ranking import Ranking
    from ..results import BatchResult
    from ..verdict import EnsembleVerdict

__all__ = ["TEXT_LIMIT", "JudgedItem", "RunTable", "read_run"]

TEXT_LIMIT = 1000
"""The characters of an item's text a flipped item keeps from each run."""


# What a comparison reads of a results line. Parsed by pydantic's JSON parser, which skips
# every other key without building it (a verdict's reasoning, raw response, usage, ...):
# several times faster than json.loads on a whole line. A line these types do not fit (a
# hostile or hand-edited file) is read again with json.loads and checked key by key.
class _LeanVerdict(TypedDict, total=False):
    critic_id: str
    kind: str
    score: Optional[float]  # noqa: UP045 - pydantic reads these at runtime on 3.10
    error: Optional[str]  # noqa: UP045


class _NamedVerdict(_LeanVerdict, total=False):
    # Who the critic is: read from a line that names a critic for the first time only.
    vendor: Optional[str]  # noqa: UP045
    model: Optional[str]  # noqa: UP045
    prompt_sha256: Optional[str]  # noqa: UP045


class _LeanCriterion(TypedDict, total=False):
    consensus: str
    score: Optional[float]  # noqa: UP045


class _LeanRubric(TypedDict, total=False):
    scale: dict[str, float]


class _LeanMeta(TypedDict, total=False):
    rank: Any


class _LeanResult(TypedDict, total=False):
    query_id: str
    verdicts: list[_LeanVerdict]
    consensus: str
    score: Optional[float]  # noqa: UP045
    tier: Optional[int]  # noqa: UP045
    voting: str
    criteria: Optional[dict[str, _LeanCriterion]]  # noqa: UP045
    rubric: Optional[_LeanRubric]  # noqa: UP045
    meta: _LeanMeta


class _NamedResult(_LeanResult, total=False):
    verdicts: list[_NamedVerdict]  # type: ignore[misc]
    item: Any


class _WithItem(_LeanResult, total=False):
    item: Any


class _ItemOnly(TypedDict, total=False):
    item: Any


@functools.cache
def _adapter(kind: str) -> TypeAdapter[Any]:
    shape = {"lean": _LeanResult, "with_item": _WithItem, "named": _NamedResult, "item": _ItemOnly}[
        kind
    ]
    return TypeAdapter(shape)


@dataclass(slots=True)
class JudgedItem:
    """One item of one run, as much as a comparison reads of it: the consensus, the score,
    each critic's ``(label, score)`` (its ``ERROR``/``PARSE_FAIL`` kept, its score then
    ``None``), each criterion's ``(consensus, score)`` (``None`` without a rubric), and a
    key of the text judged (``None`` unless asked for: the A/A check compares them)."""

    consensus: str
    score: float | None
    votes: dict[str, tuple[str, float | None]]
    criteria: dict[str, tuple[str, float | None]] | None
    text_key: int | None


def _no_texts(item_ids: Sequence[str]) -> dict[str, str | None]:
    return dict.fromkeys(item_ids)


@dataclass
class RunTable:
    """One run's items by id, and what its results say about the judge: each critic's
    ``(vendor, model, prompt sha256)`` as first seen, the voting strategies, whether a
    cascade decided the items, a rubric's scale, the manifest's runs; ``texts_of`` reads
    items' texts back (each cut to :data:`TEXT_LIMIT`); ``ranking`` holds a ranking run's
    results (``None`` otherwise)."""

    name: str
    rows: dict[str, JudgedItem] = field(default_factory=dict)
    critics: dict[str, tuple[str | None, str | None, str | None]] = field(default_factory=dict)
    voting: dict[str, None] = field(default_factory=dict)
    cascade: bool = False
    scale: dict[str, float] | None = None
    manifest_runs: list[dict[str, Any]] = field(default_factory=list)
    has_manifest: bool = True
    texts_of: Callable[[Sequence[str]], dict[str, str | None]] = _no_texts
    ranking: list[EnsembleVerdict] | None = None

    def add(self, item_id: str, row: JudgedItem, where: str, number: int) -> None:
        """Add ``row`` under ``item_id``.

        Raises:
            ConfigError: ``item_id`` has a row already; the message says where the repeat
                is: ``where`` with ``number`` put in its ``{}`` (formatted only then).
        """
        if item_id in self.rows:
            raise ConfigError(
                f"{self.name}: item id {item_id!r} has two results ({where.format(number)}); "
                "a comparison pairs one result per item: keep one (results files from two "
                "runs appended together have this; `cross-judge review --resume` never "
                "writes one twice)"
            )
        self.rows[item_id] = row


# -- reading a run ---------------------------------------------------------------------------


def _critic_identity(verdict: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    return (verdict.get("vendor"), verdict.get("model"), verdict.get("prompt_sha256"))


def _text_key(item: Any) -> int | None:
    """A key of the text a results line's ``item`` holds: the same as a result in memory
    gets for it (:func:`_item_key`), so runs read from files and runs in memory compare;
    ``None`` without an item."""
    if not isinstance(item, Mapping):
        return None
    try:
        return _item_key(ItemText.model_validate(item))
    except ValidationError:  # not an item this version writes: its JSON is its key
        return hash(json.dumps(item, sort_keys=True, default=str))


def _item_key(item: ItemText) -> int:
    return hash(item.model_dump_json())


def _item_text(item: Any) -> str | None:
    """The text judged, cut to :data:`TEXT_LIMIT`: the query, else the messages or the
    trajectory as JSON."""
    if not isinstance(item, Mapping):
        return None
    text = item.get("query") or ""
    if not text:
        for key in ("messages", "trajectory"):
            if item.get(key):
                text = json.dumps(item[key], ensure_ascii=False, default=str)
                break
    text = str(text)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "…"


def _judged(record: Mapping[str, Any], run: RunTable, *, text_keys: bool) -> JudgedItem:
    """The lean row of one result record (a dict as a results line holds it), noting in
    ``run`` the critics' identities, the voting and whether a cascade decided it."""
    votes: dict[str, tuple[str, float | None]] = {}
    for verdict in record.get("verdicts") or ():
        if not isinstance(verdict, Mapping):
            continue
        name = sys.intern(str(verdict.get("critic_id", "")))
        if name not in run.critics:
            run.critics[name] = _critic_identity(verdict)
        kind = sys.intern(str(verdict.get("kind")))
        score = verdict.get("score") if verdict.get("error") is None else None
        votes[name] = (kind, score if isinstance(score, (int, float)) else None)
    run.voting.setdefault(str(record.get("voting")), None)
    if record.get("tier") is not None:
        run.cascade = True
    criteria: dict[str, tuple[str, float | None]] | None = None
    given = record.get("criteria")
    if isinstance(given, Mapping):
        criteria = {}
        for cid, voted in given.items():
            if isinstance(voted, Mapping):
                score = voted.get("score")
                criteria[str(cid)] = (
                    str(voted.get("consensus")),
                    score if isinstance(score, (int, float)) else None,
                )
        rubric = record.get("rubric")
        if run.scale is None and isinstance(rubric, Mapping):
            scale = rubric.get("scale")
            if isinstance(scale, Mapping):
                run.scale = {str(k): float(v) for k, v in scale.items()}
        if run.scale is None:
            run.scale = dict(DEFAULT_SCALE)
    score = record.get("score")
    return JudgedItem(
        consensus=sys.intern(str(record.get("consensus"))),
        score=score if isinstance(score, (int, float)) else None,
        votes=votes,
        criteria=criteria,
        text_key=_text_key(record.get("item")) if text_keys else None,
    )


def _from_batch(batch: BatchResult, name: str, *, text_keys: bool) -> RunTable:
    run = RunTable(name=name, manifest_runs=list(batch.manifest_runs))
    run.has_manifest = bool(batch.manifest_runs)
    items: dict[str, EnsembleVerdict] = {}
    for number, result in enumerate(batch.verdicts, start=1):
        row = _judged_result(result, run, text_keys=text_keys)
        run.add(result.query_id, row, "result {}", number)
        items[result.query_id] = result
    if any(_rank_meta(r.meta) for r in batch.verdicts):
        run.ranking = list(batch.verdicts)

    def texts_of(item_ids: Sequence[str]) -> dict[str, str | None]:
        texts: dict[str, str | None] = {}
        for item_id in item_ids:
            found = items.get(item_id)
            item = None if found is None or found.item is None else found.item
            texts[item_id] = None if item is None else _item_text(item.model_dump(mode="json"))
        return texts

    run.texts_of = texts_of
    return run


def _judged_result(result: EnsembleVerdict, run: RunTable, *, text_keys: bool) -> JudgedItem:
    """:func:`_judged` of a result in memory, read from its attributes (no dump)."""
    votes: dict[str, tuple[str, float | None]] = {}
    for verdict in result.verdicts:
        if verdict.critic_id not in run.critics:
            run.critics[verdict.critic_id] = (
                verdict.vendor,
                verdict.model,
                verdict.prompt_sha256,
            )
        votes[verdict.critic_id] = (
            verdict.kind,
            verdict.score if verdict.error is None else None,
        )
    run.voting.setdefault(result.voting, None)
    if result.tier is not None:
        run.cascade = True
    criteria = None
    if result.criteria is not None:
        criteria = {cid: (c.consensus, c.score) for cid, c in result.criteria.items()}
        if run.scale is None:
            run.scale = dict(result.rubric.scale if result.rubric else DEFAULT_SCALE)
    key = None
    if text_keys and result.item is not None:
        key = _item_key(result.item)
    return JudgedItem(result.consensus, result.score, votes, criteria, key)


def _rank_meta(meta: Any) -> bool:
    rank = meta.get("rank") if isinstance(meta, Mapping) else None
    return isinstance(rank, Mapping) and "a" in rank and "b" in rank


def _from_ranking(ranking: Ranking, name: str, *, text_keys: bool = False) -> RunTable:
    from ..results import BatchResult

    run = _from_batch(BatchResult.from_results(ranking.results), name, text_keys=text_keys)
    run.ranking = list(ranking.results)
    run.has_manifest = False
    return run


_READ_BUFFER = 1 << 20


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, line)`` of every non-blank line of ``path``."""
    try:
        # A 1 MiB buffer: results lines of a few KB each are read several times faster
        # than through the default 8 KiB one.
        handle = open(path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such results file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    with handle:
        offset = 0
        for number, line in enumerate(handle, start=1):
            if not line.isspace():
                yield number, offset, line
            offset += len(line)


def _parse(
    path: Path,
    number: int,
    line: bytes,
    lean: Callable[[bytes], Any],
    run: RunTable,
    *,
    text_keys: bool,
) -> tuple[Any, JudgedItem]:
    """One line's record and row. The hot path: pydantic's ``lean`` parse of the keys a
    comparison reads, its row made with no check of its own (:func:`_judged_typed`); a line
    naming a critic ``run`` has not seen yet is parsed again with each critic's vendor, model
    and prompt. A line the types do not fit (a hostile or hand-edited file) is read with
    ``json.loads`` and every key it reads checked (:func:`_judged`).

    Raises:
        ConfigError: the line is not JSON, or not a JSON object.
    """
    try:
        record = lean(line)
        row = _judged_typed(record, run, text_keys=text_keys)
        if row is None:
            record = _adapter("named").validate_json(line)
            row = _judged_typed(record, run, text_keys=text_keys, named=True)
        if row is not None:
            return record, row
    except ValidationError:
        pass
    try:
        record = json.loads(line)
    except ValueError:
        raise ConfigError(f"{path} line {number}: not JSON") from None
    if not isinstance(record, dict):
        raise _not_a_result(path, number)
    return record, _judged(record, run, text_keys=text_keys)


def _not_a_result(path: Path, number: int) -> ConfigError:
    return ConfigError(
        f"{path} line {number}: not a result record (no query_id); compare reads the "
        "results files `cross-judge review --out` writes"
    )


def _judged_typed(
    record: _NamedResult, run: RunTable, *, text_keys: bool, named: bool = False
) -> JudgedItem | None:
    """:func:`_judged` of a record whose types pydantic checked: the same row, with no
    check of its own; ``None`` (and nothing noted in ``run``) when the record names a
    critic ``run`` has not seen and was not parsed with the critics' identities
    (``named``)."""
    critics = run.critics
    votes: dict[str, tuple[str, float | None]] = {}
    intern = sys.intern
    for verdict in record.get("verdicts", ()):
        name = intern(verdict.get("critic_id", ""))
        if name not in critics:
            if not named:
                return None
            critics[name] = (
                verdict.get("vendor"),
                verdict.get("model"),
                verdict.get("prompt_sha256"),
            )
        votes[name] = (
            intern(verdict.get("kind", "None")),
            verdict.get("score") if verdict.get("error") is None else None,
        )
    voting = record.get("voting", "None")
    if voting not in run.voting:
        run.voting[voting] = None
    if record.get("tier") is not None:
        run.cascade = True
    criteria = None
    given = record.get("criteria")
    if given is not None:
        criteria = {
            cid: (intern(c.get("consensus", "None")), c.get("score")) for cid, c in given.items()
        }
        if run.scale is None:
            rubric = record.get("rubric")
            scale = rubric.get("scale") if rubric is not None else None
            run.scale = dict(scale or DEFAULT_SCALE)
    return JudgedItem(
        intern(record.get("consensus", "None")),
        record.get("score"),
        votes,
        criteria,
        _text_key(record.get("item")) if text_keys else None,
    )


def _from_file(path: Path, *, text_keys: bool) -> RunTable:
    """A results file read line by line into a lean table (or a ranking's JSON file)."""
    from ..stats import manifest_runs

    run = RunTable(name=str(path), manifest_runs=manifest_runs(path))
    run.has_manifest = bool(run.manifest_runs)
    offsets: dict[str, int] = {}
    ranked = False
    lean = _adapter("with_item" if text_keys else "lean").validate_json
    for number, offset, line in _lines(path):
        if number == 1 and _is_ranking(line):
            return _ranking_file(path)
        record, row = _parse(path, number, line, lean, run, text_keys=text_keys)
        item_id = record.get("query_id")
        if not isinstance(item_id, str):
            raise _not_a_result(path, number)
        run.add(item_id, row, "line {} repeats it", number)
        offsets[item_id] = offset
        meta = record.get("meta")
        if meta and not ranked and "rank" in meta:
            ranked = _rank_meta(meta)
    if ranked:
        from ..results import read_results

        run.ranking = list(read_results(path))

    def texts_of(item_ids: Sequence[str]) -> dict[str, str | None]:
        """The texts of ``item_ids``, read in file order in one pass."""
        texts: dict[str, str | None] = dict.fromkeys(item_ids)
        wanted = sorted((offsets[i], i) for i in item_ids if i in offsets)
        with open(path, "rb") as handle:
            for offset, item_id in wanted:
                handle.seek(offset)
                try:
                    item = _adapter("item").validate_json(handle.readline()).get("item")
                except ValidationError:
                    item = None
                texts[item_id] = _item_text(item)
        return texts

    run.texts_of = texts_of
    return run


def _is_ranking(first_line: bytes) -> bool:
    """Whether a file's first line opens a ranking's JSON document (a results file's is
    one result record): a ranking is written indented, or as one object with ``order``
    and ``ratings``."""
    stripped = first_line.strip()
    if stripped == b"{":
        return True
    try:
        document = json.loads(stripped)
    except ValueError:
        return False
    return isinstance(document, dict) and {"order", "ratings"} <= document.keys()


def _ranking_file(path: Path) -> RunTable:
    from ..ranking import Ranking

    try:
        ranking = Ranking.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise ConfigError(
            f"{path}: neither a results file (one JSON result a line) nor a ranking's JSON "
            f"file ({str(exc).splitlines()[0]})"
        ) from None
    return _from_ranking(ranking, str(path))


def read_run(source: Any, name: str, *, text_keys: bool = False) -> RunTable:
    """One run from any source; ``text_keys`` keeps a key of each item's text (what the
    A/A check compares)."""
    with collection_paused():
        return _read_run(source, name, text_keys=text_keys)


def _is_ranking_object(source: object) -> bool:
    """Whether ``source`` is a :class:`~cross_judge.ranking.Ranking`, without importing the
    ranking package (and the batch engine under it) to ask: a Ranking exists only once
    that package is imported."""
    ranking = sys.modules.get(__name__.rsplit(".", 2)[0] + ".ranking")
    return ranking is not None and isinstance(source, ranking.Ranking)


def _read_run(source: Any, name: str, *, text_keys: bool) -> RunTable:
    from ..results import BatchResult

    if isinstance(source, BatchResult):
        return _from_batch(source, name, text_keys=text_keys)
    if _is_ranking_object(source):
        return _from_ranking(source, name, text_keys=text_keys)
    if isinstance(source, (str, os.PathLike)):
        return _from_file(Path(source), text_keys=text_keys)
    raise TypeError(
        f"the {name} must be a BatchResult, a Ranking or a results file's path, "
        f"not {type(source).__name__}"
    )
