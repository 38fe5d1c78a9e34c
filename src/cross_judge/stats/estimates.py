"""Estimates that combine the jury with people's labels and stay unbiased: prediction-powered
inference with power tuning (PPI++, Angelopoulos, Duchi and Zrnic, 2023) over the finite
population of a batch's items, with inverse-probability weights for a label queue that was
not drawn uniformly (:mod:`cross_judge.stats.label_queue`).

:func:`estimate_share` estimates the share of items whose *true* label is a given label;
:func:`estimate_accuracy` a critic's accuracy; :func:`prediction_powered_mean` is the
statistic under both, on plain numbers.

The estimator. Every item ``i`` of the population (``N`` items) has a prediction
``f_i`` in [0, 1] from the jury; the labelled items ``S`` have a label ``Y_i`` in [0, 1]
and ``pi_i``, the probability the item had of being labelled. For a tuning factor
``lam`` in [0, 1]::

    theta = (1/N) sum_all lam f_i + (1/N) sum_{i in S} (Y_i - lam f_i) / pi_i

The second term is a Horvitz-Thompson estimate of the jury's error, so ``theta`` is
unbiased for the population mean of ``Y`` whatever the jury's bias, for any fixed ``lam``
(``lam = 0`` is the labels-only estimate, ``lam = 1`` the classic PPI one). ``lam`` is
chosen to minimise the estimated variance, ``cov(HT(Y), HT(f)) / var(HT(f))`` under the
sampling design, clipped to [0, 1]; estimating it from the same labels leaves a bias of
order ``1 / n`` (as in PPI++).

The variance. The with-replacement (Hansen-Hurwitz) variance at the tuned ``lam`` (the
estimator before issue 41) is nearly unbiased for a fixed ``lam`` under the queues'
designs (on the simulator of ``bench/bench_estimates.py`` its mean was 7% below to 18%
above the Monte Carlo variance), yet its 95% intervals covered the truth in only 70% of
400 draws from a ``"disputed"`` queue at floor 0.1, 92% at 0.3, and 89% from an
``"uncertain"`` queue at 0.1; it did not err wide. Two reasons, measured there:

* ``lam`` is tuned on the labels it is then judged by: the variance at the ``lam`` the
  labels show the least variance for is optimistic, and the noise of tuning adds to the
  true variance (at floor 0.1 of a ``"disputed"`` queue the mean estimate was 0.64 of the
  Monte Carlo variance);
* the items a weighted queue favours least (the jury sure of them) are labelled rarely and
  weigh most, and the jury's rare mistakes on them are often missing from the few labels
  of that kind: their variance is then estimated near 0 exactly when the estimate misses
  them.

So the variance is the larger of two estimates: the delete-one jackknife, ``lam`` tuned
again with each label left out (it counts the tuning; for a fixed ``lam`` it is the
with-replacement variance), and the with-replacement variance within weight classes
(weights ``1 / pi`` within a factor of 2), each class's floored at what its labels would
show with one more disagreement each way (two more draws at the ends of the range of
``Y - lam f``, at the class's mean weight). The floor shrinks as ``1 / m**2`` next to the
variance's ``1 / m`` and binds only in a class of few labels or where the labels hardly
vary; it is also what keeps a handful of labels that all agree with the jury from a
zero-width interval. For a simple random sample (a ``"uniform"`` queue, or labels
without a queue) there is one class and both carry the finite-population correction
``1 - n / N``; items drawn with probability 1 are known exactly and add no variance. The
variance does not use the gain of drawing without replacement or of stratifying: for the
other queues it is the with-replacement one, which is about their variance for these
designs (not reliably wider: the coverage, not the formula, is what the bench checks).
A weighted queue's floor is bounded below (:data:`~cross_judge.stats.label_queue.MIN_FLOOR`):
below it the least favoured items get so few labels that no interval from 100 of them
held its level in the bench.

The interval is ``theta +- t * se``, clipped to [0, 1], with ``t`` Student's quantile for
the labels' count less one (:func:`t_quantile`). The labels-only interval (also the
interval when ``lam == 0``) is Wilson's score interval over the labels' effective sample
size (Korn and Graubard's ``p (1 - p) / var``, the variance by weight classes as above),
which keeps its width at 0 or ``n`` successes. Only a census (every item that could vary
labelled) gets no width. With fewer than :data:`SMALL_SAMPLE` labels a note says the
interval is approximate; it needs at least two labels; with none the estimate is the
jury's alone (``method="jury only"``, no interval: its bias is unknown).
:attr:`Estimate.notes` always states what was assumed: the population, the labels (the
truth, made without seeing the jury), the design and the interval.

Calls no model and reads only stored results and labels. It deliberately does not choose
what to label (:mod:`~cross_judge.stats.label_queue`) nor learn weights from labels
(:mod:`~cross_judge.stats._reliability`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from .._extensions import provide
from ..errors import ConfigError
from ..verdict import EnsembleVerdict
from ._gold import check_gold
from ._gold_file import GoldFile, read_gold, vocabulary_of
from .label_queue import LabelQueue, check_floor

if TYPE_CHECKING:
    from ..results import BatchResult

__all__ = [
    "Estimate",
    "Prediction",
    "estimate_accuracy",
    "estimate_share",
    "prediction_powered_mean",
    "t_quantile",
]

Method = Literal["ppi++", "labels only", "jury only"]
Design = Literal["simple random", "unequal probabilities"]
Prediction = Literal["votes", "consensus"]
"""What the jury predicts for an item (see :func:`estimate_share`)."""

_CERTAIN = 1.0 - 1e-12  # an inclusion probability this close to 1 is a certainty


class Estimate(BaseModel):
    """A share (or an accuracy) estimated from the jury and people's labels.

    Attributes:
        value: the estimate.
        low, high: its interval at level ``ci``, clipped to [0, 1]; ``None`` with fewer
            than two labels.
        method: ``"ppi++"`` (the jury's predictions were used: ``lam > 0``), ``"labels
            only"`` (power tuning gave the predictions no weight: ``lam == 0``, the
            Horvitz-Thompson estimate from the labels alone) or ``"jury only"`` (no label:
            the jury's share, biased by however much the jury errs).
        n_labels: the labels that counted.
        n_items: the population: the items the estimate is about.
        se: the estimated standard error, floored as the interval is (``None`` with fewer
            than two labels).
        ci: the interval's level.
        jury_only: the jury's answer alone: the share of items whose consensus is the
            label (for an accuracy, the share of the critic's votes equal to the
            consensus). Its distance from ``value`` shows the jury's bias.
        labels_only, labels_only_low, labels_only_high: the estimate and interval from the
            labels alone (``lam = 0``), same design and variance estimator; the interval is
            Wilson's over the labels' effective sample size.
        lam: the power-tuning factor in [0, 1] (``None`` without labels).
        design: ``"simple random"`` or ``"unequal probabilities"`` (how the variance was
            estimated; see :mod:`cross_judge.stats.estimates`).
        notes: the assumptions this estimate made and the labels it left out, in words.
    """

    model_config = ConfigDict(frozen=True)

    value: float
    low: float | None
    high: float | None
    method: Method
    n_labels: int
    n_items: int
    se: float | None
    ci: float
    jury_only: float
    labels_only: float | None = None
    labels_only_low: float | None = None
    labels_only_high: float | None = None
    lam: float | None = None
    design: Design = "simple random"
    notes: tuple[str, ...] = ()

    @property
    def width(self) -> float | None:
        """``high - low`` (``None`` without an interval)."""
        if self.low is None or self.high is None:
            return None
        return self.high - self.low

    def __str__(self) -> str:
        """``0.312 [0.270, 0.354] (ppi++, 100 labels, 2000 items; jury only 0.356; labels
        only 0.300 [0.214, 0.386])``."""
        head = f"{self.value:.3f}"
        if self.low is not None and self.high is not None:
            head += f" [{self.low:.3f}, {self.high:.3f}]"
        text = (
            f"{head} ({self.method}, {self.n_labels} labels, {self.n_items} items; "
            f"jury only {self.jury_only:.3f}"
        )
        if self.labels_only is not None and self.method == "ppi++":
            text += f"; labels only {self.labels_only:.3f}"
            if self.labels_only_low is not None and self.labels_only_high is not None:
                text += f" [{self.labels_only_low:.3f}, {self.labels_only_high:.3f}]"
        return text + ")"


# --- the statistic on plain numbers ----------------------------------------------------------


def _design_covariance(
    x: Sequence[float],
    y: Sequence[float],
    probabilities: Sequence[float],
    *,
    simple_random: bool,
    population: int,
) -> float | None:
    """The estimated covariance of the Horvitz-Thompson totals of ``x`` and ``y`` (values
    of the labelled items, drawn with ``probabilities``); ``None`` when it cannot be
    estimated (fewer than two uncertain draws and some left to estimate)."""
    if simple_random:
        n = len(x)
        if n < 2:
            return None
        mx, my = math.fsum(x) / n, math.fsum(y) / n
        s_xy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / (n - 1)
        fpc = max(0.0, 1.0 - n / population)
        return population * population * fpc * s_xy / n
    uncertain = [k for k, p in enumerate(probabilities) if p < _CERTAIN]
    m = len(uncertain)
    if m == 0:
        return 0.0  # every labelled item was certain to be: a census of them
    if m < 2:
        return None
    zx = [m * x[k] / probabilities[k] for k in uncertain]
    zy = [m * y[k] / probabilities[k] for k in uncertain]
    mx, my = math.fsum(zx) / m, math.fsum(zy) / m
    return math.fsum((a - mx) * (b - my) for a, b in zip(zx, zy, strict=True)) / (m * (m - 1))


def _grouped_variance(
    values: Sequence[float],
    probabilities: Sequence[float],
    bounds: tuple[float, float],
    *,
    simple_random: bool,
    population: int,
) -> tuple[float, bool]:
    """The estimated variance of the Horvitz-Thompson total of ``values`` (each within
    ``bounds``), computed within weight classes and floored in each, and whether a floor
    set it.

    The uncertain draws are grouped by weight class (weights ``1 / pi`` within a factor of
    2: ``floor(log2(1 / pi))``; a simple random sample is one class), and each class's
    with-replacement variance is floored at what its draws would show with two more, one
    at each bound, at the class's mean weight: "one more disagreement each way". A class of
    few draws (the items a weighted queue was told to favour least, whose labels weigh
    most) may hold none of the rare disagreements its items have, which gives it no
    variance and the interval no room for them; the floor is what the class's draws
    cannot rule out. It shrinks as ``1 / m_h**2`` next to the variance's ``1 / m_h``, so it
    binds only in small classes or where the labels hardly vary. The simple random sample
    keeps its finite-population correction; a census (every draw certain) has no
    variance."""
    low, high = bounds
    if simple_random:
        n = len(values)
        mean = math.fsum(values) / n
        s2 = math.fsum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
        least = ((low - mean) ** 2 + (high - mean) ** 2) / (n + 1)
        fpc = max(0.0, 1.0 - n / population)
        return population * population * fpc * max(s2, least) / n, least > s2 and fpc > 0
    classes: dict[int, list[int]] = {}
    for k, p in enumerate(probabilities):
        if p < _CERTAIN:
            classes.setdefault(math.floor(math.log2(1.0 / p)), []).append(k)
    total = 0.0
    floored = False
    for members in classes.values():
        m = len(members)
        z = [values[k] / probabilities[k] for k in members]
        mean = math.fsum(z) / m
        weight = math.fsum(1.0 / probabilities[k] for k in members) / m
        spread = math.fsum((v - mean) ** 2 for v in z) * m / (m - 1) if m > 1 else 0.0
        least = m * ((low * weight - mean) ** 2 + (high * weight - mean) ** 2) / (m + 1)
        floored = floored or least > spread
        total += max(spread, least)
    return total, floored


class _Moments:
    """Sums of the labelled draws' pseudo-values (``m x / pi`` of the uncertain draws:
    ``N x`` for a simple random sample) from which the PPI++ total and its tuning factor
    are recomputed with one draw left out, in constant time (the jackknife)."""

    def __init__(
        self, ys: Sequence[float], fs: Sequence[float], ps: Sequence[float], simple: bool
    ) -> None:
        draws = [k for k, p in enumerate(ps) if simple or p < _CERTAIN]
        certain = [k for k, p in enumerate(ps) if not (simple or p < _CERTAIN)]
        self.fixed_y = math.fsum(ys[k] for k in certain)
        self.fixed_f = math.fsum(fs[k] for k in certain)
        m = len(draws)
        self.m = m
        self.a = [m * ys[k] / ps[k] for k in draws]
        self.b = [m * fs[k] / ps[k] for k in draws]
        self.mean_a = math.fsum(self.a) / m if m else 0.0
        self.mean_b = math.fsum(self.b) / m if m else 0.0
        da = [x - self.mean_a for x in self.a]
        db = [x - self.mean_b for x in self.b]
        self.q_ab = math.fsum(x * y for x, y in zip(da, db, strict=True))
        self.q_bb = math.fsum(y * y for y in db)

    def total_without(self, j: int, total_f: float) -> float:
        """The PPI++ estimate of the total with draw ``j`` left out (its tuning factor
        tuned again on the others), the others standing for ``m - 1`` draws."""
        m = self.m
        rest = m - 1
        a, b = self.a[j], self.b[j]
        mean_a = (m * self.mean_a - a) / rest
        mean_b = (m * self.mean_b - b) / rest
        lam = 0.0
        if rest >= 2:
            shrink = m / rest
            q_ab = self.q_ab - shrink * (a - self.mean_a) * (b - self.mean_b)
            q_bb = self.q_bb - shrink * (b - self.mean_b) ** 2
            if q_bb > 1e-12 * max(1.0, self.q_bb):
                lam = min(1.0, max(0.0, q_ab / q_bb))
        ht_y = self.fixed_y + mean_a
        ht_f = self.fixed_f + mean_b
        return lam * total_f + ht_y - lam * ht_f


def _jackknife_variance(
    ys: Sequence[float],
    fs: Sequence[float],
    ps: Sequence[float],
    *,
    simple_random: bool,
    population: int,
    total_f: float,
) -> float:
    """The delete-one jackknife variance of the PPI++ total, ``lam`` tuned again in every
    replicate: unlike the variance at the tuned ``lam``, it counts the noise of tuning
    ``lam`` on the same labels and not the optimism of choosing the ``lam`` the labels
    show the least variance for (see the module docstring). For a fixed ``lam`` it is the
    with-replacement variance exactly. Items certain to be drawn are kept in every
    replicate; a simple random sample's gets the finite-population correction."""
    moments = _Moments(ys, fs, ps, simple_random)
    m = moments.m
    if m < 2:
        return 0.0
    replicates = [moments.total_without(j, total_f) for j in range(m)]
    mean = math.fsum(replicates) / m
    variance = (m - 1) / m * math.fsum((t - mean) ** 2 for t in replicates)
    if simple_random:
        variance *= max(0.0, 1.0 - len(ys) / population)
    return variance


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _interval(value: float, se: float | None, z: float) -> tuple[float | None, float | None]:
    """``value +- z se``, each end clipped to [0, 1] (so ``low <= high`` even when an
    unclipped ``value`` lies outside)."""
    if se is None:
        return None, None
    return _clip(value - z * se), _clip(value + z * se)


