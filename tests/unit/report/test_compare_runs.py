"""compare_runs: two runs of the same judge on the same items, paired by id."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from cross_judge.batch import BatchResult
from cross_judge.errors import ConfigError
from cross_judge.ranking import Ranking, fit_ranking
from cross_judge.report import RunDiff, compare_runs
from cross_judge.stats import mcnemar_exact, wilcoxon_signed_rank

from .compare_runs import batch, labels_run, manifest_entry, result, write_run

PASS_FAIL = ["PASS"] * 300 + ["FAIL"] * 100


def dropped(labels: list[str], count: int) -> list[str]:
    """``labels`` with the first ``count`` PASS turned FAIL."""
    out, left = [], count
    for label in labels:
        if label == "PASS" and left:
            out.append("FAIL")
            left -= 1
        else:
            out.append(label)
    return out


# -- the metric and its test ---------------------------------------------------------------


def test_a_run_against_itself_has_no_difference_and_no_flip() -> None:
    run = labels_run(PASS_FAIL)
    diff = compare_runs(run, run)
    assert diff.metric == "label_share"
    assert diff.label == "PASS"
    assert (diff.main.difference, diff.main.p_value, diff.flips) == (0.0, 1.0, [])
    assert not diff.regressed
    assert not diff.failed("change")


def test_a_planted_drop_is_a_regression_tested_by_exact_mcnemar() -> None:
    diff = compare_runs(labels_run(PASS_FAIL), labels_run(dropped(PASS_FAIL, 30)))
    assert diff.main.baseline == pytest.approx(0.75)
    assert diff.main.candidate == pytest.approx(0.675)
    assert diff.main.difference == pytest.approx(-0.075)
    assert diff.main.p_value == mcnemar_exact(0, 30)
    assert (diff.main.better, diff.main.worse) == (0, 30)
    low, high = diff.main.interval or (0.0, 0.0)
    assert low < -0.075 < high < 0
    assert diff.regressed
    assert diff.failed("regression")


def test_an_improvement_fails_only_a_gate_on_any_change() -> None:
    diff = compare_runs(labels_run(dropped(PASS_FAIL, 30)), labels_run(PASS_FAIL))
    assert diff.main.difference == pytest.approx(0.075)
    assert not diff.failed("regression")
    assert diff.failed("change")


def test_a_significant_drop_within_the_minimum_effect_passes_the_gate() -> None:
    labels = ["PASS"] * 3000 + ["FAIL"] * 1000
    diff = compare_runs(labels_run(labels), labels_run(dropped(labels, 40)), min_effect=0.02)
    assert diff.main.p_value is not None and diff.main.p_value < 0.05
    assert diff.main.difference == pytest.approx(-0.01)
    assert not diff.regressed


def test_a_metric_where_lower_is_better_counts_a_rise_as_worse() -> None:
    diff = compare_runs(
        labels_run(PASS_FAIL),
        labels_run(dropped(PASS_FAIL, 30)),
        label="FAIL",
        higher_is_better=False,
    )
    assert diff.main.difference == pytest.approx(0.075)
    assert diff.regressed
    assert {flip.direction for flip in diff.flips} == {"worse"}


def test_the_minimum_detectable_effect_shrinks_with_more_items() -> None:
    small = compare_runs(labels_run(PASS_FAIL), labels_run(dropped(PASS_FAIL, 10)))
    large = compare_runs(labels_run(PASS_FAIL * 10), labels_run(dropped(PASS_FAIL * 10, 100)))
    assert small.main.mde is not None and large.main.mde is not None
    assert large.main.mde < small.main.mde


def test_every_consensus_label_gets_its_share_with_holm() -> None:
    base = labels_run(["KEEP"] * 50 + ["REJECT"] * 50)
    cand = labels_run(["KEEP"] * 30 + ["REJECT"] * 70)
    diff = compare_runs(base, cand, label="KEEP")
    shares = {row.name: row for row in diff.labels}
    assert set(shares) == {"KEEP share", "REJECT share"}
    assert shares["REJECT share"].difference == pytest.approx(0.2)
    assert all(row.p_adjusted is not None and row.p_adjusted >= row.p_value for row in diff.labels)  # type: ignore[operator]


def test_the_label_share_needs_a_label_when_there_is_no_pass() -> None:
    run = labels_run(["KEEP", "REJECT"])
    with pytest.raises(ConfigError, match=r"label=.*KEEP, REJECT"):
        compare_runs(run, run)


def test_a_label_neither_run_gave_is_refused() -> None:
    run = labels_run(PASS_FAIL)
    with pytest.raises(ConfigError, match="'MAYBE' is no consensus"):
        compare_runs(run, run, label="MAYBE")


def test_accuracy_against_gold_counts_right_and_wrong_per_item() -> None:
    gold = {f"i{n}": "PASS" for n in range(300)} | {f"i{n}": "FAIL" for n in range(300, 400)}
    diff = compare_runs(labels_run(PASS_FAIL), labels_run(dropped(PASS_FAIL, 30)), gold=gold)
    assert diff.metric == "accuracy"
    assert diff.main.baseline == 1.0
    assert diff.main.candidate == pytest.approx(370 / 400)
    assert diff.main.p_value == mcnemar_exact(0, 30)


def test_accuracy_on_gold_of_no_paired_item_is_refused() -> None:
    run = labels_run(PASS_FAIL)
    with pytest.raises(ConfigError, match="no paired item has a gold label"):
        compare_runs(run, run, gold={"elsewhere": "PASS"})


def test_scores_are_tested_by_wilcoxon_with_a_bootstrap_interval() -> None:
    base = batch([result(f"i{n}", "PASS", score=0.5 + (n % 5) / 10) for n in range(200)])
    cand = batch(
        [result(f"i{n}", "PASS", score=0.4 + (n % 5) / 10 + (n % 3) / 100) for n in range(200)]
    )
    diff = compare_runs(base, cand, metric="score")
    differences = [(-0.1 + (n % 3) / 100) for n in range(200)]
    assert diff.main.p_value == pytest.approx(wilcoxon_signed_rank(differences))
    low, high = diff.main.interval or (0.0, 0.0)
    assert low <= (diff.main.difference or 0.0) <= high < 0
    assert diff.main.test == "Wilcoxon signed-rank"
    assert diff.flips[0].direction == "worse"


def test_each_critic_is_compared_on_its_own_votes_with_holm() -> None:
    base = batch([result(f"i{n}", "PASS", ["PASS", "PASS", "PASS"]) for n in range(100)])
    cand = batch(
        [
            result(f"i{n}", "PASS", ["PASS", "PASS", "FAIL" if n < 40 else "PASS"])
            for n in range(100)
        ]
    )
    diff = compare_runs(base, cand)
    critics = {row.name: row for row in diff.critics}
    assert critics["c"].difference == pytest.approx(-0.4)
    assert critics["a"].difference == 0.0
    assert critics["c"].p_adjusted is not None and critics["c"].p_adjusted < 0.05
    assert not diff.regressed  # the consensus did not move


def test_a_failed_vote_is_left_out_of_its_critics_share() -> None:
    base = batch([result(f"i{n}", "PASS", ["PASS", "PASS", "ERROR"]) for n in range(10)])
    diff = compare_runs(base, base)
    assert {row.name: row.n for row in diff.critics} == {"a": 10, "b": 10, "c": 0}


def test_rubric_criteria_are_compared_each_with_holm() -> None:
    def rubric_run(failing: int) -> list:
        return [
            result(
                f"i{n}",
                "PASS",
                criteria={"cites": "FAIL" if n < failing else "PASS", "polite": "PASS"},
            )
            for n in range(100)
        ]

    diff = compare_runs(batch(rubric_run(0)), batch(rubric_run(30)))
    rows = {row.name: row for row in diff.criteria}
    assert rows["cites (PASS share)"].difference == pytest.approx(-0.3)
    assert rows["polite (PASS share)"].difference == 0.0
    assert rows["cites (PASS share)"].p_adjusted is not None
    assert diff.regressed  # a criterion regressed though the consensus did not
    assert diff.regressions[0].name == "cites (PASS share)"


# -- flips ---------------------------------------------------------------------------------


def test_flipped_items_each_way_carry_both_texts_and_votes_worse_first() -> None:
    base = batch([result("up", "FAIL", text="old up"), result("down", "PASS", text="old down")])
    cand = batch([result("up", "PASS", text="new up"), result("down", "FAIL", text="new down")])
    diff = compare_runs(base, cand)
    assert [(f.id, f.direction) for f in diff.flips] == [("down", "worse"), ("up", "better")]
    down = diff.flips[0]
    assert (down.baseline, down.candidate) == ("PASS", "FAIL")
    assert (down.baseline_text, down.candidate_text) == ("old down", "new down")
    assert down.candidate_votes == {"a": "FAIL", "b": "FAIL", "c": "FAIL"}


def test_a_results_file_reads_the_same_as_its_batch(tmp_path: Path) -> None:
    base, cand = labels_run(PASS_FAIL), labels_run(dropped(PASS_FAIL, 30))
    in_memory = compare_runs(base, cand)
    from_files = compare_runs(
        write_run(tmp_path / "b.jsonl", base), write_run(tmp_path / "c.jsonl", cand)
    )
    assert from_files.main == in_memory.main
    assert from_files.critics == in_memory.critics
    assert [f.model_dump() for f in from_files.flips] == [f.model_dump() for f in in_memory.flips]
    assert from_files.baseline_name == str(tmp_path / "b.jsonl")


def test_candidate_compare_is_compare_runs_from_the_candidates_side() -> None:
    base, cand = labels_run(PASS_FAIL), labels_run(dropped(PASS_FAIL, 30))
    assert cand.compare(base) == compare_runs(base, cand)


def test_a_run_diff_pickles_and_reads_back_from_its_json() -> None:
    diff = compare_runs(labels_run(PASS_FAIL), labels_run(dropped(PASS_FAIL, 30)))
    assert pickle.loads(pickle.dumps(diff)) == diff
    assert RunDiff.from_json(diff.to_json()) == diff


# -- pairing -------------------------------------------------------------------------------


def test_different_item_sets_are_refused_naming_the_ids_and_the_fix() -> None:
    with pytest.raises(
        ConfigError, match=r"(?s)1 only in 'baseline' \('i2'\).*--resume.*allow_unmatched"
    ):
        compare_runs(labels_run(["PASS"] * 3), labels_run(["PASS"] * 2))


def test_allowed_unmatched_items_are_listed_in_the_result() -> None:
    diff = compare_runs(labels_run(["PASS"] * 3), labels_run(["PASS"] * 2), allow_unmatched=True)
    assert (diff.n_paired, diff.baseline_only, diff.candidate_only) == (2, ["i2"], [])


def test_runs_with_no_item_in_common_are_refused_even_when_unmatched_is_allowed() -> None:
    other = batch([result("x", "PASS")])
    with pytest.raises(ConfigError, match="share no item id"):
        compare_runs(labels_run(["PASS"]), other, allow_unmatched=True)


def test_an_item_judged_twice_in_one_file_is_refused(tmp_path: Path) -> None:
    path = write_run(tmp_path / "twice.jsonl", labels_run(["PASS", "FAIL"]))
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(ConfigError, match=r"'i0' has two results \(line 3 repeats it\)"):
        compare_runs(path, path)


def test_a_line_that_is_no_result_is_refused_with_its_number(tmp_path: Path) -> None:
    path = write_run(tmp_path / "bad.jsonl", labels_run(["PASS"]))
    path.write_text(path.read_text() + '{"hello": 1}\n')
    with pytest.raises(ConfigError, match="line 2: not a result record"):
        compare_runs(path, path)


def test_a_json_line_that_is_no_object_is_refused_with_its_number(tmp_path: Path) -> None:
    path = write_run(tmp_path / "bad.jsonl", labels_run(["PASS"]))
    path.write_text(path.read_text() + "[1, 2]\n")
    with pytest.raises(ConfigError, match="line 2: not a result record"):
        compare_runs(path, path)


def test_a_line_that_is_no_json_is_refused_with_its_number(tmp_path: Path) -> None:
    path = write_run(tmp_path / "bad.jsonl", labels_run(["PASS"]))
    path.write_text(path.read_text() + '{"query_id": "i9", \n')
    with pytest.raises(ConfigError, match="line 2: not JSON"):
        compare_runs(path, path)


def test_a_hand_edited_line_is_read_for_what_it_still_says(tmp_path: Path) -> None:
    # A vote that is no object, and a critic's kind written as a number: the lean parse
    # refuses the line, and the line is read again key by key.
    base = write_run(tmp_path / "base.jsonl", labels_run(["PASS", "PASS"]))
    lines = (tmp_path / "base.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["verdicts"].append(None)
    record["verdicts"][2]["kind"] = 5
    edited = tmp_path / "edited.jsonl"
    edited.write_text(lines[0] + "\n" + json.dumps(record) + "\n")
    shutil.copy(
        base.with_name(base.name + ".manifest.json"),
        edited.with_name(edited.name + ".manifest.json"),
    )
    diff = compare_runs(base, edited)
    assert (diff.n_paired, diff.main.difference) == (2, 0.0)
    assert {row.name: row.worse for row in diff.critics} == {"a": 0, "b": 0, "c": 1}


def test_a_critic_first_named_on_a_later_line_is_checked_too(tmp_path: Path) -> None:
    def run(sha: str) -> BatchResult:
        first, second = result("i0", "PASS"), result("i1", "PASS", sha=sha)
        return batch([first.model_copy(update={"verdicts": first.verdicts[:2]}), second])

    base = write_run(tmp_path / "base.jsonl", run("0" * 64))
    cand = write_run(tmp_path / "cand.jsonl", run("1" * 64))
    with pytest.raises(ConfigError, match=r"'c' prompt sha256 0{12} -> 1{12}"):
        compare_runs(base, cand)


def test_a_missing_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="no such results file"):
        compare_runs("nowhere.jsonl", "nowhere.jsonl")


# -- the judge -----------------------------------------------------------------------------


def test_a_changed_prompt_is_refused_with_the_difference_listed() -> None:
    base = batch([result("i0", "PASS")], manifest=False)
    cand = batch([result("i0", "PASS", sha="1" * 64)], manifest=False)
    with pytest.raises(ConfigError, match=r"(?s)judge differs.*'a' prompt sha256 0{12} -> 1{12};"):
        compare_runs(base, cand, allow_missing_manifest=True)


def test_an_allowed_panel_change_is_recorded_in_the_result() -> None:
    base = batch([result("i0", "PASS")], manifest=False)
    cand = batch([result("i0", "PASS", voting="unanimous")], manifest=False)
    diff = compare_runs(base, cand, allow_missing_manifest=True, allow_panel_change=True)
    assert diff.panel_change_allowed
    assert diff.panel_changes == ["voting: majority -> unanimous"]


def test_answer_settings_are_compared_through_the_manifests() -> None:
    base = labels_run(["PASS"])
    cand = labels_run(["PASS"])
    cand.manifest_runs = [manifest_entry(temperature=0.7)]
    with pytest.raises(ConfigError, match=r"'a' temperature 0.0 -> 0.7"):
        compare_runs(base, cand)


def test_a_resumed_run_whose_panel_changed_midway_counts_as_a_change() -> None:
    cand = labels_run(["PASS"])
    cand.manifest_runs = [manifest_entry(), manifest_entry(model="other")]
    with pytest.raises(ConfigError, match="its runs used different panels"):
        compare_runs(labels_run(["PASS"]), cand)


def test_a_missing_manifest_is_refused_with_the_fix(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.jsonl", labels_run(["PASS"]))
    cand = write_run(tmp_path / "c.jsonl", labels_run(["PASS"], manifest=False))
    with pytest.raises(
        ConfigError, match=r"(?s)c.jsonl' has no run manifest.*--allow-missing-manifest"
    ):
        compare_runs(base, cand)


def test_an_allowed_missing_manifest_compares_what_the_results_record(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.jsonl", labels_run(["PASS"]))
    cand = write_run(tmp_path / "c.jsonl", labels_run(["PASS"], manifest=False))
    diff = compare_runs(base, cand, allow_missing_manifest=True)
    assert not diff.manifests_compared
    assert any("no run manifest" in note for note in diff.notes)


def test_a_cascade_against_one_ensemble_is_refused_saying_why() -> None:
    base = batch([result("i0", "PASS", tier=0)], manifest=False)
    cand = batch([result("i0", "PASS")], manifest=False)
    with pytest.raises(
        ConfigError, match=r"(?s)holds a cascade's results.*same cascade.*allow_panel_change"
    ):
        compare_runs(base, cand, allow_missing_manifest=True)


# -- the A/A check -------------------------------------------------------------------------


def test_the_noise_run_measures_the_judges_own_flips() -> None:
    base = labels_run(PASS_FAIL)
    again = labels_run(dropped(PASS_FAIL, 4))
    diff = compare_runs(base, labels_run(dropped(PASS_FAIL, 30)), noise=again)
    assert diff.noise is not None
    assert (diff.noise.n, diff.noise.worse) == (400, 4)
    assert "judge noise (A/A): 4 of 400 items changed when judged again" in str(diff)


def test_a_noise_run_on_other_outputs_is_refused() -> None:
    base = labels_run(["PASS"])
    other = batch([result("i0", "PASS", text="a different answer")])
    with pytest.raises(ConfigError, match="judged other outputs than the baseline"):
        compare_runs(base, base, noise=other)


def test_a_noise_run_by_another_judge_is_refused() -> None:
    base = labels_run(["PASS"])
    other = labels_run(["PASS"])
    other.manifest_runs = [manifest_entry(model="other")]
    with pytest.raises(ConfigError, match="not the baseline's judge judging again"):
        compare_runs(base, base, noise=other)


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"alpha": 0.0}, "alpha must be between 0 and 1"),
        ({"confidence": 1.5}, "confidence must be between 0 and 1"),
        ({"min_effect": -0.1}, "min_effect must be 0 or more"),
        ({"resamples": 10}, "resamples must be at least 100"),
        ({"metric": "f1"}, "metric must be one of"),
        ({"metric": "accuracy"}, "needs gold labels"),
        ({"metric": "rating"}, "compares ranking runs"),
    ],
)
def test_a_bad_option_is_refused_with_the_fix(option: dict, message: str) -> None:
    run = labels_run(["PASS"])
    with pytest.raises(ConfigError, match=message):
        compare_runs(run, run, **option)


# -- ranking runs --------------------------------------------------------------------------


def ranking_of(results: list) -> Ranking:
    ids = list(
        dict.fromkeys(n for r in results for n in (r.meta["rank"]["a"], r.meta["rank"]["b"]))
    )
    return fit_ranking(ids, results)


def test_two_rankings_compare_by_rating_with_enough_resamples_for_holm(tmp_path: Path) -> None:
    from .test_compare_ranking import SIX, losing, ranking_run

    base = ranking_of(ranking_run(SIX, queries=2))
    cand = ranking_of(losing(ranking_run(SIX, queries=2), SIX[-1]))
    diff = compare_runs(base, cand)
    assert diff.metric == "rating"
    rows = {row.name: row for row in diff.ratings}
    assert rows[SIX[-1]].difference is not None and rows[SIX[-1]].difference < 0
    assert rows[SIX[-1]].p_adjusted is not None and rows[SIX[-1]].p_adjusted < 0.05
    assert diff.failed("change")
    assert not diff.regressed  # ratings have no better or worse
    path = tmp_path / "ranking.json"
    path.write_text(base.model_dump_json(indent=2))
    assert compare_runs(path, path).ratings[0].difference == 0.0


def test_a_ranking_against_a_plain_run_is_refused() -> None:
    from .test_compare_ranking import SIX, ranking_run

    with pytest.raises(ConfigError, match="compares ranking runs"):
        compare_runs(ranking_of(ranking_run(SIX, queries=1)), labels_run(["PASS"]), metric="rating")


def test_a_lone_surrogate_in_an_id_survives_the_file_and_the_json(tmp_path: Path) -> None:
    hostile = "\ud800<b>|"
    base = batch([result(hostile, "PASS"), result("plain", "PASS")])
    cand = batch([result(hostile, "FAIL"), result("plain", "PASS")])
    diff = compare_runs(
        write_run(tmp_path / "b.jsonl", base), write_run(tmp_path / "c.jsonl", cand)
    )
    assert [flip.id for flip in diff.flips] == [hostile]
    assert RunDiff.from_json(diff.to_json()).flips[0].id == hostile


def test_a_noise_file_of_the_same_outputs_pairs_with_a_baseline_in_memory(tmp_path: Path) -> None:
    base = labels_run(PASS_FAIL)
    again = write_run(tmp_path / "again.jsonl", labels_run(dropped(PASS_FAIL, 4)))
    diff = compare_runs(base, labels_run(PASS_FAIL), noise=again)
    assert diff.noise is not None and diff.noise.worse == 4
