"""Specification of the Cascade core (issue 14): escalation rules, construction, judging
tier by tier, batches, budget, cache, early stop, tier statistics and replay.

The rule tests use hand-built results and call nothing. The judging tests run critics
against a simulated vendor on 127.0.0.1 whose personas answer deterministically:
``right`` (and ``right-2``, ``strong``, ``unsure``) always give the gold label,
``keeps`` always answers KEEP and ``rejects`` always REJECT. So a cheap tier of
``right`` + ``keeps`` agrees on KEEP items and splits on the others, and which tier
decides every item is known in advance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from cross_judge import (
    ABSTAIN,
    Cascade,
    ConfigError,
    Critic,
    Ensemble,
    EnsembleVerdict,
    ErrorKind,
    PromptError,
    Verdict,
    pricing,
)
from cross_judge.batch import BatchResult, ItemError, dump_result, is_incomplete, load_result
from cross_judge.cascade import CalibrationItemsWarning, Escalation, score_of, support
from cross_judge.critic._cache import ResponseCache
from cross_judge.testing import Persona, Reply, VendorServer

from ..waits import SAFETY_NET_S

TEMPLATE = "Judge this item.\n<item>{query}</item>\nAnswer in JSON: kind, confidence, reasoning."
LABELS = ("KEEP", "REJECT", "SPLIT")

# Gold labels. No key occurs in the template, so no item borrows another's truth.
FELINES, CANINES, ROCKS, FRUIT = "Felines", "Canines", "Rocks", "Fruit and vegetables"
GOLD = {FELINES: "KEEP", CANINES: "KEEP", ROCKS: "REJECT", FRUIT: "SPLIT"}

WAIT_S = SAFETY_NET_S
"""Safety net for what normally takes milliseconds."""


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    personas = [
        Persona("right", accuracy=1.0, labels=LABELS, confidence=(0.9, 0.9)),
        Persona("right-2", accuracy=1.0, labels=LABELS, confidence=(0.8, 0.8)),
        Persona("unsure", accuracy=1.0, labels=LABELS, confidence=(0.3, 0.3)),
        Persona("strong", accuracy=1.0, labels=LABELS, confidence=(0.95, 0.95)),
        # Accuracy 0 with a one-label vocabulary: always that label.
        Persona("keeps", accuracy=0.0, labels=("KEEP",), confidence=(0.5, 0.5)),
        Persona("rejects", accuracy=0.0, labels=("REJECT",), confidence=(0.5, 0.5)),
    ]
    # Any other model name (a test's own, for scripted faults) answers like `right`.
    default = Persona("default", accuracy=1.0, labels=LABELS, confidence=(0.9, 0.9))
    with VendorServer(personas, gold=GOLD, default_persona=default) as srv:
        yield srv


@pytest.fixture
def sim(server: VendorServer) -> VendorServer:
    """The module's vendor with its counters zeroed for this test."""
    server.reset_stats()
    return server


@pytest.fixture
def prices() -> Iterator[None]:
    for model in ("right", "right-2", "keeps", "rejects", "unsure"):
        pricing.register_price(model, vendor="custom", input=1.0, output=2.0)
    pricing.register_price("strong", vendor="custom", input=20.0, output=40.0)
    yield
    pricing._clear_registered()


def critic(server: VendorServer, name: str, model: str | None = None, **kwargs: Any) -> Critic:
    return Critic(
        name=name,
        model=model or name,
        vendor="custom",
        base_url=server.url,
        prompt_template=TEMPLATE,
        **kwargs,
    )


def cheap_tier(server: VendorServer, **kwargs: Any) -> Ensemble:
    """Agrees (KEEP, KEEP) on KEEP items, splits 1-1 on the others."""
    return Ensemble(
        [critic(server, "c-right", "right"), critic(server, "c-keeps", "keeps")], **kwargs
    )


def strong_tier(server: VendorServer) -> Ensemble:
    return Ensemble([critic(server, "s-strong", "strong")])


def two_tiers(server: VendorServer, **kwargs: Any) -> Cascade:
    kwargs.setdefault("escalate", Escalation(agreement_below=0.9))
    return Cascade([cheap_tier(server), strong_tier(server)], **kwargs)


def asked(server: VendorServer) -> dict[str, int]:
    return dict(server.stats()["by_model"])


def offline(name: str) -> Critic:
    """A critic that is never called (construction and replay tests)."""
    return Critic(name=name, model="m", vendor="custom", base_url="http://127.0.0.1:9/v1")


def result(
    consensus: str = "KEEP",
    *,
    agreement: float = 1.0,
    confidence: float = 0.9,
    errors: int = 0,
    fallback: bool = False,
) -> EnsembleVerdict:
    """A tier's result with the statistics the escalation rules read."""
    return EnsembleVerdict(
        query_id="q",
        verdicts=[],
        consensus=consensus,
        voting="majority",
        agreement_pct=agreement,
        avg_confidence=confidence,
        n_errors=errors,
        fallback=fallback,
    )


def vote(kind: str, critic_id: str, **kwargs: Any) -> Verdict:
    kwargs.setdefault("confidence", 0.9)
    return Verdict(kind=kind, critic_id=critic_id, **kwargs)


def aggregated(verdicts: Sequence[Verdict], **settings: Any) -> EnsembleVerdict:
    return Ensemble(critics=[], **settings).aggregate_verdicts(verdicts, query_id="q")


ERROR = vote("ERROR", "b", confidence=0.0, error="server: HTTP 500", error_kind=ErrorKind.SERVER)
PARSE_FAIL = vote(
    "PARSE_FAIL", "b", confidence=0.0, error="parse: no JSON", error_kind=ErrorKind.PARSE
)
BUDGET_SKIP = vote(
    "SKIPPED", "b", confidence=0.0, error="budget: not sent", error_kind=ErrorKind.BUDGET
)
EARLY_STOP_SKIP = vote(
    "SKIPPED", "b", confidence=0.0, error="early_stop: not asked", error_kind=ErrorKind.EARLY_STOP
)


# -- escalation rules, one at a time ---------------------------------------------------------


@pytest.mark.parametrize(
    ("agreement", "escalates"), [(0.5, True), (0.89, True), (0.9, False), (1.0, False)]
)
def test_agreement_below_escalates_only_results_below_the_threshold(
    agreement: float, escalates: bool
) -> None:
    rule = Escalation(agreement_below=0.9)
    assert rule(result(agreement=agreement), 0) is escalates


@pytest.mark.parametrize(
    ("confidence", "escalates"), [(0.2, True), (0.69, True), (0.7, False), (0.95, False)]
)
def test_confidence_below_escalates_only_results_below_the_threshold(
    confidence: float, escalates: bool
) -> None:
    rule = Escalation(confidence_below=0.7)
    assert rule(result(confidence=confidence), 0) is escalates


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([vote("KEEP", "a"), vote("KEEP", "b"), vote("KEEP", "c")], 0.9),
        ([vote("KEEP", "a"), vote("KEEP", "b"), vote("REJECT", "c")], 0.6),
        ([vote("KEEP", n, confidence=0.6) for n in "abc"], 0.6),
        ([vote("KEEP", "a"), vote("KEEP", "c"), EARLY_STOP_SKIP], 0.9),  # a skip: not asked
        ([vote("KEEP", "a"), ERROR], 0.45),  # a failed call backs nothing
        ([vote("KEEP", "a"), BUDGET_SKIP], 0.45),  # nor does a call the budget refused
        ([ERROR], 0.0),
        ([], 0.0),
    ],
    ids=["all", "two-of-three", "unsure", "early-stop", "error", "budget", "failed", "none"],
)
def test_support_is_the_confidence_behind_the_consensus_over_the_critics_asked(
    verdicts: list[Verdict], expected: float
) -> None:
    assert support(aggregated(verdicts)) == pytest.approx(expected)


