"""A panel file's critic may say whether its model sees images (``vision:``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cross_judge import PanelError
from cross_judge.panel_file import PLACEHOLDER_URL, load_panel


def panel(tmp_path: Path, vision: str) -> Path:
    path = tmp_path / "panel.yaml"
    path.write_text(
        "critics:\n"
        f"  - {{name: a, vendor: simulated, model: sim-a, prompt: pass-fail, vision: {vision}}}\n"
    )
    return path


@pytest.mark.parametrize(("written", "vision"), [("false", False), ("true", True), ("null", None)])
def test_a_critics_vision_reaches_the_critic(
    tmp_path: Path, written: str, vision: bool | None
) -> None:
    ensemble = load_panel(panel(tmp_path, written)).build(simulator_url=PLACEHOLDER_URL)
    assert ensemble.critics[0].vision is vision


def test_a_vision_that_is_not_true_or_false_is_refused_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(PanelError, match=r"panel.yaml:2: critics\[0\]\.vision"):
        load_panel(panel(tmp_path, "sometimes"))
