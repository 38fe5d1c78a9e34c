"""Self-consistency: ``Critic(samples=n)`` asks an item n times and votes its own answers.

The vote itself (:func:`cross_judge.critic._assembly.combine_samples`) and the merge of a pair's two
orders (:func:`cross_judge.pairwise.combine_orders`) are pure functions, tested on
verdicts built by hand. Everything that makes calls (concurrency, cache, budget,
failures, an Ensemble of sampled critics) runs against a real ``VendorServer`` on
127.0.0.1. Outcomes never depend on which sample finishes first: a sampled critic's calls
race, so scripted replies are checked as a multiset, and resampling personas give an
item's samples the draws 0..n-1 whatever their arrival order.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from cross_judge import ConfigError, Critic, Ensemble, ErrorKind, Usage, Verdict, pricing
from cross_judge.budget import Budget
from cross_judge.critic._assembly import combine_samples
from cross_judge.critic._cache import ResponseCache
from cross_judge.critic._request import sample_request
from cross_judge.pairwise import combine_orders, in_own_names, map_back
from cross_judge.panel_file import PanelError, parse_panel
from cross_judge.pricing import register_price, worst_case_cost
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport import ChatRequest
from cross_judge.vendors import get_vendor, with_base_url
from cross_judge.verdict import Answer

from ...waits import SAFETY_NET_S

KEY = "sk-self-consistency-test-0123456789"
QUESTION = "Which answer explains recursion better?"
GOOD = "A function that calls itself on a smaller input until a base case."
POOR = "Recursion is when things repeat."
WAIT_S = SAFETY_NET_S
"""Bound for waits that normally take milliseconds."""


def answer_text(kind: str, confidence: float) -> str:
    return json.dumps({"kind": kind, "confidence": confidence, "reasoning": f"it is {kind}"})


def sampled(server: VendorServer, model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("name", model)
    kwargs.setdefault("temperature", 0.7)
    kwargs.setdefault("samples", 3)
    kwargs.setdefault("max_retries", 0)
    return Critic(model=model, vendor="custom", base_url=server.url, api_key=KEY, **kwargs)


def v(
    kind: str,
    confidence: float = 0.8,
    *,
    error: str | None = None,
    stated: bool = True,
    **kwargs: Any,
) -> Verdict:
    return Verdict(
        kind=kind,
        confidence=confidence,
        error=error,
        confidence_stated=stated,
        critic_id="c",
        raw_response=f"raw {kind}",
        **kwargs,
    )


def failed(kind: str = "ERROR", message: str = "server: 500") -> Verdict:
    return Verdict(kind=kind, error=message, error_kind=ErrorKind.SERVER, critic_id="c", attempts=1)


# -- configuration ------------------------------------------------------------------------------


def test_a_critic_asks_once_by_default() -> None:
    assert Critic(name="c", model="m").samples == 1


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "3", None])
def test_samples_must_be_an_integer_of_at_least_one(bad: object) -> None:
    with pytest.raises(ConfigError, match="samples must be an integer >= 1"):
        Critic(name="c", model="m", temperature=0.7, samples=bad)  # type: ignore[arg-type]


def test_samples_at_temperature_zero_are_refused_as_one_answer_billed_n_times() -> None:
    with pytest.raises(ConfigError, match=r"samples=3 needs a temperature > 0.*billed 3 times"):
        Critic(name="c", model="m", samples=3)


def test_samples_on_anthropic_which_sends_no_temperature_are_accepted_at_zero() -> None:
    critic = Critic(name="c", model="claude-x", vendor="anthropic", samples=3)
    assert (critic.samples, critic.temperature) == (3, 0.0)


def test_samples_are_part_of_the_critics_dump() -> None:
    assert Critic(name="c", model="m", temperature=0.5, samples=4).model_dump()["samples"] == 4


@pytest.mark.anyio
async def test_a_temperature_set_to_zero_after_construction_is_refused_before_any_call() -> None:
    async with VendorServer([Persona("m")]) as server:
        critic = sampled(server, "m")
        critic.temperature = 0.0
        with pytest.raises(ConfigError, match="needs a temperature > 0"):
            await critic.judge("an item")
        assert server.stats()["requests"] == 0


# -- the requests of the samples ----------------------------------------------------------------


def request(**changes: Any) -> ChatRequest:
    fields: dict[str, Any] = {
        "model": "m",
        "system": "Judge.",
        "user": "An item.",
        "temperature": 0.7,
        "max_tokens": 64,
    }
    fields.update(changes)
    return ChatRequest(**fields)


def test_sample_zero_is_the_request_itself() -> None:
    plain = request(seed=7)
    assert sample_request(plain, 0) is plain


def test_a_later_sample_is_numbered_and_shifts_the_seed() -> None:
    assert sample_request(request(seed=7), 2) == request(seed=9, sample=2)
    assert sample_request(request(), 2) == request(sample=2)


def test_the_sample_number_is_never_sent() -> None:
    assert request(sample=3).sent_settings("openai") == request().sent_settings("openai")


@pytest.mark.parametrize("vendor", ["custom", "anthropic"])
def test_each_sample_has_its_own_cache_key_and_sample_zero_keeps_the_plain_key(
    vendor: str,
) -> None:
    config = with_base_url(get_vendor(vendor), "https://llm.example/v1")
    keys = [sample_request(request(), k).cache_key(config) for k in range(4)]
    assert keys[0] == request().cache_key(config)
    assert len(set(keys)) == 4


# -- the vote (pure) ----------------------------------------------------------------------------


def test_the_most_common_label_wins_with_the_mean_confidence_of_its_answers() -> None:
    verdict = combine_samples([v("KEEP", 0.9), v("REJECT", 0.95), v("KEEP", 0.7)])
    assert verdict.kind == "KEEP"
    assert verdict.confidence == pytest.approx(0.8)
    assert verdict.self_agreement == pytest.approx(2 / 3)


def test_unanimous_samples_agree_with_themselves_fully() -> None:
    assert combine_samples([v("KEEP"), v("KEEP"), v("KEEP")]).self_agreement == 1.0


def test_a_tie_goes_to_the_label_with_the_higher_mean_confidence() -> None:
    verdict = combine_samples([v("KEEP", 0.6), v("REJECT", 0.9), v("KEEP", 0.8), v("REJECT", 0.7)])
    assert (verdict.kind, verdict.confidence, verdict.self_agreement) == ("REJECT", 0.8, 0.5)


def test_a_tie_of_equal_confidence_goes_to_the_label_of_the_earliest_sample() -> None:
    assert combine_samples([v("REJECT", 0.7), v("KEEP", 0.7)]).kind == "REJECT"
    assert combine_samples([v("KEEP", 0.7), v("REJECT", 0.7)]).kind == "KEEP"


def test_failed_samples_do_not_vote() -> None:
    verdict = combine_samples([failed(), v("REJECT", 0.6), failed("PARSE_FAIL", "parse_fail")])
    assert (verdict.kind, verdict.error, verdict.self_agreement) == ("REJECT", None, 1.0)
    assert [a.kind for a in verdict.answers or []] == ["ERROR", "REJECT", "PARSE_FAIL"]


def test_when_every_sample_failed_the_first_failure_stands_with_every_answer() -> None:
    verdict = combine_samples([failed(message="server: 503"), failed(message="server: 500")])
    assert (verdict.kind, verdict.error, verdict.error_kind) == ("ERROR", "server: 503", "server")
    assert verdict.self_agreement is None
    assert [a.error for a in verdict.answers or []] == ["server: 503", "server: 500"]


def test_confidence_averages_only_the_answers_that_stated_one() -> None:
    verdict = combine_samples([v("KEEP", 0.0, stated=False), v("KEEP", 0.9), v("REJECT", 0.7)])
    assert (verdict.confidence, verdict.confidence_stated) == (0.9, True)
    unstated = combine_samples([v("KEEP", 0.0, stated=False), v("KEEP", 0.0, stated=False)])
    assert (unstated.confidence, unstated.confidence_stated) == (0.0, False)


def test_score_and_stated_confidence_are_the_means_of_the_agreeing_answers() -> None:
    verdict = combine_samples(
        [
            v("KEEP", 0.8, score=1.0, stated_confidence=0.9),
            v("KEEP", 0.6, score=0.5, stated_confidence=0.7),
            v("REJECT", 0.9, score=0.0, stated_confidence=0.95),
        ]
    )
    assert verdict.score == pytest.approx(0.75)
    assert verdict.stated_confidence == pytest.approx(0.8)


def test_every_sample_is_kept_as_an_answer_and_the_verdict_has_no_raw_response_of_its_own() -> None:
    verdict = combine_samples([v("KEEP", 0.9), v("REJECT", 0.6)])
    assert verdict.answers == [
        Answer(kind="KEEP", answered="KEEP", confidence=0.9, raw_response="raw KEEP"),
        Answer(kind="REJECT", answered="REJECT", confidence=0.6, raw_response="raw REJECT"),
    ]
    assert verdict.raw_response is None
    assert verdict.reasoning == v("KEEP").reasoning


def test_usage_cost_and_attempts_add_up_the_longest_sample_is_the_elapsed_time() -> None:
    verdict = combine_samples(
        [
            v("KEEP", usage=Usage(prompt_tokens=10, completion_tokens=5), cost_usd=0.1,
              attempts=1, elapsed_s=0.5, cached=True),
            v("KEEP", usage=Usage(prompt_tokens=10, completion_tokens=7), cost_usd=0.2,
              attempts=2, elapsed_s=1.5, cached=False),
        ]
    )  # fmt: skip
    assert verdict.usage == Usage(prompt_tokens=20, completion_tokens=12)
    assert verdict.cost_usd == pytest.approx(0.3)
    assert (verdict.attempts, verdict.elapsed_s, verdict.cached) == (3, 1.5, False)


def test_one_sample_of_unknown_cost_makes_the_cost_unknown() -> None:
    assert combine_samples([v("KEEP", cost_usd=0.1), v("KEEP")]).cost_usd is None


def test_samples_all_from_the_cache_are_cached() -> None:
    assert combine_samples([v("KEEP", cached=True), v("KEEP", cached=True)]).cached


def test_a_single_sample_is_returned_unchanged() -> None:
    one = v("KEEP")
    assert combine_samples([one]) is one


def test_no_sample_at_all_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        combine_samples([])


# -- the verdict as data ------------------------------------------------------------------------


def test_a_sampled_verdict_round_trips_through_json() -> None:
    verdict = combine_samples([v("KEEP", 0.9), failed(), v("REJECT", 0.6), v("KEEP", 0.7)])
    again = Verdict.model_validate_json(verdict.model_dump_json())
    assert again == verdict
    assert again.self_agreement == pytest.approx(2 / 3)


def test_self_agreement_is_left_out_of_dumps_when_unset() -> None:
    assert "self_agreement" not in v("KEEP").model_dump()
    assert "self_agreement" not in combine_samples([failed(), failed()]).model_dump_json()
    assert "self_agreement" in combine_samples([v("KEEP"), v("KEEP")]).model_dump()


def test_self_agreement_must_be_a_share() -> None:
    with pytest.raises(ValueError, match="self_agreement"):
        Verdict(kind="KEEP", self_agreement=1.5)


# -- pairs (pure) -------------------------------------------------------------------------------


def pair_votes(shown: str, *written: str) -> Verdict:
    """The vote of samples of a pair shown in order ``shown`` that answered ``written``,
    mapped to the item's names as the Ensemble maps it."""
    vote = combine_samples([v(k, 0.8) for k in written])
    return in_own_names(vote, "ab" if shown == "ab" else "ba", None)


