"""Aligning judges with people, the decisions that need no call: which labelled items are
held out, which become each critic's examples, and how far the held-out verdicts moved.

- :func:`split_gold`: the labelled items of a batch split into a training part (where
  examples come from) and a held-out part (where before and after are measured), stratified
  by label and seeded, so the figure a prompt is judged by is never on its own examples.
- :func:`choose_examples`: up to ``k`` training items per critic, the ones that critic got
  wrong first, then those the jury got wrong, then those it disputed; disjoint across
  critics unless ``shared`` (every critic the same ``k``), since critics shown the same
  examples err together and the jury's effective votes fall.
- :func:`measure_alignment`: per critic accuracy and Cohen's kappa with gold, and for the
  jury the consensus's accuracy and kappa, the Dawid-Skene accuracy and the effective votes,
  before and after, on the same held-out items, each with a percentile bootstrap interval
  over those items and the gain's interval from the same resamples (paired).

Plain data in, plain data out; the calls that judge the held-out items again are made by
:mod:`cross_judge.alignment`.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigError, StatisticsWarning
from ._agreement import cohen_kappa
from ._gold import effective_votes
from ._quantile import linear_quantile

if TYPE_CHECKING:
    from ..results import BatchResult

__all__ = [
    "MIN_HELD_OUT",
    "AlignmentFigures",
    "ExampleChoice",
    "Figure",
    "GoldSplit",
    "Prefer",
    "choose_examples",
    "measure_alignment",
    "split_gold",
]

MIN_HELD_OUT = 10
"""The fewest labelled items a held-out split may have: fewer measure nothing."""

_WRONG, _JURY_WRONG, _DISPUTED = 4, 2, 1

Prefer = Literal["errors", "random"]
"""Which training items become examples first: those got wrong (``"errors"``), or any
(``"random"``, the baseline)."""


@dataclass(frozen=True)
class GoldSplit:
    """Labelled item ids, in batch order: ``train`` (examples come from these) and
    ``held_out`` (before and after are measured on these)."""

    train: tuple[str, ...]
    held_out: tuple[str, ...]


def split_gold(
    gold: Mapping[str, str], item_ids: Sequence[str], *, holdout: float, seed: int
) -> GoldSplit:
    """The labelled items among ``item_ids`` split: of each gold label's items, sorted by id
    and shuffled by ``seed``, ``round(holdout x n)`` are held out (at least one when the
    label has two or more items), the rest train. The split depends on the ids, never on
    their order, so a results file written in completion order splits alike on every run.

    Raises:
        ConfigError: ``holdout`` not strictly between 0 and 1; fewer than
            :data:`MIN_HELD_OUT` held-out items or no training item (the message says how
            many items are labelled and what would do).
    """
    if isinstance(holdout, bool) or not 0.0 < holdout < 1.0:
        raise ConfigError(f"holdout must be a share strictly between 0 and 1, got {holdout!r}")
    labelled = [i for i in dict.fromkeys(item_ids) if i in gold]
    by_label: dict[str, list[str]] = {}
    for item_id in labelled:
        by_label.setdefault(gold[item_id], []).append(item_id)
    held: set[str] = set()
    for label in sorted(by_label):
        ids = sorted(by_label[label])
        random.Random(f"{seed}|split|{label}").shuffle(ids)
        n = round(holdout * len(ids))
        if len(ids) >= 2:
            n = min(max(n, 1), len(ids) - 1)
        held.update(ids[:n])
    train = tuple(i for i in labelled if i not in held)
    held_out = tuple(i for i in labelled if i in held)
    if len(held_out) < MIN_HELD_OUT or not train:
        needed = math.ceil(MIN_HELD_OUT / holdout)
        raise ConfigError(
            f"{len(labelled)} items of the batch are labelled, which at holdout={holdout} "
            f"holds out {len(held_out)} and trains on {len(train)}; measuring needs at least "
            f"{MIN_HELD_OUT} held out and one to learn from: label at least {needed} items "
            "of the batch (or raise holdout)"
        )
    return GoldSplit(train=train, held_out=held_out)


@dataclass(frozen=True)
class ExampleChoice:
    """The examples chosen for one critic: item ids, best first, and why each was
    chosen (``"critic wrong"``, ``"jury wrong"``, ``"disputed"`` or ``"labelled"``)."""

    critic: str
    ids: tuple[str, ...]
    reasons: tuple[str, ...]


def _priorities(
    batch: BatchResult, gold: Mapping[str, str], train: Sequence[str], critics: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Per critic, each training item's priority: wrong by the critic, wrong by the jury,
    disputed (weights 4, 2, 1, added)."""
    results = {r.query_id: r for r in batch.verdicts}
    out: dict[str, dict[str, int]] = {name: {} for name in critics}
    for item_id in train:
        result = results[item_id]
        truth = gold[item_id]
        jury = (_JURY_WRONG if result.consensus != truth else 0) + (
            _DISPUTED if result.disagreement else 0
        )
        said = {v.critic_id: v.kind for v in result.verdicts if v.error is None}
        for name in critics:
            wrong = name in said and said[name] != truth
            out[name][item_id] = jury + (_WRONG if wrong else 0)
    return out


