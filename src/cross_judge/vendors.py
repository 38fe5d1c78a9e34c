"""Vendor registry: where each vendor lives, which key it needs, and what it accepts.

A :class:`VendorConfig` names an OpenAI-compatible or Anthropic endpoint, the environment
variable its API key is read from, and its capabilities, so a
:class:`~cross_judge.core.Critic` only needs ``vendor="deepseek"``. Lookups are
case-insensitive. This module makes no network calls; ``make_client`` builds an
``openai.OpenAI`` client for cross-judge 0.1 code (imported lazily).

Built in (:func:`all_vendors` lists them with the registered ones):

=============  ==============================  ==================  ===========
name           base URL                        key env var         limit_scope
=============  ==============================  ==================  ===========
deepseek       https://api.deepseek.com/v1     DEEPSEEK_API_KEY    endpoint
openai         https://api.openai.com/v1       OPENAI_API_KEY      model
anthropic      https://api.anthropic.com       ANTHROPIC_API_KEY   model
openrouter     https://openrouter.ai/api/v1    OPENROUTER_API_KEY  model
custom         (``base_url=`` required)        none (optional)     model
ollama         http://localhost:11434/v1       none                model
llamacpp       http://localhost:8080/v1        none                model
vllm           http://localhost:8000/v1        none                model
lmstudio       http://localhost:1234/v1        none                model
=============  ==============================  ==================  ===========

What each takes:

=============  ===========  ===========  ==========  ========  ==========
name           json_object  json_schema  reasoning   logprobs  vision
=============  ===========  ===========  ==========  ========  ==========
deepseek       yes          no           deepseek    yes       no
openai         yes          yes          openai      yes       yes (**)
anthropic      no           (own)        (thinking)  no        yes
openrouter     unknown      unknown      openrouter  unknown   unknown
custom         unknown      unknown      none        unknown   unknown
ollama         yes          yes          none        unknown   unknown
llamacpp       yes          yes (*)      none        yes       unknown
vllm           yes          yes          vllm        yes       unknown
lmstudio       no           yes          none        unknown   unknown
=============  ===========  ===========  ==========  ========  ==========

(*) in llama.cpp's dialect, ``{"type": "json_object", "schema": {...}}``
(``schema_dialect="json_object"``): llama-cpp-python's server refuses ``json_schema``.
(**) but for its text-only models (``text_only_models``: ``gpt-3.5-turbo*``, ``o1-mini*``,
``o3-mini*``), which see no images.
"unknown" (``None``) means ``Critic(structured="auto")`` / ``confidence="auto"`` try it and
learn from a refusal (:mod:`cross_judge.critic._stepdown`); ``json_mode="auto"`` treats it as
no. Anthropic enforces a schema as a forced tool or its JSON output format, and drives
reasoning with extended thinking and ``output_config.effort``.

Vision and size limits (``vision``, ``max_image_bytes``, ``max_request_bytes``,
``max_batch_bytes``: see :class:`VendorConfig`). A critic that cannot see an item's images,
or whose request is over its vendor's limits, abstains without a call (``SKIPPED``,
``error_kind="no_vision"`` or ``"too_large"``). Unknown vision (``None``) sends the images
and lets the vendor decide. The built-in limits are the vendors' published ones, in
decimal MB where their unit is unclear: OpenAI 20 MB per image and 50 MB per request,
Anthropic 5 MiB per image and 32 MB per request.

The registry. :data:`VENDORS` is cross-judge 0.1's dict and holds 0.1's three vendors
(deepseek, openai, openrouter), as 0.1 code expects; :func:`all_vendors` returns every
vendor :func:`get_vendor` finds: those three, the presets above and every vendor added
with :func:`register_vendor` (or written into :data:`VENDORS` by 0.1-style code).

Base URL checks. Every base URL is checked when a :class:`VendorConfig` is made, so also
when a critic overrides it (:func:`check_base_url`): an ``http://`` or ``https://`` URL
with a host, a port from 1 to 65535 if one is written, no query, fragment, whitespace or
control character. ``user:password@`` is accepted (sent as HTTP Basic auth) and never
shown in a message or repr.

Rate-limit scope (``limit_scope``). Vendors count their limits either per model (OpenAI,
Anthropic, and gateways such as OpenRouter, LiteLLM or a company proxy, where every model
has its own) or per account (DeepSeek). ``"model"`` (the default) keeps the adaptive 429
state (pause and lowered concurrency, :mod:`cross_judge.limits._gate`) per endpoint and model,
so a 429 on one model never slows another on the same base URL; ``"endpoint"`` shares it
by every model of the endpoint. ``max_concurrency`` and ``rpm`` are per endpoint either
way: they are the caller's caps for the whole vendor account.

Base URLs. An OpenAI-protocol vendor's base URL is the prefix of ``/chat/completions``
(it usually ends in ``/v1``). The ``anthropic`` protocol speaks the Messages API through
the official ``anthropic`` SDK, which appends ``/v1/messages`` to the base URL; a trailing
``/v1`` is dropped first, so ``https://api.anthropic.com`` and
``https://api.anthropic.com/v1`` (or a local ``VendorServer``'s ``anthropic_url`` and
``url``) reach the same endpoint. The key goes out as ``x-api-key``. No sampling
parameter is sent on that protocol: the API version the SDK speaks (``2026-10-21``) refuses
``temperature``, ``top_p`` and ``top_k`` for every model, so a critic's ``temperature``
has no effect there (see :mod:`cross_judge.transport._anthropic`).
"""

