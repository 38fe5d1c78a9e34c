"""Every example runs offline, as a user would run it: scripts as processes, the notebook
cell by cell with top-level await (as Jupyter's autoawait does)."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cross_judge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

pytestmark = pytest.mark.integration


def run_script(name: str) -> str:
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
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


def test_pairwise_runs_offline_and_both_orders_cut_the_wrong_verdicts() -> None:
    out = run_script("pairwise.py")
    assert "order='fixed': 900 calls" in out and "order='both': 1800 calls" in out
    assert out.count("position bias (answers on pairs, in the order shown)") == 2
    fixed, both = (
        {
            name: float(share)
            for name, share in (
                pair.rsplit(" ", 1)
                for pair in line.removeprefix("wrong decisive verdicts: ").split(", ")
            )
        }
        for line in out.splitlines()
        if line.startswith("wrong decisive verdicts: ")
    )
    assert all(both[name] < fixed[name] / 2 for name in fixed)


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
        timeout=120,
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
