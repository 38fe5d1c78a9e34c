"""Fixtures that cross-judge 0.1.0's own test files expect, written for this repository.

The 0.1.0 sdist ships its tests but not the ``conftest.py`` that defines two of their
fixtures. Their shape is read off how the tests use them:

* ``make_mock_client(responder)`` gives an OpenAI-style synchronous client:
  ``client.chat.completions.create(**kwargs)`` calls ``responder(kwargs)``, which returns
  the reply's text (or raises, like a failing vendor), and answers with an object shaped
  like ``openai``'s ``ChatCompletion`` (``.choices[0].message.content``). Every call's
  keyword arguments are appended to ``client.calls``, also when the responder raises.
* ``static_json_client(verdict="KEEP", confidence=0.9, rationale="ok")`` is such a client
  whose every reply is ``{"verdict": ..., "confidence": ..., "rationale": ...}`` as JSON.

Two guards keep the old tests from reaching a real vendor: no connection beyond the
loopback interface, and no vendor API key from the environment. ``run.py`` copies this
file next to the extracted 0.1.0 test files and runs pytest there.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

Responder = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class _Message:
    content: str
    role: str = "assistant"


@dataclass(frozen=True)
class _Choice:
    message: _Message
    index: int = 0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class _Completion:
    choices: list[_Choice]


@dataclass
class MockClient:
    """``client.chat.completions.create(**kwargs)`` answered by ``responder(kwargs)``.

    ``calls`` holds each call's keyword arguments, in call order. Calls may come from
    worker threads (the new ``Reviewer`` calls an injected client from one), so appending
    is locked.
    """

    responder: Responder
    calls: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def chat(self) -> MockClient:
        return self

    @property
    def completions(self) -> MockClient:
        return self

    def create(self, **kwargs: Any) -> _Completion:
        with self._lock:
            self.calls.append(kwargs)
        content = self.responder(kwargs)
        return _Completion(choices=[_Choice(message=_Message(content=content))])


@pytest.fixture
def make_mock_client() -> Callable[[Responder], MockClient]:
    """A factory: ``make_mock_client(responder)`` is a new :class:`MockClient`."""
    return MockClient


@pytest.fixture
def static_json_client() -> Callable[..., MockClient]:
    """A factory of clients that always answer the same 0.1-style JSON verdict."""

    def build(verdict: str = "KEEP", confidence: float = 0.9, rationale: str = "ok") -> MockClient:
        reply = json.dumps({"verdict": verdict, "confidence": confidence, "rationale": rationale})
        return MockClient(lambda _kwargs: reply)

    return build


# -- guards: the old tests must never reach (or bill) a real vendor -----------------------------

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths and the like
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"0.1 test tried to reach {address[0]!r}: loopback only")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"0.1 test tried to reach {address[0]!r}: loopback only")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
