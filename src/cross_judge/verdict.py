"""The result models: a critic's :class:`Verdict`, a panel's :class:`EnsembleVerdict`.

The module name and the field names of ``Verdict`` are those of cross-judge 0.1, so stored
0.1 JSON loads unchanged and 0.1 code reading ``v.kind`` / ``v.verdict`` keeps working. New
fields all have defaults. These are plain data: no network, no parsing (see
:mod:`cross_judge.critic.parsing`), no voting (see :mod:`cross_judge.voting`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ._extensions import provider
from .errors import ErrorKind

__all__ = [
    "ABSTAIN",
    "RESERVED_KINDS",
    "Answer",
    "EnsembleVerdict",
    "Usage",
    "Verdict",
    "VerdictKind",
    "as_verdict",
    "call_totals",
    "default_query_id",
]

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


class Usage(BaseModel):
    """Token counts of one call (or, summed, of many).

    ``prompt_tokens`` counts every input token, including those read from or written to
    the vendor's prompt cache; ``cache_read_tokens`` and ``cache_write_tokens`` are those
    parts (OpenAI's ``cached_tokens``, DeepSeek's ``prompt_cache_hit_tokens``, Anthropic's
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens``), priced differently.
    ``total_tokens`` defaults to prompt + completion when a vendor leaves it out.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: NonNegativeInt = 0
    completion_tokens: NonNegativeInt = 0
    total_tokens: NonNegativeInt = 0
    cache_read_tokens: NonNegativeInt = 0
    cache_write_tokens: NonNegativeInt = 0

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
        )


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
    stated_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence_stated: bool = True
    order: Literal["ab", "ba", "both"] | None = None
    answers: list[Answer] | None = None
    flipped: bool | None = None
    self_agreement: float | None = Field(default=None, ge=0.0, le=1.0)

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
        if data.get("self_agreement") is None:
            data.pop("self_agreement", None)
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
        """A one-row table for Jupyter (see :func:`cross_judge.report.notebook.verdict_html`)."""
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


class EnsembleVerdict(BaseModel):
    """A panel's result for one item: every critic's verdict and the consensus.

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

    @model_serializer(mode="wrap")
    def _omit_unset_pair(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.pair_lengths is None:
            data.pop("pair_lengths", None)
        return data

    def _repr_html_(self) -> str:
        """The consensus and one row per critic verdict, for Jupyter (see
        :func:`cross_judge.report.notebook.ensemble_html`)."""
        html: str = provider("ensemble_html")(self)
        return html
