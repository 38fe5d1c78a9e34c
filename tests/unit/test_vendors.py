"""Vendor registry: 0.1 names, presets, registration, key resolution, base URL checks,
make_client."""

from __future__ import annotations

import openai
import pytest

from cross_judge import (
    VENDOR_DEFAULTS,
    VENDORS,
    ConfigError,
    Critic,
    MissingAPIKeyError,
    UnknownVendorError,
    VendorConfig,
    all_vendors,
    get_vendor,
    make_client,
    register_vendor,
    set_vendor_limits,
)
from cross_judge.vendors import check_base_url, resolve_api_key, with_base_url

PRESETS = {"anthropic", "custom", "ollama", "llamacpp", "vllm", "lmstudio"}


# -- the registry: 0.1's VENDORS and the full one ------------------------------------------------


def test_vendors_holds_exactly_the_0_1_names() -> None:
    assert set(VENDORS) == {"deepseek", "openai", "openrouter"}


def test_all_vendors_lists_0_1_names_and_every_preset() -> None:
    assert set(all_vendors()) == {"deepseek", "openai", "openrouter"} | PRESETS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_get_vendor_finds_every_preset(name: str) -> None:
    assert get_vendor(name.upper()) is all_vendors()[name]


def test_all_vendors_is_a_snapshot_that_changes_nothing() -> None:
    snapshot = all_vendors()
    snapshot.pop("anthropic")
    assert "anthropic" in all_vendors()


def test_a_registered_vendor_is_in_all_vendors_but_not_in_the_0_1_dict(
    vendor_registry: None,
) -> None:
    config = register_vendor("gateway", "https://gateway.example/v1", "GATEWAY_KEY")
    assert all_vendors()["gateway"] is config and get_vendor("Gateway") is config
    assert "gateway" not in VENDORS


def test_replacing_a_0_1_vendor_keeps_it_in_the_0_1_dict(vendor_registry: None) -> None:
    config = register_vendor(
        "openai", "https://proxy.example/v1", "OPENAI_API_KEY", replace_existing=True
    )
    assert VENDORS["openai"] is config and get_vendor("openai") is config
    assert set(VENDORS) == {"deepseek", "openai", "openrouter"}


def test_a_preset_cannot_be_registered_again_silently(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match="replace_existing=True"):
        register_vendor("ollama", "http://localhost:9999/v1")


def test_a_vendor_written_into_vendors_the_0_1_way_is_found(vendor_registry: None) -> None:
    VENDORS["acme"] = VendorConfig("acme", "https://acme.example/v1", "ACME_KEY")
    assert get_vendor("ACME") is VENDORS["acme"]
    assert "acme" in all_vendors()


def test_unknown_vendor_lists_the_presets_too() -> None:
    with pytest.raises(UnknownVendorError) as info:
        get_vendor("nope")
    assert "'ollama'" in str(info.value) and "'anthropic'" in str(info.value)


# -- rate-limit scope ------------------------------------------------------------------------


def test_deepseek_limits_per_account_so_its_scope_is_the_endpoint() -> None:
    assert get_vendor("deepseek").limit_scope == "endpoint"


@pytest.mark.parametrize("name", sorted(all_vendors().keys() - {"deepseek"}))
def test_every_other_preset_limits_per_model(name: str) -> None:
    assert get_vendor(name).limit_scope == "model"


def test_a_registered_vendor_limits_per_model_unless_told(vendor_registry: None) -> None:
    gateway = register_vendor("gateway", "https://gateway.example/v1")
    account = register_vendor("account", "https://account.example/v1", limit_scope="endpoint")
    assert (gateway.limit_scope, account.limit_scope) == ("model", "endpoint")


def test_set_vendor_limits_changes_the_scope_and_keeps_the_limits(
    vendor_registry: None,
) -> None:
    set_vendor_limits("openrouter", max_concurrency=4)
    config = set_vendor_limits("openrouter", limit_scope="endpoint")
    assert (config.limit_scope, config.max_concurrency) == ("endpoint", 4)
    assert get_vendor("openrouter") is config and VENDORS["openrouter"] is config


def test_set_vendor_limits_reaches_a_preset(vendor_registry: None) -> None:
    config = set_vendor_limits("ollama", max_concurrency=2)
    assert get_vendor("ollama") is config and config.max_concurrency == 2


