"""The response cache: storage, lazy opening, default location, concurrency, failures.

Every test works in a tmp folder; CROSS_JUDGE_CACHE_DIR points there for every test, so
nothing here can touch the real user cache.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import pickle
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from cross_judge import ConfigError, Critic, Usage
from cross_judge.critic._cache import (
    APPLICATION_ID,
    CacheStats,
    ResponseCache,
    _cache_path_for,
    default_cache_path,
    resolve_cache,
)
from cross_judge.transport import ChatRequest, Completion
from cross_judge.vendors import get_vendor, with_base_url

from ...waits import PROMPTLY_S, SAFETY_NET_S

ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "a real subcategory"}'
USAGE = Usage(prompt_tokens=420, completion_tokens=37, cache_read_tokens=128)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "default-cache"
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "responses.sqlite3"


@pytest.fixture
def cache(path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(path) as c:
        yield c


def completion(text: str = ANSWER, usage: Usage | None = USAGE) -> Completion:
    return Completion(text=text, usage=usage, model="judge-model")


def database_bytes(path: Path) -> bytes:
    """The database and its sidecar files, as SQLite leaves them on disk."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def put_sync(cache: ResponseCache, key: str, value: Completion | None = None) -> None:
    anyio.run(cache.put, key, value or completion())


def get_sync(cache: ResponseCache, key: str) -> Completion | None:
    return anyio.run(cache.get, key)


# -- storage ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_put_then_get_returns_the_text_usage_and_model(cache: ResponseCache) -> None:
    await cache.put("k1", completion())
    found = await cache.get("k1")
    assert found == Completion(text=ANSWER, usage=USAGE, model="judge-model")


@pytest.mark.anyio
async def test_get_of_an_unknown_key_is_a_miss(cache: ResponseCache) -> None:
    await cache.put("k1", completion())
    assert await cache.get("k2") is None
    assert (cache.stats().hits, cache.stats().misses) == (0, 1)


@pytest.mark.anyio
async def test_put_to_an_existing_key_keeps_the_first_answer_without_error(
    cache: ResponseCache,
) -> None:
    await cache.put("k1", completion(ANSWER))
    await cache.put("k1", completion('{"kind": "REJECT"}'))
    found = await cache.get("k1")
    assert found is not None and found.text == ANSWER
    assert (cache.stats().entries, cache.stats().writes) == (1, 1)


@pytest.mark.anyio
async def test_usage_is_kept_with_every_token_count(cache: ResponseCache) -> None:
    usage = Usage(
        prompt_tokens=1000,
        completion_tokens=50,
        total_tokens=1050,
        cache_read_tokens=900,
        cache_write_tokens=100,
    )
    await cache.put("k1", completion(usage=usage))
    found = await cache.get("k1")
    assert found is not None and found.usage == usage


@pytest.mark.anyio
async def test_an_answer_without_usage_comes_back_without_usage(cache: ResponseCache) -> None:
    await cache.put("k1", completion(usage=None))
    found = await cache.get("k1")
    assert found is not None and found.usage is None


@pytest.mark.anyio
async def test_a_completion_without_text_is_not_stored(cache: ResponseCache) -> None:
    await cache.put("k1", Completion(text=None))
    assert await cache.get("k1") is None
    assert cache.stats().writes == 0


def test_the_file_holds_the_key_hash_and_the_answer_but_not_the_request(path: Path) -> None:
    config = with_base_url(get_vendor("custom"), "http://alice:PASSWORD-77@127.0.0.1:9/v1")
    request = ChatRequest(
        model="judge-model",
        system="SYSTEM-PROMPT-TEXT",
        user="USER-ITEM-TEXT",
        temperature=0.0,
        max_tokens=50,
    )
    key = request.cache_key(config)
    with ResponseCache(path) as cache:
        put_sync(cache, key)
    data = database_bytes(path)
    for secret in (b"SYSTEM-PROMPT-TEXT", b"USER-ITEM-TEXT", b"PASSWORD-77", b"alice"):
        assert secret not in data
    with sqlite3.connect(path) as raw:
        rows = raw.execute("SELECT * FROM responses").fetchall()
        columns = [c[1] for c in raw.execute("PRAGMA table_info(responses)")]
    raw.close()
    assert columns == ["key", "text", "usage", "model", "created_at", "logprobs"]
    assert [row[:4] for row in rows] == [(key, ANSWER, USAGE.model_dump_json(), "judge-model")]
    assert len(key) == 64 and int(key, 16) >= 0