def test_a_pairs_sampled_answers_are_mapped_to_the_items_names_and_tagged_with_the_order() -> None:
    verdict = pair_votes("ba", "A", "A", "B")
    assert verdict.kind == "B"
    assert [(a.kind, a.answered, a.order) for a in verdict.answers or []] == [
        ("B", "A", "ba"),
        ("B", "A", "ba"),
        ("A", "B", "ba"),
    ]
    assert verdict.self_agreement == pytest.approx(2 / 3)


def test_agreeing_sampled_orders_keep_all_answers_and_agree_over_all_of_them() -> None:
    verdict = combine_orders(
        pair_votes("ab", "A", "A", "B"), pair_votes("ba", "B", "B", "B"), on_flip="tie"
    )
    assert (verdict.kind, verdict.order, verdict.flipped) == ("A", "both", False)
    assert [a.order for a in verdict.answers or []] == ["ab"] * 3 + ["ba"] * 3
    assert [a.kind for a in verdict.answers or []] == ["A", "A", "B", "A", "A", "A"]
    assert verdict.self_agreement == pytest.approx(5 / 6)


def test_a_sampled_flip_is_a_tie_whose_self_agreement_is_the_most_common_label_share() -> None:
    verdict = combine_orders(
        pair_votes("ab", "A", "A", "B"), pair_votes("ba", "A", "A", "A"), on_flip="tie"
    )
    assert (verdict.kind, verdict.flipped) == ("TIE", True)
    assert verdict.self_agreement == pytest.approx(4 / 6)  # B four times, A twice


