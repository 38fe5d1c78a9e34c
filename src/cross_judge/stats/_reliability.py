"""How far to trust each critic, learned from the verdicts a batch already holds.

Everything here works on a :class:`~cross_judge.batch.BatchResult` (or a results file),
offline, with no vendor call:

* :func:`gold_report` (``batch.against(gold)``): per critic and for the consensus,
  accuracy, Cohen's kappa against gold, the confusion matrix, coverage, and for the
  stated confidence the Brier score, the expected calibration error and a reliability
  table; bootstrap intervals with ``ci=0.95``.
* :func:`learn_weights`: log-odds vote weights ``w = log(acc (K - 1) / (1 - acc))`` fit on
  labelled items, for ``Ensemble(weights=...)`` or ``batch.revote("weighted", weights=...,
  use_confidence=False)``.
* :func:`dawid_skene`: without labels, each critic's confusion matrix and the class
  priors by expectation-maximisation (Dawid and Skene, 1979; ``one_coin=True`` for one
  accuracy per critic; ``errors="correlated"`` for critics that err together on hard items
  and on the same wrong answer); posterior labels per item and each critic's estimated
  accuracy. ``batch.revote("dawid_skene")`` re-decides every item by it.
* :func:`calibrate_confidence`: temperature or isotonic scaling of each critic's stated
  confidence, fit on labelled items, with the expected calibration error before and after.
* :func:`effective_votes`: how many independent votes the panel is worth, from how
  often its critics err together.
* :func:`alpha_interval`: a bootstrap interval for Krippendorff's alpha of the batch.

Failed calls (``ERROR``, ``PARSE_FAIL``) and skipped ones count as missing votes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._extensions import provide
from ..errors import ConfigError
from ..results import BatchResult, as_batch
from ..verdict import EnsembleVerdict, Verdict
from ._batch_votes import BatchVotes, decided_results
from ._collector import collection_paused
from ._confidence_calibration import ConfidenceCalibration

if TYPE_CHECKING:
    from ._dawid_skene import DawidSkeneFit, Errors
    from ._gold import EffectiveVotes, GoldReport

__all__ = [
    "ConfidenceCalibration",
    "DawidSkeneResult",
    "WeightsFit",
    "alpha_interval",
    "calibrate_confidence",
    "dawid_skene",
    "effective_votes",
    "fit_batch",
    "gold_report",
    "learn_weights",
]


# -- inputs ----------------------------------------------------------------------------------


def _items_matrix(batch: BatchResult) -> list[list[str | None]]:
    """Items x critics labels (``None``: no valid verdict)."""
    return _by_item(batch, _kind)


def _by_item(
    batch: BatchResult,
    value: Callable[[Verdict], Any],
    results: Iterable[EnsembleVerdict] | None = None,
) -> list[list[Any]]:
    """Items x critics ``value`` of each valid verdict by a critic of the batch (``None``
    elsewhere; a critic's later verdict on an item wins): the transpose of
    ``batch._matrix(value)``, built as it is, without the critics x items one. ``results``:
    only those items (default: every item of the batch)."""
    index = {name: j for j, name in enumerate(batch.critics)}
    return [
        _row(result, index, value) for result in (batch.verdicts if results is None else results)
    ]


def _row(
    result: EnsembleVerdict, index: Mapping[str, int], value: Callable[[Verdict], Any]
) -> list[Any]:
    """One row of :func:`_by_item`."""
    row: list[Any] = [None] * len(index)
    find = index.get
    for verdict in result.verdicts:
        j = find(verdict.critic_id)
        if j is not None and verdict.error is None:
            row[j] = value(verdict)
    return row


def _kind(verdict: Verdict) -> str:
    return verdict.kind


def _stated_confidence(verdict: Verdict) -> float | None:
    """The verdict's confidence, ``None`` when it stated none (Brier and ECE leave it out)."""
    return verdict.confidence if verdict.confidence_stated else None


def _gold_by_item(
    batch: BatchResult, gold: Mapping[str, str] | str | os.PathLike[str]
) -> list[str | None]:
    """Gold labels aligned with the batch's items (``None``: unlabelled).

    Raises:
        ConfigError: a gold id that is not an item of the batch (a few named), or no
            labelled item at all.
    """
    from ._gold import load_gold, unknown_ids

    labels = load_gold(gold)
    ids = [r.query_id for r in batch.verdicts]
    unknown_ids(list(labels), ids)
    aligned = [labels.get(query_id) for query_id in ids]
    if not any(label is not None for label in aligned):
        raise ConfigError("no item of the batch has a gold label; gold ids are the items' ids")
    return aligned


# -- gold ------------------------------------------------------------------------------------


@provide("gold_report")
def gold_report(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str],
    *,
    ci: float | None = None,
    bins: int = 10,
    n_boot: int = 1000,
    seed: int = 0,
) -> GoldReport:
    """Per critic and for the consensus: accuracy, kappa against gold, confusion,
    coverage, Brier score, expected calibration error and reliability table (see
    :class:`~cross_judge.stats._gold.GoldReport`). ``gold`` is ``{id: label}`` or a JSONL file
    of ``{"id", "label"}``; partial gold is fine.

    Raises:
        ConfigError: gold ids that are no item of the batch, or a gold label no critic
            could answer (outside the critics' vocabulary).
    """
    from dataclasses import replace

    from ._gold import gold_metrics
    from ._gold_file import read_gold

    batch = as_batch(results)
    given = read_gold(gold, require_label=True)
    aligned = _gold_by_item(batch, given.items)
    ids = [r.query_id for r in batch.verdicts]
    chosen: Sequence[EnsembleVerdict] = batch.verdicts
    if len(set(ids)) == len(ids) and _confidences_valid(batch):
        # Only the labelled items count, so only theirs are passed: the same report, but a
        # batch of 10,000 items with a few hundred labelled is not read cell by cell. Ids
        # given twice or a confidence outside [0, 1] take every item, so that gold_metrics
        # refuses them as it always has.
        labelled = [i for i, label in enumerate(aligned) if label is not None]
        chosen = [batch.verdicts[i] for i in labelled]
        aligned = [aligned[i] for i in labelled]
        ids = [ids[i] for i in labelled]
    report = gold_metrics(
        _by_item(batch, _kind, chosen),
        batch.critics,
        aligned,
        confidences=_by_item(batch, _stated_confidence, chosen),
        consensus=[r.consensus for r in chosen],
        bins=bins,
        ci=ci,
        n_boot=n_boot,
        seed=seed,
        # Every item's labels: they fix the order of the report's labels.
        vocabulary=_allowed_labels(batch),
        item_ids=ids,
    )
    return replace(
        report,
        n_items=len(batch.verdicts),
        n_jury_shown=len(given.jury_shown & given.items.keys()),
    )