# -- stats and clear ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stats_report_entries_size_age_and_this_objects_counts(
    cache: ResponseCache, path: Path
) -> None:
    before = time.time()
    for key in ("a", "b", "c"):
        await cache.put(key, completion())
    await cache.put("a", completion())  # already there: not a write
    await cache.get("a")
    await cache.get("b")
    await cache.get("missing")
    stats = cache.stats()
    assert isinstance(stats, CacheStats)
    assert (stats.path, stats.exists, stats.entries) == (path, True, 3)
    assert (stats.hits, stats.misses, stats.writes) == (2, 1, 3)
    assert (stats.read_errors, stats.write_errors) == (0, 0)
    assert stats.hit_rate == pytest.approx(2 / 3)
    assert stats.size_bytes >= os.stat(path).st_size > 0
    assert stats.oldest is not None and stats.newest is not None
    assert before - 1 <= stats.oldest.timestamp() <= stats.newest.timestamp() <= time.time() + 1


def test_stats_of_a_missing_file_are_empty_and_create_nothing(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "nowhere" / "c.sqlite3")
    stats = cache.stats()
    assert (stats.exists, stats.entries, stats.size_bytes, stats.oldest) == (False, 0, 0, None)
    assert stats.hit_rate is None
    assert not (tmp_path / "nowhere").exists()


def test_clear_removes_every_entry_and_returns_the_count(cache: ResponseCache) -> None:
    for key in ("a", "b", "c"):
        put_sync(cache, key)
    assert cache.clear() == 3
    assert cache.stats().entries == 0
    assert get_sync(cache, "a") is None
    assert cache.clear() == 0


def test_clear_leaves_no_old_answer_in_the_file(cache: ResponseCache, path: Path) -> None:
    put_sync(cache, "a", completion("UNIQUE-OLD-ANSWER-TEXT"))
    cache.clear()
    cache.close()
    assert b"UNIQUE-OLD-ANSWER-TEXT" not in database_bytes(path)


def test_clear_of_a_missing_file_returns_0_and_creates_nothing(tmp_path: Path) -> None:
    assert ResponseCache(tmp_path / "nowhere" / "c.sqlite3").clear() == 0
    assert not (tmp_path / "nowhere").exists()


# -- lazy opening and the default location ------------------------------------------------------


def test_nothing_is_created_until_the_first_use(path: Path, cache_dir: Path) -> None:
    cache = ResponseCache(path)
    shared = resolve_cache(True)
    Critic(name="c", model="m", vendor="custom", base_url="http://127.0.0.1:9/v1", cache=True)
    assert not path.parent.exists() and not cache_dir.exists()
    assert get_sync(cache, "k") is None
    assert path.is_file()
    assert get_sync(shared, "k") is None
    assert (cache_dir / "responses.sqlite3").is_file()
    cache.close()
    shared.close()


def test_importing_the_module_creates_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CROSS_JUDGE_CACHE_DIR": str(tmp_path / "cache-dir"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    code = (
        "import cross_judge, cross_judge.critic._cache as c\n"
        "c.default_cache_path(); c.resolve_cache(True)\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, check=True)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_a_new_folder_and_file_are_private_to_the_user(path: Path) -> None:
    with ResponseCache(path) as cache:
        put_sync(cache, "k")
        assert path.parent.stat().st_mode & 0o777 == 0o700
        for file in (path, path.with_name(path.name + "-wal")):
            assert file.stat().st_mode & 0o777 == 0o600


