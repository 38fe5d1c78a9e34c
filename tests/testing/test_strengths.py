"""Specification of candidates with latent strengths in ``cross_judge.testing``: with
``VendorServer(strengths={text: s}, tie_rate=t)`` a pair whose two candidates both have a
strength is judged by Bradley-Terry noise (Davidson's model when ``t`` > 0), then by the
persona as any pair is (accuracy, position bias); ``strength_rates`` gives the exact rates.

The HTTP tests drive a real ``VendorServer`` on 127.0.0.1 with plain ``httpx`` and the
packaged ``pairwise`` prompt's text. Every draw is seeded by the texts, so every outcome
here is deterministic; statistical checks allow 4.5 binomial standard errors (each pair
is an independent draw: distinct queries or candidates give distinct seeds), so even
after a text changes a chance failure has odds of about 1 in 150,000 per check.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import httpx
import pytest

from cross_judge import Critic
from cross_judge.testing import Persona, VendorServer, bradley_terry_probabilities, strength_rates


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: what these tests measure (the simulator's draws, the ranking's fit
    and schedule) does not depend on the event loop, and the client path is run on both
    loops elsewhere (tests/integration/test_rank_over_http.py, the Ensemble tests); once
    is enough for the suite's time budget."""
    return "asyncio"


CLIENT_OPTIONS: dict[str, Any] = {"timeout": 60.0, "trust_env": False}
TOLERANCE_SE = 4.5
N_PAIRS = 800

Shown = tuple[str, str, str]
"""One request: the query, the first candidate shown, the second."""


def chat_body(model: str, shown: Shown, *, temperature: float = 0.0) -> dict[str, Any]:
    query, first, second = shown
    renderer = Critic(
        name="r", model="m", prompt="pairwise", vendor="custom", base_url="http://127.0.0.1:9/v1"
    )
    user = renderer.render_prompt(query, {"response_a": first, "response_b": second})
    return {
        "model": model,
        "temperature": temperature,
        "messages": [{"role": "user", "content": user}],
    }


async def kinds_of(
    server: VendorServer, model: str, shown: Sequence[Shown], *, temperature: float = 0.0
) -> list[str]:
    """The label ``model`` answers to each request, in order."""
    kinds = [""] * len(shown)
    limiter = anyio.CapacityLimiter(8)
    async with httpx.AsyncClient(**CLIENT_OPTIONS) as client:

        async def one(i: int) -> None:
            async with limiter:
                body = chat_body(model, shown[i], temperature=temperature)
                reply = await client.post(f"{server.url}/chat/completions", json=body)
            reply.raise_for_status()
            kinds[i] = json.loads(reply.json()["choices"][0]["message"]["content"])["kind"]

        async with anyio.create_task_group() as group:
            for i in range(len(shown)):
                group.start_soon(one, i)
    return kinds


def within(count: int, expected: float, n: int) -> bool:
    """Whether ``count`` successes in ``n`` independent draws fit probability ``expected``."""
    se = math.sqrt(expected * (1 - expected) / n)
    return abs(count / n - expected) <= TOLERANCE_SE * se + 1e-12


def share(kinds: Sequence[str], label: str) -> int:
    return sum(k == label for k in kinds)


SURE = Persona("sure", accuracy=1.0)


# -- the latent draw follows Bradley-Terry -------------------------------------------------------


@pytest.mark.slow  # thousands of pairs judged over HTTP
@pytest.mark.anyio
@pytest.mark.parametrize("gap", [math.log(3.0), math.log(1.5)])
async def test_win_frequencies_over_distinct_pairs_match_bradley_terry(gap: float) -> None:
    # Pair k: "strong k" (strength gap) against "weak k" (0); the strong one is shown
    # first in even pairs, second in odd ones, so both positions are tested.
    strengths: dict[str, float] = {}
    shown: list[Shown] = []
    for k in range(N_PAIRS):
        strong, weak = f"strong answer {k}", f"weak answer {k}"
        strengths |= {strong: gap, weak: 0.0}
        shown.append((f"task {k}", strong, weak) if k % 2 == 0 else (f"task {k}", weak, strong))
    async with VendorServer([SURE], strengths=strengths) as server:
        kinds = await kinds_of(server, "sure", shown)
    strong_wins = sum(
        (kind == "A") == (k % 2 == 0) and kind != "TIE" for k, kind in enumerate(kinds)
    )
    expected = math.exp(gap) / (math.exp(gap) + 1.0)  # 0.75 and 0.6
    assert share(kinds, "TIE") == 0  # tie_rate 0: plain Bradley-Terry
    assert within(strong_wins, expected, N_PAIRS)


