"""How a persona decides, without HTTP: which item or pair a request is about, how hard
the item is, whether the persona is right, what it answers instead, and how it writes it.

Every draw is a pure function of its seed (the persona's seed, the model, a digest of
the item or pair), so a request gets the same answer every time. The Gaussian
threshold model of correlated errors (:func:`p_right`) and the pairwise judge
(:func:`decide_pair`) live here. What a server knows (gold labels, set difficulties,
better candidates, counters) is not: it passes it in.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterable
from statistics import NormalDist
from typing import NamedTuple

from ._personas import Persona

__all__ = [
    "PAIR_LABELS",
    "Decision",
    "Pair",
    "check_difficulty",
    "checked_better",
    "checked_pair_better",
    "decide",
    "decide_pair",
    "distractor_key",
    "extract_item",
    "item_key",
    "p_right",
    "pair_digest",
    "pair_texts",
    "render",
    "samples",
    "seeded_difficulty",
]


_REASONS = (
    "The item is consistent with {kind}.",
    "On balance the evidence points to {kind}.",
    "Compared with the alternatives, {kind} fits best.",
    "The wording of the item supports {kind}.",
)


_NORMAL = NormalDist()
# Difficulties are clamped into (0, 1) before the inverse normal, which is infinite at 0 and 1.
_DIFFICULTY_EPS = 1e-9


def checked_better(query_text: str, better_text: object) -> str | None:
    """``better_text`` stripped (``None`` kept: a tie); ``ValueError`` for anything else."""
    if better_text is None:
        return None
    if not isinstance(better_text, str):
        raise ValueError(
            "better must map a query to the better response's text, or None for a tie; "
            f"got {better_text!r} for query {query_text!r}"
        )
    return better_text.strip()


def checked_pair_better(
    key: object, better_text: object
) -> tuple[tuple[str, frozenset[str]], str | None]:
    """A ``pair_better`` entry as stored: ``((query, {candidate, candidate}), better)``,
    every text stripped; ``ValueError`` unless ``key`` is ``(query, candidate, candidate)``
    (texts) and ``better_text`` is one of the two candidates or ``None`` (a tie)."""
    if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(t, str) for t in key)):
        raise ValueError(
            "pair_better must map (query, candidate, candidate), three texts, to the better "
            f"candidate's text, or None for a tie; got the key {key!r}"
        )
    query, first, second = (t.strip() for t in key)
    better = checked_better(query, better_text)
    if better is not None and better not in (first, second):
        raise ValueError(
            f"the better answer of a pair must be one of the pair's two candidates "
            f"({first!r}, {second!r}), or None for a tie; got {better!r} for query {query!r}"
        )
    return (query, frozenset((first, second))), better


def check_difficulty(item_text: str, value: float) -> None:
    """Raise ``ValueError`` naming the item unless ``value`` is a difficulty: a number in
    [0, 1]."""
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(
            f"difficulty must be a number in [0, 1] (0 easiest, 1 hardest), "
            f"got {value!r} for item {item_text!r}"
        )


def samples(temperature: object) -> bool:
    """Whether a request's ``temperature`` samples: a number > 0 (a bool or other value
    does not)."""
    return (
        isinstance(temperature, (int, float))
        and not isinstance(temperature, bool)
        and temperature > 0
    )


def item_key(item: object) -> str:
    """The text an item's truth is keyed by: a string stripped, or, for an item object
    (:class:`cross_judge.Item`, or anything with a ``query`` string), its query stripped:
    the text a critic's prompt carries. This package imports nothing else of cross-judge,
    so an item is known by that attribute.

    Raises:
        ValueError: neither a string nor an object with a ``query`` string.
    """
    if isinstance(item, str):
        return item.strip()
    query = getattr(item, "query", None)
    if isinstance(query, str):
        return query.strip()
    raise ValueError(
        f"an item's truth is keyed by its text or by an Item, got {type(item).__name__}"
    )


def extract_item(user_text: str) -> str:
    """The text inside the last ``<item>...</item>`` fence, else the whole message; stripped."""
    end = user_text.rfind("</item>")
    if end != -1:
        start = user_text.rfind("<item>", 0, end)
        if start != -1:
            return user_text[start + len("<item>") : end].strip()
    return user_text.strip()


class Pair(NamedTuple):
    """The texts of a pairwise request, stripped, in the order shown."""

    query: str
    response_a: str
    response_b: str


def _fence_before(text: str, tag: str, end: int) -> tuple[int, str] | None:
    """The last ``<tag>...</tag>`` fence ending before ``end``: (its start, its stripped body)."""
    close = text.rfind(f"</{tag}>", 0, end)
    if close == -1:
        return None
    start = text.rfind(f"<{tag}>", 0, close)
    if start == -1:
        return None
    return start, text[start + len(tag) + 2 : close].strip()


def pair_texts(user_text: str) -> Pair | None:
    """The query and candidates of a pairwise request, else ``None``.

    A user message is pairwise when it holds an ``<item>`` fence, then a
    ``<response_a>`` fence, then a ``<response_b>`` fence (the packaged ``pairwise``
    prompt's layout). Each is found from the end: the last ``<response_b>`` fence, the
    last ``<response_a>`` fence before it, the last ``<item>`` fence before that; so a
    candidate may contain ``</item>``, and only a second candidate containing
    ``</response_b>`` is read wrongly.
    """
    b = _fence_before(user_text, "response_b", len(user_text))
    a = _fence_before(user_text, "response_a", b[0]) if b is not None else None
    item = _fence_before(user_text, "item", a[0]) if a is not None else None
    if b is None or a is None or item is None:
        return None
    return Pair(item[1], a[1], b[1])


def pair_digest(pair: Pair) -> str:
    """sha256 of the query and the candidates in the order shown (JSON, so unambiguous)."""
    return hashlib.sha256(json.dumps(list(pair)).encode()).hexdigest()


def _unit_hash(text: str) -> float:
    """A number in (0, 1), uniform over texts, from sha256 of ``text``."""
    bits = int(hashlib.sha256(text.encode()).hexdigest()[:13], 16)  # 52 bits
    return (bits + 0.5) / 2.0**52


def seeded_difficulty(item: str, difficulty_seed: int) -> float:
    """The difficulty of an item that was given none: uniform in (0, 1) over items."""
    return _unit_hash(f"{difficulty_seed}|{item}")


def distractor_key(item: str, difficulty_seed: int) -> int:
    """Picks an item's distractor among a vocabulary's wrong labels (see :func:`decide`)."""
    return int(hashlib.sha256(f"{difficulty_seed}|distractor|{item}".encode()).hexdigest()[:16], 16)


def p_right(accuracy: float, difficulty: float, error_correlation: float) -> float:
    """P(right | item difficulty) under the Gaussian threshold model.

    With ``D = Phi^-1(difficulty)`` and ``c = Phi^-1(1 - accuracy)``, a persona is right
    when ``-sqrt(rho) D + sqrt(1 - rho) E > c`` for its own standard normal noise ``E``,
    so ``P(right | d) = Phi((-c - sqrt(rho) D) / sqrt(1 - rho))``; averaged over
    difficulties uniform in (0, 1) it is ``accuracy``. ``rho == 0`` gives ``accuracy``
    itself, and accuracy 0 or 1 gives exactly 0 or 1 whatever the difficulty.
    """
    if error_correlation == 0.0:
        return accuracy
    wrong_share = 1.0 - accuracy
    if wrong_share <= 0.0:
        return 1.0
    if wrong_share >= 1.0:  # accuracy 0, or so small that 1 - accuracy rounds to 1
        return 0.0
    d = min(max(difficulty, _DIFFICULTY_EPS), 1.0 - _DIFFICULTY_EPS)
    c = _NORMAL.inv_cdf(wrong_share)
    z = (-c - math.sqrt(error_correlation) * _NORMAL.inv_cdf(d)) / math.sqrt(
        1.0 - error_correlation
    )
    return _NORMAL.cdf(z)


class Decision(NamedTuple):
    """What a persona answers for one item, before rendering and faults."""

    kind: str
    confidence: float
    reasoning: str
    delay: float


def decide(
    persona: Persona,
    model: str,
    truth: str,
    digest: str,
    *,
    difficulty: float = 0.5,
    error_correlation: float = 0.0,
    distractor_key: int = 0,
) -> Decision:
    """The answer of ``persona`` (serving ``model``) to the item whose sha256 is ``digest``.

    Every draw comes from ``random.Random(f"{persona.seed}|{model}|{digest}")``, in this
    order: right or wrong (right with :func:`p_right`); when wrong and
    ``error_correlation`` (rho) > 0, whether to give the item's distractor (probability
    rho); the wrong label, by ``persona.bias`` or uniformly among the labels other than
    ``truth``, unless the distractor was taken; the confidence (wrong answers from the
    lower half of ``persona.confidence``); the reasoning; the jitter. The distractor is
    ``wrong[distractor_key % len(wrong)]``, ``wrong`` being the vocabulary minus
    ``truth`` in vocabulary order, so personas sharing a vocabulary share it. With rho 0
    no extra draw happens and ``difficulty`` and ``distractor_key`` are unused. A
    one-label vocabulary whose label is the truth cannot be wrong.
    """
    rng = random.Random(f"{persona.seed}|{model}|{digest}")
    lo, hi = persona.confidence
    if rng.random() < p_right(persona.accuracy, difficulty, error_correlation):
        kind, confidence = truth, rng.uniform(lo, hi)
    else:
        labels = persona.labels
        wrong = [x for x in labels if x != truth]
        weights = [persona.bias.get(x, 0.0) for x in wrong] if persona.bias else []
        if not wrong:  # a one-label vocabulary cannot be wrong
            kind = truth
        elif error_correlation > 0 and rng.random() < error_correlation:
            kind = wrong[distractor_key % len(wrong)]
        elif sum(weights) > 0:
            kind = rng.choices(wrong, weights=weights)[0]
        else:
            kind = rng.choice(wrong)
        confidence = rng.uniform(lo, (lo + hi) / 2)
    reasoning = rng.choice(_REASONS).format(kind=kind)
    delay = persona.latency + (rng.uniform(0, persona.jitter) if persona.jitter else 0.0)
    return Decision(kind, confidence, reasoning, delay)


PAIR_LABELS = ("A", "B", "TIE")
"""The labels of a pairwise answer, in the order shown: first candidate, second, a tie."""


def decide_pair(persona: Persona, model: str, truth: str, digest: str) -> Decision:
    """The answer of ``persona`` (serving ``model``) to a pair shown in one order.

    ``truth`` is the right label in that order (``"A"``, ``"B"`` or ``"TIE"``) and
    ``digest`` the pair's :func:`pair_digest`, so the two orders of a pair are
    independent draws and a repeated request gets the same answer. Every draw comes from
    ``random.Random(f"{persona.seed}|{model}|{digest}")``, in this order: sure or unsure
    (sure with probability ``accuracy``: the truth); when unsure, whether to answer
    ``"A"`` (probability ``position_bias``), else a label other than ``truth`` drawn
    uniformly; the confidence (unsure answers, even right ones, from the lower half of
    ``persona.confidence``); the reasoning; the jitter. ``persona.labels``, ``bias`` and
    item difficulty play no part.
    """
    rng = random.Random(f"{persona.seed}|{model}|{digest}")
    lo, hi = persona.confidence
    if rng.random() < persona.accuracy:
        kind, confidence = truth, rng.uniform(lo, hi)
    else:
        first = rng.random() < persona.position_bias
        kind = "A" if first else rng.choice([x for x in PAIR_LABELS if x != truth])
        confidence = rng.uniform(lo, (lo + hi) / 2)
    reasoning = rng.choice(_REASONS).format(kind=kind)
    delay = persona.latency + (rng.uniform(0, persona.jitter) if persona.jitter else 0.0)
    return Decision(kind, confidence, reasoning, delay)


def render(style: str, kind: str, confidence: float, reasoning: str, labels: Iterable[str]) -> str:
    """The answer text of a decision in a persona's ``style`` (see :class:`Persona`);
    ``labels``, the vocabulary, appear in the ``"think"`` preamble."""
    obj = json.dumps({"kind": kind, "confidence": confidence, "reasoning": reasoning})
    if style == "fenced":
        return (
            "I reviewed the item against the criteria.\n\n"
            f"```json\n{obj}\n```\n\nThat is my final assessment."
        )
    if style == "think":
        # Braces inside the think block trip parsers that grab the first "{...}".
        options = ", ".join(labels)
        return (
            f"<think>\nThe options are {{{options}}}; the answer is an object like "
            f'{{"kind": ...}}. Weighing the item, {kind} fits.\n</think>\n{obj}'
        )
    if style == "messy":
        percent = f"{round(confidence * 100)}%"
        return (
            f'{{"kind": {json.dumps(kind)}, "confidence": "{percent}", '
            f'"reasoning": {json.dumps(reasoning)},}}'
        )
    return obj