from __future__ import annotations

import enum
import fnmatch
import math
import os
import threading
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from .errors import ConfigError, MissingAPIKeyError, UnknownVendorError

if TYPE_CHECKING:
    import openai

    from .limits import SharedLimit

__all__ = [
    "VENDORS",
    "VENDOR_DEFAULTS",
    "LimitScope",
    "ReasoningDialect",
    "SchemaDialect",
    "VendorConfig",
    "all_vendors",
    "check_base_url",
    "get_vendor",
    "make_client",
    "register_vendor",
    "resolve_api_key",
    "sees_images",
    "set_vendor_limits",
    "without_userinfo",
]

ReasoningDialect = Literal["openai", "deepseek", "qwen", "vllm", "openrouter"]
"""The request fields an OpenAI-compatible vendor takes for a reasoning model's effort and
thinking budget (see :meth:`cross_judge.transport.ChatRequest.sent_settings`)."""

SchemaDialect = Literal["json_schema", "json_object"]
"""How an OpenAI-compatible vendor takes a schema: OpenAI's ``{"type": "json_schema",
"json_schema": {"name", "strict", "schema"}}``, or llama.cpp's ``{"type": "json_object",
"schema": {...}}`` (llama-cpp-python's server refuses the first with a 500)."""

_REASONING_DIALECTS = ("openai", "deepseek", "qwen", "vllm", "openrouter")

WireProtocol = str
"""A wire protocol's name, as registered (:func:`cross_judge.transport.protocol_names`):
``"openai"`` (chat completions), ``"anthropic"`` (Messages) or ``"openai-responses"``
(OpenAI's Responses API)."""

LimitScope = Literal["model", "endpoint"]
"""What shares a vendor's adaptive 429 state: each model of an endpoint, or the endpoint."""

_LIMIT_SCOPES: tuple[str, ...] = ("model", "endpoint")


def without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``***@``, for messages and reprs.

    Errs on the side of hiding: everything between the scheme and the last ``@`` goes,
    also in a URL too malformed to parse (no scheme, a ``/`` in the password).
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" not in rest:
        return url
    return f"{scheme}{sep}***@{rest.rsplit('@', 1)[1]}"


_URL_EXAMPLE = "e.g. https://api.example.com/v1 or http://localhost:8080/v1"


