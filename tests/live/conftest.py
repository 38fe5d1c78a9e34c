"""The live tier: the integration tests run against a REAL vendor that you name.

Nothing here runs unless ``CROSS_JUDGE_LIVE_BASE_URL`` is set: every test of this folder is
then skipped with one reason, so the default suite (and CI) never leaves 127.0.0.1. Set it,
and the tests call that endpoint for real (``nox -s live``, or ``pytest tests/live``)::

    CROSS_JUDGE_LIVE_BASE_URL   the endpoint: an OpenAI-compatible base URL (the prefix of
                                /chat/completions, e.g. http://localhost:11434/v1) or, with
                                the anthropic protocol, https://api.anthropic.com
    CROSS_JUDGE_LIVE_MODEL      the model id to judge with (required with the URL)
    CROSS_JUDGE_LIVE_PROTOCOL   openai (default) or anthropic
    CROSS_JUDGE_LIVE_VENDOR     optional: the cross-judge vendor whose requests to send
                                (openai, deepseek, anthropic, ollama, vllm, ...: JSON
                                mode, the output-cap field, the protocol), as the panel
                                you mean to trust names it; default custom (plain OpenAI-
                                compatible), or anthropic with that protocol
    CROSS_JUDGE_LIVE_KEY_ENV    the NAME of the environment variable holding the key
                                (e.g. OPENAI_API_KEY); leave it unset for a local server
                                that takes no key (ollama, llama.cpp, vLLM)
    CROSS_JUDGE_LIVE_TIMEOUT    seconds allowed per attempt (default 120: a local model on
                                a CPU can be slow)
    CROSS_JUDGE_LIVE_MAX_TOKENS output cap per answer (default 512; raise it for a
                                reasoning model that thinks before it answers)

A set but unusable configuration (no model, an unknown protocol or vendor, a key variable
that is empty) stops the run at collection with a message saying what to fix.

Two guards of the default suite (``tests/conftest.py``) are adjusted for this folder only:
the loopback-only socket guard is replaced by one that also lets the tests reach the
named endpoint's host (and the proxy the environment names, if any), and the key is read
from ``CROSS_JUDGE_LIVE_KEY_ENV`` at collection, before the per-test guard that empties the
vendors' key variables runs. The key is passed to each critic explicitly and never printed.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest

from cross_judge import Critic
from cross_judge.errors import UnknownVendorError
from cross_judge.vendors import get_vendor

from ..conftest import _is_local

# Captured at import (collection), when no test's guard is installed: the real functions.
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo

HERE = Path(__file__).resolve().parent

ENV_URL = "CROSS_JUDGE_LIVE_BASE_URL"
ENV_MODEL = "CROSS_JUDGE_LIVE_MODEL"
ENV_PROTOCOL = "CROSS_JUDGE_LIVE_PROTOCOL"
ENV_VENDOR = "CROSS_JUDGE_LIVE_VENDOR"
ENV_KEY_ENV = "CROSS_JUDGE_LIVE_KEY_ENV"
ENV_TIMEOUT = "CROSS_JUDGE_LIVE_TIMEOUT"
ENV_MAX_TOKENS = "CROSS_JUDGE_LIVE_MAX_TOKENS"

SKIP_REASON = (
    f"live tier off: set {ENV_URL} and {ENV_MODEL} (and {ENV_KEY_ENV} if the endpoint "
    "takes a key) to run these tests against a real vendor; see docs/live-tier.md"
)
_PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
_ROUNDS_PER_TEST = 3
"""Calls one after the other in a live test, at most (the others run concurrently), unless
the test says otherwise with :func:`calls_in_sequence`."""


@dataclass(frozen=True)
class LiveTarget:
    """The vendor the live tier calls, as the environment describes it."""

    base_url: str
    model: str
    protocol: str
    vendor: str
    key_env: str | None
    key: str | None = field(repr=False)
    timeout: float
    max_tokens: int

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or ""

    @property
    def api_key(self) -> str | None:
        """The key to send: the named one; without one, a placeholder for a vendor that
        insists on a key (a local Anthropic-compatible server takes any), else none."""
        if self.key is not None:
            return self.key
        return "no-key" if get_vendor(self.vendor).requires_api_key else None

    def critic(self, name: str = "live", **settings: Any) -> Critic:
        """A critic on the live endpoint; ``settings`` override the tier's defaults."""
        options: dict[str, Any] = {
            "model": self.model,
            "vendor": self.vendor,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "timeout": self.timeout,
            "max_tokens": self.max_tokens,
            "prompt": "taxonomy-review@1",
            **settings,
        }
        return Critic(name=name, **options)


def live_target(environ: Mapping[str, str]) -> LiveTarget | None:
    """The target described by ``environ``; ``None`` when the tier is off (no URL).

    Raises:
        pytest.UsageError: the tier is on but its configuration cannot work; the message
            names the variable to fix.
    """
    base_url = environ.get(ENV_URL, "").strip()
    if not base_url:
        return None
    if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
        raise pytest.UsageError(f"{ENV_URL}={base_url!r} is not an http(s) URL with a host")
    model = environ.get(ENV_MODEL, "").strip()
    if not model:
        raise pytest.UsageError(f"{ENV_URL} is set but {ENV_MODEL} is not: name the model")
    protocol, vendor = _protocol_and_vendor(environ)
    key_env = environ.get(ENV_KEY_ENV, "").strip() or None
    key = None
    if key_env is not None:
        key = environ.get(key_env, "").strip()
        if not key:
            raise pytest.UsageError(
                f"{ENV_KEY_ENV}={key_env} but ${key_env} is empty or unset: export the key "
                f"in {key_env}, or unset {ENV_KEY_ENV} for an endpoint that takes no key"
            )
    return LiveTarget(
        base_url=base_url,
        model=model,
        protocol=protocol,
        vendor=vendor,
        key_env=key_env,
        key=key,
        timeout=_positive(environ, ENV_TIMEOUT, 120.0),
        max_tokens=math.ceil(_positive(environ, ENV_MAX_TOKENS, 512)),
    )


