"""PANEL.yaml ``calibration:``: a critic's confidence calibration written in the panel file
reaches ``Critic(calibration=...)``; a wrong one is refused at load time naming the file,
the line and the fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cross_judge import Ensemble
from cross_judge.panel_file import PanelError, load_panel
from cross_judge.stats._reliability import ConfidenceCalibration

TEMPER = ConfidenceCalibration(
    method="temperature", temperature=1.7, n=200, bins=10, ece_before=0.21, ece_after=0.04
)
STEPS = ConfidenceCalibration(
    method="isotonic", breakpoints=(0.0, 0.85), values=(0.55, 0.8), n=120, bins=10,
    ece_before=0.3, ece_after=0.02,
)  # fmt: skip


def write(tmp_path: Path, critics: str) -> Path:
    """A panel file of the given critics (YAML list items, dedented)."""
    path = tmp_path / "panel.yaml"
    path.write_text("critics:\n" + textwrap.indent(textwrap.dedent(critics), "  "), "utf-8")
    return path


def problem(tmp_path: Path, critics: str) -> PanelError:
    with pytest.raises(PanelError) as raised:
        load_panel(write(tmp_path, critics))
    assert len(raised.value.problems) == 1, str(raised.value)
    return raised.value


def test_a_temperature_calibration_reaches_the_critic(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        - name: a
          model: m-a
          vendor: custom
          base_url: http://127.0.0.1:9/v1
          calibration:
            method: temperature
            temperature: 1.7
            n: 200
            bins: 10
            ece_before: 0.21
            ece_after: 0.04
        """,
    )
    panel = load_panel(path).build()
    assert isinstance(panel, Ensemble)
    assert panel.critics[0].calibration == TEMPER


def test_an_isotonic_calibration_in_flow_style_reaches_the_critic(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        - name: a
          model: m-a
          vendor: custom
          base_url: http://127.0.0.1:9/v1
          calibration: {method: isotonic, breakpoints: [0.0, 0.85], values: [0.55, 0.8],
                        n: 120, bins: 10, ece_before: 0.3, ece_after: 0.02}
        """,
    )
    spec = load_panel(path)
    assert spec.critics[0].to_critic().calibration == STEPS


def test_a_critic_without_calibration_has_none(tmp_path: Path) -> None:
    path = write(
        tmp_path, "- {name: a, model: m-a, vendor: custom, base_url: http://127.0.0.1:9}\n"
    )
    assert load_panel(path).critics[0].to_critic().calibration is None


def test_a_calibration_is_recorded_as_an_answer_setting_in_the_critic_dump(tmp_path: Path) -> None:
    flow = "{method: temperature, temperature: 1.7, n: 200, ece_before: 0.21, ece_after: 0.04}"
    path = write(tmp_path, f"- {{name: a, model: m-a, calibration: {flow}}}\n")
    dumped = load_panel(path).critics[0].to_critic().model_dump()
    assert dumped["calibration"] == TEMPER.to_dict()


def test_an_unknown_calibration_key_is_named_at_its_line_with_a_did_you_mean(
    tmp_path: Path,
) -> None:
    error = problem(
        tmp_path,
        """\
        - name: a
          model: m-a
          calibration:
            method: temperature
            temprature: 1.7
            n: 200
            ece_before: 0.21
            ece_after: 0.04
        """,
    )
    assert str(error).startswith(f"{tmp_path / 'panel.yaml'}:6: critics[0].calibration.temprature:")
    assert "is not a calibration field (did you mean 'temperature'?)" in str(error)


def test_an_invalid_calibration_value_is_reported_at_its_key_with_the_fix(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        """\
        - name: a
          model: m-a
          calibration:
            method: temperature
            temperature: -1.7
            n: 200
            ece_before: 0.21
            ece_after: 0.04
        """,
    )
    text = str(error)
    assert text.startswith(f"{tmp_path / 'panel.yaml'}:6: critics[0].calibration.temperature: ")
    assert "must be a finite number > 0, got -1.7" in text
    assert "cross-judge stats OUT.jsonl --gold GOLD.jsonl --fit-confidence temperature" in text
    assert "or remove calibration" in text


def test_missing_calibration_keys_are_named_at_the_calibration_line(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        """\
        - name: a
          model: m-a
          calibration: {method: temperature, temperature: 1.7}
        """,
    )
    (found,) = error.problems
    assert (found.field, found.line) == ("critics[0].calibration", 4)
    assert "missing keys: ['n', 'ece_before', 'ece_after']" in found.message
    assert "--fit-confidence" in found.message


def test_isotonic_steps_out_of_order_are_refused(tmp_path: Path) -> None:
    flow = (
        "{method: isotonic, breakpoints: [0.85, 0.0], values: [0.55, 0.8], n: 120, "
        "ece_before: 0.3, ece_after: 0.02}"
    )
    error = problem(tmp_path, f"- name: a\n  model: m-a\n  calibration: {flow}\n")
    (found,) = error.problems
    assert (found.field, found.line) == ("critics[0].calibration", 4)
    assert "strictly increasing" in found.message


def test_an_isotonic_calibration_with_a_temperature_says_to_remove_it(tmp_path: Path) -> None:
    flow = (
        "{method: isotonic, temperature: 1.5, breakpoints: [0.0], values: [0.5], n: 120, "
        "ece_before: 0.3, ece_after: 0.02}"
    )
    error = problem(tmp_path, f"- name: a\n  model: m-a\n  calibration: {flow}\n")
    assert "an isotonic calibration has no temperature (remove it)" in str(error)


@pytest.mark.parametrize(
    ("value", "got"), [("temperature", "text"), ("1.7", "a number"), ("[1.7]", "a list")]
)
def test_a_calibration_that_is_not_a_mapping_is_refused_with_an_example(
    tmp_path: Path, value: str, got: str
) -> None:
    error = problem(tmp_path, f"- name: a\n  model: m-a\n  calibration: {value}\n")
    (found,) = error.problems
    assert (found.field, found.line) == ("critics[0].calibration", 4)
    assert found.message.startswith("expected a mapping such as {method: temperature, ")
    assert f"got {got};" in found.message


def test_calibration_problems_of_several_critics_are_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(PanelError) as raised:
        load_panel(
            write(
                tmp_path,
                """\
                - {name: a, model: m-a, calibration: {metod: temperature}}
                - {name: b, model: m-b, calibration: 2}
                """,
            )
        )
    assert [p.field for p in raised.value.problems] == [
        "critics[0].calibration.metod",
        "critics[1].calibration",
    ]


def test_a_calibration_in_a_cascade_tier_reaches_its_critic(tmp_path: Path) -> None:
    path = tmp_path / "cascade.yaml"
    flow = "{method: temperature, temperature: 1.7, n: 200, ece_before: 0.21, ece_after: 0.04}"
    path.write_text(
        "tiers:\n"
        "  - critics: [{name: a, model: m-a}]\n"
        f"  - critics: [{{name: b, model: m-b, calibration: {flow}}}]\n",
        encoding="utf-8",
    )
    spec = load_panel(path)
    assert [c.to_critic().calibration for c in spec.all_critics] == [None, TEMPER]
