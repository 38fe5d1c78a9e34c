"""Which reported usage is billed as it is (``pricing.usage_is_plausible``), and what an
answer without usable usage is charged (``critic.calls.charge_unreported_usage``), live and
through a vendor's batch API (no network)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cross_judge import Critic, Usage, Verdict, pricing
from cross_judge.critic._calls import charge_unreported_usage
from cross_judge.pricing import price_for, register_price, usage_is_plausible, worst_case_cost
from cross_judge.transport import Completion


@pytest.fixture(autouse=True)
def _price() -> Iterator[None]:
    register_price("m", vendor="custom", input=1.0, output=4.0, batch=0.5)
    yield
    pricing._clear_registered()


@pytest.mark.parametrize(
    ("usage", "answered", "plausible"),
    [
        (Usage(prompt_tokens=120, completion_tokens=9), True, True),
        (Usage(prompt_tokens=120), False, True),  # an empty answer may use no tokens
        (None, True, False),  # no usage object: many gateways
        (Usage(), True, False),  # zero (or negative, read as 0) counts
        (Usage(completion_tokens=9), True, False),  # no prompt tokens: every call has some
        (Usage(prompt_tokens=120), True, False),  # an answer made of no tokens
    ],
)
def test_usage_is_plausible_when_it_can_have_produced_the_answer(
    usage: Usage | None, answered: bool, plausible: bool
) -> None:
    assert usage_is_plausible(usage, answered=answered) is plausible


def _critic() -> Critic:
    return Critic(name="c", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1")


def test_a_batch_answer_without_usage_is_charged_its_worst_case_at_the_batch_rate() -> None:
    critic = _critic()
    request = critic.build_request("an item")
    price = price_for("custom", "m")
    assert price is not None
    verdict = Verdict(kind="KEEP", critic_id="c", cost_usd=None)
    charged = charge_unreported_usage(
        verdict, Completion(text='{"kind": "KEEP"}'), request, price, batch=True
    )
    assert charged.cost_usd == pytest.approx(worst_case_cost(price, request, batch=True))
    assert charged.cost_usd == pytest.approx(worst_case_cost(price, request) / 2)
    assert charged.cost_estimates == 1 and charged.usage is None


def test_an_answer_with_usage_keeps_its_cost() -> None:
    critic = _critic()
    price = price_for("custom", "m")
    assert price is not None
    usage = Usage(prompt_tokens=50, completion_tokens=5)
    verdict = Verdict(kind="KEEP", critic_id="c", usage=usage, cost_usd=price.cost(usage))
    completion = Completion(text='{"kind": "KEEP"}', usage=usage)
    assert charge_unreported_usage(verdict, completion, critic.build_request("x"), price) is verdict


def test_sampled_verdicts_add_up_their_estimated_calls() -> None:
    from cross_judge.critic._assembly import combine_samples

    samples = [
        Verdict(kind="KEEP", critic_id="c", cost_usd=0.1, cost_estimates=1),
        Verdict(kind="KEEP", critic_id="c", cost_usd=0.1),
        Verdict(kind="KEEP", critic_id="c", cost_usd=0.1, cost_estimates=1),
    ]
    assert combine_samples(samples).cost_estimates == 2


def test_a_verdict_written_before_cost_estimates_existed_reads_back_with_zero() -> None:
    line = '{"kind": "KEEP", "critic_id": "c", "cost_usd": 0.01}'
    assert Verdict.model_validate_json(line).cost_estimates == 0
    assert "cost_estimates" not in Verdict(kind="KEEP").model_dump_json()