def _confidences_valid(batch: BatchResult) -> bool:
    """Whether every stated confidence of a valid verdict is a number in [0, 1] (as a
    verdict validated on construction holds), the check gold_metrics makes of each."""
    return all(
        type(c) is float and 0.0 <= c <= 1.0
        for r in batch.verdicts
        for v in r.verdicts
        if v.error is None and v.confidence_stated and (c := v.confidence) is not None
    )


def _allowed_labels(batch: BatchResult) -> list[str]:
    """What a gold label may be: what any critic answered, plus every consensus (a
    fallback ``UNCLEAR`` included); answers in the order a scan of the items x critics
    labels finds them, row by row."""
    labels: dict[str, None] = {}
    index = {name: j for j, name in enumerate(batch.critics)}
    for result in batch.verdicts:
        # A row is built only when one of its item's votes is a label not seen yet (a few
        # rows, at the start); the others hold no new label.
        if any(
            v.kind not in labels
            for v in result.verdicts
            if v.error is None and v.critic_id in index
        ):
            row = _row(result, index, _kind)
            labels.update(dict.fromkeys(label for label in row if label is not None))
    labels.update(dict.fromkeys(r.consensus for r in batch.verdicts))
    return list(labels)


# -- learned weights -------------------------------------------------------------------------


def _answered_labels(
    matrix: Sequence[Sequence[str | None]], gold: Sequence[str | None]
) -> set[str]:
    """The labels the critics answered (valid verdicts) and the gold holds: the classes of
    :func:`learn_weights`. The consensus is left out on purpose: a strategy's fallback label
    is no class when no critic answered it."""
    labels = {label for row in matrix for label in row if label is not None}
    labels.update(label for label in gold if label is not None)
    return labels


