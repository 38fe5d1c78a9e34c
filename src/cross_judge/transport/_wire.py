"""What every wire adapter takes and returns: a :class:`ChatRequest` in, a :class:`Completion`
out (or a :class:`~cross_judge.transport.CallFailure`).

A request is wire-neutral: a list of :class:`Message` turns made of content parts, which
each protocol's adapter (:class:`~cross_judge.transport.WireAdapter`) turns into its own
body (the OpenAI protocol sends the system prompt as a message, Anthropic's as a
``system`` field, the Responses API as ``instructions``). What a
protocol actually sends of its settings is :meth:`ChatRequest.sent_settings` (the rest,
:meth:`ChatRequest.unsent_settings`, never leaves the process), and
:meth:`ChatRequest.cache_key` is the identity of the answer it asks for, used by the
response cache: everything that determines the answer, and nothing secret.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..verdict import Usage
from ._adapter import known_adapter, protocol_adapter

if TYPE_CHECKING:
    from ..vendors import VendorConfig

__all__ = [
    "CACHE_KEY_VERSION",
    "AnswerSchema",
    "ChatRequest",
    "Completion",
    "ContentPart",
    "ImagePart",
    "Message",
    "StructuredForm",
    "TextPart",
    "TokenLogprob",
    "endpoint_identity",
    "size_problem",
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
    :func:`cross_judge.critic._answer_schema.answer_schema`.
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


@dataclass(frozen=True, slots=True)
class TextPart:
    """A run of text in a message."""

    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image in a message: its bytes (``data``, of ``media_type``) or a ``url`` the
    vendor fetches (nothing in cross-judge does). ``sha256`` names it in the response
    cache key: the digest of the bytes, or of the URL's text. ``source`` is what it was
    read from (a path or URL), for messages only: never sent, not in the cache key, not
    compared."""

    media_type: str
    sha256: str
    data: bytes | None = field(default=None, repr=False)
    url: str | None = None
    source: str | None = field(default=None, compare=False)

    @property
    def size(self) -> int:
        """The number of bytes (0 for a URL image)."""
        return 0 if self.data is None else len(self.data)

    def base64(self) -> str:
        """The bytes as base64 text (``""`` for a URL image)."""
        return "" if self.data is None else base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """The image as a ``data:`` URL (a URL image: its URL)."""
        if self.data is None:
            return self.url or ""
        return f"data:{self.media_type};base64,{self.base64()}"

    def base64_chars(self) -> int:
        """The length of the image's base64 text, as it goes on the wire."""
        return 4 * ((self.size + 2) // 3)

    def wire_size(self) -> int:
        """The bytes the image puts on the wire: its base64 text, or its URL's."""
        if self.data is None:
            return len((self.url or "").encode("utf-8", "surrogatepass"))
        return self.base64_chars()

    def label(self) -> str:
        """How messages name the image: its source when known, its type and digest."""
        where = f"{self.source}, " if self.source else ""
        return f"{where}{self.media_type}, sha256 {self.sha256[:12]}"


ContentPart = TextPart | ImagePart
"""What a message is made of: runs of text and images."""


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation: its ``role`` (``"system"``, ``"user"``, and later
    ``"assistant"``/``"tool"``) and its content ``parts``, in order."""

    role: str
    parts: tuple[ContentPart, ...]

    def text(self) -> str:
        """The text of every text part, joined without a separator."""
        parts = self.parts
        if len(parts) == 1 and type(parts[0]) is TextPart:
            return parts[0].text
        return "".join(p.text for p in parts if isinstance(p, TextPart))


@functools.lru_cache(maxsize=64)  # a critic's system prompt is the same on every request
def _system_message(text: str) -> Message:
    return Message("system", (TextPart(text),))


def _plain_text(message: Message, role: str) -> str | None:
    """The text of ``message`` when it has ``role`` and one text part, else ``None``."""
    if message.role == role and len(message.parts) == 1 and type(message.parts[0]) is TextPart:
        return message.parts[0].text
    return None


def _simple_pair(messages: tuple[Message, ...]) -> tuple[str, str] | None:
    """``(system, user)`` when ``messages`` is one optional system text message and one user
    text message (the shape of a request built from ``system`` and ``user``), else ``None``."""
    if len(messages) == 1:
        user = _plain_text(messages[0], "user")
        return None if user is None else ("", user)
    if len(messages) == 2:
        system = _plain_text(messages[0], "system")
        user = _plain_text(messages[1], "user")
        if system is not None and system and user is not None:
            return system, user
    return None


@dataclass(frozen=True)
class ChatRequest:
    """One chat call: the messages (a system prompt, ``""`` for none, and the user
    message; or any :class:`Message` list) and the sampling settings. ``json_mode`` asks
    the vendor for a JSON object where its protocol allows.

    ``messages`` is what the adapters send. Built from ``system`` and ``user`` (the old
    form, keyword or positional) it is the system message when ``system`` is not empty,
    then the user's. Given ``messages`` (with ``system`` and ``user`` left ``""``),
    ``system`` reads as the text of its system messages and ``user`` as that of its last
    user message. When both are given and disagree, ``system`` and ``user`` win for a
    request of that plain shape (so ``dataclasses.replace(request, user=...)`` works);
    for a richer one it is a ``ValueError``.

    ``render_cut`` records what the rendering of an item's conversation or trajectory
    left out (:class:`~cross_judge.content.RenderCut` as mappings): never sent, never part
    of :meth:`cache_key` (the text sent already is), copied to the verdict.

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
    messages: tuple[Message, ...] = ()
    render_cut: tuple[Mapping[str, Any], ...] = field(default=(), repr=False, compare=False)
    _plain: bool = field(default=True, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.json_mode and self.structured == "off":
            object.__setattr__(self, "structured", "json")
        elif self.structured == "json" and not self.json_mode:
            object.__setattr__(self, "json_mode", True)
        elif self.structured != "json" and self.json_mode:
            object.__setattr__(self, "json_mode", False)
        if self.structured in ("schema", "tool") and self.schema is None:
            raise ValueError(f"structured={self.structured!r} needs a schema")
        messages = self.messages
        if not messages:
            turn = Message("user", (TextPart(self.user),))
            built = (_system_message(self.system), turn) if self.system else (turn,)
            object.__setattr__(self, "messages", built)
            return
        if not isinstance(messages, tuple):  # a list given: kept as a tuple (hashable)
            messages = tuple(messages)  # type: ignore[unreachable]
            object.__setattr__(self, "messages", messages)
        pair = _simple_pair(messages)
        if pair is not None:
            if (self.system or self.user) and pair != (self.system, self.user):
                object.__setattr__(self, "messages", ())
                self.__post_init__()  # the text given wins over the plain messages
                return
            object.__setattr__(self, "system", pair[0])
            object.__setattr__(self, "user", pair[1])
            return
        system = "".join(m.text() for m in messages if m.role == "system")
        user = next((m.text() for m in reversed(messages) if m.role == "user"), "")
        if (self.system or self.user) and (system, user) != (self.system, self.user):
            raise ValueError("pass system and user, or messages, not both")
        object.__setattr__(self, "system", system)
        object.__setattr__(self, "user", user)
        object.__setattr__(self, "_plain", False)

    def chat_messages(self) -> list[dict[str, Any]]:
        """The OpenAI-style message list: each message with its text as ``content`` (a
        list of ``{"type": "text"}`` parts for a message of several parts)."""
        if self._plain:  # the hot path: one optional system message and the user's
            if self.system:
                return [
                    {"role": "system", "content": self.system},
                    {"role": "user", "content": self.user},
                ]
            return [{"role": "user", "content": self.user}]
        return [
            {"role": m.role, "content": m.parts[0].text}
            if len(m.parts) == 1 and type(m.parts[0]) is TextPart
            else {"role": m.role, "content": [_chat_part(p) for p in m.parts]}
            for m in self.messages
        ]

    def images(self) -> tuple[ImagePart, ...]:
        """Every image part of the request, in order."""
        if self._plain:
            return ()
        return tuple(p for m in self.messages for p in m.parts if type(p) is ImagePart)

    def wire_bytes(self) -> int:
        """Roughly the bytes the request's content puts on the wire: its text (UTF-8) and
        its images as base64 (a URL image as its URL); what vendors' request size limits
        count."""
        return self.utf8_bytes() + sum(image.wire_size() for image in self.images())

    def text_chars(self) -> int:
        """Characters of prompt text sent (every text part), for rough token estimates."""
        if self._plain:
            return len(self.system) + len(self.user)
        return sum(len(p.text) for m in self.messages for p in m.parts if type(p) is TextPart)

    def utf8_bytes(self) -> int:
        """Bytes of prompt text sent, UTF-8 encoded (see :func:`cross_judge.pricing`)."""
        texts = (
            (self.system, self.user)
            if self._plain
            else tuple(p.text for m in self.messages for p in m.parts if type(p) is TextPart)
        )
        return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)

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
        * ``"openai-responses"`` (OpenAI's Responses API): ``temperature`` (left out with
          an effort), ``max_tokens`` (sent as ``max_output_tokens``), ``text`` with the
          ``format`` of the ``json`` and ``schema`` forms, ``reasoning`` with the effort,
          and ``top_logprobs`` with ``include`` when token probabilities are asked.

        The wire adapters send exactly these (their tests hold them to it); the response
        cache keys on them and the run manifest records them. Another registered protocol
        says its own (:class:`~cross_judge.transport.WireAdapter`).
        """
        if isinstance(where, str):
            return protocol_adapter(where).sent_settings(self, None)
        return protocol_adapter(where.protocol).sent_settings(self, where)

    def unsent_settings(self, where: str | VendorConfig) -> dict[str, Any]:
        """The settings of this request that a protocol (or a vendor, whose reasoning
        dialect then applies) does not send, with their values: on ``"anthropic"``,
        ``temperature`` always, ``seed`` when set and ``json_mode`` when on; on
        ``"openai"`` the ``temperature`` when an effort is sent with the ``openai``
        dialect (OpenAI's reasoning models refuse it), else nothing; on
        ``"openai-responses"`` the ``temperature`` with an effort and the ``seed`` when
        set. They have no effect on the answer."""
        if isinstance(where, str):
            return protocol_adapter(where).unsent_settings(self, None)
        return protocol_adapter(where.protocol).unsent_settings(self, where)

    def cache_key(self, config: VendorConfig) -> str:
        """sha256 of everything that determines the answer, and of nothing else.

        The material: the key version (:data:`CACHE_KEY_VERSION`), the protocol, the vendor
        name, the endpoint (:func:`endpoint_identity`: no credentials, and no port on a
        loopback host), the model, the system prompt, the user message and
        :meth:`sent_settings` (so on ``anthropic`` neither ``temperature`` nor ``seed``,
        which are not sent), and ``sample`` when it is > 0 (on every protocol). A request
        whose messages are more than one system and one user text message adds the
        message list (so a plain request's key is the one it always had). Never the
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
        if not self._plain:  # absent for a plain request: its key is unchanged
            identity["messages"] = [
                [m.role, [_key_part(p) for p in m.parts]] for m in self.messages
            ]
        blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def size_problem(request: ChatRequest, config: VendorConfig) -> str | None:
    """Why ``request`` must not be sent to ``config``'s vendor, or ``None``: an image over
    its ``max_image_bytes`` or the request over its ``max_request_bytes``
    (:meth:`ChatRequest.wire_bytes`; an image counted as its base64 text). The message
    names the image (its source, type and digest), its size, the limit and the fix.

    A vendor without limits costs one attribute read; a request whose text is at most a
    quarter of the request limit in characters (so its UTF-8 cannot exceed it) and has no
    images is passed without encoding it.
    """
    image_cap = config.max_image_bytes
    request_cap = config.max_request_bytes
    if image_cap is None and request_cap is None:
        return None
    images = request.images()
    if not images and (request_cap is None or 4 * request.text_chars() <= request_cap):
        return None  # UTF-8 takes at most 4 bytes a character: it cannot be over
    vendor = config.name
    if image_cap is not None:
        for number, image in enumerate(images, start=1):
            size = image.wire_size()
            if size > image_cap:
                return (
                    f"too large: image {number} of {len(images)} ({image.label()}) is "
                    f"{_mb(size)} as sent ({size} bytes of base64; the file is "
                    f"{_mb(image.size)}), over vendor {vendor!r}'s limit of {_mb(image_cap)} "
                    f"per image (max_image_bytes={image_cap}); not sent. Shrink or "
                    "recompress the image (e.g. to at most 1568 px on its long side, or as "
                    "JPEG), give it as a URL the vendor fetches, or judge it with a critic "
                    "on a vendor that takes it"
                )
    if request_cap is None:
        return None
    text = request.utf8_bytes()
    pictures = sum(image.wire_size() for image in images)
    if text + pictures <= request_cap:
        return None
    held = f"its text {_mb(text)}" + (
        f" and {len(images)} image(s) {_mb(pictures)} as base64" if images else ""
    )
    return (
        f"too large: the request is {_mb(text + pictures)} as sent ({held}), over vendor "
        f"{vendor!r}'s limit of {_mb(request_cap)} per request (max_request_bytes="
        f"{request_cap}); not sent. Send fewer or smaller images, or shorten the item (a "
        "conversation or trajectory is cut to the prompt's render: limits)"
    )


def _mb(size: int) -> str:
    """``size`` bytes in megabytes (decimal), for messages."""
    return f"{size / 1_000_000:.2f} MB"


def _chat_part(part: ContentPart) -> dict[str, Any]:
    """A content part in chat completions' form (an image as a data URL or its URL)."""
    if type(part) is TextPart:
        return {"type": "text", "text": part.text}
    assert isinstance(part, ImagePart)
    return {"type": "image_url", "image_url": {"url": part.data_url()}}


def _key_part(part: ContentPart) -> list[str]:
    """A content part in the cache key: text as itself, an image by its digest and type
    (never its bytes)."""
    if type(part) is TextPart:
        return ["text", part.text]
    assert isinstance(part, ImagePart)
    return ["image", part.media_type, part.sha256]


@functools.lru_cache(maxsize=256)  # a panel has a few endpoints, each keyed per call
def endpoint_identity(protocol: str, base_url: str) -> str:
    """Which endpoint answers, as the response cache tells endpoints apart.

    A remote endpoint is its URL, normalised: without ``user:password@``, scheme and host
    in lower case, without a default port (``:443`` for https, ``:80`` for http), without
    trailing slashes, and without what the protocol's client adds or drops itself (the
    ``anthropic`` protocol: one trailing ``/v1``, as the SDK reaches ``/v1/messages`` from
    both; :meth:`~cross_judge.transport.WireAdapter.endpoint_path`). Its port stays: on a
    remote host a port is how a deployment is addressed, and two ports are two services.

    A loopback endpoint (``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``::1``) is
    ``loopback`` followed by the path: its host and port are dropped. A local server
    (``VendorServer``, llama.cpp, ollama, vLLM) gets a port per run, which says nothing
    about who answers; the vendor name and the model in the key do. Two local servers
    answering different weights under the same vendor name and model would therefore
    share cached answers: give them distinct model names, or separate cache files.
    """
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    adapter = known_adapter(protocol)
    if adapter is not None:
        path = adapter.endpoint_path(path)
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
    vendors, ``end_turn``/``max_tokens`` for Anthropic's ``stop_reason``; for the
    Responses API its ``status``, ``completed``, or the ``incomplete_details.reason`` of
    an incomplete one, e.g. ``max_output_tokens``).

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
        """True when the answer was cut off at ``max_tokens`` (``length``, ``max_tokens``,
        or the Responses API's ``max_output_tokens``)."""
        return self.finish_reason in ("length", "max_tokens", "max_output_tokens")
