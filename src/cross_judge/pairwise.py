"""Pairs: two candidates judged against each other, and the order they are shown in.

An item is a *pair* when its context holds ``response_a`` and ``response_b`` (the packaged
``pairwise`` prompt's fields; a JSONL item may say ``"a"`` and ``"b"``). Its labels are
``A`` (candidate ``a`` is better), ``B`` and ``TIE``, always in the item's own names.

LLM judges favour the candidate shown first. An :class:`~cross_judge.ensemble.Ensemble`
therefore chooses, per critic, the order it shows a pair in (``order=``):

- ``"fixed"``: ``a`` first, as given;
- ``"random"``: a coin per item and critic (from sha256 of the item id and critic name, so
  a rerun shows the same order and hits the cache);
- ``"cyclic"``: the Ensemble's ``n``-th pair is shown to critic ``j`` as ``a`` first when
  ``n + j`` is even: each critic sees half the pairs in each order at one call each, and
  every pair is seen both ways round by the panel, so a position bias cancels over the
  batch (not per item);
- ``"both"``: every critic judges both orders concurrently (two calls), and the answers
  are combined by :func:`combine_orders`: agreeing orders give their winner, a flip gives
  ``TIE`` (``on_flip="tie"``, MT-Bench's swap-and-confirm) or ``ABSTAIN``.

A label answered in the order ``b`` first (``"ba"``) is mapped back: ``A`` there means
``b``. This module holds those rules; it makes no call.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .errors import ConfigError
from .verdict import ABSTAIN, Answer, Verdict, call_totals

__all__ = [
    "PAIR_FIELDS",
    "OnFlip",
    "Order",
    "Shown",
    "combine_orders",
    "is_pair",
    "map_back",
    "shown_order",
    "swapped",
]

PAIR_FIELDS = ("response_a", "response_b")
"""The context fields that hold a pair's two candidates."""

Order = Literal["fixed", "random", "cyclic", "both"]
"""How an :class:`~cross_judge.ensemble.Ensemble` shows a pair to its critics."""

OnFlip = Literal["tie", "abstain"]
"""What a critic's verdict is when the two orders of ``order="both"`` disagree."""

Shown = Literal["ab", "ba"]
"""The order a pair was shown in: ``"ab"`` is ``a`` first."""

ORDERS: tuple[str, ...] = ("fixed", "random", "cyclic", "both")
_SWAP = {"A": "B", "B": "A"}
_BOTH: tuple[Shown, Shown] = ("ab", "ba")


def check_order(order: object, on_flip: object) -> None:
    """Raise :class:`ConfigError` for an unknown ``order`` or ``on_flip``."""
    if order not in ORDERS:
        raise ConfigError(f"order must be one of {list(ORDERS)}, got {order!r}")
    if on_flip not in ("tie", "abstain"):
        raise ConfigError(f"on_flip must be 'tie' or 'abstain', got {on_flip!r}")


def is_pair(context: Mapping[str, Any] | None) -> bool:
    """Whether an item with ``context`` is a pair (it holds both candidates)."""
    return context is not None and all(name in context for name in PAIR_FIELDS)


def swapped(context: Mapping[str, Any]) -> dict[str, Any]:
    """``context`` with its two candidates exchanged."""
    out = dict(context)
    out["response_a"], out["response_b"] = context["response_b"], context["response_a"]
    return out


def map_back(label: str, shown: Shown) -> str:
    """The item's own name for ``label`` answered in the order ``shown``: ``A`` and ``B``
    swap when ``b`` was shown first; every other label is unchanged."""
    return _SWAP.get(label, label) if shown == "ba" else label


def shown_order(order: Order, *, pair_number: int, critic_index: int, seed: str) -> Shown:
    """The order a critic sees a pair in under ``order`` (not ``"both"``, which shows both).

    ``pair_number`` is the pair's place among those the Ensemble has judged (``"cyclic"``),
    ``critic_index`` the critic's place in the panel, ``seed`` a text naming the item and
    critic (``"random"``: sha256 of it decides, so a rerun shows the same order).
    """
    if order == "random":
        return "ab" if hashlib.sha256(seed.encode()).digest()[0] % 2 == 0 else "ba"
    if order == "cyclic":
        return "ab" if (pair_number + critic_index) % 2 == 0 else "ba"
    return "ab"


