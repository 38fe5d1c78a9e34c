"""``cross-judge stats --gold --fit-confidence``: per critic the calibration error before and
after, and ``calibration:`` lines that, pasted into the panel file, give the critics the
fitted calibrations; and ``review --resume`` refusing a panel whose calibration changed."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cross_judge import BatchResult, Ensemble, Verdict
from cross_judge.cli import main
from cross_judge.cli._fit_confidence import calibration_snippet
from cross_judge.panel_file import load_panel
from cross_judge.stats._reliability import ConfidenceCalibration, calibrate_confidence
from cross_judge.testing import Reply, VendorServer

pytestmark = pytest.mark.integration

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
PANEL = Ensemble(critics=[])
ANSWER = '{{"kind": "KEEP", "confidence": {conf}, "reasoning": "fine"}}'


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def judged(
    folder: Path, critics: dict[str, tuple[float, float, float] | float], n: int = 200
) -> tuple[Path, Path, dict[str, str]]:
    """``n`` items judged by critics ``{name: (accuracy, low, high)}`` stating confidences
    drawn from ``[low, high]`` (or ``{name: accuracy}``: stating none); the first 60% are
    labelled. Returns the results file, the gold file and the gold labels."""
    rng = random.Random(11)
    results, gold = [], {}
    for i in range(n):
        truth = rng.choice(LABELS)
        verdicts = []
        for name, spec in critics.items():
            accuracy = spec if isinstance(spec, float) else spec[0]
            right = rng.random() < accuracy
            kind = truth if right else rng.choice([x for x in LABELS if x != truth])
            if isinstance(spec, float):
                verdicts.append(Verdict(kind=kind, critic_id=name, confidence_stated=False))
            else:
                conf = rng.uniform(spec[1], spec[2])
                verdicts.append(Verdict(kind=kind, critic_id=name, confidence=conf))
        results.append(PANEL.aggregate_verdicts(verdicts, query_id=f"q{i}"))
        if i < n * 0.6:
            gold[f"q{i}"] = truth
    out, gold_file = folder / "out.jsonl", folder / "gold.jsonl"
    BatchResult(verdicts=results, critics=list(critics), voting="majority").to_jsonl(out)
    gold_file.write_text(
        "".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in gold.items()), "utf-8"
    )
    return out, gold_file, gold


TWO_CRITICS: dict[str, tuple[float, float, float] | float] = {
    "honest": (0.8, 0.5, 0.95),
    "inflated": (0.6, 0.9, 1.0),
}


def snippet(stdout: str) -> str:
    return stdout[stdout.index("# fitted by cross-judge stats") :]


# -- stats --fit-confidence ---------------------------------------------------------------------


def test_fit_confidence_without_gold_exits_2_saying_it_needs_gold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, _ = judged(tmp_path, TWO_CRITICS, n=10)
    code, stdout, err = run(capsys, "stats", out, "--fit-confidence", "temperature")
    assert code == 2 and stdout == ""
    assert "--fit-confidence needs --gold" in err and '{"id", "label"}' in err


def test_fit_confidence_takes_only_the_two_methods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = judged(tmp_path, TWO_CRITICS, n=10)
    code, _, err = run(capsys, "stats", out, "--gold", gold, "--fit-confidence", "platt")
    assert code == 2 and "invalid choice: 'platt'" in err


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
def test_fit_confidence_prints_each_critics_error_before_and_after_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str
) -> None:
    out, gold, labels = judged(tmp_path, TWO_CRITICS)
    code, stdout, err = run(capsys, "stats", out, "--gold", gold, "--fit-confidence", method)
    assert code == 0, err
    fits = calibrate_confidence(out, labels, method=method)  # type: ignore[arg-type]
    table = stdout[stdout.index(f"confidence calibration ({method})") : stdout.index("# fitted")]
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.strip()}
    for name, fit in fits.items():
        assert rows[name][1:5] == [
            str(fit.n),
            "votes",
            f"{fit.ece_before:.3f}",
            f"{fit.ece_after:.3f}",
        ]
    assert fits["inflated"].ece_after < fits["inflated"].ece_before / 2
    assert "in-sample, so it flatters" in " ".join(table.split())
    flat = " ".join(err.split())
    assert "measured on the labelled items the calibration was fitted on, so it flatters" in flat
    assert "Fit on one labelled set, then check on another" in flat


@pytest.mark.parametrize("method", ["temperature", "isotonic"])
def test_the_printed_lines_pasted_into_the_panel_give_the_fitted_calibrations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str
) -> None:
    out, gold, labels = judged(tmp_path, TWO_CRITICS)
    code, stdout, _ = run(capsys, "stats", out, "--gold", gold, "--fit-confidence", method)
    assert code == 0
    # Paste: each critic's "calibration:" line goes under that critic, beside its model.
    lines = snippet(stdout).splitlines()
    pasted = {
        name.rstrip(":"): line.strip()
        for name, line in itertools.pairwise(lines)
        if line.startswith("  calibration: ")
    }
    assert list(pasted) == ["honest", "inflated"]
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        "critics:\n"
        + "".join(
            f"  - name: {name}\n    model: m-{name}\n    vendor: custom\n"
            f"    base_url: http://127.0.0.1:9/v1\n    {line}\n"
            for name, line in pasted.items()
        ),
        encoding="utf-8",
    )
    ensemble = load_panel(panel).build()
    assert isinstance(ensemble, Ensemble)
    fits = calibrate_confidence(out, labels, method=method)  # type: ignore[arg-type]
    assert {c.name: c.calibration for c in ensemble.critics} == fits


def test_a_critic_that_stated_no_confidence_is_named_and_the_others_still_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, gold, _ = judged(tmp_path, {**TWO_CRITICS, "silent": 0.7})
    code, stdout, err = run(capsys, "stats", out, "--gold", gold, "--fit-confidence", "temperature")
    assert code == 1
    flat = " ".join(err.split())
    assert "no calibration for critic 'silent': none of its 120 labelled verdicts stated" in flat
    assert list(yaml.safe_load(snippet(stdout))) == ["honest", "inflated"]
    gold_table = stdout[stdout.index("against gold") : stdout.index("confidence calibration")]
    assert "silent 0 of 120" in " ".join(gold_table.split())


def test_a_critic_whose_error_the_fit_does_not_lower_is_named_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "fair" is right on exactly 6 of its 10 answers at 0.6 and 9 of 10 at 0.9: its ECE is
    # already 0, and the best temperature is 1. "inflated" says 0.95 and is right half the time.
    results, gold = [], {}
    for i in range(20):
        conf = 0.6 if i < 10 else 0.9
        fair_right = (i % 10) < (6 if i < 10 else 9)
        verdicts = [
            Verdict(kind="KEEP" if fair_right else "REJECT", critic_id="fair", confidence=conf),
            Verdict(kind="KEEP" if i % 2 else "REJECT", critic_id="inflated", confidence=0.95),
        ]
        results.append(PANEL.aggregate_verdicts(verdicts, query_id=f"q{i}"))
        gold[f"q{i}"] = "KEEP"
    out, gold_file = tmp_path / "out.jsonl", tmp_path / "gold.jsonl"
    BatchResult(verdicts=results, critics=["fair", "inflated"], voting="majority").to_jsonl(out)
    gold_file.write_text("".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in gold.items()))
    code, stdout, err = run(
        capsys, "stats", out, "--gold", gold_file, "--fit-confidence", "temperature"
    )
    assert code == 0
    flat = " ".join(err.split())
    assert "critic 'fair': temperature scaling did not lower its calibration error even on" in flat
    assert (
        "(0.000 -> 0.000); leave it uncalibrated" in flat
        and "try --fit-confidence isotonic" in flat
    )
    assert "critic 'inflated'" not in flat
    assert list(yaml.safe_load(snippet(stdout))) == ["fair", "inflated"]


def test_the_snippet_is_yaml_keyed_by_critic_name_and_reads_back_every_number_exactly() -> None:
    tiny = ConfidenceCalibration(
        method="isotonic", breakpoints=(0.0, 1e-06, 0.5), values=(1e-07, 0.3, 0.9), n=2,
        ece_before=0.1 + 0.2, ece_after=5e-324,
    )  # fmt: skip
    hot = ConfidenceCalibration(
        method="temperature", temperature=19.999999999999996, n=3, ece_before=1.0, ece_after=0.0
    )
    names = {"on": tiny, "a: b": hot, "plain-name_1.x": hot}
    read = yaml.safe_load(calibration_snippet(names, "isotonic", "out.jsonl"))
    assert list(read) == list(names)
    for name, fit in names.items():
        assert set(read[name]) == {"calibration"}
        assert ConfidenceCalibration.from_dict(read[name]["calibration"]) == fit


# -- review --resume with a changed calibration -------------------------------------------------


@pytest.fixture(scope="module")
def vendor() -> Iterator[VendorServer]:
    with VendorServer() as srv:
        srv.always("m-cal", Reply.content(ANSWER.format(conf=0.9)))
        yield srv


def write_review(folder: Path, vendor: VendorServer, temperature: float) -> tuple[Path, Path]:
    items = folder / "items.jsonl"
    items.write_text(
        "".join(json.dumps({"id": f"i{n}", "query": f"item {n}"}) + "\n" for n in range(3)),
        encoding="utf-8",
    )
    panel = folder / "panel.yaml"
    panel.write_text(
        "critics:\n"
        "  - name: a\n"
        "    model: m-cal\n"
        "    vendor: custom\n"
        f"    base_url: {vendor.url}\n"
        "    prompt: taxonomy-review@1\n"
        "    max_retries: 0\n"
        "    calibration:\n"
        "      method: temperature\n"
        f"      temperature: {temperature}\n"
        "      n: 200\n"
        "      ece_before: 0.21\n"
        "      ece_after: 0.04\n",
        encoding="utf-8",
    )
    return items, panel


def test_review_applies_the_panel_files_calibration_to_each_verdict(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items, panel = write_review(tmp_path, vendor, 2.0)
    out = tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out, "--no-progress")[0] == 0
    fit = load_panel(panel).critics[0].to_critic().calibration
    assert isinstance(fit, ConfidenceCalibration)
    verdicts = [r.verdicts[0] for r in BatchResult.from_jsonl(out).verdicts]
    assert {(v.confidence, v.stated_confidence) for v in verdicts} == {(fit.apply(0.9), 0.9)}


def test_review_resume_with_a_changed_calibration_is_refused_naming_it(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items, panel = write_review(tmp_path, vendor, 2.0)
    out = tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out, "--no-progress")[0] == 0
    before = out.read_bytes()
    panel.write_text(panel.read_text().replace("temperature: 2.0", "temperature: 3.0"))

    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")

    assert code == 2
    flat = " ".join(err.split())
    assert "--resume with a changed panel" in flat
    assert "critics: 'a' calibration " in flat and '"temperature": 3.0' in flat
    assert out.read_bytes() == before


def test_review_resume_with_the_same_calibration_is_not_a_panel_change(
    tmp_path: Path, vendor: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items, panel = write_review(tmp_path, vendor, 2.0)
    out = tmp_path / "out.jsonl"
    assert run(capsys, "review", items, "--panel", panel, "--out", out, "--no-progress")[0] == 0
    # The same mapping written in flow style, with keys in another order.
    text = panel.read_text()
    block = text[text.index("    calibration:") :]
    panel.write_text(
        text.replace(
            block,
            "    calibration: {ece_after: 0.04, n: 200, method: temperature, "
            "temperature: 2.0, ece_before: 0.21, bins: 10}\n",
        )
    )
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--resume")
    assert code == 0, err
    assert "changed panel" not in err
