"""Choosing a cascade's thresholds on labelled items, so that its agreement with the labels
is guaranteed rather than hoped for.

:func:`calibrate_cascade` takes stored results in which every tier judged every item
(``cascade.judge_many(items, all_tiers=True)``) and gold labels for some of them, and
picks one threshold level ``t`` for every tier's score (its ``agreement_pct``, its
``avg_confidence`` or its :func:`~cross_judge.cascade.support`): a tier's result stands
when its score is at least ``t``. It costs no calls: every candidate level is replayed on
the stored results.

**The guarantee.** Write ``risk(t)`` for the probability that the cascade, run at level
``t``, decides an item wrongly given that it decides it (disagrees with the gold label;
``ABSTAIN`` is not a decision). The candidate levels are fixed in advance (:data:`LEVELS`:
``inf``, where no result but the last tier's stands, then ``1.00, 0.99, ..., 0.00``);
each is a hypothesis ``risk(t) > 1 - target``, tested with an exact binomial p-value: the
count of wrong decisions among the ``n`` decided items against ``Binomial(n, 1 -
target)``, the test that inverts a one-sided Clopper-Pearson bound. They are tested by
fixed-sequence testing: in an order fixed before looking at the items tested, each at
``delta``, stopping at the first that fails; every level that passed is covered, and the
most lenient of them (the cheapest: a lower level never sends an item further) is
chosen. No correction for the number of levels is needed: with probability at least
``1 - delta`` over the draw of the calibration items, every level that passed, the chosen
one included, has ``risk(t) <= 1 - target`` (Learn-then-Test, Angelopoulos et al. 2021;
applied to cascaded LLM judges in "Trust or Escalate", Jung, Brahman and Choi, ICLR
2025).

The order decides the power, as testing stops at the first failure. By default a random
30% of the labelled items (``ordering_share``) only set the order, best-looking level
first (a pessimistic estimate of each level's risk on them), and the other 70% are
tested in it: the split keeps the order independent of the tested items, and the search
starts where the guarantee is easiest to earn instead of at the strictest level, which on
realistic panels is often barely better than the target. With ``ordering_share=0``
every item is tested, in the order strictest first (levels deciding too few items for
any result to be significant are passed over first, which depends on the scores only).
When no level passes, the fit says so, and its escalation is ``inf`` at every tier
(every item to the last tier, or every item abstained), which carries no guarantee.

**The lower bound.** ``CascadeFit.agreement_lower_bound`` is a second, separate ``1 -
delta`` statement: a Clopper-Pearson lower bound on the true agreement at the chosen
level, from every calibration item, at ``delta / len(LEVELS)`` so that the bounds of all
102 levels hold together (Bonferroni). The level was chosen on these items, so the chosen
level's own bound at ``delta`` would be optimistic (the truth fell below it in 12% of
seeded fits at ``delta=0.1``, in 21% of those with a guarantee); the joint one holds
whichever level is chosen, by the fit or by hand, at the price of a lower number (often
below ``target`` even when the guarantee holds: the guarantee comes from the test, which
needs no such correction).

**Rubric cascades** (tiers of rubric panels, where each criterion escalates on its own)
are calibrated one of two ways (``per``). ``per="total"``: one level for every
criterion, chosen so that the item's PASS/FAIL (the total over each criterion's result
from the first tier whose result on it stands at that level) agrees with the item's
gold label; the guarantee is the one above, about items. ``per="criterion"``: the same
test run for each criterion on its own against gold per criterion (``{id: {criterion:
label}}``), each at ``delta`` divided by the number of criteria, so that with
probability at least ``1 - delta`` every criterion's guarantee holds at once; each
criterion gets its own level (``Escalation(agreement_below={"cites": 0.67, ...})``).
Either way the escalation returned has ``on_dispute=False``: the level alone decides.
Both assume that a tier's answer on a criterion does not depend on which other criteria
it was asked about (true of ``per_criterion`` prompts; a ``one_call`` prompt asked about
fewer criteria may answer a little differently than in the stored results).

What it does **not** say: it is about items drawn from the same distribution as the
calibration items (exchangeable with them): a new domain, a new prompt or a model update
voids it. It bounds the *rate* over many new items, not any single verdict; on a finite
test set the observed agreement scatters around the true rate. And it is about agreement
with the gold labels, which are only as good as the people who wrote them.
"""

from __future__ import annotations

import bisect
import math
import os
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .cascade import Escalation, FinalTier, Score, criterion_result, score_of
from .errors import ConfigError
from .results import BatchResult, as_batch, plain_text
from .rubric.models import Rubric
from .rubric.tally import FAIL, PASS
from .stats import load_criteria_gold, load_gold
from .verdict import ABSTAIN, EnsembleVerdict

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "LEVELS",
    "CascadeFit",
    "LevelFit",
    "Per",
    "TierFit",
    "agreement_lower_bound",
    "binomial_cdf",
    "calibrate_cascade",
    "load_gold",
    "percent",
]


LEVELS: tuple[float, ...] = (math.inf, *(round(1.0 - i / 100, 2) for i in range(101)))
"""The threshold levels tested, strictest first: ``inf`` (only the last tier's results
stand), then ``1.00, 0.99, ..., 0.00``. Fixed in advance, as fixed-sequence testing
requires."""

_ASCENDING = sorted(LEVELS)


