"""Vendor registry: 0.1 names, presets, registration, key resolution, make_client."""

from __future__ import annotations

import openai
import pytest

from cross_judge import (
    VENDOR_DEFAULTS,
    VENDORS,
    ConfigError,
    MissingAPIKeyError,
    UnknownVendorError,
    VendorConfig,
    get_vendor,
    make_client,
    register_vendor,
)
from cross_judge.vendors import resolve_api_key, with_base_url


@pytest.fixture
def restore_registry():
    saved = dict(VENDORS)
    yield
    VENDORS.clear()
    VENDORS.update(saved)


def test_vendor_defaults_keep_the_0_1_table() -> None:
    assert VENDOR_DEFAULTS == {
        "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
        "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    }


def test_vendor_config_accepts_0_1_positional_fields() -> None:
    cfg = VendorConfig("x", "https://x.example/v1", "X_KEY")
    assert (cfg.name, cfg.base_url, cfg.api_key_env) == ("x", "https://x.example/v1", "X_KEY")


def test_lookup_is_case_insensitive() -> None:
    assert get_vendor("DeepSeek") is VENDORS["deepseek"]


def test_unknown_vendor_lists_known_ones_and_is_a_key_error() -> None:
    with pytest.raises(KeyError) as info:
        get_vendor("nope")
    assert isinstance(info.value, UnknownVendorError)
    assert isinstance(info.value, ConfigError)
    message = str(info.value)
    assert "'nope'" in message and "deepseek" in message and "register_vendor" in message


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("ollama", "http://localhost:11434/v1"),
        ("llamacpp", "http://localhost:8080/v1"),
        ("vllm", "http://localhost:8000/v1"),
        ("lmstudio", "http://localhost:1234/v1"),
    ],
)
def test_local_presets_need_no_key(name: str, url: str, monkeypatch) -> None:
    cfg = get_vendor(name)
    assert cfg.base_url == url
    assert resolve_api_key(cfg, None) is None


def test_deepseek_accepts_json_object_but_not_json_schema() -> None:
    cfg = get_vendor("deepseek")
    assert cfg.json_object and not cfg.json_schema


def test_custom_requires_a_base_url() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        with_base_url(get_vendor("custom"), None)


def test_register_vendor_adds_a_lower_case_entry(restore_registry) -> None:
    cfg = register_vendor("Acme", "https://acme.example/v1", "ACME_KEY", json_object=True)
    assert get_vendor("ACME") is cfg
    assert cfg.requires_api_key and cfg.json_object


def test_register_vendor_refuses_to_replace_silently(restore_registry) -> None:
    with pytest.raises(ConfigError, match="replace_existing=True"):
        register_vendor("openai", "https://proxy.example/v1", "OPENAI_API_KEY")


def test_register_vendor_rejects_unknown_capability(restore_registry) -> None:
    with pytest.raises(ConfigError, match="VendorConfig fields"):
        register_vendor("acme2", "https://acme.example/v1", "K", colour="blue")


def test_register_vendor_rejects_a_non_http_url(restore_registry) -> None:
    with pytest.raises(ConfigError, match="http"):
        register_vendor("acme3", "ftp://acme.example", "K")


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_concurrency", 2.5), ("max_concurrency", True), ("max_concurrency", 0), ("rpm", 0)],
)
def test_register_vendor_rejects_invalid_limits(restore_registry, field, value) -> None:
    with pytest.raises(ConfigError, match=f"vendor 'acme': {field} must be"):
        register_vendor("acme", "https://acme.example/v1", "ACME_KEY", **{field: value})


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_register_vendor_rejects_a_non_finite_rpm(restore_registry, value) -> None:
    with pytest.raises(ConfigError, match="rpm must be a finite number > 0"):
        register_vendor("acme", "https://acme.example/v1", "ACME_KEY", rpm=value)


def test_key_is_read_from_env_at_call_time(monkeypatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    assert resolve_api_key(get_vendor("deepseek"), None) == "sk-from-env"


def test_explicit_key_beats_env(monkeypatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    assert resolve_api_key(get_vendor("deepseek"), "sk-explicit") == "sk-explicit"


def test_missing_key_names_the_env_var(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY") as info:
        resolve_api_key(get_vendor("openai"), None)
    assert isinstance(info.value, RuntimeError)  # 0.1 raised RuntimeError


def test_make_client_returns_a_configured_openai_client() -> None:
    client = make_client("openrouter", api_key="sk-test-123456")
    try:
        assert isinstance(client, openai.OpenAI)
        assert str(client.base_url).rstrip("/") == "https://openrouter.ai/api/v1"
    finally:
        client.close()


def test_make_client_without_key_raises_runtime_error(monkeypatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="DEEPSEEK_API_KEY"):
        make_client("deepseek")
