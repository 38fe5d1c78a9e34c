"""Images on every protocol, end to end: the image parts cross-judge builds go through the
real SDKs (openai's ``AsyncOpenAI`` for chat completions and the Responses API, anthropic's
``AsyncAnthropic``) and through a critic's own call path, to servers written from the
vendors' documentation (:mod:`.image_servers`) that take only the documented shapes and
check that the bytes that arrived are the bytes sent (their sha256)."""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from cross_judge import Critic, vendors
from cross_judge.batch import Item
from cross_judge.content import Image
from cross_judge.transport import ChatRequest, ImagePart, Message, TextPart
from cross_judge.transport._anthropic import message_params
from cross_judge.transport._responses import response_payload
from cross_judge.vendors import register_vendor

from .image_servers import ChatImageServer, MessagesImageServer, ResponsesImageServer
from .wire_servers import always

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

KEY = "sk-images-wire-secret-0a1b2c3d4e"
RESPONSES_VENDOR = "images-responses-sim"
TEMPLATE = "Judge this screenshot and its caption; answer in JSON.\n{query}"


def png(seed: int) -> bytes:
    """A valid 1x1 PNG whose pixel (so whose sha256) depends on ``seed``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixel = zlib.compress(b"\x00" + bytes([seed % 256, (seed // 256) % 256, 7]))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixel) + chunk(b"IEND", b"")
    )


def part(data: bytes) -> ImagePart:
    return ImagePart("image/png", hashlib.sha256(data).hexdigest(), data=data)


def request_with(*images: ImagePart, model: str = "vision-model") -> ChatRequest:
    user = Message("user", (TextPart("Is the caption right? Answer in JSON."), *images))
    system = Message("system", (TextPart("You are a careful judge. Output JSON."),))
    return ChatRequest(
        model=model, system="", user="", temperature=0.0, max_tokens=200, messages=(system, user)
    )


def claude(url: str) -> anthropic.AsyncAnthropic:
    """The Anthropic SDK's client sending the key as ``x-api-key`` (the SDK of this API
    version sends ``Authorization: Bearer`` unless told otherwise)."""
    headers: Any = {"Authorization": anthropic.omit, "X-Api-Key": KEY}
    return anthropic.AsyncAnthropic(
        base_url=url, api_key="", max_retries=0, default_headers=headers
    )


def digest(data: bytes) -> tuple[str, str]:
    return ("image/png", hashlib.sha256(data).hexdigest())


@pytest.fixture
def chat() -> Iterator[ChatImageServer]:
    with ChatImageServer(always("PASS"), api_key=KEY) as server:
        yield server


@pytest.fixture
def messages() -> Iterator[MessagesImageServer]:
    with MessagesImageServer(always("PASS"), api_key=KEY) as server:
        yield server


@pytest.fixture
def responses() -> Iterator[ResponsesImageServer]:
    saved = dict(vendors._MORE_VENDORS)
    with ResponsesImageServer(always("PASS"), api_key=KEY) as server:
        register_vendor(
            RESPONSES_VENDOR,
            server.url,
            "IMAGES_RESPONSES_KEY",
            protocol="openai-responses",
            replace_existing=True,
        )
        try:
            yield server
        finally:  # the registry is global: later tests on this worker must not see it
            vendors._MORE_VENDORS.clear()
            vendors._MORE_VENDORS.update(saved)


# -- the parts cross-judge builds, through the vendors' own SDKs ---------------------------


async def test_chat_image_parts_from_the_adapter_are_taken_by_the_sdk_and_server(
    chat: ChatImageServer,
) -> None:
    first, second = png(1), png(2)
    request = request_with(part(first), part(second))
    async with openai.AsyncOpenAI(base_url=chat.url, api_key=KEY, max_retries=0) as client:
        reply = await client.chat.completions.create(
            model=request.model, messages=request.chat_messages()
        )
    assert reply.choices[0].message.content
    assert chat.images == [[digest(first), digest(second)]]


async def test_responses_input_images_from_the_adapter_are_taken_by_the_sdk_and_server(
    responses: ResponsesImageServer,
) -> None:
    data = png(3)
    payload = response_payload(vendors.get_vendor(RESPONSES_VENDOR), request_with(part(data)))
    async with openai.AsyncOpenAI(base_url=responses.url, api_key=KEY, max_retries=0) as client:
        reply = await client.responses.create(**payload)
    assert "PASS" in reply.output_text
    assert responses.images == [[digest(data)]]


async def test_anthropic_image_blocks_from_the_adapter_are_taken_by_the_sdk_and_server(
    messages: MessagesImageServer,
) -> None:
    data = png(4)
    params = message_params(request_with(part(data)))
    async with claude(messages.url) as client:
        reply = await client.messages.create(**params)
    assert reply.content
    assert messages.images == [[digest(data)]]


async def test_a_url_image_goes_as_a_url_on_every_protocol(
    chat: ChatImageServer, messages: MessagesImageServer, responses: ResponsesImageServer
) -> None:
    url = "https://images.example.com/shot.png"
    image = ImagePart("image/png", hashlib.sha256(url.encode()).hexdigest(), url=url)
    request = request_with(image)
    async with openai.AsyncOpenAI(base_url=chat.url, api_key=KEY, max_retries=0) as client:
        await client.chat.completions.create(model="m", messages=request.chat_messages())
    payload = response_payload(vendors.get_vendor(RESPONSES_VENDOR), request)
    async with openai.AsyncOpenAI(base_url=responses.url, api_key=KEY, max_retries=0) as client:
        await client.responses.create(**payload)
    async with claude(messages.url) as client:
        await client.messages.create(**message_params(request))
    assert chat.images == messages.images == responses.images == [[("url", url)]]


# -- the servers refuse what the documentation does not allow --------------------------------


async def test_the_chat_server_refuses_an_undocumented_image_part_with_openais_400() -> None:
    wrong = {"type": "image", "url": "data:image/png;base64,AAAA"}
    with ChatImageServer(always("PASS"), api_key=KEY) as server:
        async with openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0) as client:
            with pytest.raises(openai.BadRequestError) as refused:
                await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": [wrong]}]
                )
    error: Any = refused.value.body
    assert refused.value.status_code == 400
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "messages[0].content[0].type"


async def test_the_chat_server_refuses_bytes_that_are_not_the_declared_type() -> None:
    gif_as_png = "data:image/png;base64,R0lGODlhAQABAAAAACw="
    with ChatImageServer(always("PASS"), api_key=KEY) as server:
        async with openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0) as client:
            with pytest.raises(openai.BadRequestError) as refused:
                await client.chat.completions.create(
                    model="m",
                    messages=[
                        {
                            "role": "user",
                            "content": [{"type": "image_url", "image_url": {"url": gif_as_png}}],
                        }
                    ],
                )
    error: Any = refused.value.body
    assert error["code"] == "invalid_image_format"


async def test_the_messages_server_refuses_a_media_type_outside_the_four() -> None:
    block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="},
    }
    with MessagesImageServer(always("PASS"), api_key=KEY) as server:
        async with claude(server.url) as client:
            with pytest.raises(anthropic.BadRequestError) as refused:
                await client.messages.create(
                    model="m", max_tokens=10, messages=[{"role": "user", "content": [block]}]
                )
    error: Any = refused.value.body
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert "media_type" in error["error"]["message"]


async def test_the_responses_server_refuses_an_input_image_with_an_unknown_detail() -> None:
    image = {"type": "input_image", "image_url": "https://x.example/a.png", "detail": "ultra"}
    with ResponsesImageServer(always("PASS"), api_key=KEY) as server:
        async with openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0) as client:
            with pytest.raises(openai.BadRequestError) as refused:
                await client.responses.create(
                    model="m", input=[{"role": "user", "content": [image]}]
                )
    error: Any = refused.value.body
    assert error["param"] == "input[0].content[0].detail"


# -- a critic's call reaches each server with the image --------------------------------------


def chat_critic(server: ChatImageServer, **kwargs: Any) -> Critic:
    return Critic(
        name="chat-eye",
        model="vision-model",
        vendor="custom",
        base_url=server.url,
        api_key=KEY,
        prompt_template=TEMPLATE,
        **kwargs,
    )


def anthropic_critic(server: MessagesImageServer, **kwargs: Any) -> Critic:
    return Critic(
        name="claude-eye",
        model="claude-vision",
        vendor="anthropic",
        base_url=server.url,
        api_key=KEY,
        prompt_template=TEMPLATE,
        **kwargs,
    )


def responses_critic(**kwargs: Any) -> Critic:
    return Critic(
        name="responses-eye",
        model="vision-model",
        vendor=RESPONSES_VENDOR,
        api_key=KEY,
        prompt_template=TEMPLATE,
        **kwargs,
    )


async def test_a_chat_critic_sends_a_request_with_an_image_to_the_server(
    chat: ChatImageServer,
) -> None:
    data = png(10)
    verdict = await chat_critic(chat).judge_request(request_with(part(data)))
    assert verdict.is_valid, verdict.error
    assert chat.images == [[digest(data)]]


async def test_an_anthropic_critic_sends_a_request_with_an_image_to_the_server(
    messages: MessagesImageServer,
) -> None:
    data = png(11)
    verdict = await anthropic_critic(messages).judge_request(request_with(part(data)))
    assert verdict.is_valid, verdict.error
    assert messages.images == [[digest(data)]]


async def test_a_responses_critic_sends_a_request_with_an_image_to_the_server(
    responses: ResponsesImageServer,
) -> None:
    data = png(12)
    verdict = await responses_critic().judge_request(request_with(part(data)))
    assert verdict.is_valid, verdict.error
    assert responses.images == [[digest(data)]]


@pytest.mark.parametrize("protocol", ["chat", "anthropic", "responses"])
async def test_a_critic_judging_an_item_with_an_image_reaches_the_server_with_its_bytes(
    protocol: str,
    chat: ChatImageServer,
    messages: MessagesImageServer,
    responses: ResponsesImageServer,
) -> None:
    judge, server = {
        "chat": (chat_critic(chat), chat),
        "anthropic": (anthropic_critic(messages), messages),
        "responses": (responses_critic(), responses),
    }[protocol]
    data = png(20)
    verdict = await judge.judge(
        Item(query="the caption reads 'login'", images=[Image.from_bytes(data)])
    )
    assert verdict.is_valid, verdict.error
    assert server.images == [[digest(data)]]
