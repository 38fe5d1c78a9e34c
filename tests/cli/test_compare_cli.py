"""``cross-judge compare``: the gate's exit status (0, 1, 2), its formats and its page, on
results files of real ``cross-judge review`` runs of the shipped simulated panels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cross_judge.report import RunDiff

from .conftest import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def review(capsys: pytest.CaptureFixture[str], out: Path, panel: str = "panel.yaml") -> Path:
    code, _, err = run(
        capsys,
        "review",
        EXAMPLES / ("answers.jsonl" if panel == "rubric.yaml" else "items.jsonl"),
        "--panel",
        EXAMPLES / panel,
        "--out",
        out,
        "--no-progress",
    )
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the module's runs are written to, once (by :func:`files`)."""
    return tmp_path_factory.mktemp("compare")


@pytest.fixture
def files(runs: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """base.jsonl and again.jsonl: the taxonomy panel's review of examples/items.jsonl,
    twice, with their manifests; worse.jsonl: base.jsonl with every KEEP consensus turned
    REJECT (the manifest copied). Written by the first test that asks."""
    base = runs / "base.jsonl"
    if not base.exists():
        review(capsys, base)
        review(capsys, runs / "again.jsonl")
        lines = base.read_text(encoding="utf-8").splitlines()
        changed = []
        for line in lines:
            record = json.loads(line)
            if record["consensus"] == "KEEP":
                record["consensus"] = "REJECT"
            changed.append(json.dumps(record))
        (runs / "worse.jsonl").write_text("\n".join(changed) + "\n", encoding="utf-8")
        shutil.copy(runs / "base.jsonl.manifest.json", runs / "worse.jsonl.manifest.json")
    capsys.readouterr()
    return runs


def test_a_run_against_its_second_judgement_exits_0(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "compare", files / "base.jsonl", files / "again.jsonl", "--label", "KEEP"
    )
    assert code == 0
    assert out.startswith("NO SIGNIFICANT CHANGE: KEEP share")
    assert "the same judge: manifests and verdicts compared" in out


def test_a_significant_regression_exits_1(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "compare", files / "base.jsonl", files / "worse.jsonl", "--label", "KEEP"
    )
    assert code == 1
    assert out.startswith("REGRESSION: KEEP share 0.200 -> 0.000")


def test_a_regression_within_the_minimum_effect_exits_0(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("compare", files / "base.jsonl", files / "worse.jsonl", "--label", "KEEP")
    code, _, _ = run(capsys, *argv, "--min-effect", "0.25")
    assert code == 0


def test_fail_on_change_exits_1_on_an_improvement(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("compare", files / "worse.jsonl", files / "base.jsonl", "--label", "KEEP")
    assert run(capsys, *argv)[0] == 0
    assert run(capsys, *argv, "--fail-on", "change")[0] == 1


def test_markdown_and_json_go_to_stdout_and_html_to_its_file(
    files: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ("compare", files / "base.jsonl", files / "worse.jsonl", "--label", "KEEP")
    code, markdown, _ = run(capsys, *argv, "--format", "markdown", "--html", tmp_path / "d.html")
    assert code == 1
    assert markdown.startswith("### cross-judge compare: REGRESSION")
    assert "<details>" in markdown
    assert "flipped items (6)" in (tmp_path / "d.html").read_text(encoding="utf-8")
    code, document, _ = run(capsys, *argv, "--format", "json")
    diff = RunDiff.from_json(document)
    assert diff.regressed and diff.main.worse == 6


def test_a_missing_file_exits_2(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "compare", files / "base.jsonl", files / "nowhere.jsonl")
    assert code == 2
    assert "no such results file" in err


def test_a_missing_manifest_exits_2_saying_the_option(
    files: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copy(files / "again.jsonl", tmp_path / "bare.jsonl")
    argv = ("compare", files / "base.jsonl", tmp_path / "bare.jsonl", "--label", "KEEP")
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "has no run manifest" in err and "--allow-missing-manifest" in err
    assert run(capsys, *argv, "--allow-missing-manifest")[0] == 0


def test_different_item_sets_exit_2_saying_the_option(
    files: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = (files / "again.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "short.jsonl").write_text("\n".join(lines[:-3]) + "\n", encoding="utf-8")
    shutil.copy(files / "again.jsonl.manifest.json", tmp_path / "short.jsonl.manifest.json")
    argv = ("compare", files / "base.jsonl", tmp_path / "short.jsonl", "--label", "KEEP")
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "3 only in" in err and "--allow-unmatched" in err
    code, out, _ = run(capsys, *argv, "--allow-unmatched")
    assert code == 0
    assert "27 items paired (3 only in the baseline" in out


def test_a_cascades_results_against_a_plain_runs_exit_2(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cascade = review(capsys, files / "cascade.jsonl", "rubric.yaml")
    code, _, err = run(capsys, "compare", files / "base.jsonl", cascade)
    assert code == 2
    assert "holds a cascade's results" in err and "--allow-panel-change" in err


def test_a_bad_option_exits_2(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "compare", files / "base.jsonl", files / "again.jsonl", "--alpha", "2")
    assert code == 2
