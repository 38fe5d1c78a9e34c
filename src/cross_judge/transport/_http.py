"""The smallest HTTP surface the wire adapters need: POST bytes, get status + headers + body.

Three implementations of :class:`HTTPSession`:

* :class:`AiohttpSession` — the default under asyncio. Measured on this project's
  2-core machine against a local vendor at 100 ms latency with 48 calls in flight: raw
  aiohttp reached 0.88x the physical limit (calls in flight / latency), httpx over an
  aiohttp transport 0.81x, the official ``openai`` SDK 0.47x and a plain
  ``httpx.AsyncClient`` 0.17x (its async pool slows down badly on a warm pool under
  concurrency, encode/httpcore#1035). The throughput benchmark (``bench/``) re-measures
  this choice on every run.
* :class:`HttpxSession` — an ``httpx.AsyncClient``. Used under trio (aiohttp is
  asyncio-only) and whenever the caller injects an ``httpx.AsyncClient`` (for example one
  mocked with ``respx`` or an ``httpx.MockTransport`` in unit tests).
* :class:`SyncDuckSession` — cross-judge 0.1's test surface: any object with a synchronous
  ``post(url, json=..., headers=...)`` returning something with ``.json()``. Called in a
  worker thread so it never blocks the event loop.

Every implementation caps the body it reads (:data:`MAX_RESPONSE_BYTES`) and turns
transport exceptions into :class:`~cross_judge.transport.CallFailure`; none retries
(retries live in :mod:`cross_judge._retry`, one policy for everything).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import unquote, urlsplit, urlunsplit

import anyio

from ..errors import ErrorKind
from ._failure import CallFailure

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "MAX_RESPONSE_BYTES",
    "AiohttpSession",
    "HTTPSession",
    "HttpxSession",
    "RawResponse",
    "SyncDuckSession",
    "basic_auth",
    "split_credentials",
]

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""A chat completion is a few kB; a larger body is a misbehaving server, not an answer."""

_LARGE_REQUEST_BYTES = 1024 * 1024
"""Request bodies above this go to aiohttp as a file-like object (see AiohttpSession)."""

DEFAULT_MAX_CONNECTIONS = 1024
"""Connections per pool. High on purpose: batch concurrency is bounded above this layer."""

_KEEPALIVE_S = 30.0


