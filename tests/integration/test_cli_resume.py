"""``cross-judge review --resume``: a run killed at any moment continues where it stopped,
judging (and billing) nothing twice except the calls that were in flight (the answers that
had arrived are kept in the answers journal: ``test_cli_resume_journal.py`` counts them).

The review runs as a real process (``python -m cross_judge.cli``) against a simulated vendor
started here, and is stopped with SIGKILL or SIGINT half-way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import cross_judge
from cross_judge.batch import ResultsFile
from cross_judge.cli import main
from cross_judge.testing import Persona, Reply, VendorServer

from ..waits import SAFETY_NET_S

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

PACKAGE_ROOT = str(Path(cross_judge.__file__).resolve().parents[1])
CONCURRENCY = 8
CRITICS = ("m-a", "m-b", "m-c")
WAIT_S = SAFETY_NET_S  # an upper bound for waits that normally take well under a second


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    persona = Persona("default", latency=0.05, labels=("KEEP", "REJECT", "SPLIT", "MERGE"))
    with VendorServer(default_persona=persona, count_items=True) as srv:
        yield srv


def write_inputs(folder: Path, server: VendorServer, texts: list[str]) -> tuple[Path, Path]:
    items = folder / "items.jsonl"
    items.write_text(
        "".join(json.dumps({"id": f"id-{n}", "query": t}) + "\n" for n, t in enumerate(texts)),
        encoding="utf-8",
    )
    critics = "".join(
        f"\n  - name: {m}\n    model: {m}\n    vendor: custom\n    base_url: {server.url}"
        "\n    prompt: taxonomy-review@1"
        for m in CRITICS
    )
    panel = folder / "panel.yaml"
    panel.write_text(f"critics:{critics}\n", encoding="utf-8")
    return items, panel


def review_args(items: Path, panel: Path, out: Path) -> list[str]:
    return [
        "review",
        str(items),
        "--panel",
        str(panel),
        "--out",
        str(out),
        "--concurrency",
        str(CONCURRENCY),
        "--no-progress",
    ]


@contextlib.contextmanager
def running_review(folder: Path, args: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m cross_judge.cli *args`` as a child process, killed (if still running) on
    the way out. Output goes to files, not pipes: a child blocked on a full pipe would never
    finish."""
    with (
        open(folder / "stdout.txt", "wb") as stdout,
        open(folder / "stderr.txt", "wb") as stderr,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-m", "cross_judge.cli", *args],
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=WAIT_S)


def wait_for_lines(out: Path, proc: subprocess.Popen[bytes], lines: int, folder: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= lines:
            return
        if proc.poll() is not None:
            err = (folder / "stderr.txt").read_text(errors="replace")
            pytest.fail(f"review exited with {proc.returncode} before {lines} results:\n{err}")
        time.sleep(0.01)
    pytest.fail(f"review did not write {lines} results within {WAIT_S} s")


def wait_until_idle(server: VendorServer) -> None:
    """Wait until the server has answered or dropped everything a killed client sent (a
    request can still sit in a socket buffer after its sender died): nothing in flight and
    the per-item counts unchanged over a short settle period."""
    deadline = time.monotonic() + WAIT_S
    last = None
    while time.monotonic() < deadline:
        counts = server.item_requests()
        if not server.stats()["in_flight"] and counts == last:
            return
        last = counts
        time.sleep(0.05)


def complete_ids(out: Path) -> list[str]:
    """Ids of the complete lines of ``out`` (a line torn by a kill is ignored)."""
    data = out.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    return [json.loads(line)["query_id"] for line in complete.splitlines() if line.strip()]


def test_killed_review_resumes_without_judging_anything_twice(
    tmp_path: Path, server: VendorServer
) -> None:
    texts = [f"kill-resume candidate {n}" for n in range(200)]
    items, panel = write_inputs(tmp_path, server, texts)
    out = tmp_path / "out.jsonl"
    args = review_args(items, panel, out)

    with running_review(tmp_path, args) as first:
        wait_for_lines(out, first, 100, tmp_path)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=WAIT_S)
    wait_until_idle(server)
    done_at_kill = set(complete_ids(out))
    before = {t: server.item_requests().get(t, 0) for t in texts}
    assert 0 < len(done_at_kill) < len(texts)

    with running_review(tmp_path, [*args, "--resume"]) as second:
        code = second.wait(timeout=WAIT_S)
    assert code == 0, (tmp_path / "stderr.txt").read_text()
    after = server.item_requests()

    ids = [r.query_id for r in ResultsFile.read(out)]
    assert Counter(ids) == Counter(f"id-{n}" for n in range(len(texts)))
    text_of = {f"id-{n}": t for n, t in enumerate(texts)}
    assert all(after[text_of[i]] == before[text_of[i]] for i in done_at_kill)
    judged_twice = {t for t in texts if before[t] > 0 and after[t] > before[t]}
    assert len(judged_twice) <= CONCURRENCY
    assert not judged_twice & {text_of[i] for i in done_at_kill}
    assert all(after[t] == before[t] + len(CRITICS) for t in texts if before[t] == 0)


