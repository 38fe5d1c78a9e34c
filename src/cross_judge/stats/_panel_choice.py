"""Choosing a panel from the stored verdicts of a pilot run: which critics, voting how, for
what cost. Zero calls: every candidate is replayed on the verdicts already stored.

:func:`pilot_table` reads a batch in which candidate critics judged the same items into
answer *patterns* (one answer per critic: a label, or :data:`FAILED`), items with the same
pattern, part and truth counted once. A seed splits the items into a *selection* part (plans
are ranked on it) and a *held-out* part (the figures reported come from it). The truth is
gold where given (``reference="gold"``, labelled items only); without gold it is the
posterior of a Dawid-Skene model of every critic's votes (``reference="dawid_skene"``): an
estimate from the votes themselves, not a measurement, and said so wherever shown.

:func:`replay_panel` decides each pattern once per panel with the real voting strategies on
stand-in verdicts, so a plan's figures are the panel's own on those verdicts: ``majority``;
``weighted`` with log-odds weights learned on the selection items (from the model's
accuracies without gold), without confidences; ``dawid_skene``, the batch re-decided by a
Dawid-Skene model of the panel's own votes (``batch.revote("dawid_skene")``, 3+ critics). A
two-tier cascade is replayed at one threshold on the first tier's ``agreement_pct``, also
escalating on a failed call or a fallback (the :class:`~cross_judge.cascade.Escalation`
defaults). :func:`search_panels` replays every subset of up to
:data:`MAX_EXHAUSTIVE_CRITICS` critics under each strategy (255 for 8 critics), beyond that
a greedy forward search that adds the critic raising the selection accuracy most.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigError, ErrorKind
from ..verdict import Verdict
from ..voting import agreement_pct, get_voting_strategy
from ._alignment import split_gold
from ._dawid_skene import dawid_skene as fit_matrix
from ._gold import effective_votes as effective_votes_matrix, load_gold, votes_worth
from ._gold_paired import wilson_interval
from ._paired import mcnemar_exact
from ._reliability import log_odds_weight

if TYPE_CHECKING:
    from ..results import BatchResult

__all__ = [
    "FAILED",
    "MAX_EXHAUSTIVE_CRITICS",
    "MIN_PART_ITEMS",
    "PANEL_STRATEGIES",
    "Comparison",
    "CostTally",
    "PanelFigures",
    "PanelTier",
    "PilotTable",
    "Reference",
    "compare_panels",
    "measure_panel",
    "pilot_table",
    "replay_panel",
    "search_panels",
]

_Z_95 = 1.959964
"""The normal quantile of a two-sided 95% interval (the estimated accuracy's, a paired
difference's)."""

FAILED = "\x00failed"
"""The pattern entry of a failed call (``ERROR`` or ``PARSE_FAIL``)."""

PANEL_STRATEGIES = ("majority", "weighted", "dawid_skene")
"""The voting a plan may use, simplest first (a tie between plans goes to the simpler)."""

MAX_EXHAUSTIVE_CRITICS = 12
"""Up to this many critics every subset is replayed; beyond, a greedy search."""

MIN_PART_ITEMS = 10
"""The fewest items each part (selection, held-out) must have."""

DAWID_SKENE_MIN_CRITICS = 3
"""Dawid-Skene is offered for panels of this many critics or more (with fewer it decides
as a weighted vote does)."""

FALLBACK = "UNCLEAR"
"""What a panel decides when no vote does (every call failed): never right."""

WEIGHT_SMOOTHING = 2.0
"""The pseudo-items a learned weight's accuracy is smoothed with (:func:`learn_weights`')."""

SELECTION, HELD_OUT, UNLABELLED = 0, 1, 2

Reference = Literal["gold", "dawid_skene"]
Pattern = tuple[str, ...]


@dataclass(frozen=True)
class PanelTier:
    """One tier of a plan: its critics (in the pilot's critic order), its voting and, for
    ``weighted``, each critic's weight."""

    critics: tuple[str, ...]
    voting: str
    weights: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Group:
    """Items with the same answers, part and truth: ``truth`` is ``(label, probability)``
    pairs (a gold label at 1.0; the model's posterior without gold)."""

    pattern: Pattern
    part: int
    truth: tuple[tuple[str, float], ...]
    count: int


@dataclass(frozen=True)
class PilotTable:
    """A pilot run as :func:`pilot_table` reads it (see the module docstring).

    ``costs`` is each critic's mean cost per item in USD; ``n_selection``/``n_held_out``
    the items of each part, ``n_unlabelled`` those with no gold (used by Dawid-Skene and
    for the escalation share only), ``left_out`` the items some critic did not judge.
    ``weights`` are the ``weighted`` votes' weights; ``error_correlation`` the phi of each
    pair of critics' errors on the selection items (``None`` where undefined).
    """

    critics: tuple[str, ...]
    classes: tuple[str, ...]
    groups: tuple[Group, ...]
    costs: tuple[float, ...]
    reference: Reference
    n_selection: int
    n_held_out: int
    n_unlabelled: int
    left_out: int
    holdout: float
    seed: int
    weights: Mapping[str, float]
    error_correlation: Mapping[tuple[int, int], float | None] = field(repr=False)
    decided: dict[object, dict[Pattern, _TierDecision]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def index(self, critics: Iterable[str]) -> tuple[int, ...]:
        """The column of each named critic, in the pilot's order."""
        columns = {name: j for j, name in enumerate(self.critics)}
        return tuple(sorted(columns[name] for name in critics))

    def cost(self, critics: Iterable[str]) -> float:
        """The summed cost per item of ``critics``."""
        return math.fsum(self.costs[j] for j in self.index(critics))

    def selection_groups(self) -> list[Group]:
        """The groups of the selection part (labelled: their truth is a gold label)."""
        return [g for g in self.groups if g.part == SELECTION]

    def stand_ins(self, critics: Sequence[str], answers: Sequence[str]) -> list[Verdict]:
        """Verdicts that answer as ``answers`` (one per critic of ``critics``, in the
        pilot's order; :data:`FAILED` for a failed call): what a voting strategy reads."""
        ballots = _Ballots(self.critics)
        return [ballots(j, a) for j, a in zip(self.index(critics), answers, strict=True)]

    def agreements(self, tier: PanelTier) -> set[float]:
        """Every ``agreement_pct`` the tier's results reach on the pilot's items."""
        decided = _tier_decisions(self, tier, _Ballots(self.critics))
        return {d.agreement for d in decided.values()}

    def effective_votes(self, critics: Iterable[str]) -> float | None:
        """How many independent votes ``critics`` are worth, from their errors'
        correlation on the selection items (:func:`~cross_judge.stats._gold.votes_worth`)."""
        columns = self.index(critics)
        pairs = {p: self.error_correlation.get(p) for p in combinations(columns, 2)}
        return votes_worth(len(columns), pairs).effective


@dataclass(frozen=True)
class PanelFigures:
    """A plan replayed on the pilot: ``tiers`` (one for a plain panel, two for a cascade,
    whose first tier's result goes on when its agreement is below ``agreement_below``, or
    a call failed, or no vote decided).

    ``selection_accuracy`` is what it was ranked on; ``accuracy`` and ``interval`` (95%:
    Wilson's with gold, a normal interval on the model's posteriors without) are on the
    held-out items. ``cost_per_item`` is its expected cost (the cascade's second tier
    counted on the share escalated, over every item of the pilot); ``escalated`` that
    share; ``effective_votes`` what its critics are worth together.
    """

    tiers: tuple[PanelTier, ...]
    agreement_below: float | None
    selection_accuracy: float
    accuracy: float
    interval: tuple[float, float] | None
    cost_per_item: float
    escalated: float | None
    effective_votes: float | None
    n_selection: int
    n_held_out: int
    outcomes: tuple[float, ...] = field(repr=False, compare=False, default=())

    @property
    def critics(self) -> tuple[str, ...]:
        """Every critic of the plan, first tier first."""
        return tuple(name for tier in self.tiers for name in tier.critics)

    @property
    def size(self) -> int:
        """How many critics the plan asks (a cascade's every tier)."""
        return len(self.critics)


class CostTally:
    """Each critic's cost per item as a panel is chosen on it: the mean ``cost_usd`` of its
    verdicts not answered from the cache, known when every one of them carries a cost and
    there is one (a cached answer's cost is not its price)."""

    def __init__(self, critics: Iterable[str]) -> None:
        self._spent: dict[str, list[float]] = {name: [] for name in critics}
        self._unpriced: set[str] = set()

    def add(self, verdict: Verdict) -> None:
        """Count ``verdict``'s cost (a critic not named at the start is ignored)."""
        spent = self._spent.get(verdict.critic_id)
        if spent is None or verdict.cached:
            return
        if verdict.cost_usd is None:
            self._unpriced.add(verdict.critic_id)
        else:
            spent.append(verdict.cost_usd)

    def known(self) -> dict[str, float]:
        """The critics whose cost per item is known, with it."""
        return {
            name: math.fsum(spent) / len(spent)
            for name, spent in self._spent.items()
            if spent and name not in self._unpriced
        }


@dataclass(frozen=True)
class Comparison:
    """A plan against another on the same held-out items: the accuracy ``difference``
    (points of share), its 95% ``interval``, and with gold the exact McNemar ``p_value``
    over the ``better``/``worse`` items where exactly one of them is right."""

    difference: float
    interval: tuple[float, float] | None
    p_value: float | None
    better: int | None
    worse: int | None


# -- reading the pilot --------------------------------------------------------------------------


def pilot_table(
    batch: BatchResult,
    gold: Mapping[str, str] | str | None = None,
    *,
    holdout: float = 0.5,
    seed: int = 0,
    prices: Mapping[str, float] | None = None,
) -> PilotTable:
    """The pilot ``batch`` as a table of answer patterns (see the module docstring).

    ``gold`` is ``{id: label}`` or a gold file; ids outside the batch are ignored. ``prices``
    gives a critic's cost per item in USD, over what its stored verdicts cost (needed
    when they carry none, as a model without a known price gives). A cached verdict's cost
    is not its price and is not counted.

    Raises:
        ConfigError: a cascade's results (its tiers judged different items); fewer than two
            critics, or fewer than :data:`MIN_PART_ITEMS` items per part judged by every
            critic (results without enough overlapping critics); a gold label no critic
            answers; a critic whose cost is unknown and not in ``prices``; a bad ``prices``
            entry, ``holdout`` or ``seed``.
    """
    if any(result.tiers for result in batch.verdicts):
        raise ConfigError(
            "these results come from a cascade, whose tiers judged different items; choose a "
            "panel from a pilot in which every candidate critic judged every item (one "
            "Ensemble of all of them, or the cascade with all_tiers=True flattened: "
            "BatchResult.from_results(...))"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    critics = tuple(batch.critics)
    if len(critics) < 2:
        raise ConfigError(
            f"the results hold {len(critics)} critic(s); choosing a panel needs a pilot in which "
            "two or more candidate critics judged the same items"
        )
    column = {name: j for j, name in enumerate(critics)}
    prices = _checked_prices(prices, critics)
    ids: list[str] = []
    patterns: list[Pattern] = []
    tally = CostTally(critics)
    left_out = 0
    for result in batch.verdicts:
        row: list[str | None] = [None] * len(critics)
        for verdict in result.verdicts:
            j = column.get(verdict.critic_id)
            if j is None or row[j] is not None:
                continue
            row[j] = verdict.kind if verdict.error is None else FAILED
            tally.add(verdict)
        if any(answer is None for answer in row):
            left_out += 1
            continue
        ids.append(result.query_id)
        patterns.append(tuple(answer for answer in row if answer is not None))
    # By id, so nothing (the split, the groups, the model's fit) reads the file's order,
    # which is the order the calls finished in.
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ids = [ids[k] for k in order]
    patterns = [patterns[k] for k in order]
    costs = _costs(critics, tally.known(), prices)
    answered = sorted({a for p in patterns for a in p if a != FAILED})
    labels = _gold_labels(gold, answered) if gold is not None else None
    if labels is not None:
        what = "labelled items"
        groups, weights = _labelled_groups(critics, ids, patterns, labels, answered, holdout, seed)
    else:
        what = "items"
        groups, weights = _model_groups(critics, ids, patterns, answered, holdout, seed)
    sizes = _part_counts(groups)
    _part_sizes_or_raise(sizes, what, holdout)
    return PilotTable(
        critics=critics,
        classes=tuple(answered),
        groups=groups,
        costs=costs,
        reference="gold" if labels is not None else "dawid_skene",
        n_selection=sizes[SELECTION],
        n_held_out=sizes[HELD_OUT],
        n_unlabelled=sizes[UNLABELLED],
        left_out=left_out,
        holdout=holdout,
        seed=seed,
        weights=weights,
        error_correlation=_error_correlation(groups, len(critics)),
    )


def _checked_prices(prices: Mapping[str, float] | None, critics: Sequence[str]) -> dict[str, float]:
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise ConfigError(f"prices must map critic names to USD per item, got {prices!r:.80}")
    checked: dict[str, float] = {}
    for name, price in prices.items():
        if name not in critics:
            raise ConfigError(
                f"prices names {name!r}, which is no critic of these results ({list(critics)})"
            )
        if (
            isinstance(price, bool)
            or not isinstance(price, (int, float))
            or not (math.isfinite(price) and price >= 0)
        ):
            raise ConfigError(f"prices[{name!r}] must be USD per item, >= 0, got {price!r}")
        checked[name] = float(price)
    return checked


def _costs(
    critics: Sequence[str], known: Mapping[str, float], prices: Mapping[str, float]
) -> tuple[float, ...]:
    costs: list[float] = []
    unknown: list[str] = []
    for name in critics:
        if name in prices:
            costs.append(prices[name])
        elif name in known:
            costs.append(known[name])
        else:
            unknown.append(name)
            costs.append(math.nan)
    if unknown:
        shown = ", ".join(f"{name}=0.001" for name in unknown)
        raise ConfigError(
            f"the stored verdicts of {unknown} carry no cost (their model has no known price, "
            "or every answer came from the cache); give each critic's cost per item in USD: "
            f"prices={{...}} in Python, --price {shown.split(', ')[0]} (once per critic) on "
            "the command line"
        )
    return tuple(costs)


def _gold_labels(gold: Mapping[str, str] | str, answered: Sequence[str]) -> dict[str, str]:
    labels = load_gold(gold)
    off = sorted({label for label in labels.values() if label not in answered})
    if off:
        raise ConfigError(
            f"gold labels {off} are not among the labels the critics answer ({list(answered)}); "
            "a panel cannot decide them: fix the gold file (a typo, another label set?) or "
            "leave those items out"
        )
    return labels


def _part_sizes_or_raise(counts: Sequence[int], what: str, holdout: float) -> None:
    if min(counts[SELECTION], counts[HELD_OUT]) < MIN_PART_ITEMS:
        needed = math.ceil(MIN_PART_ITEMS / min(holdout, 1 - holdout))
        raise ConfigError(
            f"{counts[SELECTION] + counts[HELD_OUT]} {what} judged by every critic split into "
            f"{counts[SELECTION]} to choose on and {counts[HELD_OUT]} held out "
            f"(holdout={holdout}); each part needs at least {MIN_PART_ITEMS}: give a pilot "
            f"of at least {needed} such items in which every candidate critic judged the "
            "same items (results without enough overlapping critics cannot be compared)"
        )


def _split(
    by_id: Mapping[str, str], ids: Sequence[str], holdout: float, seed: int, what: str
) -> set[str]:
    """The held-out ids: :func:`split_gold`'s split, stratified by ``by_id``'s labels."""
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 < holdout < 1:
        raise ConfigError(f"holdout must be a share strictly between 0 and 1, got {holdout!r}")
    n = sum(1 for item_id in ids if item_id in by_id)
    held = round(holdout * n)
    _part_sizes_or_raise((n - held, held, 0), what, holdout)
    return set(split_gold(by_id, ids, holdout=holdout, seed=seed).held_out)


def _labelled_groups(
    critics: tuple[str, ...],
    ids: Sequence[str],
    patterns: Sequence[Pattern],
    labels: Mapping[str, str],
    answered: Sequence[str],
    holdout: float,
    seed: int,
) -> tuple[tuple[Group, ...], dict[str, float]]:
    """The groups against gold (unlabelled items apart) and the weights learned on them."""
    held_out = _split(labels, ids, holdout, seed, "labelled items")
    counter: Counter[tuple[Pattern, int, tuple[tuple[str, float], ...]]] = Counter()
    for item_id, pattern in zip(ids, patterns, strict=True):
        label = labels.get(item_id)
        if label is None:
            counter[pattern, UNLABELLED, ()] += 1
        else:
            counter[pattern, HELD_OUT if item_id in held_out else SELECTION, ((label, 1.0),)] += 1
    groups = tuple(Group(p, part, truth, n) for (p, part, truth), n in counter.items())
    return groups, _learned_weights(groups, critics, max(2, len(answered)))


def _model_groups(
    critics: tuple[str, ...],
    ids: Sequence[str],
    patterns: Sequence[Pattern],
    answered: Sequence[str],
    holdout: float,
    seed: int,
) -> tuple[tuple[Group, ...], dict[str, float]]:
    """The groups against the Dawid-Skene posterior, and weights from its accuracies."""
    if not answered:
        raise ConfigError("no critic gave a valid answer in these results: nothing to choose on")
    distinct = Counter(patterns)
    rows = list(distinct)
    fit = fit_matrix(
        [[None if a == FAILED else a for a in row] for row in rows],
        classes=answered,
        weights=[distinct[row] for row in rows],
    )
    posterior = {
        row: tuple((label, p) for label, p in zip(fit.classes, probabilities, strict=True) if p > 0)
        for row, probabilities in zip(rows, fit.posteriors, strict=True)
    }
    label_of = dict(zip(rows, fit.labels, strict=True))
    by_id = {item_id: label_of[p] for item_id, p in zip(ids, patterns, strict=True)}
    held_out = _split(by_id, ids, holdout, seed, "items")
    counter: Counter[tuple[Pattern, int]] = Counter(
        (p, HELD_OUT if i in held_out else SELECTION) for i, p in zip(ids, patterns, strict=True)
    )
    groups = tuple(Group(p, part, posterior[p], n) for (p, part), n in counter.items())
    k = max(2, len(fit.classes))
    weights = {
        name: 1.0 if accuracy is None else log_odds_weight(accuracy, k)
        for name, accuracy in zip(critics, fit.accuracy, strict=True)
    }
    return groups, weights


def _learned_weights(
    groups: Sequence[Group], critics: Sequence[str], classes: int
) -> dict[str, float]:
    """:func:`learn_weights`' weights (its default smoothing) from the selection items."""
    right = [0] * len(critics)
    judged = [0] * len(critics)
    for group in groups:
        if group.part != SELECTION:
            continue
        label = group.truth[0][0]
        for j, answer in enumerate(group.pattern):
            if answer != FAILED:
                judged[j] += group.count
                right[j] += group.count if answer == label else 0
    return {
        name: log_odds_weight(
            (right[j] + WEIGHT_SMOOTHING / classes) / (judged[j] + WEIGHT_SMOOTHING), classes
        )
        for j, name in enumerate(critics)
    }


def _part_counts(groups: Iterable[Group]) -> list[int]:
    sizes = [0, 0, 0]
    for group in groups:
        sizes[group.part] += group.count
    return sizes


def _most_likely(truth: Sequence[tuple[str, float]]) -> str | None:
    return max(truth, key=lambda pair: pair[1])[0] if truth else None


def _error_correlation(groups: Sequence[Group], width: int) -> dict[tuple[int, int], float | None]:
    """The phi of each pair of critics' errors on the selection items, against the truth's
    most likely label (gold, or the model's label)."""
    labels: list[list[str | None]] = []
    reference: list[str | None] = []
    for group in groups:
        if group.part != SELECTION:
            continue
        row = [None if a == FAILED else a for a in group.pattern]
        truth = _most_likely(group.truth)
        labels.extend([row] * group.count)
        reference.extend([truth] * group.count)
    if not labels:
        labels, reference = [[None] * width], [None]
    return dict(effective_votes_matrix(labels, reference).pairwise)


# -- replaying a panel --------------------------------------------------------------------------


class _Ballots:
    """One stand-in verdict per critic and answer, so a strategy reads what it would."""

    def __init__(self, critics: Sequence[str]) -> None:
        self._critics = critics
        self._made: dict[tuple[int, str], Verdict] = {}

    def __call__(self, column: int, answer: str) -> Verdict:
        key = (column, answer)
        verdict = self._made.get(key)
        if verdict is None:
            name = self._critics[column]
            if answer == FAILED:
                verdict = Verdict(
                    kind="ERROR", critic_id=name, error="call failed", error_kind=ErrorKind.SERVER
                )
            else:
                verdict = Verdict(kind=answer, critic_id=name, confidence=1.0)
            self._made[key] = verdict
        return verdict


@dataclass
class _TierDecision:
    label: str
    agreement: float
    failed: bool
    fallback: bool


def _tier_decisions(
    table: PilotTable, tier: PanelTier, ballots: _Ballots
) -> dict[Pattern, _TierDecision]:
    """Each projected pattern's decision under ``tier``: keyed by the tier's answers, and
    kept on the table (a cascade's tiers are replayed at many thresholds)."""
    key = (tier.critics, tier.voting, tuple(sorted((tier.weights or {}).items())))
    known = table.decided.get(key)
    if known is None:
        known = table.decided[key] = _decide_tier(table, tier, ballots)
    return known


def _decide_tier(
    table: PilotTable, tier: PanelTier, ballots: _Ballots
) -> dict[Pattern, _TierDecision]:
    columns = table.index(tier.critics)
    projected = {tuple(g.pattern[j] for j in columns) for g in table.groups}
    if tier.voting == "dawid_skene":
        return _dawid_skene_decisions(table, columns, sorted(projected))
    strategy = get_voting_strategy(tier.voting)
    options: dict[str, object] = {}
    if tier.voting == "weighted":
        options = {"weights": dict(tier.weights or {}), "use_confidence": False}
    decided: dict[Pattern, _TierDecision] = {}
    for answers in projected:
        verdicts = [ballots(j, a) for j, a in zip(columns, answers, strict=True)]
        vote = strategy(verdicts, **options)
        label = str(vote[0])
        decided[answers] = _TierDecision(
            label=label,
            agreement=agreement_pct(verdicts, label),
            failed=FAILED in answers,
            fallback=bool(getattr(vote, "fallback", False)),
        )
    return decided


def _dawid_skene_decisions(
    table: PilotTable, columns: Sequence[int], projected: Sequence[Pattern]
) -> dict[Pattern, _TierDecision]:
    """The batch re-decided by a Dawid-Skene model of these critics' votes over every item
    (as ``batch.revote("dawid_skene")``): no valid vote is the fallback."""
    counts: Counter[Pattern] = Counter()
    for group in table.groups:
        counts[tuple(group.pattern[j] for j in columns)] += group.count
    rows = [[None if a == FAILED else a for a in answers] for answers in projected]
    fit = fit_matrix(
        rows, classes=table.classes, weights=[counts[answers] for answers in projected]
    )
    decided: dict[Pattern, _TierDecision] = {}
    for answers, label in zip(projected, fit.labels, strict=True):
        valid = [a for a in answers if a != FAILED]
        if not valid:
            decided[answers] = _TierDecision(FALLBACK, 0.0, True, True)
            continue
        share = sum(1 for a in valid if a == label) / len(valid)
        decided[answers] = _TierDecision(label, share, FAILED in answers, False)
    return decided


def _escalates(decision: _TierDecision, below: float) -> bool:
    return decision.failed or decision.fallback or decision.agreement < below


def replay_panel(
    table: PilotTable, tiers: Sequence[PanelTier], agreement_below: float | None = None
) -> list[tuple[str, bool]]:
    """Per group of ``table``: the plan's decision and whether it went to the second tier
    (always ``False`` for a plain panel)."""
    ballots = _Ballots(table.critics)
    decisions = [_tier_decisions(table, tier, ballots) for tier in tiers]
    columns = [table.index(tier.critics) for tier in tiers]
    out: list[tuple[str, bool]] = []
    for group in table.groups:
        first = decisions[0][tuple(group.pattern[j] for j in columns[0])]
        if len(tiers) == 1 or agreement_below is None or not _escalates(first, agreement_below):
            out.append((first.label, False))
            continue
        second = decisions[1][tuple(group.pattern[j] for j in columns[1])]
        out.append((second.label, True))
    return out


def measure_panel(
    table: PilotTable, tiers: Sequence[PanelTier], agreement_below: float | None = None
) -> PanelFigures:
    """The figures of a plan replayed on ``table`` (see :class:`PanelFigures`)."""
    decided = replay_panel(table, tiers, agreement_below)
    right = [0.0, 0.0]
    total = [0, 0]
    escalated = 0
    outcomes: list[float] = []
    for group, (label, went_on) in zip(table.groups, decided, strict=True):
        escalated += group.count if went_on else 0
        p = dict(group.truth).get(label, 0.0)
        outcomes.append(p)
        if group.part != UNLABELLED:
            right[group.part] += p * group.count
            total[group.part] += group.count
    n_all = sum(g.count for g in table.groups)
    share = escalated / n_all if n_all else 0.0
    cost = table.cost(tiers[0].critics)
    if len(tiers) > 1:
        cost += (share if agreement_below is not None else 1.0) * table.cost(tiers[1].critics)
    accuracy = right[HELD_OUT] / total[HELD_OUT]
    return PanelFigures(
        tiers=tuple(tiers),
        agreement_below=agreement_below if len(tiers) > 1 else None,
        selection_accuracy=right[SELECTION] / total[SELECTION],
        accuracy=accuracy,
        interval=_interval(table, outcomes, right[HELD_OUT], total[HELD_OUT]),
        cost_per_item=cost,
        escalated=share if len(tiers) > 1 else None,
        effective_votes=table.effective_votes(name for tier in tiers for name in tier.critics),
        n_selection=total[SELECTION],
        n_held_out=total[HELD_OUT],
        outcomes=tuple(outcomes),
    )


def _interval(
    table: PilotTable, outcomes: Sequence[float], right: float, n: int
) -> tuple[float, float] | None:
    if table.reference == "gold":
        return wilson_interval(round(right), n)
    mean = right / n
    spread = math.fsum(
        g.count * (p - mean) ** 2
        for g, p in zip(table.groups, outcomes, strict=True)
        if g.part == HELD_OUT
    )
    half = _Z_95 * math.sqrt(spread / max(n - 1, 1) / n)
    return max(0.0, mean - half), min(1.0, mean + half)


def compare_panels(table: PilotTable, plan: PanelFigures, other: PanelFigures) -> Comparison:
    """``plan`` against ``other`` on the held-out items (see :class:`Comparison`)."""
    differences: list[tuple[int, float]] = []
    better = worse = 0
    for group, a, b in zip(table.groups, plan.outcomes, other.outcomes, strict=True):
        if group.part != HELD_OUT:
            continue
        differences.append((group.count, a - b))
        if a > b:
            better += group.count
        elif b > a:
            worse += group.count
    n = sum(count for count, _ in differences)
    mean = math.fsum(count * d for count, d in differences) / n
    variance = math.fsum(count * (d - mean) ** 2 for count, d in differences) / max(n - 1, 1)
    half = _Z_95 * math.sqrt(variance / n)
    interval = (mean - half, mean + half)
    if table.reference != "gold":
        return Comparison(mean, interval, None, None, None)
    return Comparison(mean, interval, mcnemar_exact(better, worse), better, worse)


# -- the search ---------------------------------------------------------------------------------


def _tier(table: PilotTable, critics: Sequence[str], voting: str) -> PanelTier:
    names = tuple(table.critics[j] for j in table.index(critics))
    if voting == "weighted":
        return PanelTier(names, voting, {name: table.weights[name] for name in names})
    return PanelTier(names, voting)


def _offered(strategy: str, size: int) -> bool:
    return strategy != "dawid_skene" or size >= DAWID_SKENE_MIN_CRITICS


def _subsets(table: PilotTable, size: int | None) -> Iterator[tuple[str, ...]]:
    sizes = range(1, len(table.critics) + 1) if size is None else (size,)
    for k in sizes:
        yield from combinations(table.critics, k)


def search_panels(
    table: PilotTable,
    *,
    budget_per_item: float | None,
    size: int | None = None,
    strategies: Sequence[str] = PANEL_STRATEGIES,
) -> tuple[list[PanelFigures], Literal["exhaustive", "greedy"]]:
    """Every affordable plain panel replayed under each strategy, best first (by selection
    accuracy, then cost, then the simpler strategy), and how they were found.

    Raises:
        ConfigError: no panel of ``size`` critics fits ``budget_per_item`` (the message
            gives the cheapest one's cost).
    """
    rank = {name: i for i, name in enumerate(PANEL_STRATEGIES)}
    affordable: list[tuple[str, ...]] | None = None
    if len(table.critics) <= MAX_EXHAUSTIVE_CRITICS:
        affordable = [s for s in _subsets(table, size) if _within(table, s, budget_per_item)]
    how: Literal["exhaustive", "greedy"] = "exhaustive" if affordable is not None else "greedy"
    found: list[PanelFigures] = []
    if affordable is not None:
        for subset in affordable:
            for strategy in strategies:
                if _offered(strategy, len(subset)):
                    found.append(measure_panel(table, [_tier(table, subset, strategy)]))
    else:
        found = _greedy(table, budget_per_item, size, strategies)
    if not found:
        cheapest = math.fsum(sorted(table.costs)[: size or 1])
        raise ConfigError(
            f"no panel{'' if size is None else f' of {size} critics'} fits a budget of "
            f"${budget_per_item:.6g} per item: the cheapest costs ${cheapest:.6g}; raise "
            "budget_per_item (--budget-per-item) to at least that"
            + ("" if size is None else ", or ask for fewer critics")
        )
    found.sort(key=lambda f: (-f.selection_accuracy, f.cost_per_item, rank[f.tiers[0].voting]))
    return found, how


def _greedy(
    table: PilotTable,
    budget_per_item: float | None,
    size: int | None,
    strategies: Sequence[str],
) -> list[PanelFigures]:
    """Forward selection for each strategy: from each affordable single critic's best,
    add the critic that raises the selection accuracy most while the panel stays within
    budget; every panel visited is kept."""
    seen: dict[tuple[tuple[str, ...], str], PanelFigures] = {}
    limit = size if size is not None else len(table.critics)

    def visit(critics: tuple[str, ...], strategy: str) -> PanelFigures:
        # a panel too small for the strategy is stepped through by a weighted vote
        voting = strategy if _offered(strategy, len(critics)) else "weighted"
        key = (tuple(sorted(critics)), voting)
        if key not in seen:
            seen[key] = measure_panel(table, [_tier(table, critics, voting)])
        return seen[key]

    for strategy in strategies:
        current: tuple[str, ...] = ()
        while len(current) < limit:
            steps = [
                (visit((*current, name), strategy), name)
                for name in table.critics
                if name not in current and _within(table, (*current, name), budget_per_item)
            ]
            if not steps:
                break
            current = (*current, max(steps, key=lambda s: _greedy_key(s[0]))[1])
    kept = [f for f in seen.values() if f.tiers[0].voting in strategies]
    return kept if size is None else [f for f in kept if f.size == size]


def _greedy_key(figures: PanelFigures) -> tuple[float, float]:
    return figures.selection_accuracy, -figures.cost_per_item


def _within(table: PilotTable, critics: Sequence[str], budget_per_item: float | None) -> bool:
    return budget_per_item is None or table.cost(critics) <= budget_per_item + 1e-12
