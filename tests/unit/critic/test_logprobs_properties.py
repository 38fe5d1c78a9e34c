"""Properties of :func:`cross_judge.critic._logprobs.label_probabilities` on generated input."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings, strategies as st

from cross_judge.critic import _logprobs as logprobs
from cross_judge.critic._logprobs import LabelProbabilities
from cross_judge.critic._parsing import LABEL_KEYS
from cross_judge.transport import TokenLogprob

JSONISH = st.text(alphabet='{}":, \n-_.aApPsSfFkindverdct0123456789\\\u200b', max_size=40)
ANY_FLOAT = st.floats(min_value=-30.0, max_value=0.0) | st.floats()
LABEL = st.text(alphabet="ABPS -", min_size=1, max_size=4)
CHOSEN = "\u00a7"  # stands for the chosen label in a generated reply
REPLY = JSONISH | st.builds(lambda a, b: a + '{"kind": "' + CHOSEN + '"' + b, JSONISH, JSONISH)


def cuts(text: str, points: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(p % (len(text) + 1) for p in points)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def assert_a_distribution(result: LabelProbabilities) -> None:
    values = list(result.probabilities.values())
    assert math.isclose(sum(values), 1.0, abs_tol=1e-9)
    assert all(0.0 < v < 1.0 for v in values)  # never a certainty nobody measured
    assert result.confidence == result.probabilities[result.chosen]


@settings(max_examples=300, deadline=None)
@given(
    text=REPLY,
    points=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
    spell_the_text=st.sampled_from([True, True, True, False]),
    stray=st.lists(JSONISH, max_size=3),
    tops=st.lists(st.lists(st.tuples(JSONISH | LABEL, ANY_FLOAT), max_size=4), max_size=12),
    own_logprobs=st.lists(ANY_FLOAT, max_size=8),
    labels=st.lists(LABEL, max_size=4),
    chosen=LABEL,
    listed_labels=st.sampled_from([True, True, True, False]),
)
def test_any_input_gives_none_or_a_distribution_without_raising(
    text: str,
    points: list[int],
    spell_the_text: bool,
    stray: list[str],
    tops: list[list[tuple[str, float]]],
    own_logprobs: list[float],
    labels: list[str],
    chosen: str,
    listed_labels: bool,
) -> None:
    if listed_labels:
        labels = [*labels, chosen]
    text = text.replace(CHOSEN, chosen)
    pieces = cuts(text, points) if spell_the_text else stray
    tokens = [
        TokenLogprob(
            token=piece,
            logprob=own_logprobs[i] if i < len(own_logprobs) else -0.1,
            top=tuple(tops[i]) if i < len(tops) else (),
        )
        for i, piece in enumerate(pieces)
    ]
    # The inner function: the public one's safety net must not be what keeps this passing.
    result = logprobs._label_probabilities(text, tokens, chosen, labels, LABEL_KEYS)
    if result is not None:
        assert_a_distribution(result)


@st.composite
def answers(draw: st.DrawFn) -> tuple[str, list[TokenLogprob], str, list[str]]:
    """A reply ending in ``{"kind": "<label>"}``, cut into tokens that each list two or more
    alternatives (a part of the token then a label prefix or junk) with finite logprobs."""
    labels = draw(st.lists(st.text(alphabet="ABPS", min_size=1, max_size=4), min_size=1))
    labels = list(dict.fromkeys(labels))
    chosen = draw(st.sampled_from(labels))
    written = "".join(c.lower() if draw(st.booleans()) else c for c in chosen)
    quoted_item = draw(st.sampled_from(["", 'Item: {"kind": "' + labels[0] + '"}. ']))
    text = quoted_item + '{"kind": "' + written + '", "confidence": 0.5}'
    pieces = cuts(text, draw(st.lists(st.integers(min_value=0, max_value=80), max_size=12)))
    fragments = [label[:n] for label in labels for n in range(1, len(label) + 1)]
    fragments += ['"', " ", "Maybe", '", "']
    logprob = st.floats(min_value=-30.0, max_value=0.0)
    tokens = []
    for piece in pieces:
        others = [
            (piece[: draw(st.integers(0, len(piece)))] + fragment, lp)
            for fragment, lp in draw(
                st.lists(st.tuples(st.sampled_from(fragments), logprob), max_size=4)
            )
        ]
        distinct = (piece + "\u2603", draw(logprob))  # guarantees a listed alternative
        tokens.append(TokenLogprob(piece, draw(logprob), ((piece, -0.5), distinct, *others)))
    return text, tokens, chosen, labels


@settings(max_examples=300, deadline=None)
@given(answers())
def test_a_well_formed_answer_with_listed_alternatives_gives_a_distribution(
    answer: tuple[str, list[TokenLogprob], str, list[str]],
) -> None:
    text, tokens, chosen, labels = answer
    result = logprobs.label_probabilities(text, tokens, chosen=chosen, labels=labels)
    assert result is not None
    assert result.chosen == chosen
    assert set(result.probabilities) == set(labels)
    assert_a_distribution(result)
