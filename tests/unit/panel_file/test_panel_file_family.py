"""A panel file's critic may declare its model family (``family: openai``), which a ranking
uses to keep it out of pairs involving its own family's candidates."""

from __future__ import annotations

import pytest

from cross_judge.panel_file import PanelError, parse_panel

CRITIC = "critics:\n  - name: a\n    model: gpt-5-mini\n    vendor: openai\n"
ENV = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}


def test_a_critic_family_reaches_the_critic() -> None:
    (critic,) = parse_panel(CRITIC + "    family: openai\n").build(environ=ENV).critics
    assert critic.family == "openai"


def test_a_critic_has_no_family_unless_the_file_gives_one() -> None:
    (critic,) = parse_panel(CRITIC).build(environ=ENV).critics
    assert critic.family is None


def test_an_empty_family_is_refused_at_its_field() -> None:
    with pytest.raises(PanelError, match="family"):
        parse_panel(CRITIC + '    family: ""\n')