def percent(share: float) -> str:
    """A target or a confidence as a percent, as exact as given: ``0.9`` -> ``"90%"``,
    ``0.999`` -> ``"99.9%"`` (never rounded up to a ``"100%"`` it is not)."""
    return f"{round(share * 100, 6):g}%"


Per = Literal["total", "criterion"]
"""What a rubric cascade is calibrated on: the item's PASS/FAIL (``"total"``, one level for
every criterion), or each criterion's label (``"criterion"``, a level per criterion)."""
_SCORES = ("agreement", "confidence", "support")


# -- exact binomial tail and bound --------------------------------------------------------------


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, summed exactly in log space (no
    underflow for large ``n``). ``k < 0`` gives 0 and ``k >= n`` gives 1.

    Raises:
        ValueError: ``n < 0`` or ``p`` outside [0, 1].
    """
    if n < 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"binomial_cdf needs n >= 0 and 0 <= p <= 1, got n={n}, p={p}")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)

    def log_pmf(i: int) -> float:
        return base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q

    # Below the mean the lower tail is the small one: sum it directly (no cancellation
    # when the answer is tiny); above, the complement of the upper tail. Each tail is
    # summed from its end nearest the mode outwards, and stops once past the mode the
    # terms fall _NEGLIGIBLE below the largest: what is left adds less than one part in
    # 10^20 of the sum, so a tail of n = 5,000 costs a few hundred terms, not thousands.
    if k < n * p:
        logs = _tail_logs(log_pmf, range(k, -1, -1), past_mode=lambda i: True)
        top = max(logs)
        return min(1.0, math.exp(top) * math.fsum(math.exp(x - top) for x in logs))
    mode = (n + 1) * p
    logs = _tail_logs(log_pmf, range(k + 1, n + 1), past_mode=lambda i: i > mode)
    top = max(logs)
    return max(0.0, 1.0 - math.exp(top) * math.fsum(math.exp(x - top) for x in logs))


_NEGLIGIBLE = 60.0
"""How far (in natural log) a binomial term may fall below the tail's largest before the
sum stops: e^-60 is about 10^-26, so the terms left out, fewer than n of them and each
smaller than the last, change no digit a float keeps."""


def _tail_logs(
    log_pmf: Callable[[int], float], indexes: range, past_mode: Callable[[int], bool]
) -> list[float]:
    """The log terms of a tail, from the index nearest the mode outwards, until one past
    the mode lies :data:`_NEGLIGIBLE` below the largest (the terms only fall from there)."""
    logs: list[float] = []
    top = -math.inf
    for i in indexes:
        value = log_pmf(i)
        logs.append(value)
        top = max(top, value)
        if value < top - _NEGLIGIBLE and past_mode(i):
            break
    return logs


def agreement_lower_bound(
    agreed: int, n: int, delta: float, *, comparisons: int = 1
) -> float | None:
    """One-sided ``1 - delta`` Clopper-Pearson lower bound on an agreement rate observed
    as ``agreed`` of ``n``; ``None`` when ``n == 0``.

    ``comparisons`` makes it one of that many bounds that hold *together* with
    probability at least ``1 - delta`` (each at ``delta / comparisons``, Bonferroni), so
    that it still holds for a rate picked after looking at the data, e.g. the level a fit
    chose among :data:`LEVELS` (``comparisons=len(LEVELS)``).

    Raises:
        ValueError: ``comparisons < 1``.
    """
    if comparisons < 1:
        raise ValueError(f"comparisons must be at least 1, got {comparisons}")
    if n == 0:
        return None
    delta /= comparisons
    errors = n - agreed
    if errors >= n:
        return 0.0
    low, high = errors / n, 1.0  # the upper bound on the error rate lies in here
    for _ in range(60):
        middle = (low + high) / 2
        if binomial_cdf(errors, n, middle) > delta:
            low = middle
        else:
            high = middle
    return 1.0 - high


# -- gold labels ---------------------------------------------------------------------------------


# -- the fit -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TierFit:
    """One tier at the chosen level, on the calibration items.

    ``threshold`` is ``None`` for a last tier that always decides; ``asked`` and
    ``decided`` are shares of the calibration items; ``agreement`` is the share of the
    items it decided whose consensus equals the gold label (``None`` if it decided none);
    ``cost_per_item`` its expected cost per item of the cascade (share asked x its mean
    cost per item asked; ``None`` when a cost is unknown).
    """

    tier: int
    score: Score | None
    threshold: float | None
    asked: float
    decided: float
    agreement: float | None
    cost_per_item: float | None


@dataclass(frozen=True)
class LevelFit:
    """One tested level, on the testing part of the calibration items: the share decided,
    their agreement with gold, the p-value of "risk above ``1 - target``", and whether it
    passed (the p-value is at most ``delta``)."""

    threshold: float
    coverage: float
    agreement: float | None
    p_value: float
    passed: bool


@dataclass(frozen=True)
class CascadeFit:
    """What :func:`calibrate_cascade` chose, and what it is worth.

    ``escalation`` plugs into ``Cascade(tiers, escalate=fit.escalation, final=fit.final)``.
    ``guaranteed`` is False when no level passed: ``escalation`` is then the strictest
    level (every item to the last tier, or every item abstained) and carries no guarantee.
    ``coverage`` and ``agreement`` are over the calibration items (in-sample, so
    optimistic); ``agreement_lower_bound`` is a one-sided ``1 - delta`` lower bound on
    the true agreement at the chosen level that holds whatever level was chosen (the
    Clopper-Pearson bound on every calibration item at ``delta / len(LEVELS)``, see the
    module docstring; often below ``target`` even with a guarantee), ``None`` when the
    level decides no item.
    ``cost_per_item`` the expected cost per item and ``cost_saved`` the share saved
    against asking the last tier alone (``None`` when a cost is unknown). ``levels``
    holds every tested level up to the first that failed.

    ``per="criterion"`` (a rubric cascade calibrated criterion by criterion): ``criteria``
    holds each criterion's own fit (its ``threshold``, ``levels``, guarantee at ``delta``
    over the number of criteria); ``escalation`` has a threshold per criterion id;
    ``threshold`` is ``None``; ``guaranteed`` is True when every criterion's is;
    ``coverage``, ``agreement`` and ``tiers`` count (item, criterion) decisions;
    ``agreement_lower_bound`` is the lowest criterion's; costs are estimates that share a
    tier's cost of an item equally among the criteria it was asked about.
    """

    target: float
    delta: float
    final: FinalTier
    scores: tuple[Score, ...]
    n_items: int
    n_ordering: int
    threshold: float | None
    guaranteed: bool
    escalation: Escalation
    coverage: float
    agreement: float | None
    agreement_lower_bound: float | None
    cost_per_item: float | None
    last_tier_cost_per_item: float | None
    tiers: tuple[TierFit, ...]
    levels: tuple[LevelFit, ...] = field(repr=False)
    per: Per = "total"
    criteria: Mapping[str, CascadeFit] | None = field(default=None, repr=False)

    @property
    def calibration_ids(self) -> frozenset[str]:
        """The ids of the labelled items the level was chosen on."""
        return self.escalation.calibration_ids

    @property
    def cost_saved(self) -> float | None:
        """``1 - cost_per_item / last_tier_cost_per_item``, or ``None``."""
        if self.cost_per_item is None or not self.last_tier_cost_per_item:
            return None
        return 1.0 - self.cost_per_item / self.last_tier_cost_per_item

    @property
    def guarantee(self) -> str:
        """The guarantee, or its absence, in one sentence: the target and ``1 - delta`` as
        :meth:`summary`, ``cross-judge calibrate`` and its ``escalate:`` block say them."""
        target, confidence = percent(self.target), percent(1 - self.delta)
        chance = f"With probability at least {confidence} over the draw of these {self.n_items}"
        if self.criteria is not None:
            failed = [cid for cid, fit in self.criteria.items() if not fit.guaranteed]
            held = (
                f"{chance} labelled items, every criterion"
                + (f" but {failed}" if failed else "")
                + f" agrees with its gold labels on at least {target} (the target) of the "
                "items the cascade decides it on, for new items drawn like them (each "
                f"criterion tested at delta/{len(self.criteria)}, so these hold together)."
            )
            if not failed:
                return held
            fallback = "goes to the last tier" if self.final == "decide" else "is abstained"
            if len(failed) == len(self.criteria):
                return (
                    f"No level reaches the target {target} agreement with probability at "
                    f"least {confidence} for any criterion on these {self.n_items} labelled "
                    f"items (each tested at delta/{len(self.criteria)}), so there is no "
                    f"guarantee: each criterion {fallback} on every item."
                )
            return held + f" No level passed for {failed}: each {fallback} on every item."
        if not self.guaranteed:
            return (
                f"No threshold reaches the target {target} agreement with probability at "
                f"least {confidence} on these {self.n_items} labelled items, so there is no "
                "guarantee: the escalation returned "
                + (
                    "sends every item to the last tier."
                    if self.final == "decide"
                    else "abstains on every item."
                )
            )
        scope = (
            "of the new items it decides (drawn like these; it abstains on the rest)"
            if self.final == "abstain"
            else "of new items drawn like them (it decides every item)"
        )
        return (
            f"{chance} labelled items, the cascade agrees with the gold labels on at least "
            f"{target} (the target) {scope}."
        )

    @property
    def bound_statement(self) -> str:
        """:attr:`agreement_lower_bound` in one sentence, beside :attr:`guarantee`: at the
        same ``1 - delta``, and why it may sit below the target the guarantee certifies
        (it holds for any of the levels, corrected for trying them all); empty when the
        level decides no item."""
        bound = self.agreement_lower_bound
        if bound is None:
            return ""
        which = "the lowest criterion's; " if self.criteria is not None else ""
        line = (
            f"Lower bound, at the same {percent(1 - self.delta)}: the agreement is at least "
            f"{bound:.1%} ({which}a bound that holds at any of the {len(LEVELS)} threshold "
            "levels, corrected for trying them all"
        )
        if self.guaranteed and bound < self.target:
            line += (
                f", so it sits below the guaranteed {percent(self.target)}: the guarantee "
                "comes from a test of the chosen level that needs no such correction"
            )
        return line + ")."

    def summary(self) -> RenderableType:
        """A ``rich`` table: per tier threshold, asked, decided, agreement, cost; under it
        what was observed on the labelled items, the guarantee (:attr:`guarantee`) and the
        lower bound (:attr:`bound_statement`), in the same words and numbers as every
        other place that states them."""
        from rich import box
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(box=box.SIMPLE_HEAD, title="cascade calibration", title_justify="left")
        for name in ("tier", "score", "threshold", "asked", "decided", "agreement", "cost/item"):
            table.add_column(name, justify="left" if name in ("tier", "score") else "right")
        for tier in self.tiers:
            table.add_row(
                str(tier.tier),
                tier.score or "-",
                "always decides" if tier.threshold is None else f"{tier.threshold:g}",
                f"{tier.asked:.1%}",
                f"{tier.decided:.1%}",
                "n/a" if tier.agreement is None else f"{tier.agreement:.1%}",
                "n/a" if tier.cost_per_item is None else f"${tier.cost_per_item:.6f}",
            )
        observed = (
            f"Observed on the {self.n_items} labelled items: the cascade decides "
            f"{self.coverage:.1%} of them and agrees with the gold labels on "
            + ("n/a" if self.agreement is None else f"{self.agreement:.1%}")
            + " of those it decides"
        )
        if self.cost_per_item is not None:
            observed += f"; ${self.cost_per_item:.6f}/item"
            saved = self.cost_saved
            if saved is not None:
                more_or_less = "less" if saved >= 0 else "more"
                observed += f", {abs(saved):.0%} {more_or_less} than the last tier alone"
        parts: list[RenderableType] = [table, Text(observed + "."), Text(self.guarantee)]
        if self.bound_statement:
            parts.append(Text(self.bound_statement))
        return Group(*parts)

    def __rich__(self) -> RenderableType:
        return self.summary()

    def __str__(self) -> str:
        return plain_text(self.summary())


# -- calibration ---------------------------------------------------------------------------------


@dataclass
class _Item:
    """One labelled item: per tier, the score at which its result stands (``-inf``:
    never, ``inf``: always), whether its consensus is right, and its cost."""

    stands_from: list[float]
    right: list[bool]
    costs: list[float | None]


def _position(score: float) -> int:
    """Index in :data:`LEVELS` of the first (strictest) level at which ``score`` stands
    (``score >= level``); ``len(LEVELS)`` when at none."""
    return len(LEVELS) - bisect.bisect_right(_ASCENDING, score)


def _checked_scores(score: Score | Sequence[Score], count: int) -> tuple[Score, ...]:
    if isinstance(score, str):
        if score not in _SCORES:
            raise ConfigError(
                f"score must be 'agreement', 'confidence' or 'support', got {score!r}"
            )
        return (score,) * count
    scores = tuple(score)
    if len(scores) != count or any(s not in _SCORES for s in scores):
        raise ConfigError(
            "score must be 'agreement', 'confidence', 'support' or a list of them with one "
            f"entry per tier that can escalate ({count} here), got {score!r}"
        )
    return scores


def calibrate_cascade(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | Mapping[str, Mapping[str, str | None]] | str | os.PathLike[str],
    *,
    target: float = 0.9,
    delta: float = 0.1,
    score: Score | Sequence[Score] = "agreement",
    final: FinalTier = "decide",
    on_error: bool = True,
    on_fallback: bool = True,
    ordering_share: float = 0.3,
    seed: int = 0,
    keep_last_tier_agreement: bool = False,
    per: Per | None = None,
) -> CascadeFit:
    """Choose a cascade's threshold level on labelled items (see the module docstring for
    what is guaranteed); no calls are made.

    Args:
        results: results with every tier's result for each item (a
            :class:`BatchResult`, results, or a results file path) from
            ``cascade.judge_many(items, all_tiers=True)``.
        gold: ``{id: label}`` or a JSONL file of ``{"id", "label"}``; results without a
            gold label are left out, gold ids without a result are ignored.
        target: the agreement with gold to guarantee on decided items, in (0, 1).
        delta: the allowed probability that the guarantee fails, in (0, 1).
        score: what the thresholds apply to, for every tier or one per tier that can
            escalate: ``"agreement"`` (``agreement_pct``), ``"confidence"``
            (``avg_confidence``) or ``"support"`` (:func:`~cross_judge.cascade.support`:
            the confidence behind the consensus, usually the sharpest of the three when
            critics state a confidence). A one-critic tier always agrees with itself: give
            it ``"confidence"`` or ``"support"``.
        final: the cascade's ``final`` mode, ``"decide"`` or ``"abstain"``.
        on_error, on_fallback: the :class:`Escalation` rules kept beside the threshold.
        ordering_share: the share of the labelled items that orders the levels (the rest
            tests them); ``0`` tests every item in the fixed order strictest first.
        seed: the seed of the random split into ordering and testing items.
        keep_last_tier_agreement: among the levels that passed, choose the cheapest whose
            agreement on the calibration items is at least the last tier's alone (else
            the most agreeing one passed), instead of the cheapest: save what can be
            saved without giving up agreement. The guarantee is the same.
        per: for a cascade of rubric panels, what is calibrated (see "Rubric cascades"
            in the module docstring): ``"total"``, the item's PASS/FAIL against ``gold``
            ``{id: label}`` with one level for every criterion; ``"criterion"``, each
            criterion's label against ``gold`` ``{id: {criterion id: label}}`` (or a gold
            file with ``"criteria"``) with a level per criterion. Default: ``"criterion"``
            when ``gold`` maps ids to mappings, else ``"total"`` (the only choice for a
            cascade without a rubric).

    Raises:
        ConfigError: ``target``/``delta`` outside (0, 1), an unknown score, no labelled
            result, a labelled result without every tier's result (not judged with
            ``all_tiers=True``), results with different numbers of tiers, or a one-tier
            cascade with ``final="decide"`` (nothing to choose); ``per="criterion"`` for
            results without a rubric or without criterion gold, an unknown ``per``.
    """
    for name, value in (("target", target), ("delta", delta)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise ConfigError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    if (
        isinstance(ordering_share, bool)
        or not isinstance(ordering_share, (int, float))
        or not 0 <= ordering_share < 1
    ):
        raise ConfigError(f"ordering_share must be in [0, 1), got {ordering_share!r}")
    if final not in ("decide", "abstain"):
        raise ConfigError(f"final must be 'decide' or 'abstain', got {final!r}")
    if per is None:
        nested = isinstance(gold, Mapping) and any(isinstance(v, Mapping) for v in gold.values())
        per = "criterion" if nested else "total"
    if per not in ("total", "criterion"):
        raise ConfigError(f"per must be 'total' or 'criterion', got {per!r}")
    stored = as_batch(results).verdicts
    given: Any = gold  # its loader checks its shape: item labels, or labels per criterion
    options: dict[str, Any] = {
        "target": target,
        "delta": delta,
        "final": final,
        "on_error": on_error,
        "on_fallback": on_fallback,
        "ordering_share": ordering_share,
        "seed": seed,
        "keep_last_tier_agreement": keep_last_tier_agreement,
    }
    if per == "criterion":
        return _calibrate_criteria(stored, load_criteria_gold(given), score, options)
    labels = load_gold(given)
    # By id: the seeded split must not read the file's order (the order calls finished in).
    labelled = sorted(
        ((r, labels[r.query_id]) for r in stored if r.query_id in labels),
        key=lambda pair: pair[0].query_id,
    )
    if not labelled:
        raise ConfigError(
            f"none of the {len(stored)} results has a gold label (of {len(labels)} given); "
            "gold ids must equal the results' query_id"
        )
    depth = _depth(labelled)
    scores = _checked_scores(score, _checked_count(depth, final))
    ids = frozenset(r.query_id for r, _ in labelled)
    rubric = _rubric_of(labelled[0][0])
    if rubric is None:
        items = [
            _item(result.tiers or [], label, scores, on_error, on_fallback)
            for result, label in labelled
        ]
        return _fit(_item_evidence(items, depth), ids, scores=scores, **options)
    totals = [
        _total_item(result, label, rubric, scores, on_error, on_fallback)
        for result, label in labelled
    ]
    return _fit(_total_evidence(totals, depth), ids, scores=scores, **options)


def _checked_count(depth: int, final: FinalTier) -> int:
    """How many tiers can escalate.

    Raises:
        ConfigError: none (a one-tier cascade with ``final="decide"``).
    """
    checked = depth - (final == "decide")
    if checked == 0:
        raise ConfigError(
            "a one-tier cascade with final='decide' has no threshold to choose; use "
            "final='abstain' or add a tier"
        )
    return checked


def _rubric_of(result: EnsembleVerdict) -> Rubric | None:
    """The rubric a stored cascade result was judged with, if any."""
    if result.rubric is not None:
        return result.rubric
    return next((t.rubric for t in result.tiers or [] if t.rubric is not None), None)


def _depth(labelled: Sequence[tuple[EnsembleVerdict, str]]) -> int:
    depths = {len(r.tiers or ()) for r, _ in labelled}
    if 0 in depths:
        first = next(r.query_id for r, _ in labelled if not r.tiers)
        raise ConfigError(
            f"result {first!r} has no per-tier results; calibration needs every tier's "
            "result for every labelled item: cascade.judge_many(items, all_tiers=True)"
        )
    if len(depths) > 1:
        raise ConfigError(
            f"the labelled results hold different numbers of tiers ({sorted(depths)}); "
            "calibration needs every tier's result for every item: "
            "cascade.judge_many(items, all_tiers=True)"
        )
    return depths.pop()


def _stands_from(
    tiers: Sequence[EnsembleVerdict],
    scores: tuple[Score, ...],
    on_error: bool,
    on_fallback: bool,
) -> list[float]:
    """Per tier, the score at which its result stands (``-inf``: never, ``inf``: always)."""
    stands_from: list[float] = []
    for index, tier in enumerate(tiers):
        if index >= len(scores):  # the last tier with final="decide"
            stands_from.append(math.inf)
        elif (on_error and tier.n_errors > 0) or (on_fallback and tier.fallback):
            stands_from.append(-math.inf)
        else:
            stands_from.append(score_of(tier, scores[index]))
    return stands_from


def _item(
    tiers: Sequence[EnsembleVerdict],
    label: str,
    scores: tuple[Score, ...],
    on_error: bool,
    on_fallback: bool,
    cost_share: float = 1.0,
) -> _Item:
    """One labelled unit from its tier results (an item's, or one criterion's views);
    ``cost_share`` of each tier's cost is counted."""
    right = [t.consensus == label and t.consensus != ABSTAIN for t in tiers]
    costs = [None if t.cost_usd is None else t.cost_usd * cost_share for t in tiers]
    return _Item(_stands_from(tiers, scores, on_error, on_fallback), right, costs)


