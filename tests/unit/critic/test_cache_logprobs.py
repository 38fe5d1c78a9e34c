"""The response cache keeps an answer's token probabilities (issue 27, point 3): a
``confidence="logprob"`` critic's cache hit must see the same tokens as the live call, so it
gives the same confidence. A cache file made before the column existed is upgraded in place
and keeps its rows; a release that knows no such column still reads and writes the file."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import anyio
import httpx
import pytest
import respx

from cross_judge import Critic, Usage
from cross_judge.critic import _assembly as assembly
from cross_judge.critic._cache import APPLICATION_ID, SCHEMA_VERSION, ResponseCache
from cross_judge.critic._logprobs import LabelProbabilities
from cross_judge.transport import Completion, TokenLogprob

ANSWER = '{"kind": "KEEP", "confidence": 0.9, "reasoning": "fine"}'
USAGE = Usage(prompt_tokens=40, completion_tokens=12)
TOKENS = (
    TokenLogprob('{"', -0.0001, (('{"', -0.0001), ("{", -9.5))),
    TokenLogprob("KEEP", -0.105360515657826, (("KEEP", -0.105360515657826), ("DROP", -2.3025))),
    TokenLogprob("é\u2603", -1.5, ()),
)

# The table as cross-judge wrote it before token probabilities were kept (cache format 1).
OLD_SCHEMA = """
CREATE TABLE responses (
    key TEXT PRIMARY KEY NOT NULL,
    text TEXT NOT NULL,
    usage TEXT,
    model TEXT,
    created_at REAL NOT NULL
)
"""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSS_JUDGE_CACHE_DIR", str(tmp_path / "default-cache"))


def put_sync(cache: ResponseCache, key: str, value: Completion) -> None:
    anyio.run(cache.put, key, value)


def get_sync(cache: ResponseCache, key: str) -> Completion | None:
    return anyio.run(cache.get, key)


def columns(path: Path) -> list[str]:
    with sqlite3.connect(path) as raw:
        names = [row[1] for row in raw.execute("PRAGMA table_info(responses)")]
    raw.close()
    return names


def old_cache_file(path: Path) -> None:
    """A cache file as the release before this one left it, holding one answer."""
    with sqlite3.connect(path, isolation_level=None) as raw:
        raw.execute(OLD_SCHEMA)
        raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        raw.execute("PRAGMA user_version = 1")
        raw.execute(
            "INSERT INTO responses (key, text, usage, model, created_at) VALUES (?, ?, ?, ?, ?)",
            ("old", ANSWER, USAGE.model_dump_json(), "judge-model", 1.0),
        )
    raw.close()


def test_an_answers_token_probabilities_come_back_from_the_cache(tmp_path: Path) -> None:
    stored = Completion(text=ANSWER, usage=USAGE, model="judge-model", logprobs=TOKENS)
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        put_sync(cache, "k", stored)
        found = get_sync(cache, "k")
    assert found == stored
    assert found is not None and found.logprobs == TOKENS


def test_an_answer_without_token_probabilities_comes_back_without_them(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        put_sync(cache, "k", Completion(text=ANSWER, model="m"))
        found = get_sync(cache, "k")
    assert found is not None and found.logprobs is None


def test_an_empty_list_of_token_probabilities_stays_empty_not_absent(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        put_sync(cache, "k", Completion(text=ANSWER, model="m", logprobs=()))
        found = get_sync(cache, "k")
    assert found is not None and found.logprobs == ()


def test_a_token_holding_a_lone_surrogate_round_trips(tmp_path: Path) -> None:
    odd = (TokenLogprob("a\ud800", -0.5, (("a\ud800", -0.5), ("\udfff", -1.0))),)
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        put_sync(cache, "k", Completion(text=ANSWER, model="m", logprobs=odd))
        found = get_sync(cache, "k")
    assert found is not None and found.logprobs == odd


def test_token_probabilities_are_stored_as_compact_json_triples(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with ResponseCache(path) as cache:
        put_sync(cache, "k", Completion(text=ANSWER, model="m", logprobs=TOKENS[:2]))
    with sqlite3.connect(path) as raw:
        (stored,) = raw.execute("SELECT logprobs FROM responses").fetchone()
    raw.close()
    expected = [
        ['{"', -0.0001, [['{"', -0.0001], ["{", -9.5]]],
        ["KEEP", -0.105360515657826, [["KEEP", -0.105360515657826], ["DROP", -2.3025]]],
    ]
    assert stored == json.dumps(expected, separators=(",", ":"))


def test_a_cache_file_made_before_is_upgraded_in_place_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite3"
    old_cache_file(path)
    with ResponseCache(path) as cache:
        found = get_sync(cache, "old")
        put_sync(cache, "new", Completion(text=ANSWER, model="m", logprobs=TOKENS))
        again = get_sync(cache, "new")
    assert found == Completion(text=ANSWER, usage=USAGE, model="judge-model", logprobs=None)
    assert again is not None and again.logprobs == TOKENS
    assert columns(path) == ["key", "text", "usage", "model", "created_at", "logprobs"]


def test_the_upgrade_keeps_the_cache_format_so_older_releases_still_share_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite3"
    old_cache_file(path)
    with ResponseCache(path) as cache:
        put_sync(cache, "new", Completion(text=ANSWER, model="m", logprobs=TOKENS))
    assert SCHEMA_VERSION == 1
    # What a release without the column runs: named columns both ways.
    with sqlite3.connect(path, isolation_level=None) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (1,)
        assert raw.execute(
            "SELECT text, usage, model FROM responses WHERE key = ?", ("new",)
        ).fetchone() == (ANSWER, None, "m")
        raw.execute(
            "INSERT OR IGNORE INTO responses (key, text, usage, model, created_at) "
            "VALUES ('older', 'x', NULL, 'm', 2.0)"
        )
    raw.close()
    with ResponseCache(path) as cache:
        found = get_sync(cache, "older")
    assert found == Completion(text="x", model="m")


def test_a_new_cache_file_has_the_column_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ResponseCache(path).check()
    assert columns(path) == ["key", "text", "usage", "model", "created_at", "logprobs"]


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        '{"a": 1}',
        '[["t"]]',
        '[["t", "x", []]]',
        "[[1, -0.5, []]]",
        '[["t", -1, [["a"]]]]',
    ],
)
def test_token_probabilities_that_do_not_decode_are_a_counted_miss(
    tmp_path: Path, stored: str
) -> None:
    path = tmp_path / "c.sqlite3"
    with ResponseCache(path) as cache:
        put_sync(cache, "k", Completion(text=ANSWER, model="m", logprobs=TOKENS))
        with sqlite3.connect(path, isolation_level=None) as raw:
            raw.execute("UPDATE responses SET logprobs = ?", (stored,))
        raw.close()
        assert get_sync(cache, "k") is None
        assert (cache.stats().read_errors, cache.stats().entries) == (1, 0)


# -- a critic's hit gives the live call's confidence ----------------------------------------

URL = "https://api.deepseek.com/v1/chat/completions"


def reply_with_logprobs() -> dict[str, object]:
    answer = '{"kind": "KEEP", "confidence": 0.99, "reasoning": "fine"}'
    content = [
        {"token": '{"kind": "', "logprob": -0.01, "top_logprobs": []},
        {
            "token": "KEEP",
            "logprob": -0.35667494393873245,
            "top_logprobs": [
                {"token": "KEEP", "logprob": -0.35667494393873245},
                {"token": "DROP", "logprob": -1.2039728043259361},
            ],
        },
        {"token": '", ...}', "logprob": -0.02, "top_logprobs": []},
    ]
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "deepseek-chat",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "logprobs": {"content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }


def label_token_probability(
    text: str,
    tokens: Sequence[TokenLogprob],
    *,
    chosen: str,
    labels: Sequence[str],
    label_keys: Sequence[str] = (),
) -> LabelProbabilities | None:
    """A stand-in reader of label probabilities (this test is about the cache, not the
    reading): the chosen label's token's alternatives, renormalised over the labels."""
    for token in tokens:
        if token.token == chosen:
            mass = {alt: math.exp(lp) for alt, lp in token.top if alt in labels}
            total = sum(mass.values())
            return LabelProbabilities(chosen, {k: v / total for k, v in mass.items()})
    return None


@pytest.mark.anyio
@respx.mock
async def test_a_logprob_critics_cache_hit_gives_the_live_calls_confidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assembly, "label_probabilities", label_token_probability)
    route = respx.post(URL).respond(json=reply_with_logprobs())
    async with httpx.AsyncClient() as client:
        critic = Critic(
            name="c1",
            model="deepseek-chat",
            api_key="sk-unit-test-key-0123456789",
            http_client=client,
            labels=["KEEP", "DROP"],
            confidence="logprob",
            cache=tmp_path / "c.sqlite3",
        )
        live = await critic.judge("item")
        hit = await critic.judge("item")
    assert route.call_count == 1 and hit.cached and not live.cached
    assert live.confidence_source == "logprob"
    assert live.confidence == pytest.approx(0.7 / (0.7 + 0.3))
    assert (hit.confidence, hit.confidence_source) == (live.confidence, live.confidence_source)
