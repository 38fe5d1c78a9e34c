"""The paired statistics of a comparison: a metric measured on two runs' paired items, as
:class:`~cross_judge.report.Difference` rows, and the items that flipped.

A metric reads each item (or each critic's vote on it) as a *key* (its consensus label, its
label with the gold label beside it, its score) and a key as a value (a yes or no, a score,
or ``None`` where it is undefined). The paired keys are counted once (``Counter`` over the
two runs' keys, in C), and the tests work from the counts: a yes/no metric needs only the
four cells of the paired table (exact McNemar, an Agresti-Min interval), a score the paired
differences (the Wilcoxon signed-rank test, a paired-bootstrap interval). Two 100,000-item
runs are measured, every label, critic and criterion included, in well under a second.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..stats import Difference, Flip
from ._run_table import JudgedItem, RunTable

__all__ = [
    "FLIP_TEXTS",
    "Metric",
    "Options",
    "compare_keys",
    "criterion_rows",
    "critic_rows",
    "flips",
    "label_rows",
    "metric_of",
    "paired_rows",
    "with_holm",
    "yes",
]

FLIP_TEXTS = 500
"""The flipped items each way whose texts a :class:`~cross_judge.report.RunDiff` keeps
(every flip keeps its id, its two results and the votes: a comparison of 100,000 items
with thousands of flips would otherwise hold every text twice)."""

_FAILED = frozenset({"ERROR", "PARSE_FAIL", "SKIPPED"})


@dataclass(frozen=True)
class Options:
    """The options every row of one comparison is measured with."""

    alpha: float
    confidence: float
    higher_is_better: bool
    resamples: int
    seed: int


Key = Hashable
Vote = tuple[str, float | None]


@dataclass(frozen=True)
class Metric:
    """A metric: ``item_keys`` reads each paired item of a run as a key (``ids`` and rows in
    the same order), ``vote_key`` a critic's vote (``None`` when it did not vote) with the
    item's gold label, and ``value`` a key as a yes/no (``binary``) or a score, ``None``
    where undefined."""

    name: str
    binary: bool
    item_keys: Callable[[Sequence[str], Sequence[JudgedItem]], list[Key]]
    vote_key: Callable[[Vote | None, str | None], Key]
    value: Callable[[Key], float | None]


def metric_of(kind: str, label: str | None, gold: Mapping[str, str] | None) -> Metric:
    """The metric ``kind`` (``label_share`` of ``label``, ``accuracy`` against ``gold``,
    ``score``)."""
    if kind == "label_share":

        def share_keys(_ids: Sequence[str], rows: Sequence[JudgedItem]) -> list[Key]:
            return [row.consensus for row in rows]

        def share_vote(vote: Vote | None, _truth: str | None) -> Key:
            return None if vote is None or vote[0] in _FAILED else vote[0]

        def share(key: Key) -> float | None:
            return None if key is None else float(key == label)

        return Metric(f"{label} share", True, share_keys, share_vote, share)
    if kind == "accuracy":
        truth = gold or {}

        def right_keys(ids: Sequence[str], rows: Sequence[JudgedItem]) -> list[Key]:
            return [(truth.get(i), row.consensus) for i, row in zip(ids, rows, strict=True)]

        def right_vote(vote: Vote | None, gold_label: str | None) -> Key:
            return (gold_label, None if vote is None or vote[0] in _FAILED else vote[0])

        def right(key: Key) -> float | None:
            pair: tuple[str | None, str | None] = key  # type: ignore[assignment]
            gold_label, given = pair
            return None if gold_label is None or given is None else float(given == gold_label)

        return Metric("accuracy", True, right_keys, right_vote, right)

    def score_keys(_ids: Sequence[str], rows: Sequence[JudgedItem]) -> list[Key]:
        return [row.score for row in rows]

    def score_vote(vote: Vote | None, _truth: str | None) -> Key:
        return None if vote is None else vote[1]

    def score(key: Key) -> float | None:
        return key  # type: ignore[return-value]

    return Metric("score", False, score_keys, score_vote, score)


def yes(key: Key) -> float | None:
    """A key that is itself a yes or no."""
    return float(bool(key))


def _empty(name: str, test: str, method: str) -> Difference:
    return Difference(
        name=name,
        n=0,
        baseline=None,
        candidate=None,
        difference=None,
        interval=None,
        p_value=None,
        test=test,
        interval_method=method,
    )


def _binary(name: str, cells: Mapping[tuple[bool, bool], int], options: Options) -> Difference:
    """A share from the paired table's cells ``{(baseline yes, candidate yes): items}``."""
    from ..stats import mcnemar_exact, mcnemar_mde, paired_proportion_interval

    n = sum(cells.values())
    if n == 0:
        return _empty(name, "exact McNemar", "Agresti-Min")
    up, down = cells.get((False, True), 0), cells.get((True, False), 0)
    both = cells.get((True, True), 0)
    better, worse = (up, down) if options.higher_is_better else (down, up)
    return Difference(
        name=name,
        n=n,
        baseline=(both + down) / n,
        candidate=(both + up) / n,
        difference=(up - down) / n,
        interval=paired_proportion_interval(up, down, n, options.confidence),
        p_value=mcnemar_exact(up, down),
        test="exact McNemar",
        interval_method="Agresti-Min",
        better=better,
        worse=worse,
        mde=mcnemar_mde((up + down) / n, n, alpha=options.alpha),
    )


