"""Bias statistics of a batch: where critics lean for reasons other than the content.

Everything here reads the verdicts a batch already holds (a
:class:`~cross_judge.batch.BatchResult`, stored results or a results file), offline, with
no vendor call:

* :func:`position_bias` (``batch.position_bias()``): per critic and for the whole panel,
  how often a decisive answer on a pair picked the candidate shown first, how often the
  two orders of ``order="both"`` disagreed (flips), and a fairness score.
* :func:`length_bias` (``batch.length_bias()``): per critic and for the consensus, the win
  rate of the longer candidate of a pair, binned by the length gap between the two.
* :func:`self_consistency` (``batch.self_consistency()``): per critic sampled ``n`` times
  (``Critic(samples=n)``), its mean agreement with itself.

Pairs are items whose context holds ``response_a`` and ``response_b`` (see
:mod:`cross_judge.pairwise`); labels ``A``, ``B`` and ``TIE`` are in the item's own names.
Failed and skipped calls never count. ``None`` means undefined (nothing to measure),
never a made-up 0. This module neither judges nor corrects: no significance tests, no
re-voting; agreement *between* critics is in :mod:`cross_judge.agreement`.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from typing import TypeAlias

from pydantic import BaseModel, ConfigDict

from .._extensions import provide
from ..errors import ConfigError
from ..pairwise import map_back
from ..results import BatchResult, as_batch, is_fallback
from ..verdict import EnsembleVerdict, Verdict

__all__ = [
    "LENGTH_BINS",
    "LengthBias",
    "LengthBin",
    "PositionBias",
    "PositionStats",
    "SelfStats",
    "length_bias",
    "position_bias",
    "self_consistency",
]

Results: TypeAlias = BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str]
"""What the statistics read: a batch, stored results, or a results file (read slim)."""

LENGTH_BINS: tuple[float, ...] = (0.10, 0.25, 0.50)
"""The default inner edges of the length-difference bins: 0-10%, 10-25%, 25-50%, 50%+."""

_DECISIVE = ("A", "B")


# -- position ---------------------------------------------------------------------------------


class PositionStats(BaseModel):
    """One critic's (or the whole panel's) position record over the pairs of a batch.

    Counted in the order each pair was shown, one per answer the model gave: each order
    of a verdict judged in both orders (``order="both"``), and a verdict judged in one
    order once (each sampled answer, for a critic with ``samples=n``).

    * ``answers``: valid answers on pairs; ``decisive``: those that picked a candidate
      (``A`` or ``B`` as shown, not ``TIE``); ``first_picks``: those that picked the
      candidate shown first.
    * ``first_position``: ``first_picks / decisive``; 0.5 is no preference. ``None``
      without a decisive answer.
    * ``pairs_both``: verdicts with both orders valid; ``flips``: those whose two orders
      disagreed once mapped back (``Verdict.flipped``); ``flip_rate``: ``flips /
      pairs_both``, ``None`` without any (a panel that shows each pair in one order
      never has one).
    * ``fairness``: ``1 - |2 first_position - 1|``: 1 means no preference for either
      position, 0 that every decisive answer went to the same position. ``None`` when
      ``first_position`` is.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    answers: int = 0
    decisive: int = 0
    first_picks: int = 0
    first_position: float | None = None
    pairs_both: int = 0
    flips: int = 0
    flip_rate: float | None = None
    fairness: float | None = None

    @classmethod
    def from_counts(
        cls, answers: int, decisive: int, first_picks: int, pairs_both: int, flips: int
    ) -> PositionStats:
        """The record of these counts, its rates (``first_position``, ``flip_rate``,
        ``fairness``) as defined above; a rate with nothing to divide by is ``None``.
        Counts summed over parts of a batch give the record of the whole."""
        first_position = first_picks / decisive if decisive else None
        return cls(
            answers=answers,
            decisive=decisive,
            first_picks=first_picks,
            first_position=first_position,
            pairs_both=pairs_both,
            flips=flips,
            flip_rate=flips / pairs_both if pairs_both else None,
            fairness=None if first_position is None else 1.0 - abs(2.0 * first_position - 1.0),
        )


