"""A batch's results digested in one pass, in memory that does not grow with the items'
text: :class:`BatchDigest`, what ``cross-judge stats``, ``cross-judge report``, the
end-of-run summary of ``cross-judge review`` and ``batch.summary()`` read.

Feed it one :class:`~cross_judge.verdict.EnsembleVerdict` at a time (:meth:`BatchDigest.add`,
or :meth:`BatchDigest.read` for a results file: one parsed result alive at a time). It keeps:

* counts and tallies for everything countable: items, consensus labels, fallbacks,
  abstentions, items to retry, disagreements, tokens, cost, per critic
  (:class:`~cross_judge.results.CriticTally`) and per cascade tier, the disputed items by
  reason, the position and length bias of pairs, self-consistency, each critic's answers
  against the consensus;
* per critic one small integer per item, the code of its label (0: no valid verdict), and
  per item the consensus's code: 2 bytes a critic and 2 for the consensus (4 bytes each
  past 65,534 distinct labels). Krippendorff's alpha, Fleiss' kappa, pairwise agreement,
  Cohen's kappa and the effective votes are computed by the same functions as
  :class:`~cross_judge.batch.BatchResult`'s, over rows decoded from the codes on the fly,
  so the numbers are the same. A numeric level of alpha (interval, ratio, ordinal without
  an order) also keeps 8 bytes a critic per item, only when asked for at construction;
* whole results only where their number is bounded: the items with a gold label (when
  gold is given), the first ``disputed`` disputed items, the first few ids of items to
  retry, one verdict per critic (what it records: model, vendor, prompt), and up to
  :data:`PAIRS_CHUNK` results of pairs at a time (their bias is counted chunk by chunk).

The correlated-errors Dawid-Skene model (effective votes without gold, 200 items or more)
is fitted at the end on the whole label matrix, read from the codes; its own memory is what
:func:`cross_judge.stats._dawid_skene.dawid_skene` needs.

It renders nothing (:mod:`._summary` and :mod:`._page` do) and calls no model.
"""

from __future__ import annotations

import math
import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

from ..errors import ConfigError
from ..results import (
    HUMAN_VENDOR,
    BatchResult,
    CriticStats,
    CriticTally,
    TierStats,
    is_fallback,
    is_incomplete,
    read_results,
    recorded_simulated_critics,
    recorded_simulated_without_gold,
    votes_and_consensus,
)
from ..verdict import ABSTAIN, RESERVED_KINDS, EnsembleVerdict, Usage, Verdict
from ._criteria import CriteriaDigest

if TYPE_CHECKING:
    from ..stats import (
        EffectiveVotes,
        GoldReport,
        LengthBias,
        Level,
        PositionBias,
        SelfStats,
        WeightsFit,
    )

__all__ = ["PAIRS_CHUNK", "BatchDigest", "CodedRow", "dispute_reasons"]

PAIRS_CHUNK = 512
"""Results of pairs held at a time: their position and length bias is counted per chunk."""

_FAILED_IDS_KEPT = 5
_NUMERIC_LEVELS = ("interval", "ratio")


def dispute_reasons(result: EnsembleVerdict) -> list[str]:
    """Why ``result`` needs a look, in this order (empty: it does not): ``no consensus``
    (the strategy's fallback) or ``abstained`` (a cascade left it for a human) or ``split
    vote`` (valid verdicts that are not unanimous); ``escalated`` (a cascade's first tier
    did not settle it); ``failed call`` (an ``ERROR``, ``PARSE_FAIL`` or budget skip);
    ``order flip`` (a pair whose two orders disagreed)."""
    reasons: list[str] = []
    if is_fallback(result):
        reasons.append("no consensus")
    elif result.consensus == ABSTAIN and result.tier is not None:
        reasons.append("abstained")
    elif result.n_valid > 0 and result.agreement_pct < 1.0:
        reasons.append("split vote")
    if result.tier:
        reasons.append("escalated")
    if is_incomplete(result) or any(v.kind == "PARSE_FAIL" for v in result.verdicts):
        reasons.append("failed call")
    if any(v.flipped for v in result.verdicts):
        reasons.append("order flip")
    return reasons


