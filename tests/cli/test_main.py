"""The ``cross-judge`` command, run in-process: what every invocation shares (the version, usage
errors returned as exit code 2 instead of exiting)."""

from __future__ import annotations

import pytest

from cross_judge._version import __version__

from .conftest import run

pytestmark = pytest.mark.integration


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "version")[:2] == (0, f"cross-judge {__version__}\n")


def test_usage_error_returns_2_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "review", "items.jsonl", "--out", "x.jsonl")
    assert code == 2
    assert "the following arguments are required: --panel" in err