def _reason(priority: int) -> str:
    if priority >= _WRONG:
        return "critic wrong"
    if priority >= _JURY_WRONG:
        return "jury wrong"
    return "disputed" if priority else "labelled"


def choose_examples(
    batch: BatchResult,
    gold: Mapping[str, str],
    train: Sequence[str],
    critics: Sequence[str],
    *,
    k: int,
    shared: bool = False,
    seed: int = 0,
    prefer: Prefer = "errors",
) -> dict[str, ExampleChoice]:
    """Up to ``k`` examples per critic from the ``train`` items, highest priority first:
    items the critic got wrong, then items the jury's consensus got wrong, then disputed
    ones, then any; ties in an order shuffled by ``seed`` and the critic's name.
    ``prefer="random"`` ignores the priorities (every item equal, the seeded order alone):
    the naive choice an alignment is measured against.

    Disjoint (the default): the critics take turns, each round starting one critic later,
    each taking its best item not yet taken, so no two critics share an example; with few
    training items a critic may get fewer than ``k``. ``shared=True``: every critic gets
    the same ``k``, the items whose priorities summed over the critics are highest.

    Raises:
        ConfigError: ``k`` not a whole number >= 1; a critic not in the batch; an unknown
            ``prefer``.
    """
    if prefer not in ("errors", "random"):
        raise ConfigError(f"prefer must be 'errors' or 'random', got {prefer!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k (examples per critic) must be a whole number >= 1, got {k!r}")
    unknown = [name for name in critics if name not in batch.critics]
    if unknown:
        raise ConfigError(f"critics {unknown} are not critics of the batch {batch.critics}")
    priority = _priorities(batch, gold, train, critics)
    # The order examples are taken in; the reasons reported are the priorities either way.
    rank_by = priority if prefer == "errors" else {c: dict.fromkeys(train, 0) for c in critics}

    def ranked(score: Callable[[str], int], salt: str) -> list[str]:
        order = sorted(train)  # the order the batch was written in never counts
        random.Random(f"{seed}|examples|{salt}").shuffle(order)
        return sorted(order, key=lambda i: -score(i))  # stable: ties keep the shuffle

    if shared:
        ids = ranked(lambda i: sum(rank_by[c][i] for c in critics), "shared")[:k]
        return {
            c: ExampleChoice(c, tuple(ids), tuple(_reason(priority[c][i]) for i in ids))
            for c in critics
        }
    queues = {c: ranked(rank_by[c].__getitem__, c) for c in critics}
    taken: set[str] = set()
    chosen: dict[str, list[str]] = {c: [] for c in critics}
    for round_ in range(k):
        for offset in range(len(critics)):
            critic = critics[(round_ + offset) % len(critics)]
            queue = queues[critic]
            while queue and queue[0] in taken:
                queue.pop(0)
            if queue:
                item_id = queue.pop(0)
                taken.add(item_id)
                chosen[critic].append(item_id)
    return {
        c: ExampleChoice(c, tuple(ids), tuple(_reason(priority[c][i]) for i in ids))
        for c, ids in chosen.items()
    }