class PositionBias(BaseModel):
    """:func:`position_bias` of a batch: ``critics``, one :class:`PositionStats` per
    critic in panel order, and ``panel``, all their answers counted together (shares over
    the pooled counts, not means of the critics' shares).

    ``first_position`` is a lean of the judges, measured in the order shown: showing the
    pairs another way does not change it. What ``order="cyclic"`` (or ``"random"``)
    changes is where it lands: on ``a`` and ``b`` equally often, so it cancels over the
    batch instead of favouring ``a``; ``order="both"`` turns it into flips."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    critics: dict[str, PositionStats]
    panel: PositionStats


def _shown_answers(verdict: Verdict) -> Iterator[str]:
    """The valid labels ``verdict`` holds as the model wrote them, in the order shown (``A``
    is the first-shown candidate); nothing for an item that is not a pair."""
    if verdict.answers is not None:
        for answer in verdict.answers:
            if answer.error is None and answer.order is not None:
                yield answer.answered
    elif verdict.error is None and verdict.order in ("ab", "ba"):
        yield map_back(verdict.kind, verdict.order)


def _position_stats(verdicts: Sequence[Verdict]) -> PositionStats:
    answers = [label for v in verdicts for label in _shown_answers(v)]
    decisive = [label for label in answers if label in _DECISIVE]
    both = [v.flipped for v in verdicts if v.flipped is not None]
    return PositionStats.from_counts(
        len(answers), len(decisive), decisive.count("A"), len(both), sum(both)
    )


@provide("position_bias")
def position_bias(results: Results) -> PositionBias:
    """Each critic's preference for the candidate shown first, and the panel's.

    See :class:`PositionStats` for every column. Items that are not pairs, failed and
    skipped calls, and sampled answers of items that are not pairs add nothing; a batch
    without pairs gives zero counts and ``None`` rates. Critics are those of the batch in
    panel order, then any other critic id its verdicts name.

    Raises:
        ConfigError: ``results`` is a file that is missing or holds a line that is not a
            result.
    """
    batch = as_batch(results)
    by_critic = _by_critic(batch)
    everyone = [v for verdicts in by_critic.values() for v in verdicts]
    return PositionBias(
        critics={name: _position_stats(verdicts) for name, verdicts in by_critic.items()},
        panel=_position_stats(everyone),
    )


# -- length -----------------------------------------------------------------------------------


class LengthBin(BaseModel):
    """Decisive verdicts on pairs whose relative length difference ``d = |len(a) - len(b)|
    / max(len(a), len(b))`` is in ``[low, high)`` (the last bin includes ``high``, 1.0).

    ``decisive``: verdicts that picked ``A`` or ``B`` on a pair of unequal lengths;
    ``longer_wins``: those that picked the longer one; ``longer_win_rate``: their share,
    0.5 when length does not matter, ``None`` without a verdict. ``equal_length``:
    decisive verdicts on pairs of equal length (``d = 0``, so always in the first bin),
    in no rate, since neither candidate is longer.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    low: float
    high: float
    decisive: int = 0
    longer_wins: int = 0
    longer_win_rate: float | None = None
    equal_length: int = 0


