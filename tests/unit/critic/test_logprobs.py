"""Confidence from token probabilities: the chosen label's probability, renormalised over
the label vocabulary at the tokens where the label is decided."""

from __future__ import annotations

import math

import pytest

from cross_judge.critic._logprobs import LabelProbabilities, label_probabilities
from cross_judge.transport import TokenLogprob

PASS_FAIL = ("PASS", "FAIL")
ONE_TO_FIVE = ("1", "2", "3", "4", "5")


def tok(token: str, *top: tuple[str, float], logprob: float | None = None) -> TokenLogprob:
    """A token; its logprob is its own entry in ``top`` unless given."""
    own = dict(top).get(token, -0.01) if logprob is None else logprob
    return TokenLogprob(token=token, logprob=own, top=tuple(top))


def text_of(tokens: list[TokenLogprob]) -> str:
    return "".join(t.token for t in tokens)


def e(x: float) -> float:
    return math.exp(x)


def openai_pass_answer(*top_at_label: tuple[str, float]) -> list[TokenLogprob]:
    """``{"kind":"PASS","confidence":0.9}`` cut as OpenAI's tokenizer cuts it."""
    return [
        tok('{"'),
        tok("kind"),
        tok('":"'),
        tok("PASS", *top_at_label),
        tok('","'),
        tok("confidence"),
        tok('":'),
        tok("0"),
        tok("."),
        tok("9"),
        tok("}"),
    ]


def probabilities_of(
    tokens: list[TokenLogprob], chosen: str, labels: tuple[str, ...] = PASS_FAIL
) -> LabelProbabilities:
    result = label_probabilities(text_of(tokens), tokens, chosen=chosen, labels=labels)
    assert result is not None
    return result


def test_openai_style_answer_renormalises_the_label_token_over_the_vocabulary() -> None:
    # 'P' is a strict prefix of PASS only, so its mass counts toward PASS.
    tokens = openai_pass_answer(("PASS", -0.105), ("FAIL", -2.303), ("P", -6.0))
    result = probabilities_of(tokens, "PASS")
    expected = (e(-0.105) + e(-6.0)) / (e(-0.105) + e(-2.303) + e(-6.0))
    assert result.confidence == pytest.approx(expected, rel=1e-12)
    assert result.probabilities["FAIL"] == pytest.approx(1 - expected, rel=1e-12)


def test_single_token_labels_give_the_renormalised_top_alternatives() -> None:
    tokens = openai_pass_answer(("PASS", -0.5), ("FAIL", -1.0))
    result = probabilities_of(tokens, "PASS")
    assert result.confidence == pytest.approx(e(-0.5) / (e(-0.5) + e(-1.0)), rel=1e-12)
    assert dict(result.probabilities) == pytest.approx(
        {"PASS": e(-0.5) / (e(-0.5) + e(-1.0)), "FAIL": e(-1.0) / (e(-0.5) + e(-1.0))}
    )


def test_alternatives_that_are_no_label_are_left_out_of_the_renormalisation() -> None:
    tokens = openai_pass_answer(("PASS", -0.2), ("FAIL", -1.6), (" ", -2.0), ("Maybe", -2.5))
    result = probabilities_of(tokens, "PASS")
    assert result.confidence == pytest.approx(e(-0.2) / (e(-0.2) + e(-1.6)), rel=1e-12)


def test_alternatives_differing_only_in_case_count_for_the_same_label() -> None:
    tokens = openai_pass_answer(("PASS", -0.5), ("FAIL", -1.0), ("pass", -1.5))
    result = probabilities_of(tokens, "PASS")
    expected = (e(-0.5) + e(-1.5)) / (e(-0.5) + e(-1.0) + e(-1.5))
    assert result.confidence == pytest.approx(expected, rel=1e-12)


def test_a_chosen_token_missing_from_its_top_list_is_added_with_its_own_logprob() -> None:
    tokens = openai_pass_answer(("FAIL", -1.0))
    tokens[3] = tok("PASS", ("FAIL", -1.0), logprob=-0.7)
    result = probabilities_of(tokens, "PASS")
    assert result.confidence == pytest.approx(e(-0.7) / (e(-0.7) + e(-1.0)), rel=1e-12)


