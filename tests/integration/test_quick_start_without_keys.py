"""The README's quick start run as a new user first runs it: no API key set and no local
model server listening. It must say that no critic answered and why, for each critic, and
never print a key."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cross_judge import Critic, Ensemble
from cross_judge.testing import Reply, VendorServer
from cross_judge.vendors import register_vendor

from .conftest import KEY

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_quick_start() -> str:
    """The first Python block under the README's "Quick start" heading."""
    section = README.read_text(encoding="utf-8").split("\n## Quick start\n", 1)[1]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_the_quick_start_without_keys_says_no_critic_answered_and_why(
    vendor_registry: None, no_backoff: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # DEEPSEEK_API_KEY and OPENAI_API_KEY are unset by the test-wide fixture; Ollama is
    # pointed at a closed port, as on a machine where it is not running.
    url = f"http://127.0.0.1:{closed_port()}/v1"
    register_vendor("ollama", url, None, replace_existing=True)
    exec(compile(readme_quick_start(), "judge.py", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert out.startswith("Felines (see also: Cats): no critic answered")
    assert "ds (deepseek/deepseek-flash): missing API key (set DEEPSEEK_API_KEY" in out
    assert "gpt (openai/gpt-4o-mini): missing API key (set OPENAI_API_KEY" in out
    assert "llama (ollama/llama3.1): connection refused" in out


def test_a_rejected_key_echoed_by_the_vendor_is_named_but_never_printed(
    server: VendorServer,
) -> None:
    model = "m-key-echo"
    server.always(model, Reply.status(401, message=f"Incorrect API key provided: {KEY}"))
    critic = Critic(name="c", model=model, vendor="custom", base_url=server.url, api_key=KEY)
    try:
        result = Ensemble([critic]).judge_sync("item")
    finally:
        server.always(model, None)
    shown = (str(result), repr(result), result.outcome, result._repr_html_())
    assert "c (custom/m-key-echo): API key rejected: HTTP 401: Incorrect API key" in shown[0]
    assert not any(KEY in text or KEY[-12:] in text for text in shown)
