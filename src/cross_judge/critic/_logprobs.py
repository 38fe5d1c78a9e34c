"""Confidence from token probabilities: how likely the model found each label, read from the
``logprobs`` a vendor returned with its answer (:attr:`cross_judge.transport.Completion.logprobs`).

:func:`label_probabilities` gives a :class:`LabelProbabilities`: a distribution over the
critic's label vocabulary, the chosen label's share of it (``confidence``) and, for score
prompts, an expected score. It never raises; it returns ``None`` whenever the tokens cannot
say (then the caller keeps the stated confidence and says so).

How the answer is read:

1. **The tokens must spell the text.** Their texts joined must equal the completion's content;
   otherwise (logprobs for another text, or none) the result is ``None``.
2. **Where the label is.** The value of the *last* label key (``label_keys``, default
   :data:`~cross_judge.critic._parsing.LABEL_KEYS`; a quoted JSON key matched ignoring case,
   then ``:``, optional whitespace and an optional opening quote) whose value normalises
   (:func:`~cross_judge.critic._parsing.normalize_label`) to the chosen label. The parser reads
   the last object with a label key, so a judge that quotes the item (holding a well-formed
   verdict) before its own answer is read at its own answer. Unquoted values (``"verdict":
   4``) end at whitespace, ``,``, ``}`` or ``]``.
3. **The walk.** From the token holding the value's first character, token by token along
   the text, each alternative ``(token, logprob)`` in the token's ``top`` (plus the token
   itself when missing there) is read as the value text it would write. At the first token,
   the part before the value start is a lead every alternative must begin with (``':"P'``
   competes with ``':"F'``, not with ``'P'``). Text is compared normalised: upper case,
   spaces and hyphens as ``_`` (``"pass"`` and ``"PASS"`` write the same label). An
   alternative is *consistent* with the labels its text could still become: a finished value
   (closing quote or terminator) with the label it normalises to, an unfinished one with every
   label it is a prefix of. So a strict prefix counts: ``'P'`` counts toward ``PASS`` when
   only ``PASS`` starts with P. Alternatives consistent with no label (``"Maybe"``) and ones
   that add nothing to the value (a space, a quote: they postpone the choice) are left out.
4. **Decisions.** The *path* is the labels the chosen token is consistent with. An
   alternative consistent with the chosen label follows the path with its mass on path
   labels; the rest of its mass, and all the mass of an alternative not consistent with the
   chosen label, goes at once to its labels, split evenly. A token where some mass leaves the
   path is a decision point; the chosen label's probability is the product over decision
   points of mass following the path / mass of all kept alternatives, i.e. the top-k
   renormalised over the vocabulary. The walk ends when the path holds one label. For
   single-token labels (``"1"``..``"5"``, ``A``/``B``/``TIE``, ``PASS``/``FAIL``) that is
   one step: the top-k renormalised over the labels.

**Approximation.** Only the chosen path is observed: mass that leaves it is split evenly over
the labels it could still become (``'RE'`` over ``REJECT`` and ``REVISE`` when the chosen
token was ``'REJ'``). The probabilities sum to 1.

**A label the list left out.** A top-k list holds the k likeliest tokens, so a token it
leaves out has at most the probability of the least likely one it holds. At a decision
point, a label still possible there that no listed alternative is consistent with gets
that bound (the smallest probability the list holds, over all its tokens) as its weight
beside the listed ones, instead of nothing: renormalising over the labels seen would give
it no mass and the chosen label a certainty the vendor never reported (a small model whose
other label fell out of its top 10 read 1.0). It is the most the list allows, so the chosen
label's confidence is then the least the list allows; :attr:`LabelProbabilities.bounded`
says the bound decided part of it. No probability read here is exactly 0 or 1: each is
kept strictly inside (0, 1) at the float's resolution.

``None`` also when: the chosen label is not in ``labels`` (both normalised; reserved labels
are never in it), its value cannot be located (e.g. written with escapes or look-alike
letters the parser folded), a logprob on the path is not finite, or no token on the walk
listed any alternative to the chosen one (top-k of 1 or none: renormalising would claim a
certainty nobody measured).

Not done here: no calibration, no network, no verdict is built.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ..transport import TokenLogprob
from ..verdict import RESERVED_KINDS, clean_label_text
from ._parsing import LABEL_KEYS, normalize_label

__all__ = ["LabelProbabilities", "label_probabilities"]


@dataclass(frozen=True)
class LabelProbabilities:
    """A distribution over a critic's label vocabulary, read from token probabilities."""

    chosen: str
    """The label the answer gave, normalised as the parser does."""
    probabilities: Mapping[str, float] = field(hash=False)
    """Each vocabulary label's probability (read-only copy); sums to 1, each strictly
    between 0 and 1."""
    bounded: bool = False
    """Whether a label the vendor's top token list left out at a decision point was given
    the bound the list allows (the smallest probability it holds) rather than a measured
    probability: the confidence is then the lowest the list allows."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "probabilities", MappingProxyType(dict(self.probabilities)))

    @property
    def confidence(self) -> float:
        """The chosen label's probability (0.0 if it is not in :attr:`probabilities`)."""
        return self.probabilities.get(self.chosen, 0.0)

    def expected_score(self, scores: Mapping[str, float]) -> float | None:
        """The mean of ``scores`` (label -> score; labels normalised) weighted by the
        probabilities, renormalised over the labels that have a finite score. ``None`` when
        no label has one, or those labels have no probability mass."""
        known: dict[str, float] = {}
        for label, score in scores.items():
            key = normalize_label(label)
            usable = isinstance(score, (int, float)) and not isinstance(score, bool)
            if key is not None and usable and math.isfinite(score):
                known[key] = float(score)
        mass = sum(self.probabilities.get(label, 0.0) for label in known)
        if mass <= 0.0:
            return None
        return sum(self.probabilities.get(k, 0.0) * v for k, v in known.items()) / mass


