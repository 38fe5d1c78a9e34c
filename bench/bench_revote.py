"""What going through a :class:`~cross_judge.batch.BatchResult` costs beyond the statistic:
each statistic timed as the batch's method and as its bare function on inputs prepared
before timing, on a crowd of 90,000 labels from 825 annotators (issue 41, point 4).

Data: :func:`tests.fixtures.dawid_skene_sparse.sparse_crowd` (11,040 items, 825 annotators,
90,099 labels, 4 classes, gold for 333 items), made a batch by ``BatchResult.from_votes``
(not timed). Per statistic, the median of ``--repeats`` wall times through the batch, the
same of the bare function, and their ratio, both measured in this process:

- ``revote("dawid_skene")`` against ``fit_votes`` on the valid votes as parallel lists (the
  fit alone; the revote also reads the votes from the verdicts and builds one result per
  item). Target: ratio <= 1.5.
- ``dawid_skene(batch)`` (the fit with a label and a posterior mapping per item id) against
  the same ``fit_votes``.
- Reported without a target: the decisions as columns (the fit, then each item's label and
  posterior as two lists, no result built) and the read of the votes out of the verdicts,
  each over the fit: what a batch holding its votes as columns could reach.
- ``revote("majority")`` against the per-item ``cross_judge.revote`` on each result (what
  the batch's method calls); ``majority_vote`` on each item's verdicts, the strategy alone,
  is shown beside.
- ``fleiss_kappa()``, ``reliability_alpha()`` (nominal) and ``against(gold)`` against
  ``fleiss_kappa``, ``reliability_alpha`` and ``gold_metrics`` on the batch's full
  matrices (critics x items labels; items x critics labels and stated confidences).

Each timed run starts after a full garbage collection (as timeit and pyperf arrange it) and
ends after collecting the youngest generation, so work the collector was left to do for
the objects a call made is charged to that call. numpy's BLAS runs one thread (unless the
environment says otherwise), so that the fit's time is its own, not a busy core's.
``revote("dawid_skene")`` is also run back to back (``--repeats`` calls after one collection,
each result held until the next is made, then a full collection, all timed, per call), as
a notebook re-voting a batch meets the collector, against ``fit_votes`` run the same way.
Statistics over every pair of critics (``pairwise_agreement``: 340,000 pairs here) and
``critic_stats`` (no separate function: the tally is the statistic) are not timed.

    python bench/bench_revote.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

# One BLAS thread, before numpy loads: the fit's few matrix products gain nothing from a
# second thread, and on a busy 2-core machine one spinning made the fit 3x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))  # the generator lives with the tests
from _report import Report
from tests.fixtures.dawid_skene_sparse import sparse_crowd

from cross_judge import BatchResult, StatisticsWarning, revote
from cross_judge.reliability import dawid_skene
from cross_judge.stats import fleiss_kappa, gold_metrics, reliability_alpha
from cross_judge.stats._dawid_skene import fit_votes
from cross_judge.verdict import EnsembleVerdict
from cross_judge.voting import majority_vote

TARGET_RATIO = 1.5


def timed(run: Callable[[], Any], repeats: int) -> float:
    """The median wall time of ``run``, each run between two collections (see above)."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = run()
        gc.collect(0)
        times.append(time.perf_counter() - start)
        del result
    return statistics.median(times)


def back_to_back(run: Callable[[], Any], repeats: int) -> float:
    """Wall time per call of ``repeats`` calls in a row, each result held until the next
    call returns, and the full collection after them."""
    gc.collect()
    start = time.perf_counter()
    held = None
    for _ in range(repeats):
        held = run()
    del held
    gc.collect()
    return (time.perf_counter() - start) / repeats


def valid_votes(batch: BatchResult) -> tuple[list[int], list[int], list[str]]:
    """The valid votes of the batch's critics as ``fit_votes`` takes them."""
    column = {name: j for j, name in enumerate(batch.critics)}
    items: list[int] = []
    critics: list[int] = []
    labels: list[str] = []
    for i, result in enumerate(batch.verdicts):
        for verdict in result.verdicts:
            if verdict.error is None and verdict.critic_id in column:
                items.append(i)
                critics.append(column[verdict.critic_id])
                labels.append(verdict.kind)
    return items, critics, labels


def by_item(batch: BatchResult, value: Callable[[Any], Any]) -> list[list[Any]]:
    """Items x critics ``value`` of each valid verdict (``None`` elsewhere)."""
    column = {name: j for j, name in enumerate(batch.critics)}
    rows = []
    for result in batch.verdicts:
        row: list[Any] = [None] * len(column)
        for verdict in result.verdicts:
            if verdict.error is None and verdict.critic_id in column:
                row[column[verdict.critic_id]] = value(verdict)
        rows.append(row)
    return rows


Case = Callable[[str, Callable[[], Any], Callable[[], Any], str], None]


