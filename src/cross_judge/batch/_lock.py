"""An exclusive lock on a results file, so that two ``cross-judge review`` runs never write
(and bill) the same OUT at once.

The lock is a file beside the results, ``OUT.lock``, holding who took it (pid, host, start
time, command line) as JSON, for the error message of a run that finds it taken. The
exclusion itself comes from the operating system, not from the file's existence: an
advisory lock held on the open lock file for the whole run (``fcntl.flock`` on POSIX,
``msvcrt.locking`` on one byte on Windows). The OS drops it when the process ends, however
it ends (Ctrl-C, a crash, SIGKILL), so a lock file left by a dead run never blocks the
next one: it is simply taken over. A clean release also removes the file.

A results file has other names than the one a run is given: a symlink to it, a hard link.
So the lock is the file's, not the name's. ``OUT.lock`` sits beside the file a symlink
points to (``link.jsonl`` -> ``out.jsonl`` locks ``out.jsonl.lock``, whether or not OUT
exists yet), and on POSIX the results file itself is locked by its identity (device and
inode) as soon as it exists: at :meth:`ResultsLock.acquire` when it does, else once the run
has created it (:meth:`ResultsLock.hold_results`, before anything is billed). A rewrite that
replaces OUT by an atomic rename (``--retry-failed``) gives it a new identity, which the run
locks the same way, keeping the old one. Two runs on two names of one file then never both
run: the second is refused, whichever name it was given. On Windows only the symlink case
is covered (hard links to a results file are not detected there).

Where the file system has no working locks (some network mounts answer ``ENOLCK``), the
run goes on unlocked and :attr:`ResultsLock.warning` says so, rather than refusing to run
at all. Only cross-judge honours the lock: it does not stop other programs editing OUT.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ResultsLocked

__all__ = ["ResultsLock", "ResultsLocked", "lock_path"]

# Windows locks byte ranges, and a locked byte cannot be read by others: lock one far past
# the holder's JSON, which the run that finds the lock taken must read.
_WINDOWS_LOCK_OFFSET = 1 << 30
_ATTEMPTS = 20  # a lock file replaced under us (a run releasing it) is retried this often
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


def lock_path(results: Path) -> Path:
    """``results.jsonl`` -> ``results.jsonl.lock``; for a symlink, beside the file it points
    to (followed to the end, whether or not that file exists yet), so every symlink to one
    results file shares one lock file."""
    if results.is_symlink():
        results = Path(os.path.realpath(results))
    return results.with_name(results.name + ".lock")


class ResultsLock:
    """The lock of one results file, held until :meth:`release` (or the end of ``with``).

    ``path`` is the lock file; ``warning`` says why the run goes on unlocked, if it does.
    """

    def __init__(
        self, path: Path, fd: int | None, warning: str | None = None, *, results: Path | None = None
    ) -> None:
        self.path = path
        self.warning = warning
        self._fd = fd
        self._results = results
        self._held: dict[tuple[int, int], int] = {}  # identity of a results file -> its fd

    @classmethod
    def acquire(cls, results: Path, *, command: Sequence[str] = ()) -> ResultsLock:
        """Take the lock of ``results`` at once, or raise.

        Raises:
            ResultsLocked: another process holds it; the message names that process (pid,
                host, start time, command) and how to proceed.
            OSError: the lock file cannot be created (e.g. the folder is read-only).
        """
        path = lock_path(results)
        for _ in range(_ATTEMPTS):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                held = _try_lock(fd)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in _UNSUPPORTED:
                    raise
                return cls(
                    path,
                    None,
                    warning=f"cannot lock {results} ({exc.strerror or exc}: the file system "
                    "has no working locks); make sure no other review writes to it",
                )
            if not _still_at(fd, path):
                # A run releasing the lock removed this file between our open and our lock:
                # what we hold (or failed to get) is no longer the lock. Start again.
                os.close(fd)
                continue
            if not held:
                holder = _read_holder(fd)
                os.close(fd)
                raise ResultsLocked(_locked_message(results, holder), holder)
            _write_holder(fd, command)
            lock = cls(path, fd, results=results)
            try:
                lock.hold_results()
            except BaseException:
                lock.release()
                raise
            return lock
        raise ResultsLocked(
            f"{results}: its lock file {path} keeps being replaced; another review is "
            "starting or stopping on it right now: try again in a moment",
            {},
        )

    def hold_results(self) -> None:
        """Lock the results file by its identity (device and inode), if it exists and is
        not held yet; earlier identities stay held. Call it once the run has created the
        file, or replaced it by an atomic rewrite, before anything is billed. Does nothing
        on Windows, or when the run goes on unlocked (:attr:`warning`).

        Raises:
            ResultsLocked: another process holds this file, under another name (a hard
                link made to it); this lock is left as it was.
            OSError: the results file exists but cannot be opened or locked (other than
                for lack of lock support, or of permission to write it: no run could).
        """
        results = self._results
        if results is None or self._fd is None or sys.platform == "win32":
            return
        try:
            # Opened for writing, as file systems that emulate flock with fcntl locks (NFS)
            # need for an exclusive lock; O_NONBLOCK: a FIFO given as OUT must not block.
            fd = os.open(results, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return  # not created yet: a hard link needs a file, a symlink shares OUT.lock
        except (IsADirectoryError, PermissionError):
            return  # no run can write it: the run's own checks say so
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # not a results file: the run refuses it
                os.close(fd)
                return
            identity = (info.st_dev, info.st_ino)
            mine = self._held.get(identity)
            if mine is not None:
                # Already held: lock it again through the same descriptor, which changes
                # nothing where flock is native and re-takes a lock a file system emulating
                # flock with fcntl locks drops when the process closes another descriptor.
                os.close(fd)
                fd = mine
            try:
                held = _try_lock(fd)
            except OSError as exc:
                if exc.errno not in _UNSUPPORTED:
                    raise
                held = True  # a file system without locks: the lock file is all there is
            if not held:
                raise ResultsLocked(_linked_message(results), {})
        except BaseException:
            if fd not in self._held.values():
                os.close(fd)
            raise
        self._held[identity] = fd

    def release(self) -> None:
        """Release the lock and remove its file; idempotent."""
        held, self._held = self._held, {}
        for results_fd in held.values():
            os.close(results_fd)  # closing drops its lock
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if sys.platform == "win32":
            # Windows cannot remove an open file: close (which unlocks) first. Another run
            # may take the lock in between, and then the removal fails: that is harmless.
            os.close(fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        # Removed while still locked, so that no run can lock this file and then see it
        # vanish (runs check the file they locked is still at the path).
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)

    def __enter__(self) -> ResultsLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _try_lock(fd: int) -> bool:
    """Lock ``fd`` without waiting: True if taken, False if another process holds it.
    Other failures (no lock support) raise ``OSError``."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EDEADLOCK):
                return False
            raise
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except PermissionError:  # EACCES: some systems' "held by another"
        return False
    return True