class CodedRow(Sequence[Any]):
    """One critic's (or the consensus's) values over the items, read from a compact array
    on the fly: ``read(stored)`` for each item's stored value (a label code, a score with
    NaN for none). Iterating it builds no list, so the statistics functions read a whole
    batch in a few bytes per item."""

    __slots__ = ("_read", "_stored")

    def __init__(self, stored: Sequence[Any], read: Callable[[Any], Any]) -> None:
        self._stored = stored
        self._read = read

    def __len__(self) -> int:
        return len(self._stored)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(map(self._read, self._stored[index]))
        return self._read(self._stored[index])

    def __iter__(self) -> Iterator[Any]:
        return map(self._read, self._stored)


def _score_or_none(stored: float) -> float | None:
    """A kept score; NaN (the verdict had none) reads as ``None``."""
    return None if stored != stored else stored


class _ItemsView(Sequence[tuple[Any, ...]]):
    """Critic rows seen as items x critics: each item a tuple, built when read."""

    __slots__ = ("_rows",)

    def __init__(self, rows: Sequence[Sequence[Any]]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows[0]) if self._rows else 0

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, ...]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return tuple(row[index] for row in self._rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self._rows, strict=True) if self._rows else iter(())


class _TierTally:
    """One cascade tier's counts, item by item (what :class:`TierStats` reports)."""

    __slots__ = ("abstained", "agreement", "asked", "cost", "cost_known", "critics", "decided")

    def __init__(self) -> None:
        self.asked = self.decided = self.abstained = 0
        self.agreement: float = 0
        self.cost: float = 0
        self.cost_known = True
        self.critics: dict[str, None] = {}


