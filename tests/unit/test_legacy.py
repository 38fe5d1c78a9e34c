"""The legacy 0.1 API (Reviewer, JudgePanel, aggregation, schema) as shims over the core.

Reviewers get 0.1-style duck clients (``client.chat.completions.create(**kw)``); nothing
here touches the network.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from cross_judge import aggregation, reviewer
from cross_judge.aggregation import (
    STRATEGIES,
    _any_disagreement,
    _label_counts,
    avg_confidence,
    first_disagreement,
    get_strategy,
    majority,
    unanimous,
    weighted,
)
from cross_judge.critic import _parsing as parsing
from cross_judge.errors import ConfigError, ErrorKind, MissingAPIKeyError, UnknownVendorError
from cross_judge.panel import JudgePanel
from cross_judge.reviewer import Reviewer
from cross_judge.schema import EnsembleResult, Verdict as LegacyVerdict, VerdictLabel
from cross_judge.vendors import VENDORS, VendorConfig, all_vendors, get_vendor, make_client
from cross_judge.verdict import Usage, Verdict as NewVerdict

# -- helpers --------------------------------------------------------------------------------


class DuckClient:
    """0.1's mocking style: ``client.chat.completions.create(**kw)`` -> ``.choices[0]...``."""

    def __init__(self, content: str | None = None, *, exc: Exception | None = None) -> None:
        self.content = content
        self.exc = exc
        self.calls: list[dict[str, Any]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if self.exc is not None:
            raise self.exc
        message = SimpleNamespace(content=self.content)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


class SlowDuckClient(DuckClient):
    """Sleeps (blocking, it is a sync client) and records when each call started."""

    def __init__(self, content: str, starts: list[float], lock: threading.Lock) -> None:
        super().__init__(content)
        self.starts = starts
        self.lock = lock

    def _create(self, **kwargs: Any) -> Any:
        with self.lock:
            self.starts.append(time.monotonic())
        time.sleep(0.3)
        return super()._create(**kwargs)


def lv(
    reviewer_id: str, verdict: str, confidence: float = 0.8, error: str | None = None
) -> LegacyVerdict:
    return LegacyVerdict(
        reviewer_id=reviewer_id, verdict=verdict, confidence=confidence, error=error
    )


def duck_reviewer(content: str | None, **kwargs: Any) -> tuple[Reviewer, DuckClient]:
    client = DuckClient(content)
    return Reviewer(
        reviewer_id=kwargs.pop("reviewer_id", "r1"), model="m", client=client, **kwargs
    ), client


# -- JudgePanel over aggregation ------------------------------------------------------------


def test_panel_majority() -> None:
    panel = JudgePanel(reviewers=[])
    result = panel.aggregate_verdicts(
        "item-1", [lv("a", "KEEP"), lv("b", "KEEP"), lv("c", "REJECT")]
    )
    assert isinstance(result, EnsembleResult)
    assert (result.item_id, result.consensus, result.disagreement) == ("item-1", "KEEP", True)
    assert result.strategy == "majority" and result.meta == {}
    assert result.avg_confidence == pytest.approx(0.8)


def test_panel_majority_ignores_errors_and_ties_go_first_seen_or_priority() -> None:
    verdicts = [
        lv("a", "REJECT"),
        lv("b", "ERROR", 0.0, error="boom"),
        lv("c", "KEEP"),
    ]
    assert majority(verdicts) == ("REJECT", True)
    assert majority(verdicts, priority=["KEEP"]) == ("KEEP", True)
    assert majority(verdicts, priority=["SPLIT"]) == ("REJECT", True)
    assert majority([lv("a", "X", error="e")]) == ("UNCLEAR", False)
    assert majority([], fallback="NONE") == ("NONE", False)


def test_fallback_need_not_be_a_string_as_in_01() -> None:
    assert majority([], fallback=None) == (None, False)  # type: ignore[arg-type]
    assert unanimous([lv("a", "K"), lv("b", "R")], fallback=None) == (None, True)  # type: ignore[arg-type]
    assert first_disagreement([], fallback=None) == (None, False)  # type: ignore[arg-type]


def test_legacy_strategies_return_plain_tuples() -> None:
    assert type(majority([lv("a", "KEEP")])) is tuple


def test_panel_unanimous() -> None:
    panel = JudgePanel(reviewers=[], strategy="unanimous")
    agree = panel.aggregate_verdicts("i", [lv("a", "KEEP"), lv("b", "KEEP")])
    split = panel.aggregate_verdicts("i", [lv("a", "KEEP"), lv("b", "REJECT")])
    none = panel.aggregate_verdicts("i", [lv("a", "ERROR", 0.0, error="x")])
    assert (agree.consensus, agree.disagreement) == ("KEEP", False)
    assert (split.consensus, split.disagreement) == ("UNCLEAR", True)
    assert (none.consensus, none.disagreement) == ("UNCLEAR", True)  # 0.1's asymmetry
    assert aggregation.unanimous([], fallback="NO") == ("NO", True)


def test_panel_weighted_uses_weights_and_confidence() -> None:
    verdicts = [lv("a", "KEEP", 0.9), lv("b", "REJECT", 0.6), lv("c", "REJECT", 0.6)]
    assert weighted(verdicts) == ("REJECT", True)
    assert weighted(verdicts, weights={"a": 3.0}) == ("KEEP", True)
    assert weighted(verdicts, use_confidence=False) == ("REJECT", True)
    panel = JudgePanel(reviewers=[], strategy="weighted", strategy_kwargs={"weights": {"a": 3}})
    assert panel.aggregate_verdicts("i", verdicts).consensus == "KEEP"


def test_weighted_keeps_01_quirk_b23_first_label_wins_ties_and_zero_confidences() -> None:
    zeros = [lv("a", "KEEP", 0.0), lv("b", "REJECT", 0.0), lv("c", "REJECT", 0.0)]
    assert weighted(zeros) == ("KEEP", True)  # 2 votes for REJECT, yet KEEP
    tie = [lv("a", "REJECT", 0.5), lv("b", "KEEP", 0.5)]
    assert weighted(tie) == ("REJECT", True)
    assert weighted([lv("a", "X", error="e")]) == ("UNCLEAR", False)
    assert weighted([], fallback="NONE") == ("NONE", False)


def test_panel_passes_reviewer_weights_to_weighted_b22() -> None:
    heavy = Reviewer(reviewer_id="a", model="m", weight=3.0, client=DuckClient())
    light = [Reviewer(reviewer_id=r, model="m", client=DuckClient()) for r in ("b", "c")]
    verdicts = [lv("a", "KEEP", 0.6), lv("b", "REJECT", 0.6), lv("c", "REJECT", 0.6)]
    panel = JudgePanel(reviewers=[heavy, *light], strategy="weighted")
    assert panel.aggregate_verdicts("i", verdicts).consensus == "KEEP"
    # strategy_kwargs' weights win over the reviewers' own.
    overridden = JudgePanel(
        reviewers=[heavy, *light], strategy="weighted", strategy_kwargs={"weights": {}}
    )
    assert overridden.aggregate_verdicts("i", verdicts).consensus == "REJECT"


def test_panel_first_disagreement() -> None:
    panel = JudgePanel(reviewers=[], strategy="first_disagreement")
    assert panel.aggregate_verdicts("i", [lv("a", "K"), lv("b", "K")]).consensus == "K"
    split = panel.aggregate_verdicts("i", [lv("a", "K"), lv("b", "R")])
    assert (split.consensus, split.disagreement) == ("DISAGREE", True)
    assert first_disagreement([]) == ("UNCLEAR", False)
    assert first_disagreement([lv("a", "K"), lv("b", "R")], disagree_label="HUMAN") == (
        "HUMAN",
        True,
    )


def test_panel_with_a_callable_strategy_records_its_name() -> None:
    def always_keep(verdicts: list[Any], **kwargs: Any) -> tuple[str, bool]:
        return "KEEP", False

    panel = JudgePanel(reviewers=[], strategy=always_keep)
    result = panel.aggregate_verdicts("i", [lv("a", "REJECT")])
    assert (result.consensus, result.strategy) == ("KEEP", "always_keep")


def test_strategy_string_is_stored_as_given() -> None:
    panel = JudgePanel(reviewers=[], strategy="MAJORITY")
    assert panel.aggregate_verdicts("i", [lv("a", "K")]).strategy == "MAJORITY"


def test_unknown_strategy_fails_at_construction() -> None:
    with pytest.raises(KeyError, match="Unknown strategy 'nope'"):
        JudgePanel(reviewers=[], strategy="nope")
    with pytest.raises(TypeError):
        JudgePanel(reviewers=[], strategy="majority", strategy_kwargs={"fallback_label": "X"})


def test_aggregate_verdicts_passes_meta() -> None:
    result = JudgePanel(reviewers=[]).aggregate_verdicts("i", [lv("a", "K")], meta={"n": 1})
    assert result.meta == {"n": 1}


# -- get_strategy, avg_confidence, private helpers ---------------------------------------


def test_get_strategy() -> None:
    assert set(STRATEGIES) == {"majority", "unanimous", "weighted", "first_disagreement"}
    assert get_strategy("Weighted") is weighted
    assert get_strategy(majority) is majority
    with pytest.raises(KeyError) as info:
        get_strategy("borda")
    assert isinstance(info.value, ConfigError)
    assert str(info.value) == (
        "Unknown strategy 'borda'. Known: "
        "['first_disagreement', 'majority', 'unanimous', 'weighted']."
    )


def test_avg_confidence_counts_valid_verdicts_only() -> None:
    verdicts = [lv("a", "K", 0.9), lv("b", "K", 0.5), lv("c", "ERROR", 0.0, error="x")]
    assert avg_confidence(verdicts) == pytest.approx(0.7)
    assert avg_confidence([]) == 0.0
    assert avg_confidence([lv("a", "ERROR", 0.0, error="x")]) == 0.0


def test_private_helpers_exist() -> None:
    verdicts = [lv("a", "K"), lv("b", "R"), lv("c", "K"), lv("d", "X", error="e")]
    assert _label_counts(verdicts) == {"K": 2, "R": 1}
    assert list(_label_counts(verdicts)) == ["K", "R"]
    assert _any_disagreement(verdicts) and not _any_disagreement(verdicts[:1])


def test_aggregation_accepts_new_verdicts() -> None:
    new = [NewVerdict(kind="KEEP", critic_id="a", confidence=0.4), NewVerdict(kind="KEEP")]
    assert majority(new) == ("KEEP", False)
    assert weighted(new, weights={"a": 2.0}) == ("KEEP", False)
    assert avg_confidence(new) == pytest.approx(0.2)


def test_aggregation_accepts_duck_verdicts_like_01() -> None:
    ducks = [SimpleNamespace(verdict="K", error=None), SimpleNamespace(verdict="R", error=None)]
    assert majority(ducks) == ("K", True)
    assert first_disagreement(ducks) == ("DISAGREE", True)


# -- Reviewer with an injected client ------------------------------------------------------


def test_reviewer_success_with_verdict_and_rationale_keys() -> None:
    r, client = duck_reviewer('{"verdict": "keep", "confidence": 0.9, "rationale": "fine"}')
    v = r.ask("Is this a category?")
    assert isinstance(v, LegacyVerdict)
    assert (v.reviewer_id, v.verdict, v.confidence, v.rationale, v.error) == (
        "r1",
        "KEEP",
        0.9,
        "fine",
        None,
    )
    assert v.raw_response == '{"verdict": "keep", "confidence": 0.9, "rationale": "fine"}'
    assert v.elapsed_s >= 0.0
    assert set(v.model_dump()) == {
        "reviewer_id",
        "verdict",
        "confidence",
        "rationale",
        "raw_response",
        "error",
        "elapsed_s",
    }
    (call,) = client.calls
    assert call == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "You are a careful judge. Output strict JSON only."},
            {"role": "user", "content": "Is this a category?"},
        ],
        "temperature": 0.0,
        "max_tokens": 2000,
    }


