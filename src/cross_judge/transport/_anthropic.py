"""The Anthropic Messages wire protocol (``vendor="anthropic"``), through the official SDK.

One request in, a :class:`Completion` (text + usage) or a :class:`CallFailure` out. Like
:mod:`._openai_compat`, this module classifies; it does not retry, parse verdicts or decide
what an empty answer means for a vote (that is :mod:`cross_judge.core`'s job).

The request
    ``POST {base}/v1/messages`` with ``model``, ``max_tokens`` (the API requires it), one
    user message and, when it is not empty, the system prompt as ``system``. The SDK's own
    retries are off (``max_retries=0``): :mod:`cross_judge.transport._retry` is the one policy. The
    per-attempt ``timeout`` is passed to the SDK too.

    **No sampling parameter is sent, for any model.** The SDK (``anthropic`` 2.x) speaks
    API version ``2026-10-21``, which removed ``temperature``, ``top_p`` and ``top_k``: a
    request carrying any of them, at any value and on any model, gets a 400
    (https://platform.claude.com/docs/en/api/versioning; the SDK's ``messages.create``
    has no such argument any more). Under the older version ``2023-06-01`` the newest
    models already rejected non-default values (Claude Opus 4.7 and later, Sonnet 5 and
    5.5, Haiku 5.5, Fable and Mythos), so a per-model list would only have postponed the
    400s. ``Critic.temperature`` therefore has no effect on an Anthropic critic: steer it
    with the prompt. ``json_mode`` and ``seed`` have no Messages equivalent and are not
    sent either. :meth:`ChatRequest.sent_settings("anthropic")
    <cross_judge.transport.ChatRequest.sent_settings>` says what is sent (``max_tokens``;
    with a thinking budget ``thinking`` and ``max_tokens`` raised by the budget; for
    ``structured="tool"`` the schema as the one tool in ``tools`` and a ``tool_choice``
    naming it; for ``structured="schema"`` and an effort ``output_config``), and that is
    what the response cache keys on and the run manifest records. A setting
    that asked for something and is dropped (a ``temperature`` other than the default 0, a
    ``seed``) is logged at WARNING, once per process for each model, setting and value
    (:func:`warn_unsent`). A 400 the vendor sends anyway is ``BAD_REQUEST``, with its
    message kept.

The key
    Sent as ``x-api-key``, the header the Messages API documents (the SDK on its own would
    send ``Authorization: Bearer``, which Anthropic-compatible gateways may refuse). It is
    held only in the memory of the pooled SDK client made for it: never in a repr, an
    error or a log line (the SDK's debug log prints per-request options; the key is not
    one of them).

The base URL
    The SDK appends ``/v1/messages`` to the base URL. A base URL ending in ``/v1`` is used
    without it, so ``https://api.anthropic.com`` and ``https://api.anthropic.com/v1`` both
    reach ``https://api.anthropic.com/v1/messages``, and a gateway at
    ``https://gw.example/anthropic`` gets ``/anthropic/v1/messages`` (see
    :func:`sdk_base_url`).

Pooling
    Per event loop and endpoint origin (:mod:`._pool`, kind ``"anthropic"``): one
    ``httpx2`` client holds the connection pool (``anthropic.DefaultAioHttpClient`` under
    asyncio; ``anthropic.DefaultAsyncHttpxClient`` under trio, where aiohttp cannot run),
    and over it one light ``AsyncAnthropic`` per base URL and key. Redirects are not
    followed: one would carry the key to another host. Nothing is created, and neither
    the SDK nor ``httpx2`` is imported, at import: :func:`prepare` does both in worker
    threads. :func:`cross_judge.transport.aclose_sessions` closes the pool. Under trio,
    the pool refuses bytes a server sends after a complete response
    (:mod:`._framing`): the connection is closed and the call fails with ``CONNECTION``,
    so they never become another call's answer.

The response
    Its body is decoded by :class:`~._http.BodyDecoder` and read up to
    :data:`~._http.MAX_RESPONSE_BYTES` *after* decompression (an ``httpx2`` response hook
    wraps the stream, so ``httpx2`` never inflates a body itself: a decompression bomb
    costs at most the cap in memory), then parsed here, not by the SDK's lenient models.
    Requests offer only the codings the decoder bounds (``Accept-Encoding: gzip,
    deflate``); a body in another coding is ``INVALID_RESPONSE``.

    * 2xx with a Messages body -> :class:`Completion`: the text blocks joined as ``text``
      (or, when the model called a tool, the last ``tool_use`` block's ``input`` as JSON:
      the answer of ``structured="tool"``), the names of the tools it called as ``tools``
      (the critic refuses a tool it did not force: ``INVALID_RESPONSE``);
      ``thinking`` blocks as ``reasoning``, never as the verdict; ``stop_reason`` as
      ``finish_reason`` (``"max_tokens"`` counts as truncated); ``stop_reason ==
      "refusal"`` as ``refusal``; :func:`usage_of` for the usage.
    * 2xx that is not JSON, not an object, or has no ``content`` list ->
      ``INVALID_RESPONSE``; a 2xx error object -> ``SERVER``; a body over the cap (or
      not valid gzip/deflate data) -> ``INVALID_RESPONSE``, with status or not.
    * 401/403 -> ``AUTH``; 429 -> ``RATE_LIMIT``; 5xx, 529 "overloaded" included ->
      ``SERVER``; 408 -> ``TIMEOUT``; other statuses -> ``BAD_REQUEST`` (409 is still
      retried). The vendor's ``{"type": "error", "error": {"type", "message"}}`` is kept
      in the message, truncated, and ``retry-after-ms`` / ``Retry-After`` are read into
      ``retry_after``.
    * no answer within the timeout -> ``TIMEOUT``; a refused, reset or dropped
      connection -> ``CONNECTION``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import logging
import threading
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread

from ..errors import ErrorKind
from ..verdict import Usage
from ._adapter import Connection, WireAdapter, register_protocol
from ._anthropic_batch import AnthropicBatchAPI
from ._failure import CallFailure, failure_for_status
from ._framing import desynchronised, guard_client, stray_bytes
from ._http import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_CONNECTIONS,
    MAX_RESPONSE_BYTES,
    BodyDecoder,
    basic_auth,
    finish_abandoned_body,
    split_credentials,
    too_large,
)
from ._pool import shared_client
from ._wire import ChatRequest, Completion, ContentPart, ImagePart, StructuredForm, TextPart

if TYPE_CHECKING:
    import anthropic
    import httpx2

    from ..vendors import VendorConfig
    from ._http import HTTPSession, RawResponse

__all__ = [
    "ADAPTER",
    "MIN_ANTHROPIC_THINKING_BUDGET",
    "MessagesAdapter",
    "classify_exception",
    "complete",
    "message_params",
    "parse_message_response",
    "prepare",
    "sdk_base_url",
    "status_failure",
    "usage_of",
    "warn_unsent",
]

logger = logging.getLogger("cross_judge")

_MAX_MESSAGE_CHARS = 500
_KEEPALIVE_S = 30.0
_POOL_KIND = "anthropic"

# Unsent settings at these values ask for nothing (the Critic's defaults): no warning.
_ASKS_NOTHING: dict[str, Any] = {"temperature": 0.0, "seed": None, "json_mode": False}
_WHY_UNSENT = {
    "temperature": (
        "the Messages API version the anthropic SDK 2.x sends (2026-10-21) takes no "
        "temperature, top_p or top_k on any model"
    ),
    "seed": "the Messages API has no seed",
    "json_mode": "the Messages API has no JSON mode",
}
_warned: set[tuple[str, str, str, str]] = set()
_warned_lock = threading.Lock()


def sdk_base_url(base_url: str) -> str:
    """The base URL to give the SDK, which appends ``/v1/messages`` itself: ``base_url``
    without trailing slashes and without one trailing ``/v1``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


