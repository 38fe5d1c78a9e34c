"""Dawid-Skene on real-shaped crowds: accuracy against the majority vote and crowd-kit, and
fit time per 100,000 votes at three shapes.

Data: :func:`tests.fixtures.dawid_skene_sparse.sparse_crowd`, a seeded crowd shaped like the
public data set of issue 26: 11,040 items, 825 annotators of mixed quality (good, mediocre,
careless, random and constant spammers; neighbouring classes confused) whose activity is
skewed (a few dozen to a few hundred items each), about 90,000 labels, 4 classes with unequal
shares, gold for 333 items. Accuracy is read on every item (the truth is known) and on the
333 gold items, for our fit (default shrinkage), the textbook fit (``shrinkage=0``, the
maximum-likelihood model crowd-kit fits), the plain majority vote, and crowd-kit's
``DawidSkene(n_iter=100)`` when it is importable (an oracle, never a dependency:
``pip install crowd-kit``; ``nox -s crowdkit`` runs the oracle tests).

Speed: the median of ``--repeats`` wall times of ``fit_votes`` alone (the votes prepared as
lists before timing), per 100,000 votes, at three shapes: 5 critics x 100,000 items (a
panel, 10% missing), the 825-annotator crowd, and 1,000 critics x 100,000 items x 3 votes
each. Targets: at most 1 s per 100,000 votes at each shape; accuracy no more than 1 point
below crowd-kit's (when installed) nor below the majority vote's. crowd-kit's time on the same
votes (its DataFrame prepared before timing, one run) gives the ratio.

Memory: the peak of what one fit allocates (``tracemalloc``, which sees numpy's arrays too;
one extra run, not timed), per vote. Target: at most 1,000 bytes a vote at each shape, which
no fit holding an items x critics matrix meets at 1,000 critics (the matrix alone would be
100,000,000 cells, over 2,600 bytes a vote at 8 bytes a cell).

    python bench/bench_dawid_skene.py [--repeats 3] [--no-crowdkit]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))  # the generator lives with the tests
from _report import Report
from tests.fixtures.dawid_skene_sparse import SparseCrowd, majority, sparse_crowd
from tests.unit.stats.test_dawid_skene import synthetic_votes

from cross_judge import StatisticsWarning
from cross_judge.stats import mcnemar_exact

TARGET_S_PER_100K = 1.0
TARGET_BYTES_PER_VOTE = 1000.0

try:
    import pandas as pd
    from crowdkit.aggregation import DawidSkene
except ImportError as exc:  # reported, not fatal
    pd = None
    DawidSkene = None
    MISSING_REASON = f"{exc.name or exc} is not installed"
else:
    MISSING_REASON = ""


def panel_crowd(n_items: int) -> SparseCrowd:
    """5 critics (accuracy 0.9 .. 0.6), every item, 10% of votes missing."""
    truth, rows = synthetic_votes(15, n_items, accuracies=(0.9, 0.75, 0.7, 0.65, 0.6))
    votes = [(i, j, v) for i, row in enumerate(rows) for j, v in enumerate(row) if v is not None]
    items, critics, labels = (list(x) for x in zip(*votes, strict=True))
    return SparseCrowd(
        items, critics, labels, truth, [], n_items, 5, ("A", "B", "C", "D"), ["panel"] * 5
    )


def fit(crowd: SparseCrowd, **settings: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticsWarning)
        return crowd.fit(**settings)


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_bytes(run: Callable[[], Any]) -> int:
    """The most memory ``run`` held allocated at once beyond what was there before, as
    ``tracemalloc`` counts it (Python objects and numpy's arrays)."""
    import tracemalloc

    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def crowdkit_labels(crowd: SparseCrowd) -> tuple[float, list[str]]:
    """crowd-kit's fit time (one run, the DataFrame built before) and its label per item."""
    assert pd is not None
    assert DawidSkene is not None
    frame = pd.DataFrame({"task": crowd.items, "worker": crowd.critics, "label": crowd.labels})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        labels = DawidSkene(n_iter=100).fit_predict(frame)
        elapsed = time.perf_counter() - start
    return elapsed, [labels.get(i, crowd.classes[0]) for i in range(crowd.n_items)]


def accuracy(labels: Any, crowd: SparseCrowd, items: Any = None) -> float:
    chosen = range(crowd.n_items) if items is None else items
    return sum(labels[i] == crowd.truth[i] for i in chosen) / len(chosen)


def discordant(labels: Any, baseline: Any, crowd: SparseCrowd, items: Any) -> tuple[int, int]:
    """Items of ``items`` right by ``labels`` and wrong by ``baseline``, and the other way."""
    wins = sum(labels[i] == crowd.truth[i] != baseline[i] for i in items)
    losses = sum(baseline[i] == crowd.truth[i] != labels[i] for i in items)
    return wins, losses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-crowdkit", action="store_true", help="skip crowd-kit")
    args = parser.parse_args()
    with_crowdkit = DawidSkene is not None and not args.no_crowdkit
    report = Report(
        "dawid_skene",
        "Dawid-Skene: accuracy on a sparse crowd, fit time per 100,000 votes",
        repeats=args.repeats,
    )
    if not with_crowdkit:
        report.note(f"crowd-kit comparison unavailable: {MISSING_REASON or '--no-crowdkit'}")

    crowd = sparse_crowd()
    fit(crowd)  # warm up: imports, first numpy calls
    ours = fit(crowd)
    textbook = fit(crowd, shrinkage=0.0)
    voted = majority(crowd)
    scores = {"ours": ours.labels, "textbook (shrinkage=0)": textbook.labels, "majority": voted}
    if with_crowdkit:
        scores["crowd-kit DawidSkene(100)"] = crowdkit_labels(crowd)[1]
    for method, labels in scores.items():
        # Paired against the majority vote on the same 333 gold items: the items only this
        # method got right (wins), only majority (losses), and the exact McNemar p.
        wins, losses = discordant(labels, voted, crowd, crowd.gold)
        report.row(
            case="accuracy, 825 annotators",
            method=method,
            all_items=accuracy(labels, crowd),
            gold_333=accuracy(labels, crowd, crowd.gold),
            **(
                {}
                if method == "majority"
                else {
                    "gold_wins_losses": f"{wins}/{losses}",
                    "gold_mcnemar_p": mcnemar_exact(wins, losses),
                }
            ),
        )
    best = accuracy(ours.labels, crowd)
    report.check(
        "accuracy minus majority's (825 annotators)",
        100 * (best - accuracy(voted, crowd)),
        at_least=-1.0,
        unit=" pt",
    )
    if with_crowdkit:
        report.check(
            "accuracy minus crowd-kit's (825 annotators)",
            100 * (best - accuracy(scores["crowd-kit DawidSkene(100)"], crowd)),
            at_least=-1.0,
            unit=" pt",
        )

    shapes = {
        "5 critics x 100k items": panel_crowd(100_000),
        "825 annotators, sparse": crowd,
        "1,000 critics x 100k items x 3 votes": sparse_crowd(
            seed=27, n_items=100_000, n_critics=1000, votes_per_item=3.0, votes_spread=0.0
        ),
    }
    for shape, data in shapes.items():
        n_votes = len(data.labels)
        seconds, result = timed(lambda data=data: fit(data), args.repeats)  # type: ignore[misc]
        per_100k = seconds * 100_000 / n_votes
        per_vote = peak_bytes(lambda data=data: fit(data)) / n_votes  # type: ignore[misc]
        row: dict[str, Any] = {
            "case": f"time, {shape}",
            "method": f"{n_votes:,} votes, {result.iterations} rounds",
            "s_per_100k_votes": per_100k,
            "bytes_per_vote": per_vote,
        }
        if with_crowdkit:
            theirs, _ = crowdkit_labels(data)
            row["crowdkit_s_per_100k"] = theirs * 100_000 / n_votes
            row["ratio_to_crowdkit"] = seconds / theirs
        report.row(**row)
        report.check(
            f"fit time per 100,000 votes ({shape})",
            per_100k,
            at_most=TARGET_S_PER_100K,
            unit=" s",
        )
        report.check(
            f"fit peak memory per vote ({shape})",
            per_vote,
            at_most=TARGET_BYTES_PER_VOTE,
            unit=" B",
        )
    return report.finish(
        [
            ("case", "case"),
            ("method", "method"),
            ("all_items", "acc. all"),
            ("gold_333", "acc. gold"),
            ("gold_wins_losses", "gold wins/losses vs majority"),
            ("gold_mcnemar_p", "McNemar p"),
            ("s_per_100k_votes", "s / 100k votes"),
            ("bytes_per_vote", "peak B / vote"),
            ("crowdkit_s_per_100k", "crowd-kit s / 100k"),
            ("ratio_to_crowdkit", "ours / crowd-kit"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