def test_reviewer_accepts_new_kind_and_reasoning_keys_b11() -> None:
    r, _ = duck_reviewer('{"kind": "REJECT", "confidence": 0.7, "reasoning": "dup"}')
    v = r.ask("x")
    assert (v.verdict, v.confidence, v.rationale, v.error) == ("REJECT", 0.7, "dup", None)


def test_reviewer_prefers_01_keys_when_both_schemas_are_present() -> None:
    content = '{"kind": "REJECT", "verdict": "KEEP", "reasoning": "new", "rationale": "old"}'
    v = duck_reviewer(content)[0].ask("x")
    assert (v.verdict, v.rationale) == ("KEEP", "old")


def test_reviewer_missing_label_is_unclear_as_in_01() -> None:
    v = duck_reviewer('{"confidence": 0.5}')[0].ask("x")
    assert (v.verdict, v.error) == ("UNCLEAR", None)


def test_reviewer_parse_failure_is_0_1s_exact_parse_fail() -> None:
    text = "I think we should keep it. " * 20
    v = duck_reviewer(text)[0].ask("x")
    assert (v.verdict, v.error, v.confidence) == ("PARSE_FAIL", "parse_fail", 0.0)
    assert v.rationale == text.strip()[:300] and v.raw_response == text.strip()