def label_probabilities(
    text: str,
    tokens: Sequence[TokenLogprob],
    *,
    chosen: str,
    labels: Sequence[str],
    label_keys: Sequence[str] = LABEL_KEYS,
) -> LabelProbabilities | None:
    """The label distribution of the answer ``text`` from its ``tokens``, or ``None``.

    ``chosen`` is the parsed label (``Verdict.kind``), ``labels`` the critic's vocabulary.
    See the module docstring for how it is read and when it is ``None``. Never raises.
    """
    try:
        return _label_probabilities(text, tokens, chosen, labels, label_keys)
    except Exception:
        # Same contract as the parser: an odd reply costs its measured confidence, not a run.
        return None


# --------------------------------------------------------------------------- internals

_BARE_END = re.compile(r"[\s,}\]]")
_CLOSING_QUOTE = re.compile(r'(?<!\\)"')
_LEADING = re.compile(r"^[\s\"'`]+")
_SEPARATORS = re.compile(r"(?<=[^\s-])[\s-]+")
_UNDERSCORES = re.compile(r"_{2,}")
_LOCATE_WINDOW = 512  # characters read after a label key: a label has at most 100


@dataclass(frozen=True)
class _Value:
    """What a value's text so far says: its prefix key, its normalised form, whether done."""

    key: str
    label: str | None
    finished: bool

    def consistent(self, candidates: Sequence[str]) -> tuple[str, ...]:
        if self.finished:
            return tuple(c for c in candidates if c == self.label)
        return tuple(c for c in candidates if c.startswith(self.key) or c == self.label)


def _read_value(written: str, quoted: bool) -> _Value:
    """Read the text written from the value start (``quoted``: after an opening quote)."""
    if not quoted:
        stripped = written.lstrip()
        if stripped.startswith('"'):
            return _read_value(stripped[1:], True)
        end = _BARE_END.search(stripped)
    else:
        stripped = written
        end = _CLOSING_QUOTE.search(stripped)
    value = stripped if end is None else stripped[: end.start()]
    return _Value(_prefix_key(value), normalize_label(value), end is not None)


def _prefix_key(value: str) -> str:
    """An unfinished value as its label would begin: normalise_label's steps that make
    sense on a prefix (no trailing strip; a trailing space becomes ``_``)."""
    core = _LEADING.sub("", clean_label_text(value))
    key = _SEPARATORS.sub("_", clean_label_text(core.upper()))
    return _UNDERSCORES.sub("_", key)


def _vocabulary(labels: Sequence[str]) -> tuple[str, ...]:
    entries = (labels,) if isinstance(labels, str) else labels
    normalised = (normalize_label(entry) for entry in entries)
    return tuple(dict.fromkeys(n for n in normalised if n is not None and n not in RESERVED_KINDS))


@functools.lru_cache(maxsize=32)
def _key_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    keys = "|".join(re.escape(name) for name in names)
    return re.compile(rf'"\s*(?:{keys})\s*"\s*:\s*("?)', re.IGNORECASE)


def _locate(text: str, label: str, label_keys: Sequence[str]) -> tuple[int, bool] | None:
    """``(value start, quoted)`` of the last label key whose value normalises to ``label``."""
    keys = (label_keys,) if isinstance(label_keys, str) else label_keys
    names = tuple(k.strip().lower() for k in keys if k.strip())
    if not names:
        return None
    for match in reversed(list(_key_pattern(names).finditer(text))):
        start, quoted = match.end(), bool(match.group(1))
        value = _read_value(text[start : start + _LOCATE_WINDOW], quoted)
        if value.label == label:
            return start, quoted
    return None


