"""Specification of item difficulty in ``cross_judge.testing``: with ``error_correlation``
rho > 0, simulated personas err together on hard items (a Gaussian threshold model that
keeps each persona's accuracy) and share a distractor when wrong; with rho 0 nothing
changes.

Most tests call the pure decision ``decisions.decide`` over thousands of items (no HTTP, so the
file runs in a few seconds); the HTTP tests drive a real ``VendorServer`` on 127.0.0.1
with a sync ``httpx.Client``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from cross_judge.testing import Persona, VendorServer, _decisions as decisions, main

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}


def decide(
    persona: Persona, server: VendorServer, rho: float, i: int, *, seed: int = 0
) -> tuple[decisions.Decision, str]:
    """The decision of ``persona`` on item ``i`` (truth ``LABELS[i % 4]``), as ``server``
    would make it, and that truth."""
    item = f"item {i}"
    truth = LABELS[i % 4]
    decision = decisions.decide(
        persona,
        persona.model,
        truth,
        hashlib.sha256(item.encode()).hexdigest(),
        difficulty=server.difficulty_of(item),
        error_correlation=rho,
        distractor_key=decisions.distractor_key(item, seed),
    )
    return decision, truth


def wrongness(persona: Persona, rho: float, n: int) -> list[bool]:
    server = VendorServer(error_correlation=rho)
    out = []
    for i in range(n):
        decision, truth = decide(persona, server, rho, i)
        out.append(decision.kind != truth)
    return out


def phi(a: Sequence[bool], b: Sequence[bool]) -> float:
    """The phi coefficient (Pearson correlation) of two binary sequences."""
    pairs = list(zip(a, b, strict=True))
    n11 = sum(x and y for x, y in pairs)
    n10 = sum(x and not y for x, y in pairs)
    n01 = sum(y and not x for x, y in pairs)
    n00 = len(pairs) - n11 - n10 - n01
    denominator = math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
    return (n11 * n00 - n10 * n01) / denominator


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [-0.1, 1.0, 1.5, math.nan])
def test_error_correlation_outside_zero_to_one_raises(rho: float) -> None:
    with pytest.raises(ValueError, match=r"error_correlation must be a number in \[0, 1\)"):
        VendorServer(error_correlation=rho)


@pytest.mark.parametrize("value", [-0.01, 1.01, math.nan])
def test_difficulty_outside_zero_to_one_raises(value: float) -> None:
    with pytest.raises(ValueError, match=r"difficulty must be a number in \[0, 1\]"):
        VendorServer(difficulty={"an item": value})
    with pytest.raises(ValueError, match=r"difficulty must be a number in \[0, 1\]"):
        VendorServer().set_difficulty("an item", value)


def test_difficulty_of_is_deterministic_and_in_the_open_unit_interval() -> None:
    first = [VendorServer().difficulty_of(f"item {i}") for i in range(200)]
    again = [VendorServer().difficulty_of(f"item {i}") for i in range(200)]
    assert first == again
    assert all(0.0 < d < 1.0 for d in first)
    assert len(set(first)) == 200


def test_difficulty_seed_picks_other_difficulties() -> None:
    seed0, seed1 = VendorServer(difficulty_seed=0), VendorServer(difficulty_seed=1)
    assert seed0.difficulty_of("an item") != seed1.difficulty_of("an item")


def test_difficulties_over_items_are_uniform() -> None:
    server = VendorServer()
    values = [server.difficulty_of(f"item {i}") for i in range(10_000)]
    for q in (0.1, 0.5, 0.9):
        assert abs(sum(v < q for v in values) / len(values) - q) < 0.02


def test_set_difficulties_are_honoured_with_stripped_keys() -> None:
    server = VendorServer(difficulty={"  easy item  ": 0.0, "hard item": 1.0})
    server.set_difficulty(" middle item\n", 0.25)
    assert server.difficulty_of("easy item") == 0.0
    assert server.difficulty_of("hard item") == 1.0
    assert server.difficulty_of("middle item") == 0.25
    assert server.difficulty_of("Judge this: <item> hard item </item>") == 1.0


def test_cli_rejects_an_error_correlation_of_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(["--error-correlation", "1", "--max-seconds", "0.1"])
    assert exc_info.value.code == 2
    assert "error_correlation must be a number in [0, 1)" in capsys.readouterr().err


def test_cli_accepts_error_correlation_and_difficulty_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--port", "0", "--max-seconds", "0.1", "--error-correlation", "0.5"]
    assert main([*argv, "--difficulty-seed", "3"]) == 0
    assert capsys.readouterr().out.startswith("READY ")


# -- the model ---------------------------------------------------------------------------------


@pytest.mark.slow  # a statistical simulation: thousands of draws
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.8])
@pytest.mark.parametrize("accuracy", [0.7, 0.9])
def test_marginal_accuracy_over_items_is_the_personas_accuracy(rho: float, accuracy: float) -> None:
    wrong = wrongness(Persona("critic", accuracy=accuracy), rho, 20_000)
    assert abs((1 - sum(wrong) / len(wrong)) - accuracy) < 0.015


def test_errors_of_two_personas_are_correlated_with_rho() -> None:
    a, b = Persona("a", accuracy=0.75, seed=1), Persona("b", accuracy=0.75, seed=2)
    assert phi(wrongness(a, 0.6, 5_000), wrongness(b, 0.6, 5_000)) > 0.2


def test_errors_of_two_personas_are_independent_without_rho() -> None:
    a, b = Persona("a", accuracy=0.75, seed=1), Persona("b", accuracy=0.75, seed=2)
    assert abs(phi(wrongness(a, 0.0, 5_000), wrongness(b, 0.0, 5_000))) < 0.05


def test_error_rate_rises_with_difficulty() -> None:
    persona = Persona("critic", accuracy=0.75)
    server = VendorServer(error_correlation=0.6)
    wrong_by_fifth: list[list[bool]] = [[] for _ in range(5)]
    for i in range(10_000):
        decision, truth = decide(persona, server, 0.6, i)
        fifth = min(4, int(server.difficulty_of(f"item {i}") * 5))
        wrong_by_fifth[fifth].append(decision.kind != truth)
    rates = [sum(w) / len(w) for w in wrong_by_fifth]
    assert rates == sorted(rates)
    assert rates[4] - rates[0] > 0.4


@pytest.mark.parametrize(("accuracy", "right"), [(0.0, False), (1.0, True)])
def test_accuracy_zero_and_one_are_exact_at_any_difficulty(accuracy: float, right: bool) -> None:
    persona = Persona("critic", accuracy=accuracy)
    digest = hashlib.sha256(b"an item").hexdigest()
    for difficulty in (0.0, 1e-12, 0.5, 1 - 1e-12, 1.0):
        decision = decisions.decide(
            persona, "critic", "KEEP", digest, difficulty=difficulty, error_correlation=0.9
        )
        assert (decision.kind == "KEEP") is right


def test_wrong_answers_share_a_wrong_label_more_often_with_rho() -> None:
    a, b = Persona("a", accuracy=0.6, seed=1), Persona("b", accuracy=0.6, seed=2)

    def same_wrong_label_share(rho: float) -> float:
        server = VendorServer(error_correlation=rho)
        both_wrong = same = 0
        for i in range(5_000):
            (da, truth), (db, _) = decide(a, server, rho, i), decide(b, server, rho, i)
            if da.kind != truth and db.kind != truth:
                both_wrong += 1
                same += da.kind == db.kind
        return same / both_wrong

    independent = same_wrong_label_share(0.0)
    assert abs(independent - 1 / 3) < 0.05  # uniform among three wrong labels
    assert same_wrong_label_share(0.6) > independent + 0.1


# -- rho 0 changes nothing -------------------------------------------------------------------

REGRESSION_PERSONAS = (
    Persona("critic-a", accuracy=0.7, seed=3),
    Persona(
        "critic-b",
        accuracy=0.6,
        bias={"SPLIT": 3.0, "MERGE": 1.0},
        confidence=(0.5, 0.9),
        jitter=0.002,
    ),
    Persona("critic-c", accuracy=0.5, labels=("yes", "no"), style="messy", seed=11),
)
# Recorded over HTTP from the server before error_correlation existed.
RECORDED_ANSWERS = {
    ("critic-a", "item one"): '{"kind": "MERGE", "confidence": 0.72, '
    '"reasoning": "On balance the evidence points to MERGE."}',
    ("critic-a", "gold outside item"): '{"kind": "OTHER", "confidence": 0.92, '
    '"reasoning": "On balance the evidence points to OTHER."}',
    ("critic-a", "padded item"): '{"kind": "SPLIT", "confidence": 0.6, '
    '"reasoning": "The wording of the item supports SPLIT."}',
    ("critic-b", "item one"): '{"kind": "MERGE", "confidence": 0.66, '
    '"reasoning": "The wording of the item supports MERGE."}',
    ("critic-b", "gold outside item"): '{"kind": "SPLIT", "confidence": 0.51, '
    '"reasoning": "On balance the evidence points to SPLIT."}',
    ("critic-b", "gold keep item"): '{"kind": "KEEP", "confidence": 0.88, '
    '"reasoning": "The wording of the item supports KEEP."}',
    ("critic-c", "Is the sky green?"): '{"kind": "yes", "confidence": "75%", '
    '"reasoning": "On balance the evidence points to yes.",}',
    ("critic-c", "gold keep item"): '{"kind": "no", "confidence": "70%", '
    '"reasoning": "The wording of the item supports no.",}',
}
# sha256 over repr((kind, confidence, reasoning, delay)) of the three personas on
# "item 0".."item 499" (latent truths), recorded from the code before error_correlation.
RECORDED_DECISIONS_SHA256 = "68f93334c13274f9045c65842a3ffbb80b7ca4945aa8d2a212d37529f8ae4c4d"


def test_without_correlation_answers_over_http_are_those_recorded_before_difficulty() -> None:
    # Difficulties and their seed must not matter while error_correlation is 0.
    server = VendorServer(
        REGRESSION_PERSONAS,
        gold={"gold keep item": "KEEP", "gold outside item": "OTHER"},
        difficulty={"item one": 1.0, "gold keep item": 0.0},
        difficulty_seed=5,
    )
    with server, httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client:
        for (model, item), recorded in RECORDED_ANSWERS.items():
            body = {
                "model": model,
                "messages": [{"role": "user", "content": f"<item>{item}</item>"}],
            }
            response = client.post("/chat/completions", json=body)
            assert response.status_code == 200, response.text
            assert response.json()["choices"][0]["message"]["content"] == recorded


def test_without_correlation_decisions_are_those_recorded_before_difficulty() -> None:
    digest = hashlib.sha256()
    for persona in REGRESSION_PERSONAS:
        for i in range(500):
            item_digest = hashlib.sha256(f"item {i}".encode()).hexdigest()
            truth = persona.labels[int(item_digest[:16], 16) % len(persona.labels)]
            decision = decisions.decide(persona, persona.model, truth, item_digest, difficulty=0.99)
            digest.update(repr(tuple(decision)).encode())
    assert digest.hexdigest() == RECORDED_DECISIONS_SHA256


# -- over HTTP -------------------------------------------------------------------------------


def test_errors_are_correlated_on_the_wire() -> None:
    gold = {f"review item {i}": LABELS[i % 4] for i in range(300)}
    personas = (Persona("a", accuracy=0.7, seed=1), Persona("b", accuracy=0.7, seed=2))
    server = VendorServer(personas, gold=gold, error_correlation=0.6)
    wrong: dict[str, list[bool]] = {"a": [], "b": []}
    with server, httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client:
        for item, label in gold.items():
            for model, answers in wrong.items():
                prompt = f"Judge this.\n<item>{item}</item>"
                body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
                response = client.post("/chat/completions", json=body)
                assert response.status_code == 200, response.text
                text = response.json()["choices"][0]["message"]["content"]
                answers.append(json.loads(text)["kind"] != label)
    assert phi(wrong["a"], wrong["b"]) > 0.2


def test_items_set_to_difficulty_one_are_answered_wrong_by_every_persona() -> None:
    personas = (Persona("a", accuracy=0.9, seed=1), Persona("b", accuracy=0.9, seed=2))
    server = VendorServer(personas, error_correlation=0.8)
    for i in range(10):
        server.set_difficulty(f"hard {i}", 1.0)
        server.set_gold(f"hard {i}", "KEEP")
    with server, httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client:
        for i in range(10):
            for model in ("a", "b"):
                body = {"model": model, "messages": [{"role": "user", "content": f"hard {i}"}]}
                response = client.post("/chat/completions", json=body)
                assert response.status_code == 200, response.text
                text = response.json()["choices"][0]["message"]["content"]
                assert json.loads(text)["kind"] != "KEEP"
