"""The redactor: every run of 8 or more characters of a secret, and nothing else, is hidden.

:class:`cross_judge.transport._redaction.Redactor` is checked against a brute-force reference
(mark every position any 8-character piece of a secret covers, replace each stretch of marks by one
marker) on texts built to be hard: pieces of several secrets side by side, overlapping,
from a small alphabet so that secrets share pieces. The end-to-end rule (no piece of a key
in any verdict, log or file) is tested in ``tests/faults/test_secrets.py``.

A key echoed in another encoding (base64 at each byte offset within a longer blob,
standard or URL-safe, padded or not; invisible characters between its characters; percent
and JSON escapes; one inside another) is checked against oracles that read the output as
a reader would (decoding it, dropping invisible characters): no 8 characters of the key,
and no 6 consecutive bytes of it in base64, may be left.
"""

from __future__ import annotations

import base64
import random
import re
import urllib.parse
from collections.abc import Callable

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.transport._redaction import (
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


@pytest.mark.slow  # 1,500 cases against a brute-force reference
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


# -- secrets echoed in another encoding ------------------------------------------------------

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u034f"]
"""Characters that render as nothing: zero-width space, non-joiner and joiner, word joiner,
byte-order mark, soft hyphen, Mongolian vowel separator, combining grapheme joiner."""

KEY_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")


def decoded_leaks(out: str, key: str) -> bool:
    """Whether any 6 consecutive bytes of ``key`` can be read back from ``out`` by base64-
    decoding (standard or URL-safe) a run of it at any of the four character offsets: the
    oracle, independent of how the redactor finds encoded keys."""
    data = key.encode()
    pieces = {data[i : i + 6] for i in range(len(data) - 5)}
    for run in BASE64_RUN.findall(out):
        standard = run.replace("-", "+").replace("_", "/")
        for shift in range(4):
            chunk = standard[shift:]
            decoded = base64.b64decode(chunk[: len(chunk) // 4 * 4])
            if any(piece in decoded for piece in pieces):
                return True
    return False


def visible(text: str) -> str:
    return "".join(c for c in text if c not in INVISIBLE)


def no_window_of(key: str, out: str) -> bool:
    return not any(key[i : i + WINDOW] in out for i in range(len(key) - WINDOW + 1))


@settings(max_examples=400, deadline=None)
@given(
    key=st.text(KEY_ALPHABET, min_size=WINDOW, max_size=60),
    before=st.binary(max_size=7),
    after=st.binary(max_size=7),
    urlsafe=st.booleans(),
    padded=st.booleans(),
    cut=st.integers(0, 3),
)
def test_no_piece_of_a_key_survives_in_base64_at_any_byte_alignment(
    key: str, before: bytes, after: bytes, urlsafe: bool, padded: bool, cut: int
) -> None:
    # The key inside a longer blob: the bytes before it decide its alignment (mod 3), and
    # so how its base64 reads; a vendor may also echo it from its ``cut``-th character.
    echoed = key[cut:] if len(key) - cut >= WINDOW else key
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = encode(before + echoed.encode() + after).decode()
    if not padded:
        blob = blob.rstrip("=")
    hide = Redactor([key])
    for out in (hide(f"echo: {blob}."), hide.error(f"echo: {blob}.")):
        assert MARKER in out
        assert not decoded_leaks(out, key), out


@pytest.mark.parametrize("lead", [0, 1, 2])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_a_key_in_base64_becomes_a_marker_and_the_text_around_it_stays(
    lead: int, encode: Callable[[bytes], bytes]
) -> None:
    blob = encode(b"\xfb\xff\xfe"[:lead] + KEY.encode()).decode()
    out = Redactor([KEY])(f"Authorization header was {blob} (rejected)")
    assert out.startswith("Authorization header was ") and out.endswith(" (rejected)")
    assert MARKER in out and len(out) < len(f"Authorization header was {blob} (rejected)")
    assert not decoded_leaks(out, KEY)


@settings(max_examples=400, deadline=None)
@given(
    key=st.text(KEY_ALPHABET, min_size=WINDOW, max_size=60),
    gaps=st.lists(st.sampled_from(INVISIBLE), min_size=1, max_size=4),
    every=st.integers(1, 5),
    words=st.text(" .,:;!?()", max_size=12),  # no character a key has
)
def test_no_piece_of_a_key_survives_with_invisible_characters_between_its_characters(
    key: str, gaps: list[str], every: int, words: str
) -> None:
    spread = "".join(
        char + (gaps[i % len(gaps)] if i % every == 0 else "") for i, char in enumerate(key)
    )
    text = f"{words}{spread}{words}"
    hide = Redactor([key])
    for out in (hide(text), hide.error(text)):
        assert no_window_of(key, visible(out)), out
        assert out.startswith(words) and out.endswith(words)


def test_a_key_spread_with_zero_width_spaces_becomes_one_marker() -> None:
    spread = "\u200b".join(KEY)
    assert Redactor([KEY])(f"key: {spread}!") == f"key: {MARKER}!"


@pytest.mark.parametrize(
    "escape",
    [
        lambda s: "".join(f"%{ord(c):02X}" for c in s),
        lambda s: "".join(f"%{ord(c):02x}" if i % 2 else c for i, c in enumerate(s)),
        lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
        lambda s: "\\u200b".join(s),  # a JSON-escaped zero-width space between characters
    ],
    ids=["percent", "percent-every-other", "json-unicode", "json-escaped-zero-width"],
)
def test_a_percent_or_json_escaped_key_becomes_a_marker(escape: Callable[[str], str]) -> None:
    assert Redactor([KEY])(f'{{"echo": "{escape(KEY)}"}}') == f'{{"echo": "{MARKER}"}}'


def test_an_invisible_character_or_an_escape_without_a_key_changes_nothing() -> None:
    text = "100%25 sure\u200b: caf\\u00e9 \ufeffok " * 2000
    assert Redactor([KEY])(text) is text
    assert Redactor([KEY]).error(text) == text


def test_random_base64_without_the_key_is_left_alone() -> None:
    blob = base64.b64encode(random.Random(7).randbytes(300_000)).decode()
    assert Redactor([KEY, "hunter22"])(blob) is blob


def test_a_short_secret_is_not_looked_for_in_base64_shorter_than_a_window() -> None:
    # "abcd" is "YWJjZA" in base64: six characters that turn up by chance in any blob.
    hide = Redactor(["abcd"])
    assert hide.error("token YWJjZA== ok") == "token YWJjZA== ok"


def test_a_short_secret_in_base64_is_hidden_in_errors_only() -> None:
    hide = Redactor(["ollama"])  # "b2xsYW1h" in base64
    assert hide.error("echo b2xsYW1h") == f"echo {MARKER}"
    assert hide("echo b2xsYW1h") == "echo b2xsYW1h"


def test_labels_are_not_searched_for_base64() -> None:
    hide = Redactor([KEY])
    label = base64.b64encode(KEY.encode()).decode().upper()
    assert hide.label(label) == label


def test_the_redactor_repr_counts_configured_secrets_not_their_encodings() -> None:
    assert "2 secrets" in repr(Redactor([KEY, "user:hunter22"]))


def unescaped(text: str) -> str:
    """``text`` as a reader would see it: percent- and ``\\uXXXX`` escapes decoded,
    invisible characters dropped (an oracle independent of the redactor's own view)."""
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return visible(urllib.parse.unquote(text))


@settings(max_examples=400, deadline=None)
@given(
    key=st.text(KEY_ALPHABET, min_size=WINDOW, max_size=48),
    lead=st.binary(max_size=2),
    encoding=st.sampled_from(["plain", "base64", "urlsafe"]),
    disguise=st.sampled_from(["none", "invisible", "percent", "json"]),
    every=st.integers(1, 4),
)
def test_no_form_of_a_key_survives_an_encoding_then_a_disguise(
    key: str, lead: bytes, encoding: str, disguise: str, every: int
) -> None:
    if encoding == "plain":
        form = key
    else:
        encode = base64.b64encode if encoding == "base64" else base64.urlsafe_b64encode
        form = encode(lead + key.encode()).decode()
    disguised = {
        "none": lambda c: c,
        "invisible": lambda c: c + "\u200b",
        "percent": lambda c: f"%{ord(c):02X}",
        "json": lambda c: f"\\u{ord(c):04x}",
    }[disguise]
    echoed = "".join(disguised(c) if i % every == 0 else c for i, c in enumerate(form))
    hide = Redactor([key])
    for out in (hide(f"echo: {echoed} ."), hide.error(f"echo: {echoed} .")):
        seen = unescaped(out)
        assert no_window_of(key, seen), out
        assert not decoded_leaks(seen, key), out
