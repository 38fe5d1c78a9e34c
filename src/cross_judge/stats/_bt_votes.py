"""Bradley-Terry (Davidson) fitted vote by vote, with the position a candidate was shown in.

Where :func:`~cross_judge.stats.bradley_terry.fit_bradley_terry` fits one outcome per
comparison, this fits every vote: each critic's answer in each order it was shown, as
:class:`PairVote`. A vote of critic ``c`` on ``i`` shown first and ``j`` second::

    a = theta_c * pi_i,   b = pi_j,   t = nu * sqrt(a * b),   D = a + b + t
    P(i wins) = a / D,    P(j wins) = b / D,    P(tie) = t / D

``theta_c`` is critic ``c``'s advantage for the candidate shown first (Davidson and Beaver's
home advantage; ``log theta_c`` is the log-odds it adds, 0 for none), ``nu`` Davidson's tie
parameter (absent, i.e. 0, when no vote is a tie). A vote whose order is not known
(``shown=False``) takes ``theta = 1``. Votes may carry weights (a critic's reliability):
the log-likelihood is the weighted sum, its information the weighted one.

Fitted by Fisher scoring (Newton's method on the expected information) with a backtracking
line search on ``log pi``, ``log theta`` and ``log nu``: a handful of rounds, each a dense
solve over ``candidates + critics + 1`` parameters, so it is bounded by
:func:`~cross_judge.stats.bradley_terry.fisher_group_limit` candidates. Votes are first
pooled by (first, second, critic, shown), so the cost of a round follows the distinct pairs
judged, not the votes.

Regularisation is that of the outcome fit: when the maximum-likelihood strengths do not exist
(:func:`~cross_judge.stats.bradley_terry.mle_exists` on the votes' winners and losers),
``alpha`` adds the log of ``Gamma(alpha + 1, rate alpha)`` priors on every ``pi`` (and on
``nu``). A critic whose first-shown candidate always won (or never did) has an infinite
``theta``; its ``theta`` then takes the same prior (weight ``alpha``, or
:data:`HOME_PRIOR` when the strengths need none). When the orders shown confound a lean with
the strengths (each pair shown one way only, along a chain: the first shown always the one
above), the information is singular: then every critic's ``theta`` takes the prior, and
when that is not enough and ``alpha`` was left unset, the strengths too.

Intervals: :func:`vote_fisher_intervals` from the inverse information (the centred
strengths' variances), :func:`vote_bootstrap_intervals` resampling whole clusters (a pair
item's votes together, since they share the item).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, NamedTuple

from ..errors import ConfigError
from ._quantile import linear_quantile
from .bradley_terry import fisher_group_limit, mle_exists, numpy_available

__all__ = [
    "HOME_PRIOR",
    "PairVote",
    "VoteFit",
    "fit_votes_bradley_terry",
    "vote_bootstrap_intervals",
    "vote_fisher_intervals",
]

HOME_PRIOR = 0.1
"""The prior weight on a critic's ``theta`` when its first-shown candidate always won (or
never did), so that its advantage is finite, and the strengths' fit needs no prior."""

_MAX_ROUNDS = 100
_HALVINGS = 40


class PairVote(NamedTuple):
    """One vote: candidate ``first`` was shown before ``second`` (indices ``0 .. n-1``) to
    critic ``critic`` (an index ``0 .. critics-1``); ``outcome`` is ``1.0`` when ``first``
    won, ``0.0`` when ``second`` did, ``0.5`` a tie. ``shown=False``: the order is unknown
    (no position advantage applies). ``cluster`` groups votes that share an item (the
    bootstrap resamples clusters whole); ``weight`` scales the vote's log-likelihood."""

    first: int
    second: int
    outcome: float
    critic: int = 0
    shown: bool = True
    cluster: int = 0
    weight: float = 1.0


