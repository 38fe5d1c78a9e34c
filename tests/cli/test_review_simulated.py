"""``cross-judge review`` dry runs on a panel file's simulated critics: told the user's gold
labels, a persona scores its accuracy against them; told the pairs' better answers, a
pairwise dry run gives decisive verdicts and shows each persona's position bias; and the
run manifest records what the simulator knew (``options.simulator``), so ``stats`` can say
when simulated critics had no gold.

Answers are seeded by the texts, so every outcome here is deterministic; the statistical
bounds allow 4.5 binomial standard errors (a chance failure after a text changes has odds
of about 1 in 150,000 per check).
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cross_judge.batch import BatchResult
from cross_judge.report._manifest import manifest_path
from cross_judge.testing import Persona, pairwise_rates

from .conftest import run, write_items

pytestmark = pytest.mark.integration

TOLERANCE_SE = 4.5
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")


def write_gold(folder: Path, labels: dict[str, str]) -> Path:
    path = folder / "gold.jsonl"
    rows = [{"id": i, "label": label} for i, label in labels.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_panel(folder: Path, text: str) -> Path:
    path = folder / "panel.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def simulator_record(out: Path) -> Any:
    runs = json.loads(manifest_path(out).read_text(encoding="utf-8"))["runs"]
    return runs[-1]["options"]["simulator"]


def test_a_dry_run_told_the_users_gold_scores_the_personas_accuracy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [{"id": f"c{n}", "query": f"Candidate category {n}"} for n in range(200)]
    write_items(tmp_path, items)
    gold = write_gold(tmp_path, {f"c{n}": LABELS[(n * 3 + n // 7) % 4] for n in range(200)})
    panel = write_panel(
        tmp_path,
        """\
        critics:
          - name: careful
            vendor: simulated
            prompt: taxonomy-review@1
            persona: {accuracy: 0.9, seed: 5}
        simulator:
          items: items.jsonl          # relative to this file
          gold: gold.jsonl            # the file given to cross-judge stats --gold
        """,
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", tmp_path / "items.jsonl", "--panel", panel, "--out", out)
    assert code == 0, err
    accuracy = BatchResult.from_jsonl(out).against(gold)["careful"].accuracy
    assert accuracy is not None
    assert abs(accuracy - 0.9) <= TOLERANCE_SE * math.sqrt(0.9 * 0.1 / 200)
    record = simulator_record(out)
    assert record["gold"] is True and record["gold_items"] == 200
    assert record["gold_file"] == str(gold.resolve())


def test_the_manifest_says_when_simulated_critics_had_no_gold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_items(tmp_path, [{"id": "x", "query": "Felines"}])
    panel = write_panel(tmp_path, "critics:\n  - {name: a, vendor: simulated}\n")
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", tmp_path / "items.jsonl", "--panel", panel, "--out", out)
    assert code == 0, err
    record = simulator_record(out)
    assert record["gold"] is False and record["critics"] == ["a"]
    assert record["personas"]["a"]["accuracy"] == 0.9


PAIRS = 100
FAIR = Persona("sim-fair", accuracy=0.5, position_bias=0.0)
BIASED = Persona("sim-biased", accuracy=0.5, position_bias=1.0)


def test_a_pairwise_dry_run_told_the_better_answers_shows_each_personas_position_bias(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs, labels = [], {}
    for n in range(PAIRS):  # the better answer is a in half the pairs, b in the others
        good, poor = f"Rayleigh scattering, take {n}.", f"The sea reflects, take {n}."
        a, b = (good, poor) if n % 2 else (poor, good)
        pairs.append({"id": f"p{n}", "query": "Why is the sky blue?", "a": a, "b": b})
        labels[f"p{n}"] = "A" if n % 2 else "B"
    write_items(tmp_path, pairs)
    write_gold(tmp_path, labels)
    panel = write_panel(
        tmp_path,
        f"""\
        order: both
        critics:
          - name: fair
            vendor: simulated
            model: sim-fair
            prompt: pairwise
            persona: {{accuracy: {FAIR.accuracy}, position_bias: {FAIR.position_bias}}}
          - name: biased
            vendor: simulated
            model: sim-biased
            prompt: pairwise
            persona: {{accuracy: {BIASED.accuracy}, position_bias: {BIASED.position_bias}}}
        simulator: {{items: items.jsonl, gold: gold.jsonl}}
        """,
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", tmp_path / "items.jsonl", "--panel", panel, "--out", out)
    assert code == 0, err

    batch = BatchResult.from_jsonl(out)
    verdicts = [v for r in batch.verdicts for v in r.verdicts]
    assert len(verdicts) == 2 * PAIRS and all(v.error is None for v in verdicts)
    # Both orders agreeing on the better answer: a decisive verdict, not a tie by flip.
    expected_agree = 1 - pairwise_rates(FAIR).flip
    decisive = sum(v.kind != "TIE" for v in verdicts if v.critic_id == "fair")
    assert decisive >= PAIRS * expected_agree - TOLERANCE_SE * math.sqrt(
        PAIRS * expected_agree * (1 - expected_agree)
    )
    bias = batch.position_bias().critics
    for name, persona in (("fair", FAIR), ("biased", BIASED)):  # 0.5 and 0.75 expected
        expected = pairwise_rates(persona).first_position
        measured, decisive = bias[name].first_position, bias[name].decisive
        assert expected is not None and measured is not None
        assert bias[name].answers == 2 * PAIRS  # each pair in both orders
        assert abs(measured - expected) <= TOLERANCE_SE * math.sqrt(
            expected * (1 - expected) / decisive
        )
    fair, biased = bias["fair"].first_position, bias["biased"].first_position
    assert fair is not None and biased is not None and biased - fair > 0.1
    code, stdout, _ = run(capsys, "stats", out)
    assert code == 0 and "position bias" in stdout


def review_simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str], simulator: str) -> Path:
    items = [{"id": f"c{n}", "query": f"Candidate category {n}"} for n in range(20)]
    write_items(tmp_path, items)
    write_gold(tmp_path, {f"c{n}": LABELS[n % 4] for n in range(20)})
    panel = write_panel(
        tmp_path,
        "critics:\n"
        "  - {name: careful, vendor: simulated, prompt: taxonomy-review@1}\n"
        "  - {name: lenient, vendor: simulated, prompt: taxonomy-review@1}\n" + simulator,
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "review", tmp_path / "items.jsonl", "--panel", panel, "--out", out)
    assert code == 0, err
    return out


def test_stats_says_simulated_critics_had_no_gold_and_what_their_accuracy_is_worth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = review_simulated(tmp_path, capsys, "")
    code, stdout, _ = run(capsys, "stats", out, "--gold", tmp_path / "gold.jsonl")
    flat = " ".join(stdout.split())
    assert code == 0
    assert "careful, lenient were simulated without gold" in flat
    assert "the accuracy against --gold below is chance agreement" in flat
    assert "simulator: {items: ITEMS.jsonl, gold: GOLD.jsonl}" in flat


def test_stats_says_nothing_of_gold_when_the_simulator_was_given_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = review_simulated(tmp_path, capsys, "simulator: {items: items.jsonl, gold: gold.jsonl}\n")
    code, stdout, _ = run(capsys, "stats", out, "--gold", tmp_path / "gold.jsonl")
    flat = " ".join(stdout.split())
    assert code == 0 and "careful, lenient are simulated" in flat
    assert "without gold" not in flat


def test_a_batch_read_from_a_manifest_without_the_simulator_record_knows_nothing_of_gold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = review_simulated(tmp_path, capsys, "")
    manifest = manifest_path(out)
    document = json.loads(manifest.read_text(encoding="utf-8"))
    for past_run in document["runs"]:  # as a manifest of an earlier release has it
        del past_run["options"]["simulator"]
    manifest.write_text(json.dumps(document), encoding="utf-8")
    batch = BatchResult.from_jsonl(out)
    assert batch.simulated_critics == ["careful", "lenient"]
    assert batch.simulated_without_gold == []