@pytest.mark.anyio
async def test_a_candidates_strength_is_the_same_across_queries() -> None:
    # The arena case: the same two texts under N distinct queries; each query's pair is its
    # own draw, all at the same probability e^1 / (e^1 + e^0).
    strengths = {"Answer of model X.": 1.0, "Answer of model Y.": 0.0}
    shown = [(f"question {k}", "Answer of model X.", "Answer of model Y.") for k in range(N_PAIRS)]
    async with VendorServer([SURE], strengths=strengths) as server:
        kinds = await kinds_of(server, "sure", shown)
    assert within(share(kinds, "A"), math.e / (math.e + 1.0), N_PAIRS)


@pytest.mark.anyio
async def test_ties_occur_at_davidsons_rate() -> None:
    # Strengths ln 4 and 0, tie_rate 0.3: nu = 2 * 0.3 / 0.7, and with p = e^s,
    # P(tie) = nu sqrt(4) / (4 + 1 + nu sqrt(4)) = 0.2553...
    strengths: dict[str, float] = {}
    shown: list[Shown] = []
    for k in range(N_PAIRS):
        strengths |= {f"first {k}": math.log(4.0), f"second {k}": 0.0}
        shown.append((f"task {k}", f"first {k}", f"second {k}"))
    async with VendorServer([SURE], strengths=strengths, tie_rate=0.3) as server:
        kinds = await kinds_of(server, "sure", shown)
    nu = 2 * 0.3 / 0.7
    p_tie = nu * 2.0 / (4.0 + 1.0 + nu * 2.0)
    p_first = 4.0 / (4.0 + 1.0 + nu * 2.0)
    assert within(share(kinds, "TIE"), p_tie, N_PAIRS)
    assert within(share(kinds, "A"), p_first, N_PAIRS)


def test_tie_rate_is_the_chance_of_a_tie_between_equal_strengths() -> None:
    assert bradley_terry_probabilities(0.7, 0.7, tie_rate=0.3) == pytest.approx((0.35, 0.35, 0.3))


def test_bradley_terry_probabilities_follow_davidsons_formula() -> None:
    s_i, s_j, t = 1.3, -0.4, 0.2
    p_i, p_j, nu = math.exp(s_i), math.exp(s_j), 2 * t / (1 - t)
    denominator = p_i + p_j + nu * math.sqrt(p_i * p_j)
    assert bradley_terry_probabilities(s_i, s_j, tie_rate=t) == pytest.approx(
        (p_i / denominator, p_j / denominator, nu * math.sqrt(p_i * p_j) / denominator)
    )


def test_bradley_terry_probabilities_stay_finite_for_huge_gaps() -> None:
    assert bradley_terry_probabilities(5000.0, -5000.0) == pytest.approx((1.0, 0.0, 0.0))


# -- the persona still answers: accuracy and position bias ----------------------------------------


def test_strength_rates_mix_the_latent_draw_with_the_unsure_rule() -> None:
    # Equal strengths: the latent truth is A or B, 1/2 each. Sure (0.6): the truth. Unsure
    # (0.4): A with 0.8, else one of the two labels other than the truth, uniformly.
    biased = Persona("biased", accuracy=0.6, position_bias=0.8)
    rates = strength_rates(biased, 0.0, 0.0)
    a = 0.6 * 0.5 + 0.4 * (0.8 + 0.2 * (0.5 * 0.5 + 0.5 * 0.0))
    b = 0.6 * 0.5 + 0.4 * 0.2 * (0.5 * 0.0 + 0.5 * 0.5)
    assert rates == pytest.approx({"A": a, "B": b, "TIE": 1.0 - a - b})