@pytest.mark.parametrize(
    "reply", ["not json at all", '{"verdict": null}', '{"verdict": "ERROR", "confidence": 1}']
)
def test_every_reviewer_parse_failure_has_error_parse_fail_exactly(reply: str) -> None:
    v = duck_reviewer(reply)[0].ask("x")
    assert (v.verdict, v.error, v.raw_response) == ("PARSE_FAIL", "parse_fail", reply)


def test_reviewer_logs_the_parse_failure_reason_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG", logger="cross_judge"):
        duck_reviewer("no json here", reviewer_id="rev-7")[0].ask("x")
    assert "reviewer rev-7: parse_fail: no JSON object found" in caplog.text


@pytest.mark.parametrize(("written", "expected"), [("1.5", 1.0), ("5.0", 1.0), ("10", 1.0)])
def test_reviewer_clamps_a_confidence_above_1_to_1_as_0_1_did(
    written: str, expected: float
) -> None:
    v = duck_reviewer(f'{{"verdict": "KEEP", "confidence": {written}}}')[0].ask("x")
    assert (v.verdict, v.confidence, v.error) == ("KEEP", expected, None)


@pytest.mark.parametrize(
    ("written", "expected"), [("85", 0.85), ('"85%"', 0.85), ("0.85", 0.85), ('"high"', 0.0)]
)
def test_reviewer_reads_confidence_by_the_parsers_rule(written: str, expected: float) -> None:
    v = duck_reviewer(f'{{"verdict": "KEEP", "confidence": {written}}}')[0].ask("x")
    assert v.confidence == expected