def _scores(name: str, pairs: Mapping[tuple[float, float], int], options: Options) -> Difference:
    """A mean score from the paired scores ``{(baseline, candidate): items}``."""
    from ..stats import mean_difference_mde, paired_bootstrap_interval, wilcoxon_signed_rank

    method = f"paired bootstrap ({options.resamples})"
    n = sum(pairs.values())
    if n == 0:
        return _empty(name, "Wilcoxon signed-rank", method)
    differences: list[float] = []
    for (was, now), count in sorted(pairs.items()):  # not in the order the files were read
        differences.extend([now - was] * count)
    up = sum(count for (was, now), count in pairs.items() if now > was)
    down = sum(count for (was, now), count in pairs.items() if now < was)
    better, worse = (up, down) if options.higher_is_better else (down, up)
    sd = statistics.pstdev(differences) if n > 1 else 0.0
    return Difference(
        name=name,
        n=n,
        baseline=math.fsum(was * count for (was, _now), count in pairs.items()) / n,
        candidate=math.fsum(now * count for (_was, now), count in pairs.items()) / n,
        difference=math.fsum(differences) / n,
        interval=paired_bootstrap_interval(
            differences,
            confidence=options.confidence,
            resamples=options.resamples,
            seed=options.seed,
        ),
        p_value=wilcoxon_signed_rank(differences),
        test="Wilcoxon signed-rank",
        interval_method=method,
        better=better,
        worse=worse,
        mde=mean_difference_mde(sd, n, alpha=options.alpha),
    )


def compare_keys(
    name: str,
    before: Sequence[Key],
    after: Sequence[Key],
    value: Callable[[Key], float | None],
    binary: bool,
    options: Options,
) -> Difference:
    """One row from the paired keys of the two runs (same order): the pairs counted once,
    each distinct pair read as values; pairs undefined on either side left out."""
    cells: Counter[tuple[bool, bool]] = Counter()
    scores: Counter[tuple[float, float]] = Counter()
    for (was_key, now_key), count in Counter(zip(before, after, strict=True)).items():
        was, now = value(was_key), value(now_key)
        if was is None or now is None:
            continue
        if binary:
            cells[(bool(was), bool(now))] += count
        else:
            scores[(float(was), float(now))] += count
    return _binary(name, cells, options) if binary else _scores(name, scores, options)


def with_holm(rows: list[Difference]) -> list[Difference]:
    """``rows`` with Holm's adjusted p-values over those that have a p-value."""
    from ..stats import holm

    tested = [i for i, row in enumerate(rows) if row.p_value is not None]
    adjusted = holm([p for row in rows if (p := row.p_value) is not None])
    out = list(rows)
    for i, p in zip(tested, adjusted, strict=True):
        out[i] = rows[i].model_copy(update={"p_adjusted": p})
    return out


def paired_rows(paired: Sequence[str], run: RunTable) -> list[JudgedItem]:
    """``run``'s rows of the paired ids, in their order."""
    rows = run.rows
    return [rows[item_id] for item_id in paired]