@dataclass(frozen=True)
class RawResponse:
    """An HTTP response, fully read. ``headers`` keys are lower-case."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


class HTTPSession(Protocol):
    """What a wire adapter needs from an HTTP client."""

    enforces_total_timeout: bool
    """``post`` gives up after ``timeout`` seconds in all (connect, send, read) by itself."""

    async def post(
        self, url: str, *, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawResponse:
        """POST ``body``; return the response, or raise :class:`CallFailure`."""
        ...

    async def aclose(self) -> None:
        """Release the connections this session owns (idempotent)."""
        ...


@functools.lru_cache(maxsize=64)  # per call on the hot path; endpoints are few
def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@``, and those credentials (decoded).

    The credentials then go out as Basic auth (:func:`basic_auth`), replacing a bearer
    key, as httpx sends a URL's credentials; but never in a URL, which httpx and the vendor
    SDKs write to their logs and aiohttp to its errors.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # unparsable: the HTTP library reports it, as for any bad URL
        return url, None
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


def basic_auth(credentials: tuple[str, str]) -> str:
    """The ``Authorization`` header value for ``(user, password)``, UTF-8 as httpx encodes it."""
    userpass = ":".join(credentials).encode("utf-8", "surrogatepass")
    return "Basic " + base64.b64encode(userpass).decode("ascii")


def _too_large() -> CallFailure:
    return CallFailure(
        ErrorKind.INVALID_RESPONSE,
        f"response body larger than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB",
    )


class AiohttpSession:
    """A pooled ``aiohttp.ClientSession`` (asyncio only), created on first use."""

    enforces_total_timeout = True  # aiohttp's ClientTimeout(total=...) covers the body too

    def __init__(self, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=self._max_connections,
                keepalive_timeout=_KEEPALIVE_S,
                ttl_dns_cache=300,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                # The vendor SDKs' own user-agent habits aside, a fixed header set keeps
                # every request identical for caching proxies.
                headers={"User-Agent": "cross-judge"},
                raise_for_status=False,
            )
        return self._session

    async def post(
        self, url: str, *, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawResponse:
        import aiohttp

        client = self._client()
        url, credentials = split_credentials(url)
        if credentials is not None:  # replaces a bearer key, as httpx does
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = basic_auth(credentials)
        try:
            async with client.post(
                url,
                # aiohttp warns (ResourceWarning) on a raw bytes body over 1 MiB, which it
                # would write in one go; from a file-like object it streams in chunks.
                data=io.BytesIO(body) if len(body) > _LARGE_REQUEST_BYTES else body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False,
            ) as resp:
                length = resp.content_length
                if length is not None and length <= MAX_RESPONSE_BYTES:
                    data = await resp.read()
                else:
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in resp.content.iter_any():
                        size += len(chunk)
                        if size > MAX_RESPONSE_BYTES:
                            raise _too_large()
                        chunks.append(chunk)
                    data = b"".join(chunks)
                if len(data) > MAX_RESPONSE_BYTES:
                    raise _too_large()
                headers_out = {k.lower(): v for k, v in resp.headers.items()}
                return RawResponse(resp.status, headers_out, data)
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise CallFailure(ErrorKind.TIMEOUT, f"no response within {timeout:g}s") from exc
        except aiohttp.ClientError as exc:
            raise CallFailure(ErrorKind.CONNECTION, _describe(exc)) from exc
        except OSError as exc:
            raise CallFailure(ErrorKind.CONNECTION, _describe(exc)) from exc

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


class HttpxSession:
    """An ``httpx.AsyncClient``: injected by the caller (never closed here) or owned."""

    enforces_total_timeout = False  # httpx times each phase, not the whole request

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        self._client = client
        self._owned = client is None
        self._max_connections = max_connections

    def _get(self) -> httpx.AsyncClient:
        if self._client is None or (self._owned and self._client.is_closed):
            import httpx

            self._client = httpx.AsyncClient(
                limits=httpx.Limits(
                    max_connections=self._max_connections,
                    max_keepalive_connections=self._max_connections,
                    keepalive_expiry=_KEEPALIVE_S,
                ),
                headers={"User-Agent": "cross-judge"},
            )
        return self._client

    async def post(
        self, url: str, *, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawResponse:
        import httpx

        client = self._get()
        url, credentials = split_credentials(url)
        auth: dict[str, Any] = {}
        if credentials is not None and client.auth is None:  # as httpx does with URL userinfo
            auth["auth"] = httpx.BasicAuth(*credentials)
        try:
            request = client.build_request("POST", url, headers=dict(headers), timeout=timeout)
            # Not content=body: httpx would wrap it in an async *generator*, which a call
            # cancelled mid-send leaves suspended for the garbage collector to finalise,
            # possibly after its trio run has ended (an "Exception ignored" at exit).
            request.stream = _one_shot_body(body)
            request.headers["Content-Length"] = str(len(body))
            response = await client.send(request, stream=True, **auth)
            body_chunks = cast("AsyncGenerator[bytes, None]", response.aiter_bytes())
            too_large = False
            try:
                chunks: list[bytes] = []
                size = 0
                async for chunk in body_chunks:
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        too_large = True
                        break
                    chunks.append(chunk)
            finally:
                # Shielded: when the call is cancelled mid-body, an unshielded await here
                # would be cancelled too, leaving the connection checked out of the pool
                # and the body iterator for the garbage collector to finalise.
                with anyio.CancelScope(shield=True):
                    if too_large:
                        await _finish_abandoned_body(response, body_chunks)
                    await body_chunks.aclose()
                    await response.aclose()
            if too_large:
                raise _too_large()
            headers_out = {k.lower(): v for k, v in response.headers.items()}
            return RawResponse(response.status_code, headers_out, b"".join(chunks))
        except httpx.TimeoutException as exc:
            raise CallFailure(ErrorKind.TIMEOUT, f"no response within {timeout:g}s") from exc
        except httpx.TransportError as exc:
            raise CallFailure(ErrorKind.CONNECTION, _describe(exc)) from exc

    async def aclose(self) -> None:
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


async def _finish_abandoned_body(response: Any, body_chunks: AsyncGenerator[bytes, None]) -> None:
    """Close a response whose body is left unread, so that httpx's generators end too.

    ``aiter_bytes`` is a generator over ``aiter_raw``, over more generators down to
    httpcore. Closing the outer one leaves the inner ones suspended, and trio warns
    ("async generator was garbage collected before it had been exhausted") when they are
    collected. Closing the connection first and then taking one more step makes the
    innermost read end, which unwinds, and so finishes, every layer. (A failure raised
    inside the chain, such as a cancellation or a read error, already does that.)
    """
    await response.aclose()
    with contextlib.suppress(Exception):
        await body_chunks.__anext__()


class _Once:
    """An async iterator over one bytes object; a plain object, not a generator."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def __aiter__(self) -> _Once:
        return self

    async def __anext__(self) -> bytes:
        data, self._data = self._data, None
        if data is None:
            raise StopAsyncIteration
        return data