@pytest.mark.parametrize(("backing", "escalates"), [(0.6, True), (0.7, False), (0.9, False)])
def test_support_below_escalates_only_results_below_the_threshold(
    backing: float, escalates: bool
) -> None:
    tier = aggregated(
        [vote("KEEP", "a", confidence=backing), vote("KEEP", "b", confidence=backing)]
    )
    assert tier.agreement_pct == 1.0
    assert Escalation(support_below=0.7)(tier, 0) is escalates


def test_score_of_reads_each_score() -> None:
    tier = aggregated([vote("KEEP", "a", confidence=0.8), vote("REJECT", "b", confidence=0.4)])
    assert score_of(tier, "agreement") == 0.5
    assert score_of(tier, "confidence") == pytest.approx(0.6)
    assert score_of(tier, "support") == pytest.approx(0.4)


def test_without_thresholds_low_agreement_and_confidence_stand() -> None:
    assert not Escalation()(result(agreement=0.34, confidence=0.1), 0)


@pytest.mark.parametrize("failed", [ERROR, PARSE_FAIL, BUDGET_SKIP], ids=lambda v: v.kind)
def test_on_error_escalates_a_failed_parse_failed_or_budget_skipped_call(failed: Verdict) -> None:
    tier = aggregated([vote("KEEP", "a"), failed])
    assert (tier.consensus, tier.agreement_pct, tier.n_errors) == ("KEEP", 1.0, 1)
    assert Escalation()(tier, 0)
    assert not Escalation(on_error=False)(tier, 0)


def test_an_early_stop_skip_is_not_an_error() -> None:
    tier = aggregated([vote("KEEP", "a"), vote("KEEP", "c"), EARLY_STOP_SKIP])
    assert tier.calls_saved == 1 and tier.n_errors == 0
    assert not Escalation(agreement_below=1.0)(tier, 0)


def test_on_fallback_escalates_when_the_quorum_is_not_met() -> None:
    tier = aggregated([vote("KEEP", "a"), ERROR], min_valid=2)
    assert (tier.consensus, tier.fallback) == ("UNCLEAR", True)
    assert Escalation(on_error=False)(tier, 0)
    assert not Escalation(on_error=False, on_fallback=False)(tier, 0)


def test_on_fallback_escalates_when_unanimity_fails() -> None:
    tier = aggregated([vote("KEEP", "a"), vote("REJECT", "b")], voting="unanimous")
    assert (tier.consensus, tier.fallback) == ("UNCLEAR", True)
    assert Escalation()(tier, 0)
    assert not Escalation(on_fallback=False)(tier, 0)


def test_on_fallback_escalates_when_no_critic_gave_a_valid_verdict() -> None:
    tier = aggregated([ERROR], voting="majority")
    assert tier.fallback
    assert Escalation(on_error=False)(tier, 0)


def test_on_fallback_escalates_a_tie_left_undecided_by_the_tie_policy() -> None:
    tier = aggregated(
        [vote("KEEP", "a"), vote("REJECT", "b")],
        voting="majority",
        voting_kwargs={"ties": "abstain"},
    )
    assert tier.consensus == "UNCLEAR"
    assert Escalation()(tier, 0)


def test_a_voted_unclear_is_not_a_fallback() -> None:
    tier = aggregated([vote("UNCLEAR", "a"), vote("UNCLEAR", "b")])
    assert not Escalation()(tier, 0)


def test_thresholds_per_tier_apply_to_their_own_tier() -> None:
    rule = Escalation(agreement_below=[0.9, 0.5], confidence_below=(None, 0.8))
    middling = result(agreement=0.6, confidence=0.7)
    assert rule(middling, 0)  # agreement 0.6 < 0.9; no confidence threshold on tier 0
    assert rule(middling, 1)  # agreement 0.6 >= 0.5, but confidence 0.7 < 0.8
    assert not rule(result(agreement=0.6, confidence=0.85), 1)
    assert rule.threshold("agreement", 1) == 0.5 and rule.threshold("confidence", 0) is None
    assert rule.threshold("support", 0) is None
    by_support = Escalation(support_below=[None, 0.5])
    weak = aggregated([vote("KEEP", "a", confidence=0.4)])
    assert (by_support(weak, 0), by_support(weak, 1)) == (False, True)


def test_a_none_entry_turns_the_threshold_off_for_that_tier() -> None:
    rule = Escalation(agreement_below=[None, 0.9])
    assert not rule(result(agreement=0.1), 0)
    assert rule(result(agreement=0.1), 1)


@pytest.mark.parametrize(
    "rule",
    [
        Escalation(agreement_below=math.inf),
        Escalation(confidence_below=math.inf),
        Escalation(agreement_below=[math.inf]),
    ],
    ids=["agreement", "confidence", "per-tier"],
)
def test_inf_escalates_even_a_perfect_result(rule: Escalation) -> None:
    assert rule(result(agreement=1.0, confidence=1.0), 0)


THRESHOLDS = ("agreement_below", "confidence_below", "support_below")


@pytest.mark.parametrize("name", THRESHOLDS)
@pytest.mark.parametrize("value", [-0.1, 1.01, -math.inf, math.nan, "0.9", True, [0.5, 2.0]])
def test_a_threshold_outside_0_1_raises(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=name):
        Escalation(**{name: value})


def test_a_percent_threshold_is_called_a_percent() -> None:
    with pytest.raises(ConfigError, match=r"a fraction, not a percent.*got 90"):
        Escalation(agreement_below=90)
    with pytest.raises(ConfigError, match=r"confidence_below\[1\].*a fraction, not a percent"):
        Escalation(confidence_below=[0.5, 75])


def test_a_threshold_above_100_is_not_called_a_percent() -> None:
    with pytest.raises(ConfigError) as info:
        Escalation(agreement_below=250)
    assert "percent" not in str(info.value)


