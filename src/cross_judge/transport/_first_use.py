"""One-off set-up at first use that keeps the calls behind it in the order they were made.

The first calls of a process or event loop wait for set-up done in a worker thread
(imports, TLS contexts, a client): see :mod:`cross_judge.critic._warmup` and
:func:`cross_judge.transport._http.import_in_worker`. A plain "skip when done, else take
the lock" lets a call that arrives just after the set-up finished overtake every call
still waiting for the lock, so a batch's first requests reach the vendor shuffled (the
first answer of each critic then belongs to a different item). A :class:`SetUpLine` keeps
them in line: while any call of the loop waits, later ones wait behind it.

It does not decide what the set-up is nor where it runs: the caller's ``work`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from anyio.lowlevel import RunVar

__all__ = ["SetUpLine"]


@dataclass
class _Line:
    lock: anyio.Lock = field(default_factory=anyio.Lock)  # fair: first come, first served
    waiting: int = 0


class SetUpLine:
    """A line for one kind of one-off set-up, one per event loop.

    ``await line.join(done, work)`` returns at once, without yielding, when ``done()`` and
    no call of this loop is in line. Otherwise the call joins the line: the first in line
    awaits ``work()`` (unless ``done()`` by then); each call leaves in the order it came,
    after the set-up. If ``work`` raises, the call that ran it gets the error and the next
    in line tries again. A call cancelled in line leaves it; the others keep their places.
    """

    __slots__ = ("_count_lock", "_lines", "_waiting")

    def __init__(self, name: str) -> None:
        self._lines: RunVar[_Line] = RunVar(f"cross_judge.first_use.{name}")
        self._waiting = 0  # calls in line on every loop: 0 lets a call skip the lookup
        self._count_lock = threading.Lock()  # loops in other threads count too

    async def join(self, done: Callable[[], bool], work: Callable[[], Awaitable[object]]) -> None:
        if not self._waiting and done():  # the hot path, once set up: two reads
            return
        try:
            line = self._lines.get()
        except LookupError:
            line = _Line()
            self._lines.set(line)
        if done() and not line.waiting:
            return
        self._count(+1)
        line.waiting += 1
        try:
            async with line.lock:
                if not done():
                    await work()
        finally:
            line.waiting -= 1
            self._count(-1)

    def _count(self, change: int) -> None:
        with self._count_lock:
            self._waiting += change