@dataclass(frozen=True)
class Figure:
    """One figure before and after, on the same held-out items: the values (``None``:
    undefined, e.g. a kappa with one label), their bootstrap intervals and the gain's
    (``after - before`` on each resample), ``None`` where undefined."""

    before: float | None
    after: float | None
    before_ci: tuple[float, float] | None = None
    after_ci: tuple[float, float] | None = None
    gain_ci: tuple[float, float] | None = None

    @property
    def gain(self) -> float | None:
        """``after - before``; ``None`` when either is undefined."""
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def significant(self) -> bool:
        """Whether the gain's interval lies wholly above 0."""
        return self.gain_ci is not None and self.gain_ci[0] > 0.0


@dataclass(frozen=True)
class AlignmentFigures:
    """Before and after on the held-out items: ``critics[name]`` holds ``accuracy`` and
    ``kappa`` (Cohen's, with gold); ``jury`` holds ``consensus_accuracy``,
    ``consensus_kappa``, ``dawid_skene_accuracy`` and ``effective_votes`` (from the
    critics' error correlation against gold, :func:`~cross_judge.stats.effective_votes_matrix`).
    ``n_items`` held-out items, ``resamples`` bootstrap draws at ``ci``."""

    n_items: int
    critics: dict[str, dict[str, Figure]]
    jury: dict[str, Figure]
    resamples: int
    ci: float
    notes: tuple[str, ...] = field(default=())


@dataclass
class _Side:
    """One run's held-out answers, by position in the held-out items."""

    labels: dict[str, list[str | None]]
    consensus: list[str | None]
    dawid_skene: list[str | None] | None


def _side(batch: BatchResult, held_out: Sequence[str], critics: Sequence[str]) -> _Side:
    results = {r.query_id: r for r in batch.verdicts}
    missing = [i for i in held_out if i not in results]
    if missing:
        raise ConfigError(f"held-out items {missing[:5]} have no result in the run measured")
    labels: dict[str, list[str | None]] = {c: [] for c in critics}
    consensus: list[str | None] = []
    for item_id in held_out:
        result = results[item_id]
        said = {v.critic_id: v.kind for v in result.verdicts if v.error is None}
        for c in critics:
            labels[c].append(said.get(c))
        consensus.append(None if result.fallback else result.consensus)
    return _Side(labels, consensus, _dawid_skene_labels(batch, held_out))


def _dawid_skene_labels(batch: BatchResult, held_out: Sequence[str]) -> list[str | None] | None:
    """Each held-out item's Dawid-Skene label, the model fit on the held-out results only
    (as both runs are measured on them); ``None`` when it cannot be fit."""
    from ..results import BatchResult as Batch
    from ._reliability import dawid_skene

    wanted = set(held_out)
    subset = Batch.from_results(r for r in batch.verdicts if r.query_id in wanted)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatisticsWarning)
            fit = dawid_skene(subset)
    except ConfigError:
        return None
    return [fit.labels.get(i) for i in held_out]


def _accuracy(
    labels: Sequence[str | None], truth: Sequence[str], rows: Sequence[int]
) -> float | None:
    judged = [labels[r] == truth[r] for r in rows if labels[r] is not None]
    return sum(judged) / len(judged) if judged else None


def _kappa(labels: Sequence[str | None], truth: Sequence[str], rows: Sequence[int]) -> float | None:
    return cohen_kappa([labels[r] for r in rows], [truth[r] for r in rows])


def _effective(side: _Side, truth: Sequence[str], rows: Sequence[int]) -> float | None:
    names = list(side.labels)
    matrix = [[side.labels[c][r] for c in names] for r in rows]
    return effective_votes(matrix, [truth[r] for r in rows]).effective


def _of_critic(
    figure: Callable[[Sequence[str | None], Sequence[str], Sequence[int]], float | None],
    critic: str,
    truth: Sequence[str],
) -> Callable[[_Side, Sequence[int]], float | None]:
    """``figure`` of one critic's labels on a side."""

    def measured(side: _Side, rows: Sequence[int]) -> float | None:
        return figure(side.labels[critic], truth, rows)

    return measured


