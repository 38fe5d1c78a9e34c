"""What each protocol sends of a request's settings: ChatRequest.sent_settings, the one
description that the wire adapters, the response cache and the run manifest share.

The Anthropic adapter's body is held to it in tests/unit/transport/test_anthropic.py; the
chat-completions body is held to it here.
"""

from __future__ import annotations

from typing import Any

import pytest

from cross_judge.transport import ChatRequest
from cross_judge.transport._openai_compat import build_payload
from cross_judge.vendors import all_vendors, get_vendor, with_base_url

VARIANTS: list[dict[str, Any]] = [
    {},
    {"temperature": 0.7},
    {"seed": 7},
    {"json_mode": True},
    {"temperature": 1.3, "seed": 0, "json_mode": True, "max_tokens": 12},
]
OPENAI_VENDORS = sorted(name for name, c in all_vendors().items() if c.protocol == "openai")


def request(**changes: Any) -> ChatRequest:
    fields: dict[str, Any] = {
        "model": "judge-model",
        "system": "Be a judge. Answer in JSON.",
        "user": "Judge this.",
        "temperature": 0.0,
        "max_tokens": 256,
    }
    fields.update(changes)
    return ChatRequest(**fields)


@pytest.mark.parametrize("vendor", OPENAI_VENDORS)
@pytest.mark.parametrize("changes", VARIANTS, ids=repr)
def test_a_chat_completions_body_carries_exactly_the_sent_settings(
    vendor: str, changes: dict[str, Any]
) -> None:
    config = with_base_url(get_vendor(vendor), "https://llm.example/v1")
    req = request(**changes)
    body = build_payload(config, req)
    settings = {
        ("max_tokens" if name == config.max_tokens_field else name): value
        for name, value in body.items()
        if name not in ("model", "messages")
    }
    assert settings == req.sent_settings("openai")


def test_chat_completions_sends_temperature_and_max_tokens_and_only_the_options_set() -> None:
    assert request().sent_settings("openai") == {"temperature": 0.0, "max_tokens": 256}
    assert request(seed=3, json_mode=True).sent_settings("openai") == {
        "temperature": 0.0,
        "max_tokens": 256,
        "response_format": {"type": "json_object"},
        "seed": 3,
    }


@pytest.mark.parametrize("changes", VARIANTS, ids=repr)
def test_chat_completions_drops_nothing(changes: dict[str, Any]) -> None:
    assert request(**changes).unsent_settings("openai") == {}


@pytest.mark.parametrize("changes", VARIANTS, ids=repr)
def test_anthropic_sends_max_tokens_only(changes: dict[str, Any]) -> None:
    req = request(**changes)
    assert req.sent_settings("anthropic") == {"max_tokens": req.max_tokens}


def test_anthropic_lists_temperature_always_and_seed_and_json_mode_when_set_as_unsent() -> None:
    assert request().unsent_settings("anthropic") == {"temperature": 0.0}
    assert request(temperature=0.7, seed=7, json_mode=True).unsent_settings("anthropic") == {
        "temperature": 0.7,
        "seed": 7,
        "json_mode": True,
    }
