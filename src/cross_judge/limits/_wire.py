"""The wire of a shared limit: newline-delimited JSON over TCP, and the client's connection.

Each line a client sends is a :class:`~cross_judge.shared_limit.LeaseRequest` as a JSON
object (``client``, ``want``, ``returning``, ``successes``, ``rate_limits``); each answer
line is a :class:`~cross_judge.shared_limit.LeaseReply` (``granted``, ``held``, ``limit``,
``pause_s``, ``term_s``), or ``{"error": "..."}`` for a malformed request. This module
encodes and decodes those lines, parses and formats ``host:port`` addresses, and holds
:class:`TcpExchange`, the client's end of one connection.

What it does not do: serve (:mod:`cross_judge.limits._server`), decide anything about
permits (:mod:`cross_judge.limits._broker`), or retry a failed exchange (the client,
:mod:`cross_judge.limits._client`, starts afresh).
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from ..errors import ConfigError, SharedLimitError
from ..transport import loop_token
from ._broker import LeaseReply, LeaseRequest

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_PORT",
    "EXCHANGE_TIMEOUT_S",
    "MAX_LINE_BYTES",
    "STREAM_ERRORS",
    "TcpExchange",
    "format_address",
    "parse_address",
    "reply_from_json",
    "reply_to_json",
    "request_from_json",
    "request_to_json",
]

CONNECT_TIMEOUT_S = 10.0
"""Longest wait to connect to a :class:`~cross_judge.shared_limit.LimitServer`."""

EXCHANGE_TIMEOUT_S = 30.0
"""Longest wait for a :class:`~cross_judge.shared_limit.LimitServer` to answer an exchange."""

MAX_LINE_BYTES = 1 << 20
"""Longest request or reply line of the protocol."""

DEFAULT_PORT = 7007
"""The port ``python -m cross_judge.shared_limit`` listens on unless told otherwise."""


def parse_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of a :class:`~cross_judge.shared_limit.LimitServer` address:
    ``"host:port"``, or ``"[::1]:7007"`` for IPv6 (the brackets are dropped from the host).

    Raises:
        ConfigError: no host, or a port that is not a number from 1 to 65535; the message
            gives an example.
    """
    text = str(address).strip()
    host, sep, port_text = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    problem = None
    if not sep or not host:
        problem = "it has no host"
    elif not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        problem = "its port is not a number from 1 to 65535"
    if problem is not None:
        raise ConfigError(
            f"shared limit address {address!r}: {problem}; pass 'host:port' as the server "
            f"printed it, e.g. '127.0.0.1:{DEFAULT_PORT}' (or '[::1]:{DEFAULT_PORT}')"
        )
    return host, int(port_text)


