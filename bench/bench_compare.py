"""Comparing two runs of a judge (``compare_runs``): power, A/A false alarms, exact McNemar
against statsmodels, paired-bootstrap coverage, and two 100,000-item results files.

The judge: 3 simulated critics of accuracy 0.85, 0.88 and 0.90 (``Persona(...,
resample=True)``, asked at temperature 0.7, so an item judged again is a fresh draw: the
judge's own noise), errors correlated (``error_correlation`` 0.3, as in docs/testing.md),
majority vote, a PASS/FAIL prompt; 2,000 items of which 30% are truly FAIL. The candidate
run changes 3% of the items (60, all truly PASS) into outputs that truly FAIL: a 3-point
drop of the true PASS share.

Where each figure comes from:

* **simulator**: ONE pair of runs end to end on :class:`cross_judge.testing.VendorServer`
  (an :class:`~cross_judge.Ensemble` of the 3 critics, ``judge_many(mode="batch")``
  through the simulator's OpenAI Batch API on 127.0.0.1: the same answers as live calls,
  about twice as fast), then ``compare_runs(baseline, candidate)``: the observed judge noise (the
  unchanged items whose consensus changed), the planted items' flips and the decision;
* **in-bench model**: the replicated power (``--power`` pairs of runs with the planted
  drop) and the A/A false alarms (``--aa`` pairs of runs judging the same outputs twice).
  ``cross_judge.testing`` exposes no public way to draw a persona's answer without HTTP,
  and 1,250 pairs of 2,000-item runs through HTTP would take hours, so this bench draws
  the answers from the simulator's documented decision law (docs/testing.md) with the same
  parameters: each item has a truth and a difficulty ``d`` uniform in (0, 1) (an output
  changed by the candidate is a new text: a new difficulty); a critic of accuracy ``a`` is
  right with probability ``Phi((-Phi^-1(1 - a) - sqrt(rho) Phi^-1(d)) / sqrt(1 - rho))``,
  independently of the other critics given ``d``, and with two labels a wrong answer is
  the other label; a repeated judgement of an item is a fresh draw at the same ``d`` (what
  ``resample`` does). Each run is a :class:`~cross_judge.batch.BatchResult` of
  :class:`~cross_judge.verdict.EnsembleVerdict` objects voted by the library's majority,
  compared by the public ``compare_runs`` (``allow_missing_manifest=True``: in-memory
  batches carry no run manifest). The table prints the model's analytic rates and power
  (a Poisson approximation of the discordant counts, tested with the library's exact
  McNemar) beside the simulator's observed ones, so the model is checked, not trusted.

Targets: power >= 0.8 (``regressed`` with ``min_effect`` 0, alpha 0.05) with its standard
error; A/A false alarms (``main.p_value < 0.05``) <= 5% over 1,000 pairs; exact McNemar
p-values equal statsmodels' ``mcnemar(table, exact=True).pvalue`` within 1e-12 over every
table up to 80 discordant pairs a side, tables around the exact-sum limit and large ones up
to 400,000 pairs; the paired-bootstrap 95% interval covers the true mean 93-97% of the time
(``--coverage`` replicates of n = 300 paired differences: rubric-like totals, 4 PASS/FAIL
criteria, with 2,000 resamples, and a skewed continuous one with 1,000 resamples, the
element-by-element path being O(n x resamples)); ``compare_runs(path_a, path_b)`` of two
100,000-item results files (3 critics with reasoning and raw responses, the item's text,
a run manifest each, written by ``RunManifest`` for the simulated panel) in a fresh
process under 5 s and 300 MB of peak RSS (that process's ``VmHWM``, ``ru_maxrss`` off
Linux: interpreter, imports, reading and the comparison): the median time of ``--repeats``
fresh processes (default 3; a shared machine's one slow run does not decide it) and the
largest peak. Its time is also printed against ``json.loads`` of every line of both files
in the same process, the floor any comparison pays.

Replicates run on ``--workers`` processes (default 2); the large-file comparison runs when
they are done, alone.

    python bench/bench_compare.py [--items 2000] [--aa 1000] [--power 250] [--coverage 1000]
                                  [--large 100000] [--workers 2] [--repeats 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist, fmean
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import BatchResult, Critic, Ensemble, EnsembleVerdict, Verdict
from cross_judge.batch import BatchOptions
from cross_judge.report import RunManifest, compare_runs
from cross_judge.stats import mcnemar_exact, paired_bootstrap_interval
from cross_judge.testing import Persona, VendorServer

LABELS = ("PASS", "FAIL")
ACCURACIES = (0.85, 0.88, 0.90)
ERROR_CORRELATION = 0.3
TEMPERATURE = 0.7
FAIL_SHARE = 0.3
DROP = 0.03
ALPHA = 0.05
DIFFICULTY_SEED = 11
PROMPT = (
    "Does this answer pass the task?\n<item>{query}</item>\n"
    "Answer in JSON with kind (PASS/FAIL), confidence (0-1), reasoning."
)
TARGET_SECONDS = 5.0
TARGET_MB = 300.0
_NORMAL = NormalDist()


# -- the items ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Items:
    """A baseline's outputs and their truths, and the candidate's: the same outputs but
    for ``planted`` (truly PASS in the baseline), whose candidate output truly FAILs."""

    ids: list[str]
    texts: list[str]
    truth: list[str]
    planted: frozenset[int]

    def candidate_texts(self) -> list[str]:
        return [
            f"{text} (revised: now misses the point)" if i in self.planted else text
            for i, text in enumerate(self.texts)
        ]

    def candidate_truth(self) -> list[str]:
        return ["FAIL" if i in self.planted else t for i, t in enumerate(self.truth)]


def make_items(n: int, rng: random.Random) -> Items:
    """``n`` items, ``round(FAIL_SHARE n)`` truly FAIL, ``round(DROP n)`` planted among
    the others."""
    failing = set(rng.sample(range(n), round(FAIL_SHARE * n)))
    truth = ["FAIL" if i in failing else "PASS" for i in range(n)]
    passing = [i for i in range(n) if i not in failing]
    planted = frozenset(rng.sample(passing, round(DROP * n)))
    return Items(
        ids=[f"item-{i:05d}" for i in range(n)],
        texts=[f"answer {i:05d} to the task" for i in range(n)],
        truth=truth,
        planted=planted,
    )


# -- the simulator: one pair of runs end to end -----------------------------------------------


def _panel(url: str) -> Ensemble:
    critics = [
        Critic(
            name=f"c{j}",
            model=f"sim-{j}",
            vendor="custom",
            base_url=url,
            api_key="unused",
            prompt_template=PROMPT,
            labels=LABELS,
            json_mode=False,
            max_retries=0,
            temperature=TEMPERATURE,
        )
        for j in range(len(ACCURACIES))
    ]
    return Ensemble(critics, voting="majority")


async def _judge(panel: Ensemble, ids: Sequence[str], texts: Sequence[str]) -> BatchResult:
    items = [{"id": i, "query": t} for i, t in zip(ids, texts, strict=True)]
    options = BatchOptions(vendors=("custom",), poll_s=0.01)
    async with panel:
        return await panel.judge_many(items, mode="batch", batch=options)


@dataclass
class Simulated:
    items: Items
    baseline: BatchResult
    candidate: BatchResult
    panel: Ensemble
    seconds: float


def simulate(n: int) -> Simulated:
    """The baseline and the candidate judged on one simulator (so unchanged outputs get a
    second, fresh draw in the candidate run)."""
    items = make_items(n, random.Random("simulator items"))
    cand_texts = items.candidate_texts()
    gold = dict(zip(items.texts, items.truth, strict=True))
    gold.update({cand_texts[i]: "FAIL" for i in items.planted})
    personas = [
        Persona(f"sim-{j}", accuracy=a, labels=LABELS, seed=j, resample=True)
        for j, a in enumerate(ACCURACIES)
    ]
    started = time.perf_counter()
    with VendorServer(
        personas, gold=gold, error_correlation=ERROR_CORRELATION, difficulty_seed=DIFFICULTY_SEED
    ) as server:
        panel = _panel(server.url)
        baseline = asyncio.run(_judge(panel, items.ids, items.texts))
        candidate = asyncio.run(_judge(_panel(server.url), items.ids, cand_texts))
    return Simulated(items, baseline, candidate, panel, time.perf_counter() - started)


def observed(sim: Simulated) -> dict[str, float]:
    """What the simulated pair shows: each critic's and the majority's accuracy (baseline),
    the unchanged items whose consensus changed (judge noise), the planted items that went
    PASS -> FAIL."""
    base, cand = sim.baseline.verdicts, sim.candidate.verdicts
    truth = sim.items.truth
    n = len(base)
    out = {
        f"c{j} accuracy": fmean(r.verdicts[j].kind == t for r, t in zip(base, truth, strict=True))
        for j in range(len(ACCURACIES))
    }
    out["majority accuracy"] = fmean(r.consensus == t for r, t in zip(base, truth, strict=True))
    unchanged = [i for i in range(n) if i not in sim.items.planted]
    out["noise"] = fmean(base[i].consensus != cand[i].consensus for i in unchanged)
    out["planted worse"] = fmean(
        base[i].consensus == "PASS" and cand[i].consensus == "FAIL" for i in sim.items.planted
    )
    return out


# -- the in-bench model -------------------------------------------------------------------------


def p_right(accuracy: float, difficulty: float, rho: float) -> float:
    """P(right | difficulty): the simulator's Gaussian threshold model (docs/testing.md)."""
    d = min(max(difficulty, 1e-9), 1.0 - 1e-9)
    c = _NORMAL.inv_cdf(1.0 - accuracy)
    return _NORMAL.cdf((-c - math.sqrt(rho) * _NORMAL.inv_cdf(d)) / math.sqrt(1.0 - rho))


