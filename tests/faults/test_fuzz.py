"""Fuzzing the text cross-judge reads from outside: model answers, prompt templates and
prompt files, panel files, items JSONL.

For every generated or mutated input, this file proves that:

* ``parse_answer`` never raises and never needs its own safety net (no ``internal parser
  error``): a vote has a label from the vocabulary and a confidence in [0, 1], a failure
  has a ``parse_fail: ...`` reason. ``extract_json``, ``coerce_confidence``,
  ``normalize_label`` and ``strip_reasoning_blocks`` never raise either.
* ``Template.compile`` raises only ``PromptError``, and a compiled template inserts values
  literally: ``{query}``, ``{0}``, ``{{`` or ``</item>`` in a value arrive as written.
* ``parse_prompt`` raises only ``PromptError`` and ``parse_panel`` only ``ConfigError``
  (``PanelError``); a panel error never shows an ``sk-...`` key.
* The CLI's item reader accounts for every non-blank line (an item, a reported bad line or
  an item already done) and ``Item.from_value`` raises only ``ItemError``.
* No single input takes more than :data:`SLOW_INPUT` seconds (no hang, no runaway
  quadratic case), and every test has a pytest timeout.

Hypothesis explores structured inputs (derandomized: CI sees the same inputs on every run);
seeded mutation fuzzers (byte flips, truncation, insertion, duplication, splicing of valid
answers, templates, YAML files and JSONL lines) supply the cheap bulk. Each test asserts how
many inputs it ran; together over 100,000 (run with ``-s`` to see the counts).
``CROSS_JUDGE_FUZZ_SCALE`` multiplies every count (and, above 1, the timeout): the default
``nox -s tests`` runs at 0.4 to stay within its time, ``nox -s faults`` at 1, and 10 makes a
longer local run.
The tests at the end pin the bugs the fuzzers found.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import random
import re
import string
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from rich.console import Console

from cross_judge.batch import Item, ItemError
from cross_judge.cli._items import ItemReader
from cross_judge.critic._critic import Critic
from cross_judge.critic._parsing import (
    ParsedAnswer,
    coerce_confidence,
    extract_json,
    normalize_label,
    parse_answer,
    strip_reasoning_blocks,
)
from cross_judge.critic._prompts import (
    DEFAULT_USER_PROMPT_TEMPLATE,
    PromptSpec,
    load_prompt,
    parse_prompt,
)
from cross_judge.critic._template import Template
from cross_judge.errors import ConfigError, PromptError
from cross_judge.panel_file import PanelError, parse_panel
from cross_judge.vendors import VENDORS
from cross_judge.verdict import RESERVED_KINDS

from ..waits import SAFETY_NET_S

# Tens of thousands of generated inputs (CROSS_JUDGE_FUZZ_SCALE): run by nox -s slow and
# nox -s faults.
pytestmark = pytest.mark.slow

T = TypeVar("T")

SCALE = float(os.environ.get("CROSS_JUDGE_FUZZ_SCALE", "1"))
SLOW_INPUT = SAFETY_NET_S / 10
"""Seconds one check may take (every call made on one input, or on one items file): it
catches a hang or a runaway (quadratic, exponential) case, whose time grows far past any
bound, not a slow machine. Checks take milliseconds; a minute is beyond any stall a loaded
machine causes."""
REPO = Path(__file__).resolve().parents[2]


def scaled(count: int) -> int:
    return max(1, round(count * SCALE))


def fuzz(examples: int) -> settings:
    """Deterministic hypothesis settings for ``examples`` (scaled) inputs."""
    return settings(
        max_examples=scaled(examples),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def preview(value: object) -> str:
    try:
        return repr(value)[:300]
    except ValueError:  # an int of more than 4300 digits
        return f"<{type(value).__name__}>"


@dataclass
class Tally:
    """How many inputs one test fed, and the slowest of them."""

    what: str
    minimum: int
    """Inputs the test must run at scale 1."""
    count: int = 0
    slowest: float = 0.0
    slowest_input: str = ""

    def run(self, check: Callable[[T], object], value: T, *, inputs: int = 1) -> None:
        start = time.perf_counter()
        check(value)
        elapsed = time.perf_counter() - start
        self.count += inputs
        if elapsed > self.slowest:
            self.slowest, self.slowest_input = elapsed, preview(value)

    def check(self) -> None:
        print(f"\n{self.what}: {self.count} inputs, slowest {self.slowest * 1000:.1f} ms")
        assert self.count >= scaled(self.minimum), f"{self.what}: only {self.count} inputs ran"
        assert self.slowest < SLOW_INPUT, (
            f"{self.what}: one check took {self.slowest:.2f} s: {self.slowest_input}"
        )


@pytest.fixture(autouse=True, scope="module")
def _warm() -> None:
    """Do the one-off work (lazy imports, pydantic's deferred schema builds) before any
    input is timed."""
    parse_answer('{"kind": "KEEP"}')
    parse_prompt((REPO / "prompts" / "pass-fail.yaml").read_text(encoding="utf-8"))
    parse_panel((REPO / "examples" / "panel.yaml").read_text(encoding="utf-8"))
    Item.from_value({"query": "x", "id": 1})


# -- mutation -----------------------------------------------------------------------------------

ODD_CHARS = (
    "\x00\x01\x7f\x85\xa0\xad\u2028\u2029\u200b\u3000\ufeff\ufffd\ud800\udfff\U0001f600"
    "é\u0301ßǅİ٣\u202e"
)


MAX_MUTANT = 50_000
"""Longest mutated input, in characters: long inputs get their own tests."""


def mutate(rng: random.Random, text: str, corpus: Sequence[str], tokens: Sequence[str]) -> str:
    """``text`` after one to four random edits: a bit flip in its UTF-8 bytes, a deletion,
    an inserted token or a long run of one, a duplicated slice, a truncation, a splice with
    another corpus entry, an odd character, or (for line-based formats) a line moved."""
    for _ in range(rng.randint(1, 4)):
        size = len(text)
        start = rng.randint(0, size)
        end = rng.randint(start, min(size, start + 80))
        op = rng.randrange(10)
        if op == 0 and text:
            raw = bytearray(text.encode("utf-8", "surrogatepass"))
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
            text = raw.decode("utf-8", "surrogateescape")
        elif op == 1:
            text = text[:start] + text[end:]
        elif op == 2:
            text = text[:start] + rng.choice(tokens) + text[start:]
        elif op == 3:
            token = rng.choice(tokens)
            repeat = min(rng.choice((2, 8, 64, 512, 3000)), 1 + MAX_MUTANT // 4 // len(token))
            text = text[:start] + token * repeat + text[start:]
        elif op == 4:
            text = text[:end] + text[start:end] * rng.randint(1, 3) + text[end:]
        elif op == 5:
            text = text[:start]
        elif op == 6:
            other = rng.choice(corpus)
            text = text[:start] + other[rng.randint(0, len(other)) :]
        elif op == 7:
            text = text[:start] + rng.choice(ODD_CHARS) + text[start + 1 :]
        elif op == 8:
            lines = text.split("\n")
            line = lines.pop(rng.randrange(len(lines)))
            lines.insert(rng.randint(0, len(lines)), line)
            text = "\n".join(lines)
        else:
            lines = text.split("\n")
            at = rng.randrange(len(lines))
            lines[at] = " " * rng.choice((0, 1, 2, 4, 7)) + lines[at].lstrip(" ")
            text = "\n".join(lines)
        text = text[:MAX_MUTANT]
    return text


def mutants(seed: str, corpus: Sequence[str], tokens: Sequence[str], count: int) -> Iterable[str]:
    rng = random.Random(seed)
    for _ in range(count):
        yield mutate(rng, rng.choice(corpus), corpus, tokens)


def token_text(
    tokens: Sequence[str], runs: Sequence[str], longest_run: int = 3000
) -> st.SearchStrategy[str]:
    """Text made of format-specific tokens, odd characters and runs (``[[[[...``)."""
    piece = st.one_of(
        st.sampled_from(tokens),
        st.text(st.characters(codec=None, exclude_categories=()), max_size=6),
        st.tuples(st.sampled_from(runs), st.integers(1, longest_run)).map(
            lambda run: run[0] * run[1]
        ),
    )
    return st.lists(piece, max_size=30).map("".join)


any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=200)
"""Any string, lone surrogates and control characters included."""

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


# -- 1. the answer parser -----------------------------------------------------------------------

LABELS = ("KEEP", "DROP", "not sure")

ANSWER_TOKENS = (
    "{", "}", "[", "]", '"', "\\", ":", ",", " ", "\n", "\r\n", "\t",
    '"kind"', '"verdict"', '"label"', '"decision"', '"KIND"', '"confidence"', '"certainty"',
    '"reasoning"', '"rationale"', '"score"', '"KEEP"', '"drop."', '"not-sure"', '"PARSE_FAIL"',
    '"ERROR"', '""', "null", "true", "false", "0.85", "85", "-3", '"80%"', '"85 %"', "1e999",
    "-1e999", "1e-999", "NaN", "Infinity", "-Infinity", '"NaN"', "9" * 400, "9" * 5000,
    "<think>", "</think>", "<thinking>", "</thinking>", "<reasoning>", "</reasoning>",
    '<think class="x">', "```json\n", "```", "```\n", '{"kind": "KEEP"}',
    '{"kind": "DROP", "confidence": 0.9}', ", }", ",\r\n}", ", ]", '\\"', "\\\\", "\\u0000",
    "\\ud800", "\\u004b", "\u2028", "\ud800", "\ufeff", "'kind': 'KEEP'",
)  # fmt: skip
ANSWER_RUNS = ("[", "{", '{"a":', '{"', '"', "\\", "<think>", "</think>", "{ ", ",", "}", " ")

ANSWER_CORPUS = (
    '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}',
    '```json\n{"kind": "DROP", "confidence": "80%"}\n```',
    '<think>They want {"kind": "DROP"}... no.</think>\n{"kind": "KEEP", "confidence": 85}',
    '{"verdict": "keep.", "rationale": "ok", "confidence": 0.7,}',
    'Sure! {"label": "not sure", "score": "85%"} Hope that helps. {"note": 1}',
    '{"kind": "KEEP", "confidence": NaN, "score": Infinity}',
    '{"kind": "KEEP", "reasoning": "line one\nline two", "confidence": 1e999}',
    '{"decision": ["KEEP"], "confidence": true}',
    '[{"kind": "KEEP"}]',
    '{"kind": "KEEP", "confidence": 0.9',
    '<think>\nran out of tokens\n{"kind": "DROP"}',
    '</think>{"kind": "KEEP"}',
    '{"outer": {"kind": "KEEP"}, "x": [1, 2, {"y": "}"}]}',
    '{"kind": "\\u004bEEP", "confidence": "0.9", "reasoning": null}',
    'format: {kind, confidence} -> {"kind": "DROP", "confidence": 0.2}',
    '{"KIND": "keep", "kind": "drop", "Confidence": -3}',
    '{"kind": "KEEP"}\n{"kind": "DROP"}',
    '{"kind": "' + "x" * 150 + '"}',
    '{"kind": "KEEP", "confidence": ' + "9" * 4400 + "}",
)


def check_answer(text: str, labels: Sequence[str] | str | None = LABELS) -> ParsedAnswer:
    """Every documented property of one reading of ``text``."""
    result = parse_answer(text, labels=labels)
    assert isinstance(result, ParsedAnswer)
    assert (extract_json(text) is None) == (result.data is None)
    stripped = strip_reasoning_blocks(text)
    assert isinstance(stripped, str) and len(stripped) <= len(text)
    assert isinstance(result.confidence, float) and 0.0 <= result.confidence <= 1.0
    assert result.score is None or 0.0 <= result.score <= 1.0
    if result.ok:
        assert isinstance(result.data, dict)
        assert result.kind not in RESERVED_KINDS
        vocabulary = [labels] if isinstance(labels, str) else labels
        if vocabulary:
            assert result.kind in {normalize_label(label) for label in vocabulary}
        assert len(result.reasoning) <= 1000
    else:
        assert result.kind == "PARSE_FAIL"
        assert result.error is not None and result.error.startswith("parse_fail: ")
        assert "internal parser error" not in result.error, result.error
        assert (result.confidence, result.confidence_given, result.score) == (0.0, False, None)
    return result


label_value = st.one_of(
    st.sampled_from(["KEEP", "keep.", " Drop ", "`keep`", "not-sure", "PARSE_FAIL", "error", ""]),
    st.text(max_size=12),
    st.text(min_size=95, max_size=110),
    json_value,
)
confidence_value = st.one_of(
    st.sampled_from(["80%", "85 %", "1e999", "NaN", "nan", "-0", "0,8", "high", "150%", "-5%"]),
    st.sampled_from([" 0.85 ", "1e-999", "9" * 70, "Infinity", "%", "1e400%"]),
    st.floats(),
    st.integers(-(10**30), 10**30),
    json_value,
)
answer_object = st.fixed_dictionaries(
    {},
    optional={
        "kind": label_value,
        "VERDICT": label_value,
        " label ": label_value,
        "decision": label_value,
        "confidence": confidence_value,
        "Certainty": confidence_value,
        "reasoning": json_value,
        "rationale": json_value,
        "score": confidence_value,
        "extra": json_value,
    },
)


def wrap_answer(body: str, how: int) -> str:
    """``body`` as models send it: bare, fenced, after a think block, in prose, ..."""
    wrappers = (
        lambda: body,
        lambda: f"```json\n{body}\n```",
        lambda: f"<think>\nLet me see: {{kind}} then {body[:10]}\n</think>\n{body}",
        lambda: f"Here is my verdict: {body} Hope that helps!",
        lambda: body.replace("}", ", }"),
        lambda: f'{{"note": "first"}} {body}',
        lambda: body[: len(body) // 2],
        lambda: f"[{body}]",
        lambda: f"{body}\n{body}",
        lambda: body.replace('"', "'"),
    )
    return wrappers[how % len(wrappers)]()


def test_parse_answer_keeps_its_contract_on_arbitrary_text() -> None:
    tally = Tally("parse_answer, arbitrary text", minimum=1200)

    @fuzz(tally.minimum)
    @given(
        text=token_text(ANSWER_TOKENS, ANSWER_RUNS) | any_text,
        labels=st.sampled_from([LABELS, None, (), "keep", ("PARSE_FAIL", "", "-"), ("UNCLEAR",)]),
    )
    def run(text: str, labels: Sequence[str] | str | None) -> None:
        tally.run(lambda t: check_answer(t, labels), text)

    run()
    tally.check()


def test_parse_answer_keeps_its_contract_on_json_shaped_answers() -> None:
    tally = Tally("parse_answer, JSON-shaped answers", minimum=700)

    @fuzz(tally.minimum)
    @given(
        answer=answer_object,
        indent=st.sampled_from([None, 0, 2]),
        ascii_only=st.booleans(),
        how=st.integers(0, 9),
    )
    def run(answer: dict[str, Any], indent: int | None, ascii_only: bool, how: int) -> None:
        body = json.dumps(answer, indent=indent, ensure_ascii=ascii_only)
        tally.run(check_answer, wrap_answer(body, how))

    run()
    tally.check()


prose = st.text(string.ascii_letters + string.digits + " .,;:!?'()-\n", max_size=40)


def test_parse_answer_reads_a_well_formed_answer_whatever_surrounds_it() -> None:
    tally = Tally("parse_answer, well-formed answers", minimum=300)

    @fuzz(tally.minimum)
    @given(
        label=st.sampled_from(LABELS),
        confidence=st.floats(0.0, 1.0),
        before=prose,
        after=prose,
        how=st.sampled_from([0, 1, 2, 3, 4, 5]),
    )
    def run(label: str, confidence: float, before: str, after: str, how: int) -> None:
        body = json.dumps({"kind": label, "confidence": confidence, "reasoning": before})
        text = wrap_answer(body, how)
        if how in (0, 3, 4, 5):  # prose around an object is found by the brace scan
            text = f"{before}\n{text}\n{after}"

        def check(text: str) -> None:
            result = check_answer(text)
            assert result.ok, (text, result.error)
            assert (result.kind, result.confidence) == (normalize_label(label), confidence)

        tally.run(check, text)

    run()
    tally.check()


def test_coerce_confidence_gives_none_or_a_probability() -> None:
    tally = Tally("coerce_confidence", minimum=500)

    def check(value: object) -> None:
        result = coerce_confidence(value)
        assert result is None or (isinstance(result, float) and 0.0 <= result <= 1.0)
        if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
            assert result is None

    @fuzz(tally.minimum)
    @given(confidence_value | st.integers() | st.just(10**5000) | st.just(-(10**5000)))
    def run(value: object) -> None:
        tally.run(check, value)

    run()
    tally.check()


def test_normalize_label_gives_none_or_an_upper_case_label() -> None:
    tally = Tally("normalize_label", minimum=500)

    def check(value: object) -> None:
        label = normalize_label(value)
        if not isinstance(value, str):
            assert label is None
        elif label is not None:
            assert label and label == label.strip()
            assert re.search(r"[^\s-][\s-]+[^\s-]", label) is None  # internal runs became _

    @fuzz(tally.minimum)
    @given(label_value | any_text | token_text(ANSWER_TOKENS, (".'", " -", "`", "\u3000")))
    def run(value: object) -> None:
        tally.run(check, value)

    run()
    tally.check()


def test_mutated_answers_keep_the_parser_contract() -> None:
    tally = Tally("parse_answer, mutated answers", minimum=36_000)
    for text in mutants("answers", ANSWER_CORPUS, ANSWER_TOKENS, scaled(tally.minimum)):
        tally.run(check_answer, text)
    tally.check()


PATHOLOGICAL_ANSWERS = {
    "open brackets": "[" * 200_000,
    "open braces": "{" * 200_000,
    "open objects": '{"a":' * 40_000,
    "nested objects": '{"a":' * 40_000 + "}" * 40_000,
    "open keys": '{"' * 100_000,
    "empty objects": "{}" * 100_000,
    "many answers": '{"kind":"KEEP"}' * 15_000,
    "backslashes": '{"a":"' + "\\" * 200_000 + '"}',
    "think tags": "<think>" * 30_000,
    "think blocks": "<think>x</think>" * 15_000,
    "trailing commas": '{"a":[' + "1," * 100_000 + "]}",
    "long label": '{"kind":"' + ".'" * 100_000 + '"}',
    "long number": '{"kind":"KEEP","confidence":' + "9" * 200_000 + "}",
    "braces in strings": '{"a": "}" ' * 20_000,
}


@pytest.mark.parametrize("text", PATHOLOGICAL_ANSWERS.values(), ids=PATHOLOGICAL_ANSWERS.keys())
def test_pathological_answer_is_read_quickly(text: str) -> None:
    tally = Tally("parse_answer, pathological", minimum=1)
    tally.run(check_answer, text)
    tally.check()


# -- 2. prompt templates and prompt files -------------------------------------------------------

TEMPLATE_TOKENS = (
    "{", "}", "{{", "}}", "{query}", "{topic}", "{0}", "{}", "{a.b}", "{a[0]}", "{a!r}",
    "{a:>10}", "{query", "query}", "!", ":", "{ query }", "{é}", "{٣}", "{_}", "{a-b}",
    "{query.__class__}", "{{query}}", "{a:{b}}", "{!r}", "{:}", "<item>", "</item>", "\n",
)  # fmt: skip
TEMPLATE_CORPUS = (
    DEFAULT_USER_PROMPT_TEMPLATE,
    '<item>\n{query}\n</item>\nReply {{"kind": "PASS"}}',
    "Compare {query} with {reference}; labels: {labels}",
    "{query}",
    "",
)
INJECTIONS = ("{query}", "{0}", "{{", "}}", "</item>", "{query.__class__}", "{", "}", "%s")
IDENTIFIERS = ("query", "topic", "x_1", "_", "é", "名前", "ǅx", "Query")


def check_compiled(source: str) -> None:
    """Compiling raises only PromptError; rendering fills every field literally."""
    try:
        template = Template.compile(source)
    except PromptError:
        return
    assert template.fields == {name for _, name in template.parts if name is not None}
    values = {name: f"<{name}>{{query}}{{0}}{{{{</item>" for name in template.fields}
    expected = "".join(text + (values[name] if name else "") for text, name in template.parts)
    assert template.render(values) == expected
    for name in template.fields:
        with pytest.raises(PromptError):
            template.render(dict.fromkeys(template.fields - {name}, ""))


def test_template_compile_raises_only_prompt_error() -> None:
    tally = Tally("Template.compile, arbitrary text", minimum=800)

    @fuzz(tally.minimum)
    @given(token_text(TEMPLATE_TOKENS, ("{", "}", "{{", "{a")) | any_text)
    def run(source: str) -> None:
        tally.run(check_compiled, source)

    run()
    tally.check()


def test_template_inserts_values_literally() -> None:
    tally = Tally("Template.render, arbitrary values", minimum=500)
    literal = st.text(st.sampled_from("ab {}}{<>/\n") | st.characters(codec=None), max_size=12)
    value = st.sampled_from(INJECTIONS) | any_text

    @fuzz(tally.minimum)
    @given(
        parts=st.lists(st.tuples(literal, st.none() | st.sampled_from(IDENTIFIERS)), max_size=6),
        values=st.fixed_dictionaries(dict.fromkeys(IDENTIFIERS, value)),
    )
    def run(parts: list[tuple[str, str | None]], values: dict[str, str]) -> None:
        def check(parts: list[tuple[str, str | None]]) -> None:
            source = "".join(
                text.replace("{", "{{").replace("}", "}}") + ("{" + name + "}" if name else "")
                for text, name in parts
            )
            template = Template.compile(source)
            assert template.fields == {name for _, name in parts if name}
            expected = "".join(text + (values[name] if name else "") for text, name in parts)
            assert template.render(values) == expected
            context = {name: v for name, v in values.items() if name != "query"}
            assert template.render_item(values["query"], context) == expected

        tally.run(check, parts)

    run()
    tally.check()


def test_mutated_templates_compile_or_raise_prompt_error() -> None:
    tally = Tally("Template.compile, mutated templates", minimum=40_000)
    for source in mutants("templates", TEMPLATE_CORPUS, TEMPLATE_TOKENS, scaled(tally.minimum)):
        tally.run(check_compiled, source)
    tally.check()


YAML_TOKENS = (
    "\n", "  ", "- ", ": ", "? ", "[", "]", "{", "}", ", ", "'", '"', "# ", "&a ", "*a", "&b ",
    "*b", "!!int ", "!!float ", "!!bool ", "!!timestamp ", "!!binary ", "!!set ", "!!omap ",
    "!!str ", "!!python/object:os.system ", "!local ", "<<: ", "|\n", ">-\n", "---\n",
    "...\n", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "\t", "1:2:3", "-1:0:0:0:0:0:0:0:0:0",
    "0x1F", "0o17", "0b2", "1_000", ".inf", "-.nan", "~", "null", "yes", "2001-12-14",
    "2001-13-45", "2001-12-14t21:59:43.10-05:00", "1e999", "9" * 400, "9" * 5000, "\x00",
    "\x85", "\ufeff", "\ud800", "\u2028", "é",
)  # fmt: skip
PROMPT_TOKENS = (
    *YAML_TOKENS,
    "id", "version", "user_prompt_template", "system_prompt", "labels", "score", "output",
    "variables", "description", "source", "pass-fail", "{query}", "{topic}", "{0}", "[PASS, FAIL]",
    "PASS: 1.0", "1.10", "v1", "criteria", "criteria_mode", "one_call", "{criterion}",
    "{criteria}", "weight: -2", "gate: true", "pass_threshold",
)  # fmt: skip
YAML_RUNS = ("[", "{", "- ", "  ", "a: ", "&a [*a, ", "? ", "'", "\n")
PROMPT_FILES = tuple(
    path.read_text(encoding="utf-8") for path in sorted((REPO / "prompts").glob("*.yaml"))
)
PROMPT_CORPUS = (
    *PROMPT_FILES,
    "version: v0.1\nsystem_prompt: You judge.\nuser_prompt_template: 'Item: {query} {extra}'\n",
    'id: x\nversion: 1\nuser_prompt_template: "{query} {topic}"\nvariables: [topic]\n',
    "id: x\nversion: 1.10\nuser_prompt_template: '{query}'\nlabels: [1, 2]\nscore: {1: 0, 2: 1}\n",
)


def check_prompt(text: str, default_id: str | None = None) -> None:
    """parse_prompt raises only PromptError; what it accepts is usable."""
    try:
        spec = parse_prompt(text, default_id=default_id)
    except PromptError as exc:
        error = exc
    else:
        check_prompt_spec(spec)
        return
    assert str(error).startswith("<string>"), str(error)


def check_prompt_spec(spec: PromptSpec) -> None:
    assert spec.source == "<string>"
    fields = Template.compile(spec.user_prompt_template).fields
    assert fields & {"query", "conversation", "trajectory"}  # where the judged content goes
    context: dict[str, object] = dict.fromkeys(spec.variables, "{0}</item>")
    # The fields an item fills itself, and a unit prompt's unit (its text and number).
    context.update(dict.fromkeys(("conversation", "trajectory", "reference"), "{0}"))
    context["counter_reference"] = "{0}"
    if spec.unit is not None:
        context.update({spec.unit: "{0}", f"{spec.unit}_number": 1})
    if spec.rubric is not None:  # a rubric fills these itself, per criterion or for all
        context.update(criterion="{0}", criterion_id="c", criteria="- c: {0}")
    rendered = spec.render("{query}{0}", context)
    if "query" in fields:
        assert "{query}{0}" in rendered


PROMPT_FIELDS = (
    "id", "version", "description", "system_prompt", "user_prompt_template", "labels", "output",
    "score", "variables", "source", "ID", "user_prompt", "labels ", "criteria", "criteria_mode",
    "pass_threshold", "render_limits", "unit", "max_units",
)  # fmt: skip
yaml_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(),
    any_text.map(lambda text: text[:20]),
    st.sampled_from(["{query}", "<item>{query}</item>", "{query} {topic}", "{0}", "{a.b}", "{{"]),
    st.sampled_from(["pass-fail", "Bad Id", "1.10", "v1", "PASS", "ERROR", "kind", "topic"]),
)
yaml_value = st.recursive(
    yaml_scalar,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(0, 9), inner, max_size=4)
    ),
    max_leaves=10,
)


def dump_yaml(document: object, flow: bool | None) -> str:
    return yaml.safe_dump(document, default_flow_style=flow, allow_unicode=True, sort_keys=False)


def test_parse_prompt_raises_only_prompt_error_on_arbitrary_text() -> None:
    tally = Tally("parse_prompt, arbitrary text", minimum=300)

    @fuzz(tally.minimum)
    @given(text=token_text(PROMPT_TOKENS, YAML_RUNS, 200) | any_text, legacy=st.booleans())
    def run(text: str, legacy: bool) -> None:
        tally.run(lambda t: check_prompt(t, "legacy" if legacy else None), text)

    run()
    tally.check()


def test_parse_prompt_raises_only_prompt_error_on_generated_documents() -> None:
    tally = Tally("parse_prompt, generated documents", minimum=250)
    document = st.fixed_dictionaries(
        {
            "id": st.sampled_from(["x", "pass-fail", "Bad Id", ""]) | yaml_scalar,
            "version": st.sampled_from([1, "1.10", 1.5, "v2"]) | yaml_scalar,
            "user_prompt_template": st.sampled_from(["{query}", "<item>{query}</item> {topic}"])
            | yaml_value,
        },
        optional={
            "labels": st.lists(st.sampled_from(["PASS", "fail", "ERROR", 3, "", "pass"]))
            | yaml_value,
            "score": st.dictionaries(st.sampled_from(["PASS", "FAIL", 1]), yaml_scalar)
            | yaml_value,
            "variables": st.lists(st.sampled_from(["topic", "query", "1x", "topic"])) | yaml_value,
            "output": st.lists(st.sampled_from(["kind", "confidence", " kind", "x"])) | yaml_value,
            "system_prompt": yaml_value,
            "description": yaml_value,
        },
    )

    @fuzz(tally.minimum)
    @given(
        document=document,
        extra=st.dictionaries(
            st.sampled_from(PROMPT_FIELDS) | st.text(max_size=8), yaml_value, max_size=2
        ),
        drop=st.sets(st.sampled_from(["id", "version", "user_prompt_template"])),
        flow=st.sampled_from([None, True, False]),
        legacy=st.booleans(),
    )
    def run(
        document: dict[str, Any], extra: dict[str, Any], drop: set[str], flow: bool, legacy: bool
    ) -> None:
        document = {k: v for k, v in {**document, **extra}.items() if k not in drop}
        text = dump_yaml(document, flow)
        tally.run(lambda t: check_prompt(t, "legacy" if legacy else None), text)

    run()
    tally.check()


def test_mutated_prompt_files_raise_only_prompt_error() -> None:
    tally = Tally("parse_prompt, mutated files", minimum=1500)
    for text in mutants("prompts", PROMPT_CORPUS, PROMPT_TOKENS, scaled(tally.minimum)):
        tally.run(check_prompt, text)
    tally.check()


# -- 3. panel files -----------------------------------------------------------------------------

KEY_LIKE = re.compile(r"(?<![a-z0-9_])sk-[a-z0-9_\-]{6,}")
"""An API key as a message could show it (lower-cased)."""
SECRET_KEYS = ("api_key", "apiKey", "token", "secret", "password", "openai_key", "Authorization")
secret = st.text(string.ascii_letters + string.digits, min_size=20, max_size=32).map(
    lambda body: "sk-" + body
)
PANEL_TOKENS = (
    *YAML_TOKENS,
    "critics", "name", "model", "vendor", "deepseek", "simulated", "custom", "persona",
    "labels", "prompt", "api_key_env", "api_key", "voting", "voting_kwargs", "priority",
    "early_stop", "min_valid", "weight", "base_url", "http://u:p@h/v1", "taxonomy-review@1",
)  # fmt: skip
PANEL_FILES = tuple(
    (REPO / "examples" / name).read_text(encoding="utf-8")
    for name in ("panel.yaml", "panel.real.yaml")
)
PANEL_CORPUS = (
    *PANEL_FILES,
    "critics:\n  - name: a\n    model: deepseek-chat\n",
    "voting: weighted\nvoting_kwargs: {priority: [REJECT]}\nmin_valid: 1\nearly_stop: staged\n"
    "critics:\n  - {name: a, model: m, vendor: openai, weight: 2, labels: [KEEP, REJECT]}\n"
    "  - {name: b, model: m, vendor: custom, base_url: 'http://127.0.0.1:9/v1'}\n",
    "critics:\n  - name: s\n    vendor: simulated\n    prompt: good.yaml\n"
    "    persona: {accuracy: 0.5, bias: {PASS: 2.0}, style: think, labels: [PASS, FAIL]}\n",
    "critics:\n  - name: sk-live-0123456789abcdefSECRET\n    model: m\n"
    "    vendor: sk-live-0123456789abcdefSECRET\n    api_key: sk-live-0123456789abcdefSECRET\n"
    "    api_key_env: sk-live-0123456789abcdefSECRET\ntoken: sk-live-0123456789abcdefSECRET\n",
)

PROMPT_REFS = (
    "pass-fail", "taxonomy-review@1", "pass-fail@7", "nope", "good.yaml", "bad.yaml",
    "legacy.yaml", "good.yaml@1", "good.yaml@v9", "missing.yaml", "~nosuchuser/p.yaml", "sub/",
    "/", ".", "x" * 300,
)  # fmt: skip
number = st.one_of(
    st.sampled_from([0, -1, 1, 0.5, 2.5, 10**30, True, "1", float("inf"), float("nan")]),
    st.floats(),
    st.integers(),
)
vendor = st.sampled_from([*VENDORS, "simulated", "Simulated", "openia", "", "sk-x"]) | yaml_scalar
persona = st.fixed_dictionaries(
    {},
    optional={
        "accuracy": number,
        "latency": number,
        "jitter": number,
        "style": st.sampled_from(["json", "fenced", "think", "messy", "xml"]) | yaml_scalar,
        "seed": number,
        "bias": st.dictionaries(st.sampled_from(["PASS", "KEEP", "x"]) | yaml_scalar, number),
        "labels": st.lists(st.sampled_from(["PASS", "FAIL", "KEEP"]) | yaml_scalar, max_size=3),
        "fault_rate": number,
    },
)
critic = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b", "a", ""]) | yaml_scalar | secret},
    optional={
        "model": st.sampled_from(["m", "m", "sim-a", ""]) | yaml_scalar,
        "vendor": vendor | secret,
        "base_url": st.sampled_from(["http://127.0.0.1:9/v1", "https://u:p@h/v1", "ftp://h"])
        | yaml_scalar,
        "api_key_env": st.sampled_from(["OPENAI_API_KEY", "1BAD", "MY_KEY"]) | secret,
        "prompt": st.sampled_from(PROMPT_REFS) | yaml_scalar,
        "weight": number,
        "temperature": number,
        "max_tokens": number,
        "labels": st.lists(st.sampled_from(["PASS", "FAIL", "KEEP", 3, "ERROR"]), max_size=3)
        | yaml_value,
        "timeout": number,
        "max_retries": number,
        "persona": persona | yaml_value,
    },
)
panel_document = st.fixed_dictionaries(
    {},
    optional={
        "voting": st.sampled_from(["majority", "weighted", "unanimous", "average", "median"])
        | st.sampled_from(["any", "first_disagreement", "highest", "nope", "Majority"])
        | yaml_scalar,
        "voting_kwargs": st.dictionaries(
            st.sampled_from(["priority", "fallback", "errors", "ties", "min_valid", "weights"])
            | st.sampled_from(["use_confidence", "threshold"])
            | yaml_scalar,
            yaml_value | st.lists(st.sampled_from(["PASS", "KEEP", "REJECT"])),
            max_size=3,
        ),
        "early_stop": st.sampled_from([True, False, "staged", "cancel", "yes", 1]) | yaml_scalar,
        "min_valid": number,
        "deadline": number,
        "concurrency": number,
        "critics": st.lists(critic, max_size=4) | yaml_value,
    },
)


def secrets_in(document: object, strict: bool = False) -> Iterable[tuple[str, bool]]:
    """Every sk-... value in ``document``, and whether it sits in a secret-looking field
    (``strict``), whose value no problem message may repeat."""
    if isinstance(document, dict):
        for key, value in document.items():
            secret_field = isinstance(key, str) and (key in SECRET_KEYS or key == "api_key_env")
            yield from secrets_in(value, strict or secret_field)
    elif isinstance(document, list):
        for value in document:
            yield from secrets_in(value, strict)
    elif isinstance(document, str) and document.startswith("sk-") and len(document) >= 23:
        yield document, strict


def check_panel(text: str, base_dir: Path, secrets: Iterable[tuple[str, bool]] = ()) -> None:
    """parse_panel raises only ConfigError, and its message never shows a key."""
    try:
        spec = parse_panel(text, base_dir=base_dir)
    except ConfigError as exc:
        error = exc
    else:
        assert spec.critics
        assert len({c.name for c in spec.critics}) == len(spec.critics)
        return
    shown = (str(error) + repr(error)).lower()
    assert KEY_LIKE.search(shown) is None, shown
    messages = [p.message for p in error.problems] if isinstance(error, PanelError) else []
    for key, strict in secrets:
        assert key.lower() not in shown and key[:15].lower() not in shown, shown
        if strict:  # the value of a secret-looking field is never repeated at all
            assert not any(key[:15] in message for message in messages), messages


@pytest.fixture
def prompt_dir(tmp_path: Path) -> Path:
    """A panel's folder holding a valid, an invalid and a cross-judge 0.1 prompt file."""
    good = (REPO / "prompts" / "pass-fail.yaml").read_text(encoding="utf-8")
    (tmp_path / "good.yaml").write_text(good.replace("id: pass-fail", "id: good"), "utf-8")
    (tmp_path / "bad.yaml").write_text("id: bad\nversion: 1\nuser_prompt_template: '{0}'\n")
    (tmp_path / "legacy.yaml").write_text("user_prompt_template: 'Judge {query}'\n")
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_parse_panel_raises_only_config_error_on_arbitrary_text(prompt_dir: Path) -> None:
    tally = Tally("parse_panel, arbitrary text", minimum=300)

    @fuzz(tally.minimum)
    @given(token_text(PANEL_TOKENS, YAML_RUNS, 200) | any_text)
    def run(text: str) -> None:
        tally.run(lambda t: check_panel(t, prompt_dir), text)

    run()
    tally.check()


def test_parse_panel_raises_only_config_error_on_generated_documents(prompt_dir: Path) -> None:
    tally = Tally("parse_panel, generated documents", minimum=300)

    @fuzz(tally.minimum)
    @given(
        document=panel_document,
        secret_fields=st.dictionaries(st.sampled_from(SECRET_KEYS), secret, max_size=2),
        in_critic=st.booleans(),
        extra=st.dictionaries(st.text(max_size=8), yaml_value, max_size=1),
        flow=st.sampled_from([None, True, False]),
    )
    def run(
        document: dict[str, Any],
        secret_fields: dict[str, str],
        in_critic: bool,
        extra: dict[str, Any],
        flow: bool | None,
    ) -> None:
        critics = document.get("critics")
        if in_critic and isinstance(critics, list) and critics and isinstance(critics[0], dict):
            critics[0].update(secret_fields)
        else:
            document.update(secret_fields)
        document.update(extra)
        text = dump_yaml(document, flow)
        tally.run(lambda t: check_panel(t, prompt_dir, list(secrets_in(document))), text)

    run()
    tally.check()


def test_mutated_panel_files_raise_only_config_error(prompt_dir: Path) -> None:
    tally = Tally("parse_panel, mutated files", minimum=2000)
    for text in mutants("panels", PANEL_CORPUS, PANEL_TOKENS, scaled(tally.minimum)):
        tally.run(lambda t: check_panel(t, prompt_dir), text)
    tally.check()


# -- 4. items JSONL -----------------------------------------------------------------------------


class CountingConsole(Console):
    """A console writing to memory that counts the notes printed on it."""

    def __init__(self) -> None:
        super().__init__(file=io.StringIO(), width=120, color_system=None)
        self.notes = 0

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.notes += 1
        super().print(*objects, **kwargs)


CRITICS = (
    Critic(name="plain", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1"),
    Critic(
        name="topical",
        model="m",
        vendor="custom",
        base_url="http://127.0.0.1:9/v1",
        prompt_template="<item>{query}</item> about {topic}",
    ),
)
DONE = frozenset({"done", "7"})

item_mapping = st.fixed_dictionaries(
    {},
    optional={
        "query": st.sampled_from(["q", "", "  ", "{query}", "</item>", "{0}"])
        | any_text
        | json_value,
        "id": st.sampled_from(["a", "a", "done", 7, "", " ", True, 1.5])
        | st.integers()
        | json_value,
        "context": st.fixed_dictionaries({}, optional={"topic": json_value, "query": json_value})
        | json_value,
        "meta": json_value,
        "gold": json_value,
        "messages": st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant", "tool", "system", "bot"])},
                optional={
                    "content": any_text | json_value,
                    "tool_calls": json_value,
                    "name": json_value,
                    "tool_call_id": json_value,
                    "images": json_value,
                },
            )
            | json_value,
            max_size=4,
        )
        | json_value,
        "trajectory": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": any_text | json_value,
                    "arguments": json_value,
                    "result": json_value,
                    "error": json_value,
                    "text": any_text | json_value,
                    "final_answer": any_text | json_value,
                    "kind": st.sampled_from(["tool_call", "message", "final_answer", "x"]),
                },
            )
            | json_value,
            max_size=4,
        )
        | json_value,
        "reference": any_text | json_value,
        "images": json_value,
    },
)
item_value = item_mapping | json_value | any_text


def check_item(value: object) -> None:
    """Item.from_value raises only ItemError; what it accepts has a query and an id."""
    try:
        item = Item.from_value(value)
    except ItemError:
        return
    assert isinstance(item.query, str)
    assert item.query.strip() or item.messages or item.trajectory  # the judged content
    assert isinstance(item.id, str) and item.id


def non_blank_lines(content: bytes) -> int:
    lines = content.split(b"\n")
    if lines[0].startswith(codecs.BOM_UTF8):
        lines[0] = lines[0][len(codecs.BOM_UTF8) :]
    return sum(1 for line in lines if line.strip())


def check_items_file(path: Path) -> None:
    """Every non-blank line is an item, a reported bad line, or an item already done."""
    console = CountingConsole()
    reader = ItemReader(path, CRITICS, set(DONE), console)
    items = list(reader)
    assert len(items) + reader.bad_lines + reader.already_done == non_blank_lines(path.read_bytes())
    assert console.notes == reader.bad_lines
    assert len({item.id for item in items}) == len(items)
    for item in items:
        assert item.id not in DONE
        for one in CRITICS:
            one.render_prompt(item.query, item.context)


def jsonl_line(value: object, ascii_only: bool) -> bytes:
    text = json.dumps(value, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass").replace(b"\n", b" ")


ODD_LINES = (
    b"", b"   ", codecs.BOM_UTF8 + b'{"query": "x"}', b"\r", b"{", b"[1]", b'"x"', b"null",
    b"1e999", b"NaN", b'{"query": "a", "id": 1}', b'{"query": "b", "id": "1"}',
    b'{"query": "x", "context": {"topic": "t"}}', b'{"query": "x", "id": "done"}',
    b'{"query": "x", "id": ' + b"9" * 5000 + b"}", b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}",
)  # fmt: skip


def one_line(line: bytes) -> bytes:
    """``line`` as one non-blank line of a file (blank lines are drawn on their own)."""
    line = line.replace(b"\n", b" ")
    return line if line.strip() else b"x"


jsonl_line_values = st.one_of(
    st.builds(jsonl_line, item_mapping, st.booleans()),
    st.builds(jsonl_line, json_value, st.booleans()),
    any_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.binary(max_size=30),
    st.sampled_from(ODD_LINES),
).map(one_line)
jsonl_files = st.builds(
    lambda lines, blanks, rng, newline: (
        b"\n".join(rng.sample(lines + blanks, len(lines + blanks))) + newline
    ),
    st.lists(jsonl_line_values, min_size=3, max_size=10),
    st.lists(st.sampled_from([b"", b"  ", b"\r", b"\t", codecs.BOM_UTF8]), max_size=3),
    st.randoms(use_true_random=False),
    st.sampled_from([b"", b"\n"]),
)
"""JSONL content: at least three non-blank lines, blank ones among them."""


def test_item_from_value_raises_only_item_error() -> None:
    tally = Tally("Item.from_value", minimum=600)

    @fuzz(tally.minimum)
    @given(item_value)
    def run(value: object) -> None:
        tally.run(check_item, value)

    run()
    tally.check()


def test_item_reader_accounts_for_every_generated_line(tmp_path: Path) -> None:
    tally = Tally("ItemReader, generated lines", minimum=3 * 250)
    path = tmp_path / "items.jsonl"

    @fuzz(examples=250)
    @given(jsonl_files)
    def run(content: bytes) -> None:
        path.write_bytes(content)
        tally.run(check_items_file, path, inputs=non_blank_lines(content))

    run()
    tally.check()


ITEM_CORPUS = (
    *(REPO / "examples" / "items.jsonl").read_text(encoding="utf-8").splitlines(),
    '{"query": "x", "context": {"topic": "t"}, "meta": {"k": [1, 2]}, "gold": "KEEP"}',
    '{"id": 7, "query": "seven", "context": {"topic": null}}',
    '{"query": "{query} {0} </item>", "context": {"topic": "{{"}}',
    '{"id": "dup", "query": "a"}',
    '{"id": "dup", "query": "b"}',
    '{"messages": [{"role": "user", "content": "Book it?"}, {"role": "assistant", "content": '
    '"Booked.", "tool_calls": [{"name": "book", "arguments": "{\\"at\\": 8}"}]}]}',
    '{"query": "tidy", "trajectory": [{"name": "rm", "arguments": {"p": "/"}, "error": "no"}, '
    '{"text": "hm"}, {"final_answer": "done"}], "reference": "r", "counter_reference": "w"}',
    '{"query": "q", "images": [{"url": "https://x.test/a.png"}, "data:image/png;base64,AAAA"]}',
)
ITEM_TOKENS = (
    "{", "}", "[", "]", '"', "\\", ":", ",", '"query"', '"id"', '"context"', '"meta"',
    '"topic"', "null", "true", "1e999", "NaN", "-0", "\\ud800", "\\u0000", '"done"', "7",
    "9" * 5000, "\n", "\r", "\ufeff", "\x00", "\xff", '"messages"', '"trajectory"',
    '"role"', '"assistant"', '"content"', '"tool_calls"', '"name"', '"arguments"', '"error"',
    '"final_answer"', '"reference"', '"images"', '"url"', '"base64"', '"path"', "[]", "{}",
)  # fmt: skip


def test_item_reader_accounts_for_every_mutated_line(tmp_path: Path) -> None:
    tally = Tally("ItemReader, mutated lines", minimum=24_000)  # some mutants are blank
    lines = list(mutants("items", ITEM_CORPUS, ITEM_TOKENS, scaled(25_000)))
    for number, start in enumerate(range(0, len(lines), 2000)):
        content = "\n".join(lines[start : start + 2000]).encode("utf-8", "surrogatepass")
        path = tmp_path / f"items-{number}.jsonl"
        path.write_bytes(content)
        tally.run(check_items_file, path, inputs=non_blank_lines(content))
    tally.check()


# -- regressions: bugs the fuzzers found --------------------------------------------------------

UNREADABLE_VALUES = {
    "bad int": "critics: !!int twelve\n",
    "bad float": "critics: !!float x\n",
    "bad bool": "critics: !!bool maybe\n",
    "bad timestamp": "critics: !!timestamp 2001-13-45\n",
    "timestamp shape": "critics: !!timestamp tomorrow\n",
    "5000 digits": "critics: " + "9" * 5000 + "\n",
    "sexagesimal": "critics: 1" + ":0" * 3000 + "\n",
    "control character": "critics: a\x01b\n",
    "deep flow nesting": "critics: " + "[" * 100_000,
    "deep block nesting": "".join("  " * depth + "- \n" for depth in range(2000)),
    "recursive alias": "critics: &a [*a]\n",
    "deep alias chain": "a0: &a0 [x]\n"
    + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 100))
    + "critics: *a99\n",
    "billion laughs": "a0: &a0 [x, x]\n"
    + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 40))
    + "critics: *a39\n",
}  # fmt: skip