class LengthBias(BaseModel):
    """:func:`length_bias` of a batch: per critic (panel order) and for the consensus, one
    :class:`LengthBin` per bin, bins in ``edges`` order (``edges`` runs from 0.0 to 1.0)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    edges: list[float]
    critics: dict[str, list[LengthBin]]
    consensus: list[LengthBin]


def _checked_bins(bins: Sequence[float]) -> list[float]:
    """``[0.0, *bins, 1.0]``; :class:`ConfigError` unless ``bins`` rise strictly in (0, 1)."""
    try:
        inner = [float(edge) for edge in bins]
    except (TypeError, ValueError):
        raise ConfigError(f"bins must be numbers in (0, 1), got {bins!r}") from None
    if any(not 0.0 < edge < 1.0 for edge in inner) or any(
        low >= high for low, high in pairwise(inner)
    ):
        raise ConfigError(
            "bins are the inner edges of the length-difference bins: numbers in (0, 1), "
            f"strictly rising, e.g. (0.1, 0.25, 0.5); got {list(bins)!r}"
        )
    return [0.0, *inner, 1.0]


def _pair_lengths(result: EnsembleVerdict) -> tuple[int, int] | None:
    """The lengths of ``a`` and ``b`` of a pair's result; ``None`` for an item that is not
    a pair."""
    lengths = result.pair_lengths
    return (lengths[0], lengths[1]) if lengths is not None and len(lengths) == 2 else None


class _Tally:
    """Decisive verdicts per bin, and how many of them chose the longer candidate."""

    def __init__(self, edges: Sequence[float]) -> None:
        self.edges = edges
        self.inner = edges[1:-1]
        self.decisive = [0] * (len(edges) - 1)
        self.longer_wins = [0] * (len(edges) - 1)
        self.equal = 0

    def add(self, label: str, lengths: tuple[int, int]) -> None:
        if label not in _DECISIVE:
            return
        len_a, len_b = lengths
        if len_a == len_b:
            self.equal += 1
            return
        difference = abs(len_a - len_b) / max(len_a, len_b)
        # Inner edges only: d == 1.0 (one candidate empty) falls in the last bin.
        index = bisect.bisect_right(self.inner, difference)
        self.decisive[index] += 1
        self.longer_wins[index] += (label == "A") == (len_a > len_b)

    def bins(self) -> list[LengthBin]:
        return [
            LengthBin(
                low=self.edges[i],
                high=self.edges[i + 1],
                decisive=self.decisive[i],
                longer_wins=self.longer_wins[i],
                longer_win_rate=self.longer_wins[i] / self.decisive[i]
                if self.decisive[i]
                else None,
                equal_length=self.equal if i == 0 else 0,
            )
            for i in range(len(self.edges) - 1)
        ]


@provide("length_bias")
def length_bias(results: Results, bins: Sequence[float] = LENGTH_BINS) -> LengthBias:
    """How often the longer candidate of a pair wins, by how much longer it is.

    Each pair's relative length difference ``|len(a) - len(b)| / max(len(a), len(b))``
    (in characters, ``EnsembleVerdict.pair_lengths``) puts it in a bin; ``bins`` are the
    inner edges (default 10%, 25%, 50%: bins 0-10%, 10-25%, 25-50%, 50%+). Counted per
    critic, one per valid verdict that picked ``A`` or ``B`` (a ``TIE``, including the
    tie of a flip under ``order="both"``, is not decisive), and for the consensus, one
    per item whose vote chose ``A`` or ``B`` (a strategy's fallback label is no vote).
    Pairs of equal length are counted apart, in the first bin (:class:`LengthBin`).
    Results without pair lengths (items that are not pairs) add nothing: a batch without
    pairs gives zero counts and ``None`` rates.

    Raises:
        ConfigError: ``bins`` are not strictly rising numbers in (0, 1); ``results`` is a
            file that is missing or holds a line that is not a result.
    """
    edges = _checked_bins(bins)
    batch = as_batch(results)
    critics = {name: _Tally(edges) for name in _critic_names(batch)}
    consensus = _Tally(edges)
    for result in batch.verdicts:
        lengths = _pair_lengths(result)
        if lengths is None:
            continue
        if not is_fallback(result):
            consensus.add(result.consensus, lengths)
        for verdict in result.verdicts:
            if verdict.error is None:
                critics[verdict.critic_id].add(verdict.kind, lengths)
    return LengthBias(
        edges=edges,
        critics={name: tally.bins() for name, tally in critics.items()},
        consensus=consensus.bins(),
    )


# -- self-consistency -----------------------------------------------------------------------------


class SelfStats(BaseModel):
    """One critic's agreement with itself over a batch (``Critic(samples=n)``).

    ``sampled``: its verdicts that have a ``self_agreement`` (asked ``n > 1`` times, at
    least one answer valid); ``self_agreement``: their mean, 1.0 when it always repeated
    itself; ``None`` when it was never sampled.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    sampled: int = 0
    self_agreement: float | None = None


@provide("self_consistency")
def self_consistency(results: Results) -> dict[str, SelfStats]:
    """Each critic's mean self-agreement (``Verdict.self_agreement``: the share of its
    valid sampled answers on an item that give its most common label), by critic in
    panel order.

    This is reported apart from the agreement *between* critics (Krippendorff's alpha,
    pairwise agreement) on purpose: a judge that disagrees with itself is noise, not a
    second opinion, and counting its samples as votes of their own would make a panel
    look more reliable than it is. Critics never sampled (``samples=1``) get
    ``sampled=0`` and ``None``; failed and skipped calls have no self-agreement.

    Raises:
        ConfigError: ``results`` is a file that is missing or holds a line that is not a
            result.
    """
    batch = as_batch(results)
    out: dict[str, SelfStats] = {}
    for name, verdicts in _by_critic(batch).items():
        values = [v.self_agreement for v in verdicts if v.self_agreement is not None]
        out[name] = SelfStats(
            sampled=len(values),
            self_agreement=sum(values) / len(values) if values else None,
        )
    return out


# -- shared -------------------------------------------------------------------------------------


def _critic_names(batch: BatchResult) -> list[str]:
    """The batch's critics in panel order, then any other critic id its verdicts name."""
    seen = (v.critic_id for result in batch.verdicts for v in result.verdicts)
    return list(dict.fromkeys([*batch.critics, *seen]))


def _by_critic(batch: BatchResult) -> dict[str, list[Verdict]]:
    """Every verdict of the batch, by critic (a cascade's from every tier asked)."""
    out: dict[str, list[Verdict]] = {name: [] for name in _critic_names(batch)}
    for result in batch.verdicts:
        for verdict in result.verdicts:
            out[verdict.critic_id].append(verdict)
    return out


# The public path of these classes (cross_judge.bias): reprs, pickles and the docs name it.
for _public in (LengthBias, LengthBin, PositionBias, PositionStats, SelfStats):
    _public.__module__ = "cross_judge.bias"
del _public