def critic_rows(
    paired: Sequence[str],
    rows: tuple[Sequence[JudgedItem], Sequence[JudgedItem]],
    critics: Sequence[str],
    metric: Metric,
    gold: Mapping[str, str] | None,
    options: Options,
) -> list[Difference]:
    """Each of ``critics`` (both runs have them) on the metric from its own votes, Holm
    over the critics."""
    truth = [gold.get(i) for i in paired] if gold is not None else [None] * len(paired)
    out = []
    for name in critics:
        keys = [
            [metric.vote_key(row.votes.get(name), t) for row, t in zip(side, truth, strict=True)]
            for side in rows
        ]
        out.append(compare_keys(name, keys[0], keys[1], metric.value, metric.binary, options))
    return with_holm(out)


def label_rows(
    consensus: tuple[Sequence[Key], Sequence[Key]], options: Options
) -> list[Difference]:
    """Every consensus label's share, Holm over the labels."""
    pairs = Counter(zip(consensus[0], consensus[1], strict=True))
    labels = dict.fromkeys(label for pair in pairs for label in pair)
    out = []
    for label in labels:
        cells: Counter[tuple[bool, bool]] = Counter()
        for (was, now), count in pairs.items():
            cells[(was == label, now == label)] += count
        out.append(_binary(f"{label} share", cells, options))
    return with_holm(out)


def criterion_rows(
    rows: tuple[Sequence[JudgedItem], Sequence[JudgedItem]],
    scale: Mapping[str, float],
    options: Options,
) -> list[Difference]:
    """Each rubric criterion the candidate judged: the share of its top label on a
    two-label scale, else its mean score; Holm over the criteria."""
    ids: dict[str, None] = {}
    for row in rows[1]:
        if row.criteria:
            ids.update(dict.fromkeys(row.criteria))
    binary = len(scale) == 2
    top = max(scale, key=scale.__getitem__)

    def value(key: Key) -> float | None:
        if key is None:
            return None
        voted: tuple[str, float | None] = key  # type: ignore[assignment]
        label, score = voted
        return float(label == top) if binary else score

    out = []
    for cid in ids:
        keys = [[(row.criteria or {}).get(cid) for row in side] for side in rows]
        name = f"{cid} ({top} share)" if binary else cid
        out.append(compare_keys(name, keys[0], keys[1], value, binary, options))
    return with_holm(out)


def flips(
    paired: Sequence[str],
    runs: tuple[RunTable, RunTable],
    keys: tuple[Sequence[Key], Sequence[Key]],
    metric: Metric,
    options: Options,
) -> list[Flip]:
    """The items whose value changed, worse first (a score's largest change first), each
    with both runs' results and votes; the texts of the first :data:`FLIP_TEXTS` each way."""
    moved: list[tuple[int, float, str, float, float]] = []
    value = metric.value
    for position, (item_id, was_key, now_key) in enumerate(zip(paired, *keys, strict=True)):
        if was_key == now_key:
            continue
        was, now = value(was_key), value(now_key)
        if was is None or now is None or was == now:
            continue
        moved.append((position, now - was, item_id, was, now))
    sign = -1 if options.higher_is_better else 1  # a change of this sign is worse
    if metric.binary:
        moved.sort(key=lambda m: (m[1] * sign < 0, m[0]))
    else:
        moved.sort(key=lambda m: (m[1] * sign < 0, -abs(m[1]), m[0]))
    directions: list[Literal["better", "worse"]] = [
        "worse" if m[1] * sign > 0 else "better" for m in moved
    ]
    kept: list[str] = []
    counts = {"worse": 0, "better": 0}
    for flip, direction in zip(moved, directions, strict=True):
        if counts[direction] < FLIP_TEXTS:
            counts[direction] += 1
            kept.append(flip[2])
    base, cand = runs
    base_texts, cand_texts = base.texts_of(kept), cand.texts_of(kept)
    out = []
    for (_position, _change, item_id, was, now), direction in zip(moved, directions, strict=True):
        before, after = base.rows[item_id], cand.rows[item_id]
        out.append(
            Flip(
                id=item_id,
                direction=direction,
                baseline=before.consensus if metric.binary else f"{was:.3g}",
                candidate=after.consensus if metric.binary else f"{now:.3g}",
                baseline_votes={name: vote[0] for name, vote in before.votes.items()},
                candidate_votes={name: vote[0] for name, vote in after.votes.items()},
                baseline_text=base_texts.get(item_id),
                candidate_text=cand_texts.get(item_id),
            )
        )
    return out