def critic_p_right(difficulty: Sequence[float]) -> list[tuple[float, ...]]:
    """:func:`p_right` of every critic on items of these difficulties (the thresholds and
    the difficulty's normal quantile computed once)."""
    rho = ERROR_CORRELATION
    thresholds = [-_NORMAL.inv_cdf(1.0 - a) for a in ACCURACIES]
    shift, scale = math.sqrt(rho), 1.0 / math.sqrt(1.0 - rho)
    cdf, inv_cdf = _NORMAL.cdf, _NORMAL.inv_cdf
    out = []
    for d in difficulty:
        z = shift * inv_cdf(min(max(d, 1e-9), 1.0 - 1e-9))
        out.append(tuple(cdf((t - z) * scale) for t in thresholds))
    return out


def majority_right(ps: Sequence[float]) -> float:
    """P(a majority of 3 independent critics is right), each right with ``ps[j]``."""
    p1, p2, p3 = ps
    return p1 * p2 + p1 * p3 + p2 * p3 - 2 * p1 * p2 * p3


@dataclass(frozen=True)
class Expected:
    """The model's rates, integrated over the difficulty: majority accuracy ``m``, judge
    noise (an unchanged item's consensus differs between two runs: ``2 E[m(1 - m)]``), a
    planted item going PASS -> FAIL (``E[m]^2``) and FAIL -> PASS (``E[1 - m]^2``), the
    expected discordant counts each way and the power."""

    majority: float
    noise: float
    planted_worse: float
    planted_better: float
    worse: float
    better: float
    power: float


