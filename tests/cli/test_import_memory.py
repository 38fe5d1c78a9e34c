"""``cross-judge import`` reads its votes into a compact table and writes one item at a time,
in memory that grows by a few tens of bytes per vote (issue 37: it held every vote as a
pydantic model, about 5 KB a vote, and 2.1M votes reached 9.49 GB).

The command runs in a child process on generated votes files of two sizes; its peak RSS is
read from ``resource.getrusage(RUSAGE_CHILDREN)`` in a small wrapper process, so no other
child of the test run counts, and the growth per vote is measured between the two sizes
(the interpreter and the imports cancel out). No wall time decides anything.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KB is Linux's"),
    pytest.mark.slow,  # the command runs on two large files in fresh interpreters
]

SMALL, LARGE = 20_000, 100_000
MAX_BYTES_PER_VOTE = 250
"""The bound on peak RSS growth per vote: the table holds about 40 bytes a vote (four
4-byte columns, 8 for the row, the grouping's order, a third of an item's id and of its
results-summary codes). Before, the import grew by about 5,000 bytes a vote."""

VOTERS = ("ann", "bob", "cat")

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if done.returncode:
    sys.exit(done.stderr.decode(errors="replace"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def write_votes(path: Path, n: int, seed: int = 0) -> None:
    """``n`` votes of three people on ``n / 3`` items, each person's votes in turn (as each
    exports their own), with a confidence."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write("item,critic,label,confidence\n")
        for voter in VOTERS:
            for i in range(n // len(VOTERS)):
                label = rng.choice(("PASS", "FAIL"))
                out.write(f"item-{i:07d},{voter},{label},{rng.randint(50, 100) / 100}\n")


def peak_rss_kb(votes: Path, out: Path) -> int:
    command = ["import", str(votes), "--out", str(out), "--confidence", "confidence"]
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "cross_judge.cli", *command],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def test_import_memory_grows_by_a_few_tens_of_bytes_per_vote(tmp_path: Path) -> None:
    peaks = {}
    for n in (SMALL, LARGE):
        votes = tmp_path / f"votes-{n}.csv"
        write_votes(votes, n)
        peaks[n] = peak_rss_kb(votes, tmp_path / f"results-{n}.jsonl")
    per_vote = (peaks[LARGE] - peaks[SMALL]) * 1024 / (LARGE - SMALL)
    assert per_vote < MAX_BYTES_PER_VOTE
