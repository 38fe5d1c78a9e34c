"""A vendor's size limits, checked before a request is sent
(:func:`cross_judge.transport.size_problem`): one image's bytes as sent (base64) and the
whole request's."""

from __future__ import annotations

import dataclasses
import hashlib

from hypothesis import given, strategies as st

from cross_judge.transport import ChatRequest, ImagePart, Message, TextPart, size_problem
from cross_judge.vendors import VendorConfig, get_vendor

BASE = VendorConfig("sized", "https://sized.example/v1", None, requires_api_key=False)


def limited(**limits: int | None) -> VendorConfig:
    return dataclasses.replace(BASE, **limits)


def image(size: int, source: str | None = None) -> ImagePart:
    data = b"\x89PNG\r\n\x1a\n" + b"\x00" * max(0, size - 8)
    return ImagePart("image/png", hashlib.sha256(data).hexdigest(), data=data, source=source)


def request(text: str = "Is it right?", *images: ImagePart) -> ChatRequest:
    user = Message("user", (TextPart(text), *images))
    system = Message("system", (TextPart("Judge."),))
    return ChatRequest(
        model="m", system="", user="", temperature=0.0, max_tokens=50, messages=(system, user)
    )


def test_a_vendor_without_limits_passes_everything() -> None:
    assert size_problem(request("x" * 10_000, image(10_000)), BASE) is None


def test_an_image_over_the_limit_is_named_with_its_size_the_limit_and_the_fix() -> None:
    problem = size_problem(
        request("q", image(300, source="shots/a.png")), limited(max_image_bytes=300)
    )
    assert problem is not None
    assert "image 1 of 1 (shots/a.png, image/png, sha256 " in problem
    assert "400 bytes of base64" in problem  # 300 bytes as base64
    assert "max_image_bytes=300" in problem
    assert "Shrink or recompress" in problem


def test_an_image_is_counted_as_its_base64_text() -> None:
    config = limited(max_image_bytes=400)
    assert size_problem(request("q", image(300)), config) is None
    assert size_problem(request("q", image(301)), config) is not None


def test_a_url_image_is_counted_as_its_url() -> None:
    url = "https://images.example/" + "a" * 100 + ".png"
    part = ImagePart("image/png", hashlib.sha256(url.encode()).hexdigest(), url=url)
    assert size_problem(request("q", part), limited(max_image_bytes=len(url))) is None
    assert size_problem(request("q", part), limited(max_image_bytes=len(url) - 1)) is not None


def test_a_request_over_the_limit_names_its_size_the_limit_and_the_fix() -> None:
    problem = size_problem(request("é" * 600), limited(max_request_bytes=1_000))
    assert problem is not None
    assert "max_request_bytes=1000" in problem
    assert "shorten the item" in problem


def test_a_plain_text_request_is_measured_in_utf8_bytes() -> None:
    plain = ChatRequest(model="m", system="", user="é" * 500, temperature=0.0, max_tokens=5)
    assert size_problem(plain, limited(max_request_bytes=1_000)) is None
    assert size_problem(plain, limited(max_request_bytes=999)) is not None


@given(
    st.text(max_size=300),
    st.lists(st.integers(1, 400), max_size=3),
    st.integers(1, 2_000),
    st.integers(1, 2_000),
)
def test_a_request_passes_exactly_when_it_and_each_image_are_within_the_limits(
    text: str, sizes: list[int], image_cap: int, request_cap: int
) -> None:
    images = [image(size) for size in sizes]
    sent = request(text, *images)
    config = limited(max_image_bytes=image_cap, max_request_bytes=request_cap)
    fits = sent.wire_bytes() <= request_cap and all(i.wire_size() <= image_cap for i in images)
    assert (size_problem(sent, config) is None) is fits


def test_the_built_in_limits_are_the_vendors_published_ones() -> None:
    anthropic, openai = get_vendor("anthropic"), get_vendor("openai")
    assert (anthropic.max_image_bytes, anthropic.max_request_bytes) == (5_242_880, 32_000_000)
    assert (openai.max_image_bytes, openai.max_request_bytes) == (20_000_000, 50_000_000)
    assert get_vendor("openrouter").max_request_bytes is None