def expected(n: int, accuracies: Sequence[float] = ACCURACIES, grid: int = 4000) -> Expected:
    ms = [
        majority_right([p_right(a, (k + 0.5) / grid, ERROR_CORRELATION) for a in accuracies])
        for k in range(grid)
    ]
    m = fmean(ms)
    half_noise = fmean(x * (1 - x) for x in ms)
    planted = round(DROP * n)
    worse = (n - planted) * half_noise + planted * m * m
    better = (n - planted) * half_noise + planted * (1 - m) ** 2
    return Expected(
        m, 2 * half_noise, m * m, (1 - m) ** 2, worse, better, poisson_power(better, worse)
    )


def poisson_power(better: float, worse: float, alpha: float = ALPHA) -> float:
    """P(exact McNemar p < alpha and more worse than better) with the discordant counts
    independent Poisson(``better``) and Poisson(``worse``)."""

    def pmf(mean: float) -> dict[int, float]:
        low, high = max(0, int(mean - 9 * math.sqrt(mean) - 5)), int(mean + 9 * math.sqrt(mean) + 5)
        return {
            k: math.exp(k * math.log(mean) - mean - math.lgamma(k + 1)) for k in range(low, high)
        }

    pb, pw = pmf(better), pmf(worse)
    return sum(
        qb * qw
        for b, qb in pb.items()
        for w, qw in pw.items()
        if w > b and mcnemar_exact(b, w) < alpha
    )


_SHA = "7c3a5165ec72514766cc377b34cb406ff9394f157843eeb8eb7e2ebcbc06f9d9"


