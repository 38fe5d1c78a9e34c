"""A local, scriptable, simulated LLM vendor for offline tests, demos and benchmarks.

:class:`VendorServer` speaks two wire protocols over real HTTP on a loopback address: the
OpenAI chat-completions protocol (point any OpenAI-compatible client, cross-judge's own,
``openai`` or ``httpx``, at :attr:`VendorServer.url`) and the Anthropic Messages API (point
an ``anthropic`` client at :attr:`VendorServer.anthropic_url`). Either way a client is
exercised end to end: connection pooling, timeouts, retries, error classification,
parsing.

What it **is**:

* a fake vendor whose critics are :class:`Persona` objects: each answers a verdict drawn
  from a seeded RNG, right with probability ``accuracy``, in one of several text styles
  (strict JSON, fenced, ``<think>`` preamble, messy JSON), after a chosen latency;
* correlated like real judges when asked: with ``error_correlation`` rho > 0 every item
  has a difficulty, and personas are wrong together on hard items (a Gaussian threshold
  model that keeps each persona's accuracy over items) and, when wrong, often give the
  same wrong label. Independent errors (rho 0, the default) flatter every ensemble
  method, since a majority then outvotes most mistakes;
* a pairwise judge when asked: with ``better=`` a pair of candidates is judged by
  content, so swapping them swaps the right answer, and a persona's ``position_bias``
  favours whichever is shown first; :func:`pairwise_rates` gives the exact rates to
  expect;
* scriptable: :meth:`VendorServer.script` queues one-shot :class:`Reply` objects (a 429
  with ``Retry-After``, an HTML error page, a malformed body, a dropped connection, a
  request that never answers...) and :meth:`VendorServer.always` sets a persistent one;
  each is answered in the protocol of the request it meets;
* observable: :meth:`VendorServer.stats` and :attr:`VendorServer.recent_requests`.

What it is **not**: a model. Critics are fake; answers come from ``random.Random`` seeded
with the persona and the item text, so they are reproducible but say nothing about any
real model. It is not a security boundary either: it refuses to listen on anything but a
loopback address, and its optional API-key check exists only to test auth handling.

The server runs in a daemon thread with its own asyncio event loop, so it works the same
from sync code, from tests on any event loop (asyncio or trio) and from notebooks::

    with VendorServer([Persona("critic-a", accuracy=0.8)]) as server:
        client = openai.OpenAI(base_url=server.url, api_key="unused")
        ...

``python -m cross_judge.testing --port 0`` runs one in the foreground (see :func:`main`).

Nothing happens at import time: no thread, no socket, no event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import functools
import hashlib
import ipaddress
import itertools
import json
import math
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import types
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import anyio.to_thread
from aiohttp import BodyPartReader, web
from aiohttp.abc import AbstractStreamWriter

__all__ = ["PairwiseRates", "Persona", "Reply", "VendorServer", "pairwise_rates"]

Style = Literal["json", "fenced", "think", "messy"]
_STYLES: frozenset[str] = frozenset({"json", "fenced", "think", "messy"})

_START_TIMEOUT_S = 10.0
_JOIN_TIMEOUT_S = 5.0
# Handlers are cancelled before the runner shuts down, so this is only a backstop.
_SHUTDOWN_TIMEOUT_S = 1.0
_RECENT_MAX = 100
_GOLD_SUBSTRING_MAX = 256
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MESSAGES_PATHS = frozenset({"/v1/messages", "/messages"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})
_SECRET_HEADERS = frozenset({"x-api-key", "api-key"})
# The Anthropic API version from which temperature, top_p and top_k are refused.
_NO_SAMPLING_FROM_VERSION = "2026-10-21"
_SAMPLING_PARAMETERS = ("temperature", "top_p", "top_k")

_Api = Literal["chat", "messages"]
"""The protocol of a request: OpenAI chat completions or Anthropic Messages."""

_REASONS = (
    "The item is consistent with {kind}.",
    "On balance the evidence points to {kind}.",
    "Compared with the alternatives, {kind} fits best.",
    "The wording of the item supports {kind}.",
)


def _check_latency(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


def _checked_better(query_text: str, better_text: object) -> str | None:
    """``better_text`` stripped (``None`` kept: a tie); ``ValueError`` for anything else."""
    if better_text is None:
        return None
    if not isinstance(better_text, str):
        raise ValueError(
            "better must map a query to the better response's text, or None for a tie; "
            f"got {better_text!r} for query {query_text!r}"
        )
    return better_text.strip()


def _check_difficulty(item_text: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(
            f"difficulty must be a number in [0, 1] (0 easiest, 1 hardest), "
            f"got {value!r} for item {item_text!r}"
        )


@dataclass(frozen=True)
class Persona:
    """A simulated critic, selected by the request's ``model`` field.

    * ``accuracy``: probability that the answer equals the item's truth. With the
      server's ``error_correlation`` > 0 this holds on average over items (of uniform
      difficulty); hard items are answered right less often, easy ones more.
    * ``labels``: the vocabulary it answers in. A gold label outside it is still answered
      when the persona is right.
    * ``bias``: when wrong, relative weights for picking the wrong label (keys must be in
      ``labels``; missing keys weigh 0). ``None``, or all-zero weights over the candidates,
      means uniform among the labels other than the truth. With the server's
      ``error_correlation`` rho > 0, a wrong answer is first the item's shared distractor
      with probability rho, and only otherwise drawn this way.
    * ``confidence``: ``(low, high)``; right answers draw uniformly from it, wrong answers
      from its lower half, so confidence carries some signal as with real models.
    * ``latency`` + uniform ``[0, jitter]`` seconds pass before each answer (faults too).
    * ``style``, the shape of the answer text: ``"json"`` is strict JSON
      ``{"kind", "confidence", "reasoning"}``; ``"fenced"`` a sentence, a ```json fence
      holding that object, a closing sentence; ``"think"`` a ``<think>...</think>`` block
      whose text contains braces, then the JSON; ``"messy"`` the object with a trailing
      comma before ``}`` and the confidence as a percent string (``"87%"``).
    * ``fault_rate``: probability that a request gets a random fault instead of an
      answer: a 429 with ``Retry-After: 0``, a 500, a 503, or a 200 with truncated JSON.
    * ``position_bias``: for pairwise requests only (two candidates, judged by content;
      see :class:`VendorServer`). With probability ``1 - accuracy`` the persona is unsure
      of a pair; then it answers ``"A"``, the candidate shown first, with probability
      ``position_bias``, else a label other than the truth drawn uniformly from ``A``,
      ``B``, ``TIE``. 0 (the default) favours neither position; 1 with accuracy 0 always
      answers ``"A"``. Unsure answers, right by chance or not, draw their confidence from
      the lower half of ``confidence``. :func:`pairwise_rates` gives the rates this
      produces. ``labels``, ``bias`` and ``error_correlation`` do not apply to pairwise
      requests.
    * ``resample``: answer repeated requests as a sampling model does. By default the
      same request always gets the same answer. With ``resample=True``, a request whose
      ``temperature`` is > 0 (or absent: vendors then sample at their default, 1) is
      answered as a fresh draw: the ``k``-th answer this persona gives for an item (a
      pair: for that order of its candidates) is drawn with ``k`` in the seed, and the
      first (``k = 0``) is the answer it gives without ``resample``. Faulted requests
      use up no draw, so ``n`` samples of an item are draws ``0..n-1`` whatever the
      retries. The counts live as long as the server (not reset by ``reset_stats``).
      Temperature 0 requests are answered as without it.

    Invalid values raise ``ValueError`` at construction. ``labels`` and ``confidence`` are
    stored as tuples and ``bias`` as a read-only copy, so a persona never changes after
    it is built.
    """

    model: str
    accuracy: float = 0.9
    labels: tuple[str, ...] = ("KEEP", "REJECT", "SPLIT", "MERGE")
    # Excluded from the hash: a mapping is not hashable, and the other fields suffice.
    bias: Mapping[str, float] | None = field(default=None, hash=False)
    confidence: tuple[float, float] = (0.6, 0.95)
    latency: float = 0.0
    jitter: float = 0.0
    style: Style = "json"
    seed: int = 0
    fault_rate: float = 0.0
    position_bias: float = 0.0
    resample: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("Persona.model must be a non-empty string (the model name to serve)")
        for name in ("accuracy", "fault_rate", "position_bias"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Persona.{name} must be a probability in [0, 1], got {value!r}")
        _check_latency("Persona.latency", self.latency)
        _check_latency("Persona.jitter", self.jitter)
        labels = tuple(self.labels)
        if not labels or not all(isinstance(x, str) and x for x in labels):
            raise ValueError("Persona.labels must be a non-empty sequence of non-empty strings")
        if len(set(labels)) != len(labels):
            raise ValueError(f"Persona.labels has duplicates: {labels!r}; list each label once")
        object.__setattr__(self, "labels", labels)
        conf = tuple(self.confidence)
        if len(conf) != 2 or not 0.0 <= conf[0] <= conf[1] <= 1.0:
            raise ValueError(
                "Persona.confidence must be (low, high) with 0 <= low <= high <= 1, "
                f"got {self.confidence!r}"
            )
        object.__setattr__(self, "confidence", (float(conf[0]), float(conf[1])))
        if self.bias is not None:
            unknown = sorted(set(self.bias) - set(labels))
            if unknown:
                raise ValueError(
                    f"Persona.bias has labels not in Persona.labels: {unknown}; "
                    "add them to labels or remove them from bias"
                )
            if not all(math.isfinite(w) and w >= 0 for w in self.bias.values()):
                raise ValueError("Persona.bias weights must be finite numbers >= 0")
            object.__setattr__(self, "bias", types.MappingProxyType(dict(self.bias)))
        if self.style not in _STYLES:
            raise ValueError(f"Persona.style must be one of {sorted(_STYLES)}, got {self.style!r}")


_ERROR_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"),
    408: ("timeout", None),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    529: ("overloaded_error", None),
}


def _phrase(status: int) -> str:
    """The reason phrase of ``status`` ("Overloaded" for Anthropic's 529, else "Error")."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else "Error"


def _error_body(status: int, message: str | None = None, code: str | None = None) -> bytes:
    """An OpenAI-style error body; the type and code follow the status when not given."""
    default_type = "invalid_request_error" if status < 500 else "server_error"
    err_type, default_code = _ERROR_TYPES.get(status, (default_type, None))
    if message is None:
        message = f"{_phrase(status)} (simulated {status} from cross_judge.testing)"
    error = {"message": message, "type": err_type, "param": None, "code": code or default_code}
    return json.dumps({"error": error}).encode()


_ANTHROPIC_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _anthropic_error_body(status: int, message: str | None = None) -> bytes:
    """An Anthropic-style error body, ``{"type": "error", "error": {"type", "message"}}``;
    the error type follows the status (as the Messages API documents them)."""
    default_type = "invalid_request_error" if status < 500 else "api_error"
    err_type = _ANTHROPIC_ERROR_TYPES.get(status, default_type)
    if message is None:
        message = f"{_phrase(status)} (simulated {status} from cross_judge.testing)"
    body = {"type": "error", "error": {"type": err_type, "message": message}}
    return json.dumps(body).encode()


def _format_seconds(value: float) -> str:
    # Written as given: 0 -> "0", 1.5 -> "1.5" (never "1.5e+00" or "0.0").
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass(frozen=True)
class Reply:
    """A scripted response. Build one with the static factories, not the constructor.

    Replies are immutable, so one object can be queued many times. Latencies are
    seconds slept before answering. A reply is answered in the protocol of the request
    it meets: a chat completion or an Anthropic message, an OpenAI-style or an
    Anthropic-style error body.
    """

    action: Literal["content", "status", "hang", "html", "raw", "reset", "trickle"]
    status_code: int = 200
    text: str | None = None
    finish_reason: str = "stop"
    reasoning_content: str | None = None
    refusal: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    content_type: str = "application/json"
    latency: float = 0.0
    # The error body sent to an Anthropic Messages request instead of ``body`` (None:
    # ``body`` for both protocols, as for a verbatim body).
    anthropic_body: bytes | None = None
    # The usage object reported verbatim, as JSON (None: estimated from the text).
    usage_json: str | None = None

    @staticmethod
    def content(
        text: str | None,
        *,
        finish_reason: str = "stop",
        reasoning_content: str | None = None,
        refusal: str | None = None,
        usage: Mapping[str, Any] | None = None,
        latency: float = 0.0,
    ) -> Reply:
        """A 200 answer whose text is ``text``.

        For chat completions: a ``chat.completion`` whose message content is ``text``
        (``None`` -> null); ``reasoning_content`` and ``refusal`` are added to the message
        only when given.

        For Anthropic Messages: a ``message`` whose content is one text block holding
        ``text`` (``None`` -> no block), after a ``thinking`` block holding
        ``reasoning_content`` when given. ``finish_reason`` becomes the ``stop_reason``:
        ``"stop"`` -> ``"end_turn"``, ``"length"`` -> ``"max_tokens"``,
        ``"content_filter"`` -> ``"refusal"``, any other value as written (so
        ``"max_tokens"`` and ``"refusal"`` work too). ``refusal`` makes the stop reason
        ``"refusal"`` with the text as the ``stop_details`` explanation.

        ``usage`` is sent verbatim as the response's usage object, in the field names of
        the protocol it will meet (``prompt_tokens``... or ``input_tokens``,
        ``cache_read_input_tokens``...); without it, token counts are estimated from the
        text (4 characters a token).
        """
        _check_latency("latency", latency)
        return Reply(
            "content",
            text=text,
            finish_reason=finish_reason,
            reasoning_content=reasoning_content,
            refusal=refusal,
            usage_json=None if usage is None else json.dumps(dict(usage)),
            latency=latency,
        )

    @staticmethod
    def status(
        code: int,
        *,
        message: str | None = None,
        headers: Mapping[str, str] | None = None,
        retry_after: float | None = None,
        body: str | None = None,
        latency: float = 0.0,
    ) -> Reply:
        """An error response with status ``code`` (200-599).

        The body is ``body`` verbatim when given, else an OpenAI-style
        ``{"error": {"message", "type", "param", "code"}}`` whose message defaults to the
        status phrase; to an Anthropic Messages request, an Anthropic-style
        ``{"type": "error", "error": {"type", "message"}}`` whose type follows the status
        (429 ``rate_limit_error``, 529 ``overloaded_error``, 500 ``api_error``, ...).
        ``retry_after`` sets ``Retry-After`` in seconds, written as given (``0`` -> ``"0"``,
        ``1.5`` -> ``"1.5"``) and overriding one in ``headers``.
        """
        if not 200 <= code <= 599:
            raise ValueError(f"status code must be in 200..599, got {code!r}")
        _check_latency("latency", latency)
        hdrs = dict(headers or {})
        if retry_after is not None:
            _check_latency("retry_after", retry_after)
            hdrs = {k: v for k, v in hdrs.items() if k.lower() != "retry-after"}
            hdrs["Retry-After"] = _format_seconds(retry_after)
        if body is not None:
            payload, anthropic_payload = body.encode(), None
        else:
            payload = _error_body(code, message)
            anthropic_payload = _anthropic_error_body(code, message)
        return Reply(
            "status",
            status_code=code,
            headers=tuple(hdrs.items()),
            body=payload,
            anthropic_body=anthropic_payload,
            latency=latency,
        )

    @staticmethod
    def hang() -> Reply:
        """Accept the request and never answer.

        The handler ends when the client disconnects or :meth:`VendorServer.stop` runs;
        either way the client sees the connection close without a response.
        """
        return Reply("hang")

    @staticmethod
    def html(status: int = 200) -> Reply:
        """A ``text/html`` error page (what a proxy or CDN returns), with that status."""
        if not 200 <= status <= 599:
            raise ValueError(f"status must be in 200..599, got {status!r}")
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        page = (
            "<!DOCTYPE html>\n<html><head><title>"
            f"{status} {phrase}</title></head>\n<body><h1>{status} {phrase}</h1>\n"
            "<p>The upstream server returned an unexpected response.</p></body></html>\n"
        )
        return Reply("html", status_code=status, body=page.encode(), content_type="text/html")

    @staticmethod
    def raw(
        body: bytes,
        *,
        status: int = 200,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        latency: float = 0.0,
    ) -> Reply:
        """Send ``body`` verbatim (for malformed or unexpected payloads).

        ``headers`` are sent as given, so ``{"Content-Encoding": "gzip"}`` with a gzip
        body makes a compressed answer (or a decompression bomb); a ``Content-Type`` among
        them wins over ``content_type``.
        """
        if not isinstance(body, bytes):
            raise TypeError(f"body must be bytes, got {type(body).__name__}; encode it first")
        if not 200 <= status <= 599:
            raise ValueError(f"status must be in 200..599, got {status!r}")
        _check_latency("latency", latency)
        return Reply(
            "raw",
            status_code=status,
            headers=tuple((headers or {}).items()),
            body=body,
            content_type=content_type,
            latency=latency,
        )

    @staticmethod
    def reset() -> Reply:
        """Send a status line, headers and part of the body, then reset the connection.

        The client sees a connection error (a read error or an incomplete response).
        """
        return Reply("reset")

    @staticmethod
    def trickle(text: str = '{"kind": "KEEP"}', *, interval: float = 1.0) -> Reply:
        """A valid 200 answer whose text is ``text``, sent one byte every ``interval``
        seconds (a stalled proxy, a congested link).

        The status line and headers (with the full ``Content-Length``) go at once, so a
        client that only times out between reads never gives up; only a total per-request
        timeout ends it. The handler stops when the client disconnects or
        :meth:`VendorServer.stop` runs.
        """
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        return Reply("trickle", text=text, latency=interval)


class _DroppedResponse(web.StreamResponse):
    """Returned after the transport was aborted on purpose.

    aiohttp treats a ``ConnectionError`` from ``prepare`` as a client disconnect and
    ends the connection quietly, instead of logging and trying to send a 500.
    """

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        raise ConnectionResetError("connection dropped on purpose by cross_judge.testing")


_MAX_BODY_BYTES = 300 * 1024 * 1024
"""The largest request body the simulator reads: above both vendors' batch limits."""


class _CountingServer(web.Server):
    """aiohttp's low-level server, counting the TCP connections it accepts."""

    def __init__(self, *args: Any, on_connection: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_connection = on_connection

    def connection_made(self, handler: web.RequestHandler, transport: asyncio.Transport) -> None:
        self._on_connection()
        super().connection_made(handler, transport)

    def _make_request(
        self,
        message: Any,
        payload: Any,
        protocol: Any,
        writer: Any,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        # aiohttp caps a body at 1 MiB; a batch upload may be 200 MB (OpenAI) or 256 MB
        # (Anthropic), and the vendors' own limits are checked by the handlers.
        return web.BaseRequest(
            message, payload, protocol, writer, task, self._loop, client_max_size=_MAX_BODY_BYTES
        )


class _Run:
    """State of one start()..stop() cycle, so a restart never sees stale objects."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.stop_requested = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop_event: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.port = 0
        self.thread: threading.Thread | None = None
        # Handler tasks, touched only on the server loop; cancelled by stop().
        self.tasks: set[asyncio.Task[Any]] = set()


def _samples(temperature: object) -> bool:
    """Whether a request's ``temperature`` samples: a number > 0 (a bool or other value
    does not)."""
    return (
        isinstance(temperature, (int, float))
        and not isinstance(temperature, bool)
        and temperature > 0
    )


def _message_text(content: Any) -> str:
    """The text of a message ``content``: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


def _last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _message_text(message.get("content"))
    return ""


def _item_text(user_text: str) -> str:
    """The text inside the last ``<item>...</item>`` fence, else the whole message; stripped."""
    end = user_text.rfind("</item>")
    if end != -1:
        start = user_text.rfind("<item>", 0, end)
        if start != -1:
            return user_text[start + len("<item>") : end].strip()
    return user_text.strip()


class _Pair(NamedTuple):
    """The texts of a pairwise request, stripped, in the order shown."""

    query: str
    response_a: str
    response_b: str


def _fence_before(text: str, tag: str, end: int) -> tuple[int, str] | None:
    """The last ``<tag>...</tag>`` fence ending before ``end``: (its start, its stripped body)."""
    close = text.rfind(f"</{tag}>", 0, end)
    if close == -1:
        return None
    start = text.rfind(f"<{tag}>", 0, close)
    if start == -1:
        return None
    return start, text[start + len(tag) + 2 : close].strip()


def _pair_texts(user_text: str) -> _Pair | None:
    """The query and candidates of a pairwise request, else ``None``.

    A user message is pairwise when it holds an ``<item>`` fence, then a
    ``<response_a>`` fence, then a ``<response_b>`` fence (the packaged ``pairwise``
    prompt's layout). Each is found from the end: the last ``<response_b>`` fence, the
    last ``<response_a>`` fence before it, the last ``<item>`` fence before that; so a
    candidate may contain ``</item>``, and only a second candidate containing
    ``</response_b>`` is read wrongly.
    """
    b = _fence_before(user_text, "response_b", len(user_text))
    a = _fence_before(user_text, "response_a", b[0]) if b is not None else None
    item = _fence_before(user_text, "item", a[0]) if a is not None else None
    if b is None or a is None or item is None:
        return None
    return _Pair(item[1], a[1], b[1])


def _pair_digest(pair: _Pair) -> str:
    """sha256 of the query and the candidates in the order shown (JSON, so unambiguous)."""
    return hashlib.sha256(json.dumps(list(pair)).encode()).hexdigest()


def _render(style: str, kind: str, confidence: float, reasoning: str, labels: Iterable[str]) -> str:
    obj = json.dumps({"kind": kind, "confidence": confidence, "reasoning": reasoning})
    if style == "fenced":
        return (
            "I reviewed the item against the criteria.\n\n"
            f"```json\n{obj}\n```\n\nThat is my final assessment."
        )
    if style == "think":
        # Braces inside the think block trip parsers that grab the first "{...}".
        options = ", ".join(labels)
        return (
            f"<think>\nThe options are {{{options}}}; the answer is an object like "
            f'{{"kind": ...}}. Weighing the item, {kind} fits.\n</think>\n{obj}'
        )
    if style == "messy":
        percent = f"{round(confidence * 100)}%"
        return (
            f'{{"kind": {json.dumps(kind)}, "confidence": "{percent}", '
            f'"reasoning": {json.dumps(reasoning)},}}'
        )
    return obj


def _json_response(
    payload: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    return web.Response(body=json.dumps(payload).encode(), status=status, headers=hdrs)


def _error_response(
    status: int, message: str | None = None, code: str | None = None
) -> web.Response:
    return web.Response(
        body=_error_body(status, message, code),
        status=status,
        headers={"Content-Type": "application/json"},
    )


def _api_error_response(api: _Api, status: int, message: str | None = None) -> web.Response:
    """An error response in the protocol of the request."""
    if api == "chat":
        return _error_response(status, message)
    return web.Response(
        body=_anthropic_error_body(status, message),
        status=status,
        headers={"Content-Type": "application/json"},
    )


# Chat-completions finish reasons -> Anthropic stop reasons (others are kept as written).
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


def _invalid_messages_request(body: Mapping[str, Any], version: str | None) -> str | None:
    """Why the Messages API would refuse ``body`` with a 400, or ``None``."""
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return "max_tokens: Field required"
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Input should be an integer greater than or equal to 1"
    if version is not None and version >= _NO_SAMPLING_FROM_VERSION:
        for name in _SAMPLING_PARAMETERS:
            if name in body:
                return f"{name}: Extra inputs are not permitted"
    return None


def _all_text(messages: list[Any]) -> str:
    return "".join(_message_text(m.get("content")) for m in messages if isinstance(m, dict))


class _Refusal(NamedTuple):
    """Why a chat or Messages request gets an error instead of an answer."""

    status: int
    message: str
    code: str | None = None  # the OpenAI error code (None: the status's default)

    def body(self, api: _Api) -> bytes:
        """The error body in the protocol ``api``."""
        if api == "chat":
            return _error_body(self.status, self.message, self.code)
        return _anthropic_error_body(self.status, self.message)

    def response(self, api: _Api) -> web.Response:
        return web.Response(
            body=self.body(api), status=self.status, headers={"Content-Type": "application/json"}
        )


def _request_refusal(body: Any, api: _Api, version: str | None) -> _Refusal | None:
    """The 400 a request body gets before any scripted reply or persona, else ``None``:
    not a JSON object, no ``model``, or (Messages) an invalid ``max_tokens`` or a sampling
    parameter the API ``version`` refuses."""
    if not isinstance(body, dict):
        return _Refusal(400, "The request body is not a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        if api == "messages":
            return _Refusal(400, "model: Field required")
        return _Refusal(400, "You must provide a model parameter.")
    if api == "messages":
        invalid = _invalid_messages_request(body, version)
        if invalid is not None:
            return _Refusal(400, invalid)
    return None


def _unknown_model(model: str, api: _Api) -> _Refusal:
    """The 404 of a request for a model no persona serves."""
    if api == "messages":
        return _Refusal(404, f"model: {model}")
    return _Refusal(404, f"The model '{model}' does not exist", "model_not_found")


def _persona_refusal(body: Mapping[str, Any], api: _Api) -> _Refusal | None:
    """The 400 a request for a persona gets when its ``messages`` is not a list, else
    ``None``."""
    if not isinstance(body.get("messages"), list):
        if api == "messages":
            return _Refusal(400, "messages: Input should be a valid list")
        return _Refusal(400, "'messages' must be a list of chat messages.")
    return None


class _Draw(NamedTuple):
    """A persona's answer to one request: the decision, the vocabulary it was drawn from,
    the text style, and the fault injected instead of it (``None``: none)."""

    decision: _Decision
    labels: tuple[str, ...]
    style: str
    fault: str | None


def _fault_response(fault: str, api: _Api) -> web.Response:
    """The response of a ``Persona.fault_rate`` fault (``"429"``, ``"500"``, ``"503"``,
    ``"malformed"``) in the protocol ``api``."""
    if fault == "429":
        return web.Response(
            body=_error_body(429) if api == "chat" else _anthropic_error_body(429),
            status=429,
            headers={"Content-Type": "application/json", "Retry-After": "0"},
        )
    if fault in ("500", "503"):
        return _api_error_response(api, int(fault))
    truncated = (
        b'{"id": "chatcmpl-fault", "object": "chat.completion", "choices": [{"in'
        if api == "chat"
        else b'{"id": "msg_fault", "type": "message", "content": [{"ty'
    )
    return web.Response(body=truncated, headers={"Content-Type": "application/json"})


# -- provider batches: state and wire shapes, without HTTP -----------------------------------

_BatchProtocol = Literal["openai", "anthropic"]
_BATCH_ENDPOINT = "/v1/chat/completions"
_BATCH_WINDOW_S = 24 * 3600
_OPENAI_MAX_FILE_BYTES = 200 * 1024 * 1024
_OPENAI_MAX_BATCH_REQUESTS = 50_000
_ANTHROPIC_MAX_BATCH_REQUESTS = 100_000
_METADATA_MAX_PAIRS = 16
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
_CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."


@dataclass
class _SimFile:
    """An uploaded (``purpose="batch"``) or generated (``"batch_output"``) file."""

    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass
class _SimBatch:
    """One submitted batch, OpenAI or Anthropic, and what became of it.

    ``state``: ``"pending"`` until it ends, ``"cancelling"`` after a cancel, then
    ``"ended"`` with ``outcome`` ``"completed"``, ``"failed"`` (OpenAI: input file
    invalid), ``"expired"`` or ``"cancelled"``.
    """

    id: str
    protocol: _BatchProtocol
    created_at: float
    requests: list[tuple[str, Any]]  # (custom_id, the request body), in input order
    polls_to_end: int
    version: str | None = None  # Anthropic: the anthropic-version of the create request
    input_file_id: str = ""
    metadata: dict[str, str] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)  # OpenAI validation errors
    polls: int = 0
    state: Literal["pending", "cancelling", "ended"] = "pending"
    outcome: Literal["completed", "failed", "expired", "cancelled"] | None = None
    cancel_at: float | None = None
    ended_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    results: bytes = b""  # Anthropic: the results JSONL once ended

    def wire(self, results_origin: str) -> dict[str, Any]:
        """The batch object of its protocol (``results_origin``: the Anthropic
        ``results_url`` origin)."""
        if self.protocol == "openai":
            return self._openai_wire()
        return self._anthropic_wire(results_origin)

    def _openai_wire(self) -> dict[str, Any]:
        created = int(self.created_at)
        ended = None if self.ended_at is None else int(self.ended_at)
        if self.state == "cancelling":
            status = "cancelling"
        elif self.state == "ended":
            status = str(self.outcome)
        else:
            status = "validating" if self.polls == 0 else "in_progress"
        validated = status not in ("validating", "failed")
        counts = self.counts or {"total": len(self.requests), "completed": 0, "failed": 0}
        model = None
        if self.requests and isinstance(self.requests[0][1], dict):
            first = self.requests[0][1].get("model")
            model = first if isinstance(first, str) else None
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": _BATCH_ENDPOINT,
            "model": model,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": created,
            "in_progress_at": created if validated else None,
            "expires_at": created + _BATCH_WINDOW_S,
            "finalizing_at": ended if status == "completed" else None,
            "completed_at": ended if status == "completed" else None,
            "failed_at": ended if status == "failed" else None,
            "expired_at": ended if status == "expired" else None,
            "cancelling_at": None if self.cancel_at is None else int(self.cancel_at),
            "cancelled_at": ended if status == "cancelled" else None,
            "request_counts": counts,
            "metadata": self.metadata,
        }

    def _anthropic_wire(self, results_origin: str) -> dict[str, Any]:
        ended = self.state == "ended"
        if ended:
            counts = self.counts
        else:
            counts = {"processing": len(self.requests), "succeeded": 0, "errored": 0}
            counts |= {"canceled": 0, "expired": 0}
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": {"pending": "in_progress", "cancelling": "canceling"}.get(
                self.state, "ended"
            ),
            "request_counts": counts,
            "created_at": _rfc3339(self.created_at),
            "ended_at": None if self.ended_at is None else _rfc3339(self.ended_at),
            "expires_at": _rfc3339(self.created_at + _BATCH_WINDOW_S),
            "archived_at": None,
            "cancel_initiated_at": None if self.cancel_at is None else _rfc3339(self.cancel_at),
            "results_url": (
                f"{results_origin}/v1/messages/batches/{self.id}/results" if ended else None
            ),
        }


def _rfc3339(timestamp: float) -> str:
    """``timestamp`` as the Anthropic API writes times: RFC 3339 in UTC, ``Z``-suffixed."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def _batch_error(code: str, message: str, line: int | None, param: str | None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": param, "line": line}


def _openai_batch_errors(content: bytes) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """The requests of an OpenAI batch input file, and why it fails validation (empty
    when it does not).

    Each non-blank line must be a JSON object with a ``custom_id`` (a non-empty string,
    unique in the file), ``method`` ``"POST"``, ``url`` ``"/v1/chat/completions"`` and a
    ``body`` object with a ``model`` string, the same model on every line; at most 50,000
    lines. Error codes: ``empty_file``, ``too_many_tasks``, ``invalid_json_line``,
    ``duplicate_custom_id``, ``url_mismatch``, ``model_mismatch`` (as the Batch API
    reports them), and ``invalid_request`` with the field as ``param`` for a missing or
    mistyped field (the simulator's own code, where the API documents none). Lines are
    numbered from 1, blank ones included.
    """
    requests: list[tuple[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    model: str | None = None
    try:
        text = content.decode()
    except UnicodeDecodeError:
        return [], [_batch_error("invalid_json_line", "The file is not UTF-8 text.", None, None)]
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if not isinstance(line, dict):
            message = "This line is not parseable as a valid JSON object."
            errors.append(_batch_error("invalid_json_line", message, number, None))
            continue
        custom_id, body = line.get("custom_id"), line.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            message = "custom_id must be a non-empty string."
            errors.append(_batch_error("invalid_request", message, number, "custom_id"))
        elif custom_id in seen:
            message = (
                "The custom_id for this request is a duplicate of another request. "
                "The custom_id parameter must be unique for each request in a batch."
            )
            errors.append(_batch_error("duplicate_custom_id", message, number, "custom_id"))
        else:
            seen.add(custom_id)
        if line.get("method") != "POST":
            message = "method must be 'POST'."
            errors.append(_batch_error("invalid_request", message, number, "method"))
        if line.get("url") != _BATCH_ENDPOINT:
            message = f"The url does not match the batch endpoint {_BATCH_ENDPOINT}."
            errors.append(_batch_error("url_mismatch", message, number, "url"))
        line_model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(body, dict):
            message = "body must be a JSON object (a chat-completions request)."
            errors.append(_batch_error("invalid_request", message, number, "body"))
        elif not isinstance(line_model, str) or not line_model:
            message = "body.model must be a non-empty string."
            errors.append(_batch_error("invalid_request", message, number, "body.model"))
        elif model is None:
            model = line_model
        elif line_model != model:
            message = (
                f"The model {line_model!r} does not match the model {model!r} of the other "
                "requests in the file: a batch input file holds one model."
            )
            errors.append(_batch_error("model_mismatch", message, number, "body.model"))
        requests.append((custom_id if isinstance(custom_id, str) else "", body))
    if not requests and not errors:
        errors.append(_batch_error("empty_file", "The input file has no requests.", None, None))
    if len(requests) > _OPENAI_MAX_BATCH_REQUESTS:
        message = f"The input file has more than {_OPENAI_MAX_BATCH_REQUESTS} requests."
        errors.append(_batch_error("too_many_tasks", message, None, None))
    return requests, errors


def _anthropic_batch_refusal(body: Any) -> str | None:
    """Why ``POST /v1/messages/batches`` refuses ``body`` with a 400, else ``None``.

    ``requests`` must be a list of 1 to 100,000 objects, each with a ``custom_id``
    matching ``^[a-zA-Z0-9_-]{1,64}$``, unique in the batch, and a ``params`` object.
    The params themselves are checked as the batch runs (an invalid one is an
    ``errored`` result), as the API does.
    """
    if not isinstance(body, dict):
        return "The request body is not a JSON object."
    requests = body.get("requests")
    if not isinstance(requests, list):
        return "requests: Field required (a list of requests)"
    if not 1 <= len(requests) <= _ANTHROPIC_MAX_BATCH_REQUESTS:
        return f"requests: List should have 1 to {_ANTHROPIC_MAX_BATCH_REQUESTS} items"
    seen: set[str] = set()
    for index, entry in enumerate(requests):
        if not isinstance(entry, dict):
            return f"requests.{index}: Input should be an object"
        custom_id = entry.get("custom_id")
        if not isinstance(custom_id, str) or _CUSTOM_ID.fullmatch(custom_id) is None:
            return (
                f"requests.{index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if custom_id in seen:
            return f"requests.{index}.custom_id: Duplicate custom_id {custom_id!r} in the batch"
        seen.add(custom_id)
        if not isinstance(entry.get("params"), dict):
            return f"requests.{index}.params: Input should be an object"
    return None


# -- the decision of a persona, without HTTP -------------------------------------------------

_NORMAL = NormalDist()
# Difficulties are clamped into (0, 1) before the inverse normal, which is infinite at 0 and 1.
_DIFFICULTY_EPS = 1e-9


def _unit_hash(text: str) -> float:
    """A number in (0, 1), uniform over texts, from sha256 of ``text``."""
    bits = int(hashlib.sha256(text.encode()).hexdigest()[:13], 16)  # 52 bits
    return (bits + 0.5) / 2.0**52


def _seeded_difficulty(item: str, difficulty_seed: int) -> float:
    """The difficulty of an item that was given none: uniform in (0, 1) over items."""
    return _unit_hash(f"{difficulty_seed}|{item}")


def _distractor_key(item: str, difficulty_seed: int) -> int:
    """Picks an item's distractor among a vocabulary's wrong labels (see :func:`_decide`)."""
    return int(hashlib.sha256(f"{difficulty_seed}|distractor|{item}".encode()).hexdigest()[:16], 16)


def _p_right(accuracy: float, difficulty: float, error_correlation: float) -> float:
    """P(right | item difficulty) under the Gaussian threshold model.

    With ``D = Phi^-1(difficulty)`` and ``c = Phi^-1(1 - accuracy)``, a persona is right
    when ``-sqrt(rho) D + sqrt(1 - rho) E > c`` for its own standard normal noise ``E``,
    so ``P(right | d) = Phi((-c - sqrt(rho) D) / sqrt(1 - rho))``; averaged over
    difficulties uniform in (0, 1) it is ``accuracy``. ``rho == 0`` gives ``accuracy``
    itself, and accuracy 0 or 1 gives exactly 0 or 1 whatever the difficulty.
    """
    if error_correlation == 0.0:
        return accuracy
    wrong_share = 1.0 - accuracy
    if wrong_share <= 0.0:
        return 1.0
    if wrong_share >= 1.0:  # accuracy 0, or so small that 1 - accuracy rounds to 1
        return 0.0
    d = min(max(difficulty, _DIFFICULTY_EPS), 1.0 - _DIFFICULTY_EPS)
    c = _NORMAL.inv_cdf(wrong_share)
    z = (-c - math.sqrt(error_correlation) * _NORMAL.inv_cdf(d)) / math.sqrt(
        1.0 - error_correlation
    )
    return _NORMAL.cdf(z)


class _Decision(NamedTuple):
    """What a persona answers for one item, before rendering and faults."""

    kind: str
    confidence: float
    reasoning: str
    delay: float


def _decide(
    persona: Persona,
    model: str,
    truth: str,
    digest: str,
    *,
    difficulty: float = 0.5,
    error_correlation: float = 0.0,
    distractor_key: int = 0,
) -> _Decision:
    """The answer of ``persona`` (serving ``model``) to the item whose sha256 is ``digest``.

    Every draw comes from ``random.Random(f"{persona.seed}|{model}|{digest}")``, in this
    order: right or wrong (right with :func:`_p_right`); when wrong and
    ``error_correlation`` (rho) > 0, whether to give the item's distractor (probability
    rho); the wrong label, by ``persona.bias`` or uniformly among the labels other than
    ``truth``, unless the distractor was taken; the confidence (wrong answers from the
    lower half of ``persona.confidence``); the reasoning; the jitter. The distractor is
    ``wrong[distractor_key % len(wrong)]``, ``wrong`` being the vocabulary minus
    ``truth`` in vocabulary order, so personas sharing a vocabulary share it. With rho 0
    no extra draw happens and ``difficulty`` and ``distractor_key`` are unused. A
    one-label vocabulary whose label is the truth cannot be wrong.
    """
    rng = random.Random(f"{persona.seed}|{model}|{digest}")
    lo, hi = persona.confidence
    if rng.random() < _p_right(persona.accuracy, difficulty, error_correlation):
        kind, confidence = truth, rng.uniform(lo, hi)
    else:
        labels = persona.labels
        wrong = [x for x in labels if x != truth]
        weights = [persona.bias.get(x, 0.0) for x in wrong] if persona.bias else []
        if not wrong:  # a one-label vocabulary cannot be wrong
            kind = truth
        elif error_correlation > 0 and rng.random() < error_correlation:
            kind = wrong[distractor_key % len(wrong)]
        elif sum(weights) > 0:
            kind = rng.choices(wrong, weights=weights)[0]
        else:
            kind = rng.choice(wrong)
        confidence = rng.uniform(lo, (lo + hi) / 2)
    reasoning = rng.choice(_REASONS).format(kind=kind)
    delay = persona.latency + (rng.uniform(0, persona.jitter) if persona.jitter else 0.0)
    return _Decision(kind, confidence, reasoning, delay)


_PAIR_LABELS = ("A", "B", "TIE")
"""The labels of a pairwise answer, in the order shown: first candidate, second, a tie."""


def _decide_pair(persona: Persona, model: str, truth: str, digest: str) -> _Decision:
    """The answer of ``persona`` (serving ``model``) to a pair shown in one order.

    ``truth`` is the right label in that order (``"A"``, ``"B"`` or ``"TIE"``) and
    ``digest`` the pair's :func:`_pair_digest`, so the two orders of a pair are
    independent draws and a repeated request gets the same answer. Every draw comes from
    ``random.Random(f"{persona.seed}|{model}|{digest}")``, in this order: sure or unsure
    (sure with probability ``accuracy``: the truth); when unsure, whether to answer
    ``"A"`` (probability ``position_bias``), else a label other than ``truth`` drawn
    uniformly; the confidence (unsure answers, even right ones, from the lower half of
    ``persona.confidence``); the reasoning; the jitter. ``persona.labels``, ``bias`` and
    item difficulty play no part.
    """
    rng = random.Random(f"{persona.seed}|{model}|{digest}")
    lo, hi = persona.confidence
    if rng.random() < persona.accuracy:
        kind, confidence = truth, rng.uniform(lo, hi)
    else:
        first = rng.random() < persona.position_bias
        kind = "A" if first else rng.choice([x for x in _PAIR_LABELS if x != truth])
        confidence = rng.uniform(lo, (lo + hi) / 2)
    reasoning = rng.choice(_REASONS).format(kind=kind)
    delay = persona.latency + (rng.uniform(0, persona.jitter) if persona.jitter else 0.0)
    return _Decision(kind, confidence, reasoning, delay)


@dataclass(frozen=True)
class PairwiseRates:
    """What a persona is expected to do over a batch of pairs; see :func:`pairwise_rates`.

    ``first_position``: share of ``"A"`` among its decisive answers (``A`` or ``B``) in
    the order shown, 0.5 without position bias; ``None`` when it gives no decisive answer
    at all (accuracy 1 on a batch of ties only). ``flip``: probability that the two
    orders of one pair get answers that differ once the swapped one is mapped back
    (``A`` <-> ``B``, ``TIE`` unchanged). ``accuracy``: expected share of right answers.
    """

    first_position: float | None
    flip: float
    accuracy: float


def pairwise_rates(persona: Persona, *, tie_share: float = 0.0) -> PairwiseRates:
    """The exact expected pairwise rates of ``persona`` over a balanced batch of pairs.

    The batch: a share ``tie_share`` (in [0, 1], else ``ValueError``) of the pairs are
    ties; in the others one candidate is better and is shown first half the time. Each
    pair is judged in both orders by independent draws (as :class:`VendorServer` does).
    Measured rates converge to these as the batch grows; ``persona.labels``, ``bias``
    and the server's ``error_correlation`` do not enter.

    Derivation, with ``a = accuracy``, ``p = position_bias``, ``u = 1 - a`` (unsure) and
    ``r = (1 - p) / 2`` (an unsure answer's chance of each of the two labels other than
    the truth, when it does not take ``A`` by position). Given the truth, the answer's
    probabilities, in the order shown, are::

        truth A (better first):  A: a + u p       B: u r   TIE: u r
        truth B (better second): A: u (p + r)     B: a     TIE: u r
        truth TIE:               A: u (p + r)     B: u r   TIE: a

    With ``t = tie_share``, truth is A for ``(1 - t) / 2`` of the answers, B for as many
    and TIE for ``t``:

    * ``accuracy = (1 - t) / 2 (a + u p + a) + t a = a + (1 - t) u p / 2``: position bias
      helps exactly when the better candidate is shown first.
    * ``first_position = P(A) / (P(A) + P(B))`` with
      ``P(A) = (1 - t) / 2 (a + u p + u (p + r)) + t u (p + r)`` and
      ``P(B) = (1 - t) / 2 (u r + a) + t u r``; ``None`` when both are 0.
    * ``flip``: a decisive pair is seen once as truth A and once as truth B; the second
      answer mapped back (A <-> B) is A with ``a``, B with ``u (p + r)``, TIE with
      ``u r``, so the two agree with probability
      ``g = (a + u p) a + u r u (p + r) + (u r)^2``. A tie pair is truth TIE in both
      orders; mapped back the second is A with ``u r``, B with ``u (p + r)``, TIE with
      ``a``, so they agree with ``h = 2 u^2 r (p + r) + a^2``.
      ``flip = (1 - t)(1 - g) + t (1 - h)``.

    For example accuracy 0.6, position_bias 0.5, no ties: accuracy 0.7,
    first_position 0.55 / 0.9 = 0.611, flip 0.48.
    """
    if not (isinstance(tie_share, (int, float)) and 0.0 <= tie_share <= 1.0):
        raise ValueError(f"tie_share must be a share in [0, 1], got {tie_share!r}")
    a, p, t = persona.accuracy, persona.position_bias, float(tie_share)
    u = 1.0 - a
    r = (1.0 - p) / 2.0
    decisive = (1.0 - t) / 2.0  # the share of answers whose truth is A, and of those B
    p_a = decisive * (a + u * p + u * (p + r)) + t * u * (p + r)
    p_b = decisive * (u * r + a) + t * u * r
    agree_decisive = (a + u * p) * a + u * r * u * (p + r) + (u * r) ** 2
    agree_tie = 2.0 * u * u * r * (p + r) + a * a
    return PairwiseRates(
        first_position=p_a / (p_a + p_b) if p_a + p_b > 0 else None,
        flip=(1.0 - t) * (1.0 - agree_decisive) + t * (1.0 - agree_tie),
        accuracy=a + (1.0 - t) * u * p / 2.0,
    )


class _BatchRoute(NamedTuple):
    """A provider-batch endpoint: its protocol, the resource, the id and the action."""

    protocol: _BatchProtocol
    resource: Literal["files", "batches"]
    id: str | None
    action: str | None


def _batch_route(path: str) -> _BatchRoute | None:
    """The batch or file endpoint ``path`` names (with or without ``/v1``), else ``None``.

    ``/files``, ``/files/{id}``, ``/files/{id}/content``, ``/batches``, ``/batches/{id}``,
    ``/batches/{id}/cancel`` (OpenAI); ``/messages/batches``, ``/messages/batches/{id}``,
    ``/messages/batches/{id}/cancel`` and ``/results`` (Anthropic).
    """
    rest = path.removeprefix("/v1")
    parts = rest.split("/")[1:] if rest.startswith("/") else []
    protocol: _BatchProtocol = "openai"
    if parts[:2] == ["messages", "batches"]:
        protocol, parts = "anthropic", parts[1:]
    if not parts or parts[0] not in ("files", "batches") or len(parts) > 3 or "" in parts:
        return None
    if protocol == "anthropic" and parts[0] != "batches":
        return None
    resource: Literal["files", "batches"] = "files" if parts[0] == "files" else "batches"
    action = parts[2] if len(parts) == 3 else None
    allowed: tuple[str | None, ...] = (None, "content") if resource == "files" else (None, "cancel")
    if protocol == "anthropic":
        allowed = (None, "cancel", "results")
    if action not in allowed:
        return None
    return _BatchRoute(protocol, resource, parts[1] if len(parts) > 1 else None, action)


class VendorServer:
    """A simulated LLM vendor on a loopback address, served from a thread.

    Endpoints: ``POST /v1/chat/completions`` (and ``/chat/completions``), the OpenAI
    protocol; ``POST /v1/messages`` (and ``/messages``), the Anthropic Messages API;
    ``GET /v1/models``, ``GET /stats``, ``POST /stats/reset``; and the provider batch
    endpoints described below. With ``api_key`` set, the
    first three require it (else 401): chat completions and models as
    ``Authorization: Bearer <api_key>``, messages as ``x-api-key: <api_key>`` (or, as the
    Anthropic API also accepts, the bearer header). The stats endpoints never do.

    Both protocols share the personas, scripts, counters and item counts; every answer
    and error is written in the protocol of its request. A Messages request also needs
    an integer ``max_tokens`` >= 1 (else 400, before step 1), and one sent with
    ``anthropic-version: 2026-10-21`` or later gets a 400 for any of ``temperature``,
    ``top_p`` or ``top_k``, as the Anthropic API answers. Its answer is a ``message``
    with one text block, ``stop_reason`` ``"end_turn"`` and ``usage.input_tokens`` /
    ``output_tokens``; the system prompt (``system``) counts as prompt.

    How a chat or Messages request is answered, first match wins:

    1. a reply queued by :meth:`script` for its model, then one queued for ``"*"``;
    2. the :meth:`always` reply for its model, then the one for ``"*"``;
    3. the persona with that model name, else ``default_persona`` (which then seeds its
       RNG with the *requested* model name, so each unknown model is an independent
       critic);
    4. else 404 ``model_not_found``.

    A body that is not a JSON object, or lacks ``model``, gets 400 (before step 1), and
    so does a persona request without a ``messages`` list.

    The item is the text in the last ``<item>...</item>`` fence of the last user message,
    else that whole message (both stripped). Its truth is its gold label (an exact key,
    or, while the gold map has at most 256 entries, the first key in insertion order
    that occurs in the user message), else a label picked from the persona's labels by
    sha256 of the item text, so personas sharing a vocabulary agree on a latent truth.

    Correlated errors: with ``error_correlation`` rho in (0, 1) an item's difficulty d
    (set by ``difficulty`` or :meth:`set_difficulty`, else uniform in (0, 1) from sha256
    of ``difficulty_seed`` and the item; see :meth:`difficulty_of`) moves every persona
    the same way: with ``D = Phi^-1(d)`` and ``c = Phi^-1(1 - accuracy)``, a persona is
    right with probability ``Phi((-c - sqrt(rho) D) / sqrt(1 - rho))``, which averages
    to ``accuracy`` over uniform difficulties (a Gaussian threshold model: two personas'
    latent scores correlate by rho). A wrong persona then answers the item's distractor
    (a wrong label picked by sha256 of ``difficulty_seed`` and the item, shared by
    personas with the same vocabulary) with probability rho, else its usual wrong label.
    Accuracy 0 or 1 stays always wrong or always right. With rho 0 (the default)
    difficulty is unused and every persona errs independently.

    Pairwise requests (position bias): a last user message holding an ``<item>`` fence,
    then ``<response_a>`` and ``<response_b>`` fences, as the packaged ``pairwise``
    prompt renders them, is judged by content when its query (the ``<item>`` text,
    stripped) has an entry in ``better`` (or :meth:`set_better`): the better candidate's
    text, or ``None`` for a tie. Candidate texts are stripped before comparing. The truth
    in the order shown is ``"A"`` when the better text is in ``<response_a>``, ``"B"``
    when in ``<response_b>``, ``"TIE"`` for a tie or two identical candidates; the
    persona answers it with probability ``accuracy`` and is otherwise unsure, answering
    ``"A"`` with probability ``Persona.position_bias``, else a label other than the
    truth, uniformly (see :func:`pairwise_rates`). The draws are seeded with ``(seed,
    model, sha256 of the query and the candidates in the order shown)``, so the two
    orders of a pair are independent and a repeated request gets the same answer. Error correlation,
    difficulty, gold labels, ``Persona.labels`` and ``bias`` do not apply to them;
    faults, latency, confidence and styles do. A pairwise request whose query has no
    ``better`` entry, or whose candidates both differ from the better text, is answered
    like any other request (its item is the ``<item>`` text, truth by gold or by
    sha256): as before position bias existed, which gives both orders the same label,
    so such a simulation cannot tell a position-biased judge from a fair one.

    Determinism: a persona's answer, confidence, reasoning and jitter come from
    ``random.Random`` seeded with ``(seed, model, sha256(item))``: the same request gets
    the same answer every time (unless its persona has ``resample=True``: then the
    ``k``-th answer for an item at temperature > 0 adds ``k`` to the seed); with
    ``error_correlation`` 0 the draws are those of versions without it, so answers are
    unchanged. The fault decision of ``fault_rate``
    uses a separate stream seeded with ``(seed, model, sha256(item), n)`` where ``n``
    counts that model's requests for that item (never reset; for a pairwise request the
    pair's digest stands for ``sha256(item)``), so a retry of a faulted request may
    succeed and a rerun against a fresh server faults on the same attempts.

    Provider batches (half-price, asynchronous): OpenAI's Files and Batch API
    (``POST /v1/files`` with ``purpose=batch`` and a JSONL ``file``; ``POST /v1/batches``;
    ``GET /v1/batches/{id}``; ``POST /v1/batches/{id}/cancel``; ``GET /v1/files/{id}``
    and ``/content``) and Anthropic's Message Batches (``POST /v1/messages/batches``;
    ``GET /v1/messages/batches/{id}``; ``POST .../{id}/cancel``; ``GET .../{id}/results``),
    each also without ``/v1``, with the same auth as the live endpoints. Each request in a
    batch is answered exactly as the live endpoint answers the same body (same persona
    draw, text and usage, an error status included: an unknown model is a 404, a Messages
    body without ``max_tokens`` a 400), except that scripted replies (:meth:`script`,
    :meth:`always`), ``Persona.fault_rate`` faults (a vendor retries those inside a
    batch; the fault attempt counters do not move), latency and ``capacity`` do not
    apply. They count in :meth:`item_requests` and use up ``resample`` draws like live
    requests.

    Timing is counted in polls, never in seconds: a batch ends on its ``batch_polls``-th
    status poll (``GET`` of the batch) after creation, at once with 0 (the create
    response shows it ended); :meth:`complete_batches` ends all now. Answers are computed
    when it ends. An OpenAI batch reads ``"validating"`` until its first poll, then
    ``"in_progress"``, then ``"completed"``: answered requests in the output file
    (``{"id", "custom_id", "response": {"status_code": 200, "request_id", "body"},
    "error": null}``), the others in the error file (a non-200 ``response`` whose body is
    the error, or ``"response": null`` with ``"error": {"code": "batch_expired" |
    "batch_cancelled", "message"}``); a file id is ``null`` when it would be empty. A
    batch whose input file is invalid (see :func:`_openai_batch_errors`: one model per
    file, unique ``custom_id``...) is created, then ``"failed"`` on its first poll with
    ``errors.data`` of ``{"code", "message", "param", "line"}``, as the API reports it.
    An Anthropic batch reads ``"in_progress"`` then ``"ended"`` with a ``results_url``;
    a create request with a bad or duplicate ``custom_id`` gets a 400.

    Failures: ``batch_failure_rate`` / ``batch_expiry_rate`` fail (HTTP 500) or expire
    each request with a draw seeded by (batch id, ``custom_id``), batch ids being
    counters per server; :meth:`fail_batch_request` and :meth:`expire_batch_request`
    script the next request with a ``custom_id``; :meth:`expire_batch` expires a whole
    batch. An OpenAI batch holding an expired request ends ``"expired"`` (expiry is a
    batch event there); an Anthropic one ends ``"ended"`` with ``expired`` results.
    Cancelling makes it ``"cancelling"``/``"canceling"``; the next poll ends it with every
    request cancelled. Cancelling an ended batch, or reading an Anthropic batch's results
    before it ends, gets a 400; downloading an uploaded (``purpose=batch``) file gets a
    400, as the API refuses it.

    Every mutator is thread-safe. The server is started by :meth:`start`, ``with`` or
    ``async with``, and must be stopped (the context managers do it).
    """

    def __init__(
        self,
        personas: Iterable[Persona] = (),
        *,
        gold: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        default_persona: Persona | None = None,
        capacity: int | None = None,
        count_items: bool = False,
        error_correlation: float = 0.0,
        difficulty: Mapping[str, float] | None = None,
        difficulty_seed: int = 0,
        better: Mapping[str, str | None] | None = None,
        batch_polls: int = 1,
        batch_failure_rate: float = 0.0,
        batch_expiry_rate: float = 0.0,
    ) -> None:
        """Configure the server; nothing listens until :meth:`start`.

        ``host`` must be a loopback address (``127.x.x.x``, ``::1`` or ``"localhost"``,
        which binds ``127.0.0.1``); ``port=0`` picks a free port. Duplicate persona
        model names raise ``ValueError``. Gold keys are stripped, like item text.

        ``capacity`` simulates a vendor's concurrency limit the way DeepSeek enforces it:
        a chat request arriving while ``capacity`` requests are already being answered gets
        an immediate 429 with an error body and no ``Retry-After`` or rate-limit headers
        (counted in ``stats()["rate_limited"]``). ``count_items`` keeps a count of chat
        requests per item text, read with :meth:`item_requests` (memory grows with the
        number of distinct items, so it is off by default).

        ``error_correlation`` (in [0, 1), else ``ValueError``) makes personas' errors
        correlated through per-item difficulty (see the class docstring); ``difficulty``
        maps item texts (stripped) to difficulties in [0, 1] (else ``ValueError``), and
        ``difficulty_seed`` picks the difficulties and distractors of the other items.

        ``better`` maps pairwise queries to the better candidate's text, or ``None`` for a
        tie (see the class docstring); keys and texts are stripped, and a value that is
        neither a string nor ``None`` raises ``ValueError``.

        ``batch_polls`` (an int >= 0) is how many status polls a provider batch takes to
        end; ``batch_failure_rate`` and ``batch_expiry_rate`` (probabilities summing to at
        most 1) make requests in a batch fail or expire (see "Provider batches" in the
        class docstring). Invalid values raise ``ValueError``.
        """
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be >= 1 or None, got {capacity!r}")
        if not (isinstance(error_correlation, (int, float)) and 0.0 <= error_correlation < 1.0):
            raise ValueError(
                f"error_correlation must be a number in [0, 1), got {error_correlation!r}; "
                "0 makes personas err independently, values near 1 make them err together"
            )
        if isinstance(batch_polls, bool) or not isinstance(batch_polls, int) or batch_polls < 0:
            raise ValueError(f"batch_polls must be an int >= 0, got {batch_polls!r}")
        for name, rate in (
            ("batch_failure_rate", batch_failure_rate),
            ("batch_expiry_rate", batch_expiry_rate),
        ):
            if not (isinstance(rate, (int, float)) and 0.0 <= rate <= 1.0):
                raise ValueError(f"{name} must be a probability in [0, 1], got {rate!r}")
        if batch_failure_rate + batch_expiry_rate > 1.0:
            raise ValueError(
                "batch_failure_rate + batch_expiry_rate must be at most 1, got "
                f"{batch_failure_rate!r} + {batch_expiry_rate!r}"
            )
        if host == "localhost":
            host = "127.0.0.1"
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"VendorServer only listens on a loopback address, got host={host!r}; "
                "use '127.0.0.1', '::1' or 'localhost'"
            )
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535 (0 picks a free port), got {port!r}")
        self._host = host
        self._requested_port = port
        self._api_key = api_key
        self._default_persona = default_persona
        self._lock = threading.Lock()  # guards all state shared with the server thread
        self._lifecycle = threading.Lock()  # serialises start() / stop()
        self._personas: dict[str, Persona] = {}
        for persona in personas:
            if persona.model in self._personas:
                raise ValueError(
                    f"two personas share model {persona.model!r}; give each a distinct model"
                )
            self._personas[persona.model] = persona
        self._gold: dict[str, str] = {}
        for item, label in (gold or {}).items():
            self._gold[item.strip()] = label
        self._error_correlation = float(error_correlation)
        self._difficulty_seed = difficulty_seed
        self._difficulty: dict[str, float] = {}
        for item, value in (difficulty or {}).items():
            _check_difficulty(item, value)
            self._difficulty[item.strip()] = float(value)
        self._better: dict[str, str | None] = {}
        for query, text in (better or {}).items():
            self._better[query.strip()] = _checked_better(query, text)
        self._scripts: dict[str, deque[Reply]] = {}
        self._always: dict[str, Reply] = {}
        self._attempts: dict[tuple[str, str], int] = {}
        self._draws: dict[tuple[str, str], int] = {}
        self._recent: deque[dict[str, Any]] = deque(maxlen=_RECENT_MAX)
        self._requests = 0
        self._by_model: dict[str, int] = {}
        self._in_flight = 0
        self._max_in_flight = 0
        self._connections = 0
        self._faults = 0
        self._fault_kinds: Counter[str] = Counter()
        self._capacity = capacity
        self._rate_limited = 0
        self._item_counts: Counter[str] | None = Counter() if count_items else None
        self._run: _Run | None = None
        self._port: int | None = None
        # Completion ids: a counter (cheaper than uuid4 per request); next() is atomic.
        self._ids = itertools.count(1)
        # Provider batches. _batch_lock serialises batch and file state and is taken
        # before self._lock, never while holding it.
        self._batch_lock = threading.Lock()
        self._batch_polls = batch_polls
        self._batch_failure_rate = float(batch_failure_rate)
        self._batch_expiry_rate = float(batch_expiry_rate)
        self._files: dict[str, _SimFile] = {}
        self._batches: dict[str, _SimBatch] = {}
        self._scripted_batch: dict[str, deque[tuple[str, int, str | None]]] = {}
        self._batch_ids: dict[str, itertools.count[int]] = {}
        self._files_uploaded = 0
        self._batches_created: Counter[str] = Counter()
        self._batch_requests: Counter[str] = Counter()
        self._batch_status_polls = 0

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> VendorServer:
        """Start serving in a daemon thread and return once listening; returns ``self``.

        Idempotent while running; a stopped server can be started again (with
        ``port=0`` it may get a different port). Raises ``RuntimeError`` if it is not
        listening within 10 s or cannot bind (the cause is chained).
        """
        with self._lifecycle:
            if self._run is not None and self._run.thread and self._run.thread.is_alive():
                return self
            run = _Run()
            thread = threading.Thread(
                target=self._thread_main,
                args=(run,),
                name=f"cross-judge-vendor-server-{id(self):x}",
                daemon=True,
            )
            run.thread = thread
            thread.start()
            if not run.ready.wait(_START_TIMEOUT_S):
                self._request_stop(run)
                thread.join(_JOIN_TIMEOUT_S)
                raise RuntimeError(
                    f"VendorServer did not start listening within {_START_TIMEOUT_S:g} s"
                )
            if run.error is not None:
                thread.join(_JOIN_TIMEOUT_S)
                raise RuntimeError(
                    f"VendorServer could not listen on {self._host}:{self._requested_port}: "
                    f"{run.error}"
                ) from run.error
            self._run = run
            self._port = run.port
        return self

    def stop(self) -> None:
        """Stop serving; idempotent.

        Open requests (hanging or sleeping) are cancelled at once and their clients see
        the connection close; then the socket is closed and the thread joined (at most
        5 s; the thread is a daemon either way).
        """
        with self._lifecycle:
            run, self._run = self._run, None
            if run is None or run.thread is None:
                return
            self._request_stop(run)
            if run.thread is not threading.current_thread():
                run.thread.join(_JOIN_TIMEOUT_S)

    def _request_stop(self, run: _Run) -> None:
        # Under self._lock, like the publication in _serve, so a stop that races the
        # startup is never lost.
        with self._lock:
            run.stop_requested = True
            loop, event = run.loop, run.stop_event
        if loop is not None and event is not None:
            # RuntimeError: the loop already closed, so there is nothing left to stop.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    def _thread_main(self, run: _Run) -> None:
        try:
            asyncio.run(self._serve(run))
        except BaseException as exc:  # reported to start(); a thread must not raise
            run.error = exc
        finally:
            run.ready.set()

    async def _serve(self, run: _Run) -> None:
        loop = asyncio.get_running_loop()
        stop_event = asyncio.Event()
        server = _CountingServer(
            functools.partial(self._handle, run),
            on_connection=self._count_connection,
            # Cancel a handler when its client goes away, so hangs and sleeps do not
            # pile up and in_flight stays true.
            handler_cancellation=True,
            access_log=None,  # logging every request would dominate benchmark overhead
        )
        runner = web.ServerRunner(server, shutdown_timeout=_SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._requested_port, backlog=2048)
            await site.start()
            run.port = int(runner.addresses[0][1])
            with self._lock:
                run.loop, run.stop_event = loop, stop_event
                if run.stop_requested:
                    stop_event.set()
            run.ready.set()
            await stop_event.wait()
            for task in list(run.tasks):
                task.cancel()
        finally:
            await runner.cleanup()

    def __enter__(self) -> VendorServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> VendorServer:
        # In a worker thread: start() blocks until the server thread is listening.
        await anyio.to_thread.run_sync(self.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await anyio.to_thread.run_sync(self.stop)

    @property
    def port(self) -> int:
        """The port it is (or was last) listening on; ``RuntimeError`` before start()."""
        if self._port is None:
            raise RuntimeError("VendorServer has not been started; call start() or use `with`")
        return self._port

    @property
    def url(self) -> str:
        """The base URL for an OpenAI-compatible client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"{self.anthropic_url}/v1"

    @property
    def anthropic_url(self) -> str:
        """The base URL for an Anthropic client, e.g. ``http://127.0.0.1:PORT``: the
        ``anthropic`` SDK, and a cross-judge critic with ``vendor="anthropic"``, append
        ``/v1/messages`` to it."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    # -- configuration -----------------------------------------------------------------

    def add_persona(self, persona: Persona) -> None:
        """Serve ``persona`` under its model name, replacing any persona with that name."""
        with self._lock:
            self._personas[persona.model] = persona

    def set_gold(self, item_text: str, label: str) -> None:
        """Set the truth of an item (its text is stripped, like extracted item text)."""
        with self._lock:
            self._gold[item_text.strip()] = label

    def set_better(self, query_text: str, better_text: str | None) -> None:
        """Set which candidate is better for a pairwise query: its text, or ``None`` for
        a tie (see the class docstring). Both texts are stripped, like extracted ones; a
        ``better_text`` that is neither a string nor ``None`` raises ``ValueError``."""
        text = _checked_better(query_text, better_text)
        with self._lock:
            self._better[query_text.strip()] = text

    def _pair_truth_locked(self, pair: _Pair) -> str | None:
        """The truth label of ``pair`` in the order shown, ``None`` when it has none;
        caller holds ``self._lock``."""
        if pair.query not in self._better:
            return None
        better = self._better[pair.query]
        if better is None or pair.response_a == pair.response_b:
            return "TIE"
        if better == pair.response_a:
            return "A"
        if better == pair.response_b:
            return "B"
        return None

    def set_difficulty(self, item_text: str, difficulty: float) -> None:
        """Set the difficulty of an item, in [0, 1] (else ``ValueError``); its text is
        stripped, like extracted item text. It matters only with ``error_correlation`` > 0."""
        _check_difficulty(item_text, difficulty)
        with self._lock:
            self._difficulty[item_text.strip()] = float(difficulty)

    def difficulty_of(self, item_text: str) -> float:
        """The difficulty a request whose last user message is ``item_text`` gets.

        The item is found as for a request (the last ``<item>`` fence, else the whole
        text, stripped); its difficulty is the one set for it (an exact key, or, while at
        most 256 are set, the first key in insertion order that occurs in ``item_text``),
        else a number uniform in (0, 1) from sha256 of ``difficulty_seed`` and the item.
        Set values are returned as set, 0 and 1 included.
        """
        with self._lock:
            return self._difficulty_locked(_item_text(item_text), item_text)

    def _difficulty_locked(self, item: str, user_text: str) -> float:
        """The difficulty of ``item`` from ``user_text``; caller holds ``self._lock``."""
        value = self._difficulty.get(item)
        if value is None and len(self._difficulty) <= _GOLD_SUBSTRING_MAX:
            value = next((v for k, v in self._difficulty.items() if k and k in user_text), None)
        return _seeded_difficulty(item, self._difficulty_seed) if value is None else value

    def script(self, model: str, *replies: Reply) -> None:
        """Queue one-shot replies for ``model`` (``"*"``: any model), consumed FIFO.

        Queued replies come before :meth:`always` and before the persona; a model's own
        queue is consumed before the ``"*"`` queue. The model needs no persona.
        """
        with self._lock:
            self._scripts.setdefault(model, deque()).extend(replies)

    def always(self, model: str, reply: Reply | None) -> None:
        """Answer every request for ``model`` (``"*"``: any) with ``reply``; ``None`` clears."""
        with self._lock:
            if reply is None:
                self._always.pop(model, None)
            else:
                self._always[model] = reply

    # -- provider batches ------------------------------------------------------------------

    def complete_batches(self) -> list[str]:
        """End every batch that has not ended, now, as its next due poll would; returns
        their ids in creation order.

        A pending batch completes (OpenAI ``"completed"``, or ``"expired"`` when any of
        its requests expired; ``"failed"`` when its input file is invalid; Anthropic
        ``"ended"``), a cancelling one is cancelled.
        """
        with self._batch_lock:
            open_batches = [b for b in self._batches.values() if b.state != "ended"]
            for batch in open_batches:
                self._end_batch_locked(batch, cancelled=batch.state == "cancelling")
        return [b.id for b in open_batches]

    def expire_batch(self, batch_id: str) -> None:
        """End batch ``batch_id`` now with every request expired, as when its 24 h window
        passes: OpenAI status ``"expired"`` with each request in the error file
        (``batch_expired``), Anthropic ``"ended"`` with each result ``expired``.

        Raises ``KeyError`` for an unknown id and ``ValueError`` for a batch that ended.
        """
        with self._batch_lock:
            batch = self._batches[batch_id]
            if batch.state == "ended":
                raise ValueError(f"batch {batch_id!r} already ended ({batch.outcome})")
            self._end_batch_locked(batch, expire_all=True)

    def fail_batch_request(
        self, custom_id: str, *, status: int = 500, message: str | None = None
    ) -> None:
        """Make the next batch request with ``custom_id`` (either protocol) fail with HTTP
        ``status`` (400-599) instead of being answered; one-shot, queued FIFO with
        :meth:`expire_batch_request`.

        OpenAI: an error-file line whose ``response`` has that status and an error body;
        Anthropic: an ``errored`` result whose error type follows the status (500
        ``api_error``, 529 ``overloaded_error``, 400 ``invalid_request_error``, ...).
        """
        if not 400 <= status <= 599:
            raise ValueError(f"status must be in 400..599, got {status!r}")
        with self._lock:
            self._scripted_batch.setdefault(custom_id, deque()).append(("failed", status, message))

    def expire_batch_request(self, custom_id: str) -> None:
        """Make the next batch request with ``custom_id`` expire unanswered; one-shot. An
        OpenAI batch holding an expired request ends ``"expired"``."""
        with self._lock:
            self._scripted_batch.setdefault(custom_id, deque()).append(("expired", 0, None))

    def _new_id(self, prefix: str) -> str:
        """The next id with ``prefix`` (a counter per prefix, so a batch's id does not
        depend on the sizes of earlier batches); caller holds ``self._batch_lock``."""
        counter = self._batch_ids.setdefault(prefix, itertools.count(1))
        return f"{prefix}sim{next(counter):012d}"

    def _add_batch_locked(self, batch: _SimBatch) -> None:
        """Store a new batch, count it, and end it at once when ``batch_polls`` is 0;
        caller holds ``self._batch_lock``."""
        self._batches[batch.id] = batch
        with self._lock:
            self._batches_created[batch.protocol] += 1
            self._batch_requests[batch.protocol] += len(batch.requests)
        if batch.polls_to_end == 0:
            self._end_batch_locked(batch)

    def _poll_locked(self, batch: _SimBatch) -> None:
        """One status poll of ``batch``: it ends on its ``polls_to_end``-th (an invalid
        OpenAI batch fails on the first), a cancelling one on the next; caller holds
        ``self._batch_lock``."""
        with self._lock:
            self._batch_status_polls += 1
        if batch.state == "ended":
            return
        batch.polls += 1
        if batch.state == "cancelling":
            self._end_batch_locked(batch, cancelled=True)
        elif batch.polls >= batch.polls_to_end or batch.errors:
            self._end_batch_locked(batch)

    def _end_batch_locked(
        self, batch: _SimBatch, *, cancelled: bool = False, expire_all: bool = False
    ) -> None:
        """Answer ``batch``'s requests and end it; caller holds ``self._batch_lock``."""
        batch.ended_at = time.time()
        batch.state = "ended"
        if batch.protocol == "openai" and batch.errors and not (cancelled or expire_all):
            batch.outcome = "failed"
            batch.counts = {"total": 0, "completed": 0, "failed": 0}
            return
        results = [
            (custom_id, self._batch_result(batch, custom_id, body, cancelled, expire_all))
            for custom_id, body in batch.requests
        ]
        if batch.protocol == "anthropic":
            self._end_anthropic(batch, results, cancelled)
        else:
            self._end_openai(batch, results, cancelled)

    def _batch_result(
        self, batch: _SimBatch, custom_id: str, body: Any, cancelled: bool, expire_all: bool
    ) -> tuple[str, int, Any]:
        """What became of one request: ``("cancelled" | "expired", 0, None)``,
        ``("failed", status, error body)``, or ``("answered", status, body)`` (the live
        answer, an error status included)."""
        api: _Api = "chat" if batch.protocol == "openai" else "messages"
        if cancelled:
            return "cancelled", 0, None
        if expire_all:
            return "expired", 0, None
        with self._lock:
            queue = self._scripted_batch.get(custom_id)
            scripted = queue.popleft() if queue else None
            if queue is not None and not queue:
                del self._scripted_batch[custom_id]
        if scripted is None and (self._batch_failure_rate or self._batch_expiry_rate):
            u = random.Random(f"batch|{batch.id}|{custom_id}").random()
            if u < self._batch_expiry_rate:
                scripted = ("expired", 0, None)
            elif u < self._batch_expiry_rate + self._batch_failure_rate:
                scripted = ("failed", 500, None)
        if scripted is not None:
            kind, status, message = scripted
            if kind == "expired":
                return "expired", 0, None
            error = _error_body(status, message) if api == "chat" else None
            return "failed", status, json.loads(error or _anthropic_error_body(status, message))
        status, answer = self._batch_answer(body, api, batch.version)
        return "answered", status, answer

    def _batch_answer(self, body: Any, api: _Api, version: str | None) -> tuple[int, Any]:
        """The status and JSON body the live endpoint would answer ``body`` with, as a
        vendor runs a batch: no scripted reply, no fault, no latency."""
        refusal = _request_refusal(body, api, version)
        if refusal is None:
            model = str(body["model"])
            with self._lock:
                persona = self._personas.get(model, self._default_persona)
            if persona is None:
                refusal = _unknown_model(model, api)
            elif (refusal := _persona_refusal(body, api)) is None:
                draw = self._persona_draw(persona, model, body, faults=False)
                return 200, self._persona_body(model, draw, body, api)
        return refusal.status, json.loads(refusal.body(api))

    def _end_openai(
        self, batch: _SimBatch, results: list[tuple[str, tuple[str, int, Any]]], cancelled: bool
    ) -> None:
        output: list[bytes] = []
        failed: list[bytes] = []
        expired = False
        for custom_id, (kind, status, payload) in results:
            line: dict[str, Any] = {"id": self._new_id("batch_req_"), "custom_id": custom_id}
            if kind in ("expired", "cancelled"):
                expired = expired or kind == "expired"
                code, text = (
                    ("batch_expired", _EXPIRED_MESSAGE)
                    if kind == "expired"
                    else ("batch_cancelled", _CANCELLED_MESSAGE)
                )
                line |= {"response": None, "error": {"code": code, "message": text}}
            else:
                response = {"status_code": status, "request_id": self._new_id("req_")}
                line |= {"response": response | {"body": payload}, "error": None}
            encoded = json.dumps(line).encode() + b"\n"
            (output if kind == "answered" and status == 200 else failed).append(encoded)
        now = int(time.time())
        if output:
            batch.output_file_id = self._store_file_locked(
                f"{batch.id}_output.jsonl", "batch_output", b"".join(output), now
            )
        if failed:
            batch.error_file_id = self._store_file_locked(
                f"{batch.id}_error.jsonl", "batch_output", b"".join(failed), now
            )
        batch.counts = {"total": len(results), "completed": len(output), "failed": len(failed)}
        batch.outcome = "cancelled" if cancelled else "expired" if expired else "completed"

    def _end_anthropic(
        self, batch: _SimBatch, results: list[tuple[str, tuple[str, int, Any]]], cancelled: bool
    ) -> None:
        lines: list[bytes] = []
        counts = Counter({"succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
        for custom_id, (kind, status, payload) in results:
            result: dict[str, Any]
            if kind == "cancelled":
                result = {"type": "canceled"}
            elif kind == "expired":
                result = {"type": "expired"}
            elif kind == "answered" and status == 200:
                result = {"type": "succeeded", "message": payload}
            else:
                error = dict(payload) | {"request_id": self._new_id("req_")}
                result = {"type": "errored", "error": error}
            counts[result["type"]] += 1
            lines.append(json.dumps({"custom_id": custom_id, "result": result}).encode() + b"\n")
        batch.results = b"".join(lines)
        batch.counts = {"processing": 0, **counts}
        batch.outcome = "cancelled" if cancelled else "completed"

    def _store_file_locked(self, filename: str, purpose: str, content: bytes, now: int) -> str:
        file = _SimFile(self._new_id("file-"), filename, purpose, content, now)
        self._files[file.id] = file
        return file.id

    # -- observation -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters since start or :meth:`reset_stats` (a snapshot copy).

        ``requests`` and ``by_model`` count chat-completion and Messages requests
        (including rejected ones), ``connections`` the TCP connections accepted, ``faults``
        the random faults injected by ``Persona.fault_rate`` (not scripted errors) and
        ``faults_by_kind`` the same per kind (``"429"``, ``"500"``, ``"503"``,
        ``"malformed"``: a truncated 200),
        ``rate_limited`` the 429s sent because ``capacity`` was full, and ``max_in_flight``
        the most requests being answered at once (those refused by ``capacity`` never count
        as being answered).

        Provider batches are counted apart (none of their calls is in ``requests``,
        ``by_model`` or ``max_in_flight``): ``files_uploaded`` the files accepted by
        ``POST /v1/files``, ``batches`` and ``batch_requests`` the batches created and the
        requests they hold, each as ``{"openai": n, "anthropic": n}``, and
        ``batch_polls`` the status polls (``GET`` of a batch, either protocol).
        """
        with self._lock:
            return {
                "requests": self._requests,
                "by_model": dict(self._by_model),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "connections": self._connections,
                "faults": self._faults,
                "faults_by_kind": dict(self._fault_kinds),
                "rate_limited": self._rate_limited,
                "files_uploaded": self._files_uploaded,
                "batches": {p: self._batches_created[p] for p in ("openai", "anthropic")},
                "batch_requests": {p: self._batch_requests[p] for p in ("openai", "anthropic")},
                "batch_polls": self._batch_status_polls,
            }

    def item_requests(self) -> dict[str, int]:
        """Chat and Messages requests answered by a persona, per item text (the fenced item,
        as personas see it), since start or :meth:`reset_stats`; retries count. Needs
        ``count_items=True``; ``RuntimeError`` otherwise."""
        with self._lock:
            if self._item_counts is None:
                raise RuntimeError("construct VendorServer(count_items=True) to count items")
            return dict(self._item_counts)

    def reset_stats(self) -> None:
        """Zero the counters and forget :attr:`recent_requests`.

        ``in_flight`` is live and kept; ``max_in_flight`` restarts from it. Scripts,
        ``always`` replies and the fault attempt counters are untouched.
        """
        with self._lock:
            self._requests = 0
            self._by_model.clear()
            self._max_in_flight = self._in_flight
            self._connections = 0
            self._faults = 0
            self._fault_kinds.clear()
            self._rate_limited = 0
            self._files_uploaded = 0
            self._batches_created.clear()
            self._batch_requests.clear()
            self._batch_status_polls = 0
            self._recent.clear()
            if self._item_counts is not None:
                self._item_counts.clear()

    @property
    def recent_requests(self) -> list[dict[str, Any]]:
        """The last 100 chat-completion and Messages requests, oldest first (``path``
        tells them apart).

        Each is ``{"model", "body", "headers", "path"}``: ``body`` is the parsed JSON
        (``None`` if it was not JSON), ``model`` its ``model`` field (or ``None``);
        ``Authorization`` reads ``"Bearer ***"`` and ``x-api-key``/``api-key`` ``"***"``.
        """
        with self._lock:
            return [dict(entry) for entry in self._recent]

    def _count_connection(self) -> None:
        with self._lock:
            self._connections += 1

    # -- request handling (server thread) ----------------------------------------------

    async def _handle(self, run: _Run, request: web.BaseRequest) -> web.StreamResponse:
        path, method = request.path, request.method
        if path in _CHAT_PATHS:
            if method != "POST":
                return _error_response(405, f"Use POST for {path}")
            return await self._chat(run, request, "chat")
        if path in _MESSAGES_PATHS:
            if method != "POST":
                return _api_error_response("messages", 405, f"Use POST for {path}")
            return await self._chat(run, request, "messages")
        if path in _MODELS_PATHS:
            if method != "GET":
                return _error_response(405, f"Use GET for {path}")
            if not self._authorized(request, "chat"):
                return self._unauthorized("chat")
            with self._lock:
                models = list(self._personas)
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "cross-judge-testing"}
                for m in models
            ]
            return _json_response({"object": "list", "data": data})
        batch_route = _batch_route(path)
        if batch_route is not None:
            return await self._batch_endpoint(request, batch_route)
        if path == "/stats" and method == "GET":
            return _json_response(self.stats())
        if path == "/stats/reset" and method == "POST":
            self.reset_stats()
            return _json_response(self.stats())
        return _error_response(404, f"Unknown endpoint: {method} {path}")

    # -- provider batch endpoints (server thread) ----------------------------------------

    async def _batch_endpoint(self, request: web.BaseRequest, route: _BatchRoute) -> web.Response:
        api: _Api = "chat" if route.protocol == "openai" else "messages"
        expected = "POST" if route.id is None or route.action == "cancel" else "GET"
        if request.method != expected:
            return _Refusal(405, f"Use {expected} for {request.path}").response(api)
        if not self._authorized(request, api):
            return self._unauthorized(api)
        if route.resource == "files":
            if route.id is None:
                return await self._upload_file(request)
            return self._get_file(route.id, content=route.action == "content")
        if route.id is None:
            raw = await request.content.read()
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = None
            if route.protocol == "openai":
                return self._create_openai_batch(body)
            return self._create_anthropic_batch(body, request)
        origin = f"{request.scheme}://{request.host}"
        with self._batch_lock:
            batch = self._batches.get(route.id)
            if batch is None or batch.protocol != route.protocol:
                if api == "chat":
                    return _Refusal(404, f"No batch found with id '{route.id}'.").response(api)
                return _Refusal(404, f"message_batch_id: {route.id} not found").response(api)
            if route.action is None:
                self._poll_locked(batch)
            elif route.action == "cancel":
                if batch.state == "ended":
                    message = f"Batch {batch.id} has ended ({batch.outcome}): nothing to cancel."
                    return _Refusal(400, message).response(api)
                if batch.state == "pending":
                    batch.state, batch.cancel_at = "cancelling", time.time()
            else:  # results
                if batch.state != "ended":
                    message = f"Batch {batch.id} is still processing: no results yet."
                    return _Refusal(400, message).response(api)
                return web.Response(
                    body=batch.results, headers={"Content-Type": "application/binary"}
                )
            return _json_response(batch.wire(origin))

    async def _upload_file(self, request: web.BaseRequest) -> web.Response:
        """``POST /v1/files``: multipart with ``purpose`` ``"batch"`` and ``file``."""
        if not request.content_type.startswith("multipart/"):
            return _Refusal(400, "The request must be multipart/form-data.").response("chat")
        purpose: str | None = None
        filename, content = "", None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "purpose":
                purpose = (await part.text()).strip()
            elif part.name == "file":
                filename = part.filename or "upload.jsonl"
                content = bytes(await part.read())
            else:
                await part.release()
        if purpose is None:
            return _Refusal(400, "Missing required parameter: 'purpose'.").response("chat")
        if purpose != "batch":
            message = f"Invalid purpose {purpose!r}: the simulated vendor accepts only 'batch'."
            return _Refusal(400, message).response("chat")
        if content is None:
            return _Refusal(400, "Missing required parameter: 'file'.").response("chat")
        if len(content) > _OPENAI_MAX_FILE_BYTES:
            message = f"File is {len(content)} bytes; the batch limit is {_OPENAI_MAX_FILE_BYTES}."
            return _Refusal(400, message).response("chat")
        with self._batch_lock:
            file_id = self._store_file_locked(filename, "batch", content, int(time.time()))
            wire = self._files[file_id].wire()
        with self._lock:
            self._files_uploaded += 1
        return _json_response(wire)

    def _get_file(self, file_id: str, *, content: bool) -> web.Response:
        with self._batch_lock:
            file = self._files.get(file_id)
        if file is None:
            return _Refusal(404, f"No such File object: {file_id}").response("chat")
        if not content:
            return _json_response(file.wire())
        if file.purpose == "batch":
            message = "Not allowed to download files of purpose: batch"
            return _Refusal(400, message).response("chat")
        return web.Response(body=file.content, headers={"Content-Type": "application/jsonl"})

    def _create_openai_batch(self, body: Any) -> web.Response:
        """``POST /v1/batches``; the input file is validated as the batch runs (see
        :func:`_openai_batch_errors`), so an invalid one makes a ``"failed"`` batch."""
        if not isinstance(body, dict):
            return _Refusal(400, "The request body is not a JSON object.").response("chat")
        file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
        window, metadata = body.get("completion_window"), body.get("metadata")
        if not isinstance(file_id, str):
            return _Refusal(400, "Missing required parameter: 'input_file_id'.").response("chat")
        if endpoint != _BATCH_ENDPOINT:
            message = f"Invalid 'endpoint' {endpoint!r}: the simulated vendor serves only "
            return _Refusal(400, message + f"{_BATCH_ENDPOINT!r}.").response("chat")
        if window != "24h":
            message = f"Invalid 'completion_window' {window!r}: only '24h' is supported."
            return _Refusal(400, message).response("chat")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= _METADATA_MAX_PAIRS
            and all(isinstance(v, str) for v in metadata.values())
        ):
            message = "Invalid 'metadata': at most 16 string keys with string values."
            return _Refusal(400, message).response("chat")
        with self._batch_lock:
            file = self._files.get(file_id)
            if file is None:
                return _Refusal(404, f"No such File object: {file_id}").response("chat")
            if file.purpose != "batch":
                message = f"File {file_id} has purpose {file.purpose!r}, not 'batch'."
                return _Refusal(400, message).response("chat")
            requests, errors = _openai_batch_errors(file.content)
            batch = _SimBatch(
                self._new_id("batch_"),
                "openai",
                time.time(),
                requests,
                self._batch_polls,
                input_file_id=file_id,
                metadata=None if metadata is None else dict(metadata),
                errors=errors,
            )
            self._add_batch_locked(batch)
            return _json_response(batch.wire(""))

    def _create_anthropic_batch(self, body: Any, request: web.BaseRequest) -> web.Response:
        """``POST /v1/messages/batches`` (see :func:`_anthropic_batch_refusal`)."""
        refusal = _anthropic_batch_refusal(body)
        if refusal is not None:
            return _Refusal(400, refusal).response("messages")
        requests = [(entry["custom_id"], entry["params"]) for entry in body["requests"]]
        with self._batch_lock:
            batch = _SimBatch(
                self._new_id("msgbatch_"),
                "anthropic",
                time.time(),
                requests,
                self._batch_polls,
                version=request.headers.get("anthropic-version"),
            )
            self._add_batch_locked(batch)
            return _json_response(batch.wire(f"{request.scheme}://{request.host}"))

    def _authorized(self, request: web.BaseRequest, api: _Api) -> bool:
        if self._api_key is None:
            return True
        bearer = request.headers.get("Authorization") == f"Bearer {self._api_key}"
        if api == "messages":
            key = request.headers.get("x-api-key")
            return key == self._api_key if key is not None else bearer
        return bearer

    @staticmethod
    def _unauthorized(api: _Api) -> web.Response:
        if api == "messages":
            return _api_error_response("messages", 401, "invalid x-api-key (cross_judge.testing)")
        return _error_response(401, "Incorrect API key provided (cross_judge.testing).")

    async def _chat(self, run: _Run, request: web.BaseRequest, api: _Api) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            run.tasks.add(task)
        with self._lock:
            self._requests += 1
            refused = self._capacity is not None and self._in_flight >= self._capacity
            if refused:
                self._rate_limited += 1
            else:
                self._in_flight += 1
                self._max_in_flight = max(self._max_in_flight, self._in_flight)
        if refused:
            if task is not None:
                run.tasks.discard(task)
            # DeepSeek's 429: an error body, no Retry-After, no x-ratelimit-* headers.
            return _api_error_response(
                api, 429, "Rate limit reached for requests (simulated capacity)"
            )
        try:
            return await self._answer_chat(request, api)
        finally:
            with self._lock:
                self._in_flight -= 1
            if task is not None:
                run.tasks.discard(task)

    async def _answer_chat(self, request: web.BaseRequest, api: _Api) -> web.StreamResponse:
        # request.content has no size cap (request.read() stops at 1 MiB).
        raw = await request.content.read()
        try:
            body: Any = json.loads(raw)
        except ValueError:  # includes UnicodeDecodeError
            body = None
        model = body.get("model") if isinstance(body, dict) else None
        headers: dict[str, str] = {}
        for key, value in request.headers.items():
            lower = key.lower()
            if lower == "authorization":
                value = "Bearer ***"
            elif lower in _SECRET_HEADERS:
                value = "***"
            headers[key] = value
        with self._lock:
            self._recent.append(
                {
                    "model": model if isinstance(model, str) else None,
                    "body": body,
                    "headers": headers,
                    "path": request.path,
                }
            )
            if isinstance(model, str):
                self._by_model[model] = self._by_model.get(model, 0) + 1

        if not self._authorized(request, api):
            return self._unauthorized(api)
        refusal = _request_refusal(body, api, request.headers.get("anthropic-version"))
        if refusal is not None:
            return refusal.response(api)
        model = str(model)  # a non-empty string: _request_refusal checked

        with self._lock:
            reply = self._take_reply(model)
            persona = self._personas.get(model, self._default_persona)
        if reply is not None:
            return await self._send_reply(request, reply, model, body, api)
        if persona is None:
            return _unknown_model(model, api).response(api)
        refusal = _persona_refusal(body, api)
        if refusal is not None:
            return refusal.response(api)
        draw = self._persona_draw(persona, model, body, faults=True)
        if draw.decision.delay:
            await asyncio.sleep(draw.decision.delay)
        if draw.fault is not None:
            return _fault_response(draw.fault, api)
        return _json_response(self._persona_body(model, draw, body, api))

    def _take_reply(self, model: str) -> Reply | None:
        """Pop a scripted reply, else the ``always`` one; caller holds ``self._lock``."""
        for key in (model, "*"):
            queue = self._scripts.get(key)
            if queue:
                reply = queue.popleft()
                if not queue:
                    del self._scripts[key]
                return reply
        return self._always.get(model) or self._always.get("*")

    async def _send_reply(
        self, request: web.BaseRequest, reply: Reply, model: str, body: dict[str, Any], api: _Api
    ) -> web.StreamResponse:
        action = reply.action
        if action == "trickle":
            return await self._trickle(request, reply, model, body, api)
        if reply.latency:
            await asyncio.sleep(reply.latency)
        usage = json.loads(reply.usage_json) if reply.usage_json is not None else None
        messages = body.get("messages")
        if not isinstance(messages, list):
            messages = []
        if action == "content" and api == "messages":
            stop_reason = _STOP_REASONS.get(reply.finish_reason, reply.finish_reason)
            if reply.refusal is not None:
                stop_reason = "refusal"
            return _json_response(
                self._message(
                    model,
                    reply.text,
                    stop_reason,
                    prompt=_message_text(body.get("system")) + _all_text(messages),
                    thinking=reply.reasoning_content,
                    refusal=reply.refusal,
                    usage=usage,
                )
            )
        if action == "content":
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if reply.reasoning_content is not None:
                message["reasoning_content"] = reply.reasoning_content
            if reply.refusal is not None:
                message["refusal"] = reply.refusal
            return _json_response(
                self._completion(model, message, reply.finish_reason, messages, usage=usage)
            )
        if action == "hang":
            # Never resolved: ends by cancellation (client gone or stop()).
            await asyncio.get_running_loop().create_future()
        if action == "reset":
            return self._drop_connection(request)
        headers = dict(reply.headers)
        # A Content-Type given in Reply.status(headers=...) wins over the default.
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = reply.content_type
        payload = reply.body
        if api == "messages" and reply.anthropic_body is not None:
            payload = reply.anthropic_body
        return web.Response(body=payload, status=reply.status_code, headers=headers)

    async def _trickle(
        self, request: web.BaseRequest, reply: Reply, model: str, body: dict[str, Any], api: _Api
    ) -> web.StreamResponse:
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        if api == "messages":
            prompt = _message_text(body.get("system")) + _all_text(messages)
            answer = self._message(model, reply.text, "end_turn", prompt=prompt)
        else:
            message = {"role": "assistant", "content": reply.text}
            answer = self._completion(model, message, "stop", messages)
        payload = json.dumps(answer).encode()
        response = web.StreamResponse(
            status=200,
            headers={"Content-Type": "application/json", "Content-Length": str(len(payload))},
        )
        await response.prepare(request)
        for i in range(len(payload)):
            # Ends early by cancellation: the client went away, or stop().
            await response.write(payload[i : i + 1])
            await asyncio.sleep(reply.latency)
        await response.write_eof()
        return response

    @staticmethod
    def _drop_connection(request: web.BaseRequest) -> web.StreamResponse:
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # SO_LINGER 0: close() sends a TCP RST instead of an orderly FIN. If the
                # platform refuses, the FIN mid-body still fails the client's read.
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b'Content-Length: 4096\r\n\r\n{"id": "chatcmpl-'
            )
            transport.abort()
        return _DroppedResponse()

    def _persona_draw(
        self, persona: Persona, model: str, body: Mapping[str, Any], *, faults: bool
    ) -> _Draw:
        """What ``persona`` answers a request ``body`` (already validated: ``messages`` is
        a list) with. ``faults=False`` (batch requests) neither injects ``fault_rate``
        faults nor advances the fault attempt counters."""
        messages = body["messages"]
        temperature = body.get("temperature", 1.0)
        user_text = _last_user_text(messages)
        pair = _pair_texts(user_text)
        pair_truth: str | None = None
        if pair is not None:
            with self._lock:
                pair_truth = self._pair_truth_locked(pair)
        if pair is not None and pair_truth is not None:
            item, digest = pair.query, _pair_digest(pair)
        else:
            item = _item_text(user_text)
            digest = hashlib.sha256(item.encode()).hexdigest()
        rho = self._error_correlation
        truth: str | None = None
        difficulty = 0.5
        with self._lock:
            if self._item_counts is not None:
                self._item_counts[item] += 1
            if pair_truth is None:
                truth = self._gold.get(item)
                if truth is None and len(self._gold) <= _GOLD_SUBSTRING_MAX:
                    truth = next((v for k, v in self._gold.items() if k and k in user_text), None)
                # Unused without correlation: skip the lookup and the hash.
                difficulty = self._difficulty_locked(item, user_text) if rho else 0.5
            fault: str | None = None
            if faults and persona.fault_rate > 0:
                attempt = self._attempts.get((model, digest), 0)
                self._attempts[(model, digest)] = attempt + 1
                frng = random.Random(f"fault|{persona.seed}|{model}|{digest}|{attempt}")
                if frng.random() < persona.fault_rate:
                    fault = frng.choice(("429", "500", "503", "malformed"))
                    self._faults += 1
                    self._fault_kinds[fault] += 1
            draw = 0
            if persona.resample and fault is None and _samples(temperature):
                draw = self._draws.get((model, digest), 0)
                self._draws[(model, digest)] = draw + 1
        # Draw 0 is seeded as without resample, so its answers stay byte-identical.
        seed_digest = digest if draw == 0 else f"{digest}|draw{draw}"
        if pair_truth is not None:
            labels: tuple[str, ...] = _PAIR_LABELS
            decision = _decide_pair(persona, model, pair_truth, seed_digest)
        else:
            labels = persona.labels
            if truth is None:
                truth = labels[int(digest[:16], 16) % len(labels)]
            decision = _decide(
                persona,
                model,
                truth,
                seed_digest,
                difficulty=difficulty,
                error_correlation=rho,
                distractor_key=_distractor_key(item, self._difficulty_seed) if rho else 0,
            )
        return _Draw(decision, labels, persona.style, fault)

    def _persona_body(
        self, model: str, draw: _Draw, body: Mapping[str, Any], api: _Api
    ) -> dict[str, Any]:
        """The 200 body answering ``body`` with ``draw`` (a drawn fault aside), in the
        protocol ``api``."""
        decision = draw.decision
        messages = body["messages"]
        confidence = round(decision.confidence, 2)
        text = _render(draw.style, decision.kind, confidence, decision.reasoning, draw.labels)
        if api == "messages":
            prompt = _message_text(body.get("system")) + _all_text(messages)
            return self._message(model, text, "end_turn", prompt=prompt)
        message = {"role": "assistant", "content": text}
        return self._completion(model, message, "stop", messages)

    def _completion(
        self,
        model: str,
        message: dict[str, Any],
        finish_reason: str,
        messages: list[Any],
        *,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        prompt_chars = sum(
            len(_message_text(m.get("content"))) for m in messages if isinstance(m, dict)
        )
        content = message.get("content")
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = len(content) // 4 if isinstance(content, str) else 0
        if usage is None:
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return {
            "id": f"chatcmpl-sim{next(self._ids):012d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
            ],
            "usage": usage,
        }

    def _message(
        self,
        model: str,
        text: str | None,
        stop_reason: str,
        *,
        prompt: str,
        thinking: str | None = None,
        refusal: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An Anthropic Messages response body."""
        content: list[dict[str, Any]] = []
        if thinking is not None:
            content.append({"type": "thinking", "thinking": thinking, "signature": "simulated"})
        if text is not None:
            content.append({"type": "text", "text": text})
        if usage is None:
            usage = {
                "input_tokens": max(1, len(prompt) // 4),
                "output_tokens": (len(text or "") + len(thinking or "")) // 4,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
        details = None
        if refusal is not None:
            details = {"type": "refusal", "category": None, "explanation": refusal}
        return {
            "id": f"msg_sim{next(self._ids):012d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": details,
            "usage": usage,
        }


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
    parser.add_argument("--style", choices=sorted(_STYLES), default="json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
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
        )

    try:
        server = VendorServer(
            [persona(m) for m in dict.fromkeys(args.persona)],
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


if __name__ == "__main__":
    sys.exit(main())