def test_a_sampled_order_that_failed_entirely_leaves_the_other_orders_answers_to_agree() -> None:
    gone = in_own_names(combine_samples([failed(), failed()]), "ba", None)
    verdict = combine_orders(pair_votes("ab", "A", "B", "A"), gone, on_flip="tie")
    assert (verdict.kind, verdict.order, verdict.flipped) == ("A", "ab", None)
    assert len(verdict.answers or []) == 5
    assert verdict.self_agreement == pytest.approx(2 / 3)


def test_unsampled_orders_have_no_self_agreement() -> None:
    first = in_own_names(v("A"), "ab", None)
    second = in_own_names(v("B"), "ba", None)
    verdict = combine_orders(first, second, on_flip="tie")
    assert verdict.self_agreement is None
    assert "self_agreement" not in verdict.model_dump()


# -- over HTTP: the calls -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_n_samples_make_n_calls_and_vote_the_answers() -> None:
    async with VendorServer() as server:
        for kind, confidence in (("KEEP", 0.9), ("REJECT", 0.95), ("KEEP", 0.7)):
            server.script("m", Reply.content(answer_text(kind, confidence)))
        async with sampled(server, "m") as critic:
            verdict = await critic.judge("an item")
        assert server.stats()["requests"] == 3
    assert (verdict.kind, verdict.error) == ("KEEP", None)
    assert verdict.confidence == pytest.approx(0.8)
    assert verdict.self_agreement == pytest.approx(2 / 3)
    assert sorted((a.kind, a.confidence) for a in verdict.answers or []) == [
        ("KEEP", 0.7),
        ("KEEP", 0.9),
        ("REJECT", 0.95),
    ]
    assert all(a.order is None and a.raw_response for a in verdict.answers or [])
    assert verdict.attempts == 3 and verdict.critic_id == "m"


