"""``cross-judge stats`` and ``cross-judge report`` read a results file in one pass, in
memory that grows by a few bytes per item, not by the size of each result (issue 26:
both used to hold every result, about 12 KB an item with three critics).

Each command runs in a child process on a generated file of N items; its peak RSS is read
from ``resource.getrusage(RUSAGE_CHILDREN)`` in a small wrapper process, so no other
child of the test run counts. The growth per item is measured between two sizes (the
fixed cost of the interpreter and the imports cancels out). No wall time decides anything.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KB is Linux's"),
    pytest.mark.slow,  # each test runs the command on two large files in fresh interpreters
]

SMALL, LARGE = 4_000, 20_000
MAX_BYTES_PER_ITEM = 100
"""The bound on peak RSS growth per item of what the one pass holds: 2 bytes per critic and
item and 2 for the consensus (measured: about 25 bytes, with the transient lists a
statistic builds at the end). Before, both commands grew by about 12,000 bytes an item on
these files."""

CRITICS = ("careful", "lenient", "reasoner")
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
REASONING = "The item is consistent with {label}; " + "the rest of the reasoning runs on. " * 12

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if done.returncode:
    sys.exit(done.stderr.decode(errors="replace"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def write_results(path: Path, n: int, seed: int = 0) -> None:
    """``n`` results of three critics as ``cross-judge review`` writes them (about 2.5 KB
    a line: raw text and reasoning included), written as JSON lines directly."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            truth = rng.choice(LABELS)
            verdicts = []
            for j, critic in enumerate(CRITICS):
                label = truth if rng.random() < 0.9 - 0.1 * j else rng.choice(LABELS)
                reasoning = REASONING.format(label=label)
                verdicts.append(
                    {
                        "kind": label,
                        "confidence": round(rng.random(), 2),
                        "reasoning": reasoning,
                        "critic_id": critic,
                        "raw_response": json.dumps({"kind": label, "reasoning": reasoning}),
                        "elapsed_s": 0.01,
                        "usage": {"prompt_tokens": 300, "completion_tokens": 25},
                        "model": f"sim-{critic}",
                        "vendor": "custom",
                    }
                )
            counts = {label: sum(v["kind"] == label for v in verdicts) for label in LABELS}
            consensus = max(LABELS, key=lambda label: counts[label])
            fallback = counts[consensus] < 2
            record = {
                "query_id": f"item-{i}",
                "verdicts": verdicts,
                "consensus": "UNCLEAR" if fallback else consensus,
                "fallback": fallback,
                "agreement_pct": counts[consensus] / 3,
                "disagreement": counts[consensus] < 3,
                "voting": "majority",
                "n_valid": 3,
                "item": {"query": f"Is item {i} well placed? " + "x" * 200, "context": {}},
            }
            out.write(json.dumps(record) + "\n")


def peak_rss_kb(*command: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "cross_judge.cli", *command],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("memory")
    paths = {}
    for n in (SMALL, LARGE):
        paths[n] = folder / f"r{n}.jsonl"
        write_results(paths[n], n)
    return paths


def growth_per_item(files: dict[int, Path], *command: str) -> float:
    small = peak_rss_kb(*command[:1], str(files[SMALL]), *command[1:])
    large = peak_rss_kb(*command[:1], str(files[LARGE]), *command[1:])
    return (large - small) * 1024 / (LARGE - SMALL)


def test_stats_memory_grows_by_a_few_bytes_per_item(files: dict[int, Path], tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"  # with gold, the effective votes need no model fit
    gold.write_text("".join(f'{{"id": "item-{i}", "label": "KEEP"}}\n' for i in range(50)))
    assert growth_per_item(files, "stats", "--gold", str(gold)) < MAX_BYTES_PER_ITEM


def test_stats_memory_with_the_model_of_the_effective_votes_grows_by_a_few_bytes_per_item(
    files: dict[int, Path],
) -> None:
    # Without gold the effective votes fit the correlated-errors model: on each distinct
    # vote pattern once, weighted by its items, not on an items x critics matrix.
    assert growth_per_item(files, "stats") < MAX_BYTES_PER_ITEM


def test_report_memory_grows_by_a_few_bytes_per_item(
    files: dict[int, Path], tmp_path: Path
) -> None:
    out = str(tmp_path / "page.html")
    per_item = growth_per_item(files, "report", "--out", out, "--max-items", "100")
    assert per_item < MAX_BYTES_PER_ITEM


def test_report_lists_at_most_max_items_disputed_items_and_counts_the_rest(
    files: dict[int, Path], tmp_path: Path
) -> None:
    out = tmp_path / "page.html"
    peak_rss_kb("report", str(files[SMALL]), "--out", str(out), "--max-items", "100")
    page = out.read_text(encoding="utf-8")
    table = page.split('<table id="disputed-table">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 1 + 100  # the header row and 100 items
    assert "Showing the first 100 of " in page