def base_url_problem(url: object) -> str | None:
    """What is wrong with ``url`` as a vendor base URL and how to fix it, or ``None``.

    The text never repeats the URL (it may hold a password); :func:`check_base_url` adds
    it, credentials hidden. Accepted: ``http`` or ``https``, a host, an optional port
    from 1 to 65535, an optional path, and ``user:password@`` (sent as Basic auth).
    """
    if not isinstance(url, str):
        return f"must be text, got {type(url).__name__}"
    if not url:
        return f"is empty; give the endpoint's URL, {_URL_EXAMPLE}"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "contains a space or control character; remove it (write a space as %20)"
    if "://" not in url:
        return f"has no scheme; write it in full with http:// or https://, {_URL_EXAMPLE}"
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname
    except ValueError:  # "[::1" and the like; the reason may quote the URL, so it goes
        return (
            "is not a valid URL: check the brackets around an IPv6 host, e.g. http://[::1]:8080/v1"
        )
    if scheme not in ("http", "https"):
        return f"uses the {scheme or '(empty)'}:// scheme; cross-judge speaks http:// and https://"
    if "@" in url.partition("://")[2] and "@" not in parts.netloc:
        # Most likely a password holding "/", "?" or "#": the host is not where it seems.
        return (
            "has an '@' after the host; if it holds user:password@, percent-encode any "
            "'/', '?', '#' or '@' inside them (e.g. %2F for '/')"
        )
    if not host:
        return f"has no host; {_URL_EXAMPLE}"
    if ":" not in host:  # a name or IPv4 address, not IPv6: each dotted label 1-63 chars
        name = host[:-1] if host.endswith(".") else host  # "example.com." is fully qualified
        try:
            name.encode("idna")  # refuses an empty or too long label
            valid = bool(name)
        except UnicodeError:
            valid = False
        if not valid:
            return (
                "has an invalid host name: the parts between dots must each be 1 to 63 "
                f"characters; {_URL_EXAMPLE}"
            )
    try:
        port = parts.port
    except ValueError:  # out of range or not a number
        port = 0
    if port == 0:
        written = parts.netloc.rsplit("@", 1)[-1].rpartition("]")[2].rpartition(":")[2]
        return (
            f"has port {written!r}; a port is a whole number from 1 to 65535, e.g. "
            "http://localhost:8080/v1, or leave it out for the scheme's own (80, 443)"
        )
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return (
            "has a query (?...) or fragment (#...); remove it: request paths such as "
            "/chat/completions are appended to the base URL"
        )
    return None


def check_base_url(url: object, *, where: str = "base_url") -> None:
    """Raise :class:`~cross_judge.errors.ConfigError` if ``url`` cannot be a vendor base
    URL (see :func:`base_url_problem`); the message starts with ``where``, shows the URL
    without credentials and says the fix.

    Raises:
        ConfigError: the URL is malformed, has another scheme, no host or a bad port.
    """
    problem = base_url_problem(url)
    if problem is None:
        return
    if not isinstance(url, str):  # its repr could hold a password: not shown
        raise ConfigError(f"{where}: base_url {problem}")
    raise ConfigError(f"{where}: base_url {without_userinfo(url)!r} {problem}")


