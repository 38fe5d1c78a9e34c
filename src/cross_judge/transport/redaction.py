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

A string shorter than :data:`MIN_SECRET` characters is never a secret.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from ._http import basic_auth, split_credentials

__all__ = [
    "MARKER",
    "MIN_SECRET",
    "WINDOW",
    "RedactedError",
    "Redactor",
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

_STRIDE = 4
_ANCHOR = WINDOW - _STRIDE + 1
"""Anchors of this length every _STRIDE characters: any WINDOW-run holds one whole."""


class Redactor:
    """Hides ``secrets``: every run of :data:`WINDOW` or more characters of one is replaced
    by :data:`MARKER` (see the module docstring for what :meth:`error` adds).

    Overlapping and adjacent runs become one marker, so nothing of a secret is left
    beside it. Matching is exact (case-sensitive): see :meth:`label` for upper-cased text.

    How: every run of 8 characters of a secret holds one of the secret's 5-character
    pieces that start at a multiple of 4 (its *anchors*). One regular-expression pass finds
    the anchors' first 4 characters in the text (a few dozen literals for a key, a password
    and a Basic header, all of one length, so that none hides another); each hit is then
    checked and grown backwards and forwards along the secret it comes from. Linear in the
    text: an 8 MiB answer costs about 0.1 s, a text without a secret comes back as the
    same object, and a hostile one packed with pieces of the key stays linear (about 1.5 s
    for 8 MiB).
    """

    __slots__ = ("_anchors", "_folded", "_long", "_pattern", "_short")

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = dict.fromkeys(s for s in secrets if len(s) >= MIN_SECRET)
        self._long = tuple(s for s in unique if len(s) >= WINDOW)
        # Longest first: a short secret inside a longer one is replaced as part of it.
        self._short = tuple(sorted((s for s in unique if len(s) < WINDOW), key=len, reverse=True))
        # By the first MIN_SECRET characters the pattern finds: the anchors starting so,
        # each with the secret it comes from and where it is in it.
        anchors: dict[str, list[tuple[str, str, int]]] = {}
        for secret in self._long:
            for at in range(0, len(secret) - _ANCHOR + 1, _STRIDE):
                anchor = secret[at : at + _ANCHOR]
                anchors.setdefault(anchor[:MIN_SECRET], []).append((anchor, secret, at))
        self._anchors = anchors
        self._pattern = re.compile("|".join(map(re.escape, anchors))) if anchors else None
        self._folded: Redactor | None = None

    def __bool__(self) -> bool:
        """False when there is nothing to hide."""
        return bool(self._long or self._short)

    def __repr__(self) -> str:
        return f"Redactor(<{len(self._long) + len(self._short)} secrets>)"

    def __call__(self, text: str) -> str:
        """``text`` with every run of a secret replaced by :data:`MARKER`."""
        pattern = self._pattern
        if pattern is None or not text:
            return text
        search = pattern.search
        match = search(text)
        pieces: list[str] = []
        done = 0  # text before this is written out (a marker covers its end)
        run: tuple[int, int] | None = None  # the run being grown, not yet written
        while match is not None:
            found = self._run_at(text, match)
            if found is not None:
                if run is not None and found[0] <= run[1]:  # overlapping or adjacent
                    run = (min(run[0], found[0]), max(run[1], found[1]))
                else:
                    if run is not None:
                        pieces += (text[done : run[0]], MARKER)
                        done = run[1]
                    run = (max(found[0], done), found[1])
            # An anchor of a run reaching past this one starts at most WINDOW - 1 before
            # its end; anchors further inside it are skipped.
            resume = match.start() + 1
            if run is not None:
                resume = max(resume, run[1] - WINDOW + 1)
            match = search(text, resume)
        if run is None:
            return text
        pieces += (text[done : run[0]], MARKER, text[run[1] :])
        return "".join(pieces)

    def error(self, text: str) -> str:
        """For an error message or a log line: also hides a short secret where it appears
        whole, and key- and token-shaped strings."""
        text = self(text)
        for secret in self._short:
            text = text.replace(secret, MARKER)
        return _KEY_LIKE.sub(MARKER, text)

    def label(self, text: str) -> str:
        """For a verdict label, which the parser upper-cases (hyphens become underscores):
        runs of the secrets transformed the same way."""
        folded = self._folded
        if folded is None:
            upper = [s.upper() for s in self._long]
            folded = self._folded = Redactor(upper + [s.replace("-", "_") for s in upper])
        return folded(text)

    def _run_at(self, text: str, match: re.Match[str]) -> tuple[int, int] | None:
        """The longest run of a secret through the anchor ``match`` found, as ``(start,
        end)`` in ``text``; ``None`` when it is shorter than :data:`WINDOW`."""
        at = match.start()
        best: tuple[int, int] | None = None
        for anchor, secret, offset in self._anchors[match.group()]:
            if not text.startswith(anchor, at):
                continue
            start = at - _common_suffix(text, at, secret, offset)
            end = at + _common_prefix(text, at, secret, offset, len(anchor))
            if end - start < WINDOW:
                continue
            best = (start, end) if best is None else (min(best[0], start), max(best[1], end))
        return best


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
