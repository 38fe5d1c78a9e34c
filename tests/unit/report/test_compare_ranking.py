"""Comparing two ranking runs (:mod:`cross_judge.report._compare_ranking`): each
candidate's rating difference with a paired-bootstrap interval and Holm's correction,
on the pair items both runs judged."""

from __future__ import annotations

import math
import random

import pytest

from cross_judge import EnsembleVerdict, Verdict
from cross_judge.errors import ConfigError
from cross_judge.ranking import fit_ranking
from cross_judge.report._compare_ranking import is_ranking_run, rating_differences

CANDIDATES = [f"c{k:02d}" for k in range(12)]
SIX = CANDIDATES[:6]
STRENGTHS = {f"c{k:02d}": 0.25 * k for k in range(13)}


def pair(a: str, b: str, kind: str, query: int = 0) -> EnsembleVerdict:
    """One judged pair: ``a`` shown first, the panel's consensus ``kind``."""
    return EnsembleVerdict(
        query_id=f"{a}|{b}|{query}",
        verdicts=[Verdict(kind=kind, critic_id="j0")],
        consensus=kind,
        voting="majority",
        meta={"rank": {"a": a, "b": b, "query": query}},
    )


def ranking_run(
    candidates: list[str] = CANDIDATES, queries: int = 3, seed: int = 7, tie: float = 0.1
) -> list[EnsembleVerdict]:
    """Every ordered pair on every query, decided by Bradley-Terry on ``STRENGTHS`` with a
    share ``tie`` of ties, seeded."""
    rng = random.Random(seed)
    results = []
    for query in range(queries):
        for a in candidates:
            for b in candidates:
                if a == b:
                    continue
                p_a = 1.0 / (1.0 + math.exp(STRENGTHS[b] - STRENGTHS[a]))
                kind = "TIE" if rng.random() < tie else "A" if rng.random() < p_a else "B"
                results.append(pair(a, b, kind, query))
    return results


def losing(results: list[EnsembleVerdict], loser: str) -> list[EnsembleVerdict]:
    """``results`` with ``loser`` made to lose every pair it is in."""
    out = []
    for result in results:
        tag = result.meta["rank"]
        if loser in (tag["a"], tag["b"]):
            result = pair(tag["a"], tag["b"], "B" if tag["a"] == loser else "A", tag["query"])
        out.append(result)
    return out


def test_a_ranking_run_is_one_whose_results_name_pairs() -> None:
    assert is_ranking_run(ranking_run(queries=1))
    plain = EnsembleVerdict(query_id="q", verdicts=[], consensus="PASS", voting="majority")
    assert not is_ranking_run([plain])
    assert not is_ranking_run([])


def test_a_run_against_itself_differs_by_nothing_and_nothing_is_significant() -> None:
    run = ranking_run()
    rows, notes = rating_differences(run, run)
    assert notes == [
        "with 12 candidates and 200 resamples Holm's p cannot fall below 12/201 = 0.060, "
        "so no change can be significant at 0.05: use at least 240 resamples"
    ]
    assert sorted(row.name for row in rows) == CANDIDATES
    for row in rows:
        assert row.difference == 0.0
        assert row.interval is not None and row.interval[0] <= 0.0 <= row.interval[1]
        assert row.p_value == 1.0 and row.p_adjusted == 1.0
        assert row.better == row.worse == 0
        assert row.n == 66  # 11 others, both orders, 3 queries
        assert row.test == "paired bootstrap of refitted ratings"
        assert row.interval_method == "paired bootstrap (200)"


def test_a_candidate_made_to_lose_every_pair_falls_significantly() -> None:
    baseline = ranking_run(SIX)
    candidate = losing(baseline, "c04")
    rows, notes = rating_differences(baseline, candidate)
    assert notes == []
    by_name = {row.name: row for row in rows}
    fallen = by_name["c04"]
    assert fallen.difference is not None and fallen.difference < -300
    assert fallen.interval is not None and fallen.interval[1] < 0
    assert fallen.p_adjusted is not None and fallen.p_adjusted < 0.05
    assert fallen.worse > 0 and fallen.better == 0
    assert rows[-1].name == "c04"  # last in the candidate run
    others = [row for row in rows if row.name != "c04"]
    assert all(row.worse == 0 for row in others)
    # Differences are relative to the field (mean 1000 in each fit): what c04 lost, the
    # others share, each far less than the fall.
    assert math.fsum(row.difference or 0.0 for row in rows) == pytest.approx(0.0, abs=1e-6)
    assert all(0 < (row.difference or 0.0) < -fallen.difference / 3 for row in others)


