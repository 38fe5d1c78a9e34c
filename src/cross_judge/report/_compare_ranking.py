"""Comparing two ranking runs: each ranked candidate's rating in the candidate run minus
its rating in the baseline run, with a paired-bootstrap interval and test.

A ranking run is the results of :func:`cross_judge.ranking.rank` (``cross-judge rank``):
pair items, each an :class:`~cross_judge.verdict.EnsembleVerdict` whose
``meta["rank"]`` names its candidates ``a`` and ``b``. The two runs are paired by
``query_id``: only the pair items both judged (of the same two candidates) are fitted,
each run's on its own, the way :func:`cross_judge.ranking.fit_ranking` fits with
``fit="consensus"`` (one consensus per pair item; Davidson's Bradley-Terry with ties kept,
the maximum-likelihood fit when it exists, else the ranking's prior). The interval and the
test come from resampling those paired items (the same items for both runs) and refitting
both.

This module builds :class:`~cross_judge.report.Difference` rows and notes only;
it does not decide a gate, render anything, or compare runs that are not rankings
(the label, accuracy and score comparisons live beside it).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist, stdev

from ..errors import ConfigError
from ..ranking import DEFAULT_PRIOR, META_KEY, comparisons_of
from ..stats import Difference, elo, fit_bradley_terry, holm, linear_quantile, mle_exists
from ..stats.bradley_terry import Backend
from ..verdict import EnsembleVerdict

__all__ = ["is_ranking_run", "rating_differences"]

_POWER = 0.8
"""The power the minimum detectable effect is stated at."""

_NUMPY_FROM_PAIRS = 500
"""Distinct candidate pairs from which the numpy fit beats the standard-library one: below
it numpy's per-round overhead dominates (12 candidates, 66 pairs: about twice as slow)."""

_SHOWN_IDS = 5
"""How many ids a note lists before it says how many more there are."""

_Comparisons = tuple[list[tuple[int, int]], list[tuple[int, int]]]


@dataclass(frozen=True)
class _PairItem:
    """One pair item of a run: its result and the two candidates it names."""

    result: EnsembleVerdict
    a: str
    b: str


@dataclass(frozen=True)
class _Paired:
    """A pair item both runs judged: its candidates (as the baseline shows them) and the
    score of ``a`` in each run (1 a win, 0.5 a tie, 0 a loss, ``None`` no decision)."""

    id: str
    a: str
    b: str
    baseline: float | None
    candidate: float | None


def _named_pair(result: EnsembleVerdict) -> tuple[str, str] | None:
    tag = result.meta.get(META_KEY)
    if not isinstance(tag, Mapping) or "a" not in tag or "b" not in tag:
        return None
    return str(tag["a"]), str(tag["b"])


def is_ranking_run(results: Sequence[EnsembleVerdict]) -> bool:
    """Whether ``results`` are a ranking run's: some result's ``meta["rank"]`` names a pair
    (a mapping with ``a`` and ``b``). Empty results are not."""
    return any(_named_pair(result) is not None for result in results)


def _pair_items(results: Sequence[EnsembleVerdict]) -> tuple[dict[str, _PairItem], int, int]:
    """The run's pair items by ``query_id`` (the first of repeated ids, as a resume keeps
    it), the repeats dropped, and the results naming no pair."""
    items: dict[str, _PairItem] = {}
    repeats = unnamed = 0
    for result in results:
        pair = _named_pair(result)
        if pair is None:
            unnamed += 1
        elif result.query_id in items:
            repeats += 1
        else:
            items[result.query_id] = _PairItem(result, *pair)
    return items, repeats, unnamed


def _score_of_a(item: _PairItem) -> float | None:
    """``a``'s outcome in the item, read as the ranking reads a consensus."""
    wins, ties, _ = comparisons_of([item.result], {item.a: 0, item.b: 1})
    if ties:
        return 0.5
    if wins:
        return 1.0 if wins[0] == (0, 1) else 0.0
    return None


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_IDS])
    more = len(ids) - _SHOWN_IDS
    return f"{shown} and {more} more" if more > 0 else shown


