"""Keep-alive connections that refuse bytes sent after a complete response.

An HTTP/1.1 client reads a connection's responses in order: the first response on it
answers the first request, the next answers the next. A server (or a proxy in front of one)
that writes more than it declared, for instance a second complete response after the
first, puts every later answer on that connection out of step. ``httpcore`` (under
``httpx`` and ``httpx2``, which cross-judge uses under trio) keeps such bytes in the
connection's read buffer and parses them as the answer to the *next* request sent on it,
whichever critic and item that is. aiohttp (asyncio) parses them as a further response,
which makes it close the connection.

:func:`guard_client` makes the connections of an ``httpx``/``httpx2`` client follow their
own framing with a second h11 parser (:class:`FramedStream`): it sees where each response
ends and counts any bytes received beyond it (:attr:`FramedStream.stray`). Such a
connection reports itself readable while idle, which is how ``httpcore`` recognises a
connection the server has finished with, so the pool closes it instead of reusing it; and
:func:`stray_bytes` lets the caller fail the call whose answer the bytes followed
(:func:`desynchronised`), since a connection out of step may have delivered another
request's answer. Nothing later on any connection can read them.

What it cannot see: bytes that arrive only after the next request has been sent on the
connection look, to any HTTP/1.1 client, exactly like that request's answer. If the real
answer follows them soon enough to be read with them, that call fails too; otherwise the
connection is closed when it falls idle.

Only the clients cross-judge builds are guarded (proxied connections included); an
``httpx.AsyncClient`` a caller injects (``Critic(http_client=...)``) is used as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind
from ._failure import CallFailure

if TYPE_CHECKING:
    import h11

# h11 is imported where it is used, not here: importing cross_judge must not import it. By
# the time a stream reads, building the transport has imported it (httpcore does).

__all__ = ["FramedStream", "GuardedBackend", "desynchronised", "guard_client", "stray_bytes"]


class FramedStream:
    """A connection's network stream (``httpcore`` or ``httpcore2``) that follows the
    HTTP/1.1 framing of what it reads, to count the bytes received after a response ended.

    A request starts with the first write after the previous response ended (its method is
    read from the request line, for a ``HEAD`` response has no body); the response is then
    fed, as it is read, to an h11 client parser of its own. Bytes the parser has not used
    when the response ends, or bytes read while no request is outstanding, are
    :attr:`stray`. A response the parser cannot read is left to ``httpcore``'s own parser,
    which reports it. Once the connection stops speaking HTTP (a ``CONNECT`` tunnel is
    established, or a protocol upgrade), it is no longer followed. Never raises beyond what
    the wrapped stream raises.
    """

    __slots__ = ("_closed", "_following", "_inner", "_parser", "stray")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._parser: h11.Connection | None = None
        self._following = True
        self._closed = False
        self.stray = 0
        """Bytes received after the end of a response (0 on a connection in step)."""

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = await self._inner.read(max_bytes, timeout)
        self._follow(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._parser is None and buffer and self._following:
            self._parser = _response_parser(buffer)
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        if not self._closed:  # the caller and the pool may both close it
            self._closed = True
            await self._inner.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> FramedStream:
        return FramedStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        # Readable while idle is how httpcore recognises a connection to drop: the pool
        # closes it instead of sending the next request on it.
        if info == "is_readable" and self.stray:
            return True
        return self._inner.get_extra_info(info)

    def _follow(self, data: bytes) -> None:
        import h11

        parser = self._parser
        if parser is None:
            if self._following:
                self.stray += len(data)
            return
        try:
            parser.receive_data(data)
            while True:
                event = parser.next_event()
                if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                    return
                if event is h11.PAUSED:  # a CONNECT tunnel or an upgrade: no longer HTTP
                    self._parser, self._following = None, False
                    return
                if isinstance(event, h11.EndOfMessage):
                    self.stray += len(parser.trailing_data[0])
                    self._parser = None
                    return
        except h11.ProtocolError:
            self._parser = None  # not a response h11 reads: httpcore's parser says why


def _response_parser(request_head: bytes) -> h11.Connection:
    """An h11 client parser ready for the response to the request ``request_head`` starts."""
    import h11

    method = request_head.split(b" ", 1)[0]
    if not method.isalpha():  # not a request line: the rest of a request body
        method = b"POST"
    parser = h11.Connection(h11.CLIENT)
    parser.send(h11.Request(method=method, target="/", headers=[("Host", "-")]))
    parser.send(h11.EndOfMessage())
    return parser


class GuardedBackend:
    """A network backend whose streams are :class:`FramedStream` (``httpcore``'s
    ``AsyncNetworkBackend`` interface, by duck typing, so it serves ``httpcore2`` too)."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> FramedStream:
        return FramedStream(await self._inner.connect_tcp(*args, **kwargs))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> FramedStream:
        return FramedStream(await self._inner.connect_unix_socket(*args, **kwargs))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guard_client(client: Any) -> Any:
    """Make every connection ``client`` opens a :class:`FramedStream`; return ``client``.

    ``client`` is an ``httpx.AsyncClient`` or ``httpx2.AsyncClient`` cross-judge has just
    made, with the library's own transports: the default one and those of the proxies it
    mounted from the environment. Each keeps its settings (TLS, socket options, proxy);
    only the network backend of its connection pool is wrapped in a
    :class:`GuardedBackend`, since the libraries take no backend as an argument.

    Raises:
        RuntimeError: a transport no longer keeps its pool where this expects (a new
            major version of the library): better no client than an unguarded one.
    """
    mounts = getattr(client, "_mounts", {})
    for transport in (getattr(client, "_transport", None), *mounts.values()):
        if transport is None:  # a mount that turns proxying off (NO_PROXY)
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if pool is None or backend is None:
            raise RuntimeError(
                f"cannot guard the connections of {type(transport).__module__}."
                f"{type(transport).__qualname__}: its connection pool is not where "
                "cross-judge expects; install the versions of httpx/httpx2 it supports"
            )
        if not isinstance(backend, GuardedBackend):
            pool._network_backend = GuardedBackend(backend)
    return client


def stray_bytes(response: Any) -> int:
    """Bytes the server sent after ``response`` (an ``httpx``/``httpx2`` response, read to
    its end) on its connection; 0 when they are unknown (a connection not guarded)."""
    extensions = getattr(response, "extensions", None) or {}
    stream = extensions.get("network_stream")
    return stream.stray if isinstance(stream, FramedStream) else 0


def desynchronised(stray: int) -> CallFailure:
    """The failure of a call whose answer was followed by ``stray`` bytes: ``CONNECTION``,
    retried (on a fresh connection: the pool has closed this one)."""
    return CallFailure(
        ErrorKind.CONNECTION,
        f"the server sent {stray} bytes after a complete response on a keep-alive connection, "
        "so that connection is out of step (its answers may belong to other requests): it "
        "was closed and this answer discarded",
    )
