"""Specification of the calibration of the token probabilities the simulated vendor serves
(``Persona.logprob_temperature``), measured in process over 2,000 items with the same
functions the server answers with (no HTTP, so it stays fast).

At temperature 1 the served probability of the chosen label is calibrated by
construction (``P(right | c) = c``); at 0.5 it is over-confident. The stated confidence is
drawn as before, so its calibration differs measurably.
"""

from __future__ import annotations

import hashlib

import pytest

from cross_judge.testing import Persona
from cross_judge.testing._decisions import decide
from cross_judge.testing._logprobs import label_distribution, served_confidence, token_logprobs

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
ITEMS = 2000


def expected_calibration_error(
    confidences: list[float], right: list[bool], bins: int = 10
) -> float:
    """ECE over equal-width bins: the mean over answers of |accuracy - confidence| in each
    answer's bin."""
    total = 0.0
    for b in range(bins):
        members = [i for i, c in enumerate(confidences) if min(int(c * bins), bins - 1) == b]
        if members:
            accuracy = sum(right[i] for i in members) / len(members)
            confidence = sum(confidences[i] for i in members) / len(members)
            total += len(members) * abs(accuracy - confidence)
    return total / len(confidences)


def served(persona: Persona) -> tuple[list[float], list[float], list[bool]]:
    """The served label probabilities, stated confidences and rightness over ITEMS items."""
    probabilities, stated, right = [], [], []
    for i in range(ITEMS):
        digest = hashlib.sha256(f"item {i}".encode()).hexdigest()
        truth = LABELS[i % len(LABELS)]
        decision = decide(persona, persona.model, truth, digest)
        is_right = decision.kind == truth
        probabilities.append(served_confidence(persona, persona.model, digest, is_right))
        stated.append(decision.confidence)
        right.append(is_right)
    return probabilities, stated, right


def test_served_label_probability_is_calibrated_at_temperature_one() -> None:
    probabilities, stated, right = served(Persona("critic", accuracy=0.6))
    assert expected_calibration_error(probabilities, right) < 0.05
    assert expected_calibration_error(stated, right) > 0.1  # the stated one is not


def test_temperature_below_one_makes_it_over_confident() -> None:
    probabilities, _, right = served(Persona("critic", accuracy=0.6, logprob_temperature=0.5))
    assert expected_calibration_error(probabilities, right) > 0.1
    assert sum(probabilities) / ITEMS > sum(right) / ITEMS  # confident beyond its accuracy


@pytest.mark.parametrize("accuracy", [0.0, 1.0])
def test_extreme_accuracies_still_serve_probabilities_inside_zero_one(accuracy: float) -> None:
    probabilities, _, _ = served(Persona("critic", accuracy=accuracy))
    assert all(0.0 < p < 1.0 for p in probabilities)


def test_the_label_distribution_gives_the_truth_most_of_the_rest_when_wrong() -> None:
    distribution = label_distribution("KEEP", 0.2, LABELS, truth="MERGE", order_seed="s")
    # The other three share 0.8 as 4 : 2 : 1, the truth first.
    assert distribution[0][0] == "MERGE"
    assert distribution[0][1] == pytest.approx(0.8 * 4 / 7)
    assert dict(distribution)["KEEP"] == 0.2
    assert sum(p for _, p in distribution) == pytest.approx(1.0)


def test_served_tokens_concatenate_to_the_content_and_carry_the_label_probability() -> None:
    content = '{"kind": "KEEP", "confidence": 0.8, "reasoning": "Fits, mostly.\\n"}'
    start = content.index("KEEP")
    distribution = label_distribution("KEEP", 0.75, LABELS, truth="KEEP", order_seed="s")
    tokens = token_logprobs(content, (start, start + 4), distribution, 2)["content"]
    assert "".join(t["token"] for t in tokens) == content
    [label] = [t for t in tokens if t["logprob"] < 0]
    assert label["token"] == "KEEP"
    assert label["top_logprobs"][0]["token"] == "KEEP"
    assert len(label["top_logprobs"]) == 2
