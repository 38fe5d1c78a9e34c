"""The :class:`Ranking` of many candidates, and how it is fitted from judged pairs.

A judged pair is an :class:`~cross_judge.verdict.EnsembleVerdict` whose ``meta["rank"]``
names its two candidates (``a`` and ``b``, as shown in the item's own names). Its
consensus is one comparison: ``A`` (``a`` beats ``b``), ``B`` (``b`` beats ``a``) or
``TIE`` (a tie, kept: Davidson's extension of Bradley-Terry); anything else (``ABSTAIN``,
an error, a fallback because no vote decided) is no decision, dropped and counted in
``undecided``. Each critic's own valid ``A``/``B``/``TIE`` verdicts are its comparisons for
its own fit (``per_critic``).

Ratings are on the Elo-like scale of :func:`cross_judge.stats.bradley_terry.elo`:
``1000 + 400 / ln 10 x log-strength``, centred so the mean rating is 1000. A rating gap of
400 means odds of 10 to 1 that the higher one wins (ties aside).

This module makes no call; :mod:`cross_judge.ranking._engine` judges the pairs.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._extensions import provider
from ..errors import ConfigError
from ..stats import (
    bootstrap_intervals,
    elo,
    fisher_intervals,
    fit_bradley_terry,
    mle_exists,
)
from ..verdict import EnsembleVerdict

__all__ = [
    "DEFAULT_PRIOR",
    "CIMethod",
    "Ranking",
    "comparisons_of",
    "fit_ranking",
    "recorded_calls",
    "spearman",
]

CIMethod = Literal["fisher", "bootstrap"]
"""How a ranking's intervals are computed: from the Fisher information of the fit (fast,
the default) or a bootstrap over the comparisons (200 resamples)."""

META_KEY = "rank"
"""The ``EnsembleVerdict.meta`` key naming a judged pair's candidates (``a``, ``b``) and
its query (``query``: the index into ``queries``, or ``None`` for one query)."""

_OUTCOMES = {"A": 1.0, "B": 0.0, "TIE": 0.5}

DEFAULT_PRIOR = 0.1
"""The prior weight (pseudo-comparisons per candidate, choix's ``alpha``) a ranking's fit
uses when the maximum-likelihood fit does not exist: early in an adaptive design, or when
a candidate only wins or only loses. Without it such a candidate's rating is infinite (and
the solver crawls towards it); with it, it is finite and shrunk a little towards 1000.
Bootstrap resamples are always fitted with it (a resample often has such a candidate)."""


def _fit(
    n: int, wins: Sequence[tuple[int, int]], ties: Sequence[tuple[int, int]], prior: float
) -> Any:
    """The maximum-likelihood fit when it exists, else the fit with ``prior``."""
    alpha = 0.0 if mle_exists(n, wins, ties) else prior
    return fit_bradley_terry(n, wins, ties, alpha=alpha)


class Ranking(BaseModel):
    """Candidates ranked from pairwise jury verdicts by a Bradley-Terry (Davidson) fit.

    Attributes:
        order: candidate ids, best first (equal ratings keep the input order).
        ratings: id -> rating, ``1000 + 400 / ln 10 x log-strength``, mean 1000.
        ci: id -> (low, high) interval of the rating at ``level``, same scale.
        ci_method: ``"fisher"`` or ``"bootstrap"``.
        level: the intervals' confidence level.
        win_matrix: id -> id -> wins of the row over the column (a tie counts 0.5 to
            each); pairs never compared are absent.
        ties: comparisons that were ties.
        tie: Davidson's tie parameter ``nu`` (0.0 when there were no ties).
        per_critic: critic -> id -> rating from that critic's own verdicts alone (only the
            candidates it judged; a critic with no valid verdict is absent).
        per_critic_spearman: critic -> Spearman correlation of its ratings with the
            panel's over the candidates it rated (``None`` when fewer than 2, or constant).
        calls: requests made to vendors by the run that made this ranking (retries
            included; cache hits and critics sitting out cost none): 0 for a resume that
            found every pair judged.
        calls_total: requests made by every run of this ranking: this one and those it
            resumed. A ranking file written before it was recorded reads it from the
            requests its results record (:func:`recorded_calls`).
        comparisons: pairs with a decision (``A``, ``B`` or ``TIE``).
        undecided: pairs judged without a decision (dropped from the fit).
        results: every judged pair's result, so the ranking can be re-fitted with no calls
            (:meth:`refit`) or resumed (``rank(..., resume=ranking)``).
        converged, iterations: the fit's.
        prior: the prior weight the panel's fit used: 0.0 for the maximum-likelihood fit,
            else :data:`DEFAULT_PRIOR` (or ``rank(prior=...)``) because the MLE does not
            exist (a candidate only won or only lost, or the design is not connected).
        queries: the questions the candidates answered (one with ``rank(query=...)``);
            empty in a ranking that did not record them (fitted from results alone).
        answers: candidate id -> its answer per query (aligned with ``queries``; ``None``
            where it gave none), as ranked, judged or not.
        simulated_critics: the critics whose answers came from the simulated vendor
            (:mod:`cross_judge.testing`), not a language model, as ``cross-judge rank``
            records them from the panel file (kept across ``resume``): every view says so.
    """

    model_config = ConfigDict(frozen=True)

    order: list[str]
    ratings: dict[str, float]
    ci: dict[str, tuple[float, float]]
    ci_method: CIMethod = "fisher"
    level: float = 0.95
    win_matrix: dict[str, dict[str, float]] = Field(default_factory=dict)
    ties: int = 0
    tie: float = 0.0
    per_critic: dict[str, dict[str, float]] = Field(default_factory=dict)
    per_critic_spearman: dict[str, float | None] = Field(default_factory=dict)
    calls: int = 0
    calls_total: int = 0
    comparisons: int = 0
    undecided: int = 0
    results: list[EnsembleVerdict] = Field(default_factory=list, repr=False)
    converged: bool = True
    iterations: int = 0
    prior: float = 0.0
    queries: list[str] = Field(default_factory=list)
    answers: dict[str, list[str | None]] = Field(default_factory=dict)
    simulated_critics: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _calls_total_of_older_files(cls, data: Any) -> Any:
        """A ranking written before ``calls_total`` existed: the calls its results record."""
        if isinstance(data, Mapping) and "calls_total" not in data:
            data = {**data, "calls_total": recorded_calls(data.get("results") or ())}
        return data

    def to_records(self) -> list[dict[str, Any]]:
        """One row per candidate, best first: ``id``, ``rank`` (1 = best), ``rating``,
        ``low``, ``high``, ``wins``, ``losses``, ``ties`` (counts of decided pairs). One
        pass over the results, whatever the number of candidates."""
        counts = {cid: [0, 0, 0] for cid in self.order}  # wins, losses, ties
        for result in self.results:
            pair = _pair_of(result)
            outcome = None if result.fallback else _OUTCOMES.get(result.consensus)
            if pair is None or outcome is None:
                continue
            a, b = counts.get(pair[0]), counts.get(pair[1])
            if outcome == 0.5:
                for row in (a, b):
                    if row is not None:
                        row[2] += 1
                continue
            winner, loser = (a, b) if outcome == 1.0 else (b, a)
            if winner is not None:
                winner[0] += 1
            if loser is not None:
                loser[1] += 1
        rows = []
        for place, cid in enumerate(self.order, start=1):
            low, high = self.ci[cid]
            wins, losses, ties = counts[cid]
            rows.append(
                {
                    "id": cid,
                    "rank": place,
                    "rating": self.ratings[cid],
                    "low": low,
                    "high": high,
                    "wins": wins,
                    "losses": losses,
                    "ties": ties,
                }
            )
        return rows

    def _repr_html_(self) -> str:
        """The leaderboard, critics and win matrix in a notebook
        (:func:`cross_judge.report._leaderboard.leaderboard_html`)."""
        html: str = provider("ranking_html")(self)
        return html

    def to_html(
        self, path: str | os.PathLike[str] | None = None, *, title: str | None = None
    ) -> str:
        """The ranking as one self-contained HTML page (no script, opens offline), written
        to ``path`` when given; the page either way
        (:func:`cross_judge.report._leaderboard.write_leaderboard`)."""
        page: str = provider("ranking_page")(self, path, title=title)
        return page

    def to_pandas(self) -> Any:
        """:meth:`to_records` as a ``pandas.DataFrame`` indexed by ``id``.

        Raises:
            ConfigError: pandas is not installed.
        """
        try:
            pandas = importlib.import_module("pandas")
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "Ranking.to_pandas() needs pandas: pip install 'cross-judge[pandas]'"
            ) from exc
        return pandas.DataFrame.from_records(self.to_records()).set_index("id")

    def refit(
        self,
        *,
        level: float | None = None,
        ci: CIMethod | None = None,
        seed: int = 0,
        prior: float = DEFAULT_PRIOR,
    ) -> Ranking:
        """This ranking fitted again from its stored :attr:`results`, with no calls
        (another ``level`` or interval method); its calls, queries, answers and simulated
        critics are kept."""
        again = fit_ranking(
            list(self.ratings),
            self.results,
            level=self.level if level is None else level,
            ci=self.ci_method if ci is None else ci,
            seed=seed,
            prior=prior,
        )
        return again.model_copy(
            update={
                "calls": self.calls,
                "calls_total": self.calls_total,
                "queries": self.queries,
                "answers": self.answers,
                "simulated_critics": self.simulated_critics,
            }
        )


def recorded_calls(results: Iterable[EnsembleVerdict | Mapping[str, Any]]) -> int:
    """The requests judged pairs record (their verdicts' ``attempts``: retries counted,
    cache hits and sit-outs not), from results or their JSON form."""
    total = 0
    for result in results:
        if isinstance(result, EnsembleVerdict):
            total += sum(v.attempts for v in result.verdicts)
        elif isinstance(result, Mapping):
            for verdict in result.get("verdicts") or ():
                attempts = verdict.get("attempts", 0) if isinstance(verdict, Mapping) else 0
                total += attempts if isinstance(attempts, int) else 0
    return total


def _pair_of(result: EnsembleVerdict) -> tuple[str, str, Any] | None:
    """The candidates ``(a, b, query)`` a judged pair names, ``None`` if it names none."""
    tag = result.meta.get(META_KEY)
    if not isinstance(tag, Mapping) or "a" not in tag or "b" not in tag:
        return None
    return str(tag["a"]), str(tag["b"]), tag.get("query")


def comparisons_of(
    results: Iterable[EnsembleVerdict], index: Mapping[str, int]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """The panel's comparisons in ``results``: ``(wins, ties, undecided)``, wins as
    ``(winner, loser)`` and ties as pairs of indices into ``index`` (candidate id -> index).

    A result naming a candidate not in ``index``, or no pair, is ignored."""
    wins: list[tuple[int, int]] = []
    ties: list[tuple[int, int]] = []
    undecided = 0
    for result in results:
        pair = _pair_of(result)
        if pair is None or pair[0] not in index or pair[1] not in index:
            continue
        a, b = index[pair[0]], index[pair[1]]
        outcome = None if result.fallback else _OUTCOMES.get(result.consensus)
        if outcome is None:
            undecided += 1
        elif outcome == 0.5:
            ties.append((a, b))
        else:
            wins.append((a, b) if outcome == 1.0 else (b, a))
    return wins, ties, undecided


def _critic_comparisons(
    results: Iterable[EnsembleVerdict],
) -> dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]]:
    """Per critic, its own valid verdicts as (winner, loser) and tie id pairs."""
    out: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
    for result in results:
        pair = _pair_of(result)
        if pair is None:
            continue
        a, b, _ = pair
        for v in result.verdicts:
            outcome = _OUTCOMES.get(v.kind) if v.error is None else None
            if outcome is None or v.critic_id is None:
                continue
            wins, ties = out.setdefault(v.critic_id, ([], []))
            if outcome == 0.5:
                ties.append((a, b))
            else:
                wins.append((a, b) if outcome == 1.0 else (b, a))
    return out


def _ratings(log_strengths: Sequence[float]) -> list[float]:
    """Ratings on the documented scale, mean exactly 1000."""
    raw = [elo(x) for x in log_strengths]
    shift = 1000.0 - sum(raw) / len(raw) if raw else 0.0
    return [r + shift for r in raw]


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation of ``x`` and ``y`` (average ranks for ties); ``None``
    when there are fewer than 2 values or either is constant."""
    if len(x) != len(y):
        raise ValueError("spearman needs two sequences of the same length")
    if len(x) < 2:
        return None
    rx, ry = _average_ranks(x), _average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _average_ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _intervals(
    n: int,
    wins: Sequence[tuple[int, int]],
    ties: Sequence[tuple[int, int]],
    fit: Any,
    *,
    level: float,
    ci: CIMethod,
    seed: int,
    prior: float,
) -> list[tuple[float, float]]:
    """Rating intervals (on the rating scale, centred as the ratings are)."""
    if ci == "fisher":
        logs = fisher_intervals(fit, n, wins, ties, level=level)
    else:
        logs = bootstrap_intervals(n, wins, ties, level=level, seed=seed, alpha=prior)
    shift = 1000.0 - sum(elo(x) for x in fit.log_strengths) / n
    return [(elo(low) + shift, elo(high) + shift) for low, high in logs]