@dataclass(frozen=True)
class VendorConfig:
    """Connection settings and capabilities of one vendor.

    The first three fields are cross-judge 0.1's (positional order kept). ``base_url`` may
    be ``""`` only for ``custom``-like vendors, whose critics must pass ``base_url=``.
    ``api_key_env`` is ``None`` for vendors that need no key (local servers); for them a key
    is still sent if one is given explicitly.

    Attributes:
        json_object: accepts ``response_format={"type": "json_object"}`` (``None``: not
            known; ``Critic(structured="auto")`` tries it and learns).
        json_schema: enforces a JSON schema given in ``response_format`` (``True``),
            refuses one (``False``), or is not known (``None``: ``structured="auto"``
            tries it first, and steps down on a refusal).
        schema_dialect: how the schema is sent: ``"json_schema"`` (OpenAI's
            ``{"type": "json_schema", "json_schema": {...}}``) or ``"json_object"``
            (llama.cpp's ``{"type": "json_object", "schema": {...}}``).
        reasoning: the request fields it takes for a reasoning model's ``effort`` and
            ``thinking_budget`` (:data:`ReasoningDialect`:
            ``"openai"``, ``"deepseek"``, ``"qwen"``, ``"vllm"``, ``"openrouter"``);
            ``None``: none known, and a critic asking for either is refused at
            construction. The ``anthropic`` protocol has its own (extended thinking).
        logprobs: serves token log-probabilities (``logprobs``/``top_logprobs``):
            ``True``, ``False``, or ``None`` (not known: ``confidence="auto"`` asks, and
            uses the stated confidence when none come back).
        requires_api_key: a call without a key is refused before it is sent.
        protocol: the wire protocol: ``"openai"`` (chat completions, the default),
            ``"anthropic"`` (the Messages API) or ``"openai-responses"`` (OpenAI's
            Responses API), or another registered one
            (:func:`cross_judge.transport.register_protocol`); checked by
            :func:`register_vendor` and when a critic is built.
        max_concurrency: requests in flight to this vendor at once, shared by every critic
            and model on it (per event loop and endpoint); the others queue. ``None`` =
            no configured cap. Either way what is allowed adapts to 429s: halved on a
            rate limit, raised back by one per window of successes, per ``limit_scope``
            (see :mod:`cross_judge.limits._gate`).
        rpm: requests per minute sent to this vendor, paced evenly (one every
            ``60 / rpm`` s, no burst), retries included, shared like ``max_concurrency``.
            ``None`` = unpaced. Queueing for either limit counts against a critic's
            ``deadline``, not its per-attempt ``timeout``. Change both with
            :func:`set_vendor_limits`.
        max_tokens_field: the request field that caps output tokens (OpenAI's current
            models want ``max_completion_tokens``; most others ``max_tokens``).
        limit_scope: what a 429 pauses and slows down: ``"model"`` (default) the calls
            to the same model on this endpoint only, as vendors and gateways that limit
            each model need; ``"endpoint"`` every call to this endpoint, for vendors
            that limit per account (DeepSeek).
        vision: whether the vendor's models see images (``True``), none does
            (``False``), or it is not known (``None``: images are sent and the vendor
            decides); see :func:`sees_images`.
        text_only_models: ``fnmatch`` patterns (case-insensitive) of this vendor's model
            ids that see no images whatever ``vision`` says (OpenAI's
            ``gpt-3.5-turbo*``).
        max_image_bytes: the most one image may put on the wire, as base64 text (the
            file is 3/4 of it); ``None``: not checked. A request holding a larger one is
            not sent (``error_kind="too_large"``).
        max_request_bytes: the most one request's content may put on the wire (its text,
            UTF-8, and its images as base64;
            :meth:`~cross_judge.transport.ChatRequest.wire_bytes`); ``None``: not checked.
        max_batch_bytes: the most one provider batch (OpenAI's JSONL input file,
            Anthropic's request list) may hold, below the API's own limit (200 MB for
            OpenAI, 256 MB for Anthropic); ``None``: the API's. A job's
            requests are split into as many batches as it takes.
        shared: a :class:`~cross_judge.shared_limit.SharedLimit`: every attempt to this
            vendor (any endpoint, model or critic) also holds one of its permits, leased
            from a broker shared with other processes or Ray actors, after passing the
            loop-local limits above. ``None`` (default) = limits are per event loop.
            Compared by identity; set it with :func:`set_vendor_limits`.
    """

    name: str
    base_url: str
    api_key_env: str | None
    json_object: bool | None = False
    json_schema: bool | None = False
    requires_api_key: bool = True
    protocol: WireProtocol = "openai"
    max_concurrency: int | None = None
    rpm: float | None = None
    max_tokens_field: str = "max_tokens"
    limit_scope: LimitScope = "model"
    shared: SharedLimit | None = None
    schema_dialect: SchemaDialect = "json_schema"
    reasoning: ReasoningDialect | None = None
    logprobs: bool | None = None
    vision: bool | None = None
    text_only_models: tuple[str, ...] = ()
    max_image_bytes: int | None = None
    max_request_bytes: int | None = None
    max_batch_bytes: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name != self.name.strip():
            raise ConfigError(f"VendorConfig.name must be a non-empty word, got {self.name!r}")
        if self.base_url != "":
            check_base_url(self.base_url, where=f"vendor {self.name!r}")
        if self.limit_scope not in _LIMIT_SCOPES:
            raise ConfigError(
                f"vendor {self.name!r}: limit_scope must be 'model' (a 429 slows only the "
                "model it came from) or 'endpoint' (it slows every model of the endpoint: "
                f"vendors that limit per account); got {self.limit_scope!r}"
            )
        if self.requires_api_key and not self.api_key_env:
            raise ConfigError(
                f"vendor {self.name!r} requires an API key but names no api_key_env; "
                "set api_key_env='...' or requires_api_key=False"
            )
        if self.max_concurrency is not None:
            _check_max_concurrency(f"vendor {self.name!r}", self.max_concurrency)
        if self.rpm is not None:
            _check_rpm(f"vendor {self.name!r}", self.rpm)
        if self.shared is not None:
            _check_shared(f"vendor {self.name!r}", self.shared)
        if self.schema_dialect not in ("json_schema", "json_object"):
            raise ConfigError(
                f"vendor {self.name!r}: schema_dialect must be 'json_schema' (OpenAI's "
                "response_format) or 'json_object' (llama.cpp's json_object with a schema); "
                f"got {self.schema_dialect!r}"
            )
        if self.reasoning not in (None, *_REASONING_DIALECTS):
            raise ConfigError(
                f"vendor {self.name!r}: reasoning must be one of "
                f"{', '.join(map(repr, _REASONING_DIALECTS))} or None; got {self.reasoning!r}"
            )
        _check_vision(self)

    def __repr__(self) -> str:
        # A base URL may carry credentials (https://user:password@host/v1): never shown.
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["base_url"] = without_userinfo(self.base_url)
        return f"VendorConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def _check_vision(config: VendorConfig) -> None:
    """Raise unless ``vision``, ``text_only_models`` and the size limits are valid (a list
    of patterns is kept as a tuple)."""
    where = f"vendor {config.name!r}"
    if config.vision is not None and not isinstance(config.vision, bool):
        raise ConfigError(
            f"{where}: vision must be True (its models see images), False (they do not) "
            f"or None (not known: images are sent and the vendor decides); got {config.vision!r}"
        )
    patterns: object = config.text_only_models
    if (
        isinstance(patterns, str)
        or not isinstance(patterns, (tuple, list))
        or not all(isinstance(p, str) for p in patterns)
    ):
        raise ConfigError(
            f"{where}: text_only_models must be a list of model id patterns, e.g. "
            f"['gpt-3.5-turbo*']; got {patterns!r}"
        )
    if not isinstance(patterns, tuple):
        object.__setattr__(config, "text_only_models", tuple(patterns))
    for name in ("max_image_bytes", "max_request_bytes", "max_batch_bytes"):
        value = getattr(config, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"{where}: {name} must be a whole number of bytes >= 1 (e.g. {name}="
                f"5_242_880 for 5 MiB), or None for no limit; got {value!r}"
            )