@pytest.mark.parametrize(
    ("tiers", "final", "thresholds"),
    [
        (2, "decide", [0.5, 0.5]),  # one per tier but the last
        (3, "decide", [0.5]),
        (2, "abstain", [0.5]),  # one per tier
        (1, "decide", [0.5]),  # a lone deciding tier never escalates
    ],
)
def test_a_threshold_list_of_the_wrong_length_raises_at_construction(
    tiers: int, final: str, thresholds: list[float]
) -> None:
    ensembles = [Ensemble([offline(f"t{i}")]) for i in range(tiers)]
    for name in THRESHOLDS:
        rule = Escalation(**{name: thresholds})
        with pytest.raises(ConfigError, match=rf"{name} has {len(thresholds)} thresholds but"):
            Cascade(ensembles, escalate=rule, final=final)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("final", "count"), [("decide", 1), ("abstain", 2)], ids=["decide", "abstain"]
)
def test_a_threshold_list_of_the_right_length_is_accepted(final: str, count: int) -> None:
    cascade = Cascade(
        [Ensemble([offline("a")]), Ensemble([offline("b")])],
        escalate=Escalation(
            agreement_below=[0.9] * count,
            confidence_below=[None] * count,
            support_below=[0.5] * count,
        ),
        final=final,  # type: ignore[arg-type]
    )
    assert cascade.checked_tiers == count


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        (result(errors=2, fallback=True, agreement=0.1), "2 critic(s) failed"),
        (result("UNCLEAR", fallback=True, agreement=0.1), "no vote decided (fallback UNCLEAR)"),
        (result(agreement=0.5, confidence=0.1), "agreement 0.50 < 0.9"),
        (result(agreement=0.95, confidence=0.3), "mean confidence 0.30 < 0.5"),
        (
            aggregated([vote("KEEP", "a", confidence=0.7), vote("KEEP", "b", confidence=0.5)]),
            "support 0.60 < 0.65",
        ),
        (aggregated([vote("KEEP", "a", confidence=0.7), vote("KEEP", "b", confidence=0.7)]), None),
    ],
    ids=["error-first", "fallback", "agreement", "confidence", "support", "stands"],
)
def test_reason_says_why_a_result_does_not_stand(tier: EnsembleVerdict, expected: str) -> None:
    rule = Escalation(agreement_below=0.9, confidence_below=0.5, support_below=0.65)
    assert rule.reason(tier, 0) == expected


def test_reason_names_inf_as_inf() -> None:
    assert Escalation(agreement_below=math.inf).reason(result(), 0) == "agreement 1.00 < inf"


# -- construction ------------------------------------------------------------------------------


def test_an_empty_cascade_raises() -> None:
    with pytest.raises(ConfigError, match="at least one tier"):
        Cascade([])


@pytest.mark.parametrize(
    "tiers",
    [
        [Ensemble([offline("a")]), offline("b")],
        [Ensemble([offline("a")]), [offline("b")]],
    ],
    ids=["critic", "list"],
)
def test_a_tier_that_is_not_an_ensemble_raises(tiers: list[Any]) -> None:
    with pytest.raises(ConfigError, match=r"tier 1 is a \w+, not an Ensemble"):
        Cascade(tiers)


def test_an_ensemble_instead_of_a_list_of_tiers_raises() -> None:
    with pytest.raises(ConfigError, match="takes a list of Ensembles"):
        Cascade(Ensemble([offline("a")]))  # type: ignore[arg-type]


def test_a_tier_without_critics_raises() -> None:
    with pytest.raises(ConfigError, match="tier 1 has no critics"):
        Cascade([Ensemble([offline("a")]), Ensemble(critics=[])])


def test_a_critic_name_in_two_tiers_raises() -> None:
    with pytest.raises(ConfigError, match=r"'a' is in tiers 0 and 1"):
        Cascade([Ensemble([offline("a")]), Ensemble([offline("b"), offline("a")])])


def test_an_unknown_final_raises() -> None:
    with pytest.raises(ConfigError, match="final must be 'decide' or 'abstain'"):
        Cascade([Ensemble([offline("a")])], final="human")  # type: ignore[arg-type]


@pytest.mark.parametrize("escalate", [0.9, "agreement", None])
def test_an_escalate_that_is_neither_an_escalation_nor_callable_raises(escalate: Any) -> None:
    with pytest.raises(ConfigError, match="escalate must be an Escalation"):
        Cascade([Ensemble([offline("a")])], escalate=escalate)


@pytest.mark.parametrize(("calibrated", "final"), [("abstain", "decide"), ("decide", "abstain")])
def test_an_escalation_calibrated_for_the_other_final_mode_raises(
    calibrated: str, final: str
) -> None:
    rule = Escalation(agreement_below=0.8, calibrated_for=calibrated)  # type: ignore[arg-type]
    tiers = [Ensemble([offline("a")]), Ensemble([offline("b")])]
    with pytest.raises(ConfigError, match=rf"calibrated for final='{calibrated}'"):
        Cascade(tiers, escalate=rule, final=final)  # type: ignore[arg-type]
    assert Cascade(tiers, escalate=rule, final=calibrated).escalate is rule  # type: ignore[arg-type]


def test_a_cascade_lists_every_tiers_critics_and_names_its_votes() -> None:
    cascade = Cascade(
        [
            Ensemble([offline("a"), offline("b")]),
            Ensemble([offline("c")], voting="unanimous"),
        ]
    )
    assert [c.name for c in cascade.critics] == ["a", "b", "c"]
    assert cascade.voting == "cascade(majority > unanimous)"


# -- a one-tier cascade -------------------------------------------------------------------------


def comparable(tier: EnsembleVerdict) -> dict[str, Any]:
    """A result without what differs between two runs (timings) or marks a cascade."""
    data = tier.model_dump(exclude={"elapsed_s", "tier", "tiers", "verdicts", "voting"})
    data["verdicts"] = [v.model_dump(exclude={"elapsed_s"}) for v in tier.verdicts]
    return data


@pytest.mark.anyio
async def test_a_one_tier_cascade_judges_as_its_ensemble(sim: VendorServer) -> None:
    ensemble = Ensemble(
        [
            critic(sim, "c-right", "right"),
            critic(sim, "c-keeps", "keeps"),
            critic(sim, "c-rejects", "rejects"),
        ]
    )
    async with Cascade([ensemble]) as cascade:
        for item in (FELINES, ROCKS, FRUIT):
            alone = await ensemble.judge(item)
            cascaded = await cascade.judge(item)
            assert comparable(cascaded) == comparable(alone)
            assert cascaded.tier == 0 and cascaded.tiers is not None
            assert [comparable(t) for t in cascaded.tiers] == [comparable(alone)]
            assert cascaded.tiers[0].tier is None


@pytest.mark.anyio
async def test_a_one_tier_cascade_with_final_abstain_abstains_when_the_rule_fires(
    sim: VendorServer,
) -> None:
    async with Cascade(
        [cheap_tier(sim)], escalate=Escalation(agreement_below=[0.9]), final="abstain"
    ) as cascade:
        split = await cascade.judge(ROCKS)
        agreed = await cascade.judge(FELINES)
    assert (split.consensus, split.tier, split.fallback, split.dissenters) == (
        ABSTAIN,
        0,
        False,
        [],
    )
    assert split.tiers is not None and split.tiers[0].consensus == "REJECT"
    assert (agreed.consensus, agreed.tier) == ("KEEP", 0)


# -- a callable rule ----------------------------------------------------------------------------


def three_tiers(server: VendorServer, escalate: Any, final: str = "decide") -> Cascade:
    return Cascade(
        [
            Ensemble([critic(server, "t0", "right")]),
            Ensemble([critic(server, "t1", "right-2")]),
            Ensemble([critic(server, "t2", "strong")]),
        ],
        escalate=escalate,
        final=final,  # type: ignore[arg-type]
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("final", "seen", "consensus"),
    [("decide", [0, 1], "KEEP"), ("abstain", [0, 1, 2], ABSTAIN)],
    ids=["decide", "abstain"],
)
async def test_a_callable_rule_is_asked_about_each_tier_that_can_escalate(
    sim: VendorServer, final: str, seen: list[int], consensus: str
) -> None:
    calls: list[tuple[int, list[str]]] = []

    def never_sure(tier_result: EnsembleVerdict, tier: int) -> bool:
        calls.append((tier, [v.critic_id for v in tier_result.verdicts]))
        return True

    async with three_tiers(sim, never_sure, final) as cascade:
        decided = await cascade.judge(FELINES)
    assert [tier for tier, _ in calls] == seen
    assert [names for _, names in calls] == [[f"t{i}"] for i in seen]
    assert (decided.consensus, decided.tier) == (consensus, 2)


