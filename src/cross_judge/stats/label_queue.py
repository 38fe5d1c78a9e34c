"""Which items people should label next: :func:`label_queue` draws a :class:`LabelQueue`
from a batch's stored results, and records each drawn item's inclusion probability so that
an estimate from the labels can undo the selection (:mod:`cross_judge.stats.estimates`).

Strategies, each drawing exactly ``n`` items without replacement:

* ``"uniform"``: a simple random sample; every item's probability is ``n / N``.
* ``"stratified"``: strata by the panel's consensus label (items without a decided
  consensus form one stratum of their own), ``n`` split in proportion to their sizes
  (largest remainders; every stratum gets at least one item when ``n`` allows), a simple
  random sample in each; an item's probability is ``n_h / N_h``.
* ``"uncertain"``: probability proportional to ``floor + u``, where ``u`` is how unsure the
  panel was of the item: ``1 - agreement_pct`` (0 when every valid vote agreed), 1 when no
  vote decided it (no valid vote, no quorum).
* ``"disputed"``: probability proportional to 1 for an item whose valid votes disagree or
  that no vote decided, ``floor`` for the others.

``floor`` (default 0.3) keeps every item's probability above zero: an estimate can only be
unbiased if every item could have been labelled. It is also bounded
(:data:`MIN_FLOOR`, :data:`MAX_FLOOR`): the items a weighted queue favours least are
labelled rarely and each such label weighs most, so below a floor of 0.1 (above 10 for
``"disputed"``, which then favours the items the panel agreed on) the largest weight is
more than about ten times the smallest, and the few labels of the least favoured kind
often miss the jury's rare mistakes there; with a label or none of that kind, no
interval from the labels can hold its level. Between the bounds the 95% interval of
:mod:`cross_judge.stats.estimates` covered the truth in at least 93% of the simulated
draws of ``bench/bench_estimates.py`` for every strategy and floor it measures. The two
weighted strategies draw by systematic sampling over a random order with probabilities
proportional to size (capped at 1: such an item is always drawn), which gives each item
exactly its probability.

Calls no model and reads only the stored results.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from .._extensions import provide, provider
from ..errors import ConfigError
from ..verdict import EnsembleVerdict

if TYPE_CHECKING:
    from ..results import BatchResult

__all__ = [
    "MAX_FLOOR",
    "MIN_FLOOR",
    "QUEUE_STRATEGIES",
    "Candidate",
    "Judged",
    "LabelQueue",
    "QueueStrategy",
    "check_floor",
    "inclusion_probabilities",
    "label_queue",
    "uncertainty",
]

QueueStrategy = Literal["uncertain", "disputed", "uniform", "stratified"]
"""How :func:`label_queue` chooses items (see the module docstring)."""

QUEUE_STRATEGIES: tuple[str, ...] = get_args(QueueStrategy)

MIN_FLOOR: dict[str, float] = {"uncertain": 0.1, "disputed": 0.1}
"""The smallest ``floor`` each weighted strategy accepts (see the module docstring)."""

MAX_FLOOR: dict[str, float] = {"disputed": 10.0}
"""The largest ``floor`` a strategy accepts, where one is bounded: a ``"disputed"`` floor
above 10 weighs the items the panel agreed on over ten times the disputed ones."""

_NO_CONSENSUS = "\x00no consensus"  # the stratum of undecided items (never a label)


class Judged(Protocol):
    """What a draw reads of an item: an :class:`~cross_judge.verdict.EnsembleVerdict` or
    its :class:`Candidate`."""

    @property
    def query_id(self) -> str: ...
    @property
    def consensus(self) -> str: ...
    @property
    def fallback(self) -> bool: ...
    @property
    def n_valid(self) -> int: ...
    @property
    def agreement_pct(self) -> float: ...
    @property
    def disagreement(self) -> bool: ...


class Candidate(NamedTuple):
    """The few fields of a result that :func:`label_queue` reads, so that a queue over a
    large results file holds about 200 bytes an item instead of every verdict and its
    reasoning (``cross-judge label-queue`` reads the file into these, one line at a time).
    """

    query_id: str
    consensus: str
    fallback: bool
    n_valid: int
    agreement_pct: float
    disagreement: bool

    @classmethod
    def of(cls, result: Judged) -> Candidate:
        """The candidate of ``result`` (a candidate is returned as it is)."""
        if isinstance(result, Candidate):
            return result
        return cls(
            result.query_id,
            result.consensus,
            result.fallback,
            result.n_valid,
            result.agreement_pct,
            result.disagreement,
        )


class LabelQueue(BaseModel):
    """Items chosen for people to label, and the probability each had of being chosen.

    Attributes:
        items: the ids to label, in the order to show them (a random order).
        probabilities: each queued item's inclusion probability, in (0, 1].
        strategy: how they were chosen.
        seed: the seed of the draw (``None``: an unseeded draw).
        population: how many items the queue was drawn from.
        floor: the weight floor of the weighted strategies.
    """

    model_config = ConfigDict(frozen=True)

    items: list[str]
    probabilities: dict[str, float]
    strategy: QueueStrategy
    seed: int | None = None
    population: int = Field(ge=0)
    floor: float = 0.3

    def __len__(self) -> int:
        return len(self.items)

    def to_jsonl(self, path: str | os.PathLike[str] | None = None) -> str:
        """The queue as JSON lines, one per item in order: ``{"id", "probability",
        "strategy", "population", "seed", "floor"}``; written to ``path`` when given (the
        text is returned either way). :meth:`read` reads it back."""
        lines = [
            json.dumps(
                {
                    "id": item,
                    "probability": self.probabilities[item],
                    "strategy": self.strategy,
                    "population": self.population,
                    "seed": self.seed,
                    "floor": self.floor,
                },
                ensure_ascii=False,
            )
            for item in self.items
        ]
        text = "".join(line + "\n" for line in lines)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> LabelQueue:
        """A queue written by :meth:`to_jsonl`.

        Raises:
            ConfigError: the file cannot be read, or a line is not a queue line (its number
                given).
        """
        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the label queue {source}: {exc}") from None
        items: list[str] = []
        probabilities: dict[str, float] = {}
        first: dict[str, Any] | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                item, probability = str(row["id"]), float(row["probability"])
            except (ValueError, KeyError, TypeError):
                raise ConfigError(
                    f"{source} line {number}: a label queue line is "
                    '{"id": ..., "probability": ..., "strategy": ..., "population": ...}'
                ) from None
            if not 0.0 < probability <= 1.0:
                raise ConfigError(
                    f"{source} line {number}: probability must be in (0, 1], got {probability}"
                )
            first = first or row
            items.append(item)
            probabilities[item] = probability
        if first is None:
            raise ConfigError(f"{source} holds no queued item")
        return cls(
            items=items,
            probabilities=probabilities,
            strategy=first.get("strategy", "uniform"),
            seed=first.get("seed"),
            population=int(first.get("population", len(items))),
            floor=float(first.get("floor", 0.3)),
        )

    def to_html(
        self,
        results: BatchResult | Sequence[EnsembleVerdict],
        path: str | os.PathLike[str] | None = None,
        *,
        show_jury: bool = False,
    ) -> str:
        """A self-contained offline page for labelling the queued items of ``results``
        (see :mod:`cross_judge.report._label_page`); written to ``path`` when given. The
        jury's answers are hidden until asked for, item by item; ``show_jury=True`` shows
        them on every item (each exported label records whether they were shown)."""
        html: str = provider("label_page")(self, results, path, show_jury=show_jury)
        return html


def uncertainty(result: Judged) -> float:
    """How unsure the panel was of an item, in [0, 1]: ``1 - agreement_pct``, or 1 when no
    vote decided it (``fallback``, or no valid vote)."""
    if result.fallback or result.n_valid == 0:
        return 1.0
    return min(1.0, max(0.0, 1.0 - result.agreement_pct))


def _disputed(result: Judged) -> bool:
    return result.fallback or result.n_valid == 0 or result.disagreement


def inclusion_probabilities(weights: Sequence[float], n: int) -> list[float]:
    """Probabilities proportional to ``weights`` (all > 0) summing to ``n``, each capped at
    1 (the excess spread over the others in proportion, until none exceeds 1).

    Raises:
        ConfigError: ``n`` outside ``[0, len(weights)]``, or a weight that is not > 0.
    """
    count = len(weights)
    if not 0 <= n <= count:
        raise ConfigError(f"n must be from 0 to the number of items ({count}), got {n}")
    if any(not (math.isfinite(w) and w > 0) for w in weights):
        raise ConfigError("every item's weight must be a finite number > 0")
    probabilities = [0.0] * count
    free = list(range(count))
    left = float(n)
    while free and left > 0:
        total = math.fsum(weights[i] for i in free)
        scale = left / total
        capped = [i for i in free if weights[i] * scale >= 1.0]
        if not capped:
            for i in free:
                probabilities[i] = weights[i] * scale
            break
        for i in capped:
            probabilities[i] = 1.0
        left -= len(capped)
        free = [i for i in free if i not in set(capped)]
    return probabilities


def _systematic(probabilities: Sequence[float], n: int, rng: random.Random) -> list[int]:
    """Exactly ``n`` indices, index ``i`` with probability ``probabilities[i]`` (they sum to
    ``n``): systematic sampling over a random order."""
    order = list(range(len(probabilities)))
    rng.shuffle(order)
    start = rng.random()
    points = iter(start + k for k in range(n))
    point = next(points, None)
    chosen: list[int] = []
    cumulative = 0.0
    for index in order:
        cumulative += probabilities[index]
        while point is not None and point < cumulative:
            chosen.append(index)
            point = next(points, None)
    # Rounding can leave the last point a hair beyond the total: it belongs to the last
    # item with a probability of its own (never one already chosen twice).
    for index in reversed(order):
        if point is None:
            break
        if index not in chosen and probabilities[index] > 0:
            chosen.append(index)
            point = next(points, None)
    return chosen


def _stratified(
    results: Sequence[Judged], n: int, rng: random.Random
) -> tuple[list[int], list[float]]:
    """Indices drawn and every item's probability, proportional allocation by consensus."""
    strata: dict[str, list[int]] = {}
    for index, result in enumerate(results):
        key = _NO_CONSENSUS if result.fallback else result.consensus
        strata.setdefault(key, []).append(index)
    total = len(results)
    shares = {key: n * len(members) / total for key, members in strata.items()}
    sizes = {key: int(share) for key, share in shares.items()}
    if n >= len(strata):  # every stratum gets one item before remainders are shared
        for key in strata:
            sizes[key] = max(sizes[key], 1)
    remaining = n - sum(sizes.values())
    by_remainder = sorted(strata, key=lambda key: (-(shares[key] - int(shares[key])), key))
    for key in by_remainder:
        if remaining <= 0:
            break
        if sizes[key] < len(strata[key]):
            sizes[key] += 1
            remaining -= 1
    while remaining < 0:  # the minimum of one gave too many: take from the largest
        key = max(sizes, key=lambda k: (sizes[k], k))
        sizes[key] -= 1
        remaining += 1
    probabilities = [0.0] * total
    chosen: list[int] = []
    for key, members in strata.items():
        take = sizes[key]
        for index in members:
            probabilities[index] = take / len(members)
        chosen.extend(rng.sample(members, take))
    return chosen, probabilities


