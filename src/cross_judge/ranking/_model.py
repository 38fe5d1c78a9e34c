"""The :class:`Ranking` of many candidates, and how it is fitted from judged pairs.

A judged pair is an :class:`~cross_judge.verdict.EnsembleVerdict` whose ``meta["rank"]``
names its two candidates (``a`` and ``b``, as shown in the item's own names). Two fits:

- ``fit="votes"`` (the default up to :data:`VOTE_FIT_LIMIT` candidates): every critic's
  answer in every order it was shown is a vote (a critic with ``samples`` gives each
  sample), fitted by :func:`~cross_judge.stats._bt_votes.fit_votes_bradley_terry` with
  each critic's advantage for the candidate shown first as a parameter
  (``Ranking.first_shown``) and ties kept. A failed or abstaining answer is no vote.
- ``fit="consensus"``: the pair's consensus is one comparison: ``A`` (``a`` beats ``b``),
  ``B`` (``b`` beats ``a``) or ``TIE`` (a tie, kept: Davidson's extension of
  Bradley-Terry); anything else (``ABSTAIN``, an error, a fallback because no vote
  decided) is no decision, dropped and counted in ``undecided``.

Each critic's own ratings (``per_critic``) come from its own votes (``"votes"``) or its own
valid ``A``/``B``/``TIE`` verdicts (``"consensus"``).

Ratings are on the Elo-like scale of :func:`cross_judge.stats.bradley_terry.elo`:
``1000 + 400 / ln 10 x log-strength``, centred so the mean rating is 1000. A rating gap of
400 means odds of 10 to 1 that the higher one wins (ties aside).

This module makes no call; :mod:`cross_judge.ranking._engine` judges the pairs.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._extensions import provider
from ..errors import ConfigError
from ..stats import (
    PairVote,
    VoteFit,
    bootstrap_intervals,
    elo,
    fisher_group_limit,
    fisher_intervals,
    fit_bradley_terry,
    fit_votes_bradley_terry,
    mle_exists,
    vote_bootstrap_intervals,
    vote_fisher_intervals,
)
from ..verdict import EnsembleVerdict, Verdict

__all__ = [
    "DEFAULT_PRIOR",
    "VOTE_FIT_LIMIT",
    "CIMethod",
    "FitMethod",
    "Ranking",
    "check_vote_weights",
    "comparisons_of",
    "fit_ranking",
    "recorded_calls",
    "spearman",
    "votes_of",
]

FitMethod = Literal["auto", "votes", "consensus"]
"""What a ranking fits: every critic's vote in every order (``"votes"``), one consensus per
judged pair (``"consensus"``), or ``"auto"``: votes up to :data:`VOTE_FIT_LIMIT`
candidates, the consensus above."""

VOTE_FIT_LIMIT = 300
"""The most candidates ``fit="auto"`` fits vote by vote: the vote fit solves a dense
system over every candidate each round, so above this it fits each pair's consensus (whose
solver is sparse). ``fit="votes"`` goes up to
:func:`~cross_judge.stats.bradley_terry.fisher_group_limit`."""

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


def resolve_fit(fit: FitMethod, n: int) -> Literal["votes", "consensus"]:
    """The fit ``fit`` means for ``n`` candidates (``"auto"``: votes up to
    :data:`VOTE_FIT_LIMIT`).

    Raises:
        ConfigError: an unknown ``fit``, or ``"votes"`` above what the vote fit solves.
    """
    if fit == "auto":
        return "votes" if n <= VOTE_FIT_LIMIT else "consensus"
    if fit == "consensus":
        return "consensus"
    if fit == "votes":
        limit = fisher_group_limit()
        if n > limit:
            raise ConfigError(
                f"fit='votes' solves a dense system over every candidate, up to {limit:,}; "
                f"{n:,} is more: use fit='consensus' (or 'auto')"
            )
        return "votes"
    raise ConfigError(f"fit must be 'auto', 'votes' or 'consensus', got {fit!r}")


def check_vote_weights(
    weights: Mapping[str, float] | None, method: Literal["votes", "consensus"]
) -> None:
    """Raise unless ``weights`` (critic -> weight of its votes) can be used by the fit
    ``method``: only the vote fit weights votes, and a weight is a number >= 0.

    Raises:
        ConfigError: saying which.
    """
    if weights is None:
        return
    if method != "votes":
        raise ConfigError(
            "weights apply to votes: fit='votes' (or 'auto' up to "
            f"{VOTE_FIT_LIMIT} candidates) to weight each critic's votes"
        )
    bad = {k: w for k, w in weights.items() if not (isinstance(w, float | int) and w >= 0)}
    if bad:
        raise ConfigError(f"weights must be numbers >= 0, got {bad}")


def _fit_votes(n: int, votes: Sequence[PairVote], critics: int, prior: float) -> VoteFit:
    """The vote fit, by maximum likelihood when it exists, else with ``prior``."""
    if not votes:
        raise ConfigError(
            "no critic gave a vote (A, B or TIE) on the judged pairs, so nothing can be "
            "ranked; check the verdicts' errors in ranking results"
        )
    return fit_votes_bradley_terry(n, votes, critics=critics, prior=prior)


class Ranking(BaseModel):
    """Candidates ranked from pairwise jury verdicts by a Bradley-Terry (Davidson) fit.

    Attributes:
        order: candidate ids, best first (equal ratings keep the input order; ratings
            within :data:`TIED_WITHIN` of each other are made equal).
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
        fit: ``"votes"`` (every critic's vote in each order it was shown) or
            ``"consensus"`` (one outcome per pair); a file written before the vote fit
            existed reads ``"consensus"``.
        votes: the votes fitted (``fit="votes"``; 0 otherwise).
        first_shown: with ``fit="votes"``, critic -> its advantage for the candidate shown
            first, as log-odds (0: none; 0.69: the first shown's odds of winning are twice
            what its strength says). Critics with no vote in a known order are absent.
        weights: critic -> the weight its votes had in the fit (``fit="votes"``; empty:
            every vote counts 1).
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
    fit: Literal["votes", "consensus"] = "consensus"
    votes: int = 0
    first_shown: dict[str, float] = Field(default_factory=dict)
    weights: dict[str, float] = Field(default_factory=dict)

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
        fit: FitMethod | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> Ranking:
        """This ranking fitted again from its stored :attr:`results`, with no calls
        (another ``level``, interval method, ``fit`` or vote ``weights``; each defaults to
        this ranking's); its calls, queries, answers and simulated critics are kept."""
        again = fit_ranking(
            list(self.ratings),
            self.results,
            level=self.level if level is None else level,
            ci=self.ci_method if ci is None else ci,
            seed=seed,
            prior=prior,
            fit=self.fit if fit is None else fit,
            weights=(self.weights or None) if weights is None else weights,
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


def votes_of(
    results: Iterable[EnsembleVerdict],
    index: Mapping[str, int],
    critics: Mapping[str, int],
    weights: Mapping[str, float] | None = None,
) -> list[PairVote]:
    """Every vote in ``results`` on candidates in ``index``, by critics in ``critics``
    (critic name -> index): each valid ``A``/``B``/``TIE`` answer in each order it was
    shown, with ``first`` the candidate shown first (an answer of unknown order takes the
    pair as named, ``shown=False``). A vote's ``cluster`` is its result's position, its
    weight the critic's in ``weights`` (1.0 when absent)."""
    out: list[PairVote] = []
    for position, result in enumerate(results):
        pair = _pair_of(result)
        if pair is None or pair[0] not in index or pair[1] not in index:
            continue
        a, b = index[pair[0]], index[pair[1]]
        for verdict in result.verdicts:
            critic = critics.get(verdict.critic_id or "")
            if critic is None:
                continue
            weight = 1.0 if weights is None else float(weights.get(verdict.critic_id or "", 1.0))
            for kind, shown in _answers_of(verdict):
                outcome = _OUTCOMES.get(kind)
                if outcome is None:
                    continue
                if shown == "ba":
                    out.append(PairVote(b, a, 1.0 - outcome, critic, True, position, weight))
                else:
                    out.append(PairVote(a, b, outcome, critic, shown == "ab", position, weight))
    return out


def _answers_of(verdict: Verdict) -> list[tuple[str, str | None]]:
    """A verdict's valid answers as (label in the item's names, order shown): each sampled
    or per-order answer when it kept them, else the verdict itself."""
    if verdict.answers:
        return [(a.kind, a.order) for a in verdict.answers if a.error is None]
    if verdict.error is not None:
        return []
    return [(verdict.kind, verdict.order if verdict.order in ("ab", "ba") else None)]


def _critic_names(results: Iterable[EnsembleVerdict]) -> list[str]:
    """The critics that voted in ``results``, in the order first met."""
    seen: dict[str, None] = {}
    for result in results:
        for verdict in result.verdicts:
            if verdict.critic_id is not None:
                seen.setdefault(verdict.critic_id, None)
    return list(seen)


def _on_rating_scale(
    log_strengths: Sequence[float], logs: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Log-strength intervals as rating intervals, shifted as :func:`_ratings` shifts the
    ratings of ``log_strengths`` (so that they centre where the ratings do)."""
    shift = 1000.0 - sum(elo(x) for x in log_strengths) / len(log_strengths)
    return [(elo(low) + shift, elo(high) + shift) for low, high in logs]


def _vote_intervals(
    n: int,
    votes: Sequence[PairVote],
    fit: VoteFit,
    *,
    critics: int,
    level: float,
    ci: CIMethod,
    seed: int,
    prior: float,
) -> list[tuple[float, float]]:
    """The vote fit's rating intervals (rating scale, centred as the ratings are)."""
    if ci == "fisher":
        logs = vote_fisher_intervals(fit, n, votes, critics=critics, level=level)
    else:
        logs = vote_bootstrap_intervals(
            n, votes, critics=critics, level=level, seed=seed, alpha=prior
        )
    return _on_rating_scale(fit.log_strengths, logs)


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


TIED_WITHIN = 1e-6
"""Ratings closer than this (rating points) are one rating: candidates the data cannot tell
apart (the same record against the same opponents) come out of the iterative fit a few
float steps apart, which would order them by rounding noise."""


def _ratings(log_strengths: Sequence[float]) -> list[float]:
    """Ratings on the documented scale, mean 1000; a run of ratings each within
    :data:`TIED_WITHIN` of the next is replaced by its mean, so that tied candidates tie
    exactly (and keep the input order in ``Ranking.order``)."""
    raw = [elo(x) for x in log_strengths]
    shift = 1000.0 - sum(raw) / len(raw) if raw else 0.0
    ratings = [r + shift for r in raw]
    for run in _sorted_runs(ratings, lambda low, high: high - low < TIED_WITHIN):
        if len(run) > 1:
            mean = math.fsum(ratings[k] for k in run) / len(run)
            for k in run:
                ratings[k] = mean
    return ratings


def _sorted_runs(
    values: Sequence[float], joined: Callable[[float, float], bool]
) -> list[list[int]]:
    """The indexes of ``values`` in ascending order of value, cut into runs: each index
    joins the run before it when ``joined(previous value, its value)``."""
    runs: list[list[int]] = []
    for i in sorted(range(len(values)), key=values.__getitem__):
        if runs and joined(values[runs[-1][-1]], values[i]):
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


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
    ranks = [0.0] * len(values)
    start = 0
    for run in _sorted_runs(values, lambda low, high: low == high):
        for k in run:
            ranks[k] = start + (len(run) - 1) / 2 + 1
        start += len(run)
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
    return _on_rating_scale(fit.log_strengths, logs)


def fit_ranking(
    ids: Sequence[str],
    results: Sequence[EnsembleVerdict],
    *,
    level: float = 0.95,
    ci: CIMethod = "fisher",
    seed: int = 0,
    calls: int | None = None,
    prior: float = DEFAULT_PRIOR,
    fit: FitMethod = "auto",
    weights: Mapping[str, float] | None = None,
) -> Ranking:
    """The :class:`Ranking` of the candidates ``ids`` from judged pairs ``results``; no
    calls. ``calls`` defaults to the requests the results record (their verdicts'
    ``attempts``), ``calls_total`` is those requests. ``prior``: see
    :data:`DEFAULT_PRIOR`. ``fit``: see :data:`FitMethod`; ``weights`` (critic -> weight
    of its votes, e.g. a reliability) needs the vote fit.

    Raises:
        ConfigError: fewer than 2 candidates, ``level`` not in (0, 1), an unknown ``ci``
            or ``fit``, ``weights`` with the consensus fit or with a negative weight,
            ``fit="votes"`` over more candidates than the vote fit solves, or no decided
            comparison at all.
    """
    if len(ids) < 2:
        raise ConfigError(f"a ranking needs at least 2 candidates, got {len(ids)}")
    if not (isinstance(level, float | int) and 0.0 < level < 1.0):
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}")
    if ci not in ("fisher", "bootstrap"):
        raise ConfigError(f"ci must be 'fisher' or 'bootstrap', got {ci!r}")
    # By id: the fit, its resamples and the critics' order never read the order a results
    # file was written in (the order the calls finished).
    judged = list(results)  # kept as given
    results = sorted(judged, key=lambda r: r.query_id)
    index = {cid: k for k, cid in enumerate(ids)}
    wins, ties, undecided = comparisons_of(results, index)
    n = len(ids)
    method = resolve_fit(fit, n)
    if method == "consensus" and not wins and not ties:
        raise ConfigError(
            f"none of the {len(results)} judged pairs gave a decision (A, B or TIE), so "
            "nothing can be ranked; check the verdicts' errors in ranking results"
        )
    if not (isinstance(prior, float | int) and prior > 0):
        raise ConfigError(f"prior must be a number > 0, got {prior!r}")
    check_vote_weights(weights, method)
    critic_names = _critic_names(results)
    votes: list[PairVote] = []
    first_shown: dict[str, float] = {}
    if method == "votes":
        critic_index = {name: k for k, name in enumerate(critic_names)}
        votes = votes_of(results, index, critic_index, weights)
        vote_fit = _fit_votes(n, votes, len(critic_names), prior)
        log_strengths, tie = vote_fit.log_strengths, vote_fit.tie
        converged, iterations, used_prior = (
            vote_fit.converged,
            vote_fit.iterations,
            vote_fit.alpha,
        )
        bounds = _vote_intervals(
            n,
            votes,
            vote_fit,
            critics=len(critic_names),
            level=level,
            ci=ci,
            seed=seed,
            prior=prior,
        )
        shown_by = {v.critic for v in votes if v.shown and v.weight > 0}
        first_shown = {
            name: vote_fit.home[k] for k, name in enumerate(critic_names) if k in shown_by
        }
    else:
        outcome_fit = _fit(n, wins, ties, prior)
        log_strengths, tie = outcome_fit.log_strengths, outcome_fit.tie
        converged, iterations, used_prior = (
            outcome_fit.converged,
            outcome_fit.iterations,
            outcome_fit.alpha,
        )
        bounds = _intervals(n, wins, ties, outcome_fit, level=level, ci=ci, seed=seed, prior=prior)
    ratings = _ratings(log_strengths)
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
    own_votes: dict[str, list[PairVote]] = {}
    for vote in votes:
        own_votes.setdefault(critic_names[vote.critic], []).append(vote)
    for critic, (cw, ct) in sorted(_critic_comparisons(results).items()):
        seen = sorted({c for p in (*cw, *ct) for c in p if c in index}, key=index.__getitem__)
        if len(seen) < 2:
            continue
        own = {cid: k for k, cid in enumerate(seen)}
        if method == "votes":
            mine = own_votes.get(critic, [])
            local = {index[cid]: k for cid, k in own.items()}
            own_logs = _fit_votes(
                len(seen),
                [
                    v._replace(first=local[v.first], second=local[v.second], critic=0, weight=1.0)
                    for v in mine
                    if v.first in local and v.second in local
                ],
                1,
                prior,
            ).log_strengths
        else:
            own_logs = _fit(
                len(seen),
                [(own[a], own[b]) for a, b in cw if a in own and b in own],
                [(own[a], own[b]) for a, b in ct if a in own and b in own],
                prior,
            ).log_strengths
        own_ratings = dict(zip(seen, _ratings(own_logs), strict=True))
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
        tie=tie,
        per_critic=per_critic,
        per_critic_spearman=per_rho,
        calls=calls,
        calls_total=recorded,
        comparisons=len(wins) + len(ties),
        undecided=undecided,
        results=judged,
        converged=converged,
        iterations=iterations,
        prior=used_prior,
        fit=method,
        votes=len(votes),
        first_shown=first_shown,
        weights=dict(weights or {}),
    )