@pytest.mark.anyio
async def test_a_callable_rule_that_lets_the_first_tier_stand_is_asked_once(
    sim: VendorServer,
) -> None:
    calls: list[int] = []

    def sure(tier_result: EnsembleVerdict, tier: int) -> bool:
        calls.append(tier)
        return False

    async with three_tiers(sim, sure, "abstain") as cascade:
        decided = await cascade.judge(FELINES, all_tiers=True)
    assert calls == [0]
    assert decided.tier == 0 and decided.tiers is not None and len(decided.tiers) == 3


# -- judging ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_cheap_tier_decides_when_its_result_stands(sim: VendorServer) -> None:
    async with two_tiers(sim) as cascade:
        decided = await cascade.judge(FELINES, meta={"batch": 3})
    assert asked(sim) == {"right": 1, "keeps": 1}  # the strong tier was never called
    assert (decided.consensus, decided.tier, decided.agreement_pct) == ("KEEP", 0, 1.0)
    assert decided.tiers is not None and len(decided.tiers) == 1
    assert [v.critic_id for v in decided.verdicts] == ["c-right", "c-keeps"]
    assert decided.meta == {"batch": 3} and decided.query_id == FELINES


@pytest.mark.anyio
async def test_an_unsure_cheap_tier_escalates_to_the_strong_tier(sim: VendorServer) -> None:
    async with two_tiers(sim) as cascade:
        decided = await cascade.judge(ROCKS)
    assert asked(sim) == {"right": 1, "keeps": 1, "strong": 1}
    assert (decided.consensus, decided.tier) == ("REJECT", 1)
    assert decided.tiers is not None
    assert [t.agreement_pct for t in decided.tiers] == [0.5, 1.0]
    # The vote statistics are the deciding tier's; the verdicts are every tier's.
    assert (decided.agreement_pct, decided.avg_confidence) == (1.0, 0.95)
    assert decided.dissenters == [] and decided.n_valid == 1
    assert [v.critic_id for v in decided.verdicts] == ["c-right", "c-keeps", "s-strong"]


@pytest.mark.anyio
async def test_confidence_below_escalates_an_agreeing_but_unsure_tier(sim: VendorServer) -> None:
    unsure = Ensemble([critic(sim, "c-unsure", "unsure"), critic(sim, "c-keeps", "keeps")])
    async with Cascade(
        [unsure, strong_tier(sim)], escalate=Escalation(confidence_below=0.6)
    ) as cascade:
        decided = await cascade.judge(FELINES)
    assert decided.tiers is not None and decided.tiers[0].agreement_pct == 1.0
    assert decided.tiers[0].avg_confidence == pytest.approx(0.4)
    assert (decided.consensus, decided.tier) == ("KEEP", 1)


@pytest.mark.anyio
async def test_support_below_escalates_an_agreeing_tier_with_little_confidence_behind_it(
    sim: VendorServer,
) -> None:
    # right (0.9) and keeps (0.5) agree on KEEP items: support (0.9 + 0.5) / 2 = 0.7.
    async with two_tiers(sim, escalate=Escalation(support_below=0.75)) as cascade:
        decided = await cascade.judge(FELINES)
    assert decided.tiers is not None and decided.tiers[0].agreement_pct == 1.0
    assert support(decided.tiers[0]) == pytest.approx(0.7)
    assert (decided.consensus, decided.tier) == ("KEEP", 1)


@pytest.mark.anyio
async def test_per_tier_thresholds_let_a_middle_tier_decide(sim: VendorServer) -> None:
    middle = Ensemble([critic(sim, "m-right", "right-2"), critic(sim, "m-keeps", "keeps")])
    rule = Escalation(agreement_below=[0.9, None])
    async with Cascade([cheap_tier(sim), middle, strong_tier(sim)], escalate=rule) as cascade:
        decided = await cascade.judge(ROCKS)
    assert decided.tier == 1 and "strong" not in asked(sim)
    assert decided.agreement_pct == 0.5 and decided.consensus == "REJECT"  # tie: critic order


@pytest.mark.anyio
async def test_inf_sends_every_item_to_the_last_tier(sim: VendorServer) -> None:
    async with two_tiers(sim, escalate=Escalation(agreement_below=math.inf)) as cascade:
        decided = await cascade.judge(FELINES)
    assert decided.tiers is not None and decided.tiers[0].agreement_pct == 1.0
    assert decided.tier == 1 and asked(sim)["strong"] == 1


@pytest.mark.anyio
async def test_the_last_tier_abstains_when_it_does_not_stand_either(sim: VendorServer) -> None:
    split = Ensemble([critic(sim, "s-strong", "strong"), critic(sim, "s-keeps", "keeps")])
    async with Cascade(
        [cheap_tier(sim), split], escalate=Escalation(agreement_below=0.9), final="abstain"
    ) as cascade:
        decided = await cascade.judge(ROCKS)
    assert (decided.consensus, decided.tier, decided.fallback) == (ABSTAIN, 1, False)
    assert decided.tiers is not None and len(decided.tiers) == 2
    last = decided.tiers[1]
    assert (last.consensus, last.agreement_pct, last.tier) == ("REJECT", 0.5, None)
    assert [v.critic_id for v in last.verdicts] == ["s-strong", "s-keeps"]
    assert decided.dissenters == [] and decided.score is None


@pytest.mark.anyio
async def test_with_final_decide_the_last_tier_decides_whatever_it_finds(
    sim: VendorServer,
) -> None:
    split = Ensemble([critic(sim, "s-strong", "strong"), critic(sim, "s-keeps", "keeps")])
    async with Cascade([cheap_tier(sim), split], escalate=Escalation(agreement_below=0.9)) as c:
        decided = await c.judge(ROCKS)
    assert (decided.consensus, decided.tier, decided.agreement_pct) == ("REJECT", 1, 0.5)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("reply", "kind"),
    [(Reply.status(500), ErrorKind.SERVER), (Reply.hang(), ErrorKind.TIMEOUT)],
    ids=["500", "timeout"],
)
async def test_a_failed_call_in_the_cheap_tier_escalates_with_on_error(
    sim: VendorServer, model: str, reply: Reply, kind: ErrorKind
) -> None:
    sim.script(model, reply)
    # A hang never answers: the 1 s timeout ends it whatever the machine's speed.
    flaky = critic(sim, "c-flaky", model, max_retries=0, timeout=1.0)
    cheap = Ensemble([critic(sim, "c-right", "right"), flaky])
    async with Cascade([cheap, strong_tier(sim)]) as cascade:
        decided = await cascade.judge(FELINES)
    assert decided.tiers is not None
    failed = decided.tiers[0].verdicts[1]
    assert (failed.kind, failed.error_kind) == ("ERROR", kind)
    assert decided.tiers[0].agreement_pct == 1.0  # it would have stood but for the error
    assert (decided.consensus, decided.tier, decided.n_errors) == ("KEEP", 1, 0)
    assert not is_incomplete(decided)


