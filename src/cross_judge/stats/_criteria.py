"""Statistics per criterion of a rubric batch: agreement, gold metrics and Dawid-Skene, each
computed criterion by criterion from the critics' answers on it.

A rubric batch holds, per item, each critic's answer on each criterion
(``Verdict.criteria``) and the panel's result on each (``EnsembleVerdict.criteria``).
:class:`CriteriaVotes` reads them once into one critics x items matrix of labels per
criterion (``None`` where a critic gave no valid answer on it: a failed call, a parse
failure of that criterion, a criterion it was not asked); every statistic here is the
existing one of :mod:`._agreement`, :mod:`._gold` or :mod:`._dawid_skene` run on that matrix:

- :func:`criteria_agreement`: Krippendorff's alpha (nominal for a two-label scale such as
  ``PASS``/``FAIL``; ordinal, labels ranked by the scale's scores, for a longer scale),
  Fleiss' kappa, pairwise percent agreement, and how many items were disputed;
- :func:`criteria_gold_metrics`: per criterion, each critic and the panel's consensus on it
  against gold labels ``{item id: {criterion id: label}}``;
- :func:`criteria_dawid_skene`: the Dawid-Skene model fitted per criterion (posterior
  labels, each critic's accuracy and confusion matrix on it), and
  :func:`revote_criteria_dawid_skene`, behind ``batch.revote("dawid_skene")`` for a rubric
  batch: each criterion re-decided by its fit, the item's total and consensus recomputed.

Calls no model. It deliberately does not combine criteria into one agreement figure (their
scales and difficulty differ: read them side by side) and does not read item-level labels
(that is :mod:`._reliability`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._extensions import provide
from ..errors import ConfigError
from ..results import BatchResult, read_results
from ..rubric.models import DEFAULT_SCALE, CriterionConsensus, Rubric
from ..rubric.tally import outcome
from ..verdict import EnsembleVerdict
from ._agreement import fleiss_kappa, pairwise_agreement, reliability_alpha
from ._gold_file import read_gold

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ._dawid_skene import DawidSkeneFit, Errors
    from ._gold import GoldReport

__all__ = [
    "CriteriaLevel",
    "CriteriaVotes",
    "CriterionAgreement",
    "CriterionDawidSkene",
    "agreement_table",
    "criteria_agreement",
    "criteria_dawid_skene",
    "criteria_gold_metrics",
    "criterion_agreement",
    "gold_table",
    "load_criteria_gold",
    "read_gold_file",
    "revote_criteria_dawid_skene",
    "scale_order",
]

CriteriaLevel = Literal["auto", "nominal", "ordinal"]
"""Level of alpha per criterion: ``"auto"`` takes the scale's (ordinal for more than two
labels), or force one."""

Results = BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str]


def scale_order(scale: Mapping[str, float]) -> tuple[str, ...]:
    """The labels of a rubric's ``scale`` from low to high score (labels of equal score in
    the scale's order): the order ordinal alpha ranks them in."""
    return tuple(sorted(scale, key=lambda label: scale[label]))


@dataclass(frozen=True)
class CriterionAgreement:
    """How far the critics agree on one criterion across the batch.

    ``level`` and ``values`` say how alpha compared the labels (``values``: the labels
    ranked low to high, for ordinal). ``alpha`` is Krippendorff's alpha over every item
    with two valid answers or more; ``fleiss_kappa`` over the items every critic answered
    validly (a criterion decided by early stop before all were asked drops out);
    ``pairwise`` each pair's percent agreement on the items both answered, keyed both ways
    round. ``n_items`` counts the items with at least one valid answer on it,
    ``n_pairable`` those with two or more, ``n_disputed`` those whose valid answers were
    not unanimous (the panel's ``disputed``); ``disputed_share`` is ``n_disputed /
    n_items``. Undefined statistics are ``None``.
    """

    criterion: str
    level: Literal["nominal", "ordinal"]
    values: tuple[str, ...]
    alpha: float | None
    fleiss_kappa: float | None
    pairwise: dict[tuple[str, str], float | None]
    n_items: int
    n_pairable: int
    n_disputed: int

    @property
    def disputed_share(self) -> float | None:
        """The share of answered items that were disputed; ``None`` with no item."""
        return self.n_disputed / self.n_items if self.n_items else None