def measure_alignment(
    gold: Mapping[str, str],
    held_out: Sequence[str],
    before: BatchResult,
    after: BatchResult,
    critics: Sequence[str],
    *,
    resamples: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> AlignmentFigures:
    """Before and after on the ``held_out`` items (see :class:`AlignmentFigures`), the
    ``critics`` named alike in both runs. Intervals are percentile bootstrap intervals
    over the held-out items, ``resamples`` draws seeded by ``seed``; each draw measures
    both runs on the same items, so a gain's interval is paired. The Dawid-Skene labels are
    fit once per run on its held-out results (the interval counts the items' sampling, not
    the fit's).

    Raises:
        ConfigError: ``resamples`` < 100, ``ci`` not in (0, 1), a held-out item without a
            result in either run, an item without a gold label.
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 100:
        raise ConfigError(f"resamples must be a whole number >= 100, got {resamples!r}")
    if not 0.0 < ci < 1.0:
        raise ConfigError(f"ci must be strictly between 0 and 1, got {ci!r}")
    unlabelled = [i for i in held_out if i not in gold]
    if unlabelled:
        raise ConfigError(f"held-out items {unlabelled[:5]} have no gold label")
    truth = [gold[i] for i in held_out]
    sides = (_side(before, held_out, critics), _side(after, held_out, critics))
    metrics: dict[tuple[str, str], Callable[[_Side, Sequence[int]], float | None]] = {}
    for c in critics:
        metrics[c, "accuracy"] = _of_critic(_accuracy, c, truth)
        metrics[c, "kappa"] = _of_critic(_kappa, c, truth)
    metrics["", "consensus_accuracy"] = lambda s, rows: _accuracy(s.consensus, truth, rows)
    metrics["", "consensus_kappa"] = lambda s, rows: _kappa(s.consensus, truth, rows)
    metrics["", "dawid_skene_accuracy"] = lambda s, rows: (
        None if s.dawid_skene is None else _accuracy(s.dawid_skene, truth, rows)
    )
    metrics["", "effective_votes"] = lambda s, rows: _effective(s, truth, rows)
    everything = range(len(held_out))
    point = {key: (f(sides[0], everything), f(sides[1], everything)) for key, f in metrics.items()}
    draws: dict[tuple[str, str], tuple[list[float], list[float], list[float]]] = {
        key: ([], [], []) for key in metrics
    }
    rng = random.Random(f"{seed}|measure")
    n = len(held_out)
    for _ in range(resamples):
        rows = [rng.randrange(n) for _ in range(n)]
        for key, f in metrics.items():
            b, a = f(sides[0], rows), f(sides[1], rows)
            kept = draws[key]
            if b is not None:
                kept[0].append(b)
            if a is not None:
                kept[1].append(a)
            if b is not None and a is not None:
                kept[2].append(a - b)
    figures = {
        key: Figure(
            before=point[key][0],
            after=point[key][1],
            before_ci=_interval(draws[key][0], ci, resamples),
            after_ci=_interval(draws[key][1], ci, resamples),
            gain_ci=_interval(draws[key][2], ci, resamples),
        )
        for key in metrics
    }
    notes = []
    if sides[0].dawid_skene is None or sides[1].dawid_skene is None:
        notes.append("Dawid-Skene could not be fit on the held-out results of a run")
    return AlignmentFigures(
        n_items=n,
        critics={c: {m: figures[c, m] for m in ("accuracy", "kappa")} for c in critics},
        jury={m: figures[k, m] for k, m in figures if k == ""},
        resamples=resamples,
        ci=ci,
        notes=tuple(notes),
    )


def _interval(values: list[float], ci: float, resamples: int) -> tuple[float, float] | None:
    """The percentile interval of ``values``; ``None`` when fewer than half the draws
    defined the figure (it is too often undefined to bound)."""
    if len(values) < resamples / 2:
        return None
    values.sort()
    tail = (1.0 - ci) / 2.0
    return linear_quantile(values, tail), linear_quantile(values, 1.0 - tail)
