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
  accuracy per critic); posterior labels per item and each critic's estimated accuracy.
  ``batch.revote("dawid_skene")`` re-decides every item by it.
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._confidence_calibration import ConfidenceCalibration
from .batch import BatchResult, as_batch
from .errors import ConfigError
from .verdict import EnsembleVerdict, Verdict

if TYPE_CHECKING:
    from ._dawid_skene import DawidSkeneFit
    from ._gold import EffectiveVotes, GoldReport

__all__ = [
    "ConfidenceCalibration",
    "DawidSkeneResult",
    "WeightsFit",
    "alpha_interval",
    "calibrate_confidence",
    "dawid_skene",
    "effective_votes",
    "gold_report",
    "learn_weights",
]


# -- inputs ----------------------------------------------------------------------------------


def _transposed(by_critic: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """A critics x items matrix as items x critics."""
    return [list(column) for column in zip(*by_critic, strict=True)] if by_critic else []


def _items_matrix(batch: BatchResult) -> list[list[str | None]]:
    """Items x critics labels (``None``: no valid verdict)."""
    return _transposed(batch.labels_matrix())


def _gold_by_item(
    batch: BatchResult, gold: Mapping[str, str] | str | os.PathLike[str]
) -> list[str | None]:
    """Gold labels aligned with the batch's items (``None``: unlabelled).

    Raises:
        ConfigError: a gold id that is not an item of the batch (a few named), or no
            labelled item at all.
    """
    from ._gold import unknown_ids
    from .cascade_calibration import load_gold

    labels = load_gold(gold)
    ids = [r.query_id for r in batch.verdicts]
    unknown_ids(list(labels), ids)
    aligned = [labels.get(query_id) for query_id in ids]
    if not any(label is not None for label in aligned):
        raise ConfigError("no item of the batch has a gold label; gold ids are the items' ids")
    return aligned


# -- gold ------------------------------------------------------------------------------------


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
    :class:`~cross_judge._gold.GoldReport`). ``gold`` is ``{id: label}`` or a JSONL file
    of ``{"id", "label"}``; partial gold is fine.

    Raises:
        ConfigError: gold ids that are no item of the batch, or a gold label no critic
            could answer (outside the critics' vocabulary).
    """
    from ._gold import gold_metrics

    batch = as_batch(results)
    matrix = _items_matrix(batch)
    aligned = _gold_by_item(batch, gold)
    confidences = _transposed(batch._matrix(lambda v: v.confidence))
    consensus = [r.consensus for r in batch.verdicts]
    return gold_metrics(
        matrix,
        batch.critics,
        aligned,
        confidences=confidences,
        consensus=consensus,
        bins=bins,
        ci=ci,
        n_boot=n_boot,
        seed=seed,
        vocabulary=_allowed_labels(batch, matrix),
    )


def _allowed_labels(batch: BatchResult, matrix: Sequence[Sequence[str | None]]) -> list[str]:
    """What a gold label may be: what any critic answered, plus every consensus (a
    fallback ``UNCLEAR`` included)."""
    labels = dict.fromkeys(label for row in matrix for label in row if label is not None)
    labels.update(dict.fromkeys(r.consensus for r in batch.verdicts))
    return list(labels)


# -- learned weights -------------------------------------------------------------------------


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
    trusted blindly. ``classes`` (``K``) defaults to the number of labels seen.

    Raises:
        ConfigError: as :func:`gold_report` for the gold labels; ``smoothing`` < 0 or
            ``classes`` < 2.
    """
    if not (isinstance(smoothing, (int, float)) and math.isfinite(smoothing) and smoothing >= 0):
        raise ConfigError(f"smoothing must be a number >= 0, got {smoothing!r}")
    batch = as_batch(results)
    matrix = _items_matrix(batch)
    aligned = _gold_by_item(batch, gold)
    k = classes if classes is not None else max(2, len(_allowed_labels(batch, matrix)))
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
        if acc >= 1.0:
            acc = 1.0 - 1e-6  # a flawless record with no smoothing: very large, not infinite
        weights[name] = max(0.0, math.log(acc * (k - 1) / (1.0 - acc))) if acc > 0 else 0.0
    return WeightsFit(weights=weights, accuracy=accuracy, n=counts, classes=k)


# -- Dawid-Skene ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DawidSkeneResult:
    """:func:`dawid_skene` over a batch: the fit, with items and critics by name.

    ``labels`` and ``posteriors`` are by item id (``posteriors[id][label]``), ``accuracy``
    each critic's estimated accuracy (``sum_k prior_k * P(answer k | truth k)``; ``None``
    for a critic with no valid verdict), ``priors`` the estimated share of each label.
    """

    labels: dict[str, str]
    posteriors: dict[str, dict[str, float]]
    accuracy: dict[str, float | None]
    priors: dict[str, float]
    fit: DawidSkeneFit


def dawid_skene(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    *,
    one_coin: bool = False,
    classes: Sequence[str] | None = None,
    max_iter: int = 100,
) -> DawidSkeneResult:
    """Each critic's reliability and each item's most likely label, learned without gold
    by expectation-maximisation (see :mod:`cross_judge._dawid_skene`). Missing votes
    (failed or skipped calls) are left out. Uses numpy when it is installed
    (``cross-judge[stats]``), pure Python otherwise; the answers are the same.

    Raises:
        ConfigError: a verdict's label outside ``classes``; an empty batch.
    """
    from ._dawid_skene import dawid_skene as fit_dawid_skene

    batch = as_batch(results)
    if not batch.verdicts:
        raise ConfigError("dawid_skene needs at least one item")
    matrix = _items_matrix(batch)
    fit = fit_dawid_skene(matrix, classes=classes, one_coin=one_coin, max_iter=max_iter)
    ids = [r.query_id for r in batch.verdicts]
    labels = list(fit.classes)
    return DawidSkeneResult(
        labels=dict(zip(ids, fit.labels, strict=True)),
        posteriors={
            query_id: dict(zip(labels, posterior, strict=True))
            for query_id, posterior in zip(ids, fit.posteriors, strict=True)
        },
        accuracy={name: fit.accuracy[i] for i, name in enumerate(batch.critics)},
        priors=dict(fit.priors),
        fit=fit,
    )


def revote_dawid_skene(batch: BatchResult, *, one_coin: bool = False) -> BatchResult:
    """``batch`` with every item's consensus re-decided by :func:`dawid_skene`; the
    consensus's posterior probability is its ``score``. Calls no model."""
    from .voting import agreement_pct

    learned = dawid_skene(batch, one_coin=one_coin)
    revoted: list[EnsembleVerdict] = []
    for result in batch.verdicts:
        label = learned.labels[result.query_id]
        valid = [v for v in result.verdicts if v.error is None]
        revoted.append(
            result.model_copy(
                update={
                    "consensus": label,
                    "score": learned.posteriors[result.query_id][label],
                    "voting": "dawid_skene",
                    "fallback": False,
                    "agreement_pct": agreement_pct(result.verdicts, label),
                    "disagreement": len({v.kind for v in valid}) > 1,
                    "dissenters": [v.critic_id for v in valid if v.kind != label],
                }
            )
        )
    return batch.model_copy(update={"verdicts": revoted, "voting": "dawid_skene"})


# -- confidence --------------------------------------------------------------------------------


def calibrate_confidence(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str],
    *,
    method: Literal["temperature", "isotonic"] = "temperature",
    bins: int = 10,
) -> dict[str, ConfidenceCalibration]:
    """Per critic, a map from its stated confidence to the probability that it is right,
    fit on the labelled items it judged (see
    :func:`cross_judge._confidence_calibration.fit_confidence_calibration`), with its
    expected calibration error before and after. A verdict already calibrated (by a
    ``Critic(calibration=...)`` or :func:`apply_calibration`) is read at its
    ``stated_confidence``, so refitting on such results gives the same fit, not a
    calibration of a calibration. Pass a fit as ``Critic(calibration=fits[name])``.

    Raises:
        ConfigError: as :func:`gold_report` for the gold labels; a critic whose labelled
            verdicts cannot be fit (fewer than 2, or all right or all wrong), named.
    """
    from ._confidence_calibration import fit_confidence_calibration

    batch = as_batch(results)
    aligned = _gold_by_item(batch, gold)
    fits: dict[str, ConfidenceCalibration] = {}
    for name in batch.critics:
        confidences: list[float] = []
        correct: list[bool] = []
        for result, label in zip(batch.verdicts, aligned, strict=True):
            if label is None:
                continue
            for verdict in result.verdicts:
                if verdict.critic_id == name and verdict.error is None:
                    confidences.append(_stated(verdict))
                    correct.append(verdict.kind == label)
        try:
            fits[name] = fit_confidence_calibration(confidences, correct, method=method, bins=bins)
        except ConfigError as exc:
            raise ConfigError(f"critic {name!r}: {exc}") from None
    return fits