def test_multi_token_labels_are_decided_along_the_chosen_path() -> None:
    labels = ("ACCEPT", "REJECT", "REVISE")
    tokens = [
        tok('{"kind":"'),
        tok("RE", ("RE", -0.2), ("AC", -1.8), ("REV", -3.0)),
        tok("JECT", ("JECT", -0.5), ("VISE", -1.0)),
        tok('"}'),
    ]
    result = probabilities_of(tokens, "REJECT", labels)
    z1 = e(-0.2) + e(-1.8) + e(-3.0)
    z2 = e(-0.5) + e(-1.0)
    assert result.confidence == pytest.approx(e(-0.2) / z1 * e(-0.5) / z2, rel=1e-12)
    assert result.probabilities["ACCEPT"] == pytest.approx(e(-1.8) / z1, rel=1e-12)
    assert result.probabilities["REVISE"] == pytest.approx(
        e(-3.0) / z1 + e(-0.2) / z1 * e(-1.0) / z2, rel=1e-12
    )


def test_a_prefix_shared_by_several_labels_is_not_a_decision() -> None:
    labels = ("REJECT", "REVISE")
    tokens = [
        tok('{"kind":"'),
        tok("RE", ("RE", -0.1), ("R", -2.0)),
        tok("VISE", ("VISE", -0.3), ("JECT", -1.3)),
        tok('"}'),
    ]
    result = probabilities_of(tokens, "REVISE", labels)
    assert result.confidence == pytest.approx(e(-0.3) / (e(-0.3) + e(-1.3)), rel=1e-12)


def test_labels_sharing_a_first_token_are_told_apart_at_the_next() -> None:
    labels = ("PASS", "FAIL", "PARTIAL")
    tokens = [
        tok('{"kind":"'),
        tok("PA", ("PA", -0.1), ("FA", -2.5)),
        tok("SS", ("SS", -0.4), ("RTIAL", -1.2)),
        tok('"}', ('"}', -0.01), ("ED", -5.0)),  # PASSED is no label: nothing left to decide
    ]
    result = probabilities_of(tokens, "PASS", labels)
    z1 = e(-0.1) + e(-2.5)
    z2 = e(-0.4) + e(-1.2)
    assert result.confidence == pytest.approx(e(-0.1) / z1 * e(-0.4) / z2, rel=1e-12)
    assert result.probabilities["PARTIAL"] == pytest.approx(e(-0.1) / z1 * e(-1.2) / z2)


def test_an_alternative_shared_by_several_labels_is_split_evenly_over_those_off_the_path() -> None:
    labels = ("PASS", "PARTIAL", "FAIL")
    tokens = [tok('{"kind":"'), tok("PASS", ("PASS", -0.3), ("P", -1.0), ("FAIL", -2.0)), tok('"}')]
    result = probabilities_of(tokens, "PASS", labels)
    z = e(-0.3) + e(-1.0) + e(-2.0)
    assert result.confidence == pytest.approx((e(-0.3) + e(-1.0) / 2) / z, rel=1e-12)
    assert result.probabilities["PARTIAL"] == pytest.approx(e(-1.0) / 2 / z, rel=1e-12)


def test_a_value_starting_inside_a_token_needs_alternatives_sharing_that_tokens_lead() -> None:
    # ':"P' vs ':"F' decide; 'PASS' lacks the lead ':"' so it cannot stand at that position.
    tokens = [
        tok('{"kind'),
        tok('":"P', ('":"P', -0.1), ('":"F', -2.4), ("PASS", -1.0)),
        tok("ASS", ("ASS", -0.01), ("ARTIAL", -5.0)),
        tok('"}'),
    ]
    result = probabilities_of(tokens, "PASS")
    assert result.confidence == pytest.approx(e(-0.1) / (e(-0.1) + e(-2.4)), rel=1e-12)


def test_a_value_starting_after_a_space_and_quote_in_one_token() -> None:
    tokens = [tok('{"kind":'), tok(' "PASS', (' "PASS', -0.3), (' "FAIL', -1.5)), tok('"}')]
    result = probabilities_of(tokens, "PASS")
    assert result.confidence == pytest.approx(e(-0.3) / (e(-0.3) + e(-1.5)), rel=1e-12)


