"""An API key goes to the vendor in its auth header and nowhere else.

Each test configures a canary key, unique to the run, drives cross-judge through one path
(real HTTP to a local :class:`~cross_judge.testing.VendorServer`, the CLI, a panel file,
the response cache, the legacy API) and then searches everything that path produced, as
text and as bytes, for the key: verdicts and results (``repr``, ``str``, ``model_dump``,
``model_dump_json``), the reprs and dumps of the configuration objects, every log record
of every logger at DEBUG (``cross_judge`` and the HTTP libraries: ``httpx``, ``httpcore``,
``aiohttp.*``, ``openai``, ``anthropic``, ``asyncio``...), stdout and stderr, exception
messages and formatted tracebacks, and every file a run writes (results, run manifest,
SQLite cache with its ``-wal``).

The rule: neither the key nor any 8-character piece of its secret part may appear, so a
key masked as ``sk-LEA...3f9c2a71`` still counts as a leak. A vendor that echoes the key
back (OpenAI's 401 does, without the ``sk-`` prefix) is simulated with scripted replies:
in an error body and inside a 200 answer's text, whole, without its prefix or as a piece
from its middle, for a key shaped like a vendor key (``sk-...``, which cross-judge also
masks by shape in error messages) and for one that is not (which only redacting the
configured key can hide). The same holds for a base URL's ``user:password@``, sent as
Basic auth, whose password and base64 a vendor may echo too, and for a key echoed in
another encoding: base64 (alone, URL-safe, or inside a longer blob at each byte offset),
with invisible characters between its characters, or percent-escaped; there the surfaces
are decoded as a reader would before they are searched.

No outcome depends on timing: every timeout is far longer than any answer takes, except
for a vendor that never answers (a hang), where the timeout always fires.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import re
import secrets
import string
import traceback
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401  # imported now, so its loggers exist for the log fixture
import openai
import pytest

from cross_judge import Critic, Ensemble
from cross_judge._sync import shutdown as shutdown_sync_bridge
from cross_judge.batch import BatchResult
from cross_judge.cli import main
from cross_judge.critic._cache import ResponseCache
from cross_judge.errors import ConfigError, ErrorKind, MissingAPIKeyError
from cross_judge.panel import JudgePanel
from cross_judge.panel_file import PanelError, load_panel
from cross_judge.reviewer import Reviewer
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport import aclose_sessions
from cross_judge.transport._redaction import MARKER
from cross_judge.vendors import (
    VendorConfig,
    all_vendors,
    get_vendor,
    make_client,
    register_vendor,
    with_base_url,
)
from cross_judge.verdict import EnsembleVerdict, Verdict

from ..waits import SAFETY_NET_S

pytestmark = pytest.mark.integration


def _random_secret() -> str:
    """32 random letters and digits, with a digit, a lower- and an upper-case letter (so
    that an unshaped key never passes for an environment variable's name). From 62
    symbols, an 8-character piece turning up by chance, say in the hex digests that runs
    write, is vanishingly unlikely."""
    alphabet = string.ascii_letters + string.digits
    classes = (string.digits, string.ascii_lowercase, string.ascii_uppercase)
    while True:
        secret = "".join(secrets.choice(alphabet) for _ in range(32))
        if all(any(c in group for c in secret) for group in classes):
            return secret


SECRET = _random_secret()
KEY = f"sk-LEAKCANARY-{SECRET}"
"""Shaped like a vendor key: cross-judge masks such strings wherever it finds them."""
PLAIN_SECRET = _random_secret()
PLAIN_KEY = f"LEAKCANARY{PLAIN_SECRET}"
"""No vendor shape: only redacting the configured key itself can hide it."""
WINDOW = 8
"""No run of this many characters of a key's secret part may appear anywhere."""
TIMEOUT_S = SAFETY_NET_S / 10
"""Per attempt: never reached by a vendor that answers, however loaded the machine."""
FIRES_S = 0.25
"""Per attempt, for a vendor that never answers (a hang): it always fires."""
ENV = "CROSS_JUDGE_CANARY_KEY"

LIBRARY_LOGGERS = (
    "cross_judge",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "h11",
    "openai",
    "anthropic",
    "aiohttp",
    "aiohttp.access",
    "aiohttp.client",
    "aiohttp.internal",
    "aiohttp.server",
    "aiohttp.web",
    "aiohttp.websocket",
    "asyncio",
    "trio",
)


# -- the leak rule ---------------------------------------------------------------------------


def _windows(text: str) -> set[str]:
    """Every WINDOW-character run of ``text``."""
    return {text[i : i + WINDOW] for i in range(len(text) - WINDOW + 1)}


def _fragments(key: str) -> set[str]:
    """The key, and every WINDOW-character run of its secret (random) part."""
    secret = SECRET if key.endswith(SECRET) else PLAIN_SECRET
    assert key.endswith(secret)
    return {key} | _windows(secret)


def _as_text(surface: object) -> str:
    if isinstance(surface, bytes):
        return surface.decode("latin-1")  # every byte maps to one character
    return surface if isinstance(surface, str) else repr(surface)


def assert_no_key(
    what: str, *surfaces: object, keys: Iterable[str] = (KEY,), extra: Iterable[str] = ()
) -> None:
    """Fail if any surface holds a key, a WINDOW-character piece of one, or an ``extra``
    string (an encoding of the key, say). The failure message shows where it was found."""
    needles = set(extra)
    for key in keys:
        needles |= _fragments(key)
    for index, surface in enumerate(surfaces):
        text = _as_text(surface)
        for needle in sorted(needles, key=len, reverse=True):
            at = text.find(needle)
            if at != -1:
                context = text[max(0, at - 120) : at + len(needle) + 60]
                pytest.fail(f"{what} (surface {index}) leaks a secret fragment: ...{context}...")


def dumps_of(obj: object) -> list[object]:
    """Every rendering of ``obj`` a user or a logger might produce."""
    out: list[object] = [repr(obj), str(obj), f"{obj}"]
    for method in ("model_dump", "model_dump_json"):
        if callable(getattr(obj, method, None)):
            out.append(getattr(obj, method)())
    return out


def rendered_exception(exc: BaseException) -> list[str]:
    """Message, repr, the formatted traceback, and every exception chained to it (even a
    suppressed context, which debuggers and error trackers still show)."""
    out = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    return out


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """asyncio sends through aiohttp, trio through httpx (and the SDK's httpx2)."""
    return str(request.param)


@pytest.fixture(scope="module")
def vendor() -> Iterator[VendorServer]:
    """Checks the key: a request without exactly KEY in its auth header gets a 401."""
    with VendorServer(api_key=KEY, default_persona=Persona("default")) as srv:
        yield srv


@pytest.fixture(scope="module")
def open_vendor() -> Iterator[VendorServer]:
    """Accepts any key (for keys other than KEY, and URL credentials)."""
    with VendorServer(default_persona=Persona("default")) as srv:
        yield srv


@dataclasses.dataclass
class Logs:
    """What every logger recorded during the test."""

    caplog: pytest.LogCaptureFixture

    def __call__(self) -> str:
        """Every record as the handler formatted it (with tracebacks), its message, and
        all of its attributes (args, exc_info, extras) as a custom handler could render."""
        records = [f"{r.getMessage()}\n{r.__dict__!r}" for r in self.caplog.records]
        return self.caplog.text + "\n".join(records)

    def sources(self) -> set[str]:
        """The top-level packages that logged something."""
        return {r.name.split(".")[0] for r in self.caplog.records}


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Logs:
    """Every logger at DEBUG, propagating to the root, where caplog listens."""
    caplog.set_level(logging.DEBUG)
    names = set(LIBRARY_LOGGERS) | {
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    for name in sorted(names):
        caplog.set_level(logging.DEBUG, logger=name)
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "propagate", True)
        monkeypatch.setattr(logger, "disabled", False)
    return Logs(caplog)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cross_judge.transport._retry._backoff", lambda state: 0.0)


@pytest.fixture
def model(request: pytest.FixtureRequest) -> str:
    """A model name unique to the test, so scripted replies never leak between tests."""
    return f"m-{request.node.name}"


def _files_under(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def critic_on(srv: VendorServer, protocol: str, model: str, **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", TIMEOUT_S)
    if protocol == "anthropic":
        return Critic(
            name="canary", model=model, vendor="anthropic", base_url=srv.anthropic_url, **kwargs
        )
    return Critic(name="canary", model=model, vendor="custom", base_url=srv.url, **kwargs)


def requests_for(srv: VendorServer, model: str) -> list[dict[str, Any]]:
    return [r for r in srv.recent_requests if r["model"] == model]


PROTOCOLS = pytest.mark.parametrize("protocol", ["openai", "anthropic"])


# -- over HTTP -------------------------------------------------------------------------------


@pytest.mark.anyio
@PROTOCOLS
async def test_a_successful_call_sends_the_key_only_in_its_auth_header(
    anyio_backend: str,
    protocol: str,
    vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    critic = critic_on(vendor, protocol, model)
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    # The server accepted the request, so the key went out, exactly, in the auth header.
    assert verdict.is_valid, verdict.error
    (request,) = requests_for(vendor, model)
    headers = {name.lower(): value for name, value in request["headers"].items()}
    if protocol == "anthropic":
        # The Messages API documents x-api-key; no bearer token rides along.
        assert headers["x-api-key"] == "***"
        assert "authorization" not in headers and "api-key" not in headers
    else:
        assert headers["authorization"] == "Bearer ***"
        assert "x-api-key" not in headers and "api-key" not in headers
    # The capture is live: the HTTP stack of this path did log (aiohttp's client logs
    # nothing of a request, so under asyncio the OpenAI path has only asyncio's records).
    library = {
        ("asyncio", "openai"): "asyncio",
        ("trio", "openai"): "httpcore",
        ("asyncio", "anthropic"): "anthropic",
        ("trio", "anthropic"): "httpcore2",
    }[anyio_backend, protocol]
    assert library in logs.sources(), logs.sources()
    # The server masks only those headers: the key is in no other header, the path or body.
    captured = capsys.readouterr()
    assert_no_key(
        "the request, the verdict, the logs",
        json.dumps(request),
        *dumps_of(verdict),
        logs(),
        captured.out,
        captured.err,
    )


ECHOES: dict[str, tuple[str, str]] = {
    # echo -> (the configured key, what the vendor sends back)
    "sk-shaped-key-whole": (KEY, KEY),
    # OpenAI's 401 quotes the key without "sk-": no longer key-shaped.
    "sk-shaped-key-without-its-prefix": (KEY, KEY.removeprefix("sk-")),
    "sk-shaped-key-middle-piece": (KEY, SECRET[12 : 12 + WINDOW]),
    "unshaped-key-whole": (PLAIN_KEY, PLAIN_KEY),
    "unshaped-key-without-its-first-characters": (PLAIN_KEY, PLAIN_KEY[6:]),
    "unshaped-key-middle-piece": (PLAIN_KEY, PLAIN_SECRET[5 : 5 + WINDOW + 3]),
}


def _echoing_server(key: str, vendor: VendorServer, open_vendor: VendorServer) -> VendorServer:
    """The server that accepts ``key``: the key-checking one for KEY."""
    return vendor if key == KEY else open_vendor


def _answer(reasoning: str, kind: str = "KEEP") -> Reply:
    return Reply.content(json.dumps({"kind": kind, "confidence": 0.9, "reasoning": reasoning}))


@pytest.mark.anyio
@PROTOCOLS
@pytest.mark.parametrize("echo", list(ECHOES))
async def test_a_401_echoing_the_key_or_a_piece_of_it_is_redacted_in_the_verdict_and_the_logs(
    protocol: str,
    echo: str,
    vendor: VendorServer,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key, echoed = ECHOES[echo]
    srv = _echoing_server(key, vendor, open_vendor)
    srv.script(
        model,
        Reply.status(401, message=f"Incorrect API key provided: {echoed}. Find yours at ..."),
    )
    critic = critic_on(srv, protocol, model, api_key=key)
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert verdict.error_kind is ErrorKind.AUTH
    # The vendor's message is kept, with the marker where the key was.
    assert f"Incorrect API key provided: {MARKER}. Find yours at" in (verdict.error or "")
    captured = capsys.readouterr()
    assert_no_key(
        f"a 401 that echoes the key ({echo})",
        *dumps_of(verdict),
        logs(),
        captured.out,
        captured.err,
        keys=[key],
    )


@pytest.mark.anyio
@PROTOCOLS
@pytest.mark.parametrize("echo", list(ECHOES))
async def test_an_answer_echoing_the_key_or_a_piece_of_it_is_a_vote_with_the_key_redacted(
    protocol: str,
    echo: str,
    vendor: VendorServer,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key, echoed = ECHOES[echo]
    srv = _echoing_server(key, vendor, open_vendor)
    srv.script(model, _answer(f"The key {echoed} was sent; a whale is a mammal."))
    critic = critic_on(srv, protocol, model, api_key=key)
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert (verdict.kind, verdict.confidence, verdict.error) == ("KEEP", 0.9, None)
    assert verdict.reasoning == f"The key {MARKER} was sent; a whale is a mammal."
    assert verdict.raw_response is not None and MARKER in verdict.raw_response
    captured = capsys.readouterr()
    assert_no_key(
        f"an answer that echoes the key ({echo})",
        *dumps_of(verdict),
        logs(),
        captured.out,
        captured.err,
        keys=[key],
    )


def _base64(data: bytes, *, urlsafe: bool = False, padded: bool = True) -> str:
    encoded = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()
    return encoded if padded else encoded.rstrip("=")


ENCODED_ECHOES: dict[str, tuple[str, str]] = {
    # echo -> (the configured key, what the vendor sends back)
    "base64-whole": (KEY, _base64(KEY.encode())),
    "base64-urlsafe-unpadded": (PLAIN_KEY, _base64(PLAIN_KEY.encode(), urlsafe=True, padded=False)),
    # Inside a longer blob (a token holding the key) its base64 depends on its offset mod 3.
    "base64-in-a-blob-offset-0": (PLAIN_KEY, _base64(b'{"k":"' + PLAIN_KEY.encode() + b'"}')),
    "base64-in-a-blob-offset-1": (PLAIN_KEY, _base64(b'{"ky":"' + PLAIN_KEY.encode() + b'"}')),
    "base64-in-a-blob-offset-2": (KEY, _base64(b'{"key":"' + KEY.encode() + b'"}')),
    "zero-width-spaces-between-characters": (PLAIN_KEY, "\u200b".join(PLAIN_KEY)),
    "soft-hyphens-and-joiners": (
        KEY,
        "".join(c + "\u00ad\u2060"[i % 2] for i, c in enumerate(KEY)),
    ),
    "byte-order-marks-in-the-secret": (
        PLAIN_KEY,
        "\ufeff".join(PLAIN_KEY[i : i + 3] for i in range(0, len(PLAIN_KEY), 3)),
    ),
    "percent-encoded": (PLAIN_KEY, "".join(f"%{ord(c):02X}" for c in PLAIN_KEY)),
}
"""A vendor or proxy echoing the key in another encoding. In a blob, the bytes before the
key (6, 7 or 8 here) set its offset modulo 3, and so how its base64 reads."""


def _unescaped(text: str) -> str:
    """``text`` as a reader sees it: percent- and ``\\uXXXX`` escapes decoded, invisible
    characters dropped (an oracle independent of the redactor)."""
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    text = urllib.parse.unquote(text)
    return "".join(c for c in text if unicodedata.category(c) != "Cf" and c != "\u00ad")


def _base64_leaks(text: str, key: str) -> str | None:
    """A run of ``text`` that base64-decodes (standard or URL-safe, at any of the four
    character offsets) to 6 consecutive bytes of ``key``, if there is one."""
    data = key.encode()
    pieces = {data[i : i + 6] for i in range(len(data) - 5)}
    for run in re.findall(r"[A-Za-z0-9+/_-]{8,}", text):
        standard = run.replace("-", "+").replace("_", "/")
        for shift in range(4):
            chunk = standard[shift:]
            decoded = base64.b64decode(chunk[: len(chunk) // 4 * 4])
            if any(piece in decoded for piece in pieces):
                return run
    return None


def assert_no_encoded_key(what: str, *surfaces: object, key: str) -> None:
    """:func:`assert_no_key` on each surface as a reader sees it, and no piece of the key
    readable by base64-decoding any of it."""
    assert_no_key(what, *[_unescaped(_as_text(s)) for s in surfaces], keys=[key])
    for index, surface in enumerate(surfaces):
        leaked = _base64_leaks(_unescaped(_as_text(surface)), key)
        assert leaked is None, f"{what} (surface {index}) leaks the key in base64: {leaked}"


@pytest.mark.anyio
@PROTOCOLS
@pytest.mark.parametrize("where", ["401-body", "answer"])
@pytest.mark.parametrize("echo", list(ENCODED_ECHOES))
async def test_a_key_echoed_in_another_encoding_is_redacted_in_the_verdict_and_the_logs(
    protocol: str,
    where: str,
    echo: str,
    vendor: VendorServer,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key, echoed = ENCODED_ECHOES[echo]
    srv = _echoing_server(key, vendor, open_vendor)
    if where == "401-body":
        srv.script(model, Reply.status(401, message=f"Invalid credentials: {echoed} (check it)"))
    else:
        srv.script(model, _answer(f"The token {echoed} was sent; a whale is a mammal."))
    critic = critic_on(srv, protocol, model, api_key=key)
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    # The key becomes a marker; what was around it in a blob (the base64 of '{"k":"')
    # and the words around the echo stay.
    if where == "401-body":
        assert verdict.error_kind is ErrorKind.AUTH
        assert re.search(
            f"Invalid credentials: \\S*{re.escape(MARKER)}\\S* \\(check it\\)", verdict.error or ""
        )
    else:
        assert (verdict.kind, verdict.error) == ("KEEP", None)
        assert re.fullmatch(
            f"The token \\S*{re.escape(MARKER)}\\S* was sent; a whale is a mammal.",
            verdict.reasoning,
        )
    captured = capsys.readouterr()
    assert_no_encoded_key(
        f"a {where} echoing the key ({echo})",
        *dumps_of(verdict),
        logs(),
        captured.out,
        captured.err,
        key=key,
    )


@pytest.mark.anyio
@PROTOCOLS
@pytest.mark.parametrize("echo", ["sk-shaped-key-without-its-prefix", "unshaped-key-middle-piece"])
async def test_a_label_echoing_the_key_is_redacted_after_the_parser_upper_cases_it(
    protocol: str,
    echo: str,
    vendor: VendorServer,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
) -> None:
    key, echoed = ECHOES[echo]
    srv = _echoing_server(key, vendor, open_vendor)
    srv.script(model, _answer("fine", kind=echoed))
    critic = critic_on(srv, protocol, model, api_key=key)  # no label vocabulary: any label
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert verdict.error is None and MARKER in verdict.kind
    secret = SECRET if key == KEY else PLAIN_SECRET
    assert_no_key(
        f"a label that echoes the key ({echo})",
        *dumps_of(verdict),
        logs(),
        keys=[key],
        extra=_windows(secret.upper()),
    )


FAULTS = {
    "500-echoing-the-key": (
        Reply.status(500, message=f"upstream refused 'Authorization: Bearer {PLAIN_KEY}'"),
        ErrorKind.SERVER,
    ),
    "timeout": (Reply.hang(), ErrorKind.TIMEOUT),
    "connection-reset": (Reply.reset(), ErrorKind.CONNECTION),
    "invalid-response-echoing-the-key": (
        Reply.raw(f'{{"error": null, "echo": "{PLAIN_KEY}", "choices": ['.encode()),
        ErrorKind.INVALID_RESPONSE,
    ),
}


@pytest.mark.anyio
@PROTOCOLS
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_failing_vendor_never_gets_the_key_into_the_verdict_or_the_logs(
    protocol: str,
    fault: str,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
    no_backoff: None,
) -> None:
    reply, kind = FAULTS[fault]
    open_vendor.always(model, reply)  # every attempt: a retried failure is logged each time
    # Only the vendor that never answers meets a short timeout: a reset or an error reply
    # on a loaded machine may take longer than any short one, and then read as a timeout.
    timeout = FIRES_S if kind is ErrorKind.TIMEOUT else TIMEOUT_S
    critic = critic_on(
        open_vendor, protocol, model, api_key=PLAIN_KEY, max_retries=1, timeout=timeout
    )
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        open_vendor.always(model, None)
        await aclose_sessions()
    assert verdict.error_kind is kind, verdict.error
    captured = capsys.readouterr()
    assert_no_key(
        f"a {fault}", *dumps_of(verdict), logs(), captured.out, captured.err, keys=[PLAIN_KEY]
    )


@pytest.mark.anyio
@PROTOCOLS
async def test_a_key_ending_in_a_newline_is_trimmed_and_one_with_a_newline_inside_is_never_sent(
    protocol: str,
    vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The HTTP libraries refuse such a header value and quote it, key included, in their
    # exceptions and DEBUG logs (h11: "Illegal header value b'Bearer sk-...\\n'").
    trimmed = critic_on(vendor, protocol, model, api_key=f" {KEY}\n")
    broken = critic_on(vendor, protocol, model, api_key=f"{KEY[:6]}\n{KEY[6:]}")
    try:
        good = await trimmed.judge("Is a whale a fish?")
        bad = await broken.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert good.is_valid, good.error
    assert bad.error_kind is ErrorKind.MISSING_KEY and "control character" in (bad.error or "")
    assert len(requests_for(vendor, model)) == 1  # the broken key was never sent
    captured = capsys.readouterr()
    assert_no_key(
        "a key with a stray newline",
        *dumps_of(good),
        *dumps_of(bad),
        logs(),
        captured.out,
        captured.err,
    )


@pytest.mark.anyio
@PROTOCOLS
async def test_credentials_in_a_base_url_never_reach_a_log_line_or_a_verdict(
    protocol: str,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # httpx logs each request's URL at INFO and the Anthropic SDK at DEBUG; aiohttp puts
    # it in its exceptions. Credentials must travel as a header, never in the URL.
    url = open_vendor.anthropic_url if protocol == "anthropic" else open_vendor.url
    with_credentials = url.replace("http://", f"http://user:{PLAIN_KEY}@")
    kwargs: dict[str, Any] = {"api_key": "unrelated-key"} if protocol == "anthropic" else {}
    critic = Critic(
        name="canary",
        model=model,
        vendor="anthropic" if protocol == "anthropic" else "custom",
        base_url=with_credentials,
        max_retries=0,
        **kwargs,
    )
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert verdict.is_valid, verdict.error
    # The Basic header's value, in part: characters 20-35 encode bytes 15-26, the secret.
    basic = base64.b64encode(f"user:{PLAIN_KEY}".encode()).decode()
    captured = capsys.readouterr()
    assert_no_key(
        "credentials in a base URL",
        *dumps_of(verdict),
        *dumps_of(critic),
        logs(),
        captured.out,
        captured.err,
        keys=[PLAIN_KEY],
        extra=[basic[20:36]],
    )


BASIC = base64.b64encode(f"user:{PLAIN_KEY}".encode()).decode()
"""The Basic-auth value for ``user:PLAIN_KEY@`` in a base URL."""
CREDENTIAL_ECHOES = {
    # echo -> (what the vendor sends back, what is left of it)
    "the-authorization-header": (f"Authorization: Basic {BASIC}", f"Authorization: Basic {MARKER}"),
    "the-basic-value-piece": (BASIC[10:22], MARKER),
    "the-password": (PLAIN_KEY, MARKER),
    "user-and-password": (f"user:{PLAIN_KEY}", MARKER),
}


@pytest.mark.anyio
@PROTOCOLS
@pytest.mark.parametrize("where", ["401-body", "answer"])
@pytest.mark.parametrize("echo", list(CREDENTIAL_ECHOES))
async def test_a_vendor_echoing_base_url_credentials_gets_them_redacted_like_a_key(
    protocol: str,
    where: str,
    echo: str,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    echoed, shown = CREDENTIAL_ECHOES[echo]
    url = open_vendor.anthropic_url if protocol == "anthropic" else open_vendor.url
    open_vendor.script(
        model,
        Reply.status(401, message=f"rejected {echoed} here")
        if where == "401-body"
        else _answer(f"you sent {echoed} here"),
    )
    kwargs: dict[str, Any] = {"api_key": "unrelated-key"} if protocol == "anthropic" else {}
    critic = Critic(
        name="canary",
        model=model,
        vendor="anthropic" if protocol == "anthropic" else "custom",
        base_url=url.replace("http://", f"http://user:{PLAIN_KEY}@"),
        max_retries=0,
        timeout=TIMEOUT_S,
        **kwargs,
    )
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    if where == "401-body":
        assert verdict.error_kind is ErrorKind.AUTH
        assert f"rejected {shown} here" in (verdict.error or "")
    else:
        assert (verdict.kind, verdict.error) == ("KEEP", None)
        assert verdict.reasoning == f"you sent {shown} here"
    captured = capsys.readouterr()
    assert_no_key(
        f"a vendor echoing base URL credentials ({echo}, {where})",
        *dumps_of(verdict),
        logs(),
        captured.out,
        captured.err,
        keys=[PLAIN_KEY],
        extra=_windows(BASIC),
    )


@pytest.mark.anyio
async def test_an_internal_failure_logs_its_traceback_without_the_key(
    vendor: VendorServer,
    model: str,
    logs: Logs,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(raw: object) -> object:  # a client library failing in an undocumented way
        raise RuntimeError(f"cannot use header 'Authorization: Bearer {KEY}'")

    monkeypatch.setattr("cross_judge.transport._openai_compat.parse_chat_response", broken)
    critic = critic_on(vendor, "openai", model)
    try:
        verdict = await critic.judge("Is a whale a fish?")
    finally:
        await aclose_sessions()
    assert verdict.error_kind is ErrorKind.INTERNAL
    assert_no_key("an internal failure's verdict", *dumps_of(verdict))
    assert "Traceback" in logs()  # the warning keeps its traceback...
    assert_no_key("an internal failure's log", logs())  # ...without the key


@pytest.mark.anyio
async def test_verdicts_ensemble_verdicts_and_batch_results_never_show_an_echoed_key(
    vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    vendor.always(f"{model}-b", Reply.status(401, message=f"Incorrect API key provided: {KEY}"))
    vendor.always(f"{model}-c", Reply.status(400, message=f"key {KEY} is not allowed here"))
    critics = [
        Critic(
            name=n,
            model=f"{model}-{n}",
            vendor="custom",
            base_url=vendor.url,
            api_key=KEY,
            max_retries=0,
        )
        for n in "abc"
    ]
    ensemble = Ensemble(critics, voting="majority")
    try:
        batch = await ensemble.judge_many(["Is a whale a fish?", "Is a bat a bird?"])
        single = await ensemble.judge("Is a shark a mammal?")
    finally:
        vendor.always(f"{model}-b", None)
        vendor.always(f"{model}-c", None)
        await aclose_sessions()
    assert isinstance(batch, BatchResult) and isinstance(single, EnsembleVerdict)
    kinds = {v.critic_id: v.error_kind for v in single.verdicts}
    assert kinds == {"a": None, "b": ErrorKind.AUTH, "c": ErrorKind.BAD_REQUEST}
    surfaces: list[object] = [*dumps_of(batch), batch.summary(), *dumps_of(single)]
    for result in [*batch.verdicts, single]:
        surfaces += dumps_of(result)
        for verdict in result.verdicts:
            assert isinstance(verdict, Verdict)
            surfaces += dumps_of(verdict)
    captured = capsys.readouterr()
    assert_no_key("batch results", *surfaces, logs(), captured.out, captured.err)


@pytest.mark.anyio
@PROTOCOLS
async def test_the_response_cache_file_holds_no_key_after_cached_calls(
    protocol: str,
    vendor: VendorServer,
    model: str,
    tmp_path: Path,
    logs: Logs,
) -> None:
    vendor.script(f"{model}-echo", Reply.status(401, message=f"Incorrect API key provided: {KEY}"))
    # A valid answer quoting the key is stored, so it must be stored redacted.
    vendor.script(f"{model}-quote", _answer(f"sent with {KEY.removeprefix('sk-')}, fine"))
    cache = ResponseCache(tmp_path / "responses.sqlite3")
    critic = critic_on(vendor, protocol, model, cache=cache)
    echoing = critic_on(vendor, protocol, f"{model}-echo", cache=cache)
    quoting = critic_on(vendor, protocol, f"{model}-quote", cache=cache)
    try:
        first = await critic.judge("Is a whale a fish?")
        again = await critic.judge("Is a whale a fish?")
        failed = await echoing.judge("Is a whale a fish?")
        quoted = await quoting.judge("Is a whale a fish?")
        quoted_again = await quoting.judge("Is a whale a fish?")  # from the cache
        files_open = _files_under(tmp_path)
    finally:
        await aclose_sessions()
        cache.close()
    files_closed = _files_under(tmp_path)
    assert first.is_valid and again.cached and failed.error_kind is ErrorKind.AUTH
    assert quoted.is_valid and quoted_again.cached
    assert quoted_again.reasoning == quoted.reasoning == f"sent with {MARKER}, fine"
    assert "responses.sqlite3-wal" in files_open  # WAL mode: the answer is in the -wal
    assert_no_key(
        "the response cache",
        *files_open.values(),
        *files_closed.values(),
        *dumps_of(cache.stats()),
        *dumps_of(quoted_again),
        logs(),
    )


# -- configuration objects and what they raise ---------------------------------------------


def _critic_for(vendor_name: str) -> Critic:
    base_url = "http://127.0.0.1:9/v1" if vendor_name == "custom" else None
    return Critic(
        name=f"c-{vendor_name}", model="m", vendor=vendor_name, base_url=base_url, api_key=KEY
    )


class _DuckClient:
    """cross-judge 0.1's injected client: anything with ``post(url, json=, headers=)``."""

    def post(self, url: str, json: object = None, headers: object = None) -> object:
        raise AssertionError("never called")


def _reviewer() -> Reviewer:
    return Reviewer("r", "m", vendor="custom", base_url="http://127.0.0.1:9/v1", api_key=KEY)


CONFIGURED: dict[str, Callable[[], object]] = {
    **{f"critic-{name}": (lambda name=name: _critic_for(name)) for name in sorted(all_vendors())},
    "critic-with-url-credentials": lambda: Critic(
        name="c", model="m", vendor="custom", base_url=f"https://user:{KEY}@proxy.test/v1"
    ),
    "critic-with-a-client": lambda: Critic(
        name="c", model="m", vendor="openai", api_key=KEY, http_client=_DuckClient()
    ),
    "ensemble": lambda: Ensemble(
        [_critic_for("openai"), _critic_for("anthropic")], voting="majority"
    ),
    "vendor-config": lambda: get_vendor("openai"),
    "vendor-config-with-url-credentials": lambda: with_base_url(
        get_vendor("custom"), f"http://user:{KEY}@127.0.0.1:1/v1"
    ),
    "critic-endpoint-with-url-credentials": lambda: Critic(
        name="c", model="m", vendor="custom", base_url=f"http://{KEY}@127.0.0.1:1/v1"
    ).endpoint(),
    "reviewer": _reviewer,
    "reviewer-with-a-client": lambda: Reviewer(
        "r", "m", client=openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1")
    ),
    "judge-panel": lambda: JudgePanel([_reviewer()], strategy="majority"),
}


@pytest.mark.parametrize("name", list(CONFIGURED))
def test_configured_objects_never_show_the_key_in_a_repr_a_str_or_a_dump(name: str) -> None:
    obj = CONFIGURED[name]()
    surfaces = dumps_of(obj)
    if name == "vendor-config":  # a dataclass with no field the caller put a key in
        assert isinstance(obj, VendorConfig)
        surfaces.append(repr(dataclasses.asdict(obj)))
    assert_no_key(name, *surfaces)


ASDICT_FIELDS = {
    "critic-openai": ("api_key", KEY),
    "critic-anthropic": ("api_key", KEY),
    "ensemble": ("api_key", KEY),
    "reviewer": ("api_key", KEY),
    "judge-panel": ("api_key", KEY),
    "critic-with-url-credentials": ("base_url", f"https://user:{KEY}@proxy.test/v1"),
    "vendor-config-with-url-credentials": ("base_url", f"http://user:{KEY}@127.0.0.1:1/v1"),
}


@pytest.mark.parametrize("name", list(ASDICT_FIELDS))
def test_dataclasses_asdict_holds_the_key_only_in_the_field_it_was_given(name: str) -> None:
    # asdict() copies every field verbatim, as getattr would, private memos included: the
    # key is in the value the caller gave (api_key, or a base_url's user:password@), and
    # in nothing derived from it.
    field, given = ASDICT_FIELDS[name]
    data = dataclasses.asdict(CONFIGURED[name]())  # type: ignore[call-overload]

    def without(value: object) -> object:
        if isinstance(value, dict):
            return {k: without(v) for k, v in value.items() if k != field}
        if isinstance(value, (list, tuple)):
            return [without(v) for v in value if v != given]
        return value

    assert KEY in repr(data)
    assert_no_key(f"asdict({name}) outside {field}", repr(without(data)))


def _raise_duplicate_names() -> None:
    Ensemble([_critic_for("openai"), _critic_for("openai")])


def _raise_missing_context() -> None:
    Critic(name="c", model="m", prompt_template="{query} in {topic}", api_key=KEY).check({})


def _raise_unpriced_budget() -> None:
    critic = Critic(
        name="c",
        model="no-such-model",
        vendor="custom",
        base_url="http://127.0.0.1:9/v1",
        api_key=KEY,
    )
    Ensemble([critic]).check_prices()


RAISERS: dict[str, tuple[type[BaseException], Callable[[], object]]] = {
    "bad-scheme-url-with-credentials": (
        ConfigError,
        lambda: Critic(
            name="c", model="m", vendor="custom", base_url=f"htp://user:{KEY}@127.0.0.1:1/v1"
        ),
    ),
    "url-with-credentials-and-no-host": (
        ConfigError,
        lambda: Critic(name="c", model="m", vendor="custom", base_url=f"http://u:{PLAIN_KEY}@/v1"),
    ),
    "bad-scheme-url-with-credentials-anthropic": (
        ConfigError,
        lambda: Critic(
            name="c", model="m", vendor="anthropic", base_url=f"ftp://{PLAIN_KEY}@x/v1", api_key=KEY
        ),
    ),
    "register-vendor-with-a-bad-url": (
        ConfigError,
        lambda: register_vendor("canary-vendor", f"htp://user:{PLAIN_KEY}@127.0.0.1:1/v1"),
    ),
    "invalid-setting": (
        ConfigError,
        lambda: Critic(name="c", model="m", api_key=KEY, temperature=9),
    ),
    "invalid-client": (
        ConfigError,
        lambda: Critic(name="c", model="m", api_key=KEY, http_client=object()),
    ),
    "unknown-vendor": (
        ConfigError,
        lambda: Critic(name="c", model="m", vendor="nope", api_key=KEY),
    ),
    "duplicate-critics": (ConfigError, _raise_duplicate_names),
    "missing-context-field": (ConfigError, _raise_missing_context),
    "budget-without-a-price": (ConfigError, _raise_unpriced_budget),
    "make-client-for-anthropic": (ConfigError, lambda: make_client("anthropic", api_key=KEY)),
    "key-with-a-newline-inside": (
        MissingAPIKeyError,
        lambda: Critic(
            name="c", model="m", vendor="openai", api_key=f"{KEY[:6]}\n{KEY[6:]}"
        ).check(),
    ),
    "legacy-reviewer-with-a-broken-key": (
        MissingAPIKeyError,
        lambda: Reviewer("r", "m", vendor="openai", api_key=f"{PLAIN_KEY}\x00").ask("hi"),
    ),
}


@pytest.mark.parametrize("name", list(RAISERS))
def test_errors_raised_with_a_key_configured_never_show_it(name: str) -> None:
    expected, action = RAISERS[name]
    with pytest.raises(expected) as info:
        action()
    assert_no_key(name, *rendered_exception(info.value), keys=[KEY, PLAIN_KEY])


# -- panel files -----------------------------------------------------------------------------

_CRITIC = (
    "critics:\n  - name: a\n    model: m\n    vendor: custom\n    base_url: http://127.0.0.1:9/v1\n"
)

LITERAL_KEYS: dict[str, tuple[str, str]] = {
    # placement -> (panel text with {key}, the field the problem names)
    "api_key": (_CRITIC + "    api_key: {key}\n", "critics[0].api_key"),
    "quoted-api_key": (_CRITIC + '    api_key: "{key}"\n', "critics[0].api_key"),
    "apiKey": (_CRITIC + "    apiKey: {key}\n", "critics[0].apiKey"),
    "token": (_CRITIC + "    token: {key}\n", "critics[0].token"),
    "secret": (_CRITIC + "    secret: {key}\n", "critics[0].secret"),
    "password": (_CRITIC + "    password: {key}\n", "critics[0].password"),
    "authorization": (_CRITIC + "    authorization: Bearer {key}\n", "critics[0].authorization"),
    "top-level-api_key": ("api_key: {key}\n" + _CRITIC, "api_key"),
    "api_key_env-holding-the-key": (_CRITIC + "    api_key_env: {key}\n", "critics[0].api_key_env"),
    "base_url-credentials": (
        _CRITIC.replace("http://127", "http://user:{key}@127"),
        "critics[0].base_url",
    ),
    "base_url-credentials-bad-scheme": (
        _CRITIC.replace("http://127", "htp://user:{key}@127"),
        "critics[0].base_url",
    ),
    "repeated-api_key": (
        _CRITIC + "    api_key: {key}\n    api_key: {key}\n",
        "critics[0].api_key",
    ),
    "yaml-anchor": (_CRITIC + "    api_key: &k {key}\n    token: *k\n", "critics[0].api_key"),
}


@pytest.mark.parametrize("key", [KEY, PLAIN_KEY], ids=["sk-shaped", "unshaped"])
@pytest.mark.parametrize("placement", list(LITERAL_KEYS))
def test_a_literal_key_in_a_panel_file_is_refused_without_echoing_it(
    placement: str, key: str, tmp_path: Path
) -> None:
    text, field = LITERAL_KEYS[placement]
    path = tmp_path / "panel.yaml"
    path.write_text(text.format(key=key), encoding="utf-8")
    with pytest.raises(PanelError) as info:
        load_panel(path)
    assert field in [p.field for p in info.value.problems], info.value.problems
    assert_no_key(
        f"a panel with the key in {placement}", *rendered_exception(info.value), keys=[key]
    )


# -- the command line ------------------------------------------------------------------------


def _review(
    tmp_path: Path,
    vendor: VendorServer,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    echo: Reply | None = None,
    expect_code: int = 1,
) -> tuple[Path, list[object]]:
    """Run ``cross-judge review`` with the key in an environment variable and one critic
    whose vendor echoes it (``echo``; by default in a 401); return the results file and
    what the run showed."""
    monkeypatch.setenv(ENV, KEY)
    if echo is None:
        echo = Reply.status(401, message=f"Incorrect API key provided: {KEY}")
    vendor.always(f"{model}-c", echo)
    critics = "".join(
        f"""
  - name: {name}
    model: {model}-{name}
    vendor: custom
    base_url: {vendor.url}
    api_key_env: {ENV}
    prompt: taxonomy-review@1
    max_retries: 0"""
        for name in "abc"
    )
    panel = tmp_path / "panel.yaml"
    panel.write_text(f"voting: majority\ncritics:{critics}\n", encoding="utf-8")
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"i{n}", "query": f"item {n} of {model}"}) + "\n" for n in range(3)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    argv = [
        "review",
        str(items),
        "--panel",
        str(panel),
        "--out",
        str(out),
        "--cache",
        str(tmp_path / "cache.sqlite3"),
    ]
    try:
        code = main(argv)
    finally:
        vendor.always(f"{model}-c", None)
    captured = capsys.readouterr()
    assert code == expect_code, captured.err  # 1: every item has a failed call (the 401)
    return out, [captured.out, captured.err]


def test_cli_review_with_the_key_in_the_environment_never_prints_or_writes_it(
    tmp_path: Path,
    vendor: VendorServer,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    logs: Logs,
) -> None:
    out, shown = _review(tmp_path, vendor, model, monkeypatch, capsys)
    files = _files_under(tmp_path)
    assert {"out.jsonl", "out.jsonl.manifest.json", "cache.sqlite3"} <= set(files)
    results = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = {v["critic_id"]: v["error_kind"] for v in results[0]["verdicts"]}
    assert kinds == {"a": None, "b": None, "c": "auth"}  # the env key was sent and accepted
    manifest = json.loads(files["out.jsonl.manifest.json"])
    assert [c["name"] for c in manifest["runs"][0]["panel"]["critics"]] == ["a", "b", "c"]
    assert_no_key(
        "cross-judge review",
        *shown,
        *(
            content
            for name, content in files.items()
            if name != "panel.yaml" and name != "items.jsonl"
        ),
        logs(),
    )


def test_cli_review_with_a_vendor_quoting_the_key_in_its_answers_writes_no_piece_of_it(
    tmp_path: Path,
    vendor: VendorServer,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    logs: Logs,
) -> None:
    quote = _answer(f"Checked with {KEY.removeprefix('sk-')}: fine")
    out, shown = _review(tmp_path, vendor, model, monkeypatch, capsys, echo=quote, expect_code=0)
    files = _files_under(tmp_path)
    assert {"out.jsonl", "out.jsonl.manifest.json", "cache.sqlite3"} <= set(files)
    results = [json.loads(line) for line in out.read_text().splitlines()]
    (quoting,) = [v for v in results[0]["verdicts"] if v["critic_id"] == "c"]
    assert (quoting["kind"], quoting["reasoning"]) == ("KEEP", f"Checked with {MARKER}: fine")
    assert_no_key(
        "cross-judge review with a vendor quoting the key",
        *shown,
        *(content for name, content in files.items() if name not in ("panel.yaml", "items.jsonl")),
        logs(),
    )


def test_cli_stats_and_revote_on_those_results_never_show_the_key(
    tmp_path: Path,
    vendor: VendorServer,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    logs: Logs,
) -> None:
    out, _ = _review(tmp_path, vendor, model, monkeypatch, capsys)
    shown: list[object] = []
    for argv in (
        ["stats", str(out)],
        ["revote", str(out), "--voting", "unanimous"],
        ["revote", str(out), "--voting", "majority", "--out", str(tmp_path / "revoted.jsonl")],
    ):
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 0, captured.err
        shown += [captured.out, captured.err]
    assert_no_key(
        "cross-judge stats and revote",
        *shown,
        (tmp_path / "revoted.jsonl").read_bytes(),
        logs(),
    )


def test_cli_review_refuses_a_panel_with_a_literal_key_without_echoing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], logs: Logs
) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text(_CRITIC + f"    api_key: {PLAIN_KEY}\n", encoding="utf-8")
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "i0", "query": "q"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    code = main(["review", str(items), "--panel", str(panel), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2 and "a literal key in a panel file is refused" in captured.err
    assert not out.exists()
    assert_no_key("a refused panel", captured.out, captured.err, logs(), keys=[PLAIN_KEY])


# -- the legacy API --------------------------------------------------------------------------


@pytest.mark.parametrize("injected", [True, False], ids=["openai-client", "own-http"])
def test_a_legacy_reviewer_and_panel_redact_a_key_echoed_by_the_vendor(
    injected: bool,
    open_vendor: VendorServer,
    model: str,
    logs: Logs,
    capsys: pytest.CaptureFixture[str],
) -> None:
    open_vendor.always(model, Reply.status(401, message=f"Incorrect API key provided: {PLAIN_KEY}"))
    client = (
        openai.OpenAI(api_key=PLAIN_KEY, base_url=open_vendor.url, max_retries=0)
        if injected
        else None
    )
    reviewer = Reviewer(
        "r",
        model,
        vendor="custom",
        base_url=open_vendor.url,
        api_key=None if injected else PLAIN_KEY,
        client=client,
    )
    try:
        verdict = reviewer.ask("Is a whale a fish?")
        result = JudgePanel([reviewer]).ask("i0", "Is a whale a fish?")
    finally:
        open_vendor.always(model, None)
        if client is not None:
            client.close()
        shutdown_sync_bridge()
    assert verdict.verdict == "ERROR" and verdict.error is not None
    assert "Incorrect API key provided" in verdict.error
    captured = capsys.readouterr()
    assert_no_key(
        "a legacy reviewer",
        *dumps_of(verdict),
        *dumps_of(verdict.to_verdict()),
        *dumps_of(result),
        *dumps_of(reviewer),
        logs(),
        captured.out,
        captured.err,
        keys=[PLAIN_KEY],
    )
