"""Inter-rater agreement across a batch: how far critics agree over many items.

Every function takes the same layout, a *reliability matrix*: one row per rater (critic),
one column per unit (item), ``None`` (or a float NaN) where a rater gave no value.
:func:`matrix_from_labels` builds it from per-item ``{critic: label}`` dicts.

- :func:`reliability_alpha`: Krippendorff's alpha at the nominal, ordinal, interval or ratio
  level; copes with missing values and any number of raters. The measure to report.
- :func:`fleiss_kappa`: Fleiss' kappa for complete data (units with a gap are dropped).
- :func:`cohen_kappa`: Cohen's kappa for two raters, unweighted, linear or quadratic.
- :func:`pairwise_agreement`: critic x critic percent agreement or Cohen's kappa.

The per-item ``krippendorff_alpha`` on an ``EnsembleVerdict`` (and in
:mod:`cross_judge.voting`), kept for cross-judge 0.1 compatibility, is computed from one
item's votes alone, so it can only be ``1.0`` (all agree), ``0.0`` (any disagreement, give
or take 4e-16 of rounding) or ``None`` (fewer than two votes): an "all agree?" flag, not a
reliability estimate. :func:`reliability_alpha` over many items is the real measure.

Statistics that are undefined (no pairable values, no variation at all, no units left) are
``None``, never a made-up 0 or 1. This module is pure standard library and deliberately does
not do confidence intervals or bootstrapping, custom distance functions, or pick a level of
measurement for you; results match the ``krippendorff`` package to floating-point rounding.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Literal

from .._extensions import provide
from ..errors import ConfigError

__all__ = [
    "Level",
    "Numbers",
    "alpha_of_votes",
    "cohen_kappa",
    "compares_labels",
    "fleiss_kappa",
    "matrix_from_labels",
    "pairwise_agreement",
    "reliability_alpha",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
"""Level of measurement for :func:`reliability_alpha`."""

_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

Numbers = Literal["auto", "scores", "labels"]
"""How :func:`alpha_of_votes` reads verdicts as numbers, one way for the whole batch."""

# A unit's non-missing values and how many identical units (same column) there were.
_Unit = tuple[list[Hashable], int]


@provide("reliability_alpha")
def reliability_alpha(
    data: Sequence[Sequence[Hashable | None]],
    level: Level = "nominal",
    values: Sequence[Hashable] | None = None,
) -> float | None:
    """Krippendorff's alpha over a raters x units matrix (Krippendorff 2011).

    ``alpha = 1 - D_o / D_e`` from the coincidence matrix of pairable values: 1 is perfect
    agreement, 0 is chance, below 0 is systematic disagreement. Distances by ``level``:

    - ``"nominal"``: any hashable labels, equal or not. Labels compare with ``==``, so
      ``1``, ``1.0`` and ``True`` are one label.
    - ``"ordinal"``: labels ranked by their position in ``values`` if given, else by
      ``sorted()`` of the observed labels (pass ``values`` for string labels: sorted order
      puts ``"high"`` before ``"low"``). The distance is Krippendorff's marginal-based one,
      ``(sum of n_g for g from c to k - (n_c + n_k) / 2) ** 2``, so categories nobody used
      add no distance.
    - ``"interval"``: ``(c - k) ** 2``; ``"ratio"``: ``((c - k) / (c + k)) ** 2``, 0 when
      ``c + k == 0``. Both need finite real numbers; strings and bools raise ``ValueError``.

    ``values``, when given, declares the domain: an observed value not in it raises
    ``ValueError``. Only ``"ordinal"`` uses its order.

    Missing data: ``None`` or NaN. Units left with fewer than two values are unpairable and
    dropped, as in the textbook; the other units use every value they have.

    Returns ``None`` when alpha is undefined: no unit has two values (no rows, a single
    rater, a single-rated unit, everything missing) or there is no variation at all
    (every pairable value identical, so D_e == 0). A single unit whose values differ gives
    0.0 (up to float rounding): with one unit, D_o and D_e are the same number.

    Time is O(units x raters) plus O(categories) for nominal and interval, a sort of the
    categories for ordinal, and O(distinct values ** 2) for ratio. Nominal, ordinal and
    integer interval data are computed exactly (integer sums, one final division); float
    data and the ratio level use float sums.

    Raises:
        ValueError: rows of different lengths, unknown ``level``, duplicate entries in
            ``values``, a value outside ``values``, a non-numeric value for interval/ratio,
            or labels ``sorted()`` cannot order for ordinal without ``values``.
    """
    if level not in _LEVELS:
        raise ValueError(f"Unknown level {level!r}; expected one of {list(_LEVELS)}.")
    domain = _domain(values)
    numeric = level in ("interval", "ratio")
    units = _pairable_units(data, domain, numeric)
    marginals: Counter[Hashable] = Counter()
    for vals, weight in units:
        if weight == 1:
            marginals.update(vals)  # C loop; the usual case when units are all distinct
        else:
            for v in vals:
                marginals[v] += weight
    if len(marginals) < 2:
        # No pairable value, or only one distinct value: D_e == 0 and alpha is 0/0.
        return None
    n = sum(marginals.values())
    if level == "nominal":
        return _alpha_nominal(units, marginals, n)
    if level == "ratio":
        return _alpha_ratio(units, marginals, n)
    if level == "ordinal":
        return _alpha_squared(units, marginals, n, _ordinal_positions(marginals, domain))
    positions: dict[Hashable, int | float]
    if all(type(v) is int or isinstance(v, numbers.Integral) for v in marginals):
        positions = {v: int(v) for v in marginals}  # type: ignore[call-overload]
    else:
        positions = {v: float(v) for v in marginals}  # type: ignore[arg-type]
    return _alpha_squared(units, marginals, n, positions)


@provide("fleiss_kappa")
def fleiss_kappa(data: Sequence[Sequence[Hashable | None]]) -> float | None:
    """Fleiss' kappa over a raters x units matrix of nominal labels (Fleiss 1971).

    Fleiss assumes every unit is rated by the same number of raters, so a unit with any
    missing value (``None`` or NaN) is dropped whole; with gaps, prefer
    :func:`reliability_alpha`, which uses every pairable value. Raters need not be the same
    people per unit: only each unit's label counts matter.

    Returns ``None`` when undefined: fewer than two raters, no complete unit, or chance
    agreement ``P_e == 1`` (every kept rating is the same label).

    Raises:
        ValueError: rows of different lengths.
    """
    _check_lengths(data)
    raters = len(data)
    if raters < 2:
        return None
    units = 0
    sum_squares = 0  # sum over units of sum_j n_ij ** 2
    totals: Counter[Hashable] = Counter()
    for column, weight in Counter(zip(*data, strict=True)).items():
        if any(_is_missing(v) for v in column):
            continue
        counts = Counter(column)
        units += weight
        sum_squares += weight * sum(c * c for c in counts.values())
        for label, c in counts.items():
            totals[label] += weight * c
    if units == 0:
        return None
    ratings = units * raters
    # Exact fractions: the counts are integers, so the only rounding is the final float().
    p_bar = Fraction(sum_squares - ratings, ratings * (raters - 1))
    p_e = Fraction(sum(t * t for t in totals.values()), ratings * ratings)
    if p_e == 1:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def cohen_kappa(
    a: Sequence[Hashable | None],
    b: Sequence[Hashable | None],
    weights: Literal["linear", "quadratic"] | None = None,
    values: Sequence[Hashable] | None = None,
) -> float | None:
    """Cohen's kappa between two raters' labels over the same units.

    Units where either rater has no value (``None`` or NaN) are dropped. Unweighted kappa
    treats labels as nominal. ``weights="linear"`` or ``"quadratic"`` gives weighted kappa
    with disagreement weights ``|i - j|`` or ``(i - j) ** 2``, where ``i`` and ``j`` are the
    labels' positions in ``values`` if given (unused categories in between do count), else
    in ``sorted()`` of the labels observed in kept pairs (as scikit-learn's
    ``cohen_kappa_score``). ``values`` also declares the domain: a label outside it raises.

    Returns ``None`` when undefined: no unit rated by both, or no room for chance
    disagreement (``p_e == 1`` unweighted, zero expected weighted disagreement), e.g. both
    raters always give the same single label.

    Raises:
        ValueError: ``a`` and ``b`` differ in length, unknown ``weights``, duplicate
            entries in ``values``, a label outside ``values``, or labels ``sorted()``
            cannot order for weighted kappa without ``values``.
    """
    if len(a) != len(b):
        raise ValueError(f"a has {len(a)} values but b has {len(b)}; they must rate the same units")
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"Unknown weights {weights!r}; expected None, 'linear' or 'quadratic'.")
    domain = _domain(values)
    pairs: Counter[tuple[Hashable, Hashable]] = Counter(
        (x, y) for x, y in zip(a, b, strict=True) if not _is_missing(x) and not _is_missing(y)
    )
    if domain is not None:
        # Every label, including those paired with a gap, as reliability_alpha does.
        for label in {*a, *b}:
            if not _is_missing(label):
                _check_in_domain(label, domain)
    count_a: Counter[Hashable] = Counter()
    count_b: Counter[Hashable] = Counter()
    for (x, y), c in pairs.items():
        count_a[x] += c
        count_b[y] += c
    n = sum(pairs.values())
    if n == 0:
        return None
    if weights is None:
        agree = sum(c for (x, y), c in pairs.items() if x == y)
        chance = sum(c * count_b[label] for label, c in count_a.items())  # n**2 * p_e
        if chance == n * n:
            return None
        return float(Fraction(n * agree - chance, n * n - chance))
    rank = domain if domain is not None else _sorted_ranks([*count_a, *count_b])
    power = 1 if weights == "linear" else 2
    observed = sum(c * abs(rank[x] - rank[y]) ** power for (x, y), c in pairs.items())
    expected = sum(
        ca * cb * abs(rank[x] - rank[y]) ** power
        for x, ca in count_a.items()
        for y, cb in count_b.items()
    )
    if expected == 0:
        return None
    # kappa_w = 1 - sum(w * p_o) / sum(w * p_e) with p_o = pairs / n, p_e = a * b / n**2.
    return float(1 - Fraction(n * observed, expected))


@provide("pairwise_agreement")
def pairwise_agreement(
    data: Sequence[Sequence[Hashable | None]],
    names: Sequence[str] | None = None,
    measure: Literal["percent", "cohen"] = "percent",
) -> dict[tuple[str, str], float | None]:
    """Agreement of every pair of raters (critics), keyed both ways round.

    The result holds ``(name_i, name_j)`` and ``(name_j, name_i)`` with the same value for
    every ``i != j``, so lookups work in either order; ``(name, name)`` is omitted.

    - ``"percent"``: fraction of units both rated (neither ``None`` nor NaN) on which their
      labels are equal; ``None`` if they share no unit.
    - ``"cohen"``: unweighted :func:`cohen_kappa` of the two rows; ``None`` where undefined.

    ``names`` defaults to ``"0"``, ``"1"``, ... A single rater gives an empty dict.

    Raises:
        ValueError: rows of different lengths, ``names`` not one per row or repeated, or
            unknown ``measure``.
    """
    if measure not in ("percent", "cohen"):
        raise ValueError(f"Unknown measure {measure!r}; expected 'percent' or 'cohen'.")
    _check_lengths(data)
    if names is None:
        names = [str(i) for i in range(len(data))]
    elif len(names) != len(data):
        raise ValueError(f"Got {len(names)} names for {len(data)} rows; need one per row.")
    if len(set(names)) != len(names):
        raise ValueError(f"names must be unique, got {list(names)!r}.")
    result: dict[tuple[str, str], float | None] = {}
    for i in range(len(data)):
        for j in range(i + 1, len(data)):
            value: float | None
            if measure == "cohen":
                value = cohen_kappa(data[i], data[j])
            else:
                shared = [
                    x == y
                    for x, y in zip(data[i], data[j], strict=True)
                    if not _is_missing(x) and not _is_missing(y)
                ]
                value = sum(shared) / len(shared) if shared else None
            result[names[i], names[j]] = value
            result[names[j], names[i]] = value
    return result


def matrix_from_labels(
    rows: Iterable[Mapping[str, Hashable | None]],
    raters: Sequence[str] | None = None,
) -> tuple[list[str], list[list[Hashable | None]]]:
    """Turn per-item ``{rater: label}`` dicts into ``(rater names, raters x units matrix)``.

    One mapping per unit (item), in order. Rater names come in first-seen order, or in the
    order of ``raters`` if given. A rater absent from a unit's mapping, or mapped to
    ``None``, gets ``None`` (missing) in that column. No units gives ``(names, [[], ...])``.

    Raises:
        ValueError: ``raters`` repeats a name, or a unit names a rater not in ``raters``
            (silently dropping a critic's votes would skew every statistic).
    """
    units = list(rows)
    if raters is None:
        names = list(dict.fromkeys(name for unit in units for name in unit))
    else:
        names = list(raters)
        if len(set(names)) != len(names):
            raise ValueError(f"raters must be unique, got {names!r}.")
        known = set(names)
        for index, unit in enumerate(units):
            unknown = [name for name in unit if name not in known]
            if unknown:
                raise ValueError(f"Unit {index} has raters {unknown!r} not in raters.")
    return names, [[unit.get(name) for unit in units] for name in names]


# --- helpers -------------------------------------------------------------------------------


_NEVER_NAN: frozenset[type] = frozenset({int, str, bool})


def _is_missing(value: object) -> bool:
    # NaN counts as missing because numpy/pandas export empty cells as NaN; NaN is the only
    # number not equal to itself (float, numpy floats, Decimal). The exact-type tests skip the
    # slow ABC isinstance for the common label types.
    if value is None:
        return True
    if type(value) is float:
        return value != value
    if type(value) in _NEVER_NAN:
        return False
    return isinstance(value, numbers.Number) and value != value


def _check_lengths(data: Sequence[Sequence[Hashable | None]]) -> None:
    if not data:
        return
    expected = len(data[0])
    for index, row in enumerate(data):
        if len(row) != expected:
            raise ValueError(
                f"Row {index} has {len(row)} values but row 0 has {expected}; every rater "
                "row must cover the same units (use None for a missing value)."
            )


def _domain(values: Sequence[Hashable] | None) -> dict[Hashable, int] | None:
    """``values`` as ``{value: position}``, or ``None`` when not given."""
    if values is None:
        return None
    domain = {value: index for index, value in enumerate(values)}
    if len(domain) != len(values):
        raise ValueError(f"values has duplicate entries: {list(values)!r}.")
    return domain


def _check_in_domain(value: Hashable, domain: Mapping[Hashable, int]) -> None:
    if value not in domain:
        raise ValueError(f"Value {value!r} is not in values {list(domain)!r}.")


def _check_numeric(value: object) -> None:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return  # fast path: exact types, no ABC check
    # bool is an int subclass, but True/False are labels, not quantities.
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(
            f"Interval and ratio alpha need finite real numbers, got {value!r}; "
            "use level='nominal' or 'ordinal' for labels."
        )


def _pairable_units(
    data: Sequence[Sequence[Hashable | None]],
    domain: Mapping[Hashable, int] | None,
    numeric: bool,
) -> list[_Unit]:
    """Validate every value; return the units holding at least two values."""
    _check_lengths(data)
    units: list[_Unit] = []
    # Identical columns are common (few raters, few labels), so each distinct column is
    # checked and counted once with its multiplicity: 100,000 units of 5 raters x 5 labels
    # collapse to at most 6 ** 5 columns.
    for column, weight in Counter(zip(*data, strict=True)).items():
        vals: list[Hashable] = [v for v in column if not _is_missing(v)]
        for v in vals:
            if domain is not None:
                _check_in_domain(v, domain)
            if numeric:
                _check_numeric(v)
        if len(vals) >= 2:
            units.append((vals, weight))
    return units


def _sorted_ranks(labels: Iterable[Hashable]) -> dict[Hashable, int]:
    try:
        ordered = sorted(set(labels))  # type: ignore[type-var]
    except TypeError as exc:
        raise ValueError(
            "Cannot sort the observed labels; pass values=[...] to give their order."
        ) from exc
    return {label: index for index, label in enumerate(ordered)}


def _finish(
    observed_by_size: Mapping[int, int | float], expected: int | float, n: int
) -> float | None:
    """``1 - (n - 1) * sum_m(S_m / (m - 1)) / expected``.

    ``S_m`` sums ``sum_{c,k} n_uc * n_uk * delta(c, k)`` over units with ``m`` values, so
    ``S_m / (m - 1)`` is their share of the coincidence-weighted distance; ``expected`` is
    ``sum_{c,k} n_c * n_k * delta(c, k)``. Integer inputs are combined exactly.
    """
    if expected == 0:
        return None
    if isinstance(expected, int) and all(isinstance(s, int) for s in observed_by_size.values()):
        observed = sum(
            (Fraction(s, m - 1) for m, s in observed_by_size.items()),  # type: ignore[arg-type]
            Fraction(0),
        )
        return float(1 - (n - 1) * observed / expected)
    observed_f = math.fsum(s / (m - 1) for m, s in observed_by_size.items())
    return 1.0 - (n - 1) * observed_f / expected


def _alpha_nominal(units: list[_Unit], marginals: Mapping[Hashable, int], n: int) -> float | None:
    # delta is 1 for unlike labels, so sum_{c,k} n_uc n_uk delta = m**2 - sum_c n_uc**2.
    by_size: dict[int, int] = {}
    for vals, weight in units:
        m = len(vals)
        unlike = m * m - sum(c * c for c in Counter(vals).values())
        if unlike:
            by_size[m] = by_size.get(m, 0) + weight * unlike
    expected = n * n - sum(c * c for c in marginals.values())
    return _finish(by_size, expected, n)


def _ordinal_positions(
    marginals: Mapping[Hashable, int], domain: Mapping[Hashable, int] | None
) -> dict[Hashable, int]:
    """Positions ``q`` with ``(q_k - q_c) ** 2 / 4`` equal to the ordinal distance.

    With ``C_c`` the cumulative marginal up to and including ``c``, the textbook distance
    ``sum_{g=c..k} n_g - (n_c + n_k) / 2`` equals ``(C_k - n_k/2) - (C_c - n_c/2)``, so
    ordinal alpha is interval alpha on ``q = 2*C - n`` (doubled to stay integer; the factor
    4 cancels in D_o / D_e). This avoids building a categories x categories matrix.
    """
    if domain is not None:
        order = sorted(marginals, key=lambda label: domain[label])
    else:
        ranks = _sorted_ranks(marginals)
        order = sorted(marginals, key=lambda label: ranks[label])
    positions: dict[Hashable, int] = {}
    cumulative = 0
    for label in order:
        cumulative += marginals[label]
        positions[label] = 2 * cumulative - marginals[label]
    return positions


def _alpha_squared(
    units: list[_Unit],
    marginals: Mapping[Hashable, int],
    n: int,
    positions: Mapping[Hashable, int | float],
) -> float | None:
    """Alpha for ``delta(c, k) = (x_c - x_k) ** 2`` (interval, and ordinal via positions)."""
    by_size: dict[int, int | float] = {}
    exact = all(isinstance(x, int) for x in positions.values())
    for vals, weight in units:
        xs = [positions[v] for v in vals]
        m = len(xs)
        if exact:
            # sum_{i,j} (x_i - x_j)**2 = 2 * (m * sum x**2 - (sum x)**2), exact on ints.
            total = sum(xs)
            pair_sum: int | float = 2 * (m * sum(x * x for x in xs) - total * total)
        elif min(xs) == max(xs):
            continue
        else:
            # Centred form of the same identity: no cancellation between two large sums.
            mean = sum(xs) / m
            pair_sum = 2 * m * sum([(x - mean) ** 2 for x in xs])
        if pair_sum:
            by_size[m] = by_size.get(m, 0) + weight * pair_sum
    expected: int | float
    if exact:
        first = sum(c * positions[v] for v, c in marginals.items())
        second = sum(c * positions[v] ** 2 for v, c in marginals.items())
        expected = 2 * (n * second - first * first)
    else:
        mean = math.fsum(c * positions[v] for v, c in marginals.items()) / n
        expected = 2 * n * math.fsum(c * (positions[v] - mean) ** 2 for v, c in marginals.items())
    return _finish(by_size, expected, n)


def _ratio_distance(c: float, k: float) -> float:
    total = c + k
    return 0.0 if total == 0 else ((c - k) / total) ** 2


def _alpha_ratio(units: list[_Unit], marginals: Mapping[Hashable, int], n: int) -> float | None:
    # The ratio distance does not factor into per-value sums, so D_e is a loop over pairs of
    # distinct values: O(V**2), fine for rating scales, slow for 10,000+ distinct values.
    by_size: dict[int, int | float] = {}
    for vals, weight in units:
        counts = list(Counter(float(v) for v in vals).items())  # type: ignore[arg-type]
        pair_sum = 2 * math.fsum(
            ci * ck * _ratio_distance(c, k)
            for i, (c, ci) in enumerate(counts)
            for k, ck in counts[i + 1 :]
        )
        if pair_sum:
            by_size[len(vals)] = by_size.get(len(vals), 0) + weight * pair_sum
    items = [(float(v), c) for v, c in marginals.items()]  # type: ignore[arg-type]
    expected = 2 * math.fsum(
        ci * ck * _ratio_distance(c, k)
        for i, (c, ci) in enumerate(items)
        for k, ck in items[i + 1 :]
    )
    return _finish(by_size, expected, n)


# -- a panel's votes -------------------------------------------------------------------------


def compares_labels(level: str, values: Sequence[Hashable] | None) -> bool:
    """Whether alpha at ``level`` compares labels (``nominal``, and ``ordinal`` with the
    labels' order in ``values``) rather than numbers."""
    return level == "nominal" or (level == "ordinal" and values is not None)


@provide("alpha_of_votes")
def alpha_of_votes(
    critics: Sequence[str],
    labels: Sequence[Sequence[str | None]],
    scores: Sequence[Sequence[float | None]] | None,
    level: Level = "nominal",
    values: Sequence[str] | None = None,
    numbers: Numbers = "auto",
) -> float | None:
    """Krippendorff's alpha of a panel's votes, the one rule both a batch in memory and a
    streamed results file use.

    ``labels[j][i]`` is critic ``critics[j]``'s label on item ``i`` (``None``: no valid
    vote) and ``scores[j][i]`` its score (``None``: the verdict has none); ``scores`` may
    be ``None`` when :func:`compares_labels` holds. Labels are compared at ``nominal``
    and at ``ordinal`` with ``values``; the other levels compare numbers, read one way
    for the whole batch as ``numbers`` says: ``"auto"`` takes every valid vote's score
    when every one has a score and every label read as a number (``"4"`` -> 4.0) when
    none has; ``"labels"`` reads the labels, scores ignored; ``"scores"`` the scores, a
    vote without one missing.

    Raises:
        ConfigError: an unknown ``numbers``; ``numbers="scores"`` where labels are
            compared; with ``"auto"``, scores on some valid votes and not on others (the
            message names the critics without, and both ways out); a label that is not a
            finite number when labels are read; what :func:`reliability_alpha` refuses
            (a label outside ``values``, an unknown level).
    """
    if numbers not in ("auto", "scores", "labels"):
        raise ConfigError(f"numbers must be 'auto', 'scores' or 'labels', got {numbers!r}")
    matrix: Sequence[Sequence[Hashable | None]]
    if compares_labels(level, values):
        if numbers == "scores":
            raise ConfigError(
                f"reliability_alpha({level!r}"
                + (", values=[...]" if values is not None else "")
                + ") compares labels, not scores; use level='interval' or 'ratio' "
                "(or 'ordinal' without values) to compare scores"
            )
        matrix = labels
    else:
        matrix = _votes_as_numbers(critics, labels, scores, level, numbers)
    try:
        return reliability_alpha(matrix, level, values)
    except ValueError as exc:
        raise ConfigError(f"reliability_alpha({level!r}): {exc}") from None


def _votes_as_numbers(
    critics: Sequence[str],
    labels: Sequence[Sequence[str | None]],
    scores: Sequence[Sequence[float | None]] | None,
    level: str,
    numbers: str,
) -> Sequence[Sequence[float | None]]:
    """The critics x items votes as numbers, one reading for all (see
    :func:`alpha_of_votes`); a missing vote stays ``None``."""
    asked = numbers
    if numbers != "labels" and scores is None:
        raise ValueError("scores are needed to read votes as numbers")
    if numbers == "auto":
        assert scores is not None
        valid = scored = 0
        unscored: set[str] = set()
        for name, label_row, score_row in zip(critics, labels, scores, strict=True):
            for label, score in zip(label_row, score_row, strict=True):
                if label is not None:
                    valid += 1
                    if score is not None:
                        scored += 1
                    else:
                        unscored.add(name)
        if scored and scored < valid:
            listed = sorted(unscored)
            named = ", ".join(repr(name) for name in listed[:5])
            named += f" and {len(listed) - 5} more" if len(listed) > 5 else ""
            raise ConfigError(
                f"reliability_alpha({level!r}): {scored} of {valid} valid verdicts "
                f"carry a score and the others do not (critic{'s' * (len(listed) > 1)} "
                f"{named}); a score and a label read as a number are different scales, so "
                "one reading is used for the whole batch: pass numbers='labels' to read "
                "every label as a number, or numbers='scores' to compare the scores (a "
                "verdict without one counts as missing)"
            )
        numbers = "scores" if scored else "labels"
    if numbers == "scores":
        assert scores is not None
        return [
            [None if label is None else score for label, score in zip(lrow, srow, strict=True)]
            for lrow, srow in zip(labels, scores, strict=True)
        ]
    why = " with no score" if asked == "auto" else ", which is not a number"
    read: dict[str, float] = {}
    rows: list[list[float | None]] = []
    for name, label_row in zip(critics, labels, strict=True):
        out: list[float | None] = []
        for label in label_row:
            if label is None:
                out.append(None)
                continue
            number = read.get(label)
            if number is None:
                try:
                    number = float(label)
                except ValueError:
                    number = math.nan
                if not math.isfinite(number):
                    raise ConfigError(
                        f"reliability_alpha({level!r}) needs numbers, but critic {name!r} "
                        f"answered {label!r}{why}; use level='nominal', or 'ordinal' with "
                        "values=[...] listing the labels from low to high"
                    )
                read[label] = number
            out.append(number)
        rows.append(out)
    return rows
