"""``cross-judge align`` on the shipped offline panel: what it prints and writes, the exit
code when the gain is unclear, and a resumed run that asks again only what is missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from cross_judge.panel_file import load_panel
from cross_judge.prompts import load_prompt

from .conftest import run

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("align.yaml", "support.jsonl", "support.gold.jsonl"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    return tmp_path


ARGS = ("align", "align.yaml", "--gold", "support.gold.jsonl", "--items", "support.jsonl")


def test_a_clear_gain_writes_the_versions_a_panel_and_the_record(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, *ARGS, "--out", "aligned")
    assert code == 0
    assert "jury: consensus kappa" in out and "wrote aligned/panel.yaml" in out
    for name in "abc":
        spec = load_prompt(folder / "aligned" / f"pass-fail-{name}@4.yaml")
        assert len(spec.examples) == 4 and spec.provenance is not None
    panel = load_panel(folder / "aligned" / "panel.yaml")
    assert [c.prompt for c in panel.critics] == [f"pass-fail-{n}@4.yaml" for n in "abc"]
    record = json.loads((folder / "aligned" / "alignment.json").read_text(encoding="utf-8"))
    assert record["kind"] == "cross-judge alignment" and record["refusals"] == []


def test_the_aligned_panel_file_runs_from_its_new_folder(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, *ARGS, "--out", "aligned")[0] == 0
    code, _, err = run(
        capsys, "review", "support.jsonl", "--panel", "aligned/panel.yaml", "--out", "again.jsonl"
    )
    assert code == 0, err


def test_no_clear_gain_writes_nothing_and_exits_3(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    panel = yaml.safe_load((folder / "align.yaml").read_text(encoding="utf-8"))
    for critic in panel["critics"]:
        del critic["persona"]["policy"]  # no blind spot: examples change nothing
        critic["persona"]["anchoring"] = 0.0
    (folder / "plain.yaml").write_text(yaml.safe_dump(panel), encoding="utf-8")
    code, out, err = run(capsys, "align", "plain.yaml", *ARGS[2:], "--out", "aligned")
    assert code == 3
    assert "refused: the jury's consensus kappa" in out and "nothing written" in err
    assert sorted(p.name for p in (folder / "aligned").iterdir()) == [".align"]


def test_force_writes_what_was_refused(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    panel = yaml.safe_load((folder / "align.yaml").read_text(encoding="utf-8"))
    for critic in panel["critics"]:
        del critic["persona"]["policy"]
        critic["persona"]["anchoring"] = 0.0
    (folder / "plain.yaml").write_text(yaml.safe_dump(panel), encoding="utf-8")
    code, _, _ = run(capsys, "align", "plain.yaml", *ARGS[2:], "--out", "aligned", "--force")
    assert code == 0
    assert (folder / "aligned" / "pass-fail-a@4.yaml").is_file()


def test_an_earlier_run_in_the_folder_needs_resume(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "aligned" / ".align").mkdir(parents=True)
    code, _, err = run(capsys, *ARGS, "--out", "aligned")
    assert code == 2 and "add --resume to continue it" in err


def test_a_resumed_run_keeps_every_finished_result(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, *ARGS, "--out", "first")[0] == 0
    work = folder / "first" / ".align"
    before = work.joinpath("before.jsonl").read_text(encoding="utf-8").splitlines()
    after = work.joinpath("after.jsonl").read_text(encoding="utf-8").splitlines()
    # As a run killed partway leaves it: some results of each run, the last line torn.
    resumed = folder / "second" / ".align"
    resumed.mkdir(parents=True)
    resumed.joinpath("before.jsonl").write_text("\n".join(before) + "\n", encoding="utf-8")
    resumed.joinpath("after.jsonl").write_text(
        "\n".join(after[:40]) + "\n" + after[40][:30], encoding="utf-8"
    )
    code, _, err = run(capsys, *ARGS, "--out", "second", "--resume")
    assert code == 0, err
    assert "300 results of the first run kept" in err and "40 held-out results kept" in err
    first = json.loads((folder / "first" / "alignment.json").read_text(encoding="utf-8"))
    second = json.loads((folder / "second" / "alignment.json").read_text(encoding="utf-8"))
    assert first["figures"] == second["figures"]


def test_a_gold_label_off_the_prompts_labels_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = folder / "support.gold.jsonl"
    lines = gold.read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps({"id": "ticket-000", "label": "MAYBE"})
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, *ARGS, "--out", "aligned")
    assert code == 2 and "gold labels ['MAYBE'] are not among the labels" in err
    assert not (folder / "aligned").exists()  # nothing judged, nothing to resume


def test_too_few_labels_are_a_usage_error_before_any_item_is_judged(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = folder / "support.gold.jsonl"
    gold.write_text(
        "".join(gold.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8"
    )
    code, _, err = run(capsys, *ARGS, "--out", "aligned")
    assert code == 2 and "label at least 34 items" in err
    assert not (folder / "aligned").exists()  # nothing judged, nothing to resume


def test_instructions_drafted_by_the_panels_editor_are_kept_for_a_resume(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, *ARGS, "--out", "aligned", "--method", "instructions", "--editor", "c"
    )
    assert code == 0, err
    assert "a's instruction: Judge refund items" in out
    drafts = json.loads((folder / "aligned" / ".align" / "instructions.json").read_text("utf-8"))
    assert set(drafts) == {"a", "b", "c"}
    spec = load_prompt(folder / "aligned" / "pass-fail-a@4.yaml")
    assert drafts["a"] in spec.system_prompt and spec.examples == ()


def test_an_editor_that_is_not_a_critic_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, *ARGS, "--out", "aligned", "--method", "both", "--editor", "z")
    assert code == 2 and "--editor 'z' is not a critic of the panel (a, b, c)" in err
