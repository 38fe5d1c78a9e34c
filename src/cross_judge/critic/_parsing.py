"""Turn an LLM's raw reply into the fields of a verdict, without ever raising.

:func:`parse_answer` is what a critic calls on the text a model returned. It gives back a
:class:`ParsedAnswer`: a vote (``error is None``) or ``kind="PARSE_FAIL"`` with
``error="parse_fail: <reason>"``. It never raises, whatever the text (any ``str`` or
``None``).

How a reply is read:

1. The whole reply, stripped of whitespace, is tried as strict JSON.
2. ``<think>`` / ``<thinking>`` / ``<reasoning>`` blocks are removed
   (:func:`strip_reasoning_blocks`) and the rest is tried again, with and without a
   surrounding code fence.
3. Otherwise a brace scan that respects JSON strings finds the complete objects in the last
   200,000 characters. The last 64 are decoded with ``json.JSONDecoder.raw_decode``; each is
   retried once with trailing commas removed outside string literals. The last object that
   has a label key wins. Failing that, the last object wins, unless an object was left open
   after it: the reply was cut off, and the reply fails as truncated. An object nested
   inside another JSON object is never picked on its own, even when the outer one does not
   decode. In doubt the parser fails rather than guess a vote.

A reply that is, as a whole, a JSON array or scalar fails: the model answered the wrong
shape. Reasoning tags quoted inside a JSON string are removed along with the real blocks in
step 2, because that step does not know about strings; a reply that is strict JSON as a
whole (step 1) keeps them. Raw control characters inside JSON strings (literal newlines in
a reasoning) are accepted, and so are the bare ``NaN``/``Infinity`` that Python's ``json``
reads.

Deliberate changes from cross-judge 0.1 (behaviour notes §3.2-3.3, bugs B8-B10):

* Balanced-brace scan instead of first ``{`` to last ``}``. Several objects, braces in
  prose, ``<think>`` blocks and ``, }`` / ``,\\r\\n}`` trailing commas now parse.
* A ``null``, empty, non-string or reserved (``ERROR``, ``PARSE_FAIL``, ``SKIPPED``,
  ``ABSTAIN``) label fails to parse. 0.1 counted ``"NONE"``, ``""``, ``"['KEEP']"`` and
  ``"ERROR"`` as votes.
* Labels lose trailing punctuation and have internal spaces and hyphens replaced
  (``"Keep."`` -> ``KEEP``, ``"not sure"`` -> ``NOT_SURE``). A label over 100 characters
  is a sentence, not a vote, and fails.
* Labels are read in NFKC with invisible characters removed (``"KE\\u200bEP"`` and
  fullwidth ``"ＫＥＥＰ"`` are ``KEEP``), and Cyrillic or Greek letters that look like Latin
  ones are read as those when the label mixes scripts (``"КEEP"`` with a Cyrillic ``К``)
  or when it is then one of the prompt's labels (``"КЕЕР"``, all Cyrillic, with labels
  ``KEEP``/``REJECT``). :attr:`ParsedAnswer.written_label` keeps what was written. See
  :func:`parse_answer`.
* Confidence follows the table below: ``"85%"`` and ``85`` mean 0.85, while ``5`` and
  ``1.5`` (a score on a 1-5 or 1-10 habit) are clamped to 1.0 as 0.1 did. NaN, infinities,
  booleans and words such as ``"high"`` count as *no* confidence (0.0,
  ``confidence_given=False``), not 1.0.
* A ``null`` reasoning is ``""``, not ``"None"``.

**Confidence** (:func:`coerce_confidence`): what the model wrote as ``confidence`` (or
``certainty``), a JSON number or a numeric string, becomes a number in [0, 1] or "no
confidence" (``None``; a :class:`ParsedAnswer` then has ``confidence=0.0`` and
``confidence_given=False``):

==================================================  =========================================
model wrote                                         confidence
==================================================  =========================================
0 to 1 (``0.85``, ``"0.85"``)                       as is
a percent sign (``"85%"``, ``"85 %"``, ``"5%"``)    value / 100, clamped to [0, 1]
above 1 up to 10 (``1.5``, ``5``, ``"7"``, ``10``)  1.0: a score on a 1-5 / 1-10 habit, not a
                                                    percentage (clamped, as 0.1 did)
above 10 up to 100 (``85``, ``"85"``, ``42.5``)     value / 100 (a percentage)
above 100                                           1.0
negative                                            0.0
NaN, ±inf, booleans, non-numeric text, missing      ``None`` (no confidence)
==================================================  =========================================

**Copied examples.** A prompt shows the model an example answer; small models often send
it back unchanged. ``parse_answer(..., examples=spec.example_answers)`` (the examples come from
the prompt, see :attr:`cross_judge.prompts.PromptSpec.example_answers`) fails such a reply with
``"parse_fail: copied the prompt's example answer (...)"``: when its label is the
example's placeholder label (``<PASS or FAIL>``), or its reasoning is the example's text.
This module knows no example text itself.

Not done here: no network, and no :class:`~cross_judge.verdict.Verdict` is built (the
caller adds timing, usage, the raw text and ``error_kind``). Rubric scales are not mapped:
a ``score`` of 4 on a 1-5 scale comes back as ``None`` for a later layer. The only repair
is removing trailing commas; single-quoted pseudo-JSON still fails.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..verdict import RESERVED_KINDS, clean_label_text, label_skeleton, latin_spelling

__all__ = [
    "LABEL_KEYS",
    "REASONING_KEYS",
    "ExampleAnswer",
    "ParsedAnswer",
    "coerce_confidence",
    "extract_json",
    "normalize_label",
    "parse_answer",
    "strip_reasoning_blocks",
]

LABEL_KEYS: tuple[str, ...] = ("kind", "verdict", "label", "decision")
"""Keys that may hold the label, highest precedence first (matched case-insensitively)."""

REASONING_KEYS: tuple[str, ...] = ("reasoning", "rationale", "explanation")
"""Keys that may hold the reasoning, highest precedence first (matched case-insensitively)."""

_CONFIDENCE_KEYS = ("confidence", "certainty")
# Up to here a number above 1 is a score on a 1-5 / 1-10 habit (clamped to 1.0); above it,
# a percentage. A model meaning "7%" as 7 is rarer than one grading 7 out of 10.
_SCORE_HABIT_TOP = 10
_SCORE_KEYS = ("score",)

_PARSE_FAIL = "PARSE_FAIL"
_COPIED = "copied the prompt's example answer"
_MISSING_LABEL = "UNCLEAR"  # what 0.1 used when the label key is absent
_WINDOW_CHARS = 200_000
_MAX_CANDIDATES = 64
_MAX_REASONING_CHARS = 1000
_MAX_RAW_IN_FAILURE = 300
_MAX_LABEL_CHARS = 100
_MAX_NUMBER_CHARS = 64


@dataclass(frozen=True)
class ExampleAnswer:
    """The example answer a prompt shows the model: a reply that copies it is not a vote.

    The prompt knows what its example is (:attr:`cross_judge.prompts.PromptSpec.example_answers`
    builds these); the parser only compares a reply with it.
    """

    label: str | None = None
    """The example's label, normalised (:func:`normalize_label`), when it is a placeholder
    rather than a vote (``<PASS or FAIL>`` gives ``<PASS_OR_FAIL>``); ``None`` when the
    example shows a real label, which a reply may of course give."""
    reasoning: str | None = None
    """The example's reasoning text, or ``None``. A reply whose reasoning is this text
    (ignoring case, runs of whitespace and a final period) copied it."""


@dataclass(frozen=True)
class ParsedAnswer:
    """The verdict fields read from one reply.

    For a vote, ``error`` is ``None`` and ``kind`` is the normalised label (never one of
    :data:`~cross_judge.verdict.RESERVED_KINDS`). Otherwise ``kind`` is ``"PARSE_FAIL"``,
    ``error`` is ``"parse_fail: <reason>"``, ``confidence`` is 0.0, ``score`` is ``None``,
    ``reasoning`` is the first 300 characters of the raw reply, and ``data`` holds the
    object that was read, if one was (for example when only its label was unusable).
    """

    kind: str
    """The upper-case label, or ``"PARSE_FAIL"``."""
    confidence: float
    """In [0, 1]; 0.0 when the model gave none or gave an unusable one."""
    confidence_given: bool
    """False when the model gave no usable confidence."""
    reasoning: str
    """At most 1000 characters; for a failure, the raw reply's first 300 characters."""
    score: float | None
    """A ``score`` in [0, 1] (``"NN%"`` accepted), else ``None``."""
    error: str | None
    """``None`` for a vote; ``"parse_fail: <reason>"`` otherwise."""
    data: dict[str, Any] | None
    """The JSON object that was used, if any."""
    written_label: str | None = None
    """The label as written (upper-cased, punctuation stripped) when ``kind`` was read
    from it by folding characters (invisible ones, compatibility forms, look-alike
    letters); ``None`` when ``kind`` is what was written."""

    @property
    def ok(self) -> bool:
        """True when this answer is a vote (``error is None``)."""
        return self.error is None


