"""Shared by the tests of the ``cross-judge`` command (run in-process): a simulated vendor per
test module, panel and items files, running the command and reading what it wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble, Verdict
from cross_judge.batch import BatchResult, ResultsFile
from cross_judge.cli import main
from cross_judge.testing import Persona, VendorServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    default = Persona("default", labels=("KEEP", "REJECT", "SPLIT", "MERGE", "UNCLEAR"))
    with VendorServer(default_persona=default, count_items=True) as srv:
        yield srv


def write_panel(
    folder: Path,
    server: VendorServer,
    *,
    models: tuple[str, ...] = ("m-a", "m-b", "m-c"),
) -> Path:
    """A panel file in ``folder`` with one critic per model, all on ``server``."""
    critics = "".join(
        f"""
  - name: {model.removeprefix("m-")}
    model: {model}
    vendor: custom
    base_url: {server.url}
    prompt: taxonomy-review@1
    max_retries: 0"""
        for model in models
    )
    path = folder / "panel.yaml"
    path.write_text(f"voting: majority\ncritics:{critics}\n", encoding="utf-8")
    return path


def write_items(folder: Path, rows: list[object]) -> Path:
    """Rows: dicts become JSON lines, strings are written verbatim."""
    path = folder / "items.jsonl"
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """``cross-judge *argv`` in-process: its exit code, stdout and stderr."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ids_in(path: Path) -> list[str]:
    """The ids of the results in ``path``, in file order."""
    return [r.query_id for r in ResultsFile.read(path)]


@pytest.fixture
def tag(request: pytest.FixtureRequest) -> str:
    """Makes item texts unique to the test, so the shared server's counts stay apart."""
    return request.node.name


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Four stored results: two unanimous KEEP, two 2-1 splits (majority REJECT)."""
    critics = [
        Critic(name=n, model="m", vendor="custom", base_url="http://127.0.0.1:9/v1") for n in "abc"
    ]
    ensemble = Ensemble(critics)
    votes = {"u1": "KKK", "u2": "KKK", "s1": "RRK", "s2": "KRR"}
    labels = {"K": "KEEP", "R": "REJECT"}
    batch = BatchResult(
        verdicts=[
            ensemble.aggregate_verdicts(
                [
                    Verdict(kind=labels[k], confidence=0.9, critic_id=n)
                    for n, k in zip("abc", ks, strict=True)
                ],
                query_id=item,
            )
            for item, ks in votes.items()
        ],
        critics=list("abc"),
        voting="majority",
    )
    path = tmp_path / "out.jsonl"
    batch.to_jsonl(path)
    return path


@pytest.fixture(autouse=True)
def _no_registered_prices() -> Iterator[None]:
    from cross_judge import pricing

    yield
    pricing._clear_registered()  # --prices registers for the whole process