def _comparison(a: int, b: int, score: float | None) -> tuple[int, int, bool] | None:
    """The item as a comparison for the fit: ``(winner, loser, False)`` or
    ``(a, b, True)`` for a tie."""
    if score is None:
        return None
    if score == 0.5:
        return a, b, True
    return (a, b, False) if score == 1.0 else (b, a, False)


def _split(
    outcomes: Sequence[tuple[int, int, bool] | None], picks: Sequence[int] | range
) -> _Comparisons:
    wins: list[tuple[int, int]] = []
    ties: list[tuple[int, int]] = []
    for k in picks:
        outcome = outcomes[k]
        if outcome is None:
            continue
        (ties if outcome[2] else wins).append((outcome[0], outcome[1]))
    return wins, ties


def _ratings(
    n: int,
    wins: Sequence[tuple[int, int]],
    ties: Sequence[tuple[int, int]],
    *,
    resample: bool,
    numpy: bool,
) -> list[float]:
    """Ratings on the ranking's scale, mean exactly 1000. The run's own fit is
    ``fit_ranking``'s (the maximum-likelihood fit when it exists, else the prior; its
    tolerance); a resample's always has the prior, and stops at a tolerance of 1e-6 in
    log-strength (0.0002 rating points), which saves a fifth of the rounds."""
    backend: Backend = "auto" if numpy else "python"
    if resample:
        fit = fit_bradley_terry(n, wins, ties, alpha=DEFAULT_PRIOR, tol=1e-6, backend=backend)
    else:
        alpha = 0.0 if mle_exists(n, wins, ties) else DEFAULT_PRIOR
        fit = fit_bradley_terry(n, wins, ties, alpha=alpha, backend=backend)
    raw = [elo(x) for x in fit.log_strengths]
    shift = 1000.0 - math.fsum(raw) / n
    return [r + shift for r in raw]


def _pairing(
    baseline: Sequence[EnsembleVerdict], candidate: Sequence[EnsembleVerdict]
) -> tuple[list[_Paired], list[str]]:
    """The pair items both runs judged of the same two candidates, and the notes on what
    was left out."""
    notes: list[str] = []
    base, base_repeats, base_unnamed = _pair_items(baseline)
    cand, cand_repeats, cand_unnamed = _pair_items(candidate)
    for run, repeats, unnamed in (
        ("baseline", base_repeats, base_unnamed),
        ("candidate", cand_repeats, cand_unnamed),
    ):
        if repeats:
            notes.append(f"{repeats} repeated pair items of the {run} run ignored (first kept)")
        if unnamed:
            notes.append(f"{unnamed} results of the {run} run name no pair: ignored")
    base_ranked = {c for item in base.values() for c in (item.a, item.b)}
    cand_ranked = {c for item in cand.values() for c in (item.a, item.b)}
    for run, only in (
        ("baseline", sorted(base_ranked - cand_ranked)),
        ("candidate", sorted(cand_ranked - base_ranked)),
    ):
        if only:
            notes.append(f"candidates only the {run} run ranked (not compared): {_listed(only)}")
    for run, only in (
        ("baseline", [i for i in base if i not in cand]),
        ("candidate", [i for i in cand if i not in base]),
    ):
        if only:
            notes.append(
                f"{len(only)} pair items only the {run} run judged (left out): {_listed(only)}"
            )
    paired: list[_Paired] = []
    mismatched: list[str] = []
    for qid, b_item in sorted(base.items()):  # by id: resampled alike however written
        c_item = cand.get(qid)
        if c_item is None:
            continue
        if {c_item.a, c_item.b} != {b_item.a, b_item.b} or b_item.a == b_item.b:
            mismatched.append(qid)
            continue
        c_score = _score_of_a(c_item)
        if c_score is not None and c_item.a != b_item.a:  # shown the other way round
            c_score = 1.0 - c_score
        paired.append(_Paired(qid, b_item.a, b_item.b, _score_of_a(b_item), c_score))
    if mismatched:
        notes.append(
            f"{len(mismatched)} pair items name other candidates in each run, or one "
            f"candidate twice (left out): "
            f"{_listed(mismatched)}"
        )
    for run, undecided in (
        ("baseline", sum(p.baseline is None for p in paired)),
        ("candidate", sum(p.candidate is None for p in paired)),
    ):
        if undecided:
            notes.append(
                f"{undecided} of the {len(paired)} paired pair items had no decision in the "
                f"{run} run (left out of its fit, kept in the resampling)"
            )
    return paired, notes


