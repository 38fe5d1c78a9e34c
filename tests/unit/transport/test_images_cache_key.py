"""The response cache key names an image by its bytes' digest: it changes when the bytes
change, and not when only where the image was read from changes."""

from __future__ import annotations

import hashlib

from hypothesis import given, strategies as st

from cross_judge.transport import ChatRequest, ImagePart, Message, TextPart
from cross_judge.vendors import get_vendor

CONFIG = get_vendor("openai")


def image(data: bytes, source: str | None = None) -> ImagePart:
    return ImagePart("image/png", hashlib.sha256(data).hexdigest(), data=data, source=source)


def request(*parts: ImagePart) -> ChatRequest:
    user = Message("user", (TextPart("Is the caption right?"), *parts))
    return ChatRequest(
        model="gpt-4o-mini", system="", user="", temperature=0.0, max_tokens=50, messages=(user,)
    )


@given(st.binary(min_size=1, max_size=64), st.binary(min_size=1, max_size=64))
def test_the_key_changes_when_the_image_bytes_change(first: bytes, second: bytes) -> None:
    same = first == second
    assert (
        request(image(first)).cache_key(CONFIG) == request(image(second)).cache_key(CONFIG)
    ) is same


def test_the_key_does_not_change_when_only_the_source_changes() -> None:
    data = b"\x89PNG\r\n\x1a\n-the-same-bytes"
    here = request(image(data, source="shots/a.png")).cache_key(CONFIG)
    there = request(image(data, source="/elsewhere/copy-of-a.png")).cache_key(CONFIG)
    assert here == there == request(image(data)).cache_key(CONFIG)


def test_the_key_holds_the_digest_and_not_the_bytes() -> None:
    data = b"\x89PNG\r\n\x1a\n" + b"secret-pixels" * 10
    sent = request(image(data))
    assert sent.cache_key(CONFIG) != request().cache_key(CONFIG)
    assert "secret-pixels" not in repr(sent)


def test_a_source_is_never_sent() -> None:
    data = b"\x89PNG\r\n\x1a\nbytes"
    sent = request(image(data, source="/home/me/private/shot.png")).chat_messages()
    assert "private" not in repr(sent)
