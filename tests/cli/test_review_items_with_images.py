"""`cross-judge review` of an items file with structure: image paths are relative to the
items file's folder (not the working directory), and items with messages, a trajectory and
a reference are judged, each under the id its structure gives it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from cross_judge import Item
from cross_judge.testing import VendorServer

from .conftest import ids_in, run, write_panel

pytestmark = pytest.mark.integration

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)


def test_review_reads_image_paths_relative_to_the_items_file(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tag: str,
) -> None:
    data = tmp_path / "data"
    (data / "shots").mkdir(parents=True)
    (data / "shots" / "chart.png").write_bytes(PNG)
    rows = [
        {"query": f"{tag}: the chart shows growth", "images": ["shots/chart.png"]},
        {
            "messages": [
                {
                    "role": "user",
                    "content": f"{tag}: is this chart right?",
                    "images": [{"path": "shots/chart.png"}],
                },
                {"role": "assistant", "content": "Yes, it shows growth."},
            ],
            "reference": "It shows growth.",
        },
        {
            "trajectory": [
                {"name": "plot", "arguments": {"series": "sales"}, "result": "ok"},
                {"final_answer": f"{tag}: plotted"},
            ]
        },
    ]
    items = data / "items.jsonl"
    items.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative paths must not resolve against the cwd
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "review", items, "--panel", write_panel(tmp_path, server), "--out", out
    )
    assert code == 0, err
    assert "skipped" not in err
    expected = [Item.from_value(row, base_dir=data).id for row in rows]
    assert sorted(ids_in(out)) == sorted(expected)
    assert all(item_id.startswith("item-") for item_id in expected)


def test_a_simulated_panel_reads_the_items_image_paths_relative_to_the_items_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "shots").mkdir(parents=True)
    (data / "shots" / "chart.png").write_bytes(PNG)
    rows = [{"id": f"c{n}", "query": f"chart {n}", "images": ["shots/chart.png"]} for n in range(4)]
    (data / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    gold = "".join(json.dumps({"id": f"c{n}", "label": "KEEP"}) + "\n" for n in range(4))
    (data / "gold.jsonl").write_text(gold, encoding="utf-8")
    panel = data / "panel.yaml"
    panel.write_text(
        "critics:\n"
        "  - name: careful\n"
        "    vendor: simulated\n"
        "    prompt: taxonomy-review@1\n"
        "    persona: {accuracy: 1.0, seed: 3}\n"
        "simulator:\n"
        "  items: items.jsonl\n"
        "  gold: gold.jsonl\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", data / "items.jsonl", "--panel", panel, "--out", out)
    assert code == 0, err
    assert sorted(ids_in(out)) == [f"c{n}" for n in range(4)]