def test_a_quoted_item_verdict_before_the_judges_own_is_not_the_one_read() -> None:
    quoted = [
        tok("The item reads "),
        tok('{"kind": "'),
        tok("PASS", ("PASS", -0.01), ("FAIL", -5.0)),
        tok('"}'),
        tok(". My answer: "),
    ]
    own = [tok('{"kind": "'), tok("PASS", ("PASS", -0.7), ("FAIL", -0.7)), tok('"}')]
    result = probabilities_of(quoted + own, "PASS")
    assert result.confidence == pytest.approx(0.5, rel=1e-12)


def test_the_judges_own_label_is_found_when_the_quoted_item_gave_another() -> None:
    tokens = [
        tok('Item: {"kind": "PASS"}. Answer: {"kind": "'),
        tok("FAIL", ("FAIL", -0.2), ("PASS", -1.9)),
        tok('"}'),
    ]
    result = probabilities_of(tokens, "FAIL")
    assert result.confidence == pytest.approx(e(-0.2) / (e(-0.2) + e(-1.9)), rel=1e-12)


def test_an_unquoted_numeric_label_is_read() -> None:
    tokens = [
        tok('{"verdict":'),
        tok(" "),
        tok("4", ("4", -0.4), ("5", -1.2), ("3", -2.0), ('"', -3.0)),
        tok(', "confidence": 0.7}'),
    ]
    result = probabilities_of(tokens, "4", ONE_TO_FIVE)
    # "1" and "2" are not listed: each gets the list's smallest probability (the quote's).
    z = e(-0.4) + e(-1.2) + e(-2.0) + 2 * e(-3.0)
    assert dict(result.probabilities) == pytest.approx(
        {"1": e(-3.0) / z, "2": e(-3.0) / z, "3": e(-2.0) / z, "4": e(-0.4) / z, "5": e(-1.2) / z}
    )


def test_expected_score_of_a_one_to_five_prompt_is_the_probability_weighted_mean() -> None:
    tokens = [
        tok('{"kind":"'),
        tok("4", ("4", -0.4), ("5", -1.2), ("3", -2.0)),
        tok('"}'),
    ]
    result = probabilities_of(tokens, "4", ONE_TO_FIVE)
    scores = {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}
    # "1" and "2", unlisted, each weigh the smallest listed probability, e(-2.0).
    z = e(-0.4) + e(-1.2) + 3 * e(-2.0)
    expected = (0.75 * e(-0.4) + 1.0 * e(-1.2) + (0.5 + 0.0 + 0.25) * e(-2.0)) / z
    assert result.expected_score(scores) == pytest.approx(expected, rel=1e-12)


def test_expected_score_renormalises_over_the_labels_that_have_a_score() -> None:
    result = LabelProbabilities("A", {"A": 0.5, "B": 0.3, "C": 0.2})
    assert result.expected_score({"a": 1.0, "b": 0.0}) == pytest.approx(0.5 / 0.8)


def test_expected_score_is_none_when_no_label_has_a_score() -> None:
    result = LabelProbabilities("A", {"A": 0.5, "B": 0.5})
    assert result.expected_score({"C": 1.0}) is None


def test_probabilities_are_read_only() -> None:
    result = LabelProbabilities("A", {"A": 1.0})
    with pytest.raises(TypeError):
        result.probabilities["A"] = 0.0  # type: ignore[index]  # the point of the test


def test_tokens_that_do_not_spell_the_text_give_none() -> None:
    tokens = openai_pass_answer(("PASS", -0.1), ("FAIL", -2.0))
    other = text_of(tokens).replace("0.9", "0.8")
    assert label_probabilities(other, tokens, chosen="PASS", labels=PASS_FAIL) is None


def test_no_tokens_give_none() -> None:
    assert label_probabilities('{"kind":"PASS"}', [], chosen="PASS", labels=PASS_FAIL) is None


def test_a_chosen_label_outside_the_vocabulary_gives_none() -> None:
    tokens = openai_pass_answer(("PASS", -0.1), ("FAIL", -2.0))
    assert label_probabilities(text_of(tokens), tokens, chosen="PASS", labels=("A", "B")) is None


def test_a_label_that_cannot_be_located_gives_none() -> None:
    tokens = openai_pass_answer(("PASS", -0.1), ("FAIL", -2.0))
    result = label_probabilities(text_of(tokens), tokens, chosen="FAIL", labels=PASS_FAIL)
    assert result is None


