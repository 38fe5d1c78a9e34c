"""A panel file's critics take the answer settings of issue 27: ``structured``, ``effort``,
``thinking_budget``, ``confidence`` and ``retry_truncated``, checked when loaded (each
mistake at its field and line, with the fix) and passed to the Critic."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cross_judge import Ensemble
from cross_judge.panel_file import PanelError, load_panel, parse_panel


def critic_yaml(*lines: str, vendor: str = "openai", model: str = "gpt-5-mini") -> str:
    body = "".join(f"    {line}\n" for line in lines)
    return f"critics:\n  - name: a\n    model: {model}\n    vendor: {vendor}\n{body}"


def problem(tmp_path: Path, text: str) -> PanelError:
    path = tmp_path / "panel.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(PanelError) as info:
        load_panel(path)
    return info.value


def test_the_answer_settings_default_to_the_critics_defaults() -> None:
    spec = parse_panel(critic_yaml())
    critic = spec.critics[0]
    assert (critic.structured, critic.effort, critic.thinking_budget) == (None, None, None)
    assert (critic.confidence, critic.retry_truncated) == ("stated", True)


def test_the_answer_settings_reach_the_critic() -> None:
    spec = parse_panel(
        critic_yaml(
            "structured: schema",
            "effort: low",
            "confidence: logprob",
            "labels: [KEEP, DROP]",
            "retry_truncated: false",
        )
    )
    ensemble = spec.build(environ={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
    assert isinstance(ensemble, Ensemble)
    (critic,) = ensemble.critics
    assert (critic.structured, critic.effort, critic.confidence) == ("schema", "low", "logprob")
    assert critic.retry_truncated is False


def test_a_thinking_budget_reaches_an_anthropic_critic() -> None:
    spec = parse_panel(
        critic_yaml(
            "thinking_budget: 2048", "structured: auto", vendor="anthropic", model="claude-x"
        )
    )
    (critic,) = spec.build(environ={"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}).critics
    assert (critic.thinking_budget, critic.structured) == (2048, "auto")


def test_structured_off_unquoted_is_read_as_off_not_false() -> None:
    # YAML 1.1 reads a bare off (and no, false) as false.
    spec = parse_panel(critic_yaml("structured: off"))
    assert spec.critics[0].structured == "off"


@pytest.mark.parametrize(
    ("line", "field", "fragments"),
    [
        ("structured: strict", "structured", ["auto", "schema", "tool", "json", "off", "'strict'"]),
        ("structured: on", "structured", ["auto", "schema"]),
        ("effort: max", "effort", ["low", "medium", "high", "'max'"]),
        ("confidence: logprobs", "confidence", ["stated", "logprob", "auto", "'logprobs'"]),
        ("thinking_budget: 0", "thinking_budget", ["tokens", ">= 1", "0"]),
        ("thinking_budget: lots", "thinking_budget", ["a whole number"]),
        ("retry_truncated: maybe", "retry_truncated", ["true or false"]),
    ],
)
def test_an_invalid_answer_setting_is_reported_at_its_field_and_line_with_the_fix(
    tmp_path: Path, line: str, field: str, fragments: list[str]
) -> None:
    error = problem(tmp_path, critic_yaml(line))
    (found,) = error.problems
    assert (found.field, found.line) == (f"critics[0].{field}", 5)
    for fragment in fragments:
        assert fragment in found.message


@pytest.mark.parametrize(
    ("lines", "vendor", "field", "fragment"),
    [
        (["structured: tool"], "openai", "structured", "structured='schema'"),
        (["structured: json"], "anthropic", "structured", "no JSON mode"),
        (["effort: low"], "custom", "effort", "reasoning"),
        (["thinking_budget: 512"], "openai", "thinking_budget", "effort"),
        (["thinking_budget: 100"], "anthropic", "thinking_budget", "1024"),
        (["confidence: logprob", "labels: [A, B]"], "anthropic", "confidence", "stated"),
        (["confidence: logprob"], "openai", "confidence", "labels"),
    ],
)
def test_a_setting_the_vendor_cannot_take_is_reported_at_that_field(
    tmp_path: Path, lines: list[str], vendor: str, field: str, fragment: str
) -> None:
    extra = ["base_url: http://127.0.0.1:9/v1"] if vendor == "custom" else []
    error = problem(tmp_path, critic_yaml(*lines, *extra, vendor=vendor))
    (found,) = error.problems
    assert found.field == f"critics[0].{field}"
    assert found.line == 5 + [line.split(":")[0] for line in lines].index(field)
    assert fragment in found.message
    assert not found.message.startswith("Critic ")


def test_a_conflict_between_two_settings_is_reported_at_the_later_one(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        critic_yaml("structured: tool", "thinking_budget: 2048", vendor="anthropic"),
    )
    (found,) = error.problems
    assert found.field == "critics[0].thinking_budget"
    assert "forced tool" in found.message