def fit_ranking(
    ids: Sequence[str],
    results: Sequence[EnsembleVerdict],
    *,
    level: float = 0.95,
    ci: CIMethod = "fisher",
    seed: int = 0,
    calls: int | None = None,
    prior: float = DEFAULT_PRIOR,
) -> Ranking:
    """The :class:`Ranking` of the candidates ``ids`` from judged pairs ``results``; no
    calls. ``calls`` defaults to the requests the results record (their verdicts'
    ``attempts``), ``calls_total`` is those requests. ``prior``: see
    :data:`DEFAULT_PRIOR`.

    Raises:
        ConfigError: fewer than 2 candidates, ``level`` not in (0, 1), an unknown ``ci``,
            or no decided comparison at all.
    """
    if len(ids) < 2:
        raise ConfigError(f"a ranking needs at least 2 candidates, got {len(ids)}")
    if not (isinstance(level, float | int) and 0.0 < level < 1.0):
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}")
    if ci not in ("fisher", "bootstrap"):
        raise ConfigError(f"ci must be 'fisher' or 'bootstrap', got {ci!r}")
    index = {cid: k for k, cid in enumerate(ids)}
    wins, ties, undecided = comparisons_of(results, index)
    if not wins and not ties:
        raise ConfigError(
            f"none of the {len(results)} judged pairs gave a decision (A, B or TIE), so "
            "nothing can be ranked; check the verdicts' errors in ranking results"
        )
    n = len(ids)
    if not (isinstance(prior, float | int) and prior > 0):
        raise ConfigError(f"prior must be a number > 0, got {prior!r}")
    fit = _fit(n, wins, ties, prior)
    ratings = _ratings(fit.log_strengths)
    bounds = _intervals(n, wins, ties, fit, level=level, ci=ci, seed=seed, prior=prior)
    order = sorted(range(n), key=lambda k: (-ratings[k], k))
    matrix: dict[str, dict[str, float]] = {}
    for w, loser in wins:
        row = matrix.setdefault(ids[w], {})
        row[ids[loser]] = row.get(ids[loser], 0.0) + 1.0
        matrix.setdefault(ids[loser], {}).setdefault(ids[w], 0.0)
    for a, b in ties:
        for x, y in ((a, b), (b, a)):
            row = matrix.setdefault(ids[x], {})
            row[ids[y]] = row.get(ids[y], 0.0) + 0.5
    per_critic: dict[str, dict[str, float]] = {}
    per_rho: dict[str, float | None] = {}
    for critic, (cw, ct) in sorted(_critic_comparisons(results).items()):
        seen = sorted({c for p in (*cw, *ct) for c in p if c in index}, key=index.__getitem__)
        if len(seen) < 2:
            continue
        own = {cid: k for k, cid in enumerate(seen)}
        own_fit = _fit(
            len(seen),
            [(own[a], own[b]) for a, b in cw if a in own and b in own],
            [(own[a], own[b]) for a, b in ct if a in own and b in own],
            prior,
        )
        own_ratings = dict(zip(seen, _ratings(own_fit.log_strengths), strict=True))
        per_critic[critic] = own_ratings
        per_rho[critic] = spearman(
            [own_ratings[c] for c in seen], [ratings[index[c]] for c in seen]
        )
    recorded = recorded_calls(results)
    if calls is None:
        calls = recorded
    return Ranking(
        order=[ids[k] for k in order],
        ratings={ids[k]: ratings[k] for k in range(n)},
        ci={ids[k]: bounds[k] for k in range(n)},
        ci_method=ci,
        level=level,
        win_matrix=matrix,
        ties=len(ties),
        tie=fit.tie,
        per_critic=per_critic,
        per_critic_spearman=per_rho,
        calls=calls,
        calls_total=recorded,
        comparisons=len(wins) + len(ties),
        undecided=undecided,
        results=list(results),
        converged=fit.converged,
        iterations=fit.iterations,
        prior=fit.alpha,
    )