def in_own_names(verdict: Verdict, shown: Shown, score: float | None) -> Verdict:
    """``verdict``, answered in the order ``shown``, with its label in the item's names,
    its ``order`` set and its ``score`` replaced by ``score`` (the score of the mapped
    label, which the caller knows from the prompt). A failed call keeps its kind. The
    sampled answers of a critic with ``samples > 1`` are mapped the same way and tagged
    with ``shown``; ``self_agreement`` is unchanged (mapping renames labels one to one)."""
    update: dict[str, Any] = {"order": shown}
    if verdict.answers is not None:
        update["answers"] = [_answer_in_own_names(a, shown) for a in verdict.answers]
    if verdict.error is not None:
        return verdict.model_copy(update=update)
    return verdict.model_copy(
        update={**update, "kind": map_back(verdict.kind, shown), "score": score}
    )


def _answer_in_own_names(answer: Answer, shown: Shown) -> Answer:
    """A sampled ``answer`` given in the order ``shown``, its ``kind`` in the item's names
    (``answered`` keeps the label as written) and its ``order`` set."""
    kind = map_back(answer.kind, shown) if answer.error is None else answer.kind
    return answer.model_copy(update={"kind": kind, "answered": answer.kind, "order": shown})


def combine_orders(
    first: Verdict,
    second: Verdict,
    *,
    on_flip: OnFlip,
    score_of: Mapping[str, float] | None = None,
) -> Verdict:
    """One critic's verdict from its answers in both orders (each already in the item's own
    names by :func:`in_own_names`; ``first`` shown ``"ab"``, ``second`` ``"ba"``).

    - Both valid and equal: that label, with the mean confidence and score,
      ``flipped=False``, ``order="both"``.
    - Both valid and different (a flip): ``TIE`` (``on_flip="tie"``) or ``ABSTAIN``, with
      confidence 0.0 (the critic has no stable preference), ``flipped=True``.
    - One valid: it stands alone, marked by its ``order`` (``"ab"`` or ``"ba"``) and
      ``flipped=None``.
    - Neither valid: the first failure (its kind, error and error kind), ``order=None``.

    Always: ``answers`` holds both raw answers; usage, cost and attempts are summed (cost
    ``None`` if either is unknown), ``elapsed_s`` is the longer call, ``cached`` is true
    only when both were. ``score_of`` maps labels to scores (the prompt's ``score``) for a
    flip's label.

    A critic with ``samples=n > 1`` gives each order as the vote of its ``n`` samples
    (:func:`cross_judge.core.combine_samples`), and the rules above apply to the two
    votes. ``answers`` then holds all ``2n`` sampled answers (those shown ``"ab"`` first),
    each tagged with its order and in the item's names, and ``self_agreement`` is the
    share of the valid ones among them that give their most common label (``None`` when
    none is valid): a critic that flips with the order cannot reach 1.0. Without samples
    ``self_agreement`` stays ``None`` (``flipped`` says whether the two calls agreed).
    """
    pair = (first, second)
    answers: list[Answer] = []
    for v, shown in zip(pair, _BOTH, strict=True):
        if v.answers is not None:  # sampled: already in own names and tagged
            answers.extend(v.answers)
            continue
        answered = map_back(v.kind, shown) if v.error is None else v.kind
        answers.append(Answer.of(v, answered=answered, order=shown))
    sampled = first.answers is not None or second.answers is not None
    common: dict[str, Any] = {
        **call_totals(pair),
        "answers": answers,
        "self_agreement": _modal_share(answers) if sampled else None,
    }
    valid = [v for v in pair if v.error is None]
    if len(valid) == 2:
        if first.kind == second.kind:
            scores = [v.score for v in pair]
            return first.model_copy(
                update={
                    **common,
                    "confidence": (first.confidence + second.confidence) / 2,
                    "score": None
                    if any(s is None for s in scores)
                    else sum(s for s in scores if s is not None) / 2,
                    "confidence_stated": first.confidence_stated and second.confidence_stated,
                    "stated_confidence": None,
                    "order": "both",
                    "flipped": False,
                }
            )
        label = "TIE" if on_flip == "tie" else ABSTAIN
        return first.model_copy(
            update={
                **common,
                "kind": label,
                "confidence": 0.0,
                "stated_confidence": None,
                "score": (score_of or {}).get(label),
                "reasoning": (
                    f"The orders disagreed: {first.kind} with a shown first, {second.kind} "
                    f"with b shown first, so {label}."
                ),
                "order": "both",
                "flipped": True,
            }
        )
    if len(valid) == 1:
        return valid[0].model_copy(update={**common, "flipped": None})
    return first.model_copy(update={**common, "order": None, "flipped": None})


def _modal_share(answers: Sequence[Answer]) -> float | None:
    """The share of the valid ``answers`` that give their most common label; ``None`` when
    none is valid."""
    counts = Counter(a.kind for a in answers if a.error is None)
    total = sum(counts.values())
    return max(counts.values()) / total if total else None
