"""The result models: a critic's :class:`Verdict`, a panel's :class:`EnsembleVerdict`.

The module name and the field names of ``Verdict`` are those of cross-judge 0.1, so stored
0.1 JSON loads unchanged and 0.1 code reading ``v.kind`` / ``v.verdict`` keeps working. New
fields all have defaults. These are plain data: no network, no parsing (see
:mod:`cross_judge.critic._parsing`), no voting (see :mod:`cross_judge.voting`).

Two things every layer above needs are defined here, next to the data they read:

* **What makes two labels one label**: :func:`clean_label_text` (NFKC, invisible characters
  removed), :data:`LATIN_LOOKALIKES` and :func:`label_skeleton` (Cyrillic and Greek letters
  drawn like Latin ones), :func:`latin_spelling` and :func:`lookalike_labels`, which the
  parser and the voting strategies apply (see :mod:`cross_judge.voting` for the rule).
* **What a result says when printed**: ``str()``, ``repr()`` and
  :attr:`EnsembleVerdict.outcome` name the consensus and, for every critic that did not
  vote, why (:func:`failure_reason`): never raising, never printing a control character
  a vendor sent, never a key-shaped string.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ._extensions import provider
from .errors import ErrorKind
from .rubric.models import MET_AT, CriterionConsensus, CriterionVerdict, Rubric

__all__ = [
    "ABSTAIN",
    "RESERVED_KINDS",
    "Answer",
    "ConfidenceSource",
    "EnsembleVerdict",
    "ItemText",
    "StructuredAsked",
    "Usage",
    "Verdict",
    "VerdictKind",
    "as_verdict",
    "call_totals",
    "default_query_id",
]

ConfidenceSource = Literal["stated", "logprob", "none"]
"""Where a verdict's ``confidence`` came from (:attr:`Verdict.confidence_source`)."""

StructuredAsked = Literal["schema", "tool", "json", "off"]
"""The answer shape a call asked for (:attr:`Verdict.structured`)."""

VerdictKind = Literal["KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR", "ERROR", "PARSE_FAIL"]
"""The default label vocabulary of cross-judge 0.1 (taxonomy review).

``kind`` itself is a free string: a critic may use ``PASS``/``FAIL`` or any vocabulary.
``ERROR`` and ``PARSE_FAIL`` are reserved for failed calls (see :data:`RESERVED_KINDS`).
"""

ABSTAIN = "ABSTAIN"
"""The consensus of an item a :class:`~cross_judge.cascade.Cascade` with ``final="abstain"``
leaves for a human: its last tier was not sure enough to decide."""

RESERVED_KINDS: frozenset[str] = frozenset({"ERROR", "PARSE_FAIL", "SKIPPED", ABSTAIN})
"""Labels that are not a critic's vote: ``ERROR``, ``PARSE_FAIL`` and ``SKIPPED`` mark failed
or unmade calls, ``ABSTAIN`` a cascade's "no decision". A model answering one of them is
rejected, and no prompt may list one as a label."""

# cross-judge 0.1 (and its legacy ``schema.Verdict``) used these names.
_LEGACY_ALIASES = {"verdict": "kind", "rationale": "reasoning", "reviewer_id": "critic_id"}


_QUERY_ID_CHARS = 80


def default_query_id(query: str) -> str:
    """An id for ``query``: the query itself up to 80 characters (as in 0.1), else its
    first 64 characters, ``#`` and 12 hex digits of its sha256, so long queries sharing a
    prefix never collide (0.1 truncated them to 80 characters)."""
    if len(query) <= _QUERY_ID_CHARS:
        return query
    digest = hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{query[:64]}#{digest}"


# -- what makes two labels one label ----------------------------------------------------------

LATIN_LOOKALIKES: Mapping[str, str] = MappingProxyType(
    {
        # Cyrillic capitals and small letters drawn like Latin ones
        **dict(zip("АВЕЅІЈКМНОРСТХУҮӀԚԜѴ", "ABESIJKMHOPCTXYYIQWV", strict=True)),
        **dict(zip("аеорсхуѕіјԛԝһԁӏѵ", "aeopcxysijqwhdlv", strict=True)),
        # Greek capitals and small letters drawn like Latin ones
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
        **dict(zip("οναιρυ", "ovaipu", strict=True)),
    }
)
"""Cyrillic and Greek letters that look like a Latin letter in common fonts, mapped to it:
the Latin look-alikes of UTS #39's confusables among the letters a label is written in.
Deliberately small: digits, symbols and other scripts are not folded."""

# Default_Ignorable_Code_Point (Unicode 15) outside category Cf, which is checked apart:
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation
# selectors, variation selectors, reserved ignorables and tag variation selectors.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)
_LATIN = "LATIN"


def _invisible(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char) == "Cf" or any(
        low <= code <= high for low, high in _IGNORABLE_RANGES
    )


def clean_label_text(text: str) -> str:
    """``text`` in NFKC with every invisible character removed: format characters
    (category Cf: zero-width spaces and joiners, the BOM, the soft hyphen, direction
    marks and overrides, tags) and the other default-ignorable code points (variation
    selectors, Hangul fillers, ...). Case, spaces and punctuation are kept.

    Fullwidth ``ＫＥＥＰ`` and mathematical bold ``𝐊𝐄𝐄𝐏`` give ``KEEP``; ``KE\\u200bEP``
    gives ``KEEP``. ASCII text comes back as it is, at once. Idempotent: removing a
    character can let NFKC compose what it separated, so both steps repeat until nothing
    changes. Runs in linear time.
    """
    if text.isascii():
        return text
    for _ in range(4):
        cleaned = unicodedata.normalize("NFKC", "".join(c for c in text if not _invisible(c)))
        if cleaned == text:
            break
        text = cleaned
    return text


