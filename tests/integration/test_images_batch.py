"""Provider batches split by bytes: a round of large requests goes out as several batches,
each within the vendor's ``max_batch_bytes`` (and the API's own limit), checked on the
files the simulated vendor received; a killed job resumes from its ledger without
submitting (so billing) anything twice; a request alone larger than a batch fails alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest

from cross_judge import BatchOptions, Critic, Ensemble, vendors
from cross_judge.batch._provider_jobs import BATCH_ENVELOPE_BYTES
from cross_judge.errors import ErrorKind
from cross_judge.testing import Persona, VendorServer
from cross_judge.vendors import register_vendor

from ..waits import SAFETY_NET_S

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

KEY = "sk-images-batch-secret-1f2e3d4c"
VENDOR = "images-batch-sim"
MODEL = "batch-eye"
CAP = 40_000  # bytes per batch file: a few of the items below each
ITEMS = [
    {"id": f"trajectory-{n}", "query": f"step {n}: " + "tool output " * 900} for n in range(12)
]
FAST = {"poll_s": 0.01, "max_poll_s": 0.05}


@pytest.fixture
def server() -> Iterator[VendorServer]:
    saved = dict(vendors._MORE_VENDORS)
    persona = Persona(MODEL, accuracy=1.0, labels=("PASS", "FAIL"))
    with VendorServer([persona], api_key=KEY, batch_polls=2) as running:
        register_vendor(VENDOR, running.url, None, max_batch_bytes=CAP, replace_existing=True)
        try:
            yield running
        finally:  # the registry is global: later tests on this worker must not see it
            vendors._MORE_VENDORS.clear()
            vendors._MORE_VENDORS.update(saved)


def panel() -> Ensemble:
    judge = Critic(name="eye", model=MODEL, vendor=VENDOR, api_key=KEY, prompt="pass-fail@2")
    return Ensemble([judge])


def options(**kwargs: Any) -> BatchOptions:
    return BatchOptions(vendors={VENDOR}, **(FAST | kwargs))


def batch_ids(ledger: Path) -> list[str]:
    lines = (
        [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
    )
    return [line["batch_id"] for line in lines if line["event"] == "submitted"]


async def input_files(server: VendorServer, ledger: Path) -> list[tuple[int, int]]:
    """``(bytes, requests)`` of the input file of every batch the ledger recorded, as the
    vendor reports them."""
    async with openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0) as client:
        files = []
        for batch_id in batch_ids(ledger):
            batch = await client.batches.retrieve(batch_id)
            uploaded = await client.files.retrieve(batch.input_file_id)
            assert batch.request_counts is not None
            files.append((uploaded.bytes, batch.request_counts.total))
    return files


async def test_a_round_of_large_requests_goes_out_as_several_batches_within_the_cap(
    server: VendorServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "run.batches.jsonl"
    async with panel() as ensemble:
        result = await ensemble.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
    files = await input_files(server, ledger)
    assert len(files) >= 3
    assert all(size <= CAP - BATCH_ENVELOPE_BYTES for size, _ in files)
    assert sum(count for _, count in files) == len(ITEMS)  # each request in one batch
    assert server.stats()["requests"] == 0  # nothing live
    assert all(r.n_valid == 1 for r in result.verdicts)


async def test_a_killed_split_job_resumes_without_submitting_anything_again(
    tmp_path: Path,
) -> None:
    saved = dict(vendors._MORE_VENDORS)
    ledger = tmp_path / "run.batches.jsonl"
    persona = Persona(MODEL, accuracy=1.0, labels=("PASS", "FAIL"))
    try:
        with VendorServer([persona], api_key=KEY, batch_polls=10**9) as server:
            register_vendor(VENDOR, server.url, None, max_batch_bytes=CAP, replace_existing=True)
            async with panel() as ensemble, anyio.create_task_group() as group:
                group.start_soon(
                    lambda: ensemble.judge_many(ITEMS, mode="batch", batch=options(ledger=ledger))
                )
                with anyio.fail_after(SAFETY_NET_S):  # the batches are submitted at once
                    while submitted_requests(ledger) < len(ITEMS):  # noqa: ASYNC110 - a file
                        await anyio.sleep(0.01)
                group.cancel_scope.cancel()  # the job dies while its batches are pending
            made = server.stats()["batches"]["openai"]
            assert made >= 3
            server.complete_batches()
            async with panel() as ensemble:
                resumed = await ensemble.judge_many(
                    ITEMS, mode="batch", batch=options(ledger=ledger)
                )
            assert server.stats()["batches"]["openai"] == made  # nothing submitted twice
            assert server.stats()["batch_requests"]["openai"] == len(ITEMS)
            assert all(r.n_valid == 1 for r in resumed.verdicts)
    finally:
        vendors._MORE_VENDORS.clear()
        vendors._MORE_VENDORS.update(saved)


def submitted_requests(ledger: Path) -> int:
    """The requests in the batches the ledger records as submitted."""
    if not ledger.exists():
        return 0
    lines = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
    return sum(len(line["custom_ids"]) for line in lines if line["event"] == "submitted")


async def test_a_request_larger_than_a_batch_fails_alone_and_the_rest_are_judged(
    server: VendorServer,
) -> None:
    register_vendor(VENDOR, server.url, None, max_batch_bytes=CAP, replace_existing=True)
    items = [*ITEMS[:3], {"id": "huge", "query": "tool output " * 5_000}]
    async with panel() as ensemble:
        result = await ensemble.judge_many(items, mode="batch", batch=options())
    huge = result.verdicts[-1].verdicts[0]
    assert (huge.kind, huge.error_kind) == ("ERROR", ErrorKind.TOO_LARGE)
    assert "max_batch_bytes" in (huge.error or "")
    assert all(r.n_valid == 1 for r in result.verdicts[:3])
    assert server.stats()["batch_requests"]["openai"] == 3