def parse_answer(
    text: str | None,
    *,
    labels: Sequence[str] | None = None,
    label_keys: Sequence[str] = LABEL_KEYS,
    reasoning_keys: Sequence[str] = REASONING_KEYS,
    examples: Sequence[ExampleAnswer] = (),
    answer_regex: re.Pattern[str] | None = None,
) -> ParsedAnswer:
    """Read a verdict out of a model's reply. Never raises.

    ``labels`` is the vocabulary the prompt asked for. Entries are normalised like model
    labels, so case, spaces and hyphens don't matter. When it is given and not empty, a
    label outside it fails. Reserved labels are never allowed, even if listed. A lone
    ``str`` counts as a one-label vocabulary.

    Look-alike labels (see :func:`cross_judge.verdict.label_skeleton`): a label is read in
    NFKC with invisible characters removed (:func:`normalize_label`). With a vocabulary, a
    label not in it whose Cyrillic or Greek look-alike letters make it one vocabulary label
    (``КЕЕР`` for ``KEEP``) is read as that label; a label in it is never folded. Without
    one, a label that mixes scripts only by look-alike letters (``КEEP``) is read in Latin
    (:func:`cross_judge.verdict.latin_spelling`), while a label in one script stays (``НЕТ``
    is Russian, not ``HET``). Either way ``written_label`` keeps what was written, and a
    look-alike of a reserved label fails like the reserved label.

    Edge cases:

    * ``None``, ``""`` or whitespace fails with ``"parse_fail: empty response"``.
    * No label key at all gives ``"UNCLEAR"``, as in 0.1. With a vocabulary that does not
      include ``UNCLEAR``, it fails instead.
    * A ``null``, empty, non-string, over-long or reserved label fails; the reason says
      which.
    * A bad ``confidence`` or ``score`` never makes the answer fail; it is just missing.
    * A reply that copies one of ``examples`` (the prompt's example answers) fails with
      ``"parse_fail: copied the prompt's example answer (...)"``: its label is an
      example's placeholder label (checked before the vocabulary, so the reason says
      "copied"), or its reasoning is an example's reasoning text.

    Keys match case-insensitively, and the first key present wins even if its value is
    unusable. Label: ``label_keys`` (default :data:`LABEL_KEYS`: ``kind``, ``verdict``,
    ``label``, ``decision``). Confidence: ``confidence``, then ``certainty`` (see
    :func:`coerce_confidence`). Reasoning: ``reasoning_keys`` (default
    :data:`REASONING_KEYS`: ``reasoning``, ``rationale``, ``explanation``); ``null`` gives
    ``""`` and other non-strings are ``str()``-ed. Score: ``score``. The legacy
    :class:`~cross_judge.reviewer.Reviewer` passes 0.1's order (``verdict`` and
    ``rationale`` first). Key names are matched lower-cased; a lone ``str`` is one key.

    ``answer_regex`` reads a reply that is not JSON (a prompt's ``answer_format: {regex:
    ...}``, e.g. Prometheus' ``[RESULT] 4``): its last match in the reply, reasoning
    blocks removed, gives the label (group ``label``) and, when the pattern has them and
    they matched, ``confidence``, ``score`` and ``reasoning`` (else the text before the
    match). What was read then goes through the same checks as a JSON answer's fields.
    No match fails with ``"parse_fail: no match for the answer format"``.
    """
    try:
        if answer_regex is not None:
            return _parse_regex_answer(
                text, labels, answer_regex, _key_names(reasoning_keys), tuple(examples)
            )
        return _parse_answer(
            text, labels, _key_names(label_keys), _key_names(reasoning_keys), tuple(examples)
        )
    except Exception as exc:
        # The contract is "never raises". If the parser has a bug, one odd reply should
        # become a parse failure instead of crashing a whole ensemble run.
        return _failure(text, f"internal parser error ({type(exc).__name__})")


