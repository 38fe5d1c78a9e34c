"""Specification of what the simulated vendor does with requests that ask for more than
text: an enforced answer schema (OpenAI ``json_schema``, llama.cpp's ``json_object`` +
``schema``, Anthropic's forced tool and output format), refusals of those features as
real servers send them, token probabilities, and reasoning with its truncation.

Every test drives a real ``VendorServer`` on 127.0.0.1 over HTTP with plain ``httpx``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from cross_judge.testing import Persona, Style, VendorServer

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}
NEW_API = {"anthropic-version": "2026-10-21"}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "kind": {"type": "string", "enum": list(LABELS)},
        "confidence": {"type": "number"},
    },
    "required": ["reasoning", "kind", "confidence"],
    "additionalProperties": False,
}
JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA},
}
LLAMA_CPP_SCHEMA = {"type": "json_object", "schema": SCHEMA}


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[tuple[VendorServer, httpx.Client]]:
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


@contextmanager
def serving_messages(
    *personas: Persona, **kwargs: Any
) -> Iterator[tuple[VendorServer, httpx.Client]]:
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.anthropic_url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


def chat(client: httpx.Client, model: str, text: str = "an item", **fields: Any) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": text}], **fields}
    return client.post("/chat/completions", json=body)


def send(client: httpx.Client, model: str, text: str = "an item", **fields: Any) -> httpx.Response:
    body = {
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        **fields,
    }
    return client.post("/v1/messages", json=body, headers=NEW_API)


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def content_of(response: httpx.Response) -> str:
    text: str = ok(response)["choices"][0]["message"]["content"]
    return text


def verdict_in(text: str) -> dict[str, Any]:
    """The answer object of a persona's text in any style (the last one, after a think
    block or inside a fence; a messy one's trailing comma dropped)."""
    start, end = text.rfind('{"kind"'), text.rfind("}")
    answer: dict[str, Any] = json.loads(text[start : end + 1].replace(",}", "}"))
    return answer


# -- structured answers --------------------------------------------------------------------


@pytest.mark.parametrize("style", ["json", "fenced", "think", "messy"])
@pytest.mark.parametrize(
    "response_format", [JSON_SCHEMA, LLAMA_CPP_SCHEMA], ids=["openai", "llama"]
)
def test_an_enforced_schema_gets_strict_json_with_exactly_its_properties_whatever_the_style(
    style: Style, response_format: dict[str, Any]
) -> None:
    with serving(Persona("critic", style=style)) as (_, client):
        text = content_of(chat(client, "critic", "item 7", response_format=response_format))
        plain = verdict_in(content_of(chat(client, "critic", "item 7")))
    answer = json.loads(text)  # strict: no fence, no think block, no trailing comma
    assert list(answer) == ["reasoning", "kind", "confidence"]
    assert answer["kind"] == plain["kind"] and answer["kind"] in LABELS
    assert isinstance(answer["confidence"], float) and isinstance(answer["reasoning"], str)


def test_a_plain_json_object_request_keeps_the_persona_style() -> None:
    with serving(Persona("critic", style="fenced")) as (_, client):
        text = content_of(chat(client, "critic", response_format={"type": "json_object"}))
    assert "```json" in text


def test_a_label_outside_the_enum_becomes_the_closest_enum_value() -> None:
    persona = Persona("critic", labels=("keep", "reject"), accuracy=1.0)
    schema = {
        "type": "object",
        "properties": {"kind": {"type": "string", "enum": ["KEEP", "REJECT"]}},
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": schema}}
    with serving(persona) as (_, client):
        plain = json.loads(content_of(chat(client, "critic", "item 1")))["kind"]
        enforced = json.loads(content_of(chat(client, "critic", "item 1", response_format=fmt)))
    assert enforced == {"kind": plain.upper()}


def test_closest_label_prefers_the_same_label_then_case_then_spelling() -> None:
    from cross_judge.testing._structured import closest_label

    assert closest_label("KEEP", ["KEEP", "keep"]) == "KEEP"
    assert closest_label("keep", ["REJECT", "KEEP"]) == "KEEP"
    assert closest_label("KEEPS", ["REJECT", "KEEP"]) == "KEEP"


def test_without_an_enum_the_label_goes_under_the_first_label_named_property() -> None:
    schema = {
        "type": "object",
        "properties": {"why": {"type": "string"}, "verdict": {"type": "string"},
                       "score": {"type": "number"}},
    }  # fmt: skip
    fmt = {"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": schema}}
    with serving(Persona("critic")) as (_, client):
        plain = json.loads(content_of(chat(client, "critic", "item 2")))
        answer = json.loads(content_of(chat(client, "critic", "item 2", response_format=fmt)))
    assert list(answer) == ["why", "verdict", "score"]
    assert (answer["verdict"], answer["score"]) == (plain["kind"], plain["confidence"])


