"""Bias statistics of a batch (``cross_judge.stats._bias``): position bias per critic and for the
panel, length bias per critic and for the consensus, and self-consistency; their tables in
the summary and in ``cross-judge stats``.

The small batches are built by hand (verdicts as an Ensemble records them for a pair) and
every expected number is worked out in the test. The last test measures three simulated
personas against the exact rates ``pairwise_rates`` gives, within 4.5 binomial standard
errors (a chance failure about 1 in 150,000 per check; answers are seeded by the texts, so
the outcome is deterministic).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from cross_judge import BatchResult, ConfigError, Critic, Ensemble
from cross_judge.errors import ErrorKind
from cross_judge.stats._bias import (
    LENGTH_BINS,
    PositionStats,
    length_bias,
    position_bias,
    self_consistency,
)
from cross_judge.testing import Persona, VendorServer, pairwise_rates
from cross_judge.verdict import Answer, EnsembleVerdict, Verdict

SWAP = {"A": "B", "B": "A"}
TOLERANCE_SE = 4.5
"""How many binomial standard errors a measured rate may stray from its expectation."""


# -- building results by hand -----------------------------------------------------------------


def shown(critic: str, label: str, order: str, **fields: Any) -> Verdict:
    """A verdict judged in one order: ``label`` in the item's own names."""
    return Verdict(kind=label, critic_id=critic, confidence=0.8, order=order, **fields)


def both(critic: str, first: str, second: str) -> Verdict:
    """A verdict judged in both orders (``on_flip="tie"``): ``first`` is the label answered
    with ``a`` shown first, ``second`` with ``b`` shown first, each as the model wrote it."""
    own = [first, SWAP.get(second, second)]
    flipped = own[0] != own[1]
    return Verdict(
        kind="TIE" if flipped else own[0],
        critic_id=critic,
        order="both",
        flipped=flipped,
        answers=[
            Answer(kind=own[0], answered=first, order="ab"),
            Answer(kind=own[1], answered=second, order="ba"),
        ],
    )


def failed(critic: str, kind: str = "ERROR") -> Verdict:
    return Verdict(
        kind=kind, critic_id=critic, error="server: HTTP 503", error_kind=ErrorKind.SERVER
    )


def result(
    verdicts: list[Verdict],
    consensus: str = "A",
    lengths: tuple[int, int] | None = (10, 10),
    **fields: Any,
) -> EnsembleVerdict:
    return EnsembleVerdict(
        query_id=f"q{id(verdicts)}",
        verdicts=verdicts,
        consensus=consensus,
        voting="majority",
        pair_lengths=None if lengths is None else list(lengths),
        **fields,
    )


def batch(results: list[EnsembleVerdict], critics: list[str] | None = None) -> BatchResult:
    names = critics or list(dict.fromkeys(v.critic_id for r in results for v in r.verdicts))
    return BatchResult(verdicts=results, critics=names, voting="majority")


def ordinary_batch() -> BatchResult:
    """Three critics on items that are not pairs."""
    panel = Ensemble([Critic(name=n, model="m", api_key="k") for n in ("x", "y", "z")])
    rows = [["KEEP", "KEEP", "REJECT"], ["REJECT", "REJECT", "REJECT"]]
    results = [
        panel.aggregate_verdicts(
            [Verdict(kind=k, critic_id=c, confidence=0.9) for c, k in zip("xyz", row, strict=True)],
            query_id=f"item-{i}",
        )
        for i, row in enumerate(rows)
    ]
    return BatchResult(verdicts=results, critics=["x", "y", "z"], voting="majority")


# -- position bias ------------------------------------------------------------------------------


def test_each_order_of_a_verdict_judged_both_ways_counts_as_shown() -> None:
    stats = position_bias(
        batch(
            [
                result([both("x", "A", "A")]),  # first both times: a flip
                result([both("x", "A", "B")]),  # a both times: first, then second
                result([both("x", "TIE", "A")]),  # TIE and b (first shown): a flip
            ]
        )
    ).critics["x"]
    assert stats.model_dump() == pytest.approx(
        {
            "answers": 6,
            "decisive": 5,
            "first_picks": 4,
            "first_position": 0.8,
            "pairs_both": 3,
            "flips": 2,
            "flip_rate": 2 / 3,
            "fairness": 0.4,
        }
    )


def test_a_verdict_judged_in_one_order_counts_once_as_answered() -> None:
    stats = position_bias(
        batch(
            [
                result([shown("x", "B", "ba")]),  # answered A: the first shown
                result([shown("x", "B", "ab")]),  # answered B
                result([shown("x", "A", "ba")]),  # answered B
                result([shown("x", "TIE", "ab")]),
            ]
        )
    ).critics["x"]
    assert (stats.answers, stats.decisive, stats.first_picks) == (4, 3, 1)
    assert stats.first_position == pytest.approx(1 / 3)