def apply_calibration(
    batch: BatchResult, calibrations: Mapping[str, ConfidenceCalibration]
) -> BatchResult:
    """``batch`` with each critic's valid verdicts' confidence mapped by its calibration
    (critics without one are unchanged), and every item's ``avg_confidence`` recomputed.
    The map reads the model's own number (``stated_confidence`` when the verdict was
    calibrated already, so applying twice replaces, never compounds) and keeps it in
    ``stated_confidence``. Calls no model; the labels and the consensus do not change."""
    results: list[EnsembleVerdict] = []
    for result in batch.verdicts:
        verdicts = [
            v.model_copy(
                update={
                    "confidence": calibrations[v.critic_id].apply(_stated(v)),
                    "stated_confidence": _stated(v),
                }
            )
            if v.error is None and v.critic_id in calibrations
            else v
            for v in result.verdicts
        ]
        valid = [v for v in verdicts if v.error is None]
        average = sum(v.confidence for v in valid) / len(valid) if valid else 0.0
        results.append(result.model_copy(update={"verdicts": verdicts, "avg_confidence": average}))
    return batch.model_copy(update={"verdicts": results})


def _stated(verdict: Verdict) -> float:
    """The confidence the model stated: before any calibration."""
    stated = verdict.stated_confidence
    return verdict.confidence if stated is None else stated


