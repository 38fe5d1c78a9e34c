"""The opt-in response cache: answers of valid verdicts, kept on disk, replayed for free.

``Critic(cache=True)`` (or ``Ensemble(cache=...)``) looks every request up by
:meth:`ChatRequest.cache_key <cross_judge.transport.ChatRequest.cache_key>`, a sha256 of
everything that decides the answer and nothing else: the vendor's name and protocol, the
endpoint, the model, the system prompt, the user message, and the settings actually sent
(:meth:`~cross_judge.transport.ChatRequest.sent_settings`: temperature, max_tokens,
response format and seed on OpenAI-compatible vendors; max_tokens only on Anthropic, whose
API takes no temperature or seed). Never the API key. A hit is re-parsed and comes back
with ``cached=True`` and ``cost_usd=0``, without a request. Only answers that gave a valid
verdict are stored: errors and parse failures are asked again.

Which endpoint (:func:`~cross_judge.transport.endpoint_identity`): a remote one is its
base URL without credentials, default port or trailing slash, so ``api.openai.com`` and a
proxy in front of it, or two hosts, never share answers. A loopback one (``localhost``,
``127.0.0.0/8``, ``::1``) is identified without its host and port: a local server, the
simulated vendor of a panel file included, listens on a new port each run, and its answers
are told apart by vendor name and model. Two local servers serving different weights under
one vendor name and model name would share answers: name their models apart, or give
them separate cache files.

Keys are versioned (:data:`~cross_judge.transport.CACHE_KEY_VERSION`, part of the hashed
material): entries written under another key version are never found, never misread, and
stay until ``cache clear``. The file format (:data:`SCHEMA_VERSION`) is unchanged by a key
version, so older and newer releases can share one file.

The store is one SQLite file (stdlib :mod:`sqlite3`) in WAL mode, so several processes
(say, two ``cross-judge review`` runs) and several event loops or threads of one process
can read and write it at once. Per row it keeps the key (the hash), the answer text, the
token usage, the model id, the answer's token probabilities when the vendor sent them
(:attr:`Completion.logprobs <cross_judge.transport.Completion.logprobs>`, so that a
``confidence="logprob"`` critic's hit gives the confidence of the live call) and the time
it was stored: no prompt, no request header, no API key. A file made by a release from
before token probabilities were kept is upgraded in place on first use (a column added,
its rows kept and read back without token probabilities); that release can still share
the upgraded file. An answer or model id holding a lone surrogate (a vendor's JSON may
escape one; UTF-8 cannot encode it) is stored as a BLOB of its bytes with the surrogate kept
(``surrogatepass``) and read back as the same text; a release from before this reads such
an entry as a miss. Entries are never changed once written (``INSERT OR IGNORE``: the first answer
for a key wins, so every run reading that key replays the same answer).

What it deliberately does not do: expire or size-limit entries (``cache clear`` empties
it), cache failed calls, or work on a network file system (WAL needs shared memory
between the processes, so keep the file on a local disk).

Nothing happens at import or construction: the file (and its folder) is created or
opened on first use.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
from anyio.lowlevel import RunVar
from pydantic import BaseModel, ConfigDict, NonNegativeInt

from ..errors import ConfigError, UnusableCacheError
from ..transport import Completion, TokenLogprob
from ..verdict import Usage

__all__ = [
    "CacheStats",
    "ResponseCache",
    "UnusableCacheError",
    "database_files",
    "default_cache_path",
    "resolve_cache",
]

logger = logging.getLogger("cross_judge")

T = TypeVar("T")

CACHE_FILE_NAME = "responses.sqlite3"
CACHE_DIR_ENV = "CROSS_JUDGE_CACHE_DIR"
DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a statement waits for another connection's lock before it gives up (then a
read is a miss and a write is skipped). WAL readers never wait for writers, so in
practice only writes racing other processes' writes ever wait, for microseconds."""

