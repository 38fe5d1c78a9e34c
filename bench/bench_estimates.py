"""Estimates that combine the jury and people's labels (PPI++): coverage, width, bias.

A jury of 3 critics (accuracy 0.75 each, errors correlated: ``error_correlation`` 0.3)
judges ``--items`` items once on the simulated vendor (a real server on 127.0.0.1); two
labels, the true share of ``FAIL`` 0.15, so the jury, erring both ways, reports too many
``FAIL``s (the jury-only share is biased). Then, with no further call, ``--draws`` times
for each queue strategy (``uniform``, ``uncertain``, ``disputed``, ``stratified``): draw a
``--labels``-item label queue (a new seed each time), label it with the truth, and
estimate the share of ``FAIL`` and critic ``c0``'s accuracy.

Per strategy and prediction (``votes``: the share of valid votes for the label, the
default; ``consensus``: 1 when the panel decided it): the coverage of the 95% PPI++
interval, its mean width, the labels-only interval's mean width (the same Horvitz-Thompson
estimate and variance with ``lam = 0``; for the uniform queue also Wilson's interval on
the labels), the bias and spread of each estimate, and the jury-only share's bias.

Targets (uniform and uncertain queues, default prediction, share of ``FAIL``): coverage
>= 93%; PPI++ mean width < labels-only mean width (Wald/HT, and Wilson for uniform). A
draw's coverage is binomial: with 1,000 draws at a true 95% the standard error is 0.7
points, so 93% is nearly 3 standard errors below.

``--small`` measures a handful of labels instead (5, 10 and 20, ``uniform`` and
``uncertain`` queues, the share of ``FAIL`` and ``c0``'s accuracy, default predictions):
the coverage of the 95% interval, its mean width and how many intervals had no width.
Targets (issue 37): no zero-width interval, coverage >= 92%. Before the variance floor and
Wilson's labels-only interval, 200 draws each covered 52.5% to 93.0% of the time, and at 5
labels up to 90 of the 200 intervals had zero width. Written to
``bench/results/estimates_small.json``.

``--grid`` (issue 41) measures every strategy at every floor of a grid that includes the
smallest the API accepts (``MIN_FLOOR``, 0.1) and the largest for ``"disputed"`` (10):
the coverage of the 95% interval with its binomial standard error, a check >= 93% per
cell, and, paired on the same draws, the labels-only interval (the estimate from the
labels alone, ``lam = 0``, Wilson's over the effective sample size): its coverage and the
PPI++ width over its width. Written to ``bench/results/estimates_grid.json``.

    python bench/bench_estimates.py [--items 2000] [--labels 100] [--draws 1000] [--small]
    python bench/bench_estimates.py --grid [--draws 1000]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from statistics import NormalDist
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))  # the simulated jury lives with the tests
from _report import Report
from tests.unit.stats.estimates_batch import TARGET, Judged, judged, offline

from cross_judge.stats.estimates import Estimate, Prediction, estimate_accuracy, estimate_share
from cross_judge.stats.label_queue import QueueStrategy, label_queue

STRATEGIES: tuple[QueueStrategy, ...] = ("uniform", "uncertain", "disputed", "stratified")
PREDICTIONS: tuple[Prediction, ...] = ("votes", "consensus")


def wilson(successes: int, n: int, ci: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion."""
    z = NormalDist().inv_cdf(0.5 + ci / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def repeated(
    jury: Judged,
    strategy: QueueStrategy,
    labels: int,
    draws: int,
    *,
    accuracy_of: str | None = None,
    floor: float = 0.3,
    predictions: tuple[Prediction, ...] = PREDICTIONS,
) -> dict[Prediction, list[Estimate]]:
    """``draws`` estimates per prediction, each from a fresh queue (seeds 0, 1, ...)
    labelled with the truth: of the share of ``FAIL``, or of ``accuracy_of``'s accuracy."""
    out: dict[Prediction, list[Estimate]] = {p: [] for p in predictions}
    for seed in range(draws):
        queue = label_queue(jury.batch, labels, strategy=strategy, seed=seed, floor=floor)
        gold = {item: jury.truth[item] for item in queue.items}
        for prediction in predictions:
            if accuracy_of is None:
                est = estimate_share(
                    jury.batch, TARGET, gold=gold, queue=queue, prediction=prediction
                )
            else:
                est = estimate_accuracy(
                    jury.batch, accuracy_of, gold=gold, queue=queue, prediction=prediction
                )
            out[prediction].append(est)
    return out


def summary(estimates: list[Estimate], truth: float) -> dict[str, Any]:
    covered = [
        e.low is not None and e.high is not None and e.low <= truth <= e.high for e in estimates
    ]
    widths = [e.width or 0.0 for e in estimates]
    labels_widths = [(e.labels_only_high or 0.0) - (e.labels_only_low or 0.0) for e in estimates]
    labels_covered = [
        e.labels_only_low is not None
        and e.labels_only_high is not None
        and e.labels_only_low <= truth <= e.labels_only_high
        for e in estimates
    ]
    values = [e.value for e in estimates]
    labels_values = [e.labels_only or 0.0 for e in estimates]
    return {
        "coverage": sum(covered) / len(covered),
        "width": statistics.fmean(widths),
        "labels_width": statistics.fmean(labels_widths),
        "labels_coverage": sum(labels_covered) / len(labels_covered),
        "bias": statistics.fmean(values) - truth,
        "sd": statistics.pstdev(values),
        "labels_sd": statistics.pstdev(labels_values),
        "jury_bias": estimates[0].jury_only - truth,
        "lam": statistics.fmean(e.lam or 0.0 for e in estimates),
    }


SMALL_LABELS = (5, 10, 20)


def small(args: argparse.Namespace) -> int:
    """A handful of labels: coverage and width of the 95% interval, zero-width ones."""
    report = Report(
        "estimates_small",
        "PPI++ estimates from a handful of labels",
        items=args.items,
        labels=list(SMALL_LABELS),
        draws=args.draws,
    )
    jury = judged(args.items)
    for labels in SMALL_LABELS:
        for strategy in ("uniform", "uncertain"):
            for what, critic in ((f"{TARGET} share", None), ("c0 accuracy", "c0")):
                found = repeated(jury, strategy, labels, args.draws, accuracy_of=critic)
                estimates = found["votes" if critic is None else "consensus"]
                truth = jury.true_share if critic is None else jury.true_accuracy(critic)
                row = summary(estimates, truth)
                zero = sum((e.width or 0.0) <= 1e-12 for e in estimates)
                report.row(
                    estimate=what,
                    queue=strategy,
                    labels=labels,
                    coverage=row["coverage"],
                    width=row["width"],
                    labels_coverage=row["labels_coverage"],
                    labels_width=row["labels_width"],
                    zero_width=zero,
                )
                name = f"{what}, {strategy} queue, {labels} labels"
                report.check(
                    f"95% coverage, {name}", 100 * row["coverage"], at_least=92.0, unit="%"
                )
                report.check(f"zero-width intervals, {name}", zero, at_most=0)
    return report.finish()


GRID: dict[QueueStrategy, tuple[float, ...]] = {
    "uniform": (0.3,),  # the floor is ignored by the unweighted strategies
    "stratified": (0.3,),
    "uncertain": (0.1, 0.2, 0.3, 1.0, 10.0),
    "disputed": (0.1, 0.2, 0.3, 1.0, 3.0, 10.0),
}


def grid(args: argparse.Namespace) -> int:
    """Coverage per strategy and floor, with its standard error, against labels alone."""
    report = Report(
        "estimates_grid",
        "PPI++ interval coverage per queue strategy and floor",
        items=args.items,
        labels=args.labels,
        draws=args.draws,
    )
    jury = offline(args.items)
    truth = jury.true_share
    for strategy, floors in GRID.items():
        for floor in floors:
            started = time.perf_counter()
            found = repeated(
                jury, strategy, args.labels, args.draws, floor=floor, predictions=("votes",)
            )
            estimates = found["votes"]
            row = summary(estimates, truth)
            se = math.sqrt(row["coverage"] * (1 - row["coverage"]) / len(estimates))
            report.row(
                queue=strategy,
                floor=floor,
                coverage=row["coverage"],
                coverage_se=se,
                width=row["width"],
                labels_coverage=row["labels_coverage"],
                labels_width=row["labels_width"],
                width_ratio=row["width"] / row["labels_width"],
                bias=row["bias"],
            )
            report.check(
                f"95% coverage, {strategy} queue, floor {floor} ({args.labels} labels)",
                100 * row["coverage"],
                at_least=93.0,
                unit="%",
            )
            report.note(
                f"{strategy} floor {floor}: {args.draws} draws in "
                f"{time.perf_counter() - started:.1f}s"
            )
    return report.finish(
        [
            ("queue", "queue"),
            ("floor", "floor"),
            ("coverage", "coverage"),
            ("coverage_se", "coverage SE"),
            ("width", "PPI++ width"),
            ("labels_coverage", "labels-only coverage"),
            ("labels_width", "labels-only width"),
            ("width_ratio", "PPI++ / labels-only width"),
            ("bias", "bias"),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--labels", type=int, default=100)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--floor", type=float, default=0.3, help="the weighted queues' floor")
    parser.add_argument("--small", action="store_true", help="5, 10 and 20 labels instead")
    parser.add_argument("--grid", action="store_true", help="every strategy x floor")
    args = parser.parse_args()
    if args.small:
        return small(args)
    if args.grid:
        return grid(args)
    report = Report(
        "estimates",
        "PPI++ estimates from the jury and people's labels",
        items=args.items,
        labels=args.labels,
        draws=args.draws,
        floor=args.floor,
    )
    started = time.perf_counter()
    jury = judged(args.items)
    jury_share = sum(r.consensus == TARGET for r in jury.batch.verdicts) / args.items
    report.note(
        f"{args.items} items x 3 critics judged on the simulator in "
        f"{time.perf_counter() - started:.1f}s; true share of {TARGET} {jury.true_share:.3f}, "
        f"the jury's {jury_share:.3f}"
    )
    truth = jury.true_share
    runs: list[tuple[QueueStrategy, str, float, str | None]] = [
        (strategy, f"{TARGET} share", args.floor, None) for strategy in STRATEGIES
    ]
    runs += [(s, "c0 accuracy", args.floor, "c0") for s in ("uniform", "uncertain")]
    for strategy, what, floor, critic in runs:
        started = time.perf_counter()
        found = repeated(jury, strategy, args.labels, args.draws, accuracy_of=critic, floor=floor)
        seconds = time.perf_counter() - started
        target = truth if critic is None else jury.true_accuracy(critic)
        for prediction, estimates in found.items():
            row = summary(estimates, target)
            if strategy == "uniform" and critic is None:
                intervals = [
                    wilson(round((e.labels_only or 0.0) * e.n_labels), e.n_labels)
                    for e in estimates
                ]
                row["wilson_width"] = statistics.fmean(hi - lo for lo, hi in intervals)
            report.row(estimate=what, queue=strategy, prediction=prediction, **row)
            default = prediction == "votes" if critic is None else prediction == "consensus"
            checked = strategy in ("uniform", "uncertain") and floor == args.floor
            if critic is None and default and checked:
                report.check(
                    f"95% interval coverage, {strategy} queue ({args.labels} labels)",
                    100 * row["coverage"],
                    at_least=93.0,
                    unit="%",
                )
                report.check(
                    f"PPI++ width / labels-only width, {strategy} queue",
                    row["width"] / row["labels_width"],
                    at_most=1.0,
                    unit="x",
                )
                if "wilson_width" in row:
                    report.check(
                        "PPI++ width / Wilson width (labels only), uniform queue",
                        row["width"] / row["wilson_width"],
                        at_most=1.0,
                        unit="x",
                    )
        report.note(f"{what}, {strategy} queue: {args.draws} draws in {seconds:.1f}s")
    return report.finish(
        [
            ("estimate", "estimate"),
            ("queue", "queue"),
            ("prediction", "prediction"),
            ("coverage", "coverage"),
            ("width", "width"),
            ("labels_width", "labels-only width"),
            ("wilson_width", "Wilson width"),
            ("labels_coverage", "labels-only coverage"),
            ("bias", "bias"),
            ("sd", "sd"),
            ("labels_sd", "labels-only sd"),
            ("jury_bias", "jury-only bias"),
            ("lam", "mean lam"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