def _still_at(fd: int, path: Path) -> bool:
    """True if the file open as ``fd`` is the one at ``path`` now."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    if not mine.st_ino:  # a file system without inode numbers: nothing to compare
        return True
    return (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)


def _write_holder(fd: int, command: Sequence[str]) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(command),
    }
    data = (json.dumps(holder) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)


def _read_holder(fd: int) -> dict[str, Any]:
    """What the holder recorded; empty if it has not written it yet or it is unreadable."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 65536)
        holder = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _linked_message(results: Path) -> str:
    return (
        f"{results} is the same file as one another cross-judge review is writing under "
        "another name (a hard link to it). Two runs on one results file would judge and "
        "bill every item twice. Wait for that run to finish, then run this command again "
        "with --resume to continue its results; or write to another --out. A run that has "
        "ended, however it ended, holds no lock."
    )


def _locked_message(results: Path, holder: dict[str, Any]) -> str:
    if holder:
        who = (
            f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
            f"{holder.get('started_at', '?')}"
        )
        if holder.get("command"):
            who += f": {holder['command']}"
        stop = f" (or stop it: kill {holder['pid']})" if isinstance(holder.get("pid"), int) else ""
    else:
        who, stop = "a process that has just started", ""
    return (
        f"{results} is being written by another cross-judge review ({who}). Two runs on "
        "one results file would judge and bill every item twice. Wait for it to finish"
        f"{stop}, then run this command again with --resume to continue its results; or "
        "write to another --out. A run that has ended, however it ended, holds no lock."
    )