def test_default_path_is_in_cross_judge_cache_dir_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(tmp_path / "here"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "here" / "responses.sqlite3"


def test_default_path_ignores_an_empty_cross_judge_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = _cache_path_for(sys.platform, os.environ, Path.home)
    assert default_cache_path() == expected
    assert expected.name == "responses.sqlite3" and expected.parent.name == "cross-judge"


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32", "freebsd14"])
def test_cross_judge_cache_dir_wins_on_every_platform(platform: str, tmp_path: Path) -> None:
    env = {"CROSS_JUDGE_CACHE_DIR": str(tmp_path), "XDG_CACHE_HOME": "/x", "LOCALAPPDATA": "/y"}
    path = _cache_path_for(platform, env, lambda: Path("/home/u"))
    assert path == tmp_path / "responses.sqlite3"


LIBRARY = "/home/u/Library/Caches/cross-judge/responses.sqlite3"


@pytest.mark.parametrize(
    ("platform", "env", "expected"),
    [
        ("linux", {"XDG_CACHE_HOME": "/xdg"}, "/xdg/cross-judge/responses.sqlite3"),
        ("linux", {}, "/home/u/.cache/cross-judge/responses.sqlite3"),
        ("linux", {"XDG_CACHE_HOME": "rel/cache"}, "/home/u/.cache/cross-judge/responses.sqlite3"),
        ("freebsd14", {}, "/home/u/.cache/cross-judge/responses.sqlite3"),
        ("darwin", {}, "/home/u/Library/Caches/cross-judge/responses.sqlite3"),
        (
            "darwin",
            {"XDG_CACHE_HOME": "/xdg"},
            "/home/u/Library/Caches/cross-judge/responses.sqlite3",
        ),
        (
            "win32",
            {"LOCALAPPDATA": "/appdata/local"},
            "/appdata/local/cross-judge/responses.sqlite3",
        ),
        ("win32", {}, "/home/u/AppData/Local/cross-judge/responses.sqlite3"),
    ],
    ids=[
        "linux-xdg",
        "linux-home",
        "linux-relative-xdg-ignored",
        "other-unix",
        "macos",
        "macos-ignores-xdg",
        "windows-localappdata",
        "windows-no-localappdata",
    ],
)
def test_default_path_follows_the_platform_rules(
    platform: str, env: dict[str, str], expected: str
) -> None:
    assert _cache_path_for(platform, env, lambda: Path("/home/u")) == Path(expected)


def test_default_path_without_a_home_folder_says_to_set_the_variable() -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    with pytest.raises(ConfigError, match="set CROSS_JUDGE_CACHE_DIR"):
        _cache_path_for("linux", {}, no_home)


def test_cross_judge_cache_dir_expands_the_user_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", "~/judge-cache")
    assert default_cache_path() == Path.home() / "judge-cache" / "responses.sqlite3"


# -- resolve_cache ------------------------------------------------------------------------------


def test_resolve_cache_returns_a_given_cache_itself(path: Path) -> None:
    cache = ResponseCache(path)
    assert resolve_cache(cache) is cache


def test_resolve_cache_true_is_the_default_file_shared_in_the_process(cache_dir: Path) -> None:
    first = resolve_cache(True)
    assert first.path == cache_dir / "responses.sqlite3"
    assert resolve_cache(True) is first


def test_resolve_cache_gives_one_cache_per_file_for_str_and_pathlike(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(path.parent.parent)
    relative = Path(path.parent.name) / path.name
    by_path = resolve_cache(path)
    assert resolve_cache(str(path)) is by_path
    assert resolve_cache(relative) is by_path
    assert resolve_cache(str(relative)) is by_path
    assert by_path.path == path and by_path.path.is_absolute()


def test_a_relative_cache_path_does_not_move_with_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cache = ResponseCache("rel/c.sqlite3")
    monkeypatch.chdir(tmp_path.parent)
    assert cache.path == tmp_path / "rel" / "c.sqlite3"


@pytest.mark.parametrize(
    "value",
    [1, 0.5, "", "   ", b"/tmp/c.sqlite3", ["c.sqlite3"], object()],
    ids=lambda value: type(value).__name__ if type(value) is object else repr(value),
)
def test_resolve_cache_rejects_anything_else_saying_what_it_takes(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_cache(value)
    message = str(info.value)
    assert "cache" in message and ("True" in message or "non-empty" in message)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), True, "5"])
