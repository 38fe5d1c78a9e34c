"""Specification of images on ``cross_judge.testing``: a PNG that carries its truth
(:func:`truth_image`, :func:`image_truth`), image parts read in each protocol's request
body (chat ``image_url`` data URLs, Anthropic ``image`` blocks, Responses
``input_image``), personas that see them (``vision="sees"``), ignore them (``"ignores"``)
or refuse them as a text-only model does (``"refuses"``: the vendor's 400), and the
vendor's request size limit (``VendorServer(max_request_bytes=...)``: 413 / 400).

The HTTP tests drive a real ``VendorServer`` on 127.0.0.1 with a sync ``httpx.Client`` and
with the official ``openai`` and ``anthropic`` SDKs. Statistical bounds allow 4.5 binomial
standard errors.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx
import openai
import pytest
from hypothesis import given, settings, strategies as st

from cross_judge.testing import Persona, VendorServer, image_truth, truth_image

CLIENT_OPTIONS: dict[str, Any] = {"timeout": 30.0, "trust_env": False, "verify": False}
PASS_FAIL = ("PASS", "FAIL")
QUESTION = "<item>Does the chart show growth?</item>"
TOLERANCE_SE = 4.5


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def chat_body(model: str, png: bytes | None, text: str = QUESTION) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if png is not None:
        parts.append({"type": "image_url", "image_url": {"url": data_url(png)}})
    return {"model": model, "messages": [{"role": "user", "content": parts}]}


def messages_body(model: str, png: bytes | None, text: str = QUESTION) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if png is not None:
        source = {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(png).decode(),
        }
        blocks.append({"type": "image", "source": source})
    return {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": blocks}]}


def responses_body(model: str, png: bytes | None, text: str = QUESTION) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}]
    if png is not None:
        parts.append({"type": "input_image", "image_url": data_url(png), "detail": "auto"})
    return {"model": model, "input": [{"role": "user", "content": parts}]}


BODIES = {
    "chat": ("/v1/chat/completions", chat_body),
    "messages": ("/v1/messages", messages_body),
    "responses": ("/v1/responses", responses_body),
}


def answer_text(wire: str, reply: dict[str, Any]) -> str:
    if wire == "chat":
        return str(reply["choices"][0]["message"]["content"])
    if wire == "messages":
        return str(reply["content"][0]["text"])
    return str(reply["output"][-1]["content"][0]["text"])


@contextmanager
def serving(*personas: Persona, **kwargs: Any) -> Iterator[tuple[VendorServer, httpx.Client]]:
    with (
        VendorServer(personas, **kwargs) as server,
        httpx.Client(base_url=server.anthropic_url, **CLIENT_OPTIONS) as client,
    ):
        yield server, client


def post(
    client: httpx.Client, wire: str, model: str, png: bytes | None, text: str = QUESTION
) -> httpx.Response:
    path, body = BODIES[wire]
    return client.post(path, json=body(model, png, text))


LARGE = QUESTION + " padding" * 500  # about 4 kB


def kind(client: httpx.Client, wire: str, model: str, png: bytes | None) -> str:
    response = post(client, wire, model, png)
    assert response.status_code == 200, response.text
    return str(json.loads(answer_text(wire, response.json()))["kind"])


# -- the truth chunk -------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(
    st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=255), min_size=1, max_size=200),
    st.integers(min_value=1, max_value=8),
)
def test_a_truth_image_carries_its_label_back(label: str, size: int) -> None:
    assert image_truth(truth_image(label, size=size)) == label


def test_a_truth_image_is_a_valid_png_of_its_size() -> None:
    png = truth_image("PASS", size=3)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png[12:16] == b"IHDR" and struct.unpack(">II", png[16:24]) == (3, 3)


def test_an_image_without_the_chunk_carries_no_truth() -> None:
    assert image_truth(b"\xff\xd8\xff\xe0 a jpeg") is None


def test_a_truth_chunk_whose_checksum_is_wrong_carries_no_truth() -> None:
    png = bytearray(truth_image("PASS"))
    at = png.index(b"PASS")
    png[at] = ord("F")  # the label changed, its CRC not
    assert image_truth(bytes(png)) is None


def test_a_truncated_truth_image_carries_no_truth() -> None:
    png = truth_image("PASS")
    assert image_truth(png[: png.index(b"PASS") + 2]) is None


@pytest.mark.parametrize("label", ["", "x" * 201, "caf\u00e9 \u2713", "a\x00b"])
def test_a_label_a_png_cannot_hold_is_refused(label: str) -> None:
    with pytest.raises(ValueError, match="truth_image"):
        truth_image(label)


# -- personas that see, ignore or refuse images ----------------------------------------


@pytest.mark.parametrize("wire", list(BODIES))
def test_a_seeing_persona_reads_the_truth_of_the_image(wire: str) -> None:
    seer = Persona("seer", accuracy=1.0, labels=PASS_FAIL, vision="sees")
    with serving(seer, gold={"Does the chart show growth?": "PASS"}) as (_, client):
        assert kind(client, wire, "seer", truth_image("FAIL")) == "FAIL"
        assert kind(client, wire, "seer", truth_image("PASS")) == "PASS"
        assert kind(client, wire, "seer", None) == "PASS"  # no image: the gold label


@pytest.mark.parametrize("wire", list(BODIES))
def test_a_persona_that_ignores_images_answers_as_if_they_were_absent(wire: str) -> None:
    blind = Persona("blind", accuracy=0.6, labels=PASS_FAIL, seed=4)
    with serving(blind) as (_, client):
        for label in PASS_FAIL:
            with_image = post(client, wire, "blind", truth_image(label))
            without = post(client, wire, "blind", None)
            assert answer_text(wire, with_image.json()) == answer_text(wire, without.json())


def test_a_seeing_persona_reads_images_at_its_accuracy_each_image_a_draw() -> None:
    seer = Persona("seer", accuracy=0.7, labels=PASS_FAIL, vision="sees")
    n = 256
    with serving(seer) as (_, client):
        right = sum(
            kind(client, "chat", "seer", truth_image(PASS_FAIL[k % 2], size=k + 1))
            == PASS_FAIL[k % 2]
            for k in range(n)
        )
    assert abs(right / n - 0.7) <= TOLERANCE_SE * math.sqrt(0.7 * 0.3 / n)


def test_a_url_image_is_not_fetched_and_carries_no_truth() -> None:
    seer = Persona("seer", accuracy=1.0, labels=PASS_FAIL, vision="sees")
    body = chat_body("seer", None)
    body["messages"][0]["content"].append(
        {"type": "image_url", "image_url": {"url": "https://example.invalid/chart.png"}}
    )
    with serving(seer, gold={"Does the chart show growth?": "PASS"}) as (server, client):
        reply = client.post("/v1/chat/completions", json=body)
        assert json.loads(answer_text("chat", reply.json()))["kind"] == "PASS"
        assert server.stats()["images"] == 1


def test_a_text_only_persona_refuses_a_chat_image_part_as_openai_does() -> None:
    with serving(Persona("text", vision="refuses")) as (server, client):
        response = post(client, "chat", "text", truth_image("PASS"))
        assert server.stats()["images_refused"] == 1
    assert response.status_code == 400
    error = response.json()["error"]
    assert (
        error["message"] == "Invalid content type. image_url is only supported by certain models."
    )
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "messages.[0].content.[1].type"


def test_a_text_only_persona_refuses_an_anthropic_image_block() -> None:
    with serving(Persona("text", vision="refuses")) as (_, client):
        response = post(client, "messages", "text", truth_image("PASS"))
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("messages.0.content.1.type: image input")


def test_a_text_only_persona_refuses_a_responses_input_image() -> None:
    with serving(Persona("text", vision="refuses")) as (_, client):
        response = post(client, "responses", "text", truth_image("PASS"))
    assert response.status_code == 400
    error = response.json()["error"]
    assert "input_image is only supported by certain models" in error["message"]
    assert error["param"] == "input[0].content[1]"


def test_a_text_only_persona_answers_a_request_without_images() -> None:
    with serving(Persona("text", vision="refuses")) as (server, client):
        assert post(client, "chat", "text", None).status_code == 200
        assert server.stats()["images_refused"] == 0


def test_the_openai_sdk_sees_the_text_only_refusal_as_a_bad_request() -> None:
    with VendorServer([Persona("text", vision="refuses")]) as server:
        client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="image_url is only supported"):
            client.chat.completions.create(
                model="text", messages=chat_body("text", truth_image("PASS"))["messages"]
            )


def test_the_anthropic_sdk_reads_a_seeing_personas_answer_to_an_image_block() -> None:
    seer = Persona("seer", accuracy=1.0, labels=PASS_FAIL, vision="sees")
    with VendorServer([seer]) as server:
        client = anthropic.Anthropic(base_url=server.anthropic_url, api_key="unused")
        body = messages_body("seer", truth_image("FAIL"))
        reply = client.messages.create(model="seer", max_tokens=256, messages=body["messages"])
    assert json.loads(reply.content[0].text)["kind"] == "FAIL"  # type: ignore[union-attr]


# -- the vendor's size limit -----------------------------------------------------------


def test_a_messages_request_over_the_size_limit_gets_anthropics_413() -> None:
    with serving(Persona("critic"), max_request_bytes=2_000) as (server, client):
        response = post(client, "messages", "critic", truth_image("PASS"), LARGE)
        assert server.stats()["too_large"] == 1
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "request_too_large"


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_an_openai_request_over_the_size_limit_gets_a_400(wire: str) -> None:
    with serving(Persona("critic"), max_request_bytes=2_000) as (_, client):
        response = post(client, wire, "critic", truth_image("PASS"), LARGE)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "request_too_large"


def test_a_request_within_the_size_limit_is_answered() -> None:
    with serving(Persona("critic"), max_request_bytes=2_000) as (_, client):
        assert post(client, "chat", "critic", truth_image("PASS")).status_code == 200


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_a_size_limit_that_is_not_a_positive_int_is_refused(limit: Any) -> None:
    with pytest.raises(ValueError, match="max_request_bytes must be an int >= 1"):
        VendorServer([Persona("critic")], max_request_bytes=limit)


def test_an_unknown_vision_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"Persona.vision must be one of \['ignores'"):
        Persona("critic", vision="maybe")  # type: ignore[arg-type]
