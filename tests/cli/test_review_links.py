"""``cross-judge review`` on another name of a results file another review is writing (a
symlink, a hard link) is refused before any call: one results file, one run, whatever name
it is given."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cross_judge.batch._lock import ResultsLock
from cross_judge.testing import VendorServer

from .conftest import run, write_items, write_panel

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and flock"),
]


def _first_run(
    tmp_path: Path, server: VendorServer, tag: str, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path, Path]:
    """A finished review of three items: the items file, the panel file and OUT."""
    items = write_items(tmp_path, [{"id": f"i{n}", "query": f"{tag} {n}"} for n in range(3)])
    out = tmp_path / "out.jsonl"
    panel = write_panel(tmp_path, server)
    code, _, err = run(capsys, "review", items, "--panel", panel, "--out", out, "--no-progress")
    assert code == 0, err
    return items, panel, out


@pytest.mark.parametrize("link_kind", ["symlink", "hard link"])
def test_review_through_a_link_to_an_out_another_review_holds_is_refused(
    tmp_path: Path,
    server: VendorServer,
    capsys: pytest.CaptureFixture[str],
    tag: str,
    link_kind: str,
) -> None:
    items, panel, out = _first_run(tmp_path, server, tag, capsys)
    link = tmp_path / "link.jsonl"
    if link_kind == "symlink":
        link.symlink_to(out)
    else:
        os.link(out, link)
    more = write_items(tmp_path, [{"id": f"j{n}", "query": f"{tag} more {n}"} for n in range(3)])
    server.reset_stats()
    with ResultsLock.acquire(out, command=["cross-judge", "review", "--out", "out.jsonl"]):
        code, _, err = run(
            capsys, "review", more, "--panel", panel, "--out", link, "--resume", "--no-progress"
        )
    assert code == 2, err
    assert "another cross-judge review" in err and "--resume" in err
    assert server.stats()["requests"] == 0  # nothing judged, nothing billed
    assert items.exists()
