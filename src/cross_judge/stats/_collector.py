"""Pausing the cyclic garbage collector around work that makes many objects that live on.

Reading a large run, or rebuilding one result per item of a big batch, makes millions of
small containers that hold no cycle: the collections they set off while being made scan
them, and every older object, again and again to free nothing (a third of a large run's
read, a third of a back-to-back re-vote). Reference counting still frees every temporary;
whatever cycle is made meanwhile is collected once the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collection_paused"]


@contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside (unless it was off already: then it stays
    off), on again after, even when the block raises."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
