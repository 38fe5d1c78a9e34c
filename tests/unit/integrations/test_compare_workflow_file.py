"""The GitHub Actions workflow the docs show (docs/examples/compare-workflow.yml): valid
YAML, on the "Comparing runs" page verbatim, and its cross-judge commands accepted by the
command line's parser."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from cross_judge.cli._main import _build_parser

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / "docs" / "examples" / "compare-workflow.yml"
PAGE = ROOT / "docs" / "comparing-runs.md"


def commands() -> list[list[str]]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = [step for job in document["jobs"].values() for step in job["steps"]]
    found = []
    for step in steps:
        for line in str(step.get("run", "")).splitlines():
            if line.startswith("cross-judge "):
                found.append(shlex.split(line.split(">")[0])[1:])
    return found


def test_the_page_shows_the_workflow_file_as_it_is() -> None:
    assert WORKFLOW.read_text(encoding="utf-8").strip() in PAGE.read_text(encoding="utf-8")


def test_the_workflow_reviews_then_compares() -> None:
    assert [argv[0] for argv in commands()] == ["review", "compare"]


def test_every_cross_judge_command_of_the_workflow_parses() -> None:
    parser = _build_parser()
    for argv in commands():
        args = parser.parse_args(argv)
        assert args.command == argv[0]
    compare = parser.parse_args(commands()[1])
    assert (compare.format, compare.fail_on, compare.min_effect) == ("markdown", "regression", 0.02)