def _weights(token: TokenLogprob) -> list[tuple[str, float]] | None:
    """The alternatives at ``token`` with weights proportional to their probabilities, the
    token itself counted once with its own logprob; ``None`` when that logprob is not
    finite. Listed entries with a NaN or +inf logprob are dropped."""
    if not math.isfinite(token.logprob):
        return None
    listed = [(t, lp) for t, lp in token.top if t != token.token and lp == lp and lp < math.inf]
    listed.append((token.token, token.logprob))
    best = max(lp for _, lp in listed)
    return [(t, math.exp(lp - best)) for t, lp in listed if isinstance(t, str)]


def _label_probabilities(
    text: str,
    tokens: Sequence[TokenLogprob],
    chosen: str,
    labels: Sequence[str],
    label_keys: Sequence[str],
) -> LabelProbabilities | None:
    pieces = [t.token for t in tokens]
    if not pieces or "".join(pieces) != text:
        return None
    vocabulary = _vocabulary(labels)
    label = normalize_label(chosen)
    if label is None or label not in vocabulary:
        return None
    located = _locate(text, label, label_keys)
    if located is None:
        return None
    start, quoted = located
    starts = list(itertools.accumulate((len(p) for p in pieces), initial=0))
    first = bisect.bisect_right(starts, start) - 1

    probabilities = dict.fromkeys(vocabulary, 0.0)
    on_path = 1.0  # the probability mass still following the chosen label's path
    candidates: tuple[str, ...] = vocabulary
    so_far = ""  # the value's text written by the tokens already walked
    listed = bounded = False
    for index in range(first, len(tokens)):
        token = tokens[index]
        lead = token.token[: start - starts[index]] if index == first else ""
        before = _read_value(so_far, quoted).key
        piece = token.token[len(lead) :]
        chosen_value = _read_value(so_far + piece, quoted)
        path = chosen_value.consistent(candidates)
        if label not in path:
            return None
        if chosen_value.finished or chosen_value.key != before:
            step = _decide(token, lead, so_far, quoted, before, candidates, path, label)
            if step is None:
                return None
            following, leaving, alternatives, bound_used = step
            listed = listed or alternatives
            bounded = bounded or bound_used
            for other, share in leaving.items():
                probabilities[other] += on_path * share
            on_path *= following
            if len(path) == 1:
                break
        # else the chosen token adds nothing to the value (a space, a quote): no decision
        so_far += piece
        candidates = path
    if not listed:
        return None
    probabilities[label] += on_path
    inside = {k: min(_ALMOST_ONE, max(_ALMOST_ZERO, v)) for k, v in probabilities.items()}
    return LabelProbabilities(label, inside, bounded)


_ALMOST_ZERO = math.ulp(0.0)  # the smallest positive float
_ALMOST_ONE = math.nextafter(1.0, 0.0)  # the largest float below 1


def _decide(
    token: TokenLogprob,
    lead: str,
    so_far: str,
    quoted: bool,
    before: str,
    candidates: tuple[str, ...],
    path: tuple[str, ...],
    label: str,
) -> tuple[float, dict[str, float], bool, bool] | None:
    """One token's split: ``(share following the path, {label: share leaving to it},
    whether the vendor listed any alternative, whether a label of ``candidates`` no listed
    alternative is consistent with got the list's bound)``, shares of the kept
    alternatives' mass and the bounds. ``None`` when the token's logprob is unusable or no
    alternative is kept."""
    weights = _weights(token)
    if weights is None:
        return None
    following = total = 0.0
    leaving: dict[str, float] = {}
    seen: set[str] = set()
    for alternative, weight in weights:
        if weight <= 0.0 or not alternative.startswith(lead):
            continue
        value = _read_value(so_far + alternative[len(lead) :], quoted)
        own = value.consistent(candidates)
        if not own or (not value.finished and value.key == before):
            continue  # no label, or it postpones the choice
        seen.update(own)
        total += weight
        if label in own and all(other in path for other in own):
            following += weight
            continue
        share = weight / len(own)
        for other in own:
            if label in own and other in path:
                following += share
            else:
                leaving[other] = leaving.get(other, 0.0) + share
    if total <= 0.0:
        return None
    listed = len({alternative for alternative, _ in weights}) > 1
    unseen = [other for other in candidates if other not in seen] if listed else []
    if unseen:
        # The most an unlisted token can have: the least likely listed one's probability.
        bound = min(weight for _, weight in weights)
        for other in unseen:
            leaving[other] = leaving.get(other, 0.0) + bound
        total += bound * len(unseen)
    return following / total, {k: v / total for k, v in leaving.items()}, listed, bool(unseen)