@pytest.mark.parametrize("text", UNREADABLE_VALUES.values(), ids=UNREADABLE_VALUES.keys())
@pytest.mark.parametrize("reader", [parse_panel, parse_prompt], ids=["panel", "prompt"])
def test_unreadable_or_unbounded_yaml_is_a_config_error_at_once(
    reader: Callable[[str], object], text: str
) -> None:
    # PyYAML raised ValueError, KeyError, AttributeError or RecursionError for these, or
    # (aliases) made the panel reader walk 2**40 paths; parse_panel also let the
    # ReaderError of a control character escape.
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"line|YAML") as info:
        reader(text)
    assert time.perf_counter() - start < SLOW_INPUT
    assert len(str(info.value)) < 500


def test_prompt_score_too_large_for_a_float_is_a_prompt_error() -> None:
    # math.isfinite() raised OverflowError on the integer before the range was checked.
    text = "id: x\nversion: 1\nuser_prompt_template: '{query}'\nlabels: [A]\nscore: {A: 1%s}\n"
    with pytest.raises(PromptError, match="score of 'A' must be a number in"):
        parse_prompt(text % ("0" * 400))


def test_panel_prompt_in_the_home_of_an_unknown_user_is_a_panel_error(prompt_dir: Path) -> None:
    # Path.expanduser() raised RuntimeError for ~nosuchuser/...
    text = "critics:\n  - name: a\n    model: m\n    prompt: ~nosuchuser-cj/p.yaml\n"
    with pytest.raises(PanelError, match="no such prompt file"):
        parse_panel(text, base_dir=prompt_dir)


