"""Bradley-Terry ratings from pairwise outcomes, with Davidson's ties, and their intervals.

Pure functions over plain data (items are ``0 .. n-1``; a win is ``(winner, loser)``, a tie
``(i, j)``); no vendor calls, no model objects. The model (Davidson 1970)::

    P(i beats j) = pi_i / D,   P(tie) = nu * sqrt(pi_i * pi_j) / D,
    D = pi_i + pi_j + nu * sqrt(pi_i * pi_j)

with ``nu = 0`` (plain Bradley-Terry) when no comparison is a tie. It is fitted by the MM
algorithm (Hunter 2004): each round maximises a minorizer of the log-likelihood, so the
objective never decreases. The strengths are returned as mean-centred logs
(``log_strengths``); :func:`elo` maps one to the documented rating scale.

Regularisation. The maximum-likelihood estimate is finite when the graph with an edge from
each loser to its winner is strongly connected (:func:`mle_exists`; for tie-free data that is
the exact condition). An item that only wins, an item never compared, two groups never
compared across, or items joined only by ties fail it. :func:`fit_bradley_terry` then
fits the posterior mode under independent ``Gamma(alpha + 1, rate alpha)`` priors on every
``pi_i`` (and on ``nu`` when there are ties), mode 1, with ``alpha = DEFAULT_ALPHA``: the
log-likelihood plus ``alpha * sum(log pi_i - pi_i)``. This is exactly choix's
``mm_pairwise(alpha=...)``, and ``ilsr_pairwise(alpha=alpha / n)`` (its Markov chain adds
``alpha / n`` to every transition rate, which is the same prior scaled by ``n``). When the
estimate exists, ``alpha`` is 0 and the fit is choix's unregularised one.

The module deliberately does not choose pairs, call judges or turn verdicts into outcomes:
that is :mod:`cross_judge.ranking`'s job.
"""

from __future__ import annotations

import importlib.util
import math
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

from ..errors import ConfigError, StatisticsWarning
from ._quantile import linear_quantile

__all__ = [
    "DEFAULT_ALPHA",
    "FISHER_MAX_GROUP",
    "FISHER_MAX_GROUP_PYTHON",
    "BTFit",
    "Backend",
    "bootstrap_intervals",
    "elo",
    "fisher_group_limit",
    "fisher_intervals",
    "fit_bradley_terry",
    "mle_exists",
]

Backend = Literal["auto", "python", "numpy"]
"""Which implementation runs the fit: ``"auto"`` uses numpy when it is importable."""

DEFAULT_ALPHA = 0.01
"""The prior weight used when the maximum-likelihood estimate does not exist (see the module
docstring): 0.01 pseudo-observations per item, so one real comparison outweighs it 100 to 1."""

ELO_BASE = 1000.0
ELO_SCALE = 400.0 / math.log(10.0)


@dataclass(frozen=True)
class BTFit:
    """A Bradley-Terry (Davidson) fit.

    - ``log_strengths``: ``log pi_i`` per item, centred to mean 0 (higher is stronger; the
      difference of two is the log-odds of one beating the other, ties aside).
    - ``tie``: Davidson's ``nu`` (0 when no comparison was a tie).
    - ``iterations``: MM rounds run; ``converged``: the last round moved no log-strength and
      not ``log nu`` by more than ``tol``.
    - ``alpha``: the prior weight used (0: the maximum-likelihood estimate).
    - ``uncompared``: items with no comparison at all; their strength is the prior's mode
      (``pi = 1`` before centring), not information.
    """

    log_strengths: tuple[float, ...]
    tie: float
    iterations: int
    converged: bool
    alpha: float = 0.0
    uncompared: tuple[int, ...] = ()


def elo(log_strength: float) -> float:
    """The rating scale of rankings: ``1000 + 400 / ln(10) * log_strength``, so a 400-point
    gap means 10-to-1 odds of winning (ties aside) and the mean item rates 1000."""
    return ELO_BASE + ELO_SCALE * log_strength


@dataclass(frozen=True)
class _Pairs:
    """Comparisons grouped by unordered pair ``i < j``: how many (``count``), and per item its
    score (wins plus half its ties); ``ties`` in all."""

    n: int
    first: list[int]
    second: list[int]
    count: list[float]
    score: list[float]
    ties: float
    wins: float


