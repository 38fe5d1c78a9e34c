"""What ``cross-judge review --mode batch`` says before it runs: which critics go through a
vendor's batch API and which run live, and why. With no critic on a batch vendor it must not
claim batch pricing or a ledger: it says every critic runs live, and how to batch a custom
endpoint that serves a batch API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic
from cross_judge.batch import BatchOptions
from cross_judge.cli._review import batch_mode_note, ledger_path
from cross_judge.testing import Persona, VendorServer

from .conftest import run

pytestmark = pytest.mark.integration

MODELS = ("bn-a", "bn-b")


@pytest.fixture
def vendor() -> Iterator[VendorServer]:
    with VendorServer([Persona(m) for m in MODELS], batch_polls=0) as srv:
        yield srv


def write_inputs(folder: Path, critics: str) -> tuple[Path, Path]:
    items = folder / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"i{n}", "query": f"note candidate {n}"}) + "\n" for n in range(4)
        )
    )
    panel = folder / "panel.yaml"
    panel.write_text(f"critics:{critics}\n", encoding="utf-8")
    return items, panel


def critic_entry(name: str, model: str, vendor: str, base_url: str) -> str:
    return (
        f"\n  - name: {name}\n    model: {model}\n    vendor: {vendor}\n    base_url: {base_url}"
        "\n    prompt: taxonomy-review@1\n    max_retries: 0"
    )


def review(
    capsys: pytest.CaptureFixture[str], items: Path, panel: Path, out: Path
) -> tuple[int, str, str]:
    return run(
        capsys,
        "review",
        items,
        "--panel",
        panel,
        "--out",
        out,
        "--no-progress",
        "--mode",
        "batch",
        "--poll",
        "0.01",
    )


def test_batch_mode_with_no_critic_on_a_batch_vendor_says_every_critic_runs_live(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items, panel = write_inputs(
        tmp_path,
        critic_entry("a", MODELS[0], "custom", vendor.url)
        + critic_entry("b", MODELS[1], "custom", vendor.url),
    )
    out = tmp_path / "out.jsonl"
    code, _, err = review(capsys, items, panel, out)
    assert code == 0, err
    flat = " ".join(err.split())
    assert "through their batch APIs" not in flat and "recorded in" not in flat
    assert "every critic runs live, at live prices, and no batch ledger is written" in flat
    assert "a (custom is not among the batch vendors: anthropic, openai)" in flat
    assert "--batch-vendors anthropic,custom,openai" in flat and "/v1/batches" in flat
    assert not ledger_path(out).exists()
    stats = vendor.stats()
    assert stats["requests"] == 8 and sum(stats["batches"].values()) == 0  # it ran live


def test_batch_mode_with_a_mixed_panel_names_the_batched_and_the_live_critics(
    tmp_path: Path,
    vendor: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-note-test-0123456789")
    items, panel = write_inputs(
        tmp_path,
        critic_entry("a", MODELS[0], "openai", vendor.url)
        + critic_entry("b", MODELS[1], "custom", vendor.url),
    )
    out = tmp_path / "out.jsonl"
    code, _, err = review(capsys, items, panel, out)
    assert code == 0, err
    flat = " ".join(err.split())
    assert "a on openai through the vendor's batch API (at its batch price); submitted " in flat
    assert f"recorded in {ledger_path(out)}" in flat
    assert "Live, at live prices: b (custom is not among the batch vendors" in flat
    assert "every critic runs live" not in flat
    assert ledger_path(out).exists()
    stats = vendor.stats()
    assert stats["requests"] == 4 and sum(stats["batches"].values()) == 1


def test_the_note_says_why_a_deepseek_critic_runs_live_without_a_custom_endpoint_hint() -> None:
    critics = [Critic(name="d", model="deepseek-chat", vendor="deepseek")]
    note = batch_mode_note(critics, BatchOptions())
    assert "every critic runs live" in note and "d (DeepSeek has no batch API)" in note
    assert "--batch-vendors" not in note  # naming deepseek there would not batch it


def test_the_note_for_a_fully_batched_panel_names_the_ledger() -> None:
    critics = [
        Critic(name="o", model="gpt-5", vendor="openai"),
        Critic(name="c", model="claude-x", vendor="anthropic"),
    ]
    note = batch_mode_note(critics, BatchOptions(ledger="run.batches.jsonl"))
    assert note == (
        "batch mode: o on openai, c on anthropic through the vendor's batch API (at its batch "
        "price); submitted batches are recorded in run.batches.jsonl"
    )
