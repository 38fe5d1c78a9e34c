"""How long a test may wait for something that normally takes well under a second.

There is no per-test alarm in this suite: an alarm fires wherever the process happens to be
(inside pytest formatting a traceback, say) and can take a whole xdist worker down with it,
and on a loaded machine it decides tests that would have passed. Instead every wait a test
makes is bounded on its own (an event with a timeout, a subprocess ``timeout=``, a polling
loop with a deadline), and ``tests/conftest.py`` puts every async test inside an
``anyio.move_on_after(SAFETY_NET_S)`` scope that fails that test alone.

``SAFETY_NET_S`` is far beyond anything a busy machine reaches (the slowest test takes
about 15 s on an idle 2-core machine; at load 10 that is a minute or two): reaching it means
a hang, never a slow machine. ``CROSS_JUDGE_TEST_SAFETY_NET_S`` overrides it, e.g. to find
a hang faster while debugging.
"""

from __future__ import annotations

import os

SAFETY_NET_S = float(os.environ.get("CROSS_JUDGE_TEST_SAFETY_NET_S", "600"))
"""Seconds a test waits for a step, a subprocess or a thread before it calls it a hang."""

PROMPTLY_S = SAFETY_NET_S / 10
"""The bound of "stops promptly" (an interrupt, a cancel, a deadline seen through): in
practice milliseconds, and a minute is beyond any stall of a loaded machine. A test that
uses it makes the path it rules out (a call that was not cancelled, a timeout that did not
fire) take ``SAFETY_NET_S``, so the bound still tells the two apart; how fast the prompt
path is, the benchmarks measure."""
