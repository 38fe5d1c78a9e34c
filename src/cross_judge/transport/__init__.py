"""Wire adapters: one small module per protocol, each turning a request into text + usage.

Each protocol is a :class:`WireAdapter` in a registry (:func:`protocol_adapter`,
:func:`register_protocol`): ``"openai"`` (:mod:`._openai_compat`), ``"anthropic"``
(:mod:`._anthropic`) and ``"openai-responses"`` (OpenAI's Responses API), registered when
this package is imported.

``_openai_compat`` speaks chat completions (deepseek, openai, openrouter, custom, local
servers) over the HTTP client chosen in :mod:`._http`. ``_anthropic`` speaks the Anthropic
Messages API through the official ``anthropic`` SDK; the module is imported here, the SDK
(2-3 s to import) only by the first Anthropic call, before that call's clock starts. Both
pool their clients per event loop and endpoint in :mod:`._pool`, and
:func:`aclose_sessions` closes them all. Both send what
:meth:`ChatRequest.sent_settings` says for their protocol, and nothing else. Failures come
out as :class:`CallFailure`, classified by :class:`~cross_judge.errors.ErrorKind`.

The package also holds what every protocol shares: the one retry policy
(:func:`call_with_retries`), secret redaction (:func:`redact`, :class:`Redactor`), running a
blocking 0.1-style client off the event loop (:func:`run_blocking`) and the provider batch
APIs (:func:`batch_api`, :func:`submit`, :func:`poll`, :func:`fetch_results`,
:func:`cancel`, with the codec's :func:`split` and :func:`request_id`). The protocols and the
names used on every call are imported with the package; the rest on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports
from . import _anthropic, _openai_compat, _responses  # noqa: F401  # register the protocols
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
    ImagePart,
    Message,
    StructuredForm,
    TextPart,
    TokenLogprob,
    endpoint_identity,
    size_problem,
)

__all__ = [
    "CACHE_KEY_VERSION",
    "MAX_RETRY_AFTER_S",
    "AnswerSchema",
    "BatchLimits",
    "CallFailure",
    "ChatCompletionsAdapter",
    "ChatRequest",
    "Completion",
    "Connection",
    "ContentPart",
    "Gate",
    "HTTPSession",
    "HttpxSession",
    "ImagePart",
    "Message",
    "Outcome",
    "RawResponse",
    "Redactor",
    "SetUpLine",
    "StructuredForm",
    "SyncDuckSession",
    "TextPart",
    "TokenLogprob",
    "WireAdapter",
    "aclose_sessions",
    "batch_api",
    "call_with_retries",
    "cancel",
    "endpoint_identity",
    "endpoint_key",
    "fetch_results",
    "loop_token",
    "poll",
    "protocol_adapter",
    "protocol_names",
    "redact",
    "redacted_exception",
    "redactor_for",
    "register_protocol",
    "request_id",
    "run_blocking",
    "secrets_of",
    "shared_session",
    "size_problem",
    "split",
    "submit",
]

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._batch_codecs import BatchLimits, Outcome, request_id, split
    from ._batches import batch_api, cancel, fetch_results, poll, submit
    from ._blocking import run_blocking
    from ._first_use import SetUpLine
    from ._openai_compat import ChatCompletionsAdapter
    from ._redaction import Redactor, redact, redacted_exception, redactor_for, secrets_of
    from ._retry import MAX_RETRY_AFTER_S, Gate, call_with_retries

_exports = LazyExports(
    __name__,
    {
        "BatchLimits": "._batch_codecs",
        "ChatCompletionsAdapter": "._openai_compat",
        "Gate": "._retry",
        "MAX_RETRY_AFTER_S": "._retry",
        "Outcome": "._batch_codecs",
        "Redactor": "._redaction",
        "SetUpLine": "._first_use",
        "batch_api": "._batches",
        "call_with_retries": "._retry",
        "cancel": "._batches",
        "fetch_results": "._batches",
        "poll": "._batches",
        "redact": "._redaction",
        "redacted_exception": "._redaction",
        "redactor_for": "._redaction",
        "request_id": "._batch_codecs",
        "run_blocking": "._blocking",
        "secrets_of": "._redaction",
        "split": "._batch_codecs",
        "submit": "._batches",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
