"""The results lock holds the file itself, not one of its names: a symlink or a hard link
to a results file another review writes is refused (``cross_judge.batch._lock``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cross_judge.batch._lock import ResultsLock, ResultsLocked, lock_path

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and flock")


def test_a_symlink_to_a_held_results_file_is_refused_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    with (
        ResultsLock.acquire(out, command=["cross-judge", "review", "first"]),
        pytest.raises(ResultsLocked, match="cross-judge review first"),
    ):
        ResultsLock.acquire(link)


def test_a_symlink_to_a_results_file_not_written_yet_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)  # dangling: the first run has not created OUT yet
    with ResultsLock.acquire(out), pytest.raises(ResultsLocked):
        ResultsLock.acquire(link)
    assert not out.exists()  # taking the lock creates no results file


def test_the_lock_file_of_a_symlink_sits_beside_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    out = tmp_path / "real" / "out.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    assert lock_path(link) == lock_path(out) == tmp_path / "real" / "out.jsonl.lock"


def test_a_hard_link_to_a_held_results_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("")
    link = tmp_path / "other" / "link.jsonl"
    link.parent.mkdir()
    os.link(out, link)
    with ResultsLock.acquire(out), pytest.raises(ResultsLocked) as caught:
        ResultsLock.acquire(link)
    assert "the same file" in str(caught.value) and "--resume" in str(caught.value)
    assert not lock_path(link).exists()  # the refused run leaves no lock file behind


def test_a_hard_link_is_refused_whichever_name_locked_first(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("")
    link = tmp_path / "link.jsonl"
    os.link(out, link)
    with ResultsLock.acquire(link), pytest.raises(ResultsLocked):
        ResultsLock.acquire(out)


def test_a_results_file_created_after_the_lock_is_held_once_the_run_holds_it(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    with ResultsLock.acquire(out) as lock:
        out.write_text("")  # the run creates OUT (ResultsFile.open)
        lock.hold_results()
        link = tmp_path / "link.jsonl"
        os.link(out, link)
        with pytest.raises(ResultsLocked):
            ResultsLock.acquire(link)


def test_a_results_file_replaced_by_a_rewrite_is_held_under_both_identities(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    old_name = tmp_path / "old-link.jsonl"
    os.link(out, old_name)
    with ResultsLock.acquire(out) as lock:
        rewritten = tmp_path / "out.jsonl.tmp"
        rewritten.write_text("new\n")
        os.replace(rewritten, out)  # --retry-failed rewrites OUT by an atomic rename
        lock.hold_results()
        new_name = tmp_path / "new-link.jsonl"
        os.link(out, new_name)
        for name in (old_name, new_name):
            with pytest.raises(ResultsLocked):
                ResultsLock.acquire(name)


def test_a_released_lock_frees_every_name_of_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("")
    link = tmp_path / "link.jsonl"
    os.link(out, link)
    ResultsLock.acquire(out).release()
    with ResultsLock.acquire(link):
        pass


def test_a_fifo_given_as_the_results_file_does_not_block_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    os.mkfifo(out)  # opening it to read would wait for a writer forever
    with ResultsLock.acquire(out) as lock:
        assert lock.path.exists()


def test_a_results_file_no_run_may_write_is_left_to_the_runs_own_checks(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("")
    out.chmod(0o444)
    if os.access(out, os.W_OK):
        pytest.skip("running as a user who can write any file")
    with ResultsLock.acquire(out) as lock:
        assert lock.path.exists()