async def prepare(config: VendorConfig, api_key: str | None) -> None:
    """Make the pooled SDK client for ``config``'s endpoint and key, importing the SDK on
    first use in the process (2-3 s, in a worker thread) and loading the CA bundle on first
    use per event loop and endpoint.

    This is set-up, not the call: :mod:`cross_judge.core` awaits it before the first
    attempt, outside the per-attempt timeout and the critic's deadline, and a verdict's
    ``elapsed_s`` starts once it is done. Afterwards it costs a dictionary lookup.
    Cancelling it returns at once; an import already under way finishes in its thread and
    serves the next call.
    """
    await _client_for(config, api_key)


async def _client_for(config: VendorConfig, api_key: str | None) -> anthropic.AsyncAnthropic:
    """The pooled client, looked up per attempt: a pool closed meanwhile is reopened."""
    endpoint = shared_client(_POOL_KIND, config.base_url, _Endpoint)
    return await endpoint.client(sdk_base_url(config.base_url), api_key)


async def complete(
    config: VendorConfig,
    request: ChatRequest,
    *,
    api_key: str | None,
    timeout: float,
) -> Completion:
    """One attempt of ``request`` against ``config``'s Messages endpoint.

    Raises:
        CallFailure: for every outcome that is not a usable completion.
    """
    client = await _client_for(config, api_key)
    import anthropic  # already imported by endpoint.client(), in a worker thread

    warn_unsent(config, request)
    params = message_params(request)
    try:
        # Exactly request.sent_settings("anthropic"): max_tokens, and thinking, a forced
        # tool or output_config when the critic asks for them.
        response = await client.messages.with_raw_response.create(
            model=params["model"],
            max_tokens=params["max_tokens"],
            messages=params["messages"],
            system=params.get("system", anthropic.omit),
            thinking=params.get("thinking", anthropic.omit),
            tools=params.get("tools", anthropic.omit),
            tool_choice=params.get("tool_choice", anthropic.omit),
            output_config=params.get("output_config", anthropic.omit),
            timeout=timeout,
        )
    except anthropic.APIError as exc:
        raise classify_exception(exc, timeout) from exc
    http = response.http_response
    stray = stray_bytes(http)  # read to its end: the SDK has read the whole body
    if stray:  # the pool has closed the connection, as the response was closed
        raise desynchronised(stray)
    return parse_message_response(http.status_code, http.headers, http.content)


