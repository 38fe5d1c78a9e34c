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

import functools
import hashlib
import ipaddress
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..verdict import Usage

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = [
    "CACHE_KEY_VERSION",
    "AnswerSchema",
    "ChatRequest",
    "Completion",
    "StructuredForm",
    "TokenLogprob",
    "endpoint_identity",
]

StructuredForm = Literal["schema", "tool", "json", "off"]
"""How a request asks for its answer's shape: ``"schema"`` a JSON schema the vendor
enforces (OpenAI-compatible ``response_format`` ``json_schema``, llama.cpp's
``json_object`` with a ``schema``, Anthropic's ``output_config.format``); ``"tool"`` a
tool the model is forced to call (Anthropic), whose input is the answer; ``"json"`` any
JSON object (``response_format={"type": "json_object"}``); ``"off"`` nothing."""

CACHE_KEY_VERSION = 2
"""Version of the key material hashed by :meth:`ChatRequest.cache_key`; part of that
material, so keys of another version can never match (version 1 hashed the whole base URL,
port included, and the temperature and seed on every protocol)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class AnswerSchema:
    """The JSON schema of a critic's answer, named and versioned with its prompt.

    ``text`` is the schema as compact JSON (no spaces; the properties in the prompt's
    order): hashable, and the exact text the cache key and the run manifest record.
    ``label_key`` is the property holding the label. Built by
    :func:`cross_judge.critic.answer_schema.answer_schema`.
    """

    name: str
    text: str
    label_key: str = "kind"

    def as_dict(self) -> dict[str, Any]:
        """The schema as a fresh dict (callers may change it)."""
        value: dict[str, Any] = json.loads(self.text)
        return value


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the alternatives the vendor listed
    at that position (``top``: ``(token, logprob)`` pairs, most likely first; the chosen
    token is usually among them)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    """One chat call: a system prompt (``""`` for none), the user message and the sampling
    settings. ``json_mode`` asks the vendor for a JSON object where its protocol allows.

    ``sample`` numbers the repeated requests of a critic that samples an item several
    times (``Critic(samples=n)``; see :func:`cross_judge.core.sample_request`): it is
    never sent, and enters :meth:`cache_key` only when > 0, so that each sample has its
    own cached answer while sample 0 keeps the key of a single call.

    ``structured`` is the answer's shape asked for (:data:`StructuredForm`); ``json_mode``
    is its older name for ``"json"`` and is kept in step with it. ``"schema"`` and
    ``"tool"`` need ``schema``. ``effort`` and ``thinking_budget`` drive a reasoning model
    (sent as its vendor takes them); ``logprobs`` asks for that many alternatives per
    token (``None``: no token probabilities asked).
    """

    model: str
    system: str
    user: str
    temperature: float
    max_tokens: int
    json_mode: bool = False
    seed: int | None = None
    sample: int = 0
    structured: StructuredForm = "off"
    schema: AnswerSchema | None = None
    effort: str | None = None
    thinking_budget: int | None = None
    logprobs: int | None = None

    def __post_init__(self) -> None:
        if self.json_mode and self.structured == "off":
            object.__setattr__(self, "structured", "json")
        elif self.structured == "json" and not self.json_mode:
            object.__setattr__(self, "json_mode", True)
        elif self.structured != "json" and self.json_mode:
            object.__setattr__(self, "json_mode", False)
        if self.structured in ("schema", "tool") and self.schema is None:
            raise ValueError(f"structured={self.structured!r} needs a schema")

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

    def sent_settings(self, where: str | VendorConfig) -> dict[str, Any]:
        """The settings this request puts on the wire (besides the model and the messages),
        for a protocol name or a vendor (whose dialects then apply), by their neutral names
        for the token cap and by their wire names otherwise.

        * ``"openai"`` (chat completions): ``temperature`` (left out when a reasoning
          effort is sent with the ``openai`` dialect: OpenAI's reasoning models refuse
          it), ``max_tokens`` (sent as the vendor's ``max_tokens`` or
          ``max_completion_tokens``), ``response_format`` for the ``json`` and ``schema``
          forms (:data:`SchemaDialect`), ``seed`` when set, ``logprobs`` and
          ``top_logprobs`` when asked, and the reasoning fields of the vendor's
          :data:`ReasoningDialect`.
        * ``"anthropic"`` (Messages API, version ``2026-10-21``): ``max_tokens`` (the
          thinking budget added to it when thinking is on), ``thinking``, ``tools`` and
          ``tool_choice`` for the ``tool`` form, ``output_config`` for the ``schema``
          form and the effort. That version removed ``temperature``, ``top_p`` and
          ``top_k`` (a request with any of them is refused), and the API has no seed, no
          JSON mode and no token probabilities.

        The wire adapters send exactly these (their tests hold them to it); the response
        cache keys on them and the run manifest records them.
        """
        protocol = where if isinstance(where, str) else where.protocol
        if protocol == "anthropic":
            return self._anthropic_settings()
        schema_dialect = "json_schema" if isinstance(where, str) else where.schema_dialect
        dialect = "openai" if isinstance(where, str) else (where.reasoning or "openai")
        settings: dict[str, Any] = {}
        if not (self.effort is not None and dialect == "openai"):
            settings["temperature"] = self.temperature
        settings["max_tokens"] = self.max_tokens
        if self.structured == "json":
            settings["response_format"] = {"type": "json_object"}
        elif self.structured == "schema" and self.schema is not None:
            if schema_dialect == "json_object":
                settings["response_format"] = {
                    "type": "json_object",
                    "schema": self.schema.as_dict(),
                }
            else:
                settings["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": self.schema.name,
                        "strict": True,
                        "schema": self.schema.as_dict(),
                    },
                }
        if self.seed is not None:
            settings["seed"] = self.seed
        if self.logprobs is not None:
            settings["logprobs"] = True
            settings["top_logprobs"] = self.logprobs
        settings.update(reasoning_fields(dialect, self.effort, self.thinking_budget))
        return settings

    def _anthropic_settings(self) -> dict[str, Any]:
        budget = self.thinking_budget
        settings: dict[str, Any] = {
            "max_tokens": self.max_tokens + (budget or 0),
        }
        if budget is not None:
            settings["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if self.structured == "tool" and self.schema is not None:
            settings["tools"] = [
                {
                    "name": self.schema.name,
                    "description": "Record your verdict.",
                    "input_schema": self.schema.as_dict(),
                }
            ]
            settings["tool_choice"] = {"type": "tool", "name": self.schema.name}
        output: dict[str, Any] = {}
        if self.effort is not None:
            output["effort"] = self.effort
        if self.structured == "schema" and self.schema is not None:
            output["format"] = {"type": "json_schema", "schema": self.schema.as_dict()}
        if output:
            settings["output_config"] = output
        return settings

    def unsent_settings(self, where: str | VendorConfig) -> dict[str, Any]:
        """The settings of this request that a protocol (or a vendor, whose reasoning
        dialect then applies) does not send, with their values: on ``"anthropic"``,
        ``temperature`` always, ``seed`` when set and ``json_mode`` when on; on
        ``"openai"`` the ``temperature`` when an effort is sent with the ``openai``
        dialect (OpenAI's reasoning models refuse it), else nothing. They have no effect
        on the answer."""
        protocol = where if isinstance(where, str) else where.protocol
        if protocol != "anthropic":
            dialect = "openai" if isinstance(where, str) else (where.reasoning or "openai")
            if self.effort is not None and dialect == "openai":
                return {"temperature": self.temperature}
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
            "settings": self.sent_settings(config),
        }
        if self.sample:  # absent for sample 0: a single call's key is unchanged
            identity["sample"] = self.sample
        blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@functools.lru_cache(maxsize=256)  # a panel has a few endpoints, each keyed per call
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

    ``tools`` names the tools the model called, in order (Anthropic's ``tool_use``
    blocks; ``""`` for one without a name): ``text`` is then the last one's input, which
    the critic takes as its answer only when every tool called is the one it forced.
    ``logprobs_problem`` says why the token probabilities the reply carried were not
    kept (``logprobs`` is then ``None``): a field that is missing, not a number, NaN or
    above 0; ``None`` when the reply had none, or they were kept.
    """

    text: str | None
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    refusal: str | None = None
    reasoning: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    tools: tuple[str, ...] = ()
    logprobs_problem: str | None = None

    @property
    def truncated(self) -> bool:
        """True when the answer was cut off at ``max_tokens``."""
        return self.finish_reason in ("length", "max_tokens")


def reasoning_fields(
    dialect: str, effort: str | None, thinking_budget: int | None
) -> dict[str, Any]:
    """The request fields of an OpenAI-compatible vendor's reasoning ``dialect`` for an
    ``effort`` and a ``thinking_budget`` (both ``None``: none). What a dialect cannot
    express is refused when the critic is built (:func:`reasoning_problem`); here it is
    left out.

    ==========  ==================================  ========================================
    dialect     effort                              thinking_budget
    ==========  ==================================  ========================================
    openai      ``reasoning_effort``                (refused)
    deepseek    ``thinking: {"type": "enabled"}``   (refused)
    qwen        (refused)                           ``enable_thinking``, ``thinking_budget``
    vllm        ``reasoning_effort``                (refused)
    openrouter  ``reasoning: {"effort": ...}``      ``reasoning: {"max_tokens": ...}``
    ==========  ==================================  ========================================

    DeepSeek's thinking has no levels: only ``effort="high"`` is taken.
    """
    fields: dict[str, Any] = {}
    if dialect in ("openai", "vllm"):
        if effort is not None:
            fields["reasoning_effort"] = effort
    elif dialect == "deepseek":
        if effort is not None:
            fields["thinking"] = {"type": "enabled"}
    elif dialect == "qwen":
        if thinking_budget is not None:
            fields["enable_thinking"] = True
            fields["thinking_budget"] = thinking_budget
    elif dialect == "openrouter":
        if effort is not None:
            fields["reasoning"] = {"effort": effort}
        elif thinking_budget is not None:
            fields["reasoning"] = {"max_tokens": thinking_budget}
    return fields


MIN_ANTHROPIC_THINKING_BUDGET = 1024
"""The smallest ``budget_tokens`` Anthropic's extended thinking takes."""


def reasoning_problem(
    protocol: str, dialect: str | None, effort: str | None, thinking_budget: int | None
) -> str | None:
    """Why a vendor (its ``protocol`` and reasoning ``dialect``) cannot be sent ``effort``
    and ``thinking_budget`` as asked, or ``None`` when it can: the fix is in the text."""
    if effort is None and thinking_budget is None:
        return None
    if protocol == "anthropic":
        if thinking_budget is not None and thinking_budget < MIN_ANTHROPIC_THINKING_BUDGET:
            return (
                f"Anthropic's extended thinking takes a budget of at least "
                f"{MIN_ANTHROPIC_THINKING_BUDGET} tokens, got thinking_budget={thinking_budget}"
            )
        return None
    if dialect is None:
        return (
            "this vendor has no known reasoning fields, so effort/thinking_budget would be "
            "dropped; register the endpoint with its dialect, e.g. register_vendor(name, "
            "base_url, reasoning='openai') (reasoning_effort), 'qwen' (enable_thinking and "
            "thinking_budget), 'vllm', 'deepseek' or 'openrouter', or leave both out"
        )
    if dialect in ("openai", "vllm") and thinking_budget is not None:
        return (
            f"the {dialect!r} reasoning fields take an effort (reasoning_effort), not a token "
            "budget; use effort='low'|'medium'|'high' and leave thinking_budget out"
        )
    if dialect == "deepseek":
        if thinking_budget is not None:
            return (
                "DeepSeek's thinking mode has no token budget; use effort='high' (thinking on) "
                "and leave thinking_budget out"
            )
        if effort != "high":
            return (
                f"DeepSeek's thinking mode is on or off, with no levels, so effort={effort!r} "
                "cannot be sent; effort='high' turns thinking on"
            )
    if dialect == "qwen" and effort is not None:
        return (
            "Qwen's thinking takes a token budget (enable_thinking, thinking_budget), not an "
            "effort; use thinking_budget=N and leave effort out"
        )
    if dialect == "openrouter" and effort is not None and thinking_budget is not None:
        return "OpenRouter's reasoning takes an effort or a token budget, not both; leave one out"
    return None