@pytest.mark.anyio
async def test_the_samples_are_in_flight_together() -> None:
    async with VendorServer() as server:
        # Replies that never come: sent one after another, a second would never be sent.
        server.always("m", Reply.hang())
        async with (
            sampled(server, "m", samples=3, timeout=60.0) as critic,
            anyio.create_task_group() as group,
        ):
            group.start_soon(critic.judge, "an item")
            with anyio.fail_after(WAIT_S):  # a safety net: normally milliseconds
                while server.stats()["in_flight"] < 3:  # noqa: ASYNC110 - nothing else to wait on
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()
        assert server.stats()["max_in_flight"] == 3


@pytest.mark.anyio
async def test_a_failed_sample_leaves_the_others_to_vote() -> None:
    async with VendorServer([Persona("m", accuracy=1.0, resample=True)]) as server:
        server.script("m", Reply.status(400))
        async with sampled(server, "m") as critic:
            verdict = await critic.judge("an item")
    assert verdict.error is None and verdict.self_agreement == 1.0
    kinds = Counter(a.kind for a in verdict.answers or [])
    assert kinds == Counter({verdict.kind: 2, "ERROR": 1})


@pytest.mark.anyio
async def test_when_every_sample_fails_the_verdict_is_the_failure_with_every_answer() -> None:
    async with VendorServer() as server:
        server.always("m", Reply.status(400))
        async with sampled(server, "m") as critic:
            verdict = await critic.judge("an item")
    assert (verdict.kind, verdict.error_kind, verdict.attempts) == (
        "ERROR",
        ErrorKind.BAD_REQUEST,
        3,
    )
    assert verdict.self_agreement is None
    assert [a.kind for a in verdict.answers or []] == ["ERROR"] * 3


# -- over HTTP: the cache -----------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "responses.sqlite3") as c:
        yield c


@pytest.mark.anyio
async def test_each_sample_is_cached_apart_and_a_rerun_makes_no_call(
    cache: ResponseCache,
) -> None:
    async with VendorServer([Persona("m", accuracy=0.3, resample=True)]) as server:
        async with sampled(server, "m", samples=4, cache=cache) as critic:
            first = await critic.judge("an item")
            assert (server.stats()["requests"], cache.stats().entries) == (4, 4)
            again = await critic.judge("an item")
        assert server.stats()["requests"] == 4
    assert again.cached and not first.cached and again.cost_usd == 0.0
    assert (again.kind, again.self_agreement) == (first.kind, first.self_agreement)
    assert [a.raw_response for a in again.answers or []] == [
        a.raw_response for a in first.answers or []
    ]
    assert len({a.raw_response for a in first.answers or []}) > 1  # four draws, not one