SCHEMA_VERSION = 1
# PRAGMA application_id (bytes 68-71 of the file header): "CJRC". Tells our files from
# other SQLite databases, so a mistyped path is never taken over, and a damaged file that
# is ours can safely be removed by `cross-judge cache clear`.
APPLICATION_ID = 0x434A5243
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SCHEMA = """
CREATE TABLE responses (
    key TEXT PRIMARY KEY NOT NULL,  -- ChatRequest.cache_key(): sha256 hex, never the request
    text TEXT NOT NULL,             -- the answer, re-parsed on a hit
    usage TEXT,                     -- JSON of cross_judge.verdict.Usage, or NULL
    model TEXT,                     -- the model id
    created_at REAL NOT NULL,       -- when it was stored, Unix seconds
    logprobs TEXT                   -- the answer's token probabilities (JSON), or NULL
)
"""
# A rowid table with an index on key, not WITHOUT ROWID: rows are answers of a few hundred
# bytes to kilobytes, past the size where SQLite recommends WITHOUT ROWID (measured: puts
# 20% faster, the file 8% smaller, lookups the same).
_COLUMNS = "key, text, usage, model, created_at, logprobs"
# Added to a file of cache format 1 made before it existed (ALTER TABLE ADD COLUMN, rows
# kept, NULL in them). The format stays 1: a release that knows no such column names its
# columns in every statement, so it still reads and writes the upgraded file.
_ADDED_COLUMNS = {"logprobs": "TEXT"}

# SQLite result codes (the low byte of an extended code).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 11, 26

# One worker thread per event loop does the cache's SQLite calls: a cache holds one
# connection behind a lock, so more threads would only queue on it (measured: a pool of
# 2 or 4 connections with as many threads is no faster, the GIL and the thread hop
# dominate). Per loop, because a limiter belongs to the loop that created it.
_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("cross_judge_cache_threads")

_shared_lock = threading.Lock()
_shared: weakref.WeakValueDictionary[Path, ResponseCache] = weakref.WeakValueDictionary()
# Connections inherited through fork(): never used or closed in the child (SQLite forbids
# both; closing one could drop the locks of the child's own connections), just kept.
_inherited: list[sqlite3.Connection] = []


class CacheStats(BaseModel):
    """What a :class:`ResponseCache` holds, and what this process did with it.

    ``entries``, ``size_bytes`` (the database file with its ``-wal`` and ``-shm`` files),
    ``oldest`` and ``newest`` (UTC, ``None`` when empty) describe the file, shared by
    every process using it. ``hits``, ``misses``, ``writes`` (entries stored, not counting
    writes of a key already present), ``read_errors`` (lookups that failed and counted as
    misses) and ``write_errors`` (answers not stored) count this object's calls since it
    was made, in this process only.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: Path
    exists: bool
    entries: NonNegativeInt = 0
    size_bytes: NonNegativeInt = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    hits: NonNegativeInt = 0
    misses: NonNegativeInt = 0
    writes: NonNegativeInt = 0
    read_errors: NonNegativeInt = 0
    write_errors: NonNegativeInt = 0

    @property
    def hit_rate(self) -> float | None:
        """``hits / (hits + misses)``; ``None`` before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None


