"""A critic that cannot see an image, or whose request is over its vendor's size limit,
abstains without a call: ``SKIPPED`` with ``error_kind="no_vision"`` or ``"too_large"``,
no request reaching the simulated vendor, no cost, nothing reserved or cached, no vote."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Budget, Critic, Ensemble, register_price, vendors
from cross_judge.batch import Item
from cross_judge.cache import ResponseCache
from cross_judge.content import Image
from cross_judge.errors import ErrorKind
from cross_judge.testing import Persona, VendorServer
from cross_judge.transport import ChatRequest, ImagePart, Message, TextPart
from cross_judge.vendors import register_vendor

from .test_images_wire import png

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

KEY = "sk-images-abstain-secret-77aa88bb99"
SMALL = "images-small-sim"
PROMPT = "pass-fail@2"


@pytest.fixture(scope="module")
def server() -> Iterator[VendorServer]:
    personas = [
        Persona(m, accuracy=1.0, labels=("PASS", "FAIL"))
        for m in ("eye", "eye-2", "blind", "gpt-3.5-turbo-0125", "deepseek-flash")
    ]
    with VendorServer(personas, api_key=KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: VendorServer) -> Iterator[None]:
    server.reset_stats()
    saved = dict(vendors._MORE_VENDORS)
    try:
        yield
    finally:  # the registry is global: later tests on this worker must not see SMALL
        vendors._MORE_VENDORS.clear()
        vendors._MORE_VENDORS.update(saved)


def image(data: bytes, source: str | None = None) -> ImagePart:
    return ImagePart("image/png", hashlib.sha256(data).hexdigest(), data=data, source=source)


def with_images(request: ChatRequest, *images: ImagePart) -> ChatRequest:
    """``request`` with ``images`` after the user's text (as the critic's builder puts an
    item's images)."""
    system = Message("system", (TextPart(request.system),))
    user = Message("user", (TextPart(request.user), *images))
    return dataclasses.replace(request, system="", user="", messages=(system, user))


def critic(server: VendorServer, model: str = "eye", **kwargs: Any) -> Critic:
    kwargs.setdefault("vendor", "custom")
    kwargs.setdefault("base_url", server.url)
    return Critic(name=model, model=model, api_key=KEY, prompt=PROMPT, **kwargs)


async def judge_with_image(judge: Critic, data: bytes, **kwargs: Any) -> Any:
    request = with_images(judge.build_request("the caption says 'login'"), image(data))
    return await judge.judge_request(request, **kwargs)


# -- vision ------------------------------------------------------------------------------------


async def test_a_critic_set_to_no_vision_skips_an_image_request_without_a_call(
    server: VendorServer,
) -> None:
    verdict = await judge_with_image(critic(server, "blind", vision=False), png(1))
    assert (verdict.kind, verdict.error_kind) == ("SKIPPED", ErrorKind.NO_VISION)
    assert verdict.attempts == 0
    assert verdict.cost_usd == 0.0
    assert server.stats()["requests"] == 0


async def test_the_no_vision_message_names_the_model_and_the_fix(server: VendorServer) -> None:
    verdict = await judge_with_image(critic(server, "blind", vision=False), png(1))
    assert verdict.error is not None
    assert "'blind'" in verdict.error
    assert "Critic(vision=True)" in verdict.error
    assert KEY not in verdict.error


async def test_a_vendor_without_vision_skips_an_image_request_without_a_call(
    server: VendorServer,
) -> None:
    judge = critic(server, "deepseek-flash", vendor="deepseek", base_url=server.url)
    verdict = await judge_with_image(judge, png(2))
    assert verdict.error_kind is ErrorKind.NO_VISION
    assert "vision=False" in (verdict.error or "")
    assert server.stats()["requests"] == 0


async def test_a_text_only_model_of_a_vision_vendor_skips_an_image_request(
    server: VendorServer,
) -> None:
    judge = critic(server, "gpt-3.5-turbo-0125", vendor="openai", base_url=server.url)
    verdict = await judge_with_image(judge, png(3))
    assert verdict.error_kind is ErrorKind.NO_VISION
    assert server.stats()["requests"] == 0


async def test_vision_true_overrides_a_vendor_without_vision(server: VendorServer) -> None:
    judge = critic(server, "deepseek-flash", vendor="deepseek", base_url=server.url, vision=True)
    verdict = await judge_with_image(judge, png(4))
    assert verdict.is_valid, verdict.error
    assert server.stats()["requests"] == 1


async def test_a_critic_without_vision_still_judges_a_text_item(server: VendorServer) -> None:
    verdict = await critic(server, "blind", vision=False).judge("the caption says 'login'")
    assert verdict.is_valid, verdict.error
    assert server.stats()["requests"] == 1