class CriteriaVotes:
    """Each critic's valid answer on each criterion of rubric results, item by item: one
    critics x items label matrix per criterion (:meth:`matrix`), the panel's consensus per
    criterion (:meth:`consensus`) and, when asked for, each answer's stated confidence.

    Feed results with :meth:`add` (or build with :meth:`of`); a critic or a criterion first
    seen late gets ``None`` for the items before. Critics are named in first-seen order
    (as :meth:`BatchResult.from_results`), or fixed by ``critics`` (answers of others are
    left out, as the batch's matrices do). Memory is one reference per critic, criterion
    and item (two with ``confidences``); nothing else of a result is kept.
    """

    def __init__(self, *, critics: Sequence[str] | None = None, confidences: bool = False) -> None:
        self.critics: list[str] = []
        self.item_ids: list[str] = []
        self.rubric: Rubric | None = None
        self._fixed = critics is not None
        self._index: dict[str, int] = {}
        self._answers: dict[str, list[list[str | None]]] = {}
        self._stated: dict[str, list[list[float | None]]] | None = {} if confidences else None
        self._consensus: dict[str, list[str | None]] = {}
        self._scores: dict[str, float | None] = {}
        for name in critics or ():
            self._add_critic(name)

    @classmethod
    def of(
        cls,
        results: Results,
        *,
        critics: Sequence[str] | None = None,
        confidences: bool = False,
    ) -> CriteriaVotes:
        """The votes of ``results``: a batch (its critics, in its order), stored results, or
        a results file read line by line (slim).

        Raises:
            ConfigError: the file is missing or a line is not a result.
        """
        if isinstance(results, BatchResult):
            critics = results.critics if critics is None else critics
            source: Iterable[EnsembleVerdict] = results.verdicts
        elif isinstance(results, (str, os.PathLike)):
            source = read_results(results, slim=True)
        else:
            source = results
        votes = cls(critics=critics, confidences=confidences)
        for result in source:
            votes.add(result)
        return votes

    def __len__(self) -> int:
        return len(self.item_ids)

    def _add_critic(self, name: str) -> None:
        self._index[name] = len(self.critics)
        self.critics.append(name)
        n = len(self.item_ids)
        for rows in self._answers.values():
            rows.append([None] * n)
        for stated in (self._stated or {}).values():
            stated.append([None] * n)

    def _add_criterion(self, cid: str) -> None:
        n = len(self.item_ids)
        self._answers[cid] = [[None] * n for _ in self.critics]
        if self._stated is not None:
            self._stated[cid] = [[None] * n for _ in self.critics]
        self._consensus[cid] = [None] * n

    def add(self, result: EnsembleVerdict) -> None:
        """Take one result's answers per criterion (a result with none adds an item on
        which every criterion is unanswered)."""
        if self.rubric is None and result.rubric is not None:
            self.rubric = result.rubric
        for verdict in result.verdicts:
            if verdict.critic_id not in self._index and not self._fixed:
                self._add_critic(verdict.critic_id)
            for cid in verdict.criteria or ():
                if cid not in self._answers:
                    self._add_criterion(cid)
        for cid in result.criteria or ():
            if cid not in self._answers:
                self._add_criterion(cid)
        column = len(self.item_ids)
        for rows in self._answers.values():
            for row in rows:
                row.append(None)
        for stated in (self._stated or {}).values():
            for confidences in stated:
                confidences.append(None)
        for labels in self._consensus.values():
            labels.append(None)
        for verdict in result.verdicts:
            index = self._index.get(verdict.critic_id)
            if index is None:
                continue
            for cid, answer in (verdict.criteria or {}).items():
                if answer.error is not None:
                    continue
                self._answers[cid][index][column] = answer.kind
                if self._stated is not None:
                    # A valid answer's confidence is the one it stated (see
                    # rubric.tally.criterion_verdicts).
                    self._stated[cid][index][column] = answer.confidence
                if self._scores.get(answer.kind) is None:
                    self._scores[answer.kind] = answer.score
        for cid, decided in (result.criteria or {}).items():
            if not decided.fallback:
                self._consensus[cid][column] = decided.consensus
        self.item_ids.append(result.query_id)

    @property
    def ids(self) -> tuple[str, ...]:
        """The criteria answered or decided, in the rubric's order, then any other in
        first-seen order."""
        seen = self._answers
        first = [cid for cid in self.rubric.ids if cid in seen] if self.rubric else []
        return (*first, *(cid for cid in seen if cid not in first))

    def matrix(self, cid: str) -> list[list[str | None]]:
        """Critics x items labels on criterion ``cid`` (``None``: no valid answer).

        Raises:
            KeyError: no result holds this criterion.
        """
        return [list(row) for row in self._criterion(cid)]

    def confidences(self, cid: str) -> list[list[float | None]]:
        """Critics x items stated confidences of the valid answers on ``cid`` (``None``:
        no valid answer, or votes read without ``confidences``)."""
        self._criterion(cid)
        stated = (self._stated or {}).get(cid)
        if stated is None:
            return [[None] * len(self) for _ in self.critics]
        return [list(row) for row in stated]

    def consensus(self, cid: str) -> list[str | None]:
        """The panel's consensus on ``cid`` per item (``None``: the item has no result on
        it, or no vote decided it)."""
        self._criterion(cid)
        return list(self._consensus[cid])

    def _criterion(self, cid: str) -> list[list[str | None]]:
        try:
            return self._answers[cid]
        except KeyError:
            raise KeyError(f"no criterion {cid!r}; these results hold {list(self.ids)}") from None

    @property
    def scale(self) -> tuple[str, ...]:
        """The labels from low to high: the rubric's scale by score; without a stored
        rubric, the labels answered (``FAIL``, ``PASS`` when they are those), by the score
        they carried, those without one last, by name."""
        if self.rubric is not None:
            return scale_order(self.rubric.scale)
        labels = list(self._scores)
        if set(labels) <= set(DEFAULT_SCALE):
            return scale_order(DEFAULT_SCALE)
        return tuple(
            sorted(labels, key=lambda x: (self._scores[x] is None, self._scores[x] or 0.0, x))
        )

    @property
    def ordinal(self) -> bool:
        """Whether the scale is ordinal: the rubric says so (more than two labels); without
        a rubric, more than two labels answered, each with a score."""
        if self.rubric is not None:
            return self.rubric.ordinal
        return len(self._scores) > 2 and all(s is not None for s in self._scores.values())