def _counts(items: Sequence[_Item], depth: int) -> tuple[list[list[int]], list[list[int]]]:
    """``decided[t][g]`` / ``wrong[t][g]``: the items tier ``t`` decides / decides wrongly at
    level ``LEVELS[g]``. Built from difference arrays: tier ``t`` decides an item on the
    levels where its own result stands and no earlier tier's did."""
    width = len(LEVELS)
    decided = [[0] * (width + 1) for _ in range(depth)]
    wrong = [[0] * (width + 1) for _ in range(depth)]
    for item in items:
        upper = width
        for tier in range(depth):
            low = _position(item.stands_from[tier])
            if low < upper:
                decided[tier][low] += 1
                decided[tier][upper] -= 1
                if not item.right[tier]:
                    wrong[tier][low] += 1
                    wrong[tier][upper] -= 1
                upper = low
    for tier in range(depth):
        for g in range(1, width):
            decided[tier][g] += decided[tier][g - 1]
            wrong[tier][g] += wrong[tier][g - 1]
    return decided, wrong


def _rough_risk_bound(errors: int, total: int) -> float:
    """A quick, pessimistic guess at a level's risk (for ordering only): the smoothed error
    rate plus 1.28 standard errors, so that levels deciding few items come late."""
    rate = (errors + 1) / (total + 2)
    return rate + 1.28 * math.sqrt(rate * (1 - rate) / (total + 2))