def test_an_unknown_scope_is_refused_with_the_choices(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match=r"limit_scope must be 'model'.*or 'endpoint'"):
        register_vendor("gateway", "https://gateway.example/v1", limit_scope="account")


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


def test_register_vendor_adds_a_lower_case_entry(vendor_registry: None) -> None:
    cfg = register_vendor("Acme", "https://acme.example/v1", "ACME_KEY", json_object=True)
    assert get_vendor("ACME") is cfg
    assert cfg.requires_api_key and cfg.json_object


def test_register_vendor_refuses_to_replace_silently(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match="replace_existing=True"):
        register_vendor("openai", "https://proxy.example/v1", "OPENAI_API_KEY")


def test_register_vendor_rejects_unknown_capability(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match="VendorConfig fields"):
        register_vendor("acme2", "https://acme.example/v1", "K", colour="blue")


def test_register_vendor_rejects_a_non_http_url(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match="http"):
        register_vendor("acme3", "ftp://acme.example", "K")


# -- base URL checks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://localhost:99999/v1", "has port '99999'; a port is a whole number from 1 to 65535"),
        ("http://localhost:0/v1", "has port '0'"),
        ("http://localhost:eighty/v1", "has port 'eighty'"),
        ("abc", "has no scheme; write it in full with http:// or https://"),
        ("localhost:8080/v1", "has no scheme"),
        ("http://[::1/v1", "is not a valid URL: check the brackets around an IPv6 host"),
        ("ftp://files.example/v1", "uses the ftp:// scheme; cross-judge speaks http://"),
        ("http:///v1", "has no host"),
        ("http://api..example.com/v1", "has an invalid host name"),
        ("http://local host/v1", "contains a space or control character"),
        ("http://host/v1\n", "contains a space or control character"),
        ("https://host/v1?api-version=1", "has a query (?...) or fragment"),
    ],
)
def test_a_malformed_base_url_is_refused_at_construction_saying_the_fix(
    url: str, says: str
) -> None:
    with pytest.raises(ConfigError, match="base_url") as info:
        Critic(name="c", model="m", vendor="custom", base_url=url)
    assert says in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8080/v1",
        "https://api.example.com/v1/",
        "http://[::1]:8080/v1",
        "HTTPS://API.EXAMPLE.COM/v1",
        "http://user:pass@localhost:8080/v1",
        "http://localhost:65535",
    ],
)
def test_a_well_formed_base_url_is_accepted(url: str) -> None:
    critic = Critic(name="c", model="m", vendor="custom", base_url=url)
    assert critic.base_url == url


def test_a_refused_base_url_never_shows_its_password() -> None:
    with pytest.raises(ConfigError) as info:
        Critic(name="c", model="m", vendor="custom", base_url="http://user:s3cret@host:99999/v1")
    message = str(info.value)
    assert "s3cret" not in message and "user" not in message
    assert "'http://***@host:99999/v1' has port '99999'" in message


def test_a_password_holding_a_slash_is_refused_without_showing_any_of_it() -> None:
    with pytest.raises(ConfigError, match="percent-encode") as info:
        check_base_url("http://user:k3y/s3cret@host/v1")
    message = str(info.value)
    assert "k3y" not in message and "s3cret" not in message


def test_a_registered_vendor_with_a_bad_port_is_refused(vendor_registry: None) -> None:
    with pytest.raises(ConfigError, match=r"vendor 'acme': base_url .* has port '70000'"):
        register_vendor("acme", "https://acme.example:70000/v1")


def test_a_base_url_that_is_not_text_is_refused_without_its_repr() -> None:
    class Url:
        def __repr__(self) -> str:
            return "https://user:s3cret@host/v1"

    with pytest.raises(ConfigError, match="must be text, got Url") as info:
        VendorConfig("x", Url(), None, requires_api_key=False)  # type: ignore[arg-type]
    assert "s3cret" not in str(info.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_concurrency", 2.5), ("max_concurrency", True), ("max_concurrency", 0), ("rpm", 0)],
)
def test_register_vendor_rejects_invalid_limits(vendor_registry: None, field, value) -> None:
    with pytest.raises(ConfigError, match=f"vendor 'acme': {field} must be"):
        register_vendor("acme", "https://acme.example/v1", "ACME_KEY", **{field: value})


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_register_vendor_rejects_a_non_finite_rpm(vendor_registry: None, value) -> None:
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