def test_a_forced_tool_gets_a_tool_use_block_whose_input_follows_the_schema() -> None:
    tools = [{"name": "verdict", "description": "Record it.", "input_schema": SCHEMA}]
    with serving_messages(Persona("claude")) as (_, client):
        data = ok(send(client, "claude", tools=tools,
                       tool_choice={"type": "tool", "name": "verdict"}))  # fmt: skip
    assert data["stop_reason"] == "tool_use"
    [block] = data["content"]
    assert (block["type"], block["name"]) == ("tool_use", "verdict")
    assert block["id"].startswith("toolu_")
    assert list(block["input"]) == ["reasoning", "kind", "confidence"]
    assert block["input"]["kind"] in LABELS


def test_a_tool_choice_naming_no_listed_tool_gets_400() -> None:
    with serving_messages(Persona("claude")) as (_, client):
        response = send(client, "claude", tools=[], tool_choice={"type": "tool", "name": "x"})
    assert response.status_code == 400 and "tool_choice" in response.text


def test_an_output_format_gets_a_text_block_of_strict_json() -> None:
    output_config = {"format": {"type": "json_schema", "schema": SCHEMA}}
    with serving_messages(Persona("claude", style="think")) as (_, client):
        data = ok(send(client, "claude", output_config=output_config))
    assert data["stop_reason"] == "end_turn"
    [block] = data["content"]
    assert block["type"] == "text"
    assert list(json.loads(block["text"])) == ["reasoning", "kind", "confidence"]


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("refuses", "fields", "status", "phrase", "param"),
    [
        ("json_schema", {"response_format": JSON_SCHEMA}, 400,
         "response_format type json_schema is not supported", "response_format"),
        ("json_schema_500", {"response_format": JSON_SCHEMA}, 500,
         "Input should be 'text' or 'json_object'", None),
        ("json_object", {"response_format": {"type": "json_object"}}, 400, "json_object",
         "response_format"),
        ("json_object", {"response_format": LLAMA_CPP_SCHEMA}, 400, "json_object",
         "response_format"),
        ("logprobs", {"logprobs": True, "top_logprobs": 2}, 400, "logprobs", "logprobs"),
    ],
)  # fmt: skip
def test_a_refused_chat_feature_gets_the_error_real_servers_send(
    refuses: str, fields: dict[str, Any], status: int, phrase: str, param: str | None
) -> None:
    with serving(Persona("critic"), refuses=[refuses]) as (_, client):
        response = chat(client, "critic", **fields)
    assert response.status_code == status
    error = response.json()["error"]
    assert phrase in error["message"] and error["param"] == param


def test_llama_cpp_refusal_is_a_pydantic_error_naming_response_format() -> None:
    with serving(Persona("critic"), refuses=["json_schema_500"]) as (_, client):
        error = chat(client, "critic", response_format=JSON_SCHEMA).json()["error"]
    assert error["type"] == "internal_server_error"
    assert "'response_format'" in error["message"] and "literal_error" in error["message"]


def test_llama_cpp_refusing_json_schema_enforces_its_json_object_schema_form() -> None:
    with serving(Persona("critic", style="fenced"), refuses=["json_schema_500"]) as (_, client):
        text = content_of(chat(client, "critic", response_format=LLAMA_CPP_SCHEMA))
    assert list(json.loads(text)) == ["reasoning", "kind", "confidence"]