def _wilson(share: float, n_eff: float, z: float) -> tuple[float, float]:
    """Wilson's score interval for a share ``share`` of ``n_eff`` (effective) draws: never
    of zero width at 0 or ``n`` successes, unlike ``share +- z se``."""
    if math.isinf(n_eff):
        return share, share
    scale = z * z / n_eff
    centre = (share + scale / 2.0) / (1.0 + scale)
    half = z * math.sqrt(share * (1.0 - share) / n_eff + scale / (4.0 * n_eff)) / (1.0 + scale)
    return _clip(centre - half), _clip(centre + half)


def _effective_draws(
    share: float,
    variance: float,
    probabilities: Sequence[float],
    *,
    simple_random: bool,
    population: int,
) -> float:
    """The sample size a simple random sample with replacement would need for ``share``
    to have ``variance``: ``share (1 - share) / variance`` (Korn and Graubard's effective
    size), or at a share of 0 or 1, where that says nothing, ``n / (1 - n / N)`` for a
    simple random sample and Kish's ``(sum w)^2 / sum w^2`` of the uncertain draws'
    weights for unequal probabilities. Infinite when ``variance`` is 0 (a census)."""
    if variance <= 0.0:
        return math.inf
    if 0.0 < share < 1.0:
        return share * (1.0 - share) / variance
    if simple_random:
        n = len(probabilities)
        fpc = 1.0 - n / population
        return n / fpc if fpc > 0 else math.inf
    weights = [1.0 / p for p in probabilities if p < _CERTAIN]
    return math.fsum(weights) ** 2 / math.fsum(w * w for w in weights) if weights else math.inf


