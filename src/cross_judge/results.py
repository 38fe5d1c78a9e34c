"""The results of a batch as data: :class:`BatchResult`, its per-critic and per-tier
records, and the one-line JSON form results files hold.

This module sits in the stats layer (its methods' signatures name the statistics'
types): it makes no call and knows nothing of panels. Statistics, views, dataframes and
re-voting are methods of :class:`BatchResult` for convenience, but they are implemented
elsewhere (``stats/``, and above: ``report/``, ``integrations/``, the panels) and reached
through :mod:`cross_judge._extensions`, without an import cycle. The public path of every
class here is :mod:`cross_judge.batch`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError

from ._extensions import provider
from .errors import ConfigError, ErrorKind
from .stats import (
    manifest_path,
    manifest_runs,
    recorded_simulated_critics,
    recorded_simulated_without_gold,
)
from .verdict import ABSTAIN, EnsembleVerdict, Usage, Verdict
from .voting import BATCH_STRATEGIES, strategy_name

if TYPE_CHECKING:
    from rich.console import RenderableType

    from .stats import (
        CompareMetric,
        CriterionAgreement,
        CriterionDawidSkene,
        GoldReport,
        LengthBias,
        Level,
        PositionBias,
        RunDiff,
        SelfStats,
    )
    from .stats.estimates import Estimate, Prediction
    from .stats.label_queue import LabelQueue, QueueStrategy
    from .voting import VotingStrategy

__all__ = [
    "HUMAN_VENDOR",
    "BatchResult",
    "CriticStats",
    "CriticTally",
    "TierStats",
    "as_batch",
    "call_failed",
    "dump_result",
    "is_fallback",
    "is_incomplete",
    "load_result",
    "manifest_path",
    "plain_text",
    "read_results",
    "recorded_simulated_critics",
    "recorded_simulated_without_gold",
    "votes_and_consensus",
]


HUMAN_VENDOR = "human"
"""The ``vendor`` of a person's verdict (:meth:`BatchResult.from_votes`): the views mark
:attr:`BatchResult.human_critics`."""


def plain_text(renderable: RenderableType) -> str:
    """``renderable`` as plain text, 100 columns wide, no colour: what ``str()`` of a
    result with a ``rich`` summary gives."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None, force_terminal=False).print(renderable)
    return buffer.getvalue().rstrip("\n")


class CriticStats(BaseModel):
    """One critic's record over a batch.

    ``error_rate`` and ``parse_fail_rate`` are over the items it was asked to judge,
    skipped calls (early stop, budget) excluded; ``agreement`` is the share of its valid
    verdicts equal to the consensus (its own tier's, for a cascade's results). Rates are
    ``None`` when undefined (no calls made). ``error_kinds`` counts its failed calls
    (``ERROR`` and ``PARSE_FAIL``) by ``error_kind``, most common first, and
    ``error_messages`` gives each kind's most common ``error`` text (e.g.
    ``"bad_request: HTTP 404: model does not exist"``): why its calls failed, in the
    vendor's words. ``cost_estimates`` counts its calls priced at their worst case because
    the vendor reported no usable usage (:attr:`Verdict.cost_estimates
    <cross_judge.verdict.Verdict.cost_estimates>`); ``cost_usd`` includes them.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    critic: str
    items: int = 0
    valid: int = 0
    errors: int = 0
    parse_failures: int = 0
    skipped: int = 0
    error_rate: float | None = None
    parse_fail_rate: float | None = None
    agreement: float | None = None
    mean_elapsed_s: float | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    cost_estimates: int = 0
    error_kinds: dict[str, int] = Field(default_factory=dict)
    error_messages: dict[str, str] = Field(default_factory=dict)


class TierStats(BaseModel):
    """One tier's record over a cascade's batch (:meth:`BatchResult.tier_stats`).

    ``asked`` counts the items this tier judged, ``decided`` those whose consensus it
    gave, ``abstained`` those it left for a human (last tier, ``final="abstain"``);
    ``share_asked`` and ``share_decided`` are over all items. ``cost_usd`` is what its
    calls cost (``None`` unless every one is priced); ``agreement`` is, over the items it
    decided, the mean of its ``agreement_pct``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    tier: int
    critics: list[str]
    asked: int = 0
    decided: int = 0
    abstained: int = 0
    share_asked: float = 0.0
    share_decided: float = 0.0
    agreement: float | None = None
    cost_usd: float | None = None


