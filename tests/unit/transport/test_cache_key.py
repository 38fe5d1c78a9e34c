"""The response cache key: what determines the answer, nothing else.

ChatRequest.cache_key(config) hashes the vendor's name and protocol, the endpoint (no
credentials; no port on a loopback host), the model, the prompt and the settings actually
sent. Over HTTP (two simulated vendors on two ports sharing answers) see
tests/integration/test_cache_over_http.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cross_judge.transport import CACHE_KEY_VERSION, ChatRequest, _wire, endpoint_identity
from cross_judge.vendors import VendorConfig, get_vendor, with_base_url

KEY = "sk-cache-key-test-0123456789abcdef"


def request(**changes: Any) -> ChatRequest:
    fields: dict[str, Any] = {
        "model": "judge-model",
        "system": "Be a judge.",
        "user": "Judge this.",
        "temperature": 0.0,
        "max_tokens": 256,
    }
    fields.update(changes)
    return ChatRequest(**fields)


def at(base_url: str, vendor: str = "custom") -> VendorConfig:
    return with_base_url(get_vendor(vendor), base_url)


def key(base_url: str, vendor: str = "custom", **changes: Any) -> str:
    return request(**changes).cache_key(at(base_url, vendor))


# -- the endpoint -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("http://127.0.0.1:41001/v1", "http://127.0.0.1:52002/v1"),
        ("http://127.0.0.1:41001/v1", "http://localhost:8080/v1"),
        ("http://localhost:41001/v1", "http://[::1]:52002/v1"),
        ("http://127.0.0.2:41001/v1", "https://127.0.0.1/v1"),
        ("http://[::ffff:127.0.0.1]:41001/v1", "http://api.localhost:9/v1"),
    ],
)
def test_a_local_server_on_another_port_or_loopback_name_has_the_same_key(
    first: str, second: str
) -> None:
    assert key(first) == key(second)


def test_local_servers_on_two_paths_have_different_keys() -> None:
    assert key("http://127.0.0.1:8000/v1") != key("http://127.0.0.1:8000/gateway/v1")


def test_local_servers_of_two_vendors_have_different_keys() -> None:
    assert key("http://127.0.0.1:8000/v1", "vllm") != key("http://127.0.0.1:8000/v1", "llamacpp")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://api.openai.com/v1", "https://proxy.example/v1"),
        ("https://api.openai.com/v1", "https://api.openai.com.evil.example/v1"),
        ("https://gpu1.lan:8000/v1", "https://gpu2.lan:8000/v1"),
        ("https://gpu1.lan:8000/v1", "https://gpu1.lan:8001/v1"),
        ("https://gw.example/openai/v1", "https://gw.example/other/v1"),
        ("https://10.0.0.5:8000/v1", "https://10.0.0.6:8000/v1"),
    ],
)
def test_two_remote_endpoints_never_share_a_key(first: str, second: str) -> None:
    assert key(first) != key(second)


@pytest.mark.parametrize(
    "same",
    [
        "https://api.openai.com/v1/",
        "https://API.OpenAI.com/v1",
        "https://api.openai.com:443/v1",
        "HTTPS://api.openai.com/v1",
        "https://user:secret@api.openai.com/v1",
    ],
)
def test_spellings_of_one_remote_endpoint_have_one_key(same: str) -> None:
    assert key(same) == key("https://api.openai.com/v1")


def test_an_anthropic_base_url_with_or_without_v1_has_one_key() -> None:
    assert key("https://api.anthropic.com", "anthropic") == key(
        "https://api.anthropic.com/v1/", "anthropic"
    )


@pytest.mark.parametrize(
    ("base_url", "identity"),
    [
        ("http://127.0.0.1:41001/v1", "loopback/v1"),
        ("http://[::1]:8080", "loopback"),
        ("https://user:pw@API.example:443/v1/", "https://api.example/v1"),
        ("http://api.example:80/v1", "http://api.example/v1"),
        ("https://gw.example:8443/v1", "https://gw.example:8443/v1"),
        ("https://[2001:db8::1]:8443/v1", "https://[2001:db8::1]:8443/v1"),
    ],
)
def test_endpoint_identity_normalises_remote_urls_and_drops_loopback_hosts_and_ports(
    base_url: str, identity: str
) -> None:
    assert endpoint_identity("openai", base_url) == identity


def test_the_vendor_name_and_protocol_are_part_of_the_key() -> None:
    url = "https://llm.example/v1"
    assert key(url, "custom") != key(url, "openai")
    anthropic_like = VendorConfig("custom", url, None, requires_api_key=False, protocol="anthropic")
    assert request().cache_key(anthropic_like) != key(url, "custom")


# -- the request --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other-model"},
        {"system": "Be lenient."},
        {"user": "Judge that."},
        {"temperature": 0.7},
        {"max_tokens": 257},
        {"seed": 7},
        {"json_mode": True},
    ],
    ids=repr,
)
def test_every_setting_sent_on_chat_completions_changes_the_key(change: dict[str, Any]) -> None:
    assert key("https://llm.example/v1", **change) != key("https://llm.example/v1")


@pytest.mark.parametrize(
    "change", [{"temperature": 0.7}, {"seed": 7}, {"json_mode": True}], ids=repr
)
def test_settings_anthropic_does_not_send_leave_its_key_alone(change: dict[str, Any]) -> None:
    url = "https://api.anthropic.com"
    assert key(url, "anthropic", **change) == key(url, "anthropic")


@pytest.mark.parametrize("change", [{"max_tokens": 257}, {"user": "Judge that."}], ids=repr)
def test_what_anthropic_sends_changes_its_key(change: dict[str, Any]) -> None:
    url = "https://api.anthropic.com"
    assert key(url, "anthropic", **change) != key(url, "anthropic")


def test_the_key_is_a_sha256_hex_digest() -> None:
    digest = key("https://llm.example/v1")
    assert len(digest) == 64 and int(digest, 16) >= 0


# -- what is hashed -----------------------------------------------------------------------------


def hashed_material(monkeypatch: pytest.MonkeyPatch, req: ChatRequest, config: VendorConfig) -> str:
    """The text cache_key hashes, caught on its way into sha256."""
    seen: list[bytes] = []
    real = _wire.hashlib.sha256

    class Spy:
        @staticmethod
        def sha256(data: bytes) -> Any:
            seen.append(data)
            return real(data)

    monkeypatch.setattr(_wire, "hashlib", Spy)
    req.cache_key(config)
    assert len(seen) == 1
    return seen[0].decode("utf-8")


def test_the_hashed_material_holds_no_key_password_or_local_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CROSS_JUDGE_TEST_KEY", KEY)
    config = VendorConfig(
        "custom", "http://alice:PASSWORD-77@127.0.0.1:41001/v1", "CROSS_JUDGE_TEST_KEY"
    )
    material = hashed_material(monkeypatch, request(), config)
    for absent in (KEY, "PASSWORD-77", "alice", "41001", "127.0.0.1"):
        assert absent not in material


def test_the_hashed_material_is_versioned(monkeypatch: pytest.MonkeyPatch) -> None:
    material = json.loads(hashed_material(monkeypatch, request(), at("https://llm.example/v1")))
    assert material["key_version"] == CACHE_KEY_VERSION == 2