@dataclass(frozen=True)
class VoteFit:
    """A vote-level Bradley-Terry (Davidson) fit with per-critic position advantages.

    - ``log_strengths``: ``log pi_i``, centred to mean 0.
    - ``home``: per critic, ``log theta``: the log-odds added to the candidate shown first
      (0.0 for a critic with no vote in a known order).
    - ``tie``: Davidson's ``nu`` (0.0 when no vote was a tie).
    - ``alpha``: the strengths' prior weight (0.0: maximum likelihood); ``home_prior``: the
      critics whose ``theta`` took a prior (their first shown always or never won, or the
      orders shown confound their lean with the strengths).
    - ``iterations``, ``converged``: the Fisher-scoring rounds, and whether the last step
      moved no parameter by more than ``tol``.
    - ``votes``: the votes fitted (zero weight included).
    """

    log_strengths: list[float]
    home: list[float]
    tie: float
    alpha: float
    home_prior: tuple[int, ...]
    iterations: int
    converged: bool
    votes: int
    log_likelihood: float


class _Cells:
    """Votes pooled by (first, second, critic, shown): weighted counts of each outcome."""

    def __init__(self, n: int, critics: int, votes: Sequence[PairVote]) -> None:
        self.n, self.critics = n, critics
        pooled: dict[tuple[int, int, int, bool], list[float]] = {}
        for v in votes:
            if not (0 <= v.first < n and 0 <= v.second < n) or v.first == v.second:
                raise ConfigError(
                    f"a vote compares candidates {v.first} and {v.second}: each must be a "
                    f"different index in 0..{n - 1}"
                )
            if not 0 <= v.critic < critics:
                raise ConfigError(f"a vote's critic {v.critic} is not in 0..{critics - 1}")
            if v.outcome not in (0.0, 0.5, 1.0):
                raise ConfigError(f"a vote's outcome must be 1.0, 0.0 or 0.5, got {v.outcome!r}")
            if not (v.weight >= 0 and math.isfinite(v.weight)):
                raise ConfigError(f"a vote's weight must be finite and >= 0, got {v.weight!r}")
            if v.weight == 0:
                continue  # no weight, no information: nor a parameter of its critic
            key = (v.first, v.second, v.critic if v.shown else -1, v.shown)
            counts = pooled.setdefault(key, [0.0, 0.0, 0.0])
            counts[0 if v.outcome == 1.0 else 1 if v.outcome == 0.0 else 2] += v.weight
        self.keys = list(pooled)
        self.counts = [pooled[k] for k in self.keys]
        self.ties = math.fsum(c[2] for c in self.counts)


def _degenerate_critics(cells: _Cells) -> tuple[int, ...]:
    """Critics whose first-shown candidate always won or never won (weighted points)."""
    points = [0.0] * cells.critics
    total = [0.0] * cells.critics
    for (_, _, critic, shown), (w1, w2, wt) in zip(cells.keys, cells.counts, strict=True):
        if shown:
            points[critic] += w1 + 0.5 * wt
            total[critic] += w1 + w2 + wt
    return tuple(c for c in range(cells.critics) if total[c] > 0 and points[c] in (0.0, total[c]))


class _Layout:
    """Where each parameter sits in the vector: strengths ``0..n-1``, then a ``log theta``
    per critic with votes in a known order, then ``log nu`` when there are ties."""

    def __init__(self, cells: _Cells) -> None:
        n = self.n = cells.n
        seen = sorted({critic for (_, _, critic, shown) in cells.keys if shown})
        self.home = {critic: n + k for k, critic in enumerate(seen)}
        self.nu = n + len(seen) if cells.ties > 0 else None
        self.size = n + len(seen) + (1 if self.nu is not None else 0)


def _cell_terms(
    x: Sequence[float], key: tuple[int, int, int, bool], layout: _Layout
) -> tuple[list[int], float, float, float]:
    """The parameter indices a cell touches (first, second[, home][, nu]) and its
    probabilities (first wins, second wins, tie)."""
    i, j, critic, shown = key
    where = [i, j]
    log_a = x[i]
    if shown:
        h = layout.home[critic]
        where.append(h)
        log_a += x[h]
    log_b = x[j]
    top = max(log_a, log_b)
    a, b = math.exp(log_a - top), math.exp(log_b - top)
    t = 0.0
    if layout.nu is not None:
        where.append(layout.nu)
        t = math.exp(x[layout.nu] + 0.5 * (log_a + log_b) - top)
    d = a + b + t
    return where, a / d, b / d, t / d