class RunBuilder:
    """Cheap :class:`BatchResult` objects: an item's result depends only on its id and its
    3 votes, so each (item, votes) result is built once (a copy of the votes' template,
    voted by the library's majority) and shared by every run that needs it."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = list(ids)
        ensemble = Ensemble(critics=[], voting="majority")
        self.templates = []
        for pattern in range(2 ** len(ACCURACIES)):
            votes = [
                Verdict(
                    kind=LABELS[(pattern >> j) & 1],
                    confidence=0.8,
                    reasoning=f"The item is consistent with {LABELS[(pattern >> j) & 1]}.",
                    critic_id=f"c{j}",
                    model=f"sim-{j}",
                    vendor="custom",
                    prompt_sha256=_SHA,
                )
                for j in range(len(ACCURACIES))
            ]
            self.templates.append(ensemble.aggregate_verdicts(votes, query_id="template"))
        self.cache: dict[tuple[int, int], EnsembleVerdict] = {}

    def run(self, patterns: Sequence[int]) -> BatchResult:
        results = []
        for i, pattern in enumerate(patterns):
            found = self.cache.get((i, pattern))
            if found is None:
                found = self.templates[pattern].model_copy(update={"query_id": self.ids[i]})
                self.cache[i, pattern] = found
            results.append(found)
        return BatchResult(
            verdicts=results, critics=[f"c{j}" for j in range(len(ACCURACIES))], voting="majority"
        )


def judged(
    truth: Sequence[str], chances: Sequence[tuple[float, ...]], rng: random.Random
) -> list[int]:
    """One run's votes, as a bit pattern per item (bit ``j`` set: critic ``j`` said FAIL),
    critic ``j`` right on item ``i`` with probability ``chances[i][j]``."""
    patterns = []
    for label, ps in zip(truth, chances, strict=True):
        wrong = 1 if label == "PASS" else 0
        pattern = 0
        for j, p in enumerate(ps):
            pattern |= ((1 - wrong) if rng.random() < p else wrong) << j
        patterns.append(pattern)
    return patterns


_BUILDER: RunBuilder | None = None


def replicate(kind: str, n: int, seed: int) -> tuple[bool, float, int, int]:
    """One pair of runs of the model: ``"aa"`` judges the same outputs twice, ``"power"``
    the baseline then the candidate with the planted drop. Returns ``regressed``, the main
    p-value and the items that moved better and worse."""
    global _BUILDER
    rng = random.Random(f"{kind} {seed}")
    items = make_items(n, rng)
    if _BUILDER is None or len(_BUILDER.ids) != n:
        _BUILDER = RunBuilder(items.ids)
    difficulty = [rng.random() for _ in range(n)]
    chances = critic_p_right(difficulty)
    baseline = judged(items.truth, chances, rng)
    if kind == "aa":
        candidate = judged(items.truth, chances, rng)
    else:
        # A changed output is a new text: a new difficulty.
        planted = sorted(items.planted)
        fresh = critic_p_right([rng.random() for _ in planted])
        for i, p in zip(planted, fresh, strict=True):
            chances[i] = p
        candidate = judged(items.candidate_truth(), chances, rng)
    diff = compare_runs(
        _BUILDER.run(baseline), _BUILDER.run(candidate), allow_missing_manifest=True, seed=seed
    )
    p = diff.main.p_value
    return diff.regressed, 1.0 if p is None else p, diff.main.better, diff.main.worse


def replicates(kind: str, n: int, seeds: Sequence[int]) -> list[tuple[bool, float, int, int]]:
    return [replicate(kind, n, seed) for seed in seeds]


# -- the paired bootstrap's coverage ------------------------------------------------------------

RUBRIC_CRITERIA = 4
RUBRIC_PASS = 0.7
RUBRIC_KEEP = 0.8
RUBRIC_NEW_PASS = 0.6
RUBRIC_MEAN = RUBRIC_CRITERIA * (
    RUBRIC_KEEP * RUBRIC_PASS + (1 - RUBRIC_KEEP) * RUBRIC_NEW_PASS - RUBRIC_PASS
)
"""Rubric totals (4 PASS/FAIL criteria, each passed 70% of the time by the baseline): the
candidate keeps each criterion's result with probability 0.8, else draws it anew at 60%;
the mean paired difference of totals is 4 (0.8 0.7 + 0.2 0.6 - 0.7) = -0.08."""
SKEWED_MEAN = 0.05
"""Continuous differences ``0.05 + (E - 1) / 2`` with ``E`` exponential(1): mean 0.05,
skewness 2 (a hard case for a percentile interval)."""


def rubric_differences(n: int, rng: random.Random) -> list[float]:
    out = []
    for _ in range(n):
        total = 0
        for _ in range(RUBRIC_CRITERIA):
            base = rng.random() < RUBRIC_PASS
            cand = base if rng.random() < RUBRIC_KEEP else rng.random() < RUBRIC_NEW_PASS
            total += int(cand) - int(base)
        out.append(float(total))
    return out


def skewed_differences(n: int, rng: random.Random) -> list[float]:
    return [SKEWED_MEAN + (rng.expovariate(1.0) - 1.0) / 2 for _ in range(n)]


def coverage(kind: str, n: int, resamples: int, seeds: Sequence[int]) -> list[tuple[bool, float]]:
    """Per replicate: whether the 95% interval covers the true mean, and its width."""
    draw, truth = (
        (rubric_differences, RUBRIC_MEAN) if kind == "rubric" else (skewed_differences, SKEWED_MEAN)
    )
    out = []
    for seed in seeds:
        differences = draw(n, random.Random(f"{kind} {seed}"))
        low, high = paired_bootstrap_interval(differences, resamples=resamples, seed=seed)
        out.append((low <= truth <= high, high - low))
    return out


# -- exact McNemar against statsmodels --------------------------------------------------------


def mcnemar_tables() -> list[tuple[int, int]]:
    """Every (b, c) up to 80 each, tables around the exact-sum limit (5,000 discordant
    pairs), and large ones, balanced and not."""
    tables = [(b, c) for b in range(81) for c in range(81)]
    for total in (4990, 4999, 5000, 5001, 5010, 6000):
        for share in (0.5, 0.49, 0.48, 0.45, 0.4, 0.1, 0.0):
            b = round(share * total)
            tables.append((b, total - b))
    rng = random.Random("mcnemar")
    for _ in range(300):
        total = rng.randint(5_000, 400_000)
        spread = math.sqrt(total) * rng.uniform(0, 4)
        b = max(0, min(total, round(total / 2 - spread)))
        tables.append((b, total - b))
    for total in (10_000, 100_000, 400_000):
        tables += [(total // 2, total - total // 2), (0, total), (1, total - 1)]
    return tables


def mcnemar_check() -> dict[str, float]:
    """The largest absolute difference from statsmodels and, over p-values above 1e-300,
    the largest relative one."""
    from statsmodels.stats.contingency_tables import mcnemar

    tables = mcnemar_tables()
    worst_abs = worst_rel = 0.0
    ours_s = theirs_s = 0.0
    for b, c in tables:
        started = time.perf_counter()
        ours = mcnemar_exact(b, c)
        ours_s += time.perf_counter() - started
        started = time.perf_counter()
        theirs = float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)
        theirs_s += time.perf_counter() - started
        worst_abs = max(worst_abs, abs(ours - theirs))
        if theirs > 1e-300:
            worst_rel = max(worst_rel, abs(ours - theirs) / theirs)
    return {
        "tables": len(tables),
        "largest": max(b + c for b, c in tables),
        "abs": worst_abs,
        "rel": worst_rel,
        "ours_ms": 1000 * ours_s / len(tables),
        "theirs_ms": 1000 * theirs_s / len(tables),
    }


# -- two 100,000-item results files -------------------------------------------------------------

REASONING = (
    "The answer addresses the question that was asked and states its conclusion plainly. "
    "It {verb} the key requirement: the figures it quotes match the source, the steps "
    "follow from one another, and nothing the task forbids appears in it. The wording "
    "is clear enough for the intended reader, so the verdict is {kind}."
)
ANSWER = (
    " The quarterly report shows revenue of 4.2 million, up 6% on the previous quarter, "
    "driven by the new subscription tier; costs rose 3%, mostly hosting. The forecast for "
    "next quarter assumes the same growth, with a risk from the delayed partner launch. "
    "Recommended: keep the hiring plan, review the hosting contract before renewal."
)


def _templates(batch: BatchResult) -> list[dict[str, Any]]:
    """The run's results as results-file records, each critic's reasoning and raw
    response lengthened to an LLM judge's."""
    out = []
    for result in batch.verdicts:
        record = json.loads(result.model_dump_json())
        for verdict in record["verdicts"]:
            kind = verdict["kind"]
            verb = "meets" if kind == "PASS" else "misses"
            verdict["reasoning"] = REASONING.format(verb=verb, kind=kind)
            verdict["raw_response"] = json.dumps(
                {
                    "kind": kind,
                    "confidence": verdict["confidence"],
                    "reasoning": verdict["reasoning"],
                }
            )
        out.append(record)
    return out


