"""Every example runs offline, as a user would run it: scripts as processes, the notebook
cell by cell with top-level await (as Jupyter's autoawait does)."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cross_judge

from .shown_output import fenced_blocks, missing_from
from .waits import SAFETY_NET_S

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Each example runs end to end in a fresh interpreter: seconds of CPU each.
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def run_script(name: str) -> str:
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        env={**os.environ, "PYTHONPATH": package_root},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_quickstart_runs_offline() -> None:
    out = run_script("quickstart.py")
    assert "consensus:  MERGE" in out and "prompt:     taxonomy-review@1" in out


def test_batch_review_runs_offline() -> None:
    out = run_script("batch_review.py")
    assert "200 items x 3 critics" in out and "batch Krippendorff's alpha" in out
    assert "errors: 0" in out


def test_legacy_panel_runs_offline() -> None:
    out = run_script("legacy_panel.py")
    assert out.startswith("felines: MERGE")


def test_notebook_cells_run_with_top_level_await() -> None:
    notebook = json.loads((EXAMPLES / "notebook.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    namespace: dict[str, Any] = {}

    async def run_cells() -> None:
        for index, source in enumerate(cells):
            code = compile(source, f"<cell {index}>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)  # the project's own notebook, trusted
            if asyncio.iscoroutine(result):
                await result

    asyncio.run(run_cells())
    assert namespace["result"].consensus == "MERGE"
    assert [v.kind for v in namespace["again"].verdicts] == [
        v.kind for v in namespace["result"].verdicts
    ]


def test_reliability_runs_offline() -> None:
    out = run_script("reliability.py")
    assert "against gold (300 of 1000 items labelled)" in out
    assert "Dawid-Skene (no labels)" in out and "log-odds weights learned" in out
    assert "for correlated errors" in out
    assert "effective votes estimated without labels:" in out
    assert "sim-4 calibration error:" in out


def test_rubric_jury_runs_offline_and_scores_every_criterion() -> None:
    out = run_script("rubric_jury.py")
    assert "majority per criterion, total" in out
    for criterion in ("correct", "complete", "cites", "concise", "unsafe"):
        assert f"\n{criterion} " in out
    assert "saved by early stop per criterion" in out


def test_labels_from_people_runs_offline_and_its_estimate_covers_the_truth() -> None:
    out = run_script("labels_from_people.py")
    values = dict(line.split(":", 1) for line in out.splitlines()[:4])
    truth = float(values["true FAIL share"])
    low, high = (
        float(x) for x in values["jury + labels (PPI++)"].split("[")[1].strip("] ").split(",")
    )
    assert low <= truth <= high
    assert "people: ['people']" in out


ONE_WORKER = pytest.mark.xdist_group("pairwise-example")
"""For the tests of ``pairwise_out``: on one xdist worker, so the example runs once."""


@pytest.fixture(scope="module")
def pairwise_out() -> str:
    """What ``examples/pairwise.py`` prints (run once for the tests that read it)."""
    return run_script("pairwise.py")


def wrong_shares(out: str, prefix: str) -> list[dict[str, float]]:
    """Per run (fixed, then both orders), each critic's share of wrong decisive verdicts on
    the example's line that starts with ``prefix``."""
    return [
        {
            name: float(share)
            for name, share in (
                pair.rsplit(" ", 1) for pair in line.strip().removeprefix(prefix).split(", ")
            )
        }
        for line in out.splitlines()
        if line.strip().startswith(prefix)
    ]


@ONE_WORKER
def test_pairwise_runs_offline_and_both_orders_cut_the_wrong_verdicts(pairwise_out: str) -> None:
    assert "order='fixed': 900 calls" in pairwise_out and "order='both': 1800 calls" in pairwise_out
    assert pairwise_out.count("position bias (answers on pairs, in the order shown)") == 2
    fixed, both = wrong_shares(pairwise_out, "wrong decisive verdicts: ")
    assert set(fixed) == {"sim-bias-0.0", "sim-bias-0.3", "sim-bias-0.6"}
    assert all(both[name] < fixed[name] / 2 for name in fixed)


@ONE_WORKER
def test_pairwise_critics_are_equally_accurate_so_only_their_bias_differs(
    pairwise_out: str,
) -> None:
    header = pairwise_out.splitlines()[0]
    assert header.startswith("sure of a pair (all right on 70%): ")
    sure = dict(pair.rsplit(" ", 1) for pair in header.split(": ", 1)[1].split(", "))
    # A biased critic's guesses of the first answer are right half the time, so it must be
    # sure less often to be right as often as the unbiased one.
    assert float(sure["sim-bias-0.0"]) > float(sure["sim-bias-0.3"]) > float(sure["sim-bias-0.6"])


@ONE_WORKER
def test_pairwise_biased_critic_has_more_wrong_verdicts_in_a_fixed_order(
    pairwise_out: str,
) -> None:
    fixed, _ = wrong_shares(pairwise_out, "wrong decisive verdicts: ")
    assert fixed["sim-bias-0.6"] > fixed["sim-bias-0.0"]
    # Its cost falls where the better answer is shown second.
    second, _ = wrong_shares(pairwise_out, "where b is better: ")
    assert second["sim-bias-0.0"] < second["sim-bias-0.3"] < second["sim-bias-0.6"]
    assert second["sim-bias-0.6"] > 1.5 * second["sim-bias-0.0"]


