"""Wire adapters: one small module per protocol, each turning a request into text + usage.

``openai_compat`` speaks chat completions (deepseek, openai, openrouter, custom, local
servers). The HTTP client under them is chosen in :mod:`._http` and pooled per event loop
in :mod:`._pool`. Failures come out as :class:`CallFailure`, classified by
:class:`~cross_judge.errors.ErrorKind`; retries are not done here.
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