def _pairs(n: int, wins: Sequence[tuple[int, int]], ties: Sequence[tuple[int, int]]) -> _Pairs:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ConfigError(f"n must be the number of items, an int >= 1, got {n!r}")
    index: dict[tuple[int, int], int] = {}
    first: list[int] = []
    second: list[int] = []
    count: list[float] = []
    score = [0.0] * n

    def add(a: int, b: int, what: str) -> None:
        for x in (a, b):
            if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < n:
                raise ConfigError(f"{what} ({a!r}, {b!r}) names an item outside 0..{n - 1}")
        if a == b:
            raise ConfigError(f"{what} ({a}, {b}) compares an item with itself: drop it")
        key = (a, b) if a < b else (b, a)
        slot = index.get(key)
        if slot is None:
            index[key] = len(count)
            first.append(key[0])
            second.append(key[1])
            count.append(1.0)
        else:
            count[slot] += 1.0

    for pair in wins:
        add(pair[0], pair[1], "win")
        score[pair[0]] += 1.0
    for pair in ties:
        add(pair[0], pair[1], "tie")
        score[pair[0]] += 0.5
        score[pair[1]] += 0.5
    return _Pairs(n, first, second, count, score, float(len(ties)), float(len(wins)))


def mle_exists(
    n: int, wins: Sequence[tuple[int, int]], ties: Sequence[tuple[int, int]] = ()
) -> bool:
    """Whether the maximum-likelihood fit is surely finite: the graph with an edge from each
    loser to its winner reaches every item from every item (one item: True). Without ties
    this is the exact condition (Ford 1957). Ties are left out on purpose: under Davidson's
    model a tie between very unequal items can be explained by a huge ``nu``, so items joined
    only by ties may drift apart without bound; with wins strongly connected they cannot."""
    _pairs(n, wins, ties)  # validates
    return _wins_connect_all(n, wins)


def _wins_connect_all(n: int, wins: Sequence[tuple[int, int]]) -> bool:
    if n > 1 and not wins:
        return False
    forward: list[list[int]] = [[] for _ in range(n)]
    backward: list[list[int]] = [[] for _ in range(n)]
    for winner, loser in wins:
        forward[loser].append(winner)
        backward[winner].append(loser)
    return _reaches_all(forward) and _reaches_all(backward)


def _reaches_all(graph: list[list[int]]) -> bool:
    seen = [False] * len(graph)
    seen[0] = True
    stack = [0]
    while stack:
        for nxt in graph[stack.pop()]:
            if not seen[nxt]:
                seen[nxt] = True
                stack.append(nxt)
    return all(seen)


def numpy_available() -> bool:
    """Whether numpy is installed (the fast backend needs it)."""
    return importlib.util.find_spec("numpy") is not None


def _use_numpy(backend: str) -> bool:
    if backend not in ("auto", "python", "numpy"):
        raise ConfigError(f"backend must be 'auto', 'python' or 'numpy', got {backend!r}")
    if backend == "python":
        return False
    available = numpy_available()
    if backend == "numpy" and not available:
        raise ConfigError(
            "backend='numpy' needs numpy: pip install 'cross-judge[stats]', or use backend='python'"
        )
    return available


