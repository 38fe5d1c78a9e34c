"""Statistics speed: ``reliability_alpha`` on a large panel, against the ``krippendorff`` package.

Data: ``--items`` units x ``--critics`` raters from a seeded RNG, with agreement
structure: each unit has a true value, each rater reports it with its own accuracy (0.9
down to 0.6) and otherwise something else, and each rating is missing with probability
``--missing``. Nominal data are four string labels (KEEP/REJECT/SPLIT/MERGE) for
cross-judge, the same labels coded as ints for ``krippendorff``; ordinal and interval data
are scores 1-5 (the truth plus rounded Gaussian noise).

Each library is timed on its own input format, prepared before timing (lists with
``None`` for cross-judge; a float numpy matrix with NaN for ``krippendorff``): the
median of ``--repeats`` wall times of the alpha call alone. Target: nominal alpha in
<= 1 s for 100,000 items x 5 critics (a batch that size is about the largest one
evaluates at once, and its statistics should not take longer than a prompt answer); the
ratio to ``krippendorff`` (numpy-vectorised, the reference implementation people
compare to) is reported. Both alphas must agree to 1e-9 (check); ordinal and interval
are timed and compared too, with no target. Without ``krippendorff`` or numpy, only
cross-judge is timed and the comparison is reported as unavailable.

Second section: ``batch.revote("dawid_skene")`` on a ``BatchResult`` of ``--ds-items`` x
``--critics`` verdicts (the same kind of votes, a failed call where a rating is missing),
built before timing. The revote is the fit plus one new result per item (consensus, score,
agreement, dissenters); the fit is timed inside the same call (the Dawid-Skene EM of
``cross_judge.stats._dawid_skene``, wrapped for the run), and what the revote adds beyond it
is reported with its ratio to the fit, the share spent in Python's garbage collector and
its full collections (100,000 new results are enough to trigger one on a heap this size:
the main source of run-to-run variance). Target: at most 2 s beyond the fit for 100,000
x 5. ``BatchResult.from_results`` of the same results is timed beside it.

    python bench/bench_stats.py [--items 100000] [--critics 5] [--missing 0.1] [--repeats 3]
                                [--ds-items 100000] [--ds-repeats 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import BatchResult, EnsembleVerdict, Verdict, reliability_alpha

TARGET_NOMINAL_S = 1.0
TARGET_REVOTE_BEYOND_FIT_S = 2.0
TOLERANCE = 1e-9
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
SCALE = (1, 2, 3, 4, 5)

try:
    import krippendorff
    import numpy as np
except ImportError as exc:  # reported, not fatal
    krippendorff = None
    np = None
    MISSING_REASON = f"{exc.name or exc} is not installed"
else:
    MISSING_REASON = ""


def accuracies(critics: int) -> list[float]:
    """Per-rater accuracy, 0.9 down to 0.6."""
    if critics == 1:
        return [0.9]
    return [0.9 - 0.3 * i / (critics - 1) for i in range(critics)]


def nominal_data(rng: random.Random, items: int, critics: int, missing: float) -> list[list[Any]]:
    truth = [rng.randrange(len(LABELS)) for _ in range(items)]
    rows: list[list[Any]] = []
    for accuracy in accuracies(critics):
        row: list[Any] = []
        for t in truth:
            if rng.random() < missing:
                row.append(None)
            elif rng.random() < accuracy:
                row.append(LABELS[t])
            else:  # wrong: uniform over the other labels
                row.append(LABELS[(t + rng.randrange(1, len(LABELS))) % len(LABELS)])
        rows.append(row)
    return rows


def score_data(rng: random.Random, items: int, critics: int, missing: float) -> list[list[Any]]:
    truth = [rng.choice(SCALE) for _ in range(items)]
    rows: list[list[Any]] = []
    for accuracy in accuracies(critics):
        spread = 2.0 * (1.0 - accuracy)  # less accurate raters are noisier
        row: list[Any] = []
        for t in truth:
            if rng.random() < missing:
                row.append(None)
            else:
                row.append(min(SCALE[-1], max(SCALE[0], round(t + rng.gauss(0.0, spread)))))
        rows.append(row)
    return rows


def continuous_data(
    rng: random.Random, items: int, critics: int, missing: float
) -> list[list[Any]]:
    """Float scores: every column distinct, so no column is counted twice (worst case)."""
    truth = [rng.uniform(1.0, 5.0) for _ in range(items)]
    rows: list[list[Any]] = []
    for accuracy in accuracies(critics):
        spread = 2.0 * (1.0 - accuracy)
        rows.append([None if rng.random() < missing else t + rng.gauss(0.0, spread) for t in truth])
    return rows


def as_matrix(data: list[list[Any]]) -> Any:
    """The ``krippendorff`` input: floats, NaN for missing, string labels coded as ints."""
    assert np is not None
    code = {label: i for i, label in enumerate(LABELS)}
    return np.array(
        [[np.nan if v is None else float(code.get(v, v)) for v in row] for row in data],
        dtype=float,
    )


def timed(fn: Callable[[], float | None], repeats: int) -> tuple[float, float | None]:
    """(median wall seconds, value) over ``repeats`` calls."""
    walls, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), value


def nominal_batch(data: list[list[Any]]) -> BatchResult:
    """``data`` (critics x items labels, ``None`` missing) as a batch of stored results: a
    failed call where a label is missing, the consensus the most common label."""
    names = [f"critic-{j}" for j in range(len(data))]
    results = []
    for i, column in enumerate(zip(*data, strict=True)):
        verdicts = [
            Verdict(kind="ERROR", critic_id=name, error="timeout", attempts=1)
            if label is None
            else Verdict(kind=label, critic_id=name, confidence=0.8, attempts=1)
            for name, label in zip(names, column, strict=True)
        ]
        answered = [label for label in column if label is not None]
        consensus = max(LABELS, key=answered.count) if answered else "UNCLEAR"
        results.append(
            EnsembleVerdict(
                query_id=f"item-{i}",
                verdicts=verdicts,
                consensus=consensus,
                fallback=not answered,
                agreement_pct=answered.count(consensus) / len(answered) if answered else 0.0,
                disagreement=len(set(answered)) > 1,
                dissenters=[
                    v.critic_id for v in verdicts if v.error is None and v.kind != consensus
                ],
                n_valid=len(answered),
                n_errors=len(verdicts) - len(answered),
                voting="majority",
            )
        )
    return BatchResult(verdicts=results, critics=names, voting="majority")


class RevoteTimer:
    """Times ``batch.revote("dawid_skene")`` with the fit inside it (the module-level EM
    entry point of ``cross_judge.stats._dawid_skene``, wrapped for the run) and the time
    spent in the garbage collector."""

    def __init__(self) -> None:
        from cross_judge.stats import _dawid_skene as module

        self.module = module
        # The sparse EM entry point when there is one, else the dense fit.
        self.entry = "fit_votes" if hasattr(module, "fit_votes") else "dawid_skene"
        self.fit_s = self.gc_s = 0.0
        self.full_collections = 0
        self._gc_started = 0.0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_started
            self.full_collections += info["generation"] == 2

    def run(self, batch: BatchResult) -> tuple[float, float, float, int]:
        """(wall s, fit s, gc s, full collections) of one revote."""
        import gc

        fit = getattr(self.module, self.entry)

        def timed_fit(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fit(*args, **kwargs)
            finally:
                self.fit_s += time.perf_counter() - t0

        self.fit_s = self.gc_s = 0.0
        self.full_collections = 0
        setattr(self.module, self.entry, timed_fit)
        # Each run starts with nothing pending, as timeit and pyperf arrange it: a full
        # collection owed to what was allocated before (building the batch, the previous
        # run) is not the revote's. One its own allocations cause is timed and counted.
        gc.collect()
        gc.callbacks.append(self._on_gc)
        try:
            t0 = time.perf_counter()
            revoted = batch.revote("dawid_skene")
            wall = time.perf_counter() - t0
        finally:
            gc.callbacks.remove(self._on_gc)
            setattr(self.module, self.entry, fit)
        assert len(revoted) == len(batch)
        return wall, self.fit_s, self.gc_s, self.full_collections


def revote_section(report: Report, rng: random.Random, args: argparse.Namespace) -> None:
    """Time ``batch.revote("dawid_skene")`` on ``--ds-items`` x ``--critics``."""
    data = nominal_data(rng, args.ds_items, args.critics, args.missing)
    t0 = time.perf_counter()
    batch = nominal_batch(data)
    build_s = time.perf_counter() - t0
    del data
    from_results_s, _ = timed(
        lambda: float(len(BatchResult.from_results(batch.verdicts))), args.repeats
    )
    timer = RevoteTimer()
    runs = [timer.run(batch) for _ in range(args.ds_repeats)]
    walls = [wall for wall, _, _, _ in runs]
    fits = [fit for _, fit, _, _ in runs]
    beyond = [wall - fit for wall, fit, _, _ in runs]
    wall, fit_s, extra = (statistics.median(x) for x in (walls, fits, beyond))
    gc_s = statistics.median(g for _, _, g, _ in runs)
    size = f"{args.ds_items} x {args.critics}"
    per_run = ", ".join(
        f"{b:.2f}" + (f" ({f} full gc)" if f else "")
        for b, (_, _, _, f) in zip(beyond, runs, strict=True)
    )
    report.note(
        f"revote('dawid_skene'), {size}: {wall:.2f} s in all, the fit "
        f"({timer.entry}) {fit_s:.2f} s, beyond the fit {extra:.2f} s = "
        f"{extra / fit_s:.1f}x the fit (medians of {args.ds_repeats}; in the garbage "
        f"collector {gc_s:.2f} s); beyond the fit per run: {per_run} s. "
        f"BatchResult.from_results of the same results {from_results_s:.2f} s "
        f"(building them, not timed: {build_s:.1f} s)"
    )
    report.check(
        f"revote('dawid_skene') beyond the fit, {size} (median wall)",
        extra,
        at_most=TARGET_REVOTE_BEYOND_FIT_S,
        unit=" s",
        note=f"fit {fit_s:.2f} s; {extra / fit_s:.1f}x the fit",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--critics", type=int, default=5)
    parser.add_argument(
        "--missing", type=float, default=0.1, help="probability a rating is missing"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--ds-items", type=int, default=100_000, help="items of the revote('dawid_skene') batch"
    )
    parser.add_argument("--ds-repeats", type=int, default=3)
    args = parser.parse_args()

    report = Report(
        "stats",
        f"reliability_alpha speed, {args.items} items x {args.critics} critics",
        missing=args.missing,
        repeats=args.repeats,
        seed=args.seed,
        ds_items=args.ds_items,
    )
    rng = random.Random(args.seed)
    nominal = nominal_data(rng, args.items, args.critics, args.missing)
    scores = score_data(rng, args.items, args.critics, args.missing)
    floats = continuous_data(rng, args.items, args.critics, args.missing)
    present = sum(v is not None for row in nominal for v in row) / (args.items * args.critics)
    report.note(f"{100 * (1 - present):.1f}% of nominal ratings missing (seeded RNG)")
    if krippendorff is None:
        report.note(f"krippendorff comparison unavailable: {MISSING_REASON}; cross-judge only")

    nominal_time = None
    cases = (
        ("nominal", "nominal", nominal, True),
        ("ordinal", "ordinal", scores, True),
        ("interval", "interval", scores, True),
        # krippendorff builds a units x distinct-values count matrix: hundreds of GiB here.
        ("interval, float scores", "interval", floats, False),
    )
    for case, level, data, compare in cases:
        ours_s, ours = timed(lambda d=data, lv=level: reliability_alpha(d, level=lv), args.repeats)
        distinct = len(set(zip(*data, strict=True)))
        row: dict[str, Any] = {
            "data": case,
            "distinct": distinct,
            "ours_s": ours_s,
            "ours_alpha": ours,
        }
        if krippendorff is not None and compare:
            t0 = time.perf_counter()
            matrix = as_matrix(data)
            convert_s = time.perf_counter() - t0
            ref_s, ref = timed(
                lambda m=matrix, lv=level: float(
                    krippendorff.alpha(reliability_data=m, level_of_measurement=lv)
                ),
                args.repeats,
            )
            diff = abs(ours - ref) if ours is not None and ref is not None else None
            row |= {
                "ref_s": ref_s,
                "ref_alpha": ref,
                "x_ref": round(ours_s / ref_s, 2),
                "abs_diff": diff,
                "convert_s": convert_s,
            }
            if level == "nominal":
                report.check(
                    "nominal |alpha - krippendorff alpha|",
                    diff,
                    at_most=TOLERANCE,
                    note=f"ours {ours!r}, krippendorff {ref!r}",
                )
                report.note(
                    f"nominal: ours / krippendorff wall = {ours_s / ref_s:.2f}x "
                    f"(reported, no target; building its numpy matrix took {convert_s:.2f} s, "
                    "not counted)"
                )
            else:
                report.note(f"{case}: ours {ours!r}, krippendorff {ref!r}, |diff| {diff:.2e}")
        if level == "nominal":
            nominal_time = ours_s
        report.row(**row)

    report.check(
        f"nominal reliability_alpha, {args.items} x {args.critics} (median wall)",
        nominal_time,
        at_most=TARGET_NOMINAL_S,
        unit=" s",
    )
    revote_section(report, rng, args)
    report.note(
        "reliability_alpha counts each distinct column (one unit's ratings) once with its "
        "multiplicity, so few labels x few raters collapse to a few thousand columns; the "
        "float-score case has every column distinct and shows the per-unit cost (not run "
        "with krippendorff: its units x distinct values count matrix would need ~200 GiB)"
    )
    return report.finish(
        [
            ("data", "data"),
            ("distinct", "distinct columns"),
            ("ours_s", "ours s"),
            ("ref_s", "krippendorff s"),
            ("x_ref", "x krippendorff"),
            ("ours_alpha", "ours alpha"),
            ("ref_alpha", "krippendorff alpha"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