def criterion_agreement(
    matrix: Sequence[Sequence[str | None]],
    critics: Sequence[str],
    *,
    level: Literal["nominal", "ordinal"] = "nominal",
    values: Sequence[str] | None = None,
    criterion: str = "",
) -> CriterionAgreement:
    """:class:`CriterionAgreement` of one criterion's critics x items label ``matrix``
    (``None``: no valid answer); ``values`` ranks the labels for ``"ordinal"`` (low to
    high; required there) and is recorded for ``"nominal"``.

    Raises:
        ConfigError: ``"ordinal"`` without ``values``, a label outside ``values`` there,
            an unknown level, rows not one per critic or of different lengths.
    """
    if level not in ("nominal", "ordinal"):
        raise ConfigError(f"level must be 'nominal' or 'ordinal', got {level!r}")
    if level == "ordinal" and values is None:
        raise ConfigError("ordinal alpha per criterion needs values: the labels, low to high")
    if len(matrix) != len(critics):
        raise ConfigError(f"matrix has {len(matrix)} rows for {len(critics)} critics")
    try:
        alpha = reliability_alpha(matrix, level, values if level == "ordinal" else None)
        kappa = fleiss_kappa(matrix)
        pairs = pairwise_agreement(matrix, critics, "percent")
    except ValueError as exc:
        where = f"criterion {criterion!r}: " if criterion else ""
        raise ConfigError(f"{where}{exc}") from None
    answered = pairable = disputed = 0
    for column in zip(*matrix, strict=True):
        valid = [label for label in column if label is not None]
        answered += bool(valid)
        pairable += len(valid) >= 2
        disputed += len(set(valid)) > 1
    return CriterionAgreement(
        criterion=criterion,
        level=level,
        values=tuple(values or ()),
        alpha=alpha,
        fleiss_kappa=kappa,
        pairwise=pairs,
        n_items=answered,
        n_pairable=pairable,
        n_disputed=disputed,
    )


def _votes(results: Results | CriteriaVotes, *, confidences: bool = False) -> CriteriaVotes:
    if isinstance(results, CriteriaVotes):
        return results
    return CriteriaVotes.of(results, confidences=confidences)


