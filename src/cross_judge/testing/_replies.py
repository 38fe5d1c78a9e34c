"""Scripted responses: :class:`Reply`, what :meth:`VendorServer.script` and
:meth:`VendorServer.always` queue instead of a persona's answer.

A reply is an immutable description (a content answer, an error status, a hang, an HTML
page, a verbatim body, a reset, a trickle). Sending one over a connection is the chat
endpoints' job (:mod:`._chat_endpoints`), not this module's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

from ._personas import check_latency
from ._protocol import anthropic_error_body, error_body

__all__ = ["Reply"]


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
        check_latency("latency", latency)
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
        check_latency("latency", latency)
        hdrs = dict(headers or {})
        if retry_after is not None:
            check_latency("retry_after", retry_after)
            hdrs = {k: v for k, v in hdrs.items() if k.lower() != "retry-after"}
            hdrs["Retry-After"] = _format_seconds(retry_after)
        if body is not None:
            payload, anthropic_payload = body.encode(), None
        else:
            payload = error_body(code, message)
            anthropic_payload = anthropic_error_body(code, message)
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
        check_latency("latency", latency)
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
