"""The run manifest records a critic's answer settings of issue 27 (the answer shape it asks
for and the schema it sends, a reasoning model's effort and budget, where its confidence
comes from), a resumed run with changed ones is a panel change, and a run's end records the
step downs ``structured="auto"`` took."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Critic, Ensemble
from cross_judge.critic._stepdown import forget_steps, step_down
from cross_judge.errors import ErrorKind
from cross_judge.report._manifest import RunManifest
from cross_judge.transport import CallFailure
from cross_judge.vendors import register_vendor

LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def no_steps() -> Iterator[None]:
    forget_steps()
    yield
    forget_steps()


def prepared(tmp_path: Path, *critics: Critic) -> RunManifest:
    (tmp_path / "items.jsonl").write_text("")
    (tmp_path / "panel.yaml").write_text("")
    return RunManifest.prepare(
        tmp_path / "out.jsonl",
        ensemble=Ensemble(list(critics)),
        argv=["review"],
        items=tmp_path / "items.jsonl",
        panel=tmp_path / "panel.yaml",
        options={},
    )


def record(tmp_path: Path, critic: Critic) -> dict[str, Any]:
    entry = prepared(tmp_path, critic)._entry
    (found,) = entry["panel"]["critics"]
    return dict(found)


def local(**kwargs: Any) -> Critic:
    kwargs.setdefault("labels", ["KEEP", "DROP"])
    return Critic(name="a", model="m", vendor="custom", base_url=LOCAL, **kwargs)


def test_a_schema_critic_records_its_setting_the_form_sent_and_the_schema(
    tmp_path: Path,
) -> None:
    critic = local(structured="auto")
    found = record(tmp_path, critic)
    schema = critic.answer_schema()
    assert (found["structured"], found["structured_form"]) == ("auto", "schema")
    assert found["schema"] == {
        "name": schema.name,
        "sha256": hashlib.sha256(schema.text.encode("utf-8")).hexdigest(),
    }
    assert found["sent"]["response_format"]["type"] == "json_schema"


def test_the_sent_settings_show_the_vendors_schema_dialect(tmp_path: Path) -> None:
    critic = Critic(
        name="a", model="m", vendor="llamacpp", labels=["KEEP", "DROP"], structured="schema"
    )
    sent = record(tmp_path, critic)["sent"]["response_format"]
    assert sent["type"] == "json_object" and "schema" in sent


def test_effort_budget_and_confidence_are_recorded_and_sent(
    tmp_path: Path, vendor_registry: None
) -> None:
    register_vendor("qwen-local", base_url=LOCAL, reasoning="qwen", logprobs=True)
    critic = Critic(
        name="a",
        model="m",
        vendor="qwen-local",
        labels=["KEEP", "DROP"],
        thinking_budget=512,
        confidence="logprob",
    )
    found = record(tmp_path, critic)
    assert (found["thinking_budget"], found["effort"], found["confidence"]) == (
        512,
        None,
        "logprob",
    )
    assert found["sent"]["thinking_budget"] == 512 and found["sent"]["enable_thinking"] is True
    assert found["sent"]["logprobs"] is True and found["sent"]["top_logprobs"] > 0


def test_a_default_critic_records_no_schema_and_sends_what_it_sent_before(
    tmp_path: Path,
) -> None:
    found = record(tmp_path, local())
    assert found["structured"] is None and found["structured_form"] == "off"
    assert found["schema"] is None
    assert found["sent"] == {"temperature": 0.0, "max_tokens": 2000}


@pytest.mark.parametrize(
    ("before", "after", "named"),
    [
        ({}, {"structured": "schema"}, "structured"),
        ({"structured": "schema"}, {"structured": "schema", "labels": ["KEEP", "MAYBE"]}, "schema"),
        ({}, {"confidence": "auto"}, "confidence"),
    ],
)
def test_a_changed_answer_setting_is_a_panel_change_on_resume(
    tmp_path: Path, before: dict[str, Any], after: dict[str, Any], named: str
) -> None:
    earlier = prepared(tmp_path, local(**before))._entry
    changes = prepared(tmp_path, local(**after)).panel_changes(earlier)
    assert len(changes) == 1 and changes[0].startswith("critics: ")
    assert f" {named} " in changes[0]
    assert prepared(tmp_path, local(**before)).panel_changes(earlier) == []


def thinker(**kwargs: Any) -> Critic:
    return Critic(name="a", model="m", vendor="thinker", labels=["KEEP", "DROP"], **kwargs)


@pytest.mark.parametrize(
    ("before", "after", "named"),
    [
        ({"effort": "low"}, {"effort": "high"}, "effort"),
        ({"thinking_budget": 1024}, {"thinking_budget": 4096}, "thinking_budget"),
    ],
)
def test_a_changed_reasoning_setting_is_a_panel_change_on_resume(
    tmp_path: Path,
    before: dict[str, Any],
    after: dict[str, Any],
    named: str,
    vendor_registry: None,
) -> None:
    register_vendor("thinker", base_url=LOCAL, reasoning="openrouter")
    earlier = prepared(tmp_path, thinker(**before))._entry
    changes = prepared(tmp_path, thinker(**after)).panel_changes(earlier)
    assert len(changes) == 1 and f" {named} " in changes[0]


def test_an_entry_from_before_these_settings_is_no_panel_change(tmp_path: Path) -> None:
    earlier = prepared(tmp_path, local())._entry
    for old in earlier["panel"]["critics"]:
        for key in ("structured", "structured_form", "schema", "effort", "thinking_budget"):
            old.pop(key)
        old.pop("confidence")
    assert prepared(tmp_path, local()).panel_changes(earlier) == []


def test_the_runs_end_records_the_step_downs_of_its_critics(tmp_path: Path) -> None:
    critic = local(structured="auto")
    manifest = prepared(tmp_path, critic)
    manifest.begin()
    config = critic.endpoint()
    request = critic.build_request("item")
    refusal = CallFailure(
        ErrorKind.SERVER,
        "HTTP 500: Input should be 'text' or 'json_object' (response_format)",
        status=500,
    )
    assert step_down(config, request, refusal, json_ok=False) is not None
    manifest.finish("done", {"items": 1})
    run = json.loads(manifest.path.read_text(encoding="utf-8"))["runs"][-1]
    (step,) = run["stepdowns"]
    assert (step["vendor"], step["model"], step["asked"], step["now"]) == (
        "custom",
        "m",
        "schema",
        "off",
    )
    assert "json_object" in step["reason"]


def test_step_downs_of_models_outside_the_panel_are_left_out(tmp_path: Path) -> None:
    other = Critic(name="b", model="other", vendor="custom", base_url=LOCAL, structured="auto")
    refusal = CallFailure(ErrorKind.BAD_REQUEST, "HTTP 400: response_format", status=400)
    step_down(other.endpoint(), other.build_request("x"), refusal, json_ok=False)
    manifest = prepared(tmp_path, local(structured="auto"))
    manifest.begin()
    manifest.finish("done", {})
    run = json.loads(manifest.path.read_text(encoding="utf-8"))["runs"][-1]
    assert run["stepdowns"] == []


def test_a_key_in_a_refusal_message_never_reaches_the_manifest(tmp_path: Path) -> None:
    critic = local(structured="auto")
    secret = "sk-live-0123456789abcdefSECRETKEY"
    refusal = CallFailure(
        ErrorKind.BAD_REQUEST, f"HTTP 400: response_format refused for key {secret}", status=400
    )
    step_down(critic.endpoint(), critic.build_request("x"), refusal, json_ok=False)
    manifest = prepared(tmp_path, critic)
    manifest.begin()
    manifest.finish("done", {})
    text = manifest.path.read_text(encoding="utf-8")
    assert "stepdowns" in text and secret not in text