def fit_bradley_terry(
    n: int,
    wins: Sequence[tuple[int, int]],
    ties: Sequence[tuple[int, int]] = (),
    *,
    max_iter: int = 10_000,
    tol: float = 1e-10,
    backend: Backend = "auto",
    alpha: float | None = None,
) -> BTFit:
    """Fit Bradley-Terry strengths (Davidson's model when there are ties) by MM.

    ``wins`` holds ``(winner, loser)`` pairs and ``ties`` ``(i, j)`` pairs of items
    ``0 .. n-1``; repeats count. ``alpha=None`` (the default) regularises only when the
    maximum-likelihood estimate does not exist (:func:`mle_exists`), with
    :data:`DEFAULT_ALPHA`; ``alpha=0`` demands the maximum-likelihood estimate (a ConfigError
    saying why when it does not exist); ``alpha > 0`` always uses that prior weight (choix's
    ``mm_pairwise(alpha=...)``). ``backend``: ``"numpy"`` (vectorised), ``"python"`` (standard
    library) or ``"auto"`` (numpy when importable); both run the same rounds and agree to
    rounding.

    Edge cases: no comparison at all gives every log-strength 0, ``tie`` 0, zero iterations;
    one item gives ``(0.0,)``. ``converged=False`` (with a :class:`StatisticsWarning`) when
    ``max_iter`` rounds did not reach ``tol``: raise ``max_iter``.
    """
    data = _pairs(n, wins, ties)
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ConfigError(f"max_iter must be an int >= 1, got {max_iter!r}")
    if not tol > 0:
        raise ConfigError(f"tol must be > 0, got {tol!r}")
    use_numpy = _use_numpy(backend)
    if alpha is None:
        alpha = 0.0 if _wins_connect_all(n, wins) else DEFAULT_ALPHA
    elif not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
        raise ConfigError(f"alpha must be a finite number >= 0 or None, got {alpha!r}")
    elif alpha == 0 and not _wins_connect_all(n, wins):
        raise ConfigError(
            "alpha=0 asks for the maximum-likelihood fit, which is infinite here: some item "
            "only wins, only loses or was never compared, some groups were never compared "
            "across, or every comparison is a tie. Leave alpha=None (a tiny prior, "
            f"alpha={DEFAULT_ALPHA}) or give alpha > 0"
        )
    compared = [False] * n
    for a, b in zip(data.first, data.second, strict=True):
        compared[a] = compared[b] = True
    uncompared = tuple(i for i in range(n) if not compared[i])
    if n == 1 or not data.count:
        return BTFit((0.0,) * n, 0.0, 0, True, float(alpha), uncompared)
    logs, nu, iterations, converged = _run_mm(data, float(alpha), max_iter, tol, None, use_numpy)
    if not converged:
        warnings.warn(
            f"the Bradley-Terry fit did not converge in {max_iter} rounds (tol={tol}): "
            "raise max_iter",
            StatisticsWarning,
            stacklevel=2,
        )
    return BTFit(tuple(logs), nu, iterations, converged, float(alpha), uncompared)


def _centred(values: Sequence[float]) -> list[float]:
    mean = math.fsum(values) / len(values)
    return [v - mean for v in values]


_Result = tuple[list[float], float, int, bool]


class _PythonMaps:
    """One MM round and the log-posterior on a state ``[log pi_1 .. log pi_n, (log nu)]``,
    in lists."""

    def __init__(self, data: _Pairs, alpha: float) -> None:
        self.data = data
        self.alpha = alpha

    def vector(self, values: Sequence[float]) -> list[float]:
        return list(values)

    def step(self, x: list[float]) -> list[float]:
        data, alpha, n = self.data, self.alpha, self.data.n
        pi = [math.exp(v) for v in x[:n]]
        nu = math.exp(x[n]) if data.ties else 0.0
        denom = [0.0] * n
        for a, b, c in zip(data.first, data.second, data.count, strict=True):
            pa, pb = pi[a], pi[b]
            g = math.sqrt(pa * pb)
            d = c / (pa + pb + nu * g)
            half = 0.5 * nu * g
            denom[a] += d * (1.0 + half / pa)
            denom[b] += d * (1.0 + half / pb)
        pi = [(s + alpha) / (q + alpha) for s, q in zip(data.score, denom, strict=True)]
        # The likelihood ignores scale; the prior's best scale makes sum(pi) = n, and
        # moving there at once (an ascent step too) spares MM its slowest direction.
        raw = [math.log(p) for p in pi]
        shift = math.log(n / math.fsum(pi)) if alpha else -math.fsum(raw) / n
        out = [v + shift for v in raw]
        if data.ties:
            pi = [math.exp(v) for v in out]
            total = 0.0
            for a, b, c in zip(data.first, data.second, data.count, strict=True):
                g = math.sqrt(pi[a] * pi[b])
                total += c * g / (pi[a] + pi[b] + nu * g)
            out.append(math.log((data.ties + alpha) / (total + alpha)))
        return out

    def objective(self, x: list[float]) -> float:
        data, alpha, n = self.data, self.alpha, self.data.n
        try:
            pi = [math.exp(v) for v in x[:n]]
            log_nu = x[n] if data.ties else -math.inf
            nu = math.exp(log_nu) if data.ties else 0.0
            total = math.fsum(s * v for s, v in zip(data.score, x, strict=False))
            if data.ties:
                total += data.ties * log_nu
            for a, b, c in zip(data.first, data.second, data.count, strict=True):
                total -= c * math.log(pi[a] + pi[b] + nu * math.sqrt(pi[a] * pi[b]))
            if alpha:
                total += alpha * math.fsum(v - p for v, p in zip(x[:n], pi, strict=True))
                if data.ties:
                    total += alpha * (log_nu - nu)
        except (OverflowError, ValueError):
            return -math.inf
        return total if math.isfinite(total) else -math.inf

    def extrapolate(self, x0: list[float], x1: list[float], x2: list[float]) -> list[float]:
        r = [b - a for a, b in zip(x0, x1, strict=True)]
        v = [c - 2 * b + a for a, b, c in zip(x0, x1, x2, strict=True)]
        rr = math.fsum(e * e for e in r)
        vv = math.fsum(e * e for e in v)
        if not vv:
            return x2
        a = min(-1.0, -math.sqrt(rr / vv))
        return [p - 2 * a * q + a * a * w for p, q, w in zip(x0, r, v, strict=True)]

    def change(self, new: list[float], old: list[float]) -> float:
        n = self.data.n
        shift = math.fsum(a - b for a, b in zip(new[:n], old[:n], strict=True)) / n
        moved = max(abs(a - b - shift) for a, b in zip(new[:n], old[:n], strict=True))
        return max(moved, abs(new[n] - old[n])) if self.data.ties else moved

    def result(self, x: list[float]) -> tuple[list[float], float]:
        n = self.data.n
        return _centred(x[:n]), (math.exp(x[n]) if self.data.ties else 0.0)