def test_a_panel_shown_each_pair_in_one_order_has_no_flip_rate() -> None:
    stats = position_bias(batch([result([shown("x", "A", "ab"), shown("y", "B", "ba")])]))
    assert [(s.pairs_both, s.flip_rate) for s in stats.critics.values()] == [(0, None), (0, None)]
    assert (stats.panel.pairs_both, stats.panel.flip_rate) == (0, None)


def test_the_panel_row_pools_the_answers_of_every_critic() -> None:
    # x: 1 of 1 decisive answers first; y: 1 of 3. Pooled 2 of 4, not the mean 2/3.
    stats = position_bias(
        batch(
            [
                result([shown("x", "A", "ab"), both("y", "A", "A")]),
                result([shown("x", "TIE", "ab"), shown("y", "B", "ab")]),
            ]
        )
    )
    assert stats.critics["x"].first_position == 1.0
    assert stats.critics["y"].first_position == pytest.approx(2 / 3)
    assert (stats.panel.answers, stats.panel.decisive, stats.panel.first_picks) == (5, 4, 3)
    assert stats.panel.first_position == pytest.approx(0.75)
    assert (stats.panel.pairs_both, stats.panel.flips) == (1, 1)


def test_fairness_is_one_without_preference_and_zero_for_one_position() -> None:
    even = position_bias(batch([result([both("x", "A", "B")]), result([both("x", "B", "A")])]))
    always_first = position_bias(batch([result([both("x", "A", "A")])]))
    assert even.critics["x"].fairness == 1.0
    assert always_first.critics["x"].fairness == 0.0


def test_failed_and_skipped_calls_are_not_answers() -> None:
    one_order_failed = Verdict(
        kind="B",
        critic_id="x",
        order="ba",
        flipped=None,
        answers=[
            Answer(kind="ERROR", answered="ERROR", order="ab", error="timeout: 30s"),
            Answer(kind="B", answered="A", order="ba"),
        ],
    )
    skipped = Verdict(kind="SKIPPED", critic_id="x", error="early stop", order="ab")
    stats = position_bias(
        batch(
            [
                result([one_order_failed]),
                result([failed("x")]),
                result([failed("x", "PARSE_FAIL")]),
                result([skipped]),
            ]
        )
    ).critics["x"]
    assert (stats.answers, stats.decisive, stats.first_picks) == (1, 1, 1)
    assert (stats.pairs_both, stats.flip_rate) == (0, None)


def test_only_ties_leave_the_first_position_undefined_but_not_the_flips() -> None:
    stats = position_bias(batch([result([both("x", "TIE", "TIE")])])).critics["x"]
    assert (stats.answers, stats.decisive) == (2, 0)
    assert (stats.first_position, stats.fairness) == (None, None)
    assert (stats.pairs_both, stats.flip_rate) == (1, 0.0)


def test_each_sampled_answer_on_a_pair_counts_in_its_order() -> None:
    sampled = Verdict(
        kind="A",
        critic_id="x",
        order="ab",
        self_agreement=2 / 3,
        answers=[
            Answer(kind="A", answered="A", order="ab"),
            Answer(kind="A", answered="A", order="ab"),
            Answer(kind="B", answered="B", order="ab"),
        ],
    )
    stats = position_bias(batch([result([sampled])])).critics["x"]
    assert (stats.answers, stats.decisive, stats.first_picks) == (3, 3, 2)


def test_a_batch_without_pairs_has_no_position_statistics() -> None:
    stats = position_bias(ordinary_batch())
    assert list(stats.critics) == ["x", "y", "z"]
    empty = PositionStats()
    assert all(s == empty for s in stats.critics.values())
    assert stats.panel == empty


def test_sampled_answers_of_an_item_that_is_not_a_pair_are_not_positions() -> None:
    sampled = Verdict(
        kind="KEEP",
        critic_id="x",
        self_agreement=1.0,
        answers=[Answer(kind="KEEP", answered="KEEP"), Answer(kind="KEEP", answered="KEEP")],
    )
    assert position_bias(batch([result([sampled], lengths=None)])).panel.answers == 0


# -- length bias --------------------------------------------------------------------------------


