"""cross_judge.transport._batch_codecs: the requests a vendor's batch API takes, split within its
limits, and its result lines mapped back to what a live call would have given."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.errors import ConfigError, ErrorKind
from cross_judge.transport import CallFailure, ChatRequest, Completion
from cross_judge.transport._batch_codecs import (
    ANTHROPIC_LIMITS,
    BatchLimits,
    BatchRequest,
    anthropic_request,
    openai_request,
    parse_anthropic_results,
    parse_openai_results,
    request_id,
    split,
)
from cross_judge.transport._openai_compat import build_payload
from cross_judge.vendors import get_vendor

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def chat(model: str = "gpt-judge", user: str = "Judge <item>x</item>") -> ChatRequest:
    return ChatRequest(model=model, system="Be strict.", user=user, temperature=0.0, max_tokens=200)


# -- ids ------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=40), st.sampled_from([None, "ab", "ba"]))
def test_a_request_id_fits_anthropics_pattern_whatever_the_item_id(
    item_id: str, critic: str, order: str | None
) -> None:
    assert ANTHROPIC_ID.match(request_id(item_id, critic, order=order))


def test_a_request_id_is_the_same_on_every_run() -> None:
    assert request_id("item 1", "gpt") == request_id("item 1", "gpt")
    assert request_id("item 1", "gpt") == (
        "cj-" + hashlib.sha256(b'["item 1", "gpt", null, 0]').hexdigest()[:48]
    )


def test_request_ids_differ_by_item_critic_order_and_sample() -> None:
    ids = {
        request_id("a", "gpt"),
        request_id("b", "gpt"),
        request_id("a", "claude"),
        request_id("a", "gpt", order="ba"),
        request_id("a", "gpt", sample=1),
        request_id('a", "gpt', "x"),  # no ambiguity from joining the parts
    }
    assert len(ids) == 6


# -- requests -------------------------------------------------------------------------------------


def test_an_openai_batch_line_holds_the_live_body() -> None:
    config = get_vendor("openai")
    request = chat()
    built = openai_request(config, request, "cj-1")
    assert built.line == {
        "custom_id": "cj-1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": build_payload(config, request),
    }
    assert built.size == len(json.dumps(built.line, separators=(",", ":")).encode()) + 1


def test_an_anthropic_batch_entry_holds_the_messages_body() -> None:
    built = anthropic_request(chat(model="claude-judge"), "cj-2")
    assert built.line == {
        "custom_id": "cj-2",
        "params": {
            "model": "claude-judge",
            "max_tokens": 200,
            "messages": [{"role": "user", "content": "Judge <item>x</item>"}],
            "system": "Be strict.",
        },
    }


def test_an_anthropic_entry_without_a_system_prompt_sends_none() -> None:
    request = ChatRequest(model="m", system="", user="u", temperature=0.0, max_tokens=5)
    assert "system" not in anthropic_request(request, "cj-3").line["params"]


def sized(custom_id: str, model: str = "m", size: int = 10) -> BatchRequest:
    return BatchRequest(custom_id, model, {"custom_id": custom_id}, size)


def test_batches_are_split_by_request_count() -> None:
    batches = split([sized(f"r{i}") for i in range(5)], BatchLimits(2, 10**6), one_model=False)
    assert [[r.custom_id for r in b] for b in batches] == [["r0", "r1"], ["r2", "r3"], ["r4"]]


def test_batches_are_split_by_bytes() -> None:
    requests = [sized("a", size=40), sized("b", size=40), sized("c", size=30)]
    batches = split(requests, BatchLimits(100, 100), one_model=False)
    assert [[r.custom_id for r in b] for b in batches] == [["a", "b"], ["c"]]


def test_an_openai_file_holds_one_model() -> None:
    requests = [sized("a", "gpt"), sized("b", "mini"), sized("c", "gpt")]
    batches = split(requests, BatchLimits(100, 10**6), one_model=True)
    assert [[r.custom_id for r in b] for b in batches] == [["a", "c"], ["b"]]


def test_anthropic_batches_may_mix_models() -> None:
    requests = [sized("a", "opus"), sized("b", "haiku")]
    assert len(split(requests, ANTHROPIC_LIMITS, one_model=False)) == 1


def test_a_request_larger_than_a_batch_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="over the vendor's 100 bytes per batch"):
        split([sized("big", size=101)], BatchLimits(10, 100), one_model=False)


def test_duplicate_custom_ids_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="share the custom_id 'a'"):
        split([sized("a"), sized("a")], BatchLimits(10, 1000), one_model=False)


# -- results ------------------------------------------------------------------------------------


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"\n".join(json.dumps(line).encode() for line in lines) + b"\n"


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-judge",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"kind": "KEEP"}'},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
}


def test_an_openai_success_line_is_the_live_completion() -> None:
    outcomes = parse_openai_results(
        jsonl(
            {
                "id": "batch_req_1",
                "custom_id": "cj-1",
                "response": {"status_code": 200, "request_id": "r", "body": COMPLETION},
                "error": None,
            }
        )
    )
    completion = outcomes["cj-1"]
    assert isinstance(completion, Completion)
    assert completion.text == '{"kind": "KEEP"}'
    assert completion.usage is not None and completion.usage.total_tokens == 17


def test_an_expired_openai_request_is_a_batch_failure() -> None:
    outcomes = parse_openai_results(
        jsonl(
            {
                "id": "batch_req_2",
                "custom_id": "cj-2",
                "response": None,
                "error": {"code": "batch_expired", "message": "This request could not be executed"},
            }
        )
    )
    failure = outcomes["cj-2"]
    assert isinstance(failure, CallFailure)
    assert failure.kind is ErrorKind.BATCH
    assert "expired" in failure.message


def test_a_failed_openai_request_is_classified_by_its_status() -> None:
    body = {"error": {"message": "model not found", "type": "invalid_request_error"}}
    outcomes = parse_openai_results(
        jsonl(
            {
                "id": "batch_req_3",
                "custom_id": "cj-3",
                "response": {"status_code": 404, "request_id": "r", "body": body},
                "error": None,
            }
        )
    )
    failure = outcomes["cj-3"]
    assert isinstance(failure, CallFailure)
    assert (failure.kind, failure.status) == (ErrorKind.BAD_REQUEST, 404)
    assert "model not found" in failure.message


def test_an_openai_answer_with_no_choices_is_an_invalid_response() -> None:
    body = {"id": "x", "object": "chat.completion", "choices": []}
    outcomes = parse_openai_results(
        jsonl({"custom_id": "cj-4", "response": {"status_code": 200, "body": body}, "error": None})
    )
    failure = outcomes["cj-4"]
    assert isinstance(failure, CallFailure)
    assert failure.kind is ErrorKind.INVALID_RESPONSE


MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-judge",
    "content": [{"type": "text", "text": '{"kind": "REJECT"}'}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 20, "output_tokens": 6},
}


def test_an_anthropic_success_is_the_live_completion() -> None:
    outcomes = parse_anthropic_results(
        jsonl({"custom_id": "cj-5", "result": {"type": "succeeded", "message": MESSAGE}})
    )
    completion = outcomes["cj-5"]
    assert isinstance(completion, Completion)
    assert completion.text == '{"kind": "REJECT"}'


@pytest.mark.parametrize(
    ("error_type", "kind"),
    [
        ("invalid_request_error", ErrorKind.BAD_REQUEST),
        ("overloaded_error", ErrorKind.SERVER),
        ("rate_limit_error", ErrorKind.RATE_LIMIT),
        ("something_new", ErrorKind.SERVER),
    ],
)
def test_an_anthropic_error_is_classified_by_its_type(error_type: str, kind: ErrorKind) -> None:
    error = {"type": "error", "error": {"type": error_type, "message": "why"}}
    outcomes = parse_anthropic_results(
        jsonl({"custom_id": "cj-6", "result": {"type": "errored", "error": error}})
    )
    failure = outcomes["cj-6"]
    assert isinstance(failure, CallFailure)
    assert failure.kind is kind
    assert failure.message == f"{error_type}: why"


@pytest.mark.parametrize("result", ["expired", "canceled"])
def test_an_expired_or_canceled_anthropic_request_is_a_batch_failure(result: str) -> None:
    outcomes = parse_anthropic_results(jsonl({"custom_id": "cj-7", "result": {"type": result}}))
    failure = outcomes["cj-7"]
    assert isinstance(failure, CallFailure)
    assert failure.kind is ErrorKind.BATCH
    assert failure.message.startswith(result)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"not json\n", "line 1 is not JSON"),
        (b"\n[1, 2]\n", "line 2 is not a JSON object"),
        (b'{"result": {"type": "expired"}}\n', "line 1 has no custom_id"),
    ],
)
def test_malformed_result_lines_are_config_errors(text: bytes, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_anthropic_results(text)