def extract_json(raw: str | None) -> dict[str, Any] | None:
    """Return the verdict object in ``raw``, or ``None`` if there isn't one. Never raises.

    This is 0.1's ``_extract_json``, improved. Reasoning blocks and code fences are
    skipped and trailing commas repaired. Of several objects, the last one with a label
    key is returned, else the last one. A reply that is as a whole a JSON array or scalar
    gives ``None``.
    """
    try:
        return _extract(raw)[0]
    except Exception:
        # Same "never raises" contract as parse_answer.
        return None


def strip_reasoning_blocks(raw: str) -> str:
    """Remove ``<think>``, ``<thinking>`` and ``<reasoning>`` blocks from ``raw``.

    Tags match case-insensitively and may carry attributes. A block ends at the first
    closing tag of the same name; a nested block of the same name leaves its tail behind.
    Other cases:

    * Unclosed opening tag with only whitespace before it (the model ran out of tokens
      while thinking, or forgot to close): everything up to the first line that starts
      with ``{`` is dropped. If no line starts with ``{``, the result is ``""``.
    * Unclosed opening tag later in the text: left alone, as it may be part of a string.
    * Closing tag with no opening tag before it (chat templates that open ``<think>`` in
      the prompt): everything up to and including it is dropped.

    Runs in linear time.
    """
    text = raw
    first_open = _OPEN_TAG.search(text)
    first_close = _ANY_CLOSE_TAG.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        text = text[first_close.end() :]
        first_open = _OPEN_TAG.search(text)

    pieces: list[str] = []
    pos = 0
    seen_content = False
    match = first_open
    while match is not None:
        before = text[pos : match.start()]
        seen_content = seen_content or bool(before.strip())
        close = _CLOSE_TAGS[_TAG_NAMES[(match.lastindex or 1) - 1]].search(text, match.end())
        if close is None:
            if seen_content:
                break
            brace_line = _BRACE_LINE.search(text, match.end())
            return "".join(pieces) + (text[brace_line.start() :] if brace_line else "")
        pieces.append(before)
        pos = close.end()
        match = _OPEN_TAG.search(text, pos)
    pieces.append(text[pos:])
    return "".join(pieces)


