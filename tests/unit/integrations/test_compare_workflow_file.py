"""The GitHub Actions workflow the docs show (docs/examples/compare-workflow.yml): valid
YAML, on the "Comparing runs" page verbatim, its cross-judge commands accepted by the
command line's parser and working as written on a checkout of this repository (the
simulated panel), and the pytest variant's options the plugin's."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from cross_judge.cli._main import _build_parser
from cross_judge.integrations import _pytest_plugin

from ...waits import SAFETY_NET_S

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / "docs" / "examples" / "compare-workflow.yml"
PAGE = ROOT / "docs" / "comparing-runs.md"


class Command(NamedTuple):
    """One ``cross-judge`` command of a ``run`` step: its arguments and stdout's file."""

    argv: list[str]
    stdout: str | None


def commands() -> list[Command]:
    """The workflow's cross-judge commands in order (a line continued with ``\\`` joined)."""
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = [step for job in document["jobs"].values() for step in job["steps"]]
    found = []
    for step in steps:
        script = str(step.get("run", "")).replace("\\\n", " ")
        for line in script.splitlines():
            if line.startswith("cross-judge "):
                command = line.split("||")[0]  # `|| status=$?`: the shell's, not the CLI's
                argv, _, stdout = command.partition(">")
                found.append(Command(shlex.split(argv)[1:], stdout.strip() or None))
    return found


def test_the_page_shows_the_workflow_file_as_it_is() -> None:
    assert WORKFLOW.read_text(encoding="utf-8").strip() in PAGE.read_text(encoding="utf-8")


def test_the_workflow_reviews_both_runs_then_compares() -> None:
    assert [command.argv[0] for command in commands()] == ["review", "review", "compare"]


def test_every_cross_judge_command_of_the_workflow_parses() -> None:
    parser = _build_parser()
    for command in commands():
        args = parser.parse_args(command.argv)
        assert args.command == command.argv[0]
    compare = parser.parse_args(commands()[2].argv)
    assert (compare.format, compare.fail_on, compare.min_effect, compare.label) == (
        "markdown",
        "regression",
        0.02,
        "KEEP",
    )
    assert (compare.baseline, compare.candidate) == ("base.jsonl", "cand.jsonl")
    assert commands()[2].stdout == "diff.md"  # the Comment step's file


def test_the_comment_and_the_gate_follow_the_compare_exit_status() -> None:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps: dict[str, Any] = {
        step.get("name"): step for step in document["jobs"]["compare"]["steps"]
    }
    assert 'echo "status=$status" >> "$GITHUB_OUTPUT"' in steps["Compare"]["run"]
    assert steps["Comment"]["with"]["path"] == "diff.md"
    assert steps["Comment"]["if"] == "steps.compare.outputs.status != '2'"
    assert steps["Gate"]["if"] == "steps.compare.outputs.status != '0'"


class OptionsSeen:
    """Stands in for pytest's parser (and its groups): keeps the option names added."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def getgroup(self, *args: Any) -> OptionsSeen:
        return self

    def addoption(self, *names: str, **attributes: Any) -> None:
        self.names.update(names)

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def test_the_pytest_variant_uses_only_the_plugins_options() -> None:
    seen = OptionsSeen()
    _pytest_plugin.pytest_addoption(seen)  # type: ignore[arg-type]  # a stand-in parser
    known = seen.names
    shown = {
        option
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for line in page.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()
        if line.strip().startswith("pytest ")
        for option in re.findall(r"--judge-[\w-]+", line)
    }
    assert shown, "no docs page shows pytest with the plugin's options"
    assert shown <= known


@pytest.mark.slow  # fresh interpreters judging 30 items twice on the simulated panel
def test_the_workflows_commands_work_as_written_on_a_checkout(tmp_path: Path) -> None:
    # The two checkouts: the pull request's at the top, the base branch's in baseline/.
    for checkout in (tmp_path, tmp_path / "baseline"):
        (checkout / "examples").mkdir(parents=True)
        for name in ("items.jsonl", "panel.yaml"):
            shutil.copy(ROOT / "examples" / name, checkout / "examples" / name)
    statuses = []
    for command in commands():
        with open(tmp_path / (command.stdout or "stdout.txt"), "w", encoding="utf-8") as out:
            done = subprocess.run(
                [sys.executable, "-m", "cross_judge.cli", *command.argv],
                cwd=tmp_path,
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                timeout=SAFETY_NET_S,
                check=False,
            )
        statuses.append(done.returncode)
        assert done.returncode in (0, 1), f"{command.argv}: {done.stderr}"
    assert statuses == [0, 0, 0]  # the same items, the same panel: no change
    assert (
        (tmp_path / "diff.md")
        .read_text(encoding="utf-8")
        .startswith("### cross-judge compare: NO SIGNIFICANT CHANGE")
    )
    assert (tmp_path / "diff.html").is_file()