@pytest.mark.anyio
async def test_a_single_call_finds_the_answer_of_sample_zero(cache: ResponseCache) -> None:
    async with VendorServer([Persona("m", accuracy=0.3, resample=True)]) as server:
        async with sampled(server, "m", cache=cache) as critic:
            first = await critic.judge("an item")
        async with sampled(server, "m", samples=1, cache=cache) as single:
            one = await single.judge("an item")
        assert server.stats()["requests"] == 3
    assert one.cached and one.raw_response == (first.answers or [])[0].raw_response


@pytest.mark.anyio
async def test_a_sampled_batch_rerun_with_the_cache_makes_no_call(cache: ResponseCache) -> None:
    personas = [Persona("a", accuracy=0.5, resample=True), Persona("b", resample=True)]
    items = [f"item {i}" for i in range(6)]
    async with VendorServer(personas) as server:
        panel = Ensemble([sampled(server, "a"), sampled(server, "b")], cache=cache)
        async with panel:
            first = await panel.judge_many(items)
            assert server.stats()["requests"] == 6 * 2 * 3
            server.reset_stats()
            again = await panel.judge_many(items)
        assert server.stats()["requests"] == 0
    for before, after in zip(first.verdicts, again.verdicts, strict=True):
        assert [x.kind for x in after.verdicts] == [x.kind for x in before.verdicts]
        assert [x.self_agreement for x in after.verdicts] == [
            x.self_agreement for x in before.verdicts
        ]
        assert all(x.cached for x in after.verdicts)


# -- over HTTP: the budget ----------------------------------------------------------------------

PRICED = "priced"
MAX_TOKENS = 16


@pytest.fixture
def priced() -> Iterator[None]:
    # Output tokens only, and every answer reports max_tokens of them: each call costs
    # exactly its worst case, so how many fit does not depend on when calls settle.
    register_price(PRICED, vendor="custom", input=0.0, output=1.0)
    yield
    pricing._clear_registered()


@pytest.mark.anyio
@pytest.mark.usefixtures("priced")
@pytest.mark.parametrize(("worst_cases", "made"), [(3.5, 3), (2.5, 2), (1.5, 1)])
async def test_each_sample_reserves_its_own_worst_case_from_the_budget(
    worst_cases: float, made: int
) -> None:
    async with VendorServer() as server:
        usage = {"prompt_tokens": 40, "completion_tokens": MAX_TOKENS}
        server.always(PRICED, Reply.content(answer_text("KEEP", 0.8), usage=usage))
        critic = sampled(server, PRICED, max_tokens=MAX_TOKENS)
        price = critic.price()
        assert price is not None
        worst = worst_case_cost(price, critic.build_request("an item"))
        budget = Budget(worst_cases * worst)
        async with critic:
            verdict = await critic.judge("an item", budget=budget)
        assert server.stats()["requests"] == made
    assert verdict.kind == "KEEP" and verdict.self_agreement == 1.0
    assert sorted(a.kind for a in verdict.answers or []) == ["KEEP"] * made + ["SKIPPED"] * (
        3 - made
    )
    assert budget.skipped == 3 - made
    assert budget.spent_usd == pytest.approx(made * worst)
    assert budget.reserved_usd == pytest.approx(0.0, abs=1e-12)
    assert verdict.cost_usd == pytest.approx(made * worst)


@pytest.mark.anyio
@pytest.mark.usefixtures("priced")
async def test_a_number_as_budget_is_one_cap_for_all_the_samples() -> None:
    async with VendorServer() as server:
        usage = {"prompt_tokens": 40, "completion_tokens": MAX_TOKENS}
        server.always(PRICED, Reply.content(answer_text("KEEP", 0.8), usage=usage))
        critic = sampled(server, PRICED, max_tokens=MAX_TOKENS)
        price = critic.price()
        assert price is not None
        worst = worst_case_cost(price, critic.build_request("an item"))
        async with critic:
            verdict = await critic.judge("an item", budget=1.5 * worst)
        assert server.stats()["requests"] == 1
    assert Counter(a.kind for a in verdict.answers or []) == Counter({"KEEP": 1, "SKIPPED": 2})


# -- over HTTP: pairs and panels ----------------------------------------------------------------


def pair_critic(server: VendorServer, model: str) -> Critic:
    return sampled(server, model, prompt="pairwise", samples=3)


