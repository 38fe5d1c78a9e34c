"""HTTP 408 from the server, on both wire protocols: a timeout the server reports, kept as
the server said it (status and message), not rewritten as a client-side timeout."""

from __future__ import annotations

import pytest

from cross_judge import Critic, ErrorKind
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

pytestmark = pytest.mark.anyio

PROTOCOLS = ["openai", "anthropic"]
SAID = "upstream model gave up after 30s"
ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'


def critic(server: VendorServer, protocol: str, model: str, **kwargs: object) -> Critic:
    if protocol == "anthropic":
        vendor, url = "anthropic", server.anthropic_url
    else:
        vendor, url = "custom", server.url
    return Critic(
        name=f"c-{protocol}",
        model=model,
        vendor=vendor,
        base_url=url,
        api_key=KEY,
        json_mode=False,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_408_is_a_timeout_that_keeps_the_status_and_the_servers_message(
    server: VendorServer, model: str, protocol: str, no_backoff: None
) -> None:
    server.script(model, *[Reply.status(408, message=SAID)] * 2)
    c = critic(server, protocol, model, max_retries=1)
    verdict = await c.judge("item")
    await c.aclose()

    assert verdict.kind == "ERROR" and verdict.error_kind is ErrorKind.TIMEOUT
    error = verdict.error or ""
    assert "HTTP 408" in error and SAID in error, error
    assert "no response within" not in error
    assert verdict.attempts == 2  # a 408 is retried, like a timeout


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_408_then_an_answer_gives_a_valid_verdict(
    server: VendorServer, model: str, protocol: str, no_backoff: None
) -> None:
    server.script(model, Reply.status(408, message=SAID), Reply.content(ANSWER))
    c = critic(server, protocol, model, max_retries=1)
    verdict = await c.judge("item")
    await c.aclose()

    assert verdict.is_valid and verdict.kind == "KEEP", verdict.error
    assert verdict.attempts == 2
