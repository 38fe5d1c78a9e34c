"""The pytest plugin cross-judge installs (the ``pytest11`` entry point ``cross_judge``):
gate a test on the comparison of two runs.

* the fixture ``judge_compare``: ``judge_compare(baseline, candidate, fail_on=..., **options)``
  runs :func:`cross_judge.report.compare_runs` and fails the test with the readable
  comparison when it fails its gate (a ``ConfigError``, bad input, fails it with its
  message, as does a call with no runs to compare), else returns the
  :class:`~cross_judge.report.RunDiff`. Called without paths it compares
  ``--judge-baseline`` with ``--judge-candidate`` (or the ini keys ``judge_baseline`` and
  ``judge_candidate``);
* the terminal summary lists each comparison the session made and its outcome;
  ``--judge-markdown PATH`` writes the Markdown of every one, for a pull-request comment
  (written even when none was made, saying so, so a comment step always has its file).
  Under pytest-xdist the workers send theirs to the controller, which reports them all,
  ordered by test id (one process reports them in the order they ran).

Loaded into every pytest run of anyone who installs cross-judge, it adds three options and
two ini keys and imports nothing of cross-judge until a test asks for the fixture; it does
not fail a session by itself (only the tests that call ``judge_compare`` can fail).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

if TYPE_CHECKING:
    from ..stats import FailOn, RunDiff

__all__ = [
    "judge_compare",
    "pytest_addoption",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
]


class _Comparison(TypedDict):
    """One comparison a test made, as plain strings: what a pytest-xdist worker can send
    to the controller (``config.workeroutput`` travels through execnet)."""

    test: str
    outcome: str  # "passed", "FAILED" (the gate) or "ERROR" (bad input)
    headline: str
    markdown: str  # empty unless --judge-markdown was given


_MADE = pytest.StashKey[list[_Comparison]]()
_WORKER_KEY = "cross_judge_comparisons"
_FAIL_ON = ("regression", "change")


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


def _made(config: pytest.Config) -> list[_Comparison]:
    return config.stash.setdefault(_MADE, [])


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.fixture
def judge_compare(request: pytest.FixtureRequest) -> Callable[..., RunDiff]:
    """A function ``(baseline=None, candidate=None, *, fail_on="regression", **options)``
    comparing two runs (:func:`cross_judge.report.compare_runs` with ``options``): it fails
    the test with the readable comparison when the gate fails, else returns the
    :class:`~cross_judge.report.RunDiff`. Without a baseline or a candidate it takes
    ``--judge-baseline``/``--judge-candidate`` (or the ini keys); with neither there, or a
    ``fail_on`` other than ``"regression"``/``"change"``, it fails the test saying so."""
    config = request.config
    test = request.node.nodeid
    markdown = bool(config.getoption("--judge-markdown"))

    def compare(
        baseline: Any = None,
        candidate: Any = None,
        *,
        fail_on: FailOn = "regression",
        **options: Any,
    ) -> RunDiff:
        baseline = baseline if baseline is not None else _default(config, "baseline")
        candidate = candidate if candidate is not None else _default(config, "candidate")
        if baseline is None or candidate is None:
            missing = " and ".join(
                name
                for name, run in (("baseline", baseline), ("candidate", candidate))
                if run is None
            )
            pytest.fail(
                f"judge_compare() has no {missing}: pass the runs, or run pytest with "
                "--judge-baseline BASE.jsonl --judge-candidate CAND.jsonl (or set "
                "judge_baseline and judge_candidate in the ini file)",
                pytrace=False,
            )
        if fail_on not in _FAIL_ON:
            pytest.fail(
                f"judge_compare(fail_on={fail_on!r}): fail_on is 'regression' or 'change'",
                pytrace=False,
            )

        from ..errors import ConfigError
        from ..report import assert_no_regression, compare_runs

        try:
            diff = compare_runs(baseline, candidate, **options)
        except ConfigError as exc:
            message = f"cross-judge compare: {exc}"
            _made(config).append(
                _Comparison(
                    test=test,
                    outcome="ERROR",
                    headline=message.splitlines()[0],
                    markdown=_error_markdown(message) if markdown else "",
                )
            )
            pytest.fail(message, pytrace=False)
        _made(config).append(
            _Comparison(
                test=test,
                outcome="FAILED" if diff.failed(fail_on) else "passed",
                headline=diff.to_text().splitlines()[0],
                markdown=diff.to_markdown() if markdown else "",
            )
        )
        try:
            assert_no_regression(diff, fail_on=fail_on)
        except AssertionError as exc:
            pytest.fail(str(exc), pytrace=False)
        return diff

    return compare


def _error_markdown(message: str) -> str:
    # An indented code block shows the message as it is: nothing in it is Markdown or HTML.
    quoted = "\n".join(f"    {line}" for line in message.splitlines())
    return f"### cross-judge compare: ERROR\n\n{quoted}\n"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker: hand this worker's comparisons to the controller."""
    config = session.config
    if _is_worker(config):
        # xdist sets workeroutput on a worker's config and sends it when the session ends.
        output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
        output[_WORKER_KEY] = list(_made(config))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller (the hook is xdist's): collect a finished worker's
    comparisons (none from a worker that crashed before sending them)."""
    sent = getattr(node, "workeroutput", {}).get(_WORKER_KEY, [])
    made = _made(node.config)
    made.extend(sent)
    made.sort(key=lambda comparison: comparison["test"])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """A line per comparison the session made, and ``--judge-markdown``'s file."""
    if _is_worker(config):
        return  # the controller reports every worker's comparisons
    made = config.stash.get(_MADE, [])
    target = config.getoption("--judge-markdown")
    if made:
        terminalreporter.section("cross-judge comparisons")
        for comparison in made:
            terminalreporter.write_line(
                f"{comparison['outcome']} {comparison['test']}: {comparison['headline']}"
            )
    if target:
        Path(os.fspath(target)).write_text(
            _markdown_file(made), encoding="utf-8", errors="backslashreplace"
        )
        terminalreporter.write_line(f"cross-judge comparisons as Markdown: {target}")


def _markdown_file(made: list[_Comparison]) -> str:
    if not made:
        return "No cross-judge comparison was made in this test session.\n"
    parts = [
        f"{comparison['markdown'].rstrip()}\n\n<sub>{comparison['outcome']}: "
        f"<code>{_escape(comparison['test'])}</code></sub>"
        for comparison in made
    ]
    return "\n\n".join(parts) + "\n"


def _escape(text: str) -> str:
    # A test id holds a parametrization's text: none of it may become Markdown or HTML.
    return "".join(c if c.isalnum() or c in " .,:/-=()" else f"&#{ord(c)};" for c in text)
