"""Choosing a panel from a pilot's stored verdicts (``batch.select_panel``, zero calls) on
the simulator: is the chosen panel as good on held-out items as the best panel the budget
allows, and better than the three cheapest critics; how long the choice takes.

Data (simulated, not a measurement of any model): per seed, a pilot of 2,000 items, gold
PASS/FAIL (60% PASS), judged by 8 simulated critics in four families, with the simulator's
decision function (``cross_judge.testing._decisions.decide``, private: it is what the
simulated vendor answers with, called here without a server so that 20 pilots take
seconds). Each critic has a set accuracy and a price per item (stored as the verdicts'
``cost_usd``); critics of a family err together: an item's difficulty for a family is
``Phi(sqrt(SHARED) Z + sqrt(1 - SHARED) Z_family)`` (``Z`` the item's, ``Z_family`` the
family's, standard normal), and ``decide`` makes hard items wrong more often by the
Gaussian threshold model at ``error_correlation`` RHO. So errors are correlated within a
family (RHO on the latent scale) and a little across families (RHO * SHARED).

=========  ======  =========  ==============  ===========================
critic     family  accuracy   USD per item    role
=========  ======  =========  ==============  ===========================
mini-1..3  mini    .70-.74    .0001-.0002     the three cheapest, alike
mid-a/b    mid     .80, .82   .0005, .0006    one vendor's middle models
alt        alt     .81        .0006           another vendor's
large      large   .87        .0015           strong, within budget
frontier   large   .91        .0040           best alone, over budget
=========  ======  =========  ==============  ===========================

The budget, $0.0030 per item, rules out ``frontier`` (the single best critic), so the
choice is among panels: ``large`` alone, or with critics of other families (whose errors
are apart from its) voting with it; the three cheap critics share one family, so their
majority is worth little more than one of them. Per seed the pilot is split in half by
the seed (``holdout=0.5``): ``select_panel`` ranks on one half; every figure below is on
the held-out half:

- chosen: ``select_panel(gold, budget_per_item=BUDGET, seed=seed).best`` (plain panels
  under majority, weighted and Dawid-Skene voting, and calibrated cascades);
- oracle: the plain panel with the highest held-out accuracy among every affordable
  subset and strategy (``search_panels`` on the same table): the best the budget allows,
  which the choice cannot know;
- cheapest 3: the three cheapest critics by majority (``measure_panel``, same table);
- without gold: ``select_panel(None, ...)`` (ranked on the Dawid-Skene model's estimate),
  its best plan's tiers then measured by ``measure_panel`` on the gold table of the same
  seed, so against the true labels on that table's held-out half (the no-gold split is
  stratified by the model's labels, so its own held-out half differs; no label was used in
  choosing, so any half is held out from it as far as labels go).

Checked (means over seeds, paired standard errors printed): chosen - oracle >= -1 point;
chosen - cheapest 3 >= 3 points. Speed: one pilot of 10,000 items x 8 critics with gold,
``select_panel`` timed (best of 3, perf_counter) against one ``batch.against(gold)`` pass
over the same batch in the same process; target under 1 s (a wall-clock check: on a loaded
machine it may MISS, reported, not a crash). About 1 minute on 2 cores.

Why this design: the budget excludes the single best critic, so ``select_panel`` must find
a panel, and the critics' families decide which: adding a critic of the family already in
the panel adds little, one of another family adds a vote whose errors are apart. Without
gold the Dawid-Skene model assumes the critics err independently, so it takes the three
``mini`` critics' shared errors for agreement and over-rates them: that choice is reported
(with the model's optimism about it), not checked.

    python bench/bench_select_panel.py [--seeds 20] [--items 2000] [--speed-items 10000]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import BatchResult, EnsembleVerdict, StatisticsWarning, Verdict, revote
from cross_judge.stats import PanelTier, measure_panel, pilot_table, search_panels
from cross_judge.testing import Persona

# Private: the simulator's decision function, called without a server (see the docstring).
from cross_judge.testing._decisions import decide

LABELS = ("PASS", "FAIL")
PASS_RATE = 0.6
RHO = 0.6
"""The simulator's ``error_correlation`` within a family."""
SHARED = 0.3
"""The share of an item's difficulty common to every family."""
BUDGET = 0.0030
HOLDOUT = 0.5
TARGET_VS_ORACLE = -1.0
TARGET_VS_CHEAPEST = 3.0
TARGET_SECONDS = 1.0
_NORMAL = statistics.NormalDist()


@dataclass(frozen=True)
class Spec:
    """A simulated critic: its family, accuracy and price per item (USD)."""

    name: str
    family: str
    accuracy: float
    price: float


