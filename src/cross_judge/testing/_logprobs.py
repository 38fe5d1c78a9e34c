"""Token probabilities with a known calibration, as OpenAI, llama.cpp and vLLM serve them
(``choices[0].logprobs``).

The probability of the chosen label is drawn by :func:`served_confidence` under the law
documented on :class:`~cross_judge.testing.Persona` (``logprob_temperature``): calibrated
by construction at temperature 1. The answer text is cut into simple tokens (whitespace
runs, words, single punctuation characters) with the label's value as one token; that
token carries the label's probability and the other labels' as alternatives, every other
token probability 1. Everything is seeded by the persona, model and item, like its
answers. Nothing here reads a request or serves one.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from typing import Any

from ._personas import LOGPROB_CONCENTRATION, Persona

__all__ = [
    "label_distribution",
    "served_confidence",
    "token_logprobs",
    "tokenize",
]

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
_ACCURACY_CLAMP = (0.01, 0.99)
# Keeps every served probability strictly inside (0, 1): a logprob is finite and <= 0.
_PROBABILITY_CLAMP = 1e-6


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def served_confidence(persona: Persona, model: str, digest: str, right: bool) -> float:
    """The probability ``persona`` (serving ``model``) gives the label it chose for the item
    whose seed digest is ``digest``, ``right`` saying whether that label is the truth.

    With ``a`` the accuracy clamped into [0.01, 0.99] and ``k`` =
    :data:`~._personas.LOGPROB_CONCENTRATION`: ``c ~ Beta(k a + 1, k (1 - a))`` when right,
    ``Beta(k a, k (1 - a) + 1)`` when wrong, from ``random.Random(f"logprob|{seed}|
    {model}|{digest}")`` (a stream of its own: the answer's draws are unchanged); then
    ``c_T = c^(1/T) / (c^(1/T) + (1 - c)^(1/T))`` for ``T = persona.logprob_temperature``.
    Over items answered right with probability ``a``, ``P(right | c) = c``: calibrated at
    T = 1. The result is kept inside [1e-6, 1 - 1e-6].
    """
    rng = random.Random(f"logprob|{persona.seed}|{model}|{digest}")
    a = _clamp(persona.accuracy, *_ACCURACY_CLAMP)
    k = LOGPROB_CONCENTRATION
    c = (
        rng.betavariate(k * a + 1, k * (1 - a))
        if right
        else rng.betavariate(k * a, k * (1 - a) + 1)
    )
    c = _clamp(c, _PROBABILITY_CLAMP, 1 - _PROBABILITY_CLAMP)
    logit = (math.log(c) - math.log1p(-c)) / persona.logprob_temperature
    served = 1.0 / (1.0 + math.exp(-logit)) if logit > -700 else 0.0
    return _clamp(served, _PROBABILITY_CLAMP, 1 - _PROBABILITY_CLAMP)


def label_distribution(
    chosen: str,
    probability: float,
    vocabulary: Sequence[str],
    *,
    truth: str | None,
    order_seed: str,
) -> list[tuple[str, float]]:
    """Each label's probability at the label token, most likely first (ties keep this
    order): ``chosen`` gets ``probability``; the other labels of ``vocabulary`` share the
    rest in halving shares (1/2, 1/4, ... renormalised), the ``truth`` first when it is
    another label (a wrong answer's runner-up), the others in an order seeded by
    ``order_seed``. A vocabulary of ``chosen`` alone gives it probability 1."""
    others = [label for label in dict.fromkeys(vocabulary) if label != chosen]
    if not others:
        return [(chosen, 1.0)]
    random.Random(f"logprob-order|{order_seed}").shuffle(others)
    if truth is not None and truth in others:
        others.remove(truth)
        others.insert(0, truth)
    weights = [0.5**i for i in range(len(others))]
    rest = 1.0 - probability
    pairs = [(chosen, probability)] + [
        (label, rest * w / sum(weights)) for label, w in zip(others, weights, strict=True)
    ]
    return sorted(pairs, key=lambda pair: -pair[1])


def tokenize(text: str, label_span: tuple[int, int] | None = None) -> list[str]:
    """``text`` cut into tokens whose concatenation is ``text``: runs of whitespace, runs
    of word characters, single other characters; ``text[label_span[0]:label_span[1]]``
    is one token whole (ignored when the span does not fit in ``text``)."""
    if label_span is None or not 0 <= label_span[0] < label_span[1] <= len(text):
        return _TOKEN.findall(text)
    start, end = label_span
    return [*_TOKEN.findall(text[:start]), text[start:end], *_TOKEN.findall(text[end:])]


def _entry(token: str, logprob: float, top: list[dict[str, Any]]) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": top}


def _alternative(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def token_logprobs(
    content: str,
    label_span: tuple[int, int] | None,
    distribution: Sequence[tuple[str, float]],
    top_k: int,
) -> dict[str, Any]:
    """``choices[0].logprobs`` for ``content``: ``{"content": [{"token", "logprob",
    "bytes", "top_logprobs": [{"token", "logprob", "bytes"}, ...]}, ...]}``.

    The tokens (:func:`tokenize`) concatenate to ``content``. The label token (the span,
    when it fits: a cut answer may lose it) gets the log of the chosen label's
    probability (``distribution``'s entry for the text at the span) and as alternatives
    the ``top_k`` most likely labels of ``distribution``, their text escaped as inside a
    JSON string. Every other token has logprob 0.0 and itself as its only alternative
    (none with ``top_k`` 0).
    """
    label_ok = label_span is not None and 0 <= label_span[0] < label_span[1] <= len(content)
    label_text = content[label_span[0] : label_span[1]] if label_span and label_ok else None
    probabilities = {json.dumps(label)[1:-1]: p for label, p in distribution}
    entries: list[dict[str, Any]] = []
    position = 0
    for token in tokenize(content, label_span if label_ok else None):
        at_label = label_ok and label_span is not None and position == label_span[0]
        position += len(token)
        if at_label and label_text is not None and label_text in probabilities:
            top = [
                _alternative(json.dumps(label)[1:-1], math.log(p))
                for label, p in distribution[:top_k]
            ]
            entries.append(_entry(token, math.log(probabilities[label_text]), top))
        else:
            entries.append(_entry(token, 0.0, [_alternative(token, 0.0)] if top_k > 0 else []))
    return {"content": entries, "refusal": None}