@pytest.mark.anyio
async def test_with_on_error_off_a_tier_with_a_failed_call_stands(
    sim: VendorServer, model: str
) -> None:
    sim.script(model, Reply.status(500))
    cheap = Ensemble(
        [critic(sim, "c-right", "right"), critic(sim, "c-flaky", model, max_retries=0)]
    )
    async with Cascade([cheap, strong_tier(sim)], escalate=Escalation(on_error=False)) as cascade:
        decided = await cascade.judge(FELINES)
    assert (decided.consensus, decided.tier, decided.n_errors) == ("KEEP", 0, 1)
    assert "strong" not in asked(sim)
    assert is_incomplete(decided)


@pytest.mark.anyio
async def test_verdicts_usage_and_cost_add_up_over_the_tiers_asked(
    sim: VendorServer, prices: None
) -> None:
    async with two_tiers(sim) as cascade:
        decided = await cascade.judge(ROCKS)
    assert decided.tiers is not None
    cheap, strong = decided.tiers
    assert decided.verdicts == cheap.verdicts + strong.verdicts
    assert cheap.cost_usd is not None and strong.cost_usd is not None
    assert decided.cost_usd == pytest.approx(cheap.cost_usd + strong.cost_usd)
    assert decided.cost_usd == pytest.approx(sum(v.cost_usd or 0.0 for v in decided.verdicts))
    assert decided.usage == cheap.usage + strong.usage
    assert decided.usage.total_tokens > strong.usage.total_tokens > 0


@pytest.mark.anyio
async def test_cost_is_unknown_when_a_tier_asked_is_unpriced(sim: VendorServer) -> None:
    pricing.register_price("right", vendor="custom", input=1.0, output=1.0)
    pricing.register_price("keeps", vendor="custom", input=1.0, output=1.0)
    try:
        async with two_tiers(sim) as cascade:
            decided = await cascade.judge(ROCKS)
    finally:
        pricing._clear_registered()
    assert decided.tiers is not None and decided.tiers[0].cost_usd is not None
    assert decided.tiers[1].cost_usd is None and decided.cost_usd is None


@pytest.mark.anyio
async def test_all_tiers_asks_every_tier_and_still_decides_by_the_rule(
    sim: VendorServer, prices: None
) -> None:
    async with two_tiers(sim) as cascade:
        decided = await cascade.judge(FELINES, all_tiers=True)
    assert asked(sim) == {"right": 1, "keeps": 1, "strong": 1}
    assert (decided.consensus, decided.tier) == ("KEEP", 0)
    assert decided.tiers is not None and len(decided.tiers) == 2
    assert len(decided.verdicts) == 3  # the strong tier was paid for, so it is counted
    assert decided.cost_usd == pytest.approx(sum(t.cost_usd or 0.0 for t in decided.tiers))


@pytest.mark.anyio
async def test_all_tiers_decides_and_abstains_as_the_tier_by_tier_run(sim: VendorServer) -> None:
    split = Ensemble([critic(sim, "s-strong", "strong"), critic(sim, "s-rejects", "rejects")])
    async with Cascade(
        [cheap_tier(sim), split], escalate=Escalation(agreement_below=[0.9, 0.9]), final="abstain"
    ) as cascade:
        for item, expected in (
            (FELINES, ("KEEP", 0)),
            (ROCKS, ("REJECT", 1)),
            (FRUIT, (ABSTAIN, 1)),
        ):
            live = await cascade.judge(item)
            everything = await cascade.judge(item, all_tiers=True)
            assert (
                (live.consensus, live.tier) == (everything.consensus, everything.tier) == expected
            )


@pytest.mark.anyio
async def test_a_template_field_missing_in_a_later_tier_raises_before_any_call(
    sim: VendorServer,
) -> None:
    needs_rubric = Critic(
        name="s-rubric",
        model="strong",
        vendor="custom",
        base_url=sim.url,
        prompt_template="<item>{query}</item> judged by {rubric}; answer in JSON",
    )
    async with Cascade([cheap_tier(sim), Ensemble([needs_rubric])]) as cascade:
        with pytest.raises(PromptError, match="rubric"):
            await cascade.judge(FELINES)
        with pytest.raises(ItemError, match=r"item 1: .*rubric"):
            await cascade.judge_many([{"query": FELINES, "context": {"rubric": "r"}}, ROCKS])
    assert sim.stats()["requests"] == 0


@pytest.mark.anyio
async def test_a_budget_needs_prices_for_every_tier_before_any_call(sim: VendorServer) -> None:
    pricing.register_price("right", vendor="custom", input=1.0, output=1.0)
    pricing.register_price("keeps", vendor="custom", input=1.0, output=1.0)
    try:
        async with two_tiers(sim) as cascade:
            with pytest.raises(ConfigError, match="'strong'"):
                await cascade.judge(FELINES, budget_usd=1.0)
    finally:
        pricing._clear_registered()
    assert sim.stats()["requests"] == 0


@pytest.mark.anyio
async def test_an_unusable_cache_in_a_later_tier_raises_before_any_call(
    sim: VendorServer, tmp_path: Path
) -> None:
    strong = Ensemble([critic(sim, "s-strong", "strong")], cache=tmp_path)  # a folder
    async with Cascade([cheap_tier(sim), strong], escalate=Escalation(agreement_below=0.9)) as c:
        with pytest.raises(ConfigError, match="is a folder"):
            await c.judge(ROCKS)
    assert sim.stats()["requests"] == 0


@pytest.mark.anyio
async def test_an_unusable_cache_with_all_tiers_raises_a_config_error(
    sim: VendorServer, tmp_path: Path
) -> None:
    strong = Ensemble([critic(sim, "s-strong", "strong")], cache=tmp_path)  # a folder
    async with Cascade([cheap_tier(sim), strong]) as cascade:
        with pytest.raises(ConfigError, match="is a folder"):
            await cascade.judge(ROCKS, all_tiers=True)


# -- sync twins ---------------------------------------------------------------------------------


def test_judge_sync_without_an_event_loop(sim: VendorServer) -> None:
    decided = two_tiers(sim).judge_sync(ROCKS, query_id="r1", meta={"k": 1})
    assert (decided.consensus, decided.tier, decided.query_id, decided.meta) == (
        "REJECT",
        1,
        "r1",
        {"k": 1},
    )


@pytest.mark.anyio
async def test_judge_sync_inside_a_running_event_loop(sim: VendorServer) -> None:
    decided = two_tiers(sim).judge_sync(FELINES, all_tiers=True)
    assert (decided.consensus, decided.tier) == ("KEEP", 0)
    assert decided.tiers is not None and len(decided.tiers) == 2


def test_judge_many_sync_returns_results_in_input_order(sim: VendorServer) -> None:
    items = [ROCKS, FELINES, FRUIT, CANINES]
    batch = two_tiers(sim).judge_many_sync(items, concurrency=2)
    assert [r.query_id for r in batch.verdicts] == items
    assert [r.tier for r in batch.verdicts] == [1, 0, 1, 0]
    assert [r.consensus for r in batch.verdicts] == ["REJECT", "KEEP", "SPLIT", "KEEP"]