def format_address(host: str, port: int) -> str:
    """``"host:port"``, with an IPv6 host in brackets: what :func:`parse_address` reads."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def request_to_json(request: LeaseRequest) -> bytes:
    """``request`` as one line of the protocol (a JSON object, newline-terminated)."""
    body = {
        "client": request.client,
        "want": request.want,
        "returning": request.returning,
        "successes": request.successes,
        "rate_limits": list(request.rate_limits),
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def request_from_json(raw: bytes) -> LeaseRequest:
    """The :class:`LeaseRequest` of one request line (the server's side).

    Raises:
        ValueError: (or ``TypeError``) anything but a valid request.
    """
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("a request is a JSON object")
    rate_limits = body.get("rate_limits", [])
    if not isinstance(rate_limits, list):
        raise ValueError("rate_limits is a list")
    return LeaseRequest(
        client=body.get("client"),  # type: ignore[arg-type]  # LeaseRequest checks types
        want=body.get("want"),  # type: ignore[arg-type]
        returning=body.get("returning", 0),
        successes=body.get("successes", 0),
        rate_limits=tuple(rate_limits),
    )


def reply_to_json(reply: LeaseReply) -> bytes:
    """``reply`` as one line of the protocol (a JSON object, newline-terminated)."""
    body = {
        "granted": reply.granted,
        "held": reply.held,
        "limit": reply.limit,
        "pause_s": reply.pause_s,
        "term_s": reply.term_s,
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def reply_from_json(raw: bytes, address: str) -> LeaseReply:
    """The :class:`LeaseReply` of one reply line from the server at ``address``.

    Raises:
        SharedLimitError: the server refused the request (``{"error": ...}``), or the line
            is not a lease reply (the message says to check the address).
    """
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        raise SharedLimitError(
            f"the shared limit server at {address} refused the exchange: {body['error']}"
        )
    fields = ("granted", "held", "limit", "pause_s", "term_s")
    values = [body.get(name) for name in fields] if isinstance(body, dict) else []
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if (
        len(numbers) != len(fields)
        or not all(isinstance(v, int) for v in numbers[:3])
        or min(numbers[:2]) < 0
        or numbers[2] < 1
        or not math.isfinite(numbers[4])
        or numbers[4] <= 0
    ):
        raise SharedLimitError(
            f"{address} answered something that is not a lease reply; check that the address "
            "is a cross_judge.shared_limit server (python -m cross_judge.shared_limit)"
        )
    granted, held, limit = (int(v) for v in numbers[:3])
    return LeaseReply(granted, held, limit, max(0.0, float(numbers[3])), float(numbers[4]))


STREAM_ERRORS = (
    OSError,
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.DelimiterNotFound,
)
"""What a broken or closed connection raises, on either side of the protocol."""


class TcpExchange:
    """One connection to a :class:`~cross_judge.shared_limit.LimitServer`, opened on first
    use (per event loop); exchanges on it must not overlap (the
    :class:`~cross_judge.shared_limit.SharedLimit` using it does one at a time). Called with
    a :class:`LeaseRequest`, it returns the server's :class:`LeaseReply`."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.address = format_address(host, port)
        self._stream: SocketStream | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._token: Any = None

    async def __call__(self, request: LeaseRequest) -> LeaseReply:
        """One exchange: send ``request``, wait for the reply line.

        Raises:
            SharedLimitError: the server cannot be reached, does not answer within
                :data:`EXCHANGE_TIMEOUT_S`, dropped the connection (which is then closed),
                or answered something other than a lease reply; the message says what to
                check.
        """
        token = loop_token()[0]
        if self._stream is not None and token is not self._token:
            self._stream = self._reader = None  # opened on a loop that has ended
        if self._stream is None or self._reader is None:
            await self._connect(token)
        stream, reader = self._stream, self._reader
        if stream is None or reader is None:  # pragma: no cover - _connect sets both
            raise SharedLimitError(f"no connection to the shared limit server at {self.address}")
        try:
            with anyio.fail_after(EXCHANGE_TIMEOUT_S):
                await stream.send(request_to_json(request))
                raw = await reader.receive_until(b"\n", MAX_LINE_BYTES)
        except (*STREAM_ERRORS, TimeoutError) as exc:
            await self.aclose()
            what = "no answer" if isinstance(exc, TimeoutError) else "connection lost"
            raise SharedLimitError(
                f"the shared limit server at {self.address} did not answer ({what}); check "
                "that it is still running"
            ) from exc
        return reply_from_json(raw, self.address)

    async def _connect(self, token: Any) -> None:
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                stream = await anyio.connect_tcp(self.host, self.port)
        except (OSError, TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise SharedLimitError(
                f"cannot reach the shared limit server at {self.address} ({reason}); check "
                "the address and that the server is running (python -m "
                f"cross_judge.shared_limit --limit N --port {self.port})"
            ) from exc
        self._stream, self._reader, self._token = stream, BufferedByteReceiveStream(stream), token

    async def aclose(self) -> None:
        """Close the connection (a later exchange opens a new one); never raises."""
        stream, self._stream, self._reader = self._stream, None, None
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()