@dataclass(frozen=True)
class WeightsFit:
    """Log-odds vote weights learned on labelled items.

    ``accuracy`` is each critic's smoothed accuracy on the labelled items it judged
    (``None`` when it judged none: weight 1.0, neutral), ``n`` how many that was, ``classes``
    the number of labels ``K``. ``weights`` plug into ``Ensemble(weights=...)`` and
    ``batch.revote("weighted", weights=fit.weights, use_confidence=False)``.
    """

    weights: dict[str, float]
    accuracy: dict[str, float | None]
    n: dict[str, int]
    classes: int


def learn_weights(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str],
    *,
    smoothing: float = 2.0,
    classes: int | None = None,
) -> WeightsFit:
    """Each critic's vote weight ``w = log(acc (K - 1) / (1 - acc))``: the weight under
    which a weighted vote is the most likely label when critics err independently and
    uniformly over the other ``K - 1`` labels (the one-coin model). A critic at chance
    (``1 / K``) gets 0; one worse than chance gets 0 too (weights cannot be negative).
    ``acc`` is smoothed towards chance with ``smoothing`` pseudo-items: ``(right +
    smoothing / K) / (judged + smoothing)``, so a critic seen on few items is not
    trusted blindly. ``classes`` (``K``) defaults to the number of distinct labels the
    critics answered (valid verdicts) and the gold holds, at least 2; never the consensus,
    so a fallback ``UNCLEAR`` no critic answered is not a class, and the same votes and gold
    give the same weights whatever strategy decided the batch.

    Raises:
        ConfigError: as :func:`gold_report` for the gold labels; ``smoothing`` < 0 or
            ``classes`` < 2.
    """
    if not (isinstance(smoothing, (int, float)) and math.isfinite(smoothing) and smoothing >= 0):
        raise ConfigError(f"smoothing must be a number >= 0, got {smoothing!r}")
    batch = as_batch(results)
    matrix = _items_matrix(batch)
    aligned = _gold_by_item(batch, gold)
    k = classes if classes is not None else max(2, len(_answered_labels(matrix, aligned)))
    if k < 2:
        raise ConfigError(f"classes must be at least 2, got {classes!r}")
    weights: dict[str, float] = {}
    accuracy: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    for column, name in enumerate(batch.critics):
        judged = [(row[column], label) for row, label in zip(matrix, aligned, strict=True)]
        judged = [(answer, label) for answer, label in judged if answer is not None and label]
        counts[name] = len(judged)
        if not judged and smoothing == 0:
            weights[name], accuracy[name] = 1.0, None
            continue
        right = sum(answer == label for answer, label in judged)
        acc = (right + smoothing / k) / (len(judged) + smoothing)
        accuracy[name] = acc
        weights[name] = log_odds_weight(acc, k)
    return WeightsFit(weights=weights, accuracy=accuracy, n=counts, classes=k)


def log_odds_weight(accuracy: float, classes: int) -> float:
    """The vote weight ``log(acc (K - 1) / (1 - acc))`` of a critic right with probability
    ``accuracy`` among ``classes`` labels (:func:`learn_weights`): 0 at or below chance, and
    a flawless record very large (``acc`` taken as ``1 - 1e-6``), not infinite."""
    if accuracy >= 1.0:
        accuracy = 1.0 - 1e-6
    if accuracy <= 0:
        return 0.0
    return max(0.0, math.log(accuracy * (classes - 1) / (1.0 - accuracy)))


# -- Dawid-Skene ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DawidSkeneResult:
    """:func:`dawid_skene` over a batch: the fit, with items and critics by name.

    ``labels`` and ``posteriors`` are by item id (``posteriors[id][label]``), ``accuracy``
    each critic's estimated accuracy (``sum_k prior_k * P(answer k | truth k)``; ``None``
    for a critic with no valid verdict), ``priors`` the estimated share of each label.

    With ``errors="correlated"`` also: ``difficulty``, the share of items at each difficulty
    level (easiest first); ``accuracy_by_difficulty``, each critic's accuracy at each
    level; ``tempting_share``, the share of errors that land on the item's tempting wrong
    answer (the one critics share). They are empty (``None``) for the classic model.
    """

    labels: dict[str, str]
    posteriors: dict[str, dict[str, float]]
    accuracy: dict[str, float | None]
    priors: dict[str, float]
    fit: DawidSkeneFit
    difficulty: tuple[float, ...] = ()
    accuracy_by_difficulty: dict[str, tuple[float, ...] | None] = field(default_factory=dict)
    tempting_share: float | None = None