def _fit(
    evidence: _Evidence,
    ids: frozenset[str],
    *,
    target: float,
    delta: float,
    scores: tuple[Score, ...],
    final: FinalTier,
    on_error: bool,
    on_fallback: bool,
    ordering_share: float,
    seed: int,
    keep_last_tier_agreement: bool,
) -> CascadeFit:
    items = evidence.units
    n, depth, width = len(items), evidence.depth, len(LEVELS)
    risk = 1.0 - target
    positions = list(range(n))
    random.Random(seed).shuffle(positions)
    cut = min(n - 1, round(n * ordering_share)) if ordering_share > 0 else 0
    ordering = [items[i] for i in positions[:cut]]
    testing = [items[i] for i in positions[cut:]]
    if ordering:
        order_decided, order_wrong = evidence.counts(ordering)
        guesses = [
            _rough_risk_bound(
                sum(order_wrong[t][g] for t in range(depth)),
                sum(order_decided[t][g] for t in range(depth)),
            )
            for g in range(width)
        ]
        order = sorted(range(width), key=lambda g: (guesses[g], g))
    else:
        # The fixed order, strictest first; levels too strict to decide enough items for
        # any result to be significant are passed over (this depends on scores only).
        order = list(range(width))
    decided, wrong = evidence.counts(testing)
    testable = math.ceil(math.log(delta) / math.log1p(-risk))
    levels: list[LevelFit] = []
    passed: list[int] = []
    for g in order:
        total = sum(decided[t][g] for t in range(depth))
        if not ordering and total < testable and not levels:
            continue
        errors = sum(wrong[t][g] for t in range(depth))
        p_value = binomial_cdf(errors, total, risk)
        levels.append(
            LevelFit(
                threshold=LEVELS[g],
                coverage=total / len(testing),
                agreement=(total - errors) / total if total else None,
                p_value=p_value,
                passed=p_value <= delta,
            )
        )
        if p_value > delta:
            break
        passed.append(g)
    # Every passed level is covered by the guarantee; the most lenient is the cheapest (a
    # lower level never sends an item further down the cascade).
    index = max(passed) if passed else 0
    decided, wrong = evidence.counts(items)  # the figures reported: every calibration item
    if passed and keep_last_tier_agreement:
        # The cheapest passed level that agrees with gold, on the calibration items, at
        # least as often as the last tier alone; choosing among passed levels keeps the
        # guarantee (it covers all of them at once).
        alone = sum(evidence.last_right(item) for item in items) / n

        def agreement_at(g: int) -> float:
            total = sum(decided[t][g] for t in range(depth))
            return (total - sum(wrong[t][g] for t in range(depth))) / total if total else 0.0

        keeping = [g for g in passed if agreement_at(g) >= alone]
        index = max(keeping) if keeping else max(passed, key=agreement_at)
    level = LEVELS[index]
    costs = evidence.tier_costs(index)
    reach = n
    tiers: list[TierFit] = []
    for tier in range(depth):
        count = decided[tier][index]
        tiers.append(
            TierFit(
                tier=tier,
                score=scores[tier] if tier < len(scores) else None,
                threshold=level if tier < len(scores) else None,
                asked=reach / n,
                decided=count / n,
                agreement=(count - wrong[tier][index]) / count if count else None,
                cost_per_item=costs[tier],
            )
        )
        reach -= count
    total = sum(decided[t][index] for t in range(depth))
    errors = sum(wrong[t][index] for t in range(depth))
    tier_costs = [t.cost_per_item for t in tiers]
    escalation = Escalation(
        agreement_below=tuple(level if s == "agreement" else None for s in scores),
        confidence_below=tuple(level if s == "confidence" else None for s in scores),
        support_below=tuple(level if s == "support" else None for s in scores),
        on_error=on_error,
        on_fallback=on_fallback,
        calibration_ids=ids,
        calibrated_for=final,
        on_dispute=False,  # the level alone decides, in a rubric cascade too
    )
    return CascadeFit(
        target=target,
        delta=delta,
        final=final,
        scores=scores,
        n_items=n,
        n_ordering=len(ordering),
        threshold=level if passed else None,
        guaranteed=bool(passed),
        escalation=escalation,
        coverage=total / n,
        agreement=(total - errors) / total if total else None,
        # The level was chosen on these items: only a bound valid for every level at
        # once holds for it (the chosen one's own bound at delta is biased upwards).
        agreement_lower_bound=agreement_lower_bound(
            total - errors, total, delta, comparisons=len(LEVELS)
        ),
        cost_per_item=None
        if any(c is None for c in tier_costs)
        else sum(c for c in tier_costs if c is not None),
        last_tier_cost_per_item=evidence.last_tier_cost,
        tiers=tuple(tiers),
        levels=tuple(levels),
    )