@functools.cache
def _one_shot_body_type() -> type[Any]:
    import httpx

    class OneShotBody(httpx.AsyncByteStream):
        """A request body httpx can send (and re-send on a redirect) without a generator."""

        def __init__(self, data: bytes) -> None:
            self._data = data

        def __aiter__(self) -> _Once:
            return _Once(self._data)

    return OneShotBody


def _one_shot_body(data: bytes) -> Any:
    return _one_shot_body_type()(data)


class SyncDuckSession:
    """cross-judge 0.1's injected client: ``client.post(url, json=..., headers=...)``.

    The object is used as 0.1 used it: ``raise_for_status()`` is called if it exists, then
    ``json()``. It runs in a worker thread; the caller's timeout still bounds the wait.
    """

    enforces_total_timeout = False

    def __init__(self, client: Any) -> None:
        self._client = client

    def _call(self, url: str, headers: Mapping[str, str], body: bytes) -> RawResponse:
        payload = json.loads(body)
        try:
            resp = self._client.post(url, json=payload, headers=dict(headers))
            status = int(getattr(resp, "status_code", 200) or 200)
            raise_for_status = getattr(resp, "raise_for_status", None)
            if callable(raise_for_status) and status < 400:
                raise_for_status()
        except CallFailure:
            raise
        except Exception as exc:
            failed_status = _status_of(exc)
            if failed_status is None:
                raise _classify_client_exception(exc) from exc
            return RawResponse(failed_status, {}, _safe_body(getattr(exc, "response", None)))
        raw_headers = dict(getattr(resp, "headers", {}) or {})
        resp_headers = {str(k).lower(): str(v) for k, v in raw_headers.items()}
        if status >= 400:
            return RawResponse(status, resp_headers, _safe_body(resp))
        try:
            data = resp.json()
        except Exception as exc:
            raise CallFailure(
                ErrorKind.INVALID_RESPONSE, f"response is not JSON ({_describe(exc)})"
            ) from exc
        return RawResponse(status, resp_headers, json.dumps(data).encode())

    async def post(
        self, url: str, *, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawResponse:
        return await anyio.to_thread.run_sync(
            self._call, url, headers, body, abandon_on_cancel=True
        )

    async def aclose(self) -> None:
        """The injected client belongs to the caller; nothing to release."""


def _classify_client_exception(exc: Exception) -> CallFailure:
    """An injected client's exception: network trouble is retried, anything else is not."""
    name = type(exc).__name__
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return CallFailure(ErrorKind.TIMEOUT, _describe(exc))
    if isinstance(exc, OSError) or "Connect" in name or "Network" in name:
        return CallFailure(ErrorKind.CONNECTION, _describe(exc))
    return CallFailure(ErrorKind.INVALID_RESPONSE, f"http_client raised {_describe(exc)}")


def _status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _safe_body(resp: Any) -> bytes:
    content = getattr(resp, "content", b"")
    if isinstance(content, bytes):
        return content[:MAX_RESPONSE_BYTES]
    text = getattr(resp, "text", "")
    return text.encode()[:MAX_RESPONSE_BYTES] if isinstance(text, str) else b""


def _describe(exc: BaseException) -> str:
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