def test_ctrl_c_exits_130_leaving_valid_resumable_results(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = [f"ctrl-c candidate {n}" for n in range(200)]
    items, panel = write_inputs(tmp_path, server, texts)
    out = tmp_path / "out.jsonl"
    args = review_args(items, panel, out)

    with running_review(tmp_path, args) as proc:
        wait_for_lines(out, proc, 10, tmp_path)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=WAIT_S)
    err = (tmp_path / "stderr.txt").read_text()
    assert code == 130, err
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    assert out.read_bytes().endswith(b"\n")
    written = [r.query_id for r in ResultsFile.read(out)]  # every line a valid result
    assert 0 < len(written) < len(texts)

    assert main([*args, "--resume"]) == 0
    capsys.readouterr()
    ids = [r.query_id for r in ResultsFile.read(out)]
    assert Counter(ids) == Counter(f"id-{n}" for n in range(len(texts)))


def test_resume_repairs_a_torn_last_line_and_judges_that_item_again(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = [f"torn-line candidate {n}" for n in range(6)]
    items, panel = write_inputs(tmp_path, server, texts)
    out = tmp_path / "out.jsonl"
    args = review_args(items, panel, out)
    assert main(args) == 0
    lines = out.read_bytes().splitlines(keepends=True)
    torn_id = json.loads(lines[-1])["query_id"]
    out.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    capsys.readouterr()
    before = server.item_requests()

    assert main([*args, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "torn last line" in err
    ids = [r.query_id for r in ResultsFile.read(out)]
    assert Counter(ids) == Counter(f"id-{n}" for n in range(len(texts)))
    after = server.item_requests()
    requested = {t for t in texts if after[t] > before[t]}
    assert requested == {texts[int(torn_id.removeprefix("id-"))]}


def test_a_second_review_of_the_same_out_exits_2_naming_the_first_and_sends_nothing(
    tmp_path: Path, server: VendorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = [f"lock candidate {n}" for n in range(20)]
    items, panel = write_inputs(tmp_path, server, texts)
    panel.write_text(panel.read_text().replace("model: m-", "model: lock-m-"))
    hanging = [f"lock-{m}" for m in CRITICS]
    for model in hanging:  # the first review's calls never end, so it keeps the lock
        server.always(model, Reply.hang())
    out = tmp_path / "out.jsonl"
    args = review_args(items, panel, out)
    try:
        with running_review(tmp_path, args) as first:
            deadline = time.monotonic() + WAIT_S
            while server.stats()["in_flight"] < CONCURRENCY * len(CRITICS):
                assert first.poll() is None, (tmp_path / "stderr.txt").read_text()
                assert time.monotonic() < deadline, "the first review never got going"
                time.sleep(0.01)
            requests = server.stats()["requests"]

            code = main([*args, "--resume"])
            err = capsys.readouterr().err

            assert code == 2
            assert f"{out} is being written by another cross-judge review (pid {first.pid} " in err
            assert "Wait for it to finish" in err and "--resume" in err
            assert server.stats()["requests"] == requests  # the second one sent nothing
            first.send_signal(signal.SIGKILL)  # dies holding the lock: no clean release
            first.wait(timeout=WAIT_S)
    finally:
        for model in hanging:
            server.always(model, None)
    wait_until_idle(server)
    assert (tmp_path / "out.jsonl.lock").exists()

    assert main([*args, "--resume"]) == 0  # a dead holder's lock does not block
    capsys.readouterr()
    assert Counter(r.query_id for r in ResultsFile.read(out)) == Counter(
        f"id-{n}" for n in range(len(texts))
    )
