"""The legacy Reviewer answers as cross-judge 0.1 did, on the path without an injected client.

Reviewer -> Critic -> pooled HTTP -> VendorServer -> parsing -> legacy Verdict; and, after
``Reviewer._get_client()``, Reviewer -> openai.OpenAI -> VendorServer, as in 0.1.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from cross_judge.reviewer import Reviewer
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

pytestmark = pytest.mark.integration


def reviewer(server: VendorServer, model: str, **kwargs: Any) -> Reviewer:
    kwargs.setdefault("api_key", KEY)
    return Reviewer(reviewer_id="rev", model=model, vendor="custom", base_url=server.url, **kwargs)


def test_a_reply_without_json_is_parse_fail_exactly(
    server: VendorServer, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(model, Reply.content("I would keep it."))
    with caplog.at_level(logging.DEBUG, logger="cross_judge"):
        v = reviewer(server, model).ask("x")
    assert (v.verdict, v.error, v.confidence) == ("PARSE_FAIL", "parse_fail", 0.0)
    assert (v.rationale, v.raw_response) == ("I would keep it.", "I would keep it.")
    assert "reviewer rev: parse_fail: no JSON object found" in caplog.text


@pytest.mark.parametrize("written", ["1.5", "5.0"])
def test_a_confidence_above_1_is_clamped_to_1(
    server: VendorServer, model: str, written: str
) -> None:
    server.script(model, Reply.content(f'{{"verdict": "KEEP", "confidence": {written}}}'))
    v = reviewer(server, model).ask("x")
    assert (v.verdict, v.confidence, v.error) == ("KEEP", 1.0, None)


def test_after_get_client_the_reviewer_asks_through_that_client(
    server: VendorServer, model: str
) -> None:
    openai = pytest.importorskip("openai")
    server.script(model, Reply.content('{"verdict": "REJECT", "confidence": 5}'))
    r = reviewer(server, model)
    client = r._get_client()
    assert isinstance(client, openai.OpenAI)
    try:
        v = r.ask("Is 'Cats' a category?")
    finally:
        client.close()
    assert (v.verdict, v.confidence, v.error) == ("REJECT", 1.0, None)
    assert server.recent_requests[-1]["body"]["messages"][1] == {
        "role": "user",
        "content": "Is 'Cats' a category?",
    }
