"""``cross-judge label-queue`` reads a results file in memory that grows by a couple of
hundred bytes per item (the few fields a draw reads), not by the size of each result
(issue 37: it held every result whole, about 17 KB an item with three critics: 530 MB for
30,000 items where ``stats`` took 62 MB).

Measured as tests/cli/test_stats_memory.py measures ``stats``: the command runs in a child
process on two generated files, and the growth of its peak RSS per item between them is
compared with a bound a busy machine cannot reach by noise. No wall time decides anything;
``bench/bench_label_queue.py`` prints the figure at 30,000 items.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .test_stats_memory import peak_rss_kb, write_results

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="ru_maxrss in KB is Linux's"
)

SMALL, LARGE = 500, 3_000
MAX_BYTES_PER_ITEM = 1_000
"""The bound on peak RSS growth per item: a draw keeps an id, a consensus label, two flags,
a count and a share per item (measured: about 100 to 250 bytes). Before, the command grew
by about 16,000 bytes an item on these files."""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("label-queue-memory")
    paths = {}
    for n in (SMALL, LARGE):
        paths[n] = folder / f"r{n}.jsonl"
        write_results(paths[n], n)
    return paths


def test_label_queue_memory_grows_by_a_few_hundred_bytes_per_item(
    files: dict[int, Path], tmp_path: Path
) -> None:
    page = str(tmp_path / "queue.html")
    command = ("-n", "50", "--seed", "1", "--out", page)
    small = peak_rss_kb("label-queue", str(files[SMALL]), *command)
    large = peak_rss_kb("label-queue", str(files[LARGE]), *command)
    assert (large - small) * 1024 / (LARGE - SMALL) < MAX_BYTES_PER_ITEM
    assert (
        page.endswith(".html")
        and Path(page).read_text(encoding="utf-8").count('<section class="item"') == 50
    )