def write_large(path: Path, batch: BatchResult, n: int, panel: Ensemble) -> None:
    """``n`` results lines, item ``k`` being the run's result ``k % len(batch)`` under a new
    id and a longer text, and the run manifest beside them."""
    middles = []
    for record in _templates(batch):
        query = record["item"]["query"]
        rest = {key: value for key, value in record.items() if key not in ("query_id", "item")}
        middles.append((json.dumps(rest)[1:-1], query))
    with open(path, "w", encoding="utf-8") as out:
        for k in range(n):
            middle, query = middles[k % len(middles)]
            item = json.dumps({"query": f"{query} #{k}.{ANSWER}"})
            out.write(f'{{"query_id": "item-{k:06d}", {middle}, "item": {item}}}\n')
    manifest = RunManifest.prepare(
        path,
        ensemble=panel,
        argv=["review", "items.jsonl", "--panel", "panel.yaml", "--out", path.name],
        items=Path("items.jsonl"),
        panel=Path("panel.yaml"),
        options={"concurrency": 64},
    )
    manifest.begin()
    manifest.finish("done", {"items": n})


CHILD = """
import json, resource, sys, time
def peak_mb():
    # VmHWM: this process's own peak. ru_maxrss would carry the parent's, copied at the
    # fork, across the exec (Linux keeps the larger).
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)
from cross_judge.report import compare_runs
imported = peak_mb()
started = time.perf_counter()
diff = compare_runs(sys.argv[1], sys.argv[2])
seconds = time.perf_counter() - started
peak = peak_mb()
started = time.perf_counter()
for path in sys.argv[1:3]:
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)
floor = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "peak_mb": peak, "import_mb": imported, "floor": floor,
                  "n": diff.n_paired, "difference": diff.main.difference,
                  "p": diff.main.p_value, "regressed": diff.regressed,
                  "manifests": diff.manifests_compared}))
"""