def prediction_powered_mean(
    predictions: Sequence[float | None],
    labels: Mapping[int, float],
    probabilities: Mapping[int, float],
    *,
    simple_random: bool,
    ci: float = 0.95,
    jury_only: float | None = None,
    notes: Iterable[str] = (),
) -> Estimate:
    """The PPI++ estimate of the mean of ``Y`` over a finite population (see the module
    docstring).

    Args:
        predictions: ``f_i`` in [0, 1] for every item of the sampling frame; ``None``
            puts the item outside the population (a domain: the estimate is the mean over
            the other items, and a label of such an item counts as a draw with value 0).
        labels: ``{frame index: Y_i}`` for the labelled items, ``Y_i`` in [0, 1].
        probabilities: ``{frame index: pi_i}`` for each labelled item, in (0, 1].
        simple_random: the labels are a simple random sample of the frame (exact variance
            with the finite-population correction); otherwise unequal probabilities
            (the jackknife and weight-class variances of the module docstring).
        ci: the interval's level, in (0, 1).
        jury_only: the jury's own estimate to report (default: the mean prediction).
        notes: assumptions to record on the result.

    Raises:
        ConfigError: ``ci`` outside (0, 1), an empty population, a label without a
            probability, a probability outside (0, 1], an index outside the frame, a value
            outside [0, 1].
    """
    if not 0.0 < ci < 1.0:
        raise ConfigError(f"ci must be in (0, 1), got {ci!r}")
    frame = len(predictions)
    domain = [f for f in predictions if f is not None]
    if not domain:
        raise ConfigError("the estimate needs at least one item in its population")
    if any(not 0.0 <= f <= 1.0 for f in domain):
        raise ConfigError("every prediction must be in [0, 1]")
    for index, y in labels.items():
        if not 0 <= index < frame:
            raise ConfigError(f"labelled item {index} is outside the {frame} items")
        if not 0.0 <= y <= 1.0:
            raise ConfigError(f"every label value must be in [0, 1], got {y!r}")
        p = probabilities.get(index)
        if p is None or not 0.0 < p <= 1.0:
            raise ConfigError(f"labelled item {index} needs a probability in (0, 1], got {p!r}")
    size = len(domain)
    total_f = math.fsum(domain)
    shown = total_f / size if jury_only is None else jury_only
    ordered = sorted(labels)
    inside = [k for k in ordered if predictions[k] is not None]
    if not inside:
        return Estimate(
            value=shown,
            low=None,
            high=None,
            method="jury only",
            n_labels=0,
            n_items=size,
            se=None,
            ci=ci,
            jury_only=shown,
            design="simple random" if simple_random else "unequal probabilities",
            notes=(*notes, "no label: the jury's share alone, biased by its errors"),
        )
    # A labelled item outside the domain is a draw whose value is 0 (domain estimation).
    ys = [labels[k] if predictions[k] is not None else 0.0 for k in ordered]
    fs = [predictions[k] or 0.0 for k in ordered]
    ps = [probabilities[k] for k in ordered]

    def covariance(a: Sequence[float], b: Sequence[float]) -> float | None:
        return _design_covariance(a, b, ps, simple_random=simple_random, population=frame)

    v_yy, v_yf, v_ff = covariance(ys, ys), covariance(ys, fs), covariance(fs, fs)
    lam = 0.0
    if v_yf is not None and v_ff is not None and v_ff > 0.0:
        lam = min(1.0, max(0.0, v_yf / v_ff))
    ht_y = math.fsum(y / p for y, p in zip(ys, ps, strict=True))
    ht_f = math.fsum(f / p for f, p in zip(fs, ps, strict=True))
    value = (lam * total_f + ht_y - lam * ht_f) / size
    labels_only = ht_y / size
    z = t_quantile(0.5 + ci / 2.0, len(ordered) - 1)

    def grouped(values: Sequence[float], bounds: tuple[float, float]) -> tuple[float, bool]:
        return _grouped_variance(values, ps, bounds, simple_random=simple_random, population=frame)

    se: float | None = None
    se_labels: float | None = None
    low = high = labels_low = labels_high = None
    floored = False
    if v_yy is not None and v_yf is not None and v_ff is not None:
        residuals = [y - lam * f for y, f in zip(ys, fs, strict=True)]
        by_class, floored = grouped(residuals, (-lam, 1.0))
        jackknife = _jackknife_variance(
            ys, fs, ps, simple_random=simple_random, population=frame, total_f=total_f
        )
        se = math.sqrt(max(jackknife, by_class)) / size
        labels_variance = max(v_yy, grouped(ys, (0.0, 1.0))[0]) / size / size
        se_labels = math.sqrt(labels_variance)
        n_eff = _effective_draws(
            _clip(labels_only),
            labels_variance,
            ps,
            simple_random=simple_random,
            population=frame,
        )
        labels_low, labels_high = _wilson(_clip(labels_only), n_eff, z)
        if lam > 0.0:
            low, high = _interval(value, se, z)
        else:
            low, high, se = labels_low, labels_high, se_labels
    return Estimate(
        value=_clip(value),
        low=low,
        high=high,
        method="ppi++" if lam > 0.0 else "labels only",
        n_labels=len(inside),
        n_items=size,
        se=se,
        ci=ci,
        jury_only=shown,
        labels_only=_clip(labels_only),
        labels_only_low=labels_low,
        labels_only_high=labels_high,
        lam=lam,
        design="simple random" if simple_random else "unequal probabilities",
        notes=(*notes, *_interval_notes(len(inside), lam, se, floored=floored)),
    )


