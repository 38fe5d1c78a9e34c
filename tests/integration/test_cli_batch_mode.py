"""``cross-judge review --mode batch``: the panel's calls go through the simulated vendor's
batch endpoints, the submitted batches are recorded beside OUT, and a run killed with
SIGKILL while its batches are pending resumes with ``--resume`` without losing an item or
submitting a batch twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import cross_judge
from cross_judge.batch import BatchResult
from cross_judge.cli import main
from cross_judge.cli._review import ledger_path
from cross_judge.testing import Persona, VendorServer

from ..waits import SAFETY_NET_S

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])
MODELS = ("cb-a", "cb-b", "cb-c")
N_ITEMS = 60
WAIT_S = SAFETY_NET_S  # an upper bound for waits that normally take well under a second


@pytest.fixture
def server() -> Iterator[VendorServer]:
    # Batches end only when the test says so (complete_batches), never by polls.
    with VendorServer([Persona(m, accuracy=0.8) for m in MODELS], batch_polls=10**9) as srv:
        yield srv


def write_inputs(folder: Path, server: VendorServer) -> tuple[Path, Path]:
    items = folder / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"id {n}/x", "query": f"batch-mode candidate {n}"}) + "\n"
            for n in range(N_ITEMS)
        ),
        encoding="utf-8",
    )
    critics = "".join(
        f"\n  - name: {m}\n    model: {m}\n    vendor: custom\n    base_url: {server.url}"
        "\n    prompt: taxonomy-review@1"
        for m in MODELS
    )
    panel = folder / "panel.yaml"
    panel.write_text(f"critics:{critics}\n", encoding="utf-8")
    return items, panel


def args(items: Path, panel: Path, out: Path, *extra: str) -> list[str]:
    return [
        "review",
        str(items),
        "--panel",
        str(panel),
        "--out",
        str(out),
        "--no-progress",
        "--mode",
        "batch",
        "--batch-vendors",
        "custom",
        "--poll",
        "0.01",
        *extra,
    ]


def batches(server: VendorServer) -> int:
    return sum(server.stats()["batches"].values())


def submitted(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    return sum(json.loads(line)["event"] == "submitted" for line in ledger.read_text().splitlines())


def test_review_in_batch_mode_writes_every_result_and_records_its_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    with VendorServer([Persona(m, accuracy=0.8) for m in MODELS], batch_polls=2) as server:
        items, panel = write_inputs(tmp_path, server)
        assert main(args(items, panel, out)) == 0
    results = BatchResult.from_jsonl(out)
    assert len(results) == N_ITEMS and all(r.n_valid == 3 for r in results.verdicts)
    assert server.stats()["requests"] == 0
    assert submitted(ledger_path(out)) == len(MODELS)  # one batch per model
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text())
    options = manifest["runs"][-1]["options"]
    assert options["mode"] == "batch" and options["batch_vendors"] == ["custom"]


def test_a_review_killed_while_polling_resumes_without_losing_or_resubmitting(
    tmp_path: Path, server: VendorServer
) -> None:
    items, panel = write_inputs(tmp_path, server)
    out = tmp_path / "out.jsonl"
    ledger = ledger_path(out)
    with (
        open(tmp_path / "stderr.txt", "wb") as stderr,
        subprocess.Popen(
            [sys.executable, "-m", "cross_judge.cli", *args(items, panel, out)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
        ) as first,
    ):
        try:
            deadline = time.monotonic() + WAIT_S
            while submitted(ledger) < len(MODELS):
                assert first.poll() is None, (tmp_path / "stderr.txt").read_text()
                assert time.monotonic() < deadline, "no batch was recorded in time"
                time.sleep(0.01)
            first.send_signal(signal.SIGKILL)  # while its batches are pending
        finally:
            if first.poll() is None:
                first.kill()
            first.wait(timeout=WAIT_S)
    assert batches(server) == len(MODELS)
    assert not out.exists() or out.read_text() == ""  # nothing was back yet
    server.complete_batches()
    assert main([*args(items, panel, out), "--resume"]) == 0
    assert batches(server) == len(MODELS)  # picked up, not submitted again
    assert sum(server.stats()["batch_requests"].values()) == N_ITEMS * len(MODELS)
    ids = [r.query_id for r in BatchResult.from_jsonl(out).verdicts]
    assert sorted(ids) == sorted(f"id {n}/x" for n in range(N_ITEMS))  # each once, none lost


def test_batch_options_without_batch_mode_are_a_usage_error(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    items, panel = write_inputs(tmp_path, server)
    out = tmp_path / "out.jsonl"
    command = ["review", str(items), "--panel", str(panel), "--out", str(out), "--deadline", "60"]
    assert main(command) == 2
    assert "--mode batch" in capsys.readouterr().err
    assert not out.exists()