class _NumpyMaps(_PythonMaps):
    """The same maps on numpy arrays."""

    def __init__(self, data: _Pairs, alpha: float) -> None:
        import numpy as np

        super().__init__(data, alpha)
        self.np = np
        self.first = np.asarray(data.first, dtype=np.intp)
        self.second = np.asarray(data.second, dtype=np.intp)
        self.count = np.asarray(data.count, dtype=float)
        self.score = np.asarray(data.score, dtype=float)

    def vector(self, values: Sequence[float]) -> Any:
        return self.np.asarray(values, dtype=float)

    def step(self, x: Any) -> Any:
        np, data, alpha, n = self.np, self.data, self.alpha, self.data.n
        pi = np.exp(x[:n])
        nu = math.exp(float(x[n])) if data.ties else 0.0
        pa, pb = pi[self.first], pi[self.second]
        g = np.sqrt(pa * pb)
        d = self.count / (pa + pb + nu * g)
        half = 0.5 * nu * g
        denom = np.bincount(self.first, d * (1.0 + half / pa), n)
        denom += np.bincount(self.second, d * (1.0 + half / pb), n)
        pi = (self.score + alpha) / (denom + alpha)
        raw = np.log(pi)
        shift = math.log(n / float(pi.sum())) if alpha else -float(raw.mean())
        out = raw + shift
        if not data.ties:
            return out
        pi = np.exp(out)
        pa, pb = pi[self.first], pi[self.second]
        g = np.sqrt(pa * pb)
        total = float(np.sum(self.count * g / (pa + pb + nu * g)))
        return np.append(out, math.log((data.ties + alpha) / (total + alpha)))

    def objective(self, x: Any) -> float:
        np, data, alpha, n = self.np, self.data, self.alpha, self.data.n
        with np.errstate(all="ignore"):
            theta = x[:n]
            pi = np.exp(theta)
            log_nu = float(x[n]) if data.ties else -math.inf
            nu = (
                math.exp(log_nu) if data.ties and log_nu < 700 else (math.inf if data.ties else 0.0)
            )
            pa, pb = pi[self.first], pi[self.second]
            total = float(self.score @ theta)
            total -= float(self.count @ np.log(pa + pb + nu * np.sqrt(pa * pb)))
            if data.ties:
                total += data.ties * log_nu
            if alpha:
                total += alpha * float(np.sum(theta - pi))
                if data.ties:
                    total += alpha * (log_nu - nu)
        return total if math.isfinite(total) else -math.inf

    def extrapolate(self, x0: Any, x1: Any, x2: Any) -> Any:
        np = self.np
        r = x1 - x0
        v = x2 - 2 * x1 + x0
        # Not ``r @ r``: BLAS threads that dot product over a long vector, and on a busy
        # machine waiting for them made it 100 times slower (32 ms at 10,000 items).
        rr, vv = float(np.square(r).sum()), float(np.square(v).sum())
        if not vv:
            return x2
        a = min(-1.0, -math.sqrt(rr / vv))
        return x0 - 2 * a * r + a * a * v

    def change(self, new: Any, old: Any) -> float:
        n = self.data.n
        diff = new[:n] - old[:n]
        moved = float(self.np.max(self.np.abs(diff - diff.mean())))
        return max(moved, abs(float(new[n] - old[n]))) if self.data.ties else moved

    def result(self, x: Any) -> tuple[list[float], float]:
        n = self.data.n
        return _centred([float(v) for v in x[:n]]), (
            math.exp(float(x[n])) if self.data.ties else 0.0
        )


