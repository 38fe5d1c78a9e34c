"""cross-judge 0.1's legacy :class:`Reviewer`: one LLM asked one prompt, one legacy verdict.

A thin 0.1-compatible shim over the new core. Without an injected ``client`` a reviewer
runs a :class:`~cross_judge.core.Critic` (pooled HTTP, retries, timeouts); with one it
calls ``client.chat.completions.create(...)`` exactly as 0.1 did. Either way the reply is
read by :func:`cross_judge.critic._parsing.parse_answer` with 0.1's key order (``verdict`` before
``kind``, ``rationale`` before ``reasoning``), so 0.1 answers are unchanged and replies in
the new schema are no longer all ``UNCLEAR`` (0.1 bug B11).

Secrets stay out of a verdict on both paths. A vendor may echo the key (OpenAI's 401
quotes it without its ``sk-`` prefix) in an error or in an answer: through the core,
:class:`~cross_judge.core.Critic` redacts; through an injected client the reviewer does
the same (``Reviewer._secrets``), in ``error``, ``rationale``, ``raw_response``, the label
and the parse-failure log line, hiding every run of 8 or more characters of a key.

``ask`` is synchronous (through :func:`cross_judge._sync.run_sync`); ``ask_async`` is the
same call for async code and for :class:`~cross_judge.panel.JudgePanel`, which asks its
reviewers concurrently.

An injected client is a blocking object, called in a worker thread. ``timeout``
(:data:`DEFAULT_REVIEWER_TIMEOUT`, 600 s) bounds the whole call: a client that has not
returned by then gives an ``ERROR`` verdict, and its thread, which nothing can stop, is left
to finish. A client holds at most
:data:`~cross_judge.transport._blocking.THREADS_PER_CLIENT` threads at once, counting those
(:func:`~cross_judge.transport._blocking.run_blocking`); a call beyond them waits for one,
within its timeout. 0.1 had no timeout of its own here: a call waited as long as the client
did (an ``openai.OpenAI`` gives up after 600 s per attempt, 3 attempts).

Answers are 0.1's wherever 0.1's tests pin them: a reply without a verdict has
``error == "parse_fail"`` exactly (the reason is logged at DEBUG on the ``cross_judge``
logger; the reply stays in ``raw_response``), and a confidence above 1 up to 10 (``1.5``,
``5``) is clamped to 1.0. Confidence follows the parser's one rule
(:func:`cross_judge.critic._parsing.coerce_confidence`), which reads what 0.1 could not: ``"85%"``
and ``85`` are 0.85 (0.1 gave 0.0 and 1.0), and NaN is no confidence, 0.0 (0.1 gave 1.0).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from . import _sync
from .critic import DEFAULT_SYSTEM_PROMPT, Critic, extract_json, parse_answer
from .errors import ConfigError, ErrorKind
from .schema import Verdict
from .transport import Redactor, redact, redactor_for, run_blocking, secrets_of
from .vendors import make_client

__all__ = ["DEFAULT_REVIEWER_TIMEOUT", "LEGACY_LABEL_KEYS", "LEGACY_REASONING_KEYS", "Reviewer"]

_extract_json = extract_json  # cross-judge 0.1 test suites import reviewer._extract_json

LEGACY_LABEL_KEYS: tuple[str, ...] = ("verdict", "kind", "label", "decision")
"""Where a reviewer looks for the label, first match wins: 0.1's key, then the new ones."""

LEGACY_REASONING_KEYS: tuple[str, ...] = ("rationale", "reasoning", "explanation")
"""Where a reviewer looks for the reasoning, first match wins: 0.1's key first."""

DEFAULT_REVIEWER_TIMEOUT = 600.0
"""``Reviewer.timeout``: openai-python's read timeout, which bounded each attempt in 0.1."""

_LEGACY_RETRIES = 2  # openai-python's default retries, which 0.1 got implicitly
_PARSE_FAIL = "parse_fail"  # 0.1's exact error string for a reply without a verdict
_build_lock = threading.Lock()
_CACHE = "_critic_cache"  # instance attribute, kept out of the dataclass fields
logger = logging.getLogger("cross_judge")


