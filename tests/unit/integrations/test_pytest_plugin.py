"""The pytest plugin (``pytest11`` entry point): the ``judge_compare`` fixture gates a test
on a comparison of two runs, with options, a summary and a Markdown file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cross_judge.report import assert_no_regression, compare_runs

from ..report.compare_runs import labels_run, write_run

PASS_FAIL = ["PASS"] * 150 + ["FAIL"] * 50
DROPPED = ["FAIL"] * 30 + ["PASS"] * 120 + ["FAIL"] * 50
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture
def runs(pytester: pytest.Pytester) -> Path:
    """base.jsonl, same.jsonl (the same labels) and worse.jsonl (30 PASS turned FAIL) in
    pytester's directory, each with its manifest."""
    pytester.makeini(INI)
    write_run(pytester.path / "base.jsonl", labels_run(PASS_FAIL))
    write_run(pytester.path / "same.jsonl", labels_run(PASS_FAIL))
    write_run(pytester.path / "worse.jsonl", labels_run(DROPPED))
    return pytester.path


def test_a_comparison_that_passes_its_gate_passes_the_test(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_gate(judge_compare):
            diff = judge_compare("base.jsonl", "same.jsonl")
            assert diff.main.difference == 0.0
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*cross-judge comparisons*", "passed *test_gate*NO SIGNIFICANT*"])


def test_a_regression_fails_the_test_with_the_readable_comparison(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_gate(judge_compare):
            judge_compare("base.jsonl", "worse.jsonl")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*REGRESSION: PASS share 0.750 -> 0.600*", "*30 items worse:*"])
    result.stdout.no_fnmatch_line("*_pytest_plugin.py*")  # no traceback into the plugin


def test_the_paths_come_from_the_command_line_when_the_test_gives_none(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_gate(judge_compare):
            judge_compare(min_effect=0.2)
        """
    )
    options = ("--judge-baseline", "base.jsonl", "--judge-candidate", "worse.jsonl")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *options)
    result.assert_outcomes(passed=1)  # a 15-point drop is within a 20-point minimum effect


def test_the_paths_come_from_the_ini_file(pytester: pytest.Pytester, runs: Path) -> None:
    pytester.makeini(INI + "judge_baseline = base.jsonl\njudge_candidate = worse.jsonl\n")
    pytester.makepyfile("def test_gate(judge_compare):\n    judge_compare()\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(failed=1)


def test_no_paths_at_all_is_a_usage_error_saying_the_options(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile("def test_gate(judge_compare):\n    judge_compare()\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*--judge-baseline BASE.jsonl --judge-candidate CAND.jsonl*"])
    assert result.ret != 0


def test_bad_input_fails_the_test_with_the_message_that_says_the_fix(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_gate(judge_compare):
            judge_compare("base.jsonl", "missing.jsonl")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cross-judge compare: missing.jsonl: no such results file*"])


def test_the_markdown_of_every_comparison_is_written_for_a_comment(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_same(judge_compare):
            judge_compare("base.jsonl", "same.jsonl")

        def test_worse(judge_compare):
            judge_compare("base.jsonl", "worse.jsonl")
        """
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--judge-markdown", "diff.md")
    written = (runs / "diff.md").read_text(encoding="utf-8")
    assert written.count("### cross-judge compare:") == 2
    assert "REGRESSION" in written


def test_a_session_that_never_compares_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*cross-judge comparisons*")


def test_assert_no_regression_raises_with_the_readable_comparison() -> None:
    diff = compare_runs(labels_run(PASS_FAIL), labels_run(DROPPED))
    with pytest.raises(AssertionError, match=r"(?s)fails the gate.*REGRESSION: PASS share"):
        assert_no_regression(diff)
    assert_no_regression(compare_runs(labels_run(PASS_FAIL), labels_run(PASS_FAIL)))