@pytest.mark.parametrize(
    ("refuses", "fields", "phrase"),
    [
        ("tools", {"tools": [{"name": "v", "input_schema": SCHEMA}],
                   "tool_choice": {"type": "tool", "name": "v"}}, "tool_choice"),
        ("output_format", {"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}},
         "output_config"),
    ],
)  # fmt: skip
def test_a_refused_messages_feature_gets_400_naming_it(
    refuses: str, fields: dict[str, Any], phrase: str
) -> None:
    with serving_messages(Persona("claude"), refuses=[refuses]) as (_, client):
        response = send(client, "claude", **fields)
    assert response.status_code == 400
    assert response.json()["type"] == "error" and phrase in response.json()["error"]["message"]


def test_refusals_are_counted_per_feature_and_reset() -> None:
    with serving(Persona("critic"), refuses=["json_schema", "logprobs"]) as (server, client):
        chat(client, "critic", response_format=JSON_SCHEMA)
        chat(client, "critic", response_format=JSON_SCHEMA)
        chat(client, "critic", logprobs=True)
        chat(client, "critic")
        stats = server.stats()
        server.reset_stats()
        assert server.stats()["refusals"] == 0
    assert stats["refusals"] == 3
    assert stats["refusals_by_feature"] == {"json_schema": 2, "logprobs": 1}


def test_a_feature_that_is_not_refused_is_served() -> None:
    with serving(Persona("critic"), refuses=["json_object"]) as (_, client):
        assert chat(client, "critic", response_format=JSON_SCHEMA).status_code == 200


@pytest.mark.parametrize("refuses", [["json_schemas"], "json_schema"], ids=["unknown", "string"])
def test_refuses_must_name_known_features(refuses: Any) -> None:
    with pytest.raises(ValueError, match="refuses"):
        VendorServer(refuses=refuses)


# -- token probabilities -------------------------------------------------------------------


def label_entry(logprobs: dict[str, Any]) -> dict[str, Any]:
    """The label's token: the only one whose probability is below 1."""
    [entry] = [e for e in logprobs["content"] if e["logprob"] < 0]
    found: dict[str, Any] = entry
    return found


@pytest.mark.parametrize("style", ["json", "fenced", "think", "messy"])
def test_logprob_tokens_concatenate_to_the_content_with_the_label_as_one_token(
    style: Style,
) -> None:
    with serving(Persona("critic", style=style)) as (_, client):
        choice = ok(chat(client, "critic", "item 3", logprobs=True, top_logprobs=3))["choices"][0]
    text, tokens = choice["message"]["content"], choice["logprobs"]["content"]
    assert "".join(t["token"] for t in tokens) == text
    [label] = [t for t in tokens if t["logprob"] < 0]
    assert label["token"] == verdict_in(text)["kind"]
    assert len(label["top_logprobs"]) == 3
    for token in tokens:
        assert token["bytes"] == list(token["token"].encode())
        if token is not label:
            assert token["logprob"] == 0.0
            assert [t["token"] for t in token["top_logprobs"]] == [token["token"]]


def test_the_label_token_lists_the_most_likely_labels_first_summing_to_one() -> None:
    with serving(Persona("critic")) as (_, client):
        logprobs = ok(chat(client, "critic", "item 4", logprobs=True, top_logprobs=5))["choices"][
            0
        ]["logprobs"]
    entry = label_entry(logprobs)
    top = entry["top_logprobs"]
    assert sorted(t["token"] for t in top) == sorted(LABELS)  # 4 labels, fewer than 5 asked
    probabilities = [math.exp(t["logprob"]) for t in top]
    assert probabilities == sorted(probabilities, reverse=True)
    assert sum(probabilities) == pytest.approx(1.0)
    chosen = next(t for t in top if t["token"] == entry["token"])
    assert chosen["logprob"] == entry["logprob"] < 0


def test_top_logprobs_limits_the_alternatives_and_zero_gives_none() -> None:
    with serving(Persona("critic")) as (_, client):
        two = ok(chat(client, "critic", "item 5", logprobs=True, top_logprobs=2))
        none = ok(chat(client, "critic", "item 5", logprobs=True))
    assert len(label_entry(two["choices"][0]["logprobs"])["top_logprobs"]) == 2
    tokens = none["choices"][0]["logprobs"]["content"]
    assert all(t["top_logprobs"] == [] for t in tokens)
    assert min(t["logprob"] for t in tokens) < 0  # the label's probability is still served


def test_logprobs_are_reproducible_and_absent_unless_asked() -> None:
    with serving(Persona("critic")) as (_, client):
        first = ok(chat(client, "critic", "item 6", logprobs=True, top_logprobs=4))
        again = ok(chat(client, "critic", "item 6", logprobs=True, top_logprobs=4))
        plain = ok(chat(client, "critic", "item 6"))
    assert first["choices"][0]["logprobs"] == again["choices"][0]["logprobs"]
    assert plain["choices"][0]["logprobs"] is None


def test_logprobs_of_a_schema_answer_mark_the_enum_label() -> None:
    with serving(Persona("critic", labels=("keep", "reject"))) as (_, client):
        schema = {
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": ["KEEP", "REJECT"]}},
        }
        fmt = {
            "type": "json_schema",
            "json_schema": {"name": "v", "strict": True, "schema": schema},
        }
        choice = ok(chat(client, "critic", "i", response_format=fmt, logprobs=True,
                         top_logprobs=5))["choices"][0]  # fmt: skip
    [label] = [t for t in choice["logprobs"]["content"] if t["logprob"] < 0]
    assert label["token"] == json.loads(choice["message"]["content"])["kind"]
    assert {t["token"] for t in label["top_logprobs"]} == {"KEEP", "REJECT"}


# -- reasoning -----------------------------------------------------------------------------


def reasoning_tokens(data: dict[str, Any]) -> int:
    details = data["usage"].get("completion_tokens_details") or {}
    tokens: int = details.get("reasoning_tokens", 0)
    return tokens


@pytest.mark.parametrize(
    ("fields", "spent"),
    [
        ({"reasoning_effort": "high"}, 400),
        ({"reasoning_effort": "medium"}, 200),
        ({"reasoning_effort": "low"}, 100),
        ({"thinking": {"type": "enabled"}}, 400),
        ({"enable_thinking": True, "thinking_budget": 150}, 150),
        ({"reasoning": {"effort": "low"}}, 100),
        ({"reasoning": {"max_tokens": 50}}, 50),
    ],
    ids=repr,
)
def test_each_reasoning_dialect_gets_reasoning_content_and_counted_reasoning_tokens(
    fields: dict[str, Any], spent: int
) -> None:
    with serving(Persona("r1", thinking_tokens=400)) as (_, client):
        plain = content_of(chat(client, "r1", "item 8"))
        data = ok(chat(client, "r1", "item 8", **fields))
    message = data["choices"][0]["message"]
    assert message["content"] == plain and data["choices"][0]["finish_reason"] == "stop"
    assert len(message["reasoning_content"]) == 4 * spent
    assert reasoning_tokens(data) == spent
    assert data["usage"]["completion_tokens"] == spent + len(plain) // 4
    assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + spent + len(plain) // 4


def test_a_request_without_reasoning_fields_gets_no_reasoning() -> None:
    with serving(Persona("r1", thinking_tokens=400)) as (_, client):
        data = ok(chat(client, "r1"))
    assert "reasoning_content" not in data["choices"][0]["message"]
    assert "completion_tokens_details" not in data["usage"]


def test_a_persona_without_thinking_tokens_ignores_reasoning_fields() -> None:
    with serving(Persona("plain")) as (_, client):
        data = ok(chat(client, "plain", reasoning_effort="high"))
    assert "reasoning_content" not in data["choices"][0]["message"]


def test_anthropic_thinking_comes_first_and_counts_in_output_tokens() -> None:
    thinking = {"type": "enabled", "budget_tokens": 1500}
    with serving_messages(Persona("claude", thinking_tokens=2000)) as (_, client):
        data = ok(send(client, "claude", max_tokens=4000, thinking=thinking))
    first, text = data["content"]
    assert (first["type"], text["type"]) == ("thinking", "text") and first["signature"]
    assert len(first["thinking"]) == 4 * 1500  # capped by the budget
    assert data["usage"]["output_tokens"] == 1500 + len(text["text"]) // 4


def test_anthropic_output_config_effort_sets_the_share() -> None:
    with serving_messages(Persona("claude", thinking_tokens=2000)) as (_, client):
        data = ok(send(client, "claude", max_tokens=4000, output_config={"effort": "low"}))
    assert len(data["content"][0]["thinking"]) == 4 * 500


@pytest.mark.parametrize(
    "thinking",
    [{"type": "enabled", "budget_tokens": 500}, {"type": "enabled", "budget_tokens": 2000}],
    ids=["budget-under-1024", "budget-not-under-max-tokens"],
)
def test_anthropic_refuses_an_invalid_thinking_budget(thinking: dict[str, Any]) -> None:
    with serving_messages(Persona("claude")) as (_, client):
        response = send(client, "claude", max_tokens=2000, thinking=thinking)
    assert response.status_code == 400 and "budget_tokens" in response.text


def test_reasoning_fields_are_recorded_per_request() -> None:
    with serving(Persona("r1", thinking_tokens=10)) as (server, client):
        chat(client, "r1", reasoning_effort="low", enable_thinking=True, temperature=0)
        chat(client, "r1")
        first, second = server.recent_requests
    assert first["reasoning"] == {"reasoning_effort": "low", "enable_thinking": True}
    assert second["reasoning"] == {}


# -- truncation ----------------------------------------------------------------------------


def test_a_cap_below_the_reasoning_gives_length_with_empty_content_then_more_succeeds() -> None:
    with serving(Persona("r1", thinking_tokens=400)) as (_, client):
        cut = ok(chat(client, "r1", "item 9", reasoning_effort="high", max_completion_tokens=300))
        full = ok(chat(client, "r1", "item 9", reasoning_effort="high", max_completion_tokens=600))
    choice = cut["choices"][0]
    assert (choice["finish_reason"], choice["message"]["content"]) == ("length", "")
    assert cut["usage"]["completion_tokens"] == reasoning_tokens(cut) == 300
    assert full["choices"][0]["finish_reason"] == "stop"
    assert json.loads(full["choices"][0]["message"]["content"])["kind"] in LABELS


def test_a_cap_between_reasoning_and_answer_cuts_the_answer_mid_json() -> None:
    with serving(Persona("r1", thinking_tokens=100)) as (_, client):
        whole = content_of(chat(client, "r1", "item 10"))
        cut = ok(chat(client, "r1", "item 10", reasoning_effort="high", max_tokens=105))
    choice = cut["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"] == whole[:20]
    assert cut["usage"]["completion_tokens"] == 105 and reasoning_tokens(cut) == 100
    with pytest.raises(json.JSONDecodeError):
        json.loads(choice["message"]["content"])


def test_a_reply_without_reasoning_is_never_cut_whatever_the_cap() -> None:
    with serving(Persona("critic")) as (_, client):
        data = ok(chat(client, "critic", max_tokens=3))
    assert data["choices"][0]["finish_reason"] == "stop"
    assert json.loads(data["choices"][0]["message"]["content"])["kind"]


def test_anthropic_thinking_past_the_cap_stops_at_max_tokens_with_no_answer() -> None:
    with serving_messages(Persona("claude", thinking_tokens=800)) as (_, client):
        cut = ok(send(client, "claude", max_tokens=500, output_config={"effort": "high"}))
        full = ok(send(client, "claude", max_tokens=1000, output_config={"effort": "high"}))
    assert cut["stop_reason"] == "max_tokens" and cut["usage"]["output_tokens"] == 500
    assert [b["type"] for b in cut["content"]] == ["thinking"]
    assert full["stop_reason"] == "end_turn"
    assert [b["type"] for b in full["content"]] == ["thinking", "text"]


def test_anthropic_forced_tool_cut_by_the_cap_has_an_empty_input() -> None:
    tools = [{"name": "verdict", "input_schema": SCHEMA}]
    choice = {"type": "tool", "name": "verdict"}
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with serving_messages(Persona("claude", thinking_tokens=1024)) as (_, client):
        data = ok(send(client, "claude", max_tokens=1030, thinking=thinking, tools=tools,
                       tool_choice=choice))  # fmt: skip
    assert data["stop_reason"] == "max_tokens" and data["usage"]["output_tokens"] == 1030
    assert [b["type"] for b in data["content"]] == ["thinking", "tool_use"]
    assert data["content"][1]["input"] == {}


# -- personas ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"logprob_temperature": 0}, "logprob_temperature"),
        ({"logprob_temperature": float("inf")}, "logprob_temperature"),
        ({"thinking_tokens": -1}, "thinking_tokens"),
        ({"thinking_tokens": 1.5}, "thinking_tokens"),
    ],
)
def test_invalid_new_persona_fields_raise_value_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Persona("p", **kwargs)