def test_get_client_returns_the_injected_client() -> None:
    r, client = duck_reviewer('{"verdict": "KEEP"}')
    assert r._get_client() is client


def test_get_client_builds_the_vendors_default_client_once_as_in_0_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openai = pytest.importorskip("openai")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-key-0123456789")
    r = Reviewer(reviewer_id="x", model="m")
    client = r._get_client()
    try:
        assert isinstance(client, openai.OpenAI)
        assert str(client.base_url).startswith("https://api.deepseek.com/v1")
        assert r._get_client() is client and r.client is client
    finally:
        client.close()


def test_get_client_uses_the_reviewers_base_url_and_key() -> None:
    pytest.importorskip("openai")
    r = Reviewer(
        reviewer_id="x", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1", api_key="k"
    )
    client = r._get_client()
    try:
        assert str(client.base_url).startswith("http://127.0.0.1:9/v1")
        assert client.api_key == "k"
    finally:
        client.close()


def test_get_client_without_a_key_raises_runtime_error() -> None:
    r = Reviewer(reviewer_id="x", model="m", vendor="openai")
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        r._get_client()
    assert r.client is None


@pytest.mark.parametrize("content", ["", "   ", None])
def test_reviewer_empty_content(content: str | None) -> None:
    v = duck_reviewer(content)[0].ask("x")
    assert (v.verdict, v.error, v.rationale, v.raw_response) == (
        "ERROR",
        "empty_response",
        "empty response from LLM",
        None,
    )