def label_skeleton(label: str) -> str:
    """What ``label`` looks like: :func:`clean_label_text`, then every letter of
    :data:`LATIN_LOOKALIKES` replaced by the Latin letter it imitates. Two labels that
    differ but share a skeleton are *look-alikes* (``KEEP``, ``КЕЕР`` in Cyrillic,
    ``KE\\u200bEP``). Case is kept: ``keep`` and ``KEEP`` are not look-alikes."""
    cleaned = clean_label_text(label)
    if cleaned.isascii():
        return cleaned
    return "".join(LATIN_LOOKALIKES.get(c, c) for c in cleaned)


def _script(char: str) -> str | None:
    """The script of a letter, from its Unicode name (``LATIN``, ``CYRILLIC``, ``GREEK``,
    ``CJK``, ...); ``None`` for a character that is not a letter."""
    if not char.isalpha():
        return None
    if char.isascii():
        return _LATIN
    return unicodedata.name(char, "?").split(" ", 1)[0]


def latin_spelling(label: str) -> str | None:
    """The Latin spelling of a label that mixes scripts only by look-alike letters, else
    ``None``.

    A label whose letters come from more than one script, and whose letters outside the
    Latin script are all in :data:`LATIN_LOOKALIKES` (``КEEP`` with a Cyrillic ``К``,
    ``ΚЕЕР`` mixing Greek and Cyrillic), is no word of any language: it is read as the
    Latin label it imitates. A label in one script (``НЕТ``, Russian "no") or with a
    letter that has no Latin look-alike (``ТИП_A``) gives ``None``.
    """
    if label.isascii():
        return None
    scripts = {_script(c) for c in label} - {None}
    if len(scripts) < 2:
        return None
    if any(_script(c) not in (None, _LATIN) and c not in LATIN_LOOKALIKES for c in label):
        return None
    return "".join(LATIN_LOOKALIKES.get(c, c) for c in label)


def _cleaned(label: str) -> str:
    """``label`` as the parser would have read it, case aside: invisible characters and
    compatibility forms folded (:func:`clean_label_text`), a mixed-script look-alike in its
    Latin spelling (:func:`latin_spelling`)."""
    cleaned = clean_label_text(label)
    latin = latin_spelling(cleaned)
    return cleaned if latin is None else latin


def lookalike_labels(labels: Iterable[str], known: Sequence[str] = ()) -> dict[str, str]:
    """The labels of one vote that must be counted as another label: ``{label: label it
    counts as}``, only for those that change; empty when no two labels are look-alikes.

    Each label is first read as the parser reads one (invisible characters and
    compatibility forms folded; a label mixing Latin letters with Cyrillic or Greek
    look-alikes in its Latin spelling). Then labels sharing a :func:`label_skeleton` are
    one label, spelt as the first of ``known`` with that skeleton (the labels the vote
    names: priority, pass and fail labels, ...), else as the Latin spelling if one was
    given, else as the most common spelling (the first given on a tie). A label in another
    script that no other label and no known label imitates (``НЕТ``) stays as it is.

    Only ASCII labels and known labels: nothing to fold, answered at once.
    """
    given = list(labels)
    if all(label.isascii() for label in given) and all(k.isascii() for k in known):
        return {}
    cleaned = {label: _cleaned(label) for label in dict.fromkeys(given)}
    counts = Counter(cleaned[label] for label in given)
    groups: dict[str, list[str]] = {}
    for spelling in counts:  # first-given order
        groups.setdefault(label_skeleton(spelling), []).append(spelling)
    named: dict[str, str] = {}
    for label in known:
        named.setdefault(label_skeleton(label), label)
    spelt: dict[str, str] = {}
    for skeleton, spellings in groups.items():
        target = named.get(skeleton)
        if target is None:
            target = skeleton if skeleton in spellings else max(spellings, key=counts.__getitem__)
        spelt.update(dict.fromkeys(spellings, target))
    return {
        label: spelt[spelling] for label, spelling in cleaned.items() if spelt[spelling] != label
    }