@pytest.mark.anyio
async def test_a_sure_critic_sampled_in_both_orders_agrees_with_itself_fully() -> None:
    async with VendorServer(
        [Persona("sure", accuracy=1.0, resample=True)], better={QUESTION: GOOD}
    ) as server:
        async with Ensemble([pair_critic(server, "sure")], order="both") as panel:
            result = await panel.judge(QUESTION, context={"response_a": POOR, "response_b": GOOD})
        assert server.stats()["requests"] == 6
    verdict = result.verdicts[0]
    assert (verdict.kind, verdict.order, verdict.flipped) == ("B", "both", False)
    assert verdict.self_agreement == 1.0
    assert [(a.kind, a.answered, a.order) for a in verdict.answers or []] == [
        ("B", "B", "ab")
    ] * 3 + [("B", "A", "ba")] * 3


@pytest.mark.anyio
async def test_an_unsure_critic_sampled_in_both_orders_maps_every_answer_back() -> None:
    persona = Persona("unsure", accuracy=0.3, position_bias=0.6, resample=True)
    async with (
        VendorServer([persona], better={QUESTION: GOOD}) as server,
        Ensemble([pair_critic(server, "unsure")], order="both") as panel,
    ):
        result = await panel.judge(QUESTION, context={"response_a": GOOD, "response_b": POOR})
    verdict = result.verdicts[0]
    answers = verdict.answers or []
    assert [a.order for a in answers] == ["ab"] * 3 + ["ba"] * 3
    assert all(a.kind == map_back(a.answered, a.order or "ab") for a in answers)
    counts = Counter(a.kind for a in answers if a.error is None)
    assert verdict.self_agreement == pytest.approx(max(counts.values()) / sum(counts.values()))


@pytest.mark.anyio
async def test_a_sampled_pair_in_one_order_has_its_answers_in_the_items_names() -> None:
    persona = Persona("sure", accuracy=1.0, resample=True)
    async with (
        VendorServer([persona], better={QUESTION: GOOD}) as server,
        Ensemble([pair_critic(server, "sure")], order="fixed") as panel,
    ):
        result = await panel.judge(QUESTION, context={"response_a": GOOD, "response_b": POOR})
    verdict = result.verdicts[0]
    assert (verdict.kind, verdict.order, verdict.self_agreement) == ("A", "ab", 1.0)
    assert [(a.kind, a.order) for a in verdict.answers or []] == [("A", "ab")] * 3


@pytest.mark.anyio
async def test_a_low_accuracy_critic_disagrees_with_itself_and_a_sure_one_never_does() -> None:
    personas = [
        Persona("noisy", accuracy=0.3, resample=True),
        Persona("sure", accuracy=1.0, resample=True),
    ]
    items = [f"candidate category {i}" for i in range(30)]
    async with VendorServer(personas) as server:
        panel = Ensemble([sampled(server, "noisy", samples=5), sampled(server, "sure", samples=5)])
        async with panel:
            batch = await panel.judge_many(items)
    noisy = [r.verdicts[0].self_agreement for r in batch.verdicts]
    sure = [r.verdicts[1].self_agreement for r in batch.verdicts]
    assert all(s is not None for s in noisy)
    assert sum(s for s in noisy if s is not None) / len(noisy) < 0.8
    assert sure == [1.0] * len(items)


@pytest.mark.anyio
async def test_without_resample_a_simulated_critics_samples_are_one_answer_repeated() -> None:
    async with (
        VendorServer([Persona("fixed", accuracy=0.3)]) as server,
        sampled(server, "fixed", samples=4) as critic,
    ):
        verdict = await critic.judge("an item")
    assert verdict.self_agreement == 1.0
    assert len({a.raw_response for a in verdict.answers or []}) == 1


# -- the panel file -----------------------------------------------------------------------------


def panel_text(samples: int, temperature: float) -> str:
    return textwrap.dedent(
        f"""\
        critics:
          - name: noisy
            vendor: simulated
            temperature: {temperature}
            samples: {samples}
        """
    )


def test_a_panel_file_gives_a_critic_samples_and_its_simulated_persona_resamples() -> None:
    spec = parse_panel(panel_text(5, 0.7))
    critic = spec.critics[0]
    assert critic.to_critic(base_url="http://127.0.0.1:9/v1").samples == 5
    assert critic.to_persona().resample


def test_a_panel_file_critic_without_samples_asks_once_and_its_persona_repeats() -> None:
    critic = parse_panel(panel_text(1, 0.7)).critics[0]
    assert critic.to_critic(base_url="http://127.0.0.1:9/v1").samples == 1
    assert not critic.to_persona().resample


def test_a_panel_file_refuses_samples_at_temperature_zero() -> None:
    with pytest.raises(PanelError, match="needs a temperature > 0"):
        parse_panel(panel_text(3, 0.0))