CRITICS = (
    Spec("mini-1", "mini", 0.70, 0.0001),
    Spec("mini-2", "mini", 0.72, 0.0001),
    Spec("mini-3", "mini", 0.74, 0.0002),
    Spec("mid-a", "mid", 0.80, 0.0005),
    Spec("mid-b", "mid", 0.82, 0.0006),
    Spec("alt", "alt", 0.81, 0.0006),
    Spec("large", "large", 0.87, 0.0015),
    Spec("frontier", "large", 0.91, 0.0040),
)
FAMILIES = tuple(dict.fromkeys(spec.family for spec in CRITICS))
CHEAPEST = tuple(spec.name for spec in sorted(CRITICS, key=lambda s: s.price)[:3])


def pilot(n_items: int, seed: int) -> tuple[BatchResult, dict[str, str]]:
    """A pilot batch in which every critic judged the same ``n_items`` items, and gold."""
    rng = random.Random(f"bench-select-panel|{seed}")
    personas = {
        spec.name: Persona(spec.name, accuracy=spec.accuracy, labels=LABELS, seed=seed * 100 + k)
        for k, spec in enumerate(CRITICS)
    }
    results: list[EnsembleVerdict] = []
    gold: dict[str, str] = {}
    for i in range(n_items):
        item_id = f"s{seed}-{i}"
        truth = LABELS[0] if rng.random() < PASS_RATE else LABELS[1]
        gold[item_id] = truth
        common = rng.gauss(0.0, 1.0)
        difficulty = {
            family: _NORMAL.cdf(
                math.sqrt(SHARED) * common + math.sqrt(1 - SHARED) * rng.gauss(0.0, 1.0)
            )
            for family in FAMILIES
        }
        digest = hashlib.sha256(item_id.encode()).hexdigest()
        verdicts = []
        for spec in CRITICS:
            said = decide(
                personas[spec.name],
                spec.name,
                truth,
                digest,
                difficulty=difficulty[spec.family],
                error_correlation=RHO,
            )
            verdicts.append(
                Verdict(
                    kind=said.kind,
                    confidence=said.confidence,
                    critic_id=spec.name,
                    cost_usd=spec.price,
                )
            )
        results.append(
            revote(
                EnsembleVerdict(
                    query_id=item_id, verdicts=verdicts, consensus="PASS", voting="majority"
                )
            )
        )
    return BatchResult.from_results(results), gold


@dataclass
class Seed:
    """One seed's held-out accuracies (shares) and what was chosen."""

    chosen: float
    oracle: float
    cheapest: float
    no_gold: float
    no_gold_estimate: float
    chosen_plan: str
    no_gold_plan: str
    oracle_plan: str
    large: float
    frontier: float
    cascade: bool
    candidates: int


def one_seed(seed: int, n_items: int) -> Seed:
    batch, gold = pilot(n_items, seed)
    plans = batch.select_panel(gold, budget_per_item=BUDGET, seed=seed, holdout=HOLDOUT)
    table = pilot_table(batch, gold, holdout=HOLDOUT, seed=seed)
    found, _ = search_panels(table, budget_per_item=BUDGET)
    oracle = max(found, key=lambda f: (f.accuracy, -f.cost_per_item))
    cheapest = measure_panel(table, [PanelTier(CHEAPEST, "majority")])
    blind = batch.select_panel(None, budget_per_item=BUDGET, seed=seed, holdout=HOLDOUT).best
    truly = measure_panel(table, blind.figures.tiers, blind.figures.agreement_below)
    alone = {
        name: measure_panel(table, [PanelTier((name,), "majority")]).accuracy
        for name in ("large", "frontier")
    }
    return Seed(
        chosen=plans.best.accuracy,
        oracle=oracle.accuracy,
        cheapest=cheapest.accuracy,
        no_gold=truly.accuracy,
        no_gold_estimate=blind.accuracy,
        chosen_plan=plans.best.describe(),
        no_gold_plan=blind.describe(),
        oracle_plan=f"{' + '.join(oracle.critics)}, {oracle.tiers[0].voting}",
        large=alone["large"],
        frontier=alone["frontier"],
        cascade=plans.best.is_cascade,
        candidates=plans.candidates,
    )


