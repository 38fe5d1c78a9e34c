"""How the parser reads a label written with invisible characters, compatibility forms or
Cyrillic and Greek letters that look like Latin ones."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.critic._parsing import normalize_label, parse_answer
from cross_judge.errors import PromptError
from cross_judge.prompts import parse_prompt

CYRILLIC_K = "\u041a"  # К
CYRILLIC_E = "\u0415"  # Е
CYRILLIC_P = "\u0420"  # Р
GREEK_KAPPA = "\u039a"  # Κ
ZERO_WIDTH_SPACE = "\u200b"


def answer(label: str) -> str:
    return json.dumps({"kind": label, "confidence": 0.9, "reasoning": "r"})


def test_a_zero_width_character_inside_a_label_is_removed() -> None:
    parsed = parse_answer(answer(f"KE{ZERO_WIDTH_SPACE}EP"))
    assert (parsed.kind, parsed.written_label) == ("KEEP", f"KE{ZERO_WIDTH_SPACE}EP")


def test_a_fullwidth_label_reads_as_its_ascii_form() -> None:
    parsed = parse_answer(answer("\uff2b\uff25\uff25\uff30"))  # ＫＥＥＰ
    assert (parsed.kind, parsed.written_label) == ("KEEP", "\uff2b\uff25\uff25\uff30")


def test_a_plain_label_records_no_written_label() -> None:
    parsed = parse_answer(answer("keep."))
    assert (parsed.kind, parsed.written_label) == ("KEEP", None)


def test_a_label_mixing_latin_and_cyrillic_look_alikes_reads_as_latin() -> None:
    parsed = parse_answer(answer(f"{CYRILLIC_K}EEP"))
    assert parsed.ok
    assert (parsed.kind, parsed.written_label) == ("KEEP", f"{CYRILLIC_K}EEP")


def test_a_label_mixing_greek_and_cyrillic_look_alikes_reads_as_latin() -> None:
    parsed = parse_answer(answer(f"{GREEK_KAPPA}{CYRILLIC_E}{CYRILLIC_E}{CYRILLIC_P}"))
    assert parsed.kind == "KEEP"


def test_a_whole_cyrillic_word_without_a_vocabulary_is_kept_as_written() -> None:
    # НЕТ ("no") looks like Latin HET, but it is a word: free labels may be Russian.
    parsed = parse_answer(answer("\u041d\u0415\u0422"))
    assert (parsed.kind, parsed.written_label) == ("\u041d\u0415\u0422", None)


def test_a_look_alike_of_an_allowed_label_reads_as_that_label() -> None:
    written = f"{CYRILLIC_K}{CYRILLIC_E}{CYRILLIC_E}{CYRILLIC_P}"  # КЕЕР, all Cyrillic
    parsed = parse_answer(answer(written), labels=["KEEP", "REJECT"])
    assert parsed.ok
    assert (parsed.kind, parsed.written_label) == ("KEEP", written)


def test_an_allowed_label_written_exactly_wins_over_a_look_alike_match() -> None:
    parsed = parse_answer(answer("\u041d\u0415\u0422"), labels=["HET", "\u041d\u0415\u0422"])
    assert (parsed.kind, parsed.written_label) == ("\u041d\u0415\u0422", None)


def test_a_label_outside_the_vocabulary_still_fails() -> None:
    parsed = parse_answer(answer(f"{CYRILLIC_K}EEP"), labels=["PASS", "FAIL"])
    assert parsed.kind == "PARSE_FAIL"
    assert parsed.error == "parse_fail: label 'KEEP' is not one of PASS, FAIL"


def test_a_look_alike_of_a_reserved_label_is_not_a_vote() -> None:
    parsed = parse_answer(answer("ERR\u041eR"))  # Cyrillic О
    assert parsed.kind == "PARSE_FAIL"
    assert "reserved label 'ERROR'" in (parsed.error or "")


def test_a_prompt_listing_two_look_alike_labels_is_refused() -> None:
    text = (
        "id: p\nversion: 1\nsystem_prompt: s\nuser_prompt_template: '{query} JSON'\n"
        f"labels: [KEEP, {CYRILLIC_K}{CYRILLIC_E}{CYRILLIC_E}{CYRILLIC_P}]\n"
    )
    with pytest.raises(PromptError, match="look-alike"):
        parse_prompt(text)


# -- invariants -------------------------------------------------------------------------------

INVISIBLE = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e"])
LATIN_LABEL = st.text(alphabet="ABCEHIKMOPTXY_", min_size=1, max_size=12).filter(
    lambda s: s.strip("_") == s and "__" not in s
)
LOOK_ALIKE = {  # Cyrillic and Greek capitals drawn like these Latin ones
    "A": "\u0410\u0391",
    "B": "\u0412\u0392",
    "C": "\u0421",
    "E": "\u0415\u0395",
    "H": "\u041d\u0397",
    "I": "\u0406\u0399",
    "K": "\u041a\u039a",
    "M": "\u041c\u039c",
    "O": "\u041e\u039f",
    "P": "\u0420\u03a1",
    "T": "\u0422\u03a4",
    "X": "\u0425\u03a7",
    "Y": "\u03a5",
}


@st.composite
def padded(draw: st.DrawFn, label: str) -> str:
    out = []
    for char in label:
        out.append(char)
        if draw(st.booleans()):
            out.append(draw(INVISIBLE))
    return "".join(out)


@st.composite
def look_alike(draw: st.DrawFn, label: str) -> str:
    """``label`` with some of its letters (at least one, when it has any) drawn from
    another script."""
    swappable = [i for i, c in enumerate(label) if c in LOOK_ALIKE]
    if not swappable:
        return label
    chosen = draw(st.sets(st.sampled_from(swappable), min_size=1))
    return "".join(
        draw(st.sampled_from(LOOK_ALIKE[c])) if i in chosen else c for i, c in enumerate(label)
    )


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=30))
def test_normalising_a_label_twice_changes_nothing(text: str) -> None:
    once = normalize_label(text)
    assert once is None or normalize_label(once) == once


@settings(max_examples=300, deadline=None)
@given(st.data(), LATIN_LABEL)
def test_a_label_padded_with_invisible_characters_normalises_to_the_label(
    data: st.DataObject, label: str
) -> None:
    assert normalize_label(data.draw(padded(label))) == label


@settings(max_examples=300, deadline=None)
@given(st.data(), LATIN_LABEL, LATIN_LABEL)
def test_a_look_alike_of_an_allowed_label_is_read_as_that_label(
    data: st.DataObject, label: str, other: str
) -> None:
    written = data.draw(look_alike(label))
    vocabulary = [label] if label == other else [label, other]
    parsed = parse_answer(answer(written), labels=vocabulary)
    assert parsed.kind == label
    assert parsed.written_label == (None if written == label else written)
