"""Vendor registry: where each vendor lives, which key it needs, and what it accepts.

A :class:`VendorConfig` names an OpenAI-compatible or Anthropic endpoint, the environment
variable its API key is read from, and its capabilities, so a
:class:`~cross_judge.core.Critic` only needs ``vendor="deepseek"``. Lookups are
case-insensitive. This module makes no network calls; ``make_client`` builds an
``openai.OpenAI`` client for cross-judge 0.1 code (imported lazily).

Built in:

=============  ==============================  ======================  ===========
name           base URL                        key env var             json_object
=============  ==============================  ======================  ===========
deepseek       https://api.deepseek.com/v1     DEEPSEEK_API_KEY        yes
openai         https://api.openai.com/v1       OPENAI_API_KEY          yes
anthropic      https://api.anthropic.com       ANTHROPIC_API_KEY       no (Messages)
openrouter     https://openrouter.ai/api/v1    OPENROUTER_API_KEY      no (per model)
custom         (``base_url=`` required)        none (key optional)     no
ollama         http://localhost:11434/v1       none                    yes
llamacpp       http://localhost:8080/v1        none                    yes
vllm           http://localhost:8000/v1        none                    yes
lmstudio       http://localhost:1234/v1        none                    no
=============  ==============================  ======================  ===========

Base URLs. An OpenAI-protocol vendor's base URL is the prefix of ``/chat/completions``
(it usually ends in ``/v1``). The ``anthropic`` protocol speaks the Messages API through
the official ``anthropic`` SDK, which appends ``/v1/messages`` to the base URL; a trailing
``/v1`` is dropped first, so ``https://api.anthropic.com`` and
``https://api.anthropic.com/v1`` (or a local ``VendorServer``'s ``anthropic_url`` and
``url``) reach the same endpoint. The key goes out as ``x-api-key``. No sampling
parameter is sent on that protocol: the API version the SDK speaks (``2026-10-21``) refuses
``temperature``, ``top_p`` and ``top_k`` for every model, so a critic's ``temperature``
has no effect there (see :mod:`cross_judge.transport.anthropic`).
"""

from __future__ import annotations

import enum
import math
import os
import threading
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError, MissingAPIKeyError, UnknownVendorError

if TYPE_CHECKING:
    import openai

__all__ = [
    "VENDORS",
    "VENDOR_DEFAULTS",
    "VendorConfig",
    "get_vendor",
    "make_client",
    "register_vendor",
    "resolve_api_key",
    "set_vendor_limits",
]

WireProtocol = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class VendorConfig:
    """Connection settings and capabilities of one vendor.

    The first three fields are cross-judge 0.1's (positional order kept). ``base_url`` may
    be ``""`` only for ``custom``-like vendors, whose critics must pass ``base_url=``.
    ``api_key_env`` is ``None`` for vendors that need no key (local servers); for them a key
    is still sent if one is given explicitly.

    Attributes:
        json_object: accepts ``response_format={"type": "json_object"}``.
        json_schema: accepts ``response_format={"type": "json_schema", ...}``.
        requires_api_key: a call without a key is refused before it is sent.
        protocol: the wire protocol, ``"openai"`` (chat completions) or ``"anthropic"``.
        max_concurrency: requests in flight to this vendor at once, shared by every critic
            on it (per event loop and endpoint); the others queue. ``None`` = no
            configured cap. Either way the cap adapts to 429s: halved on a rate limit,
            raised back by one per window of successes (see :mod:`cross_judge._limits`).
        rpm: requests per minute sent to this vendor, paced evenly (one every
            ``60 / rpm`` s, no burst), retries included. ``None`` = unpaced.
            Queueing for either limit counts against a critic's ``deadline``, not its
            per-attempt ``timeout``. Change both with :func:`set_vendor_limits`.
        max_tokens_field: the request field that caps output tokens (OpenAI's current
            models want ``max_completion_tokens``; most others ``max_tokens``).
    """

    name: str
    base_url: str
    api_key_env: str | None
    json_object: bool = False
    json_schema: bool = False
    requires_api_key: bool = True
    protocol: WireProtocol = "openai"
    max_concurrency: int | None = None
    rpm: float | None = None
    max_tokens_field: str = "max_tokens"

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip():
            raise ConfigError(f"VendorConfig.name must be a non-empty word, got {self.name!r}")
        if self.base_url and not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"VendorConfig.base_url for {self.name!r} must start with http:// or https://, "
                f"got {_without_userinfo(self.base_url)!r}"
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

    def __repr__(self) -> str:
        # A base URL may carry credentials (https://user:password@host/v1): never shown.
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["base_url"] = _without_userinfo(self.base_url)
        return f"VendorConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