class BatchDigest:
    """The statistics and views of a batch of results, taken in one pass (see the module
    docstring for what is kept).

    ``level`` and ``values``: the level of :meth:`reliability_alpha` the caller will ask
    for (a numeric one keeps each verdict's number; nominal and ordinal with ``values``
    read the labels). ``gold`` (``{id: label}``): the labelled items are kept whole for
    :meth:`gold_report`, :meth:`learn_weights` and :meth:`gold_batch`. ``disputed``: how
    many disputed items (:func:`dispute_reasons`) to keep, the first ones in results order;
    every disputed item is counted. ``reasoning``: keep each kept verdict's reasoning
    (a kept verdict never keeps its raw response). ``critics``: the panel in order, as a
    :class:`BatchResult` names it (verdicts of other critics then count in no matrix and
    no per-critic table, as there); by default critics are named in first-seen order.

    Numbers equal :class:`BatchResult`'s methods of the same name on the same results.
    """

    def __init__(
        self,
        *,
        level: Level = "nominal",
        values: Iterable[str] | None = None,
        gold: Mapping[str, str] | None = None,
        disputed: int = 0,
        reasoning: bool = True,
        critics: Sequence[str] | None = None,
    ) -> None:
        self.level: Level = level
        self.values = list(values) if values is not None else None
        self.numeric = level in _NUMERIC_LEVELS or (level == "ordinal" and self.values is None)
        self.keep_disputed = max(0, disputed)
        self.reasoning = reasoning
        self.fixed_critics = critics is not None
        self.n = 0
        self.voting = "majority"
        self.elapsed_s = 0.0
        self.simulated_critics: list[str] = []
        self.simulated_without_gold: list[str] = []
        self.critics: list[str] = []
        self._index: dict[str, int] = {}
        self._codes: list[array[int]] = []
        self._scores: list[array[float]] = []
        self._labels: list[str] = []
        self._label_code: dict[str, int] = {}
        self._typecode = "H"
        self._consensus_codes: array[int] = array("H")
        self._tallies: dict[str, CriticTally] = {}
        self._names: dict[str, None] = {}  # every critic id seen (bias tables name them all)
        self._answered: dict[str, None] = {}
        self._consensus_seen: dict[str, None] = {}
        self._consensus: Counter[str] = Counter()
        self._fallbacks: Counter[str] = Counter()
        self.n_no_consensus = self.n_abstained = self.n_failed = self.n_disagreement = 0
        self.failed_ids: list[str] = []
        self._usage = Usage()
        self._cost: float = 0
        self._cost_known = True
        self._tiers: list[_TierTally] = []
        self.cascade = False
        self.pairs = False
        self.n_disputed = 0
        self.dispute_counts: Counter[str] = Counter()
        self.disputed: list[tuple[EnsembleVerdict, list[str]]] = []
        self.first_verdicts: dict[str, Verdict] = {}
        self._against: dict[str, Counter[tuple[str, str]]] = {}
        self._gold = dict(gold) if gold is not None else None
        self._gold_seen: set[str] = set()
        self.gold_results: list[EnsembleVerdict] = []
        self._pair_chunk: list[EnsembleVerdict] = []
        self._position: dict[str, list[int]] = {}
        self._position_panel = [0, 0, 0, 0, 0]
        self._length: dict[str, list[list[int]]] = {}
        self._length_consensus: list[list[int]] | None = None
        self._length_edges: list[float] | None = None
        self._samples: dict[str, list[float]] = {}
        self.criteria = CriteriaDigest(critics)  # rubric results' answers per criterion
        for name in critics or ():
            self._critic(name)

    # -- building ------------------------------------------------------------------------------

    @classmethod
    def of(
        cls,
        batch: BatchResult,
        *,
        level: Level = "nominal",
        values: Iterable[str] | None = None,
        gold: Mapping[str, str] | None = None,
        disputed: int = 0,
    ) -> BatchDigest:
        """The digest of a batch in memory: its critics, voting, wall time and simulated
        critics as it records them."""
        digest = cls(
            level=level, values=values, gold=gold, disputed=disputed, critics=batch.critics
        )
        for result in batch.verdicts:
            digest.add(result)
        digest.voting = batch.voting
        digest.elapsed_s = batch.elapsed_s
        digest.simulated_critics = list(batch.simulated_critics)
        digest.simulated_without_gold = list(batch.simulated_without_gold)
        return digest

    @classmethod
    def read(
        cls,
        path: str | os.PathLike[str],
        *,
        level: Level = "nominal",
        values: Iterable[str] | None = None,
        gold: Mapping[str, str] | None = None,
        disputed: int = 0,
        reasoning: bool = True,
    ) -> BatchDigest:
        """The digest of a results file, read line by line, with the simulated critics its
        run manifest records (as :meth:`BatchResult.from_jsonl`).

        Raises:
            ConfigError: the file is missing or a line is not a result (line number given).
        """
        digest = cls(level=level, values=values, gold=gold, disputed=disputed, reasoning=reasoning)
        for result in read_results(path):
            digest.add(result)
        digest.simulated_critics = recorded_simulated_critics(path)
        digest.simulated_without_gold = recorded_simulated_without_gold(path)
        return digest

    def __len__(self) -> int:
        return self.n

    def _critic(self, name: str) -> int:
        self._index[name] = len(self.critics)
        self.critics.append(name)
        self._names.setdefault(name, None)
        self._codes.append(array(self._typecode, bytes(self._codes_size() * self.n)))
        if self.numeric:
            self._scores.append(array("d", [math.nan]) * self.n)
        self._tallies[name] = CriticTally()
        return self._index[name]

    def _codes_size(self) -> int:
        return array(self._typecode).itemsize

    def _label(self, label: str) -> int:
        code = self._label_code.get(label)
        if code is None:
            self._labels.append(label)
            code = self._label_code[label] = len(self._labels)
            if code >= 0xFFFF and self._typecode == "H":  # past 2 bytes: widen every column
                self._typecode = "I"
                self._codes = [array("I", codes) for codes in self._codes]
                self._consensus_codes = array("I", self._consensus_codes)
        return code

    def add(self, result: EnsembleVerdict) -> None:
        """Take one result into the digest (results order is the batch's order)."""
        if self.n == 0:
            self.voting = result.voting
        verdicts = result.verdicts
        index = self._index
        for verdict in verdicts:
            name = verdict.critic_id
            if name not in index:
                if self.fixed_critics:
                    self._names.setdefault(name, None)
                    continue
                self._critic(name)
        codes = [0] * len(self.critics)
        scores = [math.nan] * len(self.critics) if self.numeric else None
        for verdict in verdicts:
            row = index.get(verdict.critic_id)
            if row is not None and verdict.error is None:
                codes[row] = self._label(verdict.kind)
                if scores is not None:
                    scores[row] = math.nan if verdict.score is None else verdict.score
            if verdict.critic_id not in self.first_verdicts or (
                self.first_verdicts[verdict.critic_id].model is None and verdict.model
            ):
                self.first_verdicts[verdict.critic_id] = _lean(verdict, reasoning=False)
        for row, code in enumerate(codes):
            self._codes[row].append(code)
            if code:
                self._answered.setdefault(self._labels[code - 1], None)
        if scores is not None:
            for row, score in enumerate(scores):
                self._scores[row].append(score)
        fallback = is_fallback(result)
        consensus = result.consensus
        self._consensus_seen.setdefault(consensus, None)
        self._consensus_codes.append(0 if fallback else self._label(consensus))
        self.n += 1
        self._count(result, fallback)
        self._count_tiers(result)
        self._count_pairs(result)
        self.criteria.add(result)
        why = dispute_reasons(result)
        if why:
            self.n_disputed += 1
            self.dispute_counts.update(why)
            if len(self.disputed) < self.keep_disputed:
                self.disputed.append((_lean_result(result, self.reasoning), why))
        if self._gold is not None and result.query_id in self._gold:
            self._gold_seen.add(result.query_id)
            self.gold_results.append(_lean_result(result, self.reasoning))

    def _count(self, result: EnsembleVerdict, fallback: bool) -> None:
        consensus = result.consensus
        if fallback:
            self.n_no_consensus += 1
            self._fallbacks[consensus] += 1
        else:
            self._consensus[consensus] += 1
        if consensus == ABSTAIN and result.tier is not None:
            self.n_abstained += 1
        if is_incomplete(result):
            self.n_failed += 1
            if len(self.failed_ids) < _FAILED_IDS_KEPT:
                self.failed_ids.append(result.query_id)
        self.n_disagreement += result.disagreement
        self._usage = self._usage + result.usage
        if result.cost_usd is None:
            self._cost_known = False
        else:
            self._cost += result.cost_usd
        tallies = self._tallies
        against = self._against
        for verdict, reference in votes_and_consensus(result):
            tally = tallies.get(verdict.critic_id)
            if tally is not None:
                tally.add(verdict, reference)
            if fallback or verdict.error is not None or reference in RESERVED_KINDS:
                continue
            counts = against.get(verdict.critic_id)
            if counts is None:
                counts = against[verdict.critic_id] = Counter()
            counts[(reference, verdict.kind)] += 1
        for verdict in result.verdicts:
            if verdict.self_agreement is not None:
                own = self._samples.setdefault(verdict.critic_id, [0, 0])
                own[0] += 1
                own[1] += verdict.self_agreement

    def _count_tiers(self, result: EnsembleVerdict) -> None:
        if not result.tiers:
            return
        self.cascade = True
        while len(self._tiers) < len(result.tiers):
            self._tiers.append(_TierTally())
        for index, part in enumerate(result.tiers):
            tally = self._tiers[index]
            tally.asked += 1
            tally.critics.update(dict.fromkeys(v.critic_id for v in part.verdicts))
            if part.cost_usd is None:
                tally.cost_known = False
            else:
                tally.cost += part.cost_usd
            if result.tier == index:
                if result.consensus == ABSTAIN:
                    tally.abstained += 1
                else:
                    tally.decided += 1
                    tally.agreement += part.agreement_pct

    def _count_pairs(self, result: EnsembleVerdict) -> None:
        ordered = any(v.order is not None for v in result.verdicts)
        self.pairs = self.pairs or ordered
        if (
            ordered
            or result.pair_lengths is not None
            or any(v.flipped is not None for v in result.verdicts)
        ):
            self._pair_chunk.append(_lean_result(result, reasoning=False))
            if len(self._pair_chunk) >= PAIRS_CHUNK:
                self._flush_pairs()

    def _flush_pairs(self) -> None:
        """Count the pairs held into the position and length tallies (the functions of
        :mod:`cross_judge.stats._bias` over the chunk), then drop them."""
        from ..stats import length_bias, position_bias

        if not self._pair_chunk:
            return
        chunk = BatchResult.model_construct(
            verdicts=self._pair_chunk, critics=list(self._names), voting=self.voting
        )
        self._pair_chunk = []
        position = position_bias(chunk)
        for name, stats in position.critics.items():
            _add_position(self._position.setdefault(name, [0, 0, 0, 0, 0]), stats)
        _add_position(self._position_panel, position.panel)
        lengths = length_bias(chunk)
        self._length_edges = lengths.edges
        for name, bins in lengths.critics.items():
            _add_lengths(self._length.setdefault(name, _zero_bins(len(bins))), bins)
        if self._length_consensus is None:
            self._length_consensus = _zero_bins(len(lengths.consensus))
        _add_lengths(self._length_consensus, lengths.consensus)

    # -- agreement -------------------------------------------------------------------------------

    def labels_matrix(self) -> list[CodedRow]:
        """Critics x items labels (``None``: no valid verdict), as
        :meth:`BatchResult.labels_matrix`, each row decoded from the codes when read."""
        decode: list[str | None] = [None, *self._labels]
        return [CodedRow(codes, decode.__getitem__) for codes in self._codes]

    def items_matrix(self) -> _ItemsView:
        """Items x critics labels, each item's tuple built when read."""
        return _ItemsView(self.labels_matrix())

    def reliability_alpha(
        self,
        level: Level | None = None,
        values: Iterable[str] | None = None,
        *,
        numbers: Literal["auto", "scores", "labels"] = "auto",
    ) -> float | None:
        """Krippendorff's alpha, as :meth:`BatchResult.reliability_alpha` (same levels,
        ``values`` and one numeric reading per batch, ``numbers``); ``level`` defaults to
        the digest's. A numeric level needs a digest built for one: it keeps each
        verdict's score only then (8 bytes a critic per item).

        Raises:
            ConfigError: as :meth:`BatchResult.reliability_alpha`; a numeric level the
                digest keeps no scores for.
        """
        from ..stats import alpha_of_votes, compares_labels

        level = self.level if level is None else level
        order = list(values) if values is not None else None
        scores = None
        if not compares_labels(level, order):
            if not self.numeric:
                raise ConfigError(
                    f"this digest keeps no scores: build it with level={level!r} for a "
                    "numeric alpha"
                )
            scores = [CodedRow(row, _score_or_none) for row in self._scores]
        return alpha_of_votes(self.critics, self.labels_matrix(), scores, level, order, numbers)

    def fleiss_kappa(self) -> float | None:
        """Fleiss' kappa, as :meth:`BatchResult.fleiss_kappa`."""
        from ..stats import fleiss_kappa

        return fleiss_kappa(self.labels_matrix())

    def pairwise_agreement(
        self, measure: Literal["percent", "cohen"] = "percent"
    ) -> dict[tuple[str, str], float | None]:
        """Agreement of each pair of critics, as :meth:`BatchResult.pairwise_agreement`."""
        from ..stats import pairwise_agreement

        return pairwise_agreement(self.labels_matrix(), self.critics, measure)

    def shared_items(self) -> dict[tuple[str, str], int]:
        """For each pair of critics (both ways round, and each with itself), the items both
        answered validly."""
        shared: dict[tuple[str, str], int] = {}
        for i, a in enumerate(self.critics):
            for j in range(i, len(self.critics)):
                b = self.critics[j]
                count = sum(
                    1 for x, y in zip(self._codes[i], self._codes[j], strict=True) if x and y
                )
                shared[a, b] = shared[b, a] = count
        return shared

    # -- counts ----------------------------------------------------------------------------------

    def consensus_counts(self) -> dict[str, int]:
        """Items per consensus label chosen by a vote, most common first (fallbacks left
        out), as :meth:`BatchResult.consensus_counts`."""
        return dict(self._consensus.most_common())

    def fallback_counts(self) -> dict[str, int]:
        """Items per fallback label (no vote decided), most common first."""
        return dict(self._fallbacks.most_common())

    @property
    def usage(self) -> Usage:
        """Tokens used by the whole batch."""
        return self._usage

    @property
    def cost_usd(self) -> float | None:
        """Cost of the whole batch; ``None`` unless every item's cost is known."""
        return self._cost if self.n and self._cost_known else None

    @property
    def human_critics(self) -> list[str]:
        """The critics that are people (``vendor="human"``), as
        :attr:`BatchResult.human_critics`."""
        first = self.first_verdicts
        return [n for n in self.critics if n in first and first[n].vendor == HUMAN_VENDOR]

    def critic_stats(self) -> dict[str, CriticStats]:
        """Per-critic counts and rates, as :meth:`BatchResult.critic_stats`."""
        return {name: tally.stats(name) for name, tally in self._tallies.items()}

    def tier_stats(self) -> list[TierStats]:
        """Per-tier counts of a cascade's results, as :meth:`BatchResult.tier_stats`."""
        n = self.n
        return [
            TierStats(
                tier=index,
                critics=list(tally.critics),
                asked=tally.asked,
                decided=tally.decided,
                abstained=tally.abstained,
                share_asked=tally.asked / n if n else 0.0,
                share_decided=tally.decided / n if n else 0.0,
                agreement=tally.agreement / tally.decided if tally.decided else None,
                cost_usd=tally.cost if tally.cost_known else None,
            )
            for index, tally in enumerate(self._tiers)
        ]

    def against_consensus(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per critic, ``{consensus: {answered: count}}`` over its valid votes on items
        whose (tier's) consensus is a voted label; labels sorted, every cell present."""
        names = [*self.critics, *(name for name in self._against if name not in self._index)]
        out: dict[str, dict[str, dict[str, int]]] = {}
        for name in names:
            pairs = self._against.get(name, Counter())
            labels = sorted({label for pair in pairs for label in pair})
            out[name] = {ref: {ans: pairs.get((ref, ans), 0) for ans in labels} for ref in labels}
        return out

    # -- bias ------------------------------------------------------------------------------------

    def position_bias(self) -> PositionBias:
        """As :meth:`BatchResult.position_bias`, from the counts of every chunk of pairs."""
        from ..stats import PositionBias

        self._flush_pairs()
        zero = [0, 0, 0, 0, 0]
        return PositionBias(
            critics={name: _position(self._position.get(name, zero)) for name in self._names},
            panel=_position(self._position_panel),
        )

    def length_bias(self) -> LengthBias:
        """As :meth:`BatchResult.length_bias` with the default bins."""
        from ..stats import LENGTH_BINS, LengthBias

        self._flush_pairs()
        edges = self._length_edges or [0.0, *LENGTH_BINS, 1.0]
        zero = _zero_bins(len(edges) - 1)
        return LengthBias(
            edges=edges,
            critics={name: _bins(edges, self._length.get(name, zero)) for name in self._names},
            consensus=_bins(edges, self._length_consensus or zero),
        )

    def self_consistency(self) -> dict[str, SelfStats]:
        """As :meth:`BatchResult.self_consistency`."""
        from ..stats import SelfStats

        out: dict[str, SelfStats] = {}
        for name in self._names:
            count, total = self._samples.get(name, (0, 0))
            out[name] = SelfStats(
                sampled=int(count), self_agreement=total / count if count else None
            )
        return out

    # -- gold ------------------------------------------------------------------------------------

    def gold_batch(self) -> BatchResult:
        """The labelled items as a :class:`BatchResult` (the digest's critics and voting).

        Raises:
            ConfigError: no gold was given, gold ids that are no item, or no labelled item.
        """
        self._checked_gold()
        return BatchResult(
            verdicts=list(self.gold_results),
            critics=list(self.critics),
            voting=self.voting,
            simulated_critics=list(self.simulated_critics),
            simulated_without_gold=list(self.simulated_without_gold),
        )

    def _checked_gold(self) -> dict[str, str]:
        if self._gold is None:
            raise ConfigError("this digest was built without gold: pass gold={id: label}")
        unknown = [g for g in self._gold if g not in self._gold_seen]
        if unknown:
            shown = ", ".join(repr(g) for g in unknown[:5])
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise ConfigError(
                f"{len(unknown)} gold id(s) are not among the {self.n} items: {shown}{more}; "
                "check that the gold file belongs to these results (ids are the items' "
                "query ids)."
            )
        if not self.gold_results:
            raise ConfigError("no item of the batch has a gold label; gold ids are the items' ids")
        return self._gold

    def gold_label(self, item_id: str) -> str | None:
        """The gold label of ``item_id``; ``None`` when it has none or no gold was given."""
        return None if self._gold is None else self._gold.get(item_id)

    def wrong_against_gold(self) -> list[EnsembleVerdict]:
        """The labelled items whose consensus is not their gold label, in results order:
        items every critic got wrong the same way (unanimous) included, and items with no
        consensus (the strategy's fallback label) or abstained by a cascade. As many as the
        consensus row of :meth:`gold_report` counts wrong.

        Raises:
            ConfigError: as :meth:`gold_batch`.
        """
        gold = self._checked_gold()
        return [r for r in self.gold_results if r.consensus != gold[r.query_id]]

    def vocabulary(self) -> list[str]:
        """What a gold label may be: every label a critic answered (items in order, each
        item's critics in panel order), then every consensus (a fallback included)."""
        return list(dict.fromkeys([*self._answered, *self._consensus_seen]))

    def _gold_columns(
        self,
    ) -> tuple[list[list[str | None]], list[list[float | None]], list[str | None]]:
        """The labelled items' labels and stated confidences (items x critics, a critic's
        last valid verdict on an item, as the batch's matrix takes it) and gold labels."""
        gold = self._checked_gold()
        labels: list[list[str | None]] = []
        confidences: list[list[float | None]] = []
        for result in self.gold_results:
            row: list[str | None] = [None] * len(self.critics)
            stated: list[float | None] = [None] * len(self.critics)
            for verdict in result.verdicts:
                column = self._index.get(verdict.critic_id)
                if column is not None and verdict.error is None:
                    row[column] = verdict.kind
                    stated[column] = verdict.confidence if verdict.confidence_stated else None
            labels.append(row)
            confidences.append(stated)
        return labels, confidences, [gold[r.query_id] for r in self.gold_results]

    def gold_report(self, *, ci: float | None = None) -> GoldReport:
        """The critics and the consensus against the gold labels, as
        :meth:`BatchResult.against` (bootstrap intervals at ``ci``).

        Raises:
            ConfigError: as :meth:`BatchResult.against`.
        """
        from ..stats import gold_metrics

        labels, confidences, gold = self._gold_columns()
        report = gold_metrics(
            labels,
            self.critics,
            gold,
            confidences=confidences,
            consensus=[r.consensus for r in self.gold_results],
            ci=ci,
            vocabulary=self.vocabulary(),
            item_ids=[r.query_id for r in self.gold_results],
        )
        return replace(report, n_items=self.n)

    def learn_weights(self) -> WeightsFit:
        """The log-odds weights the gold labels earn, as
        :func:`cross_judge.reliability.learn_weights` over the whole batch: fitted on the
        labelled items, with its classes (the labels the critics answered, on any item,
        and the gold labels) counted over every item."""
        from ..stats import learn_weights

        gold = self._checked_gold()
        batch = self.gold_batch()
        labelled = {r.query_id: gold[r.query_id] for r in self.gold_results}
        classes = set(self._answered) | set(labelled.values())
        return learn_weights(batch, labelled, classes=max(2, len(classes)))

    def effective_votes(self, *, gold: bool) -> EffectiveVotes:
        """How many independent votes the panel is worth, as
        :func:`cross_judge.reliability.effective_votes`: with ``gold``, errors against the
        gold labels; without, as the correlated-errors Dawid-Skene model estimates them
        (numpy), else against the consensus."""
        from ..stats import (
            dawid_skene_matrix as dawid_skene,
            effective_votes_matrix as count,
            numpy_available,
            votes_worth,
        )

        if gold:
            labels, _, reference = self._gold_columns()
            return count(labels, reference)
        if not numpy_available() or not self.n:
            consensus = CodedRow(self._consensus_codes, [None, *self._labels].__getitem__)
            return replace(count(self.items_matrix(), consensus), reference="consensus")
        # Each distinct vote pattern once, weighted by its items (the EM groups them so
        # anyway): memory that does not grow with the items.
        patterns = Counter(zip(*self._codes, strict=True))
        decode = [None, *self._labels]
        distinct = [[decode[code] for code in pattern] for pattern in patterns]
        fit = dawid_skene(distinct, errors="correlated", weights=list(patterns.values()))
        correlation = fit.correlation
        voting = [j for j, codes in enumerate(self._codes) if any(codes)]
        pairwise: dict[tuple[int, int], float | None] = {}
        for a, i in enumerate(voting):
            for j in voting[a + 1 :]:
                pairwise[i, j] = (
                    None if correlation is None else correlation.error_correlation(i, j)
                )
        return replace(votes_worth(len(voting), pairwise), reference="model")


# -- helpers -------------------------------------------------------------------------------------


def _lean(verdict: Verdict, *, reasoning: bool) -> Verdict:
    """``verdict`` without its raw response (and without its reasoning unless asked)."""
    if verdict.raw_response is None and (reasoning or not verdict.reasoning):
        return verdict
    update: dict[str, Any] = {"raw_response": None}
    if not reasoning:
        update["reasoning"] = ""
    return verdict.model_copy(update=update)


def _lean_result(result: EnsembleVerdict, reasoning: bool) -> EnsembleVerdict:
    """A copy of ``result`` whose verdicts are :func:`_lean` (kept past the next line)."""
    return result.model_copy(
        update={"verdicts": [_lean(v, reasoning=reasoning) for v in result.verdicts]}
    )


def _add_position(into: list[int], stats: Any) -> None:
    into[0] += stats.answers
    into[1] += stats.decisive
    into[2] += stats.first_picks
    into[3] += stats.pairs_both
    into[4] += stats.flips


def _position(counts: Sequence[int]) -> Any:
    """A :class:`~cross_judge.bias.PositionStats` from summed counts."""
    from ..stats import PositionStats

    answers, decisive, first_picks, pairs_both, flips = counts
    return PositionStats.from_counts(answers, decisive, first_picks, pairs_both, flips)


def _zero_bins(n: int) -> list[list[int]]:
    return [[0, 0, 0] for _ in range(n)]


def _add_lengths(into: list[list[int]], bins: Sequence[Any]) -> None:
    for counts, one in zip(into, bins, strict=True):
        counts[0] += one.decisive
        counts[1] += one.longer_wins
        counts[2] += one.equal_length


def _bins(edges: Sequence[float], counts: Sequence[Sequence[int]]) -> list[Any]:
    """:class:`~cross_judge.bias.LengthBin` per bin from summed counts."""
    from ..stats import LengthBin

    return [
        LengthBin(
            low=edges[i],
            high=edges[i + 1],
            decisive=decisive,
            longer_wins=wins,
            longer_win_rate=wins / decisive if decisive else None,
            equal_length=equal,
        )
        for i, (decisive, wins, equal) in enumerate(counts)
    ]