def dawid_skene_section(batch: BatchResult, case: Case, report: Report, repeats: int) -> None:
    items, critics, labels = valid_votes(batch)

    def fit() -> Any:
        return fit_votes(
            items, critics, labels, n_items=len(batch), n_critics=len(batch.critics),
            critic_names=batch.critics,
        )  # fmt: skip

    case("revote('dawid_skene')", lambda: batch.revote("dawid_skene"), fit, "fit_votes")
    fit_s = back_to_back(fit, repeats)
    revote_s = back_to_back(lambda: batch.revote("dawid_skene"), repeats)
    report.row(
        statistic="revote('dawid_skene'), back to back",
        through_s=revote_s,
        bare="fit_votes, back to back",
        bare_s=fit_s,
        ratio=revote_s / fit_s,
    )
    case("dawid_skene(batch)", lambda: dawid_skene(batch), fit, "fit_votes")

    def columns() -> tuple[list[str], list[float]]:
        """The decisions as columns: the fit, then each item's label and its posterior as
        two lists, no result built (what a batch holding its votes as columns would pay)."""
        fitted = fit()
        where = {label: k for k, label in enumerate(fitted.classes)}
        labels = list(fitted.labels)
        return labels, [row[where[x]] for row, x in zip(fitted.posteriors, labels, strict=True)]

    def bare_copies() -> list[Any]:
        """One shallow copy of each result, two fields changed, made as cheaply as Python
        makes a pydantic model (no validation, no per-item figure): the least any design
        that returns one result object per item pays."""
        new, set_ = EnsembleVerdict.__new__, object.__setattr__
        out = []
        for result in batch.verdicts:
            values = result.__dict__.copy()
            values["consensus"], values["voting"] = "x", "dawid_skene"
            copy = new(EnsembleVerdict)
            set_(copy, "__dict__", values)
            set_(copy, "__pydantic_extra__", result.__pydantic_extra__)
            set_(copy, "__pydantic_fields_set__", result.__pydantic_fields_set__.copy())
            set_(copy, "__pydantic_private__", None)
            out.append(copy)
        return out

    fit_s, columns_s = timed(fit, repeats), timed(columns, repeats)
    read_s = timed(lambda: valid_votes(batch), repeats)
    copies_s = timed(bare_copies, repeats)
    report.note(
        "reported, no target: the decisions as columns (the fit, then a label and a "
        f"posterior per item as lists, no result built) take {columns_s / fit_s:.2f}x the "
        f"fit, and reading the votes out of the verdicts {read_s / fit_s:.2f}x: the bound a "
        "batch that held its votes as columns and built results only when read would meet"
    )
    report.note(
        f"the floor of a result object per item: the bare copies alone take "
        f"{copies_s / fit_s:.2f}x the fit, so fit + read + copies is at least "
        f"{1 + (read_s + copies_s) / fit_s:.2f}x, over 1.5x before any per-item figure"
    )


def majority_section(batch: BatchResult, case: Case, report: Report, repeats: int) -> None:
    case(
        "revote('majority')",
        lambda: batch.revote("majority"),
        lambda: [revote(r, "majority") for r in batch.verdicts],
        "revote() per item",
    )
    strategy_s = timed(lambda: [majority_vote(r.verdicts) for r in batch.verdicts], repeats)
    report.note(
        f"majority_vote alone on each item's verdicts: {strategy_s:.3f} s (the per-item "
        "revote also reconciles look-alike labels, sums usage, computes agreement and the "
        "per-item alpha, and validates one result per item)"
    )


def agreement_section(batch: BatchResult, case: Case) -> None:
    matrix = batch.labels_matrix()
    case("fleiss_kappa()", batch.fleiss_kappa, lambda: fleiss_kappa(matrix), "fleiss_kappa")
    case(
        "reliability_alpha()",
        batch.reliability_alpha,
        lambda: reliability_alpha(matrix, "nominal"),
        "reliability_alpha",
    )


def gold_section(batch: BatchResult, case: Case, gold: dict[str, str]) -> None:
    labels = by_item(batch, lambda v: v.kind)
    stated = by_item(batch, lambda v: v.confidence if v.confidence_stated else None)
    consensus = [r.consensus for r in batch.verdicts]
    aligned = [gold.get(r.query_id) for r in batch.verdicts]
    answered = [label for row in labels for label in row if label is not None]
    vocabulary = list(dict.fromkeys(answered + consensus))
    ids = [r.query_id for r in batch.verdicts]

    def bare() -> Any:
        return gold_metrics(
            labels, batch.critics, aligned, confidences=stated, consensus=consensus,
            vocabulary=vocabulary, item_ids=ids,
        )  # fmt: skip

    case("against(gold)", lambda: batch.against(gold), bare, "gold_metrics")
    assert batch.against(gold) == bare()  # the same report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    report = Report(
        "revote",
        "Statistics through a BatchResult against their bare function (825 annotators)",
        repeats=args.repeats,
    )
    warnings.simplefilter("ignore", StatisticsWarning)  # below-chance spammers: expected
    crowd = sparse_crowd()
    rows = [
        (f"q{i}", f"a{j}", label)
        for i, j, label in zip(crowd.items, crowd.critics, crowd.labels, strict=True)
    ]
    start = time.perf_counter()
    batch = BatchResult.from_votes(rows)
    report.note(
        f"{len(rows):,} votes, {len(batch):,} items, {len(batch.critics)} annotators; "
        f"from_votes (not timed) {time.perf_counter() - start:.1f} s"
    )
    del rows

    def case(name: str, through: Callable[[], Any], bare: Callable[[], Any], what: str) -> None:
        through()  # warm up: imports, first calls
        bare_s = timed(bare, args.repeats)
        through_s = timed(through, args.repeats)
        ratio = through_s / bare_s
        report.row(statistic=name, through_s=through_s, bare=what, bare_s=bare_s, ratio=ratio)
        report.check(f"{name} / {what}", ratio, at_most=TARGET_RATIO, unit="x")

    # Each section's prepared inputs are freed before the next: a heap grown by them would
    # make every collection slower for what follows.
    dawid_skene_section(batch, case, report, args.repeats)
    majority_section(batch, case, report, args.repeats)
    agreement_section(batch, case)
    gold_section(batch, case, {f"q{i}": crowd.truth[i] for i in crowd.gold})
    return report.finish(
        [
            ("statistic", "through the batch"),
            ("through_s", "s"),
            ("bare", "bare function"),
            ("bare_s", "s"),
            ("ratio", "ratio"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
