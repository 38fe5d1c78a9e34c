"""Wire adapters: one small module per protocol, each turning a request into text + usage.

Each protocol is a :class:`WireAdapter` in a registry (:func:`protocol_adapter`,
:func:`register_protocol`): ``"openai"`` (:mod:`.openai_compat`), ``"anthropic"``
(:mod:`.anthropic`) and ``"openai-responses"`` (OpenAI's Responses API), registered when
this package is imported.

``openai_compat`` speaks chat completions (deepseek, openai, openrouter, custom, local
servers) over the HTTP client chosen in :mod:`._http`. ``anthropic`` speaks the Anthropic
Messages API through the official ``anthropic`` SDK; the module is imported here, the SDK
(2-3 s to import) only by the first Anthropic call, before that call's clock starts. Both
pool their clients per event loop and endpoint in :mod:`._pool`, and
:func:`aclose_sessions` closes them all. Both send what
:meth:`ChatRequest.sent_settings` says for their protocol, and nothing else. Failures come
out as :class:`CallFailure`, classified by :class:`~cross_judge.errors.ErrorKind`; retries
are not done here.
"""

from . import _responses, anthropic, openai_compat  # noqa: F401  # register the protocols
from ._adapter import Connection, WireAdapter, protocol_adapter, protocol_names, register_protocol
from ._failure import CallFailure
from ._http import HTTPSession, HttpxSession, RawResponse, SyncDuckSession
from ._pool import aclose_sessions, endpoint_key, loop_token, shared_session
from ._wire import (
    CACHE_KEY_VERSION,
    AnswerSchema,
    ChatRequest,
    Completion,
    ContentPart,
    Message,
    StructuredForm,
    TextPart,
    TokenLogprob,
    endpoint_identity,
)

__all__ = [
    "CACHE_KEY_VERSION",
    "AnswerSchema",
    "CallFailure",
    "ChatRequest",
    "Completion",
    "Connection",
    "ContentPart",
    "HTTPSession",
    "HttpxSession",
    "Message",
    "RawResponse",
    "StructuredForm",
    "SyncDuckSession",
    "TextPart",
    "TokenLogprob",
    "WireAdapter",
    "aclose_sessions",
    "endpoint_identity",
    "endpoint_key",
    "loop_token",
    "protocol_adapter",
    "protocol_names",
    "register_protocol",
    "shared_session",
]
