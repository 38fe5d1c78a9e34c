"""Wire adapters: one small module per protocol, each turning a request into text + usage.

``openai_compat`` speaks chat completions (deepseek, openai, openrouter, custom, local
servers) over the HTTP client chosen in :mod:`._http`. ``anthropic`` speaks the Anthropic
Messages API through the official ``anthropic`` SDK; it is not imported here (the SDK takes
2-3 s to import), only by the first Anthropic call, before that call's clock starts. Both
pool their clients per event loop and endpoint in :mod:`._pool`, and
:func:`aclose_sessions` closes them all. Both send what
:meth:`ChatRequest.sent_settings` says for their protocol, and nothing else. Failures come
out as :class:`CallFailure`, classified by :class:`~cross_judge.errors.ErrorKind`; retries
are not done here.
"""

from ._failure import CallFailure
from ._http import HTTPSession, RawResponse
from ._pool import aclose_sessions, shared_session
from ._wire import (
    CACHE_KEY_VERSION,
    AnswerSchema,
    ChatRequest,
    Completion,
    StructuredForm,
    TokenLogprob,
    endpoint_identity,
)

__all__ = [
    "CACHE_KEY_VERSION",
    "AnswerSchema",
    "CallFailure",
    "ChatRequest",
    "Completion",
    "HTTPSession",
    "RawResponse",
    "StructuredForm",
    "TokenLogprob",
    "aclose_sessions",
    "endpoint_identity",
    "shared_session",
]
