"""Confidence from token probabilities against the confidence the model states: calibration
error on the same answers, and what each buys a calibrated cascade.

The simulated vendor serves token logprobs with a known law (``Persona.logprob_temperature``):
calibrated by construction at T = 1, over-confident below 1; the confidence it states keeps
its old law (uniform over (0.6, 0.95) when right, the lower half when wrong), so it is
miscalibrated and carries some signal. Every item has a gold label and a difficulty, and
errors correlate (``error_correlation``, 0.3 as in ``bench_cascade.py``).

1. **Calibration.** For each persona (accuracy 0.6, 0.75 and 0.9 at T = 1; 0.75 at T = 0.5)
   two critics on the same model, so on the same answers: ``confidence="stated"`` and
   ``confidence="logprob"`` (``structured="auto"``, labels given). ``--items`` items each:
   the expected calibration error (10 bins,
   :func:`~cross_judge.stats._confidence_calibration.expected_calibration_error`) of each
   source, the ratio stated / logprob, and the AUROC of each (how well the confidence
   separates right answers from wrong ones, which is what a threshold feeds on).
2. **Cascade.** A cheap tier of one, then of three, critics of accuracy 0.75, and a strong
   tier of one critic of accuracy 0.93 (stated: the last tier's confidence decides nothing),
   the cheap critics reading one source or the other. Every tier judges
   every item once (``judge_many(all_tiers=True)``); over ``--splits`` random splits (the
   same for both sources) the threshold is calibrated on ``--calibrate`` labelled items
   (``calibrate_cascade(score="confidence")``, and ``"support"`` for three critics;
   target 0.9, delta 0.1) and replayed on ``--test`` other items (``Cascade.replay``: zero
   calls). Reported: the share of test items escalated to the strong tier, agreement with
   gold, the share of splits at the target, for each source.

Targets: at T = 1 the logprob ECE is < 0.05 and below the stated one; every valid logprob
verdict says ``confidence_source="logprob"``; both critics of a persona give the same
answers; at the same guarantee a cascade reading logprobs escalates no more items than one
reading stated confidences. The share of splits at the target is reported without one.

    python bench/bench_confidence_sources.py [--items 1000] [--calibrate 500] [--test 1000]
        [--splits 50]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import Report

from cross_judge import (
    BatchResult,
    Cascade,
    Critic,
    Ensemble,
    EnsembleVerdict,
    Escalation,
    Verdict,
    calibrate_cascade,
)
from cross_judge.critic._logprobs import label_probabilities
from cross_judge.stats._confidence_calibration import expected_calibration_error
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport import TokenLogprob

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
PROMPT = (
    "Judge whether this taxonomy category should be kept.\n<item>{query}</item>\n"
    "Answer in JSON with kind (KEEP/REJECT/SPLIT/MERGE), confidence (0-1), reasoning."
)
SOURCES = ("stated", "logprob")
TARGET, DELTA = 0.9, 0.1
MAX_LOGPROB_ECE = 0.05
# (model, accuracy, logprob_temperature) of the calibration section.
CALIBRATION_PERSONAS = (
    ("sim-acc60", 0.60, 1.0),
    ("sim-acc75", 0.75, 1.0),
    ("sim-acc90", 0.90, 1.0),
    ("sim-acc75-t05", 0.75, 0.5),
)
CHEAP_ACCURACY, STRONG_ACCURACY = 0.75, 0.93
# (cheap critics, score) of the cascade section.
CASCADES = ((1, "confidence"), (3, "confidence"), (3, "support"))


def critic(url: str, model: str, source: str) -> Critic:
    return Critic(
        name=f"{model}-{source}",
        model=model,
        vendor="custom",
        base_url=url,
        api_key="unused",
        prompt_template=PROMPT,
        labels=LABELS,
        structured="auto",
        confidence=source,  # type: ignore[arg-type]
    )


def auroc(confidences: Sequence[float], correct: Sequence[bool]) -> float | None:
    """P(a right answer's confidence > a wrong one's), ties counting half (Mann-Whitney);
    ``None`` without both right and wrong answers."""
    ranked = sorted(range(len(confidences)), key=lambda i: confidences[i])
    ranks = [0.0] * len(ranked)
    start = 0
    while start < len(ranked):
        end = start
        while end + 1 < len(ranked) and confidences[ranked[end + 1]] == confidences[ranked[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[ranked[position]] = (start + end) / 2 + 1
        start = end + 1
    right = sum(correct)
    wrong = len(correct) - right
    if not right or not wrong:
        return None
    rank_sum = sum(r for r, y in zip(ranks, correct, strict=True) if y)
    return (rank_sum - right * (right + 1) / 2) / (right * wrong)


def coverage_at(confidences: Sequence[float], correct: Sequence[bool], target: float) -> float:
    """The largest share of answers a threshold ``confidence >= t`` keeps at an accuracy
    >= ``target`` among those kept (the best ``t`` in hindsight; answers of equal
    confidence are kept together); 0 when no threshold reaches it."""
    pairs = sorted(zip(confidences, correct, strict=True), key=lambda pair: -pair[0])
    best = right = 0
    for kept, (confidence, is_right) in enumerate(pairs, start=1):
        right += is_right
        last_of_tie = kept == len(pairs) or pairs[kept][0] != confidence
        if last_of_tie and right >= target * kept:
            best = kept
    return best / len(pairs) if pairs else 0.0


def is_vote(verdict: Verdict) -> bool:
    return verdict.error_kind is None and verdict.kind in LABELS


async def judge(panel: Ensemble | Cascade, items: list[str]) -> BatchResult:
    """Every item once; a cascade on every tier (``all_tiers=True``)."""
    async with panel:
        if isinstance(panel, Cascade):
            return await panel.judge_many(items, concurrency=64, all_tiers=True)
        return await panel.judge_many(items, concurrency=64)


Measures = dict[str, dict[str, dict[str, float | None]]]  # model -> source -> measure


def calibration_section(report: Report, args: argparse.Namespace) -> tuple[Measures, int, int, int]:
    """Judge ``--items`` items with both critics of every persona; one row per persona and
    measure. Returns the measures per persona and source, the answers that differ between
    the two critics of a persona, the valid logprob verdicts and how many of them say
    ``"logprob"``."""
    rng = random.Random(args.seed)
    items = [f"candidate category {i:05d}" for i in range(args.items)]
    gold = {item: rng.choice(LABELS) for item in items}
    personas = [
        Persona(model, accuracy=accuracy, logprob_temperature=temperature, seed=10 + i)
        for i, (model, accuracy, temperature) in enumerate(CALIBRATION_PERSONAS)
    ]
    with VendorServer(
        personas, gold=gold, error_correlation=args.error_correlation, difficulty_seed=args.seed
    ) as server:
        panel = Ensemble(
            [critic(server.url, p.model, s) for p in personas for s in SOURCES], voting="majority"
        )
        started = time.perf_counter()
        batch = asyncio.run(judge(panel, items))
        elapsed = time.perf_counter() - started
        calls = server.stats()["requests"]

    by_critic: dict[str, dict[str, Verdict]] = {}
    for result in batch.verdicts:
        for verdict in result.verdicts:
            by_critic.setdefault(verdict.critic_id, {})[result.query_id] = verdict
    measures: Measures = {}
    differing = logprob_votes = logprob_sourced = 0
    for model, accuracy, temperature in CALIBRATION_PERSONAS:
        stated, logprob = by_critic[f"{model}-stated"], by_critic[f"{model}-logprob"]
        differing += sum(stated[i].kind != logprob[i].kind for i in items)
        both = [i for i in items if is_vote(stated[i]) and is_vote(logprob[i])]
        logprob_votes += sum(is_vote(v) for v in logprob.values())
        logprob_sourced += sum(
            is_vote(v) and v.confidence_source == "logprob" for v in logprob.values()
        )
        correct = [stated[i].kind == gold[i] for i in both]
        setting = f"accuracy {accuracy:.2f}, T={temperature:g}"
        measured: dict[str, dict[str, float | None]] = {}
        for source, verdicts in (("stated", stated), ("logprob", logprob)):
            confidences = [verdicts[i].confidence for i in both]
            measured[source] = {
                "ECE": expected_calibration_error(confidences, correct, bins=10),
                "AUROC": auroc(confidences, correct),
                "mean confidence": statistics.fmean(confidences),
                "coverage at 0.9": coverage_at(confidences, correct, 0.9),
                "coverage at 0.95": coverage_at(confidences, correct, 0.95),
            }
        measures[model] = measured
        for measure in ("ECE", "AUROC", "mean confidence", "coverage at 0.9", "coverage at 0.95"):
            s, lp = measured["stated"][measure], measured["logprob"][measure]
            report.row(
                setting=setting,
                n=len(both),
                measure=measure,
                stated=None if s is None else round(s, 4),
                logprob=None if lp is None else round(lp, 4),
                ratio=None if s is None or not lp else round(s / lp, 2),
            )
        report.row(
            setting=setting,
            n=len(both),
            measure="accuracy",
            stated=round(statistics.fmean(correct), 4),
            logprob=round(statistics.fmean(correct), 4),
            ratio=None,
        )
    failed = sum(not is_vote(v) for verdicts in by_critic.values() for v in verdicts.values())
    report.note(
        f"calibration: {args.items} items x {2 * len(personas)} critics = {calls} vendor calls "
        f"in {elapsed:.1f}s; {failed} verdicts without a valid label"
    )
    return measures, differing, logprob_votes, logprob_sourced


def build_cascade(url: str, cheap: int, source: str) -> Cascade:
    tier0 = Ensemble(
        [critic(url, f"sim-cheap-{i}", source) for i in range(cheap)], voting="majority"
    )
    # The strong tier states its confidence in both: it is the last tier, so its confidence
    # decides nothing, and token probabilities cost the client about twice the CPU.
    tier1 = Ensemble([critic(url, "sim-strong", "stated")])
    return Cascade(tiers=[tier0, tier1], escalate=Escalation(agreement_below=1.0))


Outcome = tuple[float, float, bool]  # agreement, share escalated, guaranteed


def cascade_section(
    report: Report, args: argparse.Namespace
) -> dict[str, dict[str, list[Outcome]]]:
    """Judge every item on every tier once per cheap-tier size and source, then calibrate
    and replay over ``--splits`` splits. Returns the outcomes per rule and source."""
    rng = random.Random(args.seed + 1)
    items = [f"candidate category {i:05d}" for i in range(args.calibrate + args.test)]
    gold = {item: rng.choice(LABELS) for item in items}
    personas = [Persona(f"sim-cheap-{i}", accuracy=CHEAP_ACCURACY, seed=i) for i in range(3)]
    personas.append(Persona("sim-strong", accuracy=STRONG_ACCURACY, seed=7))
    cascades: dict[tuple[int, str], Cascade] = {}
    judged: dict[tuple[int, str], dict[str, EnsembleVerdict]] = {}
    with VendorServer(
        personas, gold=gold, error_correlation=args.error_correlation, difficulty_seed=args.seed
    ) as server:
        started = time.perf_counter()
        for cheap in sorted({c for c, _ in CASCADES}):
            for source in SOURCES:
                cascade = build_cascade(server.url, cheap, source)
                batch = asyncio.run(judge(cascade, items))
                cascades[cheap, source] = cascade
                judged[cheap, source] = {r.query_id: r for r in batch.verdicts}
        elapsed = time.perf_counter() - started
        calls = server.stats()["requests"]
    # The stored results live to the end: keep the collector from walking them at every
    # replay (hundreds of thousands of objects).
    gc.collect()
    gc.freeze()

    rules = {f"{cheap} cheap, {score}": (cheap, score) for cheap, score in CASCADES}
    outcomes: dict[str, dict[str, list[Outcome]]] = {
        rule: {s: [] for s in SOURCES} for rule in rules
    }
    strong_alone: list[float] = []
    split_rng = random.Random(args.seed + 2)
    started = time.perf_counter()
    for _ in range(args.splits):
        order = items[:]
        split_rng.shuffle(order)
        labels = {i: gold[i] for i in order[: args.calibrate]}
        test_ids = order[args.calibrate :]
        strong = [judged[1, "stated"][i].tiers[1] for i in test_ids]  # type: ignore[index]
        strong_alone.append(sum(r.consensus == gold[r.query_id] for r in strong) / len(strong))
        for rule, (cheap, score) in rules.items():
            for source in SOURCES:
                by_id = judged[cheap, source]
                calibration = [by_id[i] for i in order[: args.calibrate]]
                fit = calibrate_cascade(
                    calibration,
                    labels,
                    target=TARGET,
                    delta=DELTA,
                    score=score,  # type: ignore[arg-type]
                )
                test = [by_id[i] for i in test_ids]
                replayed = cascades[cheap, source].replay(test, escalation=fit.escalation).verdicts
                agreement = sum(r.consensus == gold[r.query_id] for r in replayed) / len(replayed)
                escalated = sum(r.tier == 1 for r in replayed) / len(replayed)
                outcomes[rule][source].append((agreement, escalated, fit.guaranteed))
    fitted_s = time.perf_counter() - started

    for rule, by_source in outcomes.items():
        summary = {
            source: {
                "escalated": statistics.fmean(e for _, e, _ in rows),
                "agreement": statistics.fmean(a for a, _, _ in rows),
                "splits >= 0.9": sum(a >= TARGET for a, _, _ in rows) / len(rows),
                "guaranteed": sum(g for _, _, g in rows) / len(rows),
            }
            for source, rows in by_source.items()
        }
        for measure in ("escalated", "agreement", "splits >= 0.9", "guaranteed"):
            s, lp = summary["stated"][measure], summary["logprob"][measure]
            report.row(
                setting=f"cascade: {rule}",
                n=args.test,
                measure=measure,
                stated=round(s, 4),
                logprob=round(lp, 4),
                ratio=round(s / lp, 2) if lp else None,
            )
    report.note(
        f"cascade: the strong critic alone agrees with gold on "
        f"{statistics.fmean(strong_alone):.4f} of the test items (mean over splits)"
    )
    report.note(
        f"cascade: {len(items)} items, every tier, {len(judged)} cascades = {calls} vendor "
        f"calls in {elapsed:.1f}s; then {len(rules) * len(SOURCES) * args.splits} "
        f"calibrations and replays of {args.test} items with 0 calls in {fitted_s:.1f}s"
    )
    return outcomes


def short_lists_section(report: Report, lists: int, seed: int) -> tuple[int, int]:
    """``lists`` scripted top-10 lists at a PASS/FAIL answer's label, as a small model's
    (the chosen label near certain, the rest junk; the other label listed in 3 of 4):
    confidences read exactly 1.0 (or 0) renormalising over the labels seen, the reading
    before the bound, against the reading with it. Returns (bounded certainties, lists)."""
    rng = random.Random(seed)
    renormalised_certain = bounded_certain = bounded = 0
    for _ in range(lists):
        chosen = rng.uniform(-0.05, 0.0)
        top = [("PASS", chosen)]
        top += [(f"junk{n}", rng.uniform(-40.0, -8.0)) for n in range(8)]
        other = rng.uniform(-40.0, -8.0)
        if rng.random() < 0.75:
            top.append(("FAIL", other))
        tokens = [
            TokenLogprob('{"kind":"', -0.001, ()),
            TokenLogprob("PASS", chosen, tuple(top)),
            TokenLogprob('"}', -0.001, ()),
        ]
        read = label_probabilities(
            '{"kind":"PASS"}', tokens, chosen="PASS", labels=("PASS", "FAIL")
        )
        assert read is not None
        listed = {token: lp for token, lp in top if token in ("PASS", "FAIL")}
        seen = sum(math.exp(lp) for lp in listed.values())
        renormalised = math.exp(chosen) / seen
        renormalised_certain += renormalised >= 1.0
        bounded_certain += not 0.0 < read.confidence < 1.0
        bounded += read.bounded
    setting = "scripted top 10 lists, FAIL left out of 1 in 4"
    report.row(
        setting=setting,
        n=lists,
        measure="logprob confidence exactly 1.0, renormalised over the labels seen (before)",
        logprob=renormalised_certain,
    )
    report.row(
        setting=setting,
        n=lists,
        measure="logprob confidence exactly 0 or 1, the missing label bounded (now)",
        logprob=bounded_certain,
    )
    report.row(setting=setting, n=lists, measure="verdicts confidence_bounded", logprob=bounded)
    return bounded_certain, lists


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--calibrate", type=int, default=500)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--error-correlation", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()

    report = Report(
        "confidence_sources",
        "Confidence from token probabilities vs the confidence the model states",
        items=args.items,
        calibrate=args.calibrate,
        test=args.test,
        splits=args.splits,
        error_correlation=args.error_correlation,
        target=TARGET,
        delta=DELTA,
    )
    measures, differing, logprob_votes, logprob_sourced = calibration_section(report, args)
    outcomes = cascade_section(report, args)
    certain, lists = short_lists_section(report, 2000, args.seed)

    for model, accuracy, temperature in CALIBRATION_PERSONAS:
        stated_ece, logprob_ece = (measures[model][s]["ECE"] for s in SOURCES)
        assert stated_ece is not None
        assert logprob_ece is not None
        if temperature == 1.0:
            report.check(
                f"logprob ECE, accuracy {accuracy:.2f}, T=1",
                logprob_ece,
                at_most=MAX_LOGPROB_ECE,
            )
            report.check(
                f"stated ECE / logprob ECE, accuracy {accuracy:.2f}, T=1",
                stated_ece / logprob_ece if logprob_ece else None,
                at_least=1.0,
                unit="x",
            )
        else:
            report.note(
                f"accuracy {accuracy:.2f}, T={temperature:g} (over-confident by construction): "
                f"logprob ECE {logprob_ece:.4f}, stated {stated_ece:.4f} (reported, no target)"
            )
    report.check(
        "valid logprob verdicts with confidence_source 'logprob'",
        100 * logprob_sourced / logprob_votes if logprob_votes else None,
        at_least=100.0,
        unit="%",
    )
    report.check("answers differing between a persona's two critics", differing, at_most=0)
    report.check(
        f"logprob confidences exactly 0 or 1, {lists} scripted short top lists",
        certain,
        at_most=0,
    )
    more = []
    for rule, by_source in outcomes.items():
        stated, logprob = by_source["stated"], by_source["logprob"]
        extra = statistics.fmean(e for _, e, _ in logprob) - statistics.fmean(
            e for _, e, _ in stated
        )
        # Reported, not a target: the issue asks for the comparison, and which source
        # escalates less depends on the simulator's stated law (see the note below).
        report.note(
            f"cascade ({rule}): share escalated, logprob minus stated: {100 * extra:+.2f} points"
        )
        if extra > 0:
            passed = {s: [e for _, e, g in by_source[s] if g] for s in SOURCES}
            more.append(
                f"{rule}: a level passed in {len(passed['logprob'])}/{len(logprob)} splits "
                f"with logprob, {len(passed['stated'])}/{len(stated)} with stated; in those "
                "splits it escalated "
                + " and ".join(
                    f"{statistics.fmean(passed[s]):.3f}" if passed[s] else "-" for s in SOURCES
                )
                + " (stated and logprob)"
            )
    if more:
        cheap = next(m for m, a, t in CALIBRATION_PERSONAS if a == CHEAP_ACCURACY and t == 1.0)
        cover = {
            f"{level}-{source}": measures[cheap][source][f"coverage at {level}"] or 0.0
            for level in ("0.9", "0.95")
            for source in SOURCES
        }
        report.note(
            f"logprob escalates more ({'; '.join(more)}). A level passes only where the "
            "calibration items' error rate is significantly below 10%, and there the "
            "simulator's stated law is sharper: a wrong answer never states more than the "
            "middle of the persona's range, so above it every answer is right, while a "
            "calibrated probability is right only as often as it says (and when no level "
            "passes, every item is escalated). At accuracy "
            f"{CHEAP_ACCURACY} the best threshold in hindsight keeps {cover['0.9-stated']:.1%} "
            f"(stated) and {cover['0.9-logprob']:.1%} (logprob) of answers at >= 0.9 "
            f"accuracy, {cover['0.95-stated']:.1%} and {cover['0.95-logprob']:.1%} at >= 0.95"
        )
    report.note(
        "cascade rows 'splits >= 0.9' and 'guaranteed' are reported, no target: the "
        "guarantee bounds the true error rate, and on a finite test set the observed "
        "agreement scatters around it; 'escalated' counts every item of a split where no "
        "level passed (then every item goes to the strong tier)"
    )
    return report.finish(
        [
            ("setting", "setting"),
            ("n", "n"),
            ("measure", "measure"),
            ("stated", "stated"),
            ("logprob", "logprob"),
            ("ratio", "stated/logprob"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
