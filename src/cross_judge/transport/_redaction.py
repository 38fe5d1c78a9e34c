"""Keep secrets out of every string cross-judge produces or stores: errors, verdicts, logs.

Two kinds of text, two strengths:

* Any text, a model's answer included (:meth:`Redactor.__call__`): the *configured*
  secrets (the API key; a base URL's password, ``user:password`` and its Basic-auth
  base64). A vendor may echo a key whole, without its ``sk-`` prefix, or in part, so every
  run of :data:`WINDOW` or more characters of a secret is replaced by :data:`MARKER`.
  Nothing else in the text changes.
* Error messages and log lines (:meth:`Redactor.error`, :func:`redact`): the same, plus a
  secret shorter than :data:`WINDOW` where it appears whole, plus anything *shaped* like
  an API key or a bearer token (a proxy's own key, say). Not applied to an answer, where
  "Bearer authentication" is just words and a 6-letter placeholder key such as
  ``ollama`` may well be a word of the item.

A secret is found in the forms a vendor or a proxy echoes it in, too:

* **base64**, standard or URL-safe, padded or not, alone or inside a longer base64 blob
  (a header or a token echoed whole). Inside a blob the key's base64 depends on where it
  starts, modulo 3 bytes; each of the three readings is looked for (:func:`base64_forms`),
  as a secret of its own with the same rules (runs of :data:`WINDOW` characters; a short
  secret's only whole and in errors). Encodings shorter than :data:`WINDOW` are not looked
  for: six base64 characters turn up by chance in any blob.
* **Spread or escaped**: with invisible characters between its characters (zero-width
  space, joiners, word joiner, byte-order mark, soft hyphen, bidi marks, variation
  selectors: Unicode's default-ignorable code points, :data:`INVISIBLE`), percent-encoded
  (``%73%6B``) or JSON-escaped (``\\u0073``). The text is then also searched with those
  removed or decoded, and a run found there hides the characters it came from, the
  invisible ones and whole escapes included.

A string shorter than :data:`MIN_SECRET` characters is never a secret.
"""

from __future__ import annotations

import base64
import bisect
import functools
import re
import struct
import sys
from collections.abc import Callable, Iterable
from itertools import compress
from urllib.parse import urlsplit

from ._http import basic_auth, split_credentials

__all__ = [
    "INVISIBLE",
    "MARKER",
    "MIN_SECRET",
    "WINDOW",
    "RedactedError",
    "Redactor",
    "base64_forms",
    "redact",
    "redacted_exception",
    "redactor_for",
    "secrets_of",
]

MARKER = "[REDACTED]"
"""What a hidden secret, or a run of one, is replaced by."""

WINDOW = 8
"""The shortest run of a secret's characters that is hidden: any longer run is, whole."""

MIN_SECRET = 4
"""Shorter strings are never treated as secrets."""

# Key shapes of the vendors we talk to (sk-..., sk-ant-..., sk-or-v1-...) and bearer tokens,
# in case a vendor or proxy echoes one back in an error message.
_KEY_LIKE = re.compile(r"(?i)\b(sk-[a-z0-9_\-]{6,}|bearer\s+[a-z0-9._\-]{8,})")

_GRAM = 4
"""The text is sampled in cells of this many characters, one every _GRAM: any WINDOW-run
holds a whole cell (WINDOW >= 2 * _GRAM - 1)."""
assert struct.calcsize("I") == _GRAM  # a cell of ASCII bytes read as one unsigned int

_INVISIBLE_CLASS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)

INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]")
"""One character that renders as nothing: Unicode's default-ignorable code points (zero-width
space, non-joiner and joiner, word joiner, byte-order mark, soft hyphen, bidi marks and
controls, variation selectors, tags, ...)."""

# What the second search of a text decodes, besides invisible characters: a percent-escape
# of an ASCII character, a JSON \uXXXX escape (not of a surrogate).
_ESCAPES = "%[0-7][0-9A-Fa-f]|\\\\u(?![dD][89abAB])[0-9A-Fa-f]{4}"
_ESCAPE = re.compile(_ESCAPES)
_ESCAPE_OR_INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]|{_ESCAPES}")

_URLSAFE = str.maketrans("+/", "-_")

Spans = list[tuple[int, int]]
"""``(start, end)`` stretches of a text to hide; they may overlap."""


