"""Properties of reading a one_call rubric answer (:func:`parse_criteria`)."""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from cross_judge.critic._parsing import LABEL_KEYS, REASONING_KEYS
from cross_judge.critic._rubric import parse_criteria
from cross_judge.rubric import Criterion, CriterionVerdict, Rubric

BINARY = Rubric(
    criteria=tuple(Criterion(id=cid, requirement=f"{cid}.") for cid in ("correct", "cites", "x_1"))
)
ORDINAL = BINARY.model_copy(update={"scale": {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}})


def parse(text: str, rubric: Rubric) -> dict[str, CriterionVerdict] | str:
    return parse_criteria(text, rubric, label_keys=LABEL_KEYS, reasoning_keys=REASONING_KEYS)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = parse(text, BINARY)
    assert isinstance(result, (str, dict))


@settings(max_examples=200)
@given(json_values)
def test_arbitrary_json_never_raises(value: object) -> None:
    for wrapped in (value, {"criteria": value}, {"correct": value}):
        result = parse(json.dumps(wrapped), BINARY)
        assert isinstance(result, (str, dict))


@st.composite
def answers(draw: st.DrawFn, rubric: Rubric) -> tuple[dict[str, str], str]:
    asked = draw(st.lists(st.sampled_from(rubric.ids), min_size=1, unique=True))
    labels = {cid: draw(st.sampled_from(rubric.labels)) for cid in asked}
    form = draw(st.sampled_from(["nested", "top", "list", "bare"]))
    if form == "nested":
        body: object = {"criteria": {c: {"kind": k, "confidence": 0.5} for c, k in labels.items()}}
    elif form == "top":
        body = {c: {"kind": k} for c, k in labels.items()}
    elif form == "list":
        body = {"criteria": [{"id": c, "kind": k} for c, k in labels.items()]}
    else:
        body = {"criteria": labels}
    return labels, json.dumps(body)


@settings(max_examples=200)
@given(st.sampled_from([BINARY, ORDINAL]).flatmap(lambda r: st.tuples(st.just(r), answers(r))))
def test_an_answer_built_from_the_scales_labels_parses_back_to_them(
    case: tuple[Rubric, tuple[dict[str, str], str]],
) -> None:
    rubric, (labels, text) = case
    result = parse(text, rubric)
    assert isinstance(result, dict), result
    assert {cid: result[cid].kind for cid in labels} == labels
    assert all(result[cid].score == rubric.score_of(k) for cid, k in labels.items())
    left_out = set(rubric.ids) - set(labels)
    assert all(result[cid].kind == "PARSE_FAIL" for cid in left_out)
