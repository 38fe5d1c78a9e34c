"""Voting strategies: 0.1 compatibility, ballots and policies, validation, early stop.

Oracle for compatibility: a small re-statement of cross-judge 0.1's ``majority_vote``,
``unanimous``, ``agreement_pct`` and ``krippendorff_alpha`` (behaviour doc §5), run against
the module on random panels with default keywords.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import pickle
import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.verdict import Verdict
from cross_judge.voting import (
    VOTING_STRATEGIES,
    Vote,
    accepts_kwarg,
    agreement_pct,
    any_vote,
    average_score,
    calls_to_decide,
    first_disagreement,
    get_voting_strategy,
    krippendorff_alpha,
    majority_vote,
    median_score,
    outcome_is_decided,
    register_voting_strategy,
    strategy_name,
    supports_early_stop,
    unanimous,
    validate_voting,
    weighted_average_score,
    weighted_vote,
)

BUILTIN_NAMES = sorted(VOTING_STRATEGIES)  # snapshot before any test registers more
LABEL_STRATEGIES = ["majority", "unanimous", "consensus", "weighted", "any", "first_disagreement"]
SCORE_STRATEGIES = [
    "average",
    "weighted_average",
    "median",
    "trimmed_mean",
    "highest",
    "lowest",
]
POLICY_KWARGS = [
    "errors",
    "ties",
    "min_valid",
    "priority",
    "fallback",
    "pass_label",
    "fail_label",
    "abstain_label",
    "weights",
    "scores",
    "threshold",
]
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- helpers ------------------------------------------------------------------------------


def v(
    kind: str, critic: str = "", *, confidence: float = 0.8, score: float | None = None
) -> Verdict:
    return Verdict(kind=kind, critic_id=critic, confidence=confidence, score=score)


def err(critic: str = "", kind: str = "ERROR") -> Verdict:
    error_kind = ErrorKind.PARSE if kind == "PARSE_FAIL" else ErrorKind.SERVER
    return Verdict(kind=kind, critic_id=critic, error="boom", error_kind=error_kind)


def skipped(critic: str = "", error_kind: ErrorKind = ErrorKind.EARLY_STOP) -> Verdict:
    return Verdict(kind="SKIPPED", critic_id=critic, error="not run", error_kind=error_kind)


def vote(name: str, verdicts: Sequence[Verdict], **kwargs: Any) -> Vote:
    result = VOTING_STRATEGIES[name](verdicts, **kwargs)
    assert isinstance(result, Vote)
    return result


@pytest.fixture
def registry() -> Any:
    """Restore the registry after a test registers strategies."""
    saved = dict(VOTING_STRATEGIES)
    yield VOTING_STRATEGIES
    VOTING_STRATEGIES.clear()
    VOTING_STRATEGIES.update(saved)


# -- the 0.1 oracle (behaviour doc §5, restated) --------------------------------------------


def oracle_majority(
    verdicts: Sequence[Verdict], priority: Sequence[str] | None = None, fallback: str = "UNCLEAR"
) -> tuple[str, bool]:
    tally: dict[str, int] = {}
    for x in verdicts:
        if x.error is None:
            tally[x.kind] = tally.get(x.kind, 0) + 1
    if not tally:
        return fallback, False
    best = max(tally.values())
    leaders = [label for label in tally if tally[label] == best]
    if len(leaders) > 1 and priority:
        for wanted in priority:
            if wanted in leaders:
                return wanted, len(tally) > 1
    return leaders[0], len(tally) > 1


def oracle_unanimous(verdicts: Sequence[Verdict], fallback: str = "UNCLEAR") -> tuple[str, bool]:
    kinds = {x.kind for x in verdicts if x.error is None}
    return (next(iter(kinds)), False) if len(kinds) == 1 else (fallback, True)


def oracle_agreement(verdicts: Sequence[Verdict], consensus: str) -> float:
    valid = [x for x in verdicts if x.error is None]
    return sum(x.kind == consensus for x in valid) / len(valid) if valid else 0.0


def oracle_alpha(verdicts: Sequence[Verdict]) -> float | None:
    tally: dict[str, int] = {}
    for x in verdicts:
        if x.error is None:
            tally[x.kind] = tally.get(x.kind, 0) + 1
    n = sum(tally.values())
    if n < 2:
        return None
    pairs = n * (n - 1) // 2
    agreeing = sum(c * (c - 1) // 2 for c in tally.values())
    observed = (pairs - agreeing) / pairs
    expected = 1.0 - sum((c / n) * ((c - 1) / (n - 1)) for c in tally.values())
    if expected == 0.0:
        return 1.0 if observed == 0.0 else 0.0
    return max(-1.0, min(1.0, 1.0 - observed / expected))


VOCAB = ["KEEP", "REJECT", "SPLIT"]
# "ERROR" as a *label* is an LLM that answered "error": 0.1 counts it as a normal vote.
TOKENS = [*VOCAB, "ERROR", "!ERROR", "!PARSE_FAIL"]


def build_panel(tokens: Sequence[str]) -> list[Verdict]:
    """``!KIND`` is a failed verdict of that kind; anything else a valid vote."""
    return [
        err(f"c{i}", t[1:]) if t.startswith("!") else v(t, f"c{i}") for i, t in enumerate(tokens)
    ]


panels = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=7).map(build_panel)
priorities = st.none() | st.lists(st.sampled_from([*VOCAB, "MERGE"]), max_size=4, unique=True)
fallbacks = st.sampled_from(["UNCLEAR", "NONE", "KEEP", ""])


def assert_matches_0_1(panel: list[Verdict], priority: list[str] | None, fallback: str) -> None:
    expected = oracle_majority(panel, priority, fallback)
    assert majority_vote(panel, priority=priority, fallback=fallback) == expected
    assert unanimous(panel, fallback=fallback) == oracle_unanimous(panel, fallback)
    for label in {*VOCAB, "ERROR", fallback}:
        assert agreement_pct(panel, label) == oracle_agreement(panel, label)
    alpha, expected_alpha = krippendorff_alpha(panel), oracle_alpha(panel)
    # Exact: the module keeps 0.1's arithmetic, rounding noise included.
    assert alpha == expected_alpha


# -- Vote -----------------------------------------------------------------------------------


def test_vote_unpacks_and_equals_a_plain_tuple() -> None:
    label, disagreement = Vote("KEEP", False)
    assert (label, disagreement) == ("KEEP", False)
    assert Vote("KEEP", False) == ("KEEP", False)
    assert len(Vote("KEEP", False)) == 2


def test_vote_carries_a_score_that_equality_ignores() -> None:
    scored = Vote("PASS", True, 0.75)
    assert (scored.label, scored.disagreement, scored.score) == ("PASS", True, 0.75)
    assert scored == Vote("PASS", True) and hash(scored) == hash(("PASS", True))
    assert Vote("PASS", True).score is None


def test_vote_score_is_read_only() -> None:
    with pytest.raises(AttributeError):
        Vote("PASS", False, 0.5).score = 0.9  # type: ignore[misc]


def test_vote_repr_shows_label_disagreement_score_and_fallback() -> None:
    assert repr(Vote("PASS", True, 0.5)) == (
        "Vote(label='PASS', disagreement=True, score=0.5, fallback=False)"
    )


def test_vote_survives_pickle_and_copy_with_its_score_and_fallback() -> None:
    original = Vote("UNCLEAR", True, 0.25, fallback=True)
    for clone in (
        pickle.loads(pickle.dumps(original)),
        copy.copy(original),
        copy.deepcopy(original),
    ):
        assert isinstance(clone, Vote)
        assert (clone, clone.score, clone.fallback) == (original, 0.25, True)


def test_vote_fallback_is_read_only_and_ignored_by_equality() -> None:
    fell_back = Vote("UNCLEAR", False, fallback=True)
    assert fell_back == Vote("UNCLEAR", False) and hash(fell_back) == hash(("UNCLEAR", False))
    with pytest.raises(AttributeError):
        fell_back.fallback = False  # type: ignore[misc]


# -- fallback: the label no vote decided -----------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_no_valid_verdict_is_a_fallback_for_every_builtin_strategy(name: str) -> None:
    result = vote(name, [err("a"), err("b", "PARSE_FAIL")])
    assert result.fallback and result.label == "UNCLEAR"


@pytest.mark.parametrize("name", LABEL_STRATEGIES)
def test_a_voted_unclear_is_not_a_fallback(name: str) -> None:
    result = vote(name, [v("UNCLEAR", "a"), v("UNCLEAR", "b")])
    assert result.label == "UNCLEAR" and not result.fallback


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_a_missed_quorum_is_a_fallback(name: str) -> None:
    result = vote(name, [v("PASS", "a"), err("b")], min_valid=2)
    assert result.fallback and result.label == "UNCLEAR"


def test_no_unanimity_is_a_fallback_but_first_disagreement_marks_a_decision() -> None:
    split = [v("PASS", "a"), v("FAIL", "b")]
    assert vote("unanimous", split).fallback
    assert not vote("first_disagreement", split).fallback  # DISAGREE is its answer


@FAST
@given(labels=st.lists(st.sampled_from(["PASS", "FAIL", "UNCLEAR"]), min_size=1, max_size=6))
def test_a_quorate_panel_of_one_mind_is_never_a_fallback(labels: list[str]) -> None:
    panel = [v(labels[0], f"c{i}") for i in range(len(labels))]
    for name in LABEL_STRATEGIES:
        assert not vote(name, panel).fallback, name


# -- differential test against 0.1 ----------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(panel=panels, priority=priorities, fallback=fallbacks)
def test_default_kwargs_give_0_1_answers_on_random_panels(
    panel: list[Verdict], priority: list[str] | None, fallback: str
) -> None:
    assert_matches_0_1(panel, priority, fallback)


def test_default_kwargs_give_0_1_answers_on_seeded_panels() -> None:
    rng = random.Random(20240601)
    for i in range(800):
        # Up to 11 critics from time to time: alpha's float sum only depends on the order
        # of the labels from 9 valid verdicts up, so smaller panels cannot pin it down.
        tokens = [rng.choice(TOKENS) for _ in range(rng.randint(1, 11 if i % 4 == 0 else 7))]
        priority = rng.choice([None, rng.sample([*VOCAB, "MERGE"], rng.randint(0, 4))])
        assert_matches_0_1(build_panel(tokens), priority, rng.choice(["UNCLEAR", "NONE", "KEEP"]))


def test_krippendorff_alpha_keeps_0_1_rounding_to_the_last_bit() -> None:
    # The same label counts summed in another order give 0.0 here: only 0.1's order of
    # summation (labels in first-seen order) gives this exact noise.
    panel = build_panel(["KEEP"] * 2 + ["REJECT"] * 4 + ["SPLIT"] * 3)
    assert krippendorff_alpha(panel) == oracle_alpha(panel) == 1.1102230246251565e-16


def test_majority_of_no_valid_verdict_is_fallback_without_disagreement() -> None:
    assert majority_vote([]) == ("UNCLEAR", False)
    assert majority_vote([err(), err(kind="PARSE_FAIL")], fallback="X") == ("X", False)


def test_unanimous_of_no_valid_verdict_is_fallback_with_disagreement() -> None:
    assert unanimous([]) == ("UNCLEAR", True)
    assert unanimous([err()], fallback="X") == ("X", True)


def test_majority_tie_goes_to_priority_else_to_the_first_label_in_critic_order() -> None:
    panel = [v("KEEP"), v("REJECT"), v("REJECT"), v("KEEP")]
    assert majority_vote(panel) == ("KEEP", True)
    assert majority_vote(panel, priority=["SPLIT", "REJECT"]) == ("REJECT", True)


def test_majority_priority_is_keyword_only_as_in_0_1() -> None:
    with pytest.raises(TypeError):
        majority_vote([v("KEEP")], ["REJECT"])  # type: ignore[call-arg, arg-type]


def test_an_llm_answering_error_is_a_valid_vote() -> None:
    assert majority_vote([v("ERROR"), v("ERROR"), v("KEEP")]) == ("ERROR", True)


# -- invariants -----------------------------------------------------------------------------


@FAST
@given(panel=panels, name=st.sampled_from(BUILTIN_NAMES))
def test_every_builtin_returns_a_vote_of_str_and_bool(panel: list[Verdict], name: str) -> None:
    result = vote(name, panel)
    label, disagreement = result
    assert isinstance(label, str) and isinstance(disagreement, bool)


@FAST
@given(panel=panels, data=st.data())
def test_permuting_verdicts_keeps_a_unique_majority_winner(
    panel: list[Verdict], data: st.DataObject
) -> None:
    counts = [sum(x.kind == k for x in panel if x.error is None) for k in {x.kind for x in panel}]
    if counts.count(max(counts, default=0)) != 1:
        return  # a tie is decided by critic order on purpose
    shuffled = data.draw(st.permutations(panel))
    assert majority_vote(shuffled).label == majority_vote(panel).label


@FAST
@given(
    panel=panels,
    name=st.sampled_from(BUILTIN_NAMES),
    errors=st.sampled_from(["ignore", "abstain", "fail"]),
    inserts=st.lists(
        st.tuples(st.integers(0, 7), st.sampled_from(list(ErrorKind))), min_size=1, max_size=3
    ),
)
def test_adding_skipped_verdicts_never_changes_any_result(
    panel: list[Verdict], name: str, errors: str, inserts: list[tuple[int, ErrorKind]]
) -> None:
    padded = list(panel)
    for position, error_kind in inserts:
        padded.insert(position, skipped("late", error_kind))
    before, after = vote(name, panel, errors=errors), vote(name, padded, errors=errors)
    assert (after, after.score) == (before, before.score)


@FAST
@given(panel=panels, name=st.sampled_from(BUILTIN_NAMES), priority=priorities)
def test_errors_ignore_equals_voting_on_the_valid_subset(
    panel: list[Verdict], name: str, priority: list[str] | None
) -> None:
    valid = [x for x in panel if x.error is None]
    got, expected = vote(name, panel, priority=priority), vote(name, valid, priority=priority)
    assert (got, got.score) == (expected, expected.score)


scored_panels = st.lists(
    st.builds(
        lambda kind, score: v(kind, score=score),
        st.sampled_from(["PASS", "FAIL", "MAYBE"]),
        st.none() | st.floats(0.0, 1.0),
    ),
    min_size=1,
    max_size=7,
)


@FAST
@given(panel=scored_panels, name=st.sampled_from(["average", "median", "weighted_average"]))
def test_average_and_median_lie_within_the_ballot_scores(panel: list[Verdict], name: str) -> None:
    ballot_scores = [
        x.score if x.score is not None else {"PASS": 1.0, "FAIL": 0.0}[x.kind]
        for x in panel
        if x.score is not None or x.kind != "MAYBE"
    ]
    result = vote(name, panel)
    if not ballot_scores:
        assert result.score is None
    else:
        assert result.score is not None
        assert min(ballot_scores) <= result.score <= max(ballot_scores)


@FAST
@given(panel=panels, priority=priorities, weight=st.sampled_from([0.5, 1.0, 3.0]))
def test_weighted_with_equal_weights_and_no_confidence_equals_majority(
    panel: list[Verdict], priority: list[str] | None, weight: float
) -> None:
    weights = {x.critic_id: weight for x in panel}
    got = weighted_vote(panel, weights=weights, use_confidence=False, priority=priority)
    assert got == majority_vote(panel, priority=priority)


# -- error policies, on every strategy ------------------------------------------------------

# One approval and two failed calls: a.PASS (confidence 0.8), b.ERROR, c.PARSE_FAIL.
PASS_AND_TWO_ERRORS = [v("PASS", "a"), err("b"), err("c", "PARSE_FAIL")]


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_strategy_ignores_errors_by_default(name: str) -> None:
    result = vote(name, PASS_AND_TWO_ERRORS)
    assert result == ("PASS", False)
    assert result.score == (1.0 if name in SCORE_STRATEGIES else None)


@pytest.mark.parametrize(
    ("name", "expected", "score"),
    [
        ("majority", ("FAIL", True), None),
        ("unanimous", ("UNCLEAR", True), None),
        ("consensus", ("UNCLEAR", True), None),
        ("weighted", ("FAIL", True), None),
        ("any", ("PASS", True), None),
        ("first_disagreement", ("DISAGREE", True), None),
        ("average", ("FAIL", True), 1 / 3),
        ("weighted_average", ("FAIL", True), 1 / 3),
        ("median", ("FAIL", True), 0.0),
        ("highest", ("PASS", True), 1.0),
        ("lowest", ("FAIL", True), 0.0),
    ],
)
def test_every_strategy_honours_errors_fail(
    name: str, expected: tuple[str, bool], score: float | None
) -> None:
    result = vote(name, PASS_AND_TWO_ERRORS, errors="fail")
    assert result == expected
    assert result.score == (pytest.approx(score) if score is not None else None)


@pytest.mark.parametrize(
    ("name", "expected", "score"),
    [
        ("majority", ("UNCLEAR", True), None),
        ("unanimous", ("UNCLEAR", True), None),
        ("consensus", ("UNCLEAR", True), None),
        ("weighted", ("UNCLEAR", True), None),
        ("any", ("PASS", True), None),
        ("first_disagreement", ("DISAGREE", True), None),
        *[(name, ("PASS", True), 1.0) for name in SCORE_STRATEGIES],
    ],
)
def test_every_strategy_honours_errors_abstain(
    name: str, expected: tuple[str, bool], score: float | None
) -> None:
    result = vote(name, PASS_AND_TWO_ERRORS, errors="abstain")
    assert result == expected
    assert result.score == score


def test_abstentions_vote_for_abstain_label_when_it_is_set() -> None:
    assert majority_vote(PASS_AND_TWO_ERRORS, errors="abstain", abstain_label="ABSTAIN") == (
        "ABSTAIN",
        True,
    )


def test_errors_fail_votes_for_the_configured_fail_label() -> None:
    panel = [v("KEEP"), err(), err()]
    assert majority_vote(panel, errors="fail", fail_label="REJECT") == ("REJECT", True)


@pytest.mark.parametrize("name", BUILTIN_NAMES)
@pytest.mark.parametrize(
    "uncast",
    [
        skipped("x"),
        skipped("x", ErrorKind.BUDGET),
        Verdict(kind="ERROR", critic_id="x", error="over budget", error_kind=ErrorKind.BUDGET),
        Verdict(kind="SKIPPED", critic_id="x"),
    ],
    ids=["early-stop", "skipped-budget", "error-budget", "skipped-without-error"],
)
def test_calls_not_made_are_dropped_whatever_the_error_policy(name: str, uncast: Verdict) -> None:
    for errors in ("ignore", "abstain", "fail"):
        assert vote(name, [v("PASS", "a"), uncast], errors=errors) == ("PASS", False), errors


# -- ties -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["majority", "weighted", "any"])
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "KEEP"),
        ({"priority": ["REJECT"]}, "REJECT"),
        ({"ties": "priority", "priority": ["MERGE", "REJECT"]}, "REJECT"),
        ({"ties": "pass"}, "PASS"),
        ({"ties": "fail"}, "FAIL"),
        ({"ties": "abstain"}, "UNCLEAR"),
        ({"ties": "abstain", "abstain_label": "HUMAN"}, "HUMAN"),
        ({"ties": "pass", "pass_label": "OK", "priority": ["REJECT"]}, "OK"),
    ],
)
def test_label_strategies_resolve_ties_by_the_tie_policy(
    name: str, kwargs: dict[str, Any], expected: str
) -> None:
    # `any` has no target among the ballots here, so its majority fallback decides.
    assert vote(name, [v("KEEP", "a"), v("REJECT", "b")], **kwargs) == (expected, True)


@pytest.mark.parametrize("name", ["average", "weighted_average", "median"])
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "PASS"),
        ({"ties": "priority"}, "PASS"),
        ({"ties": "pass"}, "PASS"),
        ({"ties": "fail"}, "FAIL"),
        ({"ties": "abstain"}, "UNCLEAR"),
        ({"ties": "abstain", "abstain_label": "HUMAN"}, "HUMAN"),
    ],
)
def test_a_score_exactly_at_the_threshold_is_a_tie(
    name: str, kwargs: dict[str, Any], expected: str
) -> None:
    result = vote(name, [v("PASS"), v("FAIL")], **kwargs)
    assert (result, result.score) == ((expected, True), 0.5)


@pytest.mark.parametrize(("score", "expected"), [(0.7, "PASS"), (0.69, "FAIL"), (0.71, "PASS")])
def test_score_strategies_compare_against_a_custom_threshold(score: float, expected: str) -> None:
    # 0.69 < 0.7 fails; 0.7 == 0.7 is a tie, passing under ties="priority".
    assert average_score([v("X", score=score)], threshold=0.7).label == expected


def test_weighted_ties_are_not_decided_by_rounding() -> None:
    panel = [v("KEEP", "a"), v("KEEP", "b"), v("REJECT", "c")]
    weights = {"a": 0.1, "b": 0.2, "c": 0.3}  # 0.1 + 0.2 != 0.3 in floating point
    assert weighted_vote(panel, weights=weights, use_confidence=False) == ("KEEP", True)
    assert weighted_vote(panel, weights=weights, use_confidence=False, ties="fail") == (
        "FAIL",
        True,
    )


def test_weighted_all_zero_weights_are_a_tie_among_the_labels_present() -> None:
    panel = [v("KEEP", "a"), v("REJECT", "b"), v("REJECT", "c")]
    zero = {"a": 0.0, "b": 0.0, "c": 0.0}
    assert weighted_vote(panel, weights=zero) == ("KEEP", True)
    assert weighted_vote(panel, weights=zero, priority=["REJECT"]) == ("REJECT", True)
    assert weighted_vote(panel, weights=zero, ties="abstain") == ("UNCLEAR", True)


def test_weighted_zero_confidence_everywhere_is_a_tie_too() -> None:
    panel = [
        v("KEEP", "a", confidence=0.0),
        v("REJECT", "b", confidence=0.0),
        v("REJECT", "c", confidence=0.0),
    ]
    assert weighted_vote(panel, ties="fail") == ("FAIL", True)
    assert weighted_vote(panel, use_confidence=False) == ("REJECT", True)


# -- weighted -------------------------------------------------------------------------------


def test_weighted_lets_a_heavy_critic_outvote_the_majority() -> None:
    panel = [v("KEEP", "a"), v("REJECT", "b"), v("KEEP", "c")]
    assert weighted_vote(panel, weights={"a": 1, "b": 5, "c": 1}) == ("REJECT", True)


def test_weighted_multiplies_by_confidence_unless_told_not_to() -> None:
    panel = [
        v("KEEP", "a", confidence=0.9),
        v("REJECT", "b", confidence=0.2),
        v("REJECT", "c", confidence=0.2),
    ]
    assert weighted_vote(panel) == ("KEEP", True)
    assert weighted_vote(panel, use_confidence=False) == ("REJECT", True)


def test_weighted_error_ballots_weigh_their_critic_weight_not_their_zero_confidence() -> None:
    panel = [v("KEEP", "a", confidence=0.9), err("b")]
    assert weighted_vote(panel, errors="fail", weights={"b": 1.0}) == ("FAIL", True)


def test_weighted_of_nothing_is_fallback_without_disagreement() -> None:
    assert weighted_vote([err()], fallback="NONE") == ("NONE", False)


def test_label_strategies_accept_and_ignore_weights() -> None:
    panel = [v("KEEP", "a"), v("REJECT", "b"), v("KEEP", "c")]
    heavy = {"b": 100.0}
    assert majority_vote(panel, weights=heavy) == majority_vote(panel) == ("KEEP", True)
    assert average_score([v("PASS", "a"), v("FAIL", "b")], weights={"b": 9.0}).score == 0.5


# -- quorum ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_strategy_returns_the_fallback_below_the_quorum(name: str) -> None:
    panel = [v("PASS", "a"), v("PASS", "b"), err("c")]
    result = vote(name, panel, min_valid=3, fallback="NO_QUORUM")
    assert (result, result.score) == (("NO_QUORUM", False), None)


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_strategy_votes_normally_once_the_quorum_is_met(name: str) -> None:
    assert vote(name, [v("PASS", "a"), v("PASS", "b"), err("c")], min_valid=2) == ("PASS", False)


def test_the_quorum_keeps_the_disagreement_flag() -> None:
    assert majority_vote([v("KEEP"), v("REJECT")], min_valid=3) == ("UNCLEAR", True)


def test_the_quorum_counts_valid_verdicts_not_fail_ballots() -> None:
    assert majority_vote([v("FAIL"), err(), err()], errors="fail", min_valid=2) == (
        "UNCLEAR",
        False,
    )


# -- score strategies -----------------------------------------------------------------------


def test_score_field_beats_scores_mapping_beats_pass_and_fail_labels() -> None:
    assert average_score([v("PASS", score=0.2)]).score == 0.2
    assert average_score([v("GOOD")], scores={"GOOD": 0.9}).score == 0.9
    assert average_score([v("PASS")], scores={"GOOD": 0.9}).score == 1.0
    assert average_score([v("OK"), v("BAD")], pass_label="OK", fail_label="BAD").score == 0.5


def test_labels_without_a_score_are_skipped_by_score_strategies() -> None:
    result = average_score([v("PASS"), v("MAYBE"), v("MAYBE")])
    assert (result, result.score) == (("PASS", True), 1.0)


@pytest.mark.parametrize("name", SCORE_STRATEGIES)
def test_no_scored_ballot_gives_the_fallback_and_no_score(name: str) -> None:
    result = vote(name, [v("MAYBE"), err()], fallback="NONE")
    assert (result, result.score) == (("NONE", False), None)
    assert vote(name, []) == ("UNCLEAR", False)


@pytest.mark.parametrize("name", SCORE_STRATEGIES)
def test_no_scored_ballot_with_abstentions_gives_the_abstain_label(name: str) -> None:
    result = vote(name, [err(), err()], errors="abstain", abstain_label="HUMAN")
    assert (result, result.score) == (("HUMAN", False), None)


def test_average_of_scores_as_in_spring_ai() -> None:
    result = average_score([v("X", score=0.8), v("X", score=0.7), v("X", score=0.6)])
    assert result.label == "PASS" and result.score == pytest.approx(0.7)


def test_average_of_equal_scores_is_exactly_that_score() -> None:
    assert average_score([v("X", score=0.1)] * 3).score == 0.1


def test_weighted_average_renormalises_over_critics_that_returned_a_score() -> None:
    panel = [v("X", "sonnet", score=0.9), v("X", "haiku", score=0.4), err("gpt")]
    weights = {"sonnet": 0.5, "haiku": 0.2, "gpt": 0.3}
    result = weighted_average_score(panel, weights=weights)
    assert result.score == pytest.approx((0.5 * 0.9 + 0.2 * 0.4) / 0.7)


def test_weighted_average_of_zero_weights_is_the_plain_mean() -> None:
    panel = [v("X", "a", score=0.2), v("X", "b", score=0.6)]
    assert weighted_average_score(panel, weights={"a": 0, "b": 0}).score == pytest.approx(0.4)


def test_weighted_average_without_weights_is_the_average() -> None:
    panel = [v("X", "a", score=0.2), v("X", "b", score=0.6), v("X", "c", score=0.9)]
    assert weighted_average_score(panel).score == pytest.approx(average_score(panel).score or 0)


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    panel = [v("X", score=s) for s in (0.9, 0.3, 0.8, 0.7)]
    assert median_score(panel).score == pytest.approx(0.75)


def test_median_resists_one_outlier() -> None:
    result = median_score([v("X", score=s) for s in (0.9, 0.8, 0.2)])
    assert (result.label, result.score) == ("PASS", 0.8)


@pytest.mark.parametrize(
    ("name", "score", "label"), [("highest", 0.9, "PASS"), ("lowest", 0.2, "FAIL")]
)
def test_highest_and_lowest_take_the_extreme_score(name: str, score: float, label: str) -> None:
    result = vote(name, [v("X", score=s) for s in (0.2, 0.9, 0.6)])
    assert (result.label, result.score) == (label, score)


# -- any ------------------------------------------------------------------------------------


def test_any_target_wins_with_a_single_ballot() -> None:
    panel = [v("SAFE"), v("SAFE"), v("UNSAFE")]
    assert any_vote(panel, target="UNSAFE") == ("UNSAFE", True)


def test_any_target_defaults_to_the_pass_label() -> None:
    assert any_vote([v("FAIL"), v("FAIL"), v("PASS")]) == ("PASS", True)
    assert any_vote([v("NO"), v("YES")], pass_label="YES") == ("YES", True)


def test_any_without_the_target_is_a_majority_vote() -> None:
    assert any_vote([v("FAIL"), v("OTHER"), v("FAIL")]) == ("FAIL", True)
    assert any_vote([v("FAIL"), v("OTHER")], ties="abstain") == ("UNCLEAR", True)


def test_any_can_veto_on_a_single_failed_call() -> None:
    assert any_vote([v("PASS"), v("PASS"), err()], errors="fail", target="FAIL") == ("FAIL", True)


# -- unanimous and first_disagreement -------------------------------------------------------


def test_consensus_is_an_alias_of_unanimous() -> None:
    assert get_voting_strategy("consensus") is unanimous


def test_unanimous_returns_the_shared_label() -> None:
    assert unanimous([v("KEEP"), err(), v("KEEP")]) == ("KEEP", False)


def test_an_abstaining_error_breaks_unanimity() -> None:
    assert unanimous([v("KEEP"), err()], errors="abstain") == ("UNCLEAR", True)


@pytest.mark.parametrize(
    ("panel", "expected"),
    [
        ([v("KEEP"), v("KEEP")], ("KEEP", False)),
        ([v("KEEP"), v("REJECT")], ("DISAGREE", True)),
        ([], ("UNCLEAR", False)),
        ([err()], ("UNCLEAR", False)),
    ],
    ids=["agree", "disagree", "empty", "all-errors"],
)
def test_first_disagreement(panel: list[Verdict], expected: tuple[str, bool]) -> None:
    assert first_disagreement(panel) == expected


def test_first_disagreement_uses_the_given_disagree_label() -> None:
    assert first_disagreement([v("A"), v("B")], disagree_label="HUMAN") == ("HUMAN", True)


# -- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_unknown_kwarg_is_rejected_listing_the_accepted_ones(name: str) -> None:
    with pytest.raises(ConfigError, match=r"'fallback_label'.*accepts:.*fallback"):
        validate_voting(name, {"fallback_label": "X"})


@pytest.mark.parametrize(
    ("kwarg", "value", "match"),
    [
        ("errors", "skip", r"errors must be one of 'ignore', 'abstain', 'fail'"),
        ("ties", "coin", r"ties must be one of 'priority', 'pass', 'fail', 'abstain'"),
        ("min_valid", 0, "min_valid"),
        ("min_valid", True, "min_valid"),
        ("min_valid", 1.5, "min_valid"),
        ("priority", "KEEP", "priority"),
        ("priority", ["KEEP", 1], "priority"),
        ("fallback", None, "fallback"),
        ("pass_label", 1, "pass_label"),
        ("fail_label", b"FAIL", "fail_label"),
        ("abstain_label", 0, "abstain_label"),
        ("threshold", 1.5, "threshold"),
        ("threshold", True, "threshold"),
        ("threshold", math.nan, "threshold"),
        ("weights", {"a": -1.0}, "weights"),
        ("weights", {"a": math.inf}, "weights"),
        ("weights", {"a": "heavy"}, "weights"),
        ("weights", [1.0], "weights"),
        ("scores", {"KEEP": 2.0}, "scores"),
    ],
)
def test_every_strategy_rejects_bad_policy_values_naming_the_kwarg(
    kwarg: str, value: Any, match: str
) -> None:
    for name in BUILTIN_NAMES:
        with pytest.raises(ConfigError, match=match):
            validate_voting(name, {kwarg: value})
        with pytest.raises(ConfigError, match=match):  # the call checks the same way
            VOTING_STRATEGIES[name]([v("KEEP")], **{kwarg: value})


def test_negative_weight_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="weights"):
        weighted_vote([v("KEEP", "a")], weights={"a": -0.5})


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("weighted", {"use_confidence": "yes"}, "use_confidence"),
        ("any", {"target": 1}, "target"),
        ("first_disagreement", {"disagree_label": None}, "disagree_label"),
        ("majority", {"use_confidence": False}, "use_confidence"),
        ("average", {"target": "PASS"}, "target"),
    ],
)
def test_strategy_specific_extras_are_checked(
    name: str, kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        validate_voting(name, kwargs)


def test_valid_kwargs_return_the_resolved_strategy() -> None:
    assert (
        validate_voting(" Weighted ", {"weights": {"a": 2}, "use_confidence": False})
        is weighted_vote
    )


def test_unknown_strategy_is_a_key_error_and_config_error_listing_known_names() -> None:
    with pytest.raises(KeyError, match="Known") as caught:
        validate_voting("plurality", {})
    assert isinstance(caught.value, ConfigError) and "majority" in str(caught.value)


def test_custom_callable_lacking_a_kwarg_is_rejected_naming_it() -> None:
    def keep(verdicts: Sequence[Verdict], *, fallback: str = "UNCLEAR") -> tuple[str, bool]:
        return "KEEP", False

    assert validate_voting(keep, {"fallback": "X"}) is keep
    with pytest.raises(ConfigError, match=r"'keep' does not accept 'weights'"):
        validate_voting(keep, {"fallback": "X", "weights": {}})


def test_custom_callable_with_var_kwargs_accepts_any_kwarg() -> None:
    def keep(verdicts: Sequence[Verdict], **kwargs: Any) -> tuple[str, bool]:
        return "KEEP", False

    assert validate_voting(keep, {"anything": 1}) is keep


def test_custom_callable_that_cannot_take_the_verdicts_is_rejected() -> None:
    def nothing() -> tuple[str, bool]:
        return "KEEP", False

    with pytest.raises(ConfigError, match="cannot be called"):
        validate_voting(nothing, {})


def test_a_callable_whose_signature_cannot_be_inspected_is_accepted() -> None:
    opaque: Callable[..., Any] = max  # builtins such as max have no inspectable signature
    assert validate_voting(opaque, {"x": 1}) is opaque


# -- accepts_kwarg and strategy_name --------------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN_NAMES)
@pytest.mark.parametrize("kwarg", POLICY_KWARGS)
def test_builtins_accept_every_policy_kwarg(name: str, kwarg: str) -> None:
    assert accepts_kwarg(name, kwarg)


def test_builtins_accept_only_their_own_extras() -> None:
    assert accepts_kwarg(weighted_vote, "use_confidence")
    assert not accepts_kwarg(majority_vote, "use_confidence")
    assert accepts_kwarg("any", "target") and accepts_kwarg("first_disagreement", "disagree_label")


def test_custom_callables_accept_named_parameters_and_var_kwargs_only() -> None:
    def named(verdicts: Any, *, weights: Any = None) -> tuple[str, bool]:
        return "K", False

    def var(verdicts: Any, **kwargs: Any) -> tuple[str, bool]:
        return "K", False

    def positional(verdicts: Any, weights: Any = None, /) -> tuple[str, bool]:
        return "K", False

    def slot(weights: Any) -> tuple[str, bool]:  # its only parameter takes the verdicts
        return "K", False

    assert accepts_kwarg(named, "weights") and not accepts_kwarg(named, "min_valid")
    assert accepts_kwarg(var, "min_valid")
    assert not accepts_kwarg(positional, "weights")
    assert not accepts_kwarg(slot, "weights")
    assert not accepts_kwarg(max, "weights")  # uninspectable: do not inject


def test_strategy_name_keeps_strings_as_given_and_names_callables() -> None:
    def mine(verdicts: Any) -> tuple[str, bool]:
        return "K", False

    assert strategy_name("MAJORITY") == "MAJORITY"
    assert strategy_name(mine) == "mine"
    assert strategy_name(functools.partial(mine)) == "custom"


# -- registry -------------------------------------------------------------------------------


def test_registry_holds_every_builtin_by_lower_case_name() -> None:
    assert set(BUILTIN_NAMES) == {*LABEL_STRATEGIES, *SCORE_STRATEGIES}
    assert all(name == name.lower() for name in BUILTIN_NAMES)


def test_a_registered_strategy_resolves_by_name_case_insensitively(registry: Any) -> None:
    def always_keep(verdicts: Any, **kwargs: Any) -> tuple[str, bool]:
        return "KEEP", False

    register_voting_strategy(" Always_Keep ", always_keep)
    assert get_voting_strategy("ALWAYS_KEEP") is always_keep
    assert validate_voting("always_keep", {"weights": {}}) is always_keep


def test_registering_a_taken_name_needs_replace(registry: Any) -> None:
    def mine(verdicts: Any, **kwargs: Any) -> tuple[str, bool]:
        return "MINE", False

    with pytest.raises(ConfigError, match="already registered"):
        register_voting_strategy("majority", mine)
    register_voting_strategy("majority", mine, replace=True)
    assert get_voting_strategy("majority") is mine
    assert not supports_early_stop("majority")  # no longer the built-in


@pytest.mark.parametrize(("name", "fn"), [("", majority_vote), ("  ", majority_vote), ("x", "fn")])
def test_registering_needs_a_name_and_a_callable(registry: Any, name: str, fn: Any) -> None:
    with pytest.raises(ConfigError):
        register_voting_strategy(name, fn)


# -- early stop -----------------------------------------------------------------------------


def keeps(n: int) -> list[Verdict]:
    return [v("KEEP", f"k{i}") for i in range(n)]


def test_three_of_five_agreeing_with_two_remaining_is_decided() -> None:
    assert outcome_is_decided("majority", keeps(3), 2, {})


def test_two_to_one_with_two_remaining_is_not_decided() -> None:
    assert not outcome_is_decided("majority", [*keeps(2), v("REJECT")], 2, {})


def test_a_lead_must_beat_a_brand_new_label_too() -> None:
    assert not outcome_is_decided("majority", keeps(1), 1, {})
    assert outcome_is_decided("majority", keeps(2), 1, {})


def test_an_unmet_quorum_is_not_decided() -> None:
    assert not outcome_is_decided("majority", keeps(3), 2, {"min_valid": 4})
    assert outcome_is_decided("majority", keeps(3), 2, {"min_valid": 3})


def test_fail_ballots_of_errors_count_toward_the_lead() -> None:
    so_far = [*keeps(2), err("e1"), err("e2")]
    assert outcome_is_decided(majority_vote, so_far, 1, {})
    assert not outcome_is_decided(majority_vote, so_far, 1, {"errors": "fail"})


def test_unanimous_with_two_labels_is_decided() -> None:
    assert outcome_is_decided("unanimous", [v("KEEP"), v("REJECT")], 3, {})
    assert outcome_is_decided(unanimous, [v("KEEP"), err()], 3, {"errors": "abstain"})


def test_unanimous_with_one_label_is_not_decided() -> None:
    assert not outcome_is_decided("consensus", keeps(4), 1, {})


@pytest.mark.parametrize(
    "name", sorted(set(BUILTIN_NAMES) - {"majority", "unanimous", "consensus"})
)
def test_early_stop_is_refused_for_other_strategies(name: str) -> None:
    assert not supports_early_stop(name)
    with pytest.raises(ConfigError, match="early_stop supports majority and unanimous"):
        outcome_is_decided(name, keeps(3), 0, {})


def test_early_stop_is_supported_by_name_and_by_function() -> None:
    assert supports_early_stop("MAJORITY") and supports_early_stop(majority_vote)
    assert supports_early_stop("consensus") and supports_early_stop(unanimous)


def test_outcome_is_decided_checks_its_kwargs() -> None:
    with pytest.raises(ConfigError, match="fallback_label"):
        outcome_is_decided("majority", keeps(3), 0, {"fallback_label": "X"})
    with pytest.raises(ConfigError, match="remaining"):
        outcome_is_decided("majority", keeps(3), -1, {})


# Every answer a remaining critic can give: a known label, a new one, a failure, nothing.
ANSWERS = [v("KEEP", "r"), v("REJECT", "r"), v("NEW", "r"), err("r"), skipped("r")]


@FAST
@given(
    so_far=st.lists(st.sampled_from(["KEEP", "REJECT", "!ERROR"]), max_size=6).map(build_panel),
    remaining=st.integers(0, 3),
    name=st.sampled_from(["majority", "unanimous"]),
    kwargs=st.fixed_dictionaries(
        {},
        optional={
            "errors": st.sampled_from(["ignore", "abstain", "fail"]),
            "ties": st.sampled_from(["priority", "pass", "fail", "abstain"]),
            "min_valid": st.integers(1, 4),
        },
    ),
)
def test_a_decided_outcome_holds_whatever_the_remaining_critics_answer(
    so_far: list[Verdict], remaining: int, name: str, kwargs: dict[str, Any]
) -> None:
    if not outcome_is_decided(name, so_far, remaining, kwargs):
        return
    labels = {
        vote(name, [*so_far, *rest], **kwargs).label
        for rest in itertools.product(ANSWERS, repeat=remaining)
    }
    assert labels == {vote(name, so_far, **kwargs).label}


# -- calls_to_decide (staged early stop) ---------------------------------------------------------


def _votes(*labels: str) -> list[Verdict]:
    return [Verdict(kind=label, critic_id=f"c{i}") for i, label in enumerate(labels)]


@pytest.mark.parametrize(
    ("strategy", "so_far", "remaining", "expected"),
    [
        ("majority", (), 5, 3),
        ("majority", (), 4, 3),
        ("majority", ("A", "A", "B"), 2, 1),
        ("majority", ("A", "B", "C"), 2, 2),
        ("unanimous", (), 5, 2),
        ("unanimous", ("A", "A"), 3, 1),
        ("majority", (), 0, 0),
    ],
)
def test_calls_to_decide_is_the_fewest_further_votes_that_could_decide(
    strategy: str, so_far: tuple[str, ...], remaining: int, expected: int
) -> None:
    assert calls_to_decide(strategy, _votes(*so_far), remaining, {}) == expected


@given(
    st.lists(st.sampled_from(["A", "B", "C"]), max_size=6),
    st.integers(min_value=1, max_value=6),
)
def test_fewer_votes_than_calls_to_decide_never_decide_a_majority(
    so_far: list[str], remaining: int
) -> None:
    verdicts = _votes(*so_far)
    assume(not outcome_is_decided("majority", verdicts, remaining, {}))  # asked only then
    needed = calls_to_decide("majority", verdicts, remaining, {})
    assert 1 <= needed <= remaining
    for fewer in range(needed):
        for label in ["A", "B", "C", "D"]:
            extra = _votes(*([label] * fewer))
            assert not outcome_is_decided("majority", verdicts + extra, remaining - fewer, {})
