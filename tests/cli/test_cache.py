"""The ``cross-judge`` command, run in-process: ``cache stats | clear``: what it shows, when
it asks, and the files it never touches."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from .conftest import run

pytestmark = pytest.mark.integration


# -- cache --------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default cache location, inside the test's tmp folder (never the user's)."""
    folder = tmp_path / "cache-dir"
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(folder))
    return folder


def fill_cache(path: Path, entries: int) -> None:
    import anyio

    from cross_judge.critic._cache import ResponseCache
    from cross_judge.transport import Completion

    async def fill() -> None:
        async with ResponseCache(path) as cache:
            for i in range(entries):
                await cache.put(f"key-{i}", Completion(text=f"answer {i}", model="m"))

    anyio.run(fill)


def entries_in(path: Path) -> int:
    from cross_judge.critic._cache import ResponseCache

    with ResponseCache(path) as cache:
        return cache.stats().entries


def test_cache_stats_prints_the_file_entries_and_size(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 3)
    code, stdout, _ = run(capsys, "cache", "stats", "--path", path)
    assert code == 0
    assert f"response cache: {path}" in stdout
    assert re.search(r"entries\s+3\b", stdout)
    assert re.search(r"size on disk\s+[\d.]+ kB", stdout)
    assert "oldest entry" in stdout and "newest entry" in stdout
    assert not cache_dir.exists()


def test_cache_stats_reads_the_default_cache_in_cross_judge_cache_dir(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill_cache(cache_dir / "responses.sqlite3", 2)
    code, stdout, _ = run(capsys, "cache", "stats")
    assert code == 0 and str(cache_dir / "responses.sqlite3") in stdout
    assert re.search(r"entries\s+2\b", stdout)


def test_cache_stats_of_a_missing_cache_says_so_and_creates_nothing(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(capsys, "cache", "stats")
    assert code == 0 and "no response cache at" in stdout
    assert not cache_dir.exists()


def test_cache_stats_of_a_damaged_file_exits_2_with_the_fix(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 1)
    with open(path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff" * 3000)
    code, _, err = run(capsys, "cache", "stats", "--path", path)
    assert code == 2 and err.startswith("cross-judge: error:")
    assert "damaged" in err and f"cross-judge cache clear --path {path}" in err


def test_cache_clear_yes_removes_every_entry(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = cache_dir / "responses.sqlite3"
    fill_cache(path, 4)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, stdout, _ = run(capsys, "cache", "clear", "--yes")
    assert code == 0 and f"removed 4 cached answers from {path}" in stdout
    assert entries_in(path) == 0


def test_cache_clear_without_yes_on_a_pipe_exits_2_and_removes_nothing(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 2)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    code, _, err = run(capsys, "cache", "clear", "--path", path)
    assert code == 2
    assert "cross-judge: error:" in err and "pass --yes" in err
    assert entries_in(path) == 2


def test_cache_clear_on_a_terminal_asks_and_clears_on_yes(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 2)
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    code, stdout, err = run(capsys, "cache", "clear", "--path", path)
    assert code == 0
    assert f"Remove all 2 cached answers from {path}? [y/N]" in err
    assert "removed 2 cached answers" in stdout
    assert entries_in(path) == 0


@pytest.mark.parametrize("answer", ["n\n", "\n", "", "yes please\n"], ids=repr)
def test_cache_clear_on_a_terminal_keeps_everything_unless_the_answer_is_yes(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 2)
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    code, _, err = run(capsys, "cache", "clear", "--path", path)
    assert code == 1 and "nothing removed" in err
    assert entries_in(path) == 2


def test_cache_clear_removes_a_damaged_cache_file(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "mine.sqlite3"
    fill_cache(path, 1)
    with open(path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff" * 3000)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, stdout, _ = run(capsys, "cache", "clear", "--path", path, "--yes")
    assert code == 0 and f"removed the unusable response cache {path}" in stdout
    assert list(tmp_path.glob("mine.sqlite3*")) == []
    fill_cache(path, 1)  # a new cache can take its place
    assert entries_in(path) == 1


def test_cache_clear_never_touches_a_file_that_is_not_a_cache(
    tmp_path: Path,
    cache_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "1", "query": "Felines"}\n' * 20, encoding="utf-8")
    before = path.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, "cache", "clear", "--path", path, "--yes")
    assert code == 2 and "not a cross-judge response cache" in err
    assert path.read_bytes() == before


def test_cache_clear_of_a_missing_cache_creates_nothing(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, stdout, _ = run(capsys, "cache", "clear", "--yes")
    assert code == 0 and "nothing to clear" in stdout
    assert not cache_dir.exists()


def test_cache_without_an_action_prints_help_and_exits_2(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "cache")
    assert code == 2 and "stats" in err and "clear" in err
