"""What cross-judge raises, and how it classifies what it returns.

Two kinds of trouble, kept apart on purpose:

* **Configuration mistakes** are programming errors: an unknown vendor, a template that
  cannot be rendered, a missing ``base_url`` for ``vendor="custom"``. They are *raised*,
  as early as possible (at construction, before anything is billed), with a message that
  says the fix.
* **Call failures** are the vendor misbehaving: timeouts, 429s, 5xx, an HTML page where
  JSON was due, text that is not a verdict. They are never raised out of ``judge()``; they
  come back inside a :class:`~cross_judge.verdict.Verdict` whose ``error`` holds the message
  and whose ``error_kind`` holds an :class:`ErrorKind`.

The raised tree::

    CrossJudgeError
     └── ConfigError (ValueError)
          ├── UnknownVendorError (KeyError)        unknown vendor name
          ├── MissingAPIKeyError (RuntimeError)     no key argument and no env var
          └── PromptError                           template cannot be rendered safely
               └── ItemTooLongError                 item over a critic's max_item_chars
     └── SharedLimitError (ConnectionError)        a shared limit's broker unreachable

The extra bases keep cross-judge 0.1 code working: 0.1 raised ``KeyError`` for an unknown
vendor and ``RuntimeError`` for a missing key, and ``except KeyError`` still catches it.
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "ConfigError",
    "CrossJudgeError",
    "ErrorKind",
    "ItemTooLongError",
    "MissingAPIKeyError",
    "PromptError",
    "SharedLimitError",
    "UnknownVendorError",
]


class CrossJudgeError(Exception):
    """Base class of every exception cross-judge raises on purpose."""


class ConfigError(CrossJudgeError, ValueError):
    """A configuration mistake; the message says what to change."""


class UnknownVendorError(ConfigError, KeyError):
    """The vendor name is not registered (the message lists the known ones)."""

    def __str__(self) -> str:
        # KeyError.__str__ would wrap the message in quotes.
        return str(self.args[0]) if self.args else ""


class MissingAPIKeyError(ConfigError, RuntimeError):
    """No API key was passed and the vendor's environment variable is unset or empty."""


class PromptError(ConfigError):
    """A prompt template is malformed or cannot be rendered with the values given."""


class ItemTooLongError(PromptError):
    """The item (query plus the context values its template uses) is longer than the
    critic's ``max_item_chars``; raised before anything is sent, so nothing is billed.

    A :class:`PromptError`, so code that checks items by rendering them (``judge_many``,
    the CLI) reports it as it reports a missing template field.
    """


class SharedLimitError(CrossJudgeError, ConnectionError):
    """A shared limit's broker (:mod:`cross_judge.shared_limit`) could not be reached, or
    refused or garbled an exchange.

    Raised by ``SharedLimit.acquire`` inside a call, so it ends up in that critic's
    verdict (``error_kind="internal"``), never out of ``judge()``; the message says what to
    check.
    """


class ErrorKind(str, Enum):
    """Why a call produced no valid vote; stored in ``Verdict.error_kind``.

    The string values are stable: they are written to JSONL output and read back.
    """

    TIMEOUT = "timeout"
    """A request or the critic's overall deadline ran out."""
    RATE_LIMIT = "rate_limit"
    """HTTP 429 on every attempt."""
    SERVER = "server"
    """HTTP 5xx (including Anthropic's 529 overloaded) on every attempt."""
    AUTH = "auth"
    """HTTP 401/403: the key was rejected."""
    BAD_REQUEST = "bad_request"
    """Another HTTP 4xx: the vendor refused the request as sent (wrong model name, ...)."""
    CONNECTION = "connection"
    """The connection could not be made or was dropped."""
    INVALID_RESPONSE = "invalid_response"
    """HTTP 200 whose body is not a chat completion (HTML, truncated JSON, no choices)."""
    EMPTY = "empty"
    """The completion's text was empty or null."""
    REFUSAL = "refusal"
    """The model refused to answer (an explicit refusal or a content filter stop)."""
    PARSE = "parse"
    """The text came back but holds no usable verdict (``kind="PARSE_FAIL"``)."""
    MISSING_KEY = "missing_key"
    """No API key was configured for the critic's vendor."""
    CANCELLED = "cancelled"
    """The call was cancelled before it finished."""
    INTERNAL = "internal"
    """cross-judge itself failed on this call (a bug: please report it); logged with a
    traceback at WARNING."""
    EARLY_STOP = "early_stop"
    """The call was not needed: the ensemble's outcome was already decided."""
    BUDGET = "budget"
    """The call was not started because it could exceed the cost budget."""
    BATCH = "batch"
    """A vendor's batch API gave no answer for the request: it expired or was cancelled
    before it ran, or the batch failed as a whole."""

    def __str__(self) -> str:
        return self.value