def _objective(
    x: Sequence[float],
    cells: _Cells,
    layout: _Layout,
    alpha: float,
    home_alpha: Mapping[int, float],
) -> float:
    """The penalised log-likelihood at ``x``."""
    total = []
    for key, (w1, w2, wt) in zip(cells.keys, cells.counts, strict=True):
        _, p1, p2, pt = _cell_terms(x, key, layout)
        for w, p in ((w1, p1), (w2, p2), (wt, pt)):
            if w > 0:
                total.append(w * math.log(p) if p > 0 else -math.inf)
    total.extend(_prior_terms(x, layout, alpha, home_alpha))
    return math.fsum(total)


def _prior_terms(
    x: Sequence[float], layout: _Layout, alpha: float, home_alpha: Mapping[int, float]
) -> list[float]:
    """``alpha * (log p - p)`` for each parameter ``p`` carrying a prior."""
    out = []
    for k, weight in _priors(layout, alpha, home_alpha):
        out.append(weight * (x[k] - math.exp(x[k])))
    return out


def _priors(
    layout: _Layout, alpha: float, home_alpha: Mapping[int, float]
) -> list[tuple[int, float]]:
    """(parameter index, prior weight) for every parameter with a prior."""
    out: list[tuple[int, float]] = []
    if alpha > 0:
        out.extend((i, alpha) for i in range(layout.n))
        if layout.nu is not None:
            out.append((layout.nu, alpha))
    out.extend((layout.home[c], w) for c, w in home_alpha.items() if c in layout.home)
    return out


def _score_and_information(
    x: Sequence[float],
    cells: _Cells,
    layout: _Layout,
    alpha: float,
    home_alpha: Mapping[int, float],
) -> tuple[list[float], list[list[float]]]:
    """The gradient of the penalised log-likelihood and its expected information (the
    negative expected Hessian, plus the priors' curvature)."""
    size = layout.size
    grad = [0.0] * size
    info = [[0.0] * size for _ in range(size)]
    for key, (w1, w2, wt) in zip(cells.keys, cells.counts, strict=True):
        where, p1, p2, pt = _cell_terms(x, key, layout)
        total = w1 + w2 + wt
        if total <= 0:
            continue
        shown = key[3]
        # d log p_outcome / d parameter, per outcome, over ``where``'s coordinates.
        first = [1.0, 0.0] + ([1.0] if shown else []) + ([0.0] if layout.nu is not None else [])
        second = [0.0, 1.0] + ([0.0] if shown else []) + ([0.0] if layout.nu is not None else [])
        tie = [0.5, 0.5] + ([0.5] if shown else []) + ([1.0] if layout.nu is not None else [])
        mean = [p1 * f + p2 * s + pt * t for f, s, t in zip(first, second, tie, strict=True)]
        for k, idx in enumerate(where):
            grad[idx] += w1 * first[k] + w2 * second[k] + wt * tie[k] - total * mean[k]
        for p, d in ((p1, first), (p2, second), (pt, tie)):
            if p <= 0:
                continue
            centred = [dk - mk for dk, mk in zip(d, mean, strict=True)]
            for r, ir in enumerate(where):
                row = info[ir]
                cr = total * p * centred[r]
                for c, ic in enumerate(where):
                    row[ic] += cr * centred[c]
    for k, weight in _priors(layout, alpha, home_alpha):
        value = math.exp(x[k])
        grad[k] += weight * (1.0 - value)
        info[k][k] += weight * value
    return grad, info


class _PythonModel:
    """:func:`_objective` and :func:`_score_and_information` bound to one fit's data."""

    def __init__(
        self, cells: _Cells, layout: _Layout, alpha: float, home_alpha: Mapping[int, float]
    ) -> None:
        self.args = (cells, layout, alpha, home_alpha)

    def objective(self, values: Sequence[float]) -> float:
        return _objective(values, *self.args)

    def score(self, values: Sequence[float]) -> tuple[Any, Any]:
        return _score_and_information(values, *self.args)