MIN_ANTHROPIC_THINKING_BUDGET = 1024
"""The smallest ``budget_tokens`` Anthropic's extended thinking takes."""


def message_params(request: ChatRequest) -> dict[str, Any]:
    """The Messages body of ``request``: the model, its messages (the system messages'
    text as ``system`` when not empty; a message of one text part as a string, else as
    ``text`` blocks) and exactly :meth:`ChatRequest.sent_settings` for ``"anthropic"``."""
    messages: list[dict[str, Any]] = []
    system: list[str] = []
    for message in request.messages:
        if message.role == "system":
            system.append(message.text())
            continue
        parts = message.parts
        content: Any = (
            parts[0].text
            if len(parts) == 1 and type(parts[0]) is TextPart
            else [_block(part) for part in parts]
        )
        messages.append({"role": message.role, "content": content})
    params: dict[str, Any] = {"model": request.model, "messages": messages}
    if any(system):
        params["system"] = "".join(system)
    params.update(_settings(request))
    return params


def _block(part: ContentPart) -> dict[str, Any]:
    """A content part as a Messages content block: ``text``, or ``image`` with a
    ``base64`` source (its bytes) or a ``url`` source (the API fetches it)."""
    if type(part) is TextPart:
        return {"type": "text", "text": part.text}
    assert isinstance(part, ImagePart)
    if part.data is None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    source = {"type": "base64", "media_type": part.media_type, "data": part.base64()}
    return {"type": "image", "source": source}


def _settings(request: ChatRequest) -> dict[str, Any]:
    budget = request.thinking_budget
    settings: dict[str, Any] = {"max_tokens": request.max_tokens + (budget or 0)}
    if budget is not None:
        settings["thinking"] = {"type": "enabled", "budget_tokens": budget}
    schema = request.schema
    if request.structured == "tool" and schema is not None:
        settings["tools"] = [
            {
                "name": schema.name,
                "description": "Record your verdict.",
                "input_schema": schema.as_dict(),
            }
        ]
        settings["tool_choice"] = {"type": "tool", "name": schema.name}
    output: dict[str, Any] = {}
    if request.effort is not None:
        output["effort"] = request.effort
    if request.structured == "schema" and schema is not None:
        output["format"] = {"type": "json_schema", "schema": schema.as_dict()}
    if output:
        settings["output_config"] = output
    return settings


