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

The raised tree (every exception a caller can receive; each is exported from
``cross_judge``)::

    CrossJudgeError
     ├── ConfigError (ValueError)
     │    ├── UnknownVendorError (KeyError)        unknown vendor name
     │    ├── UnknownStrategyError (KeyError)      unknown voting or aggregation strategy name
     │    ├── MissingAPIKeyError (RuntimeError)    no key argument and no env var
     │    ├── PromptError                          template cannot be rendered safely
     │    │    └── ItemTooLongError                item over a critic's max_item_chars
     │    ├── ItemError                            a batch item that cannot be judged
     │    ├── PanelError                           a panel file that cannot be used
     │    ├── ResultsLocked                        another run holds the results file's lock
     │    └── UnusableCacheError                   a response cache file that cannot be used
     ├── AlignmentRefused                          an alignment with no clear gain, unwritten
     └── SharedLimitError (ConnectionError)        a shared limit's broker unreachable

The extra bases keep cross-judge 0.1 code working: 0.1 raised ``KeyError`` for an unknown
vendor or strategy and ``RuntimeError`` for a missing key, and ``except KeyError`` still
catches them.

Warned, not raised: ``StatisticsWarning`` (UserWarning), a statistic that may mislead.

Not in the tree, because no caller ever receives them: ``CallFailure`` (the transports'
classified failure, which the critic turns into an ``ERROR`` verdict), ``RedactedError``
(a stand-in carrying a failure's traceback in a log record, its message redacted; never
raised), ``YAMLSyntaxError`` and ``FileTooLargeError`` (the YAML loader's, which every
reader turns into a ``PromptError``, ``PanelError`` or ``ConfigError`` naming the file). Nor
are ``FieldProblem`` and ``FieldProblems`` (:mod:`cross_judge.panel_file._problems`): a panel
file's checks raise them inside pydantic's validation, and the loader reports each in a
``PanelError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "AlignmentRefused",
    "ConfigError",
    "CrossJudgeError",
    "ErrorKind",
    "ItemError",
    "ItemTooLongError",
    "MissingAPIKeyError",
    "PanelError",
    "PromptError",
    "ResultsLocked",
    "SharedLimitError",
    "StatisticsWarning",
    "UnknownStrategyError",
    "UnknownVendorError",
    "UnusableCacheError",
]


class _Problem(Protocol):
    """One problem of a :class:`PanelError`: what a
    :class:`~cross_judge.panel_file.PanelProblem` is, declared here, below the panel file
    layer that defines it."""

    @property
    def field(self) -> str: ...

    @property
    def line(self) -> int | None: ...

    @property
    def message(self) -> str: ...

    def format(self, source: str) -> str: ...

    def redacted(self) -> _Problem: ...


class CrossJudgeError(Exception):
    """Base class of every exception cross-judge raises on purpose."""


class ConfigError(CrossJudgeError, ValueError):
    """A configuration mistake; the message says what to change."""


class UnknownVendorError(ConfigError, KeyError):
    """The vendor name is not registered (the message lists the known ones)."""

    def __str__(self) -> str:
        # KeyError.__str__ would wrap the message in quotes.
        return str(self.args[0]) if self.args else ""


class UnknownStrategyError(ConfigError, KeyError):
    """The voting strategy (or legacy aggregation strategy) name is not registered (the
    message lists the known ones)."""

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


class ItemError(ConfigError):
    """An item that cannot be judged: wrong shape, no query, or a template field its
    ``context`` does not supply. ``position`` is its 0-based place in the input."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        where = f"item {position}: " if position is not None else ""
        super().__init__(where + message)
        self.position = position


class PanelError(ConfigError):
    """A panel file that cannot be used. ``problems`` lists every problem found; the
    message has one ``<file>:<line>: <field>: <message>`` line per problem. Never holds
    the value of a secret-looking field."""

    def __init__(self, source: str, problems: Sequence[_Problem]) -> None:
        # Each problem hides key-shaped text itself (PanelProblem.redacted and .format):
        # redaction is a tool of the wire layer, which this module does not import.
        self.source = source
        self.problems = [problem.redacted() for problem in problems]
        super().__init__("\n".join(problem.format(source) for problem in self.problems))


class ResultsLocked(ConfigError):
    """Another process holds the lock on a results file. ``holder`` is what it recorded
    (``pid``, ``host``, ``started_at``, ``command``), empty if it had not written it yet."""

    def __init__(self, message: str, holder: dict[str, Any]) -> None:
        super().__init__(message)
        self.holder = holder


class UnusableCacheError(ConfigError):
    """The cache file cannot be used as a response cache (raised when it is opened).
    ``path``: the file. ``removable``: the file is a cross-judge cache (by its header)
    that is damaged or of a newer format, so removing it loses nothing but cached
    answers; ``cross-judge cache clear`` offers to."""

    def __init__(self, message: str, *, path: Path, removable: bool) -> None:
        super().__init__(message)
        self.path = path
        self.removable = removable


class AlignmentRefused(CrossJudgeError):
    """An alignment that would not be written: its jury-level gain is not clearly above 0,
    or it lowers the panel's effective votes. ``reasons`` says which, with the figures;
    ``plan.write(..., force=True)`` (``--force`` on the command line) writes it anyway."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = list(reasons)
        super().__init__(
            "not written: " + "; ".join(self.reasons) + " (force=True writes it anyway)"
        )


class SharedLimitError(CrossJudgeError, ConnectionError):
    """A shared limit's broker (:mod:`cross_judge.shared_limit`) could not be reached, or
    refused or garbled an exchange.

    Raised by ``SharedLimit.acquire`` inside a call, so it ends up in that critic's
    verdict (``error_kind="internal"``), never out of ``judge()``; the message says what to
    check.
    """


class StatisticsWarning(UserWarning):
    """A statistic was computed but may mislead, and the message says what to do instead.

    Warned, not raised: the number is returned. For example Dawid-Skene estimating a critic
    below chance, which usually means the labels came out flipped
    (:func:`cross_judge.stats._dawid_skene.below_chance_critics`). Turn it into an error with
    ``warnings.simplefilter("error", StatisticsWarning)``.
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
    TRUNCATED = "truncated"
    """The answer was cut off by the token limit (finish reason ``length``, stop reason
    ``max_tokens``) before it held a usable verdict: typically a reasoning model's
    thinking ate the cap. Retried once with twice the cap when the critic allows it
    (``Critic(retry_truncated=True)``, the default)."""
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
    SELF_PREFERENCE = "self_preference"
    """The critic sat out a pair involving a candidate of its own model family
    (``Critic(family=...)``, :mod:`cross_judge.ranking`): ``kind="SKIPPED"``, no call made,
    counted in no statistic."""
    NO_VISION = "no_vision"
    """The item has images and the critic's model sees none (its vendor's ``vision``, or
    ``Critic(vision=False)``): ``kind="SKIPPED"``, no call made, no vote."""
    TOO_LARGE = "too_large"
    """The request would exceed its vendor's size limit (one image's bytes, or the whole
    request's: ``max_image_bytes``, ``max_request_bytes``): ``kind="SKIPPED"``, not sent."""

    def __str__(self) -> str:
        return self.value