# -- panels ------------------------------------------------------------------------------------


def effective_votes(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    gold: Mapping[str, str] | str | os.PathLike[str] | None = None,
) -> EffectiveVotes:
    """How many independent votes the panel is worth, from the correlation of its
    critics' errors (against ``gold`` where labelled, else against the consensus); see
    :func:`cross_judge._gold.effective_votes`."""
    from ._gold import effective_votes as count

    batch = as_batch(results)
    matrix = _items_matrix(batch)
    reference: list[str | None]
    if gold is None:
        reference = [None if r.fallback else r.consensus for r in batch.verdicts]
    else:
        reference = _gold_by_item(batch, gold)
    return count(matrix, reference)


def alpha_interval(
    results: BatchResult | Iterable[EnsembleVerdict] | str | os.PathLike[str],
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval (items resampled) for the batch's nominal
    Krippendorff's alpha; ``None`` when alpha is undefined on the resamples."""
    from ._gold import bootstrap_ci
    from .agreement import reliability_alpha

    batch = as_batch(results)
    matrix = batch.labels_matrix()

    def alpha(items: list[int]) -> float | None:
        return reliability_alpha([[row[i] for i in items] for row in matrix], "nominal")

    return bootstrap_ci(alpha, len(batch.verdicts), ci=ci, n_boot=n_boot, seed=seed)