# -- batches ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_judge_many_keeps_input_order_and_names_every_critic(sim: VendorServer) -> None:
    items = [FRUIT, FELINES, ROCKS, CANINES, {"id": "x", "query": ROCKS, "meta": {"m": 1}}]
    async with two_tiers(sim) as cascade:
        batch = await cascade.judge_many(items, concurrency=2)
    assert [r.query_id for r in batch.verdicts] == [FRUIT, FELINES, ROCKS, CANINES, "x"]
    assert [r.tier for r in batch.verdicts] == [1, 0, 1, 0, 1]
    assert batch.verdicts[-1].meta == {"m": 1}
    assert batch.critics == ["c-right", "c-keeps", "s-strong"]
    assert batch.voting == "cascade(majority > majority)"
    assert asked(sim) == {"right": 5, "keeps": 5, "strong": 3}


@pytest.mark.anyio
async def test_judge_many_with_all_tiers_asks_every_tier_on_every_item(
    sim: VendorServer,
) -> None:
    async with two_tiers(sim) as cascade:
        batch = await cascade.judge_many([FELINES, ROCKS], all_tiers=True)
    assert asked(sim) == {"right": 2, "keeps": 2, "strong": 2}
    assert [r.tier for r in batch.verdicts] == [0, 1]
    assert all(r.tiers is not None and len(r.tiers) == 2 for r in batch.verdicts)


@pytest.mark.anyio
async def test_stream_hands_out_every_result(sim: VendorServer) -> None:
    items = [FELINES, ROCKS, FRUIT]
    async with two_tiers(sim) as cascade:
        seen = {r.query_id: r.tier async for r in cascade.stream(items, concurrency=2)}
        everything = [r async for r in cascade.stream(items, all_tiers=True)]
    assert seen == {FELINES: 0, ROCKS: 1, FRUIT: 1}
    assert all(r.tiers is not None and len(r.tiers) == 2 for r in everything)


@pytest.mark.anyio
async def test_aclose_stops_a_cascade_stream(sim: VendorServer) -> None:
    def endless() -> Iterator[str]:
        for i in range(10_000):  # bounded; far more than the stream may read
            yield FELINES if i % 2 else ROCKS

    async with two_tiers(sim) as cascade:
        results = cascade.stream(endless(), concurrency=2)
        first = await results.__anext__()
        await results.aclose()
        assert [r async for r in results] == []
    assert first.tier in (0, 1)
    assert sim.stats()["requests"] < 100


async def in_flight_reaches(server: VendorServer, count: int) -> bool:
    """Poll (the counter has no event), up to ``WAIT_S``."""
    with anyio.move_on_after(WAIT_S):
        while server.stats()["in_flight"] != count:  # noqa: ASYNC110 - nothing to wait on
            await anyio.sleep(0.005)
        return True
    return False


@pytest.mark.anyio
@pytest.mark.parametrize("all_tiers", [False, True])
async def test_leaving_async_with_cascade_stops_its_streams(
    sim: VendorServer, model: str, all_tiers: bool
) -> None:
    sim.always(model, Reply.hang())
    received: list[EnsembleVerdict] = []

    async def consume(cascade: Cascade) -> None:
        async for got in cascade.stream([FELINES, ROCKS], concurrency=2, all_tiers=all_tiers):
            received.append(got)

    try:
        hangs = Ensemble([critic(sim, "c-hangs", model, timeout=60)])
        with anyio.fail_after(WAIT_S):
            # Leaving `async with cascade` must stop the stream, so the consumer (and
            # the task group) can end.
            async with (
                anyio.create_task_group() as group,
                Cascade([hangs, strong_tier(sim)]) as cascade,
            ):
                group.start_soon(consume, cascade)
                assert await in_flight_reaches(sim, 2)
    finally:
        sim.always(model, None)
    assert received == []
    assert await in_flight_reaches(sim, 0)


# -- budget, cache, early stop ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_budget_is_shared_by_the_tiers_and_skips_the_calls_it_cannot_pay(
    sim: VendorServer,
) -> None:
    pricing.register_price("right", vendor="custom", input=1.0, output=1.0)
    pricing.register_price("keeps", vendor="custom", input=1.0, output=1.0)
    # A strong call's worst case (~2,000 tokens at $1 each) never fits in $0.05; the
    # cheap tier's (~$0.002 a call) does.
    pricing.register_price("strong", vendor="custom", input=1e6, output=1e6)
    try:
        async with two_tiers(sim) as cascade:
            decided = await cascade.judge(ROCKS, budget_usd=0.05)
    finally:
        pricing._clear_registered()
    assert decided.tiers is not None
    assert [v.kind for v in decided.tiers[0].verdicts] == ["REJECT", "KEEP"]
    skipped = decided.tiers[1].verdicts[0]
    assert (skipped.kind, skipped.error_kind, skipped.attempts) == ("SKIPPED", ErrorKind.BUDGET, 0)
    assert "strong" not in asked(sim)
    assert (decided.tier, decided.consensus, decided.fallback) == (1, "UNCLEAR", True)
    assert is_incomplete(decided)


@pytest.mark.anyio
async def test_a_batch_budget_runs_out_across_items_without_raising(sim: VendorServer) -> None:
    for model in ("right", "keeps", "strong"):
        pricing.register_price(model, vendor="custom", input=1.0, output=1.0)
    try:
        async with two_tiers(sim) as cascade:
            one = await cascade.judge(ROCKS)  # 3 calls, 2 of them at once
            probe = critic(sim, "probe", "right")
            price = probe.price()
            assert one.cost_usd is not None and price is not None
            worst = pricing.worst_case_cost(price, probe.build_request(ROCKS))
            # About two items, then skips: a call whose worst case does not fit beside the
            # one in flight waits for it, so one worst case of headroom is enough.
            limit = worst + 2.5 * one.cost_usd
            sim.reset_stats()
            batch = await cascade.judge_many([ROCKS] * 12, concurrency=1, budget_usd=limit)
    finally:
        pricing._clear_registered()
    verdicts = [v for r in batch.verdicts for v in r.verdicts]
    skips = [v for v in verdicts if v.error_kind is ErrorKind.BUDGET]
    made = [v for v in verdicts if v.attempts > 0]
    assert skips and all(v.kind == "SKIPPED" and v.attempts == 0 for v in skips)
    assert len(made) == sim.stats()["requests"] >= 3
    assert batch.cost_usd is not None and batch.cost_usd <= limit
    first, last = batch.verdicts[0], batch.verdicts[-1]
    assert first.tiers is not None and first.tiers[0].n_errors == 0  # paid in full
    assert last.tiers is not None
    assert any(v.error_kind is ErrorKind.BUDGET for t in last.tiers for v in t.verdicts)


