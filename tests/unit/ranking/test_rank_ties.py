"""Candidates the data cannot tell apart tie exactly: the iterative fit leaves them a few
float steps apart, which would otherwise order them by rounding noise."""

from __future__ import annotations

import math
import random

import pytest

from cross_judge import EnsembleVerdict, Verdict
from cross_judge.ranking import TIED_WITHIN, fit_ranking


def judged(a: str, b: str, kind: str, number: int) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id=f"{number:04d}",
        verdicts=[Verdict(kind=kind, critic_id="j0")],
        consensus=kind,
        voting="majority",
        meta={"rank": {"a": a, "b": b, "query": 0}},
    )


def twins(seed: int) -> tuple[list[str], list[EnsembleVerdict]]:
    """Ten others judged among themselves, and ``x`` and ``y`` with the same outcome
    against each of them (three times each) and a tie between them, in a shuffled order."""
    rng = random.Random(seed)
    others = [f"o{k}" for k in range(10)]
    strength = {o: rng.gauss(0.0, 1.0) for o in others}
    rows = [
        (a, b, "A" if rng.random() < 0.5 + 0.2 * (strength[a] - strength[b]) else "B")
        for i, a in enumerate(others)
        for b in others[i + 1 :]
    ]
    for other in others:
        for _ in range(3):
            kind = rng.choice(["A", "B", "TIE"])
            rows += [("x", other, kind), ("y", other, kind)]
    rows.append(("x", "y", "TIE"))
    rng.shuffle(rows)
    return ["x", "y", *others], [judged(a, b, kind, n) for n, (a, b, kind) in enumerate(rows)]


@pytest.mark.parametrize("fit", ["consensus", "votes"])
@pytest.mark.parametrize("seed", range(10))
def test_candidates_with_the_same_record_tie_exactly_and_keep_the_input_order(
    fit: str, seed: int
) -> None:
    ids, results = twins(seed)
    ranking = fit_ranking(ids, results, fit=fit)  # type: ignore[arg-type]
    assert ranking.ratings["x"] == ranking.ratings["y"]
    assert ranking.order.index("x") == ranking.order.index("y") - 1
    swapped = fit_ranking(["y", "x", *ids[2:]], results, fit=fit)  # type: ignore[arg-type]
    assert swapped.order.index("y") == swapped.order.index("x") - 1


def test_only_ratings_within_the_tie_width_are_made_one() -> None:
    from cross_judge.ranking._model import _ratings

    step = TIED_WITHIN / 400 / math.log10(math.e) / 10  # a tenth of the width, in log-strength
    ratings = _ratings([0.0, step, 0.5, 0.5 + 100 * step, 1.0])
    assert ratings[0] == ratings[1]
    assert ratings[3] - ratings[2] >= TIED_WITHIN
    assert len(set(ratings)) == 4
    assert math.fsum(ratings) / 5 == pytest.approx(1000.0, abs=1e-9)