def measure_large(path_a: Path, path_b: Path) -> dict[str, Any]:
    """``compare_runs(path_a, path_b)`` in a fresh process: its time and peak RSS, then the
    ``json.loads`` floor in the same process."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path_a), str(path_b)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"compare_runs on the large files failed: {done.stderr}")
    measured: dict[str, Any] = json.loads(done.stdout)
    measured["process_s"] = time.perf_counter() - started
    return measured


# -- the bench ------------------------------------------------------------------------------------


def _chunks(count: int, size: int) -> list[range]:
    return [range(start, min(count, start + size)) for start in range(0, count, size)]


def _share_se(hits: int, n: int) -> tuple[float, float]:
    p = hits / n
    return p, math.sqrt(p * (1 - p) / n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--aa", type=int, default=1000, help="A/A pairs of runs (model)")
    parser.add_argument("--power", type=int, default=250, help="planted-drop pairs (model)")
    parser.add_argument("--coverage", type=int, default=1000, help="bootstrap replicates")
    parser.add_argument("--large", type=int, default=100_000, help="items of the large files")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--repeats", type=int, default=3, help="fresh processes comparing the large files"
    )
    parser.add_argument("--keep", metavar="DIR", help="write the large files here and keep them")
    args = parser.parse_args()
    n = args.items
    report = Report(
        "compare",
        "compare_runs: power, A/A false alarms, McNemar vs statsmodels, bootstrap, 100k files",
        items=n,
        critics="accuracy " + "/".join(f"{a:g}" for a in ACCURACIES),
        error_correlation=ERROR_CORRELATION,
        temperature=TEMPERATURE,
        fail_share=FAIL_SHARE,
        drop=DROP,
        aa_pairs=args.aa,
        power_pairs=args.power,
        coverage_replicates=args.coverage,
        large=args.large,
    )
    bench_started = time.perf_counter()
    # The replicates go to the workers first; the simulator's pair runs meanwhile.
    pool = ProcessPoolExecutor(max_workers=args.workers)
    jobs: dict[str, list[Future[Any]]] = {
        "aa": [pool.submit(replicates, "aa", n, s) for s in _chunks(args.aa, 50)],
        "power": [pool.submit(replicates, "power", n, s) for s in _chunks(args.power, 25)],
        "rubric": [
            pool.submit(coverage, "rubric", 300, 2000, s) for s in _chunks(args.coverage, 100)
        ],
        "skewed": [
            pool.submit(coverage, "skewed", 300, 1000, s) for s in _chunks(args.coverage, 100)
        ],
    }
    model = expected(n)
    weaker = expected(n, (0.75, 0.80, 0.85))

    sim = simulate(n)
    seen = observed(sim)
    sim_diff = compare_runs(sim.baseline, sim.candidate, allow_missing_manifest=True)
    for j, a in enumerate(ACCURACIES):
        report.row(
            measure=f"critic c{j} accuracy (baseline)",
            source="simulator",
            value=seen[f"c{j} accuracy"],
            expected=a,
        )
    report.row(
        measure="majority accuracy (baseline)",
        source="simulator",
        value=seen["majority accuracy"],
        expected=model.majority,
    )
    report.row(
        measure="judge noise: unchanged items whose consensus changed",
        source="simulator",
        value=seen["noise"],
        expected=model.noise,
    )
    report.row(
        measure="planted items judged PASS -> FAIL",
        source="simulator",
        value=seen["planted worse"],
        expected=model.planted_worse,
    )
    report.row(
        measure="PASS share difference (candidate - baseline)",
        source="simulator",
        value=sim_diff.main.difference,
        expected=(model.better - model.worse) / n,
        detail=f"better {sim_diff.main.better}, worse {sim_diff.main.worse}, "
        f"p {sim_diff.main.p_value:.2g}, regressed {sim_diff.regressed}",
    )
    report.note(
        f"simulator: {n} items x {len(ACCURACIES)} critics, baseline and candidate (one "
        f"VendorServer, judge_many mode='batch') in {sim.seconds:.1f}s (beside the workers); "
        f"expected = the in-bench model's analytic value"
    )

    started = time.perf_counter()
    mc = mcnemar_check()
    report.row(
        measure="exact McNemar vs statsmodels: largest |p - p_statsmodels|",
        source="statsmodels",
        value=f"{mc['abs']:.1e}",
        detail=f"{mc['tables']} tables up to {mc['largest']:,} discordant pairs; largest "
        f"relative difference {mc['rel']:.1e}; {mc['ours_ms']:.3f} ms a table "
        f"(statsmodels {mc['theirs_ms']:.3f} ms)",
    )
    mcnemar_s = time.perf_counter() - started

    # The large files are written while the workers finish (their writing is not timed).
    scratch = tempfile.TemporaryDirectory()
    folder = Path(args.keep or scratch.name)
    folder.mkdir(parents=True, exist_ok=True)
    path_a, path_b = folder / "baseline.jsonl", folder / "candidate.jsonl"
    started = time.perf_counter()
    write_large(path_a, sim.baseline, args.large, sim.panel)
    write_large(path_b, sim.candidate, args.large, sim.panel)
    written = time.perf_counter() - started
    size_mb = (path_a.stat().st_size + path_b.stat().st_size) / 1e6

    started = time.perf_counter()
    results = {kind: [row for job in chunk for row in job.result()] for kind, chunk in jobs.items()}
    pool.shutdown()
    waited = time.perf_counter() - started
    aa = results["aa"]
    alarms, alarms_se = _share_se(sum(p < ALPHA for _, p, _, _ in aa), len(aa))
    aa_regressed = sum(r for r, _, _, _ in aa) / len(aa)
    aa_noise = fmean((b + w) / n for _, _, b, w in aa)
    report.row(
        measure="A/A false alarms (main p < 0.05)",
        source="in-bench model",
        value=alarms,
        se=alarms_se,
        n=len(aa),
        detail=f"regressed in {aa_regressed:.1%}; judge noise {aa_noise:.2%} of items "
        f"(expected {model.noise:.2%})",
    )
    power_rows = results["power"]
    power, power_se = _share_se(sum(r for r, _, _, _ in power_rows), len(power_rows))
    drop = fmean((b - w) / n for _, _, b, w in power_rows)
    report.row(
        measure="power: regressed on the planted 3-point drop",
        source="in-bench model",
        value=power,
        expected=model.power,
        se=power_se,
        n=len(power_rows),
        detail=f"mean difference {drop:+.4f} (expected {(model.better - model.worse) / n:+.4f})",
    )
    report.note(
        f"model power at accuracies 0.75/0.80/0.85 (a weaker panel): {weaker.power:.2f} "
        f"(judge noise {weaker.noise:.1%}): 2,000 items would not catch a 3-point drop there"
    )
    cover: dict[str, tuple[float, float]] = {}
    for kind, what in (
        ("rubric", "rubric totals (4 criteria), 2,000 resamples"),
        ("skewed", "skewed continuous, 1,000 resamples"),
    ):
        rows = results[kind]
        cover[kind] = _share_se(sum(c for c, _ in rows), len(rows))
        report.row(
            measure=f"bootstrap 95% coverage, n = 300, {what}",
            source="known distribution",
            value=cover[kind][0],
            expected=0.95,
            se=cover[kind][1],
            n=len(rows),
            detail=f"mean width {fmean(w for _, w in rows):.3f}",
        )
    report.note(
        f"replicates on {args.workers} workers: done {waited:.1f}s after the simulator, "
        f"McNemar ({mcnemar_s:.1f}s) and the writing of the large files"
    )

    # Measured alone (the replicates are done), --repeats times in fresh processes: the
    # median run's figures, the largest peak of them all.
    try:
        runs = sorted(
            (measure_large(path_a, path_b) for _ in range(args.repeats)),
            key=lambda run: float(run["seconds"]),
        )
    finally:
        scratch.cleanup()
    large = runs[len(runs) // 2]
    large["peak_mb"] = max(run["peak_mb"] for run in runs)
    times = ", ".join(f"{run['seconds']:.2f}" for run in runs)
    report.row(
        measure=f"compare_runs of two {args.large:,}-item files: seconds",
        source="files",
        value=large["seconds"],
        detail=f"median of {len(runs)} fresh processes ({times} s); "
        f"{size_mb:.0f} MB in all ({size_mb * 1e6 / (2 * args.large):.0f} B a line), "
        f"written in {written:.1f}s beside the workers; "
        f"fresh process {large['process_s']:.1f}s in all",
    )
    report.row(
        measure="  json.loads of every line of both files (floor)",
        source="files",
        value=large["floor"],
        detail=f"compare / floor {large['seconds'] / large['floor']:.2f}x",
    )
    report.row(
        measure="  peak RSS of those processes, the largest (MB)",
        source="files",
        value=large["peak_mb"],
        detail=f"{large['import_mb']:.0f} MB after importing; manifests compared: "
        f"{large['manifests']}; difference {large['difference']:+.4f}, p {large['p']:.2g}",
    )

    report.check(
        "power: planted 3-point drop, 2,000 items",
        power,
        at_least=0.8,
        note=f"in-bench model, SE {power_se:.3f}, {len(power_rows)} pairs; "
        f"predicted {model.power:.3f}",
    )
    report.check(
        "A/A false alarms (p < 0.05)",
        100 * alarms,
        at_most=5.0,
        unit="%",
        note=f"in-bench model, SE {100 * alarms_se:.2f} points, {len(aa)} pairs",
    )
    report.check(
        "exact McNemar: largest |p - statsmodels p|",
        mc["abs"],
        at_most=1e-12,
        note=f"{mc['tables']} tables, up to {mc['largest']:,} discordant pairs",
    )
    for kind, what in (("rubric", "rubric totals"), ("skewed", "skewed continuous")):
        value, se = cover[kind]
        note = f"SE {100 * se:.2f} points, {args.coverage} replicates of n = 300"
        name = f"bootstrap 95% coverage, {what}"
        report.check(name, 100 * value, at_least=93.0, unit="%", note=note)
        report.check(name, 100 * value, at_most=97.0, unit="%", note=note)
    report.check(
        f"compare_runs, two {args.large:,}-item files: time",
        large["seconds"],
        at_most=TARGET_SECONDS,
        unit=" s",
        note=f"{large['seconds'] / large['floor']:.2f}x json.loads of every line",
    )
    report.check(
        f"compare_runs, two {args.large:,}-item files: peak RSS",
        large["peak_mb"],
        at_most=TARGET_MB,
        unit=" MB",
        note="the whole process: interpreter, imports, reading, comparing",
    )
    report.note(
        f"compare_runs / json.loads of every line, two {args.large:,}-item files: "
        f"{large['seconds'] / large['floor']:.2f}x (reported, no target)"
    )
    report.note(
        f"simulator pair: regressed {sim_diff.regressed}, PASS share "
        f"{sim_diff.main.difference:+.4f} (p {sim_diff.main.p_value:.2g}) (reported, no target)"
    )
    report.note(f"bench wall time {time.perf_counter() - bench_started:.1f}s")
    return report.finish(
        [
            ("measure", "measure"),
            ("source", "source"),
            ("value", "value"),
            ("expected", "expected"),
            ("se", "SE"),
            ("n", "n"),
            ("detail", "detail"),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
