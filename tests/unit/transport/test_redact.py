"""The redactor: every run of 8 or more characters of a secret, and nothing else, is hidden.

:class:`cross_judge.transport.redaction.Redactor` is checked against a brute-force reference
(mark every position any 8-character piece of a secret covers, replace each stretch of marks by one
marker) on texts built to be hard: pieces of several secrets side by side, overlapping,
from a small alphabet so that secrets share pieces. The end-to-end rule (no piece of a key
in any verdict, log or file) is tested in ``tests/faults/test_secrets.py``.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from cross_judge.transport.redaction import (
    MARKER,
    MIN_SECRET,
    WINDOW,
    Redactor,
    redact,
    redactor_for,
)

KEY = "sk-proj-Q7vX2mLp9RtZ4wKc8NbY3hJd6FgS1aUe"


def reference(text: str, secrets: list[str]) -> str:
    """Brute force: every occurrence of every WINDOW-piece of a secret is marked; each
    maximal stretch of marked characters becomes MARKER."""
    covered = [False] * len(text)
    for secret in secrets:
        for piece in [secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)]:
            at = text.find(piece)
            while at != -1:
                covered[at : at + len(piece)] = [True] * len(piece)
                at = text.find(piece, at + 1)
    out: list[str] = []
    i = 0
    while i < len(text):
        if covered[i]:
            while i < len(text) and covered[i]:
                i += 1
            out.append(MARKER)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@st.composite
def secrets_and_text(draw: st.DrawFn, alphabet: str) -> tuple[list[str], str]:
    secrets = draw(st.lists(st.text(alphabet, min_size=1, max_size=24), min_size=1, max_size=4))
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        secret = draw(st.sampled_from(secrets))
        start = draw(st.integers(0, len(secret)))
        end = draw(st.integers(start, len(secret)))
        parts += [secret[start:end], draw(st.text(alphabet + "xyz ", max_size=6))]
    return secrets, "".join(parts)


@settings(max_examples=1500, deadline=None)
@given(case=secrets_and_text("ab-"))
def test_matches_the_brute_force_reference_on_secrets_that_share_pieces(
    case: tuple[list[str], str],
) -> None:
    secrets, text = case
    assert Redactor(secrets)(text) == reference(text, secrets)


@settings(max_examples=500, deadline=None)
@given(case=secrets_and_text("abcdefghijklmnopqrstuvwxyz0123456789"))
def test_matches_the_brute_force_reference_on_key_like_secrets(case: tuple[list[str], str]) -> None:
    secrets, text = case
    assert Redactor(secrets)(text) == reference(text, secrets)


@settings(max_examples=300, deadline=None)
@given(case=secrets_and_text("ab-"))
def test_no_piece_of_a_secret_is_left_in_the_output(case: tuple[list[str], str]) -> None:
    secrets, text = case
    hide = Redactor(secrets)
    for out in (hide(text), hide.error(text)):
        for secret in secrets:
            assert not any(secret[i : i + WINDOW] in out for i in range(len(secret) - WINDOW + 1))
    for secret in secrets:
        if MIN_SECRET <= len(secret) < WINDOW:
            assert secret not in hide.error(text)


def test_a_key_echoed_whole_without_its_prefix_or_in_part_becomes_one_marker() -> None:
    hide = Redactor([KEY])
    assert hide(f"Incorrect API key provided: {KEY}.") == f"Incorrect API key provided: {MARKER}."
    assert hide(f"key {KEY.removeprefix('sk-')}!") == f"key {MARKER}!"
    assert hide(f"[{KEY[13:21]}]") == f"[{MARKER}]"
    assert hide(f"{KEY[:20]}{KEY[25:]}") == MARKER  # two runs side by side: one marker


def test_fewer_than_eight_characters_of_a_key_are_left_alone() -> None:
    text = f"id {KEY[10:17]} and {KEY[20:27]}"
    assert Redactor([KEY])(text) is text


def test_a_text_without_a_secret_is_returned_as_is() -> None:
    text = "A whale is a mammal. " * 1000
    assert Redactor([KEY, "hunter22", "user:hunter22"])(text) is text


def test_a_short_secret_is_hidden_in_errors_where_it_appears_whole_and_never_in_answers() -> None:
    hide = Redactor(["ollama"])  # a placeholder key a local server accepts
    assert hide.error("x ollama y olla z") == f"x {MARKER} y olla z"
    answer = "served by ollama"
    assert hide(answer) is answer


def test_strings_too_short_to_be_secrets_are_ignored() -> None:
    hide = Redactor(["abc", "", "k"])
    assert not hide
    assert hide("abc k") == hide.error("abc k") == "abc k"


def test_labels_are_compared_upper_cased_with_hyphens_as_underscores() -> None:
    hide = Redactor([KEY])
    label = KEY.removeprefix("sk-").upper().replace("-", "_")
    assert hide.label(label) == MARKER
    assert hide.label("KEEP") == "KEEP"


def test_answers_keep_key_shaped_words_but_errors_lose_them() -> None:
    text = "Use Bearer authentication; sk-abcdefgh is an example."
    hide = redactor_for(KEY)
    assert hide(text) is text  # a model's answer: only configured secrets go
    assert hide.error(text) == f"Use {MARKER}; {MARKER} is an example."
    assert redact(text, KEY) == hide.error(text)


def test_the_redactor_repr_names_no_secret() -> None:
    assert KEY[5:13] not in repr(Redactor([KEY])) and "1 secrets" in repr(Redactor([KEY]))
