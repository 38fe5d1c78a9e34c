"""A results file is written in the order the calls finished, so a rerun of the same review
writes the same results in another order. Every seeded statistic of a batch draws its items
in the order of their ids: the same results and seed give the same figures however the
file's lines fall."""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence

import pytest

from cross_judge import BatchResult, EnsembleVerdict, calibrate_cascade
from cross_judge.errors import StatisticsWarning
from cross_judge.ranking import fit_ranking
from cross_judge.report import compare_runs
from cross_judge.stats import alpha_interval, gold_report
from tests.unit.panel_choice.pilots import FOUR, pilot
from tests.unit.report.compare_runs import batch as diff_batch, result as diff_result


def reordered(results: Sequence[EnsembleVerdict], seed: int = 11) -> list[EnsembleVerdict]:
    """The same results in another order, as another run's file might hold them."""
    shuffled = list(results)
    random.Random(seed).shuffle(shuffled)
    assert [r.query_id for r in shuffled] != [r.query_id for r in results]
    return shuffled


@pytest.fixture(scope="module")
def judged() -> tuple[BatchResult, dict[str, str]]:
    return pilot(FOUR, n=300, seed=2)


def test_the_alpha_interval_does_not_depend_on_the_files_order(
    judged: tuple[BatchResult, dict[str, str]],
) -> None:
    batch, _ = judged
    again = BatchResult.from_results(reordered(batch.verdicts))
    assert alpha_interval(again, n_boot=300) == alpha_interval(batch, n_boot=300)


def test_the_gold_reports_intervals_do_not_depend_on_the_files_order(
    judged: tuple[BatchResult, dict[str, str]],
) -> None:
    batch, gold = judged
    again = BatchResult.from_results(reordered(batch.verdicts))
    first, second = gold_report(batch, gold, ci=0.9), gold_report(again, gold, ci=0.9)
    for row, other in zip(first.critics, second.critics, strict=True):
        assert row.kappa_ci is not None  # resampled
        assert (row.accuracy_ci, row.kappa_ci) == (other.accuracy_ci, other.kappa_ci)


@pytest.mark.parametrize("strategy", ["uncertain", "disputed", "uniform", "stratified"])
def test_the_label_queue_does_not_depend_on_the_files_order(
    judged: tuple[BatchResult, dict[str, str]], strategy: str
) -> None:
    batch, _ = judged
    again = BatchResult.from_results(reordered(batch.verdicts))
    first = batch.label_queue(40, strategy=strategy, seed=5)  # type: ignore[arg-type]
    second = again.label_queue(40, strategy=strategy, seed=5)  # type: ignore[arg-type]
    assert (first.items, first.probabilities) == (second.items, second.probabilities)


def cascade_results(n: int = 400, seed: int = 1) -> tuple[list[EnsembleVerdict], dict[str, str]]:
    """Two-tier results: a cheap tier right more often the more it agrees, a strong one."""
    rng = random.Random(seed)
    results, gold = [], {}
    for i in range(n):
        truth = "PASS" if rng.random() < 0.6 else "FAIL"
        wrong = "FAIL" if truth == "PASS" else "PASS"
        agreement = rng.choice([1 / 3, 2 / 3, 1.0])
        first = truth if rng.random() < 0.5 + 0.45 * agreement else wrong
        second = truth if rng.random() < 0.95 else wrong
        tiers = [
            EnsembleVerdict(
                query_id=f"q{i}", verdicts=[], consensus=answer, agreement_pct=share,
                avg_confidence=0.8, voting="majority", cost_usd=cost,
            )
            for answer, share, cost in ((first, agreement, 0.001), (second, 1.0, 0.01))
        ]  # fmt: skip
        results.append(tiers[0].model_copy(update={"tier": 0, "tiers": tiers}))
        gold[f"q{i}"] = truth
    return results, gold


def test_the_cascade_calibration_does_not_depend_on_the_files_order() -> None:
    results, gold = cascade_results()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = calibrate_cascade(results, gold, target=0.85, seed=3)
        second = calibrate_cascade(reordered(results), gold, target=0.85, seed=3)
    assert first.levels == second.levels
    assert first.escalation == second.escalation


def test_a_scores_paired_interval_does_not_depend_on_the_files_order() -> None:
    rng = random.Random(4)
    base = [diff_result(f"i{n}", "PASS", score=rng.random()) for n in range(150)]
    cand = [diff_result(f"i{n}", "PASS", score=rng.random()) for n in range(150)]
    first = compare_runs(diff_batch(base), diff_batch(cand), metric="score")
    second = compare_runs(
        diff_batch(reordered(base)), diff_batch(reordered(cand, 12)), metric="score"
    )
    assert first.main.interval == second.main.interval


def test_a_rankings_bootstrap_intervals_do_not_depend_on_the_files_order() -> None:
    import anyio

    from cross_judge.ranking import rank
    from tests.unit.ranking.strength_judge import StrengthJudge
    from tests.unit.ranking.test_rank import STRENGTHS, TASK, TEXTS, panel

    four = {cid: TEXTS[cid] for cid in list(TEXTS)[:4]}

    async def ranked() -> list[EnsembleVerdict]:
        ranking = await rank(panel(StrengthJudge(STRENGTHS)), four, query=TASK)
        return list(ranking.results)

    results = anyio.run(ranked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticsWarning)
        first = fit_ranking(list(four), results, ci="bootstrap", seed=2)
        second = fit_ranking(list(four), reordered(results), ci="bootstrap", seed=2)
    assert first.ci_method == "bootstrap"
    assert first.ci == second.ci
    assert first.ratings == second.ratings


def test_two_rankings_compared_do_not_depend_on_the_order_of_their_results() -> None:
    from tests.unit.report.test_compare_ranking import SIX, losing, ranking_run
    from tests.unit.report.test_compare_runs import ranking_of

    base = ranking_of(ranking_run(SIX, queries=2))
    cand = ranking_of(losing(ranking_run(SIX, queries=2), SIX[-1]))
    moved = base.model_copy(update={"results": reordered(base.results)})
    first = compare_runs(base, cand, resamples=200)
    second = compare_runs(moved, cand, resamples=200)
    assert [(r.name, r.interval, r.p_value) for r in first.ratings] == [
        (r.name, r.interval, r.p_value) for r in second.ratings
    ]
