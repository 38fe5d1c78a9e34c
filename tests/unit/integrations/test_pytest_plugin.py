"""The pytest plugin (``pytest11`` entry point): the ``judge_compare`` fixture gates a test
on a comparison of two runs, with options, a summary and a Markdown file."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cross_judge.errors import ConfigError
from cross_judge.integrations import _pytest_plugin
from cross_judge.report import assert_no_regression, compare_runs

from ..report.compare_runs import labels_run, write_run

PASS_FAIL = ["PASS"] * 150 + ["FAIL"] * 50
DROPPED = ["FAIL"] * 30 + ["PASS"] * 120 + ["FAIL"] * 50
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture(scope="module")
def imported_before_pytester(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compare two files once, each view and the bad-input path included, before pytester
    starts (a module-scoped fixture is set up before the function-scoped ``pytester``):
    pytester removes from ``sys.modules`` every module imported while it was up, so a
    module first imported by an in-process run would be imported again afterwards, as new
    objects that the package faces of other tests no longer hold."""
    directory = tmp_path_factory.mktemp("imported")
    write_run(directory / "base.jsonl", labels_run(PASS_FAIL))
    write_run(directory / "worse.jsonl", labels_run(DROPPED))
    diff = compare_runs(directory / "base.jsonl", directory / "worse.jsonl")
    diff.to_text(), diff.to_markdown()
    with pytest.raises(ConfigError):
        compare_runs(directory / "base.jsonl", directory / "missing.jsonl")


@pytest.fixture
def runs(pytester: pytest.Pytester, imported_before_pytester: None) -> Path:
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


def test_no_paths_at_all_fails_the_test_saying_the_options(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile("def test_gate(judge_compare):\n    judge_compare()\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*judge_compare() has no baseline and candidate*--judge-baseline BASE.jsonl*"]
    )
    result.stdout.no_fnmatch_line("*_pytest_plugin.py*")


def test_a_missing_candidate_alone_is_named(pytester: pytest.Pytester, runs: Path) -> None:
    pytester.makepyfile("def test_gate(judge_compare):\n    judge_compare()\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--judge-baseline", "b.jsonl")
    result.stdout.fnmatch_lines(["*judge_compare() has no candidate:*"])


def test_an_unknown_fail_on_fails_the_test_before_comparing(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_gate(judge_compare):
            judge_compare("base.jsonl", "same.jsonl", fail_on="regressions")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fail_on='regressions'*fail_on is 'regression' or 'change'*"])
    result.stdout.no_fnmatch_line("*cross-judge comparisons*")


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
    result.stdout.no_fnmatch_line("*_pytest_plugin.py*")


def test_bad_input_is_listed_as_an_error_in_the_summary_and_the_markdown(
    pytester: pytest.Pytester, runs: Path
) -> None:
    pytester.makepyfile(
        """
        def test_gate(judge_compare):
            judge_compare("base.jsonl", "<missing>.jsonl")
        """
    )
    pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--judge-markdown", "diff.md"
    ).stdout.fnmatch_lines(["*cross-judge comparisons*", "ERROR *test_gate: cross-judge compare:*"])
    written = (runs / "diff.md").read_text(encoding="utf-8")
    assert "### cross-judge compare: ERROR" in written
    assert "    cross-judge compare: <missing>.jsonl" in written  # a code block: shown as it is


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
    assert "test&#95;worse</code>" in written.split("REGRESSION")[1]  # the test that made it
    assert written.index("NO SIGNIFICANT CHANGE") < written.index("REGRESSION")  # run order


def test_the_markdown_file_is_written_when_no_comparison_was_made(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--judge-markdown", "diff.md")
    result.assert_outcomes(passed=1)
    assert "No cross-judge comparison was made" in (pytester.path / "diff.md").read_text()


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


def test_a_worker_hands_its_comparisons_to_the_controller() -> None:
    # pytest-xdist's two ends, without its processes: the worker's session end puts the
    # comparisons in workeroutput, the controller's pytest_testnodedown takes them in.
    made = _pytest_plugin._Comparison(
        test="t.py::test_b", outcome="passed", headline="NO SIGNIFICANT CHANGE", markdown=""
    )
    worker = pytest.Stash()
    worker[_pytest_plugin._MADE] = [made]
    worker_config = SimpleNamespace(stash=worker, workerinput={}, workeroutput={})
    session = SimpleNamespace(config=worker_config)
    _pytest_plugin.pytest_sessionfinish(session)  # type: ignore[arg-type]  # a stand-in Session

    controller = SimpleNamespace(stash=pytest.Stash())
    earlier = {_pytest_plugin._WORKER_KEY: [{**made, "test": "t.py::test_c"}]}
    nodes = [
        SimpleNamespace(config=controller, workeroutput=earlier),
        SimpleNamespace(config=controller, workeroutput=worker_config.workeroutput),
        SimpleNamespace(config=controller),  # a worker that crashed sends no workeroutput
    ]
    for node in nodes:
        _pytest_plugin.pytest_testnodedown(node, None)
    tests = [comparison["test"] for comparison in controller.stash[_pytest_plugin._MADE]]
    assert tests == ["t.py::test_b", "t.py::test_c"]  # ordered by test id, not by worker


@pytest.mark.slow  # two fresh interpreters: pytest-xdist's workers
def test_under_xdist_the_controller_reports_every_workers_comparisons(
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
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--judge-markdown", "diff.md"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*cross-judge comparisons*", "passed *test_same: NO SIGNIFICANT*", "FAILED *test_worse*"]
    )
    assert (runs / "diff.md").read_text(encoding="utf-8").count("### cross-judge compare:") == 2