class MessagesAdapter(WireAdapter):
    """The ``"anthropic"`` protocol: the Messages API through the official SDK's pooled
    client; Message Batches for batches."""

    name = "anthropic"
    title = "Anthropic's Messages API"
    forms = frozenset({"tool", "schema", "off"})

    def __init__(self) -> None:
        self.batch = AnthropicBatchAPI(message_params, parse_message_response, sdk_base_url)

    def sent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        return _settings(request)

    def unsent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        unsent: dict[str, Any] = {"temperature": request.temperature}
        if request.seed is not None:
            unsent["seed"] = request.seed
        if request.json_mode:
            unsent["json_mode"] = True
        return unsent

    def sends_temperature(self, config: VendorConfig, effort: str | None) -> bool:
        return False

    def payload(self, config: VendorConfig, request: ChatRequest) -> dict[str, Any]:
        return message_params(request)

    async def connect(
        self, config: VendorConfig, api_key: str | None, session: HTTPSession | None
    ) -> Connection:
        await prepare(config, api_key)

        async def send(request: ChatRequest, timeout: float) -> Completion:
            return await complete(config, request, api_key=api_key, timeout=timeout)

        return Connection(send)

    def parse(self, raw: RawResponse) -> Completion:
        if raw.status >= 300:
            try:
                body: object = json.loads(raw.body)
            except (ValueError, UnicodeDecodeError):
                body = raw.body.decode("utf-8", "replace")
            raise status_failure(raw.status, raw.headers, body)
        return parse_message_response(raw.status, raw.headers, raw.body)

    def form_problem(self, config: VendorConfig, structured: str) -> str | None:
        if structured == "json":
            return (
                "Anthropic's Messages API has no JSON mode; use structured='tool' (a forced "
                "tool), 'schema' (its JSON output format) or 'auto'"
            )
        return super().form_problem(config, structured)

    def auto_form(self, config: VendorConfig, *, thinking: bool, json_ok: bool) -> StructuredForm:
        return "schema" if thinking else "tool"

    def reasoning_problem(
        self,
        config: VendorConfig,
        effort: str | None,
        thinking_budget: int | None,
        structured: str | None,
    ) -> str | None:
        if thinking_budget is not None and thinking_budget < MIN_ANTHROPIC_THINKING_BUDGET:
            return (
                f"vendor {config.name!r}: Anthropic's extended thinking takes a budget of at "
                f"least {MIN_ANTHROPIC_THINKING_BUDGET} tokens, got "
                f"thinking_budget={thinking_budget}"
            )
        if thinking_budget is not None and structured == "tool":
            return (
                "Anthropic refuses a forced tool while extended thinking is on; use "
                "structured='schema' (its JSON output format) or 'auto', or drop "
                "thinking_budget"
            )
        return None

    def endpoint_path(self, path: str) -> str:
        return path[: -len("/v1")] if path.endswith("/v1") else path


def warn_unsent(config: VendorConfig, request: ChatRequest) -> None:
    """Log a WARNING for each setting of ``request`` that asks for something the Messages
    API does not take (:meth:`ChatRequest.unsent_settings`): a ``temperature`` other than
    0 (the Critic's default), a ``seed``, ``json_mode``. Once per process for each vendor,
    model, setting and value, however many calls, critics or event loops repeat it. The
    request is sent without them; the message says so and how to silence it."""
    for setting, value in ADAPTER.unsent_settings(request, config).items():
        if value == _ASKS_NOTHING.get(setting):
            continue
        seen = (config.name, request.model, setting, repr(value))
        with _warned_lock:
            if seen in _warned:
                continue
            _warned.add(seen)
        logger.warning(
            "vendor %r, model %r: %s=%r is not sent, so it has no effect (%s); remove it "
            "from the critic's settings, and steer the model with the prompt",
            config.name,
            request.model,
            setting,
            value,
            _WHY_UNSENT.get(setting, "the Messages API does not take it"),
        )


