"""What every wire adapter takes and returns: a :class:`ChatRequest` in, a :class:`Completion`
out (or a :class:`~cross_judge.transport.CallFailure`).

A request is wire-neutral: the system prompt is kept apart from the messages, because the
OpenAI protocol sends it as a message and Anthropic's as a ``system`` field. Its
:meth:`ChatRequest.cache_key` is the identity of the answer it asks for, used by the
response cache: everything that determines the answer, and nothing secret.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..verdict import Usage

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = ["ChatRequest", "Completion"]


@dataclass(frozen=True)
class ChatRequest:
    """One chat call: a system prompt (``""`` for none), the user message and the sampling
    settings. ``json_mode`` asks the vendor for a JSON object where its protocol allows."""

    model: str
    system: str
    user: str
    temperature: float
    max_tokens: int
    json_mode: bool = False
    seed: int | None = None

    def chat_messages(self) -> list[dict[str, str]]:
        """The OpenAI-style message list: the system message (if any), then the user's."""
        if self.system:
            return [
                {"role": "system", "content": self.system},
                {"role": "user", "content": self.user},
            ]
        return [{"role": "user", "content": self.user}]

    def text_chars(self) -> int:
        """Characters of prompt text sent (system and user), for rough token estimates."""
        return len(self.system) + len(self.user)

    def utf8_bytes(self) -> int:
        """Bytes of prompt text sent, UTF-8 encoded (see :func:`cross_judge.pricing`)."""
        return len(self.system.encode("utf-8", "surrogatepass")) + len(
            self.user.encode("utf-8", "surrogatepass")
        )

    def cache_key(self, config: VendorConfig) -> str:
        """sha256 of everything that determines the answer: protocol, vendor, base URL
        (without any ``user:password@``), model, system prompt, user message, temperature,
        max_tokens, response format and seed. Never the API key."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(config.base_url)
        host = parts.netloc.rsplit("@", 1)[-1]
        base_url = urlunsplit(parts._replace(netloc=host)).rstrip("/")
        identity = {
            "protocol": config.protocol,
            "vendor": config.name,
            "base_url": base_url,
            "model": self.model,
            "system": self.system,
            "user": self.user,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": "json_object" if self.json_mode else None,
            "seed": self.seed,
        }
        blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Completion:
    """What one successful call returned.

    ``finish_reason`` is the vendor's own word (``stop``/``length`` for OpenAI-style
    vendors, ``end_turn``/``max_tokens`` for Anthropic's ``stop_reason``).
    """

    text: str | None
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    refusal: str | None = None
    reasoning: str | None = None

    @property
    def truncated(self) -> bool:
        """True when the answer was cut off at ``max_tokens``."""
        return self.finish_reason in ("length", "max_tokens")