def check_floor(strategy: str, floor: float) -> None:
    """Refuse a ``floor`` that is not a number > 0, or one outside the bounds of a
    weighted ``strategy`` (:data:`MIN_FLOOR`, :data:`MAX_FLOOR`); ``"uniform"`` and
    ``"stratified"`` ignore the floor.

    Raises:
        ConfigError: as above, saying the floor to use.
    """
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not floor > 0:
        raise ConfigError(f"floor must be a number > 0, got {floor!r}")
    least = MIN_FLOOR.get(strategy)
    if least is not None and floor < least:
        raise ConfigError(
            f"floor must be at least {least} for strategy {strategy!r}, got {floor!r}: below "
            "it the items the queue favours least get so few labels, each weighing so much, "
            "that an estimate's interval from them covers the truth less often than it says "
            f"(bench/bench_estimates.py). Pass floor={least} or more, or use strategy='uniform'"
        )
    most = MAX_FLOOR.get(strategy)
    if most is not None and floor > most:
        raise ConfigError(
            f"floor must be at most {most} for strategy {strategy!r}, got {floor!r}: above it "
            "the disputed items are the ones favoured least, with the same loss of coverage "
            f"as a floor below {MIN_FLOOR[strategy]}. Pass floor={most} or less (1 weighs every "
            "item alike)"
        )


