"""Candidates with latent strengths: the Bradley-Terry (and Davidson) draw that decides
which candidate of a pair is better before a persona answers.

A candidate text with strength ``s`` has worth ``p = e^s``. Shown ``i`` first and ``j``
second, Davidson's model with tie parameter ``nu`` gives

    P(i better) = p_i / D,   P(j better) = p_j / D,   P(tie) = nu sqrt(p_i p_j) / D,
    D = p_i + p_j + nu sqrt(p_i p_j),

and ``nu = 0`` is plain Bradley-Terry, ``P(i better) = p_i / (p_i + p_j)``. ``tie_rate``
``t`` is the chance of a tie between two equally strong candidates, ``nu / (2 + nu)``, so
``nu = 2 t / (1 - t)``. The draw's label (``A``: the first shown, ``B``, ``TIE``) is the
pair's truth in that order; the persona then answers it as any pair
(:func:`~._decisions.decide_pair`). This module does no HTTP and holds no state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import TypeGuard

from ._decisions import PAIR_LABELS
from ._personas import Persona

__all__ = [
    "bradley_terry_probabilities",
    "checked_strengths",
    "checked_tie_rate",
    "latent_pair_truth",
    "strength_rates",
    "tie_parameter",
]

# exp(350) is finite; a gap beyond it is a certainty in double precision anyway.
_MAX_HALF_GAP = 350.0


def _is_number(value: object) -> TypeGuard[float]:
    """An int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def checked_tie_rate(tie_rate: object, has_strengths: bool) -> float:
    """``tie_rate`` as a float; ``ValueError`` unless it is a number in [0, 1), or when it
    is above 0 and no candidate has a strength (it would change nothing)."""
    if not (_is_number(tie_rate) and 0.0 <= tie_rate < 1.0):
        raise ValueError(
            f"tie_rate must be a number in [0, 1) (the chance of a tie between two equally "
            f"strong candidates; 0: no ties), got {tie_rate!r}"
        )
    rate = float(tie_rate)
    if rate > 0 and not has_strengths:
        raise ValueError(
            "tie_rate applies only to pairs judged by strengths, and no candidate has one; "
            "give strengths={candidate text: strength}, or remove tie_rate"
        )
    return rate


def checked_strengths(strengths: Mapping[str, float] | None) -> dict[str, float]:
    """``{candidate text (stripped): strength}``; ``ValueError`` for a key that is not
    text, a strength that is not a finite number (a bool is not one), or two keys that
    strip to the same text with different strengths."""
    out: dict[str, float] = {}
    for key, value in (strengths or {}).items():
        if not isinstance(key, str):
            raise ValueError(f"strengths must map candidate texts to numbers, got the key {key!r}")
        if not (_is_number(value) and math.isfinite(value)):
            raise ValueError(
                f"the strength of {key.strip()!r} must be a finite number (a log-worth: 0 "
                f"average, +1 about 2.7 times as likely to win), got {value!r}"
            )
        text, strength = key.strip(), float(value)
        if text in out and out[text] != strength:
            raise ValueError(
                f"{text!r} is given strengths {out[text]!r} and {strength!r} (keys are "
                "stripped); keep one"
            )
        out[text] = strength
    return out


def tie_parameter(tie_rate: float) -> float:
    """Davidson's ``nu`` for ``tie_rate`` (the tie chance of equal strengths):
    ``2 t / (1 - t)``; 0 for 0."""
    return 2.0 * tie_rate / (1.0 - tie_rate)


def bradley_terry_probabilities(
    s_first: float, s_second: float, *, tie_rate: float = 0.0
) -> tuple[float, float, float]:
    """``(P(first better), P(second better), P(tie))`` for candidates of strengths
    ``s_first`` and ``s_second`` (Davidson's model; see the module docstring). Computed
    from the gap, so any finite strengths give finite probabilities; equal strengths give
    ``((1 - t) / 2, (1 - t) / 2, t)``."""
    half_gap = max(-_MAX_HALF_GAP, min(_MAX_HALF_GAP, (s_first - s_second) / 2.0))
    # Divide p_i, p_j and sqrt(p_i p_j) by sqrt(p_i p_j): e^(gap/2), e^(-gap/2) and 1.
    first, second = math.exp(half_gap), math.exp(-half_gap)
    nu = tie_parameter(tie_rate)
    total = first + second + nu
    return first / total, second / total, nu / total


def latent_pair_truth(
    persona: Persona, model: str, digest: str, s_first: float, s_second: float, nu: float
) -> str:
    """The latent label of a pair shown in one order: ``"A"`` (first better), ``"B"`` or
    ``"TIE"``, drawn with Davidson's probabilities (tie parameter ``nu``) from
    ``random.Random(f"strength|{persona.seed}|{model}|{digest}")``, a stream apart from
    the persona's answer (:func:`~._decisions.decide_pair`), so each (persona, model,
    pair, order, resample draw) has its own reproducible draw."""
    half_gap = max(-_MAX_HALF_GAP, min(_MAX_HALF_GAP, (s_first - s_second) / 2.0))
    first, second = math.exp(half_gap), math.exp(-half_gap)
    u = random.Random(f"strength|{persona.seed}|{model}|{digest}").random()
    x = u * (first + second + nu)
    if x < first:
        return "A"
    if x < first + second:
        return "B"
    return "TIE"


def strength_rates(
    persona: Persona, s_first: float, s_second: float, *, tie_rate: float = 0.0
) -> dict[str, float]:
    """The chance that ``persona`` answers ``"A"``, ``"B"`` and ``"TIE"`` to a pair whose
    first candidate shown has strength ``s_first`` and second ``s_second``.

    The latent truth ``T`` is drawn by :func:`bradley_terry_probabilities`; with
    probability ``accuracy`` the persona answers ``T``; otherwise it is unsure and answers
    ``"A"`` with probability ``position_bias``, else one of the two labels other than
    ``T``, uniformly. So ``P(L) = sum_T P(T) (a [L = T] + (1 - a) (b [L = A] +
    (1 - b) [L != T] / 2))``.
    """
    latent = bradley_terry_probabilities(s_first, s_second, tie_rate=tie_rate)
    a, b = persona.accuracy, persona.position_bias
    rates = dict.fromkeys(PAIR_LABELS, 0.0)
    for truth, p_truth in zip(PAIR_LABELS, latent, strict=True):
        for label in PAIR_LABELS:
            unsure = b * (label == "A") + (1 - b) * (label != truth) / 2
            rates[label] += p_truth * (a * (label == truth) + (1 - a) * unsure)
    return rates
