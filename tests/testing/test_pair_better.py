"""Specification of ``VendorServer(pair_better=...)``: the better answer of one pair (a
query and its two candidates), for queries shared by several pairs, where ``better`` (one
answer per query) cannot say which candidate wins each pair.

A persona of accuracy 1 answers the truth, so each outcome here is exact.
"""

from __future__ import annotations

import pytest

from cross_judge import Critic
from cross_judge.testing import Persona, VendorServer

SURE = Persona("sure", accuracy=1.0)


def judge(server: VendorServer, query: str, first: str, second: str) -> str:
    critic = Critic(
        name="judge",
        model="sure",
        prompt="pairwise",
        vendor="custom",
        base_url=server.url,
        api_key="unused",
        max_retries=0,
    )
    context = {"response_a": first, "response_b": second}
    return critic.judge_sync(query, context=context).kind


def test_pairs_sharing_a_query_are_each_judged_by_their_own_better_answer() -> None:
    pair_better = {("Q?", "x", "y"): "x", ("Q?", "y", "z"): "z", ("Q?", "x", "z"): None}
    with VendorServer([SURE], pair_better=pair_better) as server:
        assert [judge(server, "Q?", a, b) for a, b in [("x", "y"), ("y", "x")]] == ["A", "B"]
        assert [judge(server, "Q?", a, b) for a, b in [("y", "z"), ("z", "y")]] == ["B", "A"]
        assert [judge(server, "Q?", a, b) for a, b in [("x", "z"), ("z", "x")]] == ["TIE", "TIE"]


def test_a_pairs_own_better_answer_wins_over_its_querys() -> None:
    with VendorServer([SURE], better={"Q?": "x"}, pair_better={("Q?", "y", "x"): "y"}) as server:
        assert judge(server, "Q?", "x", "y") == "B"
        assert judge(server, "Q?", "x", "w") == "A"  # another pair: the query's answer


def test_pair_better_keys_and_texts_are_stripped_like_extracted_ones() -> None:
    with VendorServer([SURE], pair_better={(" Q? ", "x\n", "\ty"): " y "}) as server:
        assert judge(server, "Q?", "x", "y") == "B"


def test_set_better_with_candidates_sets_one_pairs_answer() -> None:
    with VendorServer([SURE], better={"Q?": "x"}) as server:
        server.set_better("Q?", "y", candidates=("x", "y"))
        assert judge(server, "Q?", "x", "y") == "B"
        assert judge(server, "Q?", "x", "w") == "A"


def test_a_pair_better_answer_that_is_neither_candidate_is_refused() -> None:
    with pytest.raises(ValueError, match=r"one of the pair's two candidates \('x', 'y'\)"):
        VendorServer(pair_better={("Q?", "x", "y"): "z"})
    server = VendorServer()
    with pytest.raises(ValueError, match="one of the pair's two candidates"):
        server.set_better("Q?", "z", candidates=("x", "y"))


def test_a_pair_better_key_that_is_not_a_query_and_two_candidates_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\(query, candidate, candidate\)"):
        VendorServer(pair_better={("Q?", "x"): "x"})  # type: ignore[dict-item]