def test_reviewer_client_raising_becomes_error_verdict() -> None:
    client = DuckClient(exc=ValueError("rate limited"))
    v = Reviewer(reviewer_id="r1", model="m", client=client).ask("x")
    assert (v.verdict, v.error, v.rationale) == (
        "ERROR",
        "ValueError: rate limited",
        "ValueError: rate limited",
    )
    assert v.raw_response is None


def test_reviewer_sends_an_empty_system_prompt_to_an_injected_client() -> None:
    r, client = duck_reviewer('{"verdict": "KEEP"}', system_prompt="", temperature=0.3)
    r.ask("x")
    assert client.calls[0]["messages"][0] == {"role": "system", "content": ""}
    assert client.calls[0]["temperature"] == 0.3


def test_reviewer_fields_defaults_and_repr() -> None:
    r = Reviewer(reviewer_id="r", model="m", api_key="sk-secret", base_url="http://h/v1")
    assert (r.vendor, r.temperature, r.max_tokens, r.weight, r.client) == (
        "deepseek",
        0.0,
        2000,
        1.0,
        None,
    )
    assert "sk-secret" not in repr(r) and "http://h" not in repr(r)
    assert [f.name for f in dataclasses.fields(r)] == [
        "reviewer_id",
        "model",
        "vendor",
        "system_prompt",
        "temperature",
        "max_tokens",
        "weight",
        "client",
        "api_key",
        "base_url",
        "timeout",  # new, after 0.1's fields: positional 0.1 calls are unchanged
    ]


@pytest.mark.anyio
async def test_reviewer_ask_async_and_sync_ask_inside_a_running_loop() -> None:
    r, _ = duck_reviewer('{"verdict": "KEEP"}')
    assert (await r.ask_async("x")).verdict == "KEEP"
    assert r.ask("x").verdict == "KEEP"  # the sync bridge does not need a free loop


def test_reviewer_extract_json_is_kept() -> None:
    assert reviewer._extract_json is parsing.extract_json
    assert reviewer._extract_json('noise {"verdict": "KEEP"} noise') == {"verdict": "KEEP"}
    assert reviewer._extract_json("no json") is None


# -- Reviewer without a client: configuration errors are raised, as in 0.1 -------------------


def test_reviewer_without_key_raises_runtime_error() -> None:
    r = Reviewer(reviewer_id="r", model="m")  # DEEPSEEK_API_KEY is unset in tests
    with pytest.raises(RuntimeError, match="DEEPSEEK_API_KEY") as info:
        r.ask("x")
    assert isinstance(info.value, MissingAPIKeyError)


def test_reviewer_with_unknown_vendor_raises_key_error() -> None:
    with pytest.raises(KeyError) as info:
        Reviewer(reviewer_id="r", model="m", vendor="nosuch", api_key="k").ask("x")
    assert isinstance(info.value, UnknownVendorError)