def test_panel_prompt_name_too_long_for_the_os_is_a_panel_error(prompt_dir: Path) -> None:
    # Path.is_file() raised OSError (ENAMETOOLONG) while telling a path from a packaged id.
    text = "critics:\n  - name: a\n    model: m\n    prompt: %s\n" % ("x" * 300)
    with pytest.raises(PanelError, match="no packaged prompt"):
        parse_panel(text, base_dir=prompt_dir)
    with pytest.raises(PromptError, match="no packaged prompt"):
        load_prompt("x" * 300)


@pytest.mark.parametrize("tag", ["th\u0130nk", "rea\u017foning", "THİNKING"])
def test_reasoning_tag_with_a_non_ascii_case_variant_is_read_like_the_tag(tag: str) -> None:
    # The tag regex matches these case-insensitively; looking up the closing tag by the
    # lower-cased name raised KeyError, and the answer became an internal parser error.
    text = f'<{tag}>{{"kind": "DROP"}}</{tag}>\n{{"kind": "KEEP"}}'
    assert strip_reasoning_blocks(text).strip() == '{"kind": "KEEP"}'
    assert check_answer(text).kind == "KEEP"


def test_item_line_nested_too_deeply_is_reported_as_a_bad_line(tmp_path: Path) -> None:
    # json.loads raised RecursionError, which the reader let escape.
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"query": ' + b"[" * 100_000 + b"}\n" + b'{"query": "fine"}\n')
    console = CountingConsole()
    reader = ItemReader(path, CRITICS[:1], set(), console)
    assert [item.query for item in reader] == ["fine"]
    assert reader.bad_lines == 1
    assert "items.jsonl:1: skipped: not JSON (nested too deeply)" in console.file.getvalue()
