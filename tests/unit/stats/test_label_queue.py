"""cross_judge.stats.label_queue: exactly ``n`` items, each with its exact inclusion
probability recorded."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from cross_judge import BatchResult, ConfigError, Ensemble, EnsembleVerdict, Verdict
from cross_judge.stats.label_queue import (
    LabelQueue,
    QueueStrategy,
    inclusion_probabilities,
    label_queue,
)

PANEL = Ensemble(critics=[])


def item(query_id: str, *kinds: str | None) -> EnsembleVerdict:
    votes = [
        Verdict(kind="ERROR", critic_id=f"c{i}", error="timeout")
        if kind is None
        else Verdict(kind=kind, critic_id=f"c{i}", confidence=0.8)
        for i, kind in enumerate(kinds)
    ]
    return PANEL.aggregate_verdicts(votes, query_id=query_id)


def mixed_batch() -> BatchResult:
    """30 items: 14 unanimous PASS, 6 unanimous FAIL, 6 split 2-1, 4 with no valid vote."""
    results = [item(f"p{i}", "PASS", "PASS", "PASS") for i in range(14)]
    results += [item(f"f{i}", "FAIL", "FAIL", "FAIL") for i in range(6)]
    results += [item(f"s{i}", "PASS", "FAIL", "FAIL") for i in range(6)]
    results += [item(f"n{i}", None, None, None) for i in range(4)]
    return BatchResult(verdicts=results, critics=["c0", "c1", "c2"], voting="majority")


STRATEGIES: tuple[QueueStrategy, ...] = ("uniform", "stratified", "uncertain", "disputed")


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("n", [0, 1, 7, 29, 30])
def test_draws_exactly_n_distinct_items(strategy: QueueStrategy, n: int) -> None:
    queue = label_queue(mixed_batch(), n, strategy=strategy, seed=3)
    assert len(queue) == n
    assert len(set(queue.items)) == n
    assert set(queue.probabilities) == set(queue.items)
    assert queue.population == 30


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_empirical_inclusion_frequencies_match_the_recorded_probabilities(
    strategy: QueueStrategy,
) -> None:
    batch, n, draws = mixed_batch(), 8, 3000
    counts: Counter[str] = Counter()
    recorded: dict[str, set[float]] = {}
    for seed in range(draws):
        queue = label_queue(batch, n, strategy=strategy, seed=seed)
        counts.update(queue.items)
        for key, p in queue.probabilities.items():
            recorded.setdefault(key, set()).add(p)
    # An item's probability does not depend on the draw.
    assert all(len(values) == 1 for values in recorded.values())
    probability = {key: next(iter(values)) for key, values in recorded.items()}
    assert math.fsum(probability.values()) == pytest.approx(n)
    assert len(probability) == 30  # every item was drawn at least once
    for key, p in probability.items():
        # Binomial: 4.5 standard errors (over 30 items x 4 strategies, a false alarm
        # has probability under 1e-3); the seeds are fixed, so the test is deterministic.
        tolerance = 4.5 * math.sqrt(p * (1 - p) / draws) + 1e-9
        assert abs(counts[key] / draws - p) <= tolerance, key


@pytest.mark.parametrize("strategy", ["uncertain", "disputed"])
@pytest.mark.parametrize("floor", [0.1, 0.3, 1.0])
def test_weighted_strategies_give_every_item_a_probability_above_zero(
    strategy: QueueStrategy, floor: float
) -> None:
    batch = mixed_batch()
    weights = [floor + 1.0] * 30  # an upper bound: the floor keeps each weight >= floor
    assert min(inclusion_probabilities(weights, 5)) > 0
    seen: dict[str, float] = {}
    for seed in range(400):
        seen |= label_queue(batch, 5, strategy=strategy, seed=seed, floor=floor).probabilities
    assert min(seen.values()) > 0
    sure = [seen[k] for k in seen if k.startswith("p")]
    unsure = [seen[k] for k in seen if k.startswith(("s", "n"))]
    if sure and unsure:
        assert max(sure) <= min(unsure)  # the panel's doubt raises the probability


def test_uncertain_probabilities_are_proportional_to_floor_plus_doubt() -> None:
    queue = label_queue(mixed_batch(), 30, strategy="uncertain", seed=0)
    assert set(queue.probabilities.values()) == {1.0}  # n = N: every item, certainly
    probabilities = {}
    for seed in range(200):
        probabilities |= label_queue(
            mixed_batch(), 3, strategy="uncertain", seed=seed
        ).probabilities
    p_sure, p_split, p_none = probabilities["p0"], probabilities["s0"], probabilities["n0"]
    assert p_split / p_sure == pytest.approx((0.3 + 1 / 3) / 0.3)  # the default floor, 0.3
    assert p_none / p_sure == pytest.approx((0.3 + 1.0) / 0.3)


def test_probabilities_over_one_are_capped_and_those_items_always_drawn() -> None:
    assert inclusion_probabilities([10.0, 1.0, 1.0, 1.0], 2) == pytest.approx(
        [1.0, 1 / 3, 1 / 3, 1 / 3]
    )
    batch = BatchResult(
        verdicts=[item("hard", None, None, None)]
        + [item(f"e{i}", "PASS", "PASS", "PASS") for i in range(8)],
        critics=["c0", "c1", "c2"],
        voting="majority",
    )
    for seed in range(50):
        queue = label_queue(batch, 2, strategy="disputed", seed=seed, floor=0.1)
        assert "hard" in queue.items
        assert queue.probabilities["hard"] == 1.0


def test_stratified_allocates_in_proportion_to_consensus_strata() -> None:
    # Strata by consensus: PASS 14, FAIL 12 (6 unanimous, 6 split 2-1), no consensus 4.
    batch = mixed_batch()
    queue = label_queue(batch, 15, strategy="stratified", seed=5)
    by_stratum = Counter(
        "none" if key.startswith("n") else ("PASS" if key.startswith("p") else "FAIL")
        for key in queue.items
    )
    assert by_stratum == {"PASS": 7, "FAIL": 6, "none": 2}
    assert queue.probabilities[next(k for k in queue.items if k.startswith("p"))] == 7 / 14


def test_stratified_gives_every_stratum_an_item_when_n_allows() -> None:
    batch = BatchResult(
        verdicts=[item(f"p{i}", "PASS", "PASS", "PASS") for i in range(97)]
        + [item(f"n{i}", None, None, None) for i in range(3)],
        critics=["c0", "c1", "c2"],
        voting="majority",
    )
    queue = label_queue(batch, 5, strategy="stratified", seed=1)
    assert sum(key.startswith("n") for key in queue.items) >= 1
    assert len(queue) == 5


def test_exclude_leaves_items_out_of_the_queue_and_its_population() -> None:
    excluded = [f"s{i}" for i in range(6)]
    for seed in range(20):
        queue = label_queue(mixed_batch(), 10, strategy="uncertain", seed=seed, exclude=excluded)
        assert not set(queue.items) & set(excluded)
        assert queue.population == 24


def test_same_seed_same_queue() -> None:
    first = label_queue(mixed_batch(), 9, strategy="uncertain", seed=11)
    assert first == label_queue(mixed_batch(), 9, strategy="uncertain", seed=11)


def test_batch_method_is_the_function() -> None:
    batch = mixed_batch()
    assert batch.label_queue(6, strategy="disputed", seed=2) == label_queue(
        batch, 6, strategy="disputed", seed=2
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"n": 31}, "n must be"),
        ({"n": -1}, "n must be"),
        ({"n": 2.5}, "n must be"),
        ({"n": True}, "n must be"),
        ({"n": 3, "strategy": "random"}, "strategy must be"),
        ({"n": 3, "floor": 0}, "floor"),
        ({"n": 3, "floor": -0.5}, "floor"),
        ({"n": 3, "floor": True}, "floor"),
    ],
)
def test_bad_arguments_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        label_queue(mixed_batch(), **options)  # type: ignore[arg-type]


def test_repeated_ids_are_refused() -> None:
    batch = [item("q", "PASS", "PASS", "PASS"), item("q", "FAIL", "FAIL", "FAIL")]
    with pytest.raises(ConfigError, match="unique"):
        label_queue(batch, 1, strategy="uniform")


def test_to_jsonl_and_read_round_trip(tmp_path: Path) -> None:
    queue = label_queue(mixed_batch(), 7, strategy="uncertain", seed=4, floor=0.2)
    path = tmp_path / "queue.jsonl"
    text = queue.to_jsonl(path)
    assert path.read_text(encoding="utf-8") == text
    assert len(text.splitlines()) == 7
    assert LabelQueue.read(path) == queue


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "no queued item"),
        ('{"id": "a"}\n', "line 1"),
        ('{"id": "a", "probability": 0}\n', "probability must be"),
        ("not json\n", "line 1"),
    ],
)
def test_read_refuses_a_file_that_is_not_a_queue(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "queue.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        LabelQueue.read(path)


def test_read_of_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        LabelQueue.read(tmp_path / "absent.jsonl")