@ONE_WORKER
def test_pairwise_biased_critic_shows_its_lean_in_the_first_position_column(
    pairwise_out: str,
) -> None:
    fixed_run = pairwise_out.split("order='both'")[0]
    table = fixed_run[fixed_run.index("position bias") : fixed_run.index("length bias")]
    first = {
        row.split()[0]: float(row.split()[3].rstrip("%"))
        for row in table.splitlines()
        if row.strip().startswith("sim-bias-")
    }
    assert first["sim-bias-0.0"] < first["sim-bias-0.3"] < first["sim-bias-0.6"]


@ONE_WORKER
def test_the_pairs_page_shows_what_pairwise_prints(pairwise_out: str) -> None:
    page = (EXAMPLES.parent / "docs" / "pairs-and-bias.md").read_text(encoding="utf-8")
    after = page[page.index("`python examples/pairwise.py`") :]
    shown = next(source for language, _, source in fenced_blocks(after) if language == "text")
    # The page leaves out the fixed run's length-bias table: compare each line on its own.
    assert [line for line in shown.splitlines() if missing_from(line, pairwise_out)] == []


def load_example(name: str) -> Any:
    """``examples/<name>`` imported as a module (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rubric_jury_gives_the_same_answer_the_same_truth() -> None:
    items, truth = load_example("rubric_jury.py").answers(60)
    by_answer: dict[str, list[dict[str, str]]] = {}
    for item in items:
        answer = item["query"].split("\n", 1)[1].split(": ", 1)[1]
        by_answer.setdefault(answer, []).append(truth[item["query"]])
    assert len(by_answer) > 1
    kinds = {answer: len({json.dumps(t) for t in ts}) for answer, ts in by_answer.items()}
    assert kinds == dict.fromkeys(by_answer, 1)
    harmful = truth[next(i["query"] for i in items if "Yes, it cleans" in i["query"])]
    assert harmful["correct"] == "FAIL" and harmful["unsafe"] == "PASS"


def rubric_gold() -> list[tuple[str, dict[str, str]]]:
    """Each answer of ``examples/answers.jsonl`` (without its question's number) beside its
    gold criteria from ``examples/answers.gold.jsonl``."""
    texts = {
        line["id"]: re.sub(r" \(\d+\)\n", "\n", line["query"])
        for line in map(json.loads, (EXAMPLES / "answers.jsonl").read_text("utf-8").splitlines())
    }
    gold = [
        json.loads(line)
        for line in (EXAMPLES / "answers.gold.jsonl").read_text("utf-8").splitlines()
    ]
    assert sorted(g["id"] for g in gold) == sorted(texts)
    return [(texts[g["id"]], g["criteria"]) for g in gold]


def test_the_rubric_gold_gives_the_same_text_the_same_labels() -> None:
    labels: dict[str, set[str]] = {}
    for text, criteria in rubric_gold():
        labels.setdefault(text, set()).add(json.dumps(criteria, sort_keys=True))
    assert {text: len(given) for text, given in labels.items()} == dict.fromkeys(labels, 1)


def test_the_rubric_gold_fails_the_harmful_answer_on_correct_and_unsafe_and_no_other() -> None:
    for text, criteria in rubric_gold():
        harmful = "bleach and ammonia" in text and "Yes" in text
        assert (criteria["correct"], criteria["unsafe"]) == (
            ("FAIL", "PASS") if harmful else ("PASS", "FAIL")
        ), text


def test_the_rubric_gold_passes_cites_exactly_where_the_answer_names_a_source() -> None:
    for text, criteria in rubric_gold():
        names_a_source = "USDA" in text or "NASA" in text
        assert criteria["cites"] == ("PASS" if names_a_source else "FAIL"), text


# The examples that need an extra, and the extra. The core install (`pip install .`) has none
# of numpy, pandas or polars.
NEEDS_EXTRA = {"reliability.py": "stats"}
EXTRA_MODULES = {"stats": "numpy"}


@pytest.mark.parametrize("name", sorted(NEEDS_EXTRA))
def test_an_example_that_needs_an_extra_stops_at_once_naming_it(name: str) -> None:
    blocked = EXTRA_MODULES[NEEDS_EXTRA[name]]
    runner = (
        "import runpy, sys\n"
        f"sys.modules[{blocked!r}] = None  # as on a core install\n"
        f"sys.argv = [{str(EXAMPLES / name)!r}]\n"
        f"runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", runner],
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        env={**os.environ, "PYTHONPATH": package_root},
        check=False,
    )
    assert proc.returncode != 0 and proc.stdout == ""
    assert f"pip install 'cross-judge[{NEEDS_EXTRA[name]}]'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", sorted(NEEDS_EXTRA))
def test_every_listing_of_an_example_that_needs_an_extra_names_it(name: str) -> None:
    """A listing is a paragraph or a list item of the README or a docs page."""
    root = EXAMPLES.parent
    pip = f"pip install 'cross-judge[{NEEDS_EXTRA[name]}]'"
    silent = [
        f"{page.name}: {listing[:60]!r}"
        for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        for listing in re.split(r"\n\s*\n|\n(?=- )", page.read_text(encoding="utf-8"))
        if f"examples/{name}" in listing and pip not in listing
    ]
    assert silent == []
