"""Ensemble configuration, aggregation and revote, without any HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cross_judge import ConfigError, Critic, Ensemble, ErrorKind, Usage, Verdict
from cross_judge.ensemble import default_query_id, revote

from .test_voting import (
    fallbacks,
    oracle_agreement,
    oracle_alpha,
    oracle_majority,
    oracle_unanimous,
    panels,
    priorities,
)


def critic(name: str, **kwargs: Any) -> Critic:
    return Critic(name=name, model="m", vendor="custom", base_url="http://127.0.0.1:9/v1", **kwargs)


def panel(*names: str, **kwargs: Any) -> Ensemble:
    return Ensemble([critic(n) for n in names], **kwargs)


def v(kind: str, critic_id: str, *, confidence: float = 0.8, error: str | None = None) -> Verdict:
    return Verdict(kind=kind, critic_id=critic_id, confidence=confidence, error=error)


def test_duplicate_critic_names_are_rejected() -> None:
    with pytest.raises(ConfigError, match="unique"):
        Ensemble([critic("a"), critic("a")])


def test_unknown_strategy_is_rejected_at_construction() -> None:
    with pytest.raises(ConfigError, match="Known"):
        panel("a", voting="plurality")


def test_bad_voting_kwarg_is_rejected_at_construction() -> None:
    with pytest.raises(ConfigError, match="fallback_label"):
        panel("a", voting_kwargs={"fallback_label": "X"})


def labelled(*names: str, labels: tuple[str, ...] = ("PASS", "FAIL"), **kwargs: Any) -> Ensemble:
    return Ensemble([critic(n, labels=list(labels)) for n in names], **kwargs)


def test_a_priority_label_no_critic_gives_is_refused_naming_it_the_labels_and_a_match() -> None:
    with pytest.raises(ConfigError) as info:
        labelled("a", "b", voting_kwargs={"priority": ["FAIL", "PASSS"]})
    message = str(info.value)
    assert message.startswith("voting_kwargs['priority']: 'PASSS' is not a label the critics")
    assert "(did you mean 'PASS'?)" in message and "the critics' labels are PASS, FAIL" in message


def test_a_label_in_another_case_is_refused_pointing_at_the_written_one() -> None:
    with pytest.raises(ConfigError, match=r"'fail' is not a label .*did you mean 'FAIL'"):
        labelled("a", "b", voting_kwargs={"priority": ["fail"]})


@pytest.mark.parametrize(
    ("voting", "kwargs"),
    [
        ("any", {"target": "UNSAFE"}),
        ("majority", {"ties": "fail", "fail_label": "REJECT"}),
        ("average", {"scores": {"PASS": 1.0, "MAYBE": 0.5}}),
    ],
    ids=["target", "fail_label", "scores"],
)
def test_other_keywords_naming_a_label_no_critic_gives_are_refused(
    voting: str, kwargs: dict[str, Any]
) -> None:
    keyword = next(iter(k for k in kwargs if k != "ties"))
    with pytest.raises(ConfigError, match=rf"voting_kwargs\['{keyword}'\]: .* not a label"):
        labelled("a", "b", voting=voting, voting_kwargs=kwargs)


@pytest.mark.parametrize(
    ("kwargs", "extra"),
    [
        ({"priority": ["TIE", "A"]}, {"order": "both"}),  # a flip's label is voted too
        ({"priority": ["FAIL"], "errors": "fail"}, {}),  # so is an error's
        ({"fallback": "UNCLEAR", "abstain_label": "NO_DECISION"}, {}),  # results, not votes
    ],
    ids=["flip", "errors-fail", "fallback"],
)
def test_labels_a_vote_can_hold_or_give_are_accepted(
    kwargs: dict[str, Any], extra: dict[str, Any]
) -> None:
    labels = ("A", "B") if extra.get("order") == "both" else ("KEEP", "REJECT")
    labelled("a", "b", labels=labels, voting_kwargs=kwargs, **extra)


def test_the_score_strategies_may_name_any_pass_and_fail_label() -> None:
    labelled("a", "b", voting="average", voting_kwargs={"pass_label": "GOOD", "fail_label": "BAD"})


def test_critics_without_labels_take_any_priority_label_as_in_0_1() -> None:
    panel("a", "b", voting_kwargs={"priority": ["REJECT", "KEEP"]})


def test_a_custom_strategy_keywords_are_not_read_as_labels() -> None:
    def mine(verdicts: list[Verdict], *, priority: list[str] | None = None) -> tuple[str, bool]:
        return "PASS", False

    labelled("a", voting=mine, voting_kwargs={"priority": ["ANYTHING"]})


def test_weights_for_unknown_critics_are_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown critics"):
        panel("a", weights={"b": 2.0})


def test_early_stop_needs_majority_or_unanimous() -> None:
    with pytest.raises(ConfigError, match="early_stop"):
        panel("a", "b", voting="average", early_stop=True)


@pytest.mark.parametrize("value", [0, 3, 1.5, True])
def test_min_valid_must_be_within_the_panel(value: Any) -> None:
    with pytest.raises(ConfigError, match="min_valid"):
        panel("a", "b", min_valid=value)


def test_weights_default_to_each_critics_weight() -> None:
    e = Ensemble([critic("a", weight=2.0), critic("b")])
    assert e.weights == {"a": 2.0, "b": 1.0}


def test_aggregate_reports_counts_dissenters_and_usage() -> None:
    verdicts = [
        v("KEEP", "a").model_copy(update={"usage": Usage(prompt_tokens=3, completion_tokens=1)}),
        v("REJECT", "b"),
        v("KEEP", "c"),
        Verdict(kind="ERROR", critic_id="d", error="timeout: x", error_kind=ErrorKind.TIMEOUT),
        Verdict(
            kind="SKIPPED", critic_id="e", error="early_stop: y", error_kind=ErrorKind.EARLY_STOP
        ),
    ]
    result = panel("a", "b", "c", "d", "e").aggregate_verdicts(verdicts, query_id="q")
    assert (result.consensus, result.disagreement) == ("KEEP", True)
    assert (result.n_valid, result.n_errors, result.calls_saved) == (3, 1, 1)
    assert result.dissenters == ["b"]
    assert result.agreement_pct == pytest.approx(2 / 3)
    assert result.usage.total_tokens == 4
    assert result.cost_usd is None


def test_voting_name_is_kept_as_given() -> None:
    assert (
        panel("a", voting="MAJORITY").aggregate_verdicts([v("KEEP", "a")], query_id="q").voting
        == "MAJORITY"
    )


def test_custom_callable_strategy_works_as_in_0_1() -> None:
    def always_keep(verdicts: list[Verdict], **kwargs: Any) -> tuple[str, bool]:
        return "KEEP", False

    result = panel("a", voting=always_keep).aggregate_verdicts([v("REJECT", "a")], query_id="q")
    assert (result.consensus, result.voting) == ("KEEP", "always_keep")


def test_revote_recomputes_with_another_strategy() -> None:
    verdicts = [v("KEEP", "a"), v("REJECT", "b"), v("KEEP", "c")]
    result = panel("a", "b", "c").aggregate_verdicts(verdicts, query_id="q", meta={"k": 1})
    again = revote(result, "unanimous")
    assert (again.consensus, again.voting, again.meta) == ("UNCLEAR", "unanimous", {"k": 1})
    assert again.verdicts == result.verdicts


def test_a_result_says_when_its_consensus_is_a_fallback_and_revote_recomputes_it() -> None:
    verdicts = [v("KEEP", "a"), v("REJECT", "b"), v("KEEP", "c")]
    result = panel("a", "b", "c").aggregate_verdicts(verdicts, query_id="q")
    assert (result.consensus, result.fallback) == ("KEEP", False)
    again = revote(result, "unanimous")
    assert (again.consensus, again.fallback) == ("UNCLEAR", True)
    voted = panel("a", "b").aggregate_verdicts([v("UNCLEAR", "a"), v("UNCLEAR", "b")], query_id="q")
    assert (voted.consensus, voted.fallback) == ("UNCLEAR", False)


def test_a_custom_strategy_returning_a_plain_tuple_is_never_a_fallback() -> None:
    def unclear(verdicts: list[Verdict], **kwargs: Any) -> tuple[str, bool]:
        return "UNCLEAR", False

    result = panel("a", voting=unclear).aggregate_verdicts([v("KEEP", "a")], query_id="q")
    assert (result.consensus, result.fallback) == ("UNCLEAR", False)


def test_revote_with_weights_can_flip_a_weighted_vote() -> None:
    verdicts = [v("KEEP", "a"), v("REJECT", "b"), v("KEEP", "c")]
    result = panel("a", "b", "c").aggregate_verdicts(verdicts, query_id="q")
    assert revote(result, "weighted", weights={"a": 1, "b": 5, "c": 1}).consensus == "REJECT"


def test_default_query_id_keeps_short_queries_and_never_collides_on_long_ones() -> None:
    assert default_query_id("short item") == "short item"
    prefix = "x" * 100
    a, b = default_query_id(prefix + "a"), default_query_id(prefix + "b")
    assert a != b and a.startswith("x" * 64)


# -- differential: Ensemble.aggregate_verdicts against cross-judge 0.1 ---------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    panel_verdicts=panels,
    priority=priorities,
    fallback=fallbacks,
    voting=st.sampled_from(["majority", "unanimous"]),
    confidences=st.lists(st.floats(0, 1), min_size=7, max_size=7),
)
def test_aggregate_verdicts_gives_0_1_answers_on_random_panels(
    panel_verdicts: list[Verdict],
    priority: list[str] | None,
    fallback: str,
    voting: str,
    confidences: list[float],
) -> None:
    verdicts = [
        x.model_copy(update={"confidence": c})
        for x, c in zip(panel_verdicts, confidences, strict=False)
    ]
    kwargs: dict[str, Any] = {"fallback": fallback}
    if voting == "majority":
        kwargs["priority"] = priority
        expected = oracle_majority(verdicts, priority, fallback)
    else:
        expected = oracle_unanimous(verdicts, fallback)
    names = [x.critic_id for x in verdicts]
    result = panel(*names, voting=voting, voting_kwargs=kwargs).aggregate_verdicts(
        verdicts, query_id="q"
    )
    valid = [x.confidence for x in verdicts if x.error is None]
    assert (result.consensus, result.disagreement) == expected
    assert result.avg_confidence == (sum(valid) / len(valid) if valid else 0.0)
    assert result.agreement_pct == oracle_agreement(verdicts, expected[0])
    assert result.krippendorff_alpha == oracle_alpha(verdicts)
    assert result.voting == voting and result.query_id == "q" and result.meta == {}


# -- an empty panel: aggregation and re-voting only (0.1's aggregate_verdicts pattern) ------


def stored(kind: str, critic_id: str, confidence: float, error: str | None = None) -> Verdict:
    return Verdict(kind=kind, critic_id=critic_id, confidence=confidence, error=error)


# Each row: Ensemble(critics=[], **settings) re-votes the verdicts; the expected values were
# worked out by hand from cross-judge 0.1.0's Ensemble.aggregate_verdicts (majority_vote,
# unanimous, agreement_pct, krippendorff_alpha), not taken from this package's output.
REVOTES_OF_0_1 = {
    # 2 A vs 1 B. avg (0.9+0.7+0.5)/3; 2 of 3 agree; alpha: D_o = 2/3 of the pairs
    # disagree, D_e = 1 - (2/3)(1/2) = 2/3, alpha = 1 - 1 = 0.
    "majority": (
        {"voting": "majority"},
        [stored("A", "a", 0.9), stored("A", "b", 0.7), stored("B", "c", 0.5)],
        ("A", True, 0.7, 2 / 3, 0.0),
    ),
    # A-B tie among the valid two, priority says B; the error does not vote or count.
    "majority, priority breaks a tie, errors ignored": (
        {"voting": "majority", "voting_kwargs": {"priority": ["B", "A"]}},
        [stored("A", "a", 0.6), stored("B", "b", 0.8), stored("ERROR", "c", 0.0, "boom")],
        ("B", True, 0.7, 0.5, 0.0),
    ),
    # 2 A, 1 B, 1 C: A wins; D_o = 5/6, D_e = 1 - (2/4)(1/3) = 5/6, alpha = 0.
    "majority of four": (
        {"voting": "majority"},
        [
            stored("A", "a", 1.0),
            stored("B", "b", 0.2),
            stored("A", "c", 0.3),
            stored("C", "d", 0.5),
        ],
        ("A", True, 0.5, 0.5, 0.0),
    ),
    # No critic voted the fallback, so agreement is 0.
    "unanimous with a fallback": (
        {"voting": "unanimous", "voting_kwargs": {"fallback": "MIXED"}},
        [stored("A", "a", 0.9), stored("B", "b", 0.4)],
        ("MIXED", True, 0.65, 0.0, 0.0),
    ),
    # Everyone agrees: D_e = 0 with D_o = 0, which 0.1 reports as alpha 1.0.
    "unanimous, all agree": (
        {"voting": "unanimous"},
        [stored("A", "a", 0.9), stored("A", "b", 0.5)],
        ("A", False, 0.7, 1.0, 1.0),
    ),
    # No valid verdict: the fallback, no disagreement, alpha undefined (fewer than 2).
    "all failed": (
        {"voting": "majority"},
        [stored("ERROR", "a", 0.0, "x"), stored("PARSE_FAIL", "b", 0.0, "parse_fail")],
        ("UNCLEAR", False, 0.0, 0.0, None),
    ),
}


@pytest.mark.parametrize(
    ("settings", "verdicts", "expected"), REVOTES_OF_0_1.values(), ids=list(REVOTES_OF_0_1)
)
def test_an_empty_ensemble_revotes_stored_verdicts_as_0_1_did(
    settings: dict[str, Any],
    verdicts: list[Verdict],
    expected: tuple[str, bool, float, float, float | None],
) -> None:
    result = Ensemble(critics=[], **settings).aggregate_verdicts(verdicts, query_id="q")
    consensus, disagreement, avg_confidence, agreement, alpha = expected
    assert (result.consensus, result.disagreement) == (consensus, disagreement)
    assert result.avg_confidence == pytest.approx(avg_confidence)
    assert result.agreement_pct == pytest.approx(agreement)
    if alpha is None:
        assert result.krippendorff_alpha is None
    else:
        assert result.krippendorff_alpha == pytest.approx(alpha, abs=1e-12)
    assert (result.voting, result.query_id, result.verdicts) == (settings["voting"], "q", verdicts)


def test_an_empty_ensemble_takes_a_0_1_callable_strategy() -> None:
    def always_unclear(verdicts: list[Verdict]) -> tuple[str, bool]:
        return "UNCLEAR", True

    result = Ensemble(critics=[], voting=always_unclear).aggregate_verdicts(
        [stored("A", "a", 0.9)], query_id="q"
    )
    assert (result.consensus, result.disagreement, result.voting) == (
        "UNCLEAR",
        True,
        "always_unclear",
    )


def test_an_empty_ensemble_revotes_a_stored_result_with_its_strategy() -> None:
    verdicts = [stored("A", "a", 0.9), stored("B", "b", 0.4)]
    result = panel("a", "b").aggregate_verdicts(verdicts, query_id="q", meta={"k": 1})
    again = Ensemble(critics=[], voting="unanimous", voting_kwargs={"fallback": "MIXED"}).revote(
        result
    )
    assert (again.consensus, again.voting, again.meta) == ("MIXED", "unanimous", {"k": 1})


def test_an_empty_ensemble_weights_the_stored_verdicts_critics() -> None:
    verdicts = [stored("A", "a", 1.0), stored("B", "b", 1.0), stored("A", "c", 1.0)]
    unweighted = Ensemble(critics=[], voting="weighted")
    weighted = Ensemble(critics=[], voting="weighted", weights={"b": 3.0})
    assert unweighted.weights == {}
    assert unweighted.aggregate_verdicts(verdicts, query_id="q").consensus == "A"
    assert weighted.aggregate_verdicts(verdicts, query_id="q").consensus == "B"


def test_an_empty_ensemble_still_rejects_negative_weights() -> None:
    with pytest.raises(ConfigError, match="finite and >= 0"):
        Ensemble(critics=[], voting="weighted", weights={"b": -1.0})


def test_an_empty_ensemble_accepts_any_quorum() -> None:
    e = Ensemble(critics=[], voting="majority", min_valid=3)
    two = [stored("A", "a", 0.9), stored("A", "b", 0.9)]
    assert e.aggregate_verdicts(two, query_id="q").consensus == "UNCLEAR"  # below quorum


@pytest.mark.parametrize("value", [0, 1.5, True])
def test_an_empty_ensemble_still_checks_the_quorum_type(value: Any) -> None:
    with pytest.raises(ConfigError, match="min_valid must be an integer from 1 to any"):
        Ensemble(critics=[], min_valid=value)


@pytest.mark.anyio
async def test_judge_on_an_empty_ensemble_says_it_only_aggregates() -> None:
    with pytest.raises(ConfigError, match="has no critics") as info:
        await Ensemble(critics=[]).judge("item")
    assert "only aggregates stored verdicts" in str(info.value)


@pytest.mark.anyio
async def test_judge_many_on_an_empty_ensemble_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="has no critics"):
        await Ensemble(critics=[]).judge_many(["item"])


def test_stream_on_an_empty_ensemble_raises_at_once() -> None:
    with pytest.raises(ConfigError, match="has no critics"):
        Ensemble(critics=[]).stream(["item"])


@pytest.mark.parametrize("method", ["judge_sync", "judge_many_sync"])
def test_sync_judging_on_an_empty_ensemble_raises_config_error(method: str) -> None:
    call = getattr(Ensemble(critics=[]), method)
    with pytest.raises(ConfigError, match="has no critics"):
        call("item" if method == "judge_sync" else ["item"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    panel_verdicts=panels,
    priority=priorities,
    fallback=fallbacks,
    voting=st.sampled_from(["majority", "unanimous"]),
)
def test_an_empty_ensemble_gives_0_1_answers_on_random_stored_verdicts(
    panel_verdicts: list[Verdict], priority: list[str] | None, fallback: str, voting: str
) -> None:
    kwargs: dict[str, Any] = {"fallback": fallback}
    if voting == "majority":
        kwargs["priority"] = priority
        expected = oracle_majority(panel_verdicts, priority, fallback)
    else:
        expected = oracle_unanimous(panel_verdicts, fallback)
    result = Ensemble(critics=[], voting=voting, voting_kwargs=kwargs).aggregate_verdicts(
        panel_verdicts, query_id="q"
    )
    assert (result.consensus, result.disagreement) == expected
    assert result.agreement_pct == oracle_agreement(panel_verdicts, expected[0])
    assert result.krippendorff_alpha == oracle_alpha(panel_verdicts)