class Usage(BaseModel):
    """Token counts of one call (or, summed, of many).

    ``prompt_tokens`` counts every input token, including those read from or written to
    the vendor's prompt cache; ``cache_read_tokens`` and ``cache_write_tokens`` are those
    parts (OpenAI's ``cached_tokens``, DeepSeek's ``prompt_cache_hit_tokens``, Anthropic's
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens``), priced differently.
    ``total_tokens`` defaults to prompt + completion when a vendor leaves it out.
    ``reasoning_tokens`` is the part of ``completion_tokens`` a reasoning model spent
    thinking (OpenAI's ``completion_tokens_details.reasoning_tokens``, the same field on
    DeepSeek and most OpenAI-compatible servers), priced at the model's reasoning rate when
    it has one (:class:`~cross_judge.pricing.Price`); 0 when the vendor does not say
    (Anthropic counts thinking in ``output_tokens`` without a separate figure). Left out of
    dumps when 0.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: NonNegativeInt = 0
    completion_tokens: NonNegativeInt = 0
    total_tokens: NonNegativeInt = 0
    cache_read_tokens: NonNegativeInt = 0
    cache_write_tokens: NonNegativeInt = 0
    reasoning_tokens: NonNegativeInt = 0

    @model_validator(mode="after")
    def _fill_total(self) -> Usage:
        if self.total_tokens == 0 and (self.prompt_tokens or self.completion_tokens):
            object.__setattr__(self, "total_tokens", self.prompt_tokens + self.completion_tokens)
        return self

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @model_serializer(mode="wrap")
    def _omit_zero_reasoning(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.reasoning_tokens:
            data.pop("reasoning_tokens", None)
        return data


class Answer(BaseModel):
    """One of the answers behind a :class:`Verdict` that took more than one call: a pair
    judged in both orders (:class:`~cross_judge.ensemble.Ensemble` with ``order="both"``),
    or one of a critic's samples (``Critic(samples=n)``).

    ``kind`` is in the item's own names (``A`` is candidate ``a`` whatever the order shown);
    ``answered`` is the label as the model wrote it, in the order it was shown (``order``:
    ``"ab"``, candidate ``a`` first, or ``"ba"``; ``None`` for an item that is not a
    pair, whose ``answered`` is its ``kind``). A failed call has ``kind`` ``ERROR``,
    ``PARSE_FAIL`` or ``SKIPPED`` and its ``error``.
    """

    kind: str
    answered: str
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    order: Literal["ab", "ba"] | None = None
    reasoning: str = ""
    raw_response: str | None = None
    error: str | None = None

    @classmethod
    def of(
        cls,
        verdict: Verdict,
        *,
        answered: str | None = None,
        order: Literal["ab", "ba"] | None = None,
    ) -> Answer:
        """``verdict`` as one answer among several; ``answered`` defaults to its kind."""
        return cls(
            kind=verdict.kind,
            answered=verdict.kind if answered is None else answered,
            confidence=verdict.confidence,
            order=order,
            reasoning=verdict.reasoning,
            raw_response=verdict.raw_response,
            error=verdict.error,
        )


def call_totals(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """What the calls behind one verdict add up to, as fields of the combined verdict:
    ``usage`` summed (``None`` if no call reported any), ``cost_usd`` summed (``None`` if
    any is unknown), ``attempts`` summed, ``elapsed_s`` the longest (they ran at once),
    ``cached`` only when every one was, and ``raw_response`` ``None`` (the raw answers are
    in ``answers``)."""
    usage: Usage | None = None
    for v in verdicts:
        if v.usage is not None:
            usage = v.usage if usage is None else usage + v.usage
    costs = [v.cost_usd for v in verdicts]
    return {
        "usage": usage,
        "cost_usd": None if any(c is None for c in costs) else sum(c for c in costs if c),
        "cost_estimates": sum(v.cost_estimates for v in verdicts),
        "attempts": sum(v.attempts for v in verdicts),
        "elapsed_s": max((v.elapsed_s for v in verdicts), default=0.0),
        "cached": all(v.cached for v in verdicts),
        "raw_response": None,
    }


class Verdict(BaseModel):
    """One critic's verdict on one item. Never an exception: failures are verdicts too.

    A verdict is *valid* (a vote) iff ``error is None``. A failed call has
    ``kind="ERROR"``; text that holds no usable verdict has ``kind="PARSE_FAIL"``; both set
    ``error`` (a human-readable message) and ``error_kind`` (an :class:`ErrorKind`).

    cross-judge 0.1 compatibility:

    * ``verdict``, ``rationale`` and ``reviewer_id`` are read-only aliases of ``kind``,
      ``reasoning`` and ``critic_id``, and are accepted as constructor keywords (the
      caller's dict is never modified). When both names are given, the new one wins.
    * Unknown keywords are kept (``extra="allow"``).
    * ``confidence`` must be in [0, 1] when constructed directly; the parser clamps what a
      model writes. A missing confidence is ``0.0``, as in 0.1.

    ``stated_confidence`` is what the model said when ``confidence`` was calibrated (by a
    critic with a ``calibration``, or :func:`cross_judge.reliability.apply_calibration`);
    ``None`` when ``confidence`` is the model's own number.

    ``confidence_stated`` is False for a vote whose answer gave no usable confidence (none,
    or one such as ``"high"`` or NaN): its ``confidence`` is then the placeholder 0.0, not
    a stated 0.0, and the calibration statistics (Brier score, ECE,
    :func:`~cross_judge.reliability.calibrate_confidence`) leave it out. Failed and skipped
    calls (``ERROR``, ``PARSE_FAIL``, ``SKIPPED``) keep the default True: they are not votes
    and no statistic reads their confidence. The flag is left out of ``model_dump()`` and
    ``model_dump_json()`` when True, so results files and 0.1-style dumps are unchanged for
    verdicts that stated a confidence, and a line written before the flag existed loads as
    stated; it is written only as ``"confidence_stated": false``.

    ``cost_estimates`` counts the calls behind this verdict whose vendor reported no usable
    usage (none, or zero tokens): their ``cost_usd`` share is the call's worst case
    (:func:`cross_judge.pricing.worst_case_cost`), the amount a budget reserved for it,
    not a measured cost. 0 (the default, left out of dumps) when the cost is the reported
    usage at known prices.

    Set only for a pair (see :class:`~cross_judge.ensemble.Ensemble`'s ``order``):
    ``order``, the order the candidates were shown in (``"ab"``: ``a`` first; ``"ba"``;
    ``"both"``: both orders stand); ``kind`` is always in the item's own names (``A`` is
    ``a``). With ``order="both"`` asked: ``answers``, the raw answer of each order
    (:class:`Answer`), and ``flipped``, True when the two orders disagreed once mapped back
    (``None`` when fewer than two answers are valid: the one that stands then gives
    ``order``, ``"ab"`` or ``"ba"``). Left out of dumps when unset.

    Set only by a critic with ``samples=n > 1`` (self-consistency, see
    :func:`cross_judge.core.combine_samples`): ``answers``, the ``n`` sampled answers (``2n``
    for a pair judged in both orders, each with its ``order``), and ``self_agreement``, the
    share of the valid answers that give the most common label (for one item, the voted
    label): 1.0 when the critic always said the same. ``None`` for a single call, and when
    no answer is valid; left out of dumps when ``None``. It measures a critic against
    itself, not against the other critics.

    ``written_label`` is the label as the answer wrote it (upper-cased, punctuation
    stripped), set only when ``kind`` was read from it by folding characters: invisible
    ones, compatibility forms (fullwidth letters), or Cyrillic and Greek look-alikes of
    Latin letters (by the parser, or by a vote that counted it as a look-alike of another
    label: see :func:`lookalike_labels`). ``None`` otherwise, and left out of dumps then.

    ``confidence_source`` says where ``confidence`` came from: ``"stated"``, the number the
    model wrote (the default, and what every verdict written before the field existed
    had); ``"logprob"``, the probability the model gave the chosen label at the token
    where it was decided, renormalised over the label vocabulary
    (``Critic(confidence="logprob")``); ``"none"``, no confidence (a vote that stated none
    and had no token probabilities, and every failed or skipped call). Left out of dumps
    when ``"stated"``. ``confidence_bounded`` is True when a ``"logprob"`` confidence was
    partly decided by a bound: a label the vendor's top token list left out was given the
    most the list allows it (the smallest probability listed), so the confidence is the
    least the list allows rather than a certainty the vendor never reported; left out of
    dumps when False.

    ``structured`` is the answer shape the call asked for when the critic sets
    ``structured=`` (``"schema"``, ``"tool"``, ``"json"`` or ``"off"``: after any step
    down ``structured="auto"`` made for the endpoint); ``None``, and left out of dumps,
    otherwise.

    ``criteria`` is set by a critic judging with a rubric (a prompt with ``criteria``): its
    answer on each criterion it was asked, by criterion id
    (:class:`~cross_judge.rubric.CriterionVerdict`). ``kind`` is then ``PASS``/``FAIL`` by
    the critic's own weighted total (``score``), counted over the criteria it answered.
    ``None``, and left out of dumps, otherwise.

    ``render_cut`` says what the critic's prompt left out of the item's conversation or
    trajectory to stay within its limits (one mapping per rendering: ``field``,
    ``entries``, ``shown``, ``omitted`` ranges of 1-based numbers, ``values_cut``,
    ``chars_cut``; see :class:`cross_judge.content.RenderCut`); ``None``, and left out of
    dumps, when nothing was cut.

    ``model_dump_json()`` / ``model_validate_json()`` round-trip every field losslessly.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: str
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    reasoning: str = ""
    critic_id: str = ""
    raw_response: str | None = None
    error: str | None = None
    elapsed_s: float = 0.0
    error_kind: ErrorKind | None = None
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    usage: Usage | None = None
    cost_usd: float | None = Field(default=None, ge=0.0)
    model: str | None = None
    vendor: str | None = None
    prompt_id: str | None = None
    prompt_version: str | None = None
    prompt_sha256: str | None = None
    attempts: NonNegativeInt = 0
    cached: bool = False
    cost_estimates: NonNegativeInt = 0
    stated_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence_stated: bool = True
    order: Literal["ab", "ba", "both"] | None = None
    answers: list[Answer] | None = None
    flipped: bool | None = None
    self_agreement: float | None = Field(default=None, ge=0.0, le=1.0)
    written_label: str | None = None
    confidence_source: ConfidenceSource = "stated"
    confidence_bounded: bool = False
    structured: StructuredAsked | None = None
    criteria: dict[str, CriterionVerdict] | None = None
    render_cut: list[dict[str, Any]] | None = None

    # The token probabilities a logprob confidence was read from, kept (never dumped) so
    # that the response cache can store them with the answer: a hit then gives the same
    # confidence. Typed loosely: the token type belongs to the transport layer.
    _logprobs: tuple[Any, ...] | None = PrivateAttr(default=None)

    def keep_logprobs(self, tokens: tuple[Any, ...] | None) -> None:
        """Keep ``tokens`` (a completion's token probabilities) with this verdict for the
        response cache; ``None`` forgets them. Never part of a dump or a comparison."""
        self._logprobs = tokens

    def kept_logprobs(self) -> tuple[Any, ...] | None:
        """The token probabilities kept by :meth:`keep_logprobs`, if any."""
        return self._logprobs

    @model_validator(mode="before")
    @classmethod
    def _accept_legacy_names(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(k in data for k in _LEGACY_ALIASES):
            return data
        data = dict(data)  # never mutate the caller's dict (0.1 did)
        for old, new in _LEGACY_ALIASES.items():
            if old in data:
                value = data.pop(old)
                data.setdefault(new, value)
        return data

    @model_serializer(mode="wrap")
    def _omit_defaults_of_new_fields(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        # Written only when set: every results line of a plain verdict stays as it was
        # before these fields existed (about 1 us per verdict, far below any call).
        data: dict[str, Any] = handler(self)
        if self.confidence_stated:
            data.pop("confidence_stated", None)
        if self.order is None:
            for name in ("order", "answers", "flipped"):
                if data.get(name) is None:
                    data.pop(name, None)
        for name in ("self_agreement", "written_label", "structured", "criteria", "render_cut"):
            if data.get(name) is None:
                data.pop(name, None)
        if self.confidence_source == "stated":
            data.pop("confidence_source", None)
        if not self.confidence_bounded:
            data.pop("confidence_bounded", None)
        if not self.cost_estimates:
            data.pop("cost_estimates", None)
        return data

    @property
    def verdict(self) -> str:
        """Alias of :attr:`kind` (cross-judge 0.1)."""
        return self.kind

    @property
    def rationale(self) -> str:
        """Alias of :attr:`reasoning` (cross-judge 0.1)."""
        return self.reasoning

    @property
    def reviewer_id(self) -> str:
        """Alias of :attr:`critic_id` (cross-judge 0.1)."""
        return self.critic_id

    @property
    def is_valid(self) -> bool:
        """True when this verdict is a vote (``error is None``)."""
        return self.error is None

    def _repr_html_(self) -> str:
        """A one-row table for Jupyter (see :func:`cross_judge.report._notebook.verdict_html`)."""
        html: str = provider("verdict_html")(self)
        return html


def as_verdict(value: Any) -> Verdict:
    """``value`` as a :class:`Verdict`, for code that receives verdicts from callers.

    A :class:`Verdict` is returned as is; a legacy ``LegacyVerdict``
    (:class:`cross_judge.schema.Verdict`, or anything with a ``to_verdict()`` method) is
    converted, so the new core accepts 0.1's verdicts (0.1 raised ``AttributeError``, bug
    B12). Any other object is returned unchanged: duck-typed verdicts keep working where
    they worked before.
    """
    if isinstance(value, Verdict):
        return value
    convert = getattr(value, "to_verdict", None)
    return cast(Verdict, convert() if callable(convert) else value)


# -- what a result says when printed ----------------------------------------------------------

_FAILURE_WORDS = {
    "timeout": "timed out",
    "rate_limit": "rate limited",
    "server": "server error",
    "auth": "API key rejected",
    "bad_request": "request rejected",
    "connection": "connection failed",
    "invalid_response": "invalid response",
    "empty": "empty answer",
    "refusal": "the model refused",
    "parse": "unreadable answer",
    "missing_key": "missing API key",
    "cancelled": "cancelled",
    "internal": "internal error",
    "early_stop": "not asked (early stop)",
    "budget": "not asked (over budget)",
    "self_preference": "sat out (a candidate of its own family)",
    "batch": "no answer from the batch API",
    "no_vision": "abstained (cannot see the item's images)",
    "too_large": "abstained (the request is over the vendor's size limit)",
}
_MESSAGE_PREFIXES = ("parse_fail: ", "refusal: ", "internal: ")
_REFUSED = re.compile(r"(?i)refused|errno 111\b|econnrefused|connect call failed|winerror 10061")
_KEY_VARIABLE = re.compile(r"set the (\w+) environment variable")
_EXCEPTION_NAME = re.compile(r"^\w*(?:Error|Exception): (?=\S)")
# Error messages are redacted where they are made (the wire layer knows the key); this
# base-layer net also hides anything shaped like a key that reached a verdict another way
# (a hand-built or stored verdict), so printing a result can never show one.
_KEY_SHAPED = re.compile(
    r"(?i)\b(?:sk-[a-z0-9_\-]{6,}|bearer\s+[a-z0-9._\-]{8,}|AIza[0-9a-z_\-]{20,})"
)
_SKIPPED = "SKIPPED"
_CLIP = 200


def _printable(value: object, limit: int = _CLIP) -> str:
    """``value`` as one line of plain text: key-shaped strings hidden, whitespace folded,
    every other unprintable character (terminal escapes, lone surrogates, direction
    overrides) shown as its ``\\x..`` / ``\\u....`` escape, cut to ``limit`` characters."""
    text = _KEY_SHAPED.sub("[REDACTED]", value if isinstance(value, str) else str(value))
    if not text.isprintable():
        text = "".join(
            c
            if c.isprintable()
            else " "
            if c.isspace()
            else c.encode("unicode_escape", "backslashreplace").decode("ascii")
            for c in text
        )
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_vote(verdict: Verdict) -> bool:
    return verdict.error is None and verdict.kind != _SKIPPED


def _kind_value(verdict: Verdict) -> str:
    kind = verdict.error_kind
    return str(getattr(kind, "value", kind or ""))


def _who(verdict: Verdict) -> str:
    """``critic (vendor/model)``, as far as the verdict says."""
    name = _printable(verdict.critic_id or "?", 60)
    where = "/".join(_printable(p, 60) for p in (verdict.vendor, verdict.model) if p)
    return f"{name} ({where})" if where else name


def failure_reason(verdict: Verdict) -> str | None:
    """Why ``verdict`` is not a vote, in words and on one line; ``None`` for a vote.

    The :class:`~cross_judge.errors.ErrorKind` in words (``timed out``, ``API key
    rejected``, ``missing API key``, ...), then the message without the prefix that
    repeats the kind, cut to 200 characters: ``"missing API key (set DEEPSEEK_API_KEY or
    pass api_key=...)"``, ``"connection refused: Cannot connect to host localhost:11434
    ..."`` (``refused`` when the message says the connection was refused, ``failed``
    otherwise). A verdict without an ``error_kind`` gives its message. Control characters
    are escaped and key-shaped strings hidden, whatever the message holds.
    """
    if verdict.error is None:
        return None
    kind = _kind_value(verdict)
    message = str(verdict.error)
    for prefix in (f"{kind}: ", *_MESSAGE_PREFIXES):
        if kind and message.startswith(prefix):
            message = message[len(prefix) :]
            break
    words = _FAILURE_WORDS.get(kind, kind.replace("_", " ") or "failed")
    if kind == "missing_key":
        variable = _KEY_VARIABLE.search(message)
        if variable is not None:
            return f"missing API key (set {variable[1]} or pass api_key=...)"
    if kind == "connection":
        if _REFUSED.search(message):
            words = "connection refused"
        # "ClientConnectorError: Cannot connect to host ..." says it twice.
        message = _EXCEPTION_NAME.sub("", message, count=1) or message
    detail = _printable(message)
    if not detail or detail.lower().replace(" ", "_") in (kind, "empty_response"):
        return words
    return f"{words}: {detail}"


class ItemText(BaseModel):
    """The text of the item a result judged, stored with the result by the batch entry
    points (``judge_many``, ``stream``, ``cross-judge review``) so that a report can show
    what was judged.

    ``query`` and ``context`` are the item's, each text kept up to a cap (see
    :data:`cross_judge.batch._items.ITEM_TEXT_CAP`) and, past it, cut with a visible marker;
    ``cut`` names what was cut (``"query"``, ``"context.<key>"``), empty when all is whole.
    Context values are kept as the critics saw them: text, numbers and booleans as they
    are, anything else as its ``str()``.

    An item with structure also stores, under the same caps (and only when it has them,
    so a plain item's record is as it always was): ``reference`` and
    ``counter_reference``; ``messages``, one mapping per turn (``role``, ``content``, and
    when set ``tool_calls``, ``name``, ``tool_call_id``, ``images``); ``trajectory``, one
    mapping per step (``kind``: ``tool_call`` with ``name``, ``arguments``, ``result`` or
    ``error``, ``id``; ``message`` or ``final_answer`` with ``text``); ``images``, each
    image described (type, size, sha256, source or URL: never its bytes). A cut value is
    named in ``cut`` by its path (``"trajectory[7].result"``, 0-based); turns or steps
    past the item's total cap are left out whole, from the end, their count in
    ``left_out`` (``{"trajectory": 94}``) and the first left out in ``cut``
    (``"trajectory[40:]"``), so the stored entries keep their numbers (entry ``i`` is
    turn or step ``i + 1``).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    query: str
    context: dict[str, Any] = Field(default_factory=dict)
    cut: list[str] = Field(default_factory=list)
    reference: str | None = None
    counter_reference: str | None = None
    messages: list[dict[str, Any]] | None = None
    trajectory: list[dict[str, Any]] | None = None
    images: list[dict[str, Any]] | None = None
    left_out: dict[str, int] | None = None

    @property
    def structured(self) -> bool:
        """The stored item has a reference, turns, steps or images."""
        return any(getattr(self, name) is not None for name in _ITEM_STRUCTURE)


_ITEM_STRUCTURE = (
    "reference",
    "counter_reference",
    "messages",
    "trajectory",
    "images",
    "left_out",
)


class EnsembleVerdict(BaseModel):
    """A panel's result for one item: every critic's verdict and the consensus.

    ``print(result)`` says what was decided and, for every critic that gave no vote, why
    (:attr:`outcome`); ``repr()`` is one line ending with the same.

    The first nine fields are cross-judge 0.1's. Statistics follow 0.1 and count only
    valid verdicts (``error is None``): ``avg_confidence`` and ``agreement_pct`` are over
    valid verdicts (0.0 when there is none), and ``krippendorff_alpha`` is 0.1's per-item
    value, which can only be ``None`` (fewer than two valid verdicts), ``1.0`` (all agree)
    or ``0.0`` (any disagreement, give or take 4e-16 of rounding). It is an "all agree?"
    flag kept for compatibility; for reliability use
    :func:`cross_judge.agreement.reliability_alpha` over a batch of items.

    New fields: ``score`` (the aggregate score of score strategies such as ``average``;
    ``None`` for label strategies), ``n_valid`` / ``n_errors`` (ERROR and PARSE_FAIL
    verdicts), ``calls_saved`` (critics cancelled by early stop, ``kind="SKIPPED"``, which
    no statistic counts), ``dissenters`` (critic ids of valid verdicts against the
    consensus), ``usage`` and ``cost_usd`` totals (``cost_usd`` is ``None`` unless every
    call made has a known cost), ``elapsed_s`` (wall time of the whole judgement),
    ``fallback`` (True when no vote decided and ``consensus`` is the strategy's fallback
    label: no valid verdict, quorum not met, no unanimity; a ``UNCLEAR`` the critics voted
    for has it False).

    Set by a :class:`~cross_judge.cascade.Cascade` only: ``tier``, the index of the tier
    that decided (or abstained), and ``tiers``, each asked tier's own result in tier order.
    A cascade's ``verdicts``, ``usage``, ``cost_usd`` and ``elapsed_s`` cover every tier
    asked; ``consensus`` and the vote statistics are the deciding tier's.

    Set for a pair (an item whose context holds ``response_a`` and ``response_b``) only:
    ``pair_lengths``, the two candidates' lengths in characters (``[a, b]``), which the
    length-bias statistics read. Written to results files only when set.

    Set by the batch entry points unless told not to (``item_text=False``,
    ``review --no-item-text``): ``item``, the text judged (:class:`ItemText`). Written to
    results files only when set; results stored without it read back with ``None``.
    """

    model_config = ConfigDict(extra="allow")

    query_id: str
    verdicts: list[Verdict]
    consensus: str
    avg_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    disagreement: bool = False
    agreement_pct: float = Field(default=0.0, ge=0.0, le=1.0)
    krippendorff_alpha: float | None = None
    voting: str
    meta: dict[str, Any] = Field(default_factory=dict)
    score: float | None = None
    n_valid: NonNegativeInt = 0
    n_errors: NonNegativeInt = 0
    calls_saved: NonNegativeInt = 0
    dissenters: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    elapsed_s: float = 0.0
    fallback: bool = False
    tier: NonNegativeInt | None = None
    tiers: list[EnsembleVerdict] | None = None
    pair_lengths: list[NonNegativeInt] | None = None
    item: ItemText | None = None
    criteria: dict[str, CriterionConsensus] | None = None
    rubric: Rubric | None = None

    @model_serializer(mode="wrap")
    def _omit_unset_pair(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in ("pair_lengths", "item", "criteria", "rubric"):
            if getattr(self, name) is None:
                data.pop(name, None)
        stored = data.get("item")
        if stored is not None:
            # A plain item's record stays as it was: the structure's fields only when set.
            for name in _ITEM_STRUCTURE:
                if stored.get(name, 0) is None:
                    del stored[name]
        return data

    @property
    def disputed_criteria(self) -> list[str]:
        """The ids of the criteria the valid answers did not agree on (rubric panels;
        empty otherwise)."""
        return [cid for cid, c in (self.criteria or {}).items() if c.disputed]

    def _repr_html_(self) -> str:
        """The consensus and one row per critic verdict, for Jupyter (see
        :func:`cross_judge.report._notebook.ensemble_html`)."""
        html: str = provider("ensemble_html")(self)
        return html

    @property
    def outcome(self) -> str:
        """What was decided and why, on one line; what ``str()`` says without the item id,
        and what ``repr()`` ends with.

        * No valid vote: ``"no critic answered (UNCLEAR is the fallback, not a vote): "``,
          then each critic (``name (vendor/model)``) and why it gave no vote (see
          :func:`failure_reason`), ``"; "`` between them. No verdict at all: ``"no critic
          was asked ..."``.
        * A fallback despite votes (no quorum, no unanimity, a tie left to abstain): ``"no
          consensus (UNCLEAR is the fallback; votes: KEEP 1, REJECT 1)"``.
        * Decided: ``"KEEP (majority, 2 of 3 valid votes)"`` (a score strategy gives its
          score; a cascade its deciding tier, whose votes are counted).
        * A rubric panel: ``"PASS (majority per criterion, total 0.83 >= 0.50; disputed:
          cites)"`` (a gate not met named too), then a line per disputed or undecided
          criterion (``cites: PASS 2 of 3 (against: b voted FAIL)``) and per answer that
          failed on one criterion (``failed on cites: b: unreadable answer``).

        Then, ``"; "``-separated: the critics against the consensus (``against: b voted
        REJECT``), each failed or skipped call (``failed: c (openai/gpt-4o-mini): timed
        out: ...``), the calls saved by early stop, and each look-alike label counted as
        another (``look-alike label: a wrote 'КEEP', counted as KEEP``). Never raises;
        every text from a critic or a vendor is shown escaped, cut and without key-shaped
        strings.
        """
        headline, details, unanswered = self._explained()
        if not details:
            return headline
        return headline + (": " if unanswered else "; ") + "; ".join(details)

    def __str__(self) -> str:
        """``<item id>: <what was decided>``, then one indented line per detail (see
        :attr:`outcome`): what ``print(result)`` shows."""
        headline, details, _ = self._explained()
        lines = [f"{_printable(self.query_id, 80)}: {headline}"]
        lines.extend(f"  {detail}" for detail in details)
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line: the item id, consensus, voting, agreement, counts and :attr:`outcome`
        (every field is in ``model_dump()``)."""
        parts = [
            f"query_id={_printable(self.query_id, 80)!r}",
            f"consensus={_printable(self.consensus, 80)!r}",
            f"voting={_printable(self.voting, 80)!r}",
            f"agreement_pct={self.agreement_pct!r}",
            f"n_valid={self.n_valid!r}",
            f"n_errors={self.n_errors!r}",
        ]
        if self.score is not None:
            parts.append(f"score={self.score!r}")
        if self.tier is not None:
            parts.append(f"tier={self.tier!r}")
        parts.append(f"outcome={self.outcome!r}")
        return f"EnsembleVerdict({', '.join(parts)})"

    def _explained(self) -> tuple[str, list[str], bool]:
        """``(headline, details, no critic answered)`` for :attr:`outcome` and ``str()``."""
        consensus = _printable(self.consensus, 80)
        role = "the fallback, not a vote" if self.fallback else "the consensus"
        if not self.verdicts:
            return f"no critic was asked ({consensus} is {role})", [], False
        if not any(_is_vote(v) for v in self.verdicts):
            reasons = [f"{_who(v)}: {failure_reason(v) or 'no vote'}" for v in self.verdicts]
            return f"no critic answered ({consensus} is {role})", reasons, True
        deciding = self
        if self.tiers and self.tier is not None and self.tier < len(self.tiers):
            deciding = self.tiers[self.tier]
        votes = [v for v in deciding.verdicts if _is_vote(v)]
        where = f", tier {self.tier}" if self.tier is not None else ""
        details: list[str] = []
        if self.criteria is not None:
            headline, details = self._rubric_explained(where)
        elif self.fallback:
            counts = Counter(_printable(v.kind, 40) for v in votes)
            tally = ", ".join(f"{label} {n}" for label, n in counts.items()) or "none"
            headline = f"no consensus ({consensus} is the fallback{where}; votes: {tally})"
        else:
            voting = _printable(self.voting, 40)
            if self.score is not None:
                count = f"score {self.score:.2f}, {len(votes)} valid votes"
            else:
                agree = sum(1 for v in votes if v.kind == self.consensus)
                count = f"{agree} of {len(votes)} valid votes"
            headline = f"{consensus} ({voting}{where}, {count})"
            against = [
                f"{_who(v)} voted {_printable(v.kind, 40)}"
                for v in votes
                if v.kind != self.consensus
            ]
            if against:
                details.append("against: " + ", ".join(against))
        saved = 0
        for v in self.verdicts:
            if _is_vote(v):
                continue
            if _kind_value(v) == "early_stop":
                saved += 1
                continue
            what = "skipped" if v.kind == _SKIPPED else "failed"
            details.append(f"{what}: {_who(v)}: {failure_reason(v) or 'no vote'}")
        if saved:
            details.append(f"{saved} call{'s' if saved > 1 else ''} saved by early stop")
        for v in self.verdicts:
            if v.written_label is not None and _is_vote(v):
                details.append(
                    f"look-alike label: {_printable(v.critic_id or '?', 60)} wrote "
                    f"{_printable(v.written_label, 60)!r}, counted as {_printable(v.kind, 60)}"
                )
        return headline, details, False

    def _rubric_explained(self, where: str) -> tuple[str, list[str]]:
        """The headline and per-criterion lines of a rubric panel's result: the consensus
        with the total against the pass mark (a gate not met and the disputed criteria
        named), then for each disputed or undecided criterion its votes and dissenters,
        and each answer that failed on one criterion only."""
        criteria = self.criteria or {}
        rubric = self.rubric

        def names(ids: Iterable[str]) -> str:
            return ", ".join(_printable(cid, 40) for cid in ids)

        consensus = _printable(self.consensus, 80)
        undecided = [cid for cid, c in criteria.items() if c.fallback]
        disputed = [cid for cid, c in criteria.items() if c.disputed and not c.fallback]
        notes: list[str] = []
        if self.fallback or self.score is None:
            head = f"no consensus ({consensus} is the fallback{where}"
            if undecided:
                notes.append(f"undecided: {names(undecided)}")
        else:
            total = f"total {self.score:.2f}"
            if rubric is not None:
                total += f" {'>=' if rubric.passes(self.score) else '<'} {rubric.threshold:.2f}"
                if len(criteria) < len(rubric.ids):
                    total += f" over {len(criteria)} of {len(rubric.ids)} criteria"
                gates = [
                    c.id
                    for c in rubric.criteria
                    if c.gate
                    and c.id in criteria
                    and (score := criteria[c.id].score) is not None
                    and score < MET_AT
                ]
                if gates:
                    notes.append(f"gate not met: {names(gates)}")
            head = f"{consensus} ({_printable(self.voting, 40)} per criterion{where}, {total}"
        if disputed:
            notes.append(f"disputed: {names(disputed)}")
        details: list[str] = []
        for cid, result in criteria.items():
            source = self.verdicts
            if self.tiers and result.tier is not None and result.tier < len(self.tiers):
                source = self.tiers[result.tier].verdicts
            answered = [(v, v.criteria[cid]) for v in source if v.criteria and cid in v.criteria]
            votes = [(v, a) for v, a in answered if a.error is None and a.kind != _SKIPPED]
            label = _printable(cid, 40)
            if result.fallback:
                counts = Counter(_printable(a.kind, 40) for _, a in votes)
                tally = ", ".join(f"{kind} {n}" for kind, n in counts.items()) or "none"
                details.append(f"{label}: undecided (votes: {tally})")
            elif result.disputed:
                agree = sum(1 for _, a in votes if a.kind == result.consensus)
                against = ", ".join(
                    f"{_who(v)} voted {_printable(a.kind, 40)}"
                    for v, a in votes
                    if a.kind != result.consensus
                )
                details.append(
                    f"{label}: {_printable(result.consensus, 40)} {agree} of {len(votes)}"
                    + (f" (against: {against})" if against else "")
                )
            for v, a in answered:
                if v.error is None and a.error is not None and a.error_kind != "early_stop":
                    failed = Verdict(kind=a.kind, error=a.error, error_kind=a.error_kind)
                    details.append(f"failed on {label}: {_who(v)}: {failure_reason(failed)}")
        return head + "".join(f"; {note}" for note in notes) + ")", details
