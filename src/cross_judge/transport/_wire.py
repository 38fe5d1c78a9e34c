"""What every wire adapter takes and returns: a :class:`ChatRequest` in, a :class:`Completion`
out (or a :class:`~cross_judge.transport.CallFailure`).

A request is wire-neutral: the system prompt is kept apart from the messages, because the
OpenAI protocol sends it as a message and Anthropic's as a ``system`` field. What a
protocol actually sends of its settings is :meth:`ChatRequest.sent_settings` (the rest,
:meth:`ChatRequest.unsent_settings`, never leaves the process), and
:meth:`ChatRequest.cache_key` is the identity of the answer it asks for, used by the
response cache: everything that determines the answer, and nothing secret.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..verdict import Usage

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = ["CACHE_KEY_VERSION", "ChatRequest", "Completion", "endpoint_identity"]

CACHE_KEY_VERSION = 2
"""Version of the key material hashed by :meth:`ChatRequest.cache_key`; part of that
material, so keys of another version can never match (version 1 hashed the whole base URL,
port included, and the temperature and seed on every protocol)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class ChatRequest:
    """One chat call: a system prompt (``""`` for none), the user message and the sampling
    settings. ``json_mode`` asks the vendor for a JSON object where its protocol allows.

    ``sample`` numbers the repeated requests of a critic that samples an item several
    times (``Critic(samples=n)``; see :func:`cross_judge.core.sample_request`): it is
    never sent, and enters :meth:`cache_key` only when > 0, so that each sample has its
    own cached answer while sample 0 keeps the key of a single call."""

    model: str
    system: str
    user: str
    temperature: float
    max_tokens: int
    json_mode: bool = False
    seed: int | None = None
    sample: int = 0

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

    def sent_settings(self, protocol: str) -> dict[str, Any]:
        """The settings this request puts on the wire under ``protocol`` (besides the model
        and the messages), by their neutral names.

        * ``"openai"`` (chat completions): ``temperature``, ``max_tokens`` (sent as the
          vendor's ``max_tokens`` or ``max_completion_tokens``), ``response_format``
          (``{"type": "json_object"}``) in JSON mode, ``seed`` when set.
        * ``"anthropic"`` (Messages API, version ``2026-10-21``): ``max_tokens`` only. That
          version removed ``temperature``, ``top_p`` and ``top_k`` (a request with any of
          them is refused), and the API has no seed and no JSON mode.

        The wire adapters send exactly these (their tests hold them to it); the response
        cache keys on them and the run manifest records them.
        """
        if protocol == "anthropic":
            return {"max_tokens": self.max_tokens}
        settings: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.json_mode:
            settings["response_format"] = {"type": "json_object"}
        if self.seed is not None:
            settings["seed"] = self.seed
        return settings

    def unsent_settings(self, protocol: str) -> dict[str, Any]:
        """The settings of this request that ``protocol`` does not send, with their values:
        on ``"anthropic"``, ``temperature`` always, ``seed`` when set and ``json_mode``
        when on; nothing on ``"openai"``. They have no effect on the answer."""
        if protocol != "anthropic":
            return {}
        unsent: dict[str, Any] = {"temperature": self.temperature}
        if self.seed is not None:
            unsent["seed"] = self.seed
        if self.json_mode:
            unsent["json_mode"] = True
        return unsent

    def cache_key(self, config: VendorConfig) -> str:
        """sha256 of everything that determines the answer, and of nothing else.

        The material: the key version (:data:`CACHE_KEY_VERSION`), the protocol, the vendor
        name, the endpoint (:func:`endpoint_identity`: no credentials, and no port on a
        loopback host), the model, the system prompt, the user message and
        :meth:`sent_settings` (so on ``anthropic`` neither ``temperature`` nor ``seed``,
        which are not sent), and ``sample`` when it is > 0 (on every protocol). Never the
        API key, and nothing of the local machine: the same panel run against a local
        server on another port finds its answers again.
        """
        identity = {
            "key_version": CACHE_KEY_VERSION,
            "protocol": config.protocol,
            "vendor": config.name,
            "endpoint": endpoint_identity(config.protocol, config.base_url),
            "model": self.model,
            "system": self.system,
            "user": self.user,
            "settings": self.sent_settings(config.protocol),
        }
        if self.sample:  # absent for sample 0: a single call's key is unchanged
            identity["sample"] = self.sample
        blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def endpoint_identity(protocol: str, base_url: str) -> str:
    """Which endpoint answers, as the response cache tells endpoints apart.

    A remote endpoint is its URL, normalised: without ``user:password@``, scheme and host
    in lower case, without a default port (``:443`` for https, ``:80`` for http), without
    trailing slashes, and for the ``anthropic`` protocol without one trailing ``/v1`` (the
    SDK reaches ``/v1/messages`` from both). Its port stays: on a remote host a port is how
    a deployment is addressed, and two ports are two services.

    A loopback endpoint (``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``::1``) is
    ``loopback`` followed by the path: its host and port are dropped. A local server
    (``VendorServer``, llama.cpp, ollama, vLLM) gets a port per run, which says nothing
    about who answers; the vendor name and the model in the key do. Two local servers
    answering different weights under the same vendor name and model would therefore
    share cached answers: give them distinct model names, or separate cache files.
    """
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    if protocol == "anthropic" and path.endswith("/v1"):
        path = path[: -len("/v1")]
    host = (parts.hostname or "").lower()
    if _is_loopback(host):
        return f"loopback{path}"
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a port at all; the critic's validation refuses such URLs
        port = None
    where = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        where += f":{port}"
    return f"{scheme}://{where}{path}"


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


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
