"""The first call's one-off set-up, done in a worker thread so that it never stalls the loop.

``import cross_judge`` stays cheap by deferring work to first use; the first ``judge()`` of
a process pays for it. Run on the event loop, that work stalled every other task for
0.1-1.6 s (asyncio's dev mode reports each such step), so what the call path would do on
first use is done here, in a worker thread, before the call path gets to it:

* the shipped price table: importing PyYAML and parsing ``prices.yaml`` (every call looks
  its model's price up);
* the OpenTelemetry API, when it is installed (the first span imports it);
* tenacity, which the retry policy imports on the first retry of a process (often a
  first call: a 429 at the start of a batch).

The HTTP side is set up by the transports, off the loop too: the session of the
chat-completions path by :func:`cross_judge.transport._pool.ready_session`, the Anthropic
SDK and its pool by :func:`cross_judge.transport._anthropic.prepare`.

:func:`warm_up` runs once per process. Concurrent first calls on one event loop share one
worker thread and go on in the order they came
(:class:`~cross_judge.transport._first_use.SetUpLine`); on several loops at once each may
start one, and the work itself runs once (a process-wide lock). It deliberately does
nothing that could fail for a user's reason: a broken price table or OpenTelemetry install
is left for the call path to report, where it reports it today.
"""

from __future__ import annotations

import importlib
import logging
import threading

import anyio
import anyio.to_thread

from .. import _otel
from ..pricing import prices_as_of
from ..transport import SetUpLine

__all__ = ["warm_up", "warmed_up"]

logger = logging.getLogger("cross_judge")

_done = False
_work_lock = threading.Lock()
_line = SetUpLine("warm_up")


def warmed_up() -> bool:
    """True once this process's first-call set-up has run."""
    return _done


async def warm_up() -> None:
    """Do the first call's one-off set-up (see the module docstring) in a worker thread.

    Once per process: afterwards it returns at once, without a thread or an await that
    yields (calls still in line on this loop keep their places: a latecomer waits behind
    them). Cancelling it returns at once; the set-up finishes in its thread.
    """

    async def set_up_in_a_thread() -> None:
        await anyio.to_thread.run_sync(_set_up, abandon_on_cancel=True)

    await _line.join(warmed_up, set_up_in_a_thread)


def _set_up() -> None:
    global _done
    with _work_lock:
        if _done:
            return
        for step in (prices_as_of, _import_otel, _import_tenacity):
            try:
                step()
            except Exception as exc:  # reported where the call path meets it, as before
                logger.debug("first-call set-up left %s to the call: %r", step.__name__, exc)
        _done = True


def _import_otel() -> None:
    if _otel.available:
        importlib.import_module("opentelemetry.trace")


def _import_tenacity() -> None:
    importlib.import_module("tenacity")
