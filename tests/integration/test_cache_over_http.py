"""The response cache seen from a Critic and an Ensemble, over real HTTP to a local vendor:
what is replayed without a request, what is asked again, what never reaches the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cross_judge import ConfigError, Critic, Ensemble, ErrorKind
from cross_judge.critic._cache import ResponseCache, resolve_cache
from cross_judge.testing import Persona, Reply, VendorServer
from cross_judge.transport import Completion

from .conftest import KEY

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ANSWER = '{"kind": "REJECT", "confidence": 0.8, "reasoning": "not a subcategory"}'


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Any default-location cache goes to the test's tmp folder, never the user's."""
    folder = tmp_path / "default-cache"
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "responses.sqlite3") as c:
        yield c


def critic(server: VendorServer, model: str, cache: Any, **kwargs: Any) -> Critic:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("max_retries", 0)
    return Critic(
        name="critic", model=model, vendor="custom", base_url=server.url, cache=cache, **kwargs
    )


def database_bytes(path: Path) -> bytes:
    """The database and its sidecar files, as SQLite leaves them on disk."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def damage(path: Path) -> None:
    """Overwrite the schema page after the 100-byte header."""
    with open(path, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\x00\xff" * 2000)


def requests_for(server: VendorServer, model: str) -> int:
    return int(server.stats()["by_model"].get(model, 0))


async def test_the_same_query_again_is_answered_from_the_cache_without_a_request(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.script(
        model, Reply.content(ANSWER, usage={"prompt_tokens": 90, "completion_tokens": 20})
    )
    async with critic(server, model, cache) as c:
        first = await c.judge("Felines")
        second = await c.judge("Felines")
    assert requests_for(server, model) == 1
    assert (first.cached, first.attempts, first.usage is not None) == (False, 1, True)
    assert (second.kind, second.confidence, second.reasoning) == ("REJECT", 0.8, first.reasoning)
    assert (second.cached, second.cost_usd, second.attempts, second.error) == (True, 0, 0, None)
    assert second.raw_response == first.raw_response
    assert (cache.stats().hits, cache.stats().misses, cache.stats().writes) == (1, 1, 1)


async def test_a_parse_failure_is_not_cached_and_the_next_call_goes_out(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.script(model, Reply.content("I would rather not say."), Reply.content(ANSWER))
    async with critic(server, model, cache) as c:
        failed = await c.judge("Felines")
        retried = await c.judge("Felines")
    assert failed.kind == "PARSE_FAIL" and retried.kind == "REJECT"
    assert (retried.cached, requests_for(server, model)) == (False, 2)
    assert cache.stats().writes == 1


async def test_an_error_verdict_is_not_cached_and_the_next_call_goes_out(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.script(model, Reply.status(400), Reply.content(ANSWER))
    async with critic(server, model, cache) as c:
        failed = await c.judge("Felines")
        retried = await c.judge("Felines")
    assert (failed.kind, failed.error_kind) == ("ERROR", ErrorKind.BAD_REQUEST)
    assert (retried.kind, retried.cached, requests_for(server, model)) == ("REJECT", False, 2)
    assert cache.stats().entries == 1


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"max_tokens": 123},
        {"system_prompt": "You are a lenient judge. Output strict JSON only."},
        {"seed": 7},
        {"json_mode": True},
    ],
    ids=["temperature", "max_tokens", "system_prompt", "seed", "response_format"],
)
async def test_a_setting_that_changes_the_answer_is_a_miss(
    server: VendorServer, model: str, cache: ResponseCache, change: dict[str, Any]
) -> None:
    server.always(model, Reply.content(ANSWER))
    async with critic(server, model, cache) as c:
        await c.judge("Felines")
    async with critic(server, model, cache, **change) as changed:
        again = await changed.judge("Felines")
    assert (again.cached, requests_for(server, model)) == (False, 2)
    server.always(model, None)


async def test_another_model_is_a_miss(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    other = model + "-other"
    server.always(model, Reply.content(ANSWER))
    server.always(other, Reply.content(ANSWER))
    async with critic(server, model, cache) as c, critic(server, other, cache) as d:
        await c.judge("Felines")
        again = await d.judge("Felines")
    assert (again.cached, requests_for(server, other)) == (False, 1)
    server.always(model, None)
    server.always(other, None)


async def test_another_item_is_a_miss(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.always(model, Reply.content(ANSWER))
    async with critic(server, model, cache) as c:
        await c.judge("Felines")
        other = await c.judge("Canines")
    assert (other.cached, requests_for(server, model)) == (False, 2)
    server.always(model, None)


async def test_another_api_key_still_hits_the_same_entry(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.script(model, Reply.content(ANSWER))
    async with critic(server, model, cache) as c:
        await c.judge("Felines")
    async with critic(server, model, cache, api_key="sk-another-key") as d:
        again = await d.judge("Felines")
    assert again.cached and requests_for(server, model) == 1


async def test_the_api_key_never_reaches_the_cache_file(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    path = tmp_path / "responses.sqlite3"
    server.script(model, Reply.content(ANSWER))
    async with critic(server, model, path) as c:
        assert (await c.judge("Felines")).is_valid
    resolve_cache(path).close()  # the critic's: one object per file in a process
    data = database_bytes(path)
    assert b"REJECT" in data  # the answer is there...
    assert KEY.encode() not in data  # ...the key is not
    assert b"Bearer" not in data and b"Felines" not in data


async def test_critic_cache_true_uses_the_default_file(
    server: VendorServer, model: str, cache_dir: Path
) -> None:
    server.script(model, Reply.content(ANSWER))
    async with critic(server, model, True) as c:
        await c.judge("Felines")
        again = await c.judge("Felines")
    assert again.cached and (cache_dir / "responses.sqlite3").is_file()
    assert c.model_dump()["cache"] == str(cache_dir / "responses.sqlite3")
    resolve_cache(True).close()


async def test_an_ensemble_cache_answers_every_critic_the_second_time(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    models = [f"{model}-{n}" for n in range(3)]
    for name in models:
        server.script(name, Reply.content(ANSWER))
    critics = [critic(server, name, None) for name in models]
    for c, name in zip(critics, models, strict=True):
        c.name = name
    async with Ensemble(critics, cache=cache) as ensemble:
        first = await ensemble.judge("Felines")
        second = await ensemble.judge("Felines")
    assert [v.cached for v in first.verdicts] == [False] * 3
    assert [v.cached for v in second.verdicts] == [True] * 3
    assert (second.consensus, second.cost_usd) == (first.consensus, 0)
    assert sum(requests_for(server, name) for name in models) == 3


async def test_a_sync_call_and_an_async_call_share_one_cache(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.script(model, Reply.content(ANSWER))
    c = critic(server, model, cache)
    by_bridge = c.judge_sync("Felines")  # the bridge's own event loop, in its thread
    async with c:
        here = await c.judge("Felines")  # this test's event loop
    assert (by_bridge.cached, here.cached, requests_for(server, model)) == (False, True, 1)


async def test_a_damaged_cache_file_stops_the_call_before_any_request(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    path = tmp_path / "responses.sqlite3"
    with ResponseCache(path) as seed:
        await seed.put("k", Completion(text="x"))
    damage(path)
    server.script(model, Reply.content(ANSWER))
    async with critic(server, model, ResponseCache(path)) as c:
        with pytest.raises(ConfigError, match="damaged"):
            await c.judge("Felines")
    assert requests_for(server, model) == 0


async def test_a_damaged_cache_file_raises_a_plain_config_error_from_an_ensemble(
    server: VendorServer, model: str, tmp_path: Path
) -> None:
    path = tmp_path / "responses.sqlite3"
    with ResponseCache(path) as seed:
        await seed.put("k", Completion(text="x"))
    damage(path)
    panel = Ensemble([critic(server, model, None)], cache=ResponseCache(path))
    with pytest.raises(ConfigError, match="damaged"):  # not an exception group
        await panel.judge("Felines")
    assert requests_for(server, model) == 0


async def test_a_stored_answer_the_critics_labels_reject_is_a_miss(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    server.script(model, Reply.content(ANSWER), Reply.content('{"kind": "KEEP"}'))
    async with critic(server, model, cache) as c:
        await c.judge("Felines")  # REJECT is stored
    # Same request (the key ignores labels), but this critic only accepts KEEP.
    async with critic(server, model, cache, labels=["KEEP"]) as strict:
        verdict = await strict.judge("Felines")
    assert (verdict.kind, verdict.cached) == ("KEEP", False)
    assert requests_for(server, model) == 2


@pytest.mark.slow  # a batch judged twice, with the cache's statistics compared
async def test_a_batch_rerun_with_the_cache_makes_no_call_and_gives_the_same_statistics(
    tmp_path: Path,
) -> None:
    personas = [Persona(f"sim-{i}", accuracy=0.8, seed=i) for i in range(3)]
    items = [{"id": f"c{i}", "query": f"candidate category {i}"} for i in range(200)]
    with VendorServer(personas, count_items=True) as server:
        critics = [
            Critic(name=p.model, model=p.model, vendor="custom", base_url=server.url)
            for p in personas
        ]
        async with Ensemble(critics, cache=tmp_path / "responses.sqlite3") as panel:
            first = await panel.judge_many(items, concurrency=16)
            server.reset_stats()
            second = await panel.judge_many(items, concurrency=16)
        assert server.stats()["requests"] == 0
    assert [r.consensus for r in second.verdicts] == [r.consensus for r in first.verdicts]
    assert second.reliability_alpha() == first.reliability_alpha()
    assert all(v.cached for r in second.verdicts for v in r.verdicts)
    assert second.cost_usd == 0.0 and second.usage.total_tokens == 0


async def test_a_rerun_against_a_simulated_vendor_on_another_port_makes_no_call(
    tmp_path: Path,
) -> None:
    """A local server gets a new port each run (the CLI's simulated critics do): the
    cache key leaves loopback ports out, so the second run is answered from the cache."""
    personas = [Persona(f"sim-{i}", accuracy=0.8, seed=i) for i in range(3)]
    items = [{"id": f"c{i}", "query": f"candidate category {i}"} for i in range(20)]
    path = tmp_path / "responses.sqlite3"

    async def run(server: VendorServer) -> Any:
        critics = [
            Critic(name=p.model, model=p.model, vendor="custom", base_url=server.url)
            for p in personas
        ]
        async with Ensemble(critics, cache=path) as panel:
            return await panel.judge_many(items, concurrency=8)

    with VendorServer(personas) as first_server:
        first = await run(first_server)
    with VendorServer(personas) as second_server:
        assert second_server.url != first_server.url
        second = await run(second_server)
        assert second_server.stats()["requests"] == 0
    assert all(v.cached for r in second.verdicts for v in r.verdicts)
    assert [r.consensus for r in second.verdicts] == [r.consensus for r in first.verdicts]


async def test_an_anthropic_critic_with_another_temperature_or_seed_hits_the_same_entry(
    server: VendorServer, model: str, cache: ResponseCache
) -> None:
    """Neither is sent to Anthropic, so neither changes the answer or the key."""
    server.script(model, Reply.content(ANSWER))

    def claude(**kwargs: Any) -> Critic:
        return Critic(
            name="claude",
            model=model,
            vendor="anthropic",
            base_url=server.anthropic_url,
            api_key=KEY,
            cache=cache,
            **kwargs,
        )

    async with claude() as first_critic:
        first = await first_critic.judge("Felines")
    async with claude(temperature=0.7, seed=7) as second_critic:
        second = await second_critic.judge("Felines")
    assert (first.cached, second.cached) == (False, True)
    assert requests_for(server, model) == 1