Counts: TypeAlias = "tuple[list[list[int]], list[list[int]]]"


@dataclass(frozen=True)
class _Evidence:
    """What :func:`_fit` tests: the labelled units (items, or one criterion's items), how
    many of them each tier decides (wrongly) per level, whether the last tier alone is
    right on one, and each tier's expected cost per unit at a level index."""

    units: Sequence[Any]
    depth: int
    counts: Callable[[Sequence[Any]], Counts]
    last_right: Callable[[Any], bool]
    tier_costs: Callable[[int], list[float | None]]
    last_tier_cost: float | None


def _item_evidence(items: Sequence[_Item], depth: int) -> _Evidence:
    """Evidence of units decided whole, at the first tier whose result stands."""
    means = _mean_costs(items, depth)
    n = len(items)

    def tier_costs(index: int) -> list[float | None]:
        decided, _ = _counts(items, depth)
        reach, out = n, []
        for tier in range(depth):
            mean = means[tier]
            out.append(None if mean is None else reach / n * mean)
            reach -= decided[tier][index]
        return out

    return _Evidence(
        items, depth, lambda units: _counts(units, depth), _last_right, tier_costs, means[-1]
    )


def _last_right(item: _Item) -> bool:
    return item.right[-1]


@dataclass
class _TotalItem:
    """One labelled item of a rubric cascade, per level index: the highest tier asked,
    whether the item is decided (not ``ABSTAIN``) and rightly, and the share of its
    criteria each tier is asked about; its tiers' costs; whether the last tier alone is
    right."""

    top: list[int]
    decided: list[bool]
    right: list[bool]
    asked: list[list[float]]
    costs: list[float | None]
    alone_right: bool


