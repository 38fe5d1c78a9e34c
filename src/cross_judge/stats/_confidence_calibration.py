"""Calibrating one critic's stated confidence against gold labels.

A critic says ``confidence=0.95`` and is right 70% of the time. Given its verdicts on
labelled items (its stated confidence in the label it chose, and whether that label was
right), :func:`fit_confidence_calibration` learns a monotone map from stated confidence to
the probability of being right, and reports the expected calibration error (ECE) before
and after on the same items. Two maps:

* ``"temperature"``: ``sigmoid(logit(c) / T)``, one parameter ``T > 0`` fitted by maximum
  likelihood. ``T > 1`` tempers an over-confident critic, ``T < 1`` sharpens an
  under-confident one. Smooth, and hard to overfit, but it keeps 0.5 at 0.5: it cannot
  fix a critic whose accuracy is off at every confidence by the same amount.
* ``"isotonic"``: the best non-decreasing step function (pool-adjacent-violators). Fits any
  monotone miscalibration, but needs more items, and its steps are the accuracy of the
  items in each block, so a block of only right answers maps to exactly 1.0.

What it deliberately does not do: it works on plain numbers for ONE critic (the caller
picks the critic's valid verdicts on gold items and drops the rest), it calibrates the
binary event "the chosen label is right", not a distribution over labels, and it does not
decide whether a calibrated confidence should be used for voting. It needs no numpy: the
temperature fit runs over distinct confidence values, which LLM critics repeat a lot.
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from ..errors import ConfigError

__all__ = [
    "CONFIDENCE_CLAMP",
    "TEMPERATURE_BOUNDS",
    "ConfidenceCalibration",
    "calibration_bin",
    "expected_calibration_error",
    "fit_confidence_calibration",
]

CalibrationMethod = Literal["temperature", "isotonic"]

CONFIDENCE_CLAMP = 1e-6
"""Temperature scaling reads a confidence ``c`` as ``min(max(c, 1e-6), 1 - 1e-6)``, so 0
and 1 have finite logits (about -13.8 and 13.8)."""

TEMPERATURE_BOUNDS = (0.05, 20.0)
"""The bracket the temperature is searched in; a fit that wants more lands on a bound."""

_METHODS = ("temperature", "isotonic")
_DICT_KEYS = frozenset(
    {"method", "temperature", "breakpoints", "values", "n", "bins", "ece_before", "ece_after"}
)
# Golden-section search on log T: each step keeps 0.618 of the bracket; 1e-10 of log T is
# far below anything the data can resolve.
_INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0
_LOG_T_TOLERANCE = 1e-10
_MAX_SEARCH_STEPS = 200


@dataclass(frozen=True, kw_only=True)
class ConfidenceCalibration:
    """A fitted map from one critic's stated confidence to its probability of being right.

    ``method="temperature"`` uses ``temperature`` (``breakpoints`` and ``values`` are
    empty); ``method="isotonic"`` uses the step function ``breakpoints``/``values``
    (``temperature`` is ``None``): ``breakpoints[k]`` is the lowest stated confidence of
    pooled block ``k`` (strictly increasing) and ``values[k]`` the share of right answers
    in it (strictly increasing). ``n`` is the number of items fitted on; ``ece_before`` and
    ``ece_after`` are the ECE of the stated and of the calibrated confidences on those
    items, with ``bins`` equal-width bins (in-sample: expect a little worse on new items).

    Constructing one checks these invariants and raises :class:`ConfigError` when they do
    not hold; :meth:`to_dict` / :meth:`from_dict` round-trip it through JSON exactly.
    """

    method: CalibrationMethod
    n: int
    ece_before: float
    ece_after: float
    bins: int = 10
    temperature: float | None = None
    breakpoints: tuple[float, ...] = ()
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "breakpoints", tuple(self.breakpoints))
        object.__setattr__(self, "values", tuple(self.values))
        if self.method not in _METHODS:
            raise ConfigError(f"method must be 'temperature' or 'isotonic', got {self.method!r}")
        if not _is_int(self.n) or self.n < 2:
            raise ConfigError(f"n must be an integer >= 2 (items fitted on), got {self.n!r}")
        _check_bins(self.bins)
        for name in ("ece_before", "ece_after"):
            if not _is_unit(getattr(self, name)):
                raise ConfigError(f"{name} must be a number in [0, 1], got {getattr(self, name)!r}")
        if self.method == "temperature":
            t = self.temperature
            if not _is_real(t) or not 0.0 < t < math.inf:
                raise ConfigError(f"temperature must be a finite number > 0, got {t!r}")
            if self.breakpoints or self.values:
                raise ConfigError("a temperature calibration has no breakpoints or values")
            return
        if self.temperature is not None:
            raise ConfigError("an isotonic calibration has no temperature (use None)")
        points, values = self.breakpoints, self.values
        if not points or len(points) != len(values):
            raise ConfigError(
                "an isotonic calibration needs as many values as breakpoints, at least one; "
                f"got {len(points)} breakpoints and {len(values)} values"
            )
        if not all(_is_unit(x) for x in (*points, *values)):
            raise ConfigError("isotonic breakpoints and values must be numbers in [0, 1]")
        if any(a >= b for a, b in itertools.pairwise(points)) or any(
            a >= b for a, b in itertools.pairwise(values)
        ):
            raise ConfigError("isotonic breakpoints and values must be strictly increasing")

    def apply(self, confidence: float) -> float:
        """The calibrated probability that a verdict stated with ``confidence`` is right.

        Non-decreasing in ``confidence``, always in [0, 1]. Temperature: 0 and 1 are read
        as ``1e-6`` and ``1 - 1e-6`` (no infinities); the result is strictly inside (0, 1)
        except that it rounds to exactly 1.0 near ``confidence=1`` when ``T`` < 0.4.
        Isotonic: a step function, not interpolated: the value of the last block whose
        lowest confidence is at most ``confidence``, and the first block's value below the
        first breakpoint; exactly 0.0 or 1.0 where a block was all wrong or all right.

        Raises:
            ConfigError: ``confidence`` is not a number in [0, 1].
        """
        if not _is_unit(confidence):
            raise ConfigError(f"confidence must be a number in [0, 1], got {confidence!r}")
        if self.temperature is not None:
            return _sigmoid(_logit(confidence) / self.temperature)
        return _step(self.breakpoints, self.values, confidence)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (lists for the step function); every key always present."""
        return {
            "method": self.method,
            "temperature": self.temperature,
            "breakpoints": list(self.breakpoints),
            "values": list(self.values),
            "n": self.n,
            "bins": self.bins,
            "ece_before": self.ece_before,
            "ece_after": self.ece_after,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfidenceCalibration:
        """The inverse of :meth:`to_dict`. Keys a method does not use may be left out.

        Raises:
            ConfigError: not a mapping, unknown or missing keys, or values that break the
                invariants (for example breakpoints out of order).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"a confidence calibration is a JSON object, got {data!r}")
        unknown = sorted(set(data) - _DICT_KEYS)
        if unknown:
            raise ConfigError(
                f"unknown keys in confidence calibration: {unknown}; "
                f"expected some of {sorted(_DICT_KEYS)}"
            )
        missing = [k for k in ("method", "n", "ece_before", "ece_after") if k not in data]
        if missing:
            raise ConfigError(f"confidence calibration is missing keys: {missing}")
        sequences = {}
        for key in ("breakpoints", "values"):
            value = data.get(key, ())
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise ConfigError(f"{key} must be a list of numbers, got {value!r}")
            sequences[key] = tuple(value)
        return cls(
            method=data["method"],
            temperature=data.get("temperature"),
            breakpoints=sequences["breakpoints"],
            values=sequences["values"],
            n=data["n"],
            bins=data.get("bins", 10),
            ece_before=data["ece_before"],
            ece_after=data["ece_after"],
        )


def calibration_bin(confidence: float, bins: int) -> int:
    """The equal-width bin of ``confidence`` among ``bins`` over [0, 1], as the expected
    calibration error and the reliability table bin it.

    Bin ``b`` holds ``b/B <= c < (b+1)/B`` and the last bin also holds 1.0, where each
    edge ``b/B`` is the float nearest that fraction (Python's ``b / bins``): a confidence
    written as 0.29 *is* the edge 29/100 and falls in bin 29, not one bin low as
    ``floor(c * B)`` puts it (``0.29 * 100 == 28.999999999999996`` in floats). The same
    bins as ``np.digitize(c, np.arange(1, B) / B)``; ``np.linspace(0, 1, B + 1)`` edges
    (sklearn's ``calibration_curve``) sit one ulp off at a few edges (0.35 and 0.57 for
    ``B = 100``), so a confidence exactly there falls one bin lower with those.

    Raises:
        ConfigError: ``bins`` not an integer >= 1, or ``confidence`` not a number in [0, 1].
    """
    _check_bins(bins)
    if not _is_unit(confidence):
        raise ConfigError(f"confidence {confidence!r} is not a number in [0, 1]")
    return _bin_of(float(confidence), bins)


def _bin_of(c: float, bins: int) -> int:
    """:func:`calibration_bin` for a float ``c`` in [0, 1] and ``bins >= 1``, both already
    checked (the loop over many confidences skips the checks)."""
    # floor(c * B) is the bin up to one rounding of the product: correct it against the
    # edges themselves, each computed as one correctly rounded division.
    b = min(int(c * bins), bins - 1)
    if b + 1 < bins and c >= (b + 1) / bins:
        b += 1
    elif b > 0 and c < b / bins:
        b -= 1
    return b


def expected_calibration_error(
    confidences: Sequence[float], correct: Sequence[bool], bins: int = 10
) -> float:
    """Expected calibration error: ``sum_b (n_b / N) * |accuracy_b - mean confidence_b|``.

    Bins are equal-width over [0, 1], left-closed (``[k/B, (k+1)/B)``, the last one also
    holding 1.0), so 0.5 with ``bins=2`` falls in the upper bin; each edge is the float
    nearest ``k/B`` (see :func:`calibration_bin`: 0.29 is in bin 29 of 100). Empty bins
    contribute nothing. ``correct`` says whether each verdict was right (bools, or 0/1).

    Raises:
        ConfigError: no items, sequences of different lengths, a confidence outside
            [0, 1] (or not a number), a ``correct`` value that is not a bool, or ``bins`` < 1.
    """
    _check_bins(bins)
    cs, ys = _checked_pairs(confidences, correct)
    if not cs:
        raise ConfigError("no confidences: the calibration error needs at least one verdict")
    binned: list[list[float]] = [[] for _ in range(bins)]
    right = [0] * bins
    for c, y in zip(cs, ys, strict=True):
        b = _bin_of(c, bins)
        binned[b].append(c)
        right[b] += y
    # fsum is exact before its one rounding, so the result does not depend on item order.
    gaps = (abs(math.fsum([float(r), -math.fsum(s)])) for r, s in zip(right, binned, strict=True))
    return math.fsum(gaps) / len(cs)


def fit_confidence_calibration(
    confidences: Sequence[float],
    correct: Sequence[bool],
    *,
    method: CalibrationMethod = "temperature",
    bins: int = 10,
) -> ConfidenceCalibration:
    """Fit a monotone map from one critic's stated confidence to its chance of being right.

    ``confidences[i]`` is the critic's stated confidence in the label it chose on gold item
    ``i`` and ``correct[i]`` whether that label matched the gold one; leave out its
    verdicts with no valid label (errors, parse failures). ``bins`` only sets how
    ``ece_before``/``ece_after`` are measured; both are on the fitting items, where the
    isotonic map's ECE is 0 by construction (each step is its items' accuracy), so judge
    an isotonic fit on held-out items.

    * ``"temperature"``: ``T`` minimises the negative log-likelihood of ``correct`` under
      ``sigmoid(logit(c) / T)`` (``c`` clamped to ``[1e-6, 1 - 1e-6]``), by golden-section
      search on ``log T`` over :data:`TEMPERATURE_BOUNDS`. The likelihood is concave in
      ``1 / T``, so the search finds the best ``T`` in the bracket; confidences that
      separate right from wrong perfectly drive it to the lower bound.
    * ``"isotonic"``: pool-adjacent-violators on the pairs sorted by confidence, items with
      equal confidence pooled first; adjacent blocks whose accuracies are not strictly
      increasing are merged, so the steps rise strictly. Deterministic and independent of
      the input order.

    Raises:
        ConfigError: fewer than 2 items; the critic was right on every item or wrong on
            every item (nothing to learn the map from: add gold items of the other kind);
            a confidence outside [0, 1]; sequences of different lengths; an unknown
            ``method``; for temperature, every confidence exactly 0.5 (no logit to scale:
            use ``method="isotonic"``).
    """
    if method not in _METHODS:
        raise ConfigError(f"method must be 'temperature' or 'isotonic', got {method!r}")
    _check_bins(bins)
    cs, ys = _checked_pairs(confidences, correct)
    n = len(cs)
    if n < 2:
        raise ConfigError(
            f"calibration needs at least 2 gold items with a valid verdict, got {n}; "
            "label more items for this critic"
        )
    n_right = sum(ys)
    if n_right in (0, n):
        outcome, other = ("right", "wrong") if n_right else ("wrong", "right")
        raise ConfigError(
            f"the critic was {outcome} on all {n} gold items, so its confidence cannot be "
            f"calibrated (the fit would map everything to {float(n_right > 0)}); add gold "
            f"items it got {other}, or leave this critic uncalibrated"
        )
    ece_before = expected_calibration_error(cs, ys, bins)
    if method == "temperature":
        temperature = _fit_temperature(cs, ys)
        calibrated = [_sigmoid(_logit(c) / temperature) for c in cs]
        return ConfidenceCalibration(
            method="temperature",
            temperature=temperature,
            n=n,
            bins=bins,
            ece_before=ece_before,
            ece_after=expected_calibration_error(calibrated, ys, bins),
        )
    breakpoints, values = _pool_adjacent_violators(cs, ys)
    calibrated = [_step(breakpoints, values, c) for c in cs]
    ece_after = expected_calibration_error(calibrated, ys, bins)
    return ConfidenceCalibration(
        method="isotonic",
        breakpoints=breakpoints,
        values=values,
        n=n,
        bins=bins,
        ece_before=ece_before,
        ece_after=ece_after,
    )


# -- fitting -----------------------------------------------------------------------------------


def _fit_temperature(cs: Sequence[float], ys: Sequence[bool]) -> float:
    # Group by distinct logit: LLM critics state few distinct confidences, so each step of
    # the search costs O(distinct values), not O(items).
    groups: dict[float, list[int]] = {}
    for c, y in zip(cs, ys, strict=True):
        counts = groups.setdefault(_logit(c), [0, 0])
        counts[0 if y else 1] += 1
    if set(groups) == {0.0}:
        raise ConfigError(
            "every stated confidence is 0.5, which temperature scaling cannot move; "
            "use method='isotonic'"
        )
    table = [(x, r, w) for x, (r, w) in groups.items()]

    def nll(log_t: float) -> float:
        inv_t = math.exp(-log_t)
        # -log sigmoid(z) = softplus(-z); -log(1 - sigmoid(z)) = softplus(z)
        return math.fsum(r * _softplus(-x * inv_t) + w * _softplus(x * inv_t) for x, r, w in table)

    lo, hi = (math.log(t) for t in TEMPERATURE_BOUNDS)
    a, b = hi - _INV_PHI * (hi - lo), lo + _INV_PHI * (hi - lo)
    fa, fb = nll(a), nll(b)
    for _ in range(_MAX_SEARCH_STEPS):
        if hi - lo < _LOG_T_TOLERANCE:
            break
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - _INV_PHI * (hi - lo)
            fa = nll(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + _INV_PHI * (hi - lo)
            fb = nll(b)
    low, high = TEMPERATURE_BOUNDS
    return min(max(math.exp((lo + hi) / 2.0), low), high)


def _pool_adjacent_violators(
    cs: Sequence[float], ys: Sequence[bool]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    ties: dict[float, list[int]] = {}
    for c, y in zip(cs, ys, strict=True):
        counts = ties.setdefault(c, [0, 0])
        counts[0] += y
        counts[1] += 1
    # Blocks as [lowest confidence, right, total]; integer counts keep comparisons exact.
    blocks: list[list[Any]] = []
    for c in sorted(ties):
        blocks.append([c, *ties[c]])
        while len(blocks) > 1:
            _, r1, n1 = blocks[-2]
            _, r2, n2 = blocks[-1]
            if r1 * n2 < r2 * n1:  # previous accuracy strictly below: in order
                break
            blocks[-2][1:] = [r1 + r2, n1 + n2]
            blocks.pop()
    return tuple(float(c) for c, _, _ in blocks), tuple(r / t for _, r, t in blocks)


# -- numerics and checks -----------------------------------------------------------------------


def _step(breakpoints: Sequence[float], values: Sequence[float], c: float) -> float:
    k = bisect.bisect_right(breakpoints, c) - 1
    return values[max(k, 0)]


def _logit(c: float) -> float:
    c = min(max(c, CONFIDENCE_CLAMP), 1.0 - CONFIDENCE_CLAMP)
    # One rounded division then log: monotone in c, so apply() is too.
    return math.log(c / (1.0 - c))


def _sigmoid(z: float) -> float:
    # |z| <= 13.82 / 0.05 < 280, so exp cannot overflow; one formula keeps it monotone.
    return 1.0 / (1.0 + math.exp(-z))


def _softplus(z: float) -> float:
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> TypeGuard[float]:
    # numbers.Real also admits numpy floats and ints; bools are not numbers here.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_unit(value: object) -> TypeGuard[float]:
    return _is_real(value) and 0.0 <= value <= 1.0


def _is_outcome(value: object) -> bool:
    # bool or int 0/1, and numpy's bool_ and integer scalars (from a boolean array).
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return (isinstance(value, int) or kind in ("b", "i", "u")) and value in (0, 1)


def _check_bins(bins: object) -> None:
    if not _is_int(bins) or bins < 1:
        raise ConfigError(f"bins must be an integer >= 1, got {bins!r}")


def _checked_pairs(
    confidences: Sequence[float], correct: Sequence[bool]
) -> tuple[list[float], list[bool]]:
    cs, ys = list(confidences), list(correct)
    if len(cs) != len(ys):
        raise ConfigError(
            f"confidences and correct must be aligned, got {len(cs)} and {len(ys)} values"
        )
    for i, c in enumerate(cs):
        if not _is_unit(c):
            raise ConfigError(
                f"confidences[{i}] = {c!r} is not a number in [0, 1]; drop verdicts "
                "without a confidence before calibrating"
            )
    for i, y in enumerate(ys):
        if not _is_outcome(y):
            raise ConfigError(f"correct[{i}] = {y!r} is not True or False")
    return [float(c) for c in cs], [bool(y) for y in ys]


# The public path of these classes (cross_judge.reliability): reprs, pickles and the docs name it.
for _public in (ConfidenceCalibration,):
    _public.__module__ = "cross_judge.reliability"
del _public