def dawid_skene(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    *,
    one_coin: bool = False,
    errors: Errors = "independent",
    classes: Sequence[str] | None = None,
    max_iter: int | None = None,
) -> DawidSkeneResult:
    """Each critic's reliability and each item's most likely label, learned without gold
    by expectation-maximisation (see :mod:`cross_judge.stats._dawid_skene`). Missing votes
    (failed or skipped calls) are left out. The verdicts are read as sparse votes
    (:func:`~cross_judge.stats._dawid_skene.fit_votes`): time and memory grow with the votes,
    not with items x critics, so hundreds of annotators who each judged a few items are
    fine. Uses numpy when it is installed (``cross-judge[stats]``), pure Python otherwise;
    the answers are the same. Warns :class:`~cross_judge.errors.StatisticsWarning`, naming
    the critics, when some are estimated clearly below chance (the labels may be flipped).

    ``errors="independent"`` is the classic model: given the true label, critics err
    independently. When they do not (same model family, same blind spots: wrong together on
    hard items, and on the same wrong answer), the classic fit trusts their shared mistakes,
    over-rates the weaker critics and under-rates the best. ``errors="correlated"`` models
    that (:mod:`cross_judge.stats._dawid_skene_correlated`): a difficulty level and a tempting wrong
    answer per item, both learned; on independent errors it gives the classic answers. It
    needs numpy. ``max_iter`` defaults to 100 (classic) or 1,000 (correlated) rounds.

    Raises:
        ConfigError: a verdict's label outside ``classes``; an empty batch;
            ``errors="correlated"`` without numpy.
    """
    batch = as_batch(results)
    fit = fit_batch(batch, one_coin=one_coin, errors=errors, classes=classes, max_iter=max_iter)
    ids = [r.query_id for r in batch.verdicts]
    labels = list(fit.classes)
    correlation = fit.correlation
    extra: dict[str, Any] = {}
    if correlation is not None:
        extra = {
            "difficulty": correlation.difficulty,
            "accuracy_by_difficulty": dict(
                zip(batch.critics, correlation.accuracy_by_difficulty, strict=True)
            ),
            "tempting_share": correlation.tempting_share,
        }
    return DawidSkeneResult(
        labels=dict(zip(ids, fit.labels, strict=True)),
        posteriors={
            query_id: dict(zip(labels, posterior, strict=True))
            for query_id, posterior in zip(ids, fit.posteriors, strict=True)
        },
        accuracy={name: fit.accuracy[i] for i, name in enumerate(batch.critics)},
        priors=dict(fit.priors),
        fit=fit,
        **extra,
    )


def fit_batch(
    batch: BatchResult,
    *,
    one_coin: bool = False,
    errors: Errors = "independent",
    classes: Sequence[str] | None = None,
    max_iter: int | None = None,
) -> DawidSkeneFit:
    """The Dawid-Skene fit of :func:`dawid_skene`, items by position and critics by their
    column in ``batch.critics``, without the per-id mappings (which cost a dict per item
    on a large batch). Reads the valid votes straight from the verdicts: no items x
    critics matrix is built.

    Raises:
        ConfigError: as :func:`dawid_skene`.
    """
    return _fit_votes(
        batch, BatchVotes(batch), one_coin=one_coin, errors=errors, classes=classes,
        max_iter=max_iter,
    )  # fmt: skip


def _fit_votes(
    batch: BatchResult,
    votes: BatchVotes,
    *,
    one_coin: bool,
    errors: Errors,
    classes: Sequence[str] | None = None,
    max_iter: int | None = None,
) -> DawidSkeneFit:
    """:func:`fit_batch` on votes already read."""
    from ._dawid_skene import fit_votes

    return fit_votes(
        votes.items,
        votes.critics,
        votes.labels,
        n_items=len(batch.verdicts),
        n_critics=len(batch.critics),
        classes=classes,
        one_coin=one_coin,
        errors=errors,
        max_iter=max_iter,
        critic_names=batch.critics,
    )


