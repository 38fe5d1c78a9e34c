"""Ensemble configuration, aggregation and revote, without any HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def test_an_empty_panel_is_rejected() -> None:
    with pytest.raises(ConfigError, match="at least one critic"):
        Ensemble([])


def test_duplicate_critic_names_are_rejected() -> None:
    with pytest.raises(ConfigError, match="unique"):
        Ensemble([critic("a"), critic("a")])


def test_unknown_strategy_is_rejected_at_construction() -> None:
    with pytest.raises(ConfigError, match="Known"):
        panel("a", voting="plurality")


def test_bad_voting_kwarg_is_rejected_at_construction() -> None:
    with pytest.raises(ConfigError, match="fallback_label"):
        panel("a", voting_kwargs={"fallback_label": "X"})


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