def sees_images(config: VendorConfig, model: str) -> bool | None:
    """Whether ``model`` on ``config``'s vendor sees images: ``False`` for a model
    matching ``text_only_models``, else the vendor's ``vision`` (``None``: not known)."""
    if config.text_only_models:
        lowered = model.lower()
        if any(fnmatch.fnmatchcase(lowered, p.lower()) for p in config.text_only_models):
            return False
    return config.vision


_OPENAI_TEXT_ONLY = ("gpt-3.5-turbo*", "o1-mini*", "o3-mini*")
"""OpenAI's models that take no image input (its models page)."""

_BUILTIN: tuple[VendorConfig, ...] = (
    # DeepSeek limits concurrency per account, whatever the model: one 429 concerns all.
    # It takes json_object but no schema; thinking is switched on by a request field.
    VendorConfig(
        "deepseek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        json_object=True,
        limit_scope="endpoint",
        reasoning="deepseek",
        logprobs=True,
        vision=False,  # its chat models take text only
    ),
    VendorConfig(
        "openai",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        json_object=True,
        json_schema=True,
        max_tokens_field="max_completion_tokens",
        reasoning="openai",
        logprobs=True,
        # Vision models but for the text-only ones; 20 MB per image and 50 MB of images
        # per request (its images guide), in decimal megabytes, the smaller reading.
        vision=True,
        text_only_models=_OPENAI_TEXT_ONLY,
        max_image_bytes=20_000_000,
        max_request_bytes=50_000_000,
    ),
    # The Messages API has no json_object mode and no token probabilities; a schema is
    # enforced as a forced tool or its JSON output format.
    VendorConfig(
        "anthropic",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        protocol="anthropic",
        logprobs=False,
        # Every current model sees images; 5 MiB per image (the figure its 400 names:
        # "image exceeds 5 MB maximum: ... > 5242880 bytes") and 32 MB per request.
        vision=True,
        max_image_bytes=5 * 1024 * 1024,
        max_request_bytes=32_000_000,
    ),
    # OpenRouter forwards response_format and logprobs only to models that take them:
    # not known per vendor (structured="auto" learns per model); json_mode stays off.
    VendorConfig(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        json_object=None,
        json_schema=None,
        reasoning="openrouter",
    ),
    VendorConfig("custom", "", None, requires_api_key=False, json_object=None, json_schema=None),
    VendorConfig(
        "ollama",
        "http://localhost:11434/v1",
        None,
        json_object=True,
        json_schema=True,
        requires_api_key=False,
    ),
    # llama-cpp-python's server refuses {"type": "json_schema"} (a 500 validation error)
    # and enforces {"type": "json_object", "schema": ...} with a grammar.
    VendorConfig(
        "llamacpp",
        "http://localhost:8080/v1",
        None,
        json_object=True,
        json_schema=True,
        schema_dialect="json_object",
        requires_api_key=False,
        logprobs=True,
    ),
    VendorConfig(
        "vllm",
        "http://localhost:8000/v1",
        None,
        json_object=True,
        json_schema=True,
        requires_api_key=False,
        reasoning="vllm",
        logprobs=True,
    ),
    # LM Studio refuses json_object and takes json_schema.
    VendorConfig(
        "lmstudio", "http://localhost:1234/v1", None, json_schema=True, requires_api_key=False
    ),
)

