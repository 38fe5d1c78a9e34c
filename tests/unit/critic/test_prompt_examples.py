"""Examples labelled by people in a prompt: where they go, how they are shown, what the
digest covers, the mistakes refused when the prompt is loaded, and new versions written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge import Critic, PromptError
from cross_judge.critic import next_version
from cross_judge.errors import ConfigError
from cross_judge.prompts import PromptExample, load_prompt, parse_prompt, prompt_yaml, write_prompt

BASE = """\
id: review
version: "2"
labels: [PASS, FAIL]
system_prompt: Judge it.
user_prompt_template: |
  {examples}
  <item>
  {query}
  </item>
  Reply {{"kind": "<PASS or FAIL>", "confidence": "<0-1>", "reasoning": "<why>"}}
"""

WITH_EXAMPLES = (
    BASE
    + """\
examples:
  - {id: e1, text: "def f(): return {}", label: fail}
  - {id: e2, text: "print('ok')", label: PASS, reasoning: It runs.}
"""
)


def test_examples_are_shown_in_the_prompts_answer_format() -> None:
    text = parse_prompt(WITH_EXAMPLES).render("the item")
    first = (
        "<example>\ndef f(): return {}\n"
        'Answer: {"kind": "FAIL", "reasoning": "Labelled FAIL by a person."}\n</example>'
    )
    assert first in text
    assert 'Answer: {"kind": "PASS", "reasoning": "It runs."}' in text
    assert text.index("Examples labelled by people:") < text.index("<item>\nthe item\n</item>")


def test_the_answer_uses_the_prompts_own_label_and_reasoning_keys() -> None:
    spec = parse_prompt(
        WITH_EXAMPLES.replace(
            "labels: [PASS, FAIL]", "labels: [PASS, FAIL]\noutput: [verdict, rationale]"
        )
    )
    assert 'Answer: {"verdict": "PASS", "rationale": "It runs."}' in spec.render("x")


def test_without_examples_the_place_is_empty() -> None:
    text = parse_prompt(BASE).render("the item")
    assert "<example>" not in text and "Examples labelled" not in text


def test_the_critic_sends_the_template_with_the_examples_in_place() -> None:
    spec = parse_prompt(WITH_EXAMPLES)
    critic = Critic(
        name="c", model="m", vendor="custom", base_url="http://127.0.0.1:1/v1", prompt=spec
    )
    assert critic.prompt_template == spec.template_text
    assert critic.render_prompt("the item") == spec.render("the item")
    assert critic.prompt_sha256 == spec.sha256


def test_the_digest_covers_the_examples() -> None:
    assert parse_prompt(WITH_EXAMPLES).sha256 != parse_prompt(BASE).sha256
    other = WITH_EXAMPLES.replace("It runs.", "It prints ok.")
    assert parse_prompt(other).sha256 != parse_prompt(WITH_EXAMPLES).sha256


def test_a_prompt_without_examples_keeps_its_digest_formula() -> None:
    spec = load_prompt("pass-fail@2")
    blob = json.dumps([spec.system_prompt, spec.user_prompt_template], ensure_ascii=False)
    import hashlib

    assert spec.sha256 == hashlib.sha256(blob.encode()).hexdigest()
    assert spec.template_text == spec.user_prompt_template


def test_provenance_is_never_sent_and_does_not_change_the_digest() -> None:
    traced = WITH_EXAMPLES + "provenance: {seed: 3, gold_sha256: abc}\n"
    assert parse_prompt(traced).sha256 == parse_prompt(WITH_EXAMPLES).sha256
    assert "abc" not in parse_prompt(traced).render("x")


def test_examples_without_a_place_for_them_say_how_to_add_one() -> None:
    text = WITH_EXAMPLES.replace("  {examples}\n", "")
    with pytest.raises(
        PromptError,
        match=r"field 'examples' \(line 10\): lists 2 example\(s\), but user_prompt_template has "
        r"no \{examples\} placeholder to show them; add one on its own line before the item",
    ):
        parse_prompt(text)


def test_an_example_label_outside_the_labels_is_refused() -> None:
    with pytest.raises(
        PromptError, match=r"\[0\] \(id 'e1'\) has label 'MAYBE', which is not in labels"
    ):
        parse_prompt(WITH_EXAMPLES.replace("label: fail", "label: maybe"))


def test_examples_declared_as_a_variable_is_refused() -> None:
    with pytest.raises(PromptError, match="declares 'examples', which the prompt fills"):
        parse_prompt(BASE + "variables: [examples]\n")


def test_an_example_with_empty_text_is_refused() -> None:
    with pytest.raises(PromptError, match="an example's text is empty"):
        parse_prompt(WITH_EXAMPLES.replace('text: "def f(): return {}"', 'text: "  "'))


def test_the_packaged_pass_fail_3_has_a_place_for_examples() -> None:
    assert load_prompt("pass-fail@3").has_examples_place
    assert not load_prompt("pass-fail@2").has_examples_place


def test_a_written_prompt_reads_back_as_the_same_spec(tmp_path: Path) -> None:
    spec = parse_prompt(WITH_EXAMPLES + "provenance: {seed: 3}\n")
    path = write_prompt(spec, tmp_path)
    assert path.name == "review@2.yaml"
    again = load_prompt(path)
    assert again.model_dump(exclude={"source"}) == spec.model_dump(exclude={"source"})
    assert again.sha256 == spec.sha256


def test_the_same_spec_is_written_to_the_same_bytes(tmp_path: Path) -> None:
    spec = parse_prompt(WITH_EXAMPLES)
    one = write_prompt(spec, tmp_path / "one").read_bytes()
    assert write_prompt(spec, tmp_path / "two").read_bytes() == one
    assert prompt_yaml(spec).encode() == one


def test_writing_over_an_existing_prompt_file_is_refused(tmp_path: Path) -> None:
    spec = parse_prompt(WITH_EXAMPLES)
    path = write_prompt(spec, tmp_path)
    path.write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists already; a prompt version is never overwritten"):
        write_prompt(spec, tmp_path)
    assert path.read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize(("version", "after"), [("1", "2"), ("3", "4"), ("1.4", "2")])
def test_the_next_version_is_the_first_number_plus_one(version: str, after: str) -> None:
    assert next_version(version) == after


def test_an_example_label_is_normalised_like_an_answer() -> None:
    assert PromptExample(id="x", text="t", label=" pass ").label == "PASS"
