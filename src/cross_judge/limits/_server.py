"""The shared limit's server: :class:`LimitServer`, and ``python -m cross_judge.shared_limit``.

A :class:`LimitServer` hosts one :class:`~cross_judge.shared_limit.PermitBroker` and
answers exchanges over TCP (the protocol of :mod:`cross_judge.limits._wire`) from a thread
of its own, so that processes on one or several machines share one limit with no extra
dependency. :func:`main` is its command line.

What it does not do: authenticate clients (bind it to a private interface), persist the
broker's state (a restarted server starts afresh; clients then lease again), or push news
to clients (they learn of a decrease or a pause at their next exchange).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.from_thread import start_blocking_portal
from anyio.streams.buffered import BufferedByteReceiveStream

from ._broker import PermitBroker
from ._wire import (
    DEFAULT_PORT,
    MAX_LINE_BYTES,
    STREAM_ERRORS,
    format_address,
    reply_to_json,
    request_from_json,
)

__all__ = ["LimitServer", "main"]

logger = logging.getLogger("cross_judge.shared_limit")


class LimitServer:
    """A :class:`PermitBroker` served over TCP (newline-delimited JSON), from a thread.

    ``with LimitServer(limit=4) as server:`` then ``SharedLimit.connect(server.address)``
    in each process. Each line a client sends is a :class:`LeaseRequest` as a JSON object
    (``client``, ``want``, ``returning``, ``successes``, ``rate_limits``); each answer
    line is a :class:`LeaseReply` (``granted``, ``held``, ``limit``, ``pause_s``,
    ``term_s``), or ``{"error": "..."}`` for a malformed request (the connection stays
    open). There is no authentication: it listens on ``127.0.0.1`` unless told
    otherwise; bind it to a private interface only. ``python -m cross_judge.shared_limit``
    runs one from the command line.

    Raises:
        ValueError: ``limit``, ``term_s`` or ``port`` is invalid.
    """

    def __init__(
        self, limit: int, *, host: str = "127.0.0.1", port: int = 0, term_s: float = 2.0
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535 (0 picks a free port), got {port!r}")
        self._broker = PermitBroker(limit, term_s=term_s)
        self._lock = threading.Lock()  # the broker is read from other threads
        self._host = "127.0.0.1" if host == "localhost" else host
        self._requested_port = port
        self._port: int | None = None
        self._stack: contextlib.ExitStack | None = None
        self._lifecycle = threading.Lock()

    @property
    def port(self) -> int:
        """The port listened on (known once started).

        Raises:
            RuntimeError: not started.
        """
        if self._port is None:
            raise RuntimeError("LimitServer is not running: start() it or use it in a with block")
        return self._port

    @property
    def address(self) -> str:
        """``"host:port"``, as :meth:`SharedLimit.connect` takes it."""
        return format_address(self._host, self.port)

    @property
    def broker(self) -> PermitBroker:
        """The broker served (read it for inspection; :meth:`snapshot` reads it safely)."""
        return self._broker

    def snapshot(self) -> dict[str, Any]:
        """The broker's state now: ``limit``, ``held`` and ``clients`` (permits per client)."""
        with self._lock:
            b = self._broker
            return {"limit": b.limit, "held": b.held, "clients": dict(b.clients)}

    def start(self) -> LimitServer:
        """Start listening (idempotent) and return ``self``.

        Raises:
            OSError: the address cannot be listened on (in use, not this machine's); the
                message says so.
        """
        with self._lifecycle:
            if self._stack is not None:
                return self
            stack = contextlib.ExitStack()
            portal = stack.enter_context(start_blocking_portal(name="cross-judge limit server"))
            try:
                future, port = portal.start_task(self._serve)
            except OSError as exc:
                stack.close()
                where = format_address(self._host, self._requested_port)
                raise OSError(
                    exc.errno,
                    f"cannot listen on {where} ({exc.strerror or exc}); pick another port, or "
                    "stop what listens there",
                ) from exc
            stack.callback(_cancel_quietly, future)
            self._stack, self._port = stack, int(port)
            return self

    def stop(self) -> None:
        """Stop listening and drop every connection (idempotent)."""
        with self._lifecycle:
            stack, self._stack = self._stack, None
            if stack is not None:
                stack.close()

    def __enter__(self) -> LimitServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def _serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(
            local_host=self._host, local_port=self._requested_port
        )
        async with listener:
            task_status.started(listener.extra(SocketAttribute.local_port))
            await listener.serve(self._handle)

    async def _handle(self, stream: SocketStream) -> None:
        try:
            async with stream:
                reader = BufferedByteReceiveStream(stream)
                while True:
                    try:
                        raw = await reader.receive_until(b"\n", MAX_LINE_BYTES)
                    except anyio.DelimiterNotFound:
                        await stream.send(b'{"error":"request line too long"}\n')
                        return
                    await stream.send(self._answer(raw))
        except STREAM_ERRORS:
            return  # the client went away
        except Exception:  # never let one connection stop the server
            logger.exception("limit server: a connection failed")

    def _answer(self, raw: bytes) -> bytes:
        try:
            request = request_from_json(raw)
        except (ValueError, TypeError) as exc:
            message = f"malformed lease request: {exc}"
            return json.dumps({"error": message}).encode() + b"\n"
        with self._lock:
            reply = self._broker.exchange(request)
        return reply_to_json(reply)


def _cancel_quietly(future: Any) -> None:
    future.cancel()
    with contextlib.suppress(BaseException):
        future.exception(timeout=10)


# -- the command line ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m cross_judge.shared_limit --limit 4 --port 7007``: serve a shared limit
    until interrupted (Ctrl-C, SIGTERM). Prints ``READY host:port`` once listening."""
    parser = argparse.ArgumentParser(
        prog="python -m cross_judge.shared_limit",
        description=(
            "Serve a concurrency limit shared by many processes. In each process attach it "
            "to a vendor: set_vendor_limits('openai', shared=SharedLimit.connect('HOST:PORT'))."
        ),
    )
    parser.add_argument(
        "--limit", type=int, required=True, help="calls allowed at once across all processes"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; there is no authentication)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    parser.add_argument(
        "--term",
        type=float,
        default=2.0,
        help="seconds a client may reuse its permits between exchanges (default 2)",
    )
    args = parser.parse_args(argv)
    try:
        server = LimitServer(args.limit, host=args.host, port=args.port, term_s=args.term)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        server.start()
    except OSError as exc:
        parser.exit(1, f"{parser.prog}: error: {exc.strerror or exc}\n")
    stop = threading.Event()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: stop.set())
    try:
        print(f"READY {server.address}", flush=True)
        if server.address.split(":")[0] not in ("127.0.0.1", "[", "[::1]"):
            print(
                f"warning: anyone who can reach {server.address} can take permits",
                file=sys.stderr,
                flush=True,
            )
        while not stop.is_set():  # short waits keep the main thread responsive to signals
            stop.wait(0.5)
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