_BUILTIN: tuple[VendorConfig, ...] = (
    VendorConfig("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", json_object=True),
    VendorConfig(
        "openai",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        json_object=True,
        json_schema=True,
        max_tokens_field="max_completion_tokens",
    ),
    # The Messages API has no json_object mode; prompts ask for JSON instead.
    VendorConfig(
        "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", protocol="anthropic"
    ),
    # OpenRouter forwards response_format only to models that support it; off by default.
    VendorConfig("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    VendorConfig("custom", "", None, requires_api_key=False),
    VendorConfig(
        "ollama", "http://localhost:11434/v1", None, json_object=True, requires_api_key=False
    ),
    VendorConfig(
        "llamacpp", "http://localhost:8080/v1", None, json_object=True, requires_api_key=False
    ),
    VendorConfig(
        "vllm", "http://localhost:8000/v1", None, json_object=True, requires_api_key=False
    ),
    VendorConfig(
        "lmstudio", "http://localhost:1234/v1", None, json_schema=True, requires_api_key=False
    ),
)

VENDORS: dict[str, VendorConfig] = {v.name: v for v in _BUILTIN}
"""Registered vendors by lower-case name. Add to it with :func:`register_vendor`."""

VENDOR_DEFAULTS: dict[str, tuple[str, str]] = {
    name: (VENDORS[name].base_url, VENDORS[name].api_key_env or "")
    for name in ("deepseek", "openai", "openrouter")
}
"""cross-judge 0.1's ``{vendor: (base_url, api_key_env)}`` table, kept for old code."""

_registry_lock = threading.Lock()


def register_vendor(
    name: str,
    base_url: str,
    api_key_env: str | None = None,
    *,
    replace_existing: bool = False,
    **capabilities: object,
) -> VendorConfig:
    """Register (or, with ``replace_existing=True``, replace) a vendor and return its config.

    ``name`` is stored lower-case. ``capabilities`` are the other :class:`VendorConfig`
    fields (``json_object``, ``requires_api_key``, ...). When ``api_key_env`` is ``None``
    the vendor needs no key unless ``requires_api_key=True`` is passed.

    Raises:
        ConfigError: the name is taken (and ``replace_existing`` is false), or a field is
            invalid.
    """
    key = name.strip().lower()
    capabilities.setdefault("requires_api_key", api_key_env is not None)
    try:
        config = VendorConfig(key, base_url, api_key_env, **capabilities)  # type: ignore[arg-type]
    except TypeError as exc:
        allowed = sorted(VendorConfig.__dataclass_fields__)
        raise ConfigError(f"register_vendor: {exc}; VendorConfig fields are {allowed}") from exc
    with _registry_lock:
        if key in VENDORS and not replace_existing:
            raise ConfigError(
                f"vendor {key!r} is already registered; pass replace_existing=True to replace it"
            )
        VENDORS[key] = config
    return config


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP


def set_vendor_limits(
    name: str,
    *,
    max_concurrency: int | Literal[_Keep.KEEP] | None = _KEEP,
    rpm: float | Literal[_Keep.KEEP] | None = _KEEP,
) -> VendorConfig:
    """Replace a registered vendor's limits and return its new config.

    ``max_concurrency`` caps the requests in flight to the vendor at once, shared by every
    critic on it; ``rpm`` paces its requests per minute. ``None`` removes a limit; a
    limit left out is kept. They apply to attempts that start after the change (calls
    already queued pick them up as they are admitted); requests in flight are not cut.
    Limits are kept per event loop: two threads each running an event loop each get the
    full allowance.

    Raises:
        UnknownVendorError: ``name`` is not registered.
        ConfigError: ``max_concurrency`` is not a whole number >= 1, or ``rpm`` is not a
            finite number > 0; the message says what to pass instead.
    """
    where = f"set_vendor_limits({name!r})"
    if max_concurrency is not _KEEP and max_concurrency is not None:
        _check_max_concurrency(where, max_concurrency)
    if rpm is not _KEEP and rpm is not None:
        _check_rpm(where, rpm)
    with _registry_lock:
        config = get_vendor(name)
        new_max = config.max_concurrency if max_concurrency is _KEEP else max_concurrency
        new_rpm = config.rpm if rpm is _KEEP else (None if rpm is None else float(rpm))
        if (new_max, new_rpm) != (config.max_concurrency, config.rpm):
            config = replace(config, max_concurrency=new_max, rpm=new_rpm)
            VENDORS[config.name] = config
    return config


def _check_max_concurrency(where: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{where}: max_concurrency must be a whole number >= 1 "
            f"(requests in flight at once), or None to remove the cap; got {value!r}"
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


def _without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``***@``, for messages and reprs."""
    try:
        parts = urlsplit(url)
    except ValueError:  # unparsable: keep only what cannot hold credentials
        return "***@" + url.rsplit("@", 1)[1] if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def get_vendor(name: str) -> VendorConfig:
    """Look up a vendor by name, case-insensitively.

    Raises:
        UnknownVendorError: (a ``KeyError`` and a ``ConfigError``) listing the known names.
    """
    config = VENDORS.get(str(name).strip().lower())
    if config is None:
        raise UnknownVendorError(
            f"Unknown vendor {name!r}. Known: {sorted(VENDORS)}. For another "
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
        ConfigError: neither the vendor nor the caller gives a base URL (``custom``).
    """
    if base_url:
        return replace(config, base_url=base_url.rstrip("/"))
    if not config.base_url:
        raise ConfigError(
            f"vendor {config.name!r} has no default base URL: pass base_url='https://host/v1'"
        )
    return config


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
    if config.protocol != "openai":
        raise ConfigError(
            f"make_client() builds an OpenAI client, and vendor {config.name!r} speaks the "
            f"{config.protocol!r} protocol; use a Critic(vendor={config.name!r}), or that "
            "vendor's own SDK"
        )
    key = resolve_api_key(config, api_key)
    # The OpenAI client insists on a key; local servers accept any placeholder.
    return OpenAI(api_key=key or "not-needed", base_url=config.base_url)
