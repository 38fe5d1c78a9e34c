"""Specification of pairwise judging in ``cross_judge.testing``: a request holding two
candidates (``<response_a>``, ``<response_b>``) is judged by content, so swapping them
swaps the right answer, and a persona's ``position_bias`` favours the one shown first;
``pairwise_rates`` gives the exact rates a persona is expected to show.

The HTTP tests drive a real ``VendorServer`` on 127.0.0.1 with a ``Critic`` on the
packaged ``pairwise`` prompt (as a user would), or with plain ``httpx`` where the exact
answer text matters. Answers are seeded by the texts, so every outcome here is
deterministic; statistical checks allow 4.5 binomial standard errors, so even after a
text changes a chance failure has odds of about 1 in 150,000 per check.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

import anyio
import httpx
import pytest

from cross_judge import Critic
from cross_judge.testing import (
    PairwiseRates,
    Persona,
    Style,
    VendorServer,
    pairwise_rates,
)
from cross_judge.testing._decisions import Pair, decide_pair, pair_digest

CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}
SWAP = {"A": "B", "B": "A", "TIE": "TIE"}
"""Maps an answer given to the swapped order back to the original order."""
TOLERANCE_SE = 4.5
"""How many binomial standard errors a measured rate may stray from its expectation."""

STYLES: tuple[Style, ...] = ("json", "fenced", "think", "messy")

Shown = tuple[str, str, str]
"""One request: the query, the first candidate shown, the second."""


def critic(server: VendorServer, model: str) -> Critic:
    return Critic(
        name="judge",
        model=model,
        prompt="pairwise",
        vendor="custom",
        base_url=server.url,
        api_key="unused",
    )


async def judge_all(server: VendorServer, model: str, shown: Sequence[Shown]) -> list[str]:
    """The verdict labels of ``model`` on each request, in order."""
    kinds = [""] * len(shown)
    # A few at a time: hundreds at once open as many connections, slow under trio.
    limiter = anyio.CapacityLimiter(8)
    async with critic(server, model) as judge:

        async def one(i: int) -> None:
            query, first, second = shown[i]
            context = {"response_a": first, "response_b": second}
            async with limiter:
                kinds[i] = (await judge.judge(query, context=context)).kind

        async with anyio.create_task_group() as group:
            for i in range(len(shown)):
                group.start_soon(one, i)
    return kinds


def both_orders(pairs: Sequence[Shown]) -> list[Shown]:
    """Each pair as given, then each pair swapped."""
    return [*pairs, *((q, b, a) for q, a, b in pairs)]


def decisive_pairs(n: int) -> tuple[list[Shown], dict[str, str | None]]:
    """``n`` pairs shown better-first, and their ``better`` map."""
    pairs = [(f"task {i}", f"good answer {i}", f"poor answer {i}") for i in range(n)]
    return pairs, {q: good for q, good, _ in pairs}


def within(measured: float, expected: float, n: int) -> bool:
    """Whether ``measured`` (a share of ``n`` independent draws) is within tolerance."""
    se = math.sqrt(expected * (1 - expected) / n)
    return abs(measured - expected) <= TOLERANCE_SE * se + 1e-12


def critic_for_rendering() -> Critic:
    return Critic(
        name="r", model="m", prompt="pairwise", vendor="custom", base_url="http://127.0.0.1:9/v1"
    )


def chat_body(model: str, query: str, first: str, second: str) -> dict[str, Any]:
    user = critic_for_rendering().render_prompt(query, {"response_a": first, "response_b": second})
    return {"model": model, "messages": [{"role": "user", "content": user}]}


# -- the truth of a pair is decided by content -----------------------------------------------


@pytest.mark.anyio
async def test_swapping_the_candidates_swaps_the_truth_label() -> None:
    sure = Persona("sure", accuracy=1.0)
    async with VendorServer([sure], better={"Capital of France?": "Paris."}) as server:
        pair = ("Capital of France?", "Paris.", "Lyon.")
        before = await judge_all(server, "sure", both_orders([pair]))
        server.set_better("Capital of France?", "Lyon.")
        after = await judge_all(server, "sure", both_orders([pair]))
    assert (before, after) == (["A", "B"], ["B", "A"])


@pytest.mark.anyio
@pytest.mark.parametrize("style", STYLES)
async def test_a_persona_with_accuracy_1_is_always_right_in_both_orders(style: Style) -> None:
    pairs, better = decisive_pairs(40)
    persona = Persona("sure", accuracy=1.0, position_bias=1.0, style=style)
    async with VendorServer([persona], better=better) as server:
        kinds = await judge_all(server, "sure", both_orders(pairs))
    assert kinds == ["A"] * 40 + ["B"] * 40


@pytest.mark.anyio
async def test_position_bias_1_and_accuracy_0_always_answers_a() -> None:
    pairs, better = decisive_pairs(30)
    ties = [(f"tie {i}", f"one way {i}", f"another way {i}") for i in range(10)]
    better.update({q: None for q, _, _ in ties})
    persona = Persona("first", accuracy=0.0, position_bias=1.0)
    async with VendorServer([persona], better=better) as server:
        kinds = await judge_all(server, "first", both_orders(pairs + ties))
    assert kinds == ["A"] * 80


@pytest.mark.slow  # hundreds of pairs judged over HTTP
@pytest.mark.anyio
async def test_without_position_bias_a_and_b_are_answered_equally_often() -> None:
    # Accuracy 0.5: half the answers are unsure, where a position bias would show.
    pairs, better = decisive_pairs(200)
    persona = Persona("fair", accuracy=0.5, position_bias=0.0)
    async with VendorServer([persona], better=better) as server:
        kinds = await judge_all(server, "fair", both_orders(pairs))
    decisive = [k for k in kinds if k in ("A", "B")]
    assert pairwise_rates(persona).first_position == 0.5
    assert within(decisive.count("A") / len(decisive), 0.5, len(decisive))


@pytest.mark.anyio
async def test_a_pair_declared_a_tie_is_answered_tie_in_both_orders() -> None:
    sure = Persona("sure", accuracy=1.0, position_bias=1.0)
    async with VendorServer([sure], better={"Say hello.": None}) as server:
        kinds = await judge_all(server, "sure", both_orders([("Say hello.", "Hello!", "Hi!")]))
    assert kinds == ["TIE", "TIE"]


@pytest.mark.anyio
async def test_two_identical_candidates_are_a_tie_whatever_better_says() -> None:
    sure = Persona("sure", accuracy=1.0)
    async with VendorServer([sure], better={"Say hello.": "Hello!"}) as server:
        kinds = await judge_all(server, "sure", [("Say hello.", "Hello!", "  Hello!\n")])
    assert kinds == ["TIE"]


def test_better_keys_and_texts_are_stripped_like_extracted_ones() -> None:
    sure = Persona("sure", accuracy=1.0)
    with (
        VendorServer([sure], better={"  Capital of France?\n": "\tParis.  "}) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        body = chat_body("sure", "Capital of France?", "Lyon.", " Paris. ")
        content = client.post("/chat/completions", json=body).json()["choices"][0]["message"]
    assert json.loads(content["content"])["kind"] == "B"


def test_a_pairwise_request_is_judged_the_same_over_the_messages_api() -> None:
    persona = Persona("critic", accuracy=0.5, position_bias=0.5)
    _, better = decisive_pairs(1)
    with (
        VendorServer([persona], better=better) as server,
        httpx.Client(base_url=server.anthropic_url, **CLIENT_OPTIONS) as client,
    ):
        chat = chat_body("critic", "task 0", "poor answer 0", "good answer 0")
        over_chat = client.post("/v1/chat/completions", json=chat).json()
        over_messages = client.post("/v1/messages", json={**chat, "max_tokens": 100}).json()
    answer = over_chat["choices"][0]["message"]["content"]
    assert over_messages["content"] == [{"type": "text", "text": answer}]


# -- determinism -----------------------------------------------------------------------------


def test_a_repeated_pairwise_request_gets_the_same_answer() -> None:
    persona = Persona("critic", accuracy=0.5, position_bias=0.3, confidence=(0.1, 0.9))
    pairs, better = decisive_pairs(20)
    with (
        VendorServer([persona], better=better) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        bodies = [chat_body("critic", *shown) for shown in both_orders(pairs)]
        first = [client.post("/chat/completions", json=b).json() for b in bodies]
        again = [client.post("/chat/completions", json=b).json() for b in bodies]
    assert [r["choices"] for r in first] == [r["choices"] for r in again]


def test_the_two_orders_of_a_pair_are_independent_draws() -> None:
    # Accuracy 0.5: if the orders were one draw, a persona would be right in both or in
    # neither; independent, it is right in exactly one for half of the pairs.
    persona = Persona("critic", accuracy=0.5)
    n = 2_000
    split = 0
    for i in range(n):
        pair = Pair(f"task {i}", f"good {i}", f"poor {i}")
        swapped = Pair(pair.query, pair.response_b, pair.response_a)
        right_first = decide_pair(persona, "critic", "A", pair_digest(pair)).kind == "A"
        right_second = decide_pair(persona, "critic", "B", pair_digest(swapped)).kind == "B"
        split += right_first != right_second
    assert within(split / n, 0.5, n)


# -- fallback and unchanged answers ----------------------------------------------------------


def test_a_pair_without_a_better_entry_is_answered_like_a_plain_item() -> None:
    persona = Persona("critic", accuracy=0.6, position_bias=1.0)
    with (
        VendorServer([persona], better={"another task": "x"}) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        plain = {"model": "critic", "messages": [{"role": "user", "content": "<item>task</item>"}]}
        bodies = [
            plain,
            chat_body("critic", "task", "x", "y"),
            chat_body("critic", "task", "y", "x"),
        ]
        answers = [
            client.post("/chat/completions", json=b).json()["choices"][0]["message"]["content"]
            for b in bodies
        ]
    assert answers[0] == answers[1] == answers[2]
    assert json.loads(answers[0])["kind"] in persona.labels


def test_a_pair_whose_candidates_both_differ_from_better_is_answered_like_a_plain_item() -> None:
    persona = Persona("critic", accuracy=0.6)
    with (
        VendorServer([persona], better={"task": "neither of them"}) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        plain = {"model": "critic", "messages": [{"role": "user", "content": "<item>task</item>"}]}
        bodies = [plain, chat_body("critic", "task", "x", "y")]
        answers = [
            client.post("/chat/completions", json=b).json()["choices"][0]["message"]["content"]
            for b in bodies
        ]
    assert answers[0] == answers[1]


# Recorded from the simulator before pairwise judging existed: the chat answers of five
# personas (four styles at accuracy 0.6 and seed 3, one answering A/B/TIE) to three plain
# items and to one pair in both orders (no `better`), without and with error correlation.
UNCHANGED_SAMPLE = {
    "0.0|p-json|0": '{"kind": "REJECT", "confidence": 0.7, "reasoning": '
    '"On balance the evidence points to REJECT."}',
    "0.0|p-json|1": '{"kind": "SPLIT", "confidence": 0.84, "reasoning": '
    '"The wording of the item supports SPLIT."}',
    "0.0|p-json|3": '{"kind": "REJECT", "confidence": 0.73, "reasoning": '
    '"The wording of the item supports REJECT."}',
}
UNCHANGED_DIGEST = "6a6d9156d9e6d92af616abc14e7fb68a8368c7533c41cfb6818ab26291e6a0f4"
"""sha256 of all 50 answers, as ``json.dumps(answers, indent=1)`` plus a newline."""


def test_answers_without_a_better_entry_are_unchanged_whatever_the_position_bias() -> None:
    users = [
        "Is a whale a fish?",
        "<item>\nitem 7\n</item>",
        "plain text 3",
        critic_for_rendering().render_prompt(
            "Capital of France?", {"response_a": "Paris.", "response_b": "Lyon."}
        ),
        critic_for_rendering().render_prompt(
            "Capital of France?", {"response_a": "Lyon.", "response_b": "Paris."}
        ),
    ]
    personas = [Persona(f"p-{s}", accuracy=0.6, style=s, seed=3, position_bias=0.7) for s in STYLES]
    personas.append(Persona("labels-ab", accuracy=0.5, labels=("A", "B", "TIE"), position_bias=0.7))
    answers: dict[str, str] = {}
    for rho in (0.0, 0.4):
        with (
            VendorServer(
                personas, gold={"Is a whale a fish?": "REJECT"}, error_correlation=rho
            ) as server,
            httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
        ):
            for persona in personas:
                for i, user in enumerate(users):
                    body = {"model": persona.model, "messages": [{"role": "user", "content": user}]}
                    reply = client.post("/chat/completions", json=body).json()
                    answers[f"{rho}|{persona.model}|{i}"] = reply["choices"][0]["message"][
                        "content"
                    ]
    assert {k: answers[k] for k in UNCHANGED_SAMPLE} == UNCHANGED_SAMPLE
    recorded = (json.dumps(answers, indent=1) + "\n").encode()
    assert hashlib.sha256(recorded).hexdigest() == UNCHANGED_DIGEST


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan])
def test_position_bias_outside_0_1_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match=r"Persona\.position_bias must be a probability"):
        Persona("critic", position_bias=value)


def test_a_better_value_that_is_not_text_or_none_is_refused() -> None:
    with pytest.raises(ValueError, match="better response's text, or None for a tie"):
        VendorServer(better={"task": 1})  # type: ignore[dict-item]
    server = VendorServer()
    with pytest.raises(ValueError, match="better response's text"):
        server.set_better("task", ["A"])  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-0.1, 1.01, math.nan])
def test_pairwise_rates_refuses_a_tie_share_outside_0_1(value: float) -> None:
    with pytest.raises(ValueError, match=r"tie_share must be a share in \[0, 1\]"):
        pairwise_rates(Persona("critic"), tie_share=value)


# -- pairwise_rates --------------------------------------------------------------------------


def test_pairwise_rates_by_hand_for_accuracy_06_and_position_bias_05() -> None:
    # Unsure 0.4 of the time; then A with 0.5, else each other label with 0.25.
    # Better first: A 0.6 + 0.2 = 0.8, B 0.1, TIE 0.1. Better second: A 0.3, B 0.6, TIE 0.1.
    # Right: (0.8 + 0.6) / 2 = 0.7. A share of A-or-B: (0.8 + 0.3) / (0.8 + 0.3 + 0.1 + 0.6).
    # Agreeing orders: 0.8 * 0.6 + 0.1 * 0.3 + 0.1 * 0.1 = 0.52, so a flip in 0.48.
    rates = pairwise_rates(Persona("critic", accuracy=0.6, position_bias=0.5))
    assert rates.accuracy == pytest.approx(0.7)
    assert rates.first_position == pytest.approx(1.1 / 1.8)
    assert rates.flip == pytest.approx(0.48)


def test_pairwise_rates_of_a_perfect_judge_on_ties_only_has_no_first_position() -> None:
    rates = pairwise_rates(Persona("critic", accuracy=1.0, position_bias=0.9), tie_share=1.0)
    assert rates == PairwiseRates(first_position=None, flip=0.0, accuracy=1.0)


def test_pairwise_rates_is_a_frozen_dataclass() -> None:
    rates = pairwise_rates(Persona("critic"))
    with pytest.raises(AttributeError):
        rates.flip = 0.0  # type: ignore[misc]


def measured_rates(
    first: Sequence[str], second: Sequence[str], truths: Sequence[str]
) -> dict[str, float]:
    """Rates over pairs whose first order had truth ``truths[i]`` and answer ``first[i]``,
    and whose swapped order had answer ``second[i]``."""
    answers = [*first, *second]
    right = [*truths, *(SWAP[t] for t in truths)]
    decisive = [k for k in answers if k in ("A", "B")]
    return {
        "first_position": decisive.count("A") / len(decisive),
        "flip": sum(a != SWAP[b] for a, b in zip(first, second, strict=True)) / len(first),
        "accuracy": sum(a == t for a, t in zip(answers, right, strict=True)) / len(answers),
        "decisive": len(decisive),
    }


def assert_rates_match(measured: dict[str, float], expected: PairwiseRates, pairs: int) -> None:
    assert expected.first_position is not None
    assert within(measured["first_position"], expected.first_position, int(measured["decisive"]))
    assert within(measured["flip"], expected.flip, pairs)
    assert within(measured["accuracy"], expected.accuracy, 2 * pairs)


@pytest.mark.slow  # a statistical simulation: thousands of draws
@pytest.mark.parametrize(
    ("accuracy", "position_bias", "tie_share"),
    [(0.6, 0.5, 0.0), (0.8, 0.0, 0.2), (0.3, 0.9, 0.5), (0.0, 0.4, 0.1)],
)
def test_pairwise_rates_match_the_persona_decision_over_20000_pairs(
    accuracy: float, position_bias: float, tie_share: float
) -> None:
    persona = Persona("critic", accuracy=accuracy, position_bias=position_bias)
    n = 20_000
    ties = round(n * tie_share)
    first, second, truths = [], [], []
    for i in range(n):
        pair = Pair(f"task {i}", f"one {i}", f"other {i}")
        # Decisive pairs alternate which candidate is better, so each order shows it first.
        truth = "TIE" if i < ties else ("A" if i % 2 else "B")
        swapped = Pair(pair.query, pair.response_b, pair.response_a)
        first.append(decide_pair(persona, "critic", truth, pair_digest(pair)).kind)
        second.append(decide_pair(persona, "critic", SWAP[truth], pair_digest(swapped)).kind)
        truths.append(truth)
    measured = measured_rates(first, second, truths)
    assert_rates_match(measured, pairwise_rates(persona, tie_share=tie_share), n)


@pytest.mark.slow  # thousands of pairs judged over HTTP
@pytest.mark.anyio
async def test_pairwise_rates_match_server_answers_over_http() -> None:
    persona = Persona("critic", accuracy=0.6, position_bias=0.5)
    n, ties = 600, 120
    pairs, better = decisive_pairs(n - ties)
    tie_pairs = [(f"tie {i}", f"one way {i}", f"another way {i}") for i in range(ties)]
    better.update({q: None for q, _, _ in tie_pairs})
    shown = pairs + tie_pairs
    async with VendorServer([persona], better=better) as server:
        kinds = await judge_all(server, "critic", both_orders(shown))
    truths = ["A"] * (n - ties) + ["TIE"] * ties
    measured = measured_rates(kinds[:n], kinds[n:], truths)
    assert_rates_match(measured, pairwise_rates(persona, tie_share=ties / n), n)
