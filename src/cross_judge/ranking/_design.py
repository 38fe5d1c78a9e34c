"""Which pairs a ranking judges next: the designs behind ``rank(pairs=...)``.

- :func:`initial_design`: the adaptive design's start, a random cycle through every
  candidate plus ``n // 2`` chords (connected, so every rating is finite).
- :func:`posterior_pairs` (adaptive, up to :data:`POSTERIOR_LIMIT` candidates): the current
  fit read as independent normals on the log-strengths (its ratings and intervals); the
  candidates judged least choose first, each the partner that maximises the information
  of one comparison at the current ratings, ``p (1 - p)``, times the two candidates'
  variance: close pairs of unsure candidates, each candidate once a round (a Swiss
  tournament steered by the fit). Every candidate keeps being located, which a rank
  correlation needs, and few calls go to pairs the fit already separates.
- :func:`overlap_pairs` (adaptive, above it): neighbours in the current order whose
  intervals overlap, most overlap first; it looks only at the pairs it judges and their
  neighbours, so its cost grows with ``n``, never ``n^2``.
- :func:`random_pairs`: uniformly random pair items, the baseline an adaptive design is
  measured against (``pairs="random"``).

Pure functions of a :class:`~cross_judge.ranking._model.Ranking` and counts; no calls.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from statistics import NormalDist
from typing import Protocol

from ..stats.bradley_terry import ELO_SCALE
from ._model import Ranking

__all__ = [
    "POSTERIOR_LIMIT",
    "Candidates",
    "initial_design",
    "next_pairs",
    "overlap_pairs",
    "posterior_pairs",
    "random_pairs",
]

POSTERIOR_LIMIT = 100
"""Up to this many candidates the adaptive design scores every partner of every candidate
(:func:`posterior_pairs`, ``n^2`` a round); above it, it follows neighbours in the order
(:func:`overlap_pairs`), whose cost does not grow with ``n^2``."""

_ENUMERATED_PAIRS = 20_000
"""Up to this many pairs (200 candidates) the adaptive design draws its chords from the
list of every pair; above it, by rejection, so the design costs ``n``, not ``n^2``."""

_NEAREST_SCAN = 256
"""How far (in places of the current order, each way) the scheduler looks for the
nearest-rated candidate a used-up neighbouring pair passes to."""


class Candidates(Protocol):
    """The candidates of a ranking: ids in order and id -> index."""

    @property
    def ids(self) -> list[str]: ...

    @property
    def index(self) -> dict[str, int]: ...


def initial_design(n: int, seed: int) -> list[tuple[int, int]]:
    """A sparse connected design: a random cycle through every candidate plus ``n // 2``
    random chords, seeded. Pairs as ``(i, j)`` with ``i < j``, in a fixed order. Up to
    :data:`_ENUMERATED_PAIRS` pairs the chords are a shuffle of every other pair, above
    it drawn by rejection: ``O(n)`` either way."""
    rng = random.Random(seed)
    tour = list(range(n))
    rng.shuffle(tour)
    edges: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()

    def add(i: int, j: int) -> None:
        edge = (min(i, j), max(i, j))
        if i != j and edge not in seen:
            seen.add(edge)
            edges.append(edge)

    for k in range(n if n > 2 else 1):
        add(tour[k], tour[(k + 1) % n])
    chords = n // 2
    if n * (n - 1) // 2 <= _ENUMERATED_PAIRS:
        others = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in seen]
        rng.shuffle(others)
        for edge in others[:chords]:
            add(*edge)
        return edges
    # n >= 201: at most 1.5 n of the n (n - 1) / 2 pairs are taken, so a draw is new
    # with probability above 98%.
    target = len(edges) + chords
    while len(edges) < target:
        add(rng.randrange(n), rng.randrange(n))
    return edges


def overlap_pairs(
    ranking: Ranking,
    pool: Candidates,
    used: Mapping[tuple[int, int], int],
    available: Mapping[tuple[int, int], int],
    size: int,
) -> list[tuple[int, int]]:
    """The neighbour rule (above :data:`POSTERIOR_LIMIT` candidates): up to ``size``
    pairs to judge next: for neighbours in the current order whose
    intervals overlap (most overlap first), the pair itself if it has items left, else the
    pair of either with the nearest-rated candidate that has (looked for within
    :data:`_NEAREST_SCAN` places each way; as near on either side: the lower index). Empty when no
    neighbouring intervals overlap (the order is settled at the ranking's level) or
    nothing is left. ``available`` is asked only for the pairs looked at, so its cost
    follows ``size`` and the pairs judged, not ``n^2``."""
    order = [pool.index[c] for c in ranking.order]
    rating = [0.0] * len(pool.ids)
    for c, r in ranking.ratings.items():
        rating[pool.index[c]] = r
    overlaps = []
    for k in range(len(order) - 1):
        u, v = order[k], order[k + 1]
        overlap = _overlap(ranking.ci[pool.ids[u]], ranking.ci[pool.ids[v]])
        if overlap > 0:
            overlaps.append((-overlap, k, u, v))
    overlaps.sort()
    chosen: list[tuple[int, int]] = []
    taken: set[tuple[int, int]] = set()

    def left(i: int, j: int) -> bool:
        edge = (min(i, j), max(i, j))
        return edge not in taken and used.get(edge, 0) < available.get(edge, 0)

    def nearest(k: int, u: int, v: int) -> tuple[int, int] | None:
        """The nearest-rated other candidate with a pair left with ``u`` or ``v`` (at
        places ``k`` and ``k + 1``): the order is sorted by rating, so walking outwards
        from both places meets candidates ever farther from their mean."""
        mid = (rating[u] + rating[v]) / 2
        up, down = k - 1, k + 2
        stop_up, stop_down = max(-1, k - 1 - _NEAREST_SCAN), min(len(order), k + 2 + _NEAREST_SCAN)
        while up > stop_up or down < stop_down:
            if down >= stop_down or (
                up > stop_up
                and (abs(rating[order[up]] - mid), order[up])
                < (abs(rating[order[down]] - mid), order[down])
            ):
                w, up = order[up], up - 1
            else:
                w, down = order[down], down + 1
            for x in sorted((u, v)):
                if left(x, w):
                    return (min(x, w), max(x, w))
        return None

    for _, k, u, v in overlaps:
        if len(chosen) >= size:
            break
        pick = (min(u, v), max(u, v)) if left(u, v) else nearest(k, u, v)
        if pick is not None:
            chosen.append(pick)
            taken.add(pick)
    return chosen


def _normal_reading(ranking: Ranking, pool: Candidates) -> tuple[list[float], list[float]]:
    """The fit read as independent normals on the log-strengths: means from the ratings,
    variances from the intervals' half-widths."""
    z = NormalDist().inv_cdf(0.5 + ranking.level / 2)
    means, variances = [], []
    for c in pool.ids:
        low, high = ranking.ci[c]
        means.append((ranking.ratings[c] - 1000.0) / ELO_SCALE)
        variances.append((max(high - low, 0.0) / (2.0 * z * ELO_SCALE)) ** 2)
    return means, variances


def posterior_pairs(
    ranking: Ranking,
    pool: Candidates,
    used: Mapping[tuple[int, int], int],
    available: Mapping[tuple[int, int], int],
    size: int,
) -> list[tuple[int, int]]:
    """Up to ``size`` pairs to judge next, at most one per candidate: candidates with the
    fewest items judged choose first (the least certain first among equals), each the
    free partner with items left that maximises ``p (1 - p) x (v_i + v_j)``: the
    information one Bradley-Terry comparison gives at the current ratings (``p`` the
    chance ``i`` wins) times how unsure the two are (their variances read off the
    intervals). Equal scores go to the lower index. Empty when no pair has items left."""
    means, variances = _normal_reading(ranking, pool)
    n = len(pool.ids)
    judged = [0] * n
    for (i, j), count in used.items():
        judged[i] += count
        judged[j] += count
    turn = sorted(range(n), key=lambda i: (judged[i], -variances[i], i))
    busy: set[int] = set()
    chosen: list[tuple[int, int]] = []
    for i in turn:
        if len(chosen) >= size:
            break
        if i in busy:
            continue
        best: tuple[float, int] | None = None
        for j in range(n):
            edge = (min(i, j), max(i, j))
            if j == i or j in busy or used.get(edge, 0) >= available.get(edge, 0):
                continue
            p = 1.0 / (1.0 + math.exp(means[j] - means[i]))
            score = p * (1.0 - p) * (variances[i] + variances[j])
            if best is None or score > best[0]:
                best = (score, j)
        if best is not None:
            chosen.append((min(i, best[1]), max(i, best[1])))
            busy.update((i, best[1]))
    return chosen


def next_pairs(
    ranking: Ranking,
    pool: Candidates,
    used: Mapping[tuple[int, int], int],
    available: Mapping[tuple[int, int], int],
    size: int,
) -> list[tuple[int, int]]:
    """The adaptive design's next round: :func:`posterior_pairs` up to
    :data:`POSTERIOR_LIMIT` candidates, :func:`overlap_pairs` above. Empty when no
    neighbours' intervals overlap at the ranking's level (the order is settled) or nothing
    is left."""
    if not _unsettled(ranking):
        return []
    if len(pool.ids) <= POSTERIOR_LIMIT:
        return posterior_pairs(ranking, pool, used, available, size)
    return overlap_pairs(ranking, pool, used, available, size)


def _unsettled(ranking: Ranking) -> bool:
    """Whether two neighbours in the order have overlapping intervals."""
    return any(
        _overlap(ranking.ci[u], ranking.ci[v]) > 0
        for u, v in zip(ranking.order, ranking.order[1:], strict=False)
    )


def _overlap(one: tuple[float, float], other: tuple[float, float]) -> float:
    """How far two intervals overlap (0 or less: they do not)."""
    return min(one[1], other[1]) - max(one[0], other[0])


def random_pairs(
    n: int, shared: Callable[[int, int], int], queries: int, budget: int, seed: int
) -> list[tuple[int, int]]:
    """``budget`` pair items drawn uniformly at random without replacement, as the pair of
    each (a pair drawn twice judges two of its queries): every item of every pair is as
    likely, whatever the design. ``shared(i, j)`` is pair ``(i, j)``'s number of items,
    ``queries`` the most any pair has. Seeded. Up to :data:`_ENUMERATED_PAIRS` pairs, a
    sample of the list of every item; above it, by rejection (each draw a pair and a slot
    below ``queries``, kept when the pair has that many items and the slot is new), at most
    ``50 x budget`` draws: fewer items come back only when nearly none is left."""
    rng = random.Random(f"random-pairs|{seed}")
    if n * (n - 1) // 2 <= _ENUMERATED_PAIRS:
        every = [(i, j) for i in range(n) for j in range(i + 1, n) for _ in range(shared(i, j))]
        return rng.sample(every, min(budget, len(every)))
    taken: set[tuple[int, int, int]] = set()
    out: list[tuple[int, int]] = []
    for _ in range(50 * budget):
        if len(out) >= budget:
            break
        i, j = rng.randrange(n), rng.randrange(n)
        slot = rng.randrange(max(queries, 1))
        if i == j:
            continue
        edge = (min(i, j), max(i, j))
        if (*edge, slot) in taken or slot >= shared(*edge):
            continue
        taken.add((*edge, slot))
        out.append(edge)
    return out
