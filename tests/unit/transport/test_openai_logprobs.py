"""Token probabilities and reasoning tokens read from a chat completion, as OpenAI,
llama.cpp and vLLM send them; anything garbled gives no probabilities at all."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from cross_judge.transport import TokenLogprob
from cross_judge.transport._http import RawResponse
from cross_judge.transport._openai_compat import logprobs_of, parse_chat_response


def entry(token: str, logprob: float, *top: tuple[str, float]) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
    }


def response(choice_extra: dict[str, Any], usage: dict[str, Any] | None = None) -> RawResponse:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": '{"kind":"PASS"}'},
                "finish_reason": "stop",
                **choice_extra,
            }
        ],
        "usage": usage or {"prompt_tokens": 5, "completion_tokens": 5},
    }
    return RawResponse(200, {"content-type": "application/json"}, json.dumps(body).encode())


def test_each_token_keeps_its_logprob_and_its_alternatives_in_order() -> None:
    data = {
        "content": [entry('{"kind":"', 0.0), entry("PASS", -0.1, ("PASS", -0.1), ("FAIL", -2.4))]
    }
    tokens = logprobs_of(data)
    assert tokens == (
        TokenLogprob('{"kind":"', 0.0, ()),
        TokenLogprob("PASS", -0.1, (("PASS", -0.1), ("FAIL", -2.4))),
    )


def test_the_completion_carries_the_choices_logprobs() -> None:
    completion = parse_chat_response(response({"logprobs": {"content": [entry("x", -0.5)]}}))
    assert completion.logprobs == (TokenLogprob("x", -0.5, ()),)


def test_a_completion_without_logprobs_has_none() -> None:
    assert parse_chat_response(response({})).logprobs is None
    assert parse_chat_response(response({"logprobs": None})).logprobs is None


@pytest.mark.parametrize(
    "content",
    [
        [entry("x", -0.5), {"token": 3, "logprob": -1.0}],
        [entry("x", math.nan)],
        [entry("x", 0.5)],  # a log-probability above 0 is not one
        [{"token": "x", "logprob": True}],
        ["x"],
        [],
    ],
    ids=repr,
)
def test_a_garbled_list_gives_no_probabilities_at_all(content: list[Any]) -> None:
    assert logprobs_of({"content": content}) is None


def test_malformed_alternatives_are_skipped_and_the_token_kept() -> None:
    data = {
        "content": [
            {
                "token": "A",
                "logprob": -0.2,
                "top_logprobs": [{"token": 1}, "B", {"token": "B", "logprob": -1.7}],
            }
        ]
    }
    assert logprobs_of(data) == (TokenLogprob("A", -0.2, (("B", -1.7),)),)


def test_reasoning_tokens_are_read_and_never_exceed_the_completion() -> None:
    usage = {
        "prompt_tokens": 5,
        "completion_tokens": 40,
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    completion = parse_chat_response(response({}, usage))
    assert completion.usage is not None and completion.usage.reasoning_tokens == 30
    usage["completion_tokens_details"] = {"reasoning_tokens": 400}
    completion = parse_chat_response(response({}, usage))
    assert completion.usage is not None and completion.usage.reasoning_tokens == 40


@pytest.mark.parametrize(
    ("logprobs", "problem"),
    [
        (
            {"content": [entry("x", -0.5), entry("y", math.nan)]},
            "logprobs.content[1].logprob is NaN",
        ),
        ({"content": [entry("x", 0.5)]}, "logprobs.content[0].logprob is 0.5, above 0"),
        ({"content": [{"token": 3, "logprob": -1.0}]}, "logprobs.content[0].token is a number"),
        ({"content": [{"token": "x"}]}, "logprobs.content[0].logprob is missing"),
        ({"content": ["x"]}, "logprobs.content[0] is text, not an object"),
        ({"content": "x"}, "logprobs.content is text, not a list"),
    ],
    ids=["nan", "above-zero", "token-not-text", "no-logprob", "entry-not-object", "not-a-list"],
)
def test_unusable_logprobs_are_dropped_naming_the_field_and_why(
    logprobs: dict[str, Any], problem: str
) -> None:
    completion = parse_chat_response(response({"logprobs": logprobs}))
    assert completion.logprobs is None
    assert completion.logprobs_problem is not None and completion.logprobs_problem.startswith(
        problem
    )


@pytest.mark.parametrize("logprobs", [None, {"content": None}, {"content": []}], ids=repr)
def test_a_reply_with_no_logprobs_has_no_problem_either(logprobs: Any) -> None:
    completion = parse_chat_response(response({"logprobs": logprobs}))
    assert completion.logprobs is None and completion.logprobs_problem is None