def parse_message_response(status: int, headers: Mapping[str, str], body: bytes) -> Completion:
    """Turn a 2xx response into a :class:`Completion`, or raise a classified failure."""
    data = _json_object(status, headers, body)
    if data.get("type") == "error" or ("error" in data and "content" not in data):
        # Some gateways answer 200 with an error object.
        raise CallFailure(ErrorKind.SERVER, f"HTTP {status}: {_vendor_detail(data)}")
    content = data.get("content")
    if not isinstance(content, list):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response has no content blocks")
    texts: list[str] = []
    thoughts: list[str] = []
    tools: list[str] = []
    tool_input: str | None = None
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thoughts.append(block["thinking"])
        elif kind == "tool_use":
            # Every tool called is named, so the critic can refuse one it did not force.
            name = block.get("name")
            tools.append(name if isinstance(name, str) else "")
            if isinstance(block.get("input"), dict):
                # The answer of a forced tool (structured="tool") is the tool's input.
                tool_input = json.dumps(block["input"], ensure_ascii=False)
    text = tool_input if tool_input is not None else "".join(texts)
    stop_reason = _str_or_none(data.get("stop_reason"))
    return Completion(
        text=text,
        usage=usage_of(data.get("usage")),
        finish_reason=stop_reason,
        model=_str_or_none(data.get("model")),
        refusal=_refusal_of(data.get("stop_details"), text) if stop_reason == "refusal" else None,
        reasoning="\n\n".join(t for t in thoughts if t) or None,
        tools=tuple(tools),
    )


def usage_of(usage: Any) -> Usage | None:
    """Anthropic usage as a :class:`Usage`; ``None`` when there is none.

    ``input_tokens`` excludes the prompt-cache reads and writes, so ``prompt_tokens`` is
    ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens`` (every input
    token, as for the other vendors), with the two cache parts kept as
    ``cache_read_tokens`` / ``cache_write_tokens``; ``completion_tokens`` is
    ``output_tokens`` (thinking included: it is billed as output). Missing, null or
    negative counts are 0.
    """
    if not isinstance(usage, dict):
        return None
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=_count(usage, "input_tokens") + read + written,
        completion_tokens=_count(usage, "output_tokens"),
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def status_failure(status: int, headers: Mapping[str, str], body: object) -> CallFailure:
    """The failure for an HTTP error status; ``body`` is the parsed JSON error (or its text).

    ``headers`` must look names up case-insensitively (``httpx2.Headers`` does) or have
    lower-case keys.
    """
    return failure_for_status(status, headers, _vendor_detail(body))


def classify_exception(exc: anthropic.APIError, timeout: float) -> CallFailure:
    """The :class:`CallFailure` for an exception the SDK raised.

    A :class:`CallFailure` this module raised inside the SDK's call (the response hook
    and the body stream refuse a body over the cap or in a coding they cannot bound; the
    SDK wraps that in an ``APIConnectionError``) is the answer, whatever the SDK made of
    it: a copy of the first one in ``exc``'s chain of causes and contexts.
    """
    import anthropic

    inner = _failure_in_chain(exc)
    if inner is not None:
        return CallFailure(
            inner.kind, inner.message, status=inner.status, retry_after=inner.retry_after
        )
    if isinstance(exc, anthropic.APIStatusError):
        return status_failure(exc.status_code, exc.response.headers, exc.body)
    if isinstance(exc, anthropic.APITimeoutError):
        return CallFailure(ErrorKind.TIMEOUT, f"no response within {timeout:g}s")
    if isinstance(exc, anthropic.APIConnectionError):
        return CallFailure(ErrorKind.CONNECTION, _describe(exc.__cause__ or exc))
    return CallFailure(ErrorKind.INVALID_RESPONSE, _describe(exc))