def test_a_change_between_two_candidates_leaves_the_rest_of_the_field_alone() -> None:
    baseline = ranking_run(SIX)
    candidate = [
        pair(
            r.meta["rank"]["a"],
            r.meta["rank"]["b"],
            "A" if r.meta["rank"]["a"] == "c01" else "B",
            r.meta["rank"]["query"],
        )
        if {r.meta["rank"]["a"], r.meta["rank"]["b"]} == {"c01", "c05"}
        else r
        for r in baseline
    ]
    rows, _ = rating_differences(baseline, candidate)
    by_name = {row.name: row for row in rows}
    assert (by_name["c01"].difference or 0.0) > 0 > (by_name["c05"].difference or 0.0)
    untouched = [by_name[c] for c in SIX if c not in ("c01", "c05")]
    assert not any(row.p_adjusted is not None and row.p_adjusted < 0.05 for row in untouched)
    assert all(row.better == row.worse == 0 for row in untouched)


def test_the_ratings_are_the_rankings_fit_of_the_paired_items() -> None:
    baseline = ranking_run()
    candidate = losing(baseline, "c03")
    rows, _ = rating_differences(baseline, candidate, resamples=2)
    base_fit = fit_ranking(CANDIDATES, baseline, fit="consensus")
    cand_fit = fit_ranking(CANDIDATES, candidate, fit="consensus")
    for row in rows:
        assert row.baseline == pytest.approx(base_fit.ratings[row.name], abs=1e-4)
        assert row.candidate == pytest.approx(cand_fit.ratings[row.name], abs=1e-4)
    assert [row.name for row in rows] == cand_fit.order
    assert math.fsum(row.candidate or 0.0 for row in rows) / len(rows) == pytest.approx(1000)


def test_only_the_pair_items_both_runs_judged_are_compared_and_the_rest_noted() -> None:
    full = ranking_run(queries=2)
    baseline = [r for r in full if not r.query_id.endswith("|1")]  # query 0 only
    extra = ranking_run([*CANDIDATES, "c12"], queries=1, seed=9)
    candidate = [r for r in full if r.meta["rank"]["a"] != "c00"] + [
        r for r in extra if "c12" in r.query_id
    ]
    rows, notes = rating_differences(baseline, candidate)
    shared = [r for r in baseline if r.query_id in {c.query_id for c in candidate}]
    assert sorted(row.name for row in rows) == CANDIDATES
    by_name = {row.name: row for row in rows}
    assert by_name["c00"].n == 11  # only as b: c00 shown first is not in the candidate run
    assert by_name["c05"].n == 21
    assert sum(row.n for row in rows) == 2 * len(shared)
    assert by_name["c00"].baseline == pytest.approx(
        fit_ranking(CANDIDATES, shared, fit="consensus").ratings["c00"], abs=1e-4
    )
    text = "\n".join(notes)
    assert "candidates only the candidate run ranked (not compared): c12" in text
    assert "11 pair items only the baseline run judged" in text
    assert f"{len(candidate) - len(shared)} pair items only the candidate run judged" in text


def test_a_pair_shown_the_other_way_round_is_paired_with_its_outcome_turned() -> None:
    baseline = [pair("x", "y", "A"), pair("y", "z", "A"), pair("z", "x", "B")]
    swapped = [
        EnsembleVerdict(
            query_id=r.query_id,
            verdicts=r.verdicts,
            consensus={"A": "B", "B": "A"}[r.consensus],
            voting="majority",
            meta={"rank": {"a": r.meta["rank"]["b"], "b": r.meta["rank"]["a"], "query": 0}},
        )
        for r in baseline
    ]
    rows, notes = rating_differences(baseline, swapped)
    assert notes == []
    assert all(row.difference == 0.0 and row.better == row.worse == 0 for row in rows)