@provide("revote_dawid_skene")
def revote_dawid_skene(
    batch: BatchResult,
    *,
    one_coin: bool = False,
    errors: Errors = "independent",
    fallback: str = "UNCLEAR",
) -> BatchResult:
    """``batch`` with every item's consensus re-decided by :func:`dawid_skene`; the
    consensus's posterior probability is its ``score``. An item with no valid vote gets
    ``fallback`` with ``fallback=True`` and no score, as under every other strategy: its
    posterior would be the priors alone, a guess rather than a decision. ``agreement_pct``,
    ``disagreement`` and ``dissenters`` are recomputed as a per-item strategy does; every
    other field is kept. Calls no model.

    The batch it reads is left unchanged; each result is a shallow copy, as
    ``model_copy(update=...)`` makes it. Items are matched to the fit by position, so two
    items that share an id each keep their own label.

    The votes are read once, for the fit and for the items' figures alike, each copy is
    built in one step, and the garbage collector waits until the copies are made
    (:mod:`cross_judge.stats._batch_votes`): on 90,099 votes of 825 critics the re-vote
    takes about 3x the fit alone, reading the votes and copying the results being about
    half a fit each (``bench/bench_revote.py``).
    """
    with collection_paused():
        votes = BatchVotes(batch)
        fit = _fit_votes(batch, votes, one_coin=one_coin, errors=errors)
        revoted = decided_results(batch, votes, fit, fallback)
    return batch.model_copy(update={"verdicts": revoted, "voting": "dawid_skene"})


# -- confidence --------------------------------------------------------------------------------


def calibrate_confidence(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str],
    *,
    method: Literal["temperature", "isotonic"] = "temperature",
    bins: int = 10,
    critics: Sequence[str] | None = None,
) -> dict[str, ConfidenceCalibration]:
    """Per critic, a map from its stated confidence to the probability that it is right,
    fit on the labelled items it judged (see
    :func:`cross_judge.stats._confidence_calibration.fit_confidence_calibration`), with its
    expected calibration error before and after. A verdict already calibrated (by a
    ``Critic(calibration=...)`` or :func:`apply_calibration`) is read at its
    ``stated_confidence``, so refitting on such results gives the same fit, not a
    calibration of a calibration. Pass a fit as ``Critic(calibration=fits[name])``.

    Only votes that stated a confidence are fitted on: a verdict with
    ``confidence_stated=False`` (its 0.0 is a placeholder) is left out, like a failed
    call. ``critics`` fits only those critics (default: every critic of the batch), e.g.
    one at a time to keep the fits of the others when one cannot be fit.

    Raises:
        ConfigError: as :func:`gold_report` for the gold labels; a name in ``critics``
            that is not a critic of the batch; a critic (named) none of whose labelled
            verdicts stated a confidence, or whose verdicts that did cannot be fit (fewer
            than 2, or all right or all wrong; the message counts those that stated none).
    """
    from ._confidence_calibration import fit_confidence_calibration

    batch = as_batch(results)
    names = list(batch.critics) if critics is None else list(critics)
    unknown = [name for name in names if name not in batch.critics]
    if unknown:
        raise ConfigError(
            f"no critic {', '.join(map(repr, unknown))} in these results; their critics are "
            f"{', '.join(map(repr, batch.critics))}"
        )
    aligned = _gold_by_item(batch, gold)
    fits: dict[str, ConfidenceCalibration] = {}
    for name in names:
        confidences: list[float] = []
        correct: list[bool] = []
        unstated = 0
        for result, label in zip(batch.verdicts, aligned, strict=True):
            if label is None:
                continue
            for verdict in result.verdicts:
                if verdict.critic_id != name or verdict.error is not None:
                    continue
                stated = _stated(verdict)
                if stated is None:
                    unstated += 1
                    continue
                confidences.append(stated)
                correct.append(verdict.kind == label)
        if unstated and not confidences:
            raise ConfigError(
                f"critic {name!r}: none of its {unstated} labelled verdicts stated a "
                "confidence (its answers gave none, or none usable), so there is nothing to "
                "calibrate; have its prompt ask for a confidence, or leave it uncalibrated"
            )
        try:
            fits[name] = fit_confidence_calibration(confidences, correct, method=method, bins=bins)
        except ConfigError as exc:
            left_out = (
                f" ({unstated} more labelled verdicts stated no confidence and were left out)"
                if unstated
                else ""
            )
            raise ConfigError(f"critic {name!r}: {exc}{left_out}") from None
    return fits