class BatchResult(BaseModel):
    """The results of a batch, in input order, and statistics over them.

    ``verdicts`` holds one :class:`~cross_judge.verdict.EnsembleVerdict` per item;
    ``critics`` names the panel (the rows of the reliability matrix); ``voting`` the
    strategy; ``elapsed_s`` the wall time of the run; ``simulated_critics`` the critics
    whose answers came from the simulated vendor (:mod:`cross_judge.testing`), not a
    language model, as the run manifest of a results file records them (see
    :meth:`from_jsonl`): every view of the batch says so; ``simulated_without_gold`` those
    of them whose simulator was told no item's truth (their accuracy against gold labels
    measures chance, and ``stats`` says so); ``manifest_runs`` the runs that manifest
    records, what :meth:`compare` checks the judge against. Statistics are computed on demand
    from ``verdicts`` and never call a model; ``None`` means undefined, never a made-up 0.
    ``len(batch)`` is the number of items; ``print(batch)`` prints :meth:`summary`.
    """

    model_config = ConfigDict(defer_build=True)

    verdicts: list[EnsembleVerdict]
    critics: list[str]
    voting: str
    elapsed_s: float = 0.0
    simulated_critics: list[str] = Field(default_factory=list)
    simulated_without_gold: list[str] = Field(default_factory=list)
    manifest_runs: list[dict[str, Any]] = Field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.verdicts)

    def __repr__(self) -> str:
        return (
            f"BatchResult({len(self.verdicts)} items, critics={self.critics!r}, "
            f"voting={self.voting!r}, elapsed_s={self.elapsed_s})"
        )

    # -- agreement ---------------------------------------------------------------------------

    def labels_matrix(self) -> list[list[str | None]]:
        """Critics x items matrix of labels; ``None`` where a critic gave no valid verdict."""
        return self._matrix(lambda v: v.kind)

    def reliability_alpha(
        self,
        level: Level = "nominal",
        values: Iterable[str] | None = None,
        *,
        numbers: Literal["auto", "scores", "labels"] = "auto",
    ) -> float | None:
        """Krippendorff's alpha of the critics over the whole batch.

        ``nominal`` compares labels; so does ``ordinal`` with ``values``, the order of the
        labels (low to high). The other levels (and ``ordinal`` without ``values``) compare
        numbers, one reading for the whole batch, as ``numbers`` says:

        - ``"auto"``: every valid verdict's ``score`` when every one has a score, every
          label read as a number (``"4"`` -> 4.0) when none has; a batch where some have
          a score and some do not is a :class:`ConfigError` (a score on [0, 1] and a
          label ``"4"`` are different scales: reading each verdict its own way made a
          panel with identical labels disagree with itself);
        - ``"labels"``: every label read as a number, scores ignored;
        - ``"scores"``: every score; a valid verdict without one is missing, as a
          failed call is.

        Raises:
            ConfigError: scores on some valid verdicts and not on others with
                ``numbers="auto"``; a label that is not a number when labels are read;
                a label not in ``values``; ``numbers="scores"`` where labels are compared.
        """
        order = list(values) if values is not None else None
        compares_labels = level == "nominal" or (level == "ordinal" and order is not None)
        scores = None if compares_labels else self._matrix(lambda v: v.score)
        alpha: float | None = provider("alpha_of_votes")(
            self.critics, self.labels_matrix(), scores, level, order, numbers
        )
        return alpha

    def fleiss_kappa(self) -> float | None:
        """Fleiss' kappa over the items every critic judged validly (others are dropped, so
        only those items' columns are built)."""
        kappa: float | None = provider("fleiss_kappa")(self._matrix(lambda v: v.kind, True))
        return kappa

    def pairwise_agreement(
        self, measure: Literal["percent", "cohen"] = "percent"
    ) -> dict[tuple[str, str], float | None]:
        """Agreement of each pair of critics over the items both judged validly, keyed both
        ways round: percent agreement or Cohen's kappa."""
        pairs: dict[tuple[str, str], float | None] = provider("pairwise_agreement")(
            self.labels_matrix(), self.critics, measure
        )
        return pairs

    # -- labels from people --------------------------------------------------------------------

    def label_queue(
        self,
        n: int,
        *,
        strategy: QueueStrategy = "uncertain",
        seed: int | None = None,
        floor: float = 0.3,
        exclude: Iterable[str] = (),
    ) -> LabelQueue:
        """``n`` items for people to label, chosen by ``strategy`` (``"uncertain"``,
        ``"disputed"``, ``"uniform"``, ``"stratified"``), each with the probability it had
        of being chosen, so that :meth:`estimate` can undo the selection. See
        :func:`cross_judge.stats.label_queue.label_queue`.

        Raises:
            ConfigError: an unknown strategy, ``n`` out of range, ``floor`` not > 0 or
                outside the strategy's bounds (at least 0.1 for ``"uncertain"`` and
                ``"disputed"``, at most 10 for ``"disputed"``).
        """
        queue: LabelQueue = provider("label_queue")(
            self, n, strategy=strategy, seed=seed, floor=floor, exclude=exclude
        )
        return queue

    def estimate(
        self,
        label: str,
        *,
        gold: Mapping[str, str] | str | os.PathLike[str],
        queue: LabelQueue | None = None,
        ci: float = 0.95,
        exclude: Iterable[str] = (),
        prediction: Prediction = "votes",
        allow_jury_shown: bool = False,
    ) -> Estimate:
        """The share of these items whose true label is ``label``, from the jury and
        people's ``gold`` labels (``{id: label}`` or the labelling page's JSONL file),
        unbiased whatever the jury's errors (PPI++, inverse-probability weighted by the
        ``queue`` the labels came from; without one they are taken as a uniform sample).
        See :func:`cross_judge.stats.estimates.estimate_share` for every assumption.

        Raises:
            ConfigError: bad gold, gold ids outside the results without a queue, a queue
                drawn from other results (or another ``exclude``), ``ci`` outside (0, 1),
                labels made with the jury shown without ``allow_jury_shown=True``.
        """
        options = {"queue": queue, "ci": ci, "exclude": exclude, "prediction": prediction}
        estimate: Estimate = provider("estimate")(
            self, label, gold=gold, allow_jury_shown=allow_jury_shown, **options
        )
        return estimate

    def estimate_accuracy(
        self,
        critic: str,
        *,
        gold: Mapping[str, str] | str | os.PathLike[str],
        queue: LabelQueue | None = None,
        ci: float = 0.95,
        exclude: Iterable[str] = (),
        prediction: Prediction = "consensus",
        allow_jury_shown: bool = False,
    ) -> Estimate:
        """``critic``'s accuracy over the items it gave a valid vote on, from its agreement
        with the jury and people's ``gold`` labels (PPI++, as :meth:`estimate`). See
        :func:`cross_judge.stats.estimates.estimate_accuracy`.

        Raises:
            ConfigError: ``critic`` gave no valid vote, and as :meth:`estimate`.
        """
        options = {"queue": queue, "ci": ci, "exclude": exclude, "prediction": prediction}
        estimate: Estimate = provider("estimate_accuracy")(
            self, critic, gold=gold, allow_jury_shown=allow_jury_shown, **options
        )
        return estimate

    def compare(
        self,
        baseline: BatchResult | str | os.PathLike[str],
        *,
        metric: CompareMetric = "auto",
        gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
        label: str | None = None,
        noise: BatchResult | str | os.PathLike[str] | None = None,
        allow_panel_change: bool = False,
        **options: Any,
    ) -> RunDiff:
        """This batch (the candidate) against ``baseline`` on the same items, paired by id:
        the difference in ``metric`` with its interval and a paired test, the items that
        flipped, per critic and per criterion. ``noise`` is a second judgement of the
        baseline's outputs (an A/A run): the judge's own noise is reported beside. See
        :func:`cross_judge.report.compare_runs` for every option.

        Raises:
            ConfigError: the judge differs between the runs (unless ``allow_panel_change``),
                a manifest is missing, the item sets differ, as :func:`compare_runs` says.
        """
        diff: RunDiff = provider("compare")(
            baseline,
            self,
            metric=metric,
            gold=gold,
            label=label,
            noise=noise,
            allow_panel_change=allow_panel_change,
            **options,
        )
        return diff

    # -- per criterion (rubric batches) --------------------------------------------------------

    def criteria_agreement(
        self, level: Literal["auto", "nominal", "ordinal"] = "auto"
    ) -> dict[str, CriterionAgreement]:
        """Per criterion of a rubric batch, Krippendorff's alpha (nominal for a two-label
        scale, ordinal by the scale's scores for a longer one, or ``level``), Fleiss'
        kappa, pairwise agreement and the share of items disputed, from each critic's
        answers on it; ``{}`` without criteria. See
        :func:`cross_judge.stats._criteria.criteria_agreement`.

        Raises:
            ConfigError: a label outside the scale at the ordinal level.
        """
        agreements: dict[str, CriterionAgreement] = provider("criteria_agreement")(
            self, level=level
        )
        return agreements

    def criteria_gold_metrics(
        self,
        gold: Mapping[str, Mapping[str, str | None]] | str | os.PathLike[str],
        *,
        ci: float | None = None,
    ) -> dict[str, GoldReport]:
        """Per criterion with gold (``{item id: {criterion id: label}}``, or a JSONL file of
        ``{"id", "criteria": {...}}``), each critic and the panel's consensus on it against
        the labels: one :class:`~cross_judge.stats._gold.GoldReport` per criterion. See
        :func:`cross_judge.stats._criteria.criteria_gold_metrics`.

        Raises:
            ConfigError: gold ids that are no item, criteria no result holds, labels
                outside the scale.
        """
        reports: dict[str, GoldReport] = provider("criteria_gold_report")(self, gold, ci=ci)
        return reports

    def criteria_dawid_skene(
        self,
        *,
        one_coin: bool = False,
        errors: Literal["independent", "correlated"] = "independent",
    ) -> dict[str, CriterionDawidSkene]:
        """Per criterion, the Dawid-Skene model fitted on the critics' answers on it: each
        item's most likely label, each critic's accuracy and confusion matrix on it.
        ``revote("dawid_skene")`` re-decides a rubric batch by these fits. See
        :func:`cross_judge.stats._criteria.criteria_dawid_skene`."""
        fits: dict[str, CriterionDawidSkene] = provider("criteria_dawid_skene")(
            self, one_coin=one_coin, errors=errors
        )
        return fits

    def _matrix(self, value: Callable[[Verdict], Any], complete: bool = False) -> list[list[Any]]:
        """Critics x items ``value`` of each valid verdict (``None`` elsewhere); ``complete``:
        only the items every critic judged validly."""
        index = {name: i for i, name in enumerate(self.critics)}
        results = self.verdicts
        if complete:  # a critic per verdict at most: fewer verdicts than critics, incomplete
            results = [
                r
                for r in results
                if len(r.verdicts) >= len(index)
                and index.keys() <= {v.critic_id for v in r.verdicts if v.error is None}
            ]
        rows: list[list[Any]] = [[None] * len(results) for _ in self.critics]
        for column, result in enumerate(results):
            for verdict in result.verdicts:
                row = index.get(verdict.critic_id)
                if row is not None and verdict.error is None:
                    rows[row][column] = value(verdict)
        return rows

    # -- counts ------------------------------------------------------------------------------

    def consensus_counts(self) -> dict[str, int]:
        """Items per consensus label chosen by a vote, most common first.

        Items with no consensus (:attr:`no_consensus_items`: the strategy fell back to its
        ``fallback`` label, ``UNCLEAR`` by default) are left out: a fallback ``UNCLEAR`` is
        not a vote for ``UNCLEAR``, while a panel agreeing on ``UNCLEAR`` is counted.
        """
        return dict(Counter(r.consensus for r in self.verdicts if not is_fallback(r)).most_common())

    @property
    def no_consensus_items(self) -> list[str]:
        """Ids of items whose consensus is the strategy's fallback label because no vote
        decided it (no valid verdict, quorum not met, no unanimity): see
        :func:`is_fallback`."""
        return [r.query_id for r in self.verdicts if is_fallback(r)]

    @property
    def abstained_items(self) -> list[str]:
        """Ids of items a cascade left for a human (consensus ``ABSTAIN``)."""
        return [r.query_id for r in self.verdicts if r.consensus == ABSTAIN and r.tier is not None]

    @property
    def failed_items(self) -> list[str]:
        """Ids of items that are worth judging again: a call failed after its retries
        (an ``ERROR`` verdict), or was not made for lack of budget (``SKIPPED`` with
        ``error_kind="budget"``). Parse failures and early-stop skips do not count."""
        return [r.query_id for r in self.verdicts if is_incomplete(r)]

    @property
    def usage(self) -> Usage:
        """Tokens used by the whole batch."""
        total = Usage()
        for result in self.verdicts:
            total = total + result.usage
        return total

    @property
    def cost_usd(self) -> float | None:
        """Cost of the whole batch; ``None`` unless every item's cost is known."""
        costs = [r.cost_usd for r in self.verdicts]
        if not costs or any(c is None for c in costs):
            return None
        return sum(c for c in costs if c is not None)

    def tier_stats(self) -> list[TierStats]:
        """Per-tier counts of a cascade's batch (items asked, decided, abstained, cost), in
        tier order; empty when no result came from a cascade."""
        depth = max((len(r.tiers or ()) for r in self.verdicts), default=0)
        n = len(self.verdicts)
        out: list[TierStats] = []
        for index in range(depth):
            asked = [r for r in self.verdicts if r.tiers and len(r.tiers) > index]
            mine = [r.tiers[index] for r in asked if r.tiers]
            decided = [
                r.tiers[index]
                for r in asked
                if r.tier == index and r.consensus != ABSTAIN and r.tiers
            ]
            abstained = sum(1 for r in asked if r.tier == index and r.consensus == ABSTAIN)
            costs = [t.cost_usd for t in mine]
            out.append(
                TierStats(
                    tier=index,
                    critics=list(dict.fromkeys(v.critic_id for t in mine for v in t.verdicts)),
                    asked=len(asked),
                    decided=len(decided),
                    abstained=abstained,
                    share_asked=len(asked) / n if n else 0.0,
                    share_decided=len(decided) / n if n else 0.0,
                    agreement=sum(t.agreement_pct for t in decided) / len(decided)
                    if decided
                    else None,
                    cost_usd=sum(c for c in costs if c is not None)
                    if all(c is not None for c in costs)
                    else None,
                )
            )
        return out

    def critic_stats(self) -> dict[str, CriticStats]:
        """Per-critic counts and rates, by critic name in panel order.

        One pass over the verdicts (a 100,000-item batch of three critics takes well under
        a second), counting into a tally per critic.
        """
        tallies = {name: CriticTally() for name in self.critics}
        for result in self.verdicts:
            for verdict, consensus in votes_and_consensus(result):
                tally = tallies.get(verdict.critic_id)
                if tally is not None:
                    tally.add(verdict, consensus)
        return {name: tally.stats(name) for name, tally in tallies.items()}

    # -- bias --------------------------------------------------------------------------------

    def position_bias(self) -> PositionBias:
        """Per critic and for the whole panel, the share of decisive answers on pairs that
        picked the candidate shown first, the flip rate of pairs judged in both orders and
        a fairness score. See :func:`cross_judge.bias.position_bias`."""
        bias: PositionBias = provider("position_bias")(self)
        return bias

    def length_bias(self, bins: Sequence[float] | None = None) -> LengthBias:
        """Per critic and for the consensus, the win rate of a pair's longer candidate,
        binned by relative length difference (``bins``: inner edges, by default 10%, 25%,
        50%). See :func:`cross_judge.bias.length_bias`.

        Raises:
            ConfigError: ``bins`` are not strictly rising numbers in (0, 1).
        """
        length_bias = provider("length_bias")
        bias: LengthBias = length_bias(self) if bins is None else length_bias(self, bins)
        return bias

    def self_consistency(self) -> dict[str, SelfStats]:
        """Per critic, the mean agreement with itself of its sampled verdicts
        (``Critic(samples=n)``), apart from agreement between critics. See
        :func:`cross_judge.bias.self_consistency`."""
        stats: dict[str, SelfStats] = provider("self_consistency")(self)
        return stats

    # -- re-voting ---------------------------------------------------------------------------

    def against(
        self, gold: Mapping[str, str] | str | os.PathLike[str], *, ci: float | None = None
    ) -> GoldReport:
        """How each critic and the consensus fare against ``gold`` (``{id: label}`` or a
        JSONL file of ``{"id", "label"}``; partial gold is fine): accuracy, Cohen's kappa,
        confusion, coverage, Brier score, expected calibration error, reliability table;
        bootstrap intervals with ``ci=0.95``. See :func:`cross_judge.reliability.gold_report`.

        Raises:
            ConfigError: gold ids that are no item of the batch, or a gold label outside
                what the critics answer.
        """
        report: GoldReport = provider("gold_report")(self, gold, ci=ci)
        return report

    def revote(
        self,
        voting: str | VotingStrategy = "majority",
        *,
        weights: Mapping[str, float] | None = None,
        min_valid: int | None = None,
        **voting_kwargs: Any,
    ) -> BatchResult:
        """The same verdicts under another strategy; calls no model.

        ``voting="dawid_skene"`` re-decides every item by the Dawid-Skene model learned
        from the whole batch (:func:`cross_judge.reliability.dawid_skene`; ``one_coin=True``
        for its one-accuracy-per-critic variant, ``errors="correlated"`` for critics that
        err together); the consensus's posterior probability is each item's ``score``. An
        item with no valid vote gets ``fallback`` (default ``"UNCLEAR"``) with
        ``fallback=True`` and no score, as under every other strategy. A rubric batch is
        re-decided per criterion, one model per criterion
        (:func:`cross_judge.stats._criteria.revote_criteria_dawid_skene`), and each item's
        total and consensus recomputed from them.

        Raises:
            ConfigError: unknown strategy or invalid arguments (before any item is touched);
                results of a cascade, whose tiers vote apart with their own critics (replay
                the cascade with another escalation instead, or re-vote a tier's results);
                this holds for ``"dawid_skene"`` too, which would learn one model over
                every tier's critics.
        """
        learned = isinstance(voting, str) and voting.strip().lower() in BATCH_STRATEGIES
        if any(r.tiers for r in self.verdicts):
            raise ConfigError(
                "these results come from a cascade, whose tiers vote separately; replay it "
                "with another escalation (cascade.replay(results, escalation=...)), or "
                + (
                    "fit one tier's results: BatchResult.from_results(r.tiers[i] for r in "
                    "batch.verdicts if r.tiers and len(r.tiers) > i).revote('dawid_skene')"
                    if learned
                    else "re-vote one tier's results: revote(result.tiers[i], ...)"
                )
            )
        if learned:
            unknown = sorted(set(voting_kwargs) - {"one_coin", "errors", "fallback"})
            given = {"weights": weights is not None, "min_valid": min_valid is not None}
            extra = [*unknown, *(name for name, is_given in given.items() if is_given)]
            if extra:
                raise ConfigError(
                    "revote('dawid_skene') learns each critic's reliability from the "
                    "verdicts and takes only one_coin=True/False, "
                    "errors='independent'/'correlated' and fallback='<label>'; drop "
                    + ", ".join(extra)
                )
            fallback = voting_kwargs.get("fallback", "UNCLEAR")
            if not isinstance(fallback, str):
                raise ConfigError(f"fallback must be a label (str), got {fallback!r}")
            # A rubric batch is re-decided criterion by criterion, as every strategy does.
            per_criterion = any(r.criteria for r in self.verdicts)
            revoted: BatchResult = provider(
                "revote_criteria_dawid_skene" if per_criterion else "revote_dawid_skene"
            )(
                self,
                one_coin=bool(voting_kwargs.get("one_coin", False)),
                errors=voting_kwargs.get("errors", "independent"),
                fallback=fallback,
            )
            return revoted

        each: list[EnsembleVerdict] = provider("revote_many")(
            self.verdicts, voting, weights=weights, min_valid=min_valid, **voting_kwargs
        )
        results = [_same_item(new, old) for new, old in zip(each, self.verdicts, strict=True)]
        return self.model_copy(update={"verdicts": results, "voting": strategy_name(voting)})

    async def align(self, gold: Any, panel: Any, **options: Any) -> Any:
        """Align ``panel``'s critics (the Ensemble that judged this batch) with ``gold``
        labels and measure it on held-out items: an ``AlignmentPlan``. See
        :func:`cross_judge.alignment.align` for the options and errors."""
        return await provider("align")(self, gold, panel, **options)

    def select_panel(self, gold: Any = None, **options: Any) -> Any:
        """Rank the panels this pilot's critics could form by replaying its verdicts (zero
        calls): ``PanelPlans``; see :func:`cross_judge.panel_choice.select_panel`."""
        return provider("select_panel")(self, gold, **options)

    # -- votes from elsewhere ----------------------------------------------------------------

    @property
    def human_critics(self) -> list[str]:
        """The critics that are people (their first verdict has ``vendor="human"``,
        :data:`HUMAN_VENDOR`), in critic order; the summary marks them ``†``."""
        first: dict[str, Verdict] = {}
        for result in self.verdicts:
            first.update((v.critic_id, v) for v in result.verdicts if v.critic_id not in first)
        return [n for n in self.critics if n in first and first[n].vendor == HUMAN_VENDOR]

    @classmethod
    def from_votes(
        cls,
        rows: Any,
        *,
        item: str = "item",
        critic: str = "critic",
        label: str = "label",
        confidence: str | None = None,
        reasoning: str | None = None,
        voting: str = "majority",
        voting_kwargs: Mapping[str, Any] | None = None,
        people: bool | Iterable[str] = True,
    ) -> BatchResult:
        """A batch of votes cast elsewhere (people's labels, another tool's judge logs), each
        item voted with ``voting`` and ``voting_kwargs`` as :meth:`revote` (``dawid_skene``
        too). ``rows``: dicts (keys named by ``item``, ``critic``, ``label``, ``confidence``,
        ``reasoning``), tuples ``(item, critic, label[, confidence])``, or a pandas or polars
        frame. Items and critics keep their first-seen order; labels are kept as given,
        stripped. ``people``: ``True`` marks every voter a person (``vendor="human"``), a
        list names the people, ``False`` none. See :mod:`cross_judge.batch.votes`.

        Raises:
            ConfigError: a bad row (named: ``rows[3]``), one voter's two labels on an item
                (both rows named), ``people`` naming no voter, a bad strategy.
        """
        batch: BatchResult = provider("from_votes")(
            rows, item=item, critic=critic, label=label, confidence=confidence,
            reasoning=reasoning, voting=voting, voting_kwargs=voting_kwargs, people=people,
        )  # fmt: skip
        return batch

    def add_votes(
        self,
        rows: Any,
        *,
        item: str = "item",
        critic: str = "critic",
        label: str = "label",
        confidence: str | None = None,
        reasoning: str | None = None,
        people: bool | Iterable[str] = True,
        revote: bool = True,
        voting: str | None = None,
        voting_kwargs: Mapping[str, Any] | None = None,
    ) -> BatchResult:
        """A copy of this batch with votes cast elsewhere added as extra critics (``rows``
        and ``people`` as in :meth:`from_votes`; a label that differs from one of the
        batch's only in case takes the batch's spelling). With ``revote`` each item is voted
        again with ``voting`` (default: the batch's strategy by name; its arguments are not
        stored, pass them in ``voting_kwargs``), so its consensus may change;
        ``revote=False`` keeps the jury's consensus, to measure people against the jury.

        Raises:
            ConfigError: votes on items not in the batch (named); a voter already a critic;
                a cascade's results; a bad row, as :meth:`from_votes`.
        """
        batch: BatchResult = provider("add_votes")(
            self, rows, item=item, critic=critic, label=label, confidence=confidence,
            reasoning=reasoning, people=people, revote=revote, voting=voting,
            voting_kwargs=voting_kwargs,
        )  # fmt: skip
        return batch

    # -- export ------------------------------------------------------------------------------

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write one ``EnsembleVerdict`` JSON object per line (what the CLI writes), replacing
        the file. :meth:`from_jsonl` reads it back."""
        with open(path, "w", encoding="utf-8") as out:
            for result in self.verdicts:
                out.write(dump_result(result) + "\n")

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str], *, slim: bool = False) -> BatchResult:
        """Read a results file written by :meth:`to_jsonl` or ``cross-judge review``.

        Critics are named in first-seen order; ``voting`` is the first record's;
        ``simulated_critics`` are those the run manifest beside the file
        (``OUT.jsonl.manifest.json``, when there is a readable one) records as simulated,
        and ``simulated_without_gold`` those its simulator knew no item's truth for.
        With ``slim`` each verdict's ``raw_response`` and ``reasoning`` are dropped as
        lines are read, which keeps a large run's statistics in a fraction of the memory
        (each result's ``item`` text is kept: it is bounded).

        Raises:
            ConfigError: the file is missing or a line is not a result (line number given).
        """
        batch = cls.from_results(read_results(path, slim=slim))
        batch.simulated_critics = recorded_simulated_critics(path)
        batch.simulated_without_gold = recorded_simulated_without_gold(path)
        batch.manifest_runs = manifest_runs(path)
        return batch

    @classmethod
    def from_results(cls, results: Iterable[EnsembleVerdict]) -> BatchResult:
        """A batch of stored results: critics named in first-seen order, ``voting`` the
        first result's (``"majority"`` when there is none)."""
        verdicts = list(results)
        critics = list(dict.fromkeys(v.critic_id for r in verdicts for v in r.verdicts))
        voting = verdicts[0].voting if verdicts else "majority"
        return cls(verdicts=verdicts, critics=critics, voting=voting)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per item, for ``pandas.DataFrame(batch.to_records())``.

        Keys: ``id``, ``consensus``, ``agreement_pct``, ``disagreement``, ``n_valid``,
        ``n_errors``, ``score``, ``cost_usd``, ``elapsed_s`` (and ``tier`` for a cascade's
        results), then per critic
        ``<critic>.kind``, ``<critic>.confidence`` and ``<critic>.error_kind``, then each
        meta key as ``meta.<key>``.

        Rubric results (``EnsembleVerdict.criteria``) also have, for every criterion id of
        the batch (in rubric order) and before the meta keys: ``criterion.<id>`` (the
        panel's label on it), ``criterion.<id>.score``, ``criterion.<id>.agreement_pct`` and
        ``criterion.<id>.disputed``, then per critic ``<critic>.criterion.<id>``, its label
        on it (``ERROR``/``PARSE_FAIL`` when that answer or the whole call failed,
        ``SKIPPED`` when it was not asked). ``score`` is then the item's weighted total. A
        criterion an item was not judged on is ``None`` throughout.
        """
        criterion_ids = self._criterion_ids()
        records: list[dict[str, Any]] = []
        for result in self.verdicts:
            record: dict[str, Any] = {
                "id": result.query_id,
                "consensus": result.consensus,
                "agreement_pct": result.agreement_pct,
                "disagreement": result.disagreement,
                "n_valid": result.n_valid,
                "n_errors": result.n_errors,
                "score": result.score,
                "cost_usd": result.cost_usd,
                "elapsed_s": result.elapsed_s,
            }
            if result.tier is not None:
                record["tier"] = result.tier
            by_critic = {v.critic_id: v for v in result.verdicts}
            for name in self.critics:
                v = by_critic.get(name)
                record[f"{name}.kind"] = v.kind if v else None
                record[f"{name}.confidence"] = v.confidence if v and v.error is None else None
                record[f"{name}.error_kind"] = v.error_kind.value if v and v.error_kind else None
            if criterion_ids:
                record.update(self._criterion_record(result, criterion_ids, by_critic))
            for key, value in result.meta.items():
                record[f"meta.{key}"] = value
            records.append(record)
        return records

    def _criterion_ids(self) -> list[str]:
        """The criterion ids of the batch's rubric results: each result's rubric order,
        first seen first; empty for a batch without rubric results."""
        ids: dict[str, None] = {}
        for result in self.verdicts:
            if result.criteria is not None:
                order = result.rubric.ids if result.rubric is not None else ()
                ids.update(dict.fromkeys(cid for cid in order if cid in result.criteria))
                ids.update(dict.fromkeys(result.criteria))
        return list(ids)

    def _criterion_record(
        self, result: EnsembleVerdict, ids: Sequence[str], by_critic: Mapping[str, Verdict]
    ) -> dict[str, Any]:
        """The per-criterion keys of :meth:`to_records` for one result."""
        record: dict[str, Any] = {}
        criteria = result.criteria or {}
        for cid in ids:
            voted = criteria.get(cid)
            record[f"criterion.{cid}"] = voted.consensus if voted else None
            record[f"criterion.{cid}.score"] = voted.score if voted else None
            record[f"criterion.{cid}.agreement_pct"] = voted.agreement_pct if voted else None
            record[f"criterion.{cid}.disputed"] = voted.disputed if voted else None
        for name in self.critics:
            v = by_critic.get(name)
            for cid in ids:
                label: str | None = None
                if v is not None and cid in criteria:
                    answer = (v.criteria or {}).get(cid)
                    # As rubric.tally.criterion_verdicts reads it: a failed call failed on
                    # every criterion, an answer without this criterion was not asked.
                    label = answer.kind if answer else v.kind if v.error else "SKIPPED"
                record[f"{name}.criterion.{cid}"] = label
        return record

    # -- summary -----------------------------------------------------------------------------

    def summary(
        self,
        *,
        gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
        ci: float | None = None,
    ) -> RenderableType:
        """A ``rich`` renderable: totals and agreement, consensus counts, one row per critic;
        with ``gold`` also the critics and the consensus against it (bootstrap intervals at
        ``ci``), the weights it earns and the panel's effective votes.

        ``rich.print(batch.summary())`` in a terminal or notebook; ``print(batch)`` gives
        the same as plain text.
        """
        summary: RenderableType = provider("render_summary")(self, gold=gold, ci=ci)
        return summary

    def __rich__(self) -> RenderableType:
        return self.summary()

    def __str__(self) -> str:
        return plain_text(self.summary())

    # -- notebooks ---------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        """The batch at a glance for Jupyter: headline statistics, per-critic and consensus
        tables, then up to 50 items, the disputed ones first (see
        :func:`cross_judge.report._notebook.batch_html`)."""
        html: str = provider("batch_html")(self)
        return html

    def to_pandas(self, level: str = "verdict") -> Any:
        """A long ``pandas.DataFrame``: one row per critic verdict of each item, items in
        batch order (a panel's batch has items x critics rows; a cascade's, the critics of
        each tier asked, tier by tier). ``?`` marks a column that may be missing.

        Per verdict: ``position`` (int, the item's index in the batch), ``query_id``,
        ``critic``, ``tier`` (int?, the cascade tier that asked it), ``kind`` (the label, or
        ``ERROR`` / ``PARSE_FAIL`` / ``SKIPPED``), ``valid`` (bool, a vote: no error),
        ``confidence`` (float?, valid verdicts only), ``score`` (float?), ``reasoning``,
        ``error_kind`` and ``error`` (str?, why the call failed), ``agrees`` (bool?, a valid
        verdict's label equals the consensus it is measured against: the item's, or its own
        tier's in a cascade, as in :meth:`critic_stats`), ``model``, ``vendor`` (str?),
        ``cost_usd`` (float?, missing when unpriced), ``elapsed_s`` (float), ``attempts``
        (int), ``cached`` (bool), ``prompt_tokens`` and ``completion_tokens`` (int?,
        missing when the call reported no usage), ``order`` and ``flipped`` (pairs only).

        Per item, repeated on each of its rows: ``consensus``, ``agreement_pct`` (float),
        ``fallback`` (bool, no vote decided), ``disagreement`` (bool), ``decided_tier``
        (int?, the cascade tier that decided), ``query`` (str?, the text judged as the
        result stores it: ``item``), for rubric results per criterion ``criterion.<id>``,
        ``.score``, ``.disputed`` and the row's critic's label ``criterion.<id>.kind``
        (:data:`cross_judge.integrations._frames.CRITERION_COLUMNS`), then ``context.<key>``
        for each key of the stored
        items' context and ``meta.<key>`` for each key of the items' ``meta`` (missing
        where an item lacks it). Item totals such as cost are left out on purpose: summed
        over rows they would count once per critic; sum ``cost_usd`` instead.
        (:meth:`to_records` is the wide one-row-per-item table.) ``level="item"``: one row
        per item, its structure as JSON text; ``level="unit"``: one row per turn or step
        judged (:mod:`cross_judge.integrations._frames`).

        dtypes: ``int64``, ``float64`` (``NaN`` when missing), ``bool``; nullable ``Int64``
        and ``boolean`` for ints and bools that may be missing; text in pandas' default
        string dtype; meta columns inferred. An empty batch gives the columns and no rows.

        Raises:
            ConfigError: pandas is not installed (``pip install 'cross-judge[pandas]'``), or
                an unknown ``level``.
        """
        return provider("to_pandas")(self, level)

    def to_polars(self, level: str = "verdict") -> Any:
        """The frame of :meth:`to_pandas` at ``level`` (same columns, same rows) as a
        ``polars.DataFrame``: ``Int64``, ``Float64``, ``Boolean`` and ``String`` columns with
        nulls for missing values; a meta key whose values mix types is a ``String`` column
        of their text.

        Raises:
            ConfigError: polars is not installed (``pip install 'cross-judge[polars]'``).
        """
        return provider("to_polars")(self, level)


def votes_and_consensus(result: EnsembleVerdict) -> Iterator[tuple[Verdict, str]]:
    """Each verdict of ``result`` with the consensus it is measured against: the item's, or
    for a cascade's result its own tier's (a cheap critic is not in dissent when its tier
    escalated, nor when the last tier abstained)."""
    for part in result.tiers or (result,):
        for verdict in part.verdicts:
            yield verdict, part.consensus


def as_batch(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
) -> BatchResult:
    """``results`` as a :class:`BatchResult`: itself, stored results
    (:meth:`BatchResult.from_results`), or a results file (read slim: raw text and
    reasoning dropped).

    Raises:
        ConfigError: the file is missing or a line is not a result.
    """
    if isinstance(results, BatchResult):
        return results
    if isinstance(results, (str, os.PathLike)):
        return BatchResult.from_jsonl(results, slim=True)
    return BatchResult.from_results(results)


def is_fallback(result: EnsembleVerdict) -> bool:
    """True when ``result.consensus`` is the voting strategy's fallback label, given because
    no vote decided (``EnsembleVerdict.fallback``), not a label the critics voted for.
    Results stored without that flag (older files) read as votes: the field defaults to
    False."""
    return result.fallback


_MESSAGES_KEPT = 16  # distinct messages tallied per error kind: bounded memory on huge runs


class CriticTally:
    """What :meth:`BatchResult.critic_stats` counts for one critic, verdict by verdict:
    :meth:`add` each verdict with the consensus it is measured against
    (:func:`votes_and_consensus`), then :meth:`stats` gives its :class:`CriticStats`.

    Memory is bounded whatever the number of verdicts: failed calls are tallied by error
    kind as they come, with at most 16 distinct messages per kind (a streaming pass over a
    results file, ``cross_judge.report._digest``, uses it too)."""

    __slots__ = (
        "agreeing",
        "asked",
        "cost",
        "cost_known",
        "elapsed",
        "errors",
        "estimates",
        "items",
        "kinds",
        "messages",
        "parse",
        "tokens",
        "valid",
    )

    def __init__(self) -> None:
        self.items = self.asked = self.valid = self.agreeing = self.errors = self.parse = 0
        self.elapsed = self.cost = 0.0
        self.cost_known = True
        self.estimates = 0
        self.tokens = [0, 0, 0, 0, 0]  # prompt, completion, total, cache read, cache write
        self.kinds: Counter[str] = Counter()
        self.messages: dict[str, Counter[str]] = {}

    def add(self, verdict: Verdict, consensus: str) -> None:
        """Count one of the critic's verdicts, measured against ``consensus``."""
        self.items += 1
        usage = verdict.usage
        if usage is not None:
            tokens = self.tokens
            tokens[0] += usage.prompt_tokens
            tokens[1] += usage.completion_tokens
            tokens[2] += usage.total_tokens
            tokens[3] += usage.cache_read_tokens
            tokens[4] += usage.cache_write_tokens
        if verdict.error is None:
            self.valid += 1
            self.agreeing += verdict.kind == consensus
        kind = verdict.kind
        if kind == "SKIPPED":
            return
        self.asked += 1
        self.elapsed += verdict.elapsed_s
        self.estimates += verdict.cost_estimates
        if verdict.cost_usd is None:
            self.cost_known = False
        else:
            self.cost += verdict.cost_usd
        if kind == "ERROR":
            self.errors += 1
            self._failed(verdict)
        elif kind == "PARSE_FAIL":
            self.parse += 1
            self._failed(verdict)

    def _failed(self, verdict: Verdict) -> None:
        """Tally a failed verdict by error kind, and its message among the first few
        distinct ones seen for that kind."""
        kind = str(verdict.error_kind or ("parse" if verdict.kind == "PARSE_FAIL" else "error"))
        self.kinds[kind] += 1
        seen = self.messages.setdefault(kind, Counter())
        text = verdict.error or ""
        if text in seen or len(seen) < _MESSAGES_KEPT:
            seen[text] += 1

    def stats(self, name: str) -> CriticStats:
        """The critic's record, named ``name``, over the verdicts added so far."""
        asked = self.asked
        kinds = dict(self.kinds.most_common())
        messages = {kind: seen.most_common(1)[0][0] for kind, seen in self.messages.items() if seen}
        prompt, completion, total, cache_read, cache_write = self.tokens
        return CriticStats(
            critic=name,
            items=self.items,
            valid=self.valid,
            errors=self.errors,
            parse_failures=self.parse,
            skipped=self.items - asked,
            error_rate=self.errors / asked if asked else None,
            parse_fail_rate=self.parse / asked if asked else None,
            agreement=self.agreeing / self.valid if self.valid else None,
            mean_elapsed_s=self.elapsed / asked if asked else None,
            usage=Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=total,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
            cost_usd=self.cost if asked and self.cost_known else None,
            cost_estimates=self.estimates,
            error_kinds=kinds,
            error_messages=messages,
        )


def is_incomplete(result: EnsembleVerdict) -> bool:
    """True when a call of ``result`` failed after its retries (``ERROR``) or was not made
    for lack of budget: the item is worth judging again (``--retry-failed``). For a
    cascade's result only the deciding tier counts (a failure in a tier that escalated is
    covered by the tier after it), unless it holds tiers past the deciding one (judged with
    ``all_tiers``, the data calibration and replay read): then every tier counts."""
    if result.tiers and result.tier is not None and len(result.tiers) == result.tier + 1:
        verdicts = result.tiers[result.tier].verdicts
    else:
        verdicts = result.verdicts
    return any(call_failed(v) for v in verdicts)


def call_failed(verdict: Verdict) -> bool:
    """True when ``verdict``'s call failed after its retries (``ERROR``) or was not made
    for lack of budget (``SKIPPED`` with ``error_kind="budget"``)."""
    return verdict.kind == "ERROR" or (
        verdict.kind == "SKIPPED" and verdict.error_kind is ErrorKind.BUDGET
    )


# -- the results file's lines ------------------------------------------------------------------


def dump_result(result: EnsembleVerdict) -> str:
    """``result`` as one line of JSON (no newline), as results files hold it.

    Lossless for any text, including a lone surrogate anywhere, mapping keys included
    (valid JSON as an escape such as ``"\\ud800"``, e.g. in an item id read from a JSONL
    file or a label from a vendor): UTF-8 cannot encode one, so such a record is written
    with ASCII escapes instead of failing. :func:`load_result`
    reads both forms back.
    """
    try:
        return result.model_dump_json()
    except PydanticSerializationError:
        # Rare (text that is not Unicode); the escaped form is ~3x slower to write.
        # pydantic's JSON mode mangles a lone surrogate in a mapping's key (to U+FFFD), so
        # keys come from the Python-mode dump, values from the JSON-mode one.
        value = _with_keys_of(result.model_dump(mode="json"), result.model_dump())
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _with_keys_of(dumped: Any, original: Any) -> Any:
    """``dumped`` (a JSON-mode dump) with each mapping's text keys taken from ``original``
    (the Python-mode dump of the same model, whose keys are the model's own). Where the
    two do not line up (two keys that JSON mode made equal), ``original``'s value is made
    JSON-able directly, anything unusual as its ``str()``."""
    if isinstance(dumped, dict) and isinstance(original, dict):
        if len(dumped) != len(original):
            return json.loads(json.dumps(original, default=str, ensure_ascii=True))
        return {
            (key if isinstance(key, str) else dumped_key): _with_keys_of(item, original_item)
            for (dumped_key, item), (key, original_item) in zip(
                dumped.items(), original.items(), strict=True
            )
        }
    if isinstance(dumped, list) and isinstance(original, (list, tuple)):
        if len(dumped) != len(original):
            return dumped
        return [_with_keys_of(a, b) for a, b in zip(dumped, original, strict=True)]
    return dumped


def load_result(line: str | bytes) -> EnsembleVerdict:
    """One line written by :func:`dump_result`, as an :class:`EnsembleVerdict`.

    Reads every line :func:`dump_result` writes, lone surrogate escapes included (high
    ``"\\ud800"`` or low ``"\\udc80"``, anywhere: an id, a label, a reasoning, meta).

    Raises:
        ValidationError: the line is not JSON or not a result record.
    """
    try:
        return EnsembleVerdict.model_validate_json(line)
    except ValidationError as exc:
        # pydantic's JSON parser refuses lone surrogate escapes (with messages such as
        # "lone leading surrogate" or "unexpected end of hex escape"), which json.loads
        # keeps; any line it calls invalid JSON gets a second reading.
        if not any(e.get("type") == "json_invalid" for e in exc.errors()):
            raise
        try:
            value = json.loads(line)
        except ValueError:
            raise exc from None
        return EnsembleVerdict.model_validate(value)


def _same_item(revoted: EnsembleVerdict, stored: EnsembleVerdict) -> EnsembleVerdict:
    """``revoted`` with what re-voting does not change carried over from ``stored``: the
    text judged (``item``) and a pair's lengths."""
    revoted.item = stored.item
    revoted.pair_lengths = stored.pair_lengths
    return revoted


def read_results(path: str | os.PathLike[str], *, slim: bool = False) -> Iterator[EnsembleVerdict]:
    """The results in a file, in file order; blank lines are skipped. With ``slim``,
    verdicts lose ``raw_response`` and ``reasoning`` (see :meth:`BatchResult.from_jsonl`).

    Raises:
        ConfigError: the file is missing, or a line is not a result (line number given).
    """
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such results file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                result = load_result(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ConfigError(
                    f"{path} line {number}: not a result record ({where}: {first['msg']})"
                ) from None
            if slim:
                result.verdicts = [
                    v.model_copy(update={"raw_response": None, "reasoning": ""})
                    for v in result.verdicts
                ]
            yield result


# The classes' public path: users import them from cross_judge.batch, and pickles, reprs
# and the docs name that path.
for _public in (BatchResult, CriticStats, TierStats):
    _public.__module__ = "cross_judge.batch"
del _public