def test_the_longer_candidates_win_rate_is_binned_by_the_length_gap() -> None:
    votes = [
        ((100, 95), "A"),  # gap 5%: a is longer and wins
        ((95, 100), "A"),  # gap 5%: the shorter wins
        ((80, 100), "B"),  # gap 20%: b is longer and wins
        ((100, 60), "TIE"),  # gap 40%: not decisive
        ((100, 60), "B"),  # gap 40%: the shorter wins
        ((10, 100), "B"),  # gap 90%: b is longer and wins
        ((50, 50), "A"),  # no gap: counted apart
    ]
    bias = length_bias(batch([result([shown("x", k, "ab")], k, n) for n, k in votes]))
    rows = [(b.decisive, b.longer_wins, b.longer_win_rate) for b in bias.critics["x"]]
    assert rows == [(2, 1, 0.5), (1, 1, 1.0), (1, 0, 0.0), (1, 1, 1.0)]
    assert [b.equal_length for b in bias.critics["x"]] == [1, 0, 0, 0]
    assert bias.edges == [0.0, 0.10, 0.25, 0.50, 1.0]


def test_a_gap_on_an_edge_goes_to_the_upper_bin_and_an_empty_candidate_to_the_last() -> None:
    bias = length_bias(
        batch(
            [
                result([shown("x", "A", "ab")], "A", (100, 90)),  # gap exactly 10%
                result([shown("x", "B", "ab")], "B", (0, 7)),  # gap 100%
                result([shown("x", "A", "ab")], "A", (0, 0)),  # equal, both empty
            ]
        )
    )
    assert [b.decisive for b in bias.critics["x"]] == [0, 1, 0, 1]
    assert bias.critics["x"][0].equal_length == 1


def test_the_consensus_row_counts_decisive_votes_only() -> None:
    results = [
        result([shown("x", "A", "ab")], "A", (100, 50)),  # the longer wins
        result([shown("x", "B", "ab")], "B", (100, 50)),  # the shorter wins
        result([shown("x", "TIE", "ab")], "TIE", (100, 50)),
        result([failed("x")], "UNCLEAR", (100, 50), fallback=True),
        result([shown("x", "A", "ab")], "A", (100, 50), fallback=True),  # no vote decided
    ]
    last = length_bias(batch(results)).consensus[-1]
    assert (last.decisive, last.longer_wins, last.longer_win_rate) == (2, 1, 0.5)


def test_a_flip_turned_tie_is_not_a_decisive_verdict() -> None:
    bias = length_bias(batch([result([both("x", "A", "A")], "TIE", (100, 50))]))
    assert all(b.decisive == 0 for b in bias.critics["x"])


def test_custom_bins_are_inner_edges() -> None:
    results = [
        result([shown("x", "A", "ab")], "A", (100, 70)),  # gap 30%
        result([shown("x", "A", "ab")], "A", (100, 40)),  # gap 60%
    ]
    bias = length_bias(batch(results), bins=(0.5,))
    assert bias.edges == [0.0, 0.5, 1.0]
    assert [(b.low, b.high, b.decisive) for b in bias.critics["x"]] == [
        (0.0, 0.5, 1),
        (0.5, 1.0, 1),
    ]


@pytest.mark.parametrize("bins", [(0.5, 0.25), (0.0, 0.5), (0.5, 1.0), (0.2, 0.2), ("x",)])
def test_bins_that_do_not_rise_strictly_inside_zero_to_one_are_refused(bins: Any) -> None:
    with pytest.raises(ConfigError, match="bins"):
        length_bias(batch([]), bins=bins)


def test_a_batch_without_pairs_has_no_length_statistics() -> None:
    bias = length_bias(ordinary_batch())
    rows = [*bias.critics.values(), bias.consensus]
    assert len(rows) == 4
    assert all(b.decisive == b.equal_length == 0 for row in rows for b in row)
    assert all(b.longer_win_rate is None for row in rows for b in row)


# -- self-consistency ---------------------------------------------------------------------------


def test_self_agreement_is_averaged_over_the_verdicts_that_have_one() -> None:
    stats = self_consistency(
        batch(
            [
                result([shown("x", "A", "ab", self_agreement=1.0), shown("y", "A", "ab")]),
                result([shown("x", "B", "ab", self_agreement=0.5), failed("y")]),
                result([shown("x", "B", "ab"), shown("y", "B", "ab")]),
            ]
        )
    )
    assert (stats["x"].sampled, stats["x"].self_agreement) == (2, 0.75)
    assert (stats["y"].sampled, stats["y"].self_agreement) == (0, None)


def test_self_agreement_is_read_from_a_verdict_of_any_item() -> None:
    plain = Verdict(kind="KEEP", critic_id="x", self_agreement=0.6)
    stats = self_consistency(batch([result([plain], "KEEP", None)]))
    assert (stats["x"].sampled, stats["x"].self_agreement) == (1, 0.6)


# -- batch methods, results files ---------------------------------------------------------------


def pair_batch() -> BatchResult:
    """Two critics on three pairs: x in both orders (sampled), y in one."""
    return batch(
        [
            result([both("x", "A", "A"), shown("y", "A", "ab")], "A", (100, 40)),
            result([both("x", "A", "B"), shown("y", "B", "ba")], "A", (100, 95)),
            result(
                [both("x", "B", "A").model_copy(update={"self_agreement": 0.5}), failed("y")],
                "B",
                (30, 100),
            ),
        ]
    )