_NAMES_01 = ("deepseek", "openai", "openrouter")

VENDORS: dict[str, VendorConfig] = {v.name: v for v in _BUILTIN if v.name in _NAMES_01}
"""cross-judge 0.1's vendors by lower-case name: deepseek, openai, openrouter. Every vendor
(presets and registered ones too) is in :func:`all_vendors`; :func:`get_vendor` finds
them all, and a vendor written here by 0.1-style code as well."""

_MORE_VENDORS: dict[str, VendorConfig] = {v.name: v for v in _BUILTIN if v.name not in VENDORS}
# Every other vendor: the presets and those added with register_vendor. A name is in one
# of the two dicts only (VENDORS wins a lookup if 0.1-style code wrote it into both).

VENDOR_DEFAULTS: dict[str, tuple[str, str]] = {
    name: (VENDORS[name].base_url, VENDORS[name].api_key_env or "")
    for name in ("deepseek", "openai", "openrouter")
}
"""cross-judge 0.1's ``{vendor: (base_url, api_key_env)}`` table, kept for old code."""

_registry_lock = threading.RLock()  # get_vendor (inside set_vendor_limits) lists names under it


def all_vendors() -> dict[str, VendorConfig]:
    """Every vendor :func:`get_vendor` finds, by lower-case name: 0.1's three
    (:data:`VENDORS`), the presets (anthropic, custom, ollama, llamacpp, vllm, lmstudio)
    and every registered one, built-in ones first.

    A snapshot: changing the dict changes nothing; use :func:`register_vendor` and
    :func:`set_vendor_limits`.
    """
    with _registry_lock:
        everything = dict(VENDORS)
        for name, config in _MORE_VENDORS.items():
            everything.setdefault(name, config)
        return everything


def _store(config: VendorConfig) -> None:
    """Put ``config`` where its name lives (:data:`VENDORS` for 0.1's); caller holds the lock."""
    (VENDORS if config.name in VENDORS else _MORE_VENDORS)[config.name] = config


def register_vendor(
    name: str,
    base_url: str,
    api_key_env: str | None = None,
    *,
    replace_existing: bool = False,
    **capabilities: object,
) -> VendorConfig:
    """Register (or, with ``replace_existing=True``, replace) a vendor and return its config.

    ``name`` is stored lower-case; the vendor is then in :func:`all_vendors` (and, when it
    replaces one of 0.1's three, in :data:`VENDORS`). ``capabilities`` are the other
    :class:`VendorConfig` fields (``json_object``, ``requires_api_key``,
    ``limit_scope``, ...). When ``api_key_env`` is ``None`` the vendor needs no key unless
    ``requires_api_key=True`` is passed. A gateway (LiteLLM, a company proxy) keeps the
    default ``limit_scope="model"``; a vendor that limits per account wants
    ``limit_scope="endpoint"``.

    Raises:
        ConfigError: the name is taken (and ``replace_existing`` is false), or a field is
            invalid.
    """
    key = name.strip().lower()
    capabilities.setdefault("requires_api_key", api_key_env is not None)
    protocol = capabilities.get("protocol")
    if protocol is not None:
        from .transport import protocol_adapter

        protocol_adapter(str(protocol))  # an unknown protocol: a ConfigError naming the known
    try:
        config = VendorConfig(key, base_url, api_key_env, **capabilities)  # type: ignore[arg-type]
    except TypeError as exc:
        allowed = sorted(VendorConfig.__dataclass_fields__)
        raise ConfigError(f"register_vendor: {exc}; VendorConfig fields are {allowed}") from exc
    with _registry_lock:
        if (key in VENDORS or key in _MORE_VENDORS) and not replace_existing:
            raise ConfigError(
                f"vendor {key!r} is already registered; pass replace_existing=True to replace it"
            )
        _store(config)
    return config


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP


def set_vendor_limits(
    name: str,
    *,
    max_concurrency: int | Literal[_Keep.KEEP] | None = _KEEP,
    rpm: float | Literal[_Keep.KEEP] | None = _KEEP,
    limit_scope: LimitScope | Literal[_Keep.KEEP] = _KEEP,
    shared: SharedLimit | Literal[_Keep.KEEP] | None = _KEEP,
) -> VendorConfig:
    """Replace a registered vendor's limits and return its new config.

    ``max_concurrency`` caps the requests in flight to the vendor at once, shared by every
    critic and model on it; ``rpm`` paces its requests per minute. ``None`` removes a
    limit; a limit left out is kept. ``limit_scope`` says what a 429 slows down:
    ``"model"``, the calls to that model only, or ``"endpoint"``, every call to the vendor
    (see :class:`VendorConfig`). They apply to attempts that start after the change (calls
    already queued pick them up as they are admitted); requests in flight are not cut.
    Limits are kept per event loop: two threads each running an event loop each get the
    full allowance. ``shared`` attaches a :class:`~cross_judge.shared_limit.SharedLimit`
    (``None`` detaches it): every attempt to the vendor then also holds one of its
    permits, so processes (or Ray actors) sharing its broker together stay under its
    limit. A shared limit serves one event loop; give each loop its own client of the
    same broker (``SharedLimit.connect(address)``).

    Raises:
        UnknownVendorError: ``name`` is not registered.
        ConfigError: ``max_concurrency`` is not a whole number >= 1, ``rpm`` is not a
            finite number > 0, ``limit_scope`` is neither ``"model"`` nor
            ``"endpoint"``, or ``shared`` is not a ``SharedLimit``; the message says what
            to pass instead.
    """
    where = f"set_vendor_limits({name!r})"
    if max_concurrency is not _KEEP and max_concurrency is not None:
        _check_max_concurrency(where, max_concurrency)
    if rpm is not _KEEP and rpm is not None:
        _check_rpm(where, rpm)
    if shared is not _KEEP and shared is not None:
        _check_shared(where, shared)
    with _registry_lock:
        config = get_vendor(name)
        new_max = config.max_concurrency if max_concurrency is _KEEP else max_concurrency
        new_rpm = config.rpm if rpm is _KEEP else (None if rpm is None else float(rpm))
        new_scope = config.limit_scope if limit_scope is _KEEP else limit_scope
        new_shared = config.shared if shared is _KEEP else shared
        changed = replace(
            config,
            max_concurrency=new_max,
            rpm=new_rpm,
            limit_scope=new_scope,
            shared=new_shared,
        )
        if changed != config:
            config = changed
            _store(config)
    return config


def _check_max_concurrency(where: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{where}: max_concurrency must be a whole number >= 1 "
            f"(requests in flight at once), or None to remove the cap; got {value!r}"
        )


def _check_shared(where: str, value: object) -> None:
    from .limits import SharedLimit

    if not isinstance(value, SharedLimit):
        raise ConfigError(
            f"{where}: shared must be a cross_judge.shared_limit.SharedLimit (e.g. "
            "SharedLimit.connect('host:port')), or None to detach it; got "
            f"{type(value).__name__}"
        )


