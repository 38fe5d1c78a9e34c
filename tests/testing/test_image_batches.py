"""Images in provider batches on ``cross_judge.testing``: a batch request is answered as
the live endpoint answers the same body, images included: a text-only persona
(``vision="refuses"``) refuses an image part with the same 400, a seeing persona
(``vision="sees"``) reads the truth an image carries.

The tests drive a real ``VendorServer`` on 127.0.0.1 with a sync ``httpx.Client``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cross_judge.testing import Persona, truth_image

from .test_batch_endpoints import (
    anthropic_results,
    create_anthropic,
    create_openai,
    file_lines,
    openai_line,
    poll_openai,
    serving,
)


def chat_image_body(model: str, png: bytes) -> dict[str, Any]:
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    parts = [
        {"type": "text", "text": "Is it right?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    return {"model": model, "messages": [{"role": "user", "content": parts}]}


def test_a_text_only_persona_refuses_an_image_in_an_openai_batch_with_the_live_400() -> None:
    with serving(Persona("text", vision="refuses")) as (server, client):
        batch = create_openai(
            client, [openai_line("r0", chat_image_body("text", truth_image("PASS")))]
        )
        done = poll_openai(client, batch["id"])
        errors = file_lines(client, done["error_file_id"])
        assert server.stats()["images_refused"] == 1
    response = errors["r0"]["response"]
    assert response["status_code"] == 400
    assert "image_url is only supported by certain models" in response["body"]["error"]["message"]


def test_a_seeing_persona_reads_an_image_in_an_anthropic_batch() -> None:
    seer = Persona("seer", accuracy=1.0, labels=("PASS", "FAIL"), vision="sees")
    source = {"type": "base64", "media_type": "image/png",
              "data": base64.b64encode(truth_image("FAIL")).decode()}  # fmt: skip
    params = {
        "model": "seer",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Right?"},
                                                   {"type": "image", "source": source}]}],
    }  # fmt: skip
    with serving(seer, batch_polls=0) as (_, client):
        created = create_anthropic(client, [{"custom_id": "r0", "params": params}])
        assert created.status_code == 200, created.text
        results = anthropic_results(client, created.json()["id"])
    message = results["r0"]["message"]
    assert json.loads(message["content"][0]["text"])["kind"] == "FAIL"