def _protocol_and_vendor(environ: Mapping[str, str]) -> tuple[str, str]:
    protocol = environ.get(ENV_PROTOCOL, "").strip().lower()
    if protocol not in ("", "openai", "anthropic"):
        raise pytest.UsageError(f"{ENV_PROTOCOL}={protocol!r}: use 'openai' or 'anthropic'")
    name = environ.get(ENV_VENDOR, "").strip().lower()
    if not name:
        return (protocol or "openai"), ("anthropic" if protocol == "anthropic" else "custom")
    try:
        config = get_vendor(name)
    except UnknownVendorError as exc:
        raise pytest.UsageError(f"{ENV_VENDOR}={name!r}: {exc.args[0]}") from None
    if protocol and protocol != config.protocol:
        raise pytest.UsageError(
            f"{ENV_VENDOR}={name} speaks the {config.protocol} protocol but "
            f"{ENV_PROTOCOL}={protocol}: unset {ENV_PROTOCOL}"
        )
    return config.protocol, config.name


def _positive(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise pytest.UsageError(f"{name}={text!r}: give a number > 0")
    return value


_TARGET = pytest.StashKey[LiveTarget | None]()
_Test = TypeVar("_Test", bound=Callable[..., Any])


def skip_module_unless_live() -> None:
    """Skip the calling test module (one line in the report) when the tier is off."""
    if not os.environ.get(ENV_URL, "").strip():
        pytest.skip(SKIP_REASON, allow_module_level=True)


def _in_this_tier(item: pytest.Item) -> bool:
    return HERE in Path(item.path).resolve().parents


def _only_this_tier_asked(config: pytest.Config) -> bool:
    """The run names this folder (or paths inside it) and nothing else."""
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return bool(paths) and all(p == HERE or HERE in p.parents for p in paths)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # With the tier off, `pytest tests/live` (and `nox -s live`) collects nothing: the
    # module skips itself. That is the expected outcome, not pytest's exit 5 ("no tests
    # ran"). Any other run (the whole suite with a -k that matches nothing) keeps its 5.
    if (
        exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        and not os.environ.get(ENV_URL, "").strip()
        and _only_this_tier_asked(session.config)
    ):
        session.exitstatus = pytest.ExitCode.OK


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Read once, at collection: before any test's guard empties the vendors' key variables.
    target = live_target(os.environ)
    config.stash[_TARGET] = target
    if target is None:
        return
    for item in items:
        if _in_this_tier(item):
            # A real model may take the whole per-attempt timeout on each attempt of each
            # call (the first and two retries).
            rounds = getattr(getattr(item, "function", None), "live_rounds", _ROUNDS_PER_TEST)
            limit = rounds * 3 * target.timeout + 60
            item.add_marker(pytest.mark.safety_net(limit))


def calls_in_sequence(rounds: int) -> Callable[[_Test], _Test]:
    """Mark a live test that makes up to ``rounds`` calls one after the other (a local
    server answers one at a time), so that its time limit allows them."""

    def mark(test: _Test) -> _Test:
        test.live_rounds = rounds  # type: ignore[attr-defined]  # read at collection
        return test

    return mark


@pytest.fixture(scope="session")
def live(pytestconfig: pytest.Config) -> LiveTarget:
    """The vendor named by the environment (a module that did not skip itself with
    :func:`skip_module_unless_live` gets its tests skipped here)."""
    target = pytestconfig.stash.get(_TARGET, None)
    if target is None:
        pytest.skip(SKIP_REASON)
    return target


# -- the socket guard, widened to the named endpoint ---------------------------------------------


def _allowed_hosts(target: LiveTarget) -> set[str]:
    """The endpoint's host and any proxy host the environment names (HTTPS_PROXY, ...)."""
    hosts = {target.host.lower()}
    for name in _PROXY_VARS:
        proxy = urlsplit(os.environ.get(name, "")).hostname
        if proxy:
            hosts.add(proxy.lower())
    return hosts


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config) -> None:
    """Replaces the suite's loopback-only guard here: loopback, plus the named endpoint's
    host (and the addresses it resolved to), plus a proxy named by the environment."""
    target = pytestconfig.stash.get(_TARGET, None)
    hosts = set() if target is None else _allowed_hosts(target)
    resolved: set[str] = set()

    def allowed(host: Any) -> bool:
        if _is_local(host):
            return True
        name = str(host).split("%")[0].lower()
        return name in hosts or name in resolved

    def check(address: Any) -> None:
        if isinstance(address, tuple) and not allowed(address[0]):
            raise ConnectionRefusedError(
                f"live test tried to reach {address[0]!r}: only loopback and {sorted(hosts)}"
            )

    def connect(self: socket.socket, address: Any) -> Any:
        check(address)
        return _real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        check(address)
        return _real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not allowed(name):
            raise socket.gaierror(f"live test tried to resolve {name!r}: only {sorted(hosts)}")
        answers = _real_getaddrinfo(host, *args, **kwargs)
        if name is not None and str(name).lower() in hosts:
            resolved.update(str(answer[4][0]) for answer in answers)
        return answers

    patches: dict[str, Callable[..., Any]] = {"connect": connect, "connect_ex": connect_ex}
    for attribute, replacement in patches.items():
        monkeypatch.setattr(socket.socket, attribute, replacement)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