def coerce_confidence(value: object) -> float | None:
    """Map what a model wrote as its confidence to [0, 1], or ``None`` if unusable.

    Numbers and numeric strings are read by the module's confidence table:

    * 0 to 1 is taken as it is; exactly 1 is 1.0.
    * A percent sign divides by 100, then clamps: ``"85%"`` gives 0.85, ``"5%"`` 0.05,
      ``"150%"`` 1.0.
    * Above 1 up to 10 gives 1.0: ``5`` or ``1.5`` is a score on a 1-5 or 1-10 habit, not
      a percentage (0.1 clamped it to 1.0 too).
    * Above 10 up to 100 is a percentage: ``85`` and ``"85"`` give 0.85.
    * Above 100 gives 1.0; negative gives 0.0.

    These give ``None`` (missing, not 1.0): NaN, infinities, booleans, ``None``,
    containers, and strings that are not plain decimal numbers (``"high"``, ``"nan"``,
    ``"0,8"``).
    """
    number: float
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        parsed = _parse_number_text(value)
        if parsed is None:
            return None
        number, percent = parsed
        if percent:
            number /= 100
            if not math.isfinite(number):
                return None
            return min(max(number, 0.0), 1.0)
    elif isinstance(value, int):
        # Only the sign matters outside [-1, 101]; clamping first avoids OverflowError on
        # ints too large for a float.
        number = float(min(max(value, -1), 101))
    elif isinstance(value, float):
        number = value
    else:
        return None
    if not math.isfinite(number):
        return None
    if number <= 0:
        return 0.0
    if number <= 1:
        return number
    if number <= _SCORE_HABIT_TOP:
        return 1.0
    if number <= 100:
        return number / 100
    return 1.0


def normalize_label(value: object) -> str | None:
    """Normalise a label. Returns ``None`` for non-strings and for blank labels.

    Steps: NFKC with invisible characters (zero-width spaces and joiners, the BOM, soft
    hyphens, direction marks: category Cf and the other default-ignorable code points)
    removed (:func:`cross_judge.verdict.clean_label_text`); strip surrounding whitespace,
    quotes and backticks, and trailing ``.,;:!``; upper-case; replace each internal run of
    whitespace or hyphens with one underscore; collapse repeated underscores. ``"Keep."``
    gives ``KEEP``, ``"`keep`"`` gives ``KEEP``, ``"parse fail"`` gives ``PARSE_FAIL``,
    ``"not-sure"`` gives ``NOT_SURE``, ``"KE\\u200bEP"`` and fullwidth ``"ＫＥＥＰ"`` give
    ``KEEP``. A leading hyphen stays (``"-1"`` gives ``-1``). Look-alike letters of other
    scripts are kept (``"КEEP"`` stays; :func:`parse_answer` decides about those).
    Booleans, numbers, ``None``, lists and dicts give ``None``: they are not labels. Runs
    in linear time; normalising a normalised label changes nothing.
    """
    if not isinstance(value, str):
        return None
    return _label_form(clean_label_text(value), fold=True)