SMALL_SAMPLE = 30
"""Below this many labels :class:`Estimate` notes that its interval is approximate."""


def _interval_notes(n: int, lam: float, se: float | None, *, floored: bool) -> list[str]:
    """What the interval is and how far to trust it, in words."""
    if se is None:
        return [
            "too few labels for a variance: no interval (it needs two or more labels, "
            "not counting items certain to be queued)"
        ]
    if se == 0.0:
        return [
            "every item that could vary is labelled (a census): the value is exact, as far "
            "as the labels are right"
        ]
    if lam > 0.0:
        notes = [
            "interval: the PPI++ estimate +- Student's t times its standard error, the "
            "variance the larger of a jackknife (lam tuned again with each label left out) "
            "and the variance within weight classes, each floored at what one more "
            "disagreement each way would give"
            + (" (the floor set the width here: the labels hardly disagreed)" if floored else "")
        ]
    else:
        notes = ["interval: Wilson's score interval over the labels' effective sample size"]
    if n < SMALL_SAMPLE:
        notes.append(
            f"only {n} labels: the interval is approximate (on the simulated "
            "jury of bench/bench_estimates.py --small, 95% intervals from 5, 10 and 20 labels "
            "covered the truth in 97% to 100% of 200 draws each)"
        )
    return notes


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile at ``p`` with ``df`` degrees of freedom, by the Cornish-Fisher
    expansion around the normal one (within 0.002 of the exact value for ``df`` >= 10 at the
    usual levels); the normal quantile for ``df`` < 1. Used for every interval here: with a
    hundred labels it is about 1% wider than the normal one, which the normal interval's
    slight under-coverage on binary labels needs."""
    z = NormalDist().inv_cdf(p)
    if df < 1:
        return z
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


# --- on a batch's results --------------------------------------------------------------------


def _population(stored: Sequence[EnsembleVerdict], exclude: Iterable[str]) -> list[EnsembleVerdict]:
    skip = set(exclude)
    pool = [r for r in stored if r.query_id not in skip]
    ids = [r.query_id for r in pool]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ConfigError(f"item ids must be unique to estimate over them; repeated: {repeated}")
    return pool


def _stored(results: BatchResult | Iterable[EnsembleVerdict]) -> list[EnsembleVerdict]:
    return list(getattr(results, "verdicts", results))


def _check_labels(stored: Sequence[EnsembleVerdict], labels: Iterable[str]) -> None:
    """Refuse a label that is none of the batch's labels (:func:`vocabulary_of`, what
    ``stats --gold`` accepts); the consensus labels are looked at first, since every
    verdict is looked at only when a label is not among them."""
    given = list(labels)
    if set(given) <= {r.consensus for r in stored}:
        return
    check_gold(given, vocabulary_of(stored))


def _labelled(
    stored: Sequence[EnsembleVerdict],
    pool: Sequence[EnsembleVerdict],
    gold: Mapping[str, str] | str | os.PathLike[str],
    queue: LabelQueue | None,
    *,
    allow_jury_shown: bool,
) -> tuple[dict[int, str], dict[int, float], bool, list[str]]:
    """The labelled frame indices and their labels, their inclusion probabilities, whether
    the design is a simple random sample, and the notes on what was assumed.

    Every gold label must be one of the batch's labels (``stats --gold``'s check); labels
    made with the jury shown are refused unless ``allow_jury_shown``."""
    read = read_gold(gold, require_label=True)
    labels = read.items
    _check_labels(stored, labels.values())
    index = {r.query_id: i for i, r in enumerate(pool)}
    notes: list[str] = []
    if queue is None:
        unknown = [item for item in labels if item not in index]
        if unknown:
            raise ConfigError(
                f"{len(unknown)} gold id(s) are not among the {len(pool)} items "
                f"(e.g. {unknown[:5]}); without a queue every gold label must belong to an "
                "item of these results (pass exclude= for items to leave out)"
            )
        answered = list(labels)
        chosen = {index[item]: label for item, label in labels.items()}
        share = len(chosen) / len(pool)
        notes.append(
            "no queue: the labelled items are assumed to be a simple random sample of the "
            "items (if they were chosen otherwise, pass the LabelQueue they came from)"
        )
        notes.extend(_jury_notes(read, answered, allow_jury_shown))
        return chosen, dict.fromkeys(chosen, share), True, notes
    if queue.population != len(pool):
        raise ConfigError(
            f"the queue was drawn from {queue.population} items, these results hold "
            f"{len(pool)} (after exclude=): estimate over the results the queue was drawn "
            "from, with the same exclude= as label_queue"
        )
    try:
        check_floor(queue.strategy, queue.floor)
    except ConfigError as exc:
        raise ConfigError(
            f"this {queue.strategy!r} queue was drawn with a floor its labels cannot give a "
            f"trustworthy interval for ({exc}); draw a new queue with a floor within the "
            "bounds and label that"
        ) from None
    missing = [item for item in queue.items if item not in index]
    if missing:
        raise ConfigError(
            f"{len(missing)} queued id(s) are not among these results (e.g. {missing[:5]}): "
            "estimate over the results the queue was drawn from"
        )
    notes.append(
        f"design: a {queue.strategy!r} label queue of {len(queue.items)} of the "
        f"{queue.population} items; each label is weighted by the inverse of its item's "
        "inclusion probability"
    )
    outside = [item for item in labels if item not in queue.probabilities]
    if outside:
        notes.append(
            f"{len(outside)} gold label(s) of items outside the queue were left out: only "
            "the queued items' labels count, since only their probabilities are known"
        )
    answered = [item for item in queue.items if item in labels]
    chosen = {index[item]: labels[item] for item in answered}
    scale = len(answered) / len(queue.items) if queue.items else 0.0
    if answered and len(answered) < len(queue.items):
        notes.append(
            f"{len(answered)} of the {len(queue.items)} queued items are labelled: they are "
            "assumed to be a random subset of the queue (true when labelled in the queue's "
            "order, which is random), so each probability is scaled by "
            f"{len(answered)}/{len(queue.items)}"
        )
    notes.extend(_jury_notes(read, answered, allow_jury_shown))
    probabilities = {index[item]: queue.probabilities[item] * scale for item in answered}
    return chosen, probabilities, queue.strategy == "uniform", notes


def _population_note(pool: int, stored: int) -> str:
    left = stored - pool
    out = f" ({left} left out by exclude=)" if left else ""
    return (
        f"population: the {pool} items of these results{out}; the estimate is about them, "
        "not about items the batch does not hold"
    )


def _jury_notes(read: GoldFile, counted: Sequence[str], allow: bool) -> list[str]:
    """The notes on whether the counted labels were made with the jury's answers shown;
    refuses labels made with them shown unless ``allow``.

    Raises:
        ConfigError: a counted label made with the jury shown, without ``allow``.
    """
    if not counted:
        return []
    shown = [item for item in counted if item in read.jury_shown]
    unrecorded = read.jury_unrecorded(counted)
    where = "the labels" if read.source is None else read.source
    if shown and not allow:
        raise ConfigError(
            f"{len(shown)} of the {len(counted)} labels in {where} were made with the jury's "
            f'answers shown ("jury_shown": true, e.g. {shown[:3]}): people who see the jury '
            "lean towards it, and the estimate assumes their labels are independent of it. "
            "Label those items again with the jury hidden (the labelling page's default), "
            "leave them out, or pass allow_jury_shown=True to count them anyway"
        )
    notes = [
        "people's labels are taken as the truth (their mistakes are not modelled) and as "
        "made without seeing the jury's answers"
    ]
    if shown:
        notes.append(
            f"{len(shown)} of the {len(counted)} labels were made with the jury's answers "
            "shown (allow_jury_shown=True): if they lean towards the jury, the estimate "
            "leans towards the jury's answer and its interval is too narrow"
        )
    if unrecorded:
        notes.append(
            f"{len(unrecorded)} of the {len(counted)} labels do not record whether the jury "
            'was shown (no "jury_shown" in the labelling page\'s export, a mapping, or a '
            "hand-written file): they are assumed to have been made with it hidden"
        )
    return notes


def _vote_share(result: EnsembleVerdict, label: str) -> float:
    votes = [v.kind for v in result.verdicts if v.error is None]
    return sum(kind == label for kind in votes) / len(votes) if votes else 0.0


def _decided(result: EnsembleVerdict, label: str) -> bool:
    return not result.fallback and result.consensus == label


def _check_prediction(prediction: str) -> None:
    if prediction not in ("votes", "consensus"):
        raise ConfigError(f"prediction must be 'votes' or 'consensus', got {prediction!r}")


def estimate_share(
    results: BatchResult | Iterable[EnsembleVerdict],
    label: str,
    *,
    gold: Mapping[str, str] | str | os.PathLike[str],
    queue: LabelQueue | None = None,
    ci: float = 0.95,
    exclude: Iterable[str] = (),
    prediction: Prediction = "votes",
    allow_jury_shown: bool = False,
) -> Estimate:
    """The share of the batch's items whose true label is ``label``, from the jury's
    predictions and people's labels (PPI++; see the module docstring).

    Assumptions (each recorded in :attr:`Estimate.notes`, always):

    * The population is the items of ``results`` minus ``exclude`` (pass the same
      ``exclude=`` as to :func:`~cross_judge.stats.label_queue.label_queue`); the estimate
      is about those items, not about items the batch never held.
    * Gold labels are the truth (people's mistakes are not modelled), made without seeing
      the jury's answers. A labels file from the labelling page records, per label,
      whether the jury was shown (``"jury_shown"``); labels made with it shown are refused
      unless ``allow_jury_shown=True`` (then a note says how many), since a person who
      sees the jury leans towards it and the estimate would lean with them. Labels that
      do not record it (a mapping, a hand-written file) are assumed made with it hidden,
      and a note says so.
    * Every gold label is one of the batch's labels (its critics' answers and consensus
      labels, compared as written), as ``stats --gold`` requires; so is ``label``.
    * With ``queue``, only the queued items' labels count (the others' probability of being
      labelled is unknown, so they are left out); when only some queued items are labelled,
      they are taken as a random subset of the queue. Without ``queue``, the labelled
      items are taken as a simple random sample of the population: labels chosen by
      looking at the jury's answers bias it.
    * The prediction of an item is, with ``prediction="votes"`` (the default, which gave
      the narrower intervals in ``bench/bench_estimates.py``), the share of its valid votes
      that are ``label`` (0 with no valid vote); with ``"consensus"``, 1 when the panel
      decided ``label``, else 0 (a fallback decides nothing). Either is unbiased; they
      differ in width only.

    Args:
        results: a batch's results (or their :class:`EnsembleVerdict` list).
        label: the label whose share to estimate.
        gold: ``{id: label}`` or a JSONL file of ``{"id", "label"}`` lines (what the
            labelling page exports).
        queue: the :class:`~cross_judge.stats.label_queue.LabelQueue` the labels came from.
        ci: the interval's level.
        exclude: ids outside the population.
        prediction: ``"votes"`` or ``"consensus"`` (above).
        allow_jury_shown: count labels made with the jury's answers shown (above).

    Returns:
        An :class:`Estimate`; ``jury_only`` is the share of items whose consensus is
        ``label``; ``method="jury only"`` with no usable label.

    Raises:
        ConfigError: no item, repeated ids, a bad gold file, a gold label (or ``label``)
            that is none of the batch's labels, gold ids outside the results without a
            queue, a queue drawn from other results, labels made with the jury shown
            without ``allow_jury_shown``, an unknown ``prediction``, ``ci`` outside (0, 1).
    """
    _check_prediction(prediction)
    stored = _stored(results)
    pool = _population(stored, exclude)
    if not pool:
        raise ConfigError("there is no item to estimate over")
    _check_labels(stored, [label])
    chosen, probabilities, simple, notes = _labelled(
        stored, pool, gold, queue, allow_jury_shown=allow_jury_shown
    )
    notes.insert(0, _population_note(len(pool), len(stored)))
    if prediction == "votes":
        predictions: list[float | None] = [_vote_share(r, label) for r in pool]
    else:
        predictions = [float(_decided(r, label)) for r in pool]
    jury = sum(_decided(r, label) for r in pool) / len(pool)
    return prediction_powered_mean(
        predictions,
        {k: float(y == label) for k, y in chosen.items()},
        probabilities,
        simple_random=simple,
        ci=ci,
        jury_only=jury,
        notes=notes,
    )


def _critic_vote(result: EnsembleVerdict, critic: str) -> str | None:
    for verdict in result.verdicts:
        if verdict.critic_id == critic and verdict.error is None:
            return verdict.kind
    return None


def estimate_accuracy(
    results: BatchResult | Iterable[EnsembleVerdict],
    critic: str,
    *,
    gold: Mapping[str, str] | str | os.PathLike[str],
    queue: LabelQueue | None = None,
    ci: float = 0.95,
    exclude: Iterable[str] = (),
    prediction: Prediction = "consensus",
    allow_jury_shown: bool = False,
) -> Estimate:
    """``critic``'s accuracy over the batch: the share of its valid votes that equal the
    true label, from its agreement with the jury and people's labels (PPI++, as
    :func:`estimate_share`, whose assumptions hold here too).

    The population is the items (not excluded) where ``critic`` gave a valid vote: a
    failed or skipped call is neither right nor wrong, as in
    :func:`~cross_judge.stats._gold.gold_metrics`. A labelled item outside it counts as a
    draw of that population's complement (domain estimation), so the queue's
    probabilities still apply. ``Y`` is 1 when the critic's vote equals the gold label;
    the prediction is, with ``prediction="consensus"`` (default), 1 when its vote equals
    the panel's decided consensus, with ``"votes"`` the share of the item's valid votes
    equal to its vote. ``jury_only`` is its agreement with the consensus.

    Raises:
        ConfigError: ``critic`` gave no valid vote, and as :func:`estimate_share`.
    """
    _check_prediction(prediction)
    stored = _stored(results)
    pool = _population(stored, exclude)
    votes = [_critic_vote(r, critic) for r in pool]
    if all(vote is None for vote in votes):
        critics = sorted({v.critic_id for r in pool for v in r.verdicts})
        raise ConfigError(f"critic {critic!r} gave no valid vote here; critics: {critics}")
    chosen, probabilities, simple, notes = _labelled(
        stored, pool, gold, queue, allow_jury_shown=allow_jury_shown
    )
    voted = sum(vote is not None for vote in votes)
    notes.insert(
        0,
        _population_note(len(pool), len(stored))
        + f"; of them, the {voted} {critic!r} gave a valid vote on (a failed or skipped call "
        "is neither right nor wrong)",
    )
    predictions: list[float | None] = []
    agreeing: list[float] = []
    for result, vote in zip(pool, votes, strict=True):
        if vote is None:
            predictions.append(None)
            continue
        agrees = float(not result.fallback and result.consensus == vote)
        agreeing.append(agrees)
        predictions.append(_vote_share(result, vote) if prediction == "votes" else agrees)
    return prediction_powered_mean(
        predictions,
        {k: float(votes[k] == y) for k, y in chosen.items()},
        probabilities,
        simple_random=simple,
        ci=ci,
        jury_only=sum(agreeing) / len(agreeing),
        notes=notes,
    )


@provide("estimate")
def _batch_estimate(batch: BatchResult, label: str, **options: Any) -> Estimate:
    """``BatchResult.estimate``."""
    return estimate_share(batch, label, **options)


@provide("estimate_accuracy")
def _batch_estimate_accuracy(batch: BatchResult, critic: str, **options: Any) -> Estimate:
    """``BatchResult.estimate_accuracy``."""
    return estimate_accuracy(batch, critic, **options)
