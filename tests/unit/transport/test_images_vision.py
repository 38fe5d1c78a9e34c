"""Which models see images: a vendor's ``vision`` and ``text_only_models``
(:func:`cross_judge.vendors.sees_images`) and a critic's ``vision`` override."""

from __future__ import annotations

import pytest

from cross_judge import Critic
from cross_judge.errors import ConfigError
from cross_judge.vendors import VendorConfig, get_vendor, sees_images


@pytest.mark.parametrize(
    ("vendor", "model", "sees"),
    [
        ("openai", "gpt-4o-mini", True),
        ("openai", "gpt-3.5-turbo-0125", False),
        ("openai", "O3-MINI-2025", False),
        ("anthropic", "claude-sonnet-5", True),
        ("deepseek", "deepseek-flash", False),
        ("openrouter", "anything/at-all", None),
        ("custom", "local-model", None),
        ("ollama", "llava", None),
    ],
)
def test_each_built_in_vendor_says_whether_its_models_see_images(
    vendor: str, model: str, sees: bool | None
) -> None:
    assert sees_images(get_vendor(vendor), model) is sees


def test_a_text_only_pattern_wins_over_unknown_vision() -> None:
    config = VendorConfig(
        "gw", "https://gw.example/v1", None, requires_api_key=False, text_only_models=["text-*"]
    )
    assert config.text_only_models == ("text-*",)
    assert sees_images(config, "text-large") is False
    assert sees_images(config, "pixel-large") is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("vision", "yes"),
        ("text_only_models", "gpt-3.5*"),
        ("max_image_bytes", 0),
        ("max_request_bytes", True),
        ("max_batch_bytes", 1.5),
    ],
)
def test_an_invalid_vision_or_size_field_is_refused_with_the_fix(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        VendorConfig("v", "https://v.example/v1", None, requires_api_key=False, **{field: value})  # type: ignore[arg-type]


def test_a_critics_vision_must_be_true_false_or_none() -> None:
    with pytest.raises(ConfigError, match=r"vision must be True .* False .* or None"):
        Critic(name="c", model="m", vendor="custom", base_url="http://h.example/v1", vision=1)  # type: ignore[arg-type]


def test_a_critics_vision_reaches_its_snapshot() -> None:
    judge = Critic(name="c", model="m", vendor="custom", base_url="http://h.example/v1")
    assert judge.snapshot().vision is None
    judge.vision = False
    assert judge.snapshot().vision is False