def rating_differences(
    baseline: Sequence[EnsembleVerdict],
    candidate: Sequence[EnsembleVerdict],
    *,
    confidence: float = 0.95,
    resamples: int = 200,
    seed: int = 0,
) -> tuple[list[Difference], list[str]]:
    """Each ranked candidate's rating in ``candidate`` minus its rating in ``baseline``,
    over the pair items both runs judged, and the notes on what was left out.

    Pairing: by ``query_id``; an item whose two runs name different candidates is left
    out (one shown the other way round is paired, its outcome turned round). Each run is
    fitted on the paired items as ``fit_ranking(..., fit="consensus")`` fits them (one
    consensus per pair item, ties kept; the maximum-likelihood fit, or the ranking's
    prior when it does not exist).
    Ratings are centred at mean 1000 in each fit, so a difference is relative to the
    field: the differences sum to 0, what one candidate loses the others share (one
    made to lose every pair lifts each of the others by about its fall over their
    number, which many pair items show as significant), and a change that moves every
    candidate alike shows as none.

    Interval and test: a paired bootstrap of ``resamples`` rounds (deterministic for
    ``seed``): the paired items are resampled with replacement, the same items for both
    runs, and both are refitted (always with the prior, as a ranking's bootstrap does).
    The interval is the percentile one at ``confidence``; ``p_value`` is two-sided,
    ``2 x min(share of differences <= 0, share >= 0)``, at most 1 and at least
    ``1 / (resamples + 1)`` (a bootstrap cannot show less); a resample that draws no item
    whose outcome changed gives a difference of exactly 0, counted on both sides.
    ``p_adjusted`` is Holm's over the candidates, so it cannot fall below
    ``k / (resamples + 1)`` with ``k`` candidates: when that is not below
    ``1 - confidence`` a note says how many resamples would let a change show (12
    candidates need 240 at 0.95). Runs with the same outcome on every paired item are not
    resampled (every refit would be the same on both sides: differences 0, p-values 1).

    ``mde`` is ``(z(1 - alpha / 2) + z(0.8)) x`` the bootstrap standard error of the
    difference, with ``alpha = 1 - confidence`` (2.8 SE at 0.95): the difference this
    design would detect with power 0.8, a normal approximation.

    Each row: ``name`` the candidate, ``n`` the paired items naming it, ``baseline`` and
    ``candidate`` its ratings, ``better`` / ``worse`` the paired items naming it decided
    in both runs whose outcome moved in its favour / against it (a loss to a tie or a
    win, or back). Rows are ordered by the candidate run's rating, best first (equal
    ratings: first named first).

    Edge cases: no paired item naming two candidates gives no rows (a note says so). A
    run with no decision on any paired item gives rows with ``None`` ratings, difference,
    interval and p-values. Identical runs give differences of 0 and p-values of 1.

    Raises:
        ConfigError: ``confidence`` not in (0, 1), or ``resamples`` not an int >= 2.
    """
    if not (isinstance(confidence, float | int) and 0.0 < confidence < 1.0):
        raise ConfigError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not isinstance(resamples, int) or isinstance(resamples, bool) or resamples < 2:
        raise ConfigError(f"resamples must be an int >= 2, got {resamples!r}")
    paired, notes = _pairing(baseline, candidate)
    ids: dict[str, int] = {}
    for p in paired:
        for cid in (p.a, p.b):
            ids.setdefault(cid, len(ids))
    if len(ids) < 2:
        notes.append("no pair item both runs judged: no rating to compare")
        return [], notes
    n, m = len(ids), len(paired)
    base_out = [_comparison(ids[p.a], ids[p.b], p.baseline) for p in paired]
    cand_out = [_comparison(ids[p.a], ids[p.b], p.candidate) for p in paired]
    numpy = len({frozenset((p.a, p.b)) for p in paired}) >= _NUMPY_FROM_PAIRS
    base_all, cand_all = _split(base_out, range(m)), _split(cand_out, range(m))
    decided = all(wins or ties for wins, ties in (base_all, cand_all))
    if not decided:
        notes.append("a run has no decision on the paired pair items: no ratings")
    base_r = _ratings(n, *base_all, resample=False, numpy=numpy) if decided else None
    cand_r = _ratings(n, *cand_all, resample=False, numpy=numpy) if decided else None
    alpha = 1.0 - confidence
    if decided and n / (resamples + 1) >= alpha:
        notes.append(
            f"with {n} candidates and {resamples} resamples Holm's p cannot fall below "
            f"{n}/{resamples + 1} = {n / (resamples + 1):.3f}, so no change can be "
            f"significant at {alpha:.3g}: use at least {math.ceil(n / alpha)} resamples"
        )

    draws: list[list[float]] = [[] for _ in range(n)]
    if decided and base_out == cand_out:
        # The same outcomes on every item: every resample's two fits are the same fit.
        draws = [[0.0] * resamples for _ in range(n)]
    elif decided:
        rng = random.Random(seed)
        for _ in range(resamples):
            picks = [rng.randrange(m) for _ in range(m)]
            b = _ratings(n, *_split(base_out, picks), resample=True, numpy=numpy)
            c = _ratings(n, *_split(cand_out, picks), resample=True, numpy=numpy)
            for k in range(n):
                draws[k].append(c[k] - b[k])

    involved = [0] * n
    better = [0] * n
    worse = [0] * n
    for p in paired:
        ia, ib = ids[p.a], ids[p.b]
        involved[ia] += 1
        involved[ib] += 1
        if p.baseline is None or p.candidate is None or p.baseline == p.candidate:
            continue
        gainer, loser = (ia, ib) if p.candidate > p.baseline else (ib, ia)
        better[gainer] += 1
        worse[loser] += 1

    low_q, high_q = (1.0 - confidence) / 2, (1.0 + confidence) / 2
    spread = NormalDist().inv_cdf(high_q) + NormalDist().inv_cdf(_POWER)
    p_values: list[float | None] = []
    intervals: list[tuple[float, float] | None] = []
    mdes: list[float | None] = []
    for k in range(n):
        if not draws[k]:
            p_values.append(None)
            intervals.append(None)
            mdes.append(None)
            continue
        ordered = sorted(draws[k])
        at_most = sum(d <= 0 for d in ordered) / resamples
        at_least = sum(d >= 0 for d in ordered) / resamples
        p_values.append(max(min(1.0, 2 * min(at_most, at_least)), 1 / (resamples + 1)))
        intervals.append((linear_quantile(ordered, low_q), linear_quantile(ordered, high_q)))
        mdes.append(spread * stdev(ordered))
    tested = [(k, p) for k, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * n
    for (k, _), value in zip(tested, holm([p for _, p in tested]), strict=True):
        adjusted[k] = value

    names = list(ids)
    rank_by = cand_r if cand_r is not None else [0.0] * n
    rows = []
    for k in sorted(range(n), key=lambda k: (-rank_by[k], k)):
        b_rating = base_r[k] if base_r is not None else None
        c_rating = cand_r[k] if cand_r is not None else None
        rows.append(
            Difference(
                name=names[k],
                n=involved[k],
                baseline=b_rating,
                candidate=c_rating,
                difference=(
                    c_rating - b_rating if c_rating is not None and b_rating is not None else None
                ),
                interval=intervals[k],
                p_value=p_values[k],
                p_adjusted=adjusted[k],
                test="paired bootstrap of refitted ratings",
                interval_method=f"paired bootstrap ({resamples})",
                better=better[k],
                worse=worse[k],
                mde=mdes[k],
            )
        )
    return rows, notes
