"""``cross-judge review`` as a new user runs it: the shipped simulated panel re-run with
``--cache`` costs no call, and the run manifest records the settings each critic really
sent (an Anthropic critic sends no temperature)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cross_judge.cli import main
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KEY_ENV = "CROSS_JUDGE_SENT_SETTINGS_TEST_KEY"

pytestmark = pytest.mark.integration


def review(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main(["review", *(str(a) for a in argv)])
    return code, capsys.readouterr().out


def critics_in_manifest(out: Path) -> dict[str, dict[str, Any]]:
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text("utf-8"))
    return {c["name"]: c for c in manifest["runs"][-1]["panel"]["critics"]}


def test_the_shipped_simulated_panel_rerun_with_the_cache_makes_no_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each run starts its simulated vendor on a new port: not part of the cache key."""
    items, panel = EXAMPLES / "items.jsonl", EXAMPLES / "panel.yaml"
    asked = 3 * sum(1 for line in items.read_text("utf-8").splitlines() if line.strip())
    cache = tmp_path / "responses.sqlite3"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    code, out = review(capsys, items, "--panel", panel, "--out", first, "--cache", cache)
    assert code == 0 and f"{asked} calls" in out
    code, out = review(capsys, items, "--panel", panel, "--out", second, "--cache", cache)
    assert code == 0
    assert f"0 calls, {asked} answers from the cache" in out


def test_the_manifest_records_what_each_critic_sent(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    model: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    claude_model, gpt_model = f"{model}-claude", f"{model}-gpt"
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        f"""voting: majority
critics:
  - name: claude
    vendor: anthropic
    model: {claude_model}
    base_url: {server.anthropic_url}
    api_key_env: {KEY_ENV}
    prompt: taxonomy-review@1
    temperature: 0.7
    max_tokens: 300
  - name: gpt
    vendor: custom
    model: {gpt_model}
    base_url: {server.url}
    api_key_env: {KEY_ENV}
    prompt: taxonomy-review@1
    temperature: 0.3
    max_tokens: 200
""",
        encoding="utf-8",
    )
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "i1", "query": f"{model} felines"}) + "\n", "utf-8")
    out = tmp_path / "out.jsonl"
    for name in (claude_model, gpt_model):
        server.script(name, Reply.content('{"kind": "KEEP", "confidence": 0.9}'))
    code, printed = review(capsys, items, "--panel", panel, "--out", out)
    assert code == 0, printed
    recorded = critics_in_manifest(out)
    bodies = {
        r["body"]["model"]: r["body"]
        for r in server.recent_requests
        if r["body"].get("model") in (claude_model, gpt_model)
    }

    claude = recorded["claude"]
    assert claude["sent"] == {"max_tokens": 300}
    assert claude["not_sent"] == ["temperature"]
    assert not {"temperature", "seed"} & set(bodies[claude_model])
    assert bodies[claude_model]["max_tokens"] == 300

    gpt = recorded["gpt"]
    assert gpt["not_sent"] == []
    assert gpt["sent"]["temperature"] == bodies[gpt_model]["temperature"] == 0.3
    assert gpt["sent"]["max_tokens"] == bodies[gpt_model]["max_tokens"] == 200
    assert set(gpt["sent"]) - {"max_tokens"} == set(bodies[gpt_model]) - {
        "model",
        "messages",
        "max_tokens",
    }
