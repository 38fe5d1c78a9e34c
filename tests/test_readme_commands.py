"""The README's two commands: the test command is exactly what ``.ci/run`` runs, and the demo
command's ``cross-judge`` invocation parses and runs offline."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cross_judge.cli import main

ROOT = Path(__file__).resolve().parents[1]


def two_commands() -> list[str]:
    """The ``bash`` blocks of the README's "Two commands" section, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_the_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Two commands"
    assert len(two_commands()) == 2


def test_the_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert two_commands()[1] == ci


def test_the_docs_give_the_same_two_commands() -> None:
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]
    assert two_commands()[0] in blocks
    assert two_commands()[1] in blocks


def test_the_demo_command_runs(capsys: pytest.CaptureFixture[str]) -> None:
    demo = two_commands()[0]
    words = shlex.split(demo.split("&&")[-1])
    assert words[0].endswith("cross-judge")
    assert main([*words[1:], "--latency-scale", "0"]) == 0
    assert "consensus matched gold" in " ".join(capsys.readouterr().out.split())
