"""The wire-protocol adapter interface and the registry of protocols.

A :class:`WireAdapter` is everything that differs between wire protocols: the settings a
request sends and does not send, the body it goes out as, the call itself, the parsing
of the reply, the structured-output forms and reasoning fields it takes, how its endpoint
is told apart in the response cache, and its batch API (or none). The rest of the package
asks the adapter of a vendor's protocol (:func:`protocol_adapter`) and never compares a
protocol's name.

The built-in adapters (``"openai"`` chat completions, ``"anthropic"`` Messages and
``"openai-responses"``, OpenAI's Responses API) register themselves when
:mod:`cross_judge.transport` is imported; :func:`register_protocol` adds another.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..vendors import VendorConfig
    from ._batch_api import BatchAPI
    from ._http import HTTPSession, RawResponse
    from ._wire import ChatRequest, Completion, StructuredForm

__all__ = [
    "Connection",
    "WireAdapter",
    "protocol_adapter",
    "protocol_names",
    "register_protocol",
]


@dataclass(frozen=True)
class Connection:
    """What :meth:`WireAdapter.connect` sets up for one call: ``send`` makes one attempt
    (``send(request, timeout)``, returning a :class:`~cross_judge.transport.Completion` or
    raising :class:`~cross_judge.transport.CallFailure`); ``self_timed`` is true when the
    transport itself enforces the whole per-attempt ``timeout`` (then the retry policy does
    not add its own)."""

    send: Callable[[ChatRequest, float], Awaitable[Completion]]
    self_timed: bool = False


class WireAdapter:
    """One wire protocol: subclass it, set the class attributes, implement the methods that
    raise :class:`NotImplementedError`, and :func:`register_protocol` an instance.

    Attributes:
        name: the protocol's name, as ``register_vendor(..., protocol=name)`` takes it.
        title: the API in words for messages, e.g. ``"Anthropic's Messages API"``.
        forms: the :data:`~cross_judge.transport.StructuredForm` values it can send
            (``"off"`` always).
        takes_http_client: a critic's injected ``http_client`` carries its calls (it
            speaks plain HTTP through :class:`~cross_judge.transport.HTTPSession`).
        token_probabilities: it can return token log-probabilities.
        batch: its batch API (:class:`~cross_judge.transport._batch_api.BatchAPI`), or
            ``None``: batch mode then asks its critics live.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    forms: ClassVar[frozenset[str]] = frozenset({"off"})
    takes_http_client: ClassVar[bool] = False
    token_probabilities: ClassVar[bool] = False
    batch: BatchAPI | None = None

    # -- the request ----------------------------------------------------------------------

    def sent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        """What :meth:`ChatRequest.sent_settings` returns on this protocol (``config``
        ``None``: the protocol's defaults, no vendor dialect)."""
        raise NotImplementedError

    def unsent_settings(self, request: ChatRequest, config: VendorConfig | None) -> dict[str, Any]:
        """What :meth:`ChatRequest.unsent_settings` returns on this protocol."""
        raise NotImplementedError

    def sends_temperature(self, config: VendorConfig, effort: str | None) -> bool:
        """Whether a request with ``effort`` to ``config`` sends its temperature (a critic
        sampling several answers needs one > 0 only then)."""
        raise NotImplementedError

    def payload(self, config: VendorConfig, request: ChatRequest) -> dict[str, Any]:
        """The JSON body ``request`` goes out as: the model, the messages built from
        :attr:`ChatRequest.messages`, and exactly :meth:`sent_settings` in the protocol's
        field names."""
        raise NotImplementedError

    # -- the call -------------------------------------------------------------------------

    async def connect(
        self, config: VendorConfig, api_key: str | None, session: HTTPSession | None
    ) -> Connection:
        """Set up the calls of one request to ``config`` (import a client library, open a
        pooled session; ``session`` is a critic's injected one, when
        :attr:`takes_http_client`). Set-up, not the call: it runs outside the per-attempt
        timeout."""
        raise NotImplementedError

    def parse(self, raw: RawResponse) -> Completion:
        """A reply as a :class:`~cross_judge.transport.Completion` (its usage and finish
        reason included), or raise :class:`~cross_judge.transport.CallFailure`."""
        raise NotImplementedError

    # -- what the protocol takes ----------------------------------------------------------

    def form_problem(self, config: VendorConfig, structured: str) -> str | None:
        """Why ``structured`` (a form other than ``"auto"``) cannot be asked of ``config``,
        with the fix; ``None`` when it can."""
        if structured == "off" or structured in self.forms:
            return None
        return f"{self.title} takes no structured={structured!r}; use 'auto'"

    def auto_form(self, config: VendorConfig, *, thinking: bool, json_ok: bool) -> StructuredForm:
        """The strongest form ``structured="auto"`` starts at on ``config`` (``thinking``:
        a thinking budget is asked; ``json_ok``: the prompt mentions JSON)."""
        return "off"

    def json_allowed(self, config: VendorConfig) -> bool:
        """Whether ``config`` may be asked for a JSON object (JSON mode)."""
        return "json" in self.forms

    def reasoning_problem(
        self,
        config: VendorConfig,
        effort: str | None,
        thinking_budget: int | None,
        structured: str | None,
    ) -> str | None:
        """Why ``config`` cannot be sent ``effort`` and ``thinking_budget`` as asked (with
        ``structured``), the fix in the text; ``None`` when it can."""
        return None

    def endpoint_path(self, path: str) -> str:
        """A base URL's path (trailing slashes removed) as the response cache tells
        endpoints apart: the protocol drops what its client adds or removes itself."""
        return path


_LOCK = threading.Lock()
_ADAPTERS: dict[str, WireAdapter] = {}


def register_protocol(adapter: WireAdapter, *, replace_existing: bool = False) -> WireAdapter:
    """Add ``adapter`` to the registry under its :attr:`~WireAdapter.name`; a vendor then
    takes it with ``register_vendor(name, base_url, protocol=adapter.name)``.

    Raises:
        ConfigError: the name is empty, or taken (and ``replace_existing`` is false).
    """
    name = adapter.name
    if not isinstance(name, str) or not name or name != name.strip():
        raise ConfigError(f"a wire adapter needs a name, got {name!r}")
    with _LOCK:
        if name in _ADAPTERS and not replace_existing:
            raise ConfigError(
                f"wire protocol {name!r} is already registered; pass replace_existing=True"
            )
        _ADAPTERS[name] = adapter
    return adapter


def protocol_adapter(name: str) -> WireAdapter:
    """The adapter of the wire protocol ``name``.

    Raises:
        ConfigError: no such protocol; the message lists the known ones and the fix.
    """
    found = _ADAPTERS.get(name)
    if found is not None:
        return found
    known = ", ".join(repr(n) for n in protocol_names())
    raise ConfigError(
        f"unknown wire protocol {name!r}; the known protocols are {known}: register the "
        f"vendor with one of them, e.g. register_vendor(name, base_url, protocol='openai'), "
        "or register an adapter for it first (cross_judge.transport.register_protocol)"
    )


def protocol_names() -> tuple[str, ...]:
    """The registered protocols' names, in registration order."""
    return tuple(_ADAPTERS)


def known_adapter(name: str) -> WireAdapter | None:
    """The adapter of ``name``, or ``None`` (no error) for an unknown protocol."""
    return _ADAPTERS.get(name)