def _run_mm(
    data: _Pairs,
    alpha: float,
    max_iter: int,
    tol: float,
    start: Sequence[float] | None,
    use_numpy: bool,
) -> _Result:
    """MM rounds accelerated by SQUAREM (Varadhan and Roland 2008, scheme S3): two MM rounds,
    a step along their extrapolation, one MM round from there; kept only if the
    log-posterior did not fall, else the two plain rounds are kept, so every cycle ascends
    as plain MM does. ``iterations`` counts MM rounds. Converged when a cycle moves no
    centred log-strength, nor ``log nu``, by more than ``tol``."""
    maps = _NumpyMaps(data, alpha) if use_numpy else _PythonMaps(data, alpha)
    first = [0.0] * data.n if start is None else list(start)
    x = maps.vector(first + ([0.0] if data.ties else []))
    rounds = 0
    while rounds < max_iter:
        new = maps.step(x)
        rounds += 1
        if rounds < max_iter:
            x1, new = new, maps.step(new)
            rounds += 1
            if rounds < max_iter:
                jump = maps.step(maps.extrapolate(x, x1, new))
                rounds += 1
                if maps.objective(jump) >= maps.objective(new):
                    new = jump
        moved = maps.change(new, x)
        x = new
        if moved < tol:
            logs, nu = maps.result(x)
            return logs, nu, rounds, True
    logs, nu = maps.result(x)
    return logs, nu, rounds, False