async def test_a_skipped_image_request_is_not_cached(server: VendorServer, tmp_path: Path) -> None:
    judge = critic(server, "blind", vision=False)
    request = with_images(judge.build_request("the caption says 'login'"), image(png(5)))
    async with ResponseCache(tmp_path / "cache.sqlite") as cache:
        await judge.judge_request(request, cache=cache)
        assert await cache.get(request.cache_key(judge.endpoint())) is None


async def test_an_ensemble_counts_only_the_critics_that_saw_the_image(
    server: VendorServer,
) -> None:
    text = "the caption says 'login'"
    server.set_gold(text, "PASS")
    item = Item(query=text, images=[Image.from_bytes(png(6))])
    eyes = [critic(server, m) for m in ("eye", "eye-2")]
    async with Ensemble([*eyes, critic(server, "blind", vision=False)]) as panel:
        result = await panel.judge(item)
    async with Ensemble(eyes) as panel:
        sighted = await panel.judge(item)
    kinds = {v.critic_id: (v.kind, v.error_kind) for v in result.verdicts}
    assert kinds["blind"] == ("SKIPPED", ErrorKind.NO_VISION)
    assert (result.consensus, result.n_valid, result.n_errors) == (sighted.consensus, 2, 0)
    assert result.agreement_pct == sighted.agreement_pct == 1.0
    assert repr(result.krippendorff_alpha) == repr(sighted.krippendorff_alpha)
    assert server.stats()["by_model"] == {"eye": 2, "eye-2": 2}


# -- size limits -------------------------------------------------------------------------------


def small_vendor(server: VendorServer, **limits: int) -> None:
    register_vendor(SMALL, server.url, None, replace_existing=True, **limits)


async def test_an_image_over_the_vendors_limit_is_skipped_without_a_call(
    server: VendorServer,
) -> None:
    small_vendor(server, max_image_bytes=64)
    verdict = await judge_with_image(critic(server, vendor=SMALL, base_url=None), png(7) * 2)
    assert (verdict.kind, verdict.error_kind) == ("SKIPPED", ErrorKind.TOO_LARGE)
    assert (verdict.attempts, verdict.cost_usd) == (0, 0.0)
    assert server.stats()["requests"] == 0


async def test_the_too_large_message_names_the_image_its_size_the_limit_and_the_fix(
    server: VendorServer,
) -> None:
    small_vendor(server, max_image_bytes=64)
    judge = critic(server, vendor=SMALL, base_url=None)
    data = png(8) * 2
    request = with_images(judge.build_request("q"), image(data, source="shots/login.png"))
    message = (await judge.judge_request(request)).error or ""
    assert "shots/login.png" in message
    assert f"{4 * ((len(data) + 2) // 3)} bytes" in message
    assert "max_image_bytes=64" in message
    assert "Shrink or recompress" in message
    assert KEY not in message


async def test_a_request_over_the_vendors_limit_is_skipped_without_a_call(
    server: VendorServer,
) -> None:
    small_vendor(server, max_request_bytes=2_000)
    verdict = await critic(server, vendor=SMALL, base_url=None).judge("x" * 5_000)
    assert verdict.error_kind is ErrorKind.TOO_LARGE
    assert "max_request_bytes=2000" in (verdict.error or "")
    assert server.stats()["requests"] == 0


async def test_a_request_within_the_limits_is_sent(server: VendorServer) -> None:
    small_vendor(server, max_image_bytes=10_000, max_request_bytes=100_000)
    verdict = await judge_with_image(critic(server, vendor=SMALL, base_url=None), png(9))
    assert verdict.is_valid, verdict.error
    assert server.stats()["requests"] == 1


async def test_a_request_over_the_limit_reserves_nothing_of_the_budget(
    server: VendorServer,
) -> None:
    small_vendor(server, max_request_bytes=2_000)
    register_price("eye", vendor=SMALL, input=1.0, output=1.0)
    budget = Budget(1.0)
    await critic(server, vendor=SMALL, base_url=None).judge("x" * 5_000, budget=budget)
    assert budget.remaining_usd == 1.0


async def test_an_answer_cached_before_a_limit_was_lowered_is_still_used(
    server: VendorServer, tmp_path: Path
) -> None:
    small_vendor(server)
    async with ResponseCache(tmp_path / "cache.sqlite") as cache:
        first = await critic(server, vendor=SMALL, base_url=None).judge("x" * 5_000, cache=cache)
        small_vendor(server, max_request_bytes=2_000)
        again = await critic(server, vendor=SMALL, base_url=None).judge("x" * 5_000, cache=cache)
    assert first.is_valid and again.is_valid and again.cached
    assert server.stats()["requests"] == 1