def _views(result: EnsembleVerdict, criterion_id: str) -> list[EnsembleVerdict]:
    """Each tier's result on one criterion.

    Raises:
        ConfigError: a tier has no result on it (not judged with ``all_tiers=True``).
    """
    try:
        return [criterion_result(tier, criterion_id) for tier in result.tiers or []]
    except KeyError:
        raise ConfigError(
            f"result {result.query_id!r} lacks tier results on criterion {criterion_id!r}; "
            "calibration needs every tier's result on every criterion: "
            "cascade.judge_many(items, all_tiers=True)"
        ) from None


def _total_item(
    result: EnsembleVerdict,
    label: str,
    rubric: Rubric,
    scores: tuple[Score, ...],
    on_error: bool,
    on_fallback: bool,
) -> _TotalItem:
    """At every level: each criterion decided at the first tier whose result on it
    stands (none: abstained), the merged total, the item's PASS/FAIL against ``label``
    (a cascade with this level, live or replayed, gives the same)."""
    tiers = result.tiers or []
    depth, width, count = len(tiers), len(LEVELS), len(rubric.ids)
    views = {cid: _views(result, cid) for cid in rubric.ids}
    starts = {
        cid: [_position(x) for x in _stands_from(v, scores, on_error, on_fallback)]
        for cid, v in views.items()
    }
    item = _TotalItem([], [], [], [], [t.cost_usd for t in tiers], tiers[-1].consensus == label)
    for g in range(width):
        at: dict[str, int | None] = {
            cid: next((t for t, p in enumerate(positions) if p <= g), None)
            for cid, positions in starts.items()
        }
        marks = {cid: None if t is None else views[cid][t].score for cid, t in at.items()}
        total = rubric.total(marks)
        still_open = any(t is None for t in at.values())
        consensus = (
            (ABSTAIN if still_open else "UNCLEAR")
            if total is None
            else (PASS if rubric.passes(total) else FAIL)
        )
        reached = [depth - 1 if t is None else t for t in at.values()]
        item.top.append(max(reached))
        item.decided.append(consensus != ABSTAIN)
        item.right.append(consensus == label)
        item.asked.append([sum(r >= tier for r in reached) / count for tier in range(depth)])
    return item


