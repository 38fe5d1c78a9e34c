"""Safe templates: named fields only, values inserted literally, mistakes caught early."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from cross_judge import PromptError
from cross_judge.critic._template import Template


def test_named_fields_are_filled() -> None:
    t = Template.compile("Item: {query} / {labels}")
    assert t.render({"query": "x", "labels": "A|B"}) == "Item: x / A|B"
    assert t.fields == {"query", "labels"}


def test_doubled_braces_are_literal() -> None:
    t = Template.compile('Answer {{"kind": "KEEP"}} for {query}')
    assert t.render({"query": "q"}) == 'Answer {"kind": "KEEP"} for q'


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("{}", "positional"),
        ("{0}", "positional"),
        ("{query.__class__}", "attribute or index"),
        ("{query[0]}", "attribute or index"),
        ("{query!r}", "conversion or format spec"),
        ("{query:>10}", "conversion or format spec"),
        ("{query", "malformed"),
        ("query}", "malformed"),
    ],
)
def test_unsafe_or_broken_templates_are_rejected(source: str, fragment: str) -> None:
    with pytest.raises(PromptError, match=fragment):
        Template.compile(source)


def test_missing_value_names_the_field_and_the_given_keys() -> None:
    t = Template.compile("{query} {rubric}")
    with pytest.raises(PromptError, match=r"\{rubric\}.*Provided keys: \['query'\]"):
        t.render({"query": "q"})


@pytest.mark.parametrize(
    "hostile", ["{query}", "{0}", "{query.__class__}", "{{x}}", "}{", "{", "%s", "${HOME}"]
)
def test_values_are_inserted_literally(hostile: str) -> None:
    assert Template.compile("<{query}>").render({"query": hostile}) == f"<{hostile}>"


@given(st.text())
def test_any_value_round_trips_verbatim(value: str) -> None:
    assert Template.compile("a{query}b").render({"query": value}) == f"a{value}b"
