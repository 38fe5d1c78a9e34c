"""The ``cross-judge`` command, run in-process: ``prompts list | show | validate``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run

pytestmark = pytest.mark.integration


# -- prompts ------------------------------------------------------------------------------------


def test_prompts_list_shows_refs_and_labels(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "prompts", "list")
    assert code == 0
    assert "taxonomy-review@1" in stdout and "pass-fail@1" in stdout and "PASS, FAIL" in stdout


def test_prompts_show_prints_the_yaml_fields(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    code, stdout, _ = run(capsys, "prompts", "show", "taxonomy-review@1")
    assert code == 0
    fields = yaml.safe_load(stdout)
    assert fields["id"] == "taxonomy-review" and fields["version"] == "1"
    assert "{query}" in fields["user_prompt_template"]
    assert fields["labels"] == ["KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR"]


def test_prompts_show_unknown_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "prompts", "show", "nope@1")
    assert code == 2 and "no packaged prompt 'nope'" in err


def test_prompts_validate_accepts_a_good_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        'id: mine\nversion: "3"\nuser_prompt_template: "<item>{query}</item>"\n', encoding="utf-8"
    )
    assert run(capsys, "prompts", "validate", path)[:2] == (0, "ok: mine@3\n")


def test_prompts_validate_reports_field_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text('id: mine\nversion: "3"\nuser_promt_template: "{query}"\n', encoding="utf-8")
    code, _, err = run(capsys, "prompts", "validate", path)
    assert code == 2
    assert "cross-judge: error:" in err and "'user_promt_template' (line 3)" in err


def test_prompts_validate_missing_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "prompts", "validate", tmp_path / "nope.yaml")
    assert code == 2 and "no such prompt file" in err


def test_prompts_without_an_action_prints_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "prompts")
    assert code == 2 and "validate" in err