def _label_form(text: str, *, fold: bool) -> str | None:
    """The steps of :func:`normalize_label` after cleaning. ``fold`` cleans again after
    upper-casing, which can give characters NFKC changes; without it, the label as written
    (to tell whether cleaning changed it)."""
    core = text.rstrip(_LABEL_TRAILING).lstrip(_LABEL_LEADING)
    if not core:
        return None
    upper = core.upper()
    label = _LABEL_SEPARATORS.sub("_", clean_label_text(upper) if fold else upper)
    return _REPEATED_UNDERSCORES.sub("_", label)


# --------------------------------------------------------------------------- internals

_TAG_NAMES = ("think", "thinking", "reasoning")
# One group per name, so the match says which name it is: IGNORECASE also matches
# non-ASCII letters ("<thİnk>", "<reaſoning>") that lower() does not turn back into the name.
_OPEN_TAG = re.compile(r"<(?:(think)|(thinking)|(reasoning))(?:\s[^<>]{0,200})?>", re.IGNORECASE)
_CLOSE_TAGS = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in _TAG_NAMES}
_ANY_CLOSE_TAG = re.compile(r"</(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
_BRACE_LINE = re.compile(r"^[ \t]*\{", re.MULTILINE)

# Only a brace followed by a key or by "}" can start a JSON object; other braces are prose.
_JSON_OPEN = re.compile(r'\{\s*["}]')
_JSON_TOKEN = re.compile(r'[{}"]')
_QUOTE_OR_TRAILING_COMMA = re.compile(r'"|,(?=\s*[}\]])')

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# Every character str.isspace() accepts lies below U+3001. Spelling them out lets one
# C-level strip() call do the trimming; a loop alternating strip() calls would be
# quadratic on hostile labels such as ".'.'.'...".
_WHITESPACE = "".join(char for char in map(chr, range(0x3001)) if char.isspace())
_LABEL_LEADING = _WHITESPACE + "\"'`"
_LABEL_TRAILING = _WHITESPACE + "\"'`.,;:!"
_LABEL_SEPARATORS = re.compile(r"(?<=[^\s-])[\s-]+(?=[^\s-])")
_REPEATED_UNDERSCORES = re.compile(r"_{2,}")


def _parse_int(literal: str) -> int | float:
    # Python 3.11+ refuses int() of more than 4300 digits; such a number becomes a float
    # (inf) rather than making the whole object unreadable.
    try:
        return int(literal)
    except ValueError:
        return float(literal)


# strict=False accepts raw newlines and tabs inside strings, which models often emit.
_DECODER = json.JSONDecoder(strict=False, parse_int=_parse_int)
_NOT_JSON = object()


def _key_names(keys: Sequence[str]) -> tuple[str, ...]:
    """``keys`` lower-cased and stripped, as :func:`_find_key` compares them."""
    if isinstance(keys, str):
        keys = (keys,)
    if isinstance(keys, tuple):
        return _normalised_keys(keys)  # the usual case: a constant tuple, memoised
    return tuple(k.strip().lower() for k in keys)


@functools.lru_cache(maxsize=64)
def _normalised_keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(k.strip().lower() for k in keys)


def _parse_answer(
    text: str | None,
    labels: Sequence[str] | None,
    label_keys: tuple[str, ...] = LABEL_KEYS,
    reasoning_keys: tuple[str, ...] = REASONING_KEYS,
    examples: tuple[ExampleAnswer, ...] = (),
) -> ParsedAnswer:
    data, reason = _extract(text, label_keys)
    if data is None:
        return _failure(text, reason)
    placeholders = frozenset(e.label for e in examples if e.label is not None)
    label, reason = _read_label(data, _vocabulary(labels), label_keys, placeholders)
    if label is None:
        return _failure(text, reason, data)
    written = _written_label(data, label_keys)
    reasoning = _read_reasoning(data, reasoning_keys)
    if examples and _copies_reasoning(reasoning, examples):
        return _failure(text, f"{_COPIED} (its reasoning is the example's text)", data)
    confidence = coerce_confidence(_get(data, _CONFIDENCE_KEYS))
    return ParsedAnswer(
        kind=label,
        confidence=0.0 if confidence is None else confidence,
        confidence_given=confidence is not None,
        reasoning=reasoning,
        score=_coerce_score(_get(data, _SCORE_KEYS)),
        error=None,
        data=data,
        written_label=None if written == label else written,
    )


def _parse_regex_answer(
    text: str | None,
    labels: Sequence[str] | None,
    pattern: re.Pattern[str],
    reasoning_keys: tuple[str, ...],
    examples: tuple[ExampleAnswer, ...],
) -> ParsedAnswer:
    """:func:`parse_answer` for a reply in a regex answer format: the last match's groups
    become an answer object, read as a JSON answer is."""
    if text is None or not text.strip():
        return _failure(text, "empty response")
    reply = strip_reasoning_blocks(text)[-_WINDOW_CHARS:]
    last = None
    for last in pattern.finditer(reply):  # noqa: B007  # the last match is the answer
        pass
    if last is None:
        return _failure(text, "no match for the answer format")
    groups = {k: v for k, v in last.groupdict().items() if v is not None}
    data: dict[str, Any] = {"kind": groups.get("label", "")}
    for name in ("confidence", "score"):
        if name in groups:
            data[name] = groups[name]
    data[reasoning_keys[0] if reasoning_keys else "reasoning"] = groups.get(
        "reasoning", reply[: last.start()].strip()
    )
    parsed = _parse_answer(
        json.dumps(data), labels, ("kind",), reasoning_keys or REASONING_KEYS, examples
    )
    if parsed.ok:
        return parsed
    return dataclasses.replace(parsed, reasoning=text[:_MAX_RAW_IN_FAILURE])


def _failure(text: str | None, reason: str, data: dict[str, Any] | None = None) -> ParsedAnswer:
    return ParsedAnswer(
        kind=_PARSE_FAIL,
        confidence=0.0,
        confidence_given=False,
        reasoning=text[:_MAX_RAW_IN_FAILURE] if isinstance(text, str) else "",
        score=None,
        error=f"parse_fail: {reason}",
        data=data,
    )


def _extract(
    raw: str | None, label_keys: tuple[str, ...] = LABEL_KEYS
) -> tuple[dict[str, Any] | None, str]:
    """The chosen object, or ``None`` and the reason there is none.

    An object holding one of ``label_keys`` is preferred among several.
    """
    if raw is None or not raw.strip():
        return None, "empty response"

    whole = _decode_whole(raw.strip())
    if whole is not _NOT_JSON:
        return _whole_document(whole)

    text = strip_reasoning_blocks(raw).strip()
    if not text:
        return None, "no JSON object found (the reply holds only a reasoning block)"
    for document in (text, _unfence(text)):
        whole = _decode_whole(document)
        if whole is not _NOT_JSON:
            return _whole_document(whole)

    windowed = len(text) > _WINDOW_CHARS
    if windowed:
        text = text[-_WINDOW_CHARS:]
    spans, left_open = _scan_objects(text)
    verdict, last_object, reason = _pick_object(text, spans, label_keys)
    if verdict is not None:
        return verdict, ""
    if left_open:
        # The cut-off object after the last complete one was most likely the answer, so a
        # complete object without a label does not stand in for it.
        return None, "JSON object is truncated (unbalanced braces)"
    if last_object is not None:
        return last_object, ""
    if reason:
        return None, reason
    if windowed:
        return None, f"no JSON object found in the last {_WINDOW_CHARS} characters"
    return None, "no JSON object found"


def _decode_whole(text: str) -> object:
    try:
        return _DECODER.decode(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _whole_document(value: object) -> tuple[dict[str, Any] | None, str]:
    if isinstance(value, dict):
        return value, ""
    return None, f"expected a JSON object, got {_json_type(value)}"


def _json_type(value: object) -> str:
    return "JSON null" if value is None else f"a JSON {_type_name(value)}"


def _type_name(value: object) -> str:
    """The JSON name of a decoded value's type: boolean, number, string, array, object."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _unfence(text: str) -> str:
    """The body of a reply that is one code fence; other text comes back unchanged."""
    if not text.startswith("```"):
        return text
    newline = text.find("\n")
    body = text[newline + 1 :] if newline >= 0 else text[3:]
    body = body.rstrip()
    if body.endswith("```"):
        body = body[:-3]
    return body.strip()


def _scan_objects(text: str) -> tuple[list[tuple[int, int]], bool]:
    """Find the spans of candidate JSON objects, in order, in linear time.

    A candidate is a balanced ``{...}`` that looks like JSON (a brace followed by a key or
    by ``}``) and lies inside no other such brace, so candidates never overlap. Between
    candidates only such a brace matters: quotes in prose need not pair up, and a prose
    brace (``format {kind, ...}``) does not hide the answer after it. Inside a candidate,
    braces in strings are skipped, escapes included. Also returns whether a candidate was
    left open (truncated output).
    """
    spans: list[tuple[int, int]] = []
    opens: list[tuple[int, bool]] = []  # (index, looks like JSON) of each open brace
    json_depth = 0
    pos = 0
    while True:
        if not opens:
            match = _JSON_OPEN.search(text, pos)
            if match is None:
                break
            opens.append((match.start(), True))
            json_depth = 1
            pos = match.start() + 1
            continue
        match = _JSON_TOKEN.search(text, pos)
        if match is None:
            break
        at = match.start()
        char = text[at]
        pos = at + 1
        if char == '"':
            pos = _string_end(text, pos)
        elif char == "{":
            looks_json = _JSON_OPEN.match(text, at) is not None
            opens.append((at, looks_json))
            if looks_json:
                json_depth += 1
        else:
            start, looks_json = opens.pop()
            if looks_json:
                json_depth -= 1
                if json_depth == 0:
                    spans.append((start, pos))
    return spans, bool(opens)


def _pick_object(
    text: str, spans: list[tuple[int, int]], label_keys: tuple[str, ...] = LABEL_KEYS
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """``(last verdict object, last object, reason)`` over the last candidates.

    The reason is why the last candidate that failed to decode failed, or ``""``.
    """
    fallback: dict[str, Any] | None = None
    reason = ""
    for start, end in reversed(spans[-_MAX_CANDIDATES:]):
        found, why = _decode_object(text[start:end])
        if found is None:
            reason = reason or why
        elif _find_key(found, label_keys) is not None:
            return found, fallback, reason
        elif fallback is None:
            fallback = found
    return None, fallback, reason


def _decode_object(span: str) -> tuple[dict[str, Any] | None, str]:
    """Decode one candidate, retrying once with trailing commas removed."""
    try:
        return _decode_span(span), ""
    except RecursionError:
        return None, "JSON object is nested too deeply"
    except ValueError as exc:
        reason = f"invalid JSON object ({getattr(exc, 'msg', exc)})"
    repaired = _remove_trailing_commas(span)
    if repaired != span:
        try:
            return _decode_span(repaired), ""
        except (ValueError, RecursionError):
            pass
    return None, reason


def _decode_span(span: str) -> dict[str, Any]:
    value, end = _DECODER.raw_decode(span)
    if end != len(span) or not isinstance(value, dict):
        raise ValueError("not exactly one JSON object")
    return value


def _remove_trailing_commas(text: str) -> str:
    """Drop each comma that is followed (after whitespace) by ``}`` or ``]``, outside strings."""
    pieces: list[str] = []
    kept_from = 0
    pos = 0
    while (match := _QUOTE_OR_TRAILING_COMMA.search(text, pos)) is not None:
        if match.group() == '"':
            pos = _string_end(text, match.end())
        else:
            pieces.append(text[kept_from : match.start()])
            kept_from = pos = match.end()
    pieces.append(text[kept_from:])
    return "".join(pieces)


def _string_end(text: str, body_start: int) -> int:
    """The index just past the quote that closes a string whose body starts at body_start."""
    pos = body_start
    while True:
        quote = text.find('"', pos)
        if quote < 0:
            return len(text)
        backslashes = quote
        while backslashes > pos and text[backslashes - 1] == "\\":
            backslashes -= 1
        if (quote - backslashes) % 2 == 0:
            return quote + 1
        pos = quote + 1


def _find_key(data: dict[str, Any], names: Sequence[str]) -> str | None:
    """The key of ``data`` matching the first of ``names`` present, ignoring case.

    When two keys differ only in case, the all-lower-case one wins.
    """
    folded: dict[str, str] = {}
    for key in data:
        if isinstance(key, str):
            lowered = key.strip().lower()
            if lowered not in folded or key == lowered:
                folded[lowered] = key
    for name in names:
        if name in folded:
            return folded[name]
    return None


def _get(data: dict[str, Any], names: Sequence[str]) -> Any:
    key = _find_key(data, names)
    return None if key is None else data[key]


def _vocabulary(labels: Sequence[str] | None) -> tuple[str, ...] | None:
    """The normalised vocabulary, without reserved kinds; ``None`` means "any label"."""
    if not labels:
        return None
    if isinstance(labels, str):
        labels = (labels,)
    vocabulary: dict[str, None] = {}  # a dict keeps the caller's order for the message
    for entry in labels:
        label = normalize_label(entry)
        if label is not None and label not in RESERVED_KINDS:
            vocabulary[label] = None
    return tuple(vocabulary)


def _read_label(
    data: dict[str, Any],
    vocabulary: tuple[str, ...] | None,
    label_keys: tuple[str, ...] = LABEL_KEYS,
    placeholders: frozenset[str] = frozenset(),
) -> tuple[str | None, str]:
    """The label, or ``None`` and the reason it is unusable.

    ``placeholders`` are the normalised placeholder labels of the prompt's examples.
    """
    key = _find_key(data, label_keys)
    if key is None:
        if vocabulary is not None and _MISSING_LABEL not in vocabulary:
            return None, f"no label key ({', '.join(label_keys)}) in the JSON object"
        return _MISSING_LABEL, ""
    value = data[key]
    if not isinstance(value, str):
        return None, f"label is {_describe_non_string(value)}"
    # Measured before normalising, which would cost real time on a megabyte "label".
    length = len(value.rstrip(_LABEL_TRAILING).lstrip(_LABEL_LEADING))
    if length > _MAX_LABEL_CHARS:
        return None, f"label is too long ({length} characters; at most {_MAX_LABEL_CHARS})"
    written = normalize_label(value)
    if written is None:
        return None, "label is empty"
    label = _lookalike_resolved(written, vocabulary)
    if label in placeholders or written in placeholders:
        return None, f"{_COPIED} (its label {value.strip()!r} is the example's placeholder)"
    reserved = label if label in RESERVED_KINDS else label_skeleton(label)
    if reserved in RESERVED_KINDS:
        return None, f"the model answered the reserved label {reserved!r}, which is not a vote"
    if vocabulary is not None and label not in vocabulary:
        allowed = ", ".join(vocabulary) if vocabulary else "(no usable labels were given)"
        return None, f"label {label!r} is not one of {allowed}"
    return label, ""


def _lookalike_resolved(label: str, vocabulary: tuple[str, ...] | None) -> str:
    """``label`` (normalised) as the label its look-alike letters imitate: the one
    vocabulary label with its skeleton, or, without a vocabulary or a match, its Latin
    spelling if it mixes scripts; else ``label`` itself."""
    if vocabulary is not None:
        if label in vocabulary:
            return label
        skeleton = label_skeleton(label)
        matches = [entry for entry in vocabulary if label_skeleton(entry) == skeleton]
        if len(matches) == 1:
            return matches[0]
    latin = latin_spelling(label)
    return label if latin is None else latin


def _written_label(data: dict[str, Any], label_keys: tuple[str, ...]) -> str | None:
    """The label of ``data`` as written, case and punctuation aside (see
    :func:`_label_form`); ``None`` when there is no label key (``UNCLEAR`` was assumed)."""
    value = _get(data, label_keys)
    return _label_form(value, fold=False) if isinstance(value, str) else None


def _describe_non_string(value: object) -> str:
    if value is None:
        return "null"
    name = {"array": "a list", "object": "an object"}.get(_type_name(value))
    return f"{name or 'a ' + _type_name(value)}, not a string"


def _read_reasoning(data: dict[str, Any], reasoning_keys: tuple[str, ...] = REASONING_KEYS) -> str:
    value = _get(data, reasoning_keys)
    if value is None:
        return ""
    if isinstance(value, str):
        return value[:_MAX_REASONING_CHARS]
    return str(value)[:_MAX_REASONING_CHARS]


def _copies_reasoning(reasoning: str, examples: tuple[ExampleAnswer, ...]) -> bool:
    """True when ``reasoning`` is the text of an example's reasoning."""
    mine = _comparable(reasoning)
    return bool(mine) and any(
        e.reasoning is not None and _comparable(e.reasoning) == mine for e in examples
    )


def _comparable(text: str) -> str:
    """``text`` with case, runs of whitespace and a final period ignored."""
    return " ".join(text.split()).casefold().rstrip(".").rstrip()


def _coerce_score(value: object) -> float | None:
    """A score in [0, 1] (number, numeric string or ``"NN%"``), else ``None``."""
    number: float
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        parsed = _parse_number_text(value)
        if parsed is None:
            return None
        number = parsed[0] / 100 if parsed[1] else parsed[0]
    elif isinstance(value, int):
        if not 0 <= value <= 1:
            return None
        number = float(value)
    elif isinstance(value, float):
        number = value
    else:
        return None
    # NaN fails both comparisons.
    if not 0.0 <= number <= 1.0:
        return None
    return number


def _parse_number_text(text: str) -> tuple[float, bool] | None:
    """``(number, is_percent)`` for a plain decimal string such as ``" 0.85"`` or ``"85 %"``."""
    text = text.strip()
    percent = text.endswith("%")
    if percent:
        text = text[:-1].rstrip()
    if len(text) > _MAX_NUMBER_CHARS or _NUMBER.fullmatch(text) is None:
        return None
    return float(text), percent
