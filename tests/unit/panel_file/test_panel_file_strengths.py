"""A panel file's simulator can judge candidates by latent strengths, as
``VendorServer(strengths=..., tie_rate=...)`` does: ``simulator: {strengths: {text: s} |
FILE.jsonl, tie_rate: t}``, each mistake reported at its key and line with the fix, and the
strengths recorded in the run's simulator record.
"""

from __future__ import annotations

import gc
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic
from cross_judge.panel_file import PanelError, PanelSpec, load_panel
from cross_judge.testing import VendorServer

PAIR_CRITIC = """\
critics:
  - name: a
    vendor: simulated
    prompt: pairwise
    persona: {accuracy: 1.0}
"""


@pytest.fixture(autouse=True)
def _simulators_stop_with_their_test() -> Iterator[None]:
    yield
    gc.collect()


def load(folder: Path, text: str) -> PanelSpec:
    path = folder / "panel.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_panel(path)


def problem(folder: Path, text: str) -> str:
    with pytest.raises(PanelError) as info:
        load(folder, text)
    return str(info.value)


def pair_critic(server: VendorServer) -> Critic:
    return Critic(
        name="judge", model="sim-a", prompt="pairwise", vendor="custom", base_url=server.url,
        api_key="unused", max_retries=0,
    )  # fmt: skip


def test_an_inline_strengths_mapping_reaches_the_simulator(tmp_path: Path) -> None:
    spec = load(tmp_path, PAIR_CRITIC + "simulator:\n  strengths: {' strong ': 30, weak: -30}\n")
    with spec.simulator() as server:
        assert (server.strength_of("strong"), server.strength_of("weak")) == (30.0, -30.0)
        verdict = pair_critic(server).judge_sync(
            "Which is better?", context={"response_a": "weak", "response_b": "strong"}
        )
    assert verdict.kind == "B"


def test_a_strengths_file_is_read_from_the_panel_files_folder(tmp_path: Path) -> None:
    rows = [
        {"candidate": "first answer", "strength": 1.5},
        {"text": "second answer", "strength": 0},
    ]
    (tmp_path / "data").mkdir()
    (tmp_path / "data/strengths.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    spec = load(
        tmp_path, PAIR_CRITIC + "simulator: {strengths: data/strengths.jsonl, tie_rate: 0.25}\n"
    )
    with spec.simulator() as server:
        assert server.strength_of("first answer") == 1.5
        assert server.strength_of("second answer") == 0.0
    record = spec.simulator_record()
    assert record is not None
    assert record["strengths"] == 2 and record["tie_rate"] == 0.25
    assert record["strengths_file"] == str((tmp_path / "data/strengths.jsonl").resolve())
    assert record["gold"] is True  # told the pairs' truth, through the strengths


def test_a_tie_rate_reaches_the_simulator(tmp_path: Path) -> None:
    spec = load(tmp_path, PAIR_CRITIC + "simulator: {strengths: {x: 0, y: 0}, tie_rate: 0.999}\n")
    with spec.simulator() as server:
        verdict = pair_critic(server).judge_sync(
            "Q", context={"response_a": "x", "response_b": "y"}
        )
    assert verdict.kind == "TIE"  # a tie with probability 0.999


def test_position_bias_with_strengths_is_accepted(tmp_path: Path) -> None:
    text = PAIR_CRITIC.replace("{accuracy: 1.0}", "{position_bias: 0.5}")
    spec = load(tmp_path, text + "simulator: {strengths: {x: 1, y: 0}}\n")
    assert spec.simulator_config is not None
    assert spec.simulator_config.truth.knows_pairs


def test_a_panel_without_strengths_keeps_its_record(tmp_path: Path) -> None:
    record = load(tmp_path, PAIR_CRITIC + "simulator: {better: {Q: x}}\n").simulator_record()
    assert record is not None and "strengths" not in record and "tie_rate" not in record


def test_a_strength_that_is_not_a_number_is_refused_at_its_key(tmp_path: Path) -> None:
    message = problem(tmp_path, PAIR_CRITIC + "simulator:\n  strengths: {x: high}\n")
    assert ":7: simulator.strengths.x: expected a finite number (a log-worth" in message


def test_strengths_given_as_a_list_are_refused_with_both_forms(tmp_path: Path) -> None:
    message = problem(tmp_path, PAIR_CRITIC + "simulator:\n  strengths: [x, y]\n")
    assert ":7: simulator.strengths: expected the path of a file of JSONL lines" in message
    assert "or a mapping {candidate text: strength}" in message


def test_a_bad_strengths_line_is_reported_with_its_number(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(
        '{"candidate": "x", "strength": 1}\n{"candidate": "y", "strength": "big"}\n',
        encoding="utf-8",
    )
    message = problem(tmp_path, PAIR_CRITIC + "simulator: {strengths: s.jsonl}\n")
    assert "simulator.strengths:" in message and "s.jsonl line 2:" in message
    assert '{"candidate": "...", "strength": 1.2}' in message


def test_a_candidate_given_two_strengths_in_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(
        '{"candidate": "x", "strength": 1}\n{"text": " x", "strength": 2}\n', encoding="utf-8"
    )
    message = problem(tmp_path, PAIR_CRITIC + "simulator: {strengths: s.jsonl}\n")
    assert "line 2: candidate 'x' is given both 1.0 and 2.0; keep one" in message


def test_a_missing_strengths_file_is_reported_with_the_path_it_looked_at(tmp_path: Path) -> None:
    message = problem(tmp_path, PAIR_CRITIC + "simulator: {strengths: nowhere.jsonl}\n")
    assert f"{tmp_path / 'nowhere.jsonl'}: cannot read the strengths" in message


def test_a_tie_rate_of_1_is_refused(tmp_path: Path) -> None:
    message = problem(tmp_path, PAIR_CRITIC + "simulator: {strengths: {x: 0}, tie_rate: 1}\n")
    assert "simulator.tie_rate:" in message and "less than 1" in message


def test_a_tie_rate_without_strengths_is_refused_with_the_fix(tmp_path: Path) -> None:
    message = problem(tmp_path, PAIR_CRITIC + "simulator: {better: {Q: x}, tie_rate: 0.2}\n")
    assert ":6: simulator.tie_rate: applies only to pairs judged by strengths" in message
    assert "give strengths: {CANDIDATE TEXT: STRENGTH}" in message