def _total_evidence(items: Sequence[_TotalItem], depth: int) -> _Evidence:
    """Evidence of rubric items decided criterion by criterion, judged on their total."""
    width = len(LEVELS)

    def counts(units: Sequence[_TotalItem]) -> Counts:
        decided = [[0] * (width + 1) for _ in range(depth)]
        wrong = [[0] * (width + 1) for _ in range(depth)]
        for unit in units:
            for g in range(width):
                if unit.decided[g]:
                    decided[unit.top[g]][g] += 1
                    wrong[unit.top[g]][g] += not unit.right[g]
        return decided, wrong

    known = all(c is not None for item in items for c in item.costs)

    def tier_costs(index: int) -> list[float | None]:
        if not known:
            return [None] * depth
        return [
            sum(item.asked[index][t] * (item.costs[t] or 0.0) for item in items) / len(items)
            for t in range(depth)
        ]

    last = sum(item.costs[-1] or 0.0 for item in items) / len(items) if known else None
    return _Evidence(items, depth, counts, _alone_right, tier_costs, last)


def _alone_right(item: _TotalItem) -> bool:
    return item.alone_right


def _calibrate_criteria(
    stored: Sequence[EnsembleVerdict],
    gold: Mapping[str, Mapping[str, str]],
    score: Score | Sequence[Score],
    options: Mapping[str, Any],
) -> CascadeFit:
    """``per="criterion"``: a fit per criterion, each at ``delta`` over the number of
    criteria (so that all hold together), merged into one fit whose escalation has a
    threshold per criterion.

    Raises:
        ConfigError: no labelled result, results without a rubric, gold for criteria
            the rubric does not have, or a criterion with no gold label at all.
    """
    labelled = sorted((r for r in stored if gold.get(r.query_id)), key=lambda r: r.query_id)
    if not labelled:
        raise ConfigError(
            f"none of the {len(stored)} results has criterion gold labels (of {len(gold)} "
            "given); gold ids must equal the results' query_id"
        )
    rubric = _rubric_of(labelled[0])
    if rubric is None:
        raise ConfigError(
            "per='criterion' calibrates a cascade of rubric panels, and these results hold no "
            "criteria; use per='total' (item labels) for this cascade"
        )
    named = {cid for r in labelled for cid in gold[r.query_id]}
    unknown = sorted(named - set(rubric.ids))
    missing = [cid for cid in rubric.ids if cid not in named]
    if unknown or missing:
        raise ConfigError(
            f"per-criterion gold must label the rubric's criteria {list(rubric.ids)}: "
            + (f"{unknown} are not criteria of it" if unknown else "")
            + ("; " if unknown and missing else "")
            + (f"{missing} have no gold label on any item" if missing else "")
        )
    depth = _depth([(r, "") for r in labelled])
    final: FinalTier = options["final"]
    scores = _checked_scores(score, _checked_count(depth, final))
    share = 1.0 / len(rubric.ids)
    each = {**options, "delta": options["delta"] / len(rubric.ids)}
    fits: dict[str, CascadeFit] = {}
    for cid in rubric.ids:
        pairs = [(r, gold[r.query_id][cid]) for r in labelled if cid in gold[r.query_id]]
        units = [
            _item(_views(r, cid), label, scores, options["on_error"], options["on_fallback"], share)
            for r, label in pairs
        ]
        ids = frozenset(r.query_id for r, _ in pairs)
        fits[cid] = _fit(_item_evidence(units, depth), ids, scores=scores, **each)
    return _merged_fit(fits, frozenset(r.query_id for r in labelled), scores, options)