def label_queue(
    results: BatchResult | Iterable[EnsembleVerdict] | Iterable[Candidate],
    n: int,
    *,
    strategy: QueueStrategy = "uncertain",
    seed: int | None = None,
    floor: float = 0.3,
    exclude: Iterable[str] = (),
) -> LabelQueue:
    """Draw ``n`` items of ``results`` for people to label (see the module docstring).

    Args:
        results: stored results (a :class:`~cross_judge.batch.BatchResult`, results, or
            their :class:`Candidate` s: the same draw, in a fraction of the memory).
        n: how many items to queue: from 0 to the number of items (not excluded).
        strategy: ``"uncertain"`` (default), ``"disputed"``, ``"uniform"`` or
            ``"stratified"``.
        seed: for a reproducible draw.
        floor: for ``"uncertain"`` and ``"disputed"``, the weight of an item the panel was
            sure of, next to 1 for one it was most unsure of: at least 0.1
            (:data:`MIN_FLOOR`), and at most 10 for ``"disputed"`` (:data:`MAX_FLOOR`).
        exclude: ids never to queue (already labelled); the queue's population is the rest,
            and an estimate from it covers those items only.

    Raises:
        ConfigError: an unknown strategy, ``n`` out of range, ``floor`` not > 0 or outside
            the strategy's bounds (the message gives them), repeated item ids.
    """
    if strategy not in QUEUE_STRATEGIES:
        raise ConfigError(f"strategy must be one of {list(QUEUE_STRATEGIES)}, got {strategy!r}")
    check_floor(strategy, floor)
    skip = set(exclude)
    stored = cast("Iterable[Judged]", getattr(results, "verdicts", results))
    # By id: the draw never reads the order a results file was written in.
    pool = sorted(
        (Candidate.of(r) for r in stored if r.query_id not in skip), key=lambda c: c.query_id
    )
    ids = [r.query_id for r in pool]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ConfigError(f"item ids must be unique to queue them; repeated: {repeated}")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(pool):
        raise ConfigError(
            f"n must be an integer from 0 to the number of items ({len(pool)}), got {n!r}"
        )
    rng = random.Random(seed)
    if strategy == "uniform":
        chosen = rng.sample(range(len(pool)), n)
        probabilities = [n / len(pool) if pool else 0.0] * len(pool)
    elif strategy == "stratified":
        chosen, probabilities = _stratified(pool, n, rng) if pool else ([], [])
    else:
        if strategy == "uncertain":
            weights = [floor + uncertainty(r) for r in pool]
        else:
            weights = [1.0 if _disputed(r) else float(floor) for r in pool]
        probabilities = inclusion_probabilities(weights, n)
        chosen = _systematic(probabilities, n, rng)
    rng.shuffle(chosen)
    return LabelQueue(
        items=[ids[i] for i in chosen],
        probabilities={ids[i]: probabilities[i] for i in chosen},
        strategy=strategy,
        seed=seed,
        population=len(pool),
        floor=float(floor),
    )


@provide("label_queue")
def _batch_label_queue(batch: BatchResult, n: int, **options: Any) -> LabelQueue:
    """``BatchResult.label_queue``."""
    return label_queue(batch, n, **options)