@provide("criteria_agreement")
def criteria_agreement(
    results: Results | CriteriaVotes, *, level: CriteriaLevel = "auto"
) -> dict[str, CriterionAgreement]:
    """Per criterion (rubric order), the critics' agreement on it
    (:class:`CriterionAgreement`). ``level="auto"`` compares labels as nominal on a
    two-label scale and as ordinal, ranked by the scale's scores, on a longer one
    (:attr:`CriteriaVotes.scale`); ``"nominal"`` or ``"ordinal"`` forces one. Results
    without criteria give ``{}``.

    Raises:
        ConfigError: a label outside the scale at the ordinal level; an unknown level.
    """
    if level not in ("auto", "nominal", "ordinal"):
        raise ConfigError(f"level must be 'auto', 'nominal' or 'ordinal', got {level!r}")
    votes = _votes(results)
    chosen: Literal["nominal", "ordinal"] = (
        ("ordinal" if votes.ordinal else "nominal") if level == "auto" else level
    )
    return {
        cid: criterion_agreement(
            votes.matrix(cid), votes.critics, level=chosen, values=votes.scale, criterion=cid
        )
        for cid in votes.ids
    }


# -- gold --------------------------------------------------------------------------------------


def read_gold_file(
    path: str | os.PathLike[str],
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """A gold file's item labels and criterion labels: JSONL lines of ``{"id", "label"}``,
    ``{"id", "criteria": {criterion id: label}}`` or both keys; blank lines skipped; a
    ``null`` criterion label is unlabelled. Read and checked as every gold file is
    (:func:`cross_judge.stats._gold_file.read_gold`).

    Raises:
        ConfigError: an unreadable file, a line with neither key or a value of the wrong
            type (its number given), an id given two different labels, a label that is
            empty, padded with spaces or reserved (``ERROR``, ``SKIPPED``, ...).
    """
    read = read_gold(path)
    return read.items, read.criteria


def load_criteria_gold(
    gold: Mapping[str, Mapping[str, str | None]] | str | os.PathLike[str],
) -> dict[str, dict[str, str]]:
    """Gold labels per criterion as ``{item id: {criterion id: label}}``: a mapping, or a
    gold file (:func:`read_gold_file`; its item labels are ignored here). ``None`` labels
    are dropped (unlabelled).

    Raises:
        ConfigError: as :func:`read_gold_file`; a mapping whose labels are not strings.
    """
    if isinstance(gold, Mapping):
        for item, labels in gold.items():
            if not isinstance(labels, Mapping):
                raise ConfigError(
                    f"gold for item {item!r} must map criterion ids to labels (str), "
                    f"got {labels!r:.80}"
                )
        return read_gold(gold).criteria
    return read_gold_file(gold)[1]


@provide("criteria_gold_report")
def criteria_gold_metrics(
    results: Results | CriteriaVotes,
    gold: Mapping[str, Mapping[str, str | None]] | str | os.PathLike[str],
    *,
    ci: float | None = None,
    bins: int = 10,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, GoldReport]:
    """Per criterion with a gold label, each critic and the panel's consensus on it against
    gold (``{item id: {criterion id: label}}`` or a gold file with ``criteria``): the
    :class:`~cross_judge.stats._gold.GoldReport` of
    :func:`~cross_judge.stats._gold.gold_metrics` (accuracy, Cohen's kappa, confusion,
    coverage; Brier, ECE and a reliability table from the answers' stated confidences;
    bootstrap intervals with ``ci``), its ``"consensus"`` row the panel's per-criterion
    consensus (no row answer where the vote fell back). Criteria nobody labelled are left
    out; partial gold is fine.

    Raises:
        ConfigError: a gold id that is no item, a gold criterion no result holds, a gold
            label outside the scale and the labels answered, no gold label at all; what
            :func:`~cross_judge.stats._gold.gold_metrics` refuses.
    """
    from ._gold import gold_metrics, unknown_ids

    votes = _votes(results, confidences=True)
    labels = load_criteria_gold(gold)
    unknown_ids(list(labels), votes.item_ids)
    known = set(votes.ids)
    named = list(dict.fromkeys(cid for by_id in labels.values() for cid in by_id))
    unknown = [cid for cid in named if cid not in known]
    if unknown:
        raise ConfigError(
            f"gold names criteria {unknown} that no result holds; these results hold "
            f"{list(votes.ids)}"
        )
    if not any(labels.values()):
        raise ConfigError("no item has a gold label on any criterion")
    reports: dict[str, GoldReport] = {}
    for cid in votes.ids:
        aligned = [labels.get(item, {}).get(cid) for item in votes.item_ids]
        if not any(label is not None for label in aligned):
            continue
        matrix = votes.matrix(cid)
        consensus = votes.consensus(cid)
        answered = {label for row in matrix for label in row if label is not None}
        vocabulary = list(
            dict.fromkeys(
                [*votes.scale, *sorted(answered), *(c for c in consensus if c is not None)]
            )
        )
        reports[cid] = gold_metrics(
            _transposed(matrix),
            votes.critics,
            aligned,
            confidences=_transposed(votes.confidences(cid)),
            consensus=consensus,
            vocabulary=vocabulary,
            bins=bins,
            ci=ci,
            n_boot=n_boot,
            seed=seed,
        )
    return reports


def _transposed(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    return [list(column) for column in zip(*rows, strict=True)] if rows else []


# -- Dawid-Skene -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriterionDawidSkene:
    """The Dawid-Skene model of one criterion, fitted on the critics' answers on it.

    ``labels`` and ``posteriors`` (``posteriors[id][label]``) are by item id, for the
    items with at least one valid answer on it (an item nobody answered would get the
    priors alone: a guess, not an estimate); ``accuracy`` each critic's estimated accuracy
    on it (``None``: no valid answer), ``confusion`` its estimated
    ``{true label: {answered label: probability}}``, ``priors`` the estimated share of
    each label; ``fit`` the whole fit (items by position in the batch, critics by column).
    """

    criterion: str
    labels: dict[str, str]
    posteriors: dict[str, dict[str, float]]
    accuracy: dict[str, float | None]
    confusion: dict[str, dict[str, dict[str, float]]]
    priors: dict[str, float]
    fit: DawidSkeneFit


def _fit_criterion(
    votes: CriteriaVotes, cid: str, *, one_coin: bool, errors: Errors
) -> tuple[DawidSkeneFit, list[bool]]:
    """The fit of criterion ``cid`` and, per item, whether it had a valid answer."""
    from ._dawid_skene import fit_votes

    items: list[int] = []
    critics: list[int] = []
    labels: list[str] = []
    answered = [False] * len(votes)
    for j, row in enumerate(votes.matrix(cid)):
        for i, label in enumerate(row):
            if label is not None:
                items.append(i)
                critics.append(j)
                labels.append(label)
                answered[i] = True
    observed = dict.fromkeys(labels)
    classes = [*votes.scale, *(x for x in observed if x not in votes.scale)]
    fit = fit_votes(
        items,
        critics,
        labels,
        n_items=len(votes),
        n_critics=len(votes.critics),
        classes=classes,
        one_coin=one_coin,
        errors=errors,
        critic_names=votes.critics,
    )
    return fit, answered


@provide("criteria_dawid_skene")
def criteria_dawid_skene(
    results: Results | CriteriaVotes,
    *,
    one_coin: bool = False,
    errors: Errors = "independent",
) -> dict[str, CriterionDawidSkene]:
    """Per criterion (rubric order), the Dawid-Skene model fitted on the critics' answers on
    it alone (:func:`~cross_judge.stats._dawid_skene.fit_votes`; the classes are the scale's
    labels, so a label nobody gave still has a row): the most likely label of each item
    and each critic's accuracy and confusion matrix on that criterion. Missing answers are
    left out. ``one_coin`` and ``errors`` as for :func:`cross_judge.reliability.dawid_skene`.
    Warns :class:`~cross_judge.errors.StatisticsWarning` for a critic estimated below chance
    on a criterion. Results without criteria give ``{}``.

    Raises:
        ConfigError: ``errors="correlated"`` without numpy; what ``fit_votes`` refuses.
    """
    votes = _votes(results)
    out: dict[str, CriterionDawidSkene] = {}
    for cid in votes.ids:
        fit, answered = _fit_criterion(votes, cid, one_coin=one_coin, errors=errors)
        classes = list(fit.classes)
        kept = [i for i, yes in enumerate(answered) if yes]
        out[cid] = CriterionDawidSkene(
            criterion=cid,
            labels={votes.item_ids[i]: fit.labels[i] for i in kept},
            posteriors={
                votes.item_ids[i]: dict(zip(classes, fit.posteriors[i], strict=True)) for i in kept
            },
            accuracy={name: fit.accuracy[j] for j, name in enumerate(votes.critics)},
            confusion={
                name: {t: dict(row) for t, row in fit.confusion[j].items()}
                for j, name in enumerate(votes.critics)
            },
            priors=dict(fit.priors),
            fit=fit,
        )
    return out


@provide("revote_criteria_dawid_skene")
def revote_criteria_dawid_skene(
    batch: BatchResult,
    *,
    one_coin: bool = False,
    errors: Errors = "independent",
    fallback: str = "UNCLEAR",
) -> BatchResult:
    """``batch`` (rubric results) with each item's criteria re-decided by the Dawid-Skene
    model of each criterion (:func:`criteria_dawid_skene`), then its total (``score``),
    consensus, ``disagreement``, ``agreement_pct`` and ``dissenters`` recomputed from them
    as the panel does (:func:`cross_judge.rubric.tally.outcome`, over the criteria the
    item holds). A criterion no critic answered validly on an item gets ``fallback`` with
    ``fallback=True`` and no score, as under every other strategy. ``disputed`` and
    ``n_valid`` of a criterion describe the answers and are kept. Calls no model; the
    batch read is left unchanged.
    """
    votes = CriteriaVotes.of(batch)
    fits = {
        cid: _fit_criterion(votes, cid, one_coin=one_coin, errors=errors)[0] for cid in votes.ids
    }
    rubric = votes.rubric
    revoted: list[EnsembleVerdict] = []
    for i, result in enumerate(batch.verdicts):
        item_rubric = result.rubric or rubric
        if not result.criteria or item_rubric is None:
            revoted.append(result)
            continue
        criteria: dict[str, CriterionConsensus] = {}
        for cid, before in result.criteria.items():
            answers = [row[i] for row in votes.matrix(cid)] if cid in fits else []
            valid = [(name, a) for name, a in zip(votes.critics, answers, strict=True) if a]
            if not valid:
                criteria[cid] = before.model_copy(
                    update={"consensus": fallback, "fallback": True, "score": None}
                )
                continue
            label = fits[cid].labels[i]
            agreeing = sum(1 for _, a in valid if a == label)
            criteria[cid] = before.model_copy(
                update={
                    "consensus": label,
                    "fallback": False,
                    "score": item_rubric.score_of(label),
                    "agreement_pct": agreeing / len(valid),
                    "dissenters": [name for name, a in valid if a != label],
                }
            )
        judged = outcome(
            criteria,
            item_rubric,
            fallback_label=fallback,
            partial=len(criteria) < len(item_rubric.ids),
        )
        kinds = [v for v in result.verdicts if v.error is None]
        revoted.append(
            result.model_copy(
                update={
                    "criteria": judged.criteria,
                    "consensus": judged.consensus,
                    "score": judged.total,
                    "fallback": judged.fallback,
                    "disagreement": judged.disagreement,
                    "agreement_pct": judged.agreement_pct,
                    "krippendorff_alpha": judged.alpha,
                    "dissenters": [v.critic_id for v in kinds if v.kind != judged.consensus],
                    "voting": "dawid_skene",
                }
            )
        )
    return batch.model_copy(update={"verdicts": revoted, "voting": "dawid_skene"})


# -- tables ------------------------------------------------------------------------------------


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def agreement_table(agreements: Mapping[str, CriterionAgreement]) -> RenderableType:
    """A ``rich`` table, one row per criterion: the level of alpha, alpha, Fleiss' kappa,
    the items answered and the share of them disputed."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, title="agreement per criterion", title_justify="left")
    for column in ("criterion", "level", "alpha", "Fleiss' kappa", "items", "disputed"):
        table.add_column(column, justify="left" if column in ("criterion", "level") else "right")
    for cid, row in agreements.items():
        table.add_row(
            cid,
            row.level,
            _number(row.alpha),
            _number(row.fleiss_kappa),
            str(row.n_items),
            f"{row.n_disputed} ({_share(row.disputed_share)})",
        )
    return table


def gold_table(reports: Mapping[str, GoldReport]) -> RenderableType:
    """A ``rich`` table, one row per criterion with gold: the labelled items, then the
    accuracy of each critic and of the consensus on it (``-``: nothing answered)."""
    from rich import box
    from rich.table import Table

    names = list(dict.fromkeys(row.name for report in reports.values() for row in report.rows))
    table = Table(
        box=box.SIMPLE_HEAD, title="accuracy per criterion against gold", title_justify="left"
    )
    table.add_column("criterion")
    table.add_column("gold", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    for cid, report in reports.items():
        by_name = {row.name: row.accuracy for row in report.rows}
        table.add_row(cid, str(report.n_gold), *(_number(by_name.get(n)) for n in names))
    return table
