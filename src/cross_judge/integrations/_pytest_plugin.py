"""The pytest plugin cross-judge installs (the ``pytest11`` entry point ``cross_judge``):
gate a test on the comparison of two runs.

* the fixture ``judge_compare``: ``judge_compare(baseline, candidate, fail_on=..., **options)``
  runs :func:`cross_judge.report.compare_runs` and fails the test with the readable
  comparison when it fails its gate (a ``ConfigError``, bad input, fails it with its
  message), else returns the :class:`~cross_judge.report.RunDiff`. Called without paths it
  compares ``--judge-baseline`` with ``--judge-candidate`` (or the ini keys
  ``judge_baseline`` and ``judge_candidate``);
* ``--judge-markdown PATH`` writes the Markdown of every comparison the session made, for a
  pull-request comment; the terminal summary lists each comparison and its outcome.

Loaded into every pytest run of anyone who installs cross-judge, it adds three options and
imports nothing of cross-judge until a test asks for the fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..stats import FailOn, RunDiff

__all__ = ["judge_compare", "pytest_addoption", "pytest_terminal_summary"]

_DIFFS = pytest.StashKey[list[tuple[str, "RunDiff", bool]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options: the default runs and the Markdown report."""
    group = parser.getgroup("cross-judge", "comparing two runs of a judge (cross-judge)")
    group.addoption(
        "--judge-baseline",
        metavar="BASE.jsonl",
        help="the baseline results file judge_compare() compares by default",
    )
    group.addoption(
        "--judge-candidate",
        metavar="CAND.jsonl",
        help="the candidate results file judge_compare() compares by default",
    )
    group.addoption(
        "--judge-markdown",
        metavar="PATH",
        help="write every comparison the session made as Markdown (a pull-request comment)",
    )
    parser.addini("judge_baseline", "the default baseline results file of judge_compare()")
    parser.addini("judge_candidate", "the default candidate results file of judge_compare()")


def _default(config: pytest.Config, name: str) -> str | None:
    given = config.getoption(f"--judge-{name}")
    if given:
        return str(given)
    ini = config.getini(f"judge_{name}")
    return str(ini) if ini else None


@pytest.fixture
def judge_compare(request: pytest.FixtureRequest) -> Callable[..., RunDiff]:
    """A function ``(baseline=None, candidate=None, *, fail_on="regression", **options)``
    comparing two runs (:func:`cross_judge.report.compare_runs` with ``options``): it fails
    the test with the readable comparison when the gate fails, else returns the
    :class:`~cross_judge.report.RunDiff`."""
    config = request.config
    made = config.stash.setdefault(_DIFFS, [])

    def compare(
        baseline: Any = None,
        candidate: Any = None,
        *,
        fail_on: FailOn = "regression",
        **options: Any,
    ) -> RunDiff:
        from ..errors import ConfigError
        from ..report import assert_no_regression, compare_runs

        baseline = baseline if baseline is not None else _default(config, "baseline")
        candidate = candidate if candidate is not None else _default(config, "candidate")
        if baseline is None or candidate is None:
            raise pytest.UsageError(
                "judge_compare() needs a baseline and a candidate: pass them, or run pytest "
                "with --judge-baseline BASE.jsonl --judge-candidate CAND.jsonl (or set "
                "judge_baseline and judge_candidate in the ini file)"
            )
        try:
            diff = compare_runs(baseline, candidate, **options)
        except ConfigError as exc:
            pytest.fail(f"cross-judge compare: {exc}", pytrace=False)
        failed = diff.failed(fail_on)
        made.append((request.node.nodeid, diff, failed))
        try:
            assert_no_regression(diff, fail_on=fail_on)
        except AssertionError as exc:
            pytest.fail(str(exc), pytrace=False)
        return diff

    return compare


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """A line per comparison the session made, and ``--judge-markdown``'s file."""
    made = config.stash.get(_DIFFS, [])
    if not made:
        return
    terminalreporter.section("cross-judge comparisons")
    for nodeid, diff, failed in made:
        terminalreporter.write_line(
            f"{'FAILED' if failed else 'passed'} {nodeid}: {diff.to_text().splitlines()[0]}"
        )
    target = config.getoption("--judge-markdown")
    if target:
        text = "\n".join(diff.to_markdown() for _nodeid, diff, _failed in made)
        Path(os.fspath(target)).write_text(text, encoding="utf-8", errors="backslashreplace")
        terminalreporter.write_line(f"markdown: {target}")