def _by_criterion(fits: Mapping[str, CascadeFit], name: str) -> dict[str, Any]:
    """The per-criterion ``name`` thresholds of the fits' escalations (criteria with none
    left out)."""
    out: dict[str, Any] = {}
    for cid, fit in fits.items():
        value = getattr(fit.escalation, name)
        if value is not None and any(v is not None for v in value):
            out[cid] = value
    return out


def _merged_fit(
    fits: Mapping[str, CascadeFit],
    ids: frozenset[str],
    scores: tuple[Score, ...],
    options: Mapping[str, Any],
) -> CascadeFit:
    """One :class:`CascadeFit` (``per="criterion"``) over the criteria's own fits: figures
    pooled over (item, criterion) decisions, costs summed."""
    parts = list(fits.values())
    units = sum(f.n_items for f in parts)
    depth = len(parts[0].tiers)

    def pooled(values: Sequence[tuple[float | None, float]]) -> float | None:
        weight = sum(w for v, w in values if v is not None)
        if not weight:
            return None
        return sum(v * w for v, w in values if v is not None) / weight

    def summed(values: Sequence[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(v or 0.0 for v in values)

    tiers = tuple(
        TierFit(
            tier=t,
            score=scores[t] if t < len(scores) else None,
            threshold=None,
            asked=sum(f.tiers[t].asked * f.n_items for f in parts) / units,
            decided=sum(f.tiers[t].decided * f.n_items for f in parts) / units,
            agreement=pooled(
                [(f.tiers[t].agreement, f.tiers[t].decided * f.n_items) for f in parts]
            ),
            cost_per_item=summed([f.tiers[t].cost_per_item for f in parts]),
        )
        for t in range(depth)
    )
    bounds = [f.agreement_lower_bound for f in parts if f.agreement_lower_bound is not None]
    final: FinalTier = options["final"]
    escalation = Escalation(
        agreement_below=_by_criterion(fits, "agreement_below") or None,
        confidence_below=_by_criterion(fits, "confidence_below") or None,
        support_below=_by_criterion(fits, "support_below") or None,
        on_error=options["on_error"],
        on_fallback=options["on_fallback"],
        calibration_ids=ids,
        calibrated_for=final,
        on_dispute=False,
    )
    return CascadeFit(
        target=options["target"],
        delta=options["delta"],
        final=final,
        scores=scores,
        n_items=len(ids),
        n_ordering=max(f.n_ordering for f in parts),
        threshold=None,
        guaranteed=all(f.guaranteed for f in parts),
        escalation=escalation,
        coverage=sum(f.coverage * f.n_items for f in parts) / units,
        agreement=pooled([(f.agreement, f.coverage * f.n_items) for f in parts]),
        agreement_lower_bound=min(bounds) if len(bounds) == len(parts) else None,
        cost_per_item=summed([f.cost_per_item for f in parts]),
        last_tier_cost_per_item=summed([f.last_tier_cost_per_item for f in parts]),
        tiers=tiers,
        levels=(),
        per="criterion",
        criteria=dict(fits),
    )


def _mean_costs(items: Sequence[_Item], depth: int) -> list[float | None]:
    """Each tier's mean cost per item it judged, or ``None`` when a cost is unknown."""
    means: list[float | None] = []
    for tier in range(depth):
        costs = [item.costs[tier] for item in items]
        known = [c for c in costs if c is not None]
        means.append(sum(known) / len(known) if known and len(known) == len(costs) else None)
    return means