def test_a_panel_file_persona_sets_the_new_persona_fields() -> None:
    from cross_judge.panel_file import parse_panel

    text = (
        "critics:\n  - name: r1\n    vendor: simulated\n"
        "    persona: {logprob_temperature: 0.5, thinking_tokens: 300}\n"
    )
    [persona] = parse_panel(text).personas()
    assert (persona.logprob_temperature, persona.thinking_tokens) == (0.5, 300)


@pytest.mark.parametrize(
    "option",
    [["--thinking-tokens", "-1"], ["--logprob-temperature", "0"], ["--refuse", "json_schemas"]],
    ids=["thinking", "temperature", "refuse"],
)
def test_the_command_line_refuses_invalid_new_options(
    option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from cross_judge.testing import main

    with pytest.raises(SystemExit) as info:
        main(["--port", "0", "--max-seconds", "0.2", *option])
    assert info.value.code == 2
    assert option[0].lstrip("-").split("-")[0] in capsys.readouterr().err


def test_the_command_line_takes_the_new_options(capsys: pytest.CaptureFixture[str]) -> None:
    from cross_judge.testing import main

    argv = ["--port", "0", "--max-seconds", "0.2", "--thinking-tokens", "100",
            "--logprob-temperature", "2", "--refuse", "json_schema", "logprobs"]  # fmt: skip
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("READY ")
