"""A panel file's simulated critics judge by content as Python personas do: ``persona:``
takes ``forbidden_tools``, ``fail_unhandled_errors``, ``needs_context``, ``fail_label`` and
``vision``, ``simulator:`` takes ``max_request_bytes``; each mistake is reported at its key
with the fix, and the run's record names the rules that are on.
"""

from __future__ import annotations

import gc
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cross_judge.panel_file import PanelError, PanelSpec, load_panel
from cross_judge.testing import Persona

PASS_FAIL_CRITIC = """\
critics:
  - name: a
    vendor: simulated
    model: sim-a
    prompt: pass-fail
    persona: {PERSONA}
"""


@pytest.fixture(autouse=True)
def _simulators_stop_with_their_test() -> Iterator[None]:
    yield
    gc.collect()


def load(folder: Path, text: str) -> PanelSpec:
    path = folder / "panel.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_panel(path)


def with_persona(persona: str, extra: str = "") -> str:
    return PASS_FAIL_CRITIC.replace("{PERSONA}", persona) + extra


def problem(folder: Path, text: str) -> str:
    with pytest.raises(PanelError) as info:
        load(folder, text)
    return str(info.value)


def test_every_content_rule_reaches_the_persona(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        with_persona(
            "{accuracy: 0.9, forbidden_tools: [delete_files, send_email], "
            "fail_unhandled_errors: true, needs_context: true, vision: sees}"
        ),
    )
    assert spec.personas() == [
        Persona(
            "sim-a",
            accuracy=0.9,
            labels=("PASS", "FAIL"),
            forbidden_tools=("delete_files", "send_email"),
            fail_unhandled_errors=True,
            needs_context=True,
            vision="sees",
        )
    ]


def test_a_persona_without_content_rules_is_as_before(tmp_path: Path) -> None:
    (persona,) = load(tmp_path, with_persona("{accuracy: 0.9}")).personas()
    assert persona == Persona("sim-a", accuracy=0.9, labels=("PASS", "FAIL"))


def test_a_fail_label_the_critic_does_not_answer_is_reported_with_the_fix(tmp_path: Path) -> None:
    message = problem(tmp_path, with_persona("{forbidden_tools: [rm], fail_label: REJECTED}"))
    assert "critics[0].persona.fail_label: is 'REJECTED'" in message
    assert "this critic answers ['PASS', 'FAIL']" in message
    assert "fail_label: FAIL" in message


def test_the_fail_label_of_a_critic_of_other_labels_is_suggested(tmp_path: Path) -> None:
    message = problem(
        tmp_path,
        with_persona("{needs_context: true}").replace("pass-fail", "taxonomy-review@1"),
    )
    assert "critics[0].persona.fail_label: is 'FAIL'" in message
    assert "fail_label: REJECT" in message


def test_a_fail_label_is_not_checked_without_a_rule_that_answers_it(tmp_path: Path) -> None:
    spec = load(tmp_path, with_persona("{fail_label: NOPE, vision: refuses}"))
    assert spec.personas()[0].vision == "refuses"


def test_forbidden_tools_given_as_text_is_reported_with_an_example(tmp_path: Path) -> None:
    message = problem(tmp_path, with_persona("{forbidden_tools: delete_files}"))
    assert "critics[0].persona.forbidden_tools:" in message
    assert "e.g. forbidden_tools: [delete_files, send_email]" in message


def test_a_tool_name_with_parentheses_is_reported(tmp_path: Path) -> None:
    message = problem(tmp_path, with_persona('{forbidden_tools: ["rm()"]}'))
    assert "no spaces or parentheses" in message


def test_an_unknown_vision_is_reported_with_the_choices(tmp_path: Path) -> None:
    message = problem(tmp_path, with_persona("{vision: squints}"))
    assert "critics[0].persona.vision:" in message
    assert "'ignores'" in message and "'sees'" in message and "'refuses'" in message


def test_the_size_limit_reaches_the_simulator(tmp_path: Path) -> None:
    spec = load(tmp_path, with_persona("{accuracy: 0.9}", "simulator: {max_request_bytes: 4096}\n"))
    body = {"model": "sim-a", "messages": [{"role": "user", "content": "x" * 5000}]}
    with spec.simulator() as server:
        response = httpx.post(f"{server.url}/chat/completions", json=body, trust_env=False)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "request_too_large"
    assert spec.simulator_record()["max_request_bytes"] == 4096  # type: ignore[index]


def test_a_size_limit_below_one_byte_is_reported(tmp_path: Path) -> None:
    message = problem(
        tmp_path, with_persona("{accuracy: 0.9}", "simulator: {max_request_bytes: 0}\n")
    )
    assert "simulator.max_request_bytes:" in message


def test_the_record_names_the_rules_that_are_on(tmp_path: Path) -> None:
    spec = load(tmp_path, with_persona("{forbidden_tools: [rm], vision: sees}"))
    record = spec.simulator_record()
    assert record is not None
    persona = record["personas"]["a"]
    assert persona["forbidden_tools"] == ["rm"] and persona["fail_label"] == "FAIL"
    assert persona["vision"] == "sees" and "needs_context" not in persona


def test_the_record_of_a_persona_without_rules_is_unchanged(tmp_path: Path) -> None:
    record = load(tmp_path, with_persona("{accuracy: 0.9}")).simulator_record()
    assert record is not None
    assert not {"forbidden_tools", "fail_label", "vision"} & set(record["personas"]["a"])
    assert "max_request_bytes" not in record