@dataclass
class Reviewer:
    """One LLM reviewer configuration (cross-judge 0.1's fields, order and defaults).

    Args:
        reviewer_id: becomes ``Verdict.reviewer_id``.
        model: the vendor's model id.
        vendor: a registered vendor name, case-insensitive; ``"custom"`` with
            ``base_url`` works (0.1 raised ``KeyError``).
        system_prompt: system message. Sent as given to an injected client (even ``""``,
            as 0.1 did); without a client an empty one is not sent.
        temperature, max_tokens: passed to the model.
        weight: this reviewer's vote weight; a :class:`~cross_judge.panel.JudgePanel`
            with the ``weighted`` strategy uses it unless its ``strategy_kwargs`` give
            ``weights`` (0.1 never read it).
        client: an object with ``chat.completions.create(**kwargs)`` (e.g. an
            ``openai.OpenAI``). It is called from a worker thread. ``None``: cross-judge's
            own HTTP stack is used.
        api_key: the key; else the vendor's environment variable.
        base_url: endpoint override (required for ``custom``).
        timeout: seconds an answer may take (new; 0.1's fields come first). With an
            injected ``client``, the whole ``create(...)`` call, the client's own retries
            included: a client that has not returned by then gives an ``ERROR`` verdict
            (its thread is left to finish, see the module docstring). Without one, each
            attempt of the core's call (2 retries, as openai-python made in 0.1).
    """

    reviewer_id: str
    model: str
    vendor: str = "deepseek"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    temperature: float = 0.0
    max_tokens: int = 2000
    weight: float = 1.0
    client: Any = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_REVIEWER_TIMEOUT

    def ask(self, user_prompt: str) -> Verdict:
        """Call the LLM once and return the parsed verdict (works inside a running loop).

        Failures come back as verdicts, as in 0.1: ``verdict="ERROR"`` with
        ``error="<Type>: <message>"`` (or the core's classified message) for a failed
        call, ``error="empty_response"`` for no text, and ``verdict="PARSE_FAIL"`` with
        ``error="parse_fail"``, the raw text in ``raw_response`` and its first 300
        characters as ``rationale`` when the text holds no verdict (the parser's reason is
        logged at DEBUG). A confidence is read by the parser's rule: 0..1 as is, above 1
        up to 10 clamped to 1.0 (as 0.1 did), above 10 up to 100 or ``"NN%"`` a
        percentage; none or an unusable one is 0.0. An injected client that gives no
        answer within ``timeout`` is ``verdict="ERROR"`` with
        ``error="TimeoutError: client.chat.completions.create() gave no answer within <t>s"``.

        Raises:
            MissingAPIKeyError: (a ``RuntimeError``, as 0.1 raised) no key and no injected
                client.
            UnknownVendorError: (a ``KeyError``) unknown vendor and no injected client.
            ConfigError: another invalid setting (e.g. ``custom`` without ``base_url``, a
                ``timeout`` that is not a positive number).
        """
        return _sync.run_sync(self.ask_async, user_prompt)

    async def ask_async(self, user_prompt: str) -> Verdict:
        """:meth:`ask` for async code: same result, same exceptions."""
        self._check_timeout()
        if self.client is not None:
            started = time.perf_counter()
            with anyio.move_on_after(self.timeout):
                return await run_blocking(self.client, self._ask_client, user_prompt)
            problem = (
                "TimeoutError: client.chat.completions.create() gave no answer within "
                f"{self.timeout:g}s"
            )
            return self._verdict("ERROR", started, rationale=problem, error=problem)
        verdict = await self._checked_critic().judge(user_prompt)
        legacy = Verdict.from_verdict(verdict, extras=False)
        if verdict.error_kind is ErrorKind.PARSE:
            self._log_parse_failure(verdict.error)
            return legacy.model_copy(update={"error": _PARSE_FAIL})
        return legacy

    def _get_client(self) -> Any:
        """The OpenAI-style client this reviewer calls, as in 0.1.

        Returns ``client`` if one was injected. Otherwise builds the vendor's default
        client with :func:`cross_judge.vendors.make_client` (vendor, ``api_key``,
        ``base_url``), stores it in ``client`` and returns it, so a second call gives the
        same object; from then on :meth:`ask` calls it, exactly as 0.1 did.

        Raises:
            MissingAPIKeyError: (a ``RuntimeError``) no key for the vendor.
            UnknownVendorError: (a ``KeyError``) unknown vendor.
            ConfigError: ``custom`` without ``base_url``, or a vendor that does not speak
                the OpenAI protocol.
        """
        if self.client is None:
            self.client = make_client(
                vendor=self.vendor, api_key=self.api_key, base_url=self.base_url
            )
        return self.client

    def _check_timeout(self) -> None:
        timeout = self.timeout
        ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        if not (ok and math.isfinite(timeout) and timeout > 0):
            raise ConfigError(
                f"Reviewer {self.reviewer_id!r}: timeout must be a positive number of "
                f"seconds, got {timeout!r}"
            )

    def _log_parse_failure(self, reason: str | None, hide: Redactor | None = None) -> None:
        text = reason or ""
        logger.debug(
            "reviewer %s: %s",
            self.reviewer_id,
            hide.error(text) if hide is not None else redact(text, self.api_key),
        )

    def _secrets(self) -> Redactor:
        """What the injected client's path must never pass on: this reviewer's
        ``api_key`` and ``base_url`` credentials, and the client's own (its ``api_key``
        and ``base_url``, as an ``openai.OpenAI`` has them; attributes that are not
        strings or URLs are ignored), as :class:`~cross_judge.core.Critic` finds them."""
        client_key = getattr(self.client, "api_key", None)
        client_url = getattr(self.client, "base_url", None)
        return redactor_for(
            *secrets_of(self.base_url or "", self.api_key),
            *secrets_of(
                client_url if isinstance(client_url, str) else _url_text(client_url),
                client_key if isinstance(client_key, str) else None,
            ),
        )

    def _checked_critic(self) -> Critic:
        """The critic for this configuration, with its vendor and key checked.

        Raises before anything is sent, like 0.1's client construction did.
        """
        critic = self._critic()
        critic.check()
        return critic

    def _critic(self) -> Critic:
        config = (
            self.reviewer_id,
            self.model,
            self.vendor,
            self.system_prompt,
            self.temperature,
            self.max_tokens,
            self.api_key,
            self.base_url,
            self.timeout,
        )
        with _build_lock:  # one critic per configuration, even when asked from many threads
            cached: tuple[tuple[Any, ...], Critic] | None = self.__dict__.get(_CACHE)
            if cached is not None and cached[0] == config:
                return cached[1]
            critic = Critic(
                name=self.reviewer_id,
                model=self.model,
                prompt_template="{query}",  # the user prompt goes verbatim, as in 0.1
                vendor=self.vendor,
                system_prompt=self.system_prompt,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=_LEGACY_RETRIES,
                json_mode=False,
                max_item_chars=None,  # 0.1 sent any prompt; the vendor decided
            )
            critic.use_answer_keys(LEGACY_LABEL_KEYS, LEGACY_REASONING_KEYS)
            self.__dict__[_CACHE] = (config, critic)
            return critic

    def _ask_client(self, user_prompt: str) -> Verdict:
        """0.1's call through the injected client (blocking; run in a worker thread).

        Every text taken from the reply or the exception is redacted (:meth:`_secrets`):
        a run of a key becomes ``[REDACTED]``, the rest is unchanged. The answer is parsed
        first, so redaction never changes what the reply means.
        """
        started = time.perf_counter()
        hide = self._secrets()
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": user_prompt},
                ],
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
            message = response.choices[0].message
            raw: str = (getattr(message, "content", None) or "").strip()
        except Exception as exc:
            # A vendor may echo the key back in its error (OpenAI's 401 does): never kept.
            problem = hide.error(f"{type(exc).__name__}: {exc}")
            return self._verdict("ERROR", started, rationale=problem, error=problem)
        if not raw:
            return self._verdict(
                "ERROR", started, rationale="empty response from LLM", error="empty_response"
            )
        parsed = parse_answer(
            raw, label_keys=LEGACY_LABEL_KEYS, reasoning_keys=LEGACY_REASONING_KEYS
        )
        if not parsed.ok:
            self._log_parse_failure(parsed.error, hide)
        # ... or in its answer, a model repeating what it was shown: never kept either.
        return self._verdict(
            hide.label(parsed.kind),
            started,
            confidence=parsed.confidence,
            rationale=hide(parsed.reasoning),
            raw_response=hide(raw),
            error=None if parsed.ok else _PARSE_FAIL,
        )

    def _verdict(
        self,
        label: str,
        started: float,
        *,
        confidence: float = 0.0,
        rationale: str,
        raw_response: str | None = None,
        error: str | None = None,
    ) -> Verdict:
        return Verdict(
            reviewer_id=self.reviewer_id,
            verdict=label,
            confidence=confidence,
            rationale=rationale,
            raw_response=raw_response,
            error=error,
            elapsed_s=round(time.perf_counter() - started, 3),
        )


def _url_text(url: object) -> str:
    """An ``httpx.URL`` (an OpenAI client's ``base_url``) as text; ``""`` for anything
    else (a mock's made-up attribute, say)."""
    return str(url) if type(url).__name__ == "URL" else ""