@pytest.mark.anyio
async def test_position_bias_still_shows_on_pairs_judged_by_strength() -> None:
    biased = Persona("biased", accuracy=0.6, position_bias=0.8)
    strengths: dict[str, float] = {}
    shown: list[Shown] = []
    for k in range(N_PAIRS):
        strengths |= {f"left {k}": 0.0, f"right {k}": 0.0}
        shown.append((f"task {k}", f"left {k}", f"right {k}"))
    async with VendorServer([biased], strengths=strengths) as server:
        kinds = await kinds_of(server, "biased", shown)
    expected = strength_rates(biased, 0.0, 0.0)
    assert expected["A"] > 0.6  # equal strengths, yet the first shown wins most
    assert within(share(kinds, "A"), expected["A"], N_PAIRS)
    assert within(share(kinds, "TIE"), expected["TIE"], N_PAIRS)


# -- reproducible, resampled, and only for pairs with strengths -----------------------------------


@pytest.mark.anyio
async def test_each_draw_is_reproducible_across_requests_and_servers() -> None:
    strengths = {f"c{k}": k / 10 for k in range(12)}
    shown = [("rank these", f"c{i}", f"c{j}") for i in range(12) for j in range(12) if i != j]
    async with VendorServer([SURE], strengths=strengths, tie_rate=0.2) as server:
        first = await kinds_of(server, "sure", shown)
        again = await kinds_of(server, "sure", shown)
    async with VendorServer([SURE], strengths=strengths, tie_rate=0.2) as fresh:
        other = await kinds_of(fresh, "sure", shown)
    assert first == again == other
    assert {"A", "B", "TIE"} <= set(first)  # 132 (pair, order) draws: all outcomes occur


@pytest.mark.anyio
async def test_a_resampling_persona_redraws_the_latent_winner() -> None:
    sampler = Persona("sampler", accuracy=1.0, resample=True)
    shown = [("Which is better?", "one", "two")] * 40
    async with VendorServer([sampler], strengths={"one": 0.0, "two": 0.0}) as server:
        sampled = await kinds_of(server, "sampler", shown, temperature=1.0)
        greedy = await kinds_of(server, "sampler", shown, temperature=0.0)
    assert set(sampled) == {"A", "B"}
    assert len(set(greedy)) == 1


@pytest.mark.anyio
async def test_a_pair_with_a_candidate_without_strength_is_answered_as_before() -> None:
    shown = [(f"task {k}", f"known {k}", f"unknown {k}") for k in range(20)]
    known = {f"known {k}": 2.0 for k in range(20)}
    async with VendorServer([SURE], strengths=known) as server:
        with_strengths = await kinds_of(server, "sure", shown)
    async with VendorServer([SURE]) as server:
        without = await kinds_of(server, "sure", shown)
    assert with_strengths == without


@pytest.mark.anyio
async def test_a_known_better_answer_wins_over_strengths() -> None:
    shown = [("Capital of France?", "Lyon.", "Paris.")] * 1
    async with VendorServer(
        [SURE], strengths={"Lyon.": 9.0, "Paris.": -9.0}, better={"Capital of France?": "Paris."}
    ) as server:
        assert await kinds_of(server, "sure", shown) == ["B"]


def test_strength_keys_are_stripped_like_extracted_texts() -> None:
    server = VendorServer([SURE], strengths={"  padded answer \n": 1.0})
    assert server.strength_of("padded answer") == 1.0
    assert server.strength_of("missing") is None


# -- bad values ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "2", True, None])
def test_a_strength_that_is_not_a_finite_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="strength of 'x' must be a finite number"):
        VendorServer([SURE], strengths={"x": value})  # type: ignore[dict-item]


def test_two_keys_that_strip_to_the_same_text_with_different_strengths_are_refused() -> None:
    with pytest.raises(ValueError, match=r"'x' is given strengths 1\.0 and 2\.0"):
        VendorServer([SURE], strengths={"x": 1.0, " x ": 2.0})


def test_a_strength_key_that_is_not_text_is_refused() -> None:
    bad: Mapping[Any, float] = {3: 1.0}
    with pytest.raises(ValueError, match="strengths must map candidate texts"):
        VendorServer([SURE], strengths=bad)


@pytest.mark.parametrize("value", [-0.1, 1.0, 2, float("nan"), "0.2"])
def test_a_tie_rate_outside_0_to_1_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match=r"tie_rate must be a number in \[0, 1\)"):
        VendorServer([SURE], strengths={"x": 0.0}, tie_rate=value)  # type: ignore[arg-type]


def test_a_tie_rate_without_strengths_is_refused() -> None:
    with pytest.raises(ValueError, match="tie_rate applies only to pairs judged by strengths"):
        VendorServer([SURE], tie_rate=0.2)