def test_tokens_without_alternatives_give_none_rather_than_certainty() -> None:
    tokens = openai_pass_answer()
    assert label_probabilities(text_of(tokens), tokens, chosen="PASS", labels=PASS_FAIL) is None


def test_a_non_finite_logprob_on_the_chosen_token_gives_none() -> None:
    tokens = openai_pass_answer(("PASS", math.nan), ("FAIL", -2.0))
    assert label_probabilities(text_of(tokens), tokens, chosen="PASS", labels=PASS_FAIL) is None


def test_chosen_and_labels_are_normalised_like_the_parser() -> None:
    tokens = openai_pass_answer(("PASS", -0.5), ("FAIL", -1.0))
    result = label_probabilities(text_of(tokens), tokens, chosen="pass", labels=["Pass", "fail"])
    assert result is not None
    assert (result.chosen, set(result.probabilities)) == ("PASS", {"PASS", "FAIL"})


def test_a_label_key_other_than_kind_is_found() -> None:
    tokens = [tok('{"Decision": "'), tok("FAIL", ("FAIL", -0.1), ("PASS", -2.4)), tok('"}')]
    result = probabilities_of(tokens, "FAIL")
    assert result.confidence == pytest.approx(e(-0.1) / (e(-0.1) + e(-2.4)), rel=1e-12)


# -- a label the top list left out --------------------------------------------------------


def test_a_label_missing_from_the_top_list_weighs_the_smallest_listed_probability() -> None:
    # FAIL is not in the list; "Maybe" (no label) is its least likely entry: FAIL weighs that.
    tokens = openai_pass_answer(("PASS", -0.01), ("Pass", -4.0), ("Maybe", -9.0))
    result = probabilities_of(tokens, "PASS")
    expected = (e(-0.01) + e(-4.0)) / (e(-0.01) + e(-4.0) + e(-9.0))
    assert result.confidence == pytest.approx(expected, rel=1e-12)
    assert result.probabilities["FAIL"] == pytest.approx(1 - expected, rel=1e-9)
    assert result.bounded


def test_a_top_list_that_lists_every_label_is_not_bounded() -> None:
    result = probabilities_of(openai_pass_answer(("PASS", -0.1), ("FAIL", -2.5)), "PASS")
    assert not result.bounded


def test_a_top_list_of_the_chosen_label_alone_reads_no_certainty() -> None:
    # A small model's top 10: the chosen label written ten ways, the other label nowhere.
    variants = [("PASS", -0.0001)] + [(f"PASS{'!' * n}", -12.0 - n) for n in range(1, 10)]
    result = probabilities_of(openai_pass_answer(*variants), "PASS")
    assert result.probabilities["FAIL"] > 0.0 and result.confidence < 1.0
    assert result.probabilities["FAIL"] == pytest.approx(e(-21.0) / e(-0.0001), rel=1e-6)
    assert result.bounded


def test_no_probability_read_is_exactly_zero_or_one_even_when_the_bound_underflows() -> None:
    tokens = openai_pass_answer(("PASS", 0.0), ("Maybe", -800.0))
    result = probabilities_of(tokens, "PASS")
    assert 0.0 < result.probabilities["FAIL"] < result.confidence < 1.0


def test_a_multi_token_label_left_out_at_its_deciding_token_is_bounded() -> None:
    # "RE" then "J": REVISE's "V" is not listed at the second token.
    labels = ("REJECT", "REVISE", "KEEP")
    tokens = [
        tok('{"kind":"'),
        tok("RE", ("RE", -0.2), ("KEEP", -1.8)),
        tok("J", ("J", -0.05), ("x", -6.0)),
        tok('ECT"}'),
    ]
    result = probabilities_of(tokens, "REJECT", labels)
    first = e(-0.2) / (e(-0.2) + e(-1.8))
    assert result.probabilities["KEEP"] == pytest.approx(1 - first, rel=1e-12)
    second = e(-0.05) / (e(-0.05) + e(-6.0))
    assert result.confidence == pytest.approx(first * second, rel=1e-12)
    assert result.probabilities["REVISE"] == pytest.approx(first * (1 - second), rel=1e-12)
    assert result.bounded