@pytest.mark.anyio
async def test_each_tier_answers_a_second_run_from_its_cache(
    sim: VendorServer, tmp_path: Path
) -> None:
    items = [FELINES, ROCKS, FRUIT]
    with (
        ResponseCache(tmp_path / "cheap.sqlite3") as cheap_cache,
        ResponseCache(tmp_path / "strong.sqlite3") as strong_cache,
    ):

        def cached_cascade() -> Cascade:
            return Cascade(
                [
                    cheap_tier(sim, cache=cheap_cache),
                    Ensemble([critic(sim, "s-strong", "strong")], cache=strong_cache),
                ],
                escalate=Escalation(agreement_below=0.9),
            )

        async with cached_cascade() as cascade:
            first = await cascade.judge_many(items)
        made = sim.stats()["requests"]
        sim.reset_stats()
        async with cached_cascade() as cascade:
            second = await cascade.judge_many(items)
        assert sim.stats()["requests"] == 0
        assert made == 3 * 2 + 2
        assert (strong_cache.stats().writes, cheap_cache.stats().writes) == (2, 6)
    assert [(r.consensus, r.tier) for r in second.verdicts] == [
        (r.consensus, r.tier) for r in first.verdicts
    ]
    assert all(v.cached for r in second.verdicts for v in r.verdicts)


@pytest.mark.anyio
async def test_early_stop_inside_a_tier_saves_calls_and_the_result_stands(
    sim: VendorServer,
) -> None:
    staged = Ensemble(
        [
            critic(sim, "c-right", "right"),
            critic(sim, "c-right-2", "right-2"),
            critic(sim, "c-keeps", "keeps"),
        ],
        early_stop=True,
    )
    async with Cascade(
        [staged, strong_tier(sim)], escalate=Escalation(agreement_below=0.9)
    ) as cascade:
        decided = await cascade.judge(ROCKS)
    assert asked(sim) == {"right": 1, "right-2": 1}  # keeps and strong never asked
    assert (decided.consensus, decided.tier, decided.calls_saved) == ("REJECT", 0, 1)
    assert decided.agreement_pct == 1.0 and decided.n_errors == 0
    assert decided.verdicts[-1].error_kind is ErrorKind.EARLY_STOP


# -- batch statistics, incompleteness, the results file --------------------------------------------


@pytest.mark.anyio
async def test_tier_stats_count_items_asked_decided_and_abstained_per_tier(
    sim: VendorServer, prices: None
) -> None:
    # Tier 1 agrees on REJECT items only: REJECT is decided there, SPLIT abstains.
    second = Ensemble([critic(sim, "s-strong", "strong"), critic(sim, "s-rejects", "rejects")])
    items = [FELINES, CANINES, ROCKS, FRUIT]
    async with Cascade(
        [cheap_tier(sim), second], escalate=Escalation(agreement_below=0.9), final="abstain"
    ) as cascade:
        batch = await cascade.judge_many(items)
    assert [(r.consensus, r.tier) for r in batch.verdicts] == [
        ("KEEP", 0),
        ("KEEP", 0),
        ("REJECT", 1),
        (ABSTAIN, 1),
    ]
    assert batch.abstained_items == [FRUIT]
    zero, one = batch.tier_stats()
    assert (zero.tier, zero.critics, zero.asked, zero.decided, zero.abstained) == (
        0,
        ["c-right", "c-keeps"],
        4,
        2,
        0,
    )
    assert (zero.share_asked, zero.share_decided, zero.agreement) == (1.0, 0.5, 1.0)
    assert (one.tier, one.critics, one.asked, one.decided, one.abstained) == (
        1,
        ["s-strong", "s-rejects"],
        2,
        1,
        1,
    )
    assert (one.share_asked, one.share_decided, one.agreement) == (0.5, 0.25, 1.0)
    tier_costs = [
        sum(r.tiers[i].cost_usd or 0.0 for r in batch.verdicts if r.tiers and len(r.tiers) > i)
        for i in (0, 1)
    ]
    assert [zero.cost_usd, one.cost_usd] == pytest.approx(tier_costs)
    assert batch.cost_usd == pytest.approx(sum(tier_costs))


def test_tier_stats_of_a_plain_ensemble_batch_are_empty() -> None:
    plain = aggregated([vote("KEEP", "a")])
    batch = BatchResult(verdicts=[plain], critics=["a"], voting="majority")
    assert batch.tier_stats() == [] and batch.abstained_items == []


def cascade_result(
    *tiers: EnsembleVerdict, decided: int, abstains: bool = False
) -> EnsembleVerdict:
    update: dict[str, Any] = {
        "tier": decided,
        "tiers": list(tiers),
        "verdicts": [v for t in tiers for v in t.verdicts],
    }
    if abstains:
        update["consensus"] = ABSTAIN
    return tiers[decided].model_copy(update=update)


def test_is_incomplete_looks_at_the_deciding_tier_or_at_every_tier_of_all_tiers_results() -> None:
    failed = aggregated([vote("KEEP", "a"), ERROR])
    budget = aggregated([vote("KEEP", "c"), BUDGET_SKIP.model_copy(update={"critic_id": "d"})])
    clean = aggregated([vote("KEEP", "c")])
    assert is_incomplete(failed)
    assert not is_incomplete(cascade_result(failed, clean, decided=1))
    assert is_incomplete(cascade_result(clean, failed, decided=1))
    assert is_incomplete(cascade_result(failed, budget, decided=1))
    assert is_incomplete(cascade_result(clean, failed, decided=0))  # all_tiers: calibration data


def test_revoting_a_cascade_batch_is_refused_with_a_pointer_to_replay() -> None:
    cheap = tier_of("i1", a="KEEP", b="SPLIT")
    strong = tier_of("i1", s="SPLIT", t="REJECT")
    abstained = cascade_result(cheap, strong, decided=1, abstains=True)
    batch = BatchResult(verdicts=[abstained], critics=["a", "b", "s", "t"], voting="cascade")
    with pytest.raises(ConfigError, match=r"cascade\.replay"):
        batch.revote("majority")


@pytest.mark.anyio
async def test_a_cascade_result_round_trips_through_the_results_file_format(
    sim: VendorServer, tmp_path: Path
) -> None:
    async with two_tiers(sim, final="abstain", escalate=Escalation(agreement_below=0.9)) as c:
        batch = await c.judge_many([ROCKS, FELINES], all_tiers=True)
    for decided in batch.verdicts:
        again = load_result(dump_result(decided))
        assert again == decided
        assert again.tier == decided.tier and again.tiers == decided.tiers
    batch.to_jsonl(tmp_path / "out.jsonl")
    loaded = BatchResult.from_jsonl(tmp_path / "out.jsonl")
    assert loaded.verdicts == batch.verdicts
    assert loaded.tier_stats() == batch.tier_stats()


# -- replay -------------------------------------------------------------------------------------


def replay_cascade(escalate: Any = None, final: str = "decide") -> Cascade:
    return Cascade(
        [Ensemble([offline("a"), offline("b")]), Ensemble([offline("s")])],
        escalate=escalate if escalate is not None else Escalation(agreement_below=0.9),
        final=final,  # type: ignore[arg-type]
    )


def tier_of(query_id: str, **votes: str) -> EnsembleVerdict:
    verdicts = [vote(kind, name) for name, kind in votes.items()]
    return Ensemble(critics=[]).aggregate_verdicts(verdicts, query_id=query_id)