class _Handle:
    """The connection of one cache and the lock that guards it and the counters."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.pid = os.getpid()

    def close(self) -> None:
        with self.lock:
            conn, self.conn = self.conn, None
            if conn is not None:
                conn.close()


class ResponseCache:
    """Valid verdicts' answers in an SQLite file, shared by processes, loops and threads.

    Args:
        path: the cache file; ``None`` for :func:`default_cache_path`. A relative path is
            made absolute now, so a later ``chdir`` does not move the cache.
        busy_timeout: seconds a statement waits for a lock held by another connection
            before the read counts as a miss or the write is skipped.

    Nothing is opened here. The first :meth:`get`, :meth:`put` or :meth:`check` creates
    the folder (mode 0700) and the file (mode 0600: answers may quote the items judged)
    when missing. :meth:`close` releases the connection; using the cache again reopens
    it. A cache that is garbage-collected or alive at interpreter exit is closed then.

    Concurrency: one SQLite connection per cache object, behind a lock; the async methods
    run it on a worker thread (one per event loop), never on the event loop. Any number of
    tasks, event loops, threads and processes may use the same file at once.

    Failures: a file that is not a cross-judge cache, is damaged, is of a newer format or
    cannot be opened makes :meth:`get`, :meth:`check`, :meth:`stats` and :meth:`clear`
    raise :class:`~cross_judge.errors.ConfigError` naming the path and the fix, before any
    request is sent. A lookup that fails once the file is open (locked beyond
    ``busy_timeout``, an I/O error) is a miss, counted in ``read_errors``; a write that
    fails is skipped and counted in ``write_errors``. :meth:`put` never raises for the
    database: it runs after a billed call, whose verdict must not be lost.

    Raises:
        ConfigError: ``busy_timeout`` is not a number >= 0, or ``path`` is ``None`` and
            the user's cache folder cannot be found (set ``CROSS_JUDGE_CACHE_DIR``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)):
            raise ConfigError(f"busy_timeout must be a number of seconds, got {busy_timeout!r}")
        if not 0 <= busy_timeout < float("inf"):
            raise ConfigError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}")
        self.path: Path = default_cache_path() if path is None else _absolute(path)
        self.busy_timeout = float(busy_timeout)
        self._handle = _Handle()
        self._finalizer = weakref.finalize(self, _Handle.close, self._handle)
        self._hits = self._misses = self._writes = 0
        self._read_errors = self._write_errors = 0
        self._warned = False

    def __repr__(self) -> str:
        return f"ResponseCache(path={str(self.path)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy (pickle, multiprocessing, deepcopy) is a fresh cache on the same file:
        # connections and locks do not cross processes, and counters start at zero.
        return (_rebuild, (str(self.path), self.busy_timeout))

    # -- async API (event loop side) ---------------------------------------------------

    async def get(self, key: str) -> Completion | None:
        """The stored answer for ``key``, or ``None`` (a miss).

        Returns ``None`` too, counted in ``read_errors``, when the lookup fails once the
        file is open (locked beyond ``busy_timeout``, an I/O error) or the stored row does
        not decode (it is then deleted, so the next answer can take its place).
        Cancelling the caller does not wait for the lookup to finish.

        Raises:
            ConfigError: the file cannot be used as a cache (see the class docstring).
        """
        return await anyio.to_thread.run_sync(
            self._get_blocking, key, limiter=_thread_limiter(), abandon_on_cancel=True
        )

    async def put(self, key: str, completion: Completion) -> None:
        """Store ``completion`` (its text, usage, model and token probabilities) under ``key``.

        A key already present keeps its first answer (``INSERT OR IGNORE``), without
        error. A completion without text is not stored. Never raises for the database: a
        failed write is skipped, counted in ``write_errors`` and logged (at DEBUG when
        the file was locked beyond ``busy_timeout``, else once at WARNING).
        """
        await anyio.to_thread.run_sync(
            self._put_blocking, key, completion, limiter=_thread_limiter()
        )

    async def acheck(self) -> None:
        """:meth:`check` for async code: the opening runs on a worker thread, and an open
        cache costs no thread hop. Call it before a task group, so that an unusable file
        raises a plain :class:`~cross_judge.errors.ConfigError`, not one wrapped in an
        exception group."""
        if not self._is_open():
            await anyio.to_thread.run_sync(self.check, limiter=_thread_limiter())

    # -- sync API ----------------------------------------------------------------------

    def check(self) -> None:
        """Open the cache now (creating it if needed), so that an unusable file is
        reported before a batch starts rather than at its first item. Returns at once
        when the cache is already open. A file that another process holds locked right
        now passes unchecked; its first use checks it.

        Raises:
            ConfigError: the file cannot be used as a cache; the message says the fix.
        """
        if self._is_open():
            return
        try:
            self._locked(lambda conn: None)
        except sqlite3.Error as exc:
            if not _is_busy(exc):
                raise self._unopenable(str(exc)) from None
            # Locked by another process right now: usable, just busy.

    def stats(self) -> CacheStats:
        """Entries, size and age of the file, with this object's counters.

        A missing file is reported as empty (``exists=False``) and is not created.

        Raises:
            ConfigError: the file exists but cannot be used as a cache.
        """
        exists = self.path.exists()
        entries, oldest, newest = 0, None, None
        if exists:
            row = self._now(
                lambda conn: conn.execute(
                    "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM responses"
                ).fetchone()
            )
            entries, oldest, newest = row[0], _utc(row[1]), _utc(row[2])
        with self._handle.lock:
            counters = {
                "hits": self._hits,
                "misses": self._misses,
                "writes": self._writes,
                "read_errors": self._read_errors,
                "write_errors": self._write_errors,
            }
        return CacheStats(
            path=self.path,
            exists=exists,
            entries=entries,
            size_bytes=sum(_file_size(p) for p in database_files(self.path)),
            oldest=oldest,
            newest=newest,
            **counters,
        )

    def clear(self) -> int:
        """Remove every entry and return how many there were; a missing file is not
        created (0). The file is then compacted, where no other process is using it.

        Raises:
            ConfigError: the file exists but cannot be used as a cache. A damaged one is
                not cleared here: delete it, or run ``cross-judge cache clear``.
        """
        if not self.path.exists():
            return 0

        def delete(conn: sqlite3.Connection) -> int:
            removed = conn.execute("DELETE FROM responses").rowcount
            for statement in ("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
                try:  # shrinks the files; needs no other reader, so best effort
                    conn.execute(statement)
                except sqlite3.OperationalError as exc:
                    logger.debug("response cache %s: %s skipped: %s", self.path, statement, exc)
            return max(removed, 0)

        return self._now(delete)

    def close(self) -> None:
        """Close the connection (waiting for a statement in flight). The cache stays
        usable: the next call opens it again. Idempotent."""
        self._handle.close()

    async def aclose(self) -> None:
        """:meth:`close` on a worker thread, for async code."""
        await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ResponseCache:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- worker-thread side ------------------------------------------------------------

    def _get_blocking(self, key: str) -> Completion | None:
        try:
            row = self._locked(
                lambda conn: conn.execute(
                    "SELECT text, usage, model, logprobs FROM responses WHERE key = ?", (key,)
                ).fetchone()
            )
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return None
        if row is None:
            with self._handle.lock:
                self._misses += 1
            return None
        text, usage, model, logprobs = row
        try:
            text, model = _stored_text(text), _stored_text(model)
            if text is None:
                raise ValueError("a stored entry has no text")
            completion = Completion(
                text=text,
                usage=None if usage is None else Usage.model_validate_json(usage),
                model=model,
                logprobs=_stored_logprobs(logprobs),
            )
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            self._failed("read", exc)
            self._forget(key)
            return None
        with self._handle.lock:
            self._hits += 1
        return completion

    def _put_blocking(self, key: str, completion: Completion) -> None:
        if completion.text is None:
            return
        usage = None if completion.usage is None else completion.usage.model_dump_json()
        row = (
            key,
            _storable(completion.text),
            usage,
            _storable(completion.model),
            time.time(),
            _logprobs_json(completion.logprobs),
        )
        try:
            stored = self._locked(
                lambda conn: (
                    conn.execute(
                        f"INSERT OR IGNORE INTO responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                        row,
                    ).rowcount
                )
            )
        except (sqlite3.Error, ConfigError) as exc:
            self._failed("write", exc)
            return
        if stored > 0:
            with self._handle.lock:
                self._writes += 1

    def _forget(self, key: str) -> None:
        """Delete an entry that does not decode; best effort."""
        try:
            self._locked(lambda conn: conn.execute("DELETE FROM responses WHERE key = ?", (key,)))
        except (sqlite3.Error, ConfigError) as exc:
            logger.debug("response cache %s: could not delete a bad entry: %s", self.path, exc)

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` under the lock, opening the database first if needed.

        Raises:
            UnusableCacheError: the file cannot be opened as a cache.
            sqlite3.Error: the statement failed (busy, I/O, ...).
        """
        handle = self._current_handle()
        with handle.lock:
            if handle.conn is None:
                handle.conn = self._connect()
            return work(handle.conn)

    def _now(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`_locked` for the sync methods, whose caller wants an answer or a reason:
        every database failure becomes a :class:`ConfigError` naming the path."""
        try:
            return self._locked(work)
        except sqlite3.Error as exc:
            if _is_busy(exc):
                raise ConfigError(
                    f"the response cache {self.path} stayed locked by another connection "
                    f"for {self.busy_timeout:g} s; try again when the other run is done"
                ) from None
            raise ConfigError(f"the response cache {self.path} could not be read: {exc}") from None

    def _is_open(self) -> bool:
        handle = self._handle
        return handle.conn is not None and handle.pid == os.getpid()

    def _current_handle(self) -> _Handle:
        handle = self._handle
        if handle.pid != os.getpid():
            # A forked child: the parent's connection must not be used (or closed) here,
            # and the lock may have been copied while held.
            if handle.conn is not None:
                _inherited.append(handle.conn)
            self._finalizer.detach()
            handle = self._handle = _Handle()
            self._finalizer = weakref.finalize(self, _Handle.close, handle)
            self._hits = self._misses = self._writes = 0
            self._read_errors = self._write_errors = 0
        return handle

    def _failed(self, what: str, exc: Exception) -> None:
        """Count a failed read or write and log it: DEBUG when the file was busy (expected
        under load), WARNING the first time otherwise."""
        with self._handle.lock:
            if what == "read":
                self._read_errors += 1
                self._misses += 1
            else:
                self._write_errors += 1
            warn = not self._warned and not _is_busy(exc)
            if warn:
                self._warned = True
        if warn:
            logger.warning(
                "response cache %s: a %s failed (%s); it counts as a %s, and later failures "
                "of this cache are logged at DEBUG",
                self.path,
                what,
                exc,
                "miss" if what == "read" else "skipped write",
            )
        else:
            logger.debug("response cache %s: %s failed: %s", self.path, what, exc)

    def _connect(self) -> sqlite3.Connection:
        """Open the database, creating it and its schema if new, and check it is ours."""
        path = self.path
        if path.is_dir():
            raise UnusableCacheError(
                f"the response cache {path} is a folder; give the path of a cache file, "
                f"e.g. {path / CACHE_FILE_NAME}",
                path=path,
                removable=False,
            )
        if not path.exists():
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            except OSError as exc:
                raise self._unopenable(exc.strerror or str(exc)) from None
        try:
            conn = sqlite3.connect(
                path,
                timeout=self.busy_timeout,
                isolation_level=None,  # autocommit: one statement, one transaction
                check_same_thread=False,  # guarded by the handle's lock instead
            )
        except sqlite3.Error as exc:
            raise self._unopenable(str(exc)) from None
        try:
            self._prepare(conn)
        except sqlite3.Error as exc:
            conn.close()
            if _is_busy(exc):
                raise
            if _code(exc) in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or _damaged_message(exc):
                raise self._damaged(str(exc)) from None
            raise self._unopenable(str(exc)) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # A cache file could come from anywhere: never run SQL functions from its schema.
        conn.execute("PRAGMA trusted_schema = OFF")
        app_id, version = _identity(conn)
        if (app_id, version) != (APPLICATION_ID, SCHEMA_VERSION):
            conn.execute("BEGIN IMMEDIATE")  # one process creates the schema, others wait
            try:
                self._initialise(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.debug("response cache %s: journal mode %s (WAL unavailable)", self.path, mode)
        # In WAL mode NORMAL stays consistent; a power cut may lose the last answers only.
        conn.execute("PRAGMA synchronous = NORMAL")
        if _missing_columns(conn):
            conn.execute("BEGIN IMMEDIATE")  # one process upgrades, others wait, then see it
            try:
                for name in _missing_columns(conn):
                    conn.execute(f"ALTER TABLE responses ADD COLUMN {name} {_ADDED_COLUMNS[name]}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        conn.execute(f"SELECT {_COLUMNS} FROM responses LIMIT 0").fetchall()

    def _initialise(self, conn: sqlite3.Connection) -> None:
        app_id, version = _identity(conn)
        if app_id == 0 and version == 0:
            if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                raise self._foreign("an SQLite database of another program")
            conn.execute(_SCHEMA)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif app_id != APPLICATION_ID:
            raise self._foreign("an SQLite database of another program")
        elif version > SCHEMA_VERSION:
            raise UnusableCacheError(
                f"the response cache {self.path} was written by a newer cross-judge (cache "
                f"format {version}; this version reads format {SCHEMA_VERSION}); upgrade "
                "cross-judge, use another cache path, or delete it (it only holds cached "
                f"answers) or run: cross-judge cache clear --path {self.path}",
                path=self.path,
                removable=True,
            )
        elif version != SCHEMA_VERSION:
            raise self._damaged(f"unknown cache format {version}")

    def _damaged(self, reason: str) -> UnusableCacheError:
        if not _has_our_header(self.path):
            return self._foreign(f"not an SQLite database: {reason}")
        return UnusableCacheError(
            f"the response cache {self.path} is damaged ({reason}); it only holds cached "
            f"answers, so delete it or run: cross-judge cache clear --path {self.path}",
            path=self.path,
            removable=True,
        )

    def _foreign(self, what: str) -> UnusableCacheError:
        return UnusableCacheError(
            f"{self.path} is not a cross-judge response cache ({what}); it was left "
            f"untouched: point the cache at another file (cache=PATH, or {CACHE_DIR_ENV})",
            path=self.path,
            removable=False,
        )

    def _unopenable(self, reason: str) -> UnusableCacheError:
        return UnusableCacheError(
            f"cannot open the response cache {self.path}: {reason}; check that its folder "
            f"is writable, or point the cache at another file (cache=PATH, or "
            f"{CACHE_DIR_ENV})",
            path=self.path,
            removable=False,
        )


def _storable(text: str | None) -> str | bytes | None:
    """``text`` as SQLite can store it: itself, or, when it holds a lone surrogate (a
    vendor's JSON may escape one; UTF-8 cannot encode it), its bytes with each surrogate
    kept (``surrogatepass``), stored as a BLOB that :func:`_stored_text` reads back."""
    if text is None or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def _stored_text(value: object) -> str | None:
    """A text column as :func:`_storable` wrote it.

    Raises:
        ValueError: the value is neither text, ``None``, nor bytes that decode.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")  # a UnicodeDecodeError is a ValueError
    raise ValueError(f"a stored entry's text or model is a {type(value).__name__}")


def logprobs_as_lists(logprobs: tuple[TokenLogprob, ...] | None) -> list[Any] | None:
    """Token probabilities as plain JSON data, ``[[token, logprob, [[alt, logprob], ...]],
    ...]``, or ``None``: how the cache and the answers journal
    (:mod:`cross_judge.critic._journal`) store them. :func:`logprobs_from_lists` reads it."""
    if logprobs is None:
        return None
    return [[t.token, t.logprob, [[alt, lp] for alt, lp in t.top]] for t in logprobs]


def _logprobs_json(logprobs: tuple[TokenLogprob, ...] | None) -> str | None:
    """Token probabilities as compact JSON (:func:`logprobs_as_lists`), or ``None``. ASCII
    only (``\\uXXXX`` escapes), so a token holding a lone surrogate is stored as text and
    read back as itself."""
    triples = logprobs_as_lists(logprobs)
    return None if triples is None else json.dumps(triples, separators=(",", ":"))


def _stored_logprobs(value: object) -> tuple[TokenLogprob, ...] | None:
    """The ``logprobs`` column as :func:`_logprobs_json` wrote it (``NULL``: ``None``).

    Raises:
        ValueError: the value is not that JSON.
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise ValueError(f"a stored entry's logprobs is a {type(value).__name__}")
    data = json.loads(value)  # a JSONDecodeError is a ValueError
    if not isinstance(data, list):
        raise ValueError("a stored entry's logprobs is not a list")
    return logprobs_from_lists(data)


def logprobs_from_lists(data: object) -> tuple[TokenLogprob, ...] | None:
    """Token probabilities from what :func:`logprobs_as_lists` made (``None``: ``None``).

    Raises:
        ValueError: ``data`` is not that shape.
    """
    if data is None:
        return None
    if not isinstance(data, list):
        raise ValueError("a stored entry's logprobs is not a list")
    tokens = []
    for entry in data:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[2], list)):
            raise ValueError("a stored token is not [token, logprob, [[alt, logprob], ...]]")
        token, logprob, top = entry
        tokens.append(
            TokenLogprob(_token(token), _number(logprob), tuple(_pair(alt) for alt in top))
        )
    return tuple(tokens)


def _token(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("a stored token is not text")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("a stored logprob is not a number")
    return float(value)


def _pair(value: object) -> tuple[str, float]:
    if not (isinstance(value, list) and len(value) == 2):
        raise ValueError("a stored alternative is not [token, logprob]")
    return _token(value[0]), _number(value[1])


def _missing_columns(conn: sqlite3.Connection) -> list[str]:
    """Columns of :data:`_ADDED_COLUMNS` the ``responses`` table lacks (a file made by an
    earlier release)."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
    return [name for name in _ADDED_COLUMNS if name not in present]


def default_cache_path() -> Path:
    """Where ``cache=True`` keeps its file: ``$CROSS_JUDGE_CACHE_DIR/responses.sqlite3``
    when that variable is set (and not empty), else ``cross-judge/responses.sqlite3`` in
    the user's cache folder: ``$XDG_CACHE_HOME`` (when absolute) or ``~/.cache`` on Linux
    and other Unixes, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows.

    Read from the environment at each call; nothing is created.
    """
    return _cache_path_for(sys.platform, os.environ, Path.home)


def _cache_path_for(platform: str, environ: Mapping[str, str], home: Callable[[], Path]) -> Path:
    override = environ.get(CACHE_DIR_ENV)
    if override:
        return _absolute(os.path.join(override, CACHE_FILE_NAME))
    try:
        if platform == "win32":
            local = environ.get("LOCALAPPDATA")
            base = Path(local) if local else home() / "AppData" / "Local"
        elif platform == "darwin":
            base = home() / "Library" / "Caches"
        else:
            xdg = environ.get("XDG_CACHE_HOME")
            # The XDG spec says relative paths are invalid and must be ignored.
            base = Path(xdg) if xdg and os.path.isabs(xdg) else home() / ".cache"
    except RuntimeError as exc:  # Path.home() without HOME or a password entry
        raise ConfigError(
            f"the default response cache lives in the user's cache folder, and it cannot be "
            f"found ({exc}); set {CACHE_DIR_ENV} to a folder, or pass cache=PATH"
        ) from None
    return base / "cross-judge" / CACHE_FILE_NAME


def resolve_cache(value: object) -> ResponseCache:
    """The cache meant by a ``cache=`` argument.

    * a :class:`ResponseCache`: itself;
    * ``True``: the cache at :func:`default_cache_path`;
    * a path (``str`` or ``os.PathLike``): the cache at that file.

    For ``True`` and paths, the same file gives the same object within a process (while
    anything holds it), so every critic of a panel shares one connection and one set of
    counters. Closing that shared object is harmless: it reopens on its next use.

    Raises:
        ConfigError: any other value (``False`` and ``None`` mean "no cache" and are for
            the caller to handle), an empty path, or ``True`` where the user's cache folder
            cannot be found.
    """
    if isinstance(value, ResponseCache):
        return value
    if value is True:
        path = default_cache_path()
    elif isinstance(value, (str, os.PathLike)):
        raw = os.fspath(value)
        if not isinstance(raw, str) or not raw.strip():
            raise ConfigError(f"cache path must be a non-empty file path, got {value!r}")
        path = _absolute(raw)
    else:
        raise ConfigError(
            "cache must be True (the default cache file), a path to a cache file, a "
            f"ResponseCache, or None/False for no cache; got {type(value).__name__} {value!r}"
        )
    with _shared_lock:
        cache = _shared.get(path)
        if cache is None:
            cache = _shared[path] = ResponseCache(path)
        return cache


# -- helpers -----------------------------------------------------------------------------------


def _rebuild(path: str, busy_timeout: float) -> ResponseCache:
    return ResponseCache(path, busy_timeout=busy_timeout)


def _thread_limiter() -> anyio.CapacityLimiter:
    try:
        return _THREADS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(1)
        _THREADS.set(limiter)
        return limiter


def _absolute(path: str | os.PathLike[str]) -> Path:
    # os.path.expanduser leaves an unknown ~user as is; Path.expanduser would raise.
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def _identity(conn: sqlite3.Connection) -> tuple[int, int]:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    return int(app_id), int(version)


def _code(exc: BaseException) -> int | None:
    """The primary SQLite result code (Python >= 3.11 exposes it), else ``None``."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _is_busy(exc: BaseException) -> bool:
    """True for "database is locked/busy": another connection holds a lock; try later."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = _code(exc)
    if code is not None:
        return code in (_SQLITE_BUSY, _SQLITE_LOCKED)
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _damaged_message(exc: BaseException) -> bool:
    message = str(exc).lower()
    return "malformed" in message or "not a database" in message


def _has_our_header(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError:
        return False
    return header.startswith(_SQLITE_MAGIC) and header[68:72] == APPLICATION_ID.to_bytes(4, "big")


def database_files(path: Path) -> list[Path]:
    """The files of the cache database at ``path``: the database and its sidecars
    (``-wal``, ``-shm``, a rollback ``-journal``), whether they exist or not (removing a
    cache removes them all)."""
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _utc(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc)


# The public path of these classes (cross_judge.cache): reprs, pickles and the docs name it.
for _public in (CacheStats, ResponseCache):
    _public.__module__ = "cross_judge.cache"
del _public
