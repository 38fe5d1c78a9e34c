"""The legacy Reviewer and JudgePanel without an injected client, over real HTTP.

Each test drives Reviewer -> Critic -> pooled HTTP client -> socket -> VendorServer ->
parsing (0.1's key order) -> legacy Verdict, through the sync bridge.
"""

from __future__ import annotations

from typing import Any

import pytest

from cross_judge.panel import JudgePanel
from cross_judge.reviewer import Reviewer
from cross_judge.schema import Verdict as LegacyVerdict
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

pytestmark = pytest.mark.integration


def reviewer(server: VendorServer, model: str, **kwargs: Any) -> Reviewer:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("reviewer_id", "rev")
    return Reviewer(model=model, vendor="custom", base_url=server.url, **kwargs)


def test_reviewer_reads_the_01_schema(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"verdict": "KEEP", "rationale": "ok"}'))
    v = reviewer(server, model).ask("Is 'Cats' a good category?")
    assert isinstance(v, LegacyVerdict)
    assert (v.reviewer_id, v.verdict, v.rationale, v.error) == ("rev", "KEEP", "ok", None)
    assert v.raw_response == '{"verdict": "KEEP", "rationale": "ok"}'
    body = server.recent_requests[-1]["body"]
    assert body["messages"] == [
        {"role": "system", "content": "You are a careful judge. Output strict JSON only."},
        {"role": "user", "content": "Is 'Cats' a good category?"},
    ]
    assert (body["temperature"], body["max_tokens"]) == (0.0, 2000)
    assert "response_format" not in body


def test_reviewer_reads_the_new_schema_b11(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"kind": "REJECT", "confidence": 0.8, "reasoning": "dup"}'))
    v = reviewer(server, model).ask("x")
    assert (v.verdict, v.confidence, v.rationale, v.error) == ("REJECT", 0.8, "dup", None)


def test_user_prompt_is_sent_verbatim(server: VendorServer, model: str) -> None:
    server.script(model, Reply.content('{"verdict": "KEEP"}'))
    prompt = 'Output JSON like {"verdict": ...} for {item}'
    reviewer(server, model, system_prompt="").ask(prompt)
    # An empty system prompt is not sent by the core (0.1 sent an empty system message).
    assert server.recent_requests[-1]["body"]["messages"] == [{"role": "user", "content": prompt}]


def test_failures_keep_01_sentinels(server: VendorServer, model: str, no_backoff: None) -> None:
    server.script(
        model,
        Reply.content(""),
        Reply.content("no json here"),
        *[Reply.status(500)] * 3,
    )
    r = reviewer(server, model)
    empty, garbage, failed = r.ask("a"), r.ask("b"), r.ask("c")
    assert (empty.verdict, empty.error) == ("ERROR", "empty_response")
    assert garbage.verdict == "PARSE_FAIL" and (garbage.error or "").startswith("parse_fail")
    assert garbage.rationale == "no json here"
    assert failed.verdict == "ERROR" and "500" in (failed.error or "")
    assert "after 3 attempts" in (failed.error or "")  # 0.1's openai client also retried twice
    assert set(failed.model_dump()) == {
        "reviewer_id",
        "verdict",
        "confidence",
        "rationale",
        "raw_response",
        "error",
        "elapsed_s",
    }


def test_wrong_key_is_an_error_verdict(server: VendorServer, model: str) -> None:
    v = reviewer(server, model, api_key="sk-wrong").ask("x")
    assert v.verdict == "ERROR" and v.error is not None and "sk-wrong" not in v.error


def test_panel_over_http(server: VendorServer, model: str) -> None:
    models = [f"{model}-{i}" for i in range(3)]
    server.script(models[0], Reply.content('{"verdict": "KEEP", "confidence": 0.9}'))
    server.script(models[1], Reply.content('{"kind": "KEEP", "confidence": 0.7}', latency=0.1))
    server.script(models[2], Reply.content('{"verdict": "REJECT", "confidence": 0.5}'))
    reviewers = [reviewer(server, m, reviewer_id=f"r{i}", weight=1.0) for i, m in enumerate(models)]
    result = JudgePanel(reviewers=reviewers).ask("item-1", "judge this", meta={"run": 1})
    assert [v.reviewer_id for v in result.verdicts] == ["r0", "r1", "r2"]
    assert [v.verdict for v in result.verdicts] == ["KEEP", "KEEP", "REJECT"]
    assert (result.consensus, result.disagreement, result.strategy) == ("KEEP", True, "majority")
    assert result.avg_confidence == pytest.approx(0.7)
    assert result.meta == {"run": 1}


def test_panel_weighted_uses_reviewer_weight(server: VendorServer, model: str) -> None:
    models = [f"{model}-{i}" for i in range(3)]
    server.script(models[0], Reply.content('{"verdict": "KEEP", "confidence": 0.6}'))
    for m in models[1:]:
        server.script(m, Reply.content('{"verdict": "REJECT", "confidence": 0.6}'))
    reviewers = [
        reviewer(server, m, reviewer_id=f"r{i}", weight=3.0 if i == 0 else 1.0)
        for i, m in enumerate(models)
    ]
    result = JudgePanel(reviewers=reviewers, strategy="weighted").ask("i", "x")
    assert result.consensus == "KEEP" and result.disagreement
