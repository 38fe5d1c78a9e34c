"""Malformed base URLs: refused when the critic is made, saying the fix; a URL that passes
the checks and still cannot be reached fails that critic's calls only."""

from __future__ import annotations

import pytest

from cross_judge import ConfigError, Critic, Ensemble
from cross_judge.testing import Reply, VendorServer

from .conftest import KEY

ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'
MALFORMED = ["http://localhost:99999/v1", "abc", "http://[::1/v1", "localhost:8080/v1"]


@pytest.mark.parametrize("url", MALFORMED)
def test_a_panel_with_a_malformed_base_url_is_refused_before_anything_is_sent(
    server: VendorServer, url: str
) -> None:
    server.reset_stats()
    with pytest.raises(ConfigError, match="base_url"):
        Ensemble(
            [
                Critic(name="ok", model="m", vendor="custom", base_url=server.url, api_key=KEY),
                Critic(name="bad", model="m", vendor="custom", base_url=url),
            ]
        )
    assert server.stats()["requests"] == 0


@pytest.mark.anyio
async def test_an_unreachable_base_url_fails_its_critic_only_in_a_batch(
    server: VendorServer, model: str
) -> None:
    # Well formed, so accepted; its host (an emoji, refused by IDNA 2008, and outside the
    # loopback the tests may reach) fails at call time, and only for this critic.
    server.always(model, Reply.content(ANSWER))
    healthy = Critic(
        name="ok", model=model, vendor="custom", base_url=server.url, api_key=KEY, json_mode=False
    )
    odd = Critic(
        name="odd", model=model, vendor="custom", base_url="http://xn--ls8h.la/v1", max_retries=0
    )
    ensemble = Ensemble([healthy, odd])
    try:
        batch = await ensemble.judge_many(["item 1", "item 2"], concurrency=2)
    finally:
        await ensemble.aclose()
        server.always(model, None)

    assert len(batch) == 2
    for result in batch.verdicts:
        by_critic = {v.critic_id: v for v in result.verdicts}
        assert by_critic["ok"].is_valid, by_critic["ok"].error
        assert by_critic["odd"].kind == "ERROR" and by_critic["odd"].error