def test_reviewer_builds_one_critic_per_configuration() -> None:
    r = Reviewer(reviewer_id="r", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1")
    first = r._critic()
    assert r._critic() is first
    assert first.prompt_template == "{query}" and first.json_mode is False
    assert first._label_keys[0] == "verdict" and first._reasoning_keys[0] == "rationale"
    r.model = "other"
    assert r._critic() is not first and r._critic().model == "other"
    assert len(dataclasses.asdict(r)) == 11  # the cache is not a field


def test_panel_raises_configuration_errors_before_calling_anyone() -> None:
    ok, client = duck_reviewer('{"verdict": "KEEP"}')
    keyless = Reviewer(reviewer_id="r2", model="m", vendor="openai")
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        JudgePanel(reviewers=[ok, keyless]).ask("i", "x")
    assert client.calls == []


# -- JudgePanel.ask ------------------------------------------------------------------------


def test_panel_ask_with_duck_clients() -> None:
    replies = ['{"verdict": "KEEP", "confidence": 0.9}', '{"kind": "KEEP", "confidence": 0.5}']
    reviewers = [
        Reviewer(reviewer_id=f"r{i}", model="m", client=DuckClient(text))
        for i, text in enumerate([*replies, '{"verdict": "REJECT", "confidence": 0.7}'])
    ]
    result = JudgePanel(reviewers=reviewers).ask("item-7", "judge me", meta={"k": "v"})
    assert [v.reviewer_id for v in result.verdicts] == ["r0", "r1", "r2"]
    assert (result.consensus, result.disagreement, result.meta) == ("KEEP", True, {"k": "v"})
    assert result.avg_confidence == pytest.approx(0.7)


def test_panel_ask_with_a_failing_reviewer_still_aggregates() -> None:
    reviewers = [
        Reviewer(reviewer_id="a", model="m", client=DuckClient('{"verdict": "KEEP"}')),
        Reviewer(reviewer_id="b", model="m", client=DuckClient(exc=TimeoutError("slow"))),
    ]
    result = JudgePanel(reviewers=reviewers).ask("i", "x")
    assert result.consensus == "KEEP" and not result.disagreement
    assert result.verdicts[1].error == "TimeoutError: slow"


def test_panel_ask_with_no_reviewers() -> None:
    result = JudgePanel(reviewers=[]).ask("i", "x")
    assert (result.consensus, result.disagreement, result.verdicts) == ("UNCLEAR", False, [])


def test_panel_asks_reviewers_concurrently() -> None:
    starts: list[float] = []
    lock = threading.Lock()
    reviewers = [
        Reviewer(
            reviewer_id=f"r{i}",
            model="m",
            client=SlowDuckClient('{"verdict": "KEEP"}', starts, lock),
        )
        for i in range(3)
    ]
    result = JudgePanel(reviewers=reviewers).ask("i", "x")
    assert result.consensus == "KEEP" and len(starts) == 3
    # Overlap, not speed: every call started before any could have finished (0.3 s each).
    assert max(starts) - min(starts) < 0.2


# -- schema: models and conversions --------------------------------------------------------


def test_legacy_verdict_model() -> None:
    v = LegacyVerdict(reviewer_id="r", verdict="KEEP", extra_field=1)
    assert (v.confidence, v.rationale, v.raw_response, v.error, v.elapsed_s) == (
        0.0,
        "",
        None,
        None,
        0.0,
    )
    assert v.model_dump()["extra_field"] == 1
    assert not hasattr(v, "kind")
    with pytest.raises(ValueError, match="confidence"):
        LegacyVerdict(reviewer_id="r", verdict="K", confidence=1.5)
    with pytest.raises(ValueError, match="verdict"):
        LegacyVerdict(reviewer_id="r")
    assert VerdictLabel is str


def test_ensemble_result_accepts_new_verdicts_b12() -> None:
    new = NewVerdict(kind="KEEP", critic_id="a", confidence=0.9, reasoning="r")
    result = EnsembleResult(
        item_id="i", verdicts=[new, lv("b", "KEEP")], consensus="KEEP", strategy="majority"
    )
    first = result.verdicts[0]
    assert isinstance(first, LegacyVerdict)
    assert (first.reviewer_id, first.verdict, first.rationale, first.confidence) == (
        "a",
        "KEEP",
        "r",
        0.9,
    )
    assert not hasattr(result, "agreement_pct")
    panel_result = JudgePanel(reviewers=[]).aggregate_verdicts("i", [new, lv("b", "REJECT")])
    assert panel_result.consensus == "KEEP" and panel_result.disagreement
    assert all(isinstance(v, LegacyVerdict) for v in panel_result.verdicts)


def test_legacy_validation_accepts_new_names_without_mutating_input() -> None:
    data = {"kind": "KEEP", "critic_id": "a", "reasoning": "r"}
    v = LegacyVerdict.model_validate(data)
    assert (v.verdict, v.reviewer_id, v.rationale) == ("KEEP", "a", "r")
    assert data == {"kind": "KEEP", "critic_id": "a", "reasoning": "r"}


def test_conversion_round_trips_new_to_legacy_to_new() -> None:
    new = NewVerdict(
        kind="SPLIT",
        confidence=0.6,
        reasoning="two topics",
        critic_id="gpt",
        raw_response='{"kind": "SPLIT"}',
        elapsed_s=1.25,
        error_kind=None,
        usage=Usage(prompt_tokens=10, completion_tokens=5),
        model="gpt-4o-mini",
        attempts=2,
        note="kept",
    )
    legacy = LegacyVerdict.from_verdict(new)
    assert (legacy.reviewer_id, legacy.verdict, legacy.rationale) == ("gpt", "SPLIT", "two topics")
    assert (legacy.confidence, legacy.raw_response, legacy.elapsed_s) == (
        0.6,
        '{"kind": "SPLIT"}',
        1.25,
    )
    assert legacy.model_extra is not None and legacy.model_extra["model"] == "gpt-4o-mini"
    assert legacy.to_verdict() == new
    plain = LegacyVerdict.from_verdict(new, extras=False)
    assert plain.model_extra == {}


def test_conversion_round_trips_legacy_to_new_to_legacy() -> None:
    legacy = LegacyVerdict(
        reviewer_id="r",
        verdict="ERROR",
        rationale="TimeoutError: x",
        error="TimeoutError: x",
        elapsed_s=0.5,
        batch=3,
    )
    new = legacy.to_verdict()
    assert isinstance(new, NewVerdict)
    assert (new.kind, new.critic_id, new.reasoning, new.error, new.elapsed_s) == (
        "ERROR",
        "r",
        "TimeoutError: x",
        "TimeoutError: x",
        0.5,
    )
    assert LegacyVerdict.from_verdict(new) == legacy


def test_error_kind_survives_conversion() -> None:
    new = NewVerdict(kind="ERROR", error="x", error_kind=ErrorKind.TIMEOUT)
    assert LegacyVerdict.from_verdict(new).to_verdict().error_kind is ErrorKind.TIMEOUT


# -- vendors (0.1 registry API) ------------------------------------------------------------


def test_vendor_registry() -> None:
    assert set(VENDORS) == {"deepseek", "openai", "openrouter"}  # 0.1's keys, exactly
    assert set(VENDORS) < set(all_vendors())
    assert get_vendor("anthropic") is all_vendors()["anthropic"]
    config = get_vendor("DeepSeek")
    assert isinstance(config, VendorConfig)
    assert (config.base_url, config.api_key_env) == (
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    )
    with pytest.raises(KeyError, match="Unknown vendor"):
        get_vendor("nosuch")


def test_make_client() -> None:
    openai = pytest.importorskip("openai")
    client = make_client("openai", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    assert isinstance(client, openai.OpenAI)
    assert str(client.base_url).startswith("http://127.0.0.1:9/v1")
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        make_client("openai")


def test_parse_answer_takes_the_key_order() -> None:
    text = '{"kind": "REJECT", "verdict": "KEEP", "reasoning": "new", "rationale": "old"}'
    default = parsing.parse_answer(text)
    legacy = parsing.parse_answer(
        text, label_keys=reviewer.LEGACY_LABEL_KEYS, reasoning_keys=reviewer.LEGACY_REASONING_KEYS
    )
    assert (default.kind, default.reasoning) == ("REJECT", "new")
    assert (legacy.kind, legacy.reasoning) == ("KEEP", "old")
    assert parsing.parse_answer('{"Answer": "yes"}', label_keys=["ANSWER"]).kind == "YES"


def test_ensemble_aggregates_legacy_verdicts_b12() -> None:
    from cross_judge import Critic, Ensemble

    panel = Ensemble([Critic(name=n, model="m", api_key="k") for n in ("r1", "r2", "r3")])
    result = panel.aggregate_verdicts(
        [lv("r1", "KEEP"), lv("r2", "REJECT", error="parse_fail"), lv("r3", "KEEP")],
        query_id="q",
    )
    assert (result.consensus, result.n_valid, result.n_errors) == ("KEEP", 2, 1)
    assert all(isinstance(v, NewVerdict) for v in result.verdicts)
    assert [v.critic_id for v in result.verdicts] == ["r1", "r2", "r3"]


def test_new_voting_functions_accept_legacy_verdicts_b12() -> None:
    from cross_judge import voting

    legacy = [lv("r1", "KEEP"), lv("r2", "KEEP"), lv("r3", "REJECT")]
    new = [v.to_verdict() for v in legacy]
    assert voting.majority_vote(legacy) == voting.majority_vote(new) == ("KEEP", True)
    assert voting.agreement_pct(legacy, "KEEP") == voting.agreement_pct(new, "KEEP")
    assert voting.krippendorff_alpha(legacy) == voting.krippendorff_alpha(new)
    assert voting.krippendorff_alpha(legacy[:2]) == 1.0


# -- import compatibility with 0.1 ------------------------------------------------------------

NAMES_01 = [
    "Critic",
    "Ensemble",
    "Verdict",
    "VerdictKind",
    "EnsembleVerdict",
    "VENDOR_DEFAULTS",
    "majority_vote",
    "unanimous",
    "agreement_pct",
    "krippendorff_alpha",
    "get_voting_strategy",
    "VOTING_STRATEGIES",
    "VotingStrategy",
    "Reviewer",
    "JudgePanel",
    "EnsembleResult",
    "LegacyVerdict",
    "AggregationStrategy",
    "majority",
    "weighted",
    "first_disagreement",
    "get_strategy",
    "avg_confidence",
    "VENDORS",
    "VendorConfig",
    "get_vendor",
    "make_client",
    "__version__",
]

SUBMODULE_NAMES_01 = {
    "core": ["Critic", "_extract_json"],
    "reviewer": ["Reviewer", "_extract_json"],
    "voting": [
        "VOTING_STRATEGIES",
        "agreement_pct",
        "get_voting_strategy",
        "krippendorff_alpha",
        "majority_vote",
        "unanimous",
        "_valid",
        "_label_counts",
    ],
    "aggregation": [
        "avg_confidence",
        "get_strategy",
        "STRATEGIES",
        "unanimous",
        "_label_counts",
        "_any_disagreement",
    ],
    "prompts": ["DEFAULT_SYSTEM_PROMPT", "DEFAULT_USER_PROMPT_TEMPLATE", "render_user_prompt"],
    "schema": ["Verdict", "EnsembleResult", "VerdictLabel"],
    "verdict": ["Verdict", "EnsembleVerdict", "VerdictKind"],
    "vendors": ["VENDORS", "VendorConfig", "get_vendor", "make_client"],
    "ensemble": ["Ensemble", "VotingName"],
    "panel": ["JudgePanel"],
}


def test_all_28_top_level_names_of_01_are_exported() -> None:
    import cross_judge

    assert len(NAMES_01) == 28
    assert [n for n in NAMES_01 if n not in cross_judge.__all__] == []
    assert all(hasattr(cross_judge, n) for n in NAMES_01)


def test_top_level_names_resolve_to_the_same_objects_as_in_01() -> None:
    import cross_judge
    from cross_judge import schema, verdict, voting

    assert cross_judge.Verdict is verdict.Verdict
    assert cross_judge.LegacyVerdict is schema.Verdict
    assert cross_judge.unanimous is voting.unanimous  # the new one
    assert cross_judge.majority is aggregation.majority  # the legacy one
    assert cross_judge.weighted is aggregation.weighted
    assert cross_judge.first_disagreement is aggregation.first_disagreement


@pytest.mark.parametrize("module", sorted(SUBMODULE_NAMES_01))
def test_01_submodule_paths_and_names_import(module: str) -> None:
    import importlib

    mod = importlib.import_module(f"cross_judge.{module}")
    assert [n for n in SUBMODULE_NAMES_01[module] if not hasattr(mod, n)] == []


def test_voting_name_lists_the_built_in_strategies() -> None:
    from typing import get_args

    from cross_judge.ensemble import VotingName
    from cross_judge.voting import VOTING_STRATEGIES

    assert set(get_args(VotingName)) <= set(VOTING_STRATEGIES)
    assert {"majority", "unanimous"} <= set(get_args(VotingName))