def _z(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ConfigError(f"level must be strictly between 0 and 1, got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2)


FISHER_MAX_GROUP = 2_000
"""The most items one connected group of comparisons may hold for :func:`fisher_intervals`
with numpy (``FISHER_MAX_GROUP_PYTHON`` without it): the group's information matrix is
dense, ``8 x size^2`` bytes (32 MB at 2,000) and solved in ``size^3 / 3`` steps (about a
second at 2,000 with numpy). Items never compared cost nothing; a regularised fit's groups
are solved one by one, so many small groups of a sparse design are cheap at any ``n``.
:func:`bootstrap_intervals` has no such limit (its memory grows with the comparisons)."""

FISHER_MAX_GROUP_PYTHON = 300
""":data:`FISHER_MAX_GROUP` without numpy (pure Python takes seconds at 300)."""


def fisher_group_limit(backend: Backend = "auto") -> int:
    """The largest connected group :func:`fisher_intervals` solves with ``backend``:
    :data:`FISHER_MAX_GROUP` with numpy, :data:`FISHER_MAX_GROUP_PYTHON` without."""
    return FISHER_MAX_GROUP if _use_numpy(backend) else FISHER_MAX_GROUP_PYTHON


def fisher_intervals(
    fit: BTFit,
    n: int,
    wins: Sequence[tuple[int, int]],
    ties: Sequence[tuple[int, int]] = (),
    level: float = 0.95,
    *,
    backend: Backend = "auto",
) -> list[tuple[float, float]]:
    """Wald intervals ``log_strength +- z * se`` per item (log scale, ``level`` two-sided),
    from the observed information of the log-likelihood at ``fit`` (the same data).

    The information is over the log-strengths and, with ties, ``log nu`` (its uncertainty
    widens the strengths'). The likelihood ignores a common shift of the log-strengths, so the
    matrix is singular along it; the covariance of the mean-centred estimate is its
    Moore-Penrose pseudo-inverse, computed as ``(H + v v')^-1 - v v'`` with
    ``v = (1, .., 1, 0) / sqrt(n)``. A regularised fit (``fit.alpha > 0``) uses the
    posterior's curvature instead (the prior adds ``alpha * pi_i`` to the diagonal), projected
    onto mean-centred strengths; an uncompared item's interval is then the prior's.

    Cost. The information of a regularised fit is block-diagonal over the connected groups
    of compared items (``log nu`` aside, taken in by a Schur complement), so each group is
    solved on its own: memory and time follow the groups, not ``n`` (10,000 items with 50
    comparisons are 50-odd small groups and singletons). The maximum-likelihood fit
    (``alpha == 0``) is one group of all ``n``. A group is solved densely; one larger than
    :func:`fisher_group_limit` (2,000 items with numpy, 300 without) is refused.

    Raises:
        ConfigError: a bad ``level``, a fit of other data, no comparisons (unregularised),
            a singular information matrix, or a group above the limit (use
            :func:`bootstrap_intervals`).
    """
    z = _z(level)
    data = _pairs(n, wins, ties)
    if len(fit.log_strengths) != n:
        raise ConfigError(
            f"fit has {len(fit.log_strengths)} items but n={n}: pass the data the fit came from"
        )
    if n == 1:
        return [(fit.log_strengths[0], fit.log_strengths[0])]
    if not data.count and fit.alpha <= 0:
        raise ConfigError("no comparisons: the strengths have no interval")
    variances = _fisher_variances(fit, data, _use_numpy(backend))
    return [
        (x - z * math.sqrt(max(v, 0.0)), x + z * math.sqrt(max(v, 0.0)))
        for x, v in zip(fit.log_strengths, variances, strict=True)
    ]


_SINGULAR = (
    "the information matrix is singular: the comparisons do not tie every item to the "
    "others (fit with alpha > 0)"
)


@dataclass
class _Curvature:
    """The information ``H + R`` in sparse form: per item its diagonal, per pair of
    ``data`` the off-diagonal entry, with ties each item's entry ``u`` of the ``log nu``
    column and that column's own ``w``; ``shift``: ``1 / n`` added to every strength entry
    (the unregularised fit's ``v v'``), else 0."""

    diagonal: list[float]
    off: list[float]
    u: list[float] | None
    w: float
    shift: float


def _curvature(fit: BTFit, data: _Pairs) -> _Curvature:
    """Every outcome of a pair has the same curvature (the covariance of its three outcome
    directions); the prior adds its own, or ``v v'`` stands in for it."""
    n = data.n
    with_tie = data.ties > 0
    pi = [math.exp(x) for x in fit.log_strengths]
    nu = fit.tie if with_tie else 0.0
    if fit.alpha > 0:  # the prior is not scale-free: undo the centring to its own scale
        pi = _prior_scale(pi)
    diagonal = [0.0] * n
    off: list[float] = []
    u = [0.0] * n if with_tie else None
    w = 0.0
    for a, b, c in zip(data.first, data.second, data.count, strict=True):
        g = nu * math.sqrt(pi[a] * pi[b])
        d = pi[a] + pi[b] + g
        p1, p2, p3 = pi[a] / d, pi[b] / d, g / d
        m1, m2 = p1 + p3 / 2, p2 + p3 / 2
        diagonal[a] += c * (p1 + p3 / 4 - m1 * m1)
        diagonal[b] += c * (p2 + p3 / 4 - m2 * m2)
        off.append(c * (p3 / 4 - m1 * m2))
        if u is not None:
            u[a] += c * (p3 / 2 - m1 * p3)
            u[b] += c * (p3 / 2 - m2 * p3)
            w += c * (p3 - p3 * p3)
    if fit.alpha > 0:
        for i in range(n):
            diagonal[i] += fit.alpha * pi[i]
        w += fit.alpha * nu if with_tie else 0.0
        return _Curvature(diagonal, off, u, w, 0.0)
    return _Curvature(diagonal, off, u, w, 1.0 / n)


def _groups(data: _Pairs, together: bool) -> list[list[int]]:
    """The connected groups of compared items (each sorted; singletons included), or one
    group of every item when ``together``."""
    if together:
        return [list(range(data.n))]
    parent = list(range(data.n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in zip(data.first, data.second, strict=True):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for i in range(data.n):
        members.setdefault(root(i), []).append(i)
    return list(members.values())


def _fisher_variances(fit: BTFit, data: _Pairs, use_numpy: bool) -> list[float]:
    """Diagonal of ``P M^-1 P`` (``P`` centres the strengths; ``M = H + R`` with ``log nu``
    last), group by group.

    With ``A`` the strengths' block (block-diagonal over groups), ``u`` the ``log nu``
    column and ``s = w - u' A^-1 u``: ``M^-1``'s strengths block is
    ``A^-1 + y y' / s`` with ``y = A^-1 u``, and ``M^-1 (1, 0)`` is
    ``A^-1 1 + y (y' 1) / s``; both need only solves within each group."""
    n = data.n
    info = _curvature(fit, data)
    groups = _groups(data, together=info.shift > 0)
    limit = FISHER_MAX_GROUP if use_numpy else FISHER_MAX_GROUP_PYTHON
    largest = max(len(g) for g in groups)
    if largest > limit:
        raise ConfigError(
            f"Fisher intervals here need a dense {largest:,} x {largest:,} matrix (one "
            f"connected group of {largest:,} compared items, {8 * largest * largest / 1e6:,.0f}"
            f" MB), above the limit of {limit:,} items a group: use bootstrap intervals "
            "(ci='bootstrap'), whose memory grows with the comparisons"
        )
    pairs_of: dict[int, list[int]] = {}
    if largest > 1:
        for k, a in enumerate(data.first):
            pairs_of.setdefault(a, []).append(k)
    inv_diag = [0.0] * n  # diagonal of A^-1
    ones = [0.0] * n  # A^-1 1
    y = [0.0] * n if info.u is not None else None  # A^-1 u
    solve = _solve_numpy if use_numpy else _solve_python
    for group in groups:
        if len(group) == 1:
            i = group[0]
            a_ii = info.diagonal[i] + info.shift
            if a_ii <= 0:
                raise ConfigError(_SINGULAR)
            inv_diag[i] = ones[i] = 1.0 / a_ii
            if y is not None and info.u is not None:
                y[i] = info.u[i] / a_ii
            continue
        where = {item: k for k, item in enumerate(group)}
        size = len(group)
        entries: list[tuple[int, int, float]] = []
        for item in group:
            for k in pairs_of.get(item, ()):
                entries.append((where[item], where[data.second[k]], info.off[k]))
        rhs = [[1.0] * size]
        if info.u is not None:
            rhs.append([info.u[item] for item in group])
        diagonal = [info.diagonal[item] for item in group]
        block_diag, solutions = solve(size, diagonal, entries, info.shift, rhs)
        for k, item in enumerate(group):
            inv_diag[item] = block_diag[k]
            ones[item] = solutions[0][k]
            if y is not None:
                y[item] = solutions[1][k]
    if y is not None and info.u is not None:
        s = info.w - math.fsum(a * b for a, b in zip(info.u, y, strict=True))
        if s <= 0:
            raise ConfigError(_SINGULAR)
        y_sum = math.fsum(y)
        inv_diag = [d + v * v / s for d, v in zip(inv_diag, y, strict=True)]
        ones = [o + v * y_sum / s for o, v in zip(ones, y, strict=True)]
    total = math.fsum(ones)
    return [inv_diag[i] - 2.0 * ones[i] / n + total / (n * n) for i in range(n)]


_Solved = tuple[list[float], list[list[float]]]


def _solve_python(
    size: int,
    diagonal: list[float],
    entries: list[tuple[int, int, float]],
    shift: float,
    rhs: list[list[float]],
) -> _Solved:
    """The diagonal of ``A^-1`` and ``A^-1 r`` for each ``r`` of ``rhs``, by Cholesky;
    ``A`` has ``diagonal``, the symmetric ``entries`` and ``shift`` added everywhere."""
    matrix = [[shift] * size for _ in range(size)]
    for i, d in enumerate(diagonal):
        matrix[i][i] += d
    for i, j, value in entries:
        matrix[i][j] += value
        matrix[j][i] += value
    low = [[0.0] * size for _ in range(size)]
    for i in range(size):
        row_i = low[i]
        for j in range(i + 1):
            row_j = low[j]
            s = matrix[i][j] - math.fsum(row_i[k] * row_j[k] for k in range(j))
            if i == j:
                if s <= 0:
                    raise ConfigError(_SINGULAR)
                row_i[i] = math.sqrt(s)
            else:
                row_i[j] = s / row_j[j]
    # inverse of the lower factor, column by column: A^-1 = L^-T L^-1
    inv = [[0.0] * size for _ in range(size)]
    for col in range(size):
        for i in range(col, size):
            s = (1.0 if i == col else 0.0) - sum(low[i][k] * inv[k][col] for k in range(col, i))
            inv[i][col] = s / low[i][i]
    diag = [math.fsum(inv[k][i] ** 2 for k in range(i, size)) for i in range(size)]
    solutions = []
    for r in rhs:
        t = [sum(inv[i][k] * r[k] for k in range(i + 1)) for i in range(size)]  # L^-1 r
        solutions.append([sum(inv[k][i] * t[k] for k in range(i, size)) for i in range(size)])
    return diag, solutions


def _solve_numpy(
    size: int,
    diagonal: list[float],
    entries: list[tuple[int, int, float]],
    shift: float,
    rhs: list[list[float]],
) -> _Solved:
    import numpy as np

    m = np.full((size, size), shift, dtype=float)
    m[np.arange(size), np.arange(size)] += np.asarray(diagonal, dtype=float)
    if entries:
        rows = np.asarray([e[0] for e in entries], dtype=np.intp)
        cols = np.asarray([e[1] for e in entries], dtype=np.intp)
        values = np.asarray([e[2] for e in entries], dtype=float)
        np.add.at(m, (rows, cols), values)
        np.add.at(m, (cols, rows), values)
    try:
        inv = np.linalg.inv(m)
    except np.linalg.LinAlgError:
        raise ConfigError(_SINGULAR) from None
    del m
    solved = inv @ np.asarray(rhs, dtype=float).T
    return [float(v) for v in np.diag(inv)], [
        [float(v) for v in solved[:, k]] for k in range(len(rhs))
    ]


def _prior_scale(pi: list[float]) -> list[float]:
    """The scale ``c`` at which ``c * pi`` is the regularised fit: there the strengths sum to
    ``n`` (summing the stationarity conditions gives ``sum pi = n`` exactly)."""
    total = math.fsum(pi)
    return [p * len(pi) / total for p in pi]


def bootstrap_intervals(
    n: int,
    wins: Sequence[tuple[int, int]],
    ties: Sequence[tuple[int, int]] = (),
    level: float = 0.95,
    rounds: int = 200,
    seed: int = 0,
    *,
    alpha: float | None = None,
    backend: Backend = "auto",
    max_iter: int = 10_000,
    tol: float = 1e-8,
) -> list[tuple[float, float]]:
    """Percentile bootstrap intervals of the mean-centred log-strengths: ``rounds`` refits on
    the comparisons (wins and ties together) resampled with replacement, deterministic for
    ``seed``; the interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles
    (linear interpolation). Each refit uses ``alpha`` when it is > 0; otherwise (``None`` or
    0) a resample with no finite maximum-likelihood fit (an item that happened to only win)
    is fitted with :data:`DEFAULT_ALPHA` and the others without a prior. Each starts from
    the full data's fit and stops at ``tol``. Edge cases: no comparison gives ``(0, 0)`` for
    every item.
    """
    _z(level)
    if not isinstance(rounds, int) or rounds < 2:
        raise ConfigError(f"rounds must be an int >= 2, got {rounds!r}")
    _pairs(n, wins, ties)  # validates
    outcomes: list[tuple[int, int, bool]] = [(w, lo, False) for w, lo in wins]
    outcomes += [(a, b, True) for a, b in ties]
    if n == 1 or not outcomes:
        return [(0.0, 0.0)] * n
    use_numpy = _use_numpy(backend)
    full = fit_bradley_terry(
        n, wins, ties, max_iter=max_iter, tol=tol, backend=backend, alpha=alpha
    )
    rng = random.Random(seed)
    draws: list[list[float]] = [[] for _ in range(n)]
    m = len(outcomes)
    for _ in range(rounds):
        sample = [outcomes[rng.randrange(m)] for _ in range(m)]
        w = [(a, b) for a, b, tie in sample if not tie]
        t = [(a, b) for a, b, tie in sample if tie]
        chosen = alpha
        if chosen is None or chosen == 0:
            chosen = 0.0 if _wins_connect_all(n, w) else DEFAULT_ALPHA
        logs, _, _, _ = _run_mm(
            _pairs(n, w, t), chosen, max_iter, tol, full.log_strengths, use_numpy
        )
        for i, x in enumerate(logs):
            draws[i].append(x)
    low, high = 0.5 - level / 2, 0.5 + level / 2
    ordered = [sorted(d) for d in draws]
    return [(linear_quantile(o, low), linear_quantile(o, high)) for o in ordered]