def _model(
    cells: _Cells, layout: _Layout, alpha: float, home_alpha: Mapping[int, float]
) -> _PythonModel | _NumpyModel:
    """The vectorised model when numpy is importable, else the standard-library one."""
    if numpy_available():
        return _NumpyModel(cells, layout, alpha, home_alpha)
    return _PythonModel(cells, layout, alpha, home_alpha)


class _NumpyModel:
    """The log-likelihood, its score and information over the pooled cells as numpy arrays:
    the same sums as :func:`_objective` and :func:`_score_and_information`, vectorised (a
    round over 10,000 cells in milliseconds instead of a second)."""

    def __init__(
        self, cells: _Cells, layout: _Layout, alpha: float, home_alpha: Mapping[int, float]
    ) -> None:
        import numpy as np

        self.np = np
        keys = cells.keys
        self.first = np.array([k[0] for k in keys], dtype=np.intp)
        self.second = np.array([k[1] for k in keys], dtype=np.intp)
        self.shown = np.array([1.0 if k[3] else 0.0 for k in keys])
        self.home = np.array(
            [layout.home[k[2]] if k[3] else 0 for k in keys], dtype=np.intp
        )  # index 0 when not shown: its derivative is 0 there
        counts = np.array(cells.counts, dtype=float).reshape(len(keys), 3)
        self.w1, self.w2, self.wt = counts[:, 0], counts[:, 1], counts[:, 2]
        self.total = counts.sum(axis=1)
        self.nu = layout.nu
        self.size = layout.size
        priors = _priors(layout, alpha, home_alpha)
        self.prior_index = np.array([k for k, _ in priors], dtype=np.intp)
        self.prior_weight = np.array([w for _, w in priors], dtype=float)

    def _probabilities(self, x: Any) -> tuple[Any, Any, Any]:
        np = self.np
        log_a = x[self.first] + self.shown * x[self.home]
        log_b = x[self.second]
        top = np.maximum(log_a, log_b)
        a, b = np.exp(log_a - top), np.exp(log_b - top)
        t = np.exp(x[self.nu] + 0.5 * (log_a + log_b) - top) if self.nu is not None else 0.0 * a
        d = a + b + t
        return a / d, b / d, t / d

    def objective(self, values: Sequence[float]) -> float:
        np = self.np
        x = np.asarray(values, dtype=float)
        p1, p2, pt = self._probabilities(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = [
                np.where(w > 0, w * np.log(p), 0.0)
                for w, p in ((self.w1, p1), (self.w2, p2), (self.wt, pt))
            ]
        value = float(sum(t.sum() for t in terms))
        if len(self.prior_index):
            xs = x[self.prior_index]
            value += float((self.prior_weight * (xs - np.exp(xs))).sum())
        return value if math.isfinite(value) else -math.inf

    def score(self, values: Sequence[float]) -> tuple[Any, Any]:
        np = self.np
        x = np.asarray(values, dtype=float)
        p1, p2, pt = self._probabilities(x)
        s = self.shown
        has_nu = self.nu is not None
        # Per outcome, d log p / d (first, second, home, nu) before centring.
        columns = [self.first, self.second, self.home] + (
            [np.full_like(self.first, self.nu)] if has_nu else []
        )
        d_first = [1.0 + 0 * s, 0 * s, s] + ([0 * s] if has_nu else [])
        d_second = [0 * s, 1.0 + 0 * s, 0 * s] + ([0 * s] if has_nu else [])
        d_tie = [0.5 + 0 * s, 0.5 + 0 * s, 0.5 * s] + ([1.0 + 0 * s] if has_nu else [])
        mean = [p1 * f + p2 * g + pt * t for f, g, t in zip(d_first, d_second, d_tie, strict=True)]
        grad = np.zeros(self.size)
        for k, col in enumerate(columns):
            contribution = (
                self.w1 * d_first[k] + self.w2 * d_second[k] + self.wt * d_tie[k]
            ) - self.total * mean[k]
            np.add.at(grad, col, contribution)
        info = np.zeros((self.size, self.size))
        for p, d in ((p1, d_first), (p2, d_second), (pt, d_tie)):
            centred = [dk - mk for dk, mk in zip(d, mean, strict=True)]
            weight = self.total * p
            for r, row in enumerate(columns):
                for c, col in enumerate(columns):
                    np.add.at(info, (row, col), weight * centred[r] * centred[c])
        if len(self.prior_index):
            value = np.exp(x[self.prior_index])
            np.add.at(grad, self.prior_index, self.prior_weight * (1.0 - value))
            np.add.at(info, (self.prior_index, self.prior_index), self.prior_weight * value)
        return grad, info


def _solve(matrix: Any, rhs: list[list[float]]) -> list[list[float]]:
    """``matrix^-1 r`` for each ``r`` of ``rhs`` (``matrix`` symmetric positive definite).

    Raises:
        ConfigError: the matrix is singular (the data do not pin the parameters down).
    """
    if numpy_available():
        import numpy as np

        try:
            solved = np.linalg.solve(np.asarray(matrix, dtype=float), np.asarray(rhs).T)
        except np.linalg.LinAlgError:
            raise ConfigError(_SINGULAR) from None
        return [[float(v) for v in solved[:, k]] for k in range(len(rhs))]
    size = len(matrix)
    low = [[0.0] * size for _ in range(size)]
    for i in range(size):
        for j in range(i + 1):
            s = matrix[i][j] - math.fsum(low[i][k] * low[j][k] for k in range(j))
            if i == j:
                if s <= 1e-300:
                    raise ConfigError(_SINGULAR)
                low[i][i] = math.sqrt(s)
            else:
                low[i][j] = s / low[j][j]
    out = []
    for r in rhs:
        y = [0.0] * size
        for i in range(size):
            y[i] = (r[i] - math.fsum(low[i][k] * y[k] for k in range(i))) / low[i][i]
        z = [0.0] * size
        for i in reversed(range(size)):
            z[i] = (y[i] - math.fsum(low[k][i] * z[k] for k in range(i + 1, size))) / low[i][i]
        out.append(z)
    return out


_SINGULAR = (
    "the votes do not determine the ratings (a singular information matrix); fit with a "
    "prior (alpha > 0) or judge pairs that connect the candidates"
)


def _regularised(information: Any, strengths: int, alpha: float) -> Any:
    """Without a prior the strengths are fixed only up to a common shift: add ``1 1' / n``
    over their block, which pins the shift (mean 0) and leaves the rest unchanged. A
    numpy matrix stays one, a list of rows a list."""
    if alpha > 0:
        return information
    if not isinstance(information, list):
        out_array = information.copy()
        out_array[:strengths, :strengths] += 1.0 / strengths
        return out_array
    out = [row[:] for row in information]
    for r in range(strengths):
        for c in range(strengths):
            out[r][c] += 1.0 / strengths
    return out


def _check_size(n: int, critics: int) -> None:
    limit = fisher_group_limit()
    if n > limit:
        raise ConfigError(
            f"the vote-level fit solves a dense system over every candidate, and {n:,} is "
            f"more than {limit:,}; fit the consensus of each pair instead (fit='consensus')"
        )
    if critics < 1:
        raise ConfigError(f"critics must be >= 1, got {critics}")


def _newton(
    cells: _Cells,
    layout: _Layout,
    alpha: float,
    home_alpha: Mapping[int, float],
    tol: float,
) -> tuple[list[float], float, int, bool]:
    """Fisher scoring with a backtracking line search from the neutral start (every
    strength equal, no lean, ``nu`` from the share of ties): the parameters, the penalised
    log-likelihood, the rounds run and whether the last step moved less than ``tol``.

    Raises:
        ConfigError: the information matrix is singular.
    """
    strengths = layout.n
    x = [0.0] * layout.size
    if layout.nu is not None:
        share = cells.ties / math.fsum(sum(c) for c in cells.counts)
        x[layout.nu] = math.log(max(2.0 * share / max(1.0 - share, 1e-6), 1e-6))
    model = _model(cells, layout, alpha, home_alpha)
    value = model.objective(x)
    converged, rounds = False, 0
    for rounds in range(1, _MAX_ROUNDS + 1):  # noqa: B007 - the count is reported
        grad, info = model.score(x)
        (step,) = _solve(_regularised(info, strengths, alpha), [list(grad)])
        if alpha == 0:  # keep the strengths centred: the likelihood ignores their mean
            mean = math.fsum(step[:strengths]) / strengths
            step[:strengths] = [s - mean for s in step[:strengths]]
        scale, moved = 1.0, False
        for _ in range(_HALVINGS):
            trial = [a + scale * b for a, b in zip(x, step, strict=True)]
            trial_value = model.objective(trial)
            if trial_value >= value - 1e-12 * max(1.0, abs(value)):
                x, value, moved = trial, trial_value, True
                break
            scale /= 2
        largest = max(abs(s) * scale for s in step)
        if not moved or largest < tol:
            converged = largest < tol or not moved
            break
    return x, value, rounds, converged


def fit_votes_bradley_terry(
    n: int,
    votes: Sequence[PairVote],
    *,
    critics: int = 1,
    alpha: float | None = None,
    prior: float = 0.1,
    tol: float = 1e-9,
) -> VoteFit:
    """Fit strengths, per-critic position advantages and the tie parameter to ``votes``.

    ``alpha``: the strengths' prior weight; ``None`` (the default) uses 0.0 when the
    maximum-likelihood estimate exists and ``prior`` when it does not. Candidates never compared
    sit at the prior's mode (0 before centring) when there is a prior.

    Raises:
        ConfigError: no votes, a vote naming a candidate or critic out of range, an
            outcome not in (1.0, 0.0, 0.5), a negative weight, more candidates than
            :func:`~cross_judge.stats.bradley_terry.fisher_group_limit`, or a design the
            data do not pin down with ``alpha=0``.
    """
    _check_size(n, critics)
    cells = _Cells(n, critics, votes)
    if not cells.keys or math.fsum(sum(c) for c in cells.counts) <= 0:
        raise ConfigError("no vote to fit: give at least one vote with a weight above 0")
    automatic = alpha is None
    if alpha is None:
        alpha = 0.0 if _mle_exists(cells) else prior
    if alpha < 0 or not math.isfinite(alpha):
        raise ConfigError(f"alpha must be finite and >= 0, got {alpha!r}")
    layout = _Layout(cells)
    strengths = layout.n
    chosen_alpha = alpha
    degenerate = _degenerate_critics(cells)
    attempts = [(alpha, degenerate), (alpha, tuple(sorted(layout.home)))]
    if alpha == 0 and automatic:
        attempts.append((prior, tuple(sorted(layout.home))))
    for k, (chosen_alpha, degenerate) in enumerate(attempts):
        # A singular information: the orders shown confound a critic's lean with the
        # strengths (every first shown above every second in one chain, say). Then every
        # lean takes the prior, and, failing that, the strengths too (alpha unset only).
        home_alpha = dict.fromkeys(degenerate, chosen_alpha if chosen_alpha > 0 else HOME_PRIOR)
        try:
            x, value, rounds, converged = _newton(cells, layout, chosen_alpha, home_alpha, tol)
            break
        except ConfigError:  # the only one _newton raises: a singular information
            if k == len(attempts) - 1:
                raise
    alpha = chosen_alpha
    mean = math.fsum(x[:strengths]) / strengths
    return VoteFit(
        log_strengths=[v - mean for v in x[:strengths]],
        home=[x[layout.home[c]] if c in layout.home else 0.0 for c in range(critics)],
        tie=math.exp(x[layout.nu]) if layout.nu is not None else 0.0,
        alpha=alpha,
        home_prior=degenerate,
        iterations=rounds,
        converged=converged,
        votes=len(votes),
        log_likelihood=value,
    )


def _mle_exists(cells: _Cells) -> bool:
    wins: list[tuple[int, int]] = []
    ties: list[tuple[int, int]] = []
    for (i, j, _, _), (w1, w2, wt) in zip(cells.keys, cells.counts, strict=True):
        if w1 > 0:
            wins.append((i, j))
        if w2 > 0:
            wins.append((j, i))
        if wt > 0:
            ties.append((i, j))
    return mle_exists(cells.n, wins, ties)


def _parameters(fit: VoteFit, layout: _Layout) -> list[float]:
    x = [0.0] * layout.size
    x[: len(fit.log_strengths)] = fit.log_strengths
    for critic, k in layout.home.items():
        x[k] = fit.home[critic]
    if layout.nu is not None:
        x[layout.nu] = math.log(fit.tie) if fit.tie > 0 else -30.0
    return x


def vote_fisher_intervals(
    fit: VoteFit,
    n: int,
    votes: Sequence[PairVote],
    *,
    critics: int = 1,
    level: float = 0.95,
) -> list[tuple[float, float]]:
    """Wald intervals at ``level`` for the centred log-strengths of ``fit``, from the
    inverse of the expected information at the fit (position advantages and the tie
    parameter estimated alongside, so their uncertainty widens the strengths').

    Raises:
        ConfigError: ``level`` not in (0, 1), or the information is singular.
    """
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    _check_size(n, critics)
    cells = _Cells(n, critics, votes)
    layout = _Layout(cells)
    strengths = layout.n
    home_alpha = dict.fromkeys(fit.home_prior, fit.alpha if fit.alpha > 0 else HOME_PRIOR)
    x = _parameters(fit, layout)
    _, info = _model(cells, layout, fit.alpha, home_alpha).score(x)
    matrix = _regularised(info, strengths, fit.alpha)
    # Columns of M^-1 for the strengths, then the variance of each centred strength:
    # e_i' P M^-1 P e_i with P = I - 1 1'/n over the strengths' block.
    columns = _solve(
        matrix, [[1.0 if r == i else 0.0 for r in range(layout.size)] for i in range(strengths)]
    )
    z = NormalDist().inv_cdf(0.5 + level / 2)
    row_means = [math.fsum(col[:strengths]) / strengths for col in columns]
    grand = math.fsum(row_means) / strengths
    out = []
    for i in range(strengths):
        variance = columns[i][i] - 2.0 * row_means[i] + grand
        half = z * math.sqrt(max(variance, 0.0))
        out.append((fit.log_strengths[i] - half, fit.log_strengths[i] + half))
    return out


def vote_bootstrap_intervals(
    n: int,
    votes: Sequence[PairVote],
    *,
    critics: int = 1,
    level: float = 0.95,
    rounds: int = 200,
    seed: int = 0,
    alpha: float = 0.1,
) -> list[tuple[float, float]]:
    """Percentile intervals at ``level`` for the centred log-strengths, from ``rounds``
    resamples of whole clusters (each :attr:`PairVote.cluster`'s votes together), each
    fitted with the prior ``alpha`` (a resample often leaves a candidate unbeaten).
    Seeded: the same votes and seed give the same intervals.

    Raises:
        ConfigError: ``level`` not in (0, 1) or ``rounds`` below 20.
    """
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    if rounds < 20:
        raise ConfigError(f"rounds must be >= 20, got {rounds}")
    clusters: dict[int, list[PairVote]] = {}
    for v in votes:
        clusters.setdefault(v.cluster, []).append(v)
    keys = list(clusters)
    rng = random.Random(seed)
    draws: list[list[float]] = [[] for _ in range(n)]
    for _ in range(rounds):
        sample = [v for _ in keys for v in clusters[keys[rng.randrange(len(keys))]]]
        again = fit_votes_bradley_terry(n, sample, critics=critics, alpha=alpha)
        for i, value in enumerate(again.log_strengths):
            draws[i].append(value)
    out = []
    for i in range(n):
        ordered = sorted(draws[i])
        out.append(
            (linear_quantile(ordered, (1 - level) / 2), linear_quantile(ordered, (1 + level) / 2))
        )
    return out
