"""Wire adapters: one small module per protocol, each turning a request into text + usage.

``openai_compat`` speaks chat completions (deepseek, openai, openrouter, custom, local
servers) over the HTTP client chosen in :mod:`._http`. ``anthropic`` speaks the Anthropic
Messages API through the official ``anthropic`` SDK; it is not imported here (the SDK takes
about 2 s to import), only by the first Anthropic call. Both pool their clients per event
loop and endpoint in :mod:`._pool`, and :func:`aclose_sessions` closes them all. Failures
come out as :class:`CallFailure`, classified by :class:`~cross_judge.errors.ErrorKind`;
retries are not done here.
"""

from ._failure import CallFailure
from ._http import HTTPSession, RawResponse
from ._pool import aclose_sessions, shared_session
from ._wire import ChatRequest, Completion

__all__ = [
    "CallFailure",
    "ChatRequest",
    "Completion",
    "HTTPSession",
    "RawResponse",
    "aclose_sessions",
    "shared_session",
]