def test_busy_timeout_must_be_a_number_of_seconds(path: Path, value: object) -> None:
    with pytest.raises(ConfigError, match="busy_timeout"):
        ResponseCache(path, busy_timeout=value)  # type: ignore[arg-type]


# -- lifecycle ----------------------------------------------------------------------------------


def test_repr_shows_the_path_and_nothing_else(path: Path) -> None:
    assert repr(ResponseCache(path)) == f"ResponseCache(path={str(path)!r})"


def test_close_releases_the_file_and_the_next_use_reopens_it(path: Path) -> None:
    cache = ResponseCache(path)
    put_sync(cache, "k")
    cache.close()
    assert not path.with_name(path.name + "-wal").exists()  # the last connection is gone
    cache.close()  # idempotent
    assert get_sync(cache, "k") is not None
    cache.close()


@pytest.mark.anyio
async def test_async_with_closes_the_cache(path: Path) -> None:
    async with ResponseCache(path) as cache:
        await cache.put("k", completion())
    assert not path.with_name(path.name + "-wal").exists()


def test_a_garbage_collected_cache_closes_its_connection(path: Path) -> None:
    cache = ResponseCache(path)
    put_sync(cache, "k")
    assert path.with_name(path.name + "-wal").exists()
    del cache
    # anyio's worker thread may hold the last call's bound method until it winds down.
    deadline = time.monotonic() + SAFETY_NET_S
    while path.with_name(path.name + "-wal").exists() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert not path.with_name(path.name + "-wal").exists()


def test_a_pickled_cache_is_a_fresh_cache_on_the_same_file(path: Path) -> None:
    with ResponseCache(path, busy_timeout=1.5) as cache:
        put_sync(cache, "k")
        get_sync(cache, "k")
        copy = pickle.loads(pickle.dumps(cache))
    with copy:
        assert (copy.path, copy.busy_timeout) == (path, 1.5)
        assert copy.stats().hits == 0
        assert get_sync(copy, "k") is not None


def test_a_critic_with_a_cache_can_be_pickled(path: Path) -> None:
    critic = Critic(name="c", model="m", vendor="custom", base_url="http://127.0.0.1:9", cache=path)
    clone = pickle.loads(pickle.dumps(critic))
    assert clone.model_dump()["cache"] == str(path)


# -- concurrency --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_many_tasks_on_one_loop_read_and_write_at_once(cache: ResponseCache) -> None:
    async def write_then_read(i: int) -> None:
        await cache.put(f"k{i}", completion(f"answer {i}"))
        found = await cache.get(f"k{i}")
        assert found is not None and found.text == f"answer {i}"

    async with anyio.create_task_group() as group:
        for i in range(300):
            group.start_soon(write_then_read, i)
    stats = cache.stats()
    assert (stats.entries, stats.writes, stats.hits, stats.write_errors) == (300, 300, 300, 0)


def test_threads_each_running_an_event_loop_share_one_cache(cache: ResponseCache) -> None:
    failures: list[BaseException] = []
    start = threading.Barrier(4, timeout=SAFETY_NET_S)

    def worker(n: int, backend: str) -> None:
        async def main() -> None:
            for i in range(200):
                await cache.put(f"{n}-{i}", completion(f"answer {n}-{i}"))
                await cache.get(f"{(n + 1) % 4}-{i}")  # another thread's, written or not

        try:
            start.wait()
            anyio.run(main, backend=backend)
        except BaseException as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=worker, args=(n, "trio" if n % 2 else "asyncio")) for n in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SAFETY_NET_S)
    assert failures == []
    stats = cache.stats()
    assert (stats.entries, stats.writes, stats.write_errors, stats.read_errors) == (800, 800, 0, 0)
    for n in range(4):
        found = get_sync(cache, f"{n}-199")
        assert found is not None and found.text == f"answer {n}-199"


def _write_from_a_process(path: str, worker: int, count: int, start: object) -> None:
    """A spawned process: wait for the others, then write ``count`` entries and read some."""

    async def main() -> int:
        async with ResponseCache(path) as cache:
            for i in range(count):
                await cache.put(f"{worker}-{i}", completion(f"answer {worker}-{i}"))
                await cache.get(f"{(worker + 1) % 4}-{i}")
            stats = cache.stats()
        return 0 if (stats.writes, stats.write_errors, stats.read_errors) == (count, 0, 0) else 3

    start.wait()  # type: ignore[attr-defined]
    sys.exit(anyio.run(main))


