"""cross-judge 0.1's legacy :class:`Reviewer`: one LLM asked one prompt, one legacy verdict.

A thin 0.1-compatible shim over the new core. Without an injected ``client`` a reviewer
runs a :class:`~cross_judge.core.Critic` (pooled HTTP, retries, timeouts); with one it
calls ``client.chat.completions.create(...)`` exactly as 0.1 did. Either way the reply is
read by :func:`cross_judge.parsing.parse_answer` with 0.1's key order (``verdict`` before
``kind``, ``rationale`` before ``reasoning``), so 0.1 answers are unchanged and replies in
the new schema are no longer all ``UNCLEAR`` (0.1 bug B11).

``ask`` is synchronous (through :func:`cross_judge._sync.run_sync`); ``ask_async`` is the
same call for async code and for :class:`~cross_judge.panel.JudgePanel`, which asks its
reviewers concurrently.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from . import _sync
from ._redact import redact
from .core import DEFAULT_SYSTEM_PROMPT, Critic
from .parsing import extract_json, parse_answer
from .schema import Verdict

__all__ = ["LEGACY_LABEL_KEYS", "LEGACY_REASONING_KEYS", "Reviewer"]

_extract_json = extract_json  # cross-judge 0.1 test suites import reviewer._extract_json

LEGACY_LABEL_KEYS: tuple[str, ...] = ("verdict", "kind", "label", "decision")
"""Where a reviewer looks for the label, first match wins: 0.1's key, then the new ones."""

LEGACY_REASONING_KEYS: tuple[str, ...] = ("rationale", "reasoning", "explanation")
"""Where a reviewer looks for the reasoning, first match wins: 0.1's key first."""

_LEGACY_TIMEOUT = 600.0  # seconds per attempt: openai-python's read timeout, which 0.1 used
_LEGACY_RETRIES = 2  # openai-python's default retries, which 0.1 got implicitly
_build_lock = threading.Lock()
_CACHE = "_critic_cache"  # instance attribute, kept out of the dataclass fields


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

    def ask(self, user_prompt: str) -> Verdict:
        """Call the LLM once and return the parsed verdict (works inside a running loop).

        Failures come back as verdicts, as in 0.1: ``verdict="ERROR"`` with
        ``error="<Type>: <message>"`` (or the core's classified message) for a failed
        call, ``error="empty_response"`` for no text, and ``verdict="PARSE_FAIL"`` with
        ``error="parse_fail: <reason>"`` and the raw text's first 300 characters as
        ``rationale`` when the text holds no verdict.

        Raises:
            MissingAPIKeyError: (a ``RuntimeError``, as 0.1 raised) no key and no injected
                client.
            UnknownVendorError: (a ``KeyError``) unknown vendor and no injected client.
            ConfigError: another invalid setting (e.g. ``custom`` without ``base_url``).
        """
        return _sync.run_sync(self.ask_async, user_prompt)

    async def ask_async(self, user_prompt: str) -> Verdict:
        """:meth:`ask` for async code: same result, same exceptions."""
        if self.client is not None:
            return await anyio.to_thread.run_sync(self._ask_client, user_prompt)
        verdict = await self._checked_critic().judge(user_prompt)
        return Verdict.from_verdict(verdict, extras=False)

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
                timeout=_LEGACY_TIMEOUT,
                max_retries=_LEGACY_RETRIES,
                json_mode=False,
                max_item_chars=None,  # 0.1 sent any prompt; the vendor decided
            )
            critic._label_keys = LEGACY_LABEL_KEYS
            critic._reasoning_keys = LEGACY_REASONING_KEYS
            self.__dict__[_CACHE] = (config, critic)
            return critic

    def _ask_client(self, user_prompt: str) -> Verdict:
        """0.1's call through the injected client (blocking; run in a worker thread)."""
        started = time.perf_counter()
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
            client_key = getattr(self.client, "api_key", None)
            problem = redact(
                f"{type(exc).__name__}: {exc}",
                self.api_key,
                client_key if isinstance(client_key, str) else None,
            )
            return self._verdict("ERROR", started, rationale=problem, error=problem)
        if not raw:
            return self._verdict(
                "ERROR", started, rationale="empty response from LLM", error="empty_response"
            )
        parsed = parse_answer(
            raw, label_keys=LEGACY_LABEL_KEYS, reasoning_keys=LEGACY_REASONING_KEYS
        )
        return self._verdict(
            parsed.kind,
            started,
            confidence=parsed.confidence,
            rationale=parsed.reasoning,
            raw_response=raw,
            error=parsed.error,
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