def _failure_in_chain(exc: BaseException) -> CallFailure | None:
    """The first :class:`CallFailure` among ``exc``'s causes and contexts, following each
    link as a traceback shows it (``__cause__``, else an unsuppressed ``__context__``)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, CallFailure):
            return link
        seen.add(id(link))
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return None


# -- pooled clients -------------------------------------------------------------------------


class _Endpoint:
    """The pooled SDK state of one endpoint origin on one event loop.

    One ``httpx2`` client (the connection pool), made on first use, and one
    ``AsyncAnthropic`` over it per (base URL, key), found by the key's sha256. Used from
    its event loop only.
    """

    def __init__(self, library: str) -> None:
        self._library = library
        self._http: httpx2.AsyncClient | None = None
        self._clients: dict[tuple[str, str], anthropic.AsyncAnthropic] = {}
        self._opening = anyio.Lock()

    async def client(self, base_url: str, api_key: str | None) -> anthropic.AsyncAnthropic:
        fingerprint = hashlib.sha256((api_key or "").encode("utf-8", "surrogatepass")).hexdigest()
        found = self._clients.get((base_url, fingerprint))
        if found is not None:
            return found
        if self._http is None:
            async with self._opening:
                if self._http is None:
                    # In worker threads: the first call imports the SDK (about 2 s) and
                    # loads the CA bundle, which would stall every call on the loop. The
                    # import is abandoned on cancellation (it completes in its thread,
                    # harmlessly); the client is not, so it is never made and dropped.
                    await anyio.to_thread.run_sync(_import_sdk, abandon_on_cancel=True)
                    self._http = await anyio.to_thread.run_sync(_new_http_client, self._library)
        import anthropic

        # api_key="" counts as given, so the SDK reads no key, token or profile from the
        # environment or the disk. Its "Authorization: Bearer" is replaced by x-api-key.
        headers: dict[str, str | anthropic.Omit] = {
            "Authorization": anthropic.omit,
            # Only what BodyDecoder decodes in bounded memory: no br/zstd, whatever
            # compression modules httpx2 finds installed.
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        if api_key:
            headers["X-Api-Key"] = api_key
        # A gateway's user:password@ goes out as Basic auth, never in the URL, which the
        # SDK and httpx2 write to their logs.
        url, credentials = split_credentials(base_url)
        if credentials is not None:
            headers["Authorization"] = basic_auth(credentials)
        client = anthropic.AsyncAnthropic(
            api_key="",
            base_url=url,
            max_retries=0,
            http_client=self._http,
            # The SDK accepts Omit values here to remove a header (its own merge_headers
            # makes such mappings); its annotation only says str.
            default_headers=cast("dict[str, str]", headers),
        )
        self._clients[(base_url, fingerprint)] = client
        return client

    async def aclose(self) -> None:
        """Close the connection pool; the SDK clients over it are forgotten."""
        http, self._http = self._http, None
        self._clients.clear()
        if http is not None:
            await http.aclose()


def _import_sdk() -> None:
    import anthropic  # noqa: F401

    # The SDK imports the OpenTelemetry propagators on its first request (the API comes
    # with it): here instead, in this worker thread. If they cannot be loaded, the SDK
    # says so itself when it tries again on that request, as it would have.
    with contextlib.suppress(Exception):
        importlib.import_module("opentelemetry.propagate")


def _new_http_client(library: str) -> httpx2.AsyncClient:
    """The endpoint's connection pool (blocking: loads the CA bundle). Under trio its
    connections are guarded against bytes after a response (:func:`guard_client`); under
    asyncio aiohttp carries them, and closes a connection that has any."""
    import anthropic
    import httpx2

    limits = httpx2.Limits(
        max_connections=DEFAULT_MAX_CONNECTIONS,
        max_keepalive_connections=DEFAULT_MAX_CONNECTIONS,
        keepalive_expiry=_KEEPALIVE_S,
    )
    settings: dict[str, Any] = {
        "limits": limits,
        "follow_redirects": False,
        "event_hooks": {"response": [_cap_response_body]},
    }
    if library == "asyncio":
        return anthropic.DefaultAioHttpClient(**settings)
    return cast("httpx2.AsyncClient", guard_client(anthropic.DefaultAsyncHttpxClient(**settings)))


# -- the body cap ---------------------------------------------------------------------------


async def _cap_response_body(response: httpx2.Response) -> None:
    """httpx2 response hook, run before the body is read: decode the body here, bounded.

    A declared ``Content-Length`` over the cap is refused at once. Otherwise the stream is
    replaced by one that decodes the ``Content-Encoding`` with :class:`~._http.BodyDecoder`
    (counting the decoded bytes against the cap) and the header is removed, so that httpx2
    takes the body as it is and does not inflate it again. A body its transport has read
    already (a mock transport's has, decoded) is only measured.

    Raises:
        CallFailure: ``INVALID_RESPONSE``, for a body over the cap or in a coding the
            decoder does not bound (``br``, ``zstd``, stacked codings). The SDK wraps it
            in an ``APIConnectionError``; :func:`classify_exception` unwraps it.
    """
    limit = MAX_RESPONSE_BYTES  # read per call: tests lower it
    if response.is_stream_consumed:
        BodyDecoder(None, limit=limit).feed(response.content)
        return
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_large(limit)
    decoder = BodyDecoder(response.headers.get("content-encoding"), limit=limit)
    if "content-encoding" in response.headers:
        del response.headers["content-encoding"]
    response.stream = _decoded_stream_type()(response.stream, decoder)


@functools.cache
def _decoded_stream_type() -> type[Any]:
    """The decoded stream's class, made on first use: it must subclass
    ``httpx2.AsyncByteStream``, and this module does not import httpx2 at import."""
    import httpx2

    class DecodedStream(httpx2.AsyncByteStream):
        """A response stream decoded by a :class:`~._http.BodyDecoder`, which fails once
        the decoded body is over its limit.

        Iterated through :class:`_DecodedIterator`, a plain object rather than an async
        generator, so that an abandoned read leaves nothing for the garbage collector to
        finalise after its event loop has ended.
        """

        def __init__(self, inner: Any, decoder: BodyDecoder) -> None:
            self._inner = inner
            self._decoder = decoder

        def __aiter__(self) -> _DecodedIterator:
            return _DecodedIterator(self._inner, self._decoder)

        async def aclose(self) -> None:
            await self._inner.aclose()

        @property
        def elapsed(self) -> timedelta | None:
            """httpx2 reads ``response.elapsed`` from its own stream's attribute."""
            value = getattr(self._inner, "elapsed", None)
            return value if isinstance(value, timedelta) else None

    return DecodedStream


class _DecodedIterator:
    """Each raw chunk's decoded bytes (empty ones skipped), then the decoder's tail."""

    __slots__ = ("_chunks", "_decoder", "_ended", "_stream")

    def __init__(self, stream: Any, decoder: BodyDecoder) -> None:
        self._stream = stream
        self._chunks = stream.__aiter__()
        self._decoder = decoder
        self._ended = False

    def __aiter__(self) -> _DecodedIterator:
        return self

    async def __anext__(self) -> bytes:
        while not self._ended:
            try:
                raw = cast("bytes", await self._chunks.__anext__())
            except StopAsyncIteration:
                self._ended = True
                tail = self._decoder.flush()
                if tail:
                    return tail
                break
            try:
                decoded = self._decoder.feed(raw)
            except CallFailure:
                self._ended = True
                await self._abandon()
                raise
            if decoded:
                return decoded
        raise StopAsyncIteration

    async def _abandon(self) -> None:
        """Close the connection of a body left unread and end the stream's iterators
        (:func:`~._http.finish_abandoned_body`). Shielded, so a cancellation arriving
        meanwhile does not leave the connection checked out of the pool."""
        with anyio.CancelScope(shield=True):
            await finish_abandoned_body(self._stream, self._chunks)


# -- helpers --------------------------------------------------------------------------------


def _json_object(status: int, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    content_type = headers.get("content-type", "")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        what = "HTML" if "html" in content_type or body.lstrip()[:1] == b"<" else "not JSON"
        if not body.strip():
            what = "empty"
        raise CallFailure(
            ErrorKind.INVALID_RESPONSE,
            f"HTTP {status} body is {what} (content-type {content_type or 'unset'})",
        ) from exc
    if not isinstance(data, dict):
        raise CallFailure(ErrorKind.INVALID_RESPONSE, "response body is not a JSON object")
    return data


def _vendor_detail(body: object) -> str:
    """The vendor's error text, ``"<type>: <message>"`` for an Anthropic error body."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message")
            text = message.strip() if isinstance(message, str) else ""
            err_type = error.get("type")
            if isinstance(err_type, str) and err_type and err_type != "error":
                text = f"{err_type}: {text}" if text else err_type
            if text:
                return text[:_MAX_MESSAGE_CHARS]
        elif isinstance(error, str) and error.strip():
            return error.strip()[:_MAX_MESSAGE_CHARS]
        return json.dumps(body, default=str)[:_MAX_MESSAGE_CHARS]
    if isinstance(body, str):
        text = body.strip()
        return "non-JSON error body" if text.startswith("<") else text[:_MAX_MESSAGE_CHARS]
    return ""


def _refusal_of(details: Any, text: str) -> str:
    """What a refusal says: the vendor's explanation (with its category), else the text
    written before it stopped, else a plain statement."""
    explanation = category = None
    if isinstance(details, dict):
        explanation = _str_or_none(details.get("explanation"))
        category = _str_or_none(details.get("category"))
    said = explanation or text.strip() or "the model declined to answer"
    return f"{category}: {said}" if category else said


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _describe(exc: BaseException) -> str:
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


ADAPTER = register_protocol(MessagesAdapter())
"""The registered ``"anthropic"`` adapter."""