def test_processes_writing_one_file_at_once_lose_nothing(path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    processes = [
        context.Process(target=_write_from_a_process, args=(str(path), n, 200, start))
        for n in range(4)
    ]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(timeout=SAFETY_NET_S)
    assert [p.exitcode for p in processes] == [0, 0, 0, 0]
    with ResponseCache(path) as cache:
        assert cache.stats().entries == 800

        async def read_all() -> None:
            for n in range(4):
                for i in range(200):
                    found = await cache.get(f"{n}-{i}")
                    assert found is not None and found.text == f"answer {n}-{i}"
                    assert found.usage == USAGE

        anyio.run(read_all)


def _use_after_fork(queue: object) -> None:
    cache = _forked_cache
    try:
        assert cache is not None
        seen = get_sync(cache, "from-parent")
        put_sync(cache, "from-child")
        queue.put(seen is not None and cache.stats().writes == 1)  # type: ignore[attr-defined]
    except BaseException as exc:
        queue.put(repr(exc))  # type: ignore[attr-defined]


_forked_cache: ResponseCache | None = None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_opens_its_own_connection(path: Path) -> None:
    global _forked_cache
    context = multiprocessing.get_context("fork")
    queue = context.SimpleQueue()
    with ResponseCache(path) as cache:
        put_sync(cache, "from-parent")  # the parent's connection is open when it forks
        _forked_cache = cache
        try:
            child = context.Process(target=_use_after_fork, args=(queue,))
            child.start()
            child.join(timeout=SAFETY_NET_S)
        finally:
            _forked_cache = None
        assert child.exitcode == 0  # before get(): a child that died put nothing
        assert queue.get() is True
        assert get_sync(cache, "from-child") is not None
        assert get_sync(cache, "from-parent") is not None


# -- failures -----------------------------------------------------------------------------------


def _damage(path: Path) -> None:
    """Overwrite the schema page after the 100-byte header: the header still says it is
    a cross-judge cache, the table definitions are gone."""
    with ResponseCache(path) as cache:
        put_sync(cache, "k")
    with open(path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xde\xad\xbe\xef" * 900)


def test_a_damaged_cache_file_raises_config_error_naming_path_and_fix(path: Path) -> None:
    _damage(path)
    cache = ResponseCache(path)
    with pytest.raises(ConfigError) as info:
        get_sync(cache, "k")
    message = str(info.value)
    assert str(path) in message and "damaged" in message
    assert f"cross-judge cache clear --path {path}" in message


def test_check_reports_a_damaged_file_before_any_use(path: Path) -> None:
    _damage(path)
    with pytest.raises(ConfigError, match="damaged"):
        ResponseCache(path).check()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_acheck_opens_the_cache_and_reports_a_damaged_file(path: Path, backend: str) -> None:
    with ResponseCache(path.with_name("fresh.sqlite3")) as fresh:
        anyio.run(fresh.acheck, backend=backend)
        assert fresh.path.is_file()
    _damage(path)
    with pytest.raises(ConfigError, match="damaged"):
        anyio.run(ResponseCache(path).acheck, backend=backend)


def test_a_file_that_is_not_a_database_is_refused_and_left_untouched(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text('{"id": 1, "query": "my items, not a cache"}\n' * 10)
    before = path.read_bytes()
    with pytest.raises(ConfigError) as info:
        get_sync(ResponseCache(path), "k")
    assert str(path) in str(info.value) and "not a cross-judge response cache" in str(info.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_an_sqlite_database_of_another_program_is_not_taken_over(path: Path) -> None:
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    other.close()
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="not a cross-judge response cache"):
        ResponseCache(path).check()
    assert path.read_bytes() == before


def test_a_cache_of_a_newer_format_asks_for_an_upgrade(path: Path) -> None:
    with ResponseCache(path) as cache:
        put_sync(cache, "k")
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 7")
    raw.close()
    with pytest.raises(ConfigError) as info:
        get_sync(ResponseCache(path), "k")
    message = str(info.value)
    assert str(path) in message and "newer cross-judge" in message and "format 7" in message


def test_a_folder_as_the_cache_path_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        ResponseCache(tmp_path).check()


def test_a_cache_under_a_file_raises_config_error_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_text("x")
    path = tmp_path / "plain-file" / "c.sqlite3"
    with pytest.raises(ConfigError) as info:
        get_sync(ResponseCache(path), "k")
    assert f"cannot open the response cache {path}" in str(info.value)


def test_a_write_to_an_unusable_file_is_skipped_with_a_warning(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path.parent.mkdir(parents=True)
    path.write_text("not a database at all, and rather long " * 10)
    cache = ResponseCache(path)
    with caplog.at_level(logging.WARNING, logger="cross_judge"):
        put_sync(cache, "k")
        put_sync(cache, "k2")
    with pytest.raises(ConfigError):
        cache.stats()
    assert cache._write_errors == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0].getMessage()


def test_a_read_of_a_locked_database_is_a_counted_miss(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ResponseCache(path) as cache:
        put_sync(cache, "k")
    cache = ResponseCache(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("PRAGMA locking_mode = EXCLUSIVE")
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with caplog.at_level(logging.DEBUG, logger="cross_judge"):
            assert get_sync(cache, "k") is None  # at the first open
            assert get_sync(cache, "k") is None  # and again
    finally:
        blocker.close()
    assert get_sync(cache, "k") is not None  # the lock is gone: a hit again
    stats = cache.stats()
    assert (stats.misses, stats.read_errors, stats.hits) == (2, 2, 1)
    assert all(r.levelno == logging.DEBUG for r in caplog.records if "locked" in r.getMessage())
    cache.close()


def test_a_write_to_a_locked_database_is_skipped_and_counted(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ResponseCache(path, busy_timeout=0.05)
    put_sync(cache, "first")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a long write
    try:
        with caplog.at_level(logging.DEBUG, logger="cross_judge"):
            put_sync(cache, "second")
        assert get_sync(cache, "first") is not None  # WAL: reads do not wait for writers
    finally:
        writer.close()
    stats = cache.stats()
    assert (stats.entries, stats.writes, stats.write_errors, stats.read_errors) == (1, 1, 1, 0)
    assert [r.levelname for r in caplog.records if "write failed" in r.getMessage()] == ["DEBUG"]
    cache.close()


@pytest.mark.anyio
async def test_a_cancelled_lookup_does_not_wait_for_a_locked_database(path: Path) -> None:
    with ResponseCache(path) as seed:
        await seed.put("k", completion())
    # The lookup would wait SAFETY_NET_S for the lock; cancelled, it returns at once.
    cache = ResponseCache(path, busy_timeout=SAFETY_NET_S)
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("PRAGMA locking_mode = EXCLUSIVE")
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.perf_counter()
        with anyio.move_on_after(0.1):
            await cache.get("k")
        assert time.perf_counter() - started < PROMPTLY_S
    finally:
        blocker.close()
        await cache.aclose()  # waits for the abandoned lookup to give up


def test_an_entry_that_does_not_decode_is_a_miss_and_makes_room_for_the_next_answer(
    cache: ResponseCache, path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    put_sync(cache, "other")
    with sqlite3.connect(path, isolation_level=None) as raw:
        raw.execute(
            "INSERT INTO responses VALUES ('k', 'text', 'not json', 'm', 0, NULL)",
        )
    raw.close()
    with caplog.at_level(logging.WARNING, logger="cross_judge"):
        assert get_sync(cache, "k") is None
    assert (cache.stats().read_errors, cache.stats().misses) == (1, 1)
    assert any(str(path) in r.getMessage() for r in caplog.records)
    put_sync(cache, "k")
    found = get_sync(cache, "k")
    assert found is not None and found.text == ANSWER


def test_the_file_header_identifies_a_cross_judge_cache(cache: ResponseCache, path: Path) -> None:
    put_sync(cache, "k")
    header = path.read_bytes()[:100]
    assert header.startswith(b"SQLite format 3\x00")
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert int.from_bytes(header[60:64], "big") == 1  # user_version: the cache format
