"""``cross-judge stats --gold``: every accuracy with its Wilson interval, and the critics and
the consensus compared pairwise on the same gold items (exact McNemar, Holm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cross_judge.stats import mcnemar_exact, wilson_interval

from .conftest import run


def write_gold(tmp_path: Path) -> Path:
    """Against the ``results`` fixture (u1 KKK, u2 KKK, s1 RRK, s2 KRR): a right on 2 of 4,
    b on 3, c on 4, the consensus (KEEP, KEEP, REJECT, REJECT) on 3."""
    path = tmp_path / "gold.jsonl"
    labels = {"u1": "KEEP", "u2": "KEEP", "s1": "KEEP", "s2": "REJECT"}
    path.write_text(
        "".join(json.dumps({"id": i, "label": g}) + "\n" for i, g in labels.items()),
        encoding="utf-8",
    )
    return path


def test_stats_gold_prints_each_accuracy_with_its_wilson_interval(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "stats", results, "--gold", write_gold(tmp_path))
    assert code == 0
    low, high = wilson_interval(2, 4)  # type: ignore[misc]
    assert f"0.500 [{low:.3f}, {high:.3f}]" in stdout
    assert "accuracy [95% Wilson score interval]" in " ".join(stdout.split())


def test_stats_gold_compares_critics_pairwise_with_mcnemar_and_holm(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "stats", results, "--gold", write_gold(tmp_path))
    assert code == 0
    flat = " ".join(stdout.split())
    assert "paired comparisons on the same gold items" in flat
    # c right where a is wrong on s1 and s2, never the other way.
    assert "c vs a 4 +0.500" in flat
    row = flat.split("c vs a 4 +0.500")[1].split()
    assert row[2:5] == ["2", "0", f"{mcnemar_exact(2, 0):.3g}"]
    assert "Holm" in flat


def test_stats_gold_ci_sets_the_wilson_level(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "stats", results, "--gold", write_gold(tmp_path), "--ci", "0.9")
    assert code == 0
    low, high = wilson_interval(2, 4, 0.9)  # type: ignore[misc]
    assert f"0.500 [{low:.3f}, {high:.3f}]" in stdout
    assert "accuracy [90% Wilson score interval]" in " ".join(stdout.split())