def test_the_batch_methods_give_the_module_statistics() -> None:
    pairs = pair_batch()
    assert pairs.position_bias() == position_bias(pairs)
    assert pairs.length_bias() == length_bias(pairs, LENGTH_BINS)
    assert pairs.length_bias(bins=[0.3]) == length_bias(pairs, [0.3])
    assert pairs.self_consistency() == self_consistency(pairs)


def test_the_statistics_read_a_results_file(tmp_path: Path) -> None:
    pairs = pair_batch()
    out = tmp_path / "out.jsonl"
    pairs.to_jsonl(out)
    assert position_bias(out) == pairs.position_bias()
    assert length_bias(out) == pairs.length_bias()
    assert self_consistency(out) == pairs.self_consistency()


# -- summary and command line --------------------------------------------------------------------


def test_an_ordinary_batch_summary_shows_no_bias_tables() -> None:
    text = str(ordinary_batch())
    for title in ("position bias", "length bias", "self-consistency"):
        assert title not in text


def test_the_summary_of_pairs_shows_position_and_length_tables() -> None:
    text = str(pair_batch())
    position = text[text.index("position bias") : text.index("length bias")].splitlines()
    # x: answers A,A | A,B | B,A: 6 decisive, 4 first; 3 pairs both ways, 1 flip.
    x = next(line.split() for line in position if line.strip().startswith("x "))
    assert x == ["x", "6", "6", "66.7%", "33.3%", "of", "3", "0.67"]
    # y: B answered with b first (A as shown), A with a first; one failed call.
    y = next(line.split() for line in position if line.strip().startswith("y "))
    assert y == ["y", "2", "2", "100.0%", "n/a", "0.00"]
    lengths = text[text.index("length bias") :].splitlines()
    consensus = next(line.split() for line in lengths if line.strip().startswith("consensus"))
    # consensus A on (100, 95): longer wins (0-10%); A on (100, 40): 50%+; B on (30, 100).
    assert consensus == ["consensus", "100.0%", "of", "1", "n/a", "n/a", "100.0%", "of", "2"]


def test_the_summary_shows_self_consistency_only_for_sampled_critics() -> None:
    assert "self-consistency" in str(pair_batch())
    unsampled = batch([result([shown("x", "A", "ab")])])
    assert "self-consistency" not in str(unsampled)


def test_cross_judge_stats_shows_the_bias_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.cli import main

    out = tmp_path / "out.jsonl"
    pair_batch().to_jsonl(out)
    assert main(["stats", str(out)]) == 0
    printed = capsys.readouterr().out
    for title in ("position bias", "length bias", "self-consistency"):
        assert title in printed


# -- against the simulated vendor --------------------------------------------------------------


def within(measured: float | None, expected: float, n: int) -> bool:
    """Whether ``measured`` (a share of ``n`` independent draws) is within tolerance."""
    se = math.sqrt(expected * (1 - expected) / n)
    return measured is not None and abs(measured - expected) <= TOLERANCE_SE * se + 1e-12


@pytest.mark.slow  # a statistical simulation: thousands of draws
def test_measured_position_rates_match_the_simulated_personas() -> None:
    personas = [
        Persona(f"lean-{bias}", accuracy=0.7, position_bias=bias, seed=index)
        for index, bias in enumerate((0.0, 0.3, 0.6))
    ]
    n = 300
    good = [f"A full answer to task {i}, with its reasons." for i in range(n)]
    poor = [f"A short answer {i}." for i in range(n)]
    items = [
        {
            "id": f"p{i}",
            "query": f"task {i}",
            # the better candidate is shown first (as a) in half the pairs
            "a": good[i] if i % 2 == 0 else poor[i],
            "b": poor[i] if i % 2 == 0 else good[i],
        }
        for i in range(n)
    ]
    with VendorServer(personas, better={f"task {i}": good[i] for i in range(n)}) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                prompt="pairwise",
                vendor="custom",
                base_url=server.url,
                api_key="unused",
            )
            for p in personas
        ]
        results = Ensemble(critics, order="both").judge_many_sync(items, concurrency=8)
    measured = results.position_bias()
    for persona in personas:
        stats = measured.critics[persona.model]
        expected = pairwise_rates(persona)
        assert expected.first_position is not None
        assert (stats.answers, stats.pairs_both) == (2 * n, n)
        assert within(stats.first_position, expected.first_position, stats.decisive), (
            persona.model,
            stats.first_position,
            expected.first_position,
        )
        assert within(stats.flip_rate, expected.flip, stats.pairs_both), (
            persona.model,
            stats.flip_rate,
            expected.flip,
        )