def mean_se(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return mean, se


def best_of(run: Callable[[], object], repeats: int = 3) -> float:
    """The least of ``repeats`` wall times of ``run``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--speed-items", type=int, default=10_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore", StatisticsWarning)
    report = Report(
        "select_panel",
        "Choosing a panel from a pilot's verdicts (8 simulated critics, 255 subsets)",
        seeds=args.seeds,
        items=args.items,
        budget_per_item=BUDGET,
        holdout=HOLDOUT,
        rho=RHO,
    )
    start = time.perf_counter()
    runs = [one_seed(seed, args.items) for seed in range(args.seeds)]
    elapsed = time.perf_counter() - start
    columns = {
        "chosen": [r.chosen for r in runs],
        "oracle (best under budget)": [r.oracle for r in runs],
        "cheapest 3, majority": [r.cheapest for r in runs],
        "chosen without gold": [r.no_gold for r in runs],
        "large alone": [r.large for r in runs],
        "frontier alone (over budget)": [r.frontier for r in runs],
    }
    for name, values in columns.items():
        mean, se = mean_se(values)
        report.row(panel=name, held_out_accuracy=mean, se=se, worst=min(values))
    pairs = {
        "chosen - oracle": [100 * (r.chosen - r.oracle) for r in runs],
        "chosen - cheapest 3": [100 * (r.chosen - r.cheapest) for r in runs],
        "chosen without gold - oracle": [100 * (r.no_gold - r.oracle) for r in runs],
        "chosen without gold - cheapest 3": [100 * (r.no_gold - r.cheapest) for r in runs],
    }
    for name, values in pairs.items():
        mean, se = mean_se(values)
        report.note(
            f"paired over seeds, {name}: {mean:+.2f} points (SE {se:.2f}, worst {min(values):+.2f})"
        )
    optimism = [100 * (r.no_gold_estimate - r.no_gold) for r in runs]
    mean, se = mean_se(optimism)
    report.note(
        f"without gold, the Dawid-Skene estimate of the chosen plan's held-out accuracy minus "
        f"its true one (gold table's held-out half): {mean:+.2f} points (SE {se:.2f})"
    )
    for what, plans in (
        ("chosen (gold)", [r.chosen_plan for r in runs]),
        ("oracle", [r.oracle_plan for r in runs]),
        ("chosen without gold", [r.no_gold_plan for r in runs]),
    ):
        counts = sorted(((plans.count(p), p) for p in set(plans)), reverse=True)
        shown = "; ".join(f"{n}x {p}" for n, p in counts[:3])
        report.note(f"{what}, most often: {shown}")
    report.note(
        f"the chosen plan was a cascade on {sum(r.cascade for r in runs)} of {len(runs)} seeds; "
        f"plans replayed per seed (affordable plain panels x strategies, and cascades): "
        f"{min(r.candidates for r in runs)}-{max(r.candidates for r in runs)}"
    )
    report.note(
        f"simulated critics (the simulator's decide), not language models; {args.seeds} seeds "
        f"in {elapsed:.0f} s"
    )
    report.check(
        "held-out accuracy, chosen - best subset under the budget (mean over seeds)",
        statistics.fmean(pairs["chosen - oracle"]),
        at_least=TARGET_VS_ORACLE,
        unit=" pts",
    )
    report.check(
        "held-out accuracy, chosen - three cheapest by majority (mean over seeds)",
        statistics.fmean(pairs["chosen - cheapest 3"]),
        at_least=TARGET_VS_CHEAPEST,
        unit=" pts",
    )
    batch, gold = pilot(args.speed_items, seed=10_000)
    seconds = best_of(lambda: batch.select_panel(gold, budget_per_item=BUDGET))
    plain = best_of(lambda: batch.select_panel(gold, budget_per_item=BUDGET, cascade=False))
    baseline = best_of(lambda: batch.against(gold))
    report.row(
        panel=f"speed: {args.speed_items:,} items x {len(CRITICS)} critics",
        select_panel_s=seconds,
        plain_only_s=plain,
        against_gold_s=baseline,
    )
    report.note(
        f"select_panel took {seconds:.3f} s = {seconds / baseline:.1f} x one batch.against(gold) "
        f"({baseline:.3f} s) on {args.speed_items:,} items x {len(CRITICS)} critics; "
        f"{plain:.3f} s ({plain / baseline:.1f} x) with cascade=False (best of 3 each, same "
        "process; reported, no target for the ratios)"
    )
    report.check(
        f"select_panel, {args.speed_items:,} items x {len(CRITICS)} critics (best of 3)",
        seconds,
        at_most=TARGET_SECONDS,
        unit=" s",
    )
    return report.finish(
        [
            ("panel", "panel"),
            ("held_out_accuracy", "held-out accuracy"),
            ("se", "SE"),
            ("worst", "worst seed"),
            ("select_panel_s", "select_panel s"),
            ("plain_only_s", "cascade=False s"),
            ("against_gold_s", "against(gold) s"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