def apply_calibration(
    batch: BatchResult, calibrations: Mapping[str, ConfidenceCalibration]
) -> BatchResult:
    """``batch`` with each critic's valid verdicts' confidence mapped by its calibration
    (critics without one are unchanged), and every item's ``avg_confidence`` recomputed.
    The map reads the model's own number (``stated_confidence`` when the verdict was
    calibrated already, so applying twice replaces, never compounds) and keeps it in
    ``stated_confidence``. A verdict that stated no confidence (``confidence_stated=False``)
    keeps its 0.0, as a calibrated critic leaves it. Calls no model; the labels and the
    consensus do not change."""
    results: list[EnsembleVerdict] = []
    for result in batch.verdicts:
        verdicts = [_calibrated(v, calibrations) for v in result.verdicts]
        valid = [v for v in verdicts if v.error is None]
        average = sum(v.confidence for v in valid) / len(valid) if valid else 0.0
        results.append(result.model_copy(update={"verdicts": verdicts, "avg_confidence": average}))
    return batch.model_copy(update={"verdicts": results})


def _calibrated(verdict: Verdict, calibrations: Mapping[str, ConfidenceCalibration]) -> Verdict:
    """``verdict`` with its stated confidence mapped by its critic's calibration; as is
    when it failed, stated no confidence, or its critic has no calibration."""
    calibration = calibrations.get(verdict.critic_id)
    stated = _stated(verdict)
    if calibration is None or verdict.error is not None or stated is None:
        return verdict
    return verdict.model_copy(
        update={"confidence": calibration.apply(stated), "stated_confidence": stated}
    )


def _stated(verdict: Verdict) -> float | None:
    """The confidence the model stated, before any calibration; ``None`` when it stated
    none (``confidence_stated=False``)."""
    if not verdict.confidence_stated:
        return None
    stated = verdict.stated_confidence
    return verdict.confidence if stated is None else stated


# -- panels ------------------------------------------------------------------------------------


def effective_votes(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
) -> EffectiveVotes:
    """How many independent votes the panel is worth, from the correlation of its
    critics' errors (see :func:`cross_judge.stats._gold.effective_votes`).

    With ``gold``, errors are measured against it on the labelled items
    (``reference="gold"``). Without it, errors are unobserved; with numpy installed the
    correlation is the one the correlated-errors Dawid-Skene model implies
    (:func:`dawid_skene` with ``errors="correlated"``: how much more often two critics are
    wrong together than chance, through item difficulty; ``reference="model"``). Without
    numpy it falls back to errors against the consensus (``reference="consensus"``), which
    hides shared errors, since critics wrong together carry the consensus with them: on
    the simulated vendor it reads 4.5 where gold says 3.0, and the model 3.1. The model
    needs items to learn from (a few hundred or more).
    """
    from dataclasses import replace

    from ._dawid_skene import numpy_available
    from ._gold import effective_votes as count, votes_worth

    batch = as_batch(results)
    matrix = _items_matrix(batch)
    if gold is not None:
        return count(matrix, _gold_by_item(batch, gold))
    if not numpy_available() or not batch.verdicts:
        reference = [None if r.fallback else r.consensus for r in batch.verdicts]
        return replace(count(matrix, reference), reference="consensus")
    correlation = dawid_skene(batch, errors="correlated").fit.correlation
    voting = [j for j in range(len(batch.critics)) if any(row[j] is not None for row in matrix)]
    pairwise: dict[tuple[int, int], float | None] = {}
    for a, i in enumerate(voting):
        for j in voting[a + 1 :]:
            pairwise[i, j] = None if correlation is None else correlation.error_correlation(i, j)
    return replace(votes_worth(len(voting), pairwise), reference="model")


def alpha_interval(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval (items resampled) for the batch's nominal
    Krippendorff's alpha; ``None`` when alpha is undefined on the resamples. The items are
    drawn in the order of their ids, so the interval does not depend on the order a
    results file was written in."""
    from ._agreement import reliability_alpha
    from ._gold import bootstrap_ci

    batch = as_batch(results)
    ids = [r.query_id for r in batch.verdicts]
    by_id = sorted(range(len(ids)), key=ids.__getitem__)
    matrix = [[row[i] for i in by_id] for row in batch.labels_matrix()]

    def alpha(items: list[int]) -> float | None:
        return reliability_alpha([[row[i] for i in items] for row in matrix], "nominal")

    return bootstrap_ci(alpha, len(batch.verdicts), ci=ci, n_boot=n_boot, seed=seed)


# The public path of these classes (cross_judge.reliability): reprs, pickles and the docs name it.
for _public in (DawidSkeneResult, WeightsFit):
    _public.__module__ = "cross_judge.reliability"
del _public
