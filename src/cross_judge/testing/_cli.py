"""The command line of the simulated vendor, ``python -m cross_judge.testing``: one
:class:`~cross_judge.testing.VendorServer` in the foreground until a signal or a time
limit.

It parses options into personas and a server and waits; everything the server does is
:mod:`._server`'s. Nothing runs at import time (:mod:`.__main__` calls :func:`main`).
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time
from typing import Any

from ._features import REFUSABLE
from ._personas import STYLES, Persona
from ._server import VendorServer

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run a :class:`VendorServer` in the foreground until SIGINT/SIGTERM or a time limit.

    Prints ``READY <port>`` on stdout (flushed) once listening, for a parent process to
    wait on. Without ``--persona`` every model name is answered (by a default persona
    seeded with that name); with it, only the listed models are, others get 404.
    """
    parser = argparse.ArgumentParser(
        prog="python -m cross_judge.testing",
        description=(
            "Run a simulated LLM vendor (OpenAI chat completions at /v1/chat/completions, "
            "Anthropic Messages at /v1/messages) on a loopback address."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="extra random seconds")
    parser.add_argument("--accuracy", type=float, default=0.9)
    parser.add_argument("--style", choices=sorted(STYLES), default="json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument(
        "--logprob-temperature",
        type=float,
        default=1.0,
        help="distorts served token probabilities: 1 calibrated, <1 over-, >1 under-confident",
    )
    parser.add_argument(
        "--thinking-tokens",
        type=int,
        default=0,
        help="tokens spent reasoning at effort high, when a request asks for reasoning",
    )
    parser.add_argument(
        "--refuse",
        action="extend",
        nargs="+",
        default=[],
        choices=sorted(REFUSABLE),
        metavar="FEATURE",
        help=f"refuse a request feature as real servers do: {', '.join(sorted(REFUSABLE))}",
    )
    parser.add_argument(
        "--error-correlation",
        type=float,
        default=0.0,
        help="in [0, 1): personas err together on hard items (0: independently)",
    )
    parser.add_argument(
        "--difficulty-seed", type=int, default=0, help="picks item difficulties and distractors"
    )
    parser.add_argument(
        "--persona",
        action="extend",
        nargs="+",
        default=[],
        metavar="MODEL",
        help="serve only these model names (repeatable)",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help="require this key (as a bearer token; as x-api-key for /v1/messages)",
    )
    parser.add_argument(
        "--capacity",
        type=int,
        default=None,
        help="answer 429 (no Retry-After, as DeepSeek does) beyond this many requests at once",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=900.0, help="stop after this long (0: no limit)"
    )
    args = parser.parse_args(argv)

    def persona(model: str) -> Persona:
        return Persona(
            model,
            accuracy=args.accuracy,
            latency=args.latency,
            jitter=args.jitter,
            style=args.style,
            seed=args.seed,
            fault_rate=args.fault_rate,
            logprob_temperature=args.logprob_temperature,
            thinking_tokens=args.thinking_tokens,
        )

    try:
        server = VendorServer(
            [persona(m) for m in dict.fromkeys(args.persona)],
            refuses=args.refuse,
            host=args.host,
            port=args.port,
            api_key=args.api_key,
            default_persona=None if args.persona else persona("default"),
            capacity=args.capacity,
            error_correlation=args.error_correlation,
            difficulty_seed=args.difficulty_seed,
        )
    except ValueError as exc:
        parser.error(str(exc))

    stop = threading.Event()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: stop.set())
    try:
        with server:
            print(f"READY {server.port}", flush=True)
            print(f"serving {server.url}", file=sys.stderr, flush=True)
            deadline = time.monotonic() + args.max_seconds if args.max_seconds > 0 else math.inf
            # Short waits keep the main thread responsive to signals on every platform.
            while not stop.is_set() and time.monotonic() < deadline:
                stop.wait(min(0.5, max(0.0, deadline - time.monotonic())))
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