def test_items_naming_other_candidates_are_left_out() -> None:
    baseline = [pair("x", "y", "A"), pair("y", "z", "A")]
    candidate = [pair("x", "y", "B"), pair("x", "w", "A", query=5)]
    candidate[1] = candidate[1].model_copy(update={"query_id": baseline[1].query_id})
    rows, notes = rating_differences(baseline, candidate)
    assert {row.name for row in rows} == {"x", "y"}
    assert any("name other candidates in each run" in note for note in notes)


def test_the_same_seed_gives_the_same_comparison_and_another_seed_another() -> None:
    baseline = ranking_run(SIX)
    candidate = ranking_run(SIX, seed=8)
    first = rating_differences(baseline, candidate, seed=3)
    assert rating_differences(baseline, candidate, seed=3) == first
    other = rating_differences(baseline, candidate, seed=4)
    assert [r.interval for r in other[0]] != [r.interval for r in first[0]]
    assert [r.difference for r in other[0]] == [r.difference for r in first[0]]


def test_ties_are_kept_and_a_tie_turned_win_counts_for_the_winner() -> None:
    baseline = [
        pair("x", "y", "TIE"),
        pair("y", "z", "A"),
        pair("z", "x", "TIE"),
        pair("x", "z", "A"),
        pair("y", "x", "A", query=1),
    ]
    candidate = [pair("x", "y", "A"), *baseline[1:]]
    rows, _ = rating_differences(baseline, candidate)
    by_name = {row.name: row for row in rows}
    assert (by_name["x"].better, by_name["x"].worse) == (1, 0)
    assert (by_name["y"].better, by_name["y"].worse) == (0, 1)
    assert by_name["z"].better == by_name["z"].worse == 0
    for run, side in ((baseline, "baseline"), (candidate, "candidate")):
        fitted = fit_ranking(["x", "y", "z"], run, fit="consensus")
        assert fitted.ties > 0
        for row in rows:
            assert getattr(row, side) == pytest.approx(fitted.ratings[row.name], abs=1e-4)
    assert by_name["x"].difference is not None and by_name["x"].difference > 0


def test_pairs_with_no_decision_are_noted_and_left_out_of_that_runs_fit() -> None:
    baseline = ranking_run(SIX, queries=1)
    candidate = [
        r.model_copy(update={"consensus": "ABSTAIN"}) if r.meta["rank"]["a"] == "c01" else r
        for r in baseline
    ]
    rows, notes = rating_differences(baseline, candidate)
    assert notes == [
        "5 of the 30 paired pair items had no decision in the candidate run "
        "(left out of its fit, kept in the resampling)"
    ]
    fitted = fit_ranking(SIX, candidate, fit="consensus")
    assert fitted.undecided == 5
    by_name = {row.name: row for row in rows}
    for row in rows:
        assert row.candidate == pytest.approx(fitted.ratings[row.name], abs=1e-4)
    assert by_name["c01"].n == 10 and by_name["c01"].better == by_name["c01"].worse == 0


def test_no_shared_pair_item_gives_no_rows_and_says_so() -> None:
    rows, notes = rating_differences([pair("x", "y", "A")], [pair("x", "y", "A", query=1)])
    assert rows == []
    assert notes[-1] == "no pair item both runs judged: no rating to compare"


def test_a_run_with_no_decision_gives_undefined_rows() -> None:
    baseline = [pair("x", "y", "A"), pair("y", "z", "B")]
    candidate = [r.model_copy(update={"consensus": "ABSTAIN"}) for r in baseline]
    rows, _ = rating_differences(baseline, candidate)
    assert len(rows) == 3
    assert all(
        row.difference is None and row.p_value is None and row.interval is None for row in rows
    )


def test_the_minimum_effect_is_the_bootstrap_standard_error_times_2_8() -> None:
    baseline = ranking_run(SIX)
    rows, _ = rating_differences(baseline, ranking_run(SIX, seed=8))
    for row in rows:
        assert row.mde is not None and row.interval is not None
        width = row.interval[1] - row.interval[0]
        # 95% percentile width is about 3.92 SE: the MDE (2.8 SE) is roughly 0.7 of it
        assert 0.4 * width < row.mde < 1.1 * width


def test_bad_settings_are_refused() -> None:
    run = ranking_run(queries=1)
    with pytest.raises(ConfigError, match="confidence"):
        rating_differences(run, run, confidence=1.0)
    with pytest.raises(ConfigError, match="resamples"):
        rating_differences(run, run, resamples=1)