def _check_rpm(where: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(
            f"{where}: rpm must be a finite number > 0 (requests per "
            f"minute, e.g. rpm=60 or rpm=0.5), or None to remove the limit; got {value!r}"
        )


def get_vendor(name: str) -> VendorConfig:
    """Look up a vendor by name, case-insensitively.

    Finds every vendor of :func:`all_vendors`, not only :data:`VENDORS`.

    Raises:
        UnknownVendorError: (a ``KeyError`` and a ``ConfigError``) listing the known names.
    """
    key = str(name).strip().lower()
    config = VENDORS.get(key)
    if config is None:
        config = _MORE_VENDORS.get(key)
    if config is None:
        raise UnknownVendorError(
            f"Unknown vendor {name!r}. Known: {sorted(all_vendors())}. For another "
            "OpenAI-compatible endpoint use vendor='custom' with base_url=..., or "
            "register it with cross_judge.register_vendor(name, base_url, api_key_env)."
        )
    return config


def resolve_api_key(config: VendorConfig, api_key: str | None) -> str | None:
    """The key to send: the explicit one, else the vendor's env var (read now, not at import).

    Returns ``None`` when there is none and the vendor does not require one. Surrounding
    whitespace is dropped (a key read from a file often ends in a newline).

    Raises:
        MissingAPIKeyError: the vendor requires a key and none is set, or the key holds a
            control character and could not go in an HTTP header (the HTTP libraries would
            then put it in their error messages and debug logs); the message names the
            environment variable (never a key).
    """
    where = "api_key"
    key = (api_key or "").strip()
    if not key and config.api_key_env:
        where = f"the {config.api_key_env} environment variable"
        key = os.environ.get(config.api_key_env, "").strip()
    if key:
        if not key.isprintable():  # a control character (C speed: this runs per call)
            raise MissingAPIKeyError(
                f"The API key for vendor {config.name!r} (from {where}) contains a control "
                "character such as a newline inside it, so it cannot be sent in an HTTP "
                "header; the key is not shown. Set it again, as one line"
            )
        return key
    if config.requires_api_key:
        raise MissingAPIKeyError(
            f"Missing API key for vendor {config.name!r}: set the {config.api_key_env} "
            "environment variable or pass api_key=..."
        )
    return None


def with_base_url(config: VendorConfig, base_url: str | None) -> VendorConfig:
    """``config`` with ``base_url`` overridden (validated), or unchanged for ``None``.

    Raises:
        ConfigError: neither the vendor nor the caller gives a base URL (``custom``), or
            the base URL is malformed (see :func:`check_base_url`); the message says the
            fix.
    """
    if base_url:
        return replace(config, base_url=base_url.rstrip("/"))
    if not config.base_url:
        raise ConfigError(
            f"vendor {config.name!r} has no default base URL: pass base_url='https://host/v1'"
        )
    return config


def _speaks_chat_completions(config: VendorConfig) -> bool:
    from .transport import ChatCompletionsAdapter, protocol_adapter

    return isinstance(protocol_adapter(config.protocol), ChatCompletionsAdapter)


def make_client(
    vendor: str = "deepseek", api_key: str | None = None, base_url: str | None = None
) -> openai.OpenAI:
    """Build a synchronous ``openai.OpenAI`` client for a vendor (cross-judge 0.1 API).

    The new core does not use it; it is kept for code that drives the OpenAI SDK itself.

    Raises:
        UnknownVendorError: unknown vendor.
        MissingAPIKeyError: (a ``RuntimeError``) no key; the message names the env var.
        ConfigError: ``custom`` without ``base_url``, or a vendor that does not speak the
            OpenAI protocol (``anthropic``).
        ImportError: the ``openai`` package is missing.
    """
    try:
        from openai import OpenAI
    except ImportError as exc:  # pragma: no cover - openai is a dependency
        raise ImportError(
            "The 'openai' package is required for make_client(). "
            "Install with: pip install 'openai>=1.0'"
        ) from exc

    config = with_base_url(get_vendor(vendor), base_url)
    if not _speaks_chat_completions(config):
        raise ConfigError(
            f"make_client() builds an OpenAI client, and vendor {config.name!r} speaks the "
            f"{config.protocol!r} protocol; use a Critic(vendor={config.name!r}), or that "
            "vendor's own SDK"
        )
    key = resolve_api_key(config, api_key)
    # The OpenAI client insists on a key; local servers accept any placeholder.
    return OpenAI(api_key=key or "not-needed", base_url=config.base_url)