def stored_items() -> list[EnsembleVerdict]:
    """Three all-tier results: cheap agrees on i1, splits on i2 and i3."""
    return [
        cascade_result(tier_of("i1", a="KEEP", b="KEEP"), tier_of("i1", s="REJECT"), decided=0),
        cascade_result(tier_of("i2", a="KEEP", b="SPLIT"), tier_of("i2", s="SPLIT"), decided=1),
        cascade_result(tier_of("i3", a="MERGE", b="KEEP"), tier_of("i3", s="MERGE"), decided=1),
    ]


def test_replay_applies_a_new_escalation_without_calls() -> None:
    stored = stored_items()
    replayed = replay_cascade().replay(stored, escalation=Escalation(agreement_below=math.inf))
    assert [(r.consensus, r.tier) for r in replayed.verdicts] == [
        ("REJECT", 1),
        ("SPLIT", 1),
        ("MERGE", 1),
    ]
    lenient = replay_cascade().replay(BatchResult(verdicts=stored, critics=[], voting="x"))
    assert [(r.consensus, r.tier) for r in lenient.verdicts] == [
        ("KEEP", 0),
        ("SPLIT", 1),
        ("MERGE", 1),
    ]
    first = lenient.verdicts[0]
    assert first.tiers is not None and len(first.tiers) == 1  # as a live run would hold
    assert [v.critic_id for v in first.verdicts] == ["a", "b"]
    assert lenient.critics == ["a", "b", "s"] and lenient.voting == "cascade(majority > majority)"


def test_replay_with_final_abstain_abstains_where_the_last_tier_does_not_stand() -> None:
    stored = cascade_result(
        tier_of("i1", a="KEEP", b="SPLIT"), tier_of("i1", s="SPLIT", t="KEEP"), decided=1
    )
    cascade = Cascade(
        [Ensemble([offline("a"), offline("b")]), Ensemble([offline("s"), offline("t")])],
        escalate=Escalation(agreement_below=[0.9, 0.9]),
        final="abstain",
    )
    (replayed,) = cascade.replay([stored]).verdicts
    assert (replayed.consensus, replayed.tier) == (ABSTAIN, 1)
    assert replayed.tiers is not None and replayed.tiers[1].consensus == "SPLIT"


def test_replay_of_a_result_that_stopped_too_early_says_to_store_all_tiers() -> None:
    live = cascade_result(tier_of("i1", a="KEEP", b="KEEP"), decided=0)
    assert replay_cascade().replay([live]).verdicts[0].tier == 0  # enough for this rule
    with pytest.raises(ConfigError, match=r"'i1' stops at tier 0.*all_tiers=True"):
        replay_cascade().replay([live], escalation=Escalation(agreement_below=math.inf))


def test_replay_of_a_result_without_tiers_raises() -> None:
    plain = tier_of("i1", a="KEEP", b="KEEP")
    with pytest.raises(ConfigError, match=r"'i1' has no per-tier results.*all_tiers=True"):
        replay_cascade().replay([plain])


def test_replay_of_a_result_whose_tier_holds_unknown_critics_raises() -> None:
    stranger = cascade_result(tier_of("i1", a="KEEP", z="KEEP"), tier_of("i1", s="KEEP"), decided=0)
    with pytest.raises(ConfigError, match=r"tier 0 holds critics \['z'\]"):
        replay_cascade().replay([stranger])
    swapped = cascade_result(tier_of("i1", s="KEEP"), tier_of("i1", a="KEEP"), decided=0)
    with pytest.raises(ConfigError, match="holds critics"):
        replay_cascade().replay([swapped])


def test_replay_of_a_result_with_more_tiers_than_the_cascade_raises() -> None:
    extra = cascade_result(
        tier_of("i1", a="KEEP"), tier_of("i1", s="KEEP"), tier_of("i1", s="KEEP"), decided=0
    )
    with pytest.raises(ConfigError, match="holds 3 tiers but this cascade has 2"):
        replay_cascade().replay([extra])


def test_replay_checks_the_escalation_it_is_given() -> None:
    with pytest.raises(ConfigError, match="2 thresholds"):
        replay_cascade().replay(stored_items(), escalation=Escalation(agreement_below=[0.5, 0.5]))
    wrong_mode = Escalation(agreement_below=0.9, calibrated_for="abstain")
    with pytest.raises(ConfigError, match="calibrated for final='abstain'"):
        replay_cascade().replay(stored_items(), escalation=wrong_mode)
    with pytest.raises(ConfigError, match="on_calibration_items must be one of"):
        replay_cascade().replay(stored_items(), on_calibration_items="ignore")  # type: ignore[arg-type]


def test_replay_can_use_a_callable_rule() -> None:
    replayed = replay_cascade().replay(
        stored_items(), escalation=lambda tier_result, tier: tier_result.consensus != "MERGE"
    )
    assert [r.tier for r in replayed.verdicts] == [1, 1, 0]


CALIBRATED = Escalation(
    agreement_below=0.9, calibration_ids=frozenset({"i1", "i3"}), calibrated_for="decide"
)


def test_replay_refuses_the_items_an_escalation_was_calibrated_on() -> None:
    with pytest.raises(ConfigError, match=r"2 of the 3 results are items this escalation"):
        replay_cascade().replay(stored_items(), escalation=CALIBRATED)
    with pytest.raises(ConfigError, match="calibrated on"):
        replay_cascade(CALIBRATED).replay(stored_items())  # the cascade's own rule too


def test_replay_can_skip_the_calibration_items() -> None:
    replayed = replay_cascade().replay(
        stored_items(), escalation=CALIBRATED, on_calibration_items="skip"
    )
    assert [r.query_id for r in replayed.verdicts] == ["i2"]


def test_replay_can_keep_the_calibration_items_with_a_warning() -> None:
    with pytest.warns(CalibrationItemsWarning, match="2 of the 3 results") as caught:
        replayed = replay_cascade().replay(
            stored_items(), escalation=CALIBRATED, on_calibration_items="keep"
        )
    assert [r.query_id for r in replayed.verdicts] == ["i1", "i2", "i3"]
    assert caught[0].filename == __file__  # the warning points at the caller


def test_replay_of_items_outside_the_calibration_set_does_not_warn() -> None:
    fresh = [r for r in stored_items() if r.query_id == "i2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replayed = replay_cascade().replay(fresh, escalation=CALIBRATED)
    assert len(replayed) == 1


def test_critic_stats_measure_each_critic_against_its_own_tiers_consensus() -> None:
    cheap = tier_of("i1", a="KEEP", b="KEEP", c="SPLIT")  # KEEP, 2 of 3: escalated
    strong = tier_of("i1", s="REJECT")
    batch = BatchResult(
        verdicts=[cascade_result(cheap, strong, decided=1)],
        critics=["a", "b", "c", "s"],
        voting="cascade",
    )
    stats = batch.critic_stats()
    assert batch.verdicts[0].consensus == "REJECT"
    assert [stats[name].agreement for name in "abcs"] == [1.0, 1.0, 0.0, 1.0]


def test_a_cascade_is_freed_as_soon_as_it_is_dropped(sim: VendorServer) -> None:
    # No reference cycle: a simulator a panel file starts for a cascade stops with it.
    import gc
    import weakref

    gc.disable()
    try:
        cascade = two_tiers(sim)
        cascade.judge_many_sync([FELINES], all_tiers=True)
        dropped = weakref.ref(cascade)
        del cascade
        assert dropped() is None
    finally:
        gc.enable()