def base64_forms(secret: str) -> tuple[str, ...]:
    """How ``secret`` (as UTF-8) reads in base64 wherever it starts in a longer blob.

    A blob encodes 3 bytes as 4 characters, so the secret's characters depend on where its
    first byte falls modulo 3; the characters that also hold bits of the neighbouring
    bytes (at most two at each end) are unknown and left out. One reading per start
    (0, 1, 2), standard and, where it differs, URL-safe (``-_`` for ``+/``); a padded or
    unpadded blob holds the same characters. Each reading holds every part of the secret
    encoded from any position, so finding runs of the readings finds a piece of the
    secret encoded alone too. Readings may be empty for a very short secret.
    """
    data = secret.encode("utf-8", "surrogatepass")
    forms: dict[str, None] = {}
    for lead in range(3):
        # Two zero bytes after: every character up to the secret's last bit is written
        # out, none of them padding.
        encoded = base64.b64encode(bytes(lead) + data + bytes(2)).decode("ascii")
        first = -(-8 * lead // 6)  # the first character made only of the secret's bits
        end = 8 * (lead + len(data)) // 6  # past the last one
        core = encoded[first:end]
        forms[core] = None
        forms[core.translate(_URLSAFE)] = None
    return tuple(forms)


class Redactor:
    """Hides ``secrets``: every run of :data:`WINDOW` or more characters of one, or of one
    of its base64 readings (:func:`base64_forms`, unless ``encodings=False``), is replaced
    by :data:`MARKER`, also where invisible characters are put between its characters or
    it is percent- or JSON-escaped (see the module docstring for what :meth:`error` adds).

    Overlapping and adjacent runs become one marker, so nothing of a secret is left
    beside it. Matching is exact (case-sensitive): see :meth:`label` for upper-cased text.

    How: every run of 8 characters holds one of the text's 4-character cells that start at
    a multiple of 4. The text is read as ASCII bytes (any other character as ``?``), each
    cell as one integer, and the cells are looked up in a table of every 4 characters of
    every secret and encoding (at C speed, however many secrets and encodings there
    are); each hit is then checked against the real text and grown backwards and forwards
    along the secret it comes from. A text holding an invisible character or an escape is
    searched a second time with them removed or decoded (:class:`_DecodedView`), and what
    is found there is mapped back. Linear in the text; a text without a secret comes back
    as the same object. ``bench/bench_redaction.py`` measures it on 1 MiB texts.
    """

    __slots__ = ("_cells", "_count", "_folded", "_long", "_plain", "_whole")

    def __init__(self, secrets: Iterable[str], *, encodings: bool = True) -> None:
        unique = dict.fromkeys(s for s in secrets if len(s) >= MIN_SECRET)
        self._count = len(unique)
        self._plain = tuple(s for s in unique if len(s) >= WINDOW)  # for labels
        long: dict[str, None] = {}
        whole: dict[str, None] = {}
        for secret in unique:
            # A secret's encodings are looked for as the secret is: runs for a long one,
            # whole (in errors) for a short one; never one shorter than a window.
            forms = [secret]
            if encodings:
                forms += [f for f in base64_forms(secret) if len(f) >= WINDOW]
            target = long if len(secret) >= WINDOW else whole
            target.update(dict.fromkeys(forms))
        self._long = tuple(s for s in long if len(s) >= WINDOW)
        # Longest first: a short secret inside a longer one is replaced as part of it.
        self._whole = tuple(sorted((s for s in whole if s not in long), key=len, reverse=True))
        # Every _GRAM characters of every long secret, by the integer its cell reads as:
        # the characters, the secret, and where they are in it.
        cells: dict[int, list[tuple[str, str, int]]] = {}
        for secret in self._long:
            for at in range(len(secret) - _GRAM + 1):
                piece = secret[at : at + _GRAM]
                cells.setdefault(_cell(piece), []).append((piece, secret, at))
        self._cells = cells
        self._folded: Redactor | None = None

    def __bool__(self) -> bool:
        """False when there is nothing to hide."""
        return bool(self._long or self._whole)

    def __repr__(self) -> str:
        return f"Redactor(<{self._count} secrets>)"

    def __call__(self, text: str) -> str:
        """``text`` with every run of a secret replaced by :data:`MARKER`."""
        if not self._cells:
            return text
        return _hide(text, self._runs, _view_of(text))

    def error(self, text: str) -> str:
        """For an error message or a log line: also hides a short secret where it appears
        whole, and key- and token-shaped strings."""
        view = _view_of(text)
        if self:
            hidden = _hide(text, self._runs_and_whole, view)
            if hidden is not text and view is not None:  # a marker adds no escape
                view = _view_of(hidden)
            text = hidden
        return _hide(text, _key_like, view)

    def label(self, text: str) -> str:
        """For a verdict label, which the parser upper-cases (hyphens become underscores):
        runs of the secrets transformed the same way (not their base64, which upper-casing
        does not keep)."""
        folded = self._folded
        if folded is None:
            upper = [s.upper() for s in self._plain]
            folded = Redactor(upper + [s.replace("-", "_") for s in upper], encodings=False)
            self._folded = folded
        return folded(text)

    def _runs(self, text: str) -> Spans:
        """Every run of :data:`WINDOW` or more characters of a long secret in ``text``,
        overlapping and adjacent runs joined."""
        cells = self._cells
        if not cells:
            return []
        data = text.encode("ascii", "replace")  # one byte a character, as the table's
        sampled = memoryview(data)[: len(data) // _GRAM * _GRAM].cast("I")
        if cells.keys().isdisjoint(sampled):
            return []
        runs: Spans = []
        run: tuple[int, int] | None = None  # the run being grown
        resume = 0  # a cell before this lies inside the run, away from its end
        for index in compress(range(len(sampled)), map(cells.__contains__, sampled)):
            at = index * _GRAM
            if at < resume:
                continue
            found = self._run_at(text, at, cells[sampled[index]])
            if found is not None:
                if run is not None and found[0] <= run[1]:  # overlapping or adjacent
                    run = (min(run[0], found[0]), max(run[1], found[1]))
                else:
                    if run is not None:
                        runs.append(run)
                    run = found
                # A run reaching past this one holds a cell starting at most WINDOW - 1
                # before its end; cells further inside it are skipped.
                resume = run[1] - WINDOW + 1
        if run is not None:
            runs.append(run)
        return runs

    def _runs_and_whole(self, text: str) -> Spans:
        """:meth:`_runs`, and every whole occurrence of a short secret (or its base64)."""
        spans = self._runs(text)
        for secret in self._whole:
            at = text.find(secret)
            while at != -1:
                spans.append((at, at + len(secret)))
                at = text.find(secret, at + len(secret))
        return spans

    @staticmethod
    def _run_at(
        text: str, at: int, candidates: list[tuple[str, str, int]]
    ) -> tuple[int, int] | None:
        """The longest run of a secret through the cell at ``at`` (whose integer matched
        ``candidates``), as ``(start, end)`` in ``text``; ``None`` when it is shorter than
        :data:`WINDOW` or the characters are not the secret's (a ``?`` stood in for them)."""
        best: tuple[int, int] | None = None
        for piece, secret, offset in candidates:
            if not text.startswith(piece, at):
                continue
            start = at - _common_suffix(text, at, secret, offset)
            end = at + _common_prefix(text, at, secret, offset, len(piece))
            if end - start < WINDOW:
                continue
            best = (start, end) if best is None else (min(best[0], start), max(best[1], end))
        return best


def _cell(piece: str) -> int:
    """The integer a text's cell holding ``piece`` reads as (see :meth:`Redactor._runs`)."""
    return int.from_bytes(piece.encode("ascii", "replace"), sys.byteorder)


def _key_like(text: str) -> Spans:
    """Where ``text`` holds something shaped like an API key or a bearer token."""
    # A quick look first, at C speed: only a "k-" (any "k" a case-blind match takes
    # lower-cases to one) or a "bearer" can start a match.
    lowered = text.lower()
    if "k-" not in lowered and "bearer" not in lowered:
        return []
    return [match.span() for match in _KEY_LIKE.finditer(text)]


def _view_of(text: str) -> _DecodedView | None:
    """``text``'s decoded view; ``None`` when it holds neither an invisible character nor
    an escape (the usual case, found at C speed for ASCII text)."""
    escapes = ("%" in text or "\\u" in text) and _ESCAPE.search(text) is not None
    invisible = not text.isascii() and INVISIBLE.search(text) is not None
    if escapes:
        return _DecodedView(text, _ESCAPE_OR_INVISIBLE if invisible else _ESCAPE)
    return _DecodedView(text, INVISIBLE) if invisible else None


def _hide(text: str, find: Callable[[str], Spans], view: _DecodedView | None) -> str:
    """``text`` with what ``find`` finds in it, or in ``view`` (its decoded view, see
    :func:`_view_of`), replaced by :data:`MARKER`, overlapping and adjacent stretches as
    one; ``text`` itself when nothing is found."""
    if not text:
        return text
    spans = find(text)
    if view is not None:
        spans += [view.original(start, end) for start, end in find(view.text)]
    if not spans:
        return text
    spans.sort()
    pieces: list[str] = []
    done = 0  # text before this is written out
    start, end = spans[0]
    for next_start, next_end in spans[1:]:
        if next_start <= end:  # overlapping or adjacent
            end = max(end, next_end)
            continue
        pieces += (text[done:start], MARKER)
        done, start, end = end, next_start, next_end
    pieces += (text[done:start], MARKER, text[end:])
    return "".join(pieces)


class _DecodedView:
    """``text`` with its invisible characters removed and its percent- and JSON escapes
    decoded (an escaped invisible character removed too), and the way back: which
    characters of ``text`` a stretch of the view came from (worked out on first use, as
    most texts hold no secret)."""

    __slots__ = ("_at", "_ends", "_original", "_pattern", "_shifts", "_sizes", "_starts", "text")

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        """``pattern`` finds what to remove or decode: escapes, invisible characters or
        both (the narrowest is the fastest)."""
        self._original = text
        self._pattern = pattern
        # Invisible characters alone are removed by a plain substitution, at C speed.
        self.text = pattern.sub("" if pattern is INVISIBLE else _decoded_match, text)
        self._at: list[int] = []  # where each escape's decoded character is in the view
        self._sizes: list[int] = []  # 1, or 0 for a removed character
        self._starts: list[int] = []  # where the escape is in the text
        self._ends: list[int] = []
        self._shifts: list[int] = []  # text index minus view index after the escape

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The stretch of the original text that ``view[start:end]`` (not empty) came from."""
        if not self._at:
            self._map()
        return self._span_of(start)[0], self._span_of(end - 1)[1]

    def _map(self) -> None:
        done = at = 0
        for match in self._pattern.finditer(self._original):
            start, end = match.span()
            at += start - done
            size = len(_decoded_match(match))
            self._at.append(at)
            self._sizes.append(size)
            self._starts.append(start)
            self._ends.append(end)
            at += size
            self._shifts.append(end - at)
            done = end

    def _span_of(self, index: int) -> tuple[int, int]:
        """Where the view's character ``index`` is in the original text."""
        k = bisect.bisect_right(self._at, index) - 1
        if k < 0:
            return index, index + 1
        if self._sizes[k] and self._at[k] == index:  # a decoded escape
            return self._starts[k], self._ends[k]
        origin = index + self._shifts[k]
        return origin, origin + 1


@functools.lru_cache(maxsize=1024)
def _decoded(escape: str) -> str:
    """The character an escape stands for; ``""`` for an invisible one."""
    if len(escape) == 1:
        return ""
    char = chr(int(escape[1:] if escape[0] == "%" else escape[2:], 16))
    return "" if INVISIBLE.match(char) else char


def _decoded_match(match: re.Match[str]) -> str:
    return _decoded(match.group())


def _common_prefix(text: str, at: int, secret: str, offset: int, known: int) -> int:
    """How many characters of ``secret[offset:]`` ``text`` holds from ``at`` (at least
    ``known``, already compared)."""
    rest = len(secret) - offset
    if text.startswith(secret[offset:], at):  # the usual case: the secret to its end
        return rest
    count, limit = known, min(rest, len(text) - at)
    while count < limit and text[at + count] == secret[offset + count]:
        count += 1
    return count


def _common_suffix(text: str, at: int, secret: str, offset: int) -> int:
    """How many characters of ``secret[:offset]`` end ``text[:at]``."""
    if text.endswith(secret[:offset], 0, at):  # the usual case: from the secret's start
        return offset
    count, limit = 0, min(offset, at)
    while count < limit and text[at - count - 1] == secret[offset - count - 1]:
        count += 1
    return count


@functools.lru_cache(maxsize=64)  # per call on the hot path; a process has few keys
def redactor_for(*secrets: str | None) -> Redactor:
    """The :class:`Redactor` for these secrets (``None`` and short ones are ignored)."""
    return Redactor(s for s in secrets if s)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every run of ``secrets`` (see :class:`Redactor`) and anything shaped
    like an API key or a bearer token replaced by :data:`MARKER`. For errors and logs."""
    return redactor_for(*secrets).error(text)


class RedactedError(Exception):
    """Stands in for an exception in a log record (``exc_info=``): the original's traceback
    under a redacted ``"<Type>: <message>"``, and none of the exceptions it chains, whose
    text may quote a key too (h11 quotes a rejected header value, key and all)."""


def redacted_exception(
    exc: BaseException, *secrets: str | None, hide: Redactor | None = None
) -> RedactedError:
    """A :class:`RedactedError` for ``exc``: log it with ``exc_info=`` instead of ``exc``.
    ``hide`` (a :class:`Redactor` already made) is used instead of ``secrets`` if given."""
    if hide is None:
        hide = redactor_for(*secrets)
    message = hide.error(f"{type(exc).__name__}: {exc}")
    return RedactedError(message).with_traceback(exc.__traceback__)


def secrets_of(base_url: str, api_key: str | None) -> tuple[str, ...]:
    """The secrets of an endpoint, for :func:`redactor_for`: what a vendor must never see
    echoed back into a verdict or a log. The API key, and for a base URL with
    ``user:password@`` the password (decoded and as written), ``user:password`` and its
    Basic-auth base64 (the header it travels in). With no password the user part is the
    secret (``https://<token>@host``)."""
    found = [api_key] if api_key else []
    _, credentials = split_credentials(base_url)
    if credentials is not None:
        user, password = credentials
        written = urlsplit(base_url).netloc.rpartition("@")[0].partition(":")
        found += [password or user, written[2] or written[0], ":".join(credentials)]
        found.append(basic_auth(credentials).removeprefix("Basic "))
    return tuple(found)
